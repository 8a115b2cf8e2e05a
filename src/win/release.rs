//! Which csi-proxy release the simulated host answers like (the
//! HostProcess backend always speaks v1.3).
//!
//! csi-proxy v1.3 replaced the PowerShell cmdlets of v1.0–v1.2 with WMI and
//! Win32 calls, and its failure texts changed with them: a v1.1 failure
//! carries the cmdlet's error record (`... FullyQualifiedErrorId : Windows
//! System Error 1219,New-SmbGlobalMapping`, quoted by Go's `%q`), a v1.3
//! one the WMI library's or go-ole's words (`err: Not Found`, `result: -1,
//! err: Exception occurred. (...)`). A driver's tests meet either through
//! `HostConfig::release` (`--proxy-release` of
//! `csi-proxy-server`, `MockHostBuilder::proxy_release`).
//!
//! What follows the release today: the volume group's answers that
//! differ (v0.2's NTFS-only `IsVolumeFormatted`; v0.2 to v1.2 answer
//! `ListVolumesOnDisk` for a disk with no volume with one empty id, `[""]`,
//! as they split PowerShell's empty output on line breaks), the SMB group's failures (a mapping
//! that cannot be created, one that is not there to remove) and the disk
//! and volume groups' failed WMI methods (initialize, create partition,
//! online/offline, format, resize: [`texts`](super::texts)). The rest
//! answers in the v1.3 era's words whichever the release.
//!
//! The texts are written from the two releases' sources; the Windows parts
//! (PowerShell's error record, the exception description of a failed WMI
//! method) are what those sources pass through, rendered the way Windows
//! renders them, and were not checked against a Windows node.

use std::fmt;
use std::str::FromStr;

/// A csi-proxy release whose failure texts the simulated host speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ProxyRelease {
    /// v0.2 (v0.2.2 the reference): PowerShell cmdlets, as v1.1, and an
    /// `IsVolumeFormatted` that is true for NTFS only (it compares the
    /// volume's `FileSystemType` with `ntfs`, csi-proxy v0.2.2
    /// `internal/os/volume/api.go`), so a ReFS, FAT32 or exFAT volume
    /// answers `false`. Its failure texts are v1.1's.
    V0_2,
    /// v1.0–v1.2 (v1.1.3 the reference): PowerShell cmdlets.
    V1_1,
    /// v1.3 (v1.3.0 the reference): WMI and Win32 calls. The default.
    #[default]
    V1_3,
}

impl ProxyRelease {
    /// The two eras whose failure texts differ, oldest first ([`V0_2`](Self::V0_2)
    /// speaks v1.1's texts; the volume answers it changes are tested on
    /// their own).
    pub const ALL: [ProxyRelease; 2] = [ProxyRelease::V1_1, ProxyRelease::V1_3];
}

impl fmt::Display for ProxyRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProxyRelease::V0_2 => "0.2",
            ProxyRelease::V1_1 => "1.1",
            ProxyRelease::V1_3 => "1.3",
        })
    }
}

impl FromStr for ProxyRelease {
    type Err = String;

    /// `0.2`, `1.1` or `1.3`, with or without a `v` and a patch number
    /// (`v1.1.3`, `1.3.0`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let minor: Vec<&str> = s.splitn(3, '.').take(2).collect();
        match minor.as_slice() {
            ["0", "2"] => Ok(ProxyRelease::V0_2),
            ["1", "0" | "1" | "2"] => Ok(ProxyRelease::V1_1),
            ["1", "3"] => Ok(ProxyRelease::V1_3),
            _ => Err(format!(
                "unknown csi-proxy release {s:?}: expected 0.2 or 1.1 (PowerShell era) or 1.3 (WMI era)"
            )),
        }
    }
}

/// Go's `%q` of `s`, as v1.1 quotes a cmdlet's output: `\` and `"`
/// escaped, line breaks as `\r` and `\n`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '"' => out.push_str("\\\""),
            '\r' => out.push_str(r"\r"),
            '\n' => out.push_str(r"\n"),
            '\t' => out.push_str(r"\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A PowerShell error record as the console prints it (before quoting):
/// the cmdlet and message, where the command failed, its category and the
/// fully qualified error id.
pub fn powershell_error(
    cmdlet: &str,
    message: &str,
    command: &str,
    category: &str,
    error_id: &str,
) -> String {
    let underline = "~".repeat(command.chars().count());
    format!(
        "{cmdlet} : {message}\r\nAt line:1 char:1\r\n+ {command}\r\n+ {underline}\r\n    \
         + CategoryInfo          : {category}\r\n    \
         + FullyQualifiedErrorId : {error_id},{cmdlet}\r\n \r\n"
    )
}
