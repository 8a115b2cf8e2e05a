//! Behaviour tests of the simulated host through its internal traits.

use super::namespace::{Entry, LinkKind};
use super::storage::{DiskSpec, FileSystem, GPT_MSR, PartitionStyle, PartitionType};
use super::*;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const K: &str = r"C:\var\lib\kubelet";

struct T {
    host: Host,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for T {
    type Target = Host;
    fn deref(&self) -> &Host {
        &self.host
    }
}

fn host() -> T {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::new(dir.path().join("sb"))).unwrap();
    T { host, _dir: dir }
}

fn msg<T: std::fmt::Debug>(r: HostResult<T>) -> String {
    r.unwrap_err().message().to_string()
}

fn ok_invariants(h: &Host) {
    if let Err(v) = h.check_invariants() {
        panic!("invariants violated: {v:#?}");
    }
}

fn c_volume(h: &Host) -> String {
    let snap = h.snapshot();
    let d0 = snap.disk(0).unwrap();
    d0.partitions
        .iter()
        .find(|p| p.drive_letter == Some('C'))
        .and_then(|p| p.volume.clone())
        .unwrap()
}

/// Attaches a RAW disk, partitions and formats it; returns (disk, volume id).
fn staged_disk(h: &Host, size: u64) -> (u32, String) {
    let (n, _) = h.attach_disk(DiskSpec::new(size)).unwrap();
    h.run(|node| node.partition_disk(n)).unwrap();
    let id = h
        .run(|node| node.list_volumes_on_disk(n, 0))
        .unwrap()
        .remove(0);
    h.run(|node| node.format_volume(&id)).unwrap();
    (n, id)
}

// ---------------------------------------------------------------- default node

#[test]
fn default_node_layout() {
    let h = host();
    let snap = h.snapshot();
    assert_eq!(
        snap.disks.iter().map(|d| d.number).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    let d0 = snap.disk(0).unwrap();
    assert!(d0.is_system && d0.partition_style == PartitionStyle::Gpt);
    assert_eq!(d0.partitions.len(), 3);
    assert_eq!(d0.partitions[0].offset, MIB);
    assert!(d0.partitions[1].kind.is_msr());
    assert_eq!(d0.partitions[2].drive_letter, Some('C'));
    for n in [1, 2] {
        let d = snap.disk(n).unwrap();
        assert_eq!(d.partition_style, PartitionStyle::Raw);
        assert!(d.partitions.is_empty());
    }
    let locs = h.run(|node| node.list_disk_locations()).unwrap();
    assert_eq!(locs[&0].lun_id, "0");
    assert_eq!(
        locs[&1],
        DiskLocation {
            adapter: "3".into(),
            bus: "".into(),
            target: "0".into(),
            lun_id: "1".into()
        }
    );
    assert_eq!(locs[&2].lun_id, "2");
    let ids = h.run(|node| node.list_disk_ids()).unwrap();
    assert_eq!(ids.len(), 3);
    assert!(ids[&1].page83.starts_with("4d53465420202020") && ids[&1].page83.len() == 48);
    assert_ne!(ids[&1].page83, ids[&2].page83);
    assert_eq!(h.entry(K).unwrap(), Some(Entry::Dir));
    assert_eq!(
        h.run(|node| node.list_volumes_on_disk(0, 0)).unwrap().len(),
        2
    );
    assert_eq!(
        h.run(|node| node.get_disk_stats(0)).unwrap(),
        128 * GIB as i64
    );
    ok_invariants(&h);
}

#[test]
fn ids_are_deterministic_per_seed() {
    let a = host();
    let b = host();
    assert_eq!(c_volume(&a), c_volume(&b));
    assert_eq!(
        a.run(|node| node.list_disk_ids()).unwrap(),
        b.run(|node| node.list_disk_ids()).unwrap()
    );
    let dir = tempfile::tempdir().unwrap();
    let c = Host::new(HostConfig {
        id_seed: 99,
        ..HostConfig::new(dir.path())
    })
    .unwrap();
    assert_ne!(c_volume(&a), c_volume(&c));
}

// ---------------------------------------------------------------- disk group

#[test]
fn partition_disk_gpt_worked_example_and_idempotency() {
    let h = host();
    let (n, _) = h.attach_disk(DiskSpec::new(GIB)).unwrap();
    assert_eq!(n, 3);
    h.run(|node| node.partition_disk(n)).unwrap();
    let d = h.snapshot().disk(n).unwrap().clone();
    assert_eq!(d.partition_style, PartitionStyle::Gpt);
    assert_eq!(d.partitions.len(), 2);
    assert_eq!(
        (d.partitions[0].offset, d.partitions[0].size),
        (17408, 16759808)
    );
    assert_eq!(d.partitions[0].kind, PartitionType::Gpt(GPT_MSR.into()));
    assert_eq!(
        (d.partitions[1].offset, d.partitions[1].size),
        (16777216, 1056947712)
    );
    assert!(d.partitions[1].is_online && d.partitions[1].drive_letter.is_none());
    let id = d.partitions[1].volume.clone().unwrap();
    assert!(id.starts_with(r"\\?\Volume{") && id.ends_with(r"}\"));
    assert_eq!(id, id.to_ascii_lowercase().replace("volume", "Volume"));
    assert!(!h.run(|node| node.is_volume_formatted(&id)).unwrap());
    // repeated calls are no-ops
    let before = h.snapshot();
    h.run(|node| node.partition_disk(n)).unwrap();
    h.run(|node| node.partition_disk(n)).unwrap();
    assert_eq!(h.snapshot(), before);
    assert_eq!(
        h.run(|node| node.list_volumes_on_disk(n, 0)).unwrap(),
        std::slice::from_ref(&id)
    );
    assert_eq!(
        h.run(|node| node.list_volumes_on_disk(n, 1)).unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(h.run(|node| node.list_volumes_on_disk(n, 2)).unwrap(), [id]);
    // the OS disk already has basic partitions: untouched
    let os = h.snapshot().disk(0).unwrap().clone();
    h.run(|node| node.partition_disk(0)).unwrap();
    assert_eq!(h.snapshot().disk(0).unwrap(), &os);
    ok_invariants(&h);
}

#[test]
fn partition_disk_10gib_example() {
    let h = host();
    let (n, _) = h.attach_disk(DiskSpec::new(10 * GIB)).unwrap();
    h.run(|node| node.partition_disk(n)).unwrap();
    let p = h.snapshot().disk(n).unwrap().partitions[1].clone();
    assert_eq!((p.offset, p.size), (16777216, 10720624128));
}

#[test]
fn partition_disk_errors() {
    let h = host();
    assert_eq!(
        msg(h.run(|node| node.partition_disk(9))),
        "error checking initialized status of disk 9: failed to query disk 9. error: not found"
    );
    let (n, _) = h
        .attach_disk(DiskSpec {
            offline: true,
            ..DiskSpec::new(GIB)
        })
        .unwrap();
    assert_eq!(
        msg(h.run(|node| node.partition_disk(n))),
        format!(
            "failed to initializing disk {n}: error: WMI MSFT_Disk.Initialize failed (target=MSFT_Disk (Number = {n})): code=41001"
        )
    );
    let (m, _) = h
        .attach_disk(DiskSpec {
            partition_style: PartitionStyle::Mbr,
            ..DiskSpec::new(GIB)
        })
        .unwrap();
    assert_eq!(
        msg(h.run(|node| node.partition_disk(m))),
        format!(
            "error creating partition on disk {m}. err: WMI MSFT_Disk.CreatePartition failed (target=MSFT_Disk (Number = {m})): code=5"
        )
    );
    // partitioned but offline: no change, OK
    h.run(|node| node.partition_disk(1)).unwrap();
    h.run(|node| node.set_disk_state(1, false)).unwrap();
    h.run(|node| node.partition_disk(1)).unwrap();
}

#[test]
fn disk_state_and_stats() {
    let h = host();
    assert!(h.run(|node| node.get_disk_state(1)).unwrap());
    h.set_disk_offline(1, true).unwrap(); // behind the proxy's back
    assert!(!h.run(|node| node.get_disk_state(1)).unwrap());
    h.run(|node| node.set_disk_state(1, true)).unwrap();
    assert!(h.run(|node| node.get_disk_state(1)).unwrap());
    h.run(|node| node.set_disk_state(1, true)).unwrap(); // same state: silent success
    h.run(|node| node.set_disk_state(1, false)).unwrap();
    assert!(h.snapshot().disk(1).unwrap().is_offline);
    assert_eq!(
        h.run(|node| node.get_disk_stats(1)).unwrap(),
        32 * GIB as i64
    ); // offline disks report size
    assert_eq!(
        msg(h.run(|node| node.get_disk_state(7))),
        "failed to query disk 7. error: not found"
    );
    assert_eq!(
        msg(h.run(|node| node.get_disk_stats(7))),
        "failed to query disk 7. error: not found"
    );
    assert_eq!(
        msg(h.run(|node| node.set_disk_state(7, true))),
        "failed to query disk 7. error: not found"
    );
    assert_eq!(
        msg(h.run(|node| node.set_disk_state(0, false))),
        "setting disk 0 attach state (isOnline: false): error: WMI MSFT_Disk.Offline failed (target=MSFT_Disk (Number = 0)): code=41003"
    );
    h.grow_disk(1, 64 * GIB).unwrap();
    assert_eq!(
        h.run(|node| node.get_disk_stats(1)).unwrap(),
        64 * GIB as i64
    );
}

#[test]
fn disk_ids_probe_errors_rescan_and_lookup_by_name() {
    let h = host();
    let (n, _) = h
        .attach_disk(DiskSpec {
            location: Some("PCI Slot 3 : Adapter 0 : Port 0 : Target 2 : LUN 0".into()),
            page83: Some(storage::Page83::Ascii(b"Google  pvc-7d0c".to_vec())),
            serial_number: Some(" ".repeat(20)),
            needs_rescan: true,
            ..DiskSpec::new(10 * GIB)
        })
        .unwrap();
    assert!(
        !h.run(|node| node.list_disk_locations())
            .unwrap()
            .contains_key(&n)
    );
    assert_eq!(
        msg(h.run(|node| node.get_disk_stats(n))),
        format!("failed to query disk {n}. error: not found")
    );
    h.run(|node| node.rescan()).unwrap();
    assert_eq!(
        h.run(|node| node.list_disk_locations()).unwrap()[&n].target,
        "2"
    );
    let ids = h.run(|node| node.list_disk_ids()).unwrap();
    assert_eq!(ids[&n].page83, "Google  pvc-7d0c");
    assert_eq!(ids[&n].serial_number, " ".repeat(20));
    assert_eq!(
        h.run(|node| node.get_disk_number_by_name("Google  pvc-7d0c"))
            .unwrap(),
        n
    );
    assert_eq!(
        msg(h.run(|node| node.get_disk_number_by_name("nope"))),
        "could not find disk with Page83 ID nope: not found"
    );
    assert_eq!(
        msg(h.run(|node| node.get_disk_number_by_name(""))),
        "could not find disk with Page83 ID : not found"
    );
    // a VHD location is omitted from locations but listed by ids
    let (v, _) = h
        .attach_disk(DiskSpec {
            location: Some(r"C:\t\disk-7.vhdx".into()),
            ..DiskSpec::new(GIB)
        })
        .unwrap();
    assert!(
        !h.run(|node| node.list_disk_locations())
            .unwrap()
            .contains_key(&v)
    );
    assert!(h.run(|node| node.list_disk_ids()).unwrap().contains_key(&v));
    h.set_probe_error(
        1,
        Some("IOCTL_STORAGE_QUERY_PROPERTY failed: Incorrect function.".into()),
    )
    .unwrap();
    assert_eq!(
        msg(h.run(|node| node.list_disk_ids())),
        "IOCTL_STORAGE_QUERY_PROPERTY failed: Incorrect function."
    );
    assert_eq!(
        msg(h.run(|node| node.get_disk_number_by_name("x"))),
        "IOCTL_STORAGE_QUERY_PROPERTY failed: Incorrect function."
    );
    assert!(h.run(|node| node.list_disk_locations()).is_ok());
}

// ---------------------------------------------------------------- volume group

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
        format!(
            "error formatting volume ({c}). error: WMI MSFT_Volume.Format failed (target=MSFT_Volume (UniqueId = \"{c}\")): code=42010"
        )
    );
    h.set_disk_read_only(n, true).unwrap();
    assert!(msg(h.run(|node| node.format_volume(&id))).ends_with("code=41002"));
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
        format!(
            "error resizing volume ({id}). size:{too_big}, finalSize {too_big}, error: WMI MSFT_Partition.Resize failed (target=MSFT_Partition (DiskNumber = {n}, PartitionNumber = 2)): code=4097"
        )
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
    assert!(msg(h.run(|node| node.resize_volume(&id, 0))).ends_with("code=42009"));
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
            .is_some_and(|e| volume::is_mount_point(&e))
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

// ---------------------------------------------------------------- CSI flows

#[test]
fn azure_node_flow_stage_publish_stats_expand_unpublish_unstage() {
    let h = host();
    let staging = format!(r"{K}\plugins\kubernetes.io\csi\disk.csi.azure.com\abc\globalmount");
    let publish = format!(r"{K}\pods\p1\volumes\kubernetes.io~csi\pvc-1\mount");
    // a new data disk on LUN 5 appears only after a rescan
    h.attach_disk(DiskSpec {
        location: Some("Integrated : Adapter 3 : Port 0 : Target 0 : LUN 5".into()),
        needs_rescan: true,
        ..DiskSpec::new(GIB)
    })
    .unwrap();
    let find = |h: &Host| {
        h.run(|node| node.list_disk_locations())
            .unwrap()
            .into_iter()
            .find(|(_, l)| l.lun_id.eq_ignore_ascii_case("5"))
            .map(|(n, _)| n)
    };
    assert_eq!(find(&h), None);
    h.run(|node| node.rescan()).unwrap();
    let n = find(&h).unwrap();
    // NodeStage
    h.run(|node| node.mkdir(&staging)).unwrap();
    h.run(|node| node.partition_disk(n)).unwrap();
    let id = h
        .run(|node| node.list_volumes_on_disk(n, 0))
        .unwrap()
        .remove(0);
    if !h.run(|node| node.is_volume_formatted(&id)).unwrap() {
        h.run(|node| node.format_volume(&id)).unwrap();
    }
    h.run(|node| node.mount_volume(&id, &staging)).unwrap();
    // NodePublish
    h.run(|node| node.mkdir(&publish)).unwrap();
    h.run(|node| node.rmdir(&publish, false)).unwrap();
    h.run(|node| node.create_symlink(&staging, &publish))
        .unwrap();
    assert!(h.run(|node| node.is_symlink(&publish)).unwrap());
    h.write_file(
        &format!(r"{publish}\app.log"),
        &vec![1u8; 10 * MIB as usize],
    )
    .unwrap();
    // NodeGetVolumeStats
    let vid = h
        .run(|node| node.get_volume_id_from_target_path(&publish))
        .unwrap();
    assert_eq!(vid, id);
    let st = h.run(|node| node.get_volume_stats(&vid)).unwrap();
    assert_eq!(st.total_bytes, 1056947712);
    assert_eq!(st.used_bytes, 14 * MIB as i64);
    // NodeExpand after the cloud grew the disk
    h.grow_disk(n, 2 * GIB).unwrap();
    let vid = h
        .run(|node| node.get_volume_id_from_target_path(&staging))
        .unwrap();
    h.run(|node| node.resize_volume(&vid, 0)).unwrap();
    assert_eq!(
        h.run(|node| node.get_volume_stats(&vid))
            .unwrap()
            .total_bytes,
        2130689536
    );
    assert_eq!(
        h.run(|node| node.get_volume_stats(&vid))
            .unwrap()
            .used_bytes,
        14 * MIB as i64
    );
    // NodeUnpublish
    let vid = h
        .run(|node| node.get_volume_id_from_target_path(&publish))
        .unwrap();
    h.run(|node| node.write_volume_cache(&vid)).unwrap();
    h.run(|node| node.rmdir(&publish, false)).unwrap();
    assert!(!h.run(|node| node.path_exists(&publish)).unwrap());
    // NodeUnstage: removing the mount-point directory unmounts
    let vid = h
        .run(|node| node.get_volume_id_from_target_path(&staging))
        .unwrap();
    h.run(|node| node.write_volume_cache(&vid)).unwrap();
    h.run(|node| node.rmdir(&staging, false)).unwrap();
    assert!(!h.run(|node| node.path_exists(&staging)).unwrap());
    assert!(h.snapshot().mount_points.is_empty());
    // the volume and its data are untouched
    assert_eq!(
        h.run(|node| node.get_volume_stats(&id)).unwrap().used_bytes,
        14 * MIB as i64
    );
    ok_invariants(&h);
}

#[test]
fn gce_node_flow_with_offline_unstage_and_restage() {
    let h = host();
    let (n, _) = h
        .attach_disk(DiskSpec {
            location: Some("PCI Slot 3 : Adapter 0 : Port 0 : Target 2 : LUN 0".into()),
            page83: Some(storage::Page83::Ascii(b"Google  pvc-7d0c5a4e".to_vec())),
            serial_number: Some(" ".repeat(20)),
            ..DiskSpec::new(10 * GIB)
        })
        .unwrap();
    let staging = format!(r"{K}\plugins\kubernetes.io\csi\pd.csi.storage.gke.io\9f2c\globalmount");
    let publish = format!(r"{K}\pods\6a1e\volumes\kubernetes.io~csi\pvc-7d0c\mount");
    let stage = |h: &Host| {
        let ids = h.run(|node| node.list_disk_ids()).unwrap();
        let (dn, _) = ids
            .iter()
            .find(|(_, i)| i.page83.split_whitespace().last() == Some("pvc-7d0c5a4e"))
            .unwrap();
        h.run(|node| node.partition_disk(*dn)).unwrap();
        h.run(|node| node.set_disk_state(*dn, true)).unwrap();
        let id = h
            .run(|node| node.list_volumes_on_disk(*dn, 0))
            .unwrap()
            .remove(0);
        if !h.run(|node| node.is_volume_formatted(&id)).unwrap() {
            h.run(|node| node.format_volume(&id)).unwrap();
        }
        h.run(|node| node.mkdir(&staging)).unwrap();
        h.run(|node| node.mount_volume(&id, &staging)).unwrap();
        id
    };
    let id = stage(&h);
    assert_eq!(
        h.run(|node| node.get_volume_stats(&id))
            .unwrap()
            .total_bytes,
        10720624128
    );
    h.run(|node| {
        node.mkdir(&format!(
            r"{K}\pods\6a1e\volumes\kubernetes.io~csi\pvc-7d0c"
        ))
    })
    .unwrap();
    h.run(|node| node.create_symlink(&staging, &publish))
        .unwrap();
    h.write_file(&format!(r"{publish}\keep.txt"), b"data")
        .unwrap();
    // unpublish, unstage (GCE)
    h.run(|node| node.rmdir(&publish, false)).unwrap();
    assert!(h.run(|node| node.path_exists(&staging)).unwrap());
    let vid = h
        .run(|node| node.get_volume_id_from_target_path(&staging))
        .unwrap();
    h.run(|node| node.unmount_volume(&vid, &staging)).unwrap();
    h.run(|node| node.rmdir(&staging, false)).unwrap();
    let dn = h
        .run(|node| node.get_disk_number_from_volume_id(&vid))
        .unwrap();
    assert_eq!(dn, n);
    h.run(|node| node.set_disk_state(dn, false)).unwrap();
    ok_invariants(&h);
    // restage: same id, data kept, no reformat
    let id2 = stage(&h);
    assert_eq!(id2, id);
    assert_eq!(
        h.read_file(&format!(r"{staging}\keep.txt")).unwrap(),
        b"data"
    );
    ok_invariants(&h);
}

// ---------------------------------------------------------------- filesystem group

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
        Some(Entry::Link(namespace::Link {
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

// ---------------------------------------------------------------- sandbox safety

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
    namespace::store_link(outside.to_str().unwrap(), &kdir.join("evil")).unwrap();
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

// ---------------------------------------------------------------- detach, seeds, concurrency

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
fn seed_from_toml() {
    let toml = r#"
        [[disks]]
        number = 0
        location = "PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0"
        page83 = "ascii:Google  persistent-disk-0"
        serial = "                    "
        size = 107374182400
        partition_style = "gpt"
        auto_msr = false
        system = true

        [[disks]]
        number = 1
        location = "PCI Slot 3 : Adapter 0 : Port 0 : Target 2 : LUN 0"
        page83 = "Google  pvc-7d0c5a4e-1b2f-4a6e-9d3c-2e8f6b1a0c55"
        size = 10737418240

        [[disks]]
        number = 4
        page83 = "hex:4d534654202020208956a91dadfe3d48865f9b9bcbdb8d3e"
        size = 1073741824
        online = false

        [[volumes]]
        disk = 0
        kind = "efi"
        size = 104857600
        fs = "fat32"
        system = true

        [[volumes]]
        disk = 0
        kind = "msr"
        size = 16777216

        [[volumes]]
        disk = 0
        fs = "ntfs"
        drive_letter = "C"
        id = '\\?\Volume{5A9D0000-1111-4222-8333-444455556666}\'
        system = true
    "#;
    let seed = NodeSeed::from_toml_str(toml).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let h = Host::new(HostConfig {
        seed: Some(seed),
        ..HostConfig::new(dir.path())
    })
    .unwrap();
    let c = r"\\?\Volume{5a9d0000-1111-4222-8333-444455556666}\";
    assert_eq!(
        h.run(|node| node.get_closest_volume_id_from_target_path(K))
            .unwrap(),
        c
    );
    let ids = h.run(|node| node.list_disk_ids()).unwrap();
    assert_eq!(ids[&0].page83, "Google  persistent-disk-0");
    assert_eq!(ids[&0].serial_number.len(), 20);
    assert_eq!(
        ids[&4].page83,
        "4d534654202020208956a91dadfe3d48865f9b9bcbdb8d3e"
    );
    assert!(!h.run(|node| node.get_disk_state(4)).unwrap());
    assert_eq!(h.list_locations_lun(1), "0");
    let d0 = h.snapshot().disk(0).unwrap().clone();
    assert_eq!(d0.partitions.len(), 3);
    assert_eq!(
        (d0.partitions[0].offset, d0.partitions[0].size),
        (MIB, 100 * MIB)
    );
    assert_eq!(h.snapshot().volume(c).unwrap().fs, FileSystem::Ntfs);
    h.run(|node| node.partition_disk(1)).unwrap();
    assert_eq!(
        h.snapshot().disk(1).unwrap().partitions[1].size,
        10720624128
    );
    ok_invariants(&h);
}

impl Host {
    fn list_locations_lun(&self, n: u32) -> String {
        self.run(|node| node.list_disk_locations()).unwrap()[&n]
            .lun_id
            .clone()
    }
}

#[test]
fn seed_errors_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let build = |toml: &str| -> String {
        let r = NodeSeed::from_toml_str(toml).and_then(|s| {
            Host::new(HostConfig {
                seed: Some(s),
                ..HostConfig::new(dir.path())
            })
        });
        r.unwrap_err().message().to_string()
    };
    assert!(
        build("[[disks]]\nsize = 1000\n")
            .starts_with("disks[0].size: must be a positive multiple of 512")
    );
    assert!(
        build("[[disks]]\nsize = 1024\npartition_style = \"zfs\"\n")
            .starts_with("disks[0].partition_style:")
    );
    assert!(
        build("[[disks]]\nsize = 1024\npage83 = \"hex:abc\"\n").starts_with("disks[0].page83:")
    );
    let e = build("[[disks]]\nsize = 1073741824\n[[volumes]]\ndisk = 3\n");
    assert!(
        e.starts_with("volumes[0].disk: disk 3 is not defined"),
        "{e}"
    );
    let e = build(
        "[[disks]]\nsize = 1073741824\npartition_style = \"gpt\"\n[[volumes]]\ndisk = 0\nfs = \"zfs\"\n",
    );
    assert!(e.starts_with("volumes[0].fs:"), "{e}");
    let e = build(
        "[[disks]]\nsize = 1073741824\npartition_style = \"gpt\"\n[[volumes]]\ndisk = 0\ndrive_letter = \"CD\"\n",
    );
    assert!(e.starts_with("volumes[0].drive_letter:"), "{e}");
    let e = build(
        "[[disks]]\nsize = 1073741824\npartition_style = \"gpt\"\n[[volumes]]\ndisk = 0\nsize = 4294967296\n",
    );
    assert!(
        e.starts_with("volumes[0].size:") && e.ends_with("code=40000"),
        "{e}"
    );
    let e = build("[[disks]]\nsizee = 1\n");
    assert!(e.contains("sizee"), "{e}");
    let e = build("[[disks]]\nnumber = 1\n");
    assert!(e.contains("size"), "{e}");
}

#[test]
fn concurrency_smoke() {
    let h = host();
    let mut threads = Vec::new();
    for t in 0..6u32 {
        let h = h.host.clone();
        threads.push(std::thread::spawn(move || {
            for i in 0..8u32 {
                let (n, _) = h.attach_disk(DiskSpec::new(GIB)).unwrap();
                h.run(|node| node.partition_disk(n)).unwrap();
                let id = h
                    .run(|node| node.list_volumes_on_disk(n, 0))
                    .unwrap()
                    .remove(0);
                h.run(|node| node.format_volume(&id)).unwrap();
                let m = format!(r"{K}\t{t}\m{i}");
                h.run(|node| node.mkdir(&m)).unwrap();
                h.run(|node| node.mount_volume(&id, &m)).unwrap();
                assert_eq!(
                    h.run(|node| node.get_volume_id_from_target_path(&m))
                        .unwrap(),
                    id
                );
                h.write_file(&format!(r"{m}\f"), b"abc").unwrap();
                if i % 2 == 0 {
                    h.run(|node| node.unmount_volume(&id, &m)).unwrap();
                    h.run(|node| node.rmdir(&m, false)).unwrap();
                    h.run(|node| node.set_disk_state(n, false)).unwrap();
                } else {
                    h.detach_disk(n).unwrap();
                }
                let _ = h.run(|node| node.list_disk_ids()).unwrap();
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    ok_invariants(&h);
    let snap = h.snapshot();
    assert_eq!(snap.disks.len(), 3 + 6 * 4);
    assert_eq!(snap.mount_points.len(), 6 * 4);
    assert!(snap.mount_points.iter().all(|m| !m.volume_exists));
}

#[test]
fn host_is_shareable_across_threads() {
    fn assert_bounds<T: Clone + Send + Sync + 'static>() {}
    assert_bounds::<Host>();
    let h = host();
    let shared = h.host.clone();
    std::thread::spawn(move || {
        assert_eq!(
            shared.run(|node| node.get_disk_stats(1)).unwrap(),
            32 * GIB as i64
        );
        assert_eq!(
            shared.run(|node| node.list_volumes_on_disk(1, 0)).unwrap(),
            Vec::<String>::new()
        );
        assert!(shared.run(|node| node.path_exists(K)).unwrap());
    })
    .join()
    .unwrap();
}

/// Links as the host stores them (a symlink on Unix, a marker file on
/// Windows) are links everywhere: never files, never followed by the host.
#[test]
fn stored_links_are_links_not_files() {
    use super::namespace::{LINK_FILE_MAGIC, Link, remove_link, store_link, stored_link};
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("l");
    let content = namespace::link_content(LinkKind::Dir, r"C:\var");
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
    let mut data = namespace::LINK_FILE_MAGIC.to_vec();
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

/// The SMB seam: a UNC resolver supplied through the context, and a
/// directory link whose target is a UNC path.
#[test]
fn unc_paths_resolve_through_the_hook() {
    use super::namespace::{Ctx, UncResolver};
    use super::path::{Win32Error, WinPath};
    struct OneShare(std::path::PathBuf);
    impl UncResolver for OneShare {
        fn share_root(&self, server: &str, share: &str) -> Result<std::path::PathBuf, Win32Error> {
            if server.eq_ignore_ascii_case("srv") && share.eq_ignore_ascii_case("share") {
                Ok(self.0.clone())
            } else {
                Err(Win32Error::new(Win32Error::BAD_NET_NAME))
            }
        }
    }
    struct Escape;
    impl UncResolver for Escape {
        fn share_root(&self, _: &str, _: &str) -> Result<std::path::PathBuf, Win32Error> {
            Ok(std::path::PathBuf::from("/etc"))
        }
    }
    let h = host();
    let node = h.lock();
    let share_dir = node.ns.sandbox().join("smb").join("srv").join("share");
    std::fs::create_dir_all(&share_dir).unwrap();
    std::fs::write(share_dir.join("hello.txt"), b"hi").unwrap();
    let resolver = OneShare(share_dir);
    let ctx = Ctx {
        volumes: &node.storage,
        unc: &resolver,
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
    // a resolver pointing outside the sandbox is refused
    let bad = Ctx {
        volumes: &node.storage,
        unc: &Escape,
    };
    assert_eq!(
        node.ns.lstat(bad, &direct).unwrap_err().code(),
        Win32Error::ACCESS_DENIED
    );
}

#[test]
fn read_only_raw_disk_cannot_be_partitioned() {
    let h = host();
    let (n, _) = h
        .attach_disk(DiskSpec {
            read_only: true,
            ..DiskSpec::new(GIB)
        })
        .unwrap();
    assert_eq!(
        msg(h.run(|node| node.partition_disk(n))),
        format!(
            "failed to initializing disk {n}: error: WMI MSFT_Disk.Initialize failed (target=MSFT_Disk (Number = {n})): code=41002"
        )
    );
    h.set_disk_read_only(n, false).unwrap();
    h.run(|node| node.partition_disk(n)).unwrap();
    assert_eq!(
        h.run(|node| node.list_volumes_on_disk(n, 0)).unwrap().len(),
        1
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
