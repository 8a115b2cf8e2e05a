//! Byte and text formats the Windows implementation of the boundary reads
//! and writes: the `STORAGE_DEVICE_ID_DESCRIPTOR` that
//! `IOCTL_STORAGE_QUERY_PROPERTY` fills, and how a path is spelled for
//! each kind of Win32 call (the SMB credential string is
//! [`crate::win::credential`]).
//!
//! Plain Rust on bytes and strings, so it is compiled and tested on every
//! platform, not only where the Windows code around it runs.

use super::boundary::DeviceId;

/// `STORAGE_IDENTIFIER_CODE_SET`: binary.
const CODE_SET_BINARY: i32 = 1;
/// `STORAGE_IDENTIFIER_CODE_SET`: ASCII.
const CODE_SET_ASCII: i32 = 2;
/// `STORAGE_ASSOCIATION_TYPE`: the identifier names the device (the LUN).
const ASSOCIATION_DEVICE: i32 = 0;

/// Where the identifiers start in a `STORAGE_DEVICE_ID_DESCRIPTOR`
/// (`Version`, `Size`, `NumberOfIdentifiers`, then the first identifier).
const FIRST_IDENTIFIER: usize = 12;
/// Where the bytes start in a `STORAGE_IDENTIFIER` (`CodeSet`, `Type`,
/// `IdentifierSize`, `NextOffset`, `Association`, then the bytes).
const IDENTIFIER_BYTES: usize = 16;

fn u16_at(buf: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(buf.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(buf: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(buf.get(at..at + 4)?.try_into().ok()?))
}

/// The page 0x83 identifier in a `STORAGE_DEVICE_ID_DESCRIPTOR` (`buf`, as
/// many bytes as the ioctl returned): the first identifier associated with
/// the device whose code set is binary or ASCII. Walks the identifiers by
/// their `NextOffset` and never reads past `buf` or the descriptor's own
/// `Size`: a truncated or inconsistent descriptor yields
/// [`DeviceId::None`] rather than garbage.
pub(crate) fn parse_device_id(buf: &[u8]) -> DeviceId {
    let Some(size) = u32_at(buf, 4) else {
        return DeviceId::None;
    };
    let buf = &buf[..buf.len().min(size as usize)];
    let count = u32_at(buf, 8).unwrap_or(0);
    let mut at = FIRST_IDENTIFIER;
    for _ in 0..count {
        let (Some(code_set), Some(len), Some(next), Some(association)) = (
            u32_at(buf, at),
            u16_at(buf, at + 8),
            u16_at(buf, at + 10),
            u32_at(buf, at + 12),
        ) else {
            break;
        };
        let start = at + IDENTIFIER_BYTES;
        let Some(bytes) = buf.get(start..start + len as usize) else {
            break;
        };
        if association as i32 == ASSOCIATION_DEVICE {
            match code_set as i32 {
                CODE_SET_ASCII => return DeviceId::Ascii(bytes.to_vec()),
                CODE_SET_BINARY => return DeviceId::Binary(bytes.to_vec()),
                _ => {}
            }
        }
        if next == 0 {
            break;
        }
        at += next as usize;
    }
    DeviceId::None
}

/// The path separators Win32 accepts.
const SEPARATORS: [char; 2] = ['\\', '/'];

/// `path` as a call that names one file, directory or link wants it: no
/// trailing separator. `FindFirstFileW` fails on one (documented), so a
/// link or mount point given with one would look missing; every other
/// call gets the same spelling, so that a path means one thing. A root
/// keeps one separator: `C:\`, `\\?\C:\` and `\\?\Volume{GUID}\` are the
/// volume's root directory, while `C:` is the drive's current directory
/// and `\\?\Volume{GUID}` the volume device.
pub(crate) fn without_trailing_separator(path: &str) -> &str {
    let trimmed = path.trim_end_matches(SEPARATORS);
    if trimmed.len() < path.len() && (trimmed.is_empty() || names_a_volume(trimmed)) {
        &path[..trimmed.len() + 1]
    } else {
        trimmed
    }
}

/// `path` as the mount point calls (`SetVolumeMountPointW`,
/// `DeleteVolumeMountPointW`, `GetVolumeNameForVolumeMountPointW`) require
/// it: ending with exactly one `\`.
pub(crate) fn with_trailing_separator(path: &str) -> String {
    format!("{}\\", path.trim_end_matches(SEPARATORS))
}

/// Whether `path` (no trailing separator) names a drive or a volume
/// itself rather than a directory: `C:`, `\\?\C:`, `\\.\C:`,
/// `\\?\Volume{GUID}`.
fn names_a_volume(path: &str) -> bool {
    let device = path
        .strip_prefix(r"\\?\")
        .or_else(|| path.strip_prefix(r"\\.\"));
    let rest = device.unwrap_or(path);
    let drive = matches!(rest.as_bytes(), [letter, b':'] if letter.is_ascii_alphabetic());
    let volume = device.is_some()
        && rest.len() > 7
        && rest[..7].eq_ignore_ascii_case("Volume{")
        && rest.ends_with('}')
        && !rest.contains(SEPARATORS);
    drive || volume
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_loses_its_trailing_separators_but_a_root_keeps_one() {
        for (given, spelled) in [
            (r"C:\var\lib\kubelet\mount\", r"C:\var\lib\kubelet\mount"),
            (r"C:\var\lib\kubelet\mount\\/", r"C:\var\lib\kubelet\mount"),
            (r"C:\var\lib\kubelet\mount", r"C:\var\lib\kubelet\mount"),
            (r"\\server\share\", r"\\server\share"),
            (r"\\?\UNC\server\share\dir\", r"\\?\UNC\server\share\dir"),
            (r"C:\", r"C:\"),
            (r"c:\\", r"c:\"),
            ("C:/", "C:/"),
            (r"\\?\C:\", r"\\?\C:\"),
            (r"\\.\C:\", r"\\.\C:\"),
            (
                r"\\?\Volume{8ae4a6a8-0000-0000-0000-100000000000}\",
                r"\\?\Volume{8ae4a6a8-0000-0000-0000-100000000000}\",
            ),
            (
                r"\\?\Volume{8ae4a6a8-0000-0000-0000-100000000000}\dir\",
                r"\\?\Volume{8ae4a6a8-0000-0000-0000-100000000000}\dir",
            ),
            // A directory that only looks like a drive or a volume.
            (r"C:\x:\", r"C:\x:"),
            (r"C:\Volume{1}\", r"C:\Volume{1}"),
            (r"\", r"\"),
            ("", ""),
        ] {
            assert_eq!(without_trailing_separator(given), spelled, "{given}");
        }
    }

    #[test]
    fn a_mount_point_ends_with_one_separator() {
        assert_eq!(with_trailing_separator(r"C:\m"), r"C:\m\");
        assert_eq!(with_trailing_separator(r"C:\m\"), r"C:\m\");
        assert_eq!(with_trailing_separator(r"C:\m\\/"), r"C:\m\");
        assert_eq!(with_trailing_separator(r"C:"), r"C:\");
    }

    /// A descriptor as the ioctl fills it: header, then each identifier
    /// (code set, type, bytes, association), each padded to 4 bytes.
    fn descriptor(ids: &[(i32, i32, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        for (i, &(code_set, association, bytes)) in ids.iter().enumerate() {
            let len = IDENTIFIER_BYTES + bytes.len();
            let padded = len.div_ceil(4) * 4;
            let next = if i + 1 == ids.len() { 0 } else { padded };
            body.extend_from_slice(&code_set.to_le_bytes());
            body.extend_from_slice(&3i32.to_le_bytes()); // type: NAA
            body.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
            body.extend_from_slice(&(next as u16).to_le_bytes());
            body.extend_from_slice(&association.to_le_bytes());
            body.extend_from_slice(bytes);
            body.resize(body.len() + padded - len, 0);
        }
        let mut buf = Vec::new();
        buf.extend_from_slice(&1u32.to_le_bytes());
        buf.extend_from_slice(&((FIRST_IDENTIFIER + body.len()) as u32).to_le_bytes());
        buf.extend_from_slice(&(ids.len() as u32).to_le_bytes());
        buf.extend_from_slice(&body);
        buf
    }

    #[test]
    fn the_first_device_identifier_in_binary_or_ascii_is_the_page83_id() {
        let naa = [0x60, 0x02, 0x24, 0x80, 0xab, 0xcd, 0xef, 0x01];
        // A port identifier and a UTF-8 one come first and are skipped.
        let buf = descriptor(&[
            (CODE_SET_BINARY, 1, &[9, 9, 9]),
            (3, ASSOCIATION_DEVICE, b"utf8"),
            (CODE_SET_BINARY, ASSOCIATION_DEVICE, &naa),
            (CODE_SET_ASCII, ASSOCIATION_DEVICE, b"later"),
        ]);
        assert_eq!(parse_device_id(&buf), DeviceId::Binary(naa.to_vec()));

        let buf = descriptor(&[(CODE_SET_ASCII, ASSOCIATION_DEVICE, b"MSFT    Virtual HD")]);
        assert_eq!(
            parse_device_id(&buf),
            DeviceId::Ascii(b"MSFT    Virtual HD".to_vec())
        );
        let buf = descriptor(&[(CODE_SET_BINARY, 2, &naa)]);
        assert_eq!(parse_device_id(&buf), DeviceId::None);
    }

    #[test]
    fn a_short_or_inconsistent_descriptor_is_no_identifier() {
        let naa = [1u8; 16];
        let whole = descriptor(&[(CODE_SET_BINARY, ASSOCIATION_DEVICE, &naa)]);
        // Every truncation of the buffer, and a Size field that lies.
        for len in 0..whole.len() {
            assert_eq!(parse_device_id(&whole[..len]), DeviceId::None, "{len}");
        }
        let mut lying = whole.clone();
        lying[4..8].copy_from_slice(&20u32.to_le_bytes());
        assert_eq!(parse_device_id(&lying), DeviceId::None);
        // A count larger than what is there stops at the end.
        let mut counted = descriptor(&[(CODE_SET_BINARY, 1, &naa)]);
        counted[8..12].copy_from_slice(&50u32.to_le_bytes());
        assert_eq!(parse_device_id(&counted), DeviceId::None);
        assert_eq!(parse_device_id(&whole), DeviceId::Binary(naa.to_vec()));
    }
}
