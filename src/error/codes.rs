//! The numbers in a Windows host's error texts, and the phrases that mean a
//! kind of failure.
//!
//! The CSI Proxy answers nearly every failure as gRPC `UNKNOWN` with a text.
//! What that text holds depends on the release and on the layer that failed:
//!
//! | where the number comes from | how it reads | [`HostCode`] |
//! |---|---|---|
//! | PowerShell's CIM errors (v1.1) | `Windows System Error 1219` | `Win32(1219)` |
//! | PowerShell's CIM errors (v1.1) | `HRESULT 0x80041002` | `HResult(0x80041002)` |
//! | go-ole's text of an HRESULT Windows has no message for (v1.3) | `error 2147614729 (FormatMessage failed with: …)` | `HResult(0x80020009)` |
//! | an HRESULT written in hex | `0x80041002` | `HResult(0x80041002)` |
//! | an HRESULT of facility Win32 | `0x80070005` | `Win32(5)` |
//! | the simulated host and later upstream WMI texts | `code=1219` | `Win32(1219)` |
//! | a WMI method's return value (v1.3) | `result: 4`, `result 4`, `return value: 2` | `WmiResult(4)` |
//! | the WMI library's job errors | `WMI Error 0x00000003` | `WmiResult(3)` |
//! | PowerShell's storage cmdlets (v1.1) | `StorageWMI 42002` | `WmiResult(42002)` |
//! | a Windows message quoted without its number | `The network name cannot be found.` | `Win32(67)` |
//!
//! `result: -1` and `result: 0` are not codes: v1.3 writes -1 when the method
//! did not run at all and 0 when it succeeded (the failure is then in the
//! `err` part). A WMI method's return value means something only for its
//! class, so [`HostCode::kind`] gives no kind for it.
//!
//! Where a text has no code, or a code with no kind (such as
//! `DISP_E_EXCEPTION`), [`phrase_kind`] looks for the phrases the proxy and
//! Windows use for one kind of failure only. It never matches a word such as
//! "not found" anywhere: `FormatMessage failed with: Message 0x%1 not found
//! in file %2.` is Windows failing to *describe* an error, and says nothing
//! about what failed. Such fallback texts are removed before any phrase is
//! looked for.

use super::ErrorKind;

/// A number found in a Windows host's error text, and which kind of
/// number it is; see [`HostCode::find`] and the [module docs](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HostCode {
    /// A Win32 system error code (`ERROR_ACCESS_DENIED` = 5, ...), also when
    /// it came as an HRESULT of facility Win32 (`0x8007xxxx`) or as the
    /// Windows message text of the code.
    Win32(u32),
    /// Any other HRESULT: COM (`0x80020009`, `DISP_E_EXCEPTION`), WMI
    /// (`0x80041002`, `WBEM_E_NOT_FOUND`), ...
    HResult(u32),
    /// The return value of a WMI method, or a WMI job's error code; its
    /// meaning depends on the class.
    WmiResult(u32),
}

/// `DISP_E_EXCEPTION`: the call raised an exception, whose description
/// (when there is one) says what failed.
const DISP_E_EXCEPTION: u32 = 0x8002_0009;

/// Windows' texts of the error codes the proxy reports without a number.
const WINDOWS_TEXTS: &[(&str, u32)] = &[
    ("the system cannot find the file specified", 2),
    ("the system cannot find the path specified", 3),
    ("access is denied", 5),
    ("the device is not ready", 21),
    ("the request is not supported", 50),
    (
        "the process cannot access the file because it is being used by another process",
        32,
    ),
    ("the network path was not found", 53),
    ("the network name cannot be found", 67),
    ("the local device name is already in use", 85),
    ("the parameter is incorrect", 87),
    (
        "the filename, directory name, or volume label syntax is incorrect",
        123,
    ),
    ("the directory is not empty", 145),
    ("cannot create a file when that file already exists", 183),
    ("the directory name is invalid", 267),
    (
        "the specified service does not exist as an installed service",
        1060,
    ),
    (
        "multiple connections to a server or shared resource by the same user",
        1219,
    ),
    ("the user name or password is incorrect", 1326),
    ("the file or directory is not a reparse point", 4390),
];

impl HostCode {
    /// The most telling code in `text`, if any: a Win32 code written as
    /// one (`Windows System Error N`, `code=N`, `0x8007xxxx`), else an
    /// HRESULT, else a Windows message the text quotes, else
    /// `DISP_E_EXCEPTION` (whose description, when Windows could render
    /// it, is that message), else a WMI method's result.
    ///
    /// ```
    /// use csi_proxy_client::HostCode;
    /// let v13 = "NewSmbGlobalMapping failed. result: -1, err: failed to connect to WMI. \
    ///            error: error 2147614729 (FormatMessage failed with: Message 0x%1 not found in file %2.)";
    /// assert_eq!(HostCode::find(v13), Some(HostCode::HResult(0x8002_0009)));
    /// assert_eq!(HostCode::find("... Windows System Error 1219,New-SmbGlobalMapping"), Some(HostCode::Win32(1219)));
    /// assert_eq!(HostCode::find("error creating partition on disk 2. result: 4, err: <nil>"), Some(HostCode::WmiResult(4)));
    /// assert_eq!(HostCode::find("disk 9 is busy"), None);
    /// ```
    pub fn find(text: &str) -> Option<HostCode> {
        let lower = text.to_ascii_lowercase();
        let hresult = hresult_in(&lower).map(HostCode::from_hresult);
        win32_in(&lower)
            .map(HostCode::Win32)
            .or(hresult.filter(|c| *c != HostCode::HResult(DISP_E_EXCEPTION)))
            .or_else(|| windows_text_in(&without_format_failures(&lower)).map(HostCode::Win32))
            .or(hresult)
            .or_else(|| {
                // go-ole's text of DISP_E_EXCEPTION where Windows has one.
                lower
                    .contains("exception occurred.")
                    .then_some(HostCode::HResult(DISP_E_EXCEPTION))
            })
            .or_else(|| wmi_result_in(&lower).map(HostCode::WmiResult))
    }

    /// An HRESULT as a code: facility Win32 (`0x8007xxxx`) is the Win32
    /// code it carries, anything else stays an HRESULT.
    pub fn from_hresult(hresult: u32) -> HostCode {
        if hresult & 0xFFFF_0000 == 0x8007_0000 {
            HostCode::Win32(hresult & 0xFFFF)
        } else {
            HostCode::HResult(hresult)
        }
    }

    /// The Win32 code, if this is one.
    pub fn win32(self) -> Option<u32> {
        match self {
            HostCode::Win32(code) => Some(code),
            _ => None,
        }
    }

    /// The kind of failure this code means, where it means one kind
    /// whatever the call: `None` for codes such as `DISP_E_EXCEPTION` or
    /// `WBEM_E_FAILED`, and for every WMI method result.
    pub fn kind(self) -> Option<ErrorKind> {
        match self {
            HostCode::Win32(code) => kind_of_win32(code),
            HostCode::HResult(hresult) => kind_of_hresult(hresult),
            HostCode::WmiResult(_) => None,
        }
    }
}

fn kind_of_win32(code: u32) -> Option<ErrorKind> {
    Some(match code {
        2 | 3 | 53 | 67 | 1060 | 1168 | 0xEFFF_000B => ErrorKind::NotFound,
        80 | 85 | 183 => ErrorKind::AlreadyExists,
        87 | 123 | 161 | 267 | 4390 => ErrorKind::InvalidArgument,
        5 | 1326 | 0xEFFF_0009 | 0xEFFF_000A => ErrorKind::PermissionDenied,
        21 | 32 | 145 | 170 => ErrorKind::InUse,
        1219 => ErrorKind::CredentialsConflict,
        _ => return None,
    })
}

fn kind_of_hresult(hresult: u32) -> Option<ErrorKind> {
    Some(match hresult {
        // The iSCSI initiator's own codes, as PowerShell shows them.
        0xEFFF_000B => ErrorKind::NotFound,
        0xEFFF_0009 | 0xEFFF_000A => ErrorKind::PermissionDenied,
        // WBEM_E_NOT_FOUND
        0x8004_1002 => ErrorKind::NotFound,
        // WBEM_E_ACCESS_DENIED
        0x8004_1003 => ErrorKind::PermissionDenied,
        // WBEM_E_INVALID_PARAMETER
        0x8004_1008 => ErrorKind::InvalidArgument,
        // WBEM_E_ALREADY_EXISTS
        0x8004_1019 => ErrorKind::AlreadyExists,
        _ => return None,
    })
}

/// The digits (of `radix`) at the start of `s`, as a number.
fn number_at(s: &str, radix: u32) -> Option<u64> {
    let end = s.find(|c: char| !c.is_digit(radix)).unwrap_or(s.len());
    u64::from_str_radix(&s[..end], radix).ok()
}

/// Every place `needle` ends in `hay`.
fn after<'a>(hay: &'a str, needle: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    hay.match_indices(needle)
        .map(move |(at, _)| &hay[at + needle.len()..])
}

fn win32_in(lower: &str) -> Option<u32> {
    let explicit = after(lower, "windows system error ")
        .chain(after(lower, "code="))
        .filter_map(|rest| number_at(rest, 10))
        .filter_map(|n| u32::try_from(n).ok())
        .last();
    explicit.or_else(|| {
        // 0x8007xxxx anywhere: an HRESULT carrying a Win32 code.
        hex_hresults(lower)
            .filter_map(|h| HostCode::from_hresult(h).win32())
            .last()
    })
}

fn hex_hresults(lower: &str) -> impl Iterator<Item = u32> + '_ {
    after(lower, "0x").filter_map(|rest| {
        let digits = rest.get(..8)?;
        let n = u32::from_str_radix(digits, 16).ok()?;
        let ends = !rest[8..].starts_with(|c: char| c.is_ascii_hexdigit());
        (ends && n >= 0x8000_0000).then_some(n)
    })
}

fn hresult_in(lower: &str) -> Option<u32> {
    // go-ole: `error <decimal> (FormatMessage failed ...)`; any decimal
    // after "error " that is an HRESULT's size counts.
    let decimal = after(lower, "error ")
        .filter_map(|rest| number_at(rest, 10))
        .filter_map(|n| u32::try_from(n).ok())
        .filter(|&n| n >= 0x8000_0000)
        .last();
    hex_hresults(lower).last().or(decimal)
}

fn wmi_result_in(lower: &str) -> Option<u32> {
    let job = after(lower, "wmi error 0x").filter_map(|rest| number_at(rest, 16));
    // PowerShell's storage cmdlets: `FullyQualifiedErrorId : StorageWMI 42002,...`.
    let storage = after(lower, "storagewmi ").filter_map(|rest| number_at(rest, 10));
    let method = after(lower, "result: ")
        .chain(after(lower, "result "))
        .chain(after(lower, "return value: "))
        .filter_map(|rest| number_at(rest, 10));
    job.chain(storage)
        .chain(method)
        .filter(|&n| n != 0)
        .filter_map(|n| u32::try_from(n).ok())
        .last()
}

fn windows_text_in(lower: &str) -> Option<u32> {
    WINDOWS_TEXTS
        .iter()
        .find(|(t, _)| lower.contains(t))
        .map(|&(_, code)| code)
}

/// `lower` without Windows' texts for "I have no message for this code"
/// (go-ole's `FormatMessage failed with: ...` up to its closing bracket,
/// and the message-table misses), which quote "not found" about the
/// message, not about what failed.
fn without_format_failures(lower: &str) -> String {
    let mut out = lower.to_string();
    while let Some(at) = out.find("formatmessage failed with:") {
        let end = out[at..].find(')').map_or(out.len(), |e| at + e);
        out.replace_range(at..end, "");
    }
    for miss in [
        "message 0x%1 not found in file %2",
        "the system cannot find message text for message number",
    ] {
        out = out.replace(miss, "");
    }
    out
}

/// Phrases of the proxy (both releases), of the WMI library it uses and
/// of PowerShell that each mean one kind of failure.
const PHRASES: &[(&str, ErrorKind)] = &[
    // Path checks of the filesystem group.
    (
        "is not within the working directories",
        ErrorKind::PermissionDenied,
    ),
    ("exceeds maximum characters", ErrorKind::InvalidArgument),
    (
        "invalid character \\ at beginning of path",
        ErrorKind::InvalidArgument,
    ),
    ("unsupported unc path prefix", ErrorKind::InvalidArgument),
    (
        "path contains invalid characters",
        ErrorKind::InvalidArgument,
    ),
    ("not an absolute windows path", ErrorKind::InvalidArgument),
    ("invalid authentication type", ErrorKind::InvalidArgument),
    // PowerShell's categories and CIM query misses (v1.1).
    ("objectnotfound", ErrorKind::NotFound),
    ("objects found with property", ErrorKind::NotFound),
    (
        "cannot find any service with service name",
        ErrorKind::NotFound,
    ),
    ("resourceexists", ErrorKind::AlreadyExists),
    ("permissiondenied", ErrorKind::PermissionDenied),
    // Lookups of the disk group.
    ("could not find disk with page83 id", ErrorKind::NotFound),
    // System group waits (v1.3).
    ("timed out waiting for service", ErrorKind::TimedOut),
    // go-ole's text of DISP_E_EXCEPTION (English Windows) with WMI's
    // description of WBEM_E_NOT_FOUND and WBEM_E_ACCESS_DENIED (v1.3).
    ("exception occurred. (not found", ErrorKind::NotFound),
    (
        "exception occurred. (access denied",
        ErrorKind::PermissionDenied,
    ),
];

/// The kind a text's phrases mean, for a text with no code that means a
/// kind; `None` when no phrase is there. Case is ignored.
///
/// The phrases: the filesystem group's path checks (a path outside the
/// working directories is [`ErrorKind::PermissionDenied`], a malformed one
/// [`ErrorKind::InvalidArgument`]), PowerShell's error categories
/// (`ObjectNotFound`, `ResourceExists`, `PermissionDenied`) and its CIM
/// query misses, the disk and service lookups, the service waits, and
/// go-ole's `Exception occurred. (Not found )`. Besides, three endings
/// count: the WMI library's `Not Found` and `Already Exists` as the last
/// cause (`... err: Not Found`), and an empty or invalid field (`volume id
/// empty`, `remote path (x) is invalid`).
pub fn phrase_kind(text: &str) -> Option<ErrorKind> {
    let lower = without_format_failures(&text.to_ascii_lowercase());
    let trimmed = lower.trim_end().trim_end_matches('.');
    if let Some(&(_, kind)) = PHRASES.iter().find(|(p, _)| lower.contains(p)) {
        return Some(kind);
    }
    if trimmed.ends_with(": not found") {
        return Some(ErrorKind::NotFound);
    }
    if trimmed.ends_with(": already exists") {
        return Some(ErrorKind::AlreadyExists);
    }
    if trimmed.ends_with(" empty") || trimmed.ends_with(") is invalid") {
        return Some(ErrorKind::InvalidArgument);
    }
    None
}

#[cfg(test)]
mod tests;
