//! Expectation-style unit tests of driver code with the `mockall` feature:
//! `disk::v1::MockDiskApi` stands in for the proxy, and each test states
//! which calls the driver must make, with which arguments, how many times.

#![cfg(feature = "mockall")]

use std::collections::HashMap;

use csi_proxy_client::Error;
use csi_proxy_client::disk::v1::{self as disk, DiskApi, MockDiskApi};
use mockall::Sequence;

/// The driver code under test: partitions the disk on `lun`, if any, and
/// returns its number.
async fn partition_lun(d: &dyn DiskApi, lun: &str) -> Result<Option<u32>, Error> {
    let disks = d
        .list_disk_locations(disk::ListDiskLocationsRequest {})
        .await?;
    let Some((&number, _)) = disks.disk_locations.iter().find(|(_, l)| l.lunid == lun) else {
        return Ok(None);
    };
    d.partition_disk(disk::PartitionDiskRequest {
        disk_number: number,
    })
    .await?;
    Ok(Some(number))
}

fn location(lun: &str) -> disk::DiskLocation {
    disk::DiskLocation {
        adapter: "0".into(),
        bus: "0".into(),
        target: "0".into(),
        lunid: lun.into(),
    }
}

/// Disk 0 is the OS disk on LUN 0; disks 1 and 2 are data disks on LUNs 1 and 2.
fn three_disks() -> disk::ListDiskLocationsResponse {
    disk::ListDiskLocationsResponse {
        disk_locations: HashMap::from([(0, location("0")), (1, location("1")), (2, location("2"))]),
    }
}

#[tokio::test]
async fn partitions_the_disk_on_the_lun_after_listing() {
    let mut mock = MockDiskApi::new();
    let mut order = Sequence::new();
    mock.expect_list_disk_locations()
        .times(1)
        .in_sequence(&mut order)
        .returning(|_| Ok(three_disks()));
    mock.expect_partition_disk()
        .withf(|request| request.disk_number == 2)
        .times(1)
        .in_sequence(&mut order)
        .returning(|_| Ok(disk::PartitionDiskResponse {}));

    assert_eq!(partition_lun(&mock, "2").await.unwrap(), Some(2));
    mock.checkpoint();
}

#[tokio::test]
async fn surfaces_the_proxy_error_of_partition_disk() {
    let mut mock = MockDiskApi::new();
    mock.expect_list_disk_locations()
        .times(1)
        .returning(|_| Ok(three_disks()));
    mock.expect_partition_disk()
        .withf(|request| request.disk_number == 1)
        .times(1)
        .returning(|_| {
            Err(Error::rpc(
                r"\\.\pipe\csi-proxy-disk-v1",
                "/v1.Disk/PartitionDisk",
                tonic::Status::unknown("The device is not ready."),
            ))
        });

    let err = partition_lun(&mock, "1").await.unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::Unknown));
    let Error::Rpc(rpc) = &err else {
        panic!("expected an RPC error, got {err:?}");
    };
    assert_eq!(rpc.method, "/v1.Disk/PartitionDisk");
    assert_eq!(rpc.status.message(), "The device is not ready.");
    mock.checkpoint();
}

#[tokio::test]
async fn does_not_partition_when_no_disk_is_on_the_lun() {
    let mut mock = MockDiskApi::new();
    mock.expect_list_disk_locations()
        .times(1)
        .returning(|_| Ok(three_disks()));
    mock.expect_partition_disk().never();

    assert_eq!(partition_lun(&mock, "7").await.unwrap(), None);
    mock.checkpoint();
}

#[tokio::test]
async fn surfaces_the_proxy_error_of_list_disk_locations() {
    let mut mock = MockDiskApi::new();
    mock.expect_list_disk_locations().times(1).returning(|_| {
        Err(Error::rpc(
            r"\\.\pipe\csi-proxy-disk-v1",
            "/v1.Disk/ListDiskLocations",
            tonic::Status::unavailable("proxy restarting"),
        ))
    });
    mock.expect_partition_disk().never();

    let err = partition_lun(&mock, "1").await.unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::Unavailable));
    mock.checkpoint();
}

/// The mock is a `DiskApi` like `Client` and `MockHost`: it can be shared
/// as `Arc<dyn DiskApi>` across tasks.
#[tokio::test]
async fn the_mock_is_usable_as_a_shared_trait_object() {
    let mut mock = MockDiskApi::new();
    mock.expect_get_disk_state()
        .withf(|request| request.disk_number == 1)
        .times(2)
        .returning(|_| Ok(disk::GetDiskStateResponse { is_online: true }));
    let api: std::sync::Arc<dyn DiskApi> = std::sync::Arc::new(mock);

    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let api = api.clone();
            tokio::spawn(async move {
                api.get_disk_state(disk::GetDiskStateRequest { disk_number: 1 })
                    .await
            })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap().unwrap().is_online);
    }
}
