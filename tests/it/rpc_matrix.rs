//! Every one of the 139 RPCs, called with a valid request through its typed
//! trait on both backends (the in-process `MockHost` and the reference
//! server over Unix sockets), asserting the response and the host state the
//! call leaves.
//!
//! [`COVERAGE`] maps each `group/version/RPC` to the scenario that covers
//! it. `coverage_table_is_exactly_every_rpc` checks the table against the
//! generated `RPCS` constants of all 23 modules, and on the mock backend
//! every scenario checks (through the mock's call log) that it really called
//! each RPC the table credits it with.
// On Windows the server halves use named pipes and take turns.
#![cfg(feature = "mock")]

use std::collections::BTreeSet;

use crate::scenarios::*;
use csi_proxy_client::host::storage::{
    DiskSpec, FileSystem, GPT_BASIC_DATA, GPT_MSR, PartitionStyle, PartitionType, ntfs_overhead,
};
use csi_proxy_client::{disk, filesystem, iscsi, smb, system, volume};

/// `group/version/RPC` → the scenario (a test `mock::<name>` and
/// `server::<name>`) that calls it.
const COVERAGE: &[(&str, &str)] = &[
    // disk
    ("disk/v1alpha1/ListDiskLocations", "disk_v1alpha1"),
    ("disk/v1alpha1/PartitionDisk", "disk_v1alpha1"),
    ("disk/v1alpha1/Rescan", "disk_v1alpha1"),
    ("disk/v1alpha1/GetDiskNumberByName", "disk_v1alpha1"),
    ("disk/v1beta1/ListDiskLocations", "disk_v1beta1"),
    ("disk/v1beta1/PartitionDisk", "disk_v1beta1"),
    ("disk/v1beta1/Rescan", "disk_v1beta1"),
    ("disk/v1beta1/ListDiskIDs", "disk_v1beta1"),
    ("disk/v1beta1/DiskStats", "disk_v1beta1"),
    ("disk/v1beta2/ListDiskLocations", "disk_v1beta2"),
    ("disk/v1beta2/PartitionDisk", "disk_v1beta2"),
    ("disk/v1beta2/Rescan", "disk_v1beta2"),
    ("disk/v1beta2/ListDiskIDs", "disk_v1beta2"),
    ("disk/v1beta2/DiskStats", "disk_v1beta2"),
    ("disk/v1beta2/SetAttachState", "disk_v1beta2"),
    ("disk/v1beta2/GetAttachState", "disk_v1beta2"),
    ("disk/v1beta3/ListDiskLocations", "disk_v1beta3"),
    ("disk/v1beta3/PartitionDisk", "disk_v1beta3"),
    ("disk/v1beta3/Rescan", "disk_v1beta3"),
    ("disk/v1beta3/ListDiskIDs", "disk_v1beta3"),
    ("disk/v1beta3/GetDiskStats", "disk_v1beta3"),
    ("disk/v1beta3/SetDiskState", "disk_v1beta3"),
    ("disk/v1beta3/GetDiskState", "disk_v1beta3"),
    ("disk/v1/ListDiskLocations", "disk_v1"),
    ("disk/v1/PartitionDisk", "disk_v1"),
    ("disk/v1/Rescan", "disk_v1"),
    ("disk/v1/ListDiskIDs", "disk_v1"),
    ("disk/v1/GetDiskStats", "disk_v1"),
    ("disk/v1/SetDiskState", "disk_v1"),
    ("disk/v1/GetDiskState", "disk_v1"),
    // volume
    ("volume/v1alpha1/ListVolumesOnDisk", "volume_v1alpha1"),
    ("volume/v1alpha1/MountVolume", "volume_v1alpha1"),
    ("volume/v1alpha1/DismountVolume", "volume_v1alpha1"),
    ("volume/v1alpha1/IsVolumeFormatted", "volume_v1alpha1"),
    ("volume/v1alpha1/FormatVolume", "volume_v1alpha1"),
    ("volume/v1alpha1/ResizeVolume", "volume_v1alpha1"),
    ("volume/v1beta1/ListVolumesOnDisk", "volume_v1beta1"),
    ("volume/v1beta1/MountVolume", "volume_v1beta1"),
    ("volume/v1beta1/DismountVolume", "volume_v1beta1"),
    ("volume/v1beta1/IsVolumeFormatted", "volume_v1beta1"),
    ("volume/v1beta1/FormatVolume", "volume_v1beta1"),
    ("volume/v1beta1/ResizeVolume", "volume_v1beta1"),
    ("volume/v1beta1/VolumeStats", "volume_v1beta1"),
    ("volume/v1beta1/GetVolumeDiskNumber", "volume_v1beta1"),
    ("volume/v1beta1/GetVolumeIDFromMount", "volume_v1beta1"),
    ("volume/v1beta2/ListVolumesOnDisk", "volume_v1beta2"),
    ("volume/v1beta2/MountVolume", "volume_v1beta2"),
    ("volume/v1beta2/DismountVolume", "volume_v1beta2"),
    ("volume/v1beta2/IsVolumeFormatted", "volume_v1beta2"),
    ("volume/v1beta2/FormatVolume", "volume_v1beta2"),
    ("volume/v1beta2/ResizeVolume", "volume_v1beta2"),
    ("volume/v1beta2/VolumeStats", "volume_v1beta2"),
    ("volume/v1beta2/GetVolumeDiskNumber", "volume_v1beta2"),
    ("volume/v1beta2/GetVolumeIDFromMount", "volume_v1beta2"),
    ("volume/v1beta2/WriteVolumeCache", "volume_v1beta2"),
    ("volume/v1beta3/ListVolumesOnDisk", "volume_v1beta3"),
    ("volume/v1beta3/MountVolume", "volume_v1beta3"),
    ("volume/v1beta3/UnmountVolume", "volume_v1beta3"),
    ("volume/v1beta3/IsVolumeFormatted", "volume_v1beta3"),
    ("volume/v1beta3/FormatVolume", "volume_v1beta3"),
    ("volume/v1beta3/ResizeVolume", "volume_v1beta3"),
    ("volume/v1beta3/GetVolumeStats", "volume_v1beta3"),
    ("volume/v1beta3/GetDiskNumberFromVolumeID", "volume_v1beta3"),
    ("volume/v1beta3/GetVolumeIDFromTargetPath", "volume_v1beta3"),
    ("volume/v1beta3/WriteVolumeCache", "volume_v1beta3"),
    ("volume/v1/ListVolumesOnDisk", "volume_v1"),
    ("volume/v1/MountVolume", "volume_v1"),
    ("volume/v1/UnmountVolume", "volume_v1"),
    ("volume/v1/IsVolumeFormatted", "volume_v1"),
    ("volume/v1/FormatVolume", "volume_v1"),
    ("volume/v1/ResizeVolume", "volume_v1"),
    ("volume/v1/GetVolumeStats", "volume_v1"),
    ("volume/v1/GetDiskNumberFromVolumeID", "volume_v1"),
    ("volume/v1/GetVolumeIDFromTargetPath", "volume_v1"),
    ("volume/v1/WriteVolumeCache", "volume_v1"),
    ("volume/v2alpha1/ListVolumesOnDisk", "volume_v2alpha1"),
    ("volume/v2alpha1/MountVolume", "volume_v2alpha1"),
    ("volume/v2alpha1/UnmountVolume", "volume_v2alpha1"),
    ("volume/v2alpha1/IsVolumeFormatted", "volume_v2alpha1"),
    ("volume/v2alpha1/FormatVolume", "volume_v2alpha1"),
    ("volume/v2alpha1/ResizeVolume", "volume_v2alpha1"),
    ("volume/v2alpha1/GetVolumeStats", "volume_v2alpha1"),
    (
        "volume/v2alpha1/GetDiskNumberFromVolumeID",
        "volume_v2alpha1",
    ),
    (
        "volume/v2alpha1/GetVolumeIDFromTargetPath",
        "volume_v2alpha1",
    ),
    (
        "volume/v2alpha1/GetClosestVolumeIDFromTargetPath",
        "volume_v2alpha1",
    ),
    ("volume/v2alpha1/WriteVolumeCache", "volume_v2alpha1"),
    // filesystem
    ("filesystem/v1alpha1/PathExists", "filesystem_v1alpha1"),
    ("filesystem/v1alpha1/Mkdir", "filesystem_v1alpha1"),
    ("filesystem/v1alpha1/Rmdir", "filesystem_v1alpha1"),
    ("filesystem/v1alpha1/LinkPath", "filesystem_v1alpha1"),
    ("filesystem/v1alpha1/IsMountPoint", "filesystem_v1alpha1"),
    ("filesystem/v1beta1/PathExists", "filesystem_v1beta1"),
    ("filesystem/v1beta1/Mkdir", "filesystem_v1beta1"),
    ("filesystem/v1beta1/Rmdir", "filesystem_v1beta1"),
    ("filesystem/v1beta1/LinkPath", "filesystem_v1beta1"),
    ("filesystem/v1beta1/IsMountPoint", "filesystem_v1beta1"),
    ("filesystem/v1beta2/PathExists", "filesystem_v1beta2"),
    ("filesystem/v1beta2/Mkdir", "filesystem_v1beta2"),
    ("filesystem/v1beta2/Rmdir", "filesystem_v1beta2"),
    ("filesystem/v1beta2/CreateSymlink", "filesystem_v1beta2"),
    ("filesystem/v1beta2/IsSymlink", "filesystem_v1beta2"),
    ("filesystem/v1/PathExists", "filesystem_v1"),
    ("filesystem/v1/Mkdir", "filesystem_v1"),
    ("filesystem/v1/Rmdir", "filesystem_v1"),
    ("filesystem/v1/CreateSymlink", "filesystem_v1"),
    ("filesystem/v1/IsSymlink", "filesystem_v1"),
    ("filesystem/v2alpha1/PathExists", "filesystem_v2alpha1"),
    ("filesystem/v2alpha1/Mkdir", "filesystem_v2alpha1"),
    ("filesystem/v2alpha1/Rmdir", "filesystem_v2alpha1"),
    ("filesystem/v2alpha1/CreateSymlink", "filesystem_v2alpha1"),
    ("filesystem/v2alpha1/IsSymlink", "filesystem_v2alpha1"),
    ("filesystem/v2alpha1/RmdirContents", "filesystem_v2alpha1"),
    // smb
    ("smb/v1alpha1/NewSmbGlobalMapping", "smb_v1alpha1"),
    ("smb/v1alpha1/RemoveSmbGlobalMapping", "smb_v1alpha1"),
    ("smb/v1beta1/NewSmbGlobalMapping", "smb_v1beta1"),
    ("smb/v1beta1/RemoveSmbGlobalMapping", "smb_v1beta1"),
    ("smb/v1beta2/NewSmbGlobalMapping", "smb_v1beta2"),
    ("smb/v1beta2/RemoveSmbGlobalMapping", "smb_v1beta2"),
    ("smb/v1/NewSmbGlobalMapping", "smb_v1"),
    ("smb/v1/RemoveSmbGlobalMapping", "smb_v1"),
    // iscsi
    ("iscsi/v1alpha1/AddTargetPortal", "iscsi_v1alpha1"),
    ("iscsi/v1alpha1/DiscoverTargetPortal", "iscsi_v1alpha1"),
    ("iscsi/v1alpha1/RemoveTargetPortal", "iscsi_v1alpha1"),
    ("iscsi/v1alpha1/ListTargetPortals", "iscsi_v1alpha1"),
    ("iscsi/v1alpha1/ConnectTarget", "iscsi_v1alpha1"),
    ("iscsi/v1alpha1/DisconnectTarget", "iscsi_v1alpha1"),
    ("iscsi/v1alpha1/GetTargetDisks", "iscsi_v1alpha1"),
    ("iscsi/v1alpha2/AddTargetPortal", "iscsi_v1alpha2"),
    ("iscsi/v1alpha2/DiscoverTargetPortal", "iscsi_v1alpha2"),
    ("iscsi/v1alpha2/RemoveTargetPortal", "iscsi_v1alpha2"),
    ("iscsi/v1alpha2/ListTargetPortals", "iscsi_v1alpha2"),
    ("iscsi/v1alpha2/ConnectTarget", "iscsi_v1alpha2"),
    ("iscsi/v1alpha2/DisconnectTarget", "iscsi_v1alpha2"),
    ("iscsi/v1alpha2/GetTargetDisks", "iscsi_v1alpha2"),
    ("iscsi/v1alpha2/SetMutualChapSecret", "iscsi_v1alpha2"),
    // system
    ("system/v1alpha1/GetBIOSSerialNumber", "system_v1alpha1"),
    ("system/v1alpha1/StartService", "system_v1alpha1"),
    ("system/v1alpha1/StopService", "system_v1alpha1"),
    ("system/v1alpha1/GetService", "system_v1alpha1"),
];

macro_rules! matrix {
    ($($scenario:ident),+ $(,)?) => {
        /// Every scenario of this file.
        const SCENARIOS: &[&str] = &[$(stringify!($scenario)),+];
        on_both_backends!(after = check_coverage; $($scenario),+);
    };
}

matrix![
    disk_v1alpha1,
    disk_v1beta1,
    disk_v1beta2,
    disk_v1beta3,
    disk_v1,
    volume_v1alpha1,
    volume_v1beta1,
    volume_v1beta2,
    volume_v1beta3,
    volume_v1,
    volume_v2alpha1,
    filesystem_v1alpha1,
    filesystem_v1beta1,
    filesystem_v1beta2,
    filesystem_v1,
    filesystem_v2alpha1,
    smb_v1alpha1,
    smb_v1beta1,
    smb_v1beta2,
    smb_v1,
    iscsi_v1alpha1,
    iscsi_v1alpha2,
    system_v1alpha1,
];

/// On the mock backend: the scenario called every RPC [`COVERAGE`] credits
/// it with.
fn check_coverage(scenario: &str, node: &Node) {
    let Some(mock) = node.as_mock() else {
        return;
    };
    for (rpc, by) in COVERAGE.iter().filter(|(_, by)| *by == scenario) {
        assert!(
            !mock.calls_of(*rpc).is_empty(),
            "{by} is credited with {rpc} but never called it"
        );
    }
}

#[test]
fn coverage_table_is_exactly_every_rpc() {
    let mut all = BTreeSet::new();
    let mut endpoints = 0;
    macro_rules! rpcs {
        ($($group:ident :: $version:ident),+) => {$(
            endpoints += 1;
            for rpc in $group::$version::RPCS {
                all.insert(format!(
                    "{}/{}/{rpc}",
                    $group::$version::GROUP,
                    $group::$version::VERSION
                ));
            }
        )+};
    }
    rpcs!(
        disk::v1alpha1,
        disk::v1beta1,
        disk::v1beta2,
        disk::v1beta3,
        disk::v1,
        filesystem::v1alpha1,
        filesystem::v1beta1,
        filesystem::v1beta2,
        filesystem::v1,
        filesystem::v2alpha1,
        iscsi::v1alpha1,
        iscsi::v1alpha2,
        smb::v1alpha1,
        smb::v1beta1,
        smb::v1beta2,
        smb::v1,
        system::v1alpha1,
        volume::v1alpha1,
        volume::v1beta1,
        volume::v1beta2,
        volume::v1beta3,
        volume::v1,
        volume::v2alpha1
    );
    assert_eq!(endpoints, 23);
    assert_eq!(
        endpoints,
        csi_proxy_client::server::GroupVersion::all().len(),
        "the server serves another set of group versions"
    );
    assert_eq!(all.len(), 139);

    let table: BTreeSet<String> = COVERAGE.iter().map(|(rpc, _)| rpc.to_string()).collect();
    assert_eq!(table.len(), COVERAGE.len(), "an RPC is listed twice");
    let missing: Vec<_> = all.difference(&table).collect();
    let unknown: Vec<_> = table.difference(&all).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "not covered: {missing:?}; not an RPC: {unknown:?}"
    );
    for (rpc, scenario) in COVERAGE {
        assert!(
            SCENARIOS.contains(scenario),
            "{rpc} is credited to {scenario}, which is not a scenario"
        );
    }
}

// ---------------------------------------------------------------- disk

/// The two partitions PartitionDisk leaves on a blank GPT disk of `size`
/// bytes: the MSR, then one basic partition with a RAW volume.
#[track_caller]
fn assert_partitioned_blank(node: &Node, n: u32, size: u64) -> String {
    let s = node.host.snapshot();
    let d = disk_of(&s, n);
    assert_eq!(d.partition_style, PartitionStyle::Gpt);
    assert_eq!(d.partitions.len(), 2, "{d:#?}");
    let (msr, basic) = (&d.partitions[0], &d.partitions[1]);
    assert_eq!(
        (msr.number, msr.offset, msr.size),
        (1, 17408, 16_759_808),
        "{msr:?}"
    );
    assert_eq!(msr.kind, PartitionType::Gpt(GPT_MSR.into()));
    assert_eq!(msr.volume, None);
    assert_eq!(
        (basic.number, basic.offset, basic.size),
        (2, 16 * MIB, gpt_basic_size(size)),
        "{basic:?}"
    );
    assert_eq!(basic.kind, PartitionType::Gpt(GPT_BASIC_DATA.into()));
    assert!(basic.is_online);
    assert_eq!(basic.drive_letter, None);
    let id = basic
        .volume
        .clone()
        .expect("the basic partition has a volume");
    assert!(
        id.starts_with(r"\\?\Volume{") && id.ends_with(r"}\"),
        "{id}"
    );
    let v = volume_of(&s, &id);
    assert_eq!((v.fs, v.disk, v.partition), (FileSystem::Raw, n, 2));
    id
}

/// Attaches a 1 GiB disk that storage management sees only after a rescan.
fn attach_unscanned_disk(node: &Node) -> u32 {
    node.host
        .attach_disk(DiskSpec {
            needs_rescan: true,
            ..DiskSpec::new(GIB)
        })
        .expect("attach")
        .0
}

async fn disk_v1alpha1(node: &Node) {
    use disk::v1alpha1 as d;
    let api = &node.disk_v1alpha1;

    let listed = ok(api
        .list_disk_locations(d::ListDiskLocationsRequest {})
        .await);
    let mut numbers: Vec<&str> = listed.disk_locations.keys().map(String::as_str).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, ["0", "1", "2"]);
    assert_eq!(
        listed.disk_locations["2"],
        d::DiskLocation {
            adapter: "3".into(),
            bus: String::new(),
            target: "0".into(),
            lunid: "2".into(),
        }
    );
    assert_eq!(listed.disk_locations["0"].adapter, "0");

    // Rescan makes a newly attached disk visible.
    let n = attach_unscanned_disk(node);
    let before = ok(api
        .list_disk_locations(d::ListDiskLocationsRequest {})
        .await);
    assert!(!before.disk_locations.contains_key(&n.to_string()));
    ok(api.rescan(d::RescanRequest {}).await);
    assert!(disk_of(&node.host.snapshot(), n).is_listed());
    let after = ok(api
        .list_disk_locations(d::ListDiskLocationsRequest {})
        .await);
    assert_eq!(after.disk_locations[&n.to_string()].lunid, n.to_string());

    // PartitionDisk by text id, then again (a no-op).
    ok(api
        .partition_disk(d::PartitionDiskRequest {
            disk_id: "1".into(),
        })
        .await);
    assert_partitioned_blank(node, 1, 32 * GIB);
    let once = node.host.snapshot();
    ok(api
        .partition_disk(d::PartitionDiskRequest {
            disk_id: "001".into(),
        })
        .await);
    assert_eq!(node.host.snapshot(), once);

    // GetDiskNumberByName: the page83 id as ListDiskIDs would report it.
    let page83 = disk_of(&once, 2).page83.reported();
    assert!(!page83.is_empty());
    let found = ok(api
        .get_disk_number_by_name(d::GetDiskNumberByNameRequest { disk_name: page83 })
        .await);
    assert_eq!(found.disk_number, "2");
}

/// The text-id shape of `v1beta1` and `v1beta2`; `$extra` runs at the end
/// with `$node` and `$api` bound.
macro_rules! disk_text_ids {
    ($name:ident, $v:ident, $field:ident, |$node:ident, $api:ident| $extra:block) => {
        async fn $name($node: &Node) {
            use disk::$v as d;
            let $api = &$node.$field;

            let listed = ok($api
                .list_disk_locations(d::ListDiskLocationsRequest {})
                .await);
            assert_eq!(listed.disk_locations.len(), 3);
            assert_eq!(listed.disk_locations["1"].lunid, "1");
            assert_eq!(listed.disk_locations["1"].adapter, "3");

            let n = attach_unscanned_disk($node);
            ok($api.rescan(d::RescanRequest {}).await);
            let listed = ok($api
                .list_disk_locations(d::ListDiskLocationsRequest {})
                .await);
            assert!(listed.disk_locations.contains_key(&n.to_string()));

            let ids = ok($api.list_disk_ids(d::ListDiskIDsRequest {}).await);
            let s = $node.host.snapshot();
            assert_eq!(ids.disk_i_ds.len(), 4);
            for (number, entry) in &ids.disk_i_ds {
                let disk = disk_of(&s, number.parse().expect("decimal key"));
                let mut keys: Vec<&str> = entry.identifiers.keys().map(String::as_str).collect();
                keys.sort_unstable();
                assert_eq!(keys, ["page83", "serialNumber"]);
                assert_eq!(entry.identifiers["page83"], disk.page83.reported());
                assert_eq!(entry.identifiers["serialNumber"], disk.serial_number);
            }

            // DiskStats: the disk's capacity; text ids truncate to 32 bits.
            let stats = ok($api
                .disk_stats(d::DiskStatsRequest {
                    disk_id: "1".into(),
                })
                .await);
            assert_eq!(stats.disk_size, (32 * GIB) as i64);
            let stats = ok($api
                .disk_stats(d::DiskStatsRequest {
                    disk_id: "4294967298".into(),
                })
                .await);
            assert_eq!(stats.disk_size, (16 * GIB) as i64);

            ok($api
                .partition_disk(d::PartitionDiskRequest {
                    disk_id: n.to_string(),
                })
                .await);
            assert_partitioned_blank($node, n, GIB);

            $extra
        }
    };
}

disk_text_ids!(disk_v1beta1, v1beta1, disk_v1beta1, |_node, _api| {});

disk_text_ids!(disk_v1beta2, v1beta2, disk_v1beta2, |node, api| {
    use disk::v1beta2 as d;
    let get = || async {
        ok(api
            .get_attach_state(d::GetAttachStateRequest {
                disk_id: "2".into(),
            })
            .await)
        .is_online
    };
    assert!(get().await);
    ok(api
        .set_attach_state(d::SetAttachStateRequest {
            disk_id: "2".into(),
            is_online: false,
        })
        .await);
    assert!(disk_of(&node.host.snapshot(), 2).is_offline);
    assert!(!get().await);
    ok(api
        .set_attach_state(d::SetAttachStateRequest {
            disk_id: "2".into(),
            is_online: true,
        })
        .await);
    assert!(!disk_of(&node.host.snapshot(), 2).is_offline);
    assert!(get().await);
});

/// The numeric shape of `v1beta3` and `v1`.
macro_rules! disk_numbers {
    ($name:ident, $v:ident, $field:ident) => {
        async fn $name(node: &Node) {
            use disk::$v as d;
            let api = &node.$field;

            let listed = ok(api
                .list_disk_locations(d::ListDiskLocationsRequest {})
                .await);
            let mut numbers: Vec<u32> = listed.disk_locations.keys().copied().collect();
            numbers.sort_unstable();
            assert_eq!(numbers, [0, 1, 2]);
            assert_eq!(
                listed.disk_locations[&1],
                d::DiskLocation {
                    adapter: "3".into(),
                    bus: String::new(),
                    target: "0".into(),
                    lunid: "1".into(),
                }
            );

            let n = attach_unscanned_disk(node);
            ok(api.rescan(d::RescanRequest {}).await);
            let listed = ok(api
                .list_disk_locations(d::ListDiskLocationsRequest {})
                .await);
            assert_eq!(listed.disk_locations[&n].lunid, n.to_string());

            let ids = ok(api.list_disk_ids(d::ListDiskIDsRequest {}).await);
            let s = node.host.snapshot();
            assert_eq!(ids.disk_i_ds.len(), 4);
            for (number, entry) in &ids.disk_i_ds {
                let disk = disk_of(&s, *number);
                assert_eq!(entry.page83, disk.page83.reported());
                assert_eq!(entry.serial_number, disk.serial_number);
            }
            assert!(ids.disk_i_ds[&n].page83.starts_with("4d534654202020"));

            let stats = ok(api
                .get_disk_stats(d::GetDiskStatsRequest { disk_number: 2 })
                .await);
            assert_eq!(stats.total_bytes, (16 * GIB) as i64);

            // Online state: offline, then online again; both idempotent.
            let state = |number| async move {
                ok(api
                    .get_disk_state(d::GetDiskStateRequest {
                        disk_number: number,
                    })
                    .await)
                .is_online
            };
            assert!(state(n).await);
            for _ in 0..2 {
                ok(api
                    .set_disk_state(d::SetDiskStateRequest {
                        disk_number: n,
                        is_online: false,
                    })
                    .await);
                assert!(disk_of(&node.host.snapshot(), n).is_offline);
                assert!(!state(n).await);
            }
            ok(api
                .set_disk_state(d::SetDiskStateRequest {
                    disk_number: n,
                    is_online: true,
                })
                .await);
            assert!(!disk_of(&node.host.snapshot(), n).is_offline);
            assert!(state(n).await);

            ok(api
                .partition_disk(d::PartitionDiskRequest { disk_number: n })
                .await);
            assert_partitioned_blank(node, n, GIB);
            // The OS disk already has basic partitions: untouched.
            let os = disk_of(&node.host.snapshot(), 0).clone();
            ok(api
                .partition_disk(d::PartitionDiskRequest { disk_number: 0 })
                .await);
            assert_eq!(disk_of(&node.host.snapshot(), 0), &os);
        }
    };
}

disk_numbers!(disk_v1beta3, v1beta3, disk_v1beta3);
disk_numbers!(disk_v1, v1, disk_v1);

// -------------------------------------------------------------- volume

/// Attaches a 1 GiB disk and partitions it (disk v1): a RAW volume.
async fn partitioned_disk(node: &Node) -> u32 {
    let n = attach_blank_disk(&node.host, GIB);
    ok(node
        .disk_v1
        .partition_disk(disk::v1::PartitionDiskRequest { disk_number: n })
        .await);
    n
}

/// Checks the volume after FormatVolume: NTFS, empty label, the fresh
/// format's overhead in use.
#[track_caller]
fn assert_fresh_ntfs(node: &Node, id: &str) {
    let s = node.host.snapshot();
    let v = volume_of(&s, id);
    let size = partition_of(&s, id).size;
    assert_eq!(v.fs, FileSystem::Ntfs);
    assert_eq!(v.label, "");
    assert_eq!(v.used, ntfs_overhead(size));
}

/// Makes an empty directory on C: to mount at.
fn mount_dir(node: &Node, tag: &str) -> String {
    let dir = staging(tag);
    node.host.create_dir(&dir).expect("create the mount dir");
    dir
}

fn flushes(node: &Node, id: &str) -> u64 {
    volume_of(&node.host.snapshot(), id).flushes
}

async fn volume_v1alpha1(node: &Node) {
    use volume::v1alpha1 as v;
    let api = &node.volume_v1alpha1;
    let n = partitioned_disk(node).await;

    let listed = ok(api
        .list_volumes_on_disk(v::ListVolumesOnDiskRequest {
            disk_id: n.to_string(),
        })
        .await);
    assert_eq!(listed.volume_ids.len(), 1);
    let id = listed.volume_ids[0].clone();
    assert_eq!(partition_of(&node.host.snapshot(), &id).number, 2);

    let formatted = |id: String| async move {
        ok(api
            .is_volume_formatted(v::IsVolumeFormattedRequest { volume_id: id })
            .await)
        .formatted
    };
    assert!(!formatted(id.clone()).await);
    ok(api
        .format_volume(v::FormatVolumeRequest {
            volume_id: id.clone(),
        })
        .await);
    assert_fresh_ntfs(node, &id);
    assert!(formatted(id.clone()).await);

    // The disk grows behind the proxy; v1alpha1's test asks for 1.5 GiB.
    node.host.grow_disk(n, 2 * GIB).expect("grow");
    ok(api
        .resize_volume(v::ResizeVolumeRequest {
            volume_id: id.clone(),
            size: 1_610_612_736,
        })
        .await);
    assert_eq!(partition_of(&node.host.snapshot(), &id).size, 1_610_612_736);

    let dir = mount_dir(node, "v1alpha1");
    ok(api
        .mount_volume(v::MountVolumeRequest {
            volume_id: id.clone(),
            path: dir.clone(),
        })
        .await);
    assert_eq!(mounted_at(&node.host, &dir), std::slice::from_ref(&id));
    let before = flushes(node, &id);
    ok(api
        .dismount_volume(v::DismountVolumeRequest {
            volume_id: id.clone(),
            path: dir.clone(),
        })
        .await);
    assert!(mounted_at(&node.host, &dir).is_empty());
    assert_eq!(entry(&node.host, &dir), Some(Entry::Dir));
    assert_eq!(flushes(node, &id), before + 1);
}

/// The text-id shape of `v1beta1` and `v1beta2`; `$extra` runs while the
/// volume is mounted at `$dir`.
macro_rules! volume_text_ids {
    ($name:ident, $v:ident, $field:ident, |$node:ident, $api:ident, $id:ident, $dir:ident| $extra:block) => {
        async fn $name($node: &Node) {
            use volume::$v as v;
            let $api = &$node.$field;
            let n = partitioned_disk($node).await;

            let listed = ok($api
                .list_volumes_on_disk(v::ListVolumesOnDiskRequest {
                    disk_id: n.to_string(),
                })
                .await);
            assert_eq!(listed.volume_ids.len(), 1);
            let $id = listed.volume_ids[0].clone();
            let id = &$id;
            // Nothing on a disk that does not exist.
            let none = ok($api
                .list_volumes_on_disk(v::ListVolumesOnDiskRequest {
                    disk_id: "77".into(),
                })
                .await);
            assert!(none.volume_ids.is_empty());

            assert!(!ok($api
                .is_volume_formatted(v::IsVolumeFormattedRequest {
                    volume_id: id.clone(),
                })
                .await)
            .formatted);
            ok($api
                .format_volume(v::FormatVolumeRequest {
                    volume_id: id.clone(),
                })
                .await);
            assert_fresh_ntfs($node, id);
            assert!(ok($api
                .is_volume_formatted(v::IsVolumeFormattedRequest {
                    volume_id: id.clone(),
                })
                .await)
            .formatted);

            let stats = ok($api
                .volume_stats(v::VolumeStatsRequest {
                    volume_id: id.clone(),
                })
                .await);
            let size = gpt_basic_size(GIB);
            assert_eq!(stats.volume_size, size as i64);
            assert_eq!(stats.volume_used_size, ntfs_overhead(size) as i64);

            let number = ok($api
                .get_volume_disk_number(v::VolumeDiskNumberRequest {
                    volume_id: id.clone(),
                })
                .await);
            assert_eq!(number.disk_number, i64::from(n));

            // Upstream's resize test: 1.5 x the volume after the disk doubled.
            $node.host.grow_disk(n, 2 * GIB).expect("grow");
            let want = (stats.volume_size as f32 * 1.5) as i64;
            ok($api
                .resize_volume(v::ResizeVolumeRequest {
                    volume_id: id.clone(),
                    size: want,
                })
                .await);
            let grown = partition_of(&$node.host.snapshot(), id).size as i64;
            assert!(grown <= want && grown > want - 512, "{grown} for {want}");
            let stats = ok($api
                .volume_stats(v::VolumeStatsRequest {
                    volume_id: id.clone(),
                })
                .await);
            assert_eq!(stats.volume_size, grown);

            let $dir = mount_dir($node, stringify!($v));
            ok($api
                .mount_volume(v::MountVolumeRequest {
                    volume_id: id.clone(),
                    path: $dir.clone(),
                })
                .await);
            assert_eq!(mounted_at(&$node.host, &$dir), std::slice::from_ref(id));
            let found = ok($api
                .get_volume_id_from_mount(v::VolumeIdFromMountRequest {
                    mount: $dir.clone(),
                })
                .await);
            assert_eq!(&found.volume_id, id);

            $extra

            ok($api
                .dismount_volume(v::DismountVolumeRequest {
                    volume_id: id.clone(),
                    path: $dir.clone(),
                })
                .await);
            assert!(mounted_at(&$node.host, &$dir).is_empty());
            assert_eq!(entry(&$node.host, &$dir), Some(Entry::Dir));
        }
    };
}

volume_text_ids!(
    volume_v1beta1,
    v1beta1,
    volume_v1beta1,
    |_node, _api, _id, _dir| {}
);

volume_text_ids!(
    volume_v1beta2,
    v1beta2,
    volume_v1beta2,
    |node, api, id, _dir| {
        let before = flushes(node, &id);
        ok(api
            .write_volume_cache(volume::v1beta2::WriteVolumeCacheRequest {
                volume_id: id.clone(),
            })
            .await);
        assert_eq!(flushes(node, &id), before + 1);
    }
);

/// The numeric shape of `v1beta3`, `v1` and `v2alpha1`; `$extra` runs while
/// the volume is mounted at `$dir`.
macro_rules! volume_numbers {
    ($name:ident, $v:ident, $field:ident, |$node:ident, $api:ident, $id:ident, $dir:ident| $extra:block) => {
        async fn $name($node: &Node) {
            use volume::$v as v;
            let $api = &$node.$field;
            let n = partitioned_disk($node).await;

            let list = |disk_number, partition_number| async move {
                ok($api
                    .list_volumes_on_disk(v::ListVolumesOnDiskRequest {
                        disk_number,
                        partition_number,
                    })
                    .await)
                .volume_ids
            };
            let all = list(n, 0).await;
            assert_eq!(all.len(), 1);
            let $id = all[0].clone();
            let id = &$id;
            assert_eq!(list(n, 2).await, all);
            assert!(list(n, 1).await.is_empty(), "the MSR has no volume");
            assert!(list(77, 0).await.is_empty());
            assert_eq!(list(0, 0).await.len(), 2, "EFI and C: on the OS disk");

            let formatted = || async {
                ok($api
                    .is_volume_formatted(v::IsVolumeFormattedRequest {
                        volume_id: id.clone(),
                    })
                    .await)
                .formatted
            };
            assert!(!formatted().await);
            ok($api
                .format_volume(v::FormatVolumeRequest {
                    volume_id: id.clone(),
                })
                .await);
            assert_fresh_ntfs($node, id);
            assert!(formatted().await);

            let stats = || async {
                ok($api
                    .get_volume_stats(v::GetVolumeStatsRequest {
                        volume_id: id.clone(),
                    })
                    .await)
            };
            let size = gpt_basic_size(GIB);
            let first = stats().await;
            assert_eq!(first.total_bytes, size as i64);
            assert_eq!(first.used_bytes, ntfs_overhead(size) as i64);

            let number = ok($api
                .get_disk_number_from_volume_id(v::GetDiskNumberFromVolumeIdRequest {
                    volume_id: id.clone(),
                })
                .await);
            assert_eq!(number.disk_number, n);

            // Grow to the maximum after the disk doubled; again is a no-op.
            $node.host.grow_disk(n, 2 * GIB).expect("grow");
            for _ in 0..2 {
                ok($api
                    .resize_volume(v::ResizeVolumeRequest {
                        volume_id: id.clone(),
                        size_bytes: 0,
                    })
                    .await);
                assert_eq!(partition_of(&$node.host.snapshot(), id).size, 2_130_689_536);
                assert_eq!(stats().await.total_bytes, 2_130_689_536);
            }

            let $dir = mount_dir($node, stringify!($v));
            for _ in 0..2 {
                // The second mount of the same volume at the same path succeeds.
                ok($api
                    .mount_volume(v::MountVolumeRequest {
                        volume_id: id.clone(),
                        target_path: $dir.clone(),
                    })
                    .await);
                assert_eq!(mounted_at(&$node.host, &$dir), std::slice::from_ref(id));
            }
            let found = ok($api
                .get_volume_id_from_target_path(v::GetVolumeIdFromTargetPathRequest {
                    target_path: $dir.clone(),
                })
                .await);
            assert_eq!(&found.volume_id, id);

            let before = flushes($node, id);
            ok($api
                .write_volume_cache(v::WriteVolumeCacheRequest {
                    volume_id: id.clone(),
                })
                .await);
            assert_eq!(flushes($node, id), before + 1);

            $extra

            ok($api
                .unmount_volume(v::UnmountVolumeRequest {
                    volume_id: id.clone(),
                    target_path: $dir.clone(),
                })
                .await);
            assert!(mounted_at(&$node.host, &$dir).is_empty());
            assert_eq!(entry(&$node.host, &$dir), Some(Entry::Dir));
            assert_eq!(flushes($node, id), before + 2, "unmount flushes first");
        }
    };
}

volume_numbers!(
    volume_v1beta3,
    v1beta3,
    volume_v1beta3,
    |_node, _api, _id, _dir| {}
);
volume_numbers!(volume_v1, v1, volume_v1, |_node, _api, _id, _dir| {});

volume_numbers!(
    volume_v2alpha1,
    v2alpha1,
    volume_v2alpha1,
    |node, api, id, dir| {
        use volume::v2alpha1 as v;
        let closest = |path: String| async move {
            ok(api
                .get_closest_volume_id_from_target_path(
                    v::GetClosestVolumeIdFromTargetPathRequest { target_path: path },
                )
                .await)
            .volume_id
        };
        // Inside the mounted volume.
        let deep = format!(r"{dir}\foo\bar");
        node.host.create_dir(&deep).expect("mkdir in the volume");
        assert_eq!(closest(deep).await, id);
        // An ordinary directory on C: with no mount point above it.
        let plain = format!(r"{KUBELET}\plugins\plain");
        node.host.create_dir(&plain).expect("mkdir on C:");
        assert_eq!(closest(plain).await, c_volume(&node.host));
        // A directory symlink to the mount point.
        let link = format!(r"{KUBELET}\pods\link-to-mount");
        node.host.create_dir(parent(&link)).expect("mkdir pods");
        node.host
            .create_link(&link, LinkKind::Dir, &dir)
            .expect("link");
        assert_eq!(closest(link).await, id);
    }
);

// ---------------------------------------------------------- filesystem

/// The shape of every filesystem version: `$legacy` is `legacy` for
/// `v1alpha1`/`v1beta1` (PathContext, `error` fields, LinkPath,
/// IsMountPoint) or `current`; `$extra` runs at the end with `$base` (an
/// existing directory) bound.
macro_rules! filesystem_scenario {
    ($name:ident, $v:ident, $field:ident, $legacy:ident, |$node:ident, $api:ident, $base:ident| $extra:block) => {
        async fn $name($node: &Node) {
            use filesystem::$v as f;
            let $api = &$node.$field;
            let host = &$node.host;
            let $base = format!(r"{KUBELET}\testdir\{}", stringify!($v));
            let stage = format!(r"{}\testplugin-1.csi.io\volume1", $base);
            let pod = format!(r"{}\test-pod-id\volumes\kubernetes.io~csi\pvc-test1", $base);
            let link = format!(r"{pod}\rootvol");

            let exists = |path: String| async move {
                let r = ok($api
                    .path_exists(filesystem_scenario!(@req $legacy f::PathExistsRequest { path }))
                    .await);
                filesystem_scenario!(@no_error $legacy r);
                r.exists
            };
            let mkdir = |path: String| async move {
                let r = ok($api
                    .mkdir(filesystem_scenario!(@req $legacy f::MkdirRequest { path }))
                    .await);
                filesystem_scenario!(@no_error $legacy r);
            };
            let rmdir = |path: String, force: bool| async move {
                let r = ok($api
                    .rmdir(filesystem_scenario!(@req $legacy f::RmdirRequest { path, force }))
                    .await);
                filesystem_scenario!(@no_error $legacy r);
            };

            assert!(!exists(stage.clone()).await);
            for _ in 0..2 {
                // Mkdir creates the parents and is idempotent.
                mkdir(stage.clone()).await;
                mkdir(pod.clone()).await;
            }
            assert_eq!(entry(host, &stage), Some(Entry::Dir));
            assert_eq!(entry(host, &pod), Some(Entry::Dir));
            assert!(exists(stage.clone()).await);
            assert!(exists(pod.clone()).await);

            // The link: target_path becomes a directory symlink to source_path.
            let made = ok(filesystem_scenario!(@link $legacy $api, f, stage.clone(), link.clone()).await);
            filesystem_scenario!(@no_error $legacy made);
            assert!(is_link(host, &link, LinkKind::Dir, &stage), "{:?}", entry(host, &link));
            assert!(exists(link.clone()).await);
            host.write_file(&format!(r"{stage}\data.txt"), b"through the link")
                .expect("write");
            assert_eq!(
                host.read_file(&format!(r"{link}\data.txt")).expect("read via link"),
                b"through the link"
            );
            assert!(filesystem_scenario!(@is_link $legacy $api, f, link.clone()));
            assert!(!filesystem_scenario!(@is_link $legacy $api, f, stage.clone()));

            // Rmdir of the link removes the link only.
            rmdir(link.clone(), false).await;
            assert_eq!(entry(host, &link), None);
            assert!(host.exists(&format!(r"{stage}\data.txt")));

            // Forced Rmdir removes trees; a missing path is fine.
            rmdir(pod.clone(), true).await;
            assert!(!exists(pod.clone()).await);
            rmdir(stage.clone(), true).await;
            rmdir(stage.clone(), true).await;
            assert_eq!(entry(host, &stage), None);
            assert_eq!(entry(host, parent(&stage)), Some(Entry::Dir));

            $extra
        }
    };
    (@req legacy $m:ident :: $ty:ident { $($f:ident),+ }) => {
        $m::$ty { $($f,)+ context: filesystem::v1alpha1::PathContext::Plugin as i32 }
    };
    (@req current $m:ident :: $ty:ident { $($f:ident),+ }) => {
        $m::$ty { $($f),+ }
    };
    (@no_error legacy $r:ident) => {
        assert_eq!($r.error, "", "legacy error fields stay empty");
    };
    (@no_error current $r:ident) => {
        let _ = &$r;
    };
    (@link legacy $api:ident, $f:ident, $source:expr, $target:expr) => {
        $api.link_path($f::LinkPathRequest {
            source_path: $source,
            target_path: $target,
        })
    };
    (@link current $api:ident, $f:ident, $source:expr, $target:expr) => {
        $api.create_symlink($f::CreateSymlinkRequest {
            source_path: $source,
            target_path: $target,
        })
    };
    (@is_link legacy $api:ident, $f:ident, $path:expr) => {{
        let r = ok($api.is_mount_point($f::IsMountPointRequest { path: $path }).await);
        assert_eq!(r.error, "");
        r.is_mount_point
    }};
    (@is_link current $api:ident, $f:ident, $path:expr) => {
        ok($api.is_symlink($f::IsSymlinkRequest { path: $path }).await).is_symlink
    };
}

filesystem_scenario!(
    filesystem_v1alpha1,
    v1alpha1,
    filesystem_v1alpha1,
    legacy,
    |_n, _a, _b| {}
);
filesystem_scenario!(
    filesystem_v1beta1,
    v1beta1,
    filesystem_v1beta1,
    legacy,
    |_n, _a, _b| {}
);
filesystem_scenario!(
    filesystem_v1beta2,
    v1beta2,
    filesystem_v1beta2,
    current,
    |_n, _a, _b| {}
);
filesystem_scenario!(filesystem_v1, v1, filesystem_v1, current, |_n, _a, _b| {});

filesystem_scenario!(
    filesystem_v2alpha1,
    v2alpha1,
    filesystem_v2alpha1,
    current,
    |node, api, base| {
        use filesystem::v2alpha1 as f;
        let host = &node.host;
        // Three nested trees and a file symlink pointing outside the directory.
        let dir = format!(r"{base}\contents");
        let outside = format!(r"{base}\outside.txt");
        for tree in [r"a\b\c", r"d\e", "f"] {
            host.create_dir(&format!(r"{dir}\{tree}")).expect("mkdir");
        }
        host.write_file(&format!(r"{dir}\a\b\c\file.txt"), b"x")
            .expect("write");
        host.write_file(&outside, b"stays").expect("write");
        host.create_link(&format!(r"{dir}\link"), LinkKind::File, &outside)
            .expect("link");
        for _ in 0..2 {
            ok(api
                .rmdir_contents(f::RmdirContentsRequest { path: dir.clone() })
                .await);
            assert_eq!(
                entry(host, &dir),
                Some(Entry::Dir),
                "the directory itself stays"
            );
            assert_eq!(host.list_dir(&dir).expect("list"), Vec::<String>::new());
        }
        assert_eq!(host.read_file(&outside).expect("outside file"), b"stays");
    }
);

// ----------------------------------------------------------------- smb

const SMB_ROOT: &str = r"\\fileserver\share";
const SMB_PASSWORD: &str = "Sm8-Passw0rd!";

/// NewSmbGlobalMapping with a local link, a second volume on the same
/// share, RemoveSmbGlobalMapping. `$legacy` is `legacy` for the versions
/// whose responses carry `error`.
macro_rules! smb_scenario {
    ($name:ident, $v:ident, $field:ident, $legacy:ident) => {
        async fn $name(node: &Node) {
            use smb::$v as s;
            let api = &node.$field;
            let host = &node.host;
            let local = format!(r"{KUBELET}\pods\pod-smb\volumes\kubernetes.io~smb\pv-1\mount");
            host.create_dir(parent(&local)).expect("mkdir");
            assert!(smb_roots(host).is_empty());

            let r = ok(api
                .new_smb_global_mapping(s::NewSmbGlobalMappingRequest {
                    remote_path: format!(r"{SMB_ROOT}\vol1"),
                    local_path: local.clone(),
                    username: r"DOMAIN\smbuser".into(),
                    password: SMB_PASSWORD.into(),
                })
                .await);
            smb_scenario!(@no_error $legacy r);
            let mapping = smb_mapping(host, SMB_ROOT).expect("a mapping of the share root");
            assert_eq!(mapping.remote_path, SMB_ROOT);
            assert_eq!(mapping.status, csi_proxy_client::host::smb::MappingStatus::Ok);
            assert!(mapping.require_privacy);
            assert_eq!(
                mapping.credential,
                Some((r"DOMAIN\smbuser".to_string(), SMB_PASSWORD.to_string()))
            );
            assert!(
                is_link(host, &local, LinkKind::Dir, &format!(r"{SMB_ROOT}\vol1\")),
                "{:?}",
                entry(host, &local)
            );
            // Files written through the local link land on the share.
            host.create_dir(&format!(r"{SMB_ROOT}\vol1")).expect("mkdir on the share");
            host.write_file(&format!(r"{local}\hello.txt"), b"hello smb")
                .expect("write via the link");
            assert_eq!(
                host.read_file(&format!(r"{SMB_ROOT}\vol1\hello.txt")).expect("read"),
                b"hello smb"
            );

            // A second volume on the same share reuses the root mapping.
            let r = ok(api
                .new_smb_global_mapping(s::NewSmbGlobalMappingRequest {
                    remote_path: r"\\FileServer\Share\vol2".into(),
                    local_path: String::new(),
                    username: "smbuser".into(),
                    password: SMB_PASSWORD.into(),
                })
                .await);
            smb_scenario!(@no_error $legacy r);
            assert_eq!(smb_roots(host), [SMB_ROOT]);
            assert_eq!(smb_mapping(host, SMB_ROOT).expect("kept"), mapping);

            // Removing through any path on the share removes the root
            // mapping; the local link stays and no longer reaches the share.
            let r = ok(api
                .remove_smb_global_mapping(s::RemoveSmbGlobalMappingRequest {
                    remote_path: r"\\fileserver\share\vol2".into(),
                })
                .await);
            smb_scenario!(@no_error $legacy r);
            assert!(smb_roots(host).is_empty());
            assert!(is_link(host, &local, LinkKind::Dir, &format!(r"{SMB_ROOT}\vol1\")));
            assert!(host.read_file(&format!(r"{local}\hello.txt")).is_err());
        }
    };
    (@no_error legacy $r:ident) => {
        assert_eq!($r.error, "", "legacy error fields stay empty");
    };
    (@no_error current $r:ident) => {
        let _ = &$r;
    };
}

smb_scenario!(smb_v1alpha1, v1alpha1, smb_v1alpha1, legacy);
smb_scenario!(smb_v1beta1, v1beta1, smb_v1beta1, legacy);
smb_scenario!(smb_v1beta2, v1beta2, smb_v1beta2, current);
smb_scenario!(smb_v1, v1, smb_v1, current);

// --------------------------------------------------------------- iscsi

const IQN_PLAIN: &str = "iqn.1991-05.com.microsoft:storage01-lun0-target";
const IQN_CHAP: &str = "iqn.1991-05.com.microsoft:storage01-chap-target";
const IQN_MUTUAL: &str = "iqn.1991-05.com.microsoft:storage01-mutual-target";

/// Disk numbers of the sessions to `iqn`, as the host sees them.
fn session_disks(node: &Node, iqn: &str) -> Vec<u32> {
    node.host
        .lock()
        .iscsi
        .sessions()
        .iter()
        .filter(|s| s.iqn == iqn)
        .flat_map(|s| s.disks.clone())
        .collect()
}

/// Portal list, discovery, plain and one-way CHAP logins, their disks,
/// logouts, portal removal; `$extra` runs while the portal is registered,
/// with `$portal` a closure giving the request's portal.
macro_rules! iscsi_scenario {
    ($name:ident, $v:ident, $field:ident, |$node:ident, $api:ident, $portal:ident| $extra:block) => {
        async fn $name($node: &Node) {
            use iscsi::$v as i;
            let $api = &$node.$field;
            set_service_status(
                &$node.host,
                "MSiSCSI",
                csi_proxy_client::host::system::ServiceStatus::Running,
            );
            let $portal = || {
                Some(i::TargetPortal {
                    target_address: "10.0.0.20".into(),
                    target_port: 0,
                })
            };
            let list = || async {
                ok($api
                    .list_target_portals(i::ListTargetPortalsRequest {})
                    .await)
                .target_portals
            };
            assert!(list().await.is_empty());
            for _ in 0..2 {
                ok($api
                    .add_target_portal(i::AddTargetPortalRequest {
                        target_portal: $portal(),
                    })
                    .await);
            }
            let registered = vec![i::TargetPortal {
                target_address: "10.0.0.20".into(),
                target_port: 3260,
            }];
            assert_eq!(list().await, registered);
            assert_eq!($node.host.lock().iscsi.portals().len(), 1);

            let found = ok($api
                .discover_target_portal(i::DiscoverTargetPortalRequest {
                    target_portal: $portal(),
                })
                .await);
            assert_eq!(found.iqns, [IQN_PLAIN, IQN_CHAP, IQN_MUTUAL]);

            let disks = |iqn: &str| {
                let iqn = iqn.to_string();
                async move {
                    ok($api
                        .get_target_disks(i::GetTargetDisksRequest {
                            target_portal: $portal(),
                            iqn,
                        })
                        .await)
                    .disk_i_ds
                }
            };
            assert!(disks(IQN_PLAIN).await.is_empty(), "not connected yet");

            let connect = |iqn: &str, auth: i::AuthenticationType, user: &str, secret: &str| {
                let request = i::ConnectTargetRequest {
                    target_portal: $portal(),
                    iqn: iqn.into(),
                    auth_type: auth as i32,
                    chap_username: user.into(),
                    chap_secret: secret.into(),
                };
                async move { ok($api.connect_target(request).await) }
            };
            for _ in 0..2 {
                connect(IQN_PLAIN, i::AuthenticationType::None, "", "").await;
            }
            let plain = session_disks($node, IQN_PLAIN);
            assert_eq!(plain.len(), 1, "one LUN, one session");
            assert_eq!(disks(IQN_PLAIN).await, [plain[0].to_string()]);
            let d = disk_of(&$node.host.snapshot(), plain[0]).clone();
            assert_eq!(d.size, GIB);
            assert!(d.is_offline, "SAN policy leaves new iSCSI disks offline");
            assert_eq!(d.partition_style, PartitionStyle::Raw);

            connect(
                IQN_CHAP,
                i::AuthenticationType::OneWayChap,
                "someuser",
                "verysecretpass",
            )
            .await;
            let chap = session_disks($node, IQN_CHAP);
            assert_eq!(disks(IQN_CHAP).await, [chap[0].to_string()]);

            $extra

            for iqn in [IQN_PLAIN, IQN_CHAP] {
                let disk = session_disks($node, iqn)[0];
                for _ in 0..2 {
                    ok($api
                        .disconnect_target(i::DisconnectTargetRequest {
                            target_portal: $portal(),
                            iqn: iqn.into(),
                        })
                        .await);
                }
                assert!(session_disks($node, iqn).is_empty());
                assert!($node.host.snapshot().disk(disk).is_none(), "disk {disk} left");
                assert!(disks(iqn).await.is_empty());
            }

            ok($api
                .remove_target_portal(i::RemoveTargetPortalRequest {
                    target_portal: $portal(),
                })
                .await);
            assert!(list().await.is_empty());
            assert!($node.host.lock().iscsi.portals().is_empty());
        }
    };
}

iscsi_scenario!(
    iscsi_v1alpha1,
    v1alpha1,
    iscsi_v1alpha1,
    |_node, _api, _portal| {}
);

iscsi_scenario!(
    iscsi_v1alpha2,
    v1alpha2,
    iscsi_v1alpha2,
    |node, api, portal| {
        use iscsi::v1alpha2 as i;
        for _ in 0..2 {
            ok(api
                .set_mutual_chap_secret(i::SetMutualChapSecretRequest {
                    mutual_chap_secret: "reversssssssse".into(),
                })
                .await);
        }
        assert_eq!(
            node.host.lock().iscsi.mutual_chap_secret(),
            Some("reversssssssse")
        );
        ok(api
            .connect_target(i::ConnectTargetRequest {
                target_portal: portal(),
                iqn: IQN_MUTUAL.into(),
                auth_type: i::AuthenticationType::MutualChap as i32,
                chap_username: "anotheruser".into(),
                chap_secret: "averylongsecret".into(),
            })
            .await);
        assert_eq!(session_disks(node, IQN_MUTUAL).len(), 1);
        ok(api
            .disconnect_target(i::DisconnectTargetRequest {
                target_portal: portal(),
                iqn: IQN_MUTUAL.into(),
            })
            .await);
        assert!(session_disks(node, IQN_MUTUAL).is_empty());
    }
);

// -------------------------------------------------------------- system

async fn system_v1alpha1(node: &Node) {
    use csi_proxy_client::host::system::ServiceStatus as Host;
    use system::v1alpha1 as s;
    let api = &node.system_v1alpha1;
    let host = &node.host;

    let serial = ok(api
        .get_bios_serial_number(s::GetBiosSerialNumberRequest {})
        .await);
    assert_eq!(
        serial.serial_number,
        host.lock().system.bios_serial_number().expect("a serial")
    );
    assert!(!serial.serial_number.is_empty());

    let get = |name: &str| {
        let name = name.to_string();
        async move { ok(api.get_service(s::GetServiceRequest { name }).await) }
    };
    let msiscsi = get("MSiSCSI").await;
    assert_eq!(msiscsi.display_name, "Microsoft iSCSI Initiator Service");
    assert_eq!(msiscsi.start_type, s::StartType::Manual as i32);
    assert_eq!(msiscsi.status, s::ServiceStatus::Stopped as i32);
    let samss = get("samss").await;
    assert_eq!(samss.start_type, s::StartType::Automatic as i32);
    assert_eq!(samss.status, s::ServiceStatus::Running as i32);

    // Start (key names match case-insensitively) and start again.
    for name in ["msiscsi", "MSiSCSI"] {
        ok(api
            .start_service(s::StartServiceRequest { name: name.into() })
            .await);
        assert_eq!(service_status(host, "MSiSCSI"), Host::Running);
    }
    assert_eq!(
        get("MSiSCSI").await.status,
        s::ServiceStatus::Running as i32
    );
    for _ in 0..2 {
        ok(api
            .stop_service(s::StopServiceRequest {
                name: "MSiSCSI".into(),
                force: false,
            })
            .await);
        assert_eq!(service_status(host, "MSiSCSI"), Host::Stopped);
    }

    // A forced stop takes the running dependents down first.
    ok(api
        .stop_service(s::StopServiceRequest {
            name: "SamSS".into(),
            force: true,
        })
        .await);
    for stopped in ["SamSS", "LanmanServer", "Browser", "Netlogon"] {
        assert_eq!(service_status(host, stopped), Host::Stopped, "{stopped}");
    }
    for running in ["LanmanWorkstation", "W32Time"] {
        assert_eq!(service_status(host, running), Host::Running, "{running}");
    }
}
