//! Confinement of the simulated node to its sandbox.
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

/// The host directory of the default share `\\fileserver\share`.
fn share_dir(host: &Host) -> PathBuf {
    let sandbox = host.lock().ns.sandbox().to_path_buf();
    sandbox.join("smb").join("fileserver").join("share")
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
    f.plant_link(&share_dir(f.host()));
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

// ------------------------------------------------------------ property tests

mod property {
    use super::*;
    use csi_proxy_client::volume;
    use proptest::prelude::*;

    /// Cases per property: `PROPTEST_CASES`, else a small number for CI.
    pub(crate) fn cases() -> u32 {
        std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(64)
    }

    /// How a hostile path starts.
    fn prefix() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => Just(r"C:\var\lib\kubelet\".to_string()),
            1 => Just(r"c:/VAR/lib/Kubelet/".to_string()),
            1 => Just(r"C:\var\lib\kubelet".to_string()),
            1 => Just(r"C:\".to_string()),
            1 => Just("C:".to_string()),
            1 => Just(r"C:var\lib\kubelet\".to_string()),
            1 => Just(r"D:\".to_string()),
            1 => Just(r"\\?\C:\var\lib\kubelet\".to_string()),
            1 => Just(r"\\.\C:\var\lib\kubelet\".to_string()),
            1 => Just(r"\\?\UNC\fileserver\share\".to_string()),
            1 => Just(r"\\fileserver\share\".to_string()),
            1 => Just("//fileserver/share/".to_string()),
            1 => Just(r"\\?\Volume{00000000-0000-0000-0000-000000000000}\".to_string()),
            1 => Just(r"\var\lib\kubelet\".to_string()),
            1 => Just(String::new()),
            1 => "\\PC{0,6}",
        ]
    }

    /// One path component, hostile or plain.
    fn component() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => Just("..".to_string()),
            1 => Just(".".to_string()),
            1 => Just("...".to_string()),
            2 => Just("x".to_string()),
            1 => Just("pods".to_string()),
            2 => Just("link".to_string()),
            1 => Just("evil".to_string()),
            1 => Just("outside".to_string()),
            1 => Just("sandbox".to_string()),
            1 => Just("volumes".to_string()),
            1 => Just("KUBELET. ".to_string()),
            1 => Just("x .".to_string()),
            1 => Just("a\0b".to_string()),
            1 => Just("İß\u{202e}é".to_string()),
            1 => Just("\u{1F4A3}".to_string()),
            1 => Just("C:".to_string()),
            1 => Just("x".repeat(300)),
            2 => "\\PC{1,8}",
        ]
    }

    fn separator() -> impl Strategy<Value = &'static str> {
        prop_oneof![4 => Just("\\"), 2 => Just("/"), 1 => Just("\\\\"), 1 => Just("/\\")]
    }

    /// A hostile Windows path, or one of a few short paths in the kubelet
    /// tree (so that requests meet each other's links and mount points).
    pub(crate) fn hostile_path() -> impl Strategy<Value = String> {
        let short = prop::collection::vec(
            prop::sample::select(&["x", "link", "evil", "mnt", "share"][..]),
            1..3,
        )
        .prop_map(|names| format!(r"{KUBELET}\{}", names.join("\\")));
        prop_oneof![2 => short, 1 => long_path()]
    }

    fn long_path() -> impl Strategy<Value = String> {
        (
            prefix(),
            prop::collection::vec((component(), separator()), 0..8),
            any::<bool>(),
        )
            .prop_map(|(prefix, parts, trailing)| {
                let mut path = prefix;
                for (i, (c, sep)) in parts.iter().enumerate() {
                    if i > 0 {
                        path.push_str(sep);
                    }
                    path.push_str(c);
                }
                if trailing && !parts.is_empty() {
                    path.push('\\');
                }
                path
            })
    }

    /// A request of a path-taking RPC, with link creation through the API.
    #[derive(Debug, Clone)]
    enum Op {
        Mkdir(String),
        Rmdir(String, bool),
        RmdirContents(String),
        CreateSymlink(String, String),
        LinkPath(String, String),
        PathExists(String),
        IsSymlink(String),
        SmbMap(String, String),
        SmbUnmap(String),
        Mount(usize, String),
        Unmount(usize, String),
        VolumeIdOf(String),
        Format(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        let p = hostile_path;
        let remote = prop_oneof![
            Just(r"\\fileserver\share".to_string()),
            p().prop_map(|p| format!(r"\\fileserver\share\{p}")),
            p(),
        ];
        prop_oneof![
            3 => p().prop_map(Op::Mkdir),
            2 => (p(), any::<bool>()).prop_map(|(p, f)| Op::Rmdir(p, f)),
            2 => p().prop_map(Op::RmdirContents),
            3 => (p(), p()).prop_map(|(s, t)| Op::CreateSymlink(s, t)),
            1 => (p(), p()).prop_map(|(s, t)| Op::LinkPath(s, t)),
            1 => p().prop_map(Op::PathExists),
            1 => p().prop_map(Op::IsSymlink),
            2 => (remote.clone(), p()).prop_map(|(r, l)| Op::SmbMap(r, l)),
            1 => remote.prop_map(Op::SmbUnmap),
            2 => (0usize..4, p()).prop_map(|(v, t)| Op::Mount(v, t)),
            1 => (0usize..4, p()).prop_map(|(v, t)| Op::Unmount(v, t)),
            1 => p().prop_map(Op::VolumeIdOf),
            1 => (0usize..4).prop_map(Op::Format),
        ]
    }

    async fn run(svc: &ProxyService, volumes: &[String], op: Op) -> Result<(), tonic::Status> {
        use filesystem::v2alpha1 as fs;
        use fs::filesystem_server::Filesystem;
        use smb::v1::smb_server::Smb;
        use vol::volume_server::Volume;
        use volume::v2alpha1 as vol;
        let volume = |i: usize| volumes[i % volumes.len()].clone();
        match op {
            Op::Mkdir(path) => done(svc.mkdir(Request::new(fs::MkdirRequest { path })).await),
            Op::Rmdir(path, force) => done(
                svc.rmdir(Request::new(fs::RmdirRequest { path, force }))
                    .await,
            ),
            Op::RmdirContents(path) => rmdir_contents(svc, &path).await,
            Op::CreateSymlink(source_path, target_path) => done(
                svc.create_symlink(Request::new(fs::CreateSymlinkRequest {
                    source_path,
                    target_path,
                }))
                .await,
            ),
            Op::LinkPath(source_path, target_path) => done(
                filesystem::v1alpha1::filesystem_server::Filesystem::link_path(
                    svc,
                    Request::new(filesystem::v1alpha1::LinkPathRequest {
                        source_path,
                        target_path,
                    }),
                )
                .await,
            ),
            Op::PathExists(path) => done(
                svc.path_exists(Request::new(fs::PathExistsRequest { path }))
                    .await,
            ),
            Op::IsSymlink(path) => done(
                svc.is_symlink(Request::new(fs::IsSymlinkRequest { path }))
                    .await,
            ),
            Op::SmbMap(remote_path, local_path) => done(
                svc.new_smb_global_mapping(Request::new(smb::v1::NewSmbGlobalMappingRequest {
                    remote_path,
                    local_path,
                    username: "smbuser".into(),
                    password: "Sm8-Passw0rd!".into(),
                }))
                .await,
            ),
            Op::SmbUnmap(remote_path) => done(
                svc.remove_smb_global_mapping(Request::new(
                    smb::v1::RemoveSmbGlobalMappingRequest { remote_path },
                ))
                .await,
            ),
            Op::Mount(v, target_path) => done(
                svc.mount_volume(Request::new(vol::MountVolumeRequest {
                    volume_id: volume(v),
                    target_path,
                }))
                .await,
            ),
            Op::Unmount(v, target_path) => done(
                svc.unmount_volume(Request::new(vol::UnmountVolumeRequest {
                    volume_id: volume(v),
                    target_path,
                }))
                .await,
            ),
            Op::VolumeIdOf(target_path) => done(
                svc.get_volume_id_from_target_path(Request::new(
                    vol::GetVolumeIdFromTargetPathRequest { target_path },
                ))
                .await,
            ),
            Op::Format(v) => done(
                svc.format_volume(Request::new(vol::FormatVolumeRequest {
                    volume_id: volume(v),
                }))
                .await,
            ),
        }
    }

    fn done<T>(r: Result<tonic::Response<T>, tonic::Status>) -> Result<(), tonic::Status> {
        r.map(drop)
    }

    /// A node where host links were planted: inside the kubelet tree
    /// (`evil`), at the root of every volume but C: (one is mounted at
    /// `mnt`) and at the share mapped at `share`. Also the volumes' ids.
    fn node(rt: &tokio::runtime::Runtime) -> (Fixture, Vec<String>) {
        use smb::v1::smb_server::Smb;
        use volume::v2alpha1::volume_server::Volume;
        let f = Fixture::new();
        let c_root = f.host().host_path(r"C:\").expect("C: root");
        let volumes: Vec<String> = f
            .host()
            .snapshot()
            .volumes
            .into_iter()
            .map(|v| v.id)
            .collect();
        let other = volumes
            .iter()
            .find(|id| f.host().host_path(id).expect("volume root") != c_root)
            .expect("a volume besides C:");
        let mnt = format!(r"{KUBELET}\mnt");
        rt.block_on(async {
            mkdir(&f.svc, &mnt).await.expect("mkdir mnt");
            f.svc
                .mount_volume(Request::new(volume::v2alpha1::MountVolumeRequest {
                    volume_id: other.clone(),
                    target_path: mnt,
                }))
                .await
                .expect("mount");
            f.svc
                .new_smb_global_mapping(Request::new(smb::v1::NewSmbGlobalMappingRequest {
                    remote_path: r"\\fileserver\share".into(),
                    local_path: format!(r"{KUBELET}\share"),
                    username: "smbuser".into(),
                    password: "Sm8-Passw0rd!".into(),
                }))
                .await
                .expect("mapping");
        });
        let kubelet = f.host().host_path(KUBELET).expect("kubelet dir");
        plant_symlink(&f.outside, &kubelet.join("evil"));
        for id in &volumes {
            let root = f.host().host_path(id).expect("volume root");
            if root != c_root {
                f.plant_link(&root);
            }
        }
        f.plant_link(&share_dir(f.host()));
        (f, volumes)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases()))]

        /// No sequence of requests with hostile paths touches anything
        /// outside the sandbox; every refusal is INVALID_ARGUMENT or
        /// upstream's UNKNOWN; the node's invariants hold afterwards.
        #[test]
        fn no_request_reaches_outside_the_sandbox(ops in prop::collection::vec(op(), 1..16)) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let (f, volumes) = node(&rt);
            let before = tree(&f.outside);
            // The links planted at volume roots are the test's own doing:
            // on Linux the node still checks clean, while Wine does not see
            // a directory behind them. The requests must add nothing.
            let baseline = f.host().check_invariants();
            #[cfg(unix)]
            prop_assert_eq!(&baseline, &Ok(()));
            for op in ops {
                let what = format!("{op:?}");
                if let Err(status) = rt.block_on(run(&f.svc, &volumes, op)) {
                    prop_assert!(
                        matches!(status.code(), Code::Unknown | Code::InvalidArgument),
                        "{what}: {status:?}"
                    );
                }
                prop_assert_eq!(&tree(&f.outside), &before, "after {}", what);
            }
            prop_assert_eq!(f.host().check_invariants(), baseline);
        }
    }
}
