//! The error cases the specs name, on both backends: the exact gRPC code
//! (`UNKNOWN` for every proxy failure, `INVALID_ARGUMENT` where upstream
//! would crash, `UNIMPLEMENTED` for methods an endpoint lacks), the
//! message's gist, and that the failed call left the host as it was.
// On Windows the server halves use named pipes and take turns.
#![cfg(feature = "mock")]

#[macro_use]
mod scenarios;

use csi_proxy_client::host::system::ServiceStatus;
use csi_proxy_client::{disk, filesystem, iscsi, smb, system, volume};
use scenarios::*;
use tonic::Code;

on_both_backends![
    disk_unknown_disks_and_bad_ids,
    volume_bad_ids_and_unformatted_volumes,
    volume_double_unmount,
    filesystem_paths_outside_the_working_dirs,
    filesystem_dot_dot_and_bad_characters,
    filesystem_host_errors,
    smb_bad_input_and_credentials,
    iscsi_wrong_chap_secrets,
    iscsi_missing_target_portal_is_invalid_argument,
    iscsi_other_errors,
    system_errors,
    methods_an_endpoint_lacks_are_unimplemented,
];

// ---------------------------------------------------------------- disk

async fn disk_unknown_disks_and_bad_ids(node: &Node) {
    let before = node.host.snapshot();
    let v1 = &node.disk_v1;
    unknown(
        v1.get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: 99 })
            .await,
        "failed to query disk 99. error: not found",
    );
    unknown(
        v1.get_disk_state(disk::v1::GetDiskStateRequest { disk_number: 99 })
            .await,
        "failed to query disk 99. error: not found",
    );
    unknown(
        v1.set_disk_state(disk::v1::SetDiskStateRequest {
            disk_number: 99,
            is_online: true,
        })
        .await,
        "failed to query disk 99. error: not found",
    );
    unknown(
        v1.partition_disk(disk::v1::PartitionDiskRequest { disk_number: 99 })
            .await,
        "error checking initialized status of disk 99: failed to query disk 99. error: not found",
    );
    // The OS disk cannot be taken offline.
    unknown(
        v1.set_disk_state(disk::v1::SetDiskStateRequest {
            disk_number: 0,
            is_online: false,
        })
        .await,
        "setting disk 0 attach state (isOnline: false): error: WMI MSFT_Disk.Offline failed",
    );
    unknown(
        node.disk_v1alpha1
            .get_disk_number_by_name(disk::v1alpha1::GetDiskNumberByNameRequest {
                disk_name: "Google  no-such-disk".into(),
            })
            .await,
        "could not find disk with Page83 ID Google  no-such-disk: not found",
    );

    // Text disk ids: Go's strconv texts.
    unknown(
        node.disk_v1beta2
            .partition_disk(disk::v1beta2::PartitionDiskRequest {
                disk_id: "abc".into(),
            })
            .await,
        r#"Failed to convert v1beta2.PartitionDiskRequest.DiskID to uint32: strconv.ParseUint: parsing "abc": invalid syntax"#,
    );
    unknown(
        node.disk_v1alpha1
            .partition_disk(disk::v1alpha1::PartitionDiskRequest {
                disk_id: " 1".into(),
            })
            .await,
        r#"Failed to convert v1alpha1.PartitionDiskRequest.DiskID to uint32: strconv.ParseUint: parsing " 1": invalid syntax"#,
    );
    unknown(
        node.disk_v1beta1
            .disk_stats(disk::v1beta1::DiskStatsRequest {
                disk_id: "-1".into(),
            })
            .await,
        r#"Failed to format DiskStatsRequest.DiskID with err: strconv.ParseUint: parsing "-1": invalid syntax"#,
    );
    unknown(
        node.disk_v1beta2
            .get_attach_state(disk::v1beta2::GetAttachStateRequest {
                disk_id: String::new(),
            })
            .await,
        r#"Failed to format GetAttachStateRequest.DiskID with err: strconv.ParseUint: parsing "": invalid syntax"#,
    );
    unknown(
        node.disk_v1beta2
            .set_attach_state(disk::v1beta2::SetAttachStateRequest {
                disk_id: "99999999999999999999".into(),
                is_online: false,
            })
            .await,
        r#"Failed to format SetAttachStateRequest.DiskID with err: strconv.ParseUint: parsing "99999999999999999999": value out of range"#,
    );
    // Forwarded errors are not wrapped in the disk group.
    let message = unknown(
        node.disk_v1beta1
            .disk_stats(disk::v1beta1::DiskStatsRequest {
                disk_id: "99".into(),
            })
            .await,
        "failed to query disk 99. error: not found",
    );
    assert!(!message.contains("Forward"), "{message}");

    // A probe failure fails the whole listing.
    node.host
        .set_probe_error(
            1,
            Some("IOCTL_STORAGE_QUERY_PROPERTY failed: Incorrect function.".into()),
        )
        .expect("hook");
    unknown(
        node.disk_v1
            .list_disk_ids(disk::v1::ListDiskIDsRequest {})
            .await,
        "Incorrect function.",
    );
    node.host.set_probe_error(1, None).expect("hook");

    assert_eq!(node.host.snapshot(), before, "failed calls changed nothing");

    // Windows refuses to initialise a RAW disk that is read-only or offline,
    // and the GPT-only partition type on an empty MBR disk.
    let read_only = attach_blank_disk(&node.host, GIB);
    node.host.set_disk_read_only(read_only, true).expect("hook");
    let offline = attach_blank_disk(&node.host, GIB);
    node.host.set_disk_offline(offline, true).expect("hook");
    let mbr = node
        .host
        .attach_disk(csi_proxy_client::host::storage::DiskSpec {
            partition_style: csi_proxy_client::host::storage::PartitionStyle::Mbr,
            ..csi_proxy_client::host::storage::DiskSpec::new(GIB)
        })
        .expect("attach")
        .0;
    let before = node.host.snapshot();
    for n in [read_only, offline] {
        unknown(
            v1.partition_disk(disk::v1::PartitionDiskRequest { disk_number: n })
                .await,
            &format!("failed to initializing disk {n}: error: WMI MSFT_Disk.Initialize failed"),
        );
    }
    unknown(
        v1.partition_disk(disk::v1::PartitionDiskRequest { disk_number: mbr })
            .await,
        &format!(
            "error creating partition on disk {mbr}. err: WMI MSFT_Disk.CreatePartition failed"
        ),
    );
    assert_eq!(node.host.snapshot(), before, "failed calls changed nothing");
}

// -------------------------------------------------------------- volume

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
        &format!("error formatting volume ({c}). error: WMI MSFT_Volume.Format failed"),
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
    assert!(message.contains("code=42009"), "{message}");
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

// ---------------------------------------------------------- filesystem

const OUTSIDE: &str = r"path: {p} is not within the working directories: [C:\var\lib\kubelet]";

fn outside(p: &str) -> String {
    OUTSIDE.replace("{p}", p)
}

async fn filesystem_paths_outside_the_working_dirs(node: &Node) {
    use filesystem::v1 as f;
    let api = &node.filesystem_v1;
    let host = &node.host;
    let inside = format!(r"{KUBELET}\pods\ok");
    ok(api
        .mkdir(f::MkdirRequest {
            path: inside.clone(),
        })
        .await);

    // Outside, and the sibling prefixes upstream's string compare lets
    // through (the simulator compares whole components: a documented
    // divergence).
    for p in [
        r"C:\foo\bar",
        r"C:\var\lib\kubelet-evil",
        r"C:\var\lib\kubelet-evil\pods\x",
        r"C:\var\lib\kubeletfoo",
        r"D:\var\lib\kubelet\x",
    ] {
        unknown(
            api.mkdir(f::MkdirRequest { path: p.into() }).await,
            &outside(p),
        );
        unknown(
            api.path_exists(f::PathExistsRequest { path: p.into() })
                .await,
            &outside(p),
        );
        unknown(
            api.rmdir(f::RmdirRequest {
                path: p.into(),
                force: true,
            })
            .await,
            &outside(p),
        );
        unknown(
            node.filesystem_v2alpha1
                .rmdir_contents(filesystem::v2alpha1::RmdirContentsRequest { path: p.into() })
                .await,
            &outside(p),
        );
        // Link: the target is validated first, then the source.
        unknown(
            api.create_symlink(f::CreateSymlinkRequest {
                source_path: inside.clone(),
                target_path: p.into(),
            })
            .await,
            &outside(p),
        );
        unknown(
            api.create_symlink(f::CreateSymlinkRequest {
                source_path: p.into(),
                target_path: format!(r"{inside}\link"),
            })
            .await,
            &outside(p),
        );
        unknown(
            api.create_symlink(f::CreateSymlinkRequest {
                source_path: r"C:\also\outside".into(),
                target_path: p.into(),
            })
            .await,
            &outside(p),
        );
        // Legacy versions: any PathContext, same list.
        unknown(
            node.filesystem_v1alpha1
                .mkdir(filesystem::v1alpha1::MkdirRequest {
                    path: p.into(),
                    context: filesystem::v1alpha1::PathContext::Pod as i32,
                })
                .await,
            &outside(p),
        );
    }
    for p in [
        r"C:\foo",
        r"C:\var\lib\kubelet-evil",
        r"C:\var\lib\kubeletfoo",
    ] {
        assert!(!host.exists(p), "{p} was created");
    }
    assert!(!host.exists(&format!(r"{inside}\link")));

    // The working dir itself, mixed case and a trailing separator are in.
    ok(api
        .path_exists(f::PathExistsRequest {
            path: KUBELET.into(),
        })
        .await);
    ok(api
        .mkdir(f::MkdirRequest {
            path: r"c:\VAR\Lib\KUBELET\Pods\Mixed\".into(),
        })
        .await);
    assert_eq!(
        entry(host, &format!(r"{KUBELET}\pods\mixed")),
        Some(Entry::Dir)
    );

    // SMB local_path goes through the same check; the mapping stays.
    let p = r"C:\var\lib\kubelet-evil\smb";
    unknown(
        node.smb_v1
            .new_smb_global_mapping(smb::v1::NewSmbGlobalMappingRequest {
                remote_path: r"\\fileserver\share".into(),
                local_path: p.into(),
                username: "smbuser".into(),
                password: "Sm8-Passw0rd!".into(),
            })
            .await,
        &outside(p),
    );
    assert_eq!(smb_roots(host), [r"\\fileserver\share"]);
    assert!(!host.exists(p));
}

async fn filesystem_dot_dot_and_bad_characters(node: &Node) {
    use filesystem::v1 as f;
    let api = &node.filesystem_v1;
    let before = node.host.snapshot();
    let pods = format!(r"{KUBELET}\pods");
    let invalid = |p: &str| format!("path contains invalid characters: {p}");
    let long = format!(r"{KUBELET}\{}", "x".repeat(260 - KUBELET.len()));
    assert_eq!(long.len(), 261);
    let cases = [
        (
            format!(r"{pods}\..\..\..\system32"),
            invalid(&format!(r"{pods}\..\..\..\system32")),
        ),
        (format!(r"{pods}\a..b"), invalid(&format!(r"{pods}\a..b"))),
        (format!(r"{KUBELET}\.."), invalid(&format!(r"{KUBELET}\.."))),
        (
            format!(r"{pods}\pv1/foo"),
            invalid(&format!(r"{pods}\pv1/foo")),
        ),
        (
            format!(r"{pods}\pv1:foo"),
            invalid(&format!(r"{pods}\pv1:foo")),
        ),
        (
            format!(r"{pods}\pv1*foo"),
            invalid(&format!(r"{pods}\pv1*foo")),
        ),
        (
            format!(r"{pods}\pv1?foo"),
            invalid(&format!(r"{pods}\pv1?foo")),
        ),
        (
            format!(r"{pods}\pv1|foo"),
            invalid(&format!(r"{pods}\pv1|foo")),
        ),
        (
            format!(r#"{pods}\pv1"foo"#),
            invalid(&format!(r#"{pods}\pv1"foo"#)),
        ),
        (
            r"\\csi-plugin\..\..\..\system32".into(),
            r"invalid character \ at beginning of path: \\csi-plugin\..\..\..\system32".into(),
        ),
        (
            r"\\?\C:\var\lib\kubelet\x".into(),
            r"invalid character \ at beginning of path: \\?\C:\var\lib\kubelet\x".into(),
        ),
        (
            r"pv1\foo".into(),
            r"not an absolute Windows path: pv1\foo".into(),
        ),
        (String::new(), "not an absolute Windows path: ".into()),
        (
            long.clone(),
            "path length 261 exceeds maximum characters: 260".into(),
        ),
    ];
    for (path, gist) in &cases {
        unknown(
            api.mkdir(f::MkdirRequest { path: path.clone() }).await,
            gist,
        );
        unknown(
            api.rmdir(f::RmdirRequest {
                path: path.clone(),
                force: true,
            })
            .await,
            gist,
        );
        unknown(
            node.filesystem_v1beta1
                .path_exists(filesystem::v1beta1::PathExistsRequest {
                    path: path.clone(),
                    context: 7,
                })
                .await,
            gist,
        );
    }
    assert!(!node.host.exists(r"C:\var\lib\system32"));
    assert!(!node.host.exists(r"C:\system32"));
    assert_eq!(node.host.snapshot(), before);
}

async fn filesystem_host_errors(node: &Node) {
    use filesystem::v1 as f;
    let api = &node.filesystem_v1;
    let host = &node.host;
    let dir = format!(r"{KUBELET}\pods\p1");
    let file = format!(r"{dir}\file.txt");
    host.create_dir(&dir).expect("mkdir");
    host.write_file(&file, b"data").expect("write");

    // Rmdir without force: missing, non-empty.
    let missing = format!(r"{dir}\missing");
    unknown(
        api.rmdir(f::RmdirRequest {
            path: missing.clone(),
            force: false,
        })
        .await,
        &format!("remove {missing}: The system cannot find the file specified."),
    );
    unknown(
        api.rmdir(f::RmdirRequest {
            path: dir.clone(),
            force: false,
        })
        .await,
        &format!("remove {dir}: The directory is not empty."),
    );
    assert!(host.exists(&file));
    // Mkdir over a file.
    unknown(
        api.mkdir(f::MkdirRequest { path: file.clone() }).await,
        "not a directory",
    );
    // A second link at the same place.
    let link = format!(r"{dir}\link");
    ok(api
        .create_symlink(f::CreateSymlinkRequest {
            source_path: dir.clone(),
            target_path: link.clone(),
        })
        .await);
    unknown(
        api.create_symlink(f::CreateSymlinkRequest {
            source_path: dir.clone(),
            target_path: link.clone(),
        })
        .await,
        "Cannot create a file when that file already exists.",
    );
    // IsSymlink is not validated but a missing path is an error.
    unknown(
        api.is_symlink(f::IsSymlinkRequest {
            path: r"C:\nowhere\at\all".into(),
        })
        .await,
        "The system cannot find",
    );
    // RmdirContents of a missing directory / of a file.
    let v2 = &node.filesystem_v2alpha1;
    unknown(
        v2.rmdir_contents(filesystem::v2alpha1::RmdirContentsRequest {
            path: missing.clone(),
        })
        .await,
        "The system cannot find the file specified.",
    );
    unknown(
        v2.rmdir_contents(filesystem::v2alpha1::RmdirContentsRequest { path: file.clone() })
            .await,
        "",
    );
    assert_eq!(host.read_file(&file).expect("still there"), b"data");
}

// ----------------------------------------------------------------- smb

async fn smb_bad_input_and_credentials(node: &Node) {
    use smb::v1 as s;
    let api = &node.smb_v1;
    let new = |remote: &str, user: &str, password: &str| {
        let request = s::NewSmbGlobalMappingRequest {
            remote_path: remote.into(),
            local_path: String::new(),
            username: user.into(),
            password: password.into(),
        };
        async move { api.new_smb_global_mapping(request).await }
    };
    let create_failed = |code: u32| {
        format!(
            "NewSmbGlobalMapping failed. err: WMI MSFT_SmbGlobalMapping.Create failed \
             (target=<nil>): code={code}"
        )
    };
    let not_mapped = r"error remove smb mapping '\\fileserver\share'. err: failed to query SMB global mapping by remote path \\fileserver\share: not found";
    unknown(new("", "smbuser", "x").await, "remote path is empty");
    unknown(
        new("hostname", "smbuser", "x").await,
        "remote path (hostname) is invalid",
    );
    unknown(
        new(r"\\fileserver\share", "smbuser", "wrong").await,
        &create_failed(1326),
    );
    // The network name cannot be found.
    unknown(
        new(r"\\fileserver\nosuchshare", "smbuser", "Sm8-Passw0rd!").await,
        &create_failed(67),
    );
    // The network path was not found.
    unknown(
        new(r"\\nosuchserver\share", "smbuser", "Sm8-Passw0rd!").await,
        &create_failed(53),
    );
    // The machine identity may not use a share that is not open to Everyone.
    unknown(new(r"\\fileserver\share", "", "").await, &create_failed(5));
    assert!(smb_roots(&node.host).is_empty());

    unknown(
        api.remove_smb_global_mapping(s::RemoveSmbGlobalMappingRequest {
            remote_path: r"\\fileserver\share\pv".into(),
        })
        .await,
        not_mapped,
    );
    // Remove is not idempotent.
    ok(new(r"\\fileserver\share", "smbuser", "Sm8-Passw0rd!").await);
    let remove = || async {
        api.remove_smb_global_mapping(s::RemoveSmbGlobalMappingRequest {
            remote_path: r"\\fileserver\share".into(),
        })
        .await
    };
    ok(remove().await);
    unknown(remove().await, not_mapped);

    // A local path that already exists: the mapping is made, the link not.
    let local = format!(r"{KUBELET}\pods\taken");
    node.host.create_dir(&local).expect("mkdir");
    unknown(
        api.new_smb_global_mapping(s::NewSmbGlobalMappingRequest {
            remote_path: r"\\fileserver\share\x".into(),
            local_path: local.clone(),
            username: "smbuser".into(),
            password: "Sm8-Passw0rd!".into(),
        })
        .await,
        &format!(
            "creating link {local} to {remote} failed with error: \
             error linking {remote}\\ to {local}. err: ",
            remote = r"\\fileserver\share\x"
        ),
    );
    assert_eq!(entry(&node.host, &local), Some(Entry::Dir));
    assert_eq!(smb_roots(&node.host), [r"\\fileserver\share"]);
}

// --------------------------------------------------------------- iscsi

const PLAIN: &str = "iqn.1991-05.com.microsoft:storage01-lun0-target";
const CHAP: &str = "iqn.1991-05.com.microsoft:storage01-chap-target";
const MUTUAL: &str = "iqn.1991-05.com.microsoft:storage01-mutual-target";

fn portal() -> Option<iscsi::v1alpha2::TargetPortal> {
    Some(iscsi::v1alpha2::TargetPortal {
        target_address: "10.0.0.20".into(),
        target_port: 3260,
    })
}

/// Starts MSiSCSI and registers the default portal (v1alpha2).
async fn iscsi_ready(node: &Node) {
    set_service_status(&node.host, "MSiSCSI", ServiceStatus::Running);
    ok(node
        .iscsi_v1alpha2
        .add_target_portal(iscsi::v1alpha2::AddTargetPortalRequest {
            target_portal: portal(),
        })
        .await);
}

fn connect_request(
    iqn: &str,
    auth: iscsi::v1alpha2::AuthenticationType,
    user: &str,
    secret: &str,
) -> iscsi::v1alpha2::ConnectTargetRequest {
    iscsi::v1alpha2::ConnectTargetRequest {
        target_portal: portal(),
        iqn: iqn.into(),
        auth_type: auth as i32,
        chap_username: user.into(),
        chap_secret: secret.into(),
    }
}

fn sessions(node: &Node) -> usize {
    node.host.lock().iscsi.sessions().len()
}

async fn iscsi_wrong_chap_secrets(node: &Node) {
    use iscsi::v1alpha2::AuthenticationType as Auth;
    iscsi_ready(node).await;
    let api = &node.iscsi_v1alpha2;
    let before = node.host.snapshot();
    let refused = "error connecting to target portal. err: WMI MSFT_iSCSITarget.Connect failed (target=<nil>): code=";
    for request in [
        connect_request(CHAP, Auth::OneWayChap, "someuser", "wrongsecret1"),
        connect_request(CHAP, Auth::OneWayChap, "otheruser", "verysecretpass"),
        // CHAP required but none offered.
        connect_request(CHAP, Auth::None, "", ""),
        // The right one-way secret, but the node's mutual secret is unset.
        connect_request(MUTUAL, Auth::MutualChap, "anotheruser", "averylongsecret"),
    ] {
        unknown(api.connect_target(request).await, refused);
    }
    // A wrong mutual secret.
    ok(api
        .set_mutual_chap_secret(iscsi::v1alpha2::SetMutualChapSecretRequest {
            mutual_chap_secret: "made-up-pass".into(),
        })
        .await);
    unknown(
        api.connect_target(connect_request(
            MUTUAL,
            Auth::MutualChap,
            "anotheruser",
            "averylongsecret",
        ))
        .await,
        refused,
    );
    // A secret Windows refuses (shorter than 12 bytes) leaves the old one.
    unknown(
        api.set_mutual_chap_secret(iscsi::v1alpha2::SetMutualChapSecretRequest {
            mutual_chap_secret: "short".into(),
        })
        .await,
        "error setting mutual chap secret",
    );
    assert_eq!(
        node.host.lock().iscsi.mutual_chap_secret(),
        Some("made-up-pass")
    );
    assert_eq!(sessions(node), 0);
    assert_eq!(node.host.snapshot(), before, "no disk appeared");

    // The right secret then works (v1alpha1 logs in the same way).
    ok(api
        .set_mutual_chap_secret(iscsi::v1alpha2::SetMutualChapSecretRequest {
            mutual_chap_secret: "reversssssssse".into(),
        })
        .await);
    ok(api
        .connect_target(connect_request(
            MUTUAL,
            Auth::MutualChap,
            "anotheruser",
            "averylongsecret",
        ))
        .await);
    assert_eq!(sessions(node), 1);
}

async fn iscsi_missing_target_portal_is_invalid_argument(node: &Node) {
    iscsi_ready(node).await;
    let gist = "target_portal is required";
    let invalid = Code::InvalidArgument;
    let a2 = &node.iscsi_v1alpha2;
    use iscsi::v1alpha2 as i;
    rpc_err(
        a2.add_target_portal(i::AddTargetPortalRequest {
            target_portal: None,
        })
        .await,
        invalid,
        gist,
    );
    rpc_err(
        a2.discover_target_portal(i::DiscoverTargetPortalRequest {
            target_portal: None,
        })
        .await,
        invalid,
        gist,
    );
    rpc_err(
        a2.remove_target_portal(i::RemoveTargetPortalRequest {
            target_portal: None,
        })
        .await,
        invalid,
        gist,
    );
    let mut connect = connect_request(PLAIN, i::AuthenticationType::None, "", "");
    connect.target_portal = None;
    rpc_err(a2.connect_target(connect).await, invalid, gist);
    rpc_err(
        a2.disconnect_target(i::DisconnectTargetRequest {
            target_portal: None,
            iqn: PLAIN.into(),
        })
        .await,
        invalid,
        gist,
    );
    rpc_err(
        a2.get_target_disks(i::GetTargetDisksRequest {
            target_portal: None,
            iqn: PLAIN.into(),
        })
        .await,
        invalid,
        gist,
    );
    // The same on v1alpha1.
    rpc_err(
        node.iscsi_v1alpha1
            .connect_target(iscsi::v1alpha1::ConnectTargetRequest {
                target_portal: None,
                iqn: PLAIN.into(),
                auth_type: 0,
                chap_username: String::new(),
                chap_secret: String::new(),
            })
            .await,
        invalid,
        gist,
    );
    // The portal registered before is still the only one.
    assert_eq!(node.host.lock().iscsi.portals().len(), 1);
    assert_eq!(sessions(node), 0);
}

async fn iscsi_other_errors(node: &Node) {
    use iscsi::v1alpha2 as i;
    let api = &node.iscsi_v1alpha2;
    // Every call fails while the initiator service is stopped.
    unknown(
        api.add_target_portal(i::AddTargetPortalRequest {
            target_portal: portal(),
        })
        .await,
        "error adding target portal at (10.0.0.20:3260). err: the Microsoft iSCSI Initiator Service (MSiSCSI) is not running",
    );
    assert!(node.host.lock().iscsi.portals().is_empty());
    set_service_status(&node.host, "MSiSCSI", ServiceStatus::Running);

    // Portal not registered: discover, connect and remove fail.
    let no_portal = "failed to query iSCSI target portal at (10.0.0.20:3260). error: not found";
    let message = unknown(
        api.discover_target_portal(i::DiscoverTargetPortalRequest {
            target_portal: portal(),
        })
        .await,
        no_portal,
    );
    assert_eq!(
        message,
        format!("error list targets by target portal at (10.0.0.20:3260). err: {no_portal}")
    );
    let message = unknown(
        api.connect_target(connect_request(PLAIN, i::AuthenticationType::None, "", ""))
            .await,
        no_portal,
    );
    assert_eq!(
        message,
        format!(
            "error query target {PLAIN} from target portal at (10.0.0.20:3260). err: {no_portal}"
        )
    );
    let message = unknown(
        api.remove_target_portal(i::RemoveTargetPortalRequest {
            target_portal: portal(),
        })
        .await,
        no_portal,
    );
    assert_eq!(
        message,
        format!("error query target portal at (10.0.0.20:3260). err: {no_portal}")
    );
    // An unreachable portal cannot be added.
    unknown(
        api.add_target_portal(i::AddTargetPortalRequest {
            target_portal: Some(i::TargetPortal {
                target_address: "10.0.0.99".into(),
                target_port: 3260,
            }),
        })
        .await,
        "error adding target portal at (10.0.0.99:3260)",
    );
    assert!(node.host.lock().iscsi.portals().is_empty());

    iscsi_ready(node).await;
    // An auth type outside the enum is refused before anything else.
    let mut bad = connect_request(PLAIN, i::AuthenticationType::None, "", "");
    bad.auth_type = 7;
    unknown(
        api.connect_target(bad).await,
        "invalid authentication type authType=7",
    );
    // An unknown IQN behind a known portal.
    let nope = "iqn.2000-01.com.example:nope";
    assert_eq!(
        unknown(
            api.get_target_disks(i::GetTargetDisksRequest {
                target_portal: portal(),
                iqn: nope.into(),
            })
            .await,
            nope,
        ),
        format!("error query target {nope} from target portal at (10.0.0.20:3260). err: not found")
    );
    // IQNs compare case-sensitively.
    unknown(
        api.connect_target(connect_request(
            &PLAIN.to_uppercase(),
            i::AuthenticationType::None,
            "",
            "",
        ))
        .await,
        "not found",
    );
    assert_eq!(sessions(node), 0);
    // Remove is not idempotent.
    let remove = || async {
        api.remove_target_portal(i::RemoveTargetPortalRequest {
            target_portal: portal(),
        })
        .await
    };
    ok(remove().await);
    unknown(
        remove().await,
        &format!("error query target portal at (10.0.0.20:3260). err: {no_portal}"),
    );
}

// -------------------------------------------------------------- system

async fn system_errors(node: &Node) {
    use system::v1alpha1 as s;
    let api = &node.system_v1alpha1;
    for name in ["nope", ""] {
        unknown(
            api.get_service(s::GetServiceRequest { name: name.into() })
                .await,
            &format!(
                "failed to get service {name}. error: failed to query service {name}: not found"
            ),
        );
        let not_found = format!(
            "failed to get service {name}. error: failed to query service {name}: not found"
        );
        assert_eq!(
            unknown(
                api.start_service(s::StartServiceRequest { name: name.into() })
                    .await,
                &not_found,
            ),
            not_found
        );
        assert_eq!(
            unknown(
                api.stop_service(s::StopServiceRequest {
                    name: name.into(),
                    force: true,
                })
                .await,
                &not_found,
            ),
            format!("failed to stop service {name}. error: {not_found}")
        );
    }
    // Running dependents block a stop without force.
    unknown(
        api.stop_service(s::StopServiceRequest {
            name: "SamSS".into(),
            force: false,
        })
        .await,
        "failed to stop service SamSS. error: error stopping service name SamSS. current state: Running",
    );
    for running in ["SamSS", "LanmanServer", "Browser"] {
        assert_eq!(
            service_status(&node.host, running),
            ServiceStatus::Running,
            "{running}"
        );
    }
}

// ------------------------------------------------------- unimplemented

async fn methods_an_endpoint_lacks_are_unimplemented(node: &Node) {
    // SetMutualChapSecret does not exist on iscsi v1alpha1.
    status_err(
        node.call_raw::<_, iscsi::v1alpha2::SetMutualChapSecretResponse>(
            "iscsi",
            "v1alpha1",
            "/v1alpha1.Iscsi/SetMutualChapSecret",
            iscsi::v1alpha2::SetMutualChapSecretRequest {
                mutual_chap_secret: "reversssssssse".into(),
            },
        )
        .await,
        Code::Unimplemented,
        "",
    );
    // RmdirContents does not exist on filesystem v1.
    let dir = format!(r"{KUBELET}\pods\keep");
    node.host
        .create_dir(&format!(r"{dir}\child"))
        .expect("mkdir");
    status_err(
        node.call_raw::<_, filesystem::v2alpha1::RmdirContentsResponse>(
            "filesystem",
            "v1",
            "/v1.Filesystem/RmdirContents",
            filesystem::v2alpha1::RmdirContentsRequest { path: dir.clone() },
        )
        .await,
        Code::Unimplemented,
        "",
    );
    assert_eq!(node.host.list_dir(&dir).expect("list"), ["child"]);
    // GetDiskNumberByName exists on disk v1alpha1 only.
    status_err(
        node.call_raw::<_, disk::v1alpha1::GetDiskNumberByNameResponse>(
            "disk",
            "v1",
            "/v1.Disk/GetDiskNumberByName",
            disk::v1alpha1::GetDiskNumberByNameRequest {
                disk_name: String::new(),
            },
        )
        .await,
        Code::Unimplemented,
        "",
    );
    // Another version's service on an endpoint: unknown service.
    status_err(
        node.call_raw::<_, volume::v2alpha1::GetClosestVolumeIdFromTargetPathResponse>(
            "volume",
            "v1",
            "/v2alpha1.Volume/GetClosestVolumeIDFromTargetPath",
            volume::v2alpha1::GetClosestVolumeIdFromTargetPathRequest {
                target_path: KUBELET.into(),
            },
        )
        .await,
        Code::Unimplemented,
        "",
    );
    // The endpoint still serves its own methods.
    let exists = node
        .call_raw::<_, filesystem::v1::PathExistsResponse>(
            "filesystem",
            "v1",
            "/v1.Filesystem/PathExists",
            filesystem::v1::PathExistsRequest { path: dir.clone() },
        )
        .await
        .expect("PathExists on v1");
    assert!(exists.exists);
}

/// The typed client of a newer version on an older version's socket: the
/// server answers `UNIMPLEMENTED` and nothing changes (server only: the
/// mock has no sockets).
#[tokio::test]
async fn typed_clients_of_another_version_get_unimplemented() {
    let node = Node::server().await;
    set_service_status(&node.host, "MSiSCSI", ServiceStatus::Running);
    let iscsi_v1alpha1 = node.socket("iscsi", "v1alpha1").expect("socket");
    let client = iscsi::v1alpha2::Client::connect(&iscsi_v1alpha1)
        .await
        .expect("connect");
    rpc_err(
        iscsi::v1alpha2::IscsiApi::set_mutual_chap_secret(
            &client,
            iscsi::v1alpha2::SetMutualChapSecretRequest {
                mutual_chap_secret: "reversssssssse".into(),
            },
        )
        .await,
        Code::Unimplemented,
        "",
    );
    assert_eq!(node.host.lock().iscsi.mutual_chap_secret(), None);

    let filesystem_v1 = node.socket("filesystem", "v1").expect("socket");
    let client = filesystem::v2alpha1::Client::connect(&filesystem_v1)
        .await
        .expect("connect");
    let dir = format!(r"{KUBELET}\pods\keep");
    node.host
        .create_dir(&format!(r"{dir}\child"))
        .expect("mkdir");
    rpc_err(
        filesystem::v2alpha1::FilesystemApi::rmdir_contents(
            &client,
            filesystem::v2alpha1::RmdirContentsRequest { path: dir.clone() },
        )
        .await,
        Code::Unimplemented,
        "",
    );
    assert_eq!(node.host.list_dir(&dir).expect("list"), ["child"]);
    drop(client);
    node.finish().await;
}
