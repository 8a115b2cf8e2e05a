//! Operations end (issue 42, item 7 and finding 5): an operation whose
//! caller dropped it completes or stops, and never lands on the host after
//! a later operation on the same path has answered. kubelet drops a call
//! at its deadline and, for a volume whose stage is uncertain, may unstage
//! it next; what the dropped stage still does must not come after that
//! unstage's OK.
#![cfg(feature = "mock")]

use std::future::IntoFuture;
use std::time::Duration;

use crate::node_support::*;
use csi_proxy_client::host::Host;
use csi_proxy_client::node::{Node, NodeOptions};

/// Calls `work` as kubelet does, each try dropped after `wait`, until
/// one answers OK; the number of tries.
async fn until_ok<F, Fut, T>(wait: Duration, mut work: F) -> u32
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, csi_proxy_client::Error>>,
{
    for attempt in 1.. {
        if let Ok(Ok(_)) = tokio::time::timeout(wait, work()).await {
            return attempt;
        }
        tokio::time::sleep(wait / 10).await;
    }
    unreachable!()
}

/// Finding 5: the share's first mapping is slow (another volume's stage
/// holds the server while it is made); a second volume's stage is dropped
/// while it waits behind it, and kubelet unstages that volume. The
/// dropped stage, its task still waiting, used to find the share mapped
/// once the server was free and link the path: after the unstage had
/// answered OK, leaving a link and a reference (so a mapping) nothing
/// removes. `slow`: how long the host takes to map a share.
async fn a_dropped_stage_never_lands_after_the_unstage(node: &Node, host: &Host, slow: Duration) {
    make_share_dirs(host);
    let first = {
        let node = node.clone();
        tokio::spawn(async move {
            node.smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &smb_user())
                .await
        })
    };
    tokio::time::sleep(slow / 30).await;
    let dropped = tokio::time::timeout(
        slow / 6,
        node.smb_stage(SHARE_DIR, SMB_STAGING, &smb_user())
            .into_future(),
    )
    .await;
    assert!(dropped.is_err(), "the stage waits behind the first mapping");

    until_ok(slow / 6, || node.unstage(SMB_STAGING).into_future()).await;
    first.await.unwrap().expect("the first volume stages");
    // Whatever the dropped stage still had to do is done by now.
    tokio::time::sleep(slow * 2).await;
    assert!(
        !host.exists(SMB_STAGING),
        "the unstage answered OK, yet the dropped stage linked {SMB_STAGING} after it"
    );
    until_ok(slow / 6, || node.unstage(SMB_OTHER_STAGING).into_future()).await;
    assert!(
        !mapped(host),
        "every volume unstaged, the share is still mapped"
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_stage_never_lands_after_the_unstage_of_its_path_mock() {
    let f = Fixture::mock(Family::V1, NodeOptions::default()).await;
    let slow = Duration::from_secs(60);
    f.mock
        .as_ref()
        .unwrap()
        .add_latency("NewSmbGlobalMapping", slow);
    a_dropped_stage_never_lands_after_the_unstage(&f.node, &f.host, slow).await;
}

/// The fake's host time is real time (a blocking call): three seconds.
#[cfg(feature = "host-process")]
#[tokio::test]
async fn a_dropped_stage_never_lands_after_the_unstage_of_its_path_host_process() {
    let f = Fixture::host_process(Family::V1, NodeOptions::default()).await;
    let slow = Duration::from_secs(3);
    f.fake()
        .unwrap()
        .add_latency("smb_new_global_mapping", slow);
    a_dropped_stage_never_lands_after_the_unstage(&f.node, &f.host, slow).await;
}

/// A stage stopped at the node's deadline while its `MountVolume` is still
/// at the host (csi-proxy goes on with it): the unstage that follows
/// used to find nothing mounted, answer OK, and the mount then landed on
/// a path nothing would unstage again. The stage's `path` record stays,
/// so the unstage waits (`PathPending`) until the host has had the settle
/// time, then finds the mount and removes it.
#[tokio::test(start_paused = true)]
async fn a_mount_landing_after_its_stage_stopped_is_unstaged_mock() {
    let options = NodeOptions::default().deadline(Duration::from_secs(30));
    let f = Fixture::mock(Family::V1, options).await;
    let mock = f.mock.as_ref().unwrap();
    mock.add_latency("MountVolume", Duration::from_secs(150));
    let e = f.node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
    let e = f.node.unstage(STAGING).await.unwrap_err();
    assert!(
        matches!(e, csi_proxy_client::Error::PathPending { .. }),
        "{e:?}"
    );

    until_ok(Duration::from_secs(10), || {
        f.node.unstage(STAGING).into_future()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        !f.host.exists(STAGING_C),
        "the unstage answered OK, yet the stopped stage's mount landed after it"
    );
    assert_eq!(mock.calls_of("MountVolume").len(), 1);
}
