//! Pure conversion helpers the versioned services need: Go `strconv`
//! emulation for the string disk ids of the old API versions and the error
//! wrappers those versions add.

use crate::host::{HostError, HostResult};

/// Go's `strconv.Quote`: the string in double quotes with Go escapes.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => {
                if (c as u32) <= 0xffff {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.ParseUint(s, 10, 64)`, with Go's exact error texts
/// (`strconv.ParseUint: parsing "abc": invalid syntax`,
/// `strconv.ParseUint: parsing "99999999999999999999": value out of range`).
pub fn go_parse_uint64(s: &str) -> Result<u64, String> {
    let syntax = || format!("strconv.ParseUint: parsing {}: invalid syntax", go_quote(s));
    let range = || {
        format!(
            "strconv.ParseUint: parsing {}: value out of range",
            go_quote(s)
        )
    };
    if s.is_empty() {
        return Err(syntax());
    }
    let mut n: u64 = 0;
    const CUTOFF: u64 = u64::MAX / 10 + 1;
    for b in s.bytes() {
        if !b.is_ascii_digit() {
            return Err(syntax());
        }
        let d = u64::from(b - b'0');
        if n >= CUTOFF {
            return Err(range());
        }
        n *= 10;
        match n.checked_add(d) {
            Some(v) => n = v,
            None => return Err(range()),
        }
    }
    Ok(n)
}

/// A disk number as the string-id versions read it: parsed as unsigned
/// decimal 64-bit, then silently truncated to 32 bits (`"4294967298"` is
/// disk 2). The error is the bare `strconv` text.
pub fn parse_legacy_disk_id(s: &str) -> Result<u32, String> {
    go_parse_uint64(s).map(|v| v as u32)
}

/// `PartitionDiskRequest.diskID` of `v1alpha1`/`v1beta1`/`v1beta2`
/// (`version`): error `Failed to convert <version>.PartitionDiskRequest.DiskID to uint32: <parse error>`.
pub fn partition_disk_id(version: &str, disk_id: &str) -> HostResult<u32> {
    parse_legacy_disk_id(disk_id).map_err(|e| {
        HostError::unknown(format!(
            "Failed to convert {version}.PartitionDiskRequest.DiskID to uint32: {e}"
        ))
    })
}

/// `DiskStatsRequest.diskID`: error `Failed to format DiskStatsRequest.DiskID with err: <parse error>`.
pub fn disk_stats_id(disk_id: &str) -> HostResult<u32> {
    legacy_id("DiskStatsRequest", disk_id)
}

/// `SetAttachStateRequest.diskID`: error `Failed to format SetAttachStateRequest.DiskID with err: <parse error>`.
pub fn set_attach_state_id(disk_id: &str) -> HostResult<u32> {
    legacy_id("SetAttachStateRequest", disk_id)
}

/// `GetAttachStateRequest.diskID`: error `Failed to format GetAttachStateRequest.DiskID with err: <parse error>`.
pub fn get_attach_state_id(disk_id: &str) -> HostResult<u32> {
    legacy_id("GetAttachStateRequest", disk_id)
}

fn legacy_id(message: &str, disk_id: &str) -> HostResult<u32> {
    parse_legacy_disk_id(disk_id)
        .map_err(|e| HostError::unknown(format!("Failed to format {message}.DiskID with err: {e}")))
}

/// `ListVolumesOnDiskRequest.disk_id` of the volume group's `v1alpha1`–`v1beta2`:
/// error `Failed to parse diskId: err=<parse error>`.
pub fn list_volumes_disk_id(disk_id: &str) -> HostResult<u32> {
    parse_legacy_disk_id(disk_id)
        .map_err(|e| HostError::unknown(format!("Failed to parse diskId: err={e}")))
}

/// The `Forward to <op> failed, err=` wrapper the volume group's old
/// versions put around forwarded errors.
pub fn forward_error(op: &str, e: HostError) -> HostError {
    e.context(format!("Forward to {op} failed, err="))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_uint_texts() {
        assert_eq!(go_parse_uint64("007"), Ok(7));
        assert_eq!(go_parse_uint64("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(
            go_parse_uint64("abc").unwrap_err(),
            r#"strconv.ParseUint: parsing "abc": invalid syntax"#
        );
        assert_eq!(
            go_parse_uint64("").unwrap_err(),
            r#"strconv.ParseUint: parsing "": invalid syntax"#
        );
        assert_eq!(
            go_parse_uint64("-1").unwrap_err(),
            r#"strconv.ParseUint: parsing "-1": invalid syntax"#
        );
        assert_eq!(
            go_parse_uint64("+1").unwrap_err(),
            r#"strconv.ParseUint: parsing "+1": invalid syntax"#
        );
        assert_eq!(
            go_parse_uint64(" 1").unwrap_err(),
            r#"strconv.ParseUint: parsing " 1": invalid syntax"#
        );
        assert_eq!(
            go_parse_uint64("0x1").unwrap_err(),
            r#"strconv.ParseUint: parsing "0x1": invalid syntax"#
        );
        assert_eq!(
            go_parse_uint64("99999999999999999999").unwrap_err(),
            r#"strconv.ParseUint: parsing "99999999999999999999": value out of range"#
        );
        assert_eq!(
            go_parse_uint64("18446744073709551616").unwrap_err(),
            r#"strconv.ParseUint: parsing "18446744073709551616": value out of range"#
        );
        // Go reports the overflow before it sees the later bad character
        assert_eq!(
            go_parse_uint64("99999999999999999999x").unwrap_err(),
            r#"strconv.ParseUint: parsing "99999999999999999999x": value out of range"#
        );
        assert_eq!(
            go_parse_uint64("a\"\n").unwrap_err(),
            r#"strconv.ParseUint: parsing "a\"\n": invalid syntax"#
        );
    }

    #[test]
    fn legacy_ids_truncate() {
        assert_eq!(parse_legacy_disk_id("4294967296"), Ok(0));
        assert_eq!(parse_legacy_disk_id("4294967298"), Ok(2));
        assert_eq!(parse_legacy_disk_id("4294967297"), Ok(1));
    }

    #[test]
    fn legacy_request_errors() {
        assert_eq!(partition_disk_id("v1beta2", "4294967298"), Ok(2));
        assert_eq!(
            partition_disk_id("v1alpha1", "abc").unwrap_err().message(),
            r#"Failed to convert v1alpha1.PartitionDiskRequest.DiskID to uint32: strconv.ParseUint: parsing "abc": invalid syntax"#
        );
        assert_eq!(
            disk_stats_id("").unwrap_err().message(),
            r#"Failed to format DiskStatsRequest.DiskID with err: strconv.ParseUint: parsing "": invalid syntax"#
        );
        assert_eq!(
            set_attach_state_id("-1").unwrap_err().message(),
            r#"Failed to format SetAttachStateRequest.DiskID with err: strconv.ParseUint: parsing "-1": invalid syntax"#
        );
        assert_eq!(
            get_attach_state_id("99999999999999999999")
                .unwrap_err()
                .message(),
            r#"Failed to format GetAttachStateRequest.DiskID with err: strconv.ParseUint: parsing "99999999999999999999": value out of range"#
        );
        assert_eq!(list_volumes_disk_id("4294967297"), Ok(1));
        assert_eq!(
            list_volumes_disk_id("").unwrap_err().message(),
            r#"Failed to parse diskId: err=strconv.ParseUint: parsing "": invalid syntax"#
        );
    }

    #[test]
    fn forward_wrapper() {
        let e = forward_error("UnmountVolume", HostError::unknown("volume id empty"));
        assert_eq!(
            e.message(),
            "Forward to UnmountVolume failed, err=volume id empty"
        );
    }
}
