//! Filesystem group errors: paths outside the working dirs, `..` and bad characters, host errors.

use csi_proxy_client::{filesystem, smb};

use crate::scenarios::*;

on_both_backends![
    filesystem_paths_outside_the_working_dirs,
    filesystem_dot_dot_and_bad_characters,
    filesystem_host_errors
];

const OUTSIDE: &str = r"path: {p} is not within the working directories: [C:\var\lib\kubelet]";

fn outside(p: &str) -> String {
    OUTSIDE.replace("{p}", p)
}

async fn filesystem_paths_outside_the_working_dirs(node: &Node) {
    use filesystem::v1 as f;
    let api = &node.filesystem_v1;
    let host = &node.host;
    let inside = format!(r"{KUBELET}\pods\ok");
    ok(api
        .mkdir(f::MkdirRequest {
            path: inside.clone(),
        })
        .await);

    // Outside, and the sibling prefixes upstream's string compare lets
    // through (the simulator compares whole components: a documented
    // divergence).
    for p in [
        r"C:\foo\bar",
        r"C:\var\lib\kubelet-evil",
        r"C:\var\lib\kubelet-evil\pods\x",
        r"C:\var\lib\kubeletfoo",
        r"D:\var\lib\kubelet\x",
    ] {
        unknown(
            api.mkdir(f::MkdirRequest { path: p.into() }).await,
            &outside(p),
        );
        unknown(
            api.path_exists(f::PathExistsRequest { path: p.into() })
                .await,
            &outside(p),
        );
        unknown(
            api.rmdir(f::RmdirRequest {
                path: p.into(),
                force: true,
            })
            .await,
            &outside(p),
        );
        unknown(
            node.filesystem_v2alpha1
                .rmdir_contents(filesystem::v2alpha1::RmdirContentsRequest { path: p.into() })
                .await,
            &outside(p),
        );
        // Link: the target is validated first, then the source.
        unknown(
            api.create_symlink(f::CreateSymlinkRequest {
                source_path: inside.clone(),
                target_path: p.into(),
            })
            .await,
            &outside(p),
        );
        unknown(
            api.create_symlink(f::CreateSymlinkRequest {
                source_path: p.into(),
                target_path: format!(r"{inside}\link"),
            })
            .await,
            &outside(p),
        );
        unknown(
            api.create_symlink(f::CreateSymlinkRequest {
                source_path: r"C:\also\outside".into(),
                target_path: p.into(),
            })
            .await,
            &outside(p),
        );
        // Legacy versions: any PathContext, same list.
        unknown(
            node.filesystem_v1alpha1
                .mkdir(filesystem::v1alpha1::MkdirRequest {
                    path: p.into(),
                    context: filesystem::v1alpha1::PathContext::Pod as i32,
                })
                .await,
            &outside(p),
        );
    }
    for p in [
        r"C:\foo",
        r"C:\var\lib\kubelet-evil",
        r"C:\var\lib\kubeletfoo",
    ] {
        assert!(!host.exists(p), "{p} was created");
    }
    assert!(!host.exists(&format!(r"{inside}\link")));

    // The working dir itself, mixed case and a trailing separator are in.
    ok(api
        .path_exists(f::PathExistsRequest {
            path: KUBELET.into(),
        })
        .await);
    ok(api
        .mkdir(f::MkdirRequest {
            path: r"c:\VAR\Lib\KUBELET\Pods\Mixed\".into(),
        })
        .await);
    assert_eq!(
        entry(host, &format!(r"{KUBELET}\pods\mixed")),
        Some(Entry::Dir)
    );

    // SMB local_path goes through the same check; the mapping stays.
    let p = r"C:\var\lib\kubelet-evil\smb";
    unknown(
        node.smb_v1
            .new_smb_global_mapping(smb::v1::NewSmbGlobalMappingRequest {
                remote_path: r"\\fileserver\share".into(),
                local_path: p.into(),
                username: "smbuser".into(),
                password: "Sm8-Passw0rd!".into(),
            })
            .await,
        &outside(p),
    );
    assert_eq!(smb_roots(host), [r"\\fileserver\share"]);
    assert!(!host.exists(p));
}

async fn filesystem_dot_dot_and_bad_characters(node: &Node) {
    use filesystem::v1 as f;
    let api = &node.filesystem_v1;
    let before = node.host.snapshot();
    let pods = format!(r"{KUBELET}\pods");
    let invalid = |p: &str| format!("path contains invalid characters: {p}");
    let long = format!(r"{KUBELET}\{}", "x".repeat(260 - KUBELET.len()));
    assert_eq!(long.len(), 261);
    let cases = [
        (
            format!(r"{pods}\..\..\..\system32"),
            invalid(&format!(r"{pods}\..\..\..\system32")),
        ),
        (format!(r"{pods}\a..b"), invalid(&format!(r"{pods}\a..b"))),
        (format!(r"{KUBELET}\.."), invalid(&format!(r"{KUBELET}\.."))),
        (
            format!(r"{pods}\pv1/foo"),
            invalid(&format!(r"{pods}\pv1/foo")),
        ),
        (
            format!(r"{pods}\pv1:foo"),
            invalid(&format!(r"{pods}\pv1:foo")),
        ),
        (
            format!(r"{pods}\pv1*foo"),
            invalid(&format!(r"{pods}\pv1*foo")),
        ),
        (
            format!(r"{pods}\pv1?foo"),
            invalid(&format!(r"{pods}\pv1?foo")),
        ),
        (
            format!(r"{pods}\pv1|foo"),
            invalid(&format!(r"{pods}\pv1|foo")),
        ),
        (
            format!(r#"{pods}\pv1"foo"#),
            invalid(&format!(r#"{pods}\pv1"foo"#)),
        ),
        (
            r"\\csi-plugin\..\..\..\system32".into(),
            r"invalid character \ at beginning of path: \\csi-plugin\..\..\..\system32".into(),
        ),
        (
            r"\\?\C:\var\lib\kubelet\x".into(),
            r"invalid character \ at beginning of path: \\?\C:\var\lib\kubelet\x".into(),
        ),
        (
            r"pv1\foo".into(),
            r"not an absolute Windows path: pv1\foo".into(),
        ),
        (String::new(), "not an absolute Windows path: ".into()),
        (
            long.clone(),
            "path length 261 exceeds maximum characters: 260".into(),
        ),
    ];
    for (path, gist) in &cases {
        unknown(
            api.mkdir(f::MkdirRequest { path: path.clone() }).await,
            gist,
        );
        unknown(
            api.rmdir(f::RmdirRequest {
                path: path.clone(),
                force: true,
            })
            .await,
            gist,
        );
        unknown(
            node.filesystem_v1beta1
                .path_exists(filesystem::v1beta1::PathExistsRequest {
                    path: path.clone(),
                    context: 7,
                })
                .await,
            gist,
        );
    }
    assert!(!node.host.exists(r"C:\var\lib\system32"));
    assert!(!node.host.exists(r"C:\system32"));
    assert_eq!(node.host.snapshot(), before);
}

async fn filesystem_host_errors(node: &Node) {
    use filesystem::v1 as f;
    let api = &node.filesystem_v1;
    let host = &node.host;
    let dir = format!(r"{KUBELET}\pods\p1");
    let file = format!(r"{dir}\file.txt");
    host.create_dir(&dir).expect("mkdir");
    host.write_file(&file, b"data").expect("write");

    // Rmdir without force: missing, non-empty.
    let missing = format!(r"{dir}\missing");
    unknown(
        api.rmdir(f::RmdirRequest {
            path: missing.clone(),
            force: false,
        })
        .await,
        &format!("remove {missing}: The system cannot find the file specified."),
    );
    unknown(
        api.rmdir(f::RmdirRequest {
            path: dir.clone(),
            force: false,
        })
        .await,
        &format!("remove {dir}: The directory is not empty."),
    );
    assert!(host.exists(&file));
    // Mkdir over a file, or below one: Go's ENOTDIR (ERROR_PATH_NOT_FOUND
    // on Windows) for the file, as MkdirAll meets it.
    let enotdir = format!("mkdir {file}: The system cannot find the path specified.");
    let message = unknown(
        api.mkdir(f::MkdirRequest { path: file.clone() }).await,
        &enotdir,
    );
    assert_eq!(message, enotdir);
    let message = unknown(
        api.mkdir(f::MkdirRequest {
            path: format!(r"{file}\sub"),
        })
        .await,
        &enotdir,
    );
    assert_eq!(message, enotdir);
    // A second link at the same place.
    let link = format!(r"{dir}\link");
    ok(api
        .create_symlink(f::CreateSymlinkRequest {
            source_path: dir.clone(),
            target_path: link.clone(),
        })
        .await);
    unknown(
        api.create_symlink(f::CreateSymlinkRequest {
            source_path: dir.clone(),
            target_path: link.clone(),
        })
        .await,
        "Cannot create a file when that file already exists.",
    );
    // IsSymlink is not validated but a missing path is an error.
    unknown(
        api.is_symlink(f::IsSymlinkRequest {
            path: r"C:\nowhere\at\all".into(),
        })
        .await,
        "The system cannot find",
    );
    // RmdirContents of a missing directory / of a file.
    let v2 = &node.filesystem_v2alpha1;
    unknown(
        v2.rmdir_contents(filesystem::v2alpha1::RmdirContentsRequest {
            path: missing.clone(),
        })
        .await,
        "The system cannot find the file specified.",
    );
    unknown(
        v2.rmdir_contents(filesystem::v2alpha1::RmdirContentsRequest { path: file.clone() })
            .await,
        "",
    );
    assert_eq!(host.read_file(&file).expect("still there"), b"data");
}
