//! `--simulated-node`: the plugin plays csi-sim-cloud's node and cloud in
//! its own process and works in HostProcess mode over the simulator
//! (development only, the `simulated-node` feature).
//!
//! HostProcess mode does the host work in the plugin's process, so the
//! simulated node it works on must live there too; a plugin in another
//! process reaches the simulator only through the proxy, which does not
//! report what HostProcess mode alone reads (an Azure NVMe data disk's
//! namespace). csi-sanity drives it with `csi-sim-cloud sanity
//! --node-in-plugin`.

use std::sync::Arc;

use csi_proxy_client::host_process::FakeWindows;
use csi_proxy_client::node::{Node, NodeOptions};
use csi_sim_cloud::{Profile, serve};

use super::Args;

/// Starts the node and the cloud of `cloud` (proxy and controller where
/// `args` say) and returns the node layer over it, its volume stats read
/// through the simulated `C:` volume's directory as a Windows build reads
/// the node's paths.
pub(super) async fn node(
    args: &Args,
    cloud: Profile,
    options: NodeOptions,
) -> Result<Node, Box<dyn std::error::Error>> {
    let (Some(proxy), Some(controller)) = (&args.simulated_proxy_dir, &args.simulated_controller)
    else {
        return Err(
            "--simulated-node needs --simulated-proxy-dir and --simulated-controller".into(),
        );
    };
    let node_id = args
        .node_id
        .clone()
        .unwrap_or_else(csi_node_server::host_name);
    let serving = serve::start(serve::Options::new(cloud, proxy, controller, node_id)).await?;
    let host = serving.host().clone();
    let root = host.host_path(r"C:\")?;
    tracing::info!(%cloud, proxy = %proxy.display(), controller, "playing the simulated node and cloud in this process");
    tokio::spawn(async move {
        if let Err(e) = serving.run_until(std::future::pending()).await {
            tracing::error!(error = %e, "the simulated node stopped");
        }
    });
    let windows = Arc::new(FakeWindows::new(host));
    Ok(Node::host_process_with(windows, options.local_root(root)))
}
