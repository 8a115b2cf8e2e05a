//! `csi-node-plugin`: serves the CSI Identity and Node services on
//! `--endpoint unix://PATH`, doing the host work through the CSI Proxy.

use std::path::PathBuf;

use clap::Parser;
use csi_node_plugin::plugin::{DEFAULT_DRIVER_NAME, Plugin};
use csi_node_plugin::serve::{serve, socket_path, stop_signal};
use csi_proxy_client::node::{Node, NodeOptions, SmbStore};

/// A Windows CSI node plugin for disks (by LUN) and SMB shares.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Where kubelet reaches the plugin: unix://PATH.
    #[arg(long, default_value = "unix:///csi/csi.sock")]
    endpoint: String,
    /// Reach the proxy on Unix sockets in DIR (a csi-proxy-server while
    /// developing) instead of the default named pipes.
    #[arg(long, value_name = "DIR")]
    csi_proxy_socket_dir: Option<PathBuf>,
    /// The node id NodeGetInfo reports (default: the host name).
    #[arg(long)]
    node_id: Option<String>,
    /// The driver name the plugin registers under.
    #[arg(long, default_value = DEFAULT_DRIVER_NAME)]
    driver_name: String,
    /// Keep SMB share references in DIR, so that a restarted plugin knows
    /// which shares its staged volumes use (default: in memory).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    if let Err(e) = run(Args::parse()).await {
        tracing::error!("{e}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let socket = socket_path(&args.endpoint)?;
    let mut options = NodeOptions::default();
    if let Some(dir) = args.csi_proxy_socket_dir {
        options = options.socket_dir(dir);
    }
    if let Some(dir) = args.state_dir {
        options = options.smb_store(SmbStore::directory(dir));
    }
    let node = Node::connect(options).await?;
    // Every volume needs the filesystem group (paths, links); without it the
    // proxy is missing or unreachable, and kubelet had better see a failed pod.
    if node.versions().filesystem.is_none() {
        return Err(format!(
            "the CSI Proxy's filesystem API is not reachable (found: {})",
            node.versions()
        )
        .into());
    }
    let node_id = args.node_id.unwrap_or_else(host_name);
    tracing::info!(node_id, versions = %node.versions(), "connected to the CSI Proxy");
    let plugin = Plugin::new(node, node_id).with_name(args.driver_name);
    serve(plugin, &socket, stop_signal()).await?;
    Ok(())
}

/// The machine's name: `COMPUTERNAME` on Windows, the kernel's host name
/// elsewhere.
fn host_name() -> String {
    let name = if cfg!(windows) {
        std::env::var("COMPUTERNAME").ok()
    } else {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
    };
    name.map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}
