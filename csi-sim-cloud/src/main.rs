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
//! `csi-sim-cloud new DIR --name DRIVER` writes the example node plugin out
//! as a new driver's crate ([`csi_sim_cloud::template`]).

mod sanity;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use csi_node_server::host_name;
use csi_proxy_client::host::NodeSeed;
use csi_proxy_client::node::{Node, NodeOptions};
use csi_sim_cloud::{Profile, serve};

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
    /// Write a new driver's crate into DIR, started from csi-proxy-client's
    /// example node plugin: its flags, its Driver, its manifests and image,
    /// its tests (`cargo test` in DIR), its csi-sanity commands (its
    /// README). The crate is named after DIR.
    New {
        /// The crate's directory, new or empty.
        dir: PathBuf,
        /// The CSI driver name the plugin registers under, such as
        /// disk.csi.example.com.
        #[arg(long, value_name = "DRIVER")]
        name: String,
    },
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
        Command::New { dir, name } => new_crate(&dir, &name),
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

fn new_crate(dir: &std::path::Path, driver: &str) -> Result<(), String> {
    let crate_name = csi_sim_cloud::template::write(dir, driver)?;
    println!(
        "wrote {crate_name} (driver {driver}) in {dir}; next: cd {dir} && cargo test, then its README's csi-sanity commands",
        dir = dir.display()
    );
    Ok(())
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
    let serving = serve::start(args.options()?).await?;
    println!(
        "ready: {} proxy endpoints, controller at {}",
        serving.proxy_endpoints(),
        serving.endpoint()
    );
    serving.run_until(shutdown_signal()).await
}

impl Serve {
    /// What to start: the seed from `--seed`, else `--layout`'s, else the
    /// cloud's.
    fn options(self) -> Result<serve::Options, String> {
        let mut options = serve::Options::new(
            self.cloud,
            self.socket_dir,
            self.endpoint,
            self.node_id.unwrap_or_else(host_name),
        );
        options.kubelet_path = self.kubelet_path;
        options.sandbox = self.sandbox;
        if let Some(path) = &self.seed {
            let seed = NodeSeed::from_file(path)
                .map_err(|e| format!("seed file {}: {e}", path.display()))?;
            options.seed = Some(seed);
        } else if let Some(layout) = self.layout {
            options.seed = layout.seed();
        }
        Ok(options)
    }
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
