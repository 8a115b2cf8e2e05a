//! How the reference server serves the calls of one connection: all in the
//! connection's task, yet concurrently, and each ended when its client
//! cancels it.
#![cfg(all(unix, feature = "mock"))]

use std::time::Duration;

use crate::scenarios::KUBELET;
use csi_proxy_client::disk::v1::{self as disk, DiskApi as _};
use csi_proxy_client::filesystem::v1::{self as filesystem, FilesystemApi as _};
use csi_proxy_client::server::Server;

/// A call that waits (here an injected latency) does not hold up the other
/// calls of its connection: they are answered while it waits.
#[tokio::test]
async fn a_waiting_call_does_not_hold_up_the_others_on_its_connection() {
    let sockets = tempfile::tempdir().unwrap();
    let server = Server::builder()
        .socket_dir(sockets.path())
        .latency("GetDiskStats", Duration::from_secs(3600))
        .shutdown_grace(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    let client = disk::Client::connect(&server.address("disk", "v1").unwrap().to_string())
        .await
        .unwrap();
    let slow = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .get_disk_stats(disk::GetDiskStatsRequest { disk_number: 0 })
                .await
        }
    });
    for _ in 0..10 {
        let locations = tokio::time::timeout(
            Duration::from_secs(10),
            client.list_disk_locations(disk::ListDiskLocationsRequest {}),
        )
        .await
        .expect("a call waited behind the slow one")
        .unwrap();
        assert!(!locations.disk_locations.is_empty());
    }
    assert!(!slow.is_finished(), "the slow call was not slow");
    slow.abort();
    server.shutdown().await.unwrap();
}

/// A call its client gives up on (the client resets its stream) gets no
/// answer, but its host work goes on, as csi-proxy's PowerShell and WMI
/// calls do: the directory appears once the host time has passed.
#[tokio::test]
async fn a_call_its_client_cancels_goes_on_at_the_host() {
    let sockets = tempfile::tempdir().unwrap();
    let server = Server::builder()
        .socket_dir(sockets.path())
        .latency("Mkdir", Duration::from_millis(500))
        .shutdown_grace(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    // No request timeout: the server learns of the cancel from the reset
    // alone, not from a `grpc-timeout`.
    let client =
        filesystem::Client::connect(&server.address("filesystem", "v1").unwrap().to_string())
            .await
            .unwrap();
    let path = format!(r"{KUBELET}\plugins\cancelled");
    let call = client.mkdir(filesystem::MkdirRequest { path: path.clone() });
    assert!(
        tokio::time::timeout(Duration::from_millis(100), call)
            .await
            .is_err(),
        "the call ended before its latency"
    );
    // Well past the latency: the host work has made the directory.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let exists = client
        .path_exists(filesystem::PathExistsRequest { path })
        .await
        .unwrap();
    assert!(exists.exists, "the host work stopped with its caller");
    server.shutdown().await.unwrap();
}
