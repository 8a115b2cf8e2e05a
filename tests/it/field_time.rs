//! Host time: work at the host takes time and goes on
//! when its caller gives up, as csi-proxy's PowerShell and WMI calls do;
//! latency profiles of the real proxy; and the field failures that come of
//! it (a format that outlives kubelet's timeout, azuredisk-csi-driver#2690;
//! an expansion whose supported-size query fails or takes minutes,
//! aws-ebs-csi-driver#2877, AgentBaker#3804).
#![cfg(feature = "mock")]

use std::time::Duration;

use csi_proxy_client::Error;
use csi_proxy_client::filesystem::v1::{self as fs, FilesystemApi};
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::MockNode;

const LATE: &str = r"C:\var\lib\kubelet\plugins\late";

async fn exists(api: &dyn FilesystemApi, path: &str) -> bool {
    let request = fs::PathExistsRequest { path: path.into() };
    api.path_exists(request).await.unwrap().exists
}

/// MockHost: the call fails with the caller's timeout, and the host work
/// is done once its host time has passed (before, the mock dropped the
/// work with the caller and the directory never appeared).
#[tokio::test(start_paused = true)]
async fn mock_host_work_goes_on_after_the_caller_gives_up() {
    let node = MockHost::builder()
        .request_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    node.add_latency("Mkdir", Duration::from_secs(10));
    let api: &dyn FilesystemApi = &node;
    let err = api
        .mkdir(fs::MkdirRequest { path: LATE.into() })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert!(!exists(api, LATE).await, "done before its host time");
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        exists(api, LATE).await,
        "the host work stopped with its caller"
    );
}

/// The reference server: a call its caller gave up on (its `grpc-timeout`
/// passed) is done at the host once its host time has passed.
#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn server_host_work_goes_on_after_the_deadline_passes() {
    use csi_proxy_client::ConnectOptions;
    use csi_proxy_client::server::Server;
    let sockets = tempfile::tempdir().unwrap();
    let server = Server::builder()
        .socket_dir(sockets.path())
        .latency("Mkdir", Duration::from_secs(10))
        .start()
        .await
        .unwrap();
    let address = server.address("filesystem", "v1").unwrap().to_string();
    let options = ConnectOptions::default().with_request_timeout(Duration::from_secs(1));
    let client = fs::Client::connect_with(&address, &options).await.unwrap();
    let err = client
        .mkdir(fs::MkdirRequest { path: LATE.into() })
        .await
        .unwrap_err();
    assert!(err.kind() == csi_proxy_client::ErrorKind::TimedOut, "{err}");
    assert!(!exists(&client, LATE).await, "done before its host time");
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        exists(&client, LATE).await,
        "the host work stopped with its caller"
    );
    server.shutdown().await.unwrap();
}

/// A latency profile gives each call the real proxy's host time for its
/// RPC (modelled time, read on tokio's paused clock).
#[tokio::test(start_paused = true)]
async fn a_latency_profile_gives_each_call_its_host_time() {
    use csi_proxy_client::host::LatencyProfile;
    use csi_proxy_client::volume::v1::{self as volume, VolumeApi};
    for profile in LatencyProfile::ALL {
        let node = MockHost::builder()
            .latency_profile(profile)
            .build()
            .unwrap();
        let api: &dyn VolumeApi = &node;
        let start = tokio::time::Instant::now();
        let request = volume::ListVolumesOnDiskRequest {
            disk_number: 0,
            partition_number: 0,
        };
        api.list_volumes_on_disk(request).await.unwrap();
        assert_eq!(
            start.elapsed(),
            profile.latency("ListVolumesOnDisk"),
            "{profile}"
        );
    }
}
mod format {
    //! azuredisk-csi-driver#2690: a format that outlives kubelet's
    //! deadline. Before the fix, the retry found the volume unformatted,
    //! formatted it again and mounted it; the formats still running at
    //! the host then wiped the mounted volume.

    use std::time::Duration;

    use crate::node_support::*;
    use csi_proxy_client::Error;
    use csi_proxy_client::node::{Node, NodeOptions};

    /// Stages disk 1 as kubelet does: again after each deadline, until it
    /// succeeds; then writes a file on the volume, waits until every
    /// format ever started has ended, and checks the file is there.
    async fn stage_write_and_wait(f: &Fixture, format_time: Duration) {
        let mut attempts = 0;
        loop {
            attempts += 1;
            assert!(attempts <= 50, "stage never succeeded");
            match f.node.stage_disk(1u32, STAGING).await {
                Ok(_) => break,
                Err(Error::DeadlineExceeded { .. }) => continue,
                Err(e) => panic!("stage failed: {e}"),
            }
        }
        assert!(attempts > 1, "the first stage outlived no deadline");
        let file = format!(r"{STAGING_C}\data");
        f.host.write_file(&file, b"the pod's data").unwrap();
        // Every format started ends within a format's time of the stage.
        tokio::time::sleep(format_time + format_time / 2).await;
        assert_eq!(
            f.host.read_file(&file).ok().as_deref(),
            Some(&b"the pod's data"[..]),
            "a second format wiped the mounted volume"
        );
    }

    fn options(deadline: Duration) -> NodeOptions {
        NodeOptions::default().deadline(deadline)
    }

    const FORMAT: Duration = Duration::from_secs(60);
    const DEADLINE: Duration = Duration::from_secs(10);

    #[tokio::test(start_paused = true)]
    async fn a_format_that_outlives_the_deadline_is_done_once_mock() {
        let f = Fixture::mock(Family::V1, options(DEADLINE)).await;
        let mock = f.mock.as_ref().unwrap();
        mock.add_latency("FormatVolume", FORMAT);
        stage_write_and_wait(&f, FORMAT).await;
        assert_eq!(mock.calls_of("FormatVolume").len(), 1);
        f.finish().await;
    }

    #[cfg(unix)]
    #[tokio::test(start_paused = true)]
    async fn a_format_that_outlives_the_deadline_is_done_once_server() {
        let f = Fixture::server_configured(Family::V1, options(DEADLINE), None, |b| {
            b.latency("FormatVolume", FORMAT)
        })
        .await;
        stage_write_and_wait(&f, FORMAT).await;
        f.finish().await;
    }

    /// The fake's calls run on blocking threads, which tokio's paused
    /// clock waits for: real time here, short.
    #[cfg(feature = "host-process")]
    #[tokio::test]
    async fn a_format_that_outlives_the_deadline_is_done_once_host_process() {
        let format = Duration::from_millis(2000);
        let f = Fixture::host_process(Family::V1, options(Duration::from_millis(600))).await;
        f.fake().unwrap().add_latency("volume_format_ntfs", format);
        stage_write_and_wait(&f, format).await;
        f.finish().await;
    }

    /// At most `max_concurrent_formats` formats run at once; the others
    /// wait their turn (before, every stage formatted at once).
    #[tokio::test(start_paused = true)]
    async fn formats_beyond_the_bound_wait_their_turn() {
        let options = NodeOptions::default()
            .deadline(Duration::from_secs(600))
            .max_concurrent_formats(1);
        let f = Fixture::mock(Family::V1, options).await;
        let mock = f.mock.as_ref().unwrap().clone();
        mock.add_latency("FormatVolume", FORMAT);
        let other = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv2\globalmount";
        let node: &Node = &f.node;
        let both = async {
            let (a, b) = tokio::join!(node.stage_disk(1u32, STAGING), node.stage_disk(2u32, other));
            a.unwrap();
            b.unwrap();
        };
        let look = async {
            tokio::time::sleep(FORMAT / 2).await;
            mock.calls_of("FormatVolume").len()
        };
        let ((), formats_at_first) = tokio::join!(both, look);
        assert_eq!(formats_at_first, 1, "both formats started at once");
        assert_eq!(mock.calls_of("FormatVolume").len(), 2);
        f.finish().await;
    }
}
mod expand {
    //! Expansion when the partition's maximum size cannot be had
    //! (aws-ebs-csi-driver#2877, AgentBaker#3804) and v1.1's wording of
    //! "nothing to grow".

    use std::time::Duration;

    use crate::node_support::*;
    use csi_proxy_client::node::NodeOptions;

    const GROWN: u64 = 20 * GIB;
    /// What the GPT layout keeps outside the volume, rounded up.
    const LAYOUT: u64 = 17 << 20;

    /// Stages disk 2 (16 GiB) and grows the disk to 20 GiB.
    async fn staged_and_grown(f: &Fixture) {
        f.node.stage_disk(2u32, STAGING).await.unwrap();
        f.host.grow_disk(2, GROWN).unwrap();
    }

    /// [`staged_and_grown`] for the fixtures with a short deadline (all at
    /// v1, where any node knows the OS disk): the stage is made by a node
    /// with the default deadline, as the short one is for the expansion,
    /// and a stage under it failed on a loaded machine (the HostProcess
    /// fake under Wine takes real time).
    async fn staged_and_grown_unhurried(f: &Fixture) {
        let stager = f.another_node_with(NodeOptions::default()).await;
        stager.stage_disk(2u32, STAGING).await.unwrap();
        f.host.grow_disk(2, GROWN).unwrap();
    }

    /// `StorageWMI 4` from GetSupportedSize: growing to the maximum fails,
    /// growing to the size asked for does not need it.
    async fn without_the_maximum_the_size_asked_for_is_grown_to(f: &Fixture) {
        staged_and_grown(f).await;
        f.host.lock().storage.fail_supported_size(Some(4));
        let size = f.node.expand(STAGING).size(GROWN - LAYOUT).await.unwrap();
        assert_eq!(size, GROWN - LAYOUT);
    }

    /// `StorageWMI 4` from GetSupportedSize and no size asked for (a
    /// NodeExpandVolume without a capacity range): the volume still grows,
    /// to its disk's size less the layout the node made. Before, the
    /// failure was returned and the volume stayed at 16 GiB.
    async fn without_the_maximum_nor_a_size_the_disk_is_filled(f: &Fixture) {
        staged_and_grown(f).await;
        f.host.lock().storage.fail_supported_size(Some(4));
        let size = f.node.expand(STAGING).await.unwrap();
        let id = f.node.volume_at(STAGING).await.unwrap();
        assert_eq!(f.host.lock().storage.volume_size(&id), Some(size));
        assert!(
            (GROWN - LAYOUT..GROWN).contains(&size),
            "not grown over the disk: {size}"
        );
    }

    crate::node_tests!(
        without_the_maximum_the_size_asked_for_is_grown_to,
        without_the_maximum_nor_a_size_the_disk_is_filled
    );

    /// GetSupportedSize taking minutes (AgentBaker#3804): after half the
    /// deadline the volume grows to the size asked for. Real time: the
    /// fake's calls run on blocking threads.
    #[cfg(feature = "host-process")]
    #[tokio::test]
    async fn a_maximum_size_that_takes_minutes_is_not_waited_for_host_process() {
        let options = NodeOptions::default().deadline(Duration::from_millis(800));
        let f = Fixture::host_process(Family::V1, options).await;
        staged_and_grown_unhurried(&f).await;
        let fake = f.fake().unwrap();
        fake.add_latency("partition_supported_size", Duration::from_millis(1500));
        let size = f.node.expand(STAGING).size(GROWN - LAYOUT).await.unwrap();
        assert_eq!(size, GROWN - LAYOUT);
        // The query goes on at the host and grows the rest of the way.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        f.finish().await;
    }

    /// GetSupportedSize taking minutes at the host (AgentBaker#3804),
    /// simulated by the host itself (`Storage::slow_supported_size`) and so
    /// on every backend: the node grows to the size asked for after half
    /// its deadline, and the query it gave up on goes on at the host and
    /// grows the volume the rest of the way once it answers. Before the
    /// simulator modelled it, MockHost and the reference server answered
    /// the query at once (the volume grew to the maximum at the first
    /// call). Real time: the HostProcess fake waits on blocking threads.
    async fn slow_maximum(f: &Fixture) {
        const SLOW: Duration = Duration::from_millis(1500);
        const ASKED: u64 = 18 * GIB;
        staged_and_grown_unhurried(f).await;
        f.host.lock().storage.slow_supported_size(SLOW);
        let size = f.node.expand(STAGING).size(ASKED).await.unwrap();
        assert_eq!(size, ASKED, "not the size asked for within the deadline");
        let id = f.node.volume_at(STAGING).await.unwrap();
        tokio::time::sleep(SLOW).await;
        let grown = f.host.lock().storage.volume_size(&id).unwrap();
        assert!(
            grown > ASKED,
            "the query given up on did not go on at the host: {grown}"
        );
    }

    /// The same slow query failing at its end (`StorageWMI 4`, the defrag
    /// service disabled, aws-ebs-csi-driver#2877): the size asked for is
    /// grown to within the deadline, and the failure that comes later
    /// changes nothing.
    async fn slow_failing_maximum(f: &Fixture) {
        const SLOW: Duration = Duration::from_millis(1500);
        const ASKED: u64 = 18 * GIB;
        staged_and_grown_unhurried(f).await;
        {
            let mut host = f.host.lock();
            host.storage.slow_supported_size(SLOW);
            host.storage.fail_supported_size(Some(4));
        }
        let size = f.node.expand(STAGING).size(ASKED).await.unwrap();
        assert_eq!(size, ASKED);
        let id = f.node.volume_at(STAGING).await.unwrap();
        tokio::time::sleep(SLOW).await;
        assert_eq!(f.host.lock().storage.volume_size(&id), Some(ASKED));
    }

    /// GetSupportedSize taking minutes and no size asked for: within the
    /// deadline the volume is grown over its disk (less the layout).
    /// Before, the node waited for the query past its deadline.
    #[tokio::test]
    async fn a_slow_maximum_without_a_size_is_not_waited_for_mock() {
        let f = Fixture::mock(Family::V1, short_deadline()).await;
        staged_and_grown_unhurried(&f).await;
        f.host
            .lock()
            .storage
            .slow_supported_size(Duration::from_millis(1500));
        let size = f.node.expand(STAGING).await.unwrap();
        assert!((GROWN - LAYOUT..GROWN).contains(&size), "{size}");
        f.finish().await;
    }

    fn short_deadline() -> NodeOptions {
        NodeOptions::default().deadline(Duration::from_millis(800))
    }

    #[tokio::test]
    async fn a_slow_maximum_size_is_not_waited_for_and_goes_on_mock() {
        let f = Fixture::mock(Family::V1, short_deadline()).await;
        slow_maximum(&f).await;
        f.finish().await;
    }

    #[tokio::test]
    async fn a_slow_failing_maximum_size_is_not_waited_for_mock() {
        let f = Fixture::mock(Family::V1, short_deadline()).await;
        slow_failing_maximum(&f).await;
        f.finish().await;
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_slow_maximum_size_is_not_waited_for_and_goes_on_server() {
        let f = Fixture::server(Family::V1, short_deadline()).await;
        slow_maximum(&f).await;
        f.finish().await;
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_slow_failing_maximum_size_is_not_waited_for_server() {
        let f = Fixture::server(Family::V1, short_deadline()).await;
        slow_failing_maximum(&f).await;
        f.finish().await;
    }

    #[cfg(feature = "host-process")]
    #[tokio::test]
    async fn a_slow_maximum_size_is_not_waited_for_and_goes_on_host_process() {
        let f = Fixture::host_process(Family::V1, short_deadline()).await;
        slow_maximum(&f).await;
        f.finish().await;
    }

    /// csi-proxy v1.1 quotes PowerShell's "The size of the extent is less
    /// than the minimum of 1MB." when the volume already fills its
    /// partition; only v1.3's "extent less than the minimum" was known.
    #[tokio::test]
    async fn v1_1s_nothing_to_grow_is_not_a_failure() {
        let f = Fixture::mock(Family::V1, NodeOptions::default()).await;
        f.node.stage_disk(2u32, STAGING).await.unwrap();
        let text = "error resizing volume. cmd: Get-Volume -UniqueId \"$Env:volumeID\" | Get-Partition | Resize-Partition -Size 17162043392, output: Resize-Partition : Size Not Supported\r\n\r\nExtended information:\r\nThe size of the extent is less than the minimum of 1MB.\r\n, error: exit status 1";
        f.mock
            .as_ref()
            .unwrap()
            .fail_next("ResizeVolume", tonic::Code::Unknown, text);
        f.node.expand(STAGING).await.unwrap();
        f.finish().await;
    }
}

/// A stage asks each fact once (`docs/cost.md`): the disk's id and volumes
/// at once, the blank check made on that one listing, one format check
/// once the format is claimed (none for the volume the stage's own
/// PartitionDisk made), and no grow reads after a partition the stage
/// made itself (csi-proxy's PartitionDisk takes the whole disk).
/// Before, a blank stage made 21 host calls (a second location listing,
/// two more volume listings, a second format check, two size reads).
#[tokio::test(start_paused = true)]
async fn a_stage_asks_each_fact_once() {
    use csi_proxy_client::node::{DiskSelector, NodeOptions};
    let mock = MockHost::new();
    let node = MockNode::new(&mock)
        .options(NodeOptions::default())
        .build()
        .unwrap();
    let count = |from: usize, name: &str| {
        mock.calls()[from..]
            .iter()
            .filter(|c| c.rpc.name == name)
            .count()
    };
    let staging = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pv\a\globalmount";
    for (round, blank) in [(1, true), (2, false)] {
        let from = mock.calls().len();
        let disk = node.find_disk(DiskSelector::Lun(1)).await.unwrap();
        node.stage_disk(&disk, staging).grow(1 << 20).await.unwrap();
        let calls: Vec<&str> = mock.calls()[from..].iter().map(|c| c.rpc.name).collect();
        let seen = format!("round {round}: {calls:?}");
        // find_disk's listing, and the stage's check that the disk is
        // still where it was found (beside its id and volumes).
        assert_eq!(count(from, "ListDiskLocations"), 2, "{seen}");
        assert_eq!(count(from, "ListDiskIDs"), 1, "{seen}");
        // A volume the stage's own PartitionDisk just made is not asked
        // whether it is formatted; a disk listing no volume is asked
        // whether it is online (only an online disk's empty listing says
        // it holds none).
        assert_eq!(
            count(from, "IsVolumeFormatted"),
            usize::from(!blank),
            "{seen}"
        );
        assert_eq!(count(from, "GetDiskState"), usize::from(blank), "{seen}");
        assert_eq!(
            count(from, "ListVolumesOnDisk"),
            1 + usize::from(blank),
            "{seen}"
        );
        assert_eq!(count(from, "PartitionDisk"), usize::from(blank), "{seen}");
        assert_eq!(count(from, "FormatVolume"), usize::from(blank), "{seen}");
        let grow_reads = count(from, "GetVolumeStats") + count(from, "GetDiskStats");
        assert_eq!(grow_reads, if blank { 0 } else { 2 }, "{seen}");
        node.unstage(staging).await.unwrap();
    }
}
