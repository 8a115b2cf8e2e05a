use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::Error;

/// The environment variable naming the directory of the proxy's Unix sockets
/// (the default endpoints on Linux and macOS).
pub const SOCKET_DIR_ENV: &str = "CSI_PROXY_SOCKET_DIR";

/// Where a CSI Proxy endpoint listens.
///
/// Parsed from text with [`str::parse`]; accepted forms:
///
/// | text | meaning |
/// |---|---|
/// | `npipe:////./pipe/NAME` (Docker's convention; `npipe://./pipe/NAME` too) | named pipe `\\.\pipe\NAME` |
/// | `\\.\pipe\NAME` (also with doubled separators, `\\.\\pipe\\NAME`) | named pipe `\\.\pipe\NAME` |
/// | `unix:///absolute/path` | Unix socket |
/// | `/absolute/path` (Unix only) | Unix socket |
///
/// Anything else is rejected with [`Error::InvalidAddress`] quoting the input.
/// Named pipes are local only (`.` as the server) and exist on Windows only;
/// Unix sockets are supported on Unix only. Both parse everywhere, and
/// connecting where the kind is not supported fails with [`Error::Connect`].
///
/// ```
/// use csi_proxy_client::transport::Address;
/// let a: Address = "npipe:////./pipe/csi-proxy-disk-v1".parse()?;
/// assert_eq!(a, Address::named_pipe("csi-proxy-disk-v1"));
/// assert_eq!(a.to_string(), r"\\.\pipe\csi-proxy-disk-v1");
/// # Ok::<(), csi_proxy_client::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Address {
    /// A Windows named pipe; holds the full path, `\\.\pipe\NAME`.
    NamedPipe(String),
    /// A Unix-domain socket; holds its absolute path.
    Unix(PathBuf),
}

impl Address {
    /// The local named pipe `\\.\pipe\<name>`.
    pub fn named_pipe(name: &str) -> Self {
        Address::NamedPipe(format!(r"\\.\pipe\{name}"))
    }

    /// The endpoint name of a group version: `csi-proxy-<group>-<version>`,
    /// the pipe name on Windows and the socket's stem elsewhere.
    pub fn endpoint_name(group: &str, version: &str) -> String {
        format!("csi-proxy-{group}-{version}")
    }

    /// The socket a server serving `group`/`version` creates in `dir`:
    /// `<dir>/csi-proxy-<group>-<version>.sock`.
    pub fn socket_in(dir: &Path, group: &str, version: &str) -> Self {
        Address::Unix(dir.join(format!("{}.sock", Self::endpoint_name(group, version))))
    }

    /// The default endpoint of a group version: on Windows the named pipe
    /// `\\.\pipe\csi-proxy-<group>-<version>`; elsewhere the socket
    /// `csi-proxy-<group>-<version>.sock` in the directory named by
    /// [`SOCKET_DIR_ENV`] (an error when that variable is unset or empty).
    pub fn default_for(group: &str, version: &str) -> Result<Self, Error> {
        if cfg!(windows) {
            return Ok(Self::named_pipe(&Self::endpoint_name(group, version)));
        }
        Self::default_in(std::env::var_os(SOCKET_DIR_ENV), group, version)
    }

    /// The non-Windows default, given the value of [`SOCKET_DIR_ENV`].
    fn default_in(
        socket_dir: Option<std::ffi::OsString>,
        group: &str,
        version: &str,
    ) -> Result<Self, Error> {
        match socket_dir {
            Some(dir) if !dir.is_empty() => Ok(Self::socket_in(Path::new(&dir), group, version)),
            _ => Err(Error::NoDefaultEndpoint {
                group: group.to_string(),
                version: version.to_string(),
                reason: format!(
                    "{SOCKET_DIR_ENV} is not set; set it to the directory of the proxy's sockets"
                ),
            }),
        }
    }
}

impl fmt::Display for Address {
    /// The pipe path (`\\.\pipe\NAME`) or the socket path: the form used in
    /// error messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::NamedPipe(path) => f.write_str(path),
            Address::Unix(path) => write!(f, "{}", path.display()),
        }
    }
}

fn invalid(input: &str, reason: &str) -> Error {
    Error::InvalidAddress {
        input: input.to_string(),
        reason: reason.to_string(),
    }
}

/// `\\.\pipe\NAME` from text with `\` or `/` separators, runs of them allowed.
fn named_pipe(input: &str, text: &str) -> Result<Address, Error> {
    let text = text.replace('/', "\\");
    if !text.starts_with(r"\\") {
        return Err(invalid(input, r"a named pipe path starts with \\.\pipe\"));
    }
    let parts: Vec<&str> = text.split('\\').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [".", pipe, name] if pipe.eq_ignore_ascii_case("pipe") => Ok(Address::named_pipe(name)),
        [server, ..] if *server != "." => Err(invalid(
            input,
            "only local named pipes (server '.') are supported",
        )),
        _ => Err(invalid(
            input,
            r"expected a named pipe \\.\pipe\NAME with a non-empty NAME",
        )),
    }
}

impl FromStr for Address {
    type Err = Error;

    fn from_str(input: &str) -> Result<Self, Error> {
        if let Some(rest) = input.strip_prefix("npipe://") {
            let rest = if rest.starts_with("./") || rest.starts_with(".\\") {
                format!("//{rest}")
            } else {
                rest.to_string()
            };
            return named_pipe(input, &rest);
        }
        if let Some(path) = input.strip_prefix("unix://") {
            return if path.len() > 1 && path.starts_with('/') {
                Ok(Address::Unix(PathBuf::from(path)))
            } else {
                Err(invalid(
                    input,
                    "a unix:// address needs an absolute socket path, as in unix:///run/csi-proxy.sock",
                ))
            };
        }
        if input.starts_with(r"\\") || input.starts_with("//") {
            return named_pipe(input, input);
        }
        if cfg!(unix) && input.len() > 1 && input.starts_with('/') {
            return Ok(Address::Unix(PathBuf::from(input)));
        }
        Err(invalid(
            input,
            r"expected npipe:////./pipe/NAME, \\.\pipe\NAME or unix:///absolute/path",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe(name: &str) -> Address {
        Address::named_pipe(name)
    }

    #[test]
    fn accepts_every_documented_form() {
        let cases = [
            (
                "npipe:////./pipe/csi-proxy-disk-v1",
                pipe("csi-proxy-disk-v1"),
            ),
            (
                "npipe://./pipe/csi-proxy-disk-v1",
                pipe("csi-proxy-disk-v1"),
            ),
            (r"npipe://\\.\pipe\x", pipe("x")),
            (
                r"\\.\pipe\csi-proxy-volume-v1beta3",
                pipe("csi-proxy-volume-v1beta3"),
            ),
            (r"\\.\\pipe\\csi-proxy-smb-v1", pipe("csi-proxy-smb-v1")),
            (r"\\.\PIPE\csi-proxy-smb-v1", pipe("csi-proxy-smb-v1")),
            (
                "//./pipe/csi-proxy-iscsi-v1alpha2",
                pipe("csi-proxy-iscsi-v1alpha2"),
            ),
            (
                "unix:///run/csi-proxy/csi-proxy-disk-v1.sock",
                Address::Unix("/run/csi-proxy/csi-proxy-disk-v1.sock".into()),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<Address>().unwrap(), want, "{text}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn accepts_a_bare_absolute_path_on_unix() {
        assert_eq!(
            "/tmp/s.sock".parse::<Address>().unwrap(),
            Address::Unix("/tmp/s.sock".into())
        );
    }

    #[test]
    fn rejects_other_forms_quoting_the_input() {
        for text in [
            "",
            "/",
            "relative.sock",
            "unix://relative.sock",
            "unix://",
            "unix:///",
            "unix:/run/x.sock",
            "tcp://127.0.0.1:80",
            "http://localhost",
            "npipe://",
            "npipe:////./pipe/",
            "npipe:////./notpipe/x",
            r"\\server\pipe\x",
            r"\\.\pipe\a\b",
            r"\\.\pipe",
            r"C:\pipe\x",
            "csi-proxy-disk-v1",
        ] {
            match text.parse::<Address>() {
                Err(Error::InvalidAddress { input, reason }) => {
                    assert_eq!(input, text);
                    let msg = Error::InvalidAddress { input, reason }.to_string();
                    assert!(msg.contains(&format!("{text:?}")), "{msg}");
                }
                other => panic!("{text:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn default_socket_needs_the_directory_variable() {
        let got = Address::default_in(Some("/run/csi".into()), "volume", "v2alpha1").unwrap();
        assert_eq!(
            got,
            Address::Unix("/run/csi/csi-proxy-volume-v2alpha1.sock".into())
        );
        for unset in [None, Some("".into())] {
            let err = Address::default_in(unset, "disk", "v1").unwrap_err();
            let msg = err.to_string();
            assert!(
                msg.contains("csi-proxy-disk-v1") && msg.contains(SOCKET_DIR_ENV),
                "{msg}"
            );
        }
    }

    #[cfg(windows)]
    #[test]
    fn default_is_the_named_pipe_on_windows() {
        assert_eq!(
            Address::default_for("disk", "v1").unwrap(),
            Address::named_pipe("csi-proxy-disk-v1")
        );
    }

    #[test]
    fn display_is_the_pipe_or_socket_path() {
        assert_eq!(pipe("p").to_string(), r"\\.\pipe\p");
        // Socket paths are joined with the platform's separator (and only
        // used on Unix).
        #[cfg(unix)]
        assert_eq!(
            Address::socket_in(Path::new("/d"), "disk", "v1").to_string(),
            "/d/csi-proxy-disk-v1.sock"
        );
    }
}
