//! The reference CSI Proxy server: every group version served over the
//! simulated Windows host ([`crate::host`]).
//!
//! [`ProxyService`] implements the generated server trait of all 23 group
//! versions. Each method converts its version's request into the host's
//! version-neutral model, calls the host, and converts the answer back;
//! versions whose messages are field-identical share one macro-generated
//! implementation. Host failures become gRPC statuses in one place,
//! [`status`].
//!
//! [`Server`] listens on one socket or pipe per group version and serves
//! HTTP/2 with h2 directly: each connection and all its calls are polled
//! by one task, so a call's response is written by the task that produced
//! it (`docs/performance.md` has the measurements).

mod connection;
mod convert;
pub(crate) mod deadline;
mod disk;
mod filesystem;
pub(crate) mod host_time;
mod iscsi;
mod listen;
mod message;
mod ping_strikes;
#[cfg(windows)]
mod pipe;
mod run;
mod sandbox_lock;
mod smb;
mod system;
#[cfg(test)]
mod tests;
mod volume;

pub use run::{GroupVersion, Server, ServerBuilder, ServerError, is_rpc};

use tonic::Status;

use crate::host::{Host, HostError, HostErrorKind, HostResult};

/// All 23 group versions as services over one simulated host.
///
/// Cheap to clone: clones share the host.
#[derive(Clone, Debug)]
pub struct ProxyService {
    host: Host,
}

impl ProxyService {
    /// Serves `host`.
    pub fn new(host: Host) -> Self {
        Self { host }
    }

    /// The simulated host behind the services.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Runs a host operation that may block (sleeps, waits on services) on
    /// tokio's blocking pool and maps its error to a status.
    pub(crate) async fn blocking<T, F>(&self, op: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce(&Host) -> HostResult<T> + Send + 'static,
    {
        let host = self.host.clone();
        match tokio::task::spawn_blocking(move || op(&host)).await {
            Ok(result) => result.map_err(status),
            Err(e) => Err(Status::internal(format!("host operation failed: {e}"))),
        }
    }
}

/// The gRPC status for a host failure: `UNKNOWN` with the text, as the real
/// proxy answers, or `INVALID_ARGUMENT` where the real proxy would crash.
/// Values the text echoes are cut: a run over 512 bytes keeps its first 256
/// and its length, the whole text stays within about 2 KiB.
pub fn status(error: HostError) -> Status {
    let text = message::bounded(error.message());
    match error.kind() {
        HostErrorKind::InvalidArgument => Status::invalid_argument(text),
        _ => Status::unknown(text),
    }
}

/// The result of every service method.
pub(crate) type Reply<T> = Result<tonic::Response<T>, Status>;

/// Maps a host result to a tonic response.
pub(crate) fn reply<T>(result: HostResult<T>) -> Reply<T> {
    result.map(tonic::Response::new).map_err(status)
}
