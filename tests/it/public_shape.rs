//! The public shape a driver author reads in the README and the API docs,
//! written as a driver would use it: if this compiles and runs, those names
//! and signatures exist.

use std::sync::Arc;

use csi_proxy_client::disk::v1 as disk;
use csi_proxy_client::volume::v1 as volume;
use csi_proxy_client::{ApiVersion, Error};

async fn stage(d: &dyn disk::DiskApi) -> Result<(), Error> {
    let locations = d
        .list_disk_locations(disk::ListDiskLocationsRequest {})
        .await?;
    for number in locations.disk_locations.keys() {
        d.partition_disk(disk::PartitionDiskRequest {
            disk_number: *number,
        })
        .await?;
    }
    let _ids = d.list_disk_ids(disk::ListDiskIDsRequest {}).await?;
    Ok(())
}

async fn find_volume(v: Arc<dyn volume::VolumeApi>, path: &str) -> Result<String, Error> {
    let request = volume::GetVolumeIdFromTargetPathRequest {
        target_path: path.to_string(),
    };
    Ok(v.get_volume_id_from_target_path(request).await?.volume_id)
}

#[allow(dead_code)]
async fn connect_every_way() -> Result<(), Error> {
    let client = disk::Client::connect_default().await?;
    let client2 = disk::Client::connect("npipe:////./pipe/csi-proxy-disk-v1").await?;
    let client3 = disk::Client::connect("unix:///run/csi-proxy/csi-proxy-disk-v1.sock").await?;
    stage(&client).await?;
    stage(&client2).await?;
    stage(&client3).await?;
    let volumes: Arc<dyn volume::VolumeApi> = Arc::new(volume::Client::connect_default().await?);
    find_volume(
        Arc::clone(&volumes),
        r"C:\var\lib\kubelet\pods\p\volumes\v\mount",
    )
    .await?;
    let _bios = csi_proxy_client::system::v1alpha1::Client::connect_default().await?;
    Ok(())
}

fn assert_send_sync<T: Send + Sync + ?Sized>() {}

#[test]
fn traits_are_object_safe_send_and_sync_and_clients_implement_them() {
    assert_send_sync::<dyn disk::DiskApi>();
    assert_send_sync::<dyn volume::VolumeApi>();
    assert_send_sync::<disk::Client>();
    fn as_api(c: disk::Client) -> Arc<dyn disk::DiskApi> {
        Arc::new(c)
    }
    let _ = as_api;
    assert_eq!(
        (disk::GROUP, disk::VERSION, disk::SERVICE_NAME),
        ("disk", "v1", "v1.Disk")
    );
    assert_eq!(disk::RPCS.len(), 7);
}

#[test]
fn versions_of_every_group_parse_round_trip_and_are_listed_in_order() {
    use csi_proxy_client::{disk, filesystem, iscsi, smb, system, volume};
    let groups = [
        disk::VERSIONS,
        filesystem::VERSIONS,
        iscsi::VERSIONS,
        smb::VERSIONS,
        system::VERSIONS,
        volume::VERSIONS,
    ];
    let mut total = 0;
    for versions in groups {
        let parsed: Vec<ApiVersion> = versions.iter().map(|v| v.parse().unwrap()).collect();
        assert!(parsed.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
        for (text, version) in versions.iter().zip(&parsed) {
            assert_eq!(&version.to_string(), text);
        }
        total += versions.len();
    }
    assert_eq!(total, 23);
    let all: usize = [
        disk::v1alpha1::RPCS,
        disk::v1beta1::RPCS,
        disk::v1beta2::RPCS,
        disk::v1beta3::RPCS,
        disk::v1::RPCS,
        filesystem::v1alpha1::RPCS,
        filesystem::v1beta1::RPCS,
        filesystem::v1beta2::RPCS,
        filesystem::v1::RPCS,
        filesystem::v2alpha1::RPCS,
        iscsi::v1alpha1::RPCS,
        iscsi::v1alpha2::RPCS,
        smb::v1alpha1::RPCS,
        smb::v1beta1::RPCS,
        smb::v1beta2::RPCS,
        smb::v1::RPCS,
        system::v1alpha1::RPCS,
        volume::v1alpha1::RPCS,
        volume::v1beta1::RPCS,
        volume::v1beta2::RPCS,
        volume::v1beta3::RPCS,
        volume::v1::RPCS,
        volume::v2alpha1::RPCS,
    ]
    .iter()
    .map(|r| r.len())
    .sum();
    assert_eq!(all, 139);
}

#[tokio::test]
async fn missing_default_endpoint_is_an_error_not_a_panic() {
    // Whatever the environment, connecting to the default endpoint of a
    // proxy that is not running fails with an error naming the endpoint.
    match disk::Client::connect_default().await {
        Err(e) => assert!(e.to_string().contains("csi-proxy-disk-v1"), "{e}"),
        Ok(c) => panic!("a proxy is listening at {}", c.endpoint()),
    }
    let _ = find_volume;
}
