//! The envelope of every checkpoint file: a fixed header (magic, format version, kind, payload
//! length, CRC-32 of the payload) in front of an `rkyv` archive, validated with `bytecheck` on
//! read. A truncated file, a flipped byte or a file of another kind or version is refused with a
//! message naming the file and what was wrong; nothing is ever restored from it.
//!
//! Header layout (32 bytes, little-endian): `EDDYCKPT` (8 bytes), version `u16`, kind `u16`,
//! reserved `u32` (0), payload length `u64`, CRC-32 (IEEE) of the payload `u32`, reserved `u32`.
//! The payload follows at offset 32 (a multiple of the archive's 16-byte alignment).

use rkyv::util::AlignedVec;

use super::CheckpointError;

/// The first 8 bytes of every checkpoint file.
pub const MAGIC: &[u8; 8] = b"EDDYCKPT";
/// The format version written; files of any other version are refused.
pub const VERSION: u16 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 32;

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

/// The header for a payload of `kind`.
pub fn header(kind: Kind, payload: &[u8]) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..8].copy_from_slice(MAGIC);
    h[8..10].copy_from_slice(&VERSION.to_le_bytes());
    h[10..12].copy_from_slice(&(kind as u16).to_le_bytes());
    h[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    h[24..28].copy_from_slice(&crc32fast::hash(payload).to_le_bytes());
    h
}

/// Checks the header of `file` (named `name` in messages) and returns its payload, copied into
/// an aligned buffer ready for `rkyv::access`.
///
/// # Errors
/// [`CheckpointError::Corrupt`] naming the file: shorter than its header or its declared length
/// (truncated), longer than declared, a wrong magic number, kind or version, or a checksum that
/// does not match.
pub fn open(name: &str, kind: Kind, file: &[u8]) -> Result<AlignedVec<16>, CheckpointError> {
    let corrupt = |why: String| CheckpointError::Corrupt { name: name.to_string(), why };
    if file.len() < HEADER_LEN {
        return Err(corrupt(format!("{} bytes, shorter than the {HEADER_LEN}-byte header (truncated)", file.len())));
    }
    if &file[0..8] != MAGIC {
        return Err(corrupt("not an eddy checkpoint file (wrong magic number)".into()));
    }
    let version = u16::from_le_bytes([file[8], file[9]]);
    if version != VERSION {
        return Err(corrupt(format!("format version {version}; this eddy reads version {VERSION}")));
    }
    let found = u16::from_le_bytes([file[10], file[11]]);
    if found != kind as u16 {
        return Err(corrupt(format!("file kind {found}, expected a {} ({})", kind.name(), kind as u16)));
    }
    let declared = u64::from_le_bytes(file[16..24].try_into().unwrap_or([0; 8]));
    let payload = &file[HEADER_LEN..];
    if payload.len() as u64 != declared {
        return Err(corrupt(format!(
            "payload of {} bytes, the header declares {declared}{}",
            payload.len(),
            if (payload.len() as u64) < declared { " (truncated)" } else { "" }
        )));
    }
    let crc = u32::from_le_bytes(file[24..28].try_into().unwrap_or([0; 4]));
    let actual = crc32fast::hash(payload);
    if crc != actual {
        return Err(corrupt(format!("checksum {actual:08x} does not match the header's {crc:08x}")));
    }
    let mut aligned = AlignedVec::<16>::with_capacity(payload.len());
    aligned.extend_from_slice(payload);
    Ok(aligned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(kind: Kind, payload: &[u8]) -> Vec<u8> {
        let mut f = header(kind, payload).to_vec();
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn a_whole_file_opens_to_its_payload() {
        let f = file(Kind::Snapshot, b"hello state");
        assert_eq!(&open("s", Kind::Snapshot, &f).unwrap()[..], b"hello state");
    }

    #[test]
    fn truncation_a_flipped_byte_and_a_wrong_kind_are_refused_naming_the_file() {
        let f = file(Kind::Snapshot, b"hello state");
        for cut in [0, 5, HEADER_LEN, f.len() - 1] {
            let err = open("snap-1", Kind::Snapshot, &f[..cut]).unwrap_err().to_string();
            assert!(err.contains("snap-1") && err.contains("truncated"), "{cut}: {err}");
        }
        for i in 0..f.len() {
            if (12..16).contains(&i) || (28..32).contains(&i) {
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
    fn another_version_is_refused_with_both_versions() {
        let mut f = file(Kind::Manifest, b"x");
        f[8] = 9;
        let err = open("m", Kind::Manifest, &f).unwrap_err().to_string();
        assert!(err.contains("version 9") && err.contains("version 1"), "{err}");
    }
}
