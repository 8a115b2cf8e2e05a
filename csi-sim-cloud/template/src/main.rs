//! `csi-node-plugin`: a Windows CSI node plugin for disks (by LUN) and SMB
//! shares, on the `csi-node-server` library. It serves the CSI Identity and
//! Node services on `--endpoint unix://PATH`, doing the host work through the
//! CSI Proxy, or with `--host-process` on the Windows host itself (a
//! HostProcess container: WMI and Win32, no proxy). With `--driver
//! azuredisk|gcp-pd|aws-ebs|vsphere|smb|azurefile` it plays that upstream driver's
//! node side ([`drivers`]).

mod drivers;
#[cfg(feature = "simulated-node")]
mod simulated;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use csi_node_server::csi::v1::node_service_capability::rpc;
use csi_node_server::csi::v1::volume_capability::access_mode::Mode;
use csi_node_server::metrics::serve_metrics;
use csi_node_server::{
    Driver, LockScope, Plugin, VolumeRequest, VolumeSource, host_name, serve, socket_path,
    stop_signal,
};
use csi_proxy_client::node::{Node, NodeOptions, NodeRecords, SmbStore};
use drivers::Flavor;
use tonic::Status;

/// The driver name the plugin registers with, unless told otherwise.
const DEFAULT_DRIVER_NAME: &str = "windows.csi-node-plugin.example";

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
    /// The upstream driver whose node side the plugin plays: example (a
    /// disk by publish_context lun, a share by volume_context source),
    /// azuredisk, gcp-pd, aws-ebs, vsphere, smb or azurefile.
    #[arg(long, value_name = "NAME", default_value = "example")]
    driver: Flavor,
    /// The driver name the plugin registers under (default: the --driver's
    /// upstream name).
    #[arg(long)]
    driver_name: Option<String>,
    /// Keep SMB share references and the node's records in DIR, so that a
    /// restarted plugin knows which shares its staged volumes use and
    /// unmaps each with its last volume, never formats a volume twice, and
    /// checks each staging path's disk (default: `state` beside the endpoint's socket, which lies in
    /// the plugin's directory on the host). DIR must outlive the container.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Serve Prometheus metrics over HTTP at ADDRESS (for example
    /// 0.0.0.0:9808), path /metrics.
    #[arg(long, value_name = "ADDRESS")]
    metrics_address: Option<SocketAddr>,
    /// How many volumes NodeGetInfo says the node takes (0: no limit).
    #[arg(long, default_value_t = 0)]
    max_volumes_per_node: i64,
    /// A topology segment NodeGetInfo reports, KEY=VALUE (repeatable).
    #[arg(long = "topology", value_name = "KEY=VALUE", value_parser = segment)]
    topology: Vec<(String, String)>,
    /// Report CONTROLLER_SERVICE in GetPluginCapabilities: the driver has a
    /// controller (a cloud's, such as csi-sim-cloud's), which csi-sanity
    /// then uses to create and publish the volumes it tests.
    #[arg(long)]
    controller_service: bool,
    /// Do the host work in this process, on the Windows host itself (WMI and
    /// Win32), as a HostProcess container does: no CSI Proxy, no pipes.
    /// Windows only.
    #[arg(long, conflicts_with = "csi_proxy_socket_dir")]
    host_process: bool,
    /// Read volume stats under DIR, which holds what the node's C:\ holds
    /// (the simulated node's C: volume directory, when the plugin runs
    /// against csi-sim-cloud on Linux). Not needed on Windows, where the
    /// plugin reads the node's paths as they are.
    #[arg(long, value_name = "DIR")]
    local_root: Option<PathBuf>,
    /// Development only (the `simulated-node` feature): play the simulated
    /// Windows node and the cloud of csi-sim-cloud's profile CLOUD in this
    /// process, the host work done in HostProcess mode over the simulator;
    /// the node's proxy is served in --simulated-proxy-dir (for a test's
    /// path commands) and the cloud's controller at
    /// --simulated-controller. csi-sanity's way to HostProcess mode
    /// (`csi-sim-cloud sanity --node-in-plugin`).
    #[cfg(feature = "simulated-node")]
    #[arg(long, value_name = "CLOUD", conflicts_with_all = ["host_process", "csi_proxy_socket_dir", "local_root"],
          requires_all = ["simulated_proxy_dir", "simulated_controller"])]
    simulated_node: Option<csi_sim_cloud::Profile>,
    /// Where the simulated node serves its proxy's sockets.
    #[cfg(feature = "simulated-node")]
    #[arg(long, value_name = "DIR", requires = "simulated_node")]
    simulated_proxy_dir: Option<PathBuf>,
    /// Where the simulated cloud serves its controller: unix://PATH.
    #[cfg(feature = "simulated-node")]
    #[arg(long, value_name = "ENDPOINT", requires = "simulated_node")]
    simulated_controller: Option<String>,
}

fn segment(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

/// The example's driver: names volumes and sets policies as its
/// [`Flavor`] says.
struct Example {
    flavor: Flavor,
    name: String,
    node_id: String,
    max_volumes: i64,
    topology: HashMap<String, String>,
    controller_service: bool,
}

#[csi_node_server::async_trait]
impl Driver for Example {
    fn name(&self) -> &str {
        &self.name
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn node_id(&self) -> &str {
        &self.node_id
    }

    fn topology(&self) -> HashMap<String, String> {
        self.topology.clone()
    }

    fn max_volumes_per_node(&self) -> i64 {
        self.max_volumes
    }

    fn controller_service(&self) -> bool {
        self.controller_service
    }

    async fn volume(&self, r: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
        self.flavor
            .resolve(r.volume_id, r.volume_context, r.publish_context, r.secrets)
    }

    fn fs_type(&self, volume: &VolumeSource, fs_type: &str) -> Result<(), Status> {
        self.flavor.fs_type(volume, fs_type)
    }

    fn mount_flags(&self, _: &VolumeSource, flags: &[String]) -> Result<(), Status> {
        self.flavor.mount_flags(flags)
    }

    fn access_mode(&self, volume: &VolumeSource, mode: Mode) -> Result<(), Status> {
        self.flavor.access_mode(volume, mode)
    }

    fn node_capabilities(&self) -> Vec<rpc::Type> {
        self.flavor.node_capabilities()
    }

    fn grow_after_stage(&self) -> bool {
        self.flavor.grow_after_stage()
    }

    fn offline_at_unstage(&self) -> bool {
        self.flavor.offline_at_unstage()
    }

    fn lock_scope(&self) -> LockScope {
        self.flavor.lock_scope()
    }
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

/// The node layer the plugin works through: the Windows host itself with
/// `--host-process`, otherwise the CSI Proxy, on its named pipes or on the
/// sockets of `--csi-proxy-socket-dir`.
async fn connect_node(args: &Args) -> Result<Node, Box<dyn std::error::Error>> {
    // The SMB references and the node's records (a format under way, the
    // partitions this node made, the disk staged at each path) outlive a
    // restart of the plugin, as the data-safety rules need (docs/safety.md).
    let state = state_dir(args)?;
    let mut options = NodeOptions::default()
        .smb_store(SmbStore::directory(&state))
        .records(NodeRecords::directory(state.join("records")));
    if let Some(root) = &args.local_root {
        options = options.local_root(root);
    }
    if args.host_process {
        return host_process(options);
    }
    #[cfg(feature = "simulated-node")]
    if let Some(cloud) = args.simulated_node {
        return simulated::node(args, cloud, options).await;
    }
    if let Some(dir) = &args.csi_proxy_socket_dir {
        options = options.socket_dir(dir);
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
    Ok(node)
}

/// Where the SMB references and the node's records are kept:
/// `--state-dir`, else where csi-node-server keeps a plugin's state by
/// default (`state` beside the endpoint's socket). Named in the node's
/// options, in both modes, so that the files stay where every earlier
/// version of this plugin put them (in HostProcess mode too, whose
/// default records are elsewhere on the host): an upgrade then knows
/// what the plugin before it did.
fn state_dir(args: &Args) -> Result<PathBuf, String> {
    match &args.state_dir {
        Some(dir) => Ok(dir.clone()),
        None => Ok(csi_node_server::state_dir(&socket_path(&args.endpoint)?)),
    }
}

#[cfg(all(windows, feature = "host-process"))]
fn host_process(options: NodeOptions) -> Result<Node, Box<dyn std::error::Error>> {
    Ok(Node::host_process(options)?)
}

#[cfg(not(all(windows, feature = "host-process")))]
fn host_process(_: NodeOptions) -> Result<Node, Box<dyn std::error::Error>> {
    Err(
        "--host-process works only on Windows, in a build with the host-process feature: \
         it does the host work itself, through WMI and Win32"
            .into(),
    )
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let socket = socket_path(&args.endpoint)?;
    let node = connect_node(&args).await?;
    let driver = Example {
        flavor: args.driver,
        name: args
            .driver_name
            .unwrap_or_else(|| args.driver.driver_name().to_string()),
        node_id: args.node_id.unwrap_or_else(host_name),
        max_volumes: args.max_volumes_per_node,
        topology: args.topology.into_iter().collect(),
        controller_service: args.controller_service,
    };
    #[cfg(feature = "simulated-node")]
    let simulated = args.simulated_node.is_some();
    #[cfg(not(feature = "simulated-node"))]
    let simulated = false;
    let mode = match (args.host_process, simulated) {
        (true, _) => "HostProcess mode: the Windows host itself",
        (_, true) => "HostProcess mode over the simulated node",
        _ => "the CSI Proxy",
    };
    tracing::info!(node_id = driver.node_id, driver = %driver.flavor, versions = %node.versions(), "working through {mode}");
    let plugin = Plugin::new(node, driver);
    if let Some(address) = args.metrics_address {
        let metrics = plugin.metrics().clone();
        let listener = tokio::net::TcpListener::bind(address).await?;
        tokio::spawn(async move {
            if let Err(e) = serve_metrics(listener, metrics, std::future::pending()).await {
                tracing::error!(error = %e, "metrics server stopped");
            }
        });
    }
    // The SMB mappings no staged volume uses (a crash between a link's
    // removal and its mapping's): removed before serving; a failure is
    // logged and the next start tries again.
    match plugin.reconcile().await {
        Ok(removed) if removed.is_empty() => {}
        Ok(removed) => {
            tracing::info!(shares = ?removed, "SMB mappings no staged volume uses removed")
        }
        Err(e) => {
            tracing::warn!(error = %e, "SMB mappings no staged volume uses could not be reconciled; the next start tries again")
        }
    }
    serve(plugin, &socket, stop_signal()).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_kept_on_disk_by_default() {
        let args = Args::parse_from(["csi-node-plugin", "--endpoint", "unix:///csi/csi.sock"]);
        assert_eq!(state_dir(&args).unwrap(), PathBuf::from("/csi/state"));
        let args = Args::parse_from(["csi-node-plugin", "--state-dir", "/var/x"]);
        assert_eq!(state_dir(&args).unwrap(), PathBuf::from("/var/x"));
    }
}
