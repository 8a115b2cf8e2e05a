//! Volume stats the plugin reads itself, at no host call (issue 35, as
//! azuredisk-csi-driver#2287 and aws-ebs-csi-driver's Windows mounter read
//! free space with `GetDiskFreeSpaceEx` on the path): a `Node` given the
//! simulated `C:` volume's directory as its local root
//! (`NodeOptions::local_root`) reads a staged disk's and a staged share's
//! space through the OS (`statvfs` here, `GetDiskFreeSpaceExW` on
//! Windows), following the simulator's links as Windows follows the mount
//! point and the SMB link. The figures are judged against `df`, and the
//! path reached against a file the host wrote on the volume.
#![cfg(all(feature = "mock", unix))]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::node_support::*;
use csi_proxy_client::node::{Node, NodeOptions, VolumeUsage};

/// A second node over the fixture's backend reading the node's `C:`
/// through the sandbox, and that root.
async fn local_node(f: &Fixture) -> (Node, PathBuf) {
    let root = f.host.host_path(r"C:\").expect("the C: volume's directory");
    let node = f
        .another_node_with(NodeOptions::default().local_root(&root))
        .await;
    (node, root)
}

/// `path` under `root` as `local_root` maps it.
fn mapped(root: &Path, path: &str) -> PathBuf {
    path.trim_start_matches(['c', 'C'])
        .trim_start_matches(':')
        .split(['\\', '/'])
        .filter(|c| !c.is_empty())
        .fold(root.to_path_buf(), |p, c| p.join(c.to_lowercase()))
}

/// `df`'s total and available bytes of the file system holding `path`.
fn df(path: &Path) -> (u64, u64) {
    let out = Command::new("df")
        .args(["-B1", "--output=size,avail"])
        .arg(path)
        .output()
        .expect("df runs");
    assert!(out.status.success(), "df {}: {out:?}", path.display());
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().nth(1).expect("df's figures");
    let mut figures = line.split_whitespace().map(|n| n.parse::<u64>().unwrap());
    (figures.next().unwrap(), figures.next().unwrap())
}

fn assert_df(usage: &VolumeUsage, path: &Path) {
    let (total, _) = df(path);
    assert_eq!(usage.total_bytes, total, "total of {}", path.display());
    assert!(usage.available_bytes <= usage.total_bytes - usage.used_bytes);
}

/// A staged disk: its usage comes from the path the plugin sees (the file
/// the host wrote on the volume is there), and no host call is made.
/// Before, `usage` asked the proxy (2 calls) whatever the options.
async fn a_staged_disk_is_read_locally(f: &Fixture) {
    f.node.stage_disk(2u32, STAGING).await.unwrap();
    f.host
        .write_file(&format!(r"{STAGING_C}\written-by-the-host"), b"pod data")
        .unwrap();
    let (node, root) = local_node(f).await;
    let local = mapped(&root, STAGING_C);
    assert_eq!(
        std::fs::read(local.join("written-by-the-host")).unwrap(),
        b"pod data",
        "the local path reaches the staged volume"
    );
    let mock = f.mock.as_ref().unwrap();
    let before = mock.calls().len();
    let usage = node.usage(STAGING).await.unwrap();
    assert_eq!(mock.calls().len(), before, "{:?}", &mock.calls()[before..]);
    assert_df(&usage, &local);
}

/// A staged share: the share's space, read through the link, no host call
/// and no reason given for missing figures. Before, a Unix build had none.
async fn a_staged_share_is_read_locally(f: &Fixture) {
    f.node
        .smb_stage(SHARE_DIR, SMB_STAGING, &smb_user())
        .await
        .unwrap();
    let (node, root) = local_node(f).await;
    let mock = f.mock.as_ref().unwrap();
    let before = mock.calls().len();
    let stats = node.smb_share_stats(SMB_STAGING).await.unwrap();
    assert_eq!(mock.calls().len(), before, "{:?}", &mock.calls()[before..]);
    assert_eq!(stats.unread, None);
    let share_dir = f
        .host
        .lock()
        .smb
        .share_dir("fileserver", "share")
        .unwrap()
        .join("pv3");
    assert_df(stats.usage.as_ref().unwrap(), &share_dir);
    let _ = root;
}

/// Where the local read cannot be made (a missing path), the proxy is
/// asked and its answer returned, as without a root.
async fn a_path_not_read_locally_goes_to_the_proxy(f: &Fixture) {
    let (node, _) = local_node(f).await;
    let mock = f.mock.as_ref().unwrap();
    let err = node.usage(STAGING).await.unwrap_err();
    let plain = f.node.usage(STAGING).await.unwrap_err();
    assert_eq!(err.kind(), plain.kind(), "{err} / {plain}");
    assert!(!mock.calls_of("GetVolumeIDFromTargetPath").is_empty());
}

macro_rules! on_mock {
    ($($name:ident),+) => {
        $(
            #[tokio::test]
            async fn $name() {
                let f = Fixture::mock(Family::V1, NodeOptions::default()).await;
                super::$name(&f).await;
                f.finish().await;
            }
        )+
    };
}

mod mock_v1 {
    use super::*;
    on_mock!(
        a_staged_disk_is_read_locally,
        a_staged_share_is_read_locally,
        a_path_not_read_locally_goes_to_the_proxy
    );
}
