//! The filesystem group's operations.

use super::*;

#[test]
fn filesystem_validation_through_the_trait() {
    let h = host();
    assert_eq!(
        msg(h.run(|node| node.mkdir(r"C:\foo\bar"))),
        r"path: C:\foo\bar is not within the working directories: [C:\var\lib\kubelet]"
    );
    assert_eq!(
        msg(h.run(|node| node.mkdir(r"C:\var\lib\kubelet-evil\x"))),
        r"path: C:\var\lib\kubelet-evil\x is not within the working directories: [C:\var\lib\kubelet]"
    );
    assert_eq!(
        msg(h.run(|node| node.rmdir(r"C:\var\lib\kubelet\pv1\..\..\..\system32", true))),
        r"path contains invalid characters: C:\var\lib\kubelet\pv1\..\..\..\system32"
    );
    assert_eq!(
        msg(h.run(|node| node.path_exists(r"pv1\foo"))),
        r"not an absolute Windows path: pv1\foo"
    );
    assert_eq!(
        msg(h.run(|node| node.create_symlink(r"C:\outside", &format!(r"{K}\l")))),
        r"path: C:\outside is not within the working directories: [C:\var\lib\kubelet]"
    );
    // target_path is validated first
    assert_eq!(
        msg(h.run(|node| node.create_symlink(r"C:\a", r"C:\b"))),
        r"path: C:\b is not within the working directories: [C:\var\lib\kubelet]"
    );
    assert!(!h.exists(r"C:\var\lib\kubelet-evil"));
    // IsSymlink is not validated
    assert!(
        !h.run(|node| node.is_symlink(r"C:\Windows"))
            .is_ok_and(|b| b)
    );
    // extra working dirs come first, kubelet last
    let dir = tempfile::tempdir().unwrap();
    let h2 = Host::new(HostConfig {
        working_dirs: vec![r"C:\data".into()],
        ..HostConfig::new(dir.path())
    })
    .unwrap();
    assert_eq!(h2.working_dirs(), [r"C:\data", K]);
    h2.run(|node| node.mkdir(r"C:\data\x")).unwrap();
    assert_eq!(
        msg(h2.run(|node| node.mkdir(r"C:\datax"))),
        r"path: C:\datax is not within the working directories: [C:\data C:\var\lib\kubelet]"
    );
}

#[test]
fn mkdir_rules() {
    let h = host();
    let d = format!(r"{K}\a\b\c");
    h.run(|node| node.mkdir(&d)).unwrap();
    h.run(|node| node.mkdir(&d)).unwrap(); // idempotent
    assert_eq!(h.entry(&format!(r"{K}\A\B")).unwrap(), Some(Entry::Dir));
    let f = format!(r"{K}\file");
    h.write_file(&f, b"x").unwrap();
    // Go's ENOTDIR is ERROR_PATH_NOT_FOUND on Windows; MkdirAll names the
    // file on the way, not the requested path
    let enotdir = format!("mkdir {f}: The system cannot find the path specified.");
    assert_eq!(msg(h.run(|node| node.mkdir(&f))), enotdir);
    assert_eq!(msg(h.run(|node| node.mkdir(&format!(r"{f}\sub")))), enotdir);
    assert_eq!(
        msg(h.run(|node| node.mkdir(&format!(r"{f}\sub\deeper")))),
        enotdir
    );
    let dangling = format!(r"{K}\dangling");
    h.run(|node| node.create_symlink(&format!(r"{K}\nowhere"), &dangling))
        .unwrap();
    let exists = format!("mkdir {dangling}: Cannot create a file when that file already exists.");
    assert_eq!(msg(h.run(|node| node.mkdir(&dangling))), exists);
    assert_eq!(
        msg(h.run(|node| node.mkdir(&format!(r"{dangling}\sub")))),
        exists
    );
    assert!(!h.exists(&format!(r"{K}\nowhere")));
    // through a link: created inside the link target
    let link = format!(r"{K}\lnk");
    h.run(|node| node.create_symlink(&format!(r"{K}\a"), &link))
        .unwrap();
    h.run(|node| node.mkdir(&link)).unwrap();
    h.run(|node| node.mkdir(&format!(r"{link}\new"))).unwrap();
    assert_eq!(h.entry(&format!(r"{K}\a\new")).unwrap(), Some(Entry::Dir));
}

#[test]
fn rmdir_rules() {
    let h = host();
    let d = format!(r"{K}\r");
    h.run(|node| node.mkdir(&format!(r"{d}\sub"))).unwrap();
    assert_eq!(
        msg(h.run(|node| node.rmdir(&d, false))),
        format!("remove {d}: The directory is not empty.")
    );
    let f = format!(r"{d}\sub\f.txt");
    h.write_file(&f, b"1").unwrap();
    h.run(|node| node.rmdir(&f, false)).unwrap(); // removes a file despite the name
    h.run(|node| node.rmdir(&format!(r"{d}\sub"), false))
        .unwrap();
    h.run(|node| node.rmdir(&d, false)).unwrap();
    assert_eq!(
        msg(h.run(|node| node.rmdir(&d, false))),
        format!("remove {d}: The system cannot find the file specified.")
    );
    h.run(|node| node.rmdir(&d, true)).unwrap(); // missing is fine with force
    h.run(|node| node.rmdir(&format!(r"{K}\no\such\path"), true))
        .unwrap();
    assert_eq!(
        msg(h.run(|node| node.rmdir(&format!(r"{K}\x\."), true))),
        format!(r"RemoveAll {K}\x\.: invalid argument")
    );
    // force on a tree with a link inside: the link target survives
    let keep = format!(r"{K}\keep");
    h.run(|node| node.mkdir(&keep)).unwrap();
    h.write_file(&format!(r"{keep}\precious"), b"p").unwrap();
    let tree = format!(r"{K}\tree");
    h.run(|node| node.mkdir(&format!(r"{tree}\deep\er")))
        .unwrap();
    h.run(|node| node.create_symlink(&keep, &format!(r"{tree}\deep\link")))
        .unwrap();
    h.run(|node| node.rmdir(&tree, true)).unwrap();
    assert!(!h.exists(&tree));
    assert_eq!(h.read_file(&format!(r"{keep}\precious")).unwrap(), b"p");
    // removing a link removes only the link
    let l = format!(r"{K}\l2");
    h.run(|node| node.create_symlink(&keep, &l)).unwrap();
    h.run(|node| node.rmdir(&l, true)).unwrap();
    assert!(h.exists(&keep));
}

#[test]
fn rmdir_contents_rules() {
    let h = host();
    let root = format!(r"{K}\rc");
    for i in 0..3 {
        h.run(|node| node.mkdir(&format!(r"{root}\t{i}\a\b")))
            .unwrap();
        h.write_file(&format!(r"{root}\t{i}\a\b\f"), b"x").unwrap();
    }
    let outside = format!(r"{K}\outside.txt");
    h.write_file(&outside, b"o").unwrap();
    h.run(|node| node.create_symlink(&outside, &format!(r"{root}\filelink")))
        .unwrap();
    h.run(|node| node.rmdir_contents(&root)).unwrap();
    assert_eq!(h.list_dir(&root).unwrap(), Vec::<String>::new());
    assert!(h.exists(&outside));
    h.run(|node| node.rmdir_contents(&root)).unwrap(); // idempotent while the dir exists
    let missing = format!(r"{K}\nope");
    assert_eq!(
        msg(h.run(|node| node.rmdir_contents(&missing))),
        format!("open {missing}: The system cannot find the file specified.")
    );
    assert!(h.run(|node| node.rmdir_contents(&outside)).is_err());
    // a link to a directory: the target's contents go
    let tgt = format!(r"{K}\tgt");
    h.run(|node| node.mkdir(&format!(r"{tgt}\x"))).unwrap();
    let l = format!(r"{K}\tgtlink");
    h.run(|node| node.create_symlink(&tgt, &l)).unwrap();
    h.run(|node| node.rmdir_contents(&l)).unwrap();
    assert!(h.exists(&tgt) && h.list_dir(&tgt).unwrap().is_empty());
}

#[test]
fn create_symlink_and_is_symlink_rules() {
    let h = host();
    let src = format!(r"{K}\plugins\p\volume1");
    let pod = format!(r"{K}\pods\id\volumes\kubernetes.io~csi\pvc");
    h.run(|node| node.mkdir(&src)).unwrap();
    h.run(|node| node.mkdir(&pod)).unwrap();
    let link = format!(r"{pod}\rootvol");
    h.run(|node| node.create_symlink(&src, &link)).unwrap();
    assert!(h.run(|node| node.path_exists(&link)).unwrap());
    assert_eq!(
        h.entry(&link).unwrap(),
        Some(Entry::Link(crate::host::namespace::Link {
            kind: LinkKind::Dir,
            target: src.clone()
        }))
    );
    assert_eq!(
        msg(h.run(|node| node.create_symlink(&src, &link))),
        format!("symlink {src} {link}: Cannot create a file when that file already exists.")
    );
    // an existing empty directory as target: also "already exists"
    assert!(
        msg(h.run(|node| node.create_symlink(&src, &pod)))
            .ends_with("Cannot create a file when that file already exists.")
    );
    let orphan = format!(r"{K}\no\parent\link");
    assert_eq!(
        msg(h.run(|node| node.create_symlink(&src, &orphan))),
        format!("symlink {src} {orphan}: The system cannot find the path specified.")
    );
    // a missing source makes a dangling file link
    let dl = format!(r"{K}\dl");
    h.run(|node| node.create_symlink(&format!(r"{K}\missing"), &dl))
        .unwrap();
    assert!(matches!(h.entry(&dl).unwrap(), Some(Entry::Link(l)) if l.kind == LinkKind::File));
    assert!(h.run(|node| node.path_exists(&dl)).unwrap());
    // IsSymlink
    assert!(h.run(|node| node.is_symlink(&link)).unwrap());
    assert!(!h.run(|node| node.is_symlink(&src)).unwrap());
    assert!(!h.run(|node| node.is_symlink(&dl)).unwrap());
    let nope = format!(r"{K}\nope");
    assert_eq!(
        msg(h.run(|node| node.is_symlink(&nope))),
        format!("CreateFile {nope}: The system cannot find the file specified.")
    );
    h.run(|node| node.rmdir(&src, true)).unwrap();
    assert!(!h.run(|node| node.is_symlink(&link)).unwrap());
    h.run(|node| node.rmdir(&link, false)).unwrap();
    assert!(!h.run(|node| node.path_exists(&link)).unwrap());
    // a volume mount point counts while its volume is present
    let (n, id) = staged_disk(&h, GIB);
    let m = format!(r"{K}\mp");
    h.run(|node| node.mkdir(&m)).unwrap();
    h.run(|node| node.mount_volume(&id, &m)).unwrap();
    assert!(h.run(|node| node.is_symlink(&m)).unwrap());
    h.run(|node| node.set_disk_state(n, false)).unwrap();
    assert!(!h.run(|node| node.is_symlink(&m)).unwrap());
}
