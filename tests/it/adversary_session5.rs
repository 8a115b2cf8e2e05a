//! Adversary session 5: offline unstages racing stages at another path,
//! liveness of `VolumesPending`, expand over a late volume, two volumes
//! on one disk, and `Node::kill` inside the arrival wait, judged from the
//! simulated host only. Both losses found are of a disk taken offline
//! behind the node, not of the arrival wait: a second path staged from a
//! staged disk (fixed: the other paths are asked again once the stage has
//! onlined the disk) and a re-stage over the dangling mount point (open,
//! ignored). The other attacks were withstood.
#![cfg(feature = "mock")]

use std::future::IntoFuture;
use std::time::Duration;

use crate::adversary_42::offline_ext4_disk_arriving;
use crate::node_support::*;
use csi_proxy_client::node::{NodeOptions, NodeRecords};

const DISK_SIZE: u64 = 34359738368;
const LUN1: &str = "Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1";
const OTHER_C: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv2\globalmount";

/// Retries a stage of disk 1 at `path` every `every` for `for_` (kubelet
/// retries every operation), until Ok; all answers returned.
async fn retry_stage(
    node: &csi_proxy_client::node::Node,
    path: &str,
    every: Duration,
    for_: Duration,
) -> (Result<(), csi_proxy_client::Error>, Vec<String>) {
    let start = tokio::time::Instant::now();
    let mut answers = Vec::new();
    loop {
        let r = node.stage_disk(1u32, path).await.map(|_| ());
        answers.push(format!("{:?} {r:?}", start.elapsed()));
        if r.is_ok() || start.elapsed() > for_ {
            return (r, answers);
        }
        tokio::time::sleep(every).await;
    }
}

fn last(answers: &[String]) -> String {
    answers
        .iter()
        .rev()
        .take(4)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}

/// ATTACK: an unstage of STAGING with `.offline(true)` and a stage of the
/// same disk at OTHER_STAGING sent together (several offsets); the disk's
/// volume arrives 3 s after each online. Then kubelet's retries of the
/// stage. SAFE: no PartitionDisk, no format, the pod's file kept, and the
/// disk staged at OTHER_STAGING in the end.
#[tokio::test(start_paused = true)]
async fn offline_unstage_racing_a_stage_elsewhere_keeps_the_pods_file() {
    for offset_ms in [0u64, 1, 5, 50, 200, 1_000, 3_500] {
        let seed = blank_offline_disk_arriving(3_000);
        let f = Fixture::mock_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
        staged_with_pod_file(&f).await;
        let mock = f.mock.as_ref().unwrap();
        mock.add_latency("SetDiskState", Duration::from_millis(300));
        let (u, s) = tokio::join!(f.node.unstage(STAGING).offline(true).into_future(), async {
            tokio::time::sleep(Duration::from_millis(offset_ms)).await;
            f.node.stage_disk(1u32, OTHER_STAGING).await.map(|_| ())
        });
        mock.clear_faults();
        let (r, answers) = retry_stage(
            &f.node,
            OTHER_STAGING,
            Duration::from_secs(1),
            Duration::from_secs(120),
        )
        .await;
        let seen = format!(
            "offset {offset_ms}: unstage {u:?}, stage {s:?}, retries {}",
            last(&answers)
        );
        assert_eq!(mock.calls_of("PartitionDisk").len(), 0, "{seen}");
        assert_eq!(mock.calls_of("FormatVolume").len(), 0, "{seen}");
        assert!(r.is_ok(), "{seen}");
        assert_eq!(
            file_at(&f, OTHER_C).as_deref(),
            Some(&b"pod data"[..]),
            "{seen}"
        );
    }
}

/// ATTACK: the unstage's `SetDiskState(offline)` answer is lost (latency
/// past the deadline; it lands later); the stage elsewhere retried
/// every 10 s for an hour. SAFE: RemovalPending for the settle time,
/// then the disk staged at OTHER_STAGING with the pod's file (liveness).
#[tokio::test(start_paused = true)]
async fn offline_unstage_lost_then_stage_elsewhere_is_staged_in_the_end() {
    let seed = blank_offline_disk_arriving(3_000);
    let options = NodeOptions::default().deadline(Duration::from_secs(10));
    let f = Fixture::mock_seeded(Family::V1, options, Some(&seed)).await;
    staged_with_pod_file(&f).await;
    let mock = f.mock.as_ref().unwrap();
    mock.add_latency("SetDiskState", Duration::from_secs(14));
    let (u, s) = tokio::join!(f.node.unstage(STAGING).offline(true).into_future(), async {
        tokio::time::sleep(Duration::from_secs(11)).await;
        f.node.stage_disk(1u32, OTHER_STAGING).await.map(|_| ())
    });
    mock.clear_faults();
    let (r, answers) = retry_stage(
        &f.node,
        OTHER_STAGING,
        Duration::from_secs(10),
        Duration::from_secs(3_600),
    )
    .await;
    let seen = format!("unstage {u:?}, stage {s:?}, retries {}", last(&answers));
    assert_eq!(mock.calls_of("PartitionDisk").len(), 0, "{seen}");
    assert_eq!(mock.calls_of("FormatVolume").len(), 0, "{seen}");
    assert!(r.is_ok(), "{seen}");
    assert_eq!(
        file_at(&f, OTHER_C).as_deref(),
        Some(&b"pod data"[..]),
        "{seen}"
    );
}

/// ATTACK (liveness): a blank offline disk whose SetDiskState(online)
/// answer is lost (latency past the deadline) on the first stage; faults
/// then stop. Retried every 10 s for an hour, with offline unstages of
/// the path between retries (kubelet's uncertain stage). SAFE: staged in
/// the end, partitioned and formatted once.
#[tokio::test(start_paused = true)]
async fn volumes_pending_never_makes_a_blank_disk_unstageable() {
    for unstage_between in [false, true] {
        let seed = blank_offline_disk_arriving(1_000);
        let options = NodeOptions::default().deadline(Duration::from_secs(10));
        let f = Fixture::mock_seeded(Family::V1, options, Some(&seed)).await;
        let mock = f.mock.as_ref().unwrap();
        mock.add_latency("SetDiskState", Duration::from_secs(14));
        let first = f.node.stage_disk(1u32, STAGING).await.map(|_| ());
        mock.clear_faults();
        let start = tokio::time::Instant::now();
        let mut answers = vec![format!("first {first:?}")];
        let mut r = first;
        while r.is_err() && start.elapsed() < Duration::from_secs(3_600) {
            tokio::time::sleep(Duration::from_secs(10)).await;
            if unstage_between {
                let u = f.node.unstage(STAGING).offline(true).await;
                answers.push(format!("unstage {u:?}"));
            }
            r = f.node.stage_disk(1u32, STAGING).await.map(|_| ());
            answers.push(format!("{:?} {r:?}", start.elapsed()));
        }
        let seen = format!("between {unstage_between}: {}", last(&answers));
        assert!(r.is_ok(), "{seen}");
        assert_eq!(mock.calls_of("PartitionDisk").len(), 1, "{seen}");
        assert_eq!(mock.calls_of("FormatVolume").len(), 1, "{seen}");
    }
}

/// ATTACK: expand of STAGING while a stage of the same disk at
/// OTHER_STAGING is inside its arrival wait (the disk taken offline
/// behind the node, the volume listed 2 s after each online), the expand
/// started at several offsets, both retried after. SAFE: no
/// PartitionDisk, no format, the pod's file kept.
#[tokio::test(start_paused = true)]
async fn expand_during_a_stage_elsewhere_waiting_keeps_the_pods_file() {
    for offset_ms in [0u64, 100, 1_000, 1_900, 2_100, 4_900] {
        let seed = blank_offline_disk_arriving(2_000);
        let f = Fixture::mock_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
        staged_with_pod_file(&f).await;
        let mock = f.mock.as_ref().unwrap();
        let handle = f.host.lock().storage.disk(1).unwrap().handle;
        f.host.hot_grow(handle, 2 * DISK_SIZE).unwrap();
        f.host.lock().storage.force_offline(1, true).unwrap();
        let (s, e) = tokio::join!(
            f.node.stage_disk(1u32, OTHER_STAGING).into_future(),
            async {
                tokio::time::sleep(Duration::from_millis(offset_ms)).await;
                f.node.expand(STAGING).min_growth(1).await
            }
        );
        tokio::time::sleep(Duration::from_secs(6)).await;
        let e2 = f.node.expand(STAGING).min_growth(1).await;
        let s2 = f.node.stage_disk(1u32, OTHER_STAGING).await.map(|_| ());
        let seen =
            format!("offset {offset_ms}: stage {s:?}, expand {e:?}, expand {e2:?}, stage {s2:?}");
        assert_eq!(mock.calls_of("PartitionDisk").len(), 0, "{seen}");
        assert_eq!(mock.calls_of("FormatVolume").len(), 0, "{seen}");
        assert_eq!(
            file_at(&f, STAGING_C)
                .or_else(|| file_at(&f, OTHER_C))
                .as_deref(),
            Some(&b"pod data"[..]),
            "{seen}"
        );
    }
}

/// ATTACK: an offline disk with two partitions, a small NTFS one and a
/// large one holding ext4 (RAW to Windows), listed 2 s after the online.
/// SAFE: nothing partitioned or formatted; the ext4 partition kept.
#[tokio::test(start_paused = true)]
async fn two_volumes_arriving_late_never_format_the_ext4_one() {
    let seed = format!(
        "{OS_DISK}
[[disks]]
number = 1
location = \"{LUN1}\"
size = {DISK_SIZE}
online = false
partition_style = \"gpt\"
volumes_arrive_ms = 2000
[[volumes]]
disk = 1
size = 1073741824
fs = \"ntfs\"
[[volumes]]
disk = 1
holds = \"ext4\"
"
    );
    let f = Fixture::mock_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
    let r = kubelet_stage(&f.node, STAGING).await;
    let mock = f.mock.as_ref().unwrap();
    let r2 = f.node.unstage(STAGING).offline(true).await;
    let r3 = kubelet_stage(&f.node, OTHER_STAGING).await;
    let seen = format!("{r:?} {r2:?} {r3:?}");
    assert_eq!(mock.calls_of("PartitionDisk").len(), 0, "{seen}");
    assert_eq!(mock.calls_of("FormatVolume").len(), 0, "{seen}");
}

/// ATTACK: `Node::kill` of the node whose stage onlined the ext4 disk,
/// inside the arrival wait (1 s, 3 s), or while its SetDiskState(online)
/// is at the host (2 s latency, killed at 1 s); a new Node over the same
/// records directory stages at once, as kubelet retries. SAFE: ext4
/// untouched.
#[tokio::test(start_paused = true)]
async fn a_node_killed_in_the_wait_and_a_new_one_never_format_ext4() {
    for (latency_ms, kill_at_ms) in [(0u64, 1_000u64), (0, 3_000), (2_000, 1_000), (2_000, 2_500)] {
        let dir = tempfile::tempdir().unwrap();
        let seed = offline_ext4_disk_arriving(4_000);
        let options = || NodeOptions::default().records(NodeRecords::directory(dir.path()));
        let f = Fixture::mock_seeded(Family::V1, options(), Some(&seed)).await;
        let mock = f.mock.as_ref().unwrap();
        if latency_ms > 0 {
            mock.add_latency("SetDiskState", Duration::from_millis(latency_ms));
        }
        let dropped = tokio::time::timeout(
            Duration::from_millis(kill_at_ms),
            f.node.stage_disk(1u32, STAGING),
        )
        .await;
        f.node.kill();
        mock.clear_faults();
        let b = f.another_node_with(options()).await;
        let r = kubelet_stage(&b, STAGING).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        let r2 = kubelet_stage(&b, OTHER_STAGING).await;
        assert_ext4_untouched(
            &f,
            mock,
            &format!("latency {latency_ms} kill {kill_at_ms}: {dropped:?} {r:?} {r2:?}"),
        );
    }
}

/// ATTACK (liveness): as above, on a blank disk (volumes arriving 1 s):
/// the new Node must stage it once faults stop.
#[tokio::test(start_paused = true)]
async fn a_node_killed_in_the_wait_leaves_a_blank_disk_stageable() {
    for (latency_ms, kill_at_ms) in [(0u64, 1_000u64), (0, 4_900), (2_000, 1_000), (2_000, 2_500)] {
        let dir = tempfile::tempdir().unwrap();
        let seed = blank_offline_disk_arriving(1_000);
        let options = || {
            NodeOptions::default()
                .deadline(Duration::from_secs(10))
                .records(NodeRecords::directory(dir.path()))
        };
        let f = Fixture::mock_seeded(Family::V1, options(), Some(&seed)).await;
        let mock = f.mock.as_ref().unwrap();
        if latency_ms > 0 {
            mock.add_latency("SetDiskState", Duration::from_millis(latency_ms));
        }
        let _ = tokio::time::timeout(
            Duration::from_millis(kill_at_ms),
            f.node.stage_disk(1u32, STAGING),
        )
        .await;
        f.node.kill();
        mock.clear_faults();
        let b = f.another_node_with(options()).await;
        let (r, answers) = retry_stage(
            &b,
            STAGING,
            Duration::from_secs(10),
            Duration::from_secs(3_600),
        )
        .await;
        let seen = format!("latency {latency_ms} kill {kill_at_ms}: {}", last(&answers));
        assert!(r.is_ok(), "{seen}");
        assert_eq!(mock.calls_of("FormatVolume").len(), 1, "{seen}");
    }
}

/// ATTACK: the disk staged at STAGING (the pod's file on it) goes offline
/// behind the node (Windows, a SAN policy, an admin); a stage of disk 1
/// at OTHER_STAGING (another PV handed the same LUN) comes while it is
/// offline. StagedElsewhere is decided before the online, while STAGING's
/// mount point cannot be resolved (the device is not ready); the stage
/// then onlines the disk and, once its volume is listed, mounts it.
/// SAFE: the volume STAGING holds is never mounted at OTHER_STAGING.
///
/// LOST, fixed (arrive 0 and 2 s): the stage at OTHER_STAGING was Ok;
/// STAGING and OTHER_STAGING both resolved to the one volume, the pod's
/// file readable (and writable) at OTHER_STAGING: `still_holds` took
/// STAGING's unresolvable mount point ("The device is not ready") for
/// "holds nothing", and the check was not made again after the online.
/// Now it is: StagedElsewhere.
#[tokio::test(start_paused = true)]
async fn an_offline_disk_staged_elsewhere_is_never_mounted_for_another_path() {
    for arrive_ms in [0u64, 2_000] {
        let seed = blank_offline_disk_arriving(arrive_ms);
        let f = Fixture::mock_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
        staged_with_pod_file(&f).await;
        let v = f.node.volume_at(STAGING).await.unwrap();
        f.host.lock().storage.force_offline(1, true).unwrap();
        let r = kubelet_stage(&f.node, OTHER_STAGING).await;
        tokio::time::sleep(Duration::from_secs(6)).await;
        let at_other = f.node.volume_at(OTHER_STAGING).await;
        let at_staging = f.node.volume_at(STAGING).await;
        let seen = format!(
            "arrive {arrive_ms}: stage elsewhere {r:?}; at OTHER_STAGING {at_other:?}, at STAGING {at_staging:?} (staged {v}); pod file at OTHER_STAGING {:?}",
            file_at(&f, OTHER_C).map(|b| String::from_utf8_lossy(&b).to_string())
        );
        let mock = f.mock.as_ref().unwrap();
        assert_eq!(mock.calls_of("FormatVolume").len(), 0, "{seen}");
        assert!(
            !matches!(&at_other, Ok(id) if id.eq_ignore_ascii_case(&v)),
            "{seen}"
        );
    }
}

/// ATTACK (liveness): the disk staged at STAGING goes offline behind the
/// node (a reboot under an offline SAN policy leaves data disks offline,
/// their mount points dangling); kubelet stages STAGING again, retrying
/// every 10 s for 10 minutes, with no unstage. SAFE: staged again, the
/// pod's file there.
///
/// LOST (liveness): every stage is PathInUse ("something that is not a
/// directory"): the dangling mount point is refused before the stage
/// would bring the disk online, so nothing ever onlines it. Open: a
/// fix onlines the disk first when the path's record names it.
#[tokio::test(start_paused = true)]
#[ignore = "open: a re-stage over the dangling mount point of a disk taken offline behind the node is PathInUse for good (docs/safety.md)"]
async fn a_restage_over_a_dangling_mount_point_of_an_offline_disk_succeeds() {
    for arrive_ms in [0u64, 2_000] {
        let seed = blank_offline_disk_arriving(arrive_ms);
        let f = Fixture::mock_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
        staged_with_pod_file(&f).await;
        f.host.lock().storage.force_offline(1, true).unwrap();
        let (r, answers) = retry_stage(
            &f.node,
            STAGING,
            Duration::from_secs(10),
            Duration::from_secs(600),
        )
        .await;
        let seen = format!("arrive {arrive_ms}: {}", last(&answers));
        let mock = f.mock.as_ref().unwrap();
        assert_eq!(mock.calls_of("FormatVolume").len(), 0, "{seen}");
        assert!(r.is_ok(), "{seen}");
        assert_eq!(
            file_at(&f, STAGING_C).as_deref(),
            Some(&b"pod data"[..]),
            "{seen}"
        );
    }
}

/// ATTACK: as `a_node_killed_in_the_wait_and_a_new_one_never_format_ext4`,
/// with the default (per-host) records. SAFE: ext4 untouched.
#[tokio::test(start_paused = true)]
async fn a_node_killed_in_the_wait_over_per_host_records_never_formats_ext4() {
    for kill_at_ms in [500u64, 2_000, 3_900] {
        let seed = offline_ext4_disk_arriving(4_000);
        let f = Fixture::mock_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
        let _ = tokio::time::timeout(
            Duration::from_millis(kill_at_ms),
            f.node.stage_disk(1u32, STAGING),
        )
        .await;
        f.node.kill();
        let b = f.another_node_with(NodeOptions::default()).await;
        let r = kubelet_stage(&b, OTHER_STAGING).await;
        let mock = f.mock.as_ref().unwrap();
        assert_ext4_untouched(&f, mock, &format!("kill {kill_at_ms}: {r:?}"));
    }
}

/// ATTACK: kubelet gives up on a stage inside its arrival wait (uncertain)
/// and sends an unstage with offline of the same path, retried every
/// 500 ms, then stages again; the ext4 volume arrives at 4 s. SAFE: ext4
/// untouched, the unstage answered in the end.
#[tokio::test(start_paused = true)]
async fn an_offline_unstage_of_a_stage_inside_its_wait_never_formats_ext4() {
    for drop_at_ms in [500u64, 2_000, 4_500] {
        let seed = offline_ext4_disk_arriving(4_000);
        let f = Fixture::mock_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
        let _ = tokio::time::timeout(
            Duration::from_millis(drop_at_ms),
            f.node.stage_disk(1u32, STAGING),
        )
        .await;
        let mut unstaged = Vec::new();
        for _ in 0..40 {
            let u = f.node.unstage(STAGING).offline(true).await;
            let ok = u.is_ok();
            unstaged.push(format!("{u:?}"));
            if ok {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let r = kubelet_stage(&f.node, STAGING).await;
        let r2 = kubelet_stage(&f.node, OTHER_STAGING).await;
        let mock = f.mock.as_ref().unwrap();
        let seen = format!(
            "drop {drop_at_ms}: unstage {:?}, stage {r:?} {r2:?}",
            unstaged.last()
        );
        assert_ext4_untouched(&f, mock, &seen);
        assert!(
            unstaged.last().is_some_and(|u| u.starts_with("Ok")),
            "{seen}"
        );
    }
}

/// ATTACK: the NTFS disk with the pod's file, unstaged with offline; the
/// re-stage is dropped by kubelet inside its arrival wait (the volume
/// arrives at 3 s) and an unstage with offline of the path sent at once,
/// retried until Ok. SAFE: after an unstage answered Ok, nothing is left
/// mounted at the path by the earlier stage, and the disk is offline.
#[tokio::test(start_paused = true)]
async fn an_unstage_answered_ok_is_never_followed_by_the_waiting_stages_mount() {
    for drop_at_ms in [500u64, 2_000, 2_900] {
        let seed = blank_offline_disk_arriving(3_000);
        let f = Fixture::mock_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
        staged_with_pod_file(&f).await;
        f.node.unstage(STAGING).offline(true).await.unwrap();
        let _ = tokio::time::timeout(
            Duration::from_millis(drop_at_ms),
            f.node.stage_disk(1u32, STAGING),
        )
        .await;
        let mut unstaged = Vec::new();
        for _ in 0..40 {
            let u = f.node.unstage(STAGING).offline(true).await;
            let ok = u.is_ok();
            unstaged.push(format!("{:?} {u:?}", tokio::time::Instant::now()));
            if ok {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        tokio::time::sleep(Duration::from_secs(30)).await;
        let at = f.node.volume_at(STAGING).await;
        let online = f.host.lock().storage.disk(1).map(|d| !d.is_offline);
        let seen = format!(
            "drop {drop_at_ms}: unstages {unstaged:?}; at STAGING after {at:?}; online {online:?}"
        );
        assert!(unstaged.last().is_some_and(|u| u.contains("Ok")), "{seen}");
        assert!(at.is_err(), "{seen}");
        let r = kubelet_stage(&f.node, STAGING).await;
        assert!(r.is_ok(), "{seen} {r:?}");
        assert_eq!(
            file_at(&f, STAGING_C).as_deref(),
            Some(&b"pod data"[..]),
            "{seen}"
        );
    }
}
