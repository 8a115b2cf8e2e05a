//! Every `Node` operation on a real Windows node, in HostProcess mode or
//! through a real csi-proxy (`CSI_REAL_NODE_MODE`), against what
//! `scripts/windows/new-test-node.ps1` made: VHDX disks by role (`blank`,
//! `boundary`, `gpt-data`, `mbr-system-reserved`, `read-only`, `offline`),
//! a localhost SMB share with two local accounts, and an iSCSI target when
//! the runner allows one. Every change goes through `guarded.rs`.
//!
//! The data written by the script (a file named [`DATA_FILE`] holding the
//! workspace token) is what proves a disk was mounted, not formatted.
//! Run one at a time (`--test-threads=1`): they rescan the host's disks.

use std::future::Future;

use csi_proxy_client::host_process::WindowsHost;
use csi_proxy_client::host_process::boundary::{PARTITION_STYLE_GPT, PARTITION_STYLE_RAW};
use csi_proxy_client::host_process::windows::LocalHost;
use csi_proxy_client::node::{MountState, SmbCredentials};
use csi_proxy_client::{Error, ErrorKind, HostCode};

use super::guard::DiskEntry;
use super::guarded::{GuardedNode, Mode, OwnedHost, Workspace, smb_map, smb_password, smb_unmap};

/// The file the script writes on every disk that holds data.
const DATA_FILE: &str = "csi-real-node.txt";
const BASIC_DATA: &str = "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}";
const MIB: u64 = 1024 * 1024;

fn run<F: Future>(f: F) -> F::Output {
    tokio::runtime::Runtime::new().unwrap().block_on(f)
}

fn disk_object(number: u32) -> csi_proxy_client::host_process::boundary::DiskObject {
    LocalHost
        .disks()
        .unwrap()
        .into_iter()
        .find(|d| d.number == number)
        .unwrap_or_else(|| panic!("no disk {number}"))
}

/// The token the script wrote in [`DATA_FILE`] on the volume at `path`.
fn read_data(path: &str) -> String {
    let file = format!(r"{path}\{DATA_FILE}");
    std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{file}: {e} (was the volume formatted?)"))
        .trim_start_matches('\u{feff}')
        .trim()
        .to_string()
}

fn same_volume(a: &str, b: &str) -> bool {
    a.trim_end_matches('\\')
        .eq_ignore_ascii_case(b.trim_end_matches('\\'))
}

/// The parent kubelet makes for a publish target.
fn make_parent(target: &str) {
    let parent = std::path::Path::new(target).parent().unwrap();
    std::fs::create_dir_all(parent).unwrap();
}

/// The guard's live half where nothing was made for it: a workspace
/// whose manifest names a VHDX no attached disk is made of opens, but
/// hands out no disk; a marker without the token refuses the workspace.
/// Not ignored: it runs under Wine too, where WMI lists no disk at all.
#[test]
fn the_guard_hands_out_no_disk_that_is_not_attached() {
    let _wmi = super::boundary::wmi_lock();
    let dir = std::env::temp_dir().join(format!("csi-real-node-guard-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let root = dir.to_str().unwrap().to_string();
    let token = "guard-token-0123456789";
    let manifest = serde_json::json!({
        "root": root,
        "token": token,
        "kubelet": [r"C:\var\lib\kubelet\plugins\csi-real-node"],
        "disks": [{"role": "blank", "vhdx": format!(r"{root}\blank.vhdx")}],
    });
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(dir.join("csi-real-node.marker"), token).unwrap();
    let message = |f: &dyn Fn()| {
        let e = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_err();
        e.downcast_ref::<String>().cloned().unwrap_or_default()
    };

    let ws = Workspace::open_at(&root);
    let refused = message(&|| {
        ws.disk("blank");
    });
    assert!(refused.contains("no attached disk is made of"), "{refused}");
    let refused = message(&|| {
        ws.disk("offline");
    });
    assert!(refused.contains("no offline disk"), "{refused}");

    std::fs::write(dir.join("csi-real-node.marker"), "another-token-0123456789").unwrap();
    let refused = message(&|| {
        Workspace::open_at(&root);
    });
    assert!(
        refused.contains("does not hold the manifest's token"),
        "{refused}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "real node: needs the workspace of scripts/windows/new-test-node.ps1 (CSI_REAL_NODE_DIR)"]
fn real_node_the_workspace_manifest_names_every_disk_it_made() {
    let ws = Workspace::open();
    let roles: Vec<&str> = ws
        .manifest()
        .disks
        .iter()
        .map(|d: &DiskEntry| d.role.as_str())
        .collect();
    for role in [
        "blank",
        "boundary",
        "gpt-data",
        "mbr-system-reserved",
        "read-only",
        "offline",
    ] {
        assert!(roles.contains(&role), "{role} missing from {roles:?}");
        let disk = ws.disk(role);
        let object = disk_object(disk.number());
        assert!(
            object.is_system == Some(false) && object.is_boot == Some(false),
            "{object:?}"
        );
    }
}

/// A blank disk through every disk operation: found, staged (partitioned
/// GPT, formatted NTFS, mounted), staged again, published, written through
/// the pod's link, measured, expanded (nothing to grow), unpublished,
/// unstaged with the disk taken offline; then staged again from offline,
/// which must mount the volume with its file, not format it again.
#[test]
#[ignore = "real node: needs the workspace of scripts/windows/new-test-node.ps1 (CSI_REAL_NODE_DIR)"]
fn real_node_a_blank_disk_is_staged_published_used_and_released() {
    let ws = Workspace::open();
    let disk = ws.disk("blank");
    let staging = ws.staging("blank");
    let target = ws.target(r"blank\mount");
    run(async {
        let g = GuardedNode::open(&ws).await;
        let found = g.find_disk(&disk).await.unwrap();
        assert_eq!(found.number, disk.number());
        assert_ne!(found.os_disk, Some(true), "{found:?}");

        let volume = g.stage_disk(&disk, &staging).await.unwrap();
        assert!(volume.starts_with(r"\\?\Volume{"), "{volume}");
        assert_eq!(g.stage_disk(&disk, &staging).await.unwrap(), volume);
        // What Windows says, not the node: GPT, a basic data partition
        // holding the volume, NTFS, mounted at the staging path.
        assert_eq!(
            disk_object(disk.number()).partition_style,
            PARTITION_STYLE_GPT
        );
        let at = LocalHost.volume_name_for_mount_point(&staging).unwrap();
        assert!(same_volume(&at, &volume), "{at} vs {volume}");
        let part = &LocalHost.volume_partitions(&at).unwrap()[0];
        assert_eq!(
            (part.disk_number, part.gpt_type.as_str()),
            (disk.number(), BASIC_DATA)
        );
        assert_eq!(
            LocalHost.volumes(&at).unwrap()[0].file_system_type,
            14,
            "NTFS"
        );
        assert!(matches!(
            g.node().mount_state(&staging).await.unwrap(),
            MountState::Mounted { .. }
        ));

        make_parent(&target);
        g.publish(&staging, &target).await.unwrap();
        g.publish(&staging, &target).await.unwrap();
        std::fs::write(
            format!(r"{target}\{DATA_FILE}"),
            ws.manifest().token.as_bytes(),
        )
        .unwrap();
        assert_eq!(read_data(&staging), ws.manifest().token);

        // The whole 1 GiB disk but the MSR partition GPT keeps.
        let usage = g.node().usage(&staging).await.unwrap();
        assert!(
            usage.total_bytes > 800 * MIB && usage.total_bytes <= 1024 * MIB,
            "{usage:?}"
        );
        assert!(
            usage.used_bytes > 0 && usage.available_bytes < usage.total_bytes,
            "{usage:?}"
        );
        // Nothing to grow: no error, the size as it was.
        let size = g.expand(&staging).await.unwrap();
        assert!(size > 800 * MIB && size <= 1024 * MIB, "{size} {usage:?}");

        g.unpublish(&target).await.unwrap();
        g.unpublish(&target).await.unwrap();
        assert!(!std::path::Path::new(&target).exists());
        assert_eq!(
            read_data(&staging),
            ws.manifest().token,
            "unpublish kept the volume"
        );

        let found = g.unstage(&staging, true).await.unwrap();
        assert!(matches!(found, MountState::Mounted { .. }), "{found:?}");
        assert!(!std::path::Path::new(&staging).exists());
        assert!(
            disk_object(disk.number()).is_offline,
            "unstage with offline"
        );
        assert_eq!(
            g.unstage(&staging, true).await.unwrap(),
            MountState::Missing
        );

        // Offline, holding NTFS and a file: staged again, mounted as it is.
        g.stage_disk(&disk, &staging).await.unwrap();
        assert_eq!(read_data(&staging), ws.manifest().token, "formatted again");
        g.unstage(&staging, false).await.unwrap();
    });
}

/// A GPT disk the script partitioned (300 MiB of 1 GiB, basic data, NTFS,
/// a file): staged without a format, grown over the free space by expand
/// with the file kept. Before the growth, the disk is made read-only and
/// the resize must fail as the node expects a read-only refusal to look
/// (41002 or 43006 from WMI, or Win32 19): the log line
/// `real-node: read-only resize` says which it was.
#[test]
#[ignore = "real node: needs the workspace of scripts/windows/new-test-node.ps1 (CSI_REAL_NODE_DIR)"]
fn real_node_a_disk_holding_data_is_mounted_not_formatted_and_grown() {
    let ws = Workspace::open();
    let host = OwnedHost::new(&ws, "gpt-data");
    let disk = ws.disk("gpt-data");
    let staging = ws.staging("gpt-data");
    let before = LocalHost.partitions(disk.number()).unwrap();
    let data = before
        .iter()
        .find(|p| p.gpt_type == BASIC_DATA)
        .unwrap_or_else(|| panic!("no basic data partition: {before:#?}"))
        .clone();
    assert!(data.size < 400 * MIB, "{data:?}");
    run(async {
        let g = GuardedNode::open(&ws).await;
        g.stage_disk(&disk, &staging).await.unwrap();
        assert_eq!(read_data(&staging), ws.manifest().token, "formatted");

        assert_eq!(host.set_read_only(true).unwrap().code, 0);
        let refused = g.expand(&staging).await.unwrap_err();
        eprintln!(
            "real-node: read-only resize ({:?}): {:?}: {refused}",
            g.mode(),
            refused.host_code()
        );
        assert!(
            matches!(
                refused.host_code(),
                Some(HostCode::WmiResult(41002 | 43006)) | Some(HostCode::Win32(19))
            ),
            "{refused:?}"
        );
        assert_eq!(host.set_read_only(false).unwrap().code, 0);

        let size = g.expand(&staging).await.unwrap();
        let after = LocalHost.partitions(disk.number()).unwrap();
        let grown = after
            .iter()
            .find(|p| p.partition_number == data.partition_number)
            .unwrap();
        assert!(grown.size > 800 * MIB, "{grown:?}");
        assert!(size > 800 * MIB, "{size}");
        assert_eq!(read_data(&staging), ws.manifest().token);
        // Grown already: nothing to grow is no error.
        assert_eq!(g.expand(&staging).await.unwrap(), size);
        g.unstage(&staging, false).await.unwrap();
    });
}

/// An MBR disk as Windows setup lays one out: a 100 MiB active "System
/// Reserved" partition, then the data partition. The partition types read
/// as the node chooses by them, and the volume staged is the data one.
#[test]
#[ignore = "real node: needs the workspace of scripts/windows/new-test-node.ps1 (CSI_REAL_NODE_DIR)"]
fn real_node_an_mbr_disk_stages_its_data_partition_not_system_reserved() {
    let ws = Workspace::open();
    let disk = ws.disk("mbr-system-reserved");
    let staging = ws.staging("mbr");
    let parts = LocalHost.partitions(disk.number()).unwrap();
    assert_eq!(parts.len(), 2, "{parts:#?}");
    let reserved = parts
        .iter()
        .find(|p| p.is_active)
        .expect("an active partition");
    let data = parts
        .iter()
        .find(|p| !p.is_active)
        .expect("a data partition");
    assert!(
        reserved.size <= 128 * MIB && data.size > reserved.size,
        "{parts:#?}"
    );
    assert_eq!((reserved.mbr_type, data.mbr_type), (0x07, 0x07), "IFS both");
    assert!(!reserved.is_system && !reserved.is_hidden, "{reserved:?}");
    run(async {
        let g = GuardedNode::open(&ws).await;
        let volume = g.stage_disk(&disk, &staging).await.unwrap();
        let on = &LocalHost.volume_partitions(&volume).unwrap()[0];
        assert_eq!(on.partition_number, data.partition_number, "staged {on:?}");
        assert_eq!(read_data(&staging), ws.manifest().token);
        g.unstage(&staging, false).await.unwrap();
    });
    let after = LocalHost.partitions(disk.number()).unwrap();
    assert_eq!(after.len(), 2, "partitions unchanged: {after:#?}");
}

/// A blank disk marked read-only (`Set-Disk -IsReadOnly`). HostProcess
/// mode makes it writable and stages it; through the proxy, whose API can
/// neither read nor clear the flag, staging fails as `ReadOnlyDisk` and
/// the disk is left blank and read-only.
#[test]
#[ignore = "real node: needs the workspace of scripts/windows/new-test-node.ps1 (CSI_REAL_NODE_DIR)"]
fn real_node_a_read_only_disk_is_made_writable_or_refused_by_mode() {
    let ws = Workspace::open();
    let disk = ws.disk("read-only");
    let staging = ws.staging("read-only");
    assert!(
        disk_object(disk.number()).is_read_only,
        "the script left it writable"
    );
    run(async {
        let g = GuardedNode::open(&ws).await;
        let found = g.find_disk(&disk).await.unwrap();
        match g.mode() {
            Mode::HostProcess => {
                assert_eq!(found.read_only, Some(true), "{found:?}");
                g.stage_disk(&disk, &staging).await.unwrap();
                assert!(!disk_object(disk.number()).is_read_only);
                std::fs::write(format!(r"{staging}\w"), b"writable").unwrap();
                g.unstage(&staging, false).await.unwrap();
            }
            Mode::Proxy => {
                let err = g.stage_disk(&disk, &staging).await.unwrap_err();
                eprintln!("real-node: read-only stage through the proxy: {err}");
                assert!(matches!(err, Error::ReadOnlyDisk { .. }), "{err:?}");
                let object = disk_object(disk.number());
                assert!(object.is_read_only, "{object:?}");
                assert_eq!(object.partition_style, PARTITION_STYLE_RAW, "{object:?}");
            }
        }
    });
}

/// A disk holding data, left offline by the script: staged (onlined,
/// mounted, not formatted), then unstaged with the disk offline again.
#[test]
#[ignore = "real node: needs the workspace of scripts/windows/new-test-node.ps1 (CSI_REAL_NODE_DIR)"]
fn real_node_an_offline_disk_is_onlined_staged_and_offlined() {
    let ws = Workspace::open();
    let disk = ws.disk("offline");
    let staging = ws.staging("offline");
    assert!(
        disk_object(disk.number()).is_offline,
        "the script left it online"
    );
    run(async {
        let g = GuardedNode::open(&ws).await;
        assert_eq!(g.find_disk(&disk).await.unwrap().number, disk.number());
        g.stage_disk(&disk, &staging).await.unwrap();
        assert!(!disk_object(disk.number()).is_offline);
        assert_eq!(read_data(&staging), ws.manifest().token, "formatted");
        g.unstage(&staging, true).await.unwrap();
        assert!(disk_object(disk.number()).is_offline);
    });
}

/// The disk Windows runs from, as the node reports it: marked as the OS
/// disk (HostProcess: `IsSystem`/`IsBoot`; through the proxy when it can
/// tell), never selectable, and no selector finds it. Changes nothing.
#[test]
#[ignore = "real node: needs the workspace of scripts/windows/new-test-node.ps1 (CSI_REAL_NODE_DIR)"]
fn real_node_the_os_disk_is_marked_and_never_found() {
    let ws = Workspace::open();
    let system = LocalHost
        .volume_name_for_mount_point(&LocalHost.volume_path_name(r"C:\Windows").unwrap())
        .unwrap();
    let os = LocalHost.volume_partitions(&system).unwrap()[0].disk_number;
    let object = disk_object(os);
    assert!(
        object.is_system == Some(true) || object.is_boot == Some(true),
        "{object:?}"
    );
    run(async {
        let g = GuardedNode::open(&ws).await;
        let disks = g.node().disks().await.unwrap();
        let info = disks
            .iter()
            .find(|d| d.number == os)
            .expect("the OS disk listed");
        eprintln!("real-node: the OS disk as {:?} sees it: {info:?}", g.mode());
        if g.mode() == Mode::HostProcess {
            assert_eq!(info.os_disk, Some(true), "{info:?}");
        }
        assert_ne!(info.os_disk, Some(false), "{info:?}");
        if info.os_disk == Some(true) {
            assert!(!info.selectable());
            let found = g
                .node()
                .find_disk(csi_proxy_client::node::DiskSelector::Number(os))
                .await;
            assert!(found.is_err(), "{found:?}");
        }
    });
}

/// The boundary on a disk of its own, one WMI method at a time: online,
/// GPT, one basic-data partition, NTFS, mounted on a directory, flushed,
/// its supported sizes, the mount point removed, offline again.
#[test]
#[ignore = "real node: needs the workspace of scripts/windows/new-test-node.ps1 (CSI_REAL_NODE_DIR)"]
fn real_node_the_boundary_partitions_formats_mounts_and_releases_a_disk() {
    const ERROR_DIR_NOT_EMPTY: u32 = 145;
    let ws = Workspace::open();
    let host = OwnedHost::new(&ws, "boundary");
    let number = host.number();
    assert_eq!(LocalHost.update_host_storage_cache().unwrap().code, 0);
    host.set_online(true).unwrap();
    let disk = disk_object(number);
    assert!(!disk.is_offline, "{disk:?}");
    assert_eq!(disk.partition_style, PARTITION_STYLE_RAW, "{disk:?}");
    assert_eq!(host.initialize(PARTITION_STYLE_GPT).unwrap().code, 0);
    assert_ne!(
        LocalHost.disk_device_id(&disk.path).unwrap(),
        csi_proxy_client::host_process::boundary::DeviceId::None,
        "{disk:?}"
    );
    let code = host.create_partition(BASIC_DATA).unwrap().code;
    // 42002: made, but the access path could not be assigned.
    assert!(code == 0 || code == 42002, "CreatePartition: {code}");
    assert_eq!(host.refresh().unwrap().code, 0);
    let partition = LocalHost
        .partitions(number)
        .unwrap()
        .into_iter()
        .find(|p| p.gpt_type == BASIC_DATA)
        .expect("a basic data partition");
    let volumes = LocalHost
        .partition_volumes(number, partition.partition_number)
        .unwrap();
    assert_eq!(volumes.len(), 1, "{volumes:?}");
    let volume = volumes[0].unique_id.clone();
    assert_eq!(host.format(&volume).unwrap().code, 0);
    let formatted = &LocalHost.volumes(&volume).unwrap()[0];
    assert_eq!(formatted.file_system_type, 14, "NTFS: {formatted:?}");

    let mount = format!(r"{}\m\", ws.staging("boundary"));
    std::fs::create_dir_all(&mount).unwrap();
    host.mount(&mount, &volume).unwrap();
    std::fs::write(format!(r"{mount}data"), b"payload").unwrap();
    // The same volume again on its (now full) directory: 145, which the
    // backend takes as done when the volume is the same.
    match host.mount(&mount, &volume) {
        Err(csi_proxy_client::host_process::Failure::Win32 { code, .. }) => {
            assert_eq!(code, ERROR_DIR_NOT_EMPTY)
        }
        other => panic!("{other:?}"),
    }
    assert!(same_volume(
        &LocalHost.volume_name_for_mount_point(&mount).unwrap(),
        &volume
    ));
    assert_eq!(
        LocalHost
            .volume_path_name(&format!(r"{mount}data"))
            .unwrap(),
        mount
    );
    assert_eq!(LocalHost.volume_flush(&volume).unwrap().code, 0);
    let sizes = LocalHost
        .partition_supported_size(number, partition.partition_number)
        .unwrap();
    assert_eq!(sizes.code, 0);
    assert!(sizes.out.min <= partition.size && partition.size <= sizes.out.max);
    if sizes.out.max > partition.size {
        assert_eq!(
            host.resize(partition.partition_number, sizes.out.max)
                .unwrap()
                .code,
            0
        );
    }
    LocalHost.delete_volume_mount_point(&mount).unwrap();
    assert_eq!(
        LocalHost.file_kind(mount.trim_end_matches('\\')).unwrap(),
        csi_proxy_client::host_process::boundary::FileKind::Directory
    );
    assert_eq!(host.set_online(false).unwrap().code, 0);
    std::fs::remove_dir_all(ws.staging("boundary")).unwrap();
}

/// The share staged for two volumes, written through the link, measured
/// (`GetDiskFreeSpaceExW` on a share), published, and released: the
/// mapping stays while a volume uses it and goes with the last.
#[test]
#[ignore = "real node: needs the workspace of scripts/windows/new-test-node.ps1 (CSI_REAL_NODE_DIR)"]
fn real_node_an_smb_share_is_staged_written_and_released() {
    let ws = Workspace::open();
    let smb = ws
        .manifest()
        .smb
        .clone()
        .expect("no SMB share in the manifest");
    let credentials = ws.smb_credentials();
    let (one, two) = (ws.staging("smb-1"), ws.staging("smb-2"));
    let target = ws.target(r"smb\mount");
    let mappings = || LocalHost.smb_global_mappings(&smb.share).unwrap();
    run(async {
        let g = GuardedNode::open(&ws).await;
        g.smb_stage(&smb.share, &one, &credentials).await.unwrap();
        g.smb_stage(&smb.share, &one, &credentials).await.unwrap();
        let made = mappings();
        assert_eq!(made.len(), 1, "{made:?}");
        assert_eq!(made[0].status, 0, "OK: {made:?}");
        assert_eq!(
            g.node().mount_state(&one).await.unwrap(),
            MountState::Linked
        );
        g.smb_stage(&smb.share, &two, &credentials).await.unwrap();

        std::fs::write(format!(r"{one}\from-the-node.txt"), b"through the link").unwrap();
        let seen = std::fs::read(format!(r"{}\from-the-node.txt", smb.local_path)).unwrap();
        assert_eq!(seen, b"through the link");
        let stats = g.node().smb_share_stats(&one).await.unwrap();
        eprintln!("real-node: share stats ({:?}): {stats:?}", g.mode());
        let usage = stats.usage.expect("GetDiskFreeSpaceExW on the share");
        assert!(
            usage.total_bytes > 0 && usage.available_bytes <= usage.total_bytes,
            "{usage:?}"
        );

        make_parent(&target);
        g.publish(&one, &target).await.unwrap();
        assert_eq!(
            std::fs::read(format!(r"{target}\from-the-node.txt")).unwrap(),
            b"through the link"
        );
        g.unpublish(&target).await.unwrap();

        assert_eq!(g.unstage(&one, false).await.unwrap(), MountState::Linked);
        assert_eq!(mappings().len(), 1, "the second volume still uses it");
        assert_eq!(g.unstage(&two, false).await.unwrap(), MountState::Linked);
        assert!(mappings().is_empty(), "{:?}", mappings());
        assert_eq!(g.unstage(&one, false).await.unwrap(), MountState::Missing);
        assert!(!std::path::Path::new(&one).exists() && !std::path::Path::new(&two).exists());
        // The share keeps what was written: unstaging removed links only.
        assert!(std::path::Path::new(&format!(r"{}\from-the-node.txt", smb.local_path)).exists());
    });
}

/// A second share of the same server under a second account while the
/// first is mapped: Windows may refuse it (1219, one account per server;
/// Windows Server 2025 does) or map it. Either way the node must say
/// which: refused as `CredentialsConflict` with nothing changed, or
/// staged with both mappings OK. The log line says which this runner did.
#[test]
#[ignore = "real node: needs the workspace of scripts/windows/new-test-node.ps1 (CSI_REAL_NODE_DIR)"]
fn real_node_a_second_account_on_the_same_server_is_refused_clearly_or_mapped() {
    let ws = Workspace::open();
    let smb = ws
        .manifest()
        .smb
        .clone()
        .expect("no SMB share in the manifest");
    let first = ws.smb_credentials();
    let second = SmbCredentials::new(smb.second_user.clone(), smb_password());
    let (one, two) = (ws.staging("smb-account-1"), ws.staging("smb-account-2"));
    run(async {
        let g = GuardedNode::open(&ws).await;
        g.smb_stage(&smb.share, &one, &first).await.unwrap();
        match g.smb_stage(&smb.second_share, &two, &second).await {
            Err(e) => {
                eprintln!(
                    "real-node: second account on the server ({:?}): refused: {e}",
                    g.mode()
                );
                assert_eq!(e.kind(), ErrorKind::CredentialsConflict, "{e:?}");
                assert!(!std::path::Path::new(&two).exists());
                assert_eq!(LocalHost.smb_global_mappings(&smb.share).unwrap().len(), 1);
                assert!(
                    LocalHost
                        .smb_global_mappings(&smb.second_share)
                        .unwrap()
                        .is_empty()
                );
            }
            Ok(()) => {
                eprintln!(
                    "real-node: second account on the server ({:?}): mapped",
                    g.mode()
                );
                let m = LocalHost.smb_global_mappings(&smb.second_share).unwrap();
                assert_eq!(m.len(), 1, "{m:?}");
                assert_eq!(m[0].status, 0, "{m:?}");
                g.unstage(&two, false).await.unwrap();
            }
        }
        g.unstage(&one, false).await.unwrap();
        // The server free again, the second account maps.
        g.smb_stage(&smb.second_share, &two, &second).await.unwrap();
        g.unstage(&two, false).await.unwrap();
        assert!(
            LocalHost
                .smb_global_mappings(&smb.second_share)
                .unwrap()
                .is_empty()
        );
    });
}

/// The boundary's SMB calls: a global mapping made, seen, linked to,
/// measured through the link and removed.
#[test]
#[ignore = "real node: needs the workspace of scripts/windows/new-test-node.ps1 (CSI_REAL_NODE_DIR)"]
fn real_node_the_boundary_maps_links_and_unmaps_the_share() {
    let ws = Workspace::open();
    let share = ws.manifest().smb.clone().expect("no SMB share").share;
    assert_eq!(smb_map(&ws).unwrap().code, 0);
    let mappings = LocalHost.smb_global_mappings(&share).unwrap();
    assert_eq!(mappings.len(), 1, "{mappings:?}");
    assert_eq!(mappings[0].status, 0, "OK");
    let link = ws.staging("boundary-share");
    std::fs::create_dir_all(std::path::Path::new(&link).parent().unwrap()).unwrap();
    LocalHost
        .create_symbolic_link(&link, &format!(r"{share}\"), true)
        .unwrap();
    LocalHost.list_directory(&link).unwrap();
    let space = LocalHost.disk_free_space(&link).unwrap();
    assert!(space.total > 0 && space.free <= space.total, "{space:?}");
    LocalHost.remove_directory(&link).unwrap();
    assert_eq!(smb_unmap(&ws).unwrap().code, 0);
    assert!(LocalHost.smb_global_mappings(&share).unwrap().is_empty());
}

/// The iSCSI target the workflow made on this machine (loopback): attached
/// (portal, discovery, login), its disk staged and written, unstaged,
/// detached, each step twice where it must be idempotent. Skipped, saying
/// why, where the runner could not make a target.
#[test]
#[ignore = "real node: needs the workspace of scripts/windows/new-test-node.ps1 (CSI_REAL_NODE_DIR)"]
fn real_node_an_iscsi_target_is_attached_staged_and_detached() {
    let ws = Workspace::open();
    let staging = ws.staging("iscsi");
    run(async {
        let g = GuardedNode::open(&ws).await;
        let target = match g.iscsi_target() {
            Ok(target) => target,
            Err(why) => {
                eprintln!("real-node: SKIPPED the iSCSI test: {why}");
                return;
            }
        };
        let disks = g.iscsi_attach().await.unwrap();
        assert_eq!(disks.len(), 1, "{disks:?}");
        assert_eq!(g.iscsi_attach().await.unwrap(), disks);
        let sessions = LocalHost.iscsi_sessions(&target.iqn).unwrap();
        assert!(!sessions.is_empty(), "no session to {}", target.iqn);
        g.stage_iscsi_disk(disks[0], &staging).await.unwrap();
        std::fs::write(format!(r"{staging}\w"), b"over iSCSI").unwrap();
        g.unstage(&staging, false).await.unwrap();
        g.iscsi_detach().await.unwrap();
        g.iscsi_detach().await.unwrap();
        assert!(LocalHost.iscsi_sessions(&target.iqn).unwrap().is_empty());
    });
}
