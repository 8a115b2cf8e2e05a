//! `csi-sim-cloud`: the reference CSI Proxy server and a simulated cloud's
//! CSI controller over one simulated Windows node, in one process.
//!
//! `csi-sim-cloud serve --socket-dir DIR --endpoint unix:///PATH [--cloud
//! azure|gcp|aws|vsphere|smb]` serves the proxy's sockets in DIR (as
//! `csi-proxy-server` does) and the CSI Identity and Controller services of
//! that cloud on PATH, over a node laid out as the cloud lays it out; a disk
//! the controller attaches shows on the proxy's disk API after a rescan. `csi-sim-cloud path
//! create|remove|check PATH` works on the simulated node's files through the
//! proxy, for csi-sanity's `--csi.createmountpathcmd` and friends.
//! `csi-sim-cloud sanity --cloud NAME -- PLUGIN ARGS...` does all of it at
//! once: the node and the cloud, the plugin, csi-sanity ([`sanity`]).

mod sanity;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use csi_node_server::host_name;
use csi_proxy_client::host::{Host, HostConfig, NodeSeed, temporary_sandbox};
use csi_proxy_client::node::{Node, NodeOptions};
use csi_proxy_client::server::Server;
use csi_sim_cloud::{Cloud, Profile};

/// A simulated cloud for Windows CSI plugins.
#[derive(Debug, Parser)]
#[command(name = "csi-sim-cloud", version)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the CSI Proxy and the CSI controller over one simulated node.
    Serve(Serve),
    /// Run csi-sanity against a node plugin: start the simulated node and
    /// cloud, start the plugin, run csi-sanity, stop everything; the exit
    /// status is csi-sanity's.
    Sanity(sanity::Sanity),
    /// Create, remove or check a path on the simulated node (for csi-sanity).
    Path {
        /// What to do: `create` prints the path made, `check` prints
        /// `not_found` or `other` (the proxy cannot tell files from
        /// directories).
        action: PathAction,
        /// A kubelet-style path (`/var/lib/kubelet/...` or `C:\var\lib\kubelet\...`).
        path: String,
        /// The proxy's socket directory (default `$CSI_PROXY_SOCKET_DIR`).
        #[arg(long, value_name = "DIR")]
        socket_dir: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum PathAction {
    Create,
    Remove,
    Check,
}

#[derive(Debug, clap::Args)]
struct Serve {
    /// Directory for the proxy's sockets `csi-proxy-<group>-<version>.sock`.
    #[arg(long, value_name = "DIR")]
    socket_dir: PathBuf,

    /// The controller's socket: `unix:///path/controller.sock` or a path.
    #[arg(long, value_name = "ENDPOINT")]
    endpoint: String,

    /// The node's id, as the node plugin's NodeGetInfo reports it (default:
    /// the host name, the plugin's default too).
    #[arg(long, value_name = "ID")]
    node_id: Option<String>,

    /// The kubelet directory on the simulated node.
    #[arg(long, value_name = "PATH", default_value = r"C:\var\lib\kubelet")]
    kubelet_path: String,

    /// Root of the simulated drives and shares (a temporary directory,
    /// removed on exit, by default).
    #[arg(long, value_name = "DIR")]
    sandbox: Option<PathBuf>,

    /// A TOML file describing the node; the default node without it.
    #[arg(long, value_name = "FILE")]
    seed: Option<PathBuf>,

    /// Lay the node out as a cloud does: default, azure, azure-nvme, gce,
    /// aws or vsphere (not together with --seed; default: the --cloud's).
    #[arg(long, value_name = "NAME", conflicts_with = "seed")]
    layout: Option<csi_proxy_client::host::Layout>,

    /// The cloud to play: generic, azure, azure-nvme, gcp, gcp-nvme, aws,
    /// vsphere, smb or azurefile (its node layout, volume ids, where and how
    /// a disk attaches, what ControllerPublishVolume returns).
    #[arg(long, value_name = "NAME", default_value = "generic")]
    cloud: Profile,

    /// Log filter: error, warn, info, debug, trace, or a tracing directive.
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    log_level: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("csi-sim-cloud: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match args.command {
        Command::Serve(serve) => runtime.block_on(run(serve)),
        Command::Sanity(args) => {
            return match runtime.block_on(sanity::run(args)) {
                Ok(code) => ExitCode::from(code),
                Err(message) => {
                    eprintln!("csi-sim-cloud sanity: {message}");
                    ExitCode::from(sanity::SETUP_FAILURE)
                }
            };
        }
        Command::Path {
            action,
            path,
            socket_dir,
        } => runtime.block_on(path_command(action, &path, socket_dir)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("csi-sim-cloud: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn path_command(
    action: PathAction,
    path: &str,
    socket_dir: Option<PathBuf>,
) -> Result<(), String> {
    let mut options = NodeOptions::default();
    if let Some(dir) = socket_dir {
        options = options.socket_dir(dir);
    }
    let node = Node::connect(options).await.map_err(|e| e.to_string())?;
    match action {
        PathAction::Create => {
            node.ensure_dir(path).await.map_err(|e| e.to_string())?;
            println!("{path}");
        }
        PathAction::Remove => node.remove(path).await.map_err(|e| e.to_string())?,
        PathAction::Check => {
            let exists = node.exists(path).await.map_err(|e| e.to_string())?;
            println!("{}", if exists { "other" } else { "not_found" });
        }
    }
    Ok(())
}

async fn run(args: Serve) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(&args.log_level)
        .map_err(|e| format!("invalid --log-level {:?}: {e}", args.log_level))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let running = start(args).await?;
    println!(
        "ready: {} proxy endpoints, controller at {}",
        running.server.addresses().len(),
        running.endpoint
    );
    running.run_until(shutdown_signal()).await
}

/// The simulated node's proxy and the cloud's controller, serving.
struct Running {
    server: Server,
    controller: tokio::task::JoinHandle<Result<(), String>>,
    endpoint: String,
    /// The node's files when no `--sandbox` was given (removed on drop).
    _sandbox: Option<tempfile::TempDir>,
}

impl Running {
    /// Serves until `stop` completes or a server fails, then shuts down.
    async fn run_until(self, stop: impl std::future::Future<Output = ()>) -> Result<(), String> {
        let Running {
            mut server,
            controller,
            endpoint,
            _sandbox,
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

/// Builds the node as `args` say and starts the proxy and the controller.
async fn start(args: Serve) -> Result<Running, String> {
    let seed = match &args.seed {
        Some(path) => Some(
            NodeSeed::from_file(path).map_err(|e| format!("seed file {}: {e}", path.display()))?,
        ),
        None => args.layout.unwrap_or(args.cloud.layout()).seed(),
    };
    let mut temp_sandbox = None;
    let sandbox = match args.sandbox {
        Some(dir) => dir,
        None => {
            let dir = temporary_sandbox().map_err(|e| e.to_string())?;
            let path = dir.path().to_path_buf();
            temp_sandbox = Some(dir);
            path
        }
    };
    let mut config = HostConfig::new(sandbox);
    config.kubelet_path = args.kubelet_path;
    config.seed = seed;
    let host = Host::new(config).map_err(|e| e.to_string())?;

    let server = Server::builder()
        .socket_dir(&args.socket_dir)
        .host(host.clone())
        .start()
        .await
        .map_err(|e| e.to_string())?;
    let node_id = args.node_id.unwrap_or_else(host_name);
    let cloud = Cloud::with_profile(host, node_id.clone(), args.cloud);
    let controller = serve_controller(cloud, &args.endpoint)?;
    tracing::info!(node_id, endpoint = args.endpoint, cloud = %args.cloud, "controller serving");
    Ok(Running {
        server,
        controller,
        endpoint: args.endpoint,
        _sandbox: temp_sandbox,
    })
}

fn socket_path(endpoint: &str) -> PathBuf {
    PathBuf::from(endpoint.strip_prefix("unix://").unwrap_or(endpoint))
}

/// Starts the controller on its Unix socket; the task ends only on failure.
#[cfg(unix)]
fn serve_controller(
    cloud: Cloud,
    endpoint: &str,
) -> Result<tokio::task::JoinHandle<Result<(), String>>, String> {
    let path = socket_path(endpoint);
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path)
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

/// Registers the handlers now and returns a future that completes on
/// Ctrl-C, or on Unix also on SIGTERM. (Elsewhere nothing registers
/// early, hence clippy's wish for an `async fn` there.)
#[cfg_attr(not(unix), allow(clippy::manual_async_fn))]
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    async move {
        #[cfg(unix)]
        if let Ok(mut term) = term {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}
