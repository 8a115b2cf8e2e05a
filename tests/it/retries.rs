//! Safe retries (`RetryPolicy`): reads tried again after `UNAVAILABLE`,
//! changes never once they may have been sent, any call after a connection
//! that could not be made, all within the deadline, each retry in the call's
//! span. Against the reference server on a Unix socket and against
//! `MockHost`, in paused time; a change refused on the wire (`REFUSED_STREAM`,
//! a GOAWAY that does not cover it) against a bare h2 server.

#![cfg(all(unix, feature = "mock"))]

use crate::support::spans;

use std::time::Duration;

use csi_proxy_client::disk::v1::{self as disk, DiskApi};
use csi_proxy_client::filesystem::v1::{self as fs, FilesystemApi};
use csi_proxy_client::host::{Host, HostConfig};
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::MockNode;
use csi_proxy_client::node::NodeOptions;
use csi_proxy_client::server::{GroupVersion, Server};
use csi_proxy_client::{ConnectOptions, Error, RetryPolicy};
use tokio::time::Instant;
use tonic::Code;
use tracing::Instrument;

const DIR: &str = r"C:\var\lib\kubelet\plugins\retries\dir";

/// A reference server of disk v1 and filesystem v1 over `host`, on a
/// socket in `sockets`; `faults` adds injected failures.
async fn serve(host: &Host, sockets: &tempfile::TempDir, faults: &[(&str, usize, Code)]) -> Server {
    let mut builder = Server::builder()
        .socket_dir(sockets.path())
        .host(host.clone())
        .serve(["disk/v1", "filesystem/v1"].map(|gv| GroupVersion::parse(gv).unwrap()));
    for (rpc, calls, code) in faults {
        builder = builder.fail_next(*rpc, *calls, *code);
    }
    builder.start().await.unwrap()
}

fn host() -> (Host, tempfile::TempDir) {
    let sandbox = tempfile::tempdir().unwrap();
    (Host::new(HostConfig::new(sandbox.path())).unwrap(), sandbox)
}

fn address(server: &Server, group: &str) -> String {
    server.address(group, "v1").unwrap().to_string()
}

async fn stats(client: &dyn DiskApi) -> Result<i64, Error> {
    let request = disk::GetDiskStatsRequest { disk_number: 1 };
    Ok(client.get_disk_stats(request).await?.total_bytes)
}

async fn mkdir(client: &dyn FilesystemApi) -> Result<(), Error> {
    let request = fs::MkdirRequest { path: DIR.into() };
    client.mkdir(request).await.map(drop)
}

async fn exists(client: &dyn FilesystemApi) -> bool {
    let request = fs::PathExistsRequest { path: DIR.into() };
    client.path_exists(request).await.unwrap().exists
}

fn code(result: Result<impl std::fmt::Debug, Error>) -> Option<Code> {
    match result {
        Err(Error::Rpc(rpc)) => Some(rpc.status.code()),
        other => panic!("expected a status from the server, got {other:?}"),
    }
}

/// The retry events of a call's span (h2 logs in the span too).
fn retry_events(call: &spans::Captured) -> Vec<&std::collections::BTreeMap<String, String>> {
    let retrying = |event: &&std::collections::BTreeMap<String, String>| {
        event.get("message").map(String::as_str) == Some("retrying the call")
    };
    call.events.iter().filter(retrying).collect()
}

// ------------------------------------------------------- reference server

#[tokio::test(start_paused = true)]
async fn a_read_is_retried_after_unavailable_and_the_span_shows_each_retry() {
    let (host, _sandbox) = host();
    let sockets = tempfile::tempdir().unwrap();
    let server = serve(&host, &sockets, &[("GetDiskStats", 2, Code::Unavailable)]).await;
    let client = disk::Client::connect(&address(&server, "disk"))
        .await
        .unwrap();

    let (spans, _guard) = spans::Spans::capture();
    let size = stats(&client)
        .instrument(tracing::info_span!("driver"))
        .await;
    assert_eq!(size.unwrap(), 32 << 30);

    let all = spans.all();
    let calls: Vec<_> = all.iter().filter(|span| span.name == "rpc").collect();
    assert_eq!(
        calls.len(),
        1,
        "one span for the call, retries included: {all:#?}"
    );
    let call = calls[0];
    assert_eq!(all[call.parent.unwrap()].name, "driver");
    assert_eq!(call.field("rpc.retries"), Some("2"), "{call:#?}");
    assert_eq!(call.field("rpc.grpc.status_code"), Some("0"));
    let retries = retry_events(call);
    assert_eq!(retries.len(), 2, "{call:#?}");
    for (event, attempt) in retries.iter().zip(["2", "3"]) {
        assert_eq!(event.get("attempt").map(String::as_str), Some(attempt));
        assert!(event.contains_key("backoff_ms"), "{event:?}");
        let error = &event["error"];
        assert!(
            error.contains("injected failure of GetDiskStats"),
            "{error}"
        );
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_change_is_not_retried_after_unavailable() {
    let (host, _sandbox) = host();
    let sockets = tempfile::tempdir().unwrap();
    let server = serve(&host, &sockets, &[("Mkdir", 1, Code::Unavailable)]).await;
    let client = fs::Client::connect(&address(&server, "filesystem"))
        .await
        .unwrap();

    assert_eq!(code(mkdir(&client).await), Some(Code::Unavailable));
    // A retry would have reached the host and made the directory.
    assert!(!exists(&client).await);
    mkdir(&client).await.unwrap();
    assert!(exists(&client).await);
    server.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_change_is_retried_when_the_connection_cannot_be_made() {
    let (host, _sandbox) = host();
    let sockets = tempfile::tempdir().unwrap();
    let server = serve(&host, &sockets, &[]).await;
    let address = address(&server, "filesystem");
    // Enough attempts that the jittered sleeps outlast the restart.
    let options =
        ConnectOptions::default().with_retry(RetryPolicy::default().with_max_attempts(20));
    let client = fs::Client::connect_with(&address, &options).await.unwrap();
    assert!(!exists(&client).await);

    // The proxy restarts: gone for 500 ms, then back on the same socket.
    server.shutdown().await.unwrap();
    let restarted = tokio::spawn({
        let host = host.clone();
        let sockets = sockets.path().to_path_buf();
        async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            Server::builder()
                .socket_dir(sockets)
                .host(host)
                .serve([GroupVersion::parse("filesystem/v1").unwrap()])
                .start()
                .await
                .unwrap()
        }
    });

    let (spans, _guard) = spans::Spans::capture();
    let start = Instant::now();
    mkdir(&client).await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(500));
    let call = spans
        .all()
        .into_iter()
        .find(|span| span.name == "rpc")
        .unwrap();
    let retries: u32 = call.field("rpc.retries").unwrap().parse().unwrap();
    assert!(retries >= 1, "{call:#?}");
    let retried = retry_events(&call);
    assert_eq!(retried.len() as u32, retries, "{call:#?}");
    assert!(retried[0]["error"].contains("cannot connect"), "{call:#?}");
    assert!(exists(&client).await);
    restarted.await.unwrap().shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn with_retries_off_a_read_is_tried_once() {
    let (host, _sandbox) = host();
    let sockets = tempfile::tempdir().unwrap();
    let server = serve(&host, &sockets, &[("GetDiskStats", 1, Code::Unavailable)]).await;
    let options = ConnectOptions::default().with_retry(RetryPolicy::none());
    let client = disk::Client::connect_with(&address(&server, "disk"), &options)
        .await
        .unwrap();

    assert_eq!(code(stats(&client).await), Some(Code::Unavailable));
    // The one injected failure was spent by the one attempt.
    assert_eq!(stats(&client).await.unwrap(), 32 << 30);
    server.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_backoff_never_sleeps_past_the_request_timeout() {
    let (host, _sandbox) = host();
    let sockets = tempfile::tempdir().unwrap();
    let server = serve(&host, &sockets, &[("GetDiskStats", 100, Code::Unavailable)]).await;
    let timeout = Duration::from_millis(300);
    let policy = RetryPolicy::default()
        .with_max_attempts(100)
        .with_initial_backoff(Duration::from_secs(10))
        .with_max_backoff(Duration::from_secs(10));
    let options = ConnectOptions::default()
        .with_request_timeout(timeout)
        .with_retry(policy);
    let client = disk::Client::connect_with(&address(&server, "disk"), &options)
        .await
        .unwrap();

    let start = Instant::now();
    // The last failure, not a timeout: no sleep that would end past the
    // deadline was begun.
    assert_eq!(code(stats(&client).await), Some(Code::Unavailable));
    assert!(start.elapsed() < timeout, "{:?}", start.elapsed());
    server.shutdown().await.unwrap();
}

// ------------------------------------------------------------- MockHost

fn retrying_mock() -> MockHost {
    MockHost::builder()
        .retry(RetryPolicy::default())
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn mock_a_read_is_retried_after_unavailable() {
    let node = retrying_mock();
    node.fail_next("ListDiskLocations", Code::Unavailable, "WMI restarting");
    let disks = node
        .list_disk_locations(disk::ListDiskLocationsRequest {})
        .await
        .unwrap();
    assert!(!disks.disk_locations.is_empty());
    assert_eq!(node.calls_of("ListDiskLocations").len(), 2);
}

#[tokio::test(start_paused = true)]
async fn mock_a_change_reaches_the_host_once_after_unavailable() {
    let node = retrying_mock();
    node.fail_next("PartitionDisk", Code::Unavailable, "WMI restarting");
    let request = disk::PartitionDiskRequest { disk_number: 1 };
    assert_eq!(
        code(node.partition_disk(request).await),
        Some(Code::Unavailable)
    );
    assert_eq!(node.calls_of("PartitionDisk").len(), 1);
}

#[tokio::test(start_paused = true)]
async fn mock_by_default_makes_one_attempt() {
    let node = MockHost::new();
    node.fail_next("ListDiskLocations", Code::Unavailable, "WMI restarting");
    let result = node
        .list_disk_locations(disk::ListDiskLocationsRequest {})
        .await;
    assert_eq!(code(result), Some(Code::Unavailable));
    assert_eq!(node.calls_of("ListDiskLocations").len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_node_operation_ends_with_the_last_failure_rather_than_sleep_past_its_deadline() {
    let node = MockHost::builder()
        .retry(
            RetryPolicy::default()
                .with_max_attempts(100)
                .with_initial_backoff(Duration::from_secs(60))
                .with_max_backoff(Duration::from_secs(60)),
        )
        .build()
        .unwrap();
    for _ in 0..100 {
        node.fail_next("PathExists", Code::Unavailable, "WMI restarting");
    }
    let deadline = Duration::from_secs(1);
    let options = NodeOptions::default().deadline(deadline);
    let node_layer = MockNode::new(&node).options(options).build().unwrap();

    let start = Instant::now();
    let error = node_layer.exists(DIR).await.unwrap_err();
    assert_eq!(error.code(), Some(Code::Unavailable), "{error}");
    assert!(start.elapsed() < deadline, "{:?}", start.elapsed());
}

// ------------------------------------- a server that refuses over HTTP/2

/// What the peer of [`refusing_server`] does with the first stream of its
/// first connection.
#[derive(Clone, Copy)]
enum Refusal {
    /// Resets it with `REFUSED_STREAM`.
    RefusedStream,
    /// Sends GOAWAY with last stream id 0 before reading it, and closes.
    GoAway,
}

/// A bare h2 server on `path` that refuses the first call as `refusal`
/// says and answers every other one with an empty message (which is the
/// whole of a `MkdirResponse`); counts the calls that reached it.
fn refusing_server(
    path: std::path::PathBuf,
    refusal: Refusal,
) -> (
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
    tokio::task::JoinHandle<()>,
) {
    use std::sync::atomic::Ordering;
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let listener = tokio::net::UnixListener::bind(path).unwrap();
    let task = tokio::spawn({
        let answered = answered.clone();
        async move {
            let mut first = true;
            while let Ok((mut socket, _)) = listener.accept().await {
                if std::mem::take(&mut first) && matches!(refusal, Refusal::GoAway) {
                    go_away_at_first_headers(&mut socket).await;
                    continue;
                }
                let mut connection = h2::server::handshake(socket).await.unwrap();
                let answered = answered.clone();
                let mut refuse = matches!(refusal, Refusal::RefusedStream);
                tokio::spawn(async move {
                    while let Some(Ok((request, mut respond))) = connection.accept().await {
                        if std::mem::take(&mut refuse) {
                            respond.send_reset(h2::Reason::REFUSED_STREAM);
                            continue;
                        }
                        answered.fetch_add(1, Ordering::SeqCst);
                        drop(request);
                        let head = http::Response::builder()
                            .header("content-type", "application/grpc")
                            .body(())
                            .unwrap();
                        let mut send = respond.send_response(head, false).unwrap();
                        send.send_data(bytes::Bytes::from_static(&[0; 5]), false)
                            .unwrap();
                        let mut trailers = http::HeaderMap::new();
                        trailers.insert("grpc-status", "0".parse().unwrap());
                        send.send_trailers(trailers).unwrap();
                    }
                });
            }
        }
    });
    (answered, task)
}

/// Speaks HTTP/2 by hand up to the client's first HEADERS, and answers it
/// with GOAWAY (last stream id 0, `NO_ERROR`) without processing it; h2's
/// server cannot, as it counts a stream processed once it has read it.
async fn go_away_at_first_headers(socket: &mut tokio::net::UnixStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut preface = [0; 24];
    socket.read_exact(&mut preface).await.unwrap();
    // An empty SETTINGS frame: the server has spoken.
    socket
        .write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0])
        .await
        .unwrap();
    loop {
        let mut header = [0; 9];
        socket.read_exact(&mut header).await.unwrap();
        let length =
            usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
        let mut payload = vec![0; length];
        socket.read_exact(&mut payload).await.unwrap();
        if header[3] == 0x1 {
            break;
        }
    }
    // GOAWAY: last stream id 0, error code NO_ERROR.
    let go_away = [0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    socket.write_all(&go_away).await.unwrap();
    socket.shutdown().await.unwrap();
}

/// Makes one change against a [`refusing_server`]: it must be sent again
/// and reach the server once.
async fn a_refused_change_is_sent_again(refusal: Refusal) {
    let sockets = tempfile::tempdir().unwrap();
    let path = sockets.path().join("csi-proxy-filesystem-v1.sock");
    let (answered, server) = refusing_server(path.clone(), refusal);
    let client = fs::Client::connect(&format!("unix://{}", path.display()))
        .await
        .unwrap();
    mkdir(&client).await.unwrap();
    assert_eq!(answered.load(std::sync::atomic::Ordering::SeqCst), 1);
    server.abort();
}

/// A change the server refused with `REFUSED_STREAM` never reached it
/// (RFC 9113 §8.7), so it is sent again, on the real protocol.
#[tokio::test]
async fn a_change_refused_with_refused_stream_is_sent_again() {
    a_refused_change_is_sent_again(Refusal::RefusedStream).await;
}

/// A change on a stream above the last one a server's GOAWAY covers was
/// not processed, so it is sent again on a new connection.
#[tokio::test]
async fn a_change_a_goaway_did_not_cover_is_sent_again_on_a_new_connection() {
    a_refused_change_is_sent_again(Refusal::GoAway).await;
}
