//! [`HostProcess`]: the `<Group>Api` traits over a [`WindowsHost`], and the
//! pieces every group shares (running a call off the runtime, error texts).

use std::sync::Arc;

use super::boundary::{Failure, MethodResult, WindowsHost};
use crate::Error;

/// The kubelet directory, the only place the filesystem group and mount
/// targets may touch unless told otherwise.
pub const DEFAULT_KUBELET_DIR: &str = r"C:\var\lib\kubelet";

/// The newest version of every group, done in process on the Windows host:
/// implements `disk::v1::DiskApi`, `volume::v1::VolumeApi`,
/// `filesystem::v1::FilesystemApi`, `smb::v1::SmbApi`,
/// `iscsi::v1alpha2::IscsiApi` and `system::v1alpha1::SystemApi` over a
/// [`WindowsHost`]. Cheap to clone.
///
/// Behaves as csi-proxy v1.3.0 does: the same idempotency, and failures as
/// gRPC `UNKNOWN` [`Error::Rpc`]s (endpoint `host-process`, the method's
/// gRPC path) whose texts follow v1.3.0's: a WMI method's return value as
/// `result N` (read by [`Error::host_code`] as a WMI result), a Win32
/// failure's code as `code=N` (read as a Win32 error), so [`Error::kind`]
/// and [`Error::windows_code`] classify them as they classify the proxy's. Paths that are written to
/// (filesystem group, mount targets, SMB links) must lie in the working
/// directories, as the proxy's filesystem group requires.
#[derive(Clone)]
pub struct HostProcess {
    pub(super) host: Arc<dyn WindowsHost>,
    pub(super) working_dirs: Arc<Vec<String>>,
    pub(super) require_privacy: bool,
}

impl std::fmt::Debug for HostProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostProcess")
            .field("working_dirs", &self.working_dirs)
            .field("require_privacy", &self.require_privacy)
            .finish_non_exhaustive()
    }
}

/// A backend over a boundary as [`HostProcess::new`] makes it, for
/// [`Node::host_process_with`](crate::node::Node::host_process_with).
impl From<Arc<dyn WindowsHost>> for HostProcess {
    fn from(host: Arc<dyn WindowsHost>) -> HostProcess {
        HostProcess::new(host)
    }
}

/// A backend over a boundary as [`HostProcess::new`] makes it (an
/// `Arc<FakeWindows>` in tests).
impl<W: WindowsHost> From<Arc<W>> for HostProcess {
    fn from(host: Arc<W>) -> HostProcess {
        HostProcess::new(host)
    }
}

/// A backend over a boundary as [`HostProcess::new`] makes it
/// (`FakeWindows::new(..)` in tests).
impl<W: WindowsHost> From<W> for HostProcess {
    fn from(host: W) -> HostProcess {
        HostProcess::new(Arc::new(host))
    }
}

impl HostProcess {
    /// Which host the backend works on ([`WindowsHost::host_name`]).
    pub(crate) fn host_name(&self) -> String {
        self.host.host_name()
    }

    /// Where the node's records go by default ([`WindowsHost::state_dir`]).
    pub(crate) fn state_dir(&self) -> Option<std::path::PathBuf> {
        self.host.state_dir()
    }

    /// Over `host`, kubelet's directory `C:\var\lib\kubelet` the only working
    /// directory, SMB mappings requiring encryption (the proxy's defaults).
    pub fn new(host: Arc<dyn WindowsHost>) -> HostProcess {
        HostProcess {
            host,
            working_dirs: Arc::new(vec![DEFAULT_KUBELET_DIR.to_string()]),
            require_privacy: true,
        }
    }

    /// The directories paths must lie in (`--kubelet-path` and the proxy's
    /// working directories).
    #[must_use]
    pub fn with_working_dirs(mut self, dirs: Vec<String>) -> HostProcess {
        self.working_dirs = Arc::new(dirs);
        self
    }

    /// Whether new SMB mappings require encryption (`--require-privacy`).
    #[must_use]
    pub fn with_require_privacy(mut self, require: bool) -> HostProcess {
        self.require_privacy = require;
        self
    }

    /// Runs `work` on a blocking thread (COM calls block) and turns its
    /// failure text into the error of RPC `method`.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        method: &'static str,
        work: impl FnOnce(&Ctx) -> Result<T, String> + Send + 'static,
    ) -> Result<T, Error> {
        let ctx = Ctx {
            host: self.host.clone(),
            working_dirs: self.working_dirs.clone(),
            require_privacy: self.require_privacy,
        };
        let span = tracing::debug_span!("host_process", rpc.method = method);
        let joined = tokio::task::spawn_blocking(move || span.in_scope(|| work(&ctx))).await;
        match joined {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(text)) => {
                tracing::debug!(method, error = %text, "host-process call failed");
                Err(Error::rpc(ENDPOINT, method, tonic::Status::unknown(text)))
            }
            Err(e) => Err(Error::rpc(
                ENDPOINT,
                method,
                tonic::Status::internal(format!("the host call did not finish: {e}")),
            )),
        }
    }
}

/// The endpoint errors of this backend name.
pub const ENDPOINT: &str = "host-process";

/// What a blocking call works with.
pub(super) struct Ctx {
    pub host: Arc<dyn WindowsHost>,
    pub working_dirs: Arc<Vec<String>>,
    pub require_privacy: bool,
}

impl Ctx {
    pub fn host(&self) -> &dyn WindowsHost {
        &*self.host
    }

    /// The filesystem group's validation (working directories, syntax).
    pub fn validate(&self, path: &str) -> Result<(), String> {
        crate::win::path::validate_working_path(path, &self.working_dirs)
            .map_err(|e| e.message().to_string())
    }
}

/// The out parameters of a WMI method that returned 0; for any other
/// return value, the text `failed` words it in (csi-proxy v1.3's, from
/// [`crate::win::texts`]).
pub(super) fn wmi<T>(
    result: MethodResult<T>,
    failed: impl FnOnce(u32) -> String,
) -> Result<T, String> {
    if result.code == 0 {
        Ok(result.out)
    } else {
        Err(failed(result.code))
    }
}

/// A failed boundary call as text.
pub(super) fn text(f: Failure) -> String {
    f.to_string()
}

/// Whether a Win32 failure says the path is not there.
pub(super) fn is_missing(f: &Failure) -> bool {
    matches!(f.win32_code(), Some(2 | 3))
}

/// `path` with one trailing `\` (mount point APIs want it).
pub(super) fn with_slash(path: &str) -> String {
    if path.ends_with('\\') {
        path.to_string()
    } else {
        format!("{path}\\")
    }
}
