//! Two SMB volumes on one share, as a CSI SMB node plugin stages them with
//! the node layer: the share's global mapping stays while either volume is
//! staged and goes with the last one.
//!
//! ```text
//! cargo run -p csi-proxy-examples --bin smb_mount                       # embedded reference server
//! cargo run -p csi-proxy-examples --bin smb_mount -- --socket-dir DIR   # a running csi-proxy-server
//! SMB_PASSWORD=... cargo run -p csi-proxy-examples --bin smb_mount -- --proxy --remote '\\server\share' --username 'DOMAIN\user'
//! ```
//!
//! Without `--remote` it uses the default node's share `\\fileserver\share`
//! as `smbuser`. The volumes are the directories `pv-a` and `pv-b` on the
//! share (on the embedded server the example creates them, as a controller
//! would). On Windows, `--proxy` talks to the real CSI Proxy: it creates,
//! then removes, a global mapping of the share and links under
//! `C:\var\lib\kubelet\plugins\`.

mod common;

use std::process::ExitCode;

use common::{Args, Proxy, Result};
use csi_proxy_client::host::smb::{
    DEFAULT_SMB_PASSWORD, DEFAULT_SMB_SERVER, DEFAULT_SMB_SHARE, DEFAULT_SMB_USER,
};
use csi_proxy_client::node::{Node, SmbCredentials};

/// Staging paths as kubelet hands them to the plugin.
const STAGING: [&str; 2] = [
    r"\var\lib\kubelet\plugins\kubernetes.io\csi\smb.csi.example.com\pv-a\globalmount",
    r"\var\lib\kubelet\plugins\kubernetes.io\csi\smb.csi.example.com\pv-b\globalmount",
];

async fn walk(node: &Node, share: &str, credentials: &SmbCredentials, proxy: &Proxy) -> Result<()> {
    let mapped = || {
        proxy.host().map(|host| {
            let root = share.to_lowercase();
            host.lock().smb.mapping(&root).is_some()
        })
    };
    for (staging, pv) in STAGING.iter().zip(["pv-a", "pv-b"]) {
        println!("NodeStageVolume {share}\\{pv}");
        node.smb_stage(&format!(r"{share}\{pv}"), staging, credentials)
            .await?;
        node.smb_stage(&format!(r"{share}\{pv}"), staging, credentials)
            .await?; // idempotent
        println!("  {staging} -> {:?}", node.mount_state(staging).await?);
    }
    for staging in STAGING {
        println!("NodeUnstageVolume {staging}");
        node.unstage(staging).await?;
        match mapped() {
            Some(mapped) => println!("  share still mapped: {mapped}"),
            None => println!("  (mapping state: only the embedded server shows it)"),
        }
    }
    println!("done: two volumes on one share staged and unstaged");
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    common::main("smb_mount", &["remote", "username"], async |args: Args| {
        let share = args
            .get("remote")
            .map(str::to_string)
            .unwrap_or_else(|| format!(r"\\{DEFAULT_SMB_SERVER}\{DEFAULT_SMB_SHARE}"));
        let credentials = match args.get("username") {
            Some(user) => SmbCredentials::new(
                user,
                std::env::var("SMB_PASSWORD").map_err(|_| "set SMB_PASSWORD")?,
            ),
            None => SmbCredentials::new(DEFAULT_SMB_USER, DEFAULT_SMB_PASSWORD),
        };
        let proxy = Proxy::from_args(&args).await?;
        if let Some(host) = proxy.host() {
            let node = host.lock();
            let dir = node
                .smb
                .share_dir(DEFAULT_SMB_SERVER, DEFAULT_SMB_SHARE)
                .ok_or("the default node has no default share")?;
            for pv in ["pv-a", "pv-b"] {
                std::fs::create_dir_all(dir.join(pv))?;
            }
        }
        let node = Node::connect(proxy.node_options()).await?;
        println!("versions: {}", node.versions());
        let result = walk(&node, &share, &credentials, &proxy).await;
        drop(node);
        proxy.stop().await?;
        result
    })
    .await
}
