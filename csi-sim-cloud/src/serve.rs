//! The simulated node's proxy and the cloud's controller, started together
//! over one simulated Windows node ([`start`]): what `csi-sim-cloud serve`
//! runs, and what a plugin that plays the node in its own process (the
//! example plugin's `--simulated-node`, for HostProcess mode over the
//! simulator) starts beside its node layer.

use std::future::Future;
use std::path::{Path, PathBuf};

use csi_proxy_client::host::{Host, HostConfig, NodeSeed, temporary_sandbox};
use csi_proxy_client::server::Server;

use crate::{Cloud, Profile};

/// What [`start`] builds and where it serves.
#[derive(Debug, Clone)]
pub struct Options {
    /// Directory for the proxy's sockets `csi-proxy-<group>-<version>.sock`.
    pub socket_dir: PathBuf,
    /// The controller's socket: `unix:///path/controller.sock` or a path.
    pub endpoint: String,
    /// The node id the controller publishes to.
    pub node_id: String,
    /// The kubelet directory on the simulated node.
    pub kubelet_path: String,
    /// Root of the simulated drives and shares; a temporary directory,
    /// removed when the [`Serving`] is dropped, when `None`.
    pub sandbox: Option<PathBuf>,
    /// The node's disks and volumes (`None`: the default node); the
    /// cloud's layout from [`Options::new`].
    pub seed: Option<NodeSeed>,
    /// The cloud to play.
    pub cloud: Profile,
}

impl Options {
    /// The cloud's node, with its proxy in `socket_dir` and its controller
    /// at `endpoint`, publishing to `node_id`; kubelet at
    /// `C:\var\lib\kubelet`, a temporary sandbox, the node laid out as
    /// the cloud lays it out.
    pub fn new(
        cloud: Profile,
        socket_dir: impl Into<PathBuf>,
        endpoint: impl Into<String>,
        node_id: impl Into<String>,
    ) -> Options {
        Options {
            socket_dir: socket_dir.into(),
            endpoint: endpoint.into(),
            node_id: node_id.into(),
            kubelet_path: r"C:\var\lib\kubelet".into(),
            sandbox: None,
            seed: cloud.layout().seed(),
            cloud,
        }
    }
}

/// The simulated node's proxy and the cloud's controller, serving.
#[derive(Debug)]
pub struct Serving {
    host: Host,
    server: Server,
    controller: tokio::task::JoinHandle<Result<(), String>>,
    endpoint: String,
    /// The node's files when no sandbox was given (removed on drop).
    _sandbox: Option<tempfile::TempDir>,
}

/// Builds the node as `options` say and starts the proxy and the
/// controller.
pub async fn start(options: Options) -> Result<Serving, String> {
    let mut temp_sandbox = None;
    let sandbox = match options.sandbox {
        Some(dir) => dir,
        None => {
            let dir = temporary_sandbox().map_err(|e| e.to_string())?;
            let path = dir.path().to_path_buf();
            temp_sandbox = Some(dir);
            path
        }
    };
    let mut config = HostConfig::new(sandbox);
    config.kubelet_path = options.kubelet_path;
    config.seed = options.seed;
    let host = Host::new(config).map_err(|e| e.to_string())?;

    let server = Server::builder()
        .socket_dir(&options.socket_dir)
        .host(host.clone())
        .start()
        .await
        .map_err(|e| e.to_string())?;
    let cloud = Cloud::with_profile(host.clone(), options.node_id.clone(), options.cloud);
    let controller = serve_controller(cloud, &options.endpoint)?;
    tracing::info!(node_id = options.node_id, endpoint = options.endpoint, cloud = %options.cloud, "controller serving");
    Ok(Serving {
        host,
        server,
        controller,
        endpoint: options.endpoint,
        _sandbox: temp_sandbox,
    })
}

impl Serving {
    /// The simulated node.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// How many proxy endpoints are served.
    pub fn proxy_endpoints(&self) -> usize {
        self.server.addresses().len()
    }

    /// Where the controller serves.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Serves until `stop` completes or a server fails, then shuts down.
    pub async fn run_until(self, stop: impl Future<Output = ()>) -> Result<(), String> {
        let Serving {
            mut server,
            controller,
            endpoint,
            ..
        } = self;
        let failure = tokio::select! {
            () = stop => None,
            result = server.wait_for_failure() => Some(result.map_err(|e| e.to_string())),
            result = controller => Some(result.map_err(|e| e.to_string()).and_then(|r| r)),
        };
        tracing::info!("shutting down");
        let _ = std::fs::remove_file(socket_path(&endpoint));
        let shutdown = server.shutdown().await.map_err(|e| e.to_string());
        match failure {
            Some(Err(e)) => Err(e),
            _ => shutdown,
        }
    }
}

/// The path of a `unix://` endpoint (or of a bare path).
pub fn socket_path(endpoint: &str) -> &Path {
    Path::new(endpoint.strip_prefix("unix://").unwrap_or(endpoint))
}

/// Starts the controller on its Unix socket; the task ends only on failure.
#[cfg(unix)]
fn serve_controller(
    cloud: Cloud,
    endpoint: &str,
) -> Result<tokio::task::JoinHandle<Result<(), String>>, String> {
    let path = socket_path(endpoint);
    let _ = std::fs::remove_file(path);
    let listener = tokio::net::UnixListener::bind(path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
    Ok(tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(cloud.identity_service())
            .add_service(cloud.controller_service())
            .serve_with_incoming(incoming)
            .await
            .map_err(|e| format!("controller: {e}"))
    }))
}

#[cfg(not(unix))]
fn serve_controller(
    _: Cloud,
    _: &str,
) -> Result<tokio::task::JoinHandle<Result<(), String>>, String> {
    Err("the controller serves on Unix sockets only; run csi-sim-cloud on Linux or macOS".into())
}
