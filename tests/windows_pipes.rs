//! The crate's client connector against the server's named-pipe listener,
//! over real Windows named pipes (on Linux: `scripts/test-windows.sh`, which
//! runs this under Wine).
//!
//! Each server runs on its own tokio runtime, so "the proxy dies" can be
//! simulated faithfully: shutting that runtime down drops the listener and
//! every connection at once, closing all pipe instances as a process exit
//! would.
#![cfg(all(windows, feature = "server"))]

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use csi_proxy_client::server::pipe::PipeListener;
use csi_proxy_client::system::v1alpha1::{self as system, SystemApi, system_server};
use csi_proxy_client::{ConnectOptions, Error};
use tokio::net::windows::named_pipe::{ClientOptions, ServerOptions};
use tokio::sync::{Barrier, oneshot};

/// `ERROR_FILE_NOT_FOUND`: no instance of the pipe exists.
const ERROR_FILE_NOT_FOUND: i32 = 2;

/// A pipe name of this test process alone.
fn pipe_path(test: &str) -> String {
    format!(r"\\.\pipe\csi-proxy-test-{test}-{}", std::process::id())
}

/// A system service that tells which server instance answered, and whose
/// `GetService("slow")` takes long enough to be cut off.
struct Tagged(&'static str);

#[tonic::async_trait]
impl system_server::System for Tagged {
    async fn get_bios_serial_number(
        &self,
        _: tonic::Request<system::GetBiosSerialNumberRequest>,
    ) -> Result<tonic::Response<system::GetBiosSerialNumberResponse>, tonic::Status> {
        Ok(tonic::Response::new(system::GetBiosSerialNumberResponse {
            serial_number: format!("SN-{}", self.0),
        }))
    }

    async fn get_service(
        &self,
        request: tonic::Request<system::GetServiceRequest>,
    ) -> Result<tonic::Response<system::GetServiceResponse>, tonic::Status> {
        if request.get_ref().name == "slow" {
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
        Err(tonic::Status::not_found("no such service"))
    }
}

/// A server on its own runtime.
struct Proxy {
    runtime: tokio::runtime::Runtime,
    stop: Option<oneshot::Sender<()>>,
    done: oneshot::Receiver<Result<(), tonic::transport::Error>>,
}

impl Proxy {
    fn start(path: &str, tag: &'static str) -> io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let incoming = {
            let _context = runtime.enter();
            PipeListener::bind(path)?
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let (finished, done) = oneshot::channel();
        runtime.spawn(async move {
            let result = tonic::transport::Server::builder()
                .serve_with_incoming_shutdown(
                    system_server::SystemServer::new(Tagged(tag)),
                    incoming,
                    async {
                        let _ = stopped.await;
                    },
                )
                .await;
            let _ = finished.send(result);
        });
        Ok(Self {
            runtime,
            stop: Some(stop),
            done,
        })
    }

    /// Graceful stop: the listener closes, connections are drained.
    async fn stop(mut self) {
        let _ = self.stop.take().map(|stop| stop.send(()));
        let result = tokio::time::timeout(Duration::from_secs(10), &mut self.done)
            .await
            .expect("server stops within 10 s");
        result
            .expect("server task ran")
            .expect("server ends without error");
        self.runtime.shutdown_background();
    }

    /// Abrupt stop, as when the proxy process dies.
    fn kill(self) {
        self.runtime.shutdown_background();
    }
}

async fn serial(client: &system::Client) -> Result<String, Error> {
    client
        .get_bios_serial_number(system::GetBiosSerialNumberRequest {})
        .await
        .map(|response| response.serial_number)
}

#[tokio::test]
async fn unary_call_over_a_named_pipe_in_both_address_forms() {
    let path = pipe_path("unary");
    let proxy = Proxy::start(&path, "unary").unwrap();

    let client = system::Client::connect(&path).await.unwrap();
    assert_eq!(serial(&client).await.unwrap(), "SN-unary");

    // Docker's npipe:// spelling of the same pipe.
    let npipe = format!("npipe:////./pipe/{}", path.rsplit('\\').next().unwrap());
    let client = system::Client::connect(&npipe).await.unwrap();
    assert_eq!(serial(&client).await.unwrap(), "SN-unary");

    // A server error comes back as an RPC error with its code.
    let err = client
        .get_service(system::GetServiceRequest {
            name: "absent".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::NotFound), "{err}");

    // The pipe serves one service: another group's call is UNIMPLEMENTED.
    let disk = csi_proxy_client::disk::v1::Client::connect(&path)
        .await
        .unwrap();
    let err = csi_proxy_client::disk::v1::DiskApi::list_disk_ids(
        &disk,
        csi_proxy_client::disk::v1::ListDiskIDsRequest {},
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::Unimplemented), "{err}");

    proxy.stop().await;
}

#[tokio::test]
async fn sixty_four_clients_connecting_at_the_same_instant_all_succeed() {
    const CLIENTS: usize = 64;
    let path = Arc::new(pipe_path("crowd"));
    let proxy = Proxy::start(&path, "crowd").unwrap();

    let barrier = Arc::new(Barrier::new(CLIENTS));
    let started = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (path, barrier) = (Arc::clone(&path), Arc::clone(&barrier));
            tokio::spawn(async move {
                barrier.wait().await;
                let client = system::Client::connect(path.as_str()).await?;
                serial(&client).await
            })
        })
        .collect();
    let mut failures = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            Ok(serial) => assert_eq!(serial, "SN-crowd"),
            Err(err) => failures.push(err.to_string()),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {CLIENTS} clients failed, first: {}",
        failures.len(),
        failures[0]
    );
    // Well inside the 5 s connect timeout: busy retries are short.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // One client, many concurrent calls on its one connection.
    let client = system::Client::connect(path.as_str()).await.unwrap();
    let calls: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { serial(&client).await })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), "SN-crowd");
    }

    proxy.stop().await;
}

#[tokio::test]
async fn missing_pipe_fails_fast_with_file_not_found() {
    for address in [
        pipe_path("missing"),
        format!(
            "npipe:////./pipe/csi-proxy-test-missing-{}",
            std::process::id()
        ),
    ] {
        let started = Instant::now();
        let err = system::Client::connect(&address).await.unwrap_err();
        let elapsed = started.elapsed();
        match &err {
            Error::Connect { source, .. } => {
                assert_eq!(
                    source.raw_os_error(),
                    Some(ERROR_FILE_NOT_FOUND),
                    "{err}: {source}"
                )
            }
            other => panic!("expected a connect error, got {other:?}"),
        }
        // No waiting out the 5 s connect timeout.
        assert!(elapsed < Duration::from_secs(1), "took {elapsed:?}");
    }
}

#[tokio::test]
async fn busy_pipe_is_retried_until_the_connect_timeout() {
    let path = pipe_path("busy");
    // One instance only, taken by another client: the pipe stays busy.
    let server = ServerOptions::new()
        .first_pipe_instance(true)
        .max_instances(1)
        .create(&path)
        .unwrap();
    let _holder = ClientOptions::new().open(&path).unwrap();
    server.connect().await.unwrap();

    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    let err =
        system::Client::connect_with(&path, &ConnectOptions::default().connect_timeout(timeout))
            .await
            .unwrap_err();
    let elapsed = started.elapsed();
    assert!(matches!(err, Error::PipeBusy { .. }), "{err:?}");
    assert!(elapsed >= timeout, "gave up after {elapsed:?}");
    assert!(
        elapsed < timeout + Duration::from_secs(2),
        "gave up after {elapsed:?}"
    );
}

#[tokio::test]
async fn proxy_stopped_mid_run_gives_a_transport_error_and_a_restarted_one_is_reachable() {
    let path = pipe_path("restart");
    let proxy = Proxy::start(&path, "first").unwrap();
    let client = system::Client::connect(&path).await.unwrap();
    assert_eq!(serial(&client).await.unwrap(), "SN-first");

    // A call in flight when the proxy dies fails as a transport error, not
    // as an answer of the proxy.
    let in_flight = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .get_service(system::GetServiceRequest {
                    name: "slow".into(),
                })
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    proxy.kill();
    let err = tokio::time::timeout(Duration::from_secs(10), in_flight)
        .await
        .expect("the in-flight call ends when the proxy dies")
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");

    // While it is down: the old client's next call and a new connect fail.
    let err = serial(&client).await.unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    let err = system::Client::connect(&path).await.unwrap_err();
    assert!(
        matches!(&err, Error::Connect { source, .. } if source.raw_os_error() == Some(ERROR_FILE_NOT_FOUND)),
        "{err:?}"
    );

    // A restarted proxy can bind the same name and is reachable by a new
    // connect; the old client reconnects on its own.
    let proxy = Proxy::start(&path, "second").unwrap();
    let fresh = system::Client::connect(&path).await.unwrap();
    assert_eq!(serial(&fresh).await.unwrap(), "SN-second");
    assert_eq!(serial(&client).await.unwrap(), "SN-second");

    // A graceful stop, then the same again.
    proxy.stop().await;
    let err = serial(&fresh).await.unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    let proxy = Proxy::start(&path, "third").unwrap();
    assert_eq!(
        serial(&system::Client::connect(&path).await.unwrap())
            .await
            .unwrap(),
        "SN-third"
    );
    proxy.stop().await;
}
