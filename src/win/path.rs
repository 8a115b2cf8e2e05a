//! Windows path handling: parsing, Win32-style normalisation, case folding
//! and the filesystem group's working-directory validation.
//!
//! [`WinPath`] is a parsed, normalised absolute Windows path (drive, UNC share
//! or `\\?\Volume{GUID}\` root plus components). [`validate_working_path`] is
//! the filesystem group's confinement check.
//!
//! # Normalisation
//! For `X:\...` and `\\server\share\...` input: `/` becomes `\`, runs of `\`
//! collapse, `.` components are dropped, `..` pops a component but never climbs
//! above the drive or share root, and trailing spaces and dots are stripped from
//! every component (`foo.` is `foo`). `\\?\` forms are not normalised, as on
//! Windows. Components are compared and stored case-folded ([`fold`]).
//!
//! # Divergences from upstream
//! - **Working-dir confinement compares whole path components**,
//!   case-insensitively, after the normalisation above. Upstream does a plain
//!   string-prefix test, so `C:\var\lib\kubelet-evil` and `C:\var\lib\kubeletfoo`
//!   pass for the working dir `C:\var\lib\kubelet`; here they are rejected with
//!   upstream's "not within the working directories" text. The working dir
//!   itself stays accepted.
//! - A working dir configured with a trailing `\` also accepts the bare
//!   directory (upstream rejects it, an artefact of the string prefix).
//! - An empty working-dir entry matches nothing (upstream's string prefix
//!   would accept every path).
//! - `..` components are rejected (upstream's step 4 already rejects every
//!   `..` substring, which this keeps; the component check is belt and braces).
//! - Host-side parsing of unvalidated paths (IsSymlink, link targets, volume
//!   group paths): relative paths, `X:rel`, rooted-without-drive `\foo` and
//!   device paths `\\.\` are refused with Win32 error 123 instead of being
//!   resolved against the proxy's current directory; components containing
//!   characters illegal in Win32 names (`< > : " | ? *`, control characters)
//!   are refused with 123; in `\\?\` forms `/`, empty, `.` and `..` components
//!   are refused with 123 rather than taken literally.

use std::borrow::Cow;
use std::fmt;

use super::error::{HostError, HostResult};

/// MAX_PATH: the longest request path (in bytes) the filesystem group accepts.
pub const MAX_PATH: usize = 260;

/// A Win32 error: the numeric code and the text Windows prints for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Win32Error {
    code: u32,
    message: Cow<'static, str>,
}

impl Win32Error {
    /// `ERROR_FILE_NOT_FOUND` (2).
    pub const FILE_NOT_FOUND: u32 = 2;
    /// `ERROR_PATH_NOT_FOUND` (3).
    pub const PATH_NOT_FOUND: u32 = 3;
    /// `ERROR_ACCESS_DENIED` (5).
    pub const ACCESS_DENIED: u32 = 5;
    /// `ERROR_NOT_READY` (21): used for a mount point whose volume is absent.
    pub const NOT_READY: u32 = 21;
    /// `ERROR_NOT_SUPPORTED` (50).
    pub const NOT_SUPPORTED: u32 = 50;
    /// `ERROR_BAD_NETPATH` (53): SMB server unknown or unreachable.
    pub const BAD_NETPATH: u32 = 53;
    /// `ERROR_BAD_NET_NAME` (67): UNC share not reachable.
    pub const BAD_NET_NAME: u32 = 67;
    /// `ERROR_INVALID_PARAMETER` (87).
    pub const INVALID_PARAMETER: u32 = 87;
    /// `ERROR_INVALID_NAME` (123).
    pub const INVALID_NAME: u32 = 123;
    /// `ERROR_DIR_NOT_EMPTY` (145).
    pub const DIR_NOT_EMPTY: u32 = 145;
    /// `ERROR_ALREADY_EXISTS` (183).
    pub const ALREADY_EXISTS: u32 = 183;
    /// `ERROR_FILENAME_EXCED_RANGE` (206): a name too long for the sandbox.
    pub const FILENAME_EXCED_RANGE: u32 = 206;
    /// `ERROR_DIRECTORY` (267).
    pub const DIRECTORY: u32 = 267;
    /// `ERROR_IO_DEVICE` (1117): any other failure of the sandbox filesystem.
    pub const IO_DEVICE: u32 = 1117;
    /// `ERROR_LOGON_FAILURE` (1326): a share's stored credential is no
    /// longer valid.
    pub const LOGON_FAILURE: u32 = 1326;
    /// `ERROR_CANT_RESOLVE_FILENAME` (1921): too many link hops.
    pub const CANT_RESOLVE_FILENAME: u32 = 1921;
    /// `ERROR_NOT_A_REPARSE_POINT` (4390).
    pub const NOT_A_REPARSE_POINT: u32 = 4390;

    /// The error for `code`, with Windows' text for it.
    pub fn new(code: u32) -> Self {
        let message = match code {
            Self::FILE_NOT_FOUND => "The system cannot find the file specified.",
            Self::PATH_NOT_FOUND => "The system cannot find the path specified.",
            Self::ACCESS_DENIED => "Access is denied.",
            Self::NOT_READY => "The device is not ready.",
            Self::NOT_SUPPORTED => "The request is not supported.",
            Self::BAD_NETPATH => "The network path was not found.",
            Self::BAD_NET_NAME => "The network name cannot be found.",
            Self::INVALID_PARAMETER => "The parameter is incorrect.",
            Self::INVALID_NAME => {
                "The filename, directory name, or volume label syntax is incorrect."
            }
            Self::DIR_NOT_EMPTY => "The directory is not empty.",
            Self::ALREADY_EXISTS => "Cannot create a file when that file already exists.",
            Self::FILENAME_EXCED_RANGE => "The filename or extension is too long.",
            Self::DIRECTORY => "The directory name is invalid.",
            Self::LOGON_FAILURE => "The user name or password is incorrect.",
            Self::CANT_RESOLVE_FILENAME => "The name of the file cannot be resolved by the system.",
            Self::NOT_A_REPARSE_POINT => "The file or directory is not a reparse point.",
            _ => "The request could not be performed because of an I/O device error.",
        };
        Self {
            code,
            message: Cow::Borrowed(message),
        }
    }

    /// Go's `syscall.ENOTDIR`, which `os.MkdirAll` reports when the path
    /// exists as a file; on Windows Go defines it as `ERROR_PATH_NOT_FOUND`.
    pub fn not_a_directory() -> Self {
        Self::new(Self::PATH_NOT_FOUND)
    }

    /// Maps an error of the sandbox filesystem to the nearest Win32 error.
    pub fn from_io(e: &std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        match e.kind() {
            K::NotFound => Self::new(Self::FILE_NOT_FOUND),
            K::PermissionDenied => Self::new(Self::ACCESS_DENIED),
            K::AlreadyExists => Self::new(Self::ALREADY_EXISTS),
            K::DirectoryNotEmpty => Self::new(Self::DIR_NOT_EMPTY),
            K::NotADirectory => Self::new(Self::DIRECTORY),
            K::InvalidFilename => Self::new(Self::FILENAME_EXCED_RANGE),
            _ => Self::new(Self::IO_DEVICE),
        }
    }

    /// The Win32 error code.
    pub fn code(&self) -> u32 {
        self.code
    }

    /// The Windows message text.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Win32Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Win32Error {}

/// Case-folds one character the way Go's `unicode.ToLower` does (simple
/// one-to-one mapping; characters whose lowercase is several characters keep
/// Go's single-character answer).
pub fn fold_char(c: char) -> char {
    if c == '\u{130}' {
        return 'i';
    }
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// Case-folds a string per [`fold_char`] (Go `strings.ToLower`).
pub fn fold(s: &str) -> String {
    s.chars().map(fold_char).collect()
}

/// The root of an absolute Windows path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WinRoot {
    /// A drive letter, stored uppercase (`C`).
    Drive(char),
    /// A UNC share `\\server\share` (original case).
    Unc {
        /// Server name.
        server: String,
        /// Share name.
        share: String,
    },
    /// A volume GUID root `\\?\Volume{guid}\`; the GUID is stored lowercase,
    /// without braces.
    Volume(String),
}

impl WinRoot {
    /// Whether two roots name the same thing (case-insensitively).
    pub fn same_as(&self, other: &WinRoot) -> bool {
        match (self, other) {
            (WinRoot::Drive(a), WinRoot::Drive(b)) => a == b,
            (
                WinRoot::Unc {
                    server: s1,
                    share: h1,
                },
                WinRoot::Unc {
                    server: s2,
                    share: h2,
                },
            ) => fold(s1) == fold(s2) && fold(h1) == fold(h2),
            (WinRoot::Volume(a), WinRoot::Volume(b)) => a == b,
            _ => false,
        }
    }
}

/// A parsed, normalised absolute Windows path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WinPath {
    root: WinRoot,
    components: Vec<String>,
}

fn invalid_name() -> Win32Error {
    Win32Error::new(Win32Error::INVALID_NAME)
}

fn has_drive_prefix(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'\\'
}

fn starts_with_ci(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len()
        && s.is_char_boundary(prefix.len())
        && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Strips trailing spaces and dots from one component (Win32 rule).
pub fn strip_trailing(component: &str) -> &str {
    component.trim_end_matches([' ', '.'])
}

fn check_component(c: &str) -> Result<(), Win32Error> {
    if c.is_empty()
        || c == "."
        || c == ".."
        || c.chars().any(|ch| {
            matches!(ch, '<' | '>' | ':' | '"' | '|' | '?' | '*' | '/' | '\\') || (ch as u32) < 0x20
        })
    {
        return Err(invalid_name());
    }
    Ok(())
}

/// Win32 normalisation of `\`-separated components (see the module docs).
fn normalise_components<'a>(
    parts: impl Iterator<Item = &'a str>,
) -> Result<Vec<String>, Win32Error> {
    let mut out: Vec<String> = Vec::new();
    for part in parts {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            _ => {
                let stripped = strip_trailing(part);
                if stripped.is_empty() {
                    continue;
                }
                check_component(stripped)?;
                out.push(stripped.to_string());
            }
        }
    }
    Ok(out)
}

fn literal_components(rest: &str) -> Result<Vec<String>, Win32Error> {
    if rest.is_empty() {
        return Ok(Vec::new());
    }
    let rest = rest.strip_suffix('\\').unwrap_or(rest);
    let mut out = Vec::new();
    for part in rest.split('\\') {
        check_component(part)?;
        out.push(part.to_string());
    }
    Ok(out)
}

fn parse_guid(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if b.len() != 36 {
        return None;
    }
    for (i, c) in b.iter().enumerate() {
        let dash = matches!(i, 8 | 13 | 18 | 23);
        if dash != (*c == b'-') || (!dash && !c.is_ascii_hexdigit()) {
            return None;
        }
    }
    Some(s.to_ascii_lowercase())
}

/// Parses a volume id `\\?\Volume{GUID}\` (case-insensitive, trailing `\`
/// required) and returns the GUID in lowercase.
pub fn volume_id_guid(id: &str) -> Option<String> {
    let rest = if starts_with_ci(id, r"\\?\Volume{") {
        &id[11..]
    } else {
        return None;
    };
    let guid = rest.strip_suffix(r"}\")?;
    parse_guid(guid)
}

/// The canonical volume id for a lowercase GUID: `\\?\Volume{guid}\`.
pub fn volume_id_for_guid(guid: &str) -> String {
    format!(r"\\?\Volume{{{guid}}}\")
}

impl WinPath {
    /// Parses an absolute Windows path: `X:\...`, `\\server\share\...`,
    /// `\\?\X:\...`, `\\?\UNC\server\share\...` or `\\?\Volume{GUID}\...`.
    /// Anything else fails with Win32 error 123.
    pub fn parse(input: &str) -> Result<WinPath, Win32Error> {
        if input.contains('\0') {
            return Err(invalid_name());
        }
        if let Some(rest) = input.strip_prefix(r"\\?\") {
            if rest.contains('/') {
                return Err(invalid_name());
            }
            let b = rest.as_bytes();
            if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
                if b.len() == 2 {
                    return Ok(WinPath::root(WinRoot::Drive(
                        b[0].to_ascii_uppercase() as char
                    )));
                }
                if b[2] != b'\\' {
                    return Err(invalid_name());
                }
                return Ok(WinPath {
                    root: WinRoot::Drive(b[0].to_ascii_uppercase() as char),
                    components: literal_components(&rest[3..])?,
                });
            }
            if starts_with_ci(rest, r"UNC\") {
                let mut it = rest[4..].splitn(3, '\\');
                let server = it.next().unwrap_or("");
                let share = it.next().unwrap_or("");
                check_component(server)?;
                check_component(share)?;
                return Ok(WinPath {
                    root: WinRoot::Unc {
                        server: server.to_string(),
                        share: share.to_string(),
                    },
                    components: literal_components(it.next().unwrap_or(""))?,
                });
            }
            if starts_with_ci(rest, "Volume{") {
                let close = rest.find('}').ok_or_else(invalid_name)?;
                let guid = parse_guid(&rest[7..close]).ok_or_else(invalid_name)?;
                let after = &rest[close + 1..];
                let comps = if after.is_empty() {
                    Vec::new()
                } else if let Some(r) = after.strip_prefix('\\') {
                    literal_components(r)?
                } else {
                    return Err(invalid_name());
                };
                return Ok(WinPath {
                    root: WinRoot::Volume(guid),
                    components: comps,
                });
            }
            return Err(invalid_name());
        }
        let s = input.replace('/', "\\");
        if let Some(unc) = s.strip_prefix(r"\\") {
            if s.starts_with(r"\\.\") || s.starts_with(r"\\?\") || s == r"\\." || s == r"\\?" {
                return Err(invalid_name());
            }
            let mut parts = unc.split('\\').filter(|p| !p.is_empty());
            let server = parts.next().ok_or_else(invalid_name)?;
            let share = parts.next().ok_or_else(invalid_name)?;
            let server = strip_trailing(server);
            let share = strip_trailing(share);
            check_component(server)?;
            check_component(share)?;
            return Ok(WinPath {
                root: WinRoot::Unc {
                    server: server.to_string(),
                    share: share.to_string(),
                },
                components: normalise_components(parts)?,
            });
        }
        if has_drive_prefix(&s) {
            let letter = s.as_bytes()[0].to_ascii_uppercase() as char;
            return Ok(WinPath {
                root: WinRoot::Drive(letter),
                components: normalise_components(s[3..].split('\\'))?,
            });
        }
        Err(invalid_name())
    }

    /// The root itself, with no components.
    pub fn root(root: WinRoot) -> WinPath {
        WinPath {
            root,
            components: Vec::new(),
        }
    }

    /// The path's root.
    pub fn root_kind(&self) -> &WinRoot {
        &self.root
    }

    /// The components after the root (original case, normalised).
    pub fn components(&self) -> &[String] {
        &self.components
    }

    /// Whether this is a root (drive root, share root or volume root).
    pub fn is_root(&self) -> bool {
        self.components.is_empty()
    }

    /// This path with one more component appended (not re-validated: the
    /// component must come from another parsed path).
    pub fn join(&self, component: &str) -> WinPath {
        let mut p = self.clone();
        p.components.push(component.to_string());
        p
    }

    /// The parent directory; `None` for a root.
    pub fn parent(&self) -> Option<WinPath> {
        if self.components.is_empty() {
            return None;
        }
        let mut p = self.clone();
        p.components.pop();
        Some(p)
    }

    /// The last component, if any.
    pub fn file_name(&self) -> Option<&str> {
        self.components.last().map(String::as_str)
    }

    /// Case-insensitive equality (Windows semantics).
    pub fn same_as(&self, other: &WinPath) -> bool {
        self.root.same_as(&other.root)
            && self.components.len() == other.components.len()
            && self
                .components
                .iter()
                .zip(&other.components)
                .all(|(a, b)| fold(a) == fold(b))
    }

    /// The path as Windows prints it, with a trailing `\` (as
    /// `GetVolumePathName` returns mount points and drive roots).
    pub fn to_string_with_slash(&self) -> String {
        let s = self.to_string();
        if s.ends_with('\\') { s } else { s + "\\" }
    }
}

impl fmt::Display for WinPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.root {
            WinRoot::Drive(c) => write!(f, "{c}:\\")?,
            WinRoot::Unc { server, share } => {
                write!(f, "\\\\{server}\\{share}")?;
                if !self.components.is_empty() {
                    f.write_str("\\")?;
                }
            }
            WinRoot::Volume(g) => write!(f, "\\\\?\\Volume{{{g}}}\\")?,
        }
        f.write_str(&self.components.join("\\"))
    }
}

/// Splits a validated request path or a working dir into comparable
/// components: split on `\`, drop empty and `.` components, strip trailing
/// spaces and dots, case-fold.
fn confinement_components(s: &str) -> Vec<String> {
    s.split('\\')
        .filter(|c| !c.is_empty() && *c != ".")
        .map(|c| {
            let t = strip_trailing(c);
            fold(if t.is_empty() { c } else { t })
        })
        .collect()
}

/// Whether the already syntax-checked path `p` lies in (or is) the working
/// dir `w`, comparing whole components (see "Divergences from upstream").
pub fn is_within(p: &str, w: &str) -> bool {
    let wc = confinement_components(w);
    if wc.is_empty() {
        return false;
    }
    let pc = confinement_components(p);
    if pc.iter().any(|c| c == "..") || wc.iter().any(|c| c == "..") {
        return false;
    }
    pc.len() >= wc.len() && pc.iter().zip(&wc).all(|(a, b)| a == b)
}

/// The filesystem group's path validation, with the
/// stricter component-wise confinement described in the module docs.
/// `working_dirs` is the ordered list W (working dirs, then the kubelet path).
pub fn validate_working_path(p: &str, working_dirs: &[String]) -> HostResult<()> {
    if p.len() > MAX_PATH {
        return Err(HostError::unknown(format!(
            "path length {} exceeds maximum characters: {MAX_PATH}",
            p.len()
        )));
    }
    // This also refuses every UNC path: csi-proxy's own UNC check comes
    // after it and is never reached, so its "unsupported UNC path prefix"
    // is never sent (v1.1.3 and v1.3.0, pkg/server/filesystem/server.go).
    if p.starts_with('\\') {
        return Err(HostError::unknown(format!(
            "invalid character \\ at beginning of path: {p}"
        )));
    }
    let rest = if has_drive_prefix(p) { &p[3..] } else { p };
    if rest.contains(['"', '/', ':', '?', '*', '|']) || rest.contains("..") {
        return Err(HostError::unknown(format!(
            "path contains invalid characters: {p}"
        )));
    }
    if !has_drive_prefix(p) {
        return Err(HostError::unknown(format!(
            "not an absolute Windows path: {p}"
        )));
    }
    if !working_dirs.iter().any(|w| is_within(p, w)) {
        return Err(HostError::unknown(format!(
            "path: {p} is not within the working directories: [{}]",
            working_dirs.join(" ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w() -> Vec<String> {
        vec![r"C:\var\lib\kubelet".to_string()]
    }

    fn err(p: &str) -> String {
        validate_working_path(p, &w())
            .unwrap_err()
            .message()
            .to_string()
    }

    #[test]
    fn upstream_unit_table_accepts() {
        for p in [
            r"C:\var\lib\kubelet\pods\pv1",
            r"C:\var\lib\kubelet\plugins\pv1",
            r"c:\VAR\Lib\KUBELET\x",
            r"C:\var\lib\kubelet",
            r"C:\var\lib\kubelet\",
            r"C:\var\lib\kubelet\.\x",
            r"C:\var\lib\kubelet\\pods",
        ] {
            assert_eq!(validate_working_path(p, &w()), Ok(()), "{p}");
        }
    }

    #[test]
    fn upstream_unit_table_rejects_with_texts() {
        assert_eq!(
            err(r"C:\foo\bar"),
            r"path: C:\foo\bar is not within the working directories: [C:\var\lib\kubelet]"
        );
        for p in [
            r"C:\var\lib\kubelet\pv1:foo",
            r"C:\var\lib\kubelet\pv1/foo",
            r"C:\var\lib\kubelet\pv1*foo",
            r"C:\var\lib\kubelet\pv1?foo",
            r"C:\var\lib\kubelet\csi-plugin|pv1\foo",
            r"C:\var\lib\kubelet\pv1\..\..\..\system32",
            r#"C:\var\lib\kubelet\a"b"#,
            r"C:\var\lib\kubelet\a..b",
            r"C:\var\lib\kubelet\...",
        ] {
            assert_eq!(
                err(p),
                format!("path contains invalid characters: {p}"),
                "{p}"
            );
        }
        assert_eq!(
            err(r"\\csi-plugin\..\..\..\system32"),
            r"invalid character \ at beginning of path: \\csi-plugin\..\..\..\system32"
        );
        assert_eq!(
            err(r"\foo"),
            r"invalid character \ at beginning of path: \foo"
        );
        assert_eq!(err(r"pv1\foo"), r"not an absolute Windows path: pv1\foo");
        assert_eq!(err(""), "not an absolute Windows path: ");
        assert_eq!(err("C:foo"), "path contains invalid characters: C:foo");
    }

    #[test]
    fn length_limit_counts_bytes() {
        let base = r"C:\var\lib\kubelet\";
        let ok = format!("{base}{}", "a".repeat(MAX_PATH - base.len()));
        assert_eq!(ok.len(), 260);
        assert_eq!(validate_working_path(&ok, &w()), Ok(()));
        let long = format!("{ok}a");
        assert_eq!(
            err(&long),
            "path length 261 exceeds maximum characters: 260"
        );
        // multi-byte characters count per byte: 129 x 'é' (2 bytes) + base
        let mb = format!("{base}{}", "é".repeat(121));
        assert_eq!(mb.len(), 19 + 242);
        assert_eq!(err(&mb), "path length 261 exceeds maximum characters: 260");
    }

    #[test]
    fn stricter_sibling_prefixes_rejected() {
        for p in [
            r"C:\var\lib\kubelet-evil\x",
            r"C:\var\lib\kubeletfoo",
            r"C:\var\lib\kube",
        ] {
            assert_eq!(
                err(p),
                format!("path: {p} is not within the working directories: [C:\\var\\lib\\kubelet]")
            );
        }
        // trailing dots/spaces are stripped by Windows, so these ARE inside
        assert_eq!(
            validate_working_path(r"C:\var\lib\kubelet.\x", &w()),
            Ok(())
        );
    }

    #[test]
    fn multiple_working_dirs_and_trailing_slash() {
        let dirs = vec![r"D:\data\".to_string(), r"C:\var\lib\kubelet".to_string()];
        assert_eq!(validate_working_path(r"D:\data\x", &dirs), Ok(()));
        // divergence: a working dir with a trailing `\` accepts the bare dir
        assert_eq!(validate_working_path(r"D:\data", &dirs), Ok(()));
        assert_eq!(
            validate_working_path(r"C:\var\lib\kubelet\x", &dirs),
            Ok(())
        );
        assert_eq!(
            validate_working_path(r"E:\x", &dirs).unwrap_err().message(),
            r"path: E:\x is not within the working directories: [D:\data\ C:\var\lib\kubelet]"
        );
        // a working dir written with `/` can never match
        let slash = vec!["C:/var/lib/kubelet".to_string()];
        assert!(validate_working_path(r"C:\var\lib\kubelet\x", &slash).is_err());
        // an empty working dir matches nothing
        assert!(validate_working_path(r"C:\x", &[String::new()]).is_err());
    }

    #[test]
    fn parse_and_normalise() {
        let p = WinPath::parse(r"c:/a//b\.\c.. \..\d\").unwrap();
        assert_eq!(p.root_kind(), &WinRoot::Drive('C'));
        assert_eq!(p.components(), ["a", "b", "d"]);
        assert_eq!(p.to_string(), r"C:\a\b\d");
        let p = WinPath::parse(r"C:\..\..\x").unwrap();
        assert_eq!(p.to_string(), r"C:\x");
        let p = WinPath::parse(r"\\Srv\Share\..\..\a").unwrap();
        assert_eq!(p.to_string(), r"\\Srv\Share\a");
        let p = WinPath::parse(r"\\?\Volume{3B0F7C52-9A1D-4E6B-8C27-5F4D1E0A9B63}\x").unwrap();
        assert_eq!(
            p.root_kind(),
            &WinRoot::Volume("3b0f7c52-9a1d-4e6b-8c27-5f4d1e0a9b63".into())
        );
        assert_eq!(
            p.to_string(),
            r"\\?\Volume{3b0f7c52-9a1d-4e6b-8c27-5f4d1e0a9b63}\x"
        );
        let p = WinPath::parse(r"\\?\UNC\srv\sh\a\b").unwrap();
        assert_eq!(p.to_string(), r"\\srv\sh\a\b");
        let p = WinPath::parse(r"\\?\C:\a").unwrap();
        assert_eq!(p.to_string(), r"C:\a");
        assert_eq!(
            WinPath::parse("C:\\").unwrap().to_string_with_slash(),
            "C:\\"
        );
        for bad in [
            "relative",
            "C:rel",
            r"\foo",
            r"\\.\pipe\x",
            r"\\?\C:\a\..\b",
            r"\\?\C:\a/b",
            r"C:\a:b",
            r"C:\a*",
            r"\\server",
            "",
        ] {
            assert_eq!(
                WinPath::parse(bad).unwrap_err().code(),
                Win32Error::INVALID_NAME,
                "{bad}"
            );
        }
    }

    #[test]
    fn folding_matches_go() {
        assert_eq!(fold("ABC\u{130}"), "abci");
        assert_eq!(fold("Ä"), "ä");
        assert!(
            WinPath::parse(r"C:\A\b")
                .unwrap()
                .same_as(&WinPath::parse(r"c:\a\B").unwrap())
        );
    }

    #[test]
    fn volume_ids() {
        assert_eq!(
            volume_id_guid(r"\\?\VOLUME{3B0F7C52-9A1D-4E6B-8C27-5F4D1E0A9B63}\").as_deref(),
            Some("3b0f7c52-9a1d-4e6b-8c27-5f4d1e0a9b63")
        );
        assert_eq!(
            volume_id_guid(r"\\?\Volume{3b0f7c52-9a1d-4e6b-8c27-5f4d1e0a9b63}"),
            None
        );
        assert_eq!(volume_id_guid("-1"), None);
        assert_eq!(
            volume_id_guid(r"\\.\Volume{3b0f7c52-9a1d-4e6b-8c27-5f4d1e0a9b63}\"),
            None
        );
    }
}
