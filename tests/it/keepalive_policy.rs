//! The client's keepalive against grpc-go's keepalive enforcement, which
//! csi-proxy's server has and the reference server plays: a client that
//! PINGs too often during a long call loses the connection (GOAWAY
//! `too_many_pings`), a change on it is not sent again, and the default
//! client keeps its connection however long the proxy holds a call. In
//! paused time, against the reference server on a Unix socket.

#![cfg(all(unix, feature = "mock"))]

use std::time::Duration;

use csi_proxy_client::disk::v1::{self as disk, DiskApi};
use csi_proxy_client::filesystem::v1::{self as fs, FilesystemApi};
use csi_proxy_client::host::{Host, HostConfig};
use csi_proxy_client::server::{GroupVersion, Server, ServerBuilder};
use csi_proxy_client::{ConnectOptions, Error};
use tracing::Instrument;

use crate::support::spans;

const DIR: &str = r"C:\var\lib\kubelet\plugins\keepalive\dir";

/// A reference server of disk v1 and filesystem v1 over a host of its own.
async fn serve(builder: ServerBuilder) -> (Server, [tempfile::TempDir; 2]) {
    let sandbox = tempfile::tempdir().unwrap();
    let sockets = tempfile::tempdir().unwrap();
    let server = builder
        .socket_dir(sockets.path())
        .host(Host::new(HostConfig::new(sandbox.path())).unwrap())
        .serve(["disk/v1", "filesystem/v1"].map(|gv| GroupVersion::parse(gv).unwrap()))
        .start()
        .await
        .unwrap();
    (server, [sandbox, sockets])
}

fn address(server: &Server, group: &str) -> String {
    server.address(group, "v1").unwrap().to_string()
}

/// Runs `call` and returns its outcome and how many times the client
/// tried it again (its span's `rpc.retries`).
async fn traced<T>(call: impl std::future::Future<Output = T>) -> (T, String) {
    let (spans, _guard) = spans::Spans::capture();
    let outcome = call.instrument(tracing::info_span!("driver")).await;
    let all = spans.all();
    let calls: Vec<_> = all.iter().filter(|span| span.name == "rpc").collect();
    assert_eq!(calls.len(), 1, "{all:#?}");
    let retries = calls[0]
        .field("rpc.retries")
        .unwrap_or_default()
        .to_string();
    (outcome, retries)
}

async fn mkdir(client: &fs::Client) -> Result<(), Error> {
    let request = fs::MkdirRequest { path: DIR.into() };
    client.mkdir(request).await.map(drop)
}

async fn exists(server: &Server) -> bool {
    let client = fs::Client::connect(&address(server, "filesystem"))
        .await
        .unwrap();
    let request = fs::PathExistsRequest { path: DIR.into() };
    client.path_exists(request).await.unwrap().exists
}

/// A client that PINGs every second during a call, against a server whose
/// policy wants 10 s between PINGs: at the third strike the server sends
/// GOAWAY and closes, the call fails as a transport error, and the change,
/// which the GOAWAY covered (the server had it), is not sent again; the
/// host does it once, when its time has passed.
#[tokio::test(start_paused = true)]
async fn a_client_pinging_too_often_loses_the_call_and_the_change_is_not_sent_again() {
    let (server, _dirs) = serve(
        Server::builder()
            .keepalive_enforcement(Duration::from_secs(10), false)
            .latency("Mkdir", Duration::from_secs(60)),
    )
    .await;
    let options = ConnectOptions::default().with_keepalive_interval(Some(Duration::from_secs(1)));
    let client = fs::Client::connect_with(&address(&server, "filesystem"), &options)
        .await
        .unwrap();

    let (outcome, retries) = traced(mkdir(&client)).await;
    assert!(
        matches!(outcome, Err(Error::Transport { .. })),
        "{outcome:?}"
    );
    assert_eq!(retries, "0", "a change the server had was sent again");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(exists(&server).await, "the host did not make the directory");
    server.shutdown().await.unwrap();
}

/// The default client against the default policy (csi-proxy's): a change
/// the proxy holds for half an hour completes on its connection, sent once.
#[tokio::test(start_paused = true)]
async fn the_default_client_keeps_a_half_hour_change_on_its_connection() {
    let (server, _dirs) =
        serve(Server::builder().latency("Mkdir", Duration::from_secs(1800))).await;
    let client = fs::Client::connect(&address(&server, "filesystem"))
        .await
        .unwrap();

    let (outcome, retries) = traced(mkdir(&client)).await;
    outcome.unwrap();
    assert_eq!(retries, "0");
    assert!(exists(&server).await);
    server.shutdown().await.unwrap();
}

/// The case measured against grpc-go: a read the proxy holds for 330 s is
/// answered on its first attempt (with PINGs every 60 s it was sent again
/// at each GOAWAY).
#[tokio::test(start_paused = true)]
async fn the_default_client_gets_a_read_held_330_s_on_its_first_attempt() {
    let (server, _dirs) =
        serve(Server::builder().latency("GetDiskStats", Duration::from_secs(330))).await;
    let client = disk::Client::connect(&address(&server, "disk"))
        .await
        .unwrap();

    let request = disk::GetDiskStatsRequest { disk_number: 1 };
    let (outcome, retries) = traced(client.get_disk_stats(request)).await;
    assert_eq!(outcome.unwrap().total_bytes, 32 << 30);
    assert_eq!(retries, "0");
    server.shutdown().await.unwrap();
}
