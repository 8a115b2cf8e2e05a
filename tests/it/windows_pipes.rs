//! Named pipes for real: the server's pipe listener, the crate's client
//! connector and the reference server, over Windows named pipes (on Linux:
//! `scripts/test-windows.sh`, which runs this under Wine).
//!
//! The listener is private to the crate (the reference server uses it), so
//! it is compiled into this test from its source file. Tests of the
//! listener and connector use pipe names of this process alone and run in
//! parallel; the one test of the reference server uses its fixed pipe names.
//!
//! Each test server runs on its own tokio runtime, so "the proxy dies" can
//! be simulated faithfully: shutting that runtime down drops the listener
//! and every connection at once, closing all pipe instances as a process
//! exit would.
#![cfg(windows)]

#[allow(dead_code)]
#[path = "../../src/server/pipe.rs"]
mod pipe;

use std::ffi::OsString;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use csi_proxy_client::system::v1alpha1::{self as system, SystemApi, system_server};
use csi_proxy_client::{ConnectOptions, Error, RetryPolicy};
use pipe::PipeListener;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::windows::named_pipe::{ClientOptions, ServerOptions};
use tokio::sync::{Barrier, oneshot};
use tokio_stream::StreamExt;
use tonic::transport::server::Connected;

/// `ERROR_FILE_NOT_FOUND`: no instance of the pipe exists.
const ERROR_FILE_NOT_FOUND: i32 = 2;

/// Wine sets these in every Windows process it starts.
fn under_wine() -> bool {
    std::env::var_os("WINECONFIGDIR").is_some()
}

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

    unserved! {
        start_service(system::StartServiceRequest) -> system::StartServiceResponse;
        stop_service(system::StopServiceRequest) -> system::StopServiceResponse;
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
    let err = system::Client::connect_with(
        &path,
        &ConnectOptions::default().with_connect_timeout(timeout),
    )
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

/// The real CSI Proxy listens through go-winio, whose listener first creates
/// an instance without read or write access that only holds the pipe's
/// name. Windows keeps clients off such an instance; Wine 8 connects the
/// first client to it, and nothing ever reads it or answers (csi-proxy
/// v1.1.3 and v1.3.0 under Wine, `scripts/real-proxy.sh`). Here an
/// instance that is created and never connected nor read plays its part:
/// under Wine, clients are connected to it as to the served ones. Every
/// client must still reach the server, without waiting out its timeout.
#[tokio::test]
async fn an_instance_that_never_answers_is_left_for_one_that_does() {
    let path = pipe_path("silent");
    let proxy = Proxy::start(&path, "served").unwrap();
    let _silent = ServerOptions::new().create(&path).unwrap();
    let options = ConnectOptions::default()
        .with_connect_timeout(Duration::from_secs(2))
        .with_request_timeout(Duration::from_secs(4));
    let mut clients = Vec::new();
    for n in 0..3 {
        let client = system::Client::connect_with(&path, &options).await.unwrap();
        let answer = serial(&client).await;
        assert_eq!(
            answer.as_deref().ok(),
            Some("SN-served"),
            "client {n}: {answer:?}"
        );
        // Kept connected, so that the next client needs another instance.
        clients.push(client);
    }
    proxy.stop().await;
}

// ---------------------------------------------------------------- listener

#[tokio::test]
async fn listener_connection_carries_bytes_both_ways() {
    let path = pipe_path("bytes");
    let mut listener = PipeListener::bind(&path).unwrap();
    let mut client = ClientOptions::new().open(&path).unwrap();
    let mut conn = listener.next().await.unwrap().unwrap();
    assert_eq!(conn.connect_info().path, OsString::from(&path));

    client.write_all(b"ping").await.unwrap();
    let mut buf = [0u8; 4];
    conn.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ping");
    conn.write_all(b"pong").await.unwrap();
    client.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"pong");

    // Closing the server side ends the client's stream.
    drop(conn);
    assert_eq!(client.read(&mut buf).await.unwrap_or(0), 0);
}

#[tokio::test]
async fn listener_creates_the_next_instance_before_handing_off() {
    let path = pipe_path("handoff");
    let mut listener = PipeListener::bind(&path).unwrap();
    let _first = ClientOptions::new().open(&path).unwrap();
    let _conn = listener.next().await.unwrap().unwrap();
    // The stream is not polled again, yet a second client finds a free
    // instance at once: neither ERROR_PIPE_BUSY nor ERROR_FILE_NOT_FOUND.
    let second = ClientOptions::new().open(&path);
    assert!(second.is_ok(), "second client: {:?}", second.err());
    let _conn2 = listener.next().await.unwrap().unwrap();
}

#[tokio::test]
async fn pipe_disappears_when_the_listener_is_dropped() {
    let path = pipe_path("drop");
    let listener = PipeListener::bind(&path).unwrap();
    drop(listener);
    let err = ClientOptions::new().open(&path).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(ERROR_FILE_NOT_FOUND), "{err}");
    // And the name can be bound again.
    PipeListener::bind(&path).unwrap();
}

#[tokio::test]
async fn second_bind_of_the_same_pipe_fails_with_addr_in_use() {
    let path = pipe_path("twice");
    let _first = PipeListener::bind(&path).unwrap();
    let second = PipeListener::bind(&path);
    if under_wine() {
        // Wine 8 ignores FILE_FLAG_FIRST_PIPE_INSTANCE (see the listener's
        // docs): the second bind succeeds there. Should a later Wine enforce
        // it, this fails and the Windows branch below applies to Wine too.
        assert!(second.is_ok(), "Wine now enforces the first instance flag");
        return;
    }
    let err = second.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{err}");
    assert!(err.to_string().contains(&path), "{err}");
}

#[tokio::test]
async fn invalid_pipe_name_is_reported_with_the_name() {
    let err = PipeListener::bind(r"\\.\not-a-pipe\x").unwrap_err();
    assert!(err.to_string().contains(r"\\.\not-a-pipe\x"), "{err}");
}

// ---------------------------------------------------------------- reference server

/// The reference server on its real pipe names, `\\.\pipe\csi-proxy-<group>-<version>`.
#[cfg(feature = "server")]
#[tokio::test]
async fn reference_server_serves_its_default_pipes() {
    let _pipes = crate::support::SERVER_PIPES.lock().await;
    use csi_proxy_client::disk::v1::{self as disk, DiskApi};
    use csi_proxy_client::server::{GroupVersion, Server, ServerError};

    let endpoints = ["disk/v1", "volume/v1"].map(|gv| GroupVersion::parse(gv).unwrap());
    let server = Server::builder().serve(endpoints).start().await.unwrap();
    assert_eq!(
        server.address("disk", "v1").unwrap().to_string(),
        r"\\.\pipe\csi-proxy-disk-v1"
    );

    let client = disk::Client::connect_default().await.unwrap();
    let disks = client
        .list_disk_locations(disk::ListDiskLocationsRequest {})
        .await
        .unwrap();
    assert!(disks.disk_locations.len() >= 3, "{disks:?}");

    // Each pipe serves its own group version only.
    let on_volume_pipe = disk::Client::connect(r"\\.\pipe\csi-proxy-volume-v1")
        .await
        .unwrap();
    let err = on_volume_pipe
        .list_disk_locations(disk::ListDiskLocationsRequest {})
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::Unimplemented), "{err}");

    // A second proxy on the same pipes.
    let second = Server::builder().serve(endpoints).start().await;
    if under_wine() {
        // FILE_FLAG_FIRST_PIPE_INSTANCE is not enforced by Wine 8.
        assert!(second.is_ok(), "Wine now enforces the first instance flag");
        second.unwrap().shutdown().await.unwrap();
    } else {
        match second {
            Err(ServerError::Listen { address, source }) => {
                assert_eq!(address, r"\\.\pipe\csi-proxy-disk-v1");
                assert_eq!(source.kind(), io::ErrorKind::AddrInUse, "{source}");
            }
            other => panic!("expected AddrInUse, got {other:?}"),
        }
    }
    // The first server still answers.
    let client = disk::Client::connect_default().await.unwrap();
    client
        .list_disk_locations(disk::ListDiskLocationsRequest {})
        .await
        .unwrap();

    server.shutdown().await.unwrap();
    let err = disk::Client::connect_default().await.unwrap_err();
    assert!(
        matches!(&err, Error::Connect { source, .. } if source.raw_os_error() == Some(ERROR_FILE_NOT_FOUND)),
        "{err:?}"
    );
}

/// Every group version answers on its default pipe through `connect_default`,
/// and a blank disk is staged and published through the v1 clients.
#[cfg(feature = "server")]
#[tokio::test]
// One request literal serves versions with and without legacy fields.
#[allow(clippy::needless_update)]
async fn every_group_version_answers_on_its_default_pipe_and_a_volume_stages() {
    use csi_proxy_client::host::smb::{
        DEFAULT_SMB_PASSWORD, DEFAULT_SMB_SERVER, DEFAULT_SMB_SHARE, DEFAULT_SMB_USER,
    };
    use csi_proxy_client::server::Server;
    use csi_proxy_client::{disk, filesystem, iscsi, smb, volume};

    let _pipes = crate::support::SERVER_PIPES.lock().await;
    let server = Server::builder().start().await.unwrap();
    assert_eq!(server.addresses().len(), 23);
    let mut answered = 0;

    // The iSCSI initiator service starts stopped on the default node.
    let sys = system::Client::connect_default().await.unwrap();
    assert!(!serial(&sys).await.unwrap().is_empty());
    sys.start_service(system::StartServiceRequest {
        name: "MSiSCSI".into(),
    })
    .await
    .unwrap();
    answered += 1;

    macro_rules! each {
        ($group:ident [$($v:ident)*] |$c:ident| $call:expr) => {$({
            use $group::$v::*;
            let $c = Client::connect_default().await.unwrap();
            let result = $call.await;
            assert!(result.is_ok(), "{}/{}: {result:?}", stringify!($group), stringify!($v));
            answered += 1;
        })*};
    }
    each!(disk [v1alpha1 v1beta1 v1beta2 v1beta3 v1] |c| c.list_disk_locations(ListDiskLocationsRequest {}));
    each!(filesystem [v1alpha1 v1beta1 v1beta2 v1 v2alpha1] |c| c.path_exists(PathExistsRequest {
        path: r"C:\var\lib\kubelet".into(),
        ..Default::default()
    }));
    each!(iscsi [v1alpha1 v1alpha2] |c| c.list_target_portals(ListTargetPortalsRequest {}));
    each!(volume [v1alpha1 v1beta1 v1beta2] |c| c.list_volumes_on_disk(ListVolumesOnDiskRequest { disk_id: "0".into() }));
    each!(volume [v1beta3 v1 v2alpha1] |c| c.list_volumes_on_disk(ListVolumesOnDiskRequest {
        disk_number: 0,
        partition_number: 0,
    }));
    let remote = format!(r"\\{DEFAULT_SMB_SERVER}\{DEFAULT_SMB_SHARE}");
    each!(smb [v1alpha1 v1beta1 v1beta2 v1] |c| async {
        let request = NewSmbGlobalMappingRequest {
            remote_path: remote.clone(),
            username: DEFAULT_SMB_USER.into(),
            password: DEFAULT_SMB_PASSWORD.into(),
            ..Default::default()
        };
        c.new_smb_global_mapping(request).await?;
        c.remove_smb_global_mapping(RemoveSmbGlobalMappingRequest { remote_path: remote.clone(), ..Default::default() })
            .await
    });
    assert_eq!(answered, 23);

    // NodeStage and NodePublish of the blank disk on LUN 1, v1 only.
    use disk::v1::DiskApi as _;
    use filesystem::v1::FilesystemApi as _;
    use volume::v1::VolumeApi as _;
    let staging = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv\globalmount";
    let publish = r"C:\var\lib\kubelet\pods\p\volumes\kubernetes.io~csi\pv\mount";
    let d = disk::v1::Client::connect_default().await.unwrap();
    let v = volume::v1::Client::connect_default().await.unwrap();
    let f = filesystem::v1::Client::connect_default().await.unwrap();
    let locations = d
        .list_disk_locations(disk::v1::ListDiskLocationsRequest {})
        .await
        .unwrap();
    let (&n, _) = locations
        .disk_locations
        .iter()
        .find(|(_, l)| l.lunid == "1")
        .unwrap();
    d.partition_disk(disk::v1::PartitionDiskRequest { disk_number: n })
        .await
        .unwrap();
    let request = volume::v1::ListVolumesOnDiskRequest {
        disk_number: n,
        partition_number: 0,
    };
    let id = v
        .list_volumes_on_disk(request)
        .await
        .unwrap()
        .volume_ids
        .remove(0);
    v.format_volume(volume::v1::FormatVolumeRequest {
        volume_id: id.clone(),
    })
    .await
    .unwrap();
    f.mkdir(filesystem::v1::MkdirRequest {
        path: staging.into(),
    })
    .await
    .unwrap();
    let request = volume::v1::MountVolumeRequest {
        volume_id: id.clone(),
        target_path: staging.into(),
    };
    v.mount_volume(request).await.unwrap();
    f.mkdir(filesystem::v1::MkdirRequest {
        path: publish.rsplit_once('\\').unwrap().0.into(),
    })
    .await
    .unwrap();
    let request = filesystem::v1::CreateSymlinkRequest {
        source_path: staging.into(),
        target_path: publish.into(),
    };
    f.create_symlink(request).await.unwrap();
    let request = volume::v1::GetVolumeIdFromTargetPathRequest {
        target_path: publish.into(),
    };
    assert_eq!(
        v.get_volume_id_from_target_path(request)
            .await
            .unwrap()
            .volume_id,
        id
    );
    server.host().check_invariants().unwrap();
    server.shutdown().await.unwrap();
    println!(
        "named pipes: 23 group versions answered and a volume was staged over \\\\.\\pipe\\csi-proxy-*"
    );
}

// ---------------------------------------------------------------- liveness

use crate::support::front;

/// A [`front::Front`] on the pipe `path`, relaying to the pipe `backend`.
fn front_pipe(path: &str, backend: &str, silent: usize) -> front::Front {
    let front = front::Front::new(silent);
    let mut server = ServerOptions::new()
        .first_pipe_instance(true)
        .create(path)
        .unwrap();
    let (path, backend) = (path.to_string(), backend.to_string());
    tokio::spawn({
        let front = front.clone();
        async move {
            while server.connect().await.is_ok() {
                let next = ServerOptions::new().create(&path).unwrap();
                let connected = std::mem::replace(&mut server, next);
                let (front, backend) = (front.clone(), backend.clone());
                tokio::spawn(async move {
                    let backend = async { ClientOptions::new().open(&backend) };
                    front.serve(connected, backend).await
                });
            }
        }
    });
    front
}

#[tokio::test]
async fn a_first_pipe_connection_never_served_is_dropped_and_the_first_call_answered() {
    let (path, backend) = (pipe_path("silent-first"), pipe_path("silent-first-backend"));
    let proxy = Proxy::start(&backend, "behind").unwrap();
    let front = front_pipe(&path, &backend, 1);
    let options = ConnectOptions::default()
        .with_connect_timeout(Duration::from_secs(20))
        .with_handshake_timeout(Duration::from_millis(300))
        .with_request_timeout(Duration::from_secs(20));
    let client = system::Client::connect_with(&path, &options).await.unwrap();
    assert_eq!(serial(&client).await.unwrap(), "SN-behind");
    assert!(front.accepted() >= 2, "{} connections", front.accepted());
    proxy.kill();
}

#[tokio::test]
async fn a_pipe_server_that_stops_answering_fails_the_call_and_the_next_call_redials() {
    let (path, backend) = (pipe_path("wedge"), pipe_path("wedge-backend"));
    let proxy = Proxy::start(&backend, "behind").unwrap();
    let front = front_pipe(&path, &backend, 0);
    let options = ConnectOptions::default()
        .with_request_timeout(Duration::from_secs(30))
        .with_keepalive_interval(Some(Duration::from_millis(200)))
        .with_keepalive_timeout(Duration::from_secs(1));
    // No retries, so that the failed call is seen.
    let once = options.clone().with_retry(RetryPolicy::none());
    let client = system::Client::connect_with(&path, &once).await.unwrap();
    assert_eq!(serial(&client).await.unwrap(), "SN-behind");

    front.wedge();
    // The unanswered PING ends the call, long before its 30 s deadline.
    let err = serial(&client).await.unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert_eq!(serial(&client).await.unwrap(), "SN-behind");
    assert_eq!(front.accepted(), 2);

    // With the default retries the read is made again on a new connection.
    let retrying = system::Client::connect_with(&path, &options).await.unwrap();
    front.wedge();
    assert_eq!(serial(&retrying).await.unwrap(), "SN-behind");
    assert_eq!(front.accepted(), 4);
    proxy.kill();
}
