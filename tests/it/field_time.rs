//! Host time (issues 26 and 27): work at the host takes time and goes on
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
