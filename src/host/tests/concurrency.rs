//! One node shared by threads.

use super::*;

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
