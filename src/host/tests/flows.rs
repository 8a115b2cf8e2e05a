//! Whole CSI node flows as drivers run them.

use super::*;

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
            page83: Some(crate::host::storage::Page83::Ascii(
                b"Google  pvc-7d0c5a4e".to_vec(),
            )),
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
