//! A session recording's transcript as Ops `session_record` sends it and the Session group
//! stores it: gzip, then standard base64 (the store layer keeps text columns only), with the
//! SHA-256 of the original text as its content hash.
//!
//! Invariants:
//! - [`unpack`] never inflates past the limit it is given (a small body that would expand to
//!   gigabytes is refused after reading one byte over), and gives back only UTF-8 text.
//! - The content hash is of the original text, so the same transcript packed twice, at any
//!   compression level, is the same recording.

use std::io::{Read, Write};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use sha2::{Digest, Sha256};

/// The `encoding` of a packed transcript in the store and on the wire.
pub const ENCODING: &str = "gzip+base64";

/// The largest transcript recorded, in bytes of text.
pub const MAX_TRANSCRIPT_BYTES: u64 = 64 * 1024 * 1024;

/// The largest packed transcript, in characters: what fits, with its metadata, in one 8 MB
/// HTTP request to a relay.
pub const MAX_PACKED_CHARS: usize = 6 * 1024 * 1024;

/// Why a transcript could not be packed or unpacked.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordingError {
    #[error("the transcript is {size} bytes; at most {MAX_TRANSCRIPT_BYTES} are recorded")]
    TooLarge { size: u64 },
    #[error(
        "the transcript compresses to {chars} characters; at most {MAX_PACKED_CHARS} fit in one \
         request"
    )]
    PackedTooLarge { chars: usize },
    #[error("the packed transcript is not base64: {0}")]
    Base64(String),
    #[error("the packed transcript is not gzip data: {0}")]
    Gzip(String),
    #[error("the unpacked transcript is over {max} bytes")]
    Inflates { max: u64 },
    #[error("the unpacked transcript is not UTF-8 text")]
    NotText,
}

/// A transcript packed for sending and storing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    /// base64 of the gzip stream.
    pub data: String,
    /// Bytes of the original text.
    pub size_bytes: u64,
    /// [`content_hash`] of the original text.
    pub content_hash: String,
}

/// `sha256:` and the hex SHA-256 of `text`.
pub fn content_hash(text: &str) -> String {
    let hex: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// Packs `text`, refusing one over [`MAX_TRANSCRIPT_BYTES`] or packing over
/// [`MAX_PACKED_CHARS`].
pub fn pack(text: &str) -> Result<Packed, RecordingError> {
    let size = text.len() as u64;
    if size > MAX_TRANSCRIPT_BYTES {
        return Err(RecordingError::TooLarge { size });
    }
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    // Writing to a Vec cannot fail.
    let compressed = gz
        .write_all(text.as_bytes())
        .and_then(|()| gz.finish())
        .map_err(|e| RecordingError::Gzip(e.to_string()))?;
    let data = STANDARD.encode(compressed);
    if data.len() > MAX_PACKED_CHARS {
        return Err(RecordingError::PackedTooLarge { chars: data.len() });
    }
    Ok(Packed {
        data,
        size_bytes: size,
        content_hash: content_hash(text),
    })
}

/// Unpacks `data` into the text it holds, at most `max` bytes of it.
pub fn unpack(data: &str, max: u64) -> Result<String, RecordingError> {
    let compressed = STANDARD
        .decode(data.trim())
        .map_err(|e| RecordingError::Base64(e.to_string()))?;
    let mut bytes = Vec::new();
    GzDecoder::new(compressed.as_slice())
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| RecordingError::Gzip(e.to_string()))?;
    if bytes.len() as u64 > max {
        return Err(RecordingError::Inflates { max });
    }
    String::from_utf8(bytes).map_err(|_| RecordingError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_round_trips_and_shrinks() {
        let text = "{\"type\":\"user\",\"message\":\"hello\"}\n".repeat(2000);
        let packed = pack(&text).expect("pack");
        assert!(packed.data.len() * 10 < text.len(), "{}", packed.data.len());
        assert_eq!(packed.size_bytes, text.len() as u64);
        assert_eq!(packed.content_hash, content_hash(&text));
        assert!(packed.content_hash.starts_with("sha256:"));
        assert_eq!(packed.content_hash.len(), 7 + 64);
        assert_eq!(unpack(&packed.data, MAX_TRANSCRIPT_BYTES), Ok(text));
    }

    #[test]
    fn a_bomb_is_cut_at_the_limit() {
        let packed = pack(&"a".repeat(1_000_000)).expect("pack");
        assert_eq!(
            unpack(&packed.data, 1000),
            Err(RecordingError::Inflates { max: 1000 })
        );
        assert!(unpack(&packed.data, 1_000_000).is_ok());
    }

    #[test]
    fn damaged_data_is_named() {
        assert!(matches!(
            unpack("not base64!", 10),
            Err(RecordingError::Base64(_))
        ));
        assert!(matches!(
            unpack(&STANDARD.encode(b"plain bytes"), 10),
            Err(RecordingError::Gzip(_))
        ));
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&[0xff, 0xfe, 0x00]).expect("write");
        let binary = STANDARD.encode(gz.finish().expect("finish"));
        assert_eq!(unpack(&binary, 10), Err(RecordingError::NotText));
    }
}
