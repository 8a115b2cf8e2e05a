use tonic::Request;

use super::super::disk::tests::{BAD_IDS, Fixture, GIB, ok, unknown};
use crate::host::Host;
use crate::host::storage::{DiskSpec, FileSystem, Page83};

const MIB: u64 = 1 << 20;
const K: &str = r"C:\var\lib\kubelet";
/// The basic partition of a freshly partitioned 1 GiB disk.
const PART_1GIB: i64 = 1056947712;
/// The same partition grown to the maximum on a 2 GiB disk.
const PART_2GIB: i64 = 2130689536;

/// Attaches a 1 GiB GCE-style disk (page83 `Google  <name>`).
fn attach_gce_disk(h: &Host, name: &str) -> u32 {
    h.attach_disk(DiskSpec {
        location: Some("PCI Slot 3 : Adapter 0 : Port 0 : Target 2 : LUN 0".into()),
        page83: Some(Page83::Ascii(format!("Google  {name}").into_bytes())),
        serial_number: Some(" ".repeat(20)),
        ..DiskSpec::new(GIB)
    })
    .unwrap()
    .0
}

fn fs_of(h: &Host, id: &str) -> FileSystem {
    h.snapshot().volume(id).unwrap().fs
}

fn flushes(h: &Host, id: &str) -> u64 {
    h.snapshot().volume(id).unwrap().flushes
}

fn mount_points(h: &Host) -> Vec<(String, String)> {
    h.snapshot()
        .mount_points
        .into_iter()
        .map(|m| (m.path.to_ascii_lowercase(), m.volume_id))
        .collect()
}

fn c_volume(h: &Host) -> String {
    let snap = h.snapshot();
    snap.disk(0)
        .unwrap()
        .partitions
        .iter()
        .find(|p| p.drive_letter == Some('C'))
        .and_then(|p| p.volume.clone())
        .unwrap()
}

// ------------------------------------------------------------ the CSI node flows through v1

#[tokio::test]
async fn v1_node_flow_stage_publish_stats_expand_unpublish_unstage() {
    use crate::disk::v1 as disk;
    use crate::disk::v1::disk_server::Disk;
    use crate::volume::v1::volume_server::Volume;
    use crate::volume::v1::*;
    let f = Fixture::new();
    let (s, h) = (&f.svc, f.host());
    let n = attach_gce_disk(h, "pvc-7d0c5a4e");
    let staging = format!(r"{K}\plugins\kubernetes.io\csi\pd.csi.storage.gke.io\9f2c\globalmount");
    let publish = format!(r"{K}\pods\6a1e\volumes\kubernetes.io~csi\pvc-7d0c\mount");

    // NodeStageVolume (GCE): ListDiskIDs -> PartitionDisk -> SetDiskState(online)
    let ids = ok(s
        .list_disk_i_ds(Request::new(disk::ListDiskIDsRequest {}))
        .await)
    .disk_i_ds;
    let (&dn, _) = ids
        .iter()
        .find(|(_, i)| i.page83.split_whitespace().last() == Some("pvc-7d0c5a4e"))
        .unwrap();
    assert_eq!(dn, n);
    ok(
        s.partition_disk(Request::new(disk::PartitionDiskRequest { disk_number: dn }))
            .await,
    );
    ok(s.set_disk_state(Request::new(disk::SetDiskStateRequest {
        disk_number: dn,
        is_online: true,
    }))
    .await);
    let list = |p| ListVolumesOnDiskRequest {
        disk_number: dn,
        partition_number: p,
    };
    let volume_ids = ok(s.list_volumes_on_disk(Request::new(list(0))).await).volume_ids;
    assert_eq!(volume_ids.len(), 1);
    let id = volume_ids[0].clone();
    assert!(
        id.starts_with(r"\\?\Volume{") && id.ends_with(r"}\"),
        "{id}"
    );
    assert!(
        ok(s.list_volumes_on_disk(Request::new(list(1))).await)
            .volume_ids
            .is_empty()
    );
    assert_eq!(
        ok(s.list_volumes_on_disk(Request::new(list(2))).await).volume_ids,
        std::slice::from_ref(&id)
    );
    let formatted = |id: &str| IsVolumeFormattedRequest {
        volume_id: id.into(),
    };
    assert!(!ok(s.is_volume_formatted(Request::new(formatted(&id))).await).formatted);
    ok(s.format_volume(Request::new(FormatVolumeRequest {
        volume_id: id.clone(),
    }))
    .await);
    assert_eq!(fs_of(h, &id), FileSystem::Ntfs);
    assert!(ok(s.is_volume_formatted(Request::new(formatted(&id))).await).formatted);
    h.run(|node| node.mkdir(&staging)).unwrap();
    let mount = MountVolumeRequest {
        volume_id: id.clone(),
        target_path: staging.clone(),
    };
    ok(s.mount_volume(Request::new(mount.clone())).await);
    assert_eq!(
        mount_points(h),
        [(staging.to_ascii_lowercase(), id.clone())]
    );
    // same volume, same path: idempotent
    ok(s.mount_volume(Request::new(mount)).await);
    assert_eq!(mount_points(h).len(), 1);

    // NodePublishVolume: publish becomes a directory symlink to staging
    h.run(|node| {
        node.mkdir(&format!(
            r"{K}\pods\6a1e\volumes\kubernetes.io~csi\pvc-7d0c"
        ))
    })
    .unwrap();
    h.run(|node| node.create_symlink(&staging, &publish))
        .unwrap();
    h.write_file(
        &format!(r"{publish}\data.bin"),
        &vec![7u8; 10 * MIB as usize],
    )
    .unwrap();

    // NodeGetVolumeStats
    let by_path = |p: &str| GetVolumeIdFromTargetPathRequest {
        target_path: p.into(),
    };
    let stats_of = |id: &str| GetVolumeStatsRequest {
        volume_id: id.into(),
    };
    let vid = ok(s
        .get_volume_id_from_target_path(Request::new(by_path(&publish)))
        .await)
    .volume_id;
    assert_eq!(vid, id);
    let stats = ok(s.get_volume_stats(Request::new(stats_of(&vid))).await);
    assert_eq!(stats.total_bytes, PART_1GIB);
    let used = h.snapshot().volume(&id).unwrap().used as i64;
    assert_eq!(stats.used_bytes, used);
    assert!(used >= 10 * MIB as i64);

    // NodeExpandVolume after the disk grew
    h.grow_disk(n, 2 * GIB).unwrap();
    let vid = ok(s
        .get_volume_id_from_target_path(Request::new(by_path(&staging)))
        .await)
    .volume_id;
    ok(s.resize_volume(Request::new(ResizeVolumeRequest {
        volume_id: vid.clone(),
        size_bytes: 0,
    }))
    .await);
    let stats = ok(s.get_volume_stats(Request::new(stats_of(&vid))).await);
    assert_eq!(stats.total_bytes, PART_2GIB);
    assert_eq!(stats.used_bytes, used);
    assert_eq!(
        h.snapshot().disk(n).unwrap().partitions[1].size as i64,
        PART_2GIB
    );

    // NodeUnpublishVolume
    let vid = ok(s
        .get_volume_id_from_target_path(Request::new(by_path(&publish)))
        .await)
    .volume_id;
    let before = flushes(h, &vid);
    ok(s.write_volume_cache(Request::new(WriteVolumeCacheRequest {
        volume_id: vid.clone(),
    }))
    .await);
    assert_eq!(flushes(h, &vid), before + 1);
    h.run(|node| node.rmdir(&publish, false)).unwrap();
    assert!(!h.run(|node| node.path_exists(&publish)).unwrap());

    // NodeUnstageVolume (GCE): unmount, rmdir, disk offline
    let vid = ok(s
        .get_volume_id_from_target_path(Request::new(by_path(&staging)))
        .await)
    .volume_id;
    let unmount = UnmountVolumeRequest {
        volume_id: vid.clone(),
        target_path: staging.clone(),
    };
    ok(s.unmount_volume(Request::new(unmount.clone())).await);
    assert!(mount_points(h).is_empty());
    // not idempotent
    assert_eq!(
        unknown(s.unmount_volume(Request::new(unmount)).await),
        format!(
            "error umount volume ({vid}) from path {staging}. error: The file or directory is not a reparse point."
        )
    );
    h.run(|node| node.rmdir(&staging, false)).unwrap();
    let dn = ok(s
        .get_disk_number_from_volume_id(Request::new(GetDiskNumberFromVolumeIdRequest {
            volume_id: vid.clone(),
        }))
        .await)
    .disk_number;
    assert_eq!(dn, n);
    ok(s.set_disk_state(Request::new(disk::SetDiskStateRequest {
        disk_number: dn,
        is_online: false,
    }))
    .await);
    assert!(h.snapshot().disk(n).unwrap().is_offline);
    assert!(
        ok(s.list_volumes_on_disk(Request::new(list(0))).await)
            .volume_ids
            .is_empty()
    );
    assert_eq!(
        unknown(s.get_volume_stats(Request::new(stats_of(&vid))).await),
        format!("error querying volume ({vid}). error: failed to query volume {vid}: not found")
    );
    // the volume keeps its id, file system and data while offline
    let snap = h.snapshot();
    let v = snap.volume(&id).unwrap();
    assert_eq!((v.fs, v.used as i64), (FileSystem::Ntfs, used));
    h.check_invariants().unwrap();
}

// ------------------------------------------------------------ the CSI node flows through v1beta2

#[tokio::test]
async fn v1beta2_node_flow_with_old_names_and_string_ids() {
    use crate::disk::v1beta2 as disk;
    use crate::disk::v1beta2::disk_server::Disk;
    use crate::volume::v1beta2::volume_server::Volume;
    use crate::volume::v1beta2::*;
    let f = Fixture::new();
    let (s, h) = (&f.svc, f.host());
    let n = attach_gce_disk(h, "pvc-1b2f");
    let staging = format!(r"{K}\plugins\kubernetes.io\csi\pd.csi.storage.gke.io\77aa\globalmount");
    let publish = format!(r"{K}\pods\p2\volumes\kubernetes.io~csi\pvc-1b2f\mount");

    // NodeStageVolume
    let ids = ok(s
        .list_disk_i_ds(Request::new(disk::ListDiskIDsRequest {}))
        .await)
    .disk_i_ds;
    let (key, _) = ids
        .iter()
        .find(|(_, i)| i.identifiers["page83"].ends_with("pvc-1b2f"))
        .unwrap();
    assert_eq!(key, &n.to_string());
    ok(s.partition_disk(Request::new(disk::PartitionDiskRequest {
        disk_id: key.clone(),
    }))
    .await);
    ok(
        s.set_attach_state(Request::new(disk::SetAttachStateRequest {
            disk_id: key.clone(),
            is_online: true,
        }))
        .await,
    );
    let volume_ids = ok(s
        .list_volumes_on_disk(Request::new(ListVolumesOnDiskRequest {
            disk_id: key.clone(),
        }))
        .await)
    .volume_ids;
    assert_eq!(volume_ids.len(), 1);
    let id = volume_ids[0].clone();
    let formatted = |id: &str| IsVolumeFormattedRequest {
        volume_id: id.into(),
    };
    assert!(!ok(s.is_volume_formatted(Request::new(formatted(&id))).await).formatted);
    ok(s.format_volume(Request::new(FormatVolumeRequest {
        volume_id: id.clone(),
    }))
    .await);
    assert!(ok(s.is_volume_formatted(Request::new(formatted(&id))).await).formatted);
    h.run(|node| node.mkdir(&staging)).unwrap();
    ok(s.mount_volume(Request::new(MountVolumeRequest {
        volume_id: id.clone(),
        path: staging.clone(),
    }))
    .await);
    assert_eq!(
        mount_points(h),
        [(staging.to_ascii_lowercase(), id.clone())]
    );

    // NodePublishVolume
    h.run(|node| node.mkdir(&format!(r"{K}\pods\p2\volumes\kubernetes.io~csi\pvc-1b2f")))
        .unwrap();
    h.run(|node| node.create_symlink(&staging, &publish))
        .unwrap();

    // NodeGetVolumeStats: GetVolumeIDFromMount -> VolumeStats
    let from_mount = |p: &str| VolumeIdFromMountRequest { mount: p.into() };
    let vid = ok(s
        .get_volume_id_from_mount(Request::new(from_mount(&publish)))
        .await)
    .volume_id;
    assert_eq!(vid, id);
    let stats = ok(s
        .volume_stats(Request::new(VolumeStatsRequest {
            volume_id: vid.clone(),
        }))
        .await);
    assert_eq!(stats.volume_size, PART_1GIB);
    assert_eq!(
        stats.volume_used_size,
        h.snapshot().volume(&id).unwrap().used as i64
    );

    // NodeExpandVolume
    h.grow_disk(n, 2 * GIB).unwrap();
    ok(s.resize_volume(Request::new(ResizeVolumeRequest {
        volume_id: vid.clone(),
        size: 0,
    }))
    .await);
    let stats = ok(s
        .volume_stats(Request::new(VolumeStatsRequest {
            volume_id: vid.clone(),
        }))
        .await);
    assert_eq!(stats.volume_size, PART_2GIB);

    // NodeUnpublishVolume
    let before = flushes(h, &vid);
    ok(s.write_volume_cache(Request::new(WriteVolumeCacheRequest {
        volume_id: vid.clone(),
    }))
    .await);
    assert_eq!(flushes(h, &vid), before + 1);
    h.run(|node| node.rmdir(&publish, false)).unwrap();

    // NodeUnstageVolume
    let vid = ok(s
        .get_volume_id_from_mount(Request::new(from_mount(&staging)))
        .await)
    .volume_id;
    ok(s.dismount_volume(Request::new(DismountVolumeRequest {
        volume_id: vid.clone(),
        path: staging.clone(),
    }))
    .await);
    assert!(mount_points(h).is_empty());
    h.run(|node| node.rmdir(&staging, false)).unwrap();
    let dn = ok(s
        .get_volume_disk_number(Request::new(VolumeDiskNumberRequest {
            volume_id: vid.clone(),
        }))
        .await)
    .disk_number;
    assert_eq!(dn, i64::from(n));
    ok(
        s.set_attach_state(Request::new(disk::SetAttachStateRequest {
            disk_id: dn.to_string(),
            is_online: false,
        }))
        .await,
    );
    assert!(h.snapshot().disk(n).unwrap().is_offline);
    assert!(
        ok(
            s.list_volumes_on_disk(Request::new(ListVolumesOnDiskRequest {
                disk_id: key.clone()
            }))
            .await
        )
        .volume_ids
        .is_empty()
    );
    h.check_invariants().unwrap();
}

// ------------------------------------------------------------ old-version conversions

#[tokio::test]
async fn v1beta2_forward_wrapping_and_unwrapped_rpcs() {
    use crate::volume::v1beta2::volume_server::Volume;
    use crate::volume::v1beta2::*;
    let f = Fixture::new();
    let s = &f.svc;
    const NOPE: &str = r"\\?\Volume{00000000-0000-0000-0000-000000000000}\";
    let not_found =
        format!("error querying volume ({NOPE}). error: failed to query volume {NOPE}: not found");

    // wrapped: the four RPCs forwarded under a newer name
    assert_eq!(
        unknown(
            s.dismount_volume(Request::new(DismountVolumeRequest {
                volume_id: "".into(),
                path: r"C:\x".into(),
            }))
            .await
        ),
        "Forward to UnmountVolume failed, err=volume id empty"
    );
    assert_eq!(
        unknown(
            s.dismount_volume(Request::new(DismountVolumeRequest {
                volume_id: NOPE.into(),
                path: r"C:\x".into(),
            }))
            .await
        ),
        format!("Forward to UnmountVolume failed, err={not_found}")
    );
    assert_eq!(
        unknown(
            s.dismount_volume(Request::new(DismountVolumeRequest {
                volume_id: NOPE.into(),
                path: "".into(),
            }))
            .await
        ),
        "Forward to UnmountVolume failed, err=target path empty"
    );
    assert_eq!(
        unknown(
            s.volume_stats(Request::new(VolumeStatsRequest {
                volume_id: NOPE.into()
            }))
            .await
        ),
        format!("Forward to GetVolumeStats failed, err={not_found}")
    );
    assert_eq!(
        unknown(
            s.volume_stats(Request::new(VolumeStatsRequest {
                volume_id: "".into()
            }))
            .await
        ),
        "Forward to GetVolumeStats failed, err=volume id empty"
    );
    assert_eq!(
        unknown(
            s.get_volume_disk_number(Request::new(VolumeDiskNumberRequest {
                volume_id: NOPE.into()
            }))
            .await
        ),
        format!(
            "Forward to GetDiskNumberFromVolumeID failed, err=failed to query volume {NOPE}: not found"
        )
    );
    assert_eq!(
        unknown(
            s.get_volume_id_from_mount(Request::new(VolumeIdFromMountRequest { mount: "".into() }))
                .await
        ),
        "Forward to GetVolumeIDFromTargetPath failed, err=target path is empty"
    );
    assert_eq!(
        unknown(
            s.get_volume_id_from_mount(Request::new(VolumeIdFromMountRequest { mount: K.into() }))
                .await
        ),
        "Forward to GetVolumeIDFromTargetPath failed, err=not a mounted folder"
    );

    // not wrapped: same name and shape as the internal op
    assert_eq!(
        unknown(
            s.mount_volume(Request::new(MountVolumeRequest {
                volume_id: "".into(),
                path: "".into(),
            }))
            .await
        ),
        "MountVolumeRequest.VolumeId is empty"
    );
    assert_eq!(
        unknown(
            s.mount_volume(Request::new(MountVolumeRequest {
                volume_id: NOPE.into(),
                path: "".into(),
            }))
            .await
        ),
        "MountVolumeRequest.TargetPath is empty"
    );
    assert_eq!(
        unknown(
            s.is_volume_formatted(Request::new(IsVolumeFormattedRequest {
                volume_id: NOPE.into()
            }))
            .await
        ),
        not_found
    );
    assert_eq!(
        unknown(
            s.format_volume(Request::new(FormatVolumeRequest {
                volume_id: "".into()
            }))
            .await
        ),
        "volume id empty"
    );
    assert_eq!(
        unknown(
            s.resize_volume(Request::new(ResizeVolumeRequest {
                volume_id: NOPE.into(),
                size: 2 * MIB as i64,
            }))
            .await
        ),
        format!("failed to query volume {NOPE}: not found")
    );
    assert_eq!(
        unknown(
            s.write_volume_cache(Request::new(WriteVolumeCacheRequest {
                volume_id: NOPE.into()
            }))
            .await
        ),
        not_found
    );
}

#[tokio::test]
async fn legacy_list_volumes_bad_ids_and_truncation() {
    let f = Fixture::new();
    let (s, h) = (&f.svc, f.host());
    h.run(|node| node.partition_disk(1)).unwrap();
    let on_disk_1 = h.run(|node| node.list_volumes_on_disk(1, 0)).unwrap();
    assert_eq!(on_disk_1.len(), 1);
    // disk 0: EFI + C: volumes, in partition order, the MSR contributes nothing
    let on_disk_0 = h.run(|node| node.list_volumes_on_disk(0, 0)).unwrap();
    assert_eq!(on_disk_0.len(), 2);
    assert_eq!(on_disk_0[1], c_volume(h));

    macro_rules! check {
        ($v:ident) => {{
            use crate::volume::$v::volume_server::Volume;
            use crate::volume::$v::*;
            let list = |id: &str| Request::new(ListVolumesOnDiskRequest { disk_id: id.into() });
            for (id, parse) in BAD_IDS {
                assert_eq!(
                    unknown(s.list_volumes_on_disk(list(id)).await),
                    format!("Failed to parse diskId: err={parse}"),
                    "{}",
                    stringify!($v)
                );
            }
            assert_eq!(
                ok(s.list_volumes_on_disk(list("4294967297")).await).volume_ids,
                on_disk_1
            );
            assert_eq!(
                ok(s.list_volumes_on_disk(list("01")).await).volume_ids,
                on_disk_1
            );
            // all partitions of disk 0
            assert_eq!(
                ok(s.list_volumes_on_disk(list("0")).await).volume_ids,
                on_disk_0
            );
            assert_eq!(
                ok(s.list_volumes_on_disk(list("4294967296")).await).volume_ids,
                on_disk_0
            );
            // unknown or RAW disk: empty, success
            assert!(
                ok(s.list_volumes_on_disk(list("9")).await)
                    .volume_ids
                    .is_empty()
            );
            assert!(
                ok(s.list_volumes_on_disk(list("2")).await)
                    .volume_ids
                    .is_empty()
            );
        }};
    }
    check!(v1alpha1);
    check!(v1beta1);
    check!(v1beta2);
}

// ------------------------------------------------------------ per version success paths

#[tokio::test]
async fn v1alpha1_format_mount_resize_dismount() {
    use crate::volume::v1alpha1::volume_server::Volume;
    use crate::volume::v1alpha1::*;
    let f = Fixture::new();
    let (s, h) = (&f.svc, f.host());
    let n = attach_gce_disk(h, "pvc-a1");
    h.run(|node| node.partition_disk(n)).unwrap();
    let id = ok(s
        .list_volumes_on_disk(Request::new(ListVolumesOnDiskRequest {
            disk_id: n.to_string(),
        }))
        .await)
    .volume_ids
    .remove(0);
    // v1alpha1 drivers format without asking first
    ok(s.format_volume(Request::new(FormatVolumeRequest {
        volume_id: id.clone(),
    }))
    .await);
    assert_eq!(fs_of(h, &id), FileSystem::Ntfs);
    assert!(
        ok(
            s.is_volume_formatted(Request::new(IsVolumeFormattedRequest {
                volume_id: id.clone()
            }))
            .await
        )
        .formatted
    );
    let mnt = format!(r"{K}\plugins\p\mount-1");
    h.run(|node| node.mkdir(&mnt)).unwrap();
    ok(s.mount_volume(Request::new(MountVolumeRequest {
        volume_id: id.clone(),
        path: mnt.clone(),
    }))
    .await);
    assert_eq!(mount_points(h), [(mnt.to_ascii_lowercase(), id.clone())]);
    // grow the disk, then ask for 1.5 GiB (sector-aligned already)
    h.grow_disk(n, 2 * GIB).unwrap();
    ok(s.resize_volume(Request::new(ResizeVolumeRequest {
        volume_id: id.clone(),
        size: 1610612736,
    }))
    .await);
    assert_eq!(h.snapshot().disk(n).unwrap().partitions[1].size, 1610612736);
    // growth below 100 MiB is a silent no-op
    ok(s.resize_volume(Request::new(ResizeVolumeRequest {
        volume_id: id.clone(),
        size: 1610612736 + 50 * MIB as i64,
    }))
    .await);
    assert_eq!(h.snapshot().disk(n).unwrap().partitions[1].size, 1610612736);
    ok(s.dismount_volume(Request::new(DismountVolumeRequest {
        volume_id: id.clone(),
        path: mnt.clone(),
    }))
    .await);
    assert!(mount_points(h).is_empty());
    assert!(
        h.run(|node| node.path_exists(&mnt)).unwrap(),
        "an empty directory stays"
    );
    assert_eq!(
        unknown(
            s.dismount_volume(Request::new(DismountVolumeRequest {
                volume_id: id.clone(),
                path: mnt.clone(),
            }))
            .await
        ),
        format!(
            "Forward to UnmountVolume failed, err=error umount volume ({id}) from path {mnt}. error: The file or directory is not a reparse point."
        )
    );
}

#[tokio::test]
async fn v1beta1_stats_disk_number_and_volume_from_mount() {
    use crate::volume::v1beta1::volume_server::Volume;
    use crate::volume::v1beta1::*;
    let f = Fixture::new();
    let (s, h) = (&f.svc, f.host());
    let n = attach_gce_disk(h, "pvc-b1");
    h.run(|node| node.partition_disk(n)).unwrap();
    let id = ok(s
        .list_volumes_on_disk(Request::new(ListVolumesOnDiskRequest {
            disk_id: n.to_string(),
        }))
        .await)
    .volume_ids
    .remove(0);
    ok(s.format_volume(Request::new(FormatVolumeRequest {
        volume_id: id.clone(),
    }))
    .await);
    let mnt = format!(r"{K}\plugins\p\mount-2");
    h.run(|node| node.mkdir(&mnt)).unwrap();
    ok(s.mount_volume(Request::new(MountVolumeRequest {
        volume_id: id.clone(),
        path: mnt.clone(),
    }))
    .await);
    let stats = ok(s
        .volume_stats(Request::new(VolumeStatsRequest {
            volume_id: id.clone(),
        }))
        .await);
    assert_eq!(stats.volume_size, PART_1GIB);
    assert_eq!(
        stats.volume_used_size,
        h.snapshot().volume(&id).unwrap().used as i64
    );
    assert_eq!(
        ok(
            s.get_volume_disk_number(Request::new(VolumeDiskNumberRequest {
                volume_id: id.to_uppercase().replace(r"\\?\VOLUME", r"\\?\Volume"),
            }))
            .await
        )
        .disk_number,
        i64::from(n),
        "volume ids match case-insensitively"
    );
    assert_eq!(
        ok(
            s.get_volume_id_from_mount(Request::new(VolumeIdFromMountRequest {
                mount: mnt.clone()
            }))
            .await
        )
        .volume_id,
        id
    );
    // the C: volume answers too
    let c = c_volume(h);
    assert_eq!(
        ok(
            s.get_volume_disk_number(Request::new(VolumeDiskNumberRequest { volume_id: c }))
                .await
        )
        .disk_number,
        0
    );
}

#[tokio::test]
async fn v1beta3_partition_selection_and_negative_cases() {
    use crate::volume::v1beta3::volume_server::Volume;
    use crate::volume::v1beta3::*;
    let f = Fixture::new();
    let (s, h) = (&f.svc, f.host());
    h.run(|node| node.partition_disk(2)).unwrap();
    let id = h
        .run(|node| node.list_volumes_on_disk(2, 0))
        .unwrap()
        .remove(0);
    let list = |d, p| {
        Request::new(ListVolumesOnDiskRequest {
            disk_number: d,
            partition_number: p,
        })
    };
    assert_eq!(
        ok(s.list_volumes_on_disk(list(2, 0)).await).volume_ids,
        std::slice::from_ref(&id)
    );
    assert!(
        ok(s.list_volumes_on_disk(list(2, 1)).await)
            .volume_ids
            .is_empty()
    );
    assert_eq!(
        ok(s.list_volumes_on_disk(list(2, 2)).await).volume_ids,
        std::slice::from_ref(&id)
    );
    assert!(
        ok(s.list_volumes_on_disk(list(2, 3)).await)
            .volume_ids
            .is_empty()
    );
    assert_eq!(
        ok(s.list_volumes_on_disk(list(0, 3)).await).volume_ids,
        [c_volume(h)]
    );
    assert!(
        ok(s.list_volumes_on_disk(list(42, 0)).await)
            .volume_ids
            .is_empty()
    );

    // upstream's negative integration cases: all UNKNOWN
    for bad in ["", "-1"] {
        unknown(
            s.is_volume_formatted(Request::new(IsVolumeFormattedRequest {
                volume_id: bad.into(),
            }))
            .await,
        );
        unknown(
            s.format_volume(Request::new(FormatVolumeRequest {
                volume_id: bad.into(),
            }))
            .await,
        );
        unknown(
            s.resize_volume(Request::new(ResizeVolumeRequest {
                volume_id: bad.into(),
                size_bytes: 2 * MIB as i64,
            }))
            .await,
        );
        unknown(
            s.mount_volume(Request::new(MountVolumeRequest {
                volume_id: bad.into(),
                target_path: "".into(),
            }))
            .await,
        );
        unknown(
            s.unmount_volume(Request::new(UnmountVolumeRequest {
                volume_id: bad.into(),
                target_path: "".into(),
            }))
            .await,
        );
        unknown(
            s.get_volume_stats(Request::new(GetVolumeStatsRequest {
                volume_id: bad.into(),
            }))
            .await,
        );
    }
    // unwrapped texts on the new versions
    assert_eq!(
        unknown(
            s.unmount_volume(Request::new(UnmountVolumeRequest {
                volume_id: "".into(),
                target_path: "".into(),
            }))
            .await
        ),
        "volume id empty"
    );
    assert_eq!(
        unknown(
            s.get_volume_id_from_target_path(Request::new(GetVolumeIdFromTargetPathRequest {
                target_path: "".into()
            }))
            .await
        ),
        "target path is empty"
    );
    assert_eq!(
        unknown(
            s.resize_volume(Request::new(ResizeVolumeRequest {
                volume_id: id.clone(),
                size_bytes: -5,
            }))
            .await
        ),
        format!("invalid negative size -5 for volume ({id})")
    );
    // a RAW volume is not formatted; formatting the system volume is refused
    assert!(
        !ok(s
            .is_volume_formatted(Request::new(IsVolumeFormattedRequest {
                volume_id: id.clone()
            }))
            .await)
        .formatted
    );
    let c = c_volume(h);
    let e = unknown(
        s.format_volume(Request::new(FormatVolumeRequest {
            volume_id: c.clone(),
        }))
        .await,
    );
    assert!(
        e == format!("error formatting volume ({c}). result: 42010, error: <nil>"),
        "{e}"
    );
}

#[tokio::test]
async fn v2alpha1_closest_volume_and_shared_rpcs() {
    use crate::volume::v2alpha1::volume_server::Volume;
    use crate::volume::v2alpha1::*;
    let f = Fixture::new();
    let (s, h) = (&f.svc, f.host());
    let c = c_volume(h);
    h.run(|node| node.partition_disk(1)).unwrap();
    let id = ok(s
        .list_volumes_on_disk(Request::new(ListVolumesOnDiskRequest {
            disk_number: 1,
            partition_number: 0,
        }))
        .await)
    .volume_ids
    .remove(0);
    ok(s.format_volume(Request::new(FormatVolumeRequest {
        volume_id: id.clone(),
    }))
    .await);
    let mnt = format!(r"{K}\plugins\p\mount-3");
    h.run(|node| node.mkdir(&mnt)).unwrap();
    let closest = |p: &str| {
        Request::new(GetClosestVolumeIdFromTargetPathRequest {
            target_path: p.into(),
        })
    };
    // not mounted yet: an ordinary directory on C:
    assert_eq!(
        ok(s.get_closest_volume_id_from_target_path(closest(&mnt))
            .await)
        .volume_id,
        c
    );
    ok(s.mount_volume(Request::new(MountVolumeRequest {
        volume_id: id.clone(),
        target_path: mnt.clone(),
    }))
    .await);
    let deep = format!(r"{mnt}\foo\bar");
    h.run(|node| node.mkdir(&deep)).unwrap();
    assert_eq!(
        ok(s.get_closest_volume_id_from_target_path(closest(&deep))
            .await)
        .volume_id,
        id
    );
    let link = format!(r"{K}\plugins\p\link-3");
    h.run(|node| node.create_symlink(&mnt, &link)).unwrap();
    assert_eq!(
        ok(s.get_closest_volume_id_from_target_path(closest(&link))
            .await)
        .volume_id,
        id
    );
    assert_eq!(
        ok(
            s.get_volume_id_from_target_path(Request::new(GetVolumeIdFromTargetPathRequest {
                target_path: link.clone()
            }))
            .await
        )
        .volume_id,
        id
    );
    assert_eq!(
        unknown(s.get_closest_volume_id_from_target_path(closest("")).await),
        "target path is empty"
    );
    let e = unknown(
        s.get_closest_volume_id_from_target_path(closest(&format!(r"{K}\missing")))
            .await,
    );
    let missing = format!(r"{K}\missing");
    assert_eq!(
        e,
        format!(
            "error getting the closest volume for the path={missing}, err=CreateFile \
                 {missing}: The system cannot find the file specified."
        )
    );
    // the rest of the v1 surface on v2alpha1
    assert_eq!(
        ok(
            s.get_disk_number_from_volume_id(Request::new(GetDiskNumberFromVolumeIdRequest {
                volume_id: id.clone()
            }))
            .await
        )
        .disk_number,
        1
    );
    ok(s.write_volume_cache(Request::new(WriteVolumeCacheRequest {
        volume_id: id.clone(),
    }))
    .await);
    ok(s.unmount_volume(Request::new(UnmountVolumeRequest {
        volume_id: id.clone(),
        target_path: mnt.clone(),
    }))
    .await);
    assert!(mount_points(h).is_empty());
    assert_eq!(
        ok(s.get_closest_volume_id_from_target_path(closest(&mnt))
            .await)
        .volume_id,
        c
    );
}
