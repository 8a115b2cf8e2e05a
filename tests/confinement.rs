//! Confinement of the simulated node to its sandbox (issue 11, items 5 and 7).
//!
//! Links planted on the real file system at the sandbox's roots (a volume's
//! root directory, a share's content directory) must not lead a request out
//! of the sandbox, and no request of any group, with any path, may create,
//! change or remove anything outside it. Every call goes through the
//! server's services in process; a sibling `outside` directory is
//! snapshotted before and after.
#![cfg(feature = "server")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use csi_proxy_client::host::{Host, HostConfig};
use csi_proxy_client::server::ProxyService;
use csi_proxy_client::{filesystem, smb};
use tonic::{Code, Request};

const KUBELET: &str = r"C:\var\lib\kubelet";

/// A node whose sandbox has a sibling directory `outside` holding a few
/// files that no request may touch.
struct Fixture {
    _tmp: tempfile::TempDir,
    outside: PathBuf,
    svc: ProxyService,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let outside = tmp.path().join("outside");
        for dir in ["var/lib/kubelet/pods", "keep"] {
            std::fs::create_dir_all(outside.join(dir)).expect("outside dirs");
        }
        std::fs::write(outside.join("var/lib/kubelet/victim"), b"precious").expect("victim");
        std::fs::write(outside.join("keep/file"), b"precious").expect("file");
        let host = Host::new(HostConfig::new(tmp.path().join("sandbox"))).expect("host");
        Self {
            _tmp: tmp,
            outside,
            svc: ProxyService::new(host),
        }
    }

    fn host(&self) -> &Host {
        self.svc.host()
    }

    /// Replaces the real directory `dir` by a host symlink to `outside`.
    fn plant_link(&self, dir: &Path) {
        std::fs::remove_dir_all(dir).expect("remove the real directory");
        plant_symlink(&self.outside, dir);
    }
}

#[cfg(unix)]
fn plant_symlink(target: &Path, at: &Path) {
    std::os::unix::fs::symlink(target, at).expect("symlink");
}

#[cfg(windows)]
fn plant_symlink(target: &Path, at: &Path) {
    // Without the symlink privilege (or under Wine) a junction-like link may
    // be refused; then there is nothing to escape through.
    if std::os::windows::fs::symlink_dir(target, at).is_err() {
        std::fs::create_dir(at).expect("recreate the directory");
    }
}

/// Every entry below `dir` (links not followed): relative path → what it is.
fn tree(dir: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(base).expect("below base").to_path_buf();
            let meta = std::fs::symlink_metadata(&p).expect("lstat");
            let what = if meta.file_type().is_symlink() {
                format!("link {:?}", std::fs::read_link(&p).ok())
            } else if meta.is_dir() {
                walk(base, &p, out);
                "dir".to_string()
            } else {
                format!("file {:?}", std::fs::read(&p).ok())
            };
            out.insert(rel, what);
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn assert_refused<T: std::fmt::Debug>(result: Result<T, tonic::Status>, what: &str) {
    let status = result.expect_err(what);
    assert!(
        matches!(status.code(), Code::Unknown | Code::InvalidArgument),
        "{what}: {status:?}"
    );
}

async fn mkdir(svc: &ProxyService, path: &str) -> Result<(), tonic::Status> {
    use filesystem::v1::filesystem_server::Filesystem;
    let request = Request::new(filesystem::v1::MkdirRequest { path: path.into() });
    svc.mkdir(request).await.map(drop)
}

async fn rmdir_contents(svc: &ProxyService, path: &str) -> Result<(), tonic::Status> {
    use filesystem::v2alpha1::filesystem_server::Filesystem;
    let request = Request::new(filesystem::v2alpha1::RmdirContentsRequest { path: path.into() });
    svc.rmdir_contents(request).await.map(drop)
}

#[tokio::test]
async fn a_link_planted_at_a_volume_root_is_not_followed() {
    let f = Fixture::new();
    let root = f.host().host_path(r"C:\").expect("C: root");
    f.plant_link(&root);
    let before = tree(&f.outside);

    assert_refused(
        mkdir(&f.svc, &format!(r"{KUBELET}\mnt\x")).await,
        "Mkdir through the planted root",
    );
    assert_refused(
        rmdir_contents(&f.svc, KUBELET).await,
        "RmdirContents through the planted root",
    );
    assert_eq!(tree(&f.outside), before, "the outside tree changed");
}

#[tokio::test]
async fn a_link_planted_at_a_share_root_is_not_followed() {
    use smb::v1::smb_server::Smb;
    let f = Fixture::new();
    let local = format!(r"{KUBELET}\share");
    f.svc
        .new_smb_global_mapping(Request::new(smb::v1::NewSmbGlobalMappingRequest {
            remote_path: r"\\fileserver\share".into(),
            local_path: local.clone(),
            username: "smbuser".into(),
            password: "Sm8-Passw0rd!".into(),
        }))
        .await
        .expect("mapping");
    let share = f
        .host()
        .lock()
        .ns
        .sandbox()
        .join("smb")
        .join("fileserver")
        .join("share");
    f.plant_link(&share);
    let before = tree(&f.outside);

    assert_refused(
        mkdir(&f.svc, &format!(r"{local}\x")).await,
        "Mkdir through the planted share",
    );
    assert_refused(
        rmdir_contents(&f.svc, &local).await,
        "RmdirContents through the planted share",
    );
    assert_eq!(tree(&f.outside), before, "the outside tree changed");
}
