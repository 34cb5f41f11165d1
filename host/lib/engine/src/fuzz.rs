//! Property tests over the ELF check of plugin files: damaged or cut files never make it panic,
//! and every cut of a whole file is refused. `PROPTEST_CASES` cases (256 by default).

use proptest::collection::vec;
use proptest::prelude::*;

use crate::elf;
use coremcp_wire::testing::config;

/// A real ELF file of this machine (this test binary), read once.
fn real_elf() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        std::fs::read(std::env::current_exe().expect("exe")).expect("read this test binary")
    })
}

/// `base` with some bytes replaced and cut to `len`, read without copying it whole.
struct Damaged<'a> {
    base: &'a [u8],
    len: usize,
    patches: Vec<(usize, u8)>,
}

impl elf::ReadAt for Damaged<'_> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let n = self.base[..self.len].read_at(buf, offset)?;
        let start = offset as usize;
        for (at, byte) in &self.patches {
            if (start..start + n).contains(at) {
                buf[at - start] = *byte;
            }
        }
        Ok(n)
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_elf_check_never_panics_on_damaged_files_and_refuses_every_cut(
        cut in any::<prop::sample::Index>(),
        patches in vec((0usize..8192, any::<u8>()), 0..6),
        in_tables in vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let base = real_elf();
        let mut damaged = Damaged { base, len: base.len(), patches };
        // Damage inside the header tables too, wherever they are.
        for (index, byte) in in_tables {
            damaged.patches.push((index.index(base.len()), byte));
        }
        let _ = elf::check(&damaged, damaged.len as u64);
        // Any cut of the whole file is refused (the section table is at its end).
        let undamaged = Damaged { base, len: cut.index(base.len()), patches: Vec::new() };
        prop_assert!(elf::check(&undamaged, undamaged.len as u64).is_err());
    }
}
