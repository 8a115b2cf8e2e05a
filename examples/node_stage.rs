//! A block volume's life on a Windows node, as a CSI node plugin drives it
//! with the node layer: one call per CSI node RPC.
//!
//! ```text
//! cargo run -p csi-proxy-examples --bin node_stage                       # embedded reference server
//! cargo run -p csi-proxy-examples --bin node_stage -- --socket-dir DIR   # a running csi-proxy-server
//! CSI_PROXY_SOCKET_DIR=DIR cargo run -p csi-proxy-examples --bin node_stage
//! ```
//!
//! Without a socket directory it starts the reference server with its
//! default node on a temporary directory. On Windows, `--proxy` talks to the
//! real CSI Proxy's default pipes instead: careful, it partitions and formats
//! the disk on the LUN given with `--lun` (default 1).

mod common;

use std::process::ExitCode;

use common::{Args, Proxy, Result};
use csi_proxy_client::node::{DiskSelector, Node};

/// Paths as kubelet hands them to the plugin.
const STAGING: &str =
    r"\var\lib\kubelet\plugins\kubernetes.io\csi\disk.csi.example.com\pv-demo\globalmount";
const TARGET: &str = r"\var\lib\kubelet\pods\3f1c\volumes\kubernetes.io~csi\pv-demo\mount";

async fn walk(node: &Node, lun: u32, proxy: &Proxy) -> Result<()> {
    println!("NodeStageVolume");
    let disk = node.find_disk(DiskSelector::Lun(lun)).await?;
    let volume = node.stage_disk(&disk, STAGING).await?;
    println!("  disk {} (LUN {lun}) -> volume {volume}", disk.number);
    let again = node.stage_disk(&disk, STAGING).await?;
    println!(
        "  staged again (idempotent): same volume: {}",
        again == volume
    );

    println!("NodePublishVolume");
    node.ensure_dir(TARGET).await?; // kubelet pre-creates the target
    node.publish(STAGING, TARGET).await?;
    println!("  {TARGET} -> {:?}", node.mount_state(TARGET).await?);

    println!("NodeGetVolumeStats");
    let usage = node.usage(TARGET).await?;
    println!("  {} of {} bytes used", usage.used_bytes, usage.total_bytes);

    println!("NodeExpandVolume");
    if let Some(host) = proxy.host() {
        host.grow_disk(disk.number, 64 << 30)?;
        println!("  (the cloud disk grew to 64 GiB)");
    }
    println!("  size now {} bytes", node.expand(STAGING).await?);

    println!("NodeUnpublishVolume, NodeUnstageVolume");
    node.unpublish(TARGET).await?;
    node.unstage(STAGING).await?;
    node.unstage(STAGING).await?; // idempotent
    println!("  staging path left: {}", node.exists(STAGING).await?);
    println!("done: volume {volume} staged, published, expanded and cleaned up");
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    common::main("node_stage", &["lun"], async |args: Args| {
        let lun = args.get("lun").unwrap_or("1").parse()?;
        let proxy = Proxy::from_args(&args).await?;
        let node = Node::connect(proxy.node_options()).await?;
        println!("versions: {}", node.versions());
        let result = walk(&node, lun, &proxy).await;
        drop(node);
        proxy.stop().await?;
        result
    })
    .await
}
