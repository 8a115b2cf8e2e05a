//! The reference server against a hostile local client: a rapid reset,
//! CONTINUATION floods and a zero window each end with the attacking
//! connection closed or still serving, never with the server holding what
//! the client sends, and the server keeps answering other clients.
#![cfg(feature = "server")]

use csi_proxy_client::disk::v1::{self as disk, DiskApi as _};
use csi_proxy_client::server::{GroupVersion, Server};
use csi_proxy_client::transport::Address;

use crate::support::attacks::{self, Answer, ENHANCE_YOUR_CALM, PROTOCOL_ERROR};

/// A call with a response body.
const PATH: &str = "/v1.Disk/ListDiskLocations";

/// Runs `attack` on a fresh connection to the disk v1 endpoint of a server
/// of its own, then checks that a client on another connection is served.
async fn attacked<F, Fut>(attack: F) -> Answer
where
    F: FnOnce(Connection) -> Fut,
    Fut: std::future::Future<Output = Answer>,
{
    #[cfg(windows)]
    let _pipes = crate::support::SERVER_PIPES.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::builder()
        .socket_dir(dir.path())
        .serve([GroupVersion::parse("disk/v1").unwrap()])
        .start()
        .await
        .unwrap();
    let address = server.address("disk", "v1").unwrap().clone();
    let answer = attack(connect(&address).await).await;

    let client = disk::Client::connect(&address.to_string()).await.unwrap();
    let disks = client
        .list_disk_locations(disk::ListDiskLocationsRequest {})
        .await
        .unwrap();
    assert!(!disks.disk_locations.is_empty());
    server.shutdown().await.unwrap();
    answer
}

#[cfg(unix)]
type Connection = tokio::net::UnixStream;
#[cfg(windows)]
type Connection = tokio::net::windows::named_pipe::NamedPipeClient;

async fn connect(address: &Address) -> Connection {
    match address {
        #[cfg(unix)]
        Address::Unix(path) => tokio::net::UnixStream::connect(path).await.unwrap(),
        #[cfg(windows)]
        Address::NamedPipe(name) => tokio::net::windows::named_pipe::ClientOptions::new()
            .open(name)
            .unwrap(),
        other => panic!("no endpoint of this platform: {other}"),
    }
}

#[tokio::test]
async fn a_header_block_that_never_ends_is_closed_with_goaway() {
    let answer = attacked(|c| attacks::continuation_flood(c, PATH)).await;
    assert_eq!(answer, Answer::GoAway(PROTOCOL_ERROR));
}

#[tokio::test]
async fn empty_continuation_frames_are_closed_with_goaway() {
    let answer = attacked(|c| attacks::empty_continuations(c, PATH)).await;
    assert_eq!(answer, Answer::GoAway(PROTOCOL_ERROR));
}

#[tokio::test]
async fn a_rapid_reset_is_served_or_calmed() {
    let answer = attacked(|c| attacks::rapid_reset(c, PATH)).await;
    assert!(
        matches!(
            answer,
            Answer::PingAck { .. } | Answer::GoAway(ENHANCE_YOUR_CALM)
        ),
        "{answer:?}"
    );
}

#[tokio::test]
async fn a_zero_window_stalls_the_calls_not_the_connection() {
    let answer = attacked(|c| attacks::zero_window(c, PATH)).await;
    assert_eq!(answer, Answer::PingAck { data_frames: 0 });
}
