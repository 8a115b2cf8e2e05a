//! Format only what is blank, and a format happens once whatever ends the
//! call (issue 37, found cases 1, 3, 6 and the format part of 10), judged
//! from the simulated host: what the disk's sectors hold after the calls,
//! how many `FormatVolume`s reached it, and whether a file a pod wrote is
//! still there.
#![cfg(feature = "mock")]

use std::time::Duration;

use crate::node_support::*;
use csi_proxy_client::host::{Host, ProxyRelease};
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::MockNode;
use csi_proxy_client::node::{Node, NodeOptions, NodeRecords};
use csi_proxy_client::{Error, ErrorKind};

/// The OS disk, and disk 1 (LUN 1, 32 GiB) as `disk1` describes it.
fn seed(disk1: &str) -> String {
    format!(
        "{OS_DISK}\n[[disks]]\nnumber = 1\nlocation = \"Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1\"\nsize = 34359738368\n{disk1}"
    )
}

/// Disk 1: MBR, one 0x07 partition Windows shows as RAW that holds `what`.
fn mbr_partition_holding(what: &str) -> String {
    seed(&format!(
        "partition_style = \"mbr\"\n[[volumes]]\ndisk = 1\nkind = \"mbr\"\nholds = \"{what}\"\n"
    ))
}

/// The bytes of disk 1 at its first partition with a volume, from the host.
fn first_partition_bytes(host: &Host) -> Vec<u8> {
    let node = host.lock();
    let disk = node.storage.disk(1).expect("disk 1");
    let offset = disk
        .partitions
        .iter()
        .filter(|p| p.volume.is_some())
        .map(|p| p.offset)
        .min()
        .unwrap_or(0);
    node.storage.read(1, offset, 4096).expect("read")
}

/// What holds `bytes` shows: ext4's magic at 0x438, BitLocker's or NTFS's
/// OEM id at 3.
fn shows(bytes: &[u8]) -> &'static str {
    if bytes[0x438..0x43A] == [0x53, 0xEF] {
        "ext4"
    } else if &bytes[3..11] == b"-FVE-FS-" {
        "bitlocker"
    } else if &bytes[3..11] == b"NTFS    " {
        "ntfs"
    } else if &bytes[3..11] == b"ReFS\0\0\0\0" {
        "refs"
    } else {
        "nothing"
    }
}

fn format_calls(f: &Fixture) -> Option<usize> {
    if let Some(mock) = &f.mock {
        return Some(mock.calls_of("FormatVolume").len());
    }
    #[cfg(feature = "host-process")]
    if let Some(fake) = f.fake() {
        return Some(fake.method_calls("volume_format_ntfs"));
    }
    None
}

/// Found case 1: a partition Windows shows with no file system that holds
/// ext4 or a locked BitLocker volume is refused, FAILED_PRECONDITION
/// naming the disk and volume, and its sectors are unchanged.
/// csi-proxy v0.2 cannot tell the OS disk, and a disk holding a volume
/// this node did not stage is refused there before any format check
/// (identity_safety.rs); the v0.2 cases here take that risk to reach the
/// format rule they show.
fn unknown_os_disk_allowed() -> NodeOptions {
    NodeOptions::default().allow_unknown_os_disk(true)
}

async fn refuses(f: &Fixture, what: &str) {
    let err = f.node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert!(
        matches!(&err, Error::MayHoldData { disk: 1, volume, .. } if volume.starts_with(r"\\?\Volume{")),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
    assert_eq!(shows(&first_partition_bytes(&f.host)), what);
    assert_eq!(format_calls(f).unwrap_or(0), 0);
    assert!(!f.host.exists(STAGING_C), "the staging path was made");
}

macro_rules! on_every_backend {
    ($name:ident, $seed:expr, |$f:ident| $body:expr) => {
        mod $name {
            use super::*;

            #[tokio::test]
            async fn mock_v1() {
                for release in [ProxyRelease::V1_1, ProxyRelease::V1_3] {
                    let $f = Fixture::mock_seeded(Family::V1, NodeOptions::default(), Some(&$seed))
                        .await
                        .speaking(release);
                    $body;
                    $f.finish().await;
                }
            }

            #[tokio::test]
            async fn mock_v0_2() {
                let $f =
                    Fixture::mock_seeded(Family::V0_2, unknown_os_disk_allowed(), Some(&$seed))
                        .await
                        .speaking(ProxyRelease::V0_2);
                $body;
                $f.finish().await;
            }

            #[cfg(unix)]
            #[tokio::test]
            async fn server_v1() {
                let $f = Fixture::server_seeded(Family::V1, NodeOptions::default(), Some(&$seed))
                    .await
                    .speaking(ProxyRelease::V1_1);
                $body;
                $f.finish().await;
            }

            #[cfg(feature = "host-process")]
            #[tokio::test]
            async fn host_process_v1() {
                let $f =
                    Fixture::host_process_seeded(Family::V1, NodeOptions::default(), Some(&$seed))
                        .await;
                $body;
                $f.finish().await;
            }
        }
    };
}

on_every_backend!(
    ext4_in_a_data_partition_is_not_formatted,
    mbr_partition_holding("ext4"),
    |f| refuses(&f, "ext4").await
);
on_every_backend!(
    a_locked_bitlocker_volume_is_not_formatted,
    mbr_partition_holding("bitlocker"),
    |f| refuses(&f, "bitlocker").await
);
on_every_backend!(
    a_blank_disk_is_partitioned_formatted_and_staged,
    seed(""),
    |f| {
        f.node.stage_disk(1u32, STAGING).await.unwrap();
        assert_eq!(shows(&first_partition_bytes(&f.host)), "ntfs");
        f.host.write_file(&format!(r"{STAGING_C}\a"), b"a").unwrap();
    }
);

/// A RAW disk that holds a file system made on the whole device: HostProcess
/// mode reads its first MiB and refuses to initialise it. (Through the
/// proxy this cannot be told: docs/safety.md.)
#[cfg(feature = "host-process")]
#[tokio::test]
async fn a_whole_device_file_system_is_not_initialised_host_process() {
    let seed = seed("holds = \"xfs\"\n");
    let f = Fixture::host_process_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
    let err = f.node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert!(
        matches!(&err, Error::MayHoldData { disk: 1, volume, why } if volume == "the whole disk" && why.contains("xfs")),
        "{err}"
    );
    {
        let node = f.host.lock();
        let disk = node.storage.disk(1).unwrap();
        assert!(disk.partitions.is_empty(), "the disk was partitioned");
        assert_eq!(
            &node.storage.read(1, 0, 4).unwrap()[..],
            b"XFSB",
            "the superblock is gone"
        );
    }
    assert_eq!(f.fake().unwrap().method_calls("disk_initialize"), 0);
    f.finish().await;
}

/// Issue 42, finding 19: what a storage engineer must not format over lies
/// at a device's end as often as at its start. Each name is a signature of
/// the table (`src/win/signatures.rs`) the simulated host writes at that
/// format's own place in the region (the whole RAW disk, or the RAW
/// volume's partition), with its magic as the format's sources give it.
#[cfg(feature = "host-process")]
mod end_of_device_host_process {
    use super::*;

    const MD: [u8; 4] = 0xA92B_4EFCu32.to_le_bytes();
    const MD_BE: [u8; 4] = 0xA92B_4EFCu32.to_be_bytes();

    /// Each new signature and its magic.
    const HELD: &[(&str, &[u8])] = &[
        // md RAID: v0.90 in the last 64 KiB-aligned 64 KiB block (either
        // byte order), v1.0 8 to 12 KiB before the end, v1.1 at the start.
        ("linux_raid_0.90", &MD),
        ("linux_raid_0.90_be", &MD_BE),
        ("linux_raid_1.0", &MD),
        ("linux_raid_1.1", &MD),
        // DRBD internal meta-data (the last 4 KiB block) and external
        // meta-data (the meta-data device's start), each magic.
        ("drbd_08", &0x8374_026Bu32.to_be_bytes()),
        ("drbd_84_unclean", &0x8374_026Cu32.to_be_bytes()),
        ("drbd_09", &0x8374_026Du32.to_be_bytes()),
        ("drbd_external_08", &0x8374_026Bu32.to_be_bytes()),
        ("drbd_external_84_unclean", &0x8374_026Cu32.to_be_bytes()),
        ("drbd_external_09", &0x8374_026Du32.to_be_bytes()),
        // LDM: the PRIVHEAD in sector 6, and the database in the last MiB.
        ("ldm_privhead", b"PRIVHEAD"),
        ("ldm_privhead_1856", b"PRIVHEAD"),
        ("ldm_privhead_2047", b"PRIVHEAD"),
        ("ldm_tocblock_1", b"TOCBLOCK"),
        ("ldm_tocblock_2", b"TOCBLOCK"),
        ("ldm_tocblock_2045", b"TOCBLOCK"),
        ("ldm_tocblock_2046", b"TOCBLOCK"),
        ("ldm_vmdb", b"VMDB"),
        // A backup GPT header alone, 512- and 4096-byte sectors.
        ("gpt_backup_512", b"EFI PART"),
        ("gpt_backup_4096", b"EFI PART"),
    ];

    /// Whether the first or last MiB of the `size` bytes of disk 1 from
    /// `start` hold `magic`, read from the host.
    fn still_holds(host: &Host, start: u64, size: u64, magic: &[u8]) -> bool {
        let node = host.lock();
        let mib = 1u64 << 20;
        [start, start + size - mib].into_iter().any(|at| {
            let bytes = node.storage.read(1, at, mib as usize).expect("read");
            bytes.windows(magic.len()).any(|w| w == magic)
        })
    }

    #[tokio::test]
    async fn a_raw_disk_ending_in_a_signature_is_not_initialised() {
        // Each signature that was staged over, named at once.
        let mut staged = Vec::new();
        for (name, magic) in HELD {
            let seed = seed(&format!("holds = \"{name}\"\n"));
            let f =
                Fixture::host_process_seeded(Family::V1, NodeOptions::default(), Some(&seed)).await;
            let Err(err) = f.node.stage_disk(1u32, STAGING).await else {
                staged.push(*name);
                continue;
            };
            assert!(
                matches!(&err, Error::MayHoldData { disk: 1, volume, why }
                    if volume == "the whole disk" && why.contains(&format!("a {name} signature"))),
                "{name}: {err}"
            );
            assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
            let size = f.host.lock().storage.disk(1).unwrap().size;
            assert!(
                f.host.lock().storage.disk(1).unwrap().partitions.is_empty(),
                "{name}"
            );
            assert!(still_holds(&f.host, 0, size, magic), "{name}: overwritten");
            assert_eq!(
                f.fake().unwrap().method_calls("disk_initialize"),
                0,
                "{name}"
            );
            assert!(
                !f.host.exists(STAGING_C),
                "{name}: the staging path was made"
            );
            f.finish().await;
        }
        assert!(staged.is_empty(), "initialised and staged over: {staged:?}");
    }

    #[tokio::test]
    async fn a_raw_volume_ending_in_a_signature_is_not_formatted() {
        let mut formatted = Vec::new();
        for (name, magic) in HELD {
            let f = Fixture::host_process_seeded(
                Family::V1,
                NodeOptions::default(),
                Some(&mbr_partition_holding(name)),
            )
            .await;
            let Err(err) = f.node.stage_disk(1u32, STAGING).await else {
                formatted.push(*name);
                continue;
            };
            assert!(
                matches!(&err, Error::MayHoldData { disk: 1, volume, why }
                    if volume.starts_with(r"\\?\Volume{") && why.contains(&format!("a {name} signature"))),
                "{name}: {err}"
            );
            let (start, size) = {
                let node = f.host.lock();
                let p = node.storage.disk(1).unwrap().partitions[0].clone();
                (p.offset, p.size)
            };
            assert!(
                still_holds(&f.host, start, size, magic),
                "{name}: overwritten"
            );
            assert_eq!(format_calls(&f), Some(0), "{name}");
            assert!(
                !f.host.exists(STAGING_C),
                "{name}: the staging path was made"
            );
            f.finish().await;
        }
        assert!(
            formatted.is_empty(),
            "formatted and staged over: {formatted:?}"
        );
    }

    /// The check reads a region's ends, not its middle: a magic away from
    /// both (a stale superblock 16 GiB in) is not a signature, and the
    /// disk stages; so does a volume ending in nothing.
    #[tokio::test]
    async fn a_device_blank_at_both_ends_is_staged() {
        let stale = seed("holds = \"linux_raid_1.0@17179869184\"\n");
        let f =
            Fixture::host_process_seeded(Family::V1, NodeOptions::default(), Some(&stale)).await;
        f.node.stage_disk(1u32, STAGING).await.unwrap();
        assert_eq!(f.fake().unwrap().method_calls("disk_initialize"), 1);
        assert_eq!(shows(&first_partition_bytes(&f.host)), "ntfs");
        f.finish().await;

        let f = Fixture::host_process_seeded(
            Family::V1,
            NodeOptions::default(),
            Some(&seed(
                "partition_style = \"mbr\"\n[[volumes]]\ndisk = 1\nkind = \"mbr\"\n",
            )),
        )
        .await;
        f.node.stage_disk(1u32, STAGING).await.unwrap();
        assert_eq!(format_calls(&f), Some(1));
        assert_eq!(shows(&first_partition_bytes(&f.host)), "ntfs");
        f.finish().await;
    }
}

/// Found case 6, v0.2: IsVolumeFormatted is true for NTFS only, so a ReFS
/// data volume looked unformatted and was formatted NTFS. It is refused
/// now (the node did not create its partition), and stays ReFS.
async fn refs_on_v0_2(f: Fixture) {
    let err = f.node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert!(matches!(err, Error::MayHoldData { disk: 1, .. }), "{err}");
    assert_eq!(shows(&first_partition_bytes(&f.host)), "refs");
    f.finish().await;
}

fn refs_disk() -> String {
    seed("partition_style = \"gpt\"\n[[volumes]]\ndisk = 1\nfs = \"refs\"\n")
}

#[tokio::test]
async fn a_refs_volume_is_not_reformatted_on_v0_2_mock() {
    let f = Fixture::mock_seeded(Family::V0_2, unknown_os_disk_allowed(), Some(&refs_disk()))
        .await
        .speaking(ProxyRelease::V0_2);
    refs_on_v0_2(f).await;
}

#[cfg(unix)]
#[tokio::test]
async fn a_refs_volume_is_not_reformatted_on_v0_2_server() {
    let f = Fixture::server_seeded(Family::V0_2, unknown_os_disk_allowed(), Some(&refs_disk()))
        .await
        .speaking(ProxyRelease::V0_2);
    refs_on_v0_2(f).await;
}

/// Found case 6, v1.0 to v1.2: ListVolumesOnDisk answers `[""]` for an
/// offline disk; `""` is no volume, so the disk is brought online and its
/// NTFS volume staged as it is.
async fn offline_ntfs_disk_stages(f: Fixture) {
    let id = f.node.stage_disk(1u32, STAGING).await.unwrap();
    assert!(id.starts_with(r"\\?\Volume{"), "{id}");
    assert_eq!(shows(&first_partition_bytes(&f.host)), "ntfs");
    assert!(f.host.exists(STAGING_C));
    f.finish().await;
}

fn offline_ntfs_disk() -> String {
    seed("partition_style = \"gpt\"\nonline = false\n[[volumes]]\ndisk = 1\nfs = \"ntfs\"\n")
}

/// (v0.2's disk v1beta1 cannot bring a disk online at all: v1 only.)
#[tokio::test]
async fn an_offline_disk_answering_an_empty_id_stages_on_v1_1() {
    let (options, seed) = (NodeOptions::default, offline_ntfs_disk());
    let f = Fixture::mock_seeded(Family::V1, options(), Some(&seed)).await;
    offline_ntfs_disk_stages(f.speaking(ProxyRelease::V1_1)).await;
    #[cfg(unix)]
    {
        let f = Fixture::server_seeded(Family::V1, options(), Some(&seed)).await;
        offline_ntfs_disk_stages(f.speaking(ProxyRelease::V1_1)).await;
    }
}

const FORMAT: Duration = Duration::from_secs(30);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Stages disk 1 with `node` until it succeeds (each failure one the
/// pending format explains), writes a pod's file, waits past every format
/// that could still be running, and checks the file.
async fn stage_until_staged(node: &Node, host: &Host) {
    for attempt in 0.. {
        assert!(attempt < 40, "never staged");
        match node.stage_disk(1u32, STAGING).await {
            Ok(_) => break,
            Err(e) if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::Unavailable) => {}
            Err(e) => panic!("stage failed: {e}"),
        }
    }
    let file = format!(r"{STAGING_C}\data");
    host.write_file(&file, b"the pod's data").unwrap();
    tokio::time::sleep(FORMAT * 2).await;
    assert_eq!(
        host.read_file(&file).ok().as_deref(),
        Some(&b"the pod's data"[..]),
        "a second format wiped the staged volume"
    );
}

fn mock_with_request_timeout() -> MockHost {
    let mock = MockHost::builder()
        .request_timeout(REQUEST_TIMEOUT)
        .build()
        .unwrap();
    mock.add_latency("FormatVolume", FORMAT);
    mock
}

/// Found case 3: a request timeout of 5 s and a 30 s format. Before, each
/// retry found the volume unformatted and formatted it again (six
/// FormatVolumes; the pod's file was wiped by the ones still running).
#[tokio::test(start_paused = true)]
async fn a_format_that_outlives_its_request_is_sent_once_mock() {
    let mock = mock_with_request_timeout();
    let node = MockNode::new(&mock)
        .versions(Family::V1.versions())
        .options(NodeOptions::default())
        .build()
        .unwrap();
    stage_until_staged(&node, mock.host()).await;
    assert_eq!(mock.calls_of("FormatVolume").len(), 1);
}

#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn a_format_that_outlives_its_request_is_sent_once_server() {
    let connect = csi_proxy_client::ConnectOptions::default().with_request_timeout(REQUEST_TIMEOUT);
    let f = Fixture::server_configured(
        Family::V1,
        NodeOptions::default().connect_options(connect),
        None,
        |b| b.latency("FormatVolume", FORMAT),
    )
    .await;
    stage_until_staged(&f.node, &f.host).await;
    f.finish().await;
}

/// A plugin restart while the proxy formats: the new process finds the
/// record in the records directory and waits, instead of formatting again.
#[tokio::test(start_paused = true)]
async fn a_restarted_plugin_does_not_format_again() {
    let mock = mock_with_request_timeout();
    let dir = tempfile::tempdir().unwrap();
    let options = || NodeOptions::default().records(NodeRecords::directory(dir.path()));
    let first = MockNode::new(&mock)
        .versions(Family::V1.versions())
        .options(options())
        .build()
        .unwrap();
    let err = first.stage_disk(1u32, STAGING).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TimedOut, "{err}");
    drop(first);
    // The directory store tells this process's records from an earlier
    // one's only by their text: a new Node stands for the restarted plugin.
    let second = MockNode::new(&mock)
        .versions(Family::V1.versions())
        .options(options())
        .build()
        .unwrap();
    stage_until_staged(&second, mock.host()).await;
    assert_eq!(mock.calls_of("FormatVolume").len(), 1);
}

/// Found case 10 (format): two `Node`s in one process over the same
/// records (a driver that rebuilds its `Node`) stage one disk at once.
/// Before, each checked the volume blank, waited for its own format slot
/// and formatted: two FormatVolumes.
#[tokio::test(start_paused = true)]
async fn two_nodes_sharing_records_format_once() {
    let mock = MockHost::builder().build().unwrap();
    mock.add_latency("FormatVolume", FORMAT);
    let records = NodeRecords::memory();
    let options = || NodeOptions::default().records(records.clone());
    let a = MockNode::new(&mock)
        .versions(Family::V1.versions())
        .options(options())
        .build()
        .unwrap();
    let b = MockNode::new(&mock)
        .versions(Family::V1.versions())
        .options(options())
        .build()
        .unwrap();
    let (x, y) = tokio::join!(a.stage_disk(1u32, STAGING), b.stage_disk(1u32, STAGING));
    x.unwrap();
    y.unwrap();
    assert_eq!(mock.calls_of("FormatVolume").len(), 1);
    let file = format!(r"{STAGING_C}\data");
    mock.host().write_file(&file, b"kept").unwrap();
    tokio::time::sleep(FORMAT * 2).await;
    assert_eq!(mock.host().read_file(&file).unwrap(), b"kept");
}
