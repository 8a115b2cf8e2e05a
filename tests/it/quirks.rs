//! Idempotency rules and upstream quirks the specs tell implementations to
//! keep, and sandbox-escape attempts, on
//! both backends.
// On Windows the server halves use named pipes and take turns.
#![cfg(feature = "mock")]

use crate::scenarios::*;
use csi_proxy_client::host::smb::MappingStatus;
use csi_proxy_client::host::storage::{FileSystem, ntfs_overhead};
use csi_proxy_client::host::system::{Service, ServiceStatus, ServiceTiming, StartMode};
use csi_proxy_client::{disk, filesystem, iscsi, smb, system, volume};

on_both_backends![
    volume_ids_and_mount_points,
    volume_resize_and_format_rules,
    volume_lookups_by_path,
    offline_disks_hide_their_volumes,
    filesystem_link_semantics,
    filesystem_validation_edges,
    sandbox_stays_closed,
    smb_remapping_rules,
    iscsi_port_and_login_rules,
    system_dependencies_and_failures,
];

// -------------------------------------------------------------- volume

async fn volume_ids_and_mount_points(node: &Node) {
    use volume::v1 as v;
    let api = &node.volume_v1;
    let host = &node.host;
    let (_, a) = formatted_disk(node).await;
    let (_, b) = formatted_disk(node).await;
    let dir = staging("ids");
    host.create_dir(&dir).expect("mkdir");

    // WMI lookups match ids case-insensitively; the trailing '\' is needed.
    let upper = a.to_uppercase();
    assert!(
        ok(api
            .is_volume_formatted(v::IsVolumeFormattedRequest {
                volume_id: upper.clone()
            })
            .await)
        .formatted
    );
    unknown(
        api.is_volume_formatted(v::IsVolumeFormattedRequest {
            volume_id: a.trim_end_matches('\\').into(),
        })
        .await,
        "not found",
    );

    // MountVolume: "X" and "X\" are one mount point; the re-mount check
    // compares ids exactly, so another spelling of the same id fails.
    ok(api
        .mount_volume(v::MountVolumeRequest {
            volume_id: a.clone(),
            target_path: dir.clone(),
        })
        .await);
    ok(api
        .mount_volume(v::MountVolumeRequest {
            volume_id: a.clone(),
            target_path: format!(r"{dir}\"),
        })
        .await);
    unknown(
        api.mount_volume(v::MountVolumeRequest {
            volume_id: upper.clone(),
            target_path: dir.clone(),
        })
        .await,
        &format!("error mount volume ({upper}) to path {dir}. error: The directory is not empty."),
    );
    assert_eq!(mounted_at(host, &dir), std::slice::from_ref(&a));

    // UnmountVolume does not check which volume is mounted: B's id removes
    // A's mount point (B is flushed, A is not).
    let flushes = |id: &str| volume_of(&host.snapshot(), id).flushes;
    let (fa, fb) = (flushes(&a), flushes(&b));
    ok(api
        .unmount_volume(v::UnmountVolumeRequest {
            volume_id: b.clone(),
            target_path: dir.clone(),
        })
        .await);
    assert!(mounted_at(host, &dir).is_empty());
    assert_eq!((flushes(&a), flushes(&b)), (fa, fb + 1));

    // A volume may be mounted at several paths; a RAW one too.
    let second = staging("ids-2");
    host.create_dir(&second).expect("mkdir");
    for target in [&dir, &second] {
        ok(api
            .mount_volume(v::MountVolumeRequest {
                volume_id: a.clone(),
                target_path: target.clone(),
            })
            .await);
    }
    assert_eq!(mounted_at(host, &second), std::slice::from_ref(&a));
    assert_eq!(mounted_at(host, &dir), std::slice::from_ref(&a));

    // Mount targets must be existing empty directories.
    let missing = format!(r"{KUBELET}\plugins\missing");
    unknown(
        api.mount_volume(v::MountVolumeRequest {
            volume_id: b.clone(),
            target_path: missing.clone(),
        })
        .await,
        &format!(
            "error mount volume ({b}) to path {missing}. error: The system cannot find the file specified."
        ),
    );
    let file = format!(r"{KUBELET}\plugins\file.txt");
    host.write_file(&file, b"x").expect("write");
    unknown(
        api.mount_volume(v::MountVolumeRequest {
            volume_id: b.clone(),
            target_path: file.clone(),
        })
        .await,
        "The directory name is invalid.",
    );
    let full = staging("full");
    host.write_file(&format!(r"{full}\x"), b"x")
        .or_else(|_| {
            host.create_dir(&full)
                .and_then(|()| host.write_file(&format!(r"{full}\x"), b"x"))
        })
        .expect("a non-empty dir");
    unknown(
        api.mount_volume(v::MountVolumeRequest {
            volume_id: b.clone(),
            target_path: full.clone(),
        })
        .await,
        &format!("error get target volume ({b}) to path {full}. error: not a mounted folder"),
    );
}

async fn volume_resize_and_format_rules(node: &Node) {
    use volume::v1 as v;
    let api = &node.volume_v1;
    let host = &node.host;
    let (n, id) = formatted_disk(node).await;
    let size = partition_of(&host.snapshot(), &id).size;
    host.grow_disk(n, 2 * GIB).expect("grow");
    let resize = |bytes: u64| {
        let request = v::ResizeVolumeRequest {
            volume_id: id.clone(),
            size_bytes: bytes as i64,
        };
        async move { ok(api.resize_volume(request).await) }
    };
    // Shrinking, the same size and growth under 100 MiB do nothing.
    for target in [size / 2, size, size + 100 * MIB - 512] {
        resize(target).await;
        assert_eq!(partition_of(&host.snapshot(), &id).size, size, "{target}");
    }
    // 100 MiB or more: the partition grows, rounded down to the sector.
    resize(size + 100 * MIB + 100).await;
    assert_eq!(partition_of(&host.snapshot(), &id).size, size + 100 * MIB);
    // Beyond the disk: WMI 4097.
    let message = unknown(
        api.resize_volume(v::ResizeVolumeRequest {
            volume_id: id.clone(),
            size_bytes: (3 * GIB) as i64,
        })
        .await,
        &format!(
            "error resizing volume ({id}). size:3221225472, finalSize 3221225472, error: <nil>"
        ),
    );
    // v1.3 leaves Resize's return value out of its text.
    assert!(message.ends_with("error: <nil>"), "{message}");

    // FormatVolume has no guard: it wipes a formatted, mounted volume.
    let dir = staging("format");
    host.create_dir(&dir).expect("mkdir");
    ok(api
        .mount_volume(v::MountVolumeRequest {
            volume_id: id.clone(),
            target_path: dir.clone(),
        })
        .await);
    host.write_file(&format!(r"{dir}\data.bin"), &[1u8; 4096])
        .expect("write");
    let used = volume_of(&host.snapshot(), &id).used;
    ok(api
        .format_volume(v::FormatVolumeRequest {
            volume_id: id.clone(),
        })
        .await);
    assert!(!host.exists(&format!(r"{dir}\data.bin")), "contents wiped");
    let v = volume_of(&host.snapshot(), &id).clone();
    assert_eq!(v.fs, FileSystem::Ntfs);
    let size = partition_of(&host.snapshot(), &id).size;
    assert_eq!(v.used, ntfs_overhead(size), "a fresh format's overhead");
    assert!(used > ntfs_overhead(size - 100 * MIB));
    assert_eq!(
        mounted_at(host, &dir),
        std::slice::from_ref(&id),
        "mount points survive"
    );
}

async fn volume_lookups_by_path(node: &Node) {
    use volume::v1 as v;
    let api = &node.volume_v1;
    let host = &node.host;
    let c = c_volume(host);
    let lookup = |path: &str| {
        let request = v::GetVolumeIdFromTargetPathRequest {
            target_path: path.into(),
        };
        async move { api.get_volume_id_from_target_path(request).await }
    };
    // A symlink to an ordinary directory on C: resolves to C:.
    let plain = format!(r"{KUBELET}\plugins\plain");
    let link = format!(r"{KUBELET}\plugins\link-to-plain");
    host.create_dir(&plain).expect("mkdir");
    host.create_link(&link, LinkKind::Dir, &plain)
        .expect("link");
    assert_eq!(ok(lookup(&link).await).volume_id, c);
    // Drive roots and plain directories are not mounted folders.
    unknown(lookup(r"C:\").await, "not a mounted folder");
    unknown(lookup(&plain).await, "not a mounted folder");
    unknown(lookup(r"C:\nowhere").await, "The system cannot find");
    // The empty path, on the old name too.
    unknown(lookup("").await, "target path is empty");

    // GetClosestVolumeIDFromTargetPath walks up to the drive.
    let closest = ok(node
        .volume_v2alpha1
        .get_closest_volume_id_from_target_path(
            volume::v2alpha1::GetClosestVolumeIdFromTargetPathRequest {
                target_path: plain.clone(),
            },
        )
        .await);
    assert_eq!(closest.volume_id, c);
    let missing = format!(r"{plain}\missing");
    assert_eq!(
        unknown(
            node.volume_v2alpha1
                .get_closest_volume_id_from_target_path(
                    volume::v2alpha1::GetClosestVolumeIdFromTargetPathRequest {
                        target_path: missing.clone(),
                    },
                )
                .await,
            &format!("error getting the closest volume for the path={missing}, err="),
        ),
        format!(
            "error getting the closest volume for the path={missing}, err=CreateFile {missing}: \
             The system cannot find the file specified."
        )
    );
}

async fn offline_disks_hide_their_volumes(node: &Node) {
    use volume::v1 as v;
    let api = &node.volume_v1;
    let host = &node.host;
    let (n, id) = formatted_disk(node).await;
    let dir = staging("offline");
    host.create_dir(&dir).expect("mkdir");
    ok(api
        .mount_volume(v::MountVolumeRequest {
            volume_id: id.clone(),
            target_path: dir.clone(),
        })
        .await);
    host.write_file(&format!(r"{dir}\kept.txt"), b"kept")
        .expect("write");

    ok(node
        .disk_v1
        .set_disk_state(disk::v1::SetDiskStateRequest {
            disk_number: n,
            is_online: false,
        })
        .await);
    // Invisible to every lookup, but the mount point stays.
    let listed = ok(api
        .list_volumes_on_disk(v::ListVolumesOnDiskRequest {
            disk_number: n,
            partition_number: 0,
        })
        .await);
    assert!(listed.volume_ids.is_empty());
    unknown(
        api.get_volume_stats(v::GetVolumeStatsRequest {
            volume_id: id.clone(),
        })
        .await,
        &format!("failed to query volume {id}: not found"),
    );
    unknown(
        api.get_volume_id_from_target_path(v::GetVolumeIdFromTargetPathRequest {
            target_path: dir.clone(),
        })
        .await,
        "",
    );
    assert_eq!(mounted_at(host, &dir), std::slice::from_ref(&id));
    // PartitionDisk leaves a partitioned offline disk alone.
    let before = host.snapshot();
    ok(node
        .disk_v1
        .partition_disk(disk::v1::PartitionDiskRequest { disk_number: n })
        .await);
    assert_eq!(host.snapshot(), before);
    // Legacy text ids truncate to 32 bits: 4294967296 + n is disk n.
    let legacy = ok(node
        .volume_v1beta1
        .list_volumes_on_disk(volume::v1beta1::ListVolumesOnDiskRequest {
            disk_id: (4_294_967_296u64 + u64::from(n)).to_string(),
        })
        .await);
    assert!(legacy.volume_ids.is_empty());

    // Online again: the same id, contents and mount point.
    ok(node
        .disk_v1
        .set_disk_state(disk::v1::SetDiskStateRequest {
            disk_number: n,
            is_online: true,
        })
        .await);
    let legacy = ok(node
        .volume_v1beta1
        .list_volumes_on_disk(volume::v1beta1::ListVolumesOnDiskRequest {
            disk_id: (4_294_967_296u64 + u64::from(n)).to_string(),
        })
        .await);
    assert_eq!(legacy.volume_ids, std::slice::from_ref(&id));
    assert_eq!(
        host.read_file(&format!(r"{dir}\kept.txt")).expect("read"),
        b"kept"
    );
    let found = ok(api
        .get_volume_id_from_target_path(v::GetVolumeIdFromTargetPathRequest {
            target_path: dir.clone(),
        })
        .await);
    assert_eq!(found.volume_id, id);
}

// ---------------------------------------------------------- filesystem

async fn filesystem_link_semantics(node: &Node) {
    use filesystem::v1 as f;
    let api = &node.filesystem_v1;
    let host = &node.host;
    let base = format!(r"{KUBELET}\pods\links");
    host.create_dir(&base).expect("mkdir");
    let is_symlink = |path: String| async move {
        ok(api.is_symlink(f::IsSymlinkRequest { path }).await).is_symlink
    };
    let exists = |path: String| async move {
        ok(api.path_exists(f::PathExistsRequest { path }).await).exists
    };

    // A link to a missing source is a dangling file link: it exists (lstat)
    // but is not a symlink to anything, and Mkdir over it fails.
    let dangling = format!(r"{base}\dangling");
    let nowhere = format!(r"{base}\nowhere");
    ok(api
        .create_symlink(f::CreateSymlinkRequest {
            source_path: nowhere.clone(),
            target_path: dangling.clone(),
        })
        .await);
    assert!(is_link(host, &dangling, LinkKind::File, &nowhere));
    assert!(exists(dangling.clone()).await);
    assert!(!is_symlink(dangling.clone()).await);
    unknown(
        api.mkdir(f::MkdirRequest {
            path: dangling.clone(),
        })
        .await,
        "Cannot create a file when that file already exists.",
    );
    // Once the source exists, the link counts.
    host.write_file(&nowhere, b"now here").expect("write");
    assert!(is_symlink(dangling.clone()).await);

    // A volume mount point is a symlink for IsSymlink while its volume exists.
    let (_, id) = formatted_disk(node).await;
    let mount = format!(r"{base}\mount");
    host.create_dir(&mount).expect("mkdir");
    ok(node
        .volume_v1
        .mount_volume(volume::v1::MountVolumeRequest {
            volume_id: id.clone(),
            target_path: mount.clone(),
        })
        .await);
    assert!(is_symlink(mount.clone()).await);
    host.write_file(&format!(r"{mount}\on-volume.txt"), b"v")
        .expect("write");
    // Rmdir of the mount point removes the mount point, not the volume's files.
    ok(api
        .rmdir(f::RmdirRequest {
            path: mount.clone(),
            force: true,
        })
        .await);
    assert_eq!(entry(host, &mount), None);
    assert!(volume_of(&host.snapshot(), &id).used > 0);
    host.create_dir(&mount).expect("mkdir");
    ok(node
        .volume_v1
        .mount_volume(volume::v1::MountVolumeRequest {
            volume_id: id.clone(),
            target_path: mount.clone(),
        })
        .await);
    assert!(host.exists(&format!(r"{mount}\on-volume.txt")));

    // Mkdir follows intermediate links; RmdirContents follows a final one;
    // forced Rmdir never follows links inside the tree.
    let real = format!(r"{base}\real");
    let alias = format!(r"{base}\alias");
    host.create_dir(&real).expect("mkdir");
    ok(api
        .create_symlink(f::CreateSymlinkRequest {
            source_path: real.clone(),
            target_path: alias.clone(),
        })
        .await);
    assert!(is_link(host, &alias, LinkKind::Dir, &real));
    ok(api
        .mkdir(f::MkdirRequest {
            path: format!(r"{alias}\made\through"),
        })
        .await);
    assert_eq!(
        entry(host, &format!(r"{real}\made\through")),
        Some(Entry::Dir)
    );
    ok(node
        .filesystem_v2alpha1
        .rmdir_contents(filesystem::v2alpha1::RmdirContentsRequest {
            path: alias.clone(),
        })
        .await);
    assert!(host.list_dir(&real).expect("list").is_empty());
    assert!(is_link(host, &alias, LinkKind::Dir, &real));

    let tree = format!(r"{base}\tree");
    host.create_dir(&tree).expect("mkdir");
    host.write_file(&format!(r"{real}\keep.txt"), b"keep")
        .expect("write");
    host.create_link(&format!(r"{tree}\to-real"), LinkKind::Dir, &real)
        .expect("link");
    ok(api
        .rmdir(f::RmdirRequest {
            path: tree.clone(),
            force: true,
        })
        .await);
    assert_eq!(entry(host, &tree), None);
    assert!(host.exists(&format!(r"{real}\keep.txt")));
    // CreateSymlink does not replace an existing empty directory.
    unknown(
        api.create_symlink(f::CreateSymlinkRequest {
            source_path: real.clone(),
            target_path: base.clone(),
        })
        .await,
        "Cannot create a file when that file already exists.",
    );
}

async fn filesystem_validation_edges(node: &Node) {
    use filesystem::v1 as f;
    let api = &node.filesystem_v1;
    let host = &node.host;
    // Exactly 260 bytes is allowed.
    let prefix = format!(r"{KUBELET}\pods\");
    let path = format!("{prefix}{}", "y".repeat(260 - prefix.len()));
    assert_eq!(path.len(), 260);
    ok(api.mkdir(f::MkdirRequest { path: path.clone() }).await);
    assert_eq!(entry(host, &path), Some(Entry::Dir));
    // Multi-byte characters count per byte.
    let wide = format!("{prefix}{}", "é".repeat((261 - prefix.len()) / 2 + 1));
    unknown(
        api.mkdir(f::MkdirRequest { path: wide.clone() }).await,
        &format!("path length {} exceeds maximum characters: 260", wide.len()),
    );
    // Single '.' components and doubled separators are normalised away.
    ok(api
        .mkdir(f::MkdirRequest {
            path: format!(r"{KUBELET}\.\pods\\dotted"),
        })
        .await);
    assert_eq!(
        entry(host, &format!(r"{KUBELET}\pods\dotted")),
        Some(Entry::Dir)
    );
    // A forced Rmdir of a path ending in '.' is refused like Go's RemoveAll.
    let dot = format!(r"{KUBELET}\pods\dotted\.");
    unknown(
        api.rmdir(f::RmdirRequest {
            path: dot.clone(),
            force: true,
        })
        .await,
        &format!("RemoveAll {dot}: invalid argument"),
    );
    assert_eq!(
        entry(host, &format!(r"{KUBELET}\pods\dotted")),
        Some(Entry::Dir)
    );
    // A share is never a link's source: the path check refuses a leading
    // '\' before it looks for UNC (csi-proxy v1.1.3 and v1.3.0,
    // pkg/server/filesystem/server.go `validatePathWindows`), so only
    // NewSmbGlobalMapping's LocalPath links to a share, and with it comes
    // its validity check (docs/safety.md, "The window the proxy leaves
    // open").
    let share_link = format!(r"{KUBELET}\pods\share-link");
    unknown(
        api.create_symlink(f::CreateSymlinkRequest {
            source_path: r"\\fileserver\share\dir".to_string(),
            target_path: share_link.clone(),
        })
        .await,
        r"invalid character \ at beginning of path: \\fileserver\share\dir",
    );
    assert_eq!(entry(host, &share_link), None);
    // Rmdir without force removes files too; IsSymlink is not confined.
    let file = format!(r"{KUBELET}\pods\f.txt");
    host.write_file(&file, b"f").expect("write");
    ok(api
        .rmdir(f::RmdirRequest {
            path: file.clone(),
            force: false,
        })
        .await);
    assert!(!host.exists(&file));
    assert!(
        !ok(api
            .is_symlink(f::IsSymlinkRequest {
                path: r"C:\".into()
            })
            .await)
        .is_symlink
    );
}

/// Paths that would leave the sandbox on a careless implementation: the
/// host must stay inside its root whatever validation lets through.
async fn sandbox_stays_closed(node: &Node) {
    use filesystem::v1 as f;
    let api = &node.filesystem_v1;
    let host = &node.host;
    let sandbox_root = host.host_path(r"C:\").expect("C: maps into the sandbox");

    // IsSymlink is unvalidated: '..' cannot climb above the drive.
    unknown(
        api.is_symlink(f::IsSymlinkRequest {
            path: r"C:\var\lib\kubelet\..\..\..\..\..\etc\passwd".into(),
        })
        .await,
        "The system cannot find",
    );
    // Relative and device paths are refused by the host.
    for path in [r"..\..\etc", r"\\.\PhysicalDrive0", "/etc/passwd"] {
        unknown(
            api.is_symlink(f::IsSymlinkRequest { path: path.into() })
                .await,
            "",
        );
    }
    // A UNC path without a mapping is not reachable.
    unknown(
        api.is_symlink(f::IsSymlinkRequest {
            path: r"\\fileserver\share\x".into(),
        })
        .await,
        "",
    );
    // A Linux path as a link source is refused by validation.
    unknown(
        api.create_symlink(f::CreateSymlinkRequest {
            source_path: "/etc".into(),
            target_path: format!(r"{KUBELET}\pods\etc"),
        })
        .await,
        "path contains invalid characters",
    );
    // A link inside the working dir pointing outside it is followed (as on
    // Windows), but only inside the simulated C: drive.
    let escape = format!(r"{KUBELET}\pods\escape");
    host.create_dir(r"C:\Windows").expect("mkdir");
    host.create_dir(parent(&escape)).expect("mkdir");
    host.create_link(&escape, LinkKind::Dir, r"C:\Windows")
        .expect("link");
    ok(api
        .mkdir(f::MkdirRequest {
            path: format!(r"{escape}\evil"),
        })
        .await);
    assert_eq!(entry(host, r"C:\Windows\evil"), Some(Entry::Dir));
    let made = host.host_path(r"C:\Windows\evil").expect("host path");
    assert!(
        made.starts_with(&sandbox_root),
        "{made:?} outside {sandbox_root:?}"
    );
    // Forced removal through the link removes the link only.
    ok(api
        .rmdir(f::RmdirRequest {
            path: escape.clone(),
            force: true,
        })
        .await);
    assert_eq!(entry(host, r"C:\Windows\evil"), Some(Entry::Dir));
}

// ----------------------------------------------------------------- smb

async fn smb_remapping_rules(node: &Node) {
    use smb::v1 as s;
    let api = &node.smb_v1;
    let host = &node.host;
    let root = r"\\fileserver\share";
    let new = |password: &str| {
        let request = s::NewSmbGlobalMappingRequest {
            remote_path: format!(r"{root}\pv"),
            local_path: String::new(),
            username: "smbuser".into(),
            password: password.into(),
        };
        async move { api.new_smb_global_mapping(request).await }
    };
    ok(new("Sm8-Passw0rd!").await);
    // While the mapping is valid, new credentials are ignored.
    ok(new("ignored").await);
    assert_eq!(
        smb_mapping(host, root).expect("mapped").credential,
        Some(("smbuser".into(), "Sm8-Passw0rd!".into()))
    );
    // The password changes on the server: the root is no longer valid, so
    // the next call remaps with the new credentials.
    host.lock()
        .smb
        .set_account_password("fileserver", "smbuser", "N3w-Passw0rd!")
        .expect("hook");
    ok(new("N3w-Passw0rd!").await);
    assert_eq!(
        smb_mapping(host, root).expect("mapped").credential,
        Some(("smbuser".into(), "N3w-Passw0rd!".into()))
    );
    // A mapping in another state than OK counts as not mapped: creating it
    // again collides with the existing one.
    host.lock()
        .smb
        .set_mapping_status(root, MappingStatus::Disconnected)
        .expect("hook");
    // ERROR_ALREADY_ASSIGNED (85): the local device name is already in use.
    assert_eq!(
        unknown(new("N3w-Passw0rd!").await, "already in use"),
        "NewSmbGlobalMapping failed. result: -1, err: Exception occurred. \
         (The local device name is already in use. )"
    );
    assert_eq!(
        smb_mapping(host, root).expect("kept").status,
        MappingStatus::Disconnected
    );
    // Removal works in any state.
    ok(api
        .remove_smb_global_mapping(s::RemoveSmbGlobalMappingRequest {
            remote_path: root.into(),
        })
        .await);
    assert!(smb_roots(host).is_empty());
    // With a local path the mapping part is idempotent, the link is not.
    let local = format!(r"{KUBELET}\pods\smb-link");
    host.create_dir(parent(&local)).expect("mkdir");
    let with_link = || {
        let request = s::NewSmbGlobalMappingRequest {
            remote_path: format!(r"{root}\pv"),
            local_path: local.clone(),
            username: "smbuser".into(),
            password: "N3w-Passw0rd!".into(),
        };
        async move { api.new_smb_global_mapping(request).await }
    };
    ok(with_link().await);
    unknown(with_link().await, "creating link");
    assert_eq!(smb_roots(host), [root]);
    // Forward slashes are accepted in the remote path.
    ok(api
        .remove_smb_global_mapping(s::RemoveSmbGlobalMappingRequest {
            remote_path: "//FileServer/Share/pv".into(),
        })
        .await);
    assert!(smb_roots(host).is_empty());
}

// --------------------------------------------------------------- iscsi

async fn iscsi_port_and_login_rules(node: &Node) {
    use iscsi::v1alpha2 as i;
    let api = &node.iscsi_v1alpha2;
    set_service_status(&node.host, "MSiSCSI", ServiceStatus::Running);
    // Ports above 65535 are truncated to 16 bits: 68796 is 3260.
    let portal = |port: u32| {
        Some(i::TargetPortal {
            target_address: "10.0.0.20".into(),
            target_port: port,
        })
    };
    ok(api
        .add_target_portal(i::AddTargetPortalRequest {
            target_portal: portal(68796),
        })
        .await);
    let listed = ok(api
        .list_target_portals(i::ListTargetPortalsRequest {})
        .await);
    assert_eq!(listed.target_portals, [portal(3260).unwrap()]);
    // Logging in again with wrong credentials does nothing (no re-auth).
    let chap = "iqn.1991-05.com.microsoft:storage01-chap-target";
    let connect = |secret: &str| {
        let request = i::ConnectTargetRequest {
            target_portal: portal(0),
            iqn: chap.into(),
            auth_type: i::AuthenticationType::OneWayChap as i32,
            chap_username: "someuser".into(),
            chap_secret: secret.into(),
        };
        async move { api.connect_target(request).await }
    };
    ok(connect("verysecretpass").await);
    ok(connect("wrong-secret!").await);
    assert_eq!(node.host.lock().iscsi.sessions().len(), 1);
    // The target's disk works with the disk group: online, partition,
    // offline (upstream's full flow).
    let disks = ok(api
        .get_target_disks(i::GetTargetDisksRequest {
            target_portal: portal(3260),
            iqn: chap.into(),
        })
        .await);
    let n: u32 = disks.disk_i_ds[0].parse().expect("a disk number");
    let d = &node.disk_v1beta3;
    use disk::v1beta3 as dk;
    ok(d.set_disk_state(dk::SetDiskStateRequest {
        disk_number: n,
        is_online: true,
    })
    .await);
    ok(
        d.partition_disk(dk::PartitionDiskRequest { disk_number: n })
            .await,
    );
    ok(d.set_disk_state(dk::SetDiskStateRequest {
        disk_number: n,
        is_online: false,
    })
    .await);
    let s = node.host.snapshot();
    assert_eq!(disk_of(&s, n).partitions.len(), 2);
    assert!(disk_of(&s, n).is_offline);
    // Logging out detaches it.
    ok(api
        .disconnect_target(i::DisconnectTargetRequest {
            target_portal: portal(3260),
            iqn: chap.into(),
        })
        .await);
    assert!(node.host.snapshot().disk(n).is_none());
    ok(api
        .remove_target_portal(i::RemoveTargetPortalRequest {
            target_portal: portal(0),
        })
        .await);
}

// -------------------------------------------------------------- system

async fn system_dependencies_and_failures(node: &Node) {
    use system::v1alpha1 as s;
    let api = &node.system_v1alpha1;
    let host = &node.host;
    // Starting a service starts its stopped antecedents first.
    set_service_status(host, "LanmanServer", ServiceStatus::Stopped);
    set_service_status(host, "SamSS", ServiceStatus::Stopped);
    ok(api
        .start_service(s::StartServiceRequest {
            name: "Netlogon".into(),
        })
        .await);
    for name in ["Netlogon", "LanmanServer", "SamSS", "LanmanWorkstation"] {
        assert_eq!(service_status(host, name), ServiceStatus::Running, "{name}");
    }
    // A disabled service does not start (return code 14).
    host.lock().system.insert_service(Service::new(
        "Off",
        "Disabled service",
        StartMode::Disabled,
        ServiceStatus::Stopped,
    ));
    let message = unknown(
        api.start_service(s::StartServiceRequest { name: "Off".into() })
            .await,
        "error starting service name Off. return value: 14",
    );
    assert!(
        message.starts_with("failed to wait for service Off state change."),
        "{message}"
    );
    assert_eq!(service_status(host, "Off"), ServiceStatus::Stopped);
    let off = ok(api
        .get_service(s::GetServiceRequest { name: "off".into() })
        .await);
    assert_eq!(off.start_type, s::StartType::Disabled as i32);
    // An unknown start mode reads as BOOT.
    host.lock().system.insert_service(Service::new(
        "Odd",
        "Odd start mode",
        StartMode::Other("Delayed".into()),
        ServiceStatus::Running,
    ));
    let odd = ok(api
        .get_service(s::GetServiceRequest { name: "Odd".into() })
        .await);
    assert_eq!(odd.start_type, s::StartType::Boot as i32);
    // A service that never leaves Start Pending times out.
    let mut hung = Service::new("Hung", "Hangs", StartMode::Manual, ServiceStatus::Stopped);
    hung.hang = true;
    hung.start_delay = std::time::Duration::from_millis(1);
    host.lock().system.insert_service(hung);
    host.lock().system.set_timing(ServiceTiming {
        poll_interval: std::time::Duration::from_millis(5),
        timeout: std::time::Duration::from_millis(150),
    });
    assert_eq!(
        unknown(
            api.start_service(s::StartServiceRequest {
                name: "Hung".into(),
            })
            .await,
            "timed out waiting for service Hung to become running",
        ),
        "timed out waiting for service Hung to become running"
    );
    let info = ok(api
        .get_service(s::GetServiceRequest {
            name: "Hung".into(),
        })
        .await);
    assert_eq!(info.status, s::ServiceStatus::StartPending as i32);
}
