//! Adversary review 42: attacks on the record store, the format protocol
//! and the partition intent, judged from the simulated host. A test that
//! shows a loss asserts the safe outcome and failed on the code reviewed.
//! Fixed since: a stale partition intent of a disk with no id (intents are
//! kept only for disks with an id), a wall-clock step past the settle time
//! (the settle time is also counted on the process's monotonic clock), a
//! listing that failed after `PartitionDisk` (the intent stays until the
//! licence). Open, ignored with their reason: the proxy-mode unstage of a
//! detached disk, and `PartitionDisk` on csi-proxy v0.2 of an offline disk
//! with data (v0.2 cannot tell an offline disk).
#![cfg(feature = "mock")]

use std::time::Duration;

use crate::node_support::*;
use csi_proxy_client::host::HotAttach;
use csi_proxy_client::host::storage::Page83;
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::{MockNode, NodeOptions, NodeRecords};
use csi_proxy_client::{Error, ErrorKind};

const DISK_SIZE: u64 = 34359738368;
const LUN1: &str = "Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1";

/// ATTACK: a stale `partitioning` intent of a disk with no page 83 id and
/// no serial number (keyed "disk number N") licenses the data partition
/// of another disk that later takes the number.
///
/// Sequence (proxy mode, csi-proxy v1.3 and v1.1, default records):
/// 1. disk 1 (blank, no page 83 id, no serial) is staged for pod A; the
///    `PartitionDisk` never reaches the host (the proxy restarting:
///    UNAVAILABLE), so the intent "disk number 1" stays, as designed for a
///    lost answer;
/// 2. pod A is deleted; the cloud detaches disk 1 (kubelet never retries);
/// 3. a pre-populated disk (an ext4 data partition that Windows shows with
///    no file system, also without ids) is attached and gets number 1;
/// 4. its stage (another PV, another staging path) lists a volume, finds
///    the intent for "disk number 1", licenses the ext4 partition and
///    formats it NTFS.
///
/// LOST: the ext4 file system of the second disk (a format of a volume
/// that held data). Safe outcome: `MayHoldData`, ext4 still there.
#[tokio::test]
async fn a_stale_partition_intent_never_licenses_another_disks_data() {
    stale_intent(false).await;
}

/// WITHSTOOD: the same sequence with disks that show a page 83 id: the
/// intent is keyed by the first disk's id and never licenses the second's
/// partition (`MayHoldData`, ext4 intact).
#[tokio::test]
async fn a_stale_partition_intent_of_a_disk_with_an_id_stays_with_it() {
    stale_intent(true).await;
}

async fn stale_intent(ids: bool) {
    let id_lines = |n: u32| match ids {
        true => format!("page83 = \"ascii:PD-adversary-{n}\"\nserial = \"\""),
        false => "page83 = \"\"\nserial = \"\"".to_string(),
    };
    let (id1, id2) = (id_lines(1), id_lines(2));
    let seed = format!(
        "{OS_DISK}
[[disks]]
number = 1
location = \"{LUN1}\"
size = {DISK_SIZE}
{id1}

[[disks]]
number = 2
location = \"Integrated : Adapter 3 : Port 0 : Target 0 : LUN 2\"
size = {DISK_SIZE}
{id2}
partition_style = \"mbr\"
[[volumes]]
disk = 2
kind = \"mbr\"
holds = \"ext4\"
"
    );
    let f = Fixture::mock_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
    let mock = f.mock.as_ref().unwrap();
    // The pre-populated disk is elsewhere for now.
    let handle = f.host.lock().storage.disk(2).unwrap().handle;
    let populated = f.host.hot_detach(handle).unwrap();

    mock.fail_next(
        "PartitionDisk",
        tonic::Code::Unavailable,
        "proxy restarting",
    );
    let e = f.node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    mock.clear_faults();

    f.host.detach_disk(1).unwrap();
    let hot = f
        .host
        .hot_reattach(
            populated,
            HotAttach {
                location: Some(LUN1.into()),
                page83: Some(match ids {
                    true => Page83::Ascii(b"PD-adversary-2".to_vec()),
                    false => Page83::None,
                }),
                serial_number: Some(String::new()),
                ..HotAttach::new(DISK_SIZE)
            },
        )
        .unwrap();
    assert_eq!(hot.number, 1, "the populated disk takes number 1");
    f.host.lock().rescan().unwrap();
    assert_eq!(shows(&first_partition_bytes(&f.host, 1)), "ext4");

    let r = f.node.stage_disk(1u32, OTHER_STAGING).await;
    let after = shows(&first_partition_bytes(&f.host, 1));
    assert_eq!(
        after,
        "ext4",
        "the ext4 partition of the pre-populated disk was formatted: stage answered {r:?}, {} FormatVolume",
        mock.calls_of("FormatVolume").len()
    );
    assert!(matches!(r, Err(Error::MayHoldData { .. })), "{r:?}");
}

/// ATTACK: `PartitionDisk` lands, then the listing of the new volume fails
/// with an error that is not UNAVAILABLE/DEADLINE (csi-proxy answers a
/// failed PowerShell `Get-Partition | Get-Volume` as UNKNOWN with text).
/// The stage takes that as "known not to have made a partition" and drops
/// the intent, though the partition is there.
///
/// Sequence (proxy mode, v1.3, default records): stage a blank disk;
/// `PartitionDisk` OK; the following `ListVolumesOnDisk` fails once
/// (UNKNOWN "Get-Volume: the RPC server is busy"); faults stop; every
/// retry lists the new partition, finds neither licence nor intent:
/// `MayHoldData` for ever.
///
/// LOST: a blank disk refused for good once faults stop.
#[tokio::test]
async fn a_blank_disk_whose_new_volume_could_not_be_listed_is_still_staged() {
    let mock = MockHost::new();
    let node = MockNode::new(&mock)
        .versions(Family::V1.versions())
        .options(NodeOptions::default())
        .build()
        .unwrap();
    // The stage's own listing (with the disk's ids) first, then the one
    // after PartitionDisk.
    mock.fail_nth(
        "ListVolumesOnDisk",
        2,
        tonic::Code::Unknown,
        "Get-Volume : The RPC server is too busy to complete this operation.",
    );
    let e = node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert_eq!(mock.calls_of("PartitionDisk").len(), 1, "{e}");
    mock.clear_faults();
    for _ in 0..3 {
        match node.stage_disk(1u32, STAGING).await {
            Ok(_) => return,
            Err(e) => eprintln!("retry: {e}"),
        }
    }
    panic!(
        "a blank disk this node partitioned is refused for good: {:?}",
        node.stage_disk(1u32, STAGING).await
    );
}

/// Rewrites the `format` record under `dir` so that it says it was sent
/// `secs` earlier than it says: what the record shows after the wall
/// clock stepped forward by `secs` (W32Time correcting a VM's clock at
/// boot, a live migration), with the record's head kept whole.
fn step_clock_forward(dir: &std::path::Path, secs: u64) {
    let files: Vec<_> = std::fs::read_dir(dir.join("format"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rec"))
        .collect();
    assert_eq!(files.len(), 1, "one format record");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let (head, value) = text.split_once("\nlength ").unwrap();
    let (_, value) = value.split_once('\n').unwrap();
    let mut words: Vec<String> = value.split(' ').map(str::to_string).collect();
    assert_eq!(words[0], "sent");
    let at: u64 = words[1].parse().unwrap();
    words[1] = (at - secs).to_string();
    let value = words.join(" ");
    std::fs::write(
        &files[0],
        format!("{head}\nlength {}\n{value}", value.len()),
    )
    .unwrap();
}

/// ATTACK: the wall clock steps forward while a format runs. The format
/// record's age is measured by the wall clock (`SystemTime`), so a step
/// larger than `format_settle` makes a format still running at the host
/// look settled: the volume, still unformatted, is formatted again, then
/// mounted, and the first format lands on the mounted volume
/// (azuredisk-csi-driver#2690, the loss the protocol exists to prevent).
///
/// Sequence (proxy mode, v1.3, records in a directory, default settle of
/// 10 min): the stage's `FormatVolume` (a 30 min format at the host)
/// times out at 5 s; the clock steps forward by an hour; the retry finds
/// the record "sent an hour ago", not formatted: formats, mounts; the pod
/// writes a file; the first format ends.
///
/// LOST: the pod's file (the mounted volume reformatted under it).
#[tokio::test(start_paused = true)]
async fn a_clock_step_never_lets_a_second_format_run_beside_the_first() {
    let mock = MockHost::builder()
        .request_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    mock.add_latency("FormatVolume", Duration::from_secs(1800));
    let dir = tempfile::tempdir().unwrap();
    let options = NodeOptions::default().records(NodeRecords::directory(dir.path()));
    let node = MockNode::new(&mock)
        .versions(Family::V1.versions())
        .options(options)
        .build()
        .unwrap();
    let e = node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
    step_clock_forward(dir.path(), 3600);
    mock.clear_faults();

    let staged = node.stage_disk(1u32, STAGING).await;
    if staged.is_ok() {
        mock.host()
            .write_file(&format!(r"{STAGING_C}\data"), b"pod data")
            .unwrap();
    }
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let formats = mock.calls_of("FormatVolume").len();
    if staged.is_ok() {
        let kept = mock.host().read_file(&format!(r"{STAGING_C}\data"));
        assert!(
            matches!(&kept, Ok(b) if b == b"pod data"),
            "the pod's file was lost to the first format landing after the second ({formats} FormatVolume): {kept:?}"
        );
    }
    assert_eq!(formats, 1, "a second format was sent while the first ran");
}

/// ATTACK: kubelet unstages a volume whose disk the cloud has already
/// detached (a forced detach after a node's shutdown, a VolumeAttachment
/// deleted). The mount point stays on the host; its volume is gone.
///
/// Sequence (proxy mode, v1.3): stage disk 1, publish nothing, the disk
/// is detached; unstage (without and with offline) is retried.
///
/// Safe outcome: the unstage succeeds once there is nothing left to do
/// (kubelet retries NodeUnstage for ever otherwise), and the staging path
/// is gone.
#[tokio::test]
async fn an_unstage_of_a_detached_disk_succeeds() {
    for offline in [false, true] {
        let f = Fixture::mock(Family::V1, NodeOptions::default()).await;
        f.node.stage_disk(1u32, STAGING).await.unwrap();
        f.host.detach_disk(1).unwrap();
        let mut last = None;
        for _ in 0..3 {
            last = Some(f.node.unstage(STAGING).offline(offline).await);
            if matches!(last, Some(Ok(_))) {
                break;
            }
        }
        assert!(
            matches!(last, Some(Ok(_))),
            "offline {offline}: unstage never succeeds: {last:?}"
        );
        assert!(!f.host.exists(STAGING_C), "offline {offline}: path left");
    }
}

/// WITHSTOOD: kubelet drops the stage (its deadline) while `PartitionDisk`
/// runs at the host; the partition lands after the caller is gone. The
/// intent survives the drop and the retry licenses and formats the new
/// partition, once.
#[tokio::test(start_paused = true)]
async fn a_stage_dropped_during_partition_is_staged_on_retry() {
    let mock = MockHost::new();
    mock.add_latency("PartitionDisk", Duration::from_secs(10));
    let node = MockNode::new(&mock)
        .versions(Family::V1.versions())
        .options(NodeOptions::default())
        .build()
        .unwrap();
    let dropped =
        tokio::time::timeout(Duration::from_secs(2), node.stage_disk(1u32, STAGING)).await;
    assert!(dropped.is_err(), "dropped mid-partition");
    tokio::time::sleep(Duration::from_secs(20)).await;
    mock.clear_faults();
    node.stage_disk(1u32, STAGING).await.unwrap();
    assert_eq!(mock.calls_of("PartitionDisk").len(), 1);
    assert_eq!(mock.calls_of("FormatVolume").len(), 1);
}

fn offline_ext4_disk() -> String {
    format!(
        "{OS_DISK}
[[disks]]
number = 1
location = \"{LUN1}\"
size = {DISK_SIZE}
online = false
partition_style = \"mbr\"
[[volumes]]
disk = 1
kind = \"mbr\"
holds = \"ext4\"
"
    )
}

/// WITHSTOOD (v1): a disk Windows' SAN policy left offline, holding an ext4
/// partition, lists no volume; the intent is not taken from that empty
/// listing (the disk is asked online first), and once online its
/// partition is refused as "may hold data".
#[tokio::test]
async fn an_offline_disk_with_data_is_never_partitioned_v1() {
    let f = Fixture::mock_seeded(
        Family::V1,
        NodeOptions::default(),
        Some(&offline_ext4_disk()),
    )
    .await;
    let r = f.node.stage_disk(1u32, STAGING).await;
    let mock = f.mock.as_ref().unwrap();
    assert_eq!(shows(&first_partition_bytes(&f.host, 1)), "ext4", "{r:?}");
    assert_eq!(mock.calls_of("PartitionDisk").len(), 0, "{r:?}");
    assert!(matches!(r, Err(Error::MayHoldData { .. })), "{r:?}");
}

/// ATTACK (v0.2, whose disk v1beta1 has no GetDiskState): an offline disk
/// holding an ext4 partition lists no volume, and "a proxy that cannot
/// tell is taken at its listing": `PartitionDisk` is sent to a disk that
/// holds data. Safe outcome: no PartitionDisk, ext4 intact.
///
/// Found: one `PartitionDisk` reaches the offline ext4 disk (docs/safety.md
/// promises no call partitions a disk that may hold data); on the
/// simulator it changes nothing (ext4 intact) and the stage ends
/// `NoVolume`, the intent dropped. A changing call on a disk holding data,
/// no loss shown.
#[tokio::test]
#[ignore = "open: csi-proxy v0.2 cannot tell an offline disk (docs/safety.md)"]
async fn an_offline_disk_with_data_is_never_partitioned_v0_2() {
    let options = NodeOptions::default().allow_unknown_os_disk(true);
    let f = Fixture::mock_seeded(Family::V0_2, options, Some(&offline_ext4_disk()))
        .await
        .speaking(csi_proxy_client::host::ProxyRelease::V0_2);
    let r = f.node.stage_disk(1u32, STAGING).await;
    let mock = f.mock.as_ref().unwrap();
    assert_eq!(shows(&first_partition_bytes(&f.host, 1)), "ext4", "{r:?}");
    assert_eq!(
        mock.calls_of("PartitionDisk").len(),
        0,
        "PartitionDisk sent to a disk holding data: {r:?}"
    );
}

/// WITHSTOOD: HostProcess mode, default options: a plugin whose format
/// outlived its deadline is replaced by a new `Node` with default options
/// (the restarted plugin reads the records on the host) and sends no
/// second format; the pod's file survives the first format's end.
#[cfg(feature = "host-process")]
#[tokio::test]
async fn host_process_default_records_keep_a_format_across_nodes() {
    let f = Fixture::host_process(Family::V1, NodeOptions::default()).await;
    f.fake()
        .unwrap()
        .add_latency("volume_format_ntfs", Duration::from_secs(2));
    let short = NodeOptions::default().deadline(Duration::from_secs(1));
    let first = f.another_node_with(short).await;
    let e = first.stage_disk(1u32, STAGING).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
    drop(first);
    let again = f.another_node_with(NodeOptions::default()).await;
    let mut staged = again.stage_disk(1u32, STAGING).await;
    for _ in 0..10 {
        if staged.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        staged = again.stage_disk(1u32, STAGING).await;
    }
    staged.unwrap();
    f.host
        .write_file(&format!(r"{STAGING_C}\data"), b"kept")
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        f.host.read_file(&format!(r"{STAGING_C}\data")).unwrap(),
        b"kept"
    );
    assert_eq!(f.fake().unwrap().method_calls("volume_format_ntfs"), 1);
}

/// An offline disk holding an ext4 partition whose volume Windows lists
/// `arrive_ms` after the disk comes online.
pub(crate) fn offline_ext4_disk_arriving(arrive_ms: u64) -> String {
    offline_ext4_disk().replace(
        "online = false\n",
        &format!("online = false\nvolumes_arrive_ms = {arrive_ms}\n"),
    )
}

/// Finding 7 (issue 42), fixed: the stage brings an offline ext4 disk
/// online, and Windows lists its volume 2 s later. The stage's empty
/// listing of the onlined disk was taken as a blank disk: `PartitionDisk`
/// (a no-op on the partitioned disk), then the late volume licensed as
/// the one it made, and formatted. Now nothing is partitioned until the
/// volumes have had their time to arrive: the volume is refused as "may
/// hold data", the ext4 intact.
#[tokio::test(start_paused = true)]
async fn finding_7_a_volume_listed_late_after_online_is_never_formatted() {
    let seed = offline_ext4_disk_arriving(2_000);
    let f = Fixture::mock_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
    let r = kubelet_stage(&f.node, STAGING).await;
    let mock = f.mock.as_ref().unwrap();
    assert_ext4_untouched(&f, mock, &format!("{r:?}"));
    assert!(matches!(r, Err(Error::MayHoldData { .. })), "{r:?}");
}

/// Finding 7, the lost answer: kubelet drops the stage while its
/// `SetDiskState(online)` is at the host; the online lands after the
/// caller is gone, and the volume 2 s after that. A retry finds the disk
/// online and listing nothing: it must not take that for a blank disk.
#[tokio::test(start_paused = true)]
async fn finding_7_an_online_whose_answer_was_lost_never_licenses_a_late_volume() {
    let seed = offline_ext4_disk_arriving(2_000);
    let f = Fixture::mock_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
    let mock = f.mock.as_ref().unwrap();
    mock.add_latency("SetDiskState", Duration::from_secs(3));
    let dropped =
        tokio::time::timeout(Duration::from_secs(1), f.node.stage_disk(1u32, STAGING)).await;
    assert!(dropped.is_err(), "dropped mid-online: {dropped:?}");
    // The online lands at 3 s; the retry at 4 s sees an online disk that
    // lists nothing yet.
    tokio::time::sleep(Duration::from_secs(3)).await;
    mock.clear_faults();
    let r = kubelet_stage(&f.node, STAGING).await;
    assert_ext4_not_formatted(&f, mock, &format!("{r:?}"));
    assert!(matches!(r, Err(Error::MayHoldData { .. })), "{r:?}");
}

/// Finding 7's fix keeps a blank offline disk stageable: brought online,
/// it lists no volume for the arrival time, then is partitioned,
/// formatted and staged in one call.
#[tokio::test(start_paused = true)]
async fn a_blank_offline_disk_is_staged_once_its_volumes_had_their_time() {
    let seed = format!(
        "{OS_DISK}
[[disks]]
number = 1
location = \"{LUN1}\"
size = {DISK_SIZE}
online = false
"
    );
    let f = Fixture::mock_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
    let started = tokio::time::Instant::now();
    f.node.stage_disk(1u32, STAGING).await.unwrap();
    let mock = f.mock.as_ref().unwrap();
    assert_eq!(mock.calls_of("PartitionDisk").len(), 1);
    assert_eq!(mock.calls_of("FormatVolume").len(), 1);
    assert!(started.elapsed() >= csi_proxy_client::node::DEFAULT_VOLUME_ARRIVAL);
}
