//! Endpoints and their connections: a Unix socket per group version, or on
//! Windows a named pipe; HTTP/2 served on each connection with the limits
//! and the shutdown of [`Limits`] (each connection in `connection`).

use std::io;
#[cfg(unix)]
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tonic::service::Routes;

use super::connection::{self, stopped};
use super::ping_strikes::KeepalivePolicy;
use crate::authority::LocalAuthority;
use crate::transport::Address;

/// How connections are served and ended. Defaults: see the constants.
#[derive(Debug, Clone)]
pub(super) struct Limits {
    /// A connection with no call in flight for this long is closed.
    pub idle_timeout: Duration,
    /// An HTTP/2 PING is sent after this long without a frame from the client ...
    pub keepalive_interval: Duration,
    /// ... and the connection closed if the ACK does not come within this.
    pub keepalive_timeout: Duration,
    /// How often the client may send PINGs (grpc-go's enforcement).
    pub keepalive_policy: KeepalivePolicy,
    /// Concurrent streams (calls) per connection.
    pub max_concurrent_streams: u32,
    /// Open connections over all endpoints of the server; beyond it a new
    /// connection is closed at once.
    pub connections: Arc<Semaphore>,
    /// On shutdown, how long in-flight calls may still run.
    pub shutdown_grace: Duration,
    /// Injected latency, for tests of clients: a call to a method of this
    /// name (any group version) waits this long before it is served.
    pub latency: Arc<[(String, Duration)]>,
    /// Injected failures, for tests of clients (see [`Failure`]).
    pub failures: Arc<Vec<Failure>>,
}

/// An injected failure: the next `remaining` calls of the method named
/// `rpc` (any group version) are answered with `code` without reaching
/// the host.
#[derive(Debug)]
pub(super) struct Failure {
    pub rpc: String,
    pub code: tonic::Code,
    pub remaining: AtomicUsize,
}

impl Failure {
    /// Takes one failure for a call of `method`, if one is left.
    fn take(&self, method: &str) -> Option<tonic::Status> {
        (self.rpc == method
            && self
                .remaining
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok())
        .then(|| tonic::Status::new(self.code, format!("injected failure of {method}")))
    }
}

impl Limits {
    /// The injected latency of the call to `path` (`/v1.Disk/PartitionDisk`).
    pub(super) fn latency_of(&self, path: &str) -> Duration {
        let method = path.rsplit('/').next().unwrap_or_default();
        self.latency
            .iter()
            .filter(|(name, _)| name == method)
            .map(|(_, delay)| *delay)
            .sum()
    }

    /// Checks every duration against the range it allows, so that none
    /// reaches a connection's timers zero or overflowing the clock.
    pub(super) fn check(&self) -> Result<(), super::ServerError> {
        use crate::{MAX_DURATION, MIN_PERIOD};
        let latencies = self
            .latency
            .iter()
            .map(|(_, delay)| ("injected latency", *delay, Duration::ZERO));
        let ranged = [
            ("idle timeout", self.idle_timeout, MIN_PERIOD),
            ("keepalive interval", self.keepalive_interval, MIN_PERIOD),
            ("keepalive timeout", self.keepalive_timeout, MIN_PERIOD),
            (
                "keepalive minimum time",
                self.keepalive_policy.min_time,
                Duration::ZERO,
            ),
            ("shutdown grace", self.shutdown_grace, Duration::ZERO),
        ]
        .into_iter()
        .chain(latencies);
        for (setting, value, min) in ranged {
            if !(min..=MAX_DURATION).contains(&value) {
                return Err(super::ServerError::DurationOutOfRange {
                    setting,
                    value,
                    min,
                    max: MAX_DURATION,
                });
            }
        }
        Ok(())
    }

    /// The injected failure of the call to `path`, if one is left.
    pub(super) fn failure_of(&self, path: &str) -> Option<tonic::Status> {
        let method = path.rsplit('/').next().unwrap_or_default();
        self.failures
            .iter()
            .find_map(|failure| failure.take(method))
    }
}

/// Default of [`Limits::idle_timeout`]: 5 minutes.
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default of [`Limits::keepalive_interval`]: 2 hours, grpc-go's server
/// default (`defaultServerKeepaliveTime`, grpc/grpc-go
/// `internal/transport/defaults.go`), which csi-proxy keeps. A server that
/// PINGs sooner hides from its suites how often a client PINGs: the client
/// hears the server's PINGs and has no silence to PING into.
pub(super) const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(2 * 60 * 60);
/// Default of [`Limits::keepalive_timeout`]: 20 s.
pub(super) const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// Default of [`Limits::max_concurrent_streams`]: 256.
pub(super) const MAX_CONCURRENT_STREAMS: u32 = 256;
/// Default connection limit: 512 (below the usual 1024 descriptors).
pub(super) const MAX_CONNECTIONS: usize = 512;
/// Default of [`Limits::shutdown_grace`]: 5 s.
pub(super) const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

impl Default for Limits {
    fn default() -> Self {
        Self {
            idle_timeout: IDLE_TIMEOUT,
            keepalive_interval: KEEPALIVE_INTERVAL,
            keepalive_timeout: KEEPALIVE_TIMEOUT,
            keepalive_policy: KeepalivePolicy::default(),
            max_concurrent_streams: MAX_CONCURRENT_STREAMS,
            connections: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
            shutdown_grace: SHUTDOWN_GRACE,
            latency: Arc::new([]),
            failures: Arc::default(),
        }
    }
}

/// A bound endpoint, not yet serving.
pub(super) struct Listener {
    kind: Kind,
    address: Address,
}

enum Kind {
    #[cfg(unix)]
    Unix(tokio::net::UnixListener),
    #[cfg(windows)]
    Pipe(super::pipe::PipeListener),
}

/// A client connection, whatever the endpoint.
trait Connection: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Connection for T {}

/// What to undo when the server stops: the socket file this server
/// created, identified by device, inode and change time (inode numbers are
/// reused at once), so that a file a later server put at the same path is
/// left alone.
#[derive(Debug)]
pub(super) struct Cleanup {
    #[cfg(unix)]
    socket: Option<(PathBuf, Identity)>,
}

impl Cleanup {
    pub(super) fn run(self) {
        #[cfg(unix)]
        if let Some((path, identity)) = self.socket {
            match std::fs::symlink_metadata(&path) {
                Ok(meta) if identity_of(&meta) == identity => {
                    let _ = std::fs::remove_file(&path);
                }
                Ok(_) => tracing::info!(
                    socket = %path.display(),
                    "socket file replaced by another server; left in place"
                ),
                Err(_) => {}
            }
        }
    }
}

#[cfg(unix)]
type Identity = (u64, u64, i64, i64);

#[cfg(unix)]
fn identity_of(meta: &std::fs::Metadata) -> Identity {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec())
}

impl Listener {
    /// Creates the endpoint `address`: a Unix socket (a stale socket file
    /// is replaced, a live one refused) or a named pipe.
    pub(super) fn bind(address: Address) -> io::Result<(Self, Cleanup)> {
        match &address {
            #[cfg(unix)]
            Address::Unix(path) => {
                remove_stale_socket(path)?;
                let listener = tokio::net::UnixListener::bind(path)?;
                let meta = std::fs::symlink_metadata(path)?;
                let cleanup = Cleanup {
                    socket: Some((path.clone(), identity_of(&meta))),
                };
                let kind = Kind::Unix(listener);
                Ok((Self { kind, address }, cleanup))
            }
            #[cfg(windows)]
            Address::NamedPipe(name) => {
                let kind = Kind::Pipe(super::pipe::PipeListener::bind(name)?);
                Ok((Self { kind, address }, Cleanup {}))
            }
            #[allow(unreachable_patterns)]
            other => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("cannot listen on {other} on this platform"),
            )),
        }
    }

    pub(super) fn address(&self) -> &Address {
        &self.address
    }

    async fn accept(&mut self) -> io::Result<Box<dyn Connection>> {
        match &mut self.kind {
            #[cfg(unix)]
            Kind::Unix(listener) => Ok(Box::new(listener.accept().await?.0)),
            #[cfg(windows)]
            Kind::Pipe(listener) => {
                use tokio_stream::StreamExt;
                match listener.next().await {
                    Some(connection) => Ok(Box::new(connection?)),
                    None => std::future::pending().await,
                }
            }
        }
    }

    /// Serves `routes` until `stop` turns true: then stops accepting, gives
    /// every connection the grace period to finish its calls, and closes
    /// what is left.
    pub(super) async fn serve(
        mut self,
        routes: Routes,
        limits: Limits,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut connections = JoinSet::new();
        let stop_connection = stop.clone();
        loop {
            tokio::select! {
                () = stopped(&mut stop) => break,
                accepted = self.accept() => match accepted {
                    Ok(io) => match limits.connections.clone().try_acquire_owned() {
                        Ok(permit) => {
                            let (routes, limits, stop) = (routes.clone(), limits.clone(), stop_connection.clone());
                            connections.spawn(async move {
                                connection::serve(LocalAuthority::new(io), routes, &limits, stop).await;
                                drop(permit);
                            });
                        }
                        Err(_) => tracing::warn!(
                            endpoint = %self.address,
                            "connection limit reached; connection closed"
                        ),
                    },
                    Err(e) => {
                        // Out of descriptors, for instance: do not spin.
                        tracing::warn!(endpoint = %self.address, error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(self);
        while connections.join_next().await.is_some() {}
    }
}

/// A socket file left by a server that is gone is removed; one that still
/// answers belongs to a live server and makes the bind fail ("in use").
#[cfg(unix)]
fn remove_stale_socket(path: &std::path::Path) -> io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    "address in use: another server is listening on this socket",
                ));
            }
            std::fs::remove_file(path)
        }
        _ => Ok(()),
    }
}
