//! The node's protocol for changing a volume, judged from the simulated
//! host (issue 42): records on kubelet's real paths, a record that cannot
//! be read, two `Node`s of one process with default options, and a format
//! whose request never reached the host.
#![cfg(feature = "mock")]

use std::future::IntoFuture;
use std::time::Duration;

use crate::node_support::*;
use csi_proxy_client::host::HotAttach;
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::{
    DiskSelector, MockNode, MountState, NodeOptions, NodeRecords, SmbStore,
};
use csi_proxy_client::{Error, ErrorKind};

/// kubelet's staging path since Kubernetes 1.25: the driver's name and
/// the SHA-256 of the volume handle (140 characters with
/// `disk.csi.azure.com`), and a pod's target path.
fn kubelet_staging(driver: &str) -> String {
    format!(
        r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\{driver}\9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\globalmount"
    )
}

const POD_TARGET: &str = r"C:\var\lib\kubelet\pods\2f5b8a4e-6c1d-4e9f-a7b3-0d8c9e1f2a3b\volumes\kubernetes.io~csi\pvc-4d3c2b1a-0f9e-8d7c-6b5a-493827161504\mount";

/// Finding 16: record and reference file names were the hex of the path,
/// 270-290 bytes on these paths, over the 255 a name may have: the stage
/// failed after mounting, and unpublish and unstage failed for ever.
async fn kubelet_paths_round_trip(f: Fixture) {
    // The longest driver name CSI allows (63). Under Wine the simulator's
    // sandbox adds its own directory to every path, and a volume mounted
    // at a path over Win32's 260 characters fails there (not on a node,
    // where the path is kubelet's alone): Azure disk's name (140
    // characters) instead. The names of record files are fixed-length
    // either way (`store::tests`, which run under Wine too).
    let driver = match cfg!(windows) {
        false => format!("{}.csi.example.com", "d".repeat(47)),
        true => "disk.csi.azure.com".to_string(),
    };
    assert!(driver.len() == 63 || cfg!(windows));
    let staging = kubelet_staging(&driver);
    let volume = f.node.stage_disk(1u32, &staging).await.unwrap();
    assert_eq!(f.node.stage_disk(1u32, &staging).await.unwrap(), volume);
    f.node.publish(&staging, POD_TARGET).await.unwrap();
    f.node.unpublish(POD_TARGET).await.unwrap();
    f.node.unstage(&staging).await.unwrap();
    assert!(!f.host.exists(&staging), "unstaged");

    let share_staging = kubelet_staging("smb.csi.k8s.io");
    f.node
        .smb_stage(r"\\fileserver\share\pv3", &share_staging, &smb_user())
        .await
        .unwrap();
    assert!(mapped(&f.host));
    f.node.unstage(&share_staging).await.unwrap();
    assert!(!mapped(&f.host), "the last reference took the mapping");
}

fn durable(dir: &std::path::Path) -> NodeOptions {
    NodeOptions::default()
        .records(NodeRecords::directory(dir.join("records")))
        .smb_store(SmbStore::directory(dir.join("smb")))
}

#[tokio::test]
async fn kubelets_real_paths_stage_and_unstage_with_a_state_directory_mock() {
    let dir = tempfile::tempdir().unwrap();
    kubelet_paths_round_trip(Fixture::mock(Family::V1, durable(dir.path())).await).await;
}

#[cfg(feature = "host-process")]
#[tokio::test]
async fn kubelets_real_paths_stage_and_unstage_with_a_state_directory_host_process() {
    let dir = tempfile::tempdir().unwrap();
    kubelet_paths_round_trip(Fixture::host_process(Family::V1, durable(dir.path())).await).await;
}

/// Every record file under `dir`.
fn record_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(record_files(&path));
        } else if path.extension().is_some_and(|e| e == "rec") {
            found.push(path);
        }
    }
    found
}

/// Finding 18: a format record left empty (written without a flush, then
/// a power loss) made every later stage recurse without pause. Now the
/// stage fails at once with an error naming the file, and nothing more is
/// sent to the disk.
#[tokio::test(start_paused = true)]
async fn an_empty_format_record_fails_the_stage_naming_its_file() {
    let mock = MockHost::builder()
        .request_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    mock.add_latency("FormatVolume", Duration::from_secs(30));
    let dir = tempfile::tempdir().unwrap();
    let options = || NodeOptions::default().records(NodeRecords::directory(dir.path()));
    let first = MockNode::new(&mock)
        .versions(Family::V1.versions())
        .options(options())
        .build()
        .unwrap();
    let e = first.stage_disk(1u32, STAGING).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
    let format_records = record_files(&dir.path().join("format"));
    assert_eq!(format_records.len(), 1, "the format sent is recorded");
    std::fs::write(&format_records[0], "").unwrap();

    let second = MockNode::new(&mock)
        .versions(Family::V1.versions())
        .options(options())
        .build()
        .unwrap();
    let e = tokio::time::timeout(Duration::from_secs(10), second.stage_disk(1u32, STAGING))
        .await
        .expect("fails at once")
        .unwrap_err();
    assert!(matches!(e, Error::Store { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains(&format_records[0].display().to_string()),
        "{e}"
    );
    assert_eq!(mock.calls_of("FormatVolume").len(), 1);
}

/// Finding 3: two `Node`s of one process with default options (a driver
/// that rebuilds its `Node`) stage one disk at once. Each kept its
/// records and its running formats to itself: both checked the volume
/// blank and formatted it.
async fn two_default_nodes_format_once(f: Fixture, formats: impl Fn(&Fixture) -> usize) {
    let other = f.another_node().await;
    let (a, b) = tokio::join!(
        f.node.stage_disk(1u32, STAGING),
        other.stage_disk(1u32, STAGING)
    );
    assert_eq!(a.unwrap(), b.unwrap());
    assert_eq!(formats(&f), 1, "one format");
}

#[tokio::test]
async fn two_nodes_of_one_process_with_default_options_format_once_mock() {
    let f = Fixture::mock(Family::V1, NodeOptions::default()).await;
    f.mock
        .as_ref()
        .unwrap()
        .add_latency("FormatVolume", Duration::from_millis(300));
    two_default_nodes_format_once(f, |f| {
        f.mock.as_ref().unwrap().calls_of("FormatVolume").len()
    })
    .await;
}

#[cfg(feature = "host-process")]
#[tokio::test]
async fn two_nodes_of_one_process_with_default_options_format_once_host_process() {
    let f = Fixture::host_process(Family::V1, NodeOptions::default()).await;
    two_default_nodes_format_once(f, |f| f.fake().unwrap().method_calls("volume_format_ntfs"))
        .await;
}

/// A `FormatVolume` that never reached the host (the proxy restarting)
/// leaves its outcome unknown to the node, so its record stays. Before,
/// every later stage waited for a format no one was running, for ever.
/// Now: pending within the settle time, then checked and formatted.
#[tokio::test(start_paused = true)]
async fn a_format_that_never_reached_the_host_is_sent_again_after_the_settle_time() {
    let mock = MockHost::new();
    mock.fail_next("FormatVolume", tonic::Code::Unavailable, "proxy restarting");
    let node = MockNode::new(&mock)
        .versions(Family::V1.versions())
        .options(NodeOptions::default())
        .build()
        .unwrap();
    let e = node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    let e = node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert!(matches!(e, Error::FormatPending { .. }), "{e:?}");
    assert_eq!(mock.calls_of("FormatVolume").len(), 1, "not sent again");

    let settled = NodeOptions::default().format_settle(Duration::ZERO);
    let node = MockNode::new(&mock)
        .versions(Family::V1.versions())
        .options(settled)
        .build()
        .unwrap();
    node.stage_disk(1u32, STAGING).await.unwrap();
    assert_eq!(mock.calls_of("FormatVolume").len(), 2);
    mock.host()
        .write_file(&format!(r"{STAGING_C}\data"), b"kept")
        .unwrap();
}

/// Finding 2: HostProcess mode with default options kept its records in
/// the process's memory, so a plugin restarted while the storage service
/// still formatted (the process that asked is gone; the format is not)
/// found no record and formatted again. With no records named, HostProcess
/// mode now keeps them on the host (`WindowsHost::state_dir`), where the
/// restarted plugin reads the format sent.
#[cfg(feature = "host-process")]
#[tokio::test]
async fn host_process_mode_keeps_its_default_records_on_the_host() {
    use csi_proxy_client::host_process::FAKE_STATE_DIR;
    let f = Fixture::host_process(Family::V1, NodeOptions::default()).await;
    f.fake()
        .unwrap()
        .add_latency("volume_format_ntfs", Duration::from_secs(3));
    let short = NodeOptions::default().deadline(Duration::from_secs(1));
    let first = f.another_node_with(short).await;
    let e = first.stage_disk(1u32, STAGING).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
    let dir = f.host.host_path(FAKE_STATE_DIR).unwrap().join("records");
    assert_eq!(
        record_files(&dir.join("format")).len(),
        1,
        "the format sent is recorded on the host"
    );
    // The restarted plugin: the records on the host, memory of its own.
    let restarted = f
        .another_node_with(NodeOptions::default().records(NodeRecords::directory(&dir)))
        .await;
    restarted.stage_disk(1u32, STAGING).await.unwrap();
    assert_eq!(f.fake().unwrap().method_calls("volume_format_ntfs"), 1);
}

/// Finding 4: a stage whose `PartitionDisk` outlived its request (the
/// host made the partition; the answer was lost) left the new partition
/// without its licence: every retry found an unformatted volume this node
/// could not show it made, "may hold data", for good. The intent recorded
/// before `PartitionDisk` licenses it on the retry.
#[tokio::test(start_paused = true)]
async fn a_partition_whose_answer_was_lost_is_still_staged() {
    let mock = MockHost::builder()
        .request_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    mock.add_latency("PartitionDisk", Duration::from_secs(10));
    let node = MockNode::new(&mock)
        .versions(Family::V1.versions())
        .options(NodeOptions::default())
        .build()
        .unwrap();
    let e = node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
    tokio::time::sleep(Duration::from_secs(20)).await;
    mock.clear_faults();
    let volume = node.stage_disk(1u32, STAGING).await.unwrap();
    assert_eq!(
        mock.calls_of("PartitionDisk").len(),
        1,
        "not partitioned again"
    );
    assert_eq!(mock.calls_of("FormatVolume").len(), 1);
    assert_eq!(node.stage_disk(1u32, STAGING).await.unwrap(), volume);
}

/// Finding 20: `Node::remove` left the path's stage record, so a later
/// legitimate stage of another disk there was `DifferentDisk`, with no
/// documented way out. The record goes with the path.
async fn a_removed_staging_path_is_staged_anew(f: Fixture) {
    let a = f.host.hot_attach(HotAttach::new(4 * GIB)).unwrap();
    let b = f.host.hot_attach(HotAttach::new(4 * GIB)).unwrap();
    let disk_a = f
        .node
        .find_disk(DiskSelector::Lun(a.lun.unwrap()))
        .await
        .unwrap();
    let disk_b = f
        .node
        .find_disk(DiskSelector::Lun(b.lun.unwrap()))
        .await
        .unwrap();
    f.node.stage_disk(&disk_a, STAGING).await.unwrap();
    f.host
        .write_file(&format!(r"{STAGING_C}\a.txt"), b"pod A's data")
        .unwrap();
    // A driver's clean-up of the path (its volume deleted meanwhile):
    // the mount point goes, never what it points to.
    f.node.remove(STAGING).await.unwrap();
    assert_eq!(
        f.node.mount_state(STAGING).await.unwrap(),
        MountState::Missing
    );
    let volume_b = f.node.stage_disk(&disk_b, STAGING).await.unwrap();
    assert_eq!(
        f.node.mount_state(STAGING).await.unwrap(),
        MountState::Mounted {
            volume_id: volume_b
        }
    );
}

#[tokio::test]
async fn a_removed_staging_path_is_staged_anew_mock() {
    a_removed_staging_path_is_staged_anew(Fixture::mock(Family::V1, NodeOptions::default()).await)
        .await;
}

#[cfg(feature = "host-process")]
#[tokio::test]
async fn a_removed_staging_path_is_staged_anew_host_process() {
    a_removed_staging_path_is_staged_anew(
        Fixture::host_process(Family::V1, NodeOptions::default()).await,
    )
    .await;
}

/// Finding 6: a disk detached under its mount (the cloud detached it, or
/// the VM lost it) must not leave its staging path refused at every
/// unstage. The path holds a mount point to a volume that no longer
/// exists: it is removed (never anything behind it), and a retry finds
/// nothing. Holds in HostProcess mode, which reads the reparse point.
/// In proxy mode the dangling mount point reads as neither a link nor a
/// directory (the proxy's API cannot tell it from a file, which is never
/// deleted): it is removed when the path's stage record names a disk id
/// the host no longer lists.
async fn a_detached_disks_staging_path_unstages(f: Fixture) {
    let a = f.host.hot_attach(HotAttach::new(4 * GIB)).unwrap();
    let disk = f
        .node
        .find_disk(DiskSelector::Lun(a.lun.unwrap()))
        .await
        .unwrap();
    f.node.stage_disk(&disk, STAGING).await.unwrap();
    f.host.detach_disk(disk.number).unwrap();
    f.node.unstage(STAGING).await.unwrap();
    assert!(
        !f.host.exists(STAGING_C),
        "the dangling mount point is gone"
    );
    f.node.unstage(STAGING).await.unwrap();
}

#[tokio::test]
async fn a_detached_disks_staging_path_unstages_mock() {
    a_detached_disks_staging_path_unstages(Fixture::mock(Family::V1, NodeOptions::default()).await)
        .await;
}

/// The proof finding 6's removal rests on in proxy mode is the node's
/// own stage record: a restarted plugin whose records were in memory has
/// none, and the path that the proxy cannot tell from a file stays
/// refused (never deleted on a guess).
#[tokio::test]
async fn a_detached_disks_staging_path_with_no_record_is_refused_mock() {
    let f = Fixture::mock(Family::V1, NodeOptions::default()).await;
    f.node.stage_disk(1u32, STAGING).await.unwrap();
    f.host.detach_disk(1).unwrap();
    let restarted = f
        .another_node_with(NodeOptions::default().records(NodeRecords::memory()))
        .await;
    let e = restarted.unstage(STAGING).await.unwrap_err();
    assert!(matches!(e, Error::PathInUse { .. }), "{e:?}");
    assert!(f.host.exists(STAGING_C), "nothing removed without a record");
}

#[cfg(feature = "host-process")]
#[tokio::test]
async fn a_detached_disks_staging_path_unstages_host_process() {
    a_detached_disks_staging_path_unstages(
        Fixture::host_process(Family::V1, NodeOptions::default()).await,
    )
    .await;
}

/// `Node::kill`, the process death the chaos harness and a driver's own
/// restart tests use, frees what the dead process held: its stage, with
/// its `MountVolume` at the host for a minute, answers at once, and the
/// next process's stage of the path takes the path's claim at once. A
/// node that only stopped being used (what the harness had before) kept
/// the claim until its host call answered.
#[tokio::test(start_paused = true)]
async fn a_killed_node_stops_at_once_and_frees_its_claims() {
    let dir = tempfile::tempdir().unwrap();
    let options = || NodeOptions::default().records(NodeRecords::directory(dir.path()));
    let f = Fixture::mock(Family::V1, options()).await;
    let mock = f.mock.as_ref().unwrap();
    mock.add_latency("MountVolume", Duration::from_secs(60));
    let node = f.node.clone();
    let stage = tokio::spawn(async move { node.stage_disk(1u32, STAGING).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(mock.calls().iter().any(|c| c.rpc.name == "MountVolume"));
    f.node.kill();
    let killed = tokio::time::Instant::now();
    stage.await.unwrap().unwrap_err();
    assert!(
        killed.elapsed() < Duration::from_secs(1),
        "{:?}",
        killed.elapsed()
    );
    let calls = mock.calls().len();
    let e = f.node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert!(matches!(e, Error::Connect { .. }), "{e:?}");
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert_eq!(mock.calls().len(), calls, "a killed node reached the host");
    mock.clear_faults();
    let next = f.another_node_with(options()).await;
    next.stage_disk(1u32, STAGING).await.unwrap();
    assert!(
        killed.elapsed() < Duration::from_secs(50),
        "the next process waited {:?} for the dead one's claim",
        killed.elapsed()
    );
}

/// What a killed node had sent still lands: its format, a minute at the
/// host, shows done though no one waits for it, and the next process's
/// stage finds the format record and waits for it rather than formatting
/// again.
#[tokio::test(start_paused = true)]
async fn a_killed_nodes_host_calls_still_land() {
    let dir = tempfile::tempdir().unwrap();
    let options = || NodeOptions::default().records(NodeRecords::directory(dir.path()));
    let f = Fixture::mock(Family::V1, options()).await;
    let mock = f.mock.as_ref().unwrap();
    mock.add_latency("FormatVolume", Duration::from_secs(60));
    let node = f.node.clone();
    let stage = tokio::spawn(async move { node.stage_disk(1u32, STAGING).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    f.node.kill();
    stage.await.unwrap().unwrap_err();
    let formatted = || {
        f.host.run(|s| {
            let volumes = s.list_volumes_on_disk(1, 0).unwrap();
            let volumes: Vec<_> = volumes.into_iter().filter(|v| !v.is_empty()).collect();
            !volumes.is_empty() && volumes.iter().all(|v| s.is_volume_formatted(v).unwrap())
        })
    };
    assert!(!formatted(), "formatted before its host time");
    mock.clear_faults();
    let next = f.another_node_with(options()).await;
    crate::adversary_session2::until_ok(Duration::from_secs(20), || {
        next.stage_disk(1u32, STAGING).into_future()
    })
    .await;
    assert!(formatted());
    let formats = mock
        .calls()
        .iter()
        .filter(|c| c.rpc.name == "FormatVolume")
        .count();
    assert_eq!(formats, 1, "formatted again by the next process");
}
