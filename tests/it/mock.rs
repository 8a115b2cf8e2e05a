//! Driver unit tests as a driver author writes them: a small NodeStage
//! function over the traits, run against MockHost.
#![cfg(feature = "mock")]

use std::time::Duration;

use csi_proxy_client::mock::MockHost;
use csi_proxy_client::{Error, disk, filesystem, volume};
use tonic::Code;

const STAGING: &str =
    r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\disk.csi.azure.com\abc\globalmount";
const PUBLISH: &str = r"C:\var\lib\kubelet\pods\pod-1\volumes\kubernetes.io~csi\pvc-1\mount";

/// The driver's own error: a proxy error, or no disk where one was expected.
#[derive(Debug)]
enum DriverError {
    NoDiskOnLun(String),
    Proxy(Error),
}

impl From<Error> for DriverError {
    fn from(e: Error) -> Self {
        DriverError::Proxy(e)
    }
}

impl DriverError {
    fn proxy(self) -> Error {
        match self {
            DriverError::Proxy(e) => e,
            other => panic!("expected a proxy error, got {other:?}"),
        }
    }
}

/// The driver code under test: find the disk by LUN, partition, format if
/// needed, mount at the staging path. Returns the volume id.
async fn stage(
    disks: &dyn disk::v1::DiskApi,
    volumes: &dyn volume::v1::VolumeApi,
    fs: &dyn filesystem::v1::FilesystemApi,
    lun: &str,
    staging: &str,
) -> Result<String, DriverError> {
    let locations = disks
        .list_disk_locations(disk::v1::ListDiskLocationsRequest {})
        .await?;
    let number = locations
        .disk_locations
        .iter()
        .find(|(_, location)| location.lunid == lun)
        .map(|(number, _)| *number)
        .ok_or_else(|| DriverError::NoDiskOnLun(lun.to_string()))?;
    disks
        .partition_disk(disk::v1::PartitionDiskRequest {
            disk_number: number,
        })
        .await?;
    let listed = volumes
        .list_volumes_on_disk(volume::v1::ListVolumesOnDiskRequest {
            disk_number: number,
            partition_number: 0,
        })
        .await?;
    let id = listed
        .volume_ids
        .first()
        .cloned()
        .expect("a partitioned disk has a volume");
    let formatted = volumes
        .is_volume_formatted(volume::v1::IsVolumeFormattedRequest {
            volume_id: id.clone(),
        })
        .await?;
    if !formatted.formatted {
        volumes
            .format_volume(volume::v1::FormatVolumeRequest {
                volume_id: id.clone(),
            })
            .await?;
    }
    fs.mkdir(filesystem::v1::MkdirRequest {
        path: staging.to_string(),
    })
    .await?;
    volumes
        .mount_volume(volume::v1::MountVolumeRequest {
            volume_id: id.clone(),
            target_path: staging.to_string(),
        })
        .await?;
    Ok(id)
}

async fn stage_on(node: &MockHost, lun: &str) -> Result<String, DriverError> {
    stage(node, node, node, lun, STAGING).await
}

#[tokio::test]
async fn stages_a_blank_disk_and_finds_its_volume_through_every_version() {
    let node = MockHost::new();
    let id = stage_on(&node, "1").await.unwrap();
    assert!(
        id.starts_with(r"\\?\Volume{") && id.ends_with(r"}\"),
        "{id}"
    );

    // The publish step, then lookups through the v1 trait and an older trait of the same node.
    let fs: &dyn filesystem::v1::FilesystemApi = &node;
    // The kubelet creates the pod's volume directory; the link goes inside it.
    let parent = PUBLISH.rsplit_once('\\').unwrap().0;
    fs.mkdir(filesystem::v1::MkdirRequest {
        path: parent.into(),
    })
    .await
    .unwrap();
    let request = filesystem::v1::CreateSymlinkRequest {
        source_path: STAGING.into(),
        target_path: PUBLISH.into(),
    };
    fs.create_symlink(request).await.unwrap();
    let v1: &dyn volume::v1::VolumeApi = &node;
    let found = v1
        .get_volume_id_from_target_path(volume::v1::GetVolumeIdFromTargetPathRequest {
            target_path: PUBLISH.into(),
        })
        .await
        .unwrap();
    assert_eq!(found.volume_id, id);
    let v1beta2: &dyn volume::v1beta2::VolumeApi = &node;
    let found = v1beta2
        .get_volume_id_from_mount(volume::v1beta2::VolumeIdFromMountRequest {
            mount: STAGING.into(),
        })
        .await
        .unwrap();
    assert_eq!(found.volume_id, id);

    // The node's state says the same.
    let snapshot = node.host().snapshot();
    let volume = snapshot
        .volume(&id)
        .expect("the staged volume is in the snapshot");
    assert!(!snapshot.mount_points.is_empty(), "{snapshot:?}");
    let _ = volume;
    node.host().check_invariants().unwrap();
}

#[tokio::test]
async fn staging_twice_is_idempotent_and_formats_once() {
    let node = MockHost::new();
    let first = stage_on(&node, "2").await.unwrap();
    let second = stage_on(&node, "2").await.unwrap();
    assert_eq!(first, second);
    assert_eq!(node.calls_of("FormatVolume").len(), 1);
    assert_eq!(node.calls_of("PartitionDisk").len(), 2);
    node.assert_called_in_order(&[
        "ListDiskLocations",
        "PartitionDisk",
        "ListVolumesOnDisk",
        "FormatVolume",
        "MountVolume",
    ]);
}

#[tokio::test]
async fn an_injected_failure_surfaces_as_the_status_and_a_retry_succeeds() {
    let node = MockHost::new();
    node.fail_next("disk/v1/PartitionDisk", Code::Unavailable, "WMI is busy");
    let err = stage_on(&node, "1").await.unwrap_err().proxy();
    assert_eq!(err.code(), Some(Code::Unavailable));
    assert_eq!(err.status().unwrap().message(), "WMI is busy");
    let Error::Rpc(rpc) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(rpc.method, "/v1.Disk/PartitionDisk");
    // Nothing changed on the node; the retry runs the whole flow.
    assert!(node.calls_of("FormatVolume").is_empty());
    stage_on(&node, "1").await.unwrap();
}

#[tokio::test]
async fn a_failure_after_partial_progress_leaves_a_retry_idempotent() {
    let node = MockHost::new();
    node.fail_next("MountVolume", Code::Unknown, "access denied");
    let err = stage_on(&node, "1").await.unwrap_err().proxy();
    assert_eq!(err.code(), Some(Code::Unknown));
    // The disk was partitioned and formatted before the failure; the retry
    // must not format again.
    let id = stage_on(&node, "1").await.unwrap();
    assert_eq!(node.calls_of("FormatVolume").len(), 1);
    assert_eq!(node.calls_of("MountVolume").len(), 2);
    let mounted = node.calls_of("MountVolume")[1]
        .request::<volume::v1::MountVolumeRequest>()
        .unwrap();
    assert_eq!(
        (mounted.volume_id.as_str(), mounted.target_path.as_str()),
        (id.as_str(), STAGING)
    );
}

#[tokio::test]
async fn fail_nth_lets_earlier_calls_through() {
    let node = MockHost::new();
    node.fail_nth("GetDiskStats", 2, Code::Internal, "second call fails");
    let api: &dyn disk::v1::DiskApi = &node;
    let request = || disk::v1::GetDiskStatsRequest { disk_number: 1 };
    assert!(api.get_disk_stats(request()).await.unwrap().total_bytes > 0);
    assert_eq!(
        api.get_disk_stats(request()).await.unwrap_err().code(),
        Some(Code::Internal)
    );
    assert!(api.get_disk_stats(request()).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn latency_delays_only_the_matching_rpc() {
    let node = MockHost::new();
    node.add_latency("disk/GetDiskStats", Duration::from_secs(3));
    let api: &dyn disk::v1::DiskApi = &node;
    let start = tokio::time::Instant::now();
    api.list_disk_locations(disk::v1::ListDiskLocationsRequest {})
        .await
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(1));
    api.get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: 0 })
        .await
        .unwrap();
    assert!(start.elapsed() >= Duration::from_secs(3));
}

/// The caller's timeout ends the call; the host work goes on, as at the
/// proxy: the disk is partitioned once the latency has passed.
#[tokio::test(start_paused = true)]
async fn the_request_timeout_ends_a_call_held_by_latency_and_the_host_work_goes_on() {
    let node = MockHost::builder()
        .request_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    node.add_latency("PartitionDisk", Duration::from_secs(60));
    let api: &dyn disk::v1::DiskApi = &node;
    let err = api
        .partition_disk(disk::v1::PartitionDiskRequest { disk_number: 1 })
        .await
        .unwrap_err();
    let Error::Timeout { method, after, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(method, "/v1.Disk/PartitionDisk");
    assert_eq!(*after, Duration::from_secs(2));
    let volumes = node
        .connection("volume", "v1")
        .clone()
        .with_request_timeout(None);
    let volumes = volume::v1::Client::from_connection(volumes);
    let on_disk = || async {
        let request = volume::v1::ListVolumesOnDiskRequest {
            disk_number: 1,
            partition_number: 0,
        };
        volume::v1::VolumeApi::list_volumes_on_disk(&volumes, request)
            .await
            .map_or(0, |v| v.volume_ids.len())
    };
    assert_eq!(on_disk().await, 0, "partitioned before the latency passed");
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(on_disk().await, 1, "the host work stopped with its caller");
}

#[tokio::test]
async fn a_removed_disk_disappears_for_the_driver() {
    let node = MockHost::new();
    node.remove_disk(2).unwrap();
    let api: &dyn disk::v1::DiskApi = &node;
    let locations = api
        .list_disk_locations(disk::v1::ListDiskLocationsRequest {})
        .await
        .unwrap();
    assert!(!locations.disk_locations.contains_key(&2));
    let err = api
        .get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: 2 })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(Code::Unknown));
    assert!(matches!(stage_on(&node, "2").await, Err(DriverError::NoDiskOnLun(lun)) if lun == "2"));
}

#[tokio::test]
async fn clones_share_one_node_and_one_call_log() {
    let node = MockHost::new();
    let other = node.clone();
    stage_on(&other, "1").await.unwrap();
    assert_eq!(node.calls().len(), other.calls().len());
    assert!(node.calls().len() >= 6);
    node.clear_calls();
    assert!(other.calls().is_empty());
}
