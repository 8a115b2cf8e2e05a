//! The default node and its identifiers.

use super::*;

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
