//! Volume group errors: bad ids, unformatted volumes, unmounting twice.

use csi_proxy_client::{disk, volume};

use crate::scenarios::*;

on_both_backends![
    volume_bad_ids_and_unformatted_volumes,
    volume_double_unmount
];

async fn volume_bad_ids_and_unformatted_volumes(node: &Node) {
    use volume::v1beta3 as v;
    let api = &node.volume_v1beta3;
    let before = node.host.snapshot();

    // Upstream's negative cases (v1beta3 client).
    let querying = "error querying volume (-1). error: failed to query volume -1: not found";
    for (id, gist) in [("", "volume id empty"), ("-1", querying)] {
        unknown(
            api.is_volume_formatted(v::IsVolumeFormattedRequest {
                volume_id: id.into(),
            })
            .await,
            gist,
        );
        unknown(
            api.format_volume(v::FormatVolumeRequest {
                volume_id: id.into(),
            })
            .await,
            gist,
        );
        unknown(
            api.get_volume_stats(v::GetVolumeStatsRequest {
                volume_id: id.into(),
            })
            .await,
            gist,
        );
    }
    for (id, gist) in [
        ("", "volume id empty"),
        ("-1", "failed to query volume -1: not found"),
    ] {
        unknown(
            api.resize_volume(v::ResizeVolumeRequest {
                volume_id: id.into(),
                size_bytes: 2 * MIB as i64,
            })
            .await,
            gist,
        );
    }
    for (id, gist) in [
        ("", "MountVolumeRequest.VolumeId is empty"),
        ("-1", "MountVolumeRequest.TargetPath is empty"),
    ] {
        unknown(
            api.mount_volume(v::MountVolumeRequest {
                volume_id: id.into(),
                target_path: String::new(),
            })
            .await,
            gist,
        );
    }
    for (id, gist) in [("", "volume id empty"), ("-1", "target path empty")] {
        unknown(
            api.unmount_volume(v::UnmountVolumeRequest {
                volume_id: id.into(),
                target_path: String::new(),
            })
            .await,
            gist,
        );
    }
    unknown(
        api.get_disk_number_from_volume_id(v::GetDiskNumberFromVolumeIdRequest {
            volume_id: r"\\?\Volume{00000000-0000-0000-0000-000000000000}\".into(),
        })
        .await,
        r"failed to query volume \\?\Volume{00000000-0000-0000-0000-000000000000}\: not found",
    );
    // Old versions wrap forwarded errors.
    unknown(
        node.volume_v1beta1
            .volume_stats(volume::v1beta1::VolumeStatsRequest {
                volume_id: "-1".into(),
            })
            .await,
        &format!("Forward to GetVolumeStats failed, err={querying}"),
    );
    unknown(
        node.volume_v1beta1
            .get_volume_disk_number(volume::v1beta1::VolumeDiskNumberRequest {
                volume_id: "-1".into(),
            })
            .await,
        "Forward to GetDiskNumberFromVolumeID failed, err=",
    );
    unknown(
        node.volume_v1beta2
            .get_volume_id_from_mount(volume::v1beta2::VolumeIdFromMountRequest {
                mount: String::new(),
            })
            .await,
        "Forward to GetVolumeIDFromTargetPath failed, err=target path is empty",
    );
    unknown(
        node.volume_v1beta2
            .list_volumes_on_disk(volume::v1beta2::ListVolumesOnDiskRequest {
                disk_id: String::new(),
            })
            .await,
        r#"Failed to parse diskId: err=strconv.ParseUint: parsing "": invalid syntax"#,
    );
    assert_eq!(node.host.snapshot(), before);

    // An unformatted (RAW) volume: not formatted, mountable, but nothing can
    // be mounted inside it, and its mount point is not a plain directory.
    let n = attach_blank_disk(&node.host, GIB);
    ok(node
        .disk_v1
        .partition_disk(disk::v1::PartitionDiskRequest { disk_number: n })
        .await);
    let raw = only_volume(node, n).await;
    assert!(
        !ok(api
            .is_volume_formatted(v::IsVolumeFormattedRequest {
                volume_id: raw.clone()
            })
            .await)
        .formatted
    );
    let raw_dir = staging("raw");
    node.host.create_dir(&raw_dir).expect("mkdir");
    ok(api
        .mount_volume(v::MountVolumeRequest {
            volume_id: raw.clone(),
            target_path: raw_dir.clone(),
        })
        .await);
    let (_, other) = formatted_disk(node).await;
    let inside = format!(r"{raw_dir}\nested");
    node.host
        .create_dir(&inside)
        .expect("mkdir in the RAW volume");
    let before = node.host.snapshot();
    unknown(
        api.mount_volume(v::MountVolumeRequest {
            volume_id: other.clone(),
            target_path: inside.clone(),
        })
        .await,
        &format!(
            "error mount volume ({other}) to path {inside}. error: The request is not supported."
        ),
    );
    // A different volume at an occupied mount point.
    unknown(
        api.mount_volume(v::MountVolumeRequest {
            volume_id: other.clone(),
            target_path: raw_dir.clone(),
        })
        .await,
        &format!(
            "error mount volume ({other}) to path {raw_dir}. error: The directory is not empty."
        ),
    );
    // A plain directory is not a mounted folder.
    let plain = staging("plain");
    node.host.create_dir(&plain).expect("mkdir");
    unknown(
        api.get_volume_id_from_target_path(v::GetVolumeIdFromTargetPathRequest {
            target_path: plain.clone(),
        })
        .await,
        "not a mounted folder",
    );
    unknown(
        api.resize_volume(v::ResizeVolumeRequest {
            volume_id: raw.clone(),
            size_bytes: -5,
        })
        .await,
        &format!("invalid negative size -5 for volume ({raw})"),
    );
    // The system volume cannot be formatted; FAT32 cannot be resized.
    let c = c_volume(&node.host);
    unknown(
        api.format_volume(v::FormatVolumeRequest {
            volume_id: c.clone(),
        })
        .await,
        &format!("error formatting volume ({c}). result: 42010, error: <nil>"),
    );
    let efi = ok(api
        .list_volumes_on_disk(v::ListVolumesOnDiskRequest {
            disk_number: 0,
            partition_number: 1,
        })
        .await)
    .volume_ids[0]
        .clone();
    let efi_size = partition_of(&before, &efi).size;
    let message = unknown(
        api.resize_volume(v::ResizeVolumeRequest {
            volume_id: efi.clone(),
            size_bytes: (efi_size + 200 * MIB) as i64,
        })
        .await,
        &format!("error resizing volume ({efi})."),
    );
    // v1.3 leaves Resize's return value out of its text.
    assert!(message.ends_with("error: <nil>"), "{message}");
    assert_eq!(node.host.snapshot(), before, "failed calls changed nothing");
    assert_eq!(mounted_at(&node.host, &raw_dir), [raw]);
}

async fn volume_double_unmount(node: &Node) {
    let (_, id) = formatted_disk(node).await;
    let dir = staging("double");
    node.host.create_dir(&dir).expect("mkdir");
    let mount = || async {
        ok(node
            .volume_v1
            .mount_volume(volume::v1::MountVolumeRequest {
                volume_id: id.clone(),
                target_path: dir.clone(),
            })
            .await)
    };
    mount().await;
    let unmount = || async {
        node.volume_v1
            .unmount_volume(volume::v1::UnmountVolumeRequest {
                volume_id: id.clone(),
                target_path: dir.clone(),
            })
            .await
    };
    ok(unmount().await);
    let flushed = volume_of(&node.host.snapshot(), &id).flushes;
    unknown(
        unmount().await,
        &format!(
            "error umount volume ({id}) from path {dir}. error: The file or directory is not a reparse point."
        ),
    );
    assert_eq!(entry(&node.host, &dir), Some(Entry::Dir));
    // The flush happens before the unmount fails.
    assert_eq!(volume_of(&node.host.snapshot(), &id).flushes, flushed + 1);

    // The old name wraps the same failure.
    mount().await;
    let dismount = || async {
        node.volume_v1beta2
            .dismount_volume(volume::v1beta2::DismountVolumeRequest {
                volume_id: id.clone(),
                path: dir.clone(),
            })
            .await
    };
    ok(dismount().await);
    unknown(
        dismount().await,
        "Forward to UnmountVolume failed, err=error umount volume (",
    );
    // Unknown volume: nothing is unmounted.
    mount().await;
    unknown(
        node.volume_v1
            .unmount_volume(volume::v1::UnmountVolumeRequest {
                volume_id: r"\\?\Volume{00000000-0000-0000-0000-000000000000}\".into(),
                target_path: dir.clone(),
            })
            .await,
        r"error querying volume (\\?\Volume{00000000-0000-0000-0000-000000000000}\). error:",
    );
    assert_eq!(mounted_at(&node.host, &dir), std::slice::from_ref(&id));
    // Missing path.
    let missing = format!(r"{KUBELET}\plugins\never-made");
    unknown(
        node.volume_v1
            .unmount_volume(volume::v1::UnmountVolumeRequest {
                volume_id: id.clone(),
                target_path: missing,
            })
            .await,
        "The system cannot find the file specified.",
    );
}
