//! The volume group's operations.

use super::*;

#[test]
fn offline_disk_hides_volumes_and_keeps_ids() {
    let h = host();
    let (n, id) = staged_disk(&h, GIB);
    let staging = format!(r"{K}\plugins\d\globalmount");
    h.run(|node| node.mkdir(&staging)).unwrap();
    h.run(|node| node.mount_volume(&id, &staging)).unwrap();
    h.write_file(&format!(r"{staging}\data.txt"), b"hello")
        .unwrap();
    h.run(|node| node.set_disk_state(n, false)).unwrap();
    assert!(
        h.run(|node| node.list_volumes_on_disk(n, 0))
            .unwrap()
            .is_empty()
    );
    let q = format!("error querying volume ({id}). error: failed to query volume {id}: not found");
    assert_eq!(msg(h.run(|node| node.is_volume_formatted(&id))), q);
    assert_eq!(msg(h.run(|node| node.get_volume_stats(&id))), q);
    assert_eq!(msg(h.run(|node| node.write_volume_cache(&id))), q);
    assert_eq!(
        msg(h.run(|node| node.get_disk_number_from_volume_id(&id))),
        format!("failed to query volume {id}: not found")
    );
    assert!(
        h.run(|node| node.get_volume_id_from_target_path(&staging))
            .is_err()
    );
    assert!(h.snapshot().mount_points.iter().any(|m| m.volume_id == id));
    ok_invariants(&h);
    h.run(|node| node.set_disk_state(n, true)).unwrap();
    assert_eq!(
        h.run(|node| node.list_volumes_on_disk(n, 0)).unwrap(),
        std::slice::from_ref(&id)
    );
    assert_eq!(
        h.read_file(&format!(r"{staging}\DATA.TXT")).unwrap(),
        b"hello"
    );
    assert_eq!(
        h.run(|node| node.get_volume_id_from_target_path(&staging))
            .unwrap(),
        id
    );
}

#[test]
fn volume_id_lookup_is_case_insensitive_and_needs_trailing_slash() {
    let h = host();
    let (_, id) = staged_disk(&h, GIB);
    assert!(
        h.run(|node| node.is_volume_formatted(&id.to_ascii_uppercase()))
            .unwrap()
    );
    let no_slash = id.trim_end_matches('\\');
    assert!(h.run(|node| node.is_volume_formatted(no_slash)).is_err());
    for bad in ["", "-1"] {
        assert!(h.run(|node| node.is_volume_formatted(bad)).is_err());
        assert!(h.run(|node| node.format_volume(bad)).is_err());
        assert!(
            h.run(|node| node.resize_volume(bad, 2 * MIB as i64))
                .is_err()
        );
        assert!(h.run(|node| node.mount_volume(bad, "")).is_err());
        assert!(h.run(|node| node.unmount_volume(bad, "")).is_err());
        assert!(h.run(|node| node.get_volume_stats(bad)).is_err());
    }
    assert_eq!(
        msg(h.run(|node| node.is_volume_formatted(""))),
        "volume id empty"
    );
    assert_eq!(msg(h.run(|node| node.format_volume(""))), "volume id empty");
    assert_eq!(
        msg(h.run(|node| node.resize_volume("", 1))),
        "volume id empty"
    );
    assert_eq!(
        msg(h.run(|node| node.get_volume_stats(""))),
        "volume id empty"
    );
    assert_eq!(
        msg(h.run(|node| node.write_volume_cache(""))),
        "volume id empty"
    );
    assert_eq!(
        msg(h.run(|node| node.get_disk_number_from_volume_id(""))),
        "volume id empty"
    );
}

#[test]
fn format_rules() {
    let h = host();
    let (n, _) = h.attach_disk(DiskSpec::new(GIB)).unwrap();
    h.run(|node| node.partition_disk(n)).unwrap();
    let id = h
        .run(|node| node.list_volumes_on_disk(n, 0))
        .unwrap()
        .remove(0);
    assert!(!h.run(|node| node.is_volume_formatted(&id)).unwrap());
    h.run(|node| node.format_volume(&id)).unwrap();
    assert!(h.run(|node| node.is_volume_formatted(&id)).unwrap());
    let st = h.run(|node| node.get_volume_stats(&id)).unwrap();
    assert_eq!(st.total_bytes, 1056947712);
    assert_eq!(st.used_bytes, 4 * MIB as i64);
    // reformat wipes contents, keeps id and mount points
    let mnt = format!(r"{K}\m1");
    h.run(|node| node.mkdir(&mnt)).unwrap();
    h.run(|node| node.mount_volume(&id, &mnt)).unwrap();
    h.write_file(&format!(r"{mnt}\f"), &[0u8; 1000]).unwrap();
    assert_eq!(
        h.run(|node| node.get_volume_stats(&id)).unwrap().used_bytes,
        4 * MIB as i64 + 1000
    );
    h.run(|node| node.format_volume(&id)).unwrap();
    assert!(!h.exists(&format!(r"{mnt}\f")));
    assert_eq!(h.list_dir(&mnt).unwrap(), ["system volume information"]);
    assert_eq!(
        h.run(|node| node.get_volume_id_from_target_path(&mnt))
            .unwrap(),
        id
    );
    // system volume and read-only disk are refused
    let c = c_volume(&h);
    assert_eq!(
        msg(h.run(|node| node.format_volume(&c))),
        format!("error formatting volume ({c}). result: 42010, error: <nil>")
    );
    h.set_disk_read_only(n, true).unwrap();
    assert!(msg(h.run(|node| node.format_volume(&id))).ends_with("result: 43006, error: <nil>"));
    let unknown = r"\\?\Volume{00000000-0000-4000-8000-000000000000}\";
    assert_eq!(
        msg(h.run(|node| node.format_volume(unknown))),
        format!(
            "error querying volume ({unknown}). error: failed to query volume {unknown}: not found"
        )
    );
}

#[test]
fn resize_rules() {
    let h = host();
    let (n, id) = staged_disk(&h, GIB);
    // no room: max == current, so 0 is a no-op success
    h.run(|node| node.resize_volume(&id, 0)).unwrap();
    h.grow_disk(n, 2 * GIB).unwrap();
    // shrink, same size, growth < 100 MiB: success without change
    for s in [MIB as i64, 1056947712, 1056947712 + 100 * MIB as i64 - 1] {
        h.run(|node| node.resize_volume(&id, s)).unwrap();
        assert_eq!(
            h.run(|node| node.get_volume_stats(&id))
                .unwrap()
                .total_bytes,
            1056947712
        );
    }
    assert_eq!(
        msg(h.run(|node| node.resize_volume(&id, -5))),
        format!("invalid negative size -5 for volume ({id})")
    );
    let too_big = 3 * GIB as i64;
    assert_eq!(
        msg(h.run(|node| node.resize_volume(&id, too_big))),
        format!("error resizing volume ({id}). size:{too_big}, finalSize {too_big}, error: <nil>")
    );
    // 1.5 x total, not sector aligned: rounded down
    let req = (1056947712f32 * 1.5) as i64;
    h.run(|node| node.resize_volume(&id, req)).unwrap();
    let total = h
        .run(|node| node.get_volume_stats(&id))
        .unwrap()
        .total_bytes;
    assert!(total <= req && total > req - 512, "{total} vs {req}");
    h.run(|node| node.resize_volume(&id, 0)).unwrap();
    assert_eq!(
        h.run(|node| node.get_volume_stats(&id))
            .unwrap()
            .total_bytes,
        2130689536
    );
    h.run(|node| node.resize_volume(&id, 0)).unwrap(); // again: no-op
    assert_eq!(
        h.run(|node| node.get_volume_stats(&id))
            .unwrap()
            .total_bytes,
        2130689536
    );
    let unknown = r"\\?\Volume{00000000-0000-4000-8000-000000000000}\";
    assert_eq!(
        msg(h.run(|node| node.resize_volume(unknown, 0))),
        format!("failed to query volume {unknown}: not found")
    );
    ok_invariants(&h);
}

#[test]
fn resize_refuses_unsupported_fs() {
    let dir = tempfile::tempdir().unwrap();
    let seed = NodeSeed::from_toml_str(
        r#"
        [[disks]]
        number = 0
        size = 4294967296
        partition_style = "gpt"
        [[volumes]]
        disk = 0
        size = 1073741824
        fs = "refs"
        "#,
    )
    .unwrap();
    let h = Host::new(HostConfig {
        seed: Some(seed),
        ..HostConfig::new(dir.path())
    })
    .unwrap();
    let id = h
        .run(|node| node.list_volumes_on_disk(0, 0))
        .unwrap()
        .remove(0);
    assert!(msg(h.run(|node| node.resize_volume(&id, 0))).ends_with("error: <nil>"));
}

#[test]
fn mount_and_unmount_rules() {
    let h = host();
    let (_, id) = staged_disk(&h, GIB);
    let (_, other) = staged_disk(&h, GIB);
    let mnt = format!(r"{K}\plugins\x\globalmount");
    assert_eq!(
        msg(h.run(|node| node.mount_volume("", &mnt))),
        "MountVolumeRequest.VolumeId is empty"
    );
    assert_eq!(
        msg(h.run(|node| node.mount_volume(&id, ""))),
        "MountVolumeRequest.TargetPath is empty"
    );
    assert_eq!(
        msg(h.run(|node| node.mount_volume(&id, &mnt))),
        format!(
            "error mount volume ({id}) to path {mnt}. error: The system cannot find the path specified."
        )
    );
    h.run(|node| node.mkdir(&format!(r"{K}\plugins\x")))
        .unwrap();
    assert_eq!(
        msg(h.run(|node| node.mount_volume(&id, &mnt))),
        format!(
            "error mount volume ({id}) to path {mnt}. error: The system cannot find the file specified."
        )
    );
    h.run(|node| node.mkdir(&mnt)).unwrap();
    h.run(|node| node.mount_volume(&id, &mnt)).unwrap();
    // idempotent for the same id (exact string), also with trailing `\`
    h.run(|node| node.mount_volume(&id, &mnt)).unwrap();
    h.run(|node| node.mount_volume(&id, &format!(r"{mnt}\")))
        .unwrap();
    assert_eq!(
        msg(h.run(|node| node.mount_volume(&other, &mnt))),
        format!("error mount volume ({other}) to path {mnt}. error: The directory is not empty.")
    );
    // the exact-compare quirk: an upper-case id is a different string
    let upper = id.to_ascii_uppercase();
    assert_eq!(
        msg(h.run(|node| node.mount_volume(&upper, &mnt))),
        format!("error mount volume ({upper}) to path {mnt}. error: The directory is not empty.")
    );
    // a non-empty ordinary directory
    let full = format!(r"{K}\full");
    h.run(|node| node.mkdir(&format!(r"{full}\child"))).unwrap();
    assert_eq!(
        msg(h.run(|node| node.mount_volume(&id, &full))),
        format!("error get target volume ({id}) to path {full}. error: not a mounted folder")
    );
    // a file
    let file = format!(r"{K}\file.txt");
    h.write_file(&file, b"x").unwrap();
    assert_eq!(
        msg(h.run(|node| node.mount_volume(&id, &file))),
        format!("error mount volume ({id}) to path {file}. error: The directory name is invalid.")
    );
    // one volume at several paths
    let second = format!(r"{K}\second");
    h.run(|node| node.mkdir(&second)).unwrap();
    h.run(|node| node.mount_volume(&id, &second)).unwrap();
    assert_eq!(
        h.snapshot()
            .mount_points
            .iter()
            .filter(|m| m.volume_id == id)
            .count(),
        2
    );
    // unmount: validation, flush of the named volume, any mount point removed
    assert_eq!(
        msg(h.run(|node| node.unmount_volume("", &mnt))),
        "volume id empty"
    );
    assert_eq!(
        msg(h.run(|node| node.unmount_volume(&id, ""))),
        "target path empty"
    );
    let unknown = r"\\?\Volume{00000000-0000-4000-8000-000000000000}\";
    assert_eq!(
        msg(h.run(|node| node.unmount_volume(unknown, &mnt))),
        format!(
            "error querying volume ({unknown}). error: failed to query volume {unknown}: not found"
        )
    );
    assert!(
        h.entry(&mnt)
            .unwrap()
            .is_some_and(|e| crate::host::volume::is_mount_point(&e))
    );
    h.run(|node| node.unmount_volume(&other, &second)).unwrap(); // does not check ownership
    assert_eq!(h.entry(&second).unwrap(), Some(Entry::Dir));
    h.run(|node| node.unmount_volume(&id, &mnt)).unwrap();
    assert_eq!(h.entry(&mnt).unwrap(), Some(Entry::Dir));
    assert_eq!(
        msg(h.run(|node| node.unmount_volume(&id, &mnt))),
        format!(
            "error umount volume ({id}) from path {mnt}. error: The file or directory is not a reparse point."
        )
    );
    let gone = format!(r"{K}\gone");
    assert_eq!(
        msg(h.run(|node| node.unmount_volume(&id, &gone))),
        format!(
            "error umount volume ({id}) from path {gone}. error: The system cannot find the file specified."
        )
    );
    assert!(h.snapshot().volume(&id).unwrap().flushes >= 2);
    ok_invariants(&h);
}

#[test]
fn volume_id_from_target_path_and_closest() {
    let h = host();
    let (n, id) = staged_disk(&h, GIB);
    let c = c_volume(&h);
    let staging = format!(r"{K}\plugins\kubernetes.io\csi\d\h1\globalmount");
    let publish = format!(r"{K}\pods\uid\volumes\kubernetes.io~csi\pv\mount");
    h.run(|node| node.mkdir(&staging)).unwrap();
    h.run(|node| node.mkdir(&format!(r"{K}\pods\uid\volumes\kubernetes.io~csi\pv")))
        .unwrap();
    assert_eq!(
        msg(h.run(|node| node.get_volume_id_from_target_path(""))),
        "target path is empty"
    );
    assert_eq!(
        msg(h.run(|node| node.get_volume_id_from_target_path(&staging))),
        "not a mounted folder"
    );
    assert_eq!(
        msg(h.run(|node| node.get_volume_id_from_target_path("C:\\"))),
        "not a mounted folder"
    );
    assert_eq!(
        msg(h.run(|node| node.get_volume_id_from_target_path(&format!(r"{K}\nope")))),
        "The system cannot find the file specified."
    );
    // closest: ordinary dir on C: -> C:
    assert_eq!(
        h.run(|node| node.get_closest_volume_id_from_target_path(&staging))
            .unwrap(),
        c
    );
    h.run(|node| node.mount_volume(&id, &staging)).unwrap();
    h.run(|node| node.create_symlink(&staging, &publish))
        .unwrap();
    assert_eq!(
        h.run(|node| node.get_volume_id_from_target_path(&staging))
            .unwrap(),
        id
    );
    assert_eq!(
        h.run(|node| node.get_volume_id_from_target_path(&publish))
            .unwrap(),
        id
    );
    assert_eq!(
        h.run(|node| node.get_disk_number_from_volume_id(&id))
            .unwrap(),
        n
    );
    h.run(|node| node.mkdir(&format!(r"{staging}\foo\bar")))
        .unwrap();
    assert_eq!(
        h.run(|node| node.get_closest_volume_id_from_target_path(&format!(r"{staging}\foo\bar")))
            .unwrap(),
        id
    );
    assert_eq!(
        h.run(|node| node.get_closest_volume_id_from_target_path(&publish))
            .unwrap(),
        id
    );
    assert_eq!(
        msg(h.run(|node| node.get_volume_id_from_target_path(&format!(r"{staging}\foo")))),
        "not a mounted folder"
    );
    // symlink to an ordinary directory on C: -> the C: volume
    let plain = format!(r"{K}\plain");
    let link = format!(r"{K}\plainlink");
    h.run(|node| node.mkdir(&plain)).unwrap();
    h.run(|node| node.create_symlink(&plain, &link)).unwrap();
    assert_eq!(
        h.run(|node| node.get_volume_id_from_target_path(&link))
            .unwrap(),
        c
    );
    let missing = format!(r"{K}\missing\x");
    assert_eq!(
        msg(h.run(|node| node.get_closest_volume_id_from_target_path(&missing))),
        format!(
            "error getting the closest volume for the path={missing}, err=CreateFile {missing}: The system cannot find the path specified."
        )
    );
    assert_eq!(
        msg(h.run(|node| node.get_closest_volume_id_from_target_path(""))),
        "target path is empty"
    );
    // absent volume: error
    h.run(|node| node.set_disk_state(n, false)).unwrap();
    assert!(
        h.run(|node| node.get_volume_id_from_target_path(&publish))
            .is_err()
    );
}

#[test]
fn detach_leaves_dangling_mount_point() {
    let h = host();
    let (n, id) = staged_disk(&h, GIB);
    let m = format!(r"{K}\mnt");
    h.run(|node| node.mkdir(&m)).unwrap();
    h.run(|node| node.mount_volume(&id, &m)).unwrap();
    h.detach_disk(n).unwrap();
    assert!(h.snapshot().disk(n).is_none());
    let mp = h.snapshot().mount_points;
    assert_eq!(mp.len(), 1);
    assert!(!mp[0].volume_exists);
    assert_eq!(mp[0].path, r"C:\var\lib\kubelet\mnt");
    ok_invariants(&h);
    assert!(
        h.run(|node| node.get_volume_id_from_target_path(&m))
            .is_err()
    );
    assert!(!h.run(|node| node.is_symlink(&m)).unwrap());
    assert!(h.run(|node| node.path_exists(&m)).unwrap());
    h.run(|node| node.rmdir(&m, false)).unwrap();
    // the number is reused by the next disk
    let (n2, _) = h.attach_disk(DiskSpec::new(GIB)).unwrap();
    assert_eq!(n2, n);
}

#[test]
fn used_bytes_follow_writes_and_replacements() {
    let h = host();
    let (_, id) = staged_disk(&h, GIB);
    let m = format!(r"{K}\u");
    h.run(|node| node.mkdir(&m)).unwrap();
    h.run(|node| node.mount_volume(&id, &m)).unwrap();
    let base = h.run(|node| node.get_volume_stats(&id)).unwrap().used_bytes;
    h.write_file(&format!(r"{m}\f"), &[0u8; 4096]).unwrap();
    assert_eq!(
        h.run(|node| node.get_volume_stats(&id)).unwrap().used_bytes,
        base + 4096
    );
    h.write_file(&format!(r"{m}\F"), &[0u8; 100]).unwrap(); // same file, case-insensitive
    assert_eq!(
        h.run(|node| node.get_volume_stats(&id)).unwrap().used_bytes,
        base + 100
    );
    // writes to C: do not count on the data volume
    h.write_file(&format!(r"{K}\c.txt"), &[0u8; 999]).unwrap();
    assert_eq!(
        h.run(|node| node.get_volume_stats(&id)).unwrap().used_bytes,
        base + 100
    );
}
