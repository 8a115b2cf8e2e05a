//! Running the services: one endpoint per group version, graceful shutdown.

#[cfg(unix)]
use std::path::Path;
use std::path::PathBuf;

use tokio::sync::watch;
use tokio::task::JoinSet;

use super::ProxyService;
use crate::host::{Host, HostConfig, temporary_sandbox};
use crate::transport::Address;

/// Re-exported from the crate root, where it now lives beside `ApiVersion`.
pub use crate::GroupVersion;

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The simulated host could not be built (sandbox, seed).
    #[error("cannot build the simulated host: {0}")]
    Host(#[source] crate::host::HostError),
    /// An endpoint could not be created: in use, no permission, missing directory.
    #[error("cannot listen on {address}")]
    Listen {
        /// The socket or pipe.
        address: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// An endpoint's server failed while serving.
    #[error("serving {endpoint} failed")]
    Serve {
        /// The group version.
        endpoint: GroupVersion,
        /// The transport's error.
        #[source]
        source: tonic::transport::Error,
    },
    /// No socket directory was given (required off Windows).
    #[error("no socket directory given: the server needs one to create its Unix sockets")]
    NoSocketDir,
}

/// Builds a [`Server`]: what to serve, where, over which host.
#[derive(Debug, Default)]
pub struct ServerBuilder {
    socket_dir: Option<PathBuf>,
    serve: Option<Vec<GroupVersion>>,
    host: Option<Host>,
    host_config: Option<HostConfig>,
}

impl ServerBuilder {
    /// The directory for the Unix sockets, `csi-proxy-<group>-<version>.sock`
    /// (required on Unix; on Windows the server listens on named pipes).
    pub fn socket_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.socket_dir = Some(dir.into());
        self
    }

    /// Serves only these group versions (all by default).
    pub fn serve(mut self, endpoints: impl IntoIterator<Item = GroupVersion>) -> Self {
        self.serve = Some(endpoints.into_iter().collect());
        self
    }

    /// Serves an existing host (shared with the caller, e.g. for assertions).
    pub fn host(mut self, host: Host) -> Self {
        self.host = Some(host);
        self
    }

    /// Builds the host from this configuration (ignored when [`ServerBuilder::host`] is set).
    pub fn host_config(mut self, config: HostConfig) -> Self {
        self.host_config = Some(config);
        self
    }

    /// Creates every endpoint, then starts serving. If any endpoint cannot
    /// be created, the ones already created are closed and removed.
    pub async fn start(self) -> Result<Server, ServerError> {
        let mut sandbox = None;
        let host = match (self.host, self.host_config) {
            (Some(host), _) => host,
            (None, Some(config)) => Host::new(config).map_err(ServerError::Host)?,
            (None, None) => {
                // A sandbox of this server's own, removed with it: a fixed
                // per-process path would be shared (and wiped) by a second
                // server in the same process.
                let dir = temporary_sandbox().map_err(ServerError::Host)?;
                let host = Host::new(HostConfig::new(dir.path())).map_err(ServerError::Host)?;
                sandbox = Some(dir);
                host
            }
        };
        let endpoints = self.serve.unwrap_or_else(GroupVersion::all);
        let mut listeners = Vec::new();
        for endpoint in &endpoints {
            match super::listen::Listener::bind(self.socket_dir.as_deref(), *endpoint) {
                Ok(listener) => listeners.push((*endpoint, listener)),
                Err(e) => {
                    for (_, listener) in listeners {
                        listener.remove();
                    }
                    return Err(e);
                }
            }
        }

        let service = ProxyService::new(host.clone());
        let (stop, stopped) = watch::channel(false);
        let mut tasks = JoinSet::new();
        let mut addresses = Vec::new();
        let mut cleanup = Vec::new();
        for (endpoint, listener) in listeners {
            addresses.push((endpoint, listener.address()));
            cleanup.push(listener.cleanup());
            let routes = endpoint.routes(&service);
            let mut stopped = stopped.clone();
            let signal = async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            };
            let server = tonic::transport::Server::builder().add_routes(routes);
            tasks.spawn(async move {
                let result = listener.serve(server, signal).await;
                result.map_err(|source| ServerError::Serve { endpoint, source })
            });
        }
        tracing::info!(endpoints = addresses.len(), "csi-proxy-server ready");
        Ok(Server {
            host,
            addresses,
            stop,
            tasks,
            cleanup,
            _sandbox: sandbox,
        })
    }
}

/// A running reference server.
///
/// Clients built on gRPC core (Python's grpcio, grpc-go's `unix:` target
/// in some versions) send the socket path as the HTTP/2 `:authority`, which
/// the server's HTTP/2 layer rejects as malformed; give such a client a
/// plain authority (`grpc.default_authority=localhost` in grpcio). The
/// crate's own `Client` sends `csi-proxy`.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use csi_proxy_client::disk::v1::{self as disk, DiskApi};
/// use csi_proxy_client::server::Server;
///
/// let dir = tempfile::tempdir()?;
/// let server = Server::builder().socket_dir(dir.path()).start().await?;
/// let address = server.address("disk", "v1").unwrap().to_string();
/// let client = disk::Client::connect(&address).await?;
/// let disks = client.list_disk_locations(disk::ListDiskLocationsRequest {}).await?;
/// assert!(disks.disk_locations.len() >= 3);
/// server.shutdown().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Server {
    host: Host,
    addresses: Vec<(GroupVersion, Address)>,
    stop: watch::Sender<bool>,
    tasks: JoinSet<Result<(), ServerError>>,
    cleanup: Vec<super::listen::Cleanup>,
    /// The temporary sandbox of a server built without a host, removed on drop.
    _sandbox: Option<tempfile::TempDir>,
}

impl Server {
    /// A builder with defaults: every group version, the default node in a
    /// temporary sandbox.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// The endpoints served, in creation order.
    pub fn addresses(&self) -> &[(GroupVersion, Address)] {
        &self.addresses
    }

    /// The address of one group version, if served.
    pub fn address(&self, group: &str, version: &str) -> Option<&Address> {
        self.addresses
            .iter()
            .find(|(gv, _)| gv.group == group && gv.version == version)
            .map(|(_, a)| a)
    }

    /// The simulated host, for seeding and assertions.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Waits until any endpoint's server stops on its own (an error), or
    /// returns at once if none is running.
    pub async fn wait_for_failure(&mut self) -> Result<(), ServerError> {
        match self.tasks.join_next().await {
            Some(Ok(result)) => result,
            Some(Err(e)) => std::panic::resume_unwind(e.into_panic()),
            None => Ok(()),
        }
    }

    /// Stops accepting connections, lets in-flight calls finish, and removes
    /// the sockets. Returns the first error any endpoint met.
    pub async fn shutdown(mut self) -> Result<(), ServerError> {
        let _ = self.stop.send(true);
        let mut first_error = Ok(());
        while let Some(joined) = self.tasks.join_next().await {
            let result = joined.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            if first_error.is_ok() {
                first_error = result;
            }
        }
        for cleanup in self.cleanup.drain(..) {
            cleanup.run();
        }
        first_error
    }
}

impl Drop for Server {
    /// A server dropped without [`Server::shutdown`] stops its endpoints
    /// and removes its sockets at once.
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.tasks.abort_all();
        for cleanup in self.cleanup.drain(..) {
            cleanup.run();
        }
    }
}

/// The socket path of `endpoint` in `dir`.
#[cfg(unix)]
pub(super) fn socket_path(dir: &Path, endpoint: GroupVersion) -> PathBuf {
    match Address::socket_in(dir, endpoint.group, endpoint.version) {
        Address::Unix(path) => path,
        other => unreachable!("socket_in gave {other:?}"),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn servers_without_a_host_get_sandboxes_of_their_own_removed_with_them() {
        let sockets = tempfile::tempdir().unwrap();
        let disk_v1 = GroupVersion::parse("disk/v1").unwrap();
        let start = |dir: &str| {
            let dir = sockets.path().join(dir);
            std::fs::create_dir(&dir).unwrap();
            Server::builder().socket_dir(dir).serve([disk_v1]).start()
        };
        let (a, b) = (start("a").await.unwrap(), start("b").await.unwrap());
        let path = r"C:\var\lib\kubelet\only-in-a";
        a.host().create_dir(path).unwrap();
        assert!(a.host().exists(path));
        assert!(!b.host().exists(path), "the two servers share a sandbox");

        let sandbox_of_a = a.host().host_path(path).unwrap();
        assert!(sandbox_of_a.exists());
        a.shutdown().await.unwrap();
        assert!(
            !sandbox_of_a.exists(),
            "{} outlived its server",
            sandbox_of_a.display()
        );
        assert!(b.host().exists(r"C:\var\lib\kubelet"));
        b.shutdown().await.unwrap();
    }
}
