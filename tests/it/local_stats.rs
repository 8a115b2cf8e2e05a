//! Volume stats the plugin reads itself, at no host call (issue 35, as
//! azuredisk-csi-driver#2287 and aws-ebs-csi-driver's Windows mounter read
//! free space with `GetDiskFreeSpaceEx` on the path): a `Node` given the
//! simulated `C:` volume's directory as its local root
//! (`NodeOptions::local_root`) reads a staged disk's and a staged share's
//! space through the OS (`statvfs` here, `GetDiskFreeSpaceExW` on
//! Windows), following the simulator's links as Windows follows the mount
//! point and the SMB link. The figures are judged against what the OS
//! reports for the volume's or share's own directory in the sandbox (`df`
//! here, `GetDiskFreeSpaceExW` on Windows), and the path reached against a
//! file the host wrote on the volume.
//!
//! A Windows build runs these under Wine (`scripts/test-windows.sh`),
//! where the simulator, asked by `Host::let_the_os_follow_links`, makes its
//! links Unix symlinks that Wine follows
//! (`csi_proxy_client::host::namespace`, "Under Wine"); before it did, the
//! disk's usage there cost the proxy's two calls and the share's stats
//! said the path could not be read. On a real Windows host its links are
//! files no OS follows: there they check nothing and say so.
#![cfg(feature = "mock")]

use std::path::{Path, PathBuf};

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
#[cfg(unix)]
fn df(path: &Path) -> (u64, u64) {
    let out = std::process::Command::new("df")
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

/// `GetDiskFreeSpaceExW`'s total and available bytes of the directory
/// `path`.
#[cfg(windows)]
#[allow(unsafe_code)]
fn df(path: &Path) -> (u64, u64) {
    use std::os::windows::ffi::OsStrExt;

    #[link(name = "kernel32")]
    unsafe extern "system" {
        fn GetDiskFreeSpaceExW(
            dir: *const u16,
            avail: *mut u64,
            total: *mut u64,
            free: *mut u64,
        ) -> i32;
    }
    let mut dir = path.as_os_str().to_os_string();
    dir.push("\\");
    let wide: Vec<u16> = dir.encode_wide().chain(std::iter::once(0)).collect();
    let (mut available, mut total, mut free) = (0u64, 0u64, 0u64);
    // SAFETY: a NUL-terminated wide string and three outputs owned here.
    let ok = unsafe { GetDiskFreeSpaceExW(wide.as_ptr(), &mut available, &mut total, &mut free) };
    assert!(
        ok != 0,
        "GetDiskFreeSpaceExW {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
    (total, available)
}

/// Has the simulator make links the OS follows (Unix; Windows only under
/// Wine) and says whether it does; says so when not.
fn the_os_follows_the_links(f: &Fixture) -> bool {
    let followed = f.host.let_the_os_follow_links();
    if !followed {
        eprintln!("a Windows host that is not Wine: the simulator's links are files; not checked");
    }
    followed
}

/// The usage is the OS's figure for `dir`, the directory behind the staged
/// path in the sandbox (not through the link).
fn assert_df(usage: &VolumeUsage, dir: &Path) {
    let (total, _) = df(dir);
    assert_eq!(usage.total_bytes, total, "total of {}", dir.display());
    assert!(usage.available_bytes <= usage.total_bytes - usage.used_bytes);
}

/// The sandbox directory of the volume mounted at `mount_point` (`C:\...`).
fn volume_dir(f: &Fixture, mount_point: &str) -> PathBuf {
    let snapshot = f.host.snapshot();
    let m = snapshot
        .mount_points
        .iter()
        .find(|m| m.path.eq_ignore_ascii_case(mount_point))
        .unwrap_or_else(|| {
            panic!(
                "{mount_point} is a mount point: {:?}",
                snapshot.mount_points
            )
        });
    f.host
        .host_path(&m.volume_id)
        .expect("the volume's directory")
}

/// A staged disk: its usage comes from the path the plugin sees (the file
/// the host wrote on the volume is there), and no host call is made.
/// Before, `usage` asked the proxy (2 calls) whatever the options.
async fn a_staged_disk_is_read_locally(f: &Fixture) {
    if !the_os_follows_the_links(f) {
        return;
    }
    f.node.stage_disk(2u32, STAGING).await.unwrap();
    f.host
        .write_file(&format!(r"{STAGING_C}\written-by-the-host"), b"pod data")
        .unwrap();
    let (node, root) = local_node(f).await;
    let mock = f.mock.as_ref().unwrap();
    let before = mock.calls().len();
    let usage = node.usage(STAGING).await.unwrap();
    assert_eq!(mock.calls().len(), before, "{:?}", &mock.calls()[before..]);
    let local = mapped(&root, STAGING_C);
    assert_eq!(
        std::fs::read(local.join("written-by-the-host")).unwrap(),
        b"pod data",
        "the local path reaches the staged volume"
    );
    assert_df(&usage, &volume_dir(f, STAGING_C));
}

/// A staged share: the share's space, read through the link, no host call
/// and no reason given for missing figures. Before, a Unix build had none.
async fn a_staged_share_is_read_locally(f: &Fixture) {
    if !the_os_follows_the_links(f) {
        return;
    }
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
    std::fs::write(share_dir.join("written-on-the-share"), b"share data").unwrap();
    assert_eq!(
        std::fs::read(mapped(&root, SMB_STAGING).join("written-on-the-share")).unwrap(),
        b"share data",
        "the local path reaches the share"
    );
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
