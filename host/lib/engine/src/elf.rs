//! A structural check of a plugin library file before the dynamic loader maps it.
//!
//! The loader maps a library's segments straight from the file: a page it maps past the end of
//! a truncated file raises `SIGBUS` on first touch, which kills the whole process before any
//! error can be returned. So a file is refused here unless it is a whole ELF shared object: its
//! header, program headers and section headers lie inside the file, and so does every segment
//! and section that has bytes in the file.
//!
//! Invariant: only the headers are read (a few kilobytes), never the whole file, and every
//! offset computation is checked for overflow; a file this module accepts has no part the
//! loader would map from beyond its end.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// What the check reads from: a file, or bytes in memory (tests).
pub(crate) trait ReadAt {
    /// Fills `buf` from `offset`; how many bytes were there.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize>;

    /// Fills `buf` whole from `offset`, or fails.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match self.read_at(&mut buf[done..], offset + done as u64)? {
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

impl ReadAt for File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        FileExt::read_at(self, buf, offset)
    }
}

impl ReadAt for [u8] {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.len());
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const ET_DYN: u16 = 3;
const SHT_NOBITS: u32 = 8;
/// Section counts at or above this are stored in section 0 (`SHN_LORESERVE`).
const SHN_LORESERVE: u16 = 0xff00;
/// Headers beyond these counts are not a plugin library, whatever else they are.
const MAX_SEGMENTS: u64 = 4096;
const MAX_SECTIONS: u64 = 1 << 20;

/// What a message about a file that ends too soon adds.
const CUT_SHORT: &str = " (a copy cut short? install it again)";

/// What is wrong with a file that is not a whole, well-formed shared library.
pub(crate) type Problem = String;

/// The layout of one ELF class (32 or 64 bits) and byte order.
#[derive(Clone, Copy)]
struct Form {
    wide: bool,
    little: bool,
}

impl Form {
    fn u16(self, b: &[u8], at: usize) -> u16 {
        let bytes = [b[at], b[at + 1]];
        if self.little {
            u16::from_le_bytes(bytes)
        } else {
            u16::from_be_bytes(bytes)
        }
    }

    fn u32(self, b: &[u8], at: usize) -> u32 {
        let bytes = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if self.little {
            u32::from_le_bytes(bytes)
        } else {
            u32::from_be_bytes(bytes)
        }
    }

    fn u64(self, b: &[u8], at: usize) -> u64 {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&b[at..at + 8]);
        if self.little {
            u64::from_le_bytes(bytes)
        } else {
            u64::from_be_bytes(bytes)
        }
    }

    /// An address-sized field (`u32` in ELF32, `u64` in ELF64).
    fn word(self, b: &[u8], at32: usize, at64: usize) -> u64 {
        if self.wide {
            self.u64(b, at64)
        } else {
            u64::from(self.u32(b, at32))
        }
    }

    fn header_len(self) -> usize {
        if self.wide {
            64
        } else {
            52
        }
    }

    fn segment_len(self) -> u64 {
        if self.wide {
            56
        } else {
            32
        }
    }

    fn section_len(self) -> u64 {
        if self.wide {
            64
        } else {
            40
        }
    }
}

/// The ELF machine number of the architecture this host was built for, when known.
fn host_machine() -> Option<u16> {
    match std::env::consts::ARCH {
        "x86_64" => Some(62),
        "aarch64" => Some(183),
        "x86" => Some(3),
        "arm" => Some(40),
        "riscv64" => Some(243),
        "powerpc64" => Some(21),
        "s390x" => Some(22),
        _ => None,
    }
}

/// Checks that `file` (of `len` bytes) is a whole ELF shared object for this machine.
pub fn check(file: &(impl ReadAt + ?Sized), len: u64) -> Result<(), Problem> {
    let read = |at: u64, n: u64, what: &str| -> Result<Vec<u8>, Problem> {
        let end = at
            .checked_add(n)
            .ok_or_else(|| format!("its {what} lies at an impossible offset"))?;
        if end > len {
            return Err(format!(
                "its {what} ends at byte {end}, past the end of the file ({len} bytes){CUT_SHORT}"
            ));
        }
        let mut buf = vec![0u8; n as usize];
        file.read_exact_at(&mut buf, at)
            .map_err(|e| format!("reading its {what}: {e}"))?;
        Ok(buf)
    };
    let mut magic = [0u8; 4];
    let have = file
        .read_at(&mut magic, 0)
        .map_err(|e| format!("reading it: {e}"))?;
    if have < 4 || magic != *b"\x7fELF" {
        return Err("not an ELF file (no ELF magic number)".to_owned());
    }
    if len < 16 {
        return Err(format!(
            "{len} bytes is too short to be a library{CUT_SHORT}"
        ));
    }
    let ident = read(0, 16, "ELF header")?;
    let form = Form {
        wide: match ident[4] {
            1 => false,
            2 => true,
            other => return Err(format!("unknown ELF class {other}")),
        },
        little: match ident[5] {
            1 => true,
            2 => false,
            other => return Err(format!("unknown ELF byte order {other}")),
        },
    };
    if form.wide != cfg!(target_pointer_width = "64") {
        return Err(format!(
            "a {}-bit library; this host is {}-bit",
            if form.wide { 64 } else { 32 },
            if form.wide { 32 } else { 64 }
        ));
    }
    let header = read(0, form.header_len() as u64, "ELF header")?;
    let kind = form.u16(&header, 16);
    if kind != ET_DYN {
        return Err(format!(
            "not a shared library (ELF type {kind}; a library is type 3)"
        ));
    }
    let machine = form.u16(&header, 18);
    if let Some(host) = host_machine().filter(|host| *host != machine) {
        return Err(format!(
            "built for another machine (ELF machine {machine}; this host is {host})"
        ));
    }
    let (phoff, shoff) = (form.word(&header, 28, 32), form.word(&header, 32, 40));
    let (ph_at, sh_at) = if form.wide { (54, 58) } else { (42, 46) };
    let phentsize = u64::from(form.u16(&header, ph_at));
    let phnum = u64::from(form.u16(&header, ph_at + 2));
    let shentsize = u64::from(form.u16(&header, sh_at));
    let shnum_field = form.u16(&header, sh_at + 2);
    let shstrndx = form.u16(&header, sh_at + 4);

    if phnum == 0 || phnum > MAX_SEGMENTS {
        return Err(format!(
            "{phnum} program headers; a library has at least one"
        ));
    }
    if phentsize < form.segment_len() {
        return Err(format!(
            "program header entries of {phentsize} bytes are too small"
        ));
    }
    let table = read(phoff, phentsize * phnum, "program header table")?;
    let (mut loads, mut dynamic) = (0, false);
    for index in 0..phnum {
        let at = (index * phentsize) as usize;
        let kind = form.u32(&table, at);
        let (offset, filesz, memsz) = if form.wide {
            (
                form.u64(&table, at + 8),
                form.u64(&table, at + 32),
                form.u64(&table, at + 40),
            )
        } else {
            (
                u64::from(form.u32(&table, at + 4)),
                u64::from(form.u32(&table, at + 16)),
                u64::from(form.u32(&table, at + 20)),
            )
        };
        let what = format!("segment {index} (type {kind:#x})");
        within(offset, filesz, len, &what)?;
        if kind == PT_LOAD {
            loads += 1;
            if filesz > memsz {
                return Err(format!(
                    "{what} has more bytes in the file ({filesz}) than in memory ({memsz})"
                ));
            }
        }
        dynamic |= kind == PT_DYNAMIC;
    }
    if loads == 0 {
        return Err("no loadable segment".to_owned());
    }
    if !dynamic {
        return Err("no dynamic section: not a shared library".to_owned());
    }

    if shoff == 0 {
        // Sections are optional for the loader; with none there is nothing more to check.
        return Ok(());
    }
    if shentsize < form.section_len() {
        return Err(format!(
            "section header entries of {shentsize} bytes are too small"
        ));
    }
    let first = read(shoff, shentsize, "section header table")?;
    let shnum = match shnum_field {
        0 => form.word(&first, 20, 32),
        n => u64::from(n),
    };
    if shnum == 0 || shnum > MAX_SECTIONS {
        return Err(format!("{shnum} section headers"));
    }
    let table = read(shoff, shentsize * shnum, "section header table")?;
    let section = |index: u64| -> (u32, u64, u64, u32) {
        let at = (index * shentsize) as usize;
        let name = form.u32(&table, at);
        let kind = form.u32(&table, at + 4);
        let (offset, size) = if form.wide {
            (form.u64(&table, at + 24), form.u64(&table, at + 32))
        } else {
            (
                u64::from(form.u32(&table, at + 16)),
                u64::from(form.u32(&table, at + 20)),
            )
        };
        (kind, offset, size, name)
    };
    let names_index = match shstrndx {
        // SHN_XINDEX: the real index is section 0's link field.
        0xffff => u64::from(form.u32(&first, if form.wide { 40 } else { 24 })),
        n if n >= SHN_LORESERVE => 0,
        n => u64::from(n),
    };
    // Section names, read only to word a refusal, when the name table itself is whole.
    let name_of = |at: u32| -> String {
        let names = (names_index > 0 && names_index < shnum)
            .then(|| section(names_index))
            .filter(|(kind, offset, size, _)| {
                *kind != SHT_NOBITS
                    && *size <= 1 << 20
                    && offset.checked_add(*size).is_some_and(|end| end <= len)
            })
            .and_then(|(_, offset, size, _)| read(offset, size, "section names").ok());
        names
            .as_deref()
            .and_then(|names| names.get(at as usize..))
            .and_then(|rest| rest.split(|b| *b == 0).next())
            .map(|raw| String::from_utf8_lossy(raw).into_owned())
            .filter(|name| !name.is_empty())
            .map_or_else(String::new, |name| format!(" ({name})"))
    };
    for index in 1..shnum {
        let (kind, offset, size, name) = section(index);
        if kind == SHT_NOBITS || offset.checked_add(size).is_some_and(|end| end <= len) {
            continue;
        }
        within(
            offset,
            size,
            len,
            &format!("section {index}{}", name_of(name)),
        )?;
    }
    Ok(())
}

/// `offset + size` bytes lie inside a file of `len` bytes.
fn within(offset: u64, size: u64, len: u64, what: &str) -> Result<(), Problem> {
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok(()),
        Some(end) => Err(format!(
            "{what} ends at byte {end}, past the end of the file ({len} bytes){CUT_SHORT}"
        )),
        None => Err(format!("{what} lies at an impossible offset")),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

    /// This test binary itself is an ELF file of this machine (an executable, not a library).
    pub(crate) fn own_bytes() -> Vec<u8> {
        std::fs::read(std::env::current_exe().expect("exe")).expect("read exe")
    }

    fn check_bytes(bytes: &[u8]) -> Result<(), Problem> {
        check(bytes, bytes.len() as u64)
    }

    #[test]
    fn a_file_reads_like_its_bytes() {
        let bytes = as_library(own_bytes());
        let path = std::env::temp_dir().join(format!("coremcp-elf-{}", std::process::id()));
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(&bytes[..50_000]))
            .expect("write");
        let file = File::open(&path).expect("open");
        assert_eq!(check(&file, 50_000), check_bytes(&bytes[..50_000]));
        let _ = std::fs::remove_file(&path);
    }

    /// The same bytes with the ELF type changed to "shared object".
    pub(crate) fn as_library(mut bytes: Vec<u8>) -> Vec<u8> {
        bytes[16..18].copy_from_slice(&ET_DYN.to_le_bytes());
        bytes
    }

    #[test]
    fn a_whole_shared_object_passes() {
        // A position-independent executable has the same structure as a library.
        let bytes = as_library(own_bytes());
        assert_eq!(check_bytes(&bytes), Ok(()));
    }

    #[test]
    fn every_truncation_is_refused_with_a_reason() {
        let bytes = as_library(own_bytes());
        // The end of the file, the middle, just past the headers, inside the headers.
        for keep in [bytes.len() - 1, bytes.len() / 2, 20_000, 100, 60, 10] {
            let err = check_bytes(&bytes[..keep]).expect_err("truncated");
            assert!(!err.contains('\n'), "{err}");
            assert!(err.ends_with(CUT_SHORT), "{keep}: {err}");
        }
        assert_eq!(
            check_bytes(&bytes[..3]).expect_err("3 bytes"),
            "not an ELF file (no ELF magic number)"
        );
    }

    #[test]
    fn other_files_are_named_for_what_they_are() {
        assert_eq!(
            check_bytes(b"#!/bin/sh\necho not a library\n").expect_err("not ELF"),
            "not an ELF file (no ELF magic number)"
        );
        let exe = own_bytes();
        let err = check_bytes(&exe[..]);
        // A test binary is a PIE (type 3) on most systems, an executable (type 2) elsewhere.
        if exe[16] == 2 {
            assert!(err.expect_err("exe").contains("not a shared library"));
        }
        let mut other = as_library(exe);
        other[18..20].copy_from_slice(&0x1234u16.to_le_bytes());
        assert!(check_bytes(&other)
            .expect_err("machine")
            .contains("built for another machine"));
        let mut class = other.clone();
        class[4] = 9;
        assert_eq!(
            check_bytes(&class).expect_err("class"),
            "unknown ELF class 9"
        );
    }
}
