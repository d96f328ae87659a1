//! The envelope of every checkpoint file: a fixed header (magic, format version, kind, payload
//! length) in front of the payload, and a trailer with the CRC-32 of the payload, so a writer
//! streams the file front to back in chunks, hashing each chunk as it goes (no pass over the
//! payload before the first byte is written, no copy of it into a buffer of its own). A
//! truncated file, a flipped byte or a file of another kind or version is refused with a message
//! naming the file and what was wrong; nothing is ever restored from it.
//!
//! Version 4 (written): the layout of version 3; a manifest also holds, for a pipeline of several
//! sources, the offset and event times of each source after the first
//! ([`super::manifest::Manifest::more_sources`]; version 3 is still read, [`super::manifest::v3`]).
//!
//! Version 3: the layout of version 2; a manifest's files source offset names the
//! files read whole ([`super::manifest::SavedOffset::Files`]) instead of a position in name
//! order ([`super::manifest::v2`], still read).
//!
//! Version 2, 40 bytes around the payload, little-endian:
//!
//! ```text
//! header (32 bytes): "EDDYCKPT", version u16 = 2 (3, 4), kind u16, reserved u32 (0),
//!                    payload length u64, reserved u32 (0), reserved u32 (0)
//! payload            (a manifest: an rkyv archive; a snapshot: see `SnapshotFile`)
//! trailer (8 bytes): CRC-32 (IEEE) of the payload u32, "EDDY"
//! ```
//!
//! Version 1 (still read: a checkpoint written before the upgrade restores): the same header with
//! version 1 and the CRC-32 of the payload at offset 24, no trailer; its payloads are `rkyv`
//! archives (a snapshot's too).

use super::CheckpointError;

/// The first 8 bytes of every checkpoint file.
pub const MAGIC: &[u8; 8] = b"EDDYCKPT";
/// The last 4 bytes of a file of version 2 or later.
pub const END: &[u8; 4] = b"EDDY";
/// The format version written.
pub const VERSION: u16 = 4;
/// The oldest format version read.
pub const OLDEST_READ: u16 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 32;
/// Trailer length in bytes (version 2 and later).
pub const TRAILER_LEN: usize = 8;

/// What a checkpoint file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Kind {
    /// One partition actor's operator state ([`super::manifest::SnapshotFile`]).
    Snapshot = 1,
    /// An epoch's manifest ([`super::manifest::Manifest`]).
    Manifest = 2,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Snapshot => "snapshot",
            Kind::Manifest => "manifest",
        }
    }
}

/// The header of the version written ([`VERSION`]) for a payload of `kind` and `payload_len` bytes.
pub fn header(kind: Kind, payload_len: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..8].copy_from_slice(MAGIC);
    h[8..10].copy_from_slice(&VERSION.to_le_bytes());
    h[10..12].copy_from_slice(&(kind as u16).to_le_bytes());
    h[16..24].copy_from_slice(&payload_len.to_le_bytes());
    h
}

/// The trailer (version 2 and later) of a payload whose CRC-32 is `payload_crc`.
pub fn trailer(payload_crc: u32) -> [u8; TRAILER_LEN] {
    let mut t = [0u8; TRAILER_LEN];
    t[0..4].copy_from_slice(&payload_crc.to_le_bytes());
    t[4..8].copy_from_slice(END);
    t
}

/// A checked file: its payload and checksums.
#[derive(Debug)]
pub struct Opened<'a> {
    /// The format version it was written in ([`OLDEST_READ`]..=[`VERSION`]).
    pub version: u16,
    /// The payload (not aligned: copy it before `rkyv::access`).
    pub payload: &'a [u8],
    /// CRC-32 of the whole file (what a manifest lists), derived from the payload's without a
    /// second pass.
    pub file_crc: u32,
}

/// Checks `file` (named `name` in messages), a file of `kind`, and returns its payload; the
/// payload is hashed once.
///
/// # Errors
/// [`CheckpointError::Corrupt`] naming the file: shorter than its header or its declared length
/// (truncated), longer than declared, a wrong magic number, end marker, kind or version (saying
/// which versions this eddy reads), or a checksum that does not match.
pub fn open<'a>(name: &str, kind: Kind, file: &'a [u8]) -> Result<Opened<'a>, CheckpointError> {
    let corrupt = |why: String| CheckpointError::Corrupt { name: name.to_string(), why };
    if file.len() < HEADER_LEN {
        return Err(corrupt(format!("{} bytes, shorter than the {HEADER_LEN}-byte header (truncated)", file.len())));
    }
    if &file[0..8] != MAGIC {
        return Err(corrupt("not an eddy checkpoint file (wrong magic number)".into()));
    }
    let version = u16::from_le_bytes([file[8], file[9]]);
    if !(OLDEST_READ..=VERSION).contains(&version) {
        return Err(corrupt(format!(
            "format version {version}; this eddy reads versions {OLDEST_READ} to {VERSION} (written by a {} eddy?)",
            if version > VERSION { "newer" } else { "different" }
        )));
    }
    let found = u16::from_le_bytes([file[10], file[11]]);
    if found != kind as u16 {
        return Err(corrupt(format!("file kind {found}, expected a {} ({})", kind.name(), kind as u16)));
    }
    let declared = u64::from_le_bytes(file[16..24].try_into().unwrap_or([0; 8]));
    let trailer_len = if version == 1 { 0 } else { TRAILER_LEN };
    let body = (file.len() - HEADER_LEN) as u64;
    if body != declared.saturating_add(trailer_len as u64) {
        return Err(corrupt(format!(
            "payload of {} bytes, the header declares {declared}{}",
            body.saturating_sub(trailer_len as u64),
            if body < declared.saturating_add(trailer_len as u64) { " (truncated)" } else { "" }
        )));
    }
    let payload = &file[HEADER_LEN..HEADER_LEN + declared as usize];
    let (expected, tail) = if version == 1 {
        (u32::from_le_bytes(file[24..28].try_into().unwrap_or([0; 4])), &[][..])
    } else {
        let t = &file[file.len() - TRAILER_LEN..];
        if &t[4..8] != END {
            return Err(corrupt("the end marker is damaged (truncated or overwritten)".into()));
        }
        (u32::from_le_bytes(t[0..4].try_into().unwrap_or([0; 4])), t)
    };
    let mut payload_crc = crc32fast::Hasher::new();
    payload_crc.update(payload);
    let actual = payload_crc.clone().finalize();
    if expected != actual {
        return Err(corrupt(format!("checksum {actual:08x} does not match the recorded {expected:08x}")));
    }
    let mut whole = crc32fast::Hasher::new();
    whole.update(&file[..HEADER_LEN]);
    whole.combine(&payload_crc);
    whole.update(tail);
    Ok(Opened { version, payload, file_crc: whole.finalize() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(kind: Kind, payload: &[u8]) -> Vec<u8> {
        let mut f = header(kind, payload.len() as u64).to_vec();
        f.extend_from_slice(payload);
        f.extend_from_slice(&trailer(crc32fast::hash(payload)));
        f
    }

    fn v1_file(kind: Kind, payload: &[u8]) -> Vec<u8> {
        let mut f = header(kind, payload.len() as u64).to_vec();
        f[8..10].copy_from_slice(&1u16.to_le_bytes());
        f[24..28].copy_from_slice(&crc32fast::hash(payload).to_le_bytes());
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn a_whole_file_opens_to_its_payload_and_the_crc_of_the_whole_file() {
        for f in [file(Kind::Snapshot, b"hello state"), v1_file(Kind::Snapshot, b"hello state")] {
            let o = open("s", Kind::Snapshot, &f).unwrap();
            assert_eq!(o.payload, b"hello state");
            assert_eq!(o.file_crc, crc32fast::hash(&f));
        }
    }

    #[test]
    fn truncation_a_flipped_byte_and_a_wrong_kind_are_refused_naming_the_file() {
        let f = file(Kind::Snapshot, b"hello state");
        for cut in [0, 5, HEADER_LEN, HEADER_LEN + 3, f.len() - TRAILER_LEN, f.len() - 1] {
            let err = open("snap-1", Kind::Snapshot, &f[..cut]).unwrap_err().to_string();
            assert!(err.contains("snap-1") && err.contains("truncated"), "{cut}: {err}");
        }
        for i in 0..f.len() {
            if (12..16).contains(&i) || (24..32).contains(&i) {
                continue; // reserved bytes are not read
            }
            let mut g = f.clone();
            g[i] ^= 0x20;
            assert!(open("snap-1", Kind::Snapshot, &g).is_err(), "flipped byte {i} was accepted");
        }
        let err = open("m", Kind::Manifest, &f).unwrap_err().to_string();
        assert!(err.contains("expected a manifest"), "{err}");
    }

    #[test]
    fn a_flipped_byte_of_a_version_1_file_is_refused() {
        let f = v1_file(Kind::Manifest, b"old manifest");
        for i in (0..12).chain(16..28).chain(HEADER_LEN..f.len()) {
            let mut g = f.clone();
            g[i] ^= 0x01;
            assert!(open("m", Kind::Manifest, &g).is_err(), "flipped byte {i} was accepted");
        }
    }

    #[test]
    fn an_unknown_version_is_refused_naming_the_versions_read() {
        let mut f = file(Kind::Manifest, b"x");
        f[8] = 9;
        let err = open("m", Kind::Manifest, &f).unwrap_err().to_string();
        assert!(err.contains("version 9") && err.contains("versions 1 to 4"), "{err}");
    }
}
