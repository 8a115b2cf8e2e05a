use std::fmt::Debug;

use tonic::{Code, Response, Status};

use super::*;
use crate::host::namespace::{Entry, Link, LinkKind};
use crate::host::{Host, HostConfig};

pub(crate) const K: &str = r"C:\var\lib\kubelet";

/// A service over a fresh default node; the directory lives as long as
/// the fixture.
pub(crate) struct Fixture {
    pub(crate) svc: ProxyService,
    _dir: tempfile::TempDir,
}

impl Fixture {
    pub(crate) fn host(&self) -> &Host {
        self.svc.host()
    }
}

pub(crate) fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::new(dir.path().join("sb"))).unwrap();
    Fixture {
        svc: ProxyService::new(host),
        _dir: dir,
    }
}

/// The status of a failed call, checked to be `code` with `message`.
pub(crate) fn assert_status<T: Debug>(r: Result<T, Status>, code: Code, message: &str) {
    let s = r.unwrap_err();
    assert_eq!((s.code(), s.message()), (code, message), "{s:?}");
}

fn evil(p: &str) -> String {
    format!(r"path: {p} is not within the working directories: [{K}]")
}

/// Paths of one flow: a staging dir, a pod dir, the link in the pod dir.
fn paths(v: &str) -> (String, String, String) {
    let stage = format!(r"{K}\plugins\testplugin.csi.io\{v}\volume1");
    let pod = format!(r"{K}\pods\test-pod-id\volumes\kubernetes.io~csi\pvc-{v}");
    let link = format!(r"{pod}\rootvol");
    (stage, pod, link)
}

/// The upstream integration flow for v1alpha1/v1beta1.
macro_rules! legacy_flow {
    ($v:ident) => {
        mod $v {
            use super::*;
            use crate::filesystem::$v::filesystem_server::Filesystem;
            use crate::filesystem::$v::*;

            #[tokio::test]
            async fn flow_asserts_responses_and_host_state() {
                let f = fixture();
                let (s, h) = (&f.svc, f.host());
                let (stage, pod, link) = paths(stringify!($v));
                // `context` is ignored, whatever its value.
                for (path, context) in [(&stage, 0), (&pod, 1), (&stage, 7)] {
                    let r = s
                        .mkdir(Request::new(MkdirRequest {
                            path: path.clone(),
                            context,
                        }))
                        .await
                        .unwrap()
                        .into_inner();
                    assert_eq!(
                        r,
                        MkdirResponse {
                            error: String::new()
                        }
                    );
                    assert_eq!(h.entry(path).unwrap(), Some(Entry::Dir));
                }
                let exists = |path: &str| {
                    s.path_exists(Request::new(PathExistsRequest {
                        path: path.into(),
                        context: 1,
                    }))
                };
                assert_eq!(
                    exists(&stage).await.unwrap().into_inner(),
                    PathExistsResponse {
                        error: String::new(),
                        exists: true
                    }
                );
                assert!(!exists(&link).await.unwrap().into_inner().exists);

                let r = s
                    .link_path(Request::new(LinkPathRequest {
                        source_path: stage.clone(),
                        target_path: link.clone(),
                    }))
                    .await
                    .unwrap()
                    .into_inner();
                assert_eq!(
                    r,
                    LinkPathResponse {
                        error: String::new()
                    }
                );
                assert_eq!(
                    h.entry(&link).unwrap(),
                    Some(Entry::Link(Link {
                        kind: LinkKind::Dir,
                        target: stage.clone()
                    }))
                );
                let is_mount = |path: &str| {
                    s.is_mount_point(Request::new(IsMountPointRequest { path: path.into() }))
                };
                assert_eq!(
                    is_mount(&link).await.unwrap().into_inner(),
                    IsMountPointResponse {
                        error: String::new(),
                        is_mount_point: true
                    }
                );
                assert!(!is_mount(&stage).await.unwrap().into_inner().is_mount_point);

                let rmdir = |path: &str| {
                    s.rmdir(Request::new(RmdirRequest {
                        path: path.into(),
                        context: 0,
                        force: true,
                    }))
                };
                let r = rmdir(&pod).await.unwrap().into_inner();
                assert_eq!(
                    r,
                    RmdirResponse {
                        error: String::new()
                    }
                );
                assert!(!h.exists(&pod));
                assert!(h.exists(&stage), "the link's target survives");
                rmdir(&stage).await.unwrap();
                assert!(!h.exists(&stage));

                let outside = r"C:\var\lib\kubelet-evil\x";
                assert_status(
                    s.mkdir(Request::new(MkdirRequest {
                        path: outside.into(),
                        context: 0,
                    }))
                    .await,
                    Code::Unknown,
                    &evil(outside),
                );
                assert!(!h.exists(outside));
            }
        }
    };
}

/// The upstream integration flow for v1beta2/v1/v2alpha1.
macro_rules! current_flow {
    ($v:ident) => {
        mod $v {
            use super::*;
            use crate::filesystem::$v::filesystem_server::Filesystem;
            use crate::filesystem::$v::*;

            #[tokio::test]
            async fn flow_asserts_responses_and_host_state() {
                let f = fixture();
                let (s, h) = (&f.svc, f.host());
                let (stage, pod, link) = paths(stringify!($v));
                for path in [&stage, &pod] {
                    let r = s
                        .mkdir(Request::new(MkdirRequest { path: path.clone() }))
                        .await
                        .unwrap()
                        .into_inner();
                    assert_eq!(r, MkdirResponse {});
                    assert_eq!(h.entry(path).unwrap(), Some(Entry::Dir));
                }
                let exists = |path: &str| {
                    s.path_exists(Request::new(PathExistsRequest { path: path.into() }))
                };
                assert_eq!(
                    exists(&stage).await.unwrap().into_inner(),
                    PathExistsResponse { exists: true }
                );
                assert!(!exists(&link).await.unwrap().into_inner().exists);

                let r = s
                    .create_symlink(Request::new(CreateSymlinkRequest {
                        source_path: stage.clone(),
                        target_path: link.clone(),
                    }))
                    .await
                    .unwrap()
                    .into_inner();
                assert_eq!(r, CreateSymlinkResponse {});
                assert_eq!(
                    h.entry(&link).unwrap(),
                    Some(Entry::Link(Link {
                        kind: LinkKind::Dir,
                        target: stage.clone()
                    }))
                );
                assert!(exists(&link).await.unwrap().into_inner().exists);
                let is_symlink =
                    |path: &str| s.is_symlink(Request::new(IsSymlinkRequest { path: path.into() }));
                assert_eq!(
                    is_symlink(&link).await.unwrap().into_inner(),
                    IsSymlinkResponse { is_symlink: true }
                );
                assert!(!is_symlink(&stage).await.unwrap().into_inner().is_symlink);

                let rmdir = |path: &str| {
                    s.rmdir(Request::new(RmdirRequest {
                        path: path.into(),
                        force: true,
                    }))
                };
                let r = rmdir(&pod).await.unwrap().into_inner();
                assert_eq!(r, RmdirResponse {});
                assert!(!h.exists(&pod));
                assert!(h.exists(&stage), "the link's target survives");
                rmdir(&stage).await.unwrap();
                assert!(!h.exists(&stage));

                let outside = r"C:\var\lib\kubelet-evil\x";
                assert_status(
                    s.mkdir(Request::new(MkdirRequest {
                        path: outside.into(),
                    }))
                    .await,
                    Code::Unknown,
                    &evil(outside),
                );
                assert!(!h.exists(outside));
            }
        }
    };
}

legacy_flow!(v1alpha1);
legacy_flow!(v1beta1);
current_flow!(v1beta2);
current_flow!(v1);
current_flow!(v2alpha1);

mod v2alpha1_rmdir_contents {
    use super::*;
    use crate::filesystem::v2alpha1::filesystem_server::Filesystem;
    use crate::filesystem::v2alpha1::*;

    #[tokio::test]
    async fn removes_children_keeps_root_and_never_follows_links() {
        let f = fixture();
        let (s, h) = (&f.svc, f.host());
        let root = format!(r"{K}\testdir\contents");
        for sub in [r"a\b\c", r"d\e", "f"] {
            h.create_dir(&format!(r"{root}\{sub}")).unwrap();
        }
        h.write_file(&format!(r"{root}\a\b\c\file.txt"), b"x")
            .unwrap();
        let outside = format!(r"{K}\testdir\outside.txt");
        h.write_file(&outside, b"keep").unwrap();
        h.create_link(&format!(r"{root}\link"), LinkKind::File, &outside)
            .unwrap();
        let r = s
            .rmdir_contents(Request::new(RmdirContentsRequest { path: root.clone() }))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r, RmdirContentsResponse {});
        assert_eq!(h.list_dir(&root).unwrap(), Vec::<String>::new());
        assert_eq!(h.read_file(&outside).unwrap(), b"keep");
        // Idempotent on an existing directory.
        s.rmdir_contents(Request::new(RmdirContentsRequest { path: root.clone() }))
            .await
            .unwrap();
        let missing = format!(r"{K}\testdir\missing");
        assert_status(
            s.rmdir_contents(Request::new(RmdirContentsRequest {
                path: missing.clone(),
            }))
            .await,
            Code::Unknown,
            &format!("open {missing}: The system cannot find the file specified."),
        );
        assert_status(
            s.rmdir_contents(Request::new(RmdirContentsRequest {
                path: format!(r"{K}\..\x"),
            }))
            .await,
            Code::Unknown,
            &format!(r"path contains invalid characters: {K}\..\x"),
        );
    }
}

async fn legacy_link_path(
    s: &ProxyService,
    source_path: &str,
    target_path: &str,
) -> Result<Response<crate::filesystem::v1alpha1::LinkPathResponse>, Status> {
    use crate::filesystem::v1alpha1::filesystem_server::Filesystem;
    s.link_path(Request::new(crate::filesystem::v1alpha1::LinkPathRequest {
        source_path: source_path.into(),
        target_path: target_path.into(),
    }))
    .await
}

/// The filesystem group's error cases (shared by every version;
/// checked through v1 and the legacy LinkPath).
mod errors {
    use super::*;
    use crate::filesystem::v1::filesystem_server::Filesystem;
    use crate::filesystem::v1::*;

    #[tokio::test]
    async fn validation_messages() {
        let f = fixture();
        let s = &f.svc;
        let mkdir = |p: &str| s.mkdir(Request::new(MkdirRequest { path: p.into() }));
        for p in [
            r"C:\var\lib\kubelet-evil\x",
            r"C:\var\lib\kubeletfoo",
            r"C:\foo\bar",
        ] {
            assert_status(mkdir(p).await, Code::Unknown, &evil(p));
        }
        for p in [
            r"C:\var\lib\kubelet\pv1\..\..\..\system32",
            r"C:\var\lib\kubelet\a..b",
            r"C:\var\lib\kubelet\pv1/foo",
            r"C:\var\lib\kubelet\pv1:foo",
            r"C:\var\lib\kubelet\pv1*foo",
        ] {
            assert_status(
                mkdir(p).await,
                Code::Unknown,
                &format!("path contains invalid characters: {p}"),
            );
        }
        assert_status(
            mkdir(r"\\csi-plugin\..\..\..\system32").await,
            Code::Unknown,
            r"invalid character \ at beginning of path: \\csi-plugin\..\..\..\system32",
        );
        assert_status(
            mkdir(r"pv1\foo").await,
            Code::Unknown,
            r"not an absolute Windows path: pv1\foo",
        );
        let long = format!(r"{K}\{}", "a".repeat(250));
        assert_status(
            mkdir(&long).await,
            Code::Unknown,
            &format!("path length {} exceeds maximum characters: 260", long.len()),
        );
        // The working dir itself and mixed case are accepted.
        mkdir(K).await.unwrap();
        mkdir(r"c:\VAR\Lib\KUBELET\Mixed").await.unwrap();
        assert!(f.host().exists(r"C:\var\lib\kubelet\mixed"));
    }

    #[tokio::test]
    async fn rmdir_create_symlink_and_is_symlink_errors() {
        let f = fixture();
        let (s, h) = (&f.svc, f.host());
        let dir = format!(r"{K}\once");
        s.mkdir(Request::new(MkdirRequest { path: dir.clone() }))
            .await
            .unwrap();
        let rmdir = |force| {
            s.rmdir(Request::new(RmdirRequest {
                path: dir.clone(),
                force,
            }))
        };
        rmdir(false).await.unwrap();
        assert!(!h.exists(&dir));
        assert_status(
            rmdir(false).await,
            Code::Unknown,
            &format!("remove {dir}: The system cannot find the file specified."),
        );
        rmdir(true).await.unwrap();

        let full = format!(r"{K}\full");
        h.create_dir(&full).unwrap();
        h.write_file(&format!(r"{full}\x"), b"1").unwrap();
        assert_status(
            s.rmdir(Request::new(RmdirRequest {
                path: full.clone(),
                force: false,
            }))
            .await,
            Code::Unknown,
            &format!("remove {full}: The directory is not empty."),
        );

        let link = format!(r"{K}\link");
        let symlink = |target: &str| {
            s.create_symlink(Request::new(CreateSymlinkRequest {
                source_path: full.clone(),
                target_path: target.into(),
            }))
        };
        symlink(&link).await.unwrap();
        assert_status(
            symlink(&link).await,
            Code::Unknown,
            &format!("symlink {full} {link}: Cannot create a file when that file already exists."),
        );
        // target_path is validated first.
        assert_status(
            s.create_symlink(Request::new(CreateSymlinkRequest {
                source_path: r"C:\outside-source".into(),
                target_path: r"C:\outside-target".into(),
            }))
            .await,
            Code::Unknown,
            &evil(r"C:\outside-target"),
        );
        // IsSymlink is not validated: a missing path outside W is the
        // host's error, not the validator's.
        assert_status(
            s.is_symlink(Request::new(IsSymlinkRequest {
                path: r"C:\nowhere".into(),
            }))
            .await,
            Code::Unknown,
            r"CreateFile C:\nowhere: The system cannot find the file specified.",
        );
        // A legacy LinkPath fails the same way, with no `error` field.
        assert_status(
            legacy_link_path(s, &full, &link).await,
            Code::Unknown,
            &format!("symlink {full} {link}: Cannot create a file when that file already exists."),
        );
    }
}
