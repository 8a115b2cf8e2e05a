//! The disk group's operations.

use super::*;

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
        format!("failed to initializing disk {n}: result 41003, error: %!w(<nil>)")
    );
    let (m, _) = h
        .attach_disk(DiskSpec {
            partition_style: PartitionStyle::Mbr,
            ..DiskSpec::new(GIB)
        })
        .unwrap();
    assert_eq!(
        msg(h.run(|node| node.partition_disk(m))),
        format!("error creating partition on disk {m}. result: 5, err: <nil>")
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
        "setting disk 0 attach state (isOnline: false): result 41009, error: %!w(<nil>)"
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
            page83: Some(crate::host::storage::Page83::Ascii(
                b"Google  pvc-7d0c".to_vec(),
            )),
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
        format!("failed to initializing disk {n}: result 41002, error: %!w(<nil>)")
    );
    h.set_disk_read_only(n, false).unwrap();
    h.run(|node| node.partition_disk(n)).unwrap();
    assert_eq!(
        h.run(|node| node.list_volumes_on_disk(n, 0)).unwrap().len(),
        1
    );
}
