//! Sandbox safety and links as the namespace stores and resolves them.

use super::*;
use crate::host::namespace::Link;

#[test]
fn sandbox_escape_attempts_fail() {
    let dir = tempfile::tempdir().unwrap();
    let sb = dir.path().join("sb");
    let h = Host::new(HostConfig::new(&sb)).unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"s").unwrap();
    // a host link planted in the sandbox with a host path as its content (on
    // Unix a real symlink to `outside`) is never followed
    let kdir = h.host_path(K).unwrap();
    crate::host::namespace::store_link(outside.to_str().unwrap(), &kdir.join("evil")).unwrap();
    assert!(
        h.run(|node| node.path_exists(&format!(r"{K}\evil\secret")))
            .is_err()
    );
    assert!(h.run(|node| node.mkdir(&format!(r"{K}\evil\x"))).is_err());
    assert!(
        h.run(|node| node.rmdir_contents(&format!(r"{K}\evil")))
            .is_err()
    );
    assert!(
        !h.run(|node| node.is_symlink(&format!(r"{K}\evil")))
            .unwrap()
    );
    h.run(|node| node.rmdir(&format!(r"{K}\evil"), true))
        .unwrap(); // unlinks only
    // `..` in unvalidated input cannot climb above the drive root
    assert!(
        !h.run(|node| node.is_symlink(r"C:\var\..\..\..\..\etc\passwd"))
            .unwrap_or(false)
    );
    assert!(h.run(|node| node.is_symlink(r"\\?\C:\..\..\etc")).is_err());
    // link targets with `..` are normalised inside the drive
    h.create_link(&format!(r"{K}\up"), LinkKind::Dir, r"C:\..\..\..")
        .unwrap();
    assert_eq!(
        h.list_dir(&format!(r"{K}\up")).unwrap(),
        ["system volume information", "var"]
    );
    h.create_link(&format!(r"{K}\rel"), LinkKind::Dir, r"..\..\..\etc")
        .unwrap();
    assert!(
        h.run(|node| node.path_exists(&format!(r"{K}\rel\passwd")))
            .is_err()
    );
    assert!(!h.run(|node| node.is_symlink(&format!(r"{K}\rel"))).unwrap());
    // UNC and device paths without a share model
    assert!(h.run(|node| node.is_symlink(r"\\server\share\x")).is_err());
    h.create_link(&format!(r"{K}\unc"), LinkKind::Dir, r"\\server\share\")
        .unwrap();
    assert!(
        h.run(|node| node.path_exists(&format!(r"{K}\unc\x")))
            .is_err()
    );
    assert!(
        h.run(|node| node.is_symlink(r"\\.\PhysicalDrive0"))
            .is_err()
    );
    // link loops hit the hop limit
    h.create_link(
        &format!(r"{K}\loop1"),
        LinkKind::Dir,
        &format!(r"{K}\loop2"),
    )
    .unwrap();
    h.create_link(
        &format!(r"{K}\loop2"),
        LinkKind::Dir,
        &format!(r"{K}\loop1"),
    )
    .unwrap();
    assert_eq!(
        msg(h.run(|node| node.mkdir(&format!(r"{K}\loop1\x")))),
        format!(r"mkdir {K}\loop1: Cannot create a file when that file already exists.")
    );
    assert_eq!(
        msg(h.run(|node| node.path_exists(&format!(r"{K}\loop1\x")))),
        format!(r"CreateFile {K}\loop1\x: The name of the file cannot be resolved by the system.")
    );
    // RemoveAll's failing lookup is Lstat's, which Go words as CreateFile
    assert_eq!(
        msg(h.run(|node| node.rmdir(&format!(r"{K}\loop1\x"), true))),
        format!(r"CreateFile {K}\loop1\x: The name of the file cannot be resolved by the system.")
    );
    h.run(|node| node.rmdir(K, true)).unwrap(); // the working dir itself may be removed (quirk)
    assert!(!h.exists(K));
    assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"s");
    assert!(outside.exists());
    // drive roots are never removed
    h.set_working_dirs(vec!["C:\\".into()]);
    assert!(h.run(|node| node.rmdir("C:\\", true)).is_err());
    assert!(h.exists(r"C:\var"));
}

#[test]
fn sandbox_not_created_by_host_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("volumes/keep")).unwrap();
    let e = Host::new(HostConfig::new(dir.path())).unwrap_err();
    assert_eq!(e.kind(), HostErrorKind::InvalidArgument);
    assert!(dir.path().join("volumes/keep").exists());
    // a sandbox made by a Host is reset
    let dir2 = tempfile::tempdir().unwrap();
    let h = Host::new(HostConfig::new(dir2.path())).unwrap();
    h.run(|node| node.mkdir(&format!(r"{K}\old"))).unwrap();
    drop(h);
    let h = Host::new(HostConfig::new(dir2.path())).unwrap();
    assert!(!h.exists(&format!(r"{K}\old")));
}

/// Links as the host stores them (a symlink on Unix, a marker file on
/// Windows) are links everywhere: never files, never followed by the host.
#[test]
fn stored_links_are_links_not_files() {
    use crate::host::namespace::{LINK_FILE_MAGIC, Link, remove_link, store_link, stored_link};
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("l");
    let content = crate::host::namespace::link_content(LinkKind::Dir, r"C:\var");
    store_link(&content, &at).unwrap();
    assert!(store_link(&content, &at).is_err()); // never replaced
    let meta = std::fs::symlink_metadata(&at).unwrap();
    assert_eq!(
        stored_link(&at, &meta).unwrap(),
        Some(std::ffi::OsString::from(&content))
    );
    remove_link(&at).unwrap();
    assert!(std::fs::symlink_metadata(&at).is_err());
    // plain files and directories are no links, whatever their size
    for data in [
        &b""[..],
        b"x",
        &[b'y'; 100],
        LINK_FILE_MAGIC.split_last().unwrap().1,
    ] {
        std::fs::write(&at, data).unwrap();
        let meta = std::fs::symlink_metadata(&at).unwrap();
        assert_eq!(stored_link(&at, &meta).unwrap(), None);
    }
    let meta = std::fs::symlink_metadata(dir.path()).unwrap();
    assert_eq!(stored_link(dir.path(), &meta).unwrap(), None);

    // through the host: a link is listed, never counted as a file, and
    // removal (plain, forced or of a directory's contents) unlinks it only
    let h = host();
    let (_, id) = staged_disk(&h, GIB);
    let m = format!(r"{K}\m");
    h.run(|node| node.mkdir(&m)).unwrap();
    h.run(|node| node.mount_volume(&id, &m)).unwrap();
    let base = h.run(|node| node.get_volume_stats(&id)).unwrap().used_bytes;
    h.write_file(&format!(r"{m}\data"), b"12345").unwrap();
    let d = format!(r"{K}\d");
    h.run(|node| node.mkdir(&d)).unwrap();
    for (name, kind, target) in [
        ("fl", LinkKind::File, format!(r"{m}\data")),
        ("dl", LinkKind::Dir, m.clone()),
        ("jl", LinkKind::Junction, m.clone()),
        ("ml", LinkKind::Mount, id.clone()),
    ] {
        let at = format!(r"{d}\{name}");
        h.create_link(&at, kind, &target).unwrap();
        assert_eq!(
            h.entry(&at).unwrap(),
            Some(Entry::Link(Link { kind, target }))
        );
        assert!(h.exists(&at));
    }
    assert_eq!(h.read_file(&format!(r"{d}\fl")).unwrap(), b"12345");
    assert_eq!(h.read_file(&format!(r"{d}\dl\data")).unwrap(), b"12345");
    assert_eq!(
        h.list_dir(&format!(r"{d}\ml")).unwrap(),
        ["data", "system volume information"]
    );
    assert_eq!(h.list_dir(&d).unwrap(), ["dl", "fl", "jl", "ml"]);
    // writing through a file link replaces its target (the bytes replaced
    // are the target's, not the stored link's); the link stays a link
    h.write_file(&format!(r"{d}\fl"), b"zz").unwrap();
    assert_eq!(
        h.run(|node| node.get_volume_stats(&id)).unwrap().used_bytes,
        base + 2
    );
    assert_eq!(h.read_file(&format!(r"{m}\data")).unwrap(), b"zz");
    assert!(matches!(
        h.entry(&format!(r"{d}\fl")),
        Ok(Some(Entry::Link(_)))
    ));
    h.run(|node| node.rmdir(&format!(r"{d}\fl"), false))
        .unwrap();
    h.run(|node| node.rmdir(&format!(r"{d}\dl"), true)).unwrap();
    h.run(|node| node.rmdir_contents(&d)).unwrap();
    assert_eq!(h.list_dir(&d).unwrap(), Vec::<String>::new());
    assert_eq!(h.read_file(&format!(r"{m}\data")).unwrap(), b"zz");
    ok_invariants(&h);
}

/// On Windows a file starting with the link marker would read back as a
/// link, so such data cannot be written; elsewhere it is plain data.
#[test]
fn link_marker_data_is_plain_data_only_on_unix() {
    let h = host();
    let f = format!(r"{K}\marker");
    let mut data = crate::host::namespace::LINK_FILE_MAGIC.to_vec();
    data.extend_from_slice(b"winlink:dir:C:\\var");
    let r = h.write_file(&f, &data);
    if cfg!(windows) {
        assert!(r.is_err());
        assert!(!h.exists(&f));
    } else {
        r.unwrap();
        assert_eq!(h.read_file(&f).unwrap(), data);
        assert_eq!(
            h.entry(&f).unwrap(),
            Some(Entry::File {
                size: data.len() as u64
            })
        );
    }
}

/// The SMB seam: the SMB model in the context resolves UNC roots, and a
/// directory link whose target is a UNC path reaches the share.
#[test]
fn unc_paths_resolve_through_the_smb_model() {
    use crate::host::namespace::Ctx;
    use crate::host::path::{Win32Error, WinPath};
    use crate::host::smb::{NewSmbGlobalMappingRequest, ShareAccess, SmbConfig, SmbState};
    let h = host();
    let node = h.lock();
    // An SMB model with one share `\\srv\share`, mapped for everyone.
    let mut smb = SmbState::new(node.ns.sandbox(), SmbConfig::default());
    let share_dir = smb
        .add_share("srv", "share", ShareAccess::Everyone)
        .unwrap();
    assert_eq!(
        share_dir,
        node.ns.sandbox().join("smb").join("srv").join("share")
    );
    std::fs::write(share_dir.join("hello.txt"), b"hi").unwrap();
    smb.new_smb_global_mapping(&NewSmbGlobalMappingRequest {
        remote_path: r"\\srv\share".into(),
        local_path: String::new(),
        username: String::new(),
        password: String::new(),
    })
    .unwrap();
    let ctx = Ctx {
        volumes: &node.storage,
        smb: &smb,
    };
    let link = WinPath::parse(&format!(r"{K}\smbmount")).unwrap();
    node.ns
        .create_link(ctx, &link, LinkKind::Dir, r"\\SRV\Share\")
        .unwrap();
    let via_link = WinPath::parse(&format!(r"{K}\smbmount\HELLO.txt")).unwrap();
    assert_eq!(node.ns.read_file(ctx, &via_link).unwrap(), b"hi");
    let direct = WinPath::parse(r"\\srv\share\hello.txt").unwrap();
    assert!(matches!(
        node.ns.lstat(ctx, &direct).unwrap(),
        Entry::File { size: 2 }
    ));
    let other = WinPath::parse(r"\\srv\other\x").unwrap();
    assert_eq!(
        node.ns.lstat(ctx, &other).unwrap_err().code(),
        Win32Error::BAD_NET_NAME
    );
    // through the node's own SMB model (which knows no server `srv`) the
    // same link is unreachable
    assert_eq!(
        node.ns.read_file(node.ctx(), &via_link).unwrap_err().code(),
        Win32Error::BAD_NETPATH
    );
    // a share whose root lies outside the sandbox is refused
    let outside = tempfile::tempdir().unwrap();
    let mut escape = SmbState::new(outside.path(), SmbConfig::default());
    escape
        .add_share("srv", "share", ShareAccess::Everyone)
        .unwrap();
    std::fs::write(
        outside
            .path()
            .join("smb")
            .join("srv")
            .join("share")
            .join("hello.txt"),
        b"outside",
    )
    .unwrap();
    escape
        .new_smb_global_mapping(&NewSmbGlobalMappingRequest {
            remote_path: r"\\srv\share".into(),
            local_path: String::new(),
            username: String::new(),
            password: String::new(),
        })
        .unwrap();
    let bad = Ctx {
        volumes: &node.storage,
        smb: &escape,
    };
    assert_eq!(
        node.ns.lstat(bad, &direct).unwrap_err().code(),
        Win32Error::ACCESS_DENIED
    );
}

#[test]
fn hook_made_links_of_every_kind() {
    let h = host();
    let (_, id) = staged_disk(&h, GIB);
    let target = format!(r"{K}\jt");
    h.run(|node| node.mkdir(&target)).unwrap();
    let j = format!(r"{K}\junction");
    h.create_link(&j, LinkKind::Junction, &target).unwrap();
    assert!(h.run(|node| node.is_symlink(&j)).unwrap());
    assert_eq!(
        h.run(|node| node.get_volume_id_from_target_path(&j))
            .unwrap(),
        c_volume(&h)
    );
    let m = format!(r"{K}\hookmount");
    h.create_link(&m, LinkKind::Mount, &id).unwrap();
    assert!(h.run(|node| node.is_symlink(&m)).unwrap());
    assert_eq!(
        h.run(|node| node.get_volume_id_from_target_path(&m))
            .unwrap(),
        id
    );
    h.write_file(&format!(r"{m}\x"), b"1").unwrap();
    assert_eq!(h.list_dir(&m).unwrap(), ["system volume information", "x"]);
    let f = format!(r"{K}\filelink");
    h.write_file(&format!(r"{K}\real.txt"), b"r").unwrap();
    h.create_link(&f, LinkKind::File, &format!(r"{K}\real.txt"))
        .unwrap();
    assert_eq!(h.read_file(&f).unwrap(), b"r");
    assert!(h.run(|node| node.is_symlink(&f)).unwrap());
    assert_eq!(
        msg(h.create_link(&f, LinkKind::File, "C:\\x")),
        "Cannot create a file when that file already exists."
    );
    ok_invariants(&h);
}

/// Where the host OS follows the namespace's mount points and directory
/// links (Unix, and a Windows build under Wine: the namespace's "Under
/// Wine"; on real Windows they are files), a process reading the sandbox
/// reaches the target through them, while the namespace still reads them
/// as links, removes a link alone (never its target, also when removing
/// the directory holding it) and sees a mount point whose volume's
/// directory has gone.
#[test]
fn viewed_links_are_followed_by_the_os_and_removed_alone() {
    let h = host();
    if !h.let_the_os_follow_links() {
        eprintln!("a Windows host that is not Wine: links are files; not checked");
        return;
    }
    let (n, id) = staged_disk(&h, GIB);
    let m = format!(r"{K}\m");
    h.run(|node| node.mkdir(&m)).unwrap();
    h.run(|node| node.mount_volume(&id, &m)).unwrap();
    h.write_file(&format!(r"{m}\data"), b"12345").unwrap();
    let d = format!(r"{K}\d");
    let dl = format!(r"{d}\dl");
    h.run(|node| node.mkdir(&d)).unwrap();
    h.create_link(&dl, LinkKind::Dir, &m).unwrap();
    let mount = Link {
        kind: LinkKind::Mount,
        target: id.clone(),
    };
    assert_eq!(h.entry(&m).unwrap(), Some(Entry::Link(mount.clone())));
    assert_eq!(
        h.entry(&dl).unwrap(),
        Some(Entry::Link(Link {
            kind: LinkKind::Dir,
            target: m.clone()
        }))
    );
    // the OS follows both
    for at in [&m, &dl] {
        let local = h.host_path(at).unwrap();
        assert!(std::fs::metadata(&local).unwrap().is_dir(), "{at}");
        assert_eq!(std::fs::read(local.join("data")).unwrap(), b"12345", "{at}");
    }
    // the namespace's own view is unchanged
    assert_eq!(h.list_dir(&d).unwrap(), ["dl"]);
    assert_eq!(h.read_file(&format!(r"{dl}\data")).unwrap(), b"12345");
    // a forced removal of the directory holding a link leaves the target
    h.run(|node| node.rmdir(&d, true)).unwrap();
    assert_eq!(h.entry(&d).unwrap(), None);
    assert_eq!(h.read_file(&format!(r"{m}\data")).unwrap(), b"12345");
    // unmounting makes the mount point an empty directory again; the
    // volume keeps its data
    h.run(|node| node.unmount_volume(&id, &m)).unwrap();
    assert_eq!(h.entry(&m).unwrap(), Some(Entry::Dir));
    assert_eq!(h.list_dir(&m).unwrap(), Vec::<String>::new());
    h.run(|node| node.mount_volume(&id, &m)).unwrap();
    assert_eq!(h.read_file(&format!(r"{m}\data")).unwrap(), b"12345");
    // the volume's directory gone (its disk detached): still a mount point,
    // listed, and removable
    h.detach_disk(n).unwrap();
    assert_eq!(h.entry(&m).unwrap(), Some(Entry::Link(mount)));
    assert!(h.snapshot().mount_points.iter().any(|p| p.volume_id == id));
    h.run(|node| node.rmdir(&m, false)).unwrap();
    assert_eq!(h.entry(&m).unwrap(), None);
    assert!(h.snapshot().mount_points.is_empty());
    ok_invariants(&h);
}
