//! Disks a cloud attaches, detaches and grows while the node runs.

use super::*;
use crate::host::hotplug::DATA_DISK_LUNS;

fn lun_of(h: &Host, n: u32) -> Option<String> {
    h.run(|node| node.list_disk_locations())
        .unwrap()
        .get(&n)
        .map(|l| l.lun_id.clone())
}

/// A disk of 1 GiB attached, listed by a rescan, partitioned, its volume
/// formatted and mounted at a staging path: the disk, the volume's id and
/// the path.
fn mounted_disk(h: &Host) -> (HotDisk, String, String) {
    let d = h.hot_attach(HotAttach::new(GIB)).unwrap();
    h.run(|node| node.rescan()).unwrap();
    h.run(|node| node.partition_disk(d.number)).unwrap();
    let id = h
        .run(|node| node.list_volumes_on_disk(d.number, 0))
        .unwrap()
        .remove(0);
    h.run(|node| node.format_volume(&id)).unwrap();
    let staging = format!(r"{K}\plugins\cloud\globalmount");
    h.run(|node| node.mkdir(&staging)).unwrap();
    h.run(|node| node.mount_volume(&id, &staging)).unwrap();
    (d, id, staging)
}

#[test]
fn attached_disk_takes_the_lowest_free_lun_and_shows_after_a_rescan() {
    let h = host();
    // the default node uses LUN 0 (OS disk), 1 and 2
    let a = h.hot_attach(HotAttach::new(GIB)).unwrap();
    assert_eq!((a.number, a.lun), (3, Some(3)));
    assert_eq!(lun_of(&h, a.number), None, "listed before a rescan");
    assert_eq!(
        msg(h.run(|node| node.get_disk_stats(a.number))),
        "failed to query disk 3. error: not found"
    );
    let b = h.hot_attach(HotAttach::new(2 * GIB)).unwrap();
    assert_eq!((b.number, b.lun), (4, Some(4)));
    h.run(|node| node.rescan()).unwrap();
    assert_eq!(lun_of(&h, a.number).as_deref(), Some("3"));
    assert_eq!(lun_of(&h, b.number).as_deref(), Some("4"));
    assert_eq!(
        h.run(|node| node.get_disk_stats(b.number)).unwrap(),
        2 * GIB as i64
    );
    // a detached disk's LUN and number are free again
    h.hot_detach(a.handle).unwrap();
    assert_eq!(lun_of(&h, a.number), None);
    let c = h.hot_attach(HotAttach::new(GIB)).unwrap();
    assert_eq!((c.number, c.lun), (3, Some(3)));
    assert_ne!(c.handle, a.handle);
    assert_eq!(
        h.hot_detach(a.handle),
        Err(HotplugError::UnknownDisk(a.handle.0)),
        "a stale handle detaches nothing"
    );
    assert!(h.snapshot().disk(3).is_some());
    ok_invariants(&h);
}

#[test]
fn every_lun_taken_refuses_the_next_attach() {
    let h = host();
    for _ in 3..DATA_DISK_LUNS {
        h.hot_attach(HotAttach::new(MIB)).unwrap();
    }
    assert_eq!(
        h.hot_attach(HotAttach::new(MIB)),
        Err(HotplugError::NoFreeLun)
    );
    let e = h.hot_attach(HotAttach::new(1000)).unwrap_err();
    assert_eq!(e, HotplugError::NoFreeLun);
    ok_invariants(&h);
}

#[test]
fn a_size_that_is_no_sector_multiple_is_refused() {
    let h = host();
    let e = h.hot_attach(HotAttach::new(GIB + 1)).unwrap_err();
    assert!(matches!(e, HotplugError::Host(_)), "{e:?}");
    assert_eq!(h.snapshot().disks.len(), 3);
}

#[test]
fn detach_is_refused_while_a_volume_of_the_disk_is_mounted() {
    let h = host();
    let (d, id, staging) = mounted_disk(&h);
    assert_eq!(
        h.hot_detach(d.handle),
        Err(HotplugError::Mounted {
            disk: d.number,
            volume: id.clone(),
            path: staging.to_ascii_lowercase().replacen("c:", "C:", 1),
        })
    );
    assert!(h.snapshot().volume(&id).is_some(), "the disk stays");
    h.run(|node| node.unmount_volume(&id, &staging)).unwrap();
    h.hot_detach(d.handle).unwrap();
    assert!(h.snapshot().disk(d.number).is_none());
    assert!(h.snapshot().volume(&id).is_none());
    ok_invariants(&h);
}

#[test]
fn grow_only_grows() {
    let h = host();
    let d = h.hot_attach(HotAttach::new(GIB)).unwrap();
    h.run(|node| node.rescan()).unwrap();
    h.run(|node| node.partition_disk(d.number)).unwrap();
    h.hot_grow(d.handle, 3 * GIB).unwrap();
    assert_eq!(
        h.run(|node| node.get_disk_stats(d.number)).unwrap(),
        3 * GIB as i64
    );
    h.hot_grow(d.handle, 3 * GIB).unwrap();
    assert_eq!(
        h.hot_grow(d.handle, 2 * GIB),
        Err(HotplugError::Shrink {
            disk: d.number,
            size: 3 * GIB,
            requested: 2 * GIB
        })
    );
    assert!(matches!(
        h.hot_grow(d.handle, 3 * GIB + 7),
        Err(HotplugError::Host(_))
    ));
    // the volume can take the new room
    let id = h
        .run(|node| node.list_volumes_on_disk(d.number, 0))
        .unwrap()
        .remove(0);
    h.run(|node| node.resize_volume(&id, 0)).unwrap();
    assert!(h.snapshot().disk(d.number).unwrap().partitions[1].size > 2 * GIB);
    h.hot_detach(d.handle).unwrap();
    assert_eq!(
        h.hot_grow(d.handle, 4 * GIB),
        Err(HotplugError::UnknownDisk(d.handle.0))
    );
    ok_invariants(&h);
}

#[test]
fn a_detached_disk_comes_back_with_its_partitions_volume_and_files() {
    let h = host();
    let (d, id, staging) = mounted_disk(&h);
    h.run(|node| node.mkdir(&format!(r"{staging}\data")))
        .unwrap();
    h.run(|node| node.unmount_volume(&id, &staging)).unwrap();
    let before = h.snapshot().disk(d.number).unwrap().partitions.clone();

    let kept = h.hot_detach(d.handle).unwrap();
    assert!(h.snapshot().volume(&id).is_none(), "gone with its disk");
    ok_invariants(&h);
    // back elsewhere, grown meanwhile, read-only: same partitions and volume
    let mut again = HotAttach::new(2 * GIB);
    again.location = Some("PCI Slot 3 : Adapter 0 : Port 0 : Target 5 : LUN 0".into());
    again.read_only = true;
    let r = h.hot_reattach(kept, again).unwrap();
    assert_eq!(r.lun, Some(0));
    assert_eq!(lun_of(&h, r.number), None, "listed after a rescan only");
    h.run(|node| node.rescan()).unwrap();
    let disk = h.snapshot().disk(r.number).unwrap().clone();
    assert_eq!(disk.partitions, before);
    assert_eq!(disk.size, 2 * GIB);
    assert!(disk.is_read_only);
    assert_eq!(
        h.run(|node| node.list_volumes_on_disk(r.number, 0))
            .unwrap(),
        vec![id.clone()]
    );
    assert!(h.run(|node| node.is_volume_formatted(&id)).unwrap());
    h.run(|node| node.mount_volume(&id, &staging)).unwrap();
    assert!(
        h.run(|node| node.path_exists(&format!(r"{staging}\data")))
            .unwrap(),
        "the file written before the detach"
    );
    ok_invariants(&h);
}
