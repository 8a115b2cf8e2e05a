//! The node layer against the cases drivers must survive, seeded from
//! `tests/it/data/node_scenarios.toml` into `MockHost` and into the reference
//! server: a disk seen only after a rescan, one seen only a while after
//! it, an offline clone, an NVMe disk
//! without a LUN, a volume mounted elsewhere, a stale SMB mapping from
//! before a restart. (Nodes serving only some groups or only v1beta1 are
//! in `node.rs` and `node_connect.rs`.)
#![cfg(feature = "mock")]

use std::time::Duration;

use crate::node_support::*;
use csi_proxy_client::Error;
use csi_proxy_client::node::{DiskSelector, MountState, NodeOptions};

const SEED: &str = include_str!("data/node_scenarios.toml");

macro_rules! scenarios {
    ($($name:ident),+ $(,)?) => {
        scenarios!(@one mock_v1, mock_seeded, V1; $($name),+);
        scenarios!(@one mock_beta, mock_seeded, Beta; $($name),+);
        scenarios!(@one mock_v0_2, mock_seeded, V0_2; $($name),+);
        #[cfg(unix)]
        scenarios!(@one server_v1, server_seeded, V1; $($name),+);
        #[cfg(unix)]
        scenarios!(@one server_beta, server_seeded, Beta; $($name),+);
        #[cfg(unix)]
        scenarios!(@one server_v0_2, server_seeded, V0_2; $($name),+);
        scenarios!(@one mock_v1_on_1_1, mock_seeded, V1, V1_1; $($name),+);
        #[cfg(unix)]
        scenarios!(@one server_v1_on_1_1, server_seeded, V1, V1_1; $($name),+);
        #[cfg(feature = "host-process")]
        scenarios!(@one host_process_v1, host_process_seeded, V1; $($name),+);
    };
    (@one $module:ident, $ctor:ident, $family:ident; $($name:ident),+) => {
        scenarios!(@one $module, $ctor, $family, V1_3; $($name),+);
    };
    (@one $module:ident, $ctor:ident, $family:ident, $release:ident; $($name:ident),+) => {
        mod $module {
            $(
                #[tokio::test]
                async fn $name() {
                    // One look for a disk: the rescan comes before it.
                    let options = super::NodeOptions::default().find_disk_timeout(super::Duration::ZERO);
                    let f = super::Fixture::$ctor(super::Family::$family, options, Some(super::SEED))
                        .await
                        .speaking(csi_proxy_client::host::ProxyRelease::$release);
                    super::$name(&f).await;
                    f.finish().await;
                }
            )+
        }
    };
}

scenarios![
    a_disk_seen_only_after_a_rescan_is_found,
    a_disk_seen_only_a_while_after_a_rescan_is_waited_for,
    an_offline_clone_is_onlined_and_not_formatted_again,
    an_nvme_disk_never_matches_a_lun,
    a_volume_mounted_elsewhere_is_staged_beside_it,
    a_stale_smb_mapping_is_reused_then_removed,
];

async fn a_disk_seen_only_after_a_rescan_is_found(f: &Fixture) {
    assert!(f.host.snapshot().disk(3).is_some());
    let disk = f.node.find_disk(DiskSelector::Lun(3)).await.unwrap();
    assert_eq!(disk.number, 3);
    f.node.stage_disk(&disk, STAGING).await.unwrap();
}

async fn a_disk_seen_only_a_while_after_a_rescan_is_waited_for(f: &Fixture) {
    // One look (the fixture's node does not poll): the rescan has started
    // bringing LUN 5 up, but it is not listed yet.
    let err = f.node.find_disk(DiskSelector::Lun(5)).await.unwrap_err();
    let Error::DiskNotFound { seen, .. } = &err else {
        panic!("{err}");
    };
    assert!(!seen.contains("LUN 5"), "{seen}");
    let polling = NodeOptions::default()
        .find_disk_interval(Duration::from_millis(100))
        .find_disk_timeout(Duration::from_secs(60));
    let driver = f.another_node_with(polling).await;
    let disk = driver.find_disk(DiskSelector::Lun(5)).await.unwrap();
    assert_eq!(disk.number, 5);
}

async fn an_offline_clone_is_onlined_and_not_formatted_again(f: &Fixture) {
    let seeded = f.host.snapshot();
    let volume = seeded
        .volumes
        .iter()
        .find(|v| v.disk == 1)
        .expect("the clone's volume")
        .id
        .clone();
    let disk = f.node.find_disk(DiskSelector::Lun(1)).await.unwrap();
    let staged = f.node.stage_disk(&disk, STAGING).await;
    if f.family == Family::V0_2 {
        // disk v1beta1 cannot online a disk: the mount fails, nothing formatted.
        assert!(staged.is_err());
        assert!(f.host.snapshot().disk(1).unwrap().is_offline);
        return;
    }
    assert_eq!(staged.unwrap(), volume, "the clone's own volume");
    assert!(!f.host.snapshot().disk(1).unwrap().is_offline);
    if let Some(mock) = &f.mock {
        assert!(mock.calls_of("FormatVolume").is_empty());
    }
}

async fn an_nvme_disk_never_matches_a_lun(f: &Fixture) {
    let err = f.node.find_disk(DiskSelector::Lun(2)).await.unwrap_err();
    let Error::DiskNotFound { seen, .. } = &err else {
        panic!("{err}");
    };
    assert!(seen.contains("disk 2 (LUN none"), "{seen}");
    let nvme = f.node.find_disk(DiskSelector::Number(2)).await.unwrap();
    assert_eq!(nvme.lun, None);
    assert_eq!(
        f.node.find_disk(DiskSelector::Lun(4)).await.unwrap().number,
        4
    );
}

async fn a_volume_mounted_elsewhere_is_staged_beside_it(f: &Fixture) {
    let e_drive = f
        .host
        .snapshot()
        .volumes
        .iter()
        .find(|v| v.disk == 4)
        .expect("E:")
        .id
        .clone();
    // Without volume v2alpha1 (the betas', v0.2's proxies) the OS disk
    // cannot be known, and a disk holding a volume this node did not
    // stage may be it: refused, unless the caller accepts the risk.
    let node = if f.family == Family::V1 {
        f.node.clone()
    } else {
        let err = f.node.stage_disk(4u32, STAGING).await.unwrap_err();
        assert!(matches!(err, Error::OsDiskUnknown { disk: 4, .. }), "{err}");
        let mounts = f.host.snapshot().mount_points;
        assert!(!mounts.iter().any(|m| m.volume_id == e_drive), "{mounts:?}");
        f.another_node_with(NodeOptions::default().allow_unknown_os_disk(true))
            .await
    };
    let staged = node.stage_disk(4u32, STAGING).await.unwrap();
    assert_eq!(staged, e_drive);
    node.unstage(STAGING).await.unwrap();
    assert!(
        f.host
            .snapshot()
            .volumes
            .iter()
            .any(|v| v.id == e_drive && v.disk == 4),
        "E: stays"
    );
    if let Some(mock) = &f.mock {
        assert!(mock.calls_of("FormatVolume").is_empty());
    }
}

async fn a_stale_smb_mapping_is_reused_then_removed(f: &Fixture) {
    // Before the driver restarted, it staged a volume of the share; the
    // restarted driver (f.node) has no memory of that reference.
    let before_restart = f.another_node().await;
    before_restart
        .smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &smb_user())
        .await
        .unwrap();
    drop(before_restart);
    assert!(mapped(&f.host));
    f.node
        .smb_stage(SHARE_DIR, SMB_STAGING, &smb_user())
        .await
        .unwrap();
    assert_eq!(
        f.node.mount_state(SMB_STAGING).await.unwrap(),
        MountState::Linked
    );
    f.node.unstage(SMB_STAGING).await.unwrap();
    // The link of the volume staged before the restart still uses the
    // mapping: a node that reads the host's links keeps it (a node that
    // cannot, through the reference server from Linux, knows only its
    // store, and removes it).
    assert_eq!(mapped(&f.host), f.sees_the_host());
    if f.sees_the_host() {
        f.node.unstage(SMB_OTHER_STAGING).await.unwrap();
    } else {
        // Through the proxy from Linux the other path is a link to a share
        // no longer mapped, which the proxy cannot tell from a file: it is
        // refused, never deleted. A plugin on Windows reads the link itself.
        let err = f.node.unstage(SMB_OTHER_STAGING).await.unwrap_err();
        assert!(matches!(err, Error::PathInUse { .. }), "{err}");
    }
    assert!(!mapped(&f.host), "the last volume took the mapping");
}
