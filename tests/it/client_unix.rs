//! Typed clients against a minimal in-test tonic server on a Unix socket:
//! one RPC of each group, the error paths of connecting and calling.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use csi_proxy_client::{
    ConnectOptions, Error, RetryPolicy, disk, filesystem, iscsi, smb, system, volume,
};
use tokio::net::UnixListener;
use tokio::sync::oneshot;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::{Code, Request, Response, Status};

/// Implements one RPC per group with a recognisable answer; every other RPC
/// answers UNIMPLEMENTED.
#[derive(Default, Clone)]
struct Fake {
    calls: Arc<AtomicUsize>,
    /// The `grpc-timeout` header of each GetDiskStats call, as received.
    deadlines: Arc<std::sync::Mutex<Vec<Option<String>>>>,
}

#[tonic::async_trait]
impl disk::v1::disk_server::Disk for Fake {
    async fn get_disk_stats(
        &self,
        request: Request<disk::v1::GetDiskStatsRequest>,
    ) -> Result<Response<disk::v1::GetDiskStatsResponse>, Status> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let deadline = request.metadata().get("grpc-timeout");
        let deadline = deadline.map(|value| value.to_str().unwrap().to_string());
        self.deadlines.lock().unwrap().push(deadline);
        match request.into_inner().disk_number {
            7 => Err(Status::unknown("could not get disk 7: not found")),
            99 => {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok(Response::new(disk::v1::GetDiskStatsResponse {
                    total_bytes: 0,
                }))
            }
            n => Ok(Response::new(disk::v1::GetDiskStatsResponse {
                total_bytes: 1_073_741_824 * i64::from(n),
            })),
        }
    }

    unserved! {
        get_disk_state(disk::v1::GetDiskStateRequest) -> disk::v1::GetDiskStateResponse;
        list_disk_i_ds(disk::v1::ListDiskIDsRequest) -> disk::v1::ListDiskIDsResponse;
        list_disk_locations(disk::v1::ListDiskLocationsRequest) -> disk::v1::ListDiskLocationsResponse;
        partition_disk(disk::v1::PartitionDiskRequest) -> disk::v1::PartitionDiskResponse;
        rescan(disk::v1::RescanRequest) -> disk::v1::RescanResponse;
        set_disk_state(disk::v1::SetDiskStateRequest) -> disk::v1::SetDiskStateResponse;
    }
}

#[tonic::async_trait]
impl filesystem::v1::filesystem_server::Filesystem for Fake {
    async fn path_exists(
        &self,
        request: Request<filesystem::v1::PathExistsRequest>,
    ) -> Result<Response<filesystem::v1::PathExistsResponse>, Status> {
        let exists = request.into_inner().path == r"C:\var\lib\kubelet";
        Ok(Response::new(filesystem::v1::PathExistsResponse { exists }))
    }

    unserved! {
        create_symlink(filesystem::v1::CreateSymlinkRequest) -> filesystem::v1::CreateSymlinkResponse;
        is_symlink(filesystem::v1::IsSymlinkRequest) -> filesystem::v1::IsSymlinkResponse;
        mkdir(filesystem::v1::MkdirRequest) -> filesystem::v1::MkdirResponse;
        rmdir(filesystem::v1::RmdirRequest) -> filesystem::v1::RmdirResponse;
    }
}

#[tonic::async_trait]
impl iscsi::v1alpha2::iscsi_server::Iscsi for Fake {
    async fn list_target_portals(
        &self,
        _: Request<iscsi::v1alpha2::ListTargetPortalsRequest>,
    ) -> Result<Response<iscsi::v1alpha2::ListTargetPortalsResponse>, Status> {
        let portal = iscsi::v1alpha2::TargetPortal {
            target_address: "10.0.0.20".into(),
            target_port: 3260,
        };
        Ok(Response::new(iscsi::v1alpha2::ListTargetPortalsResponse {
            target_portals: vec![portal],
        }))
    }

    unserved! {
        add_target_portal(iscsi::v1alpha2::AddTargetPortalRequest) -> iscsi::v1alpha2::AddTargetPortalResponse;
        connect_target(iscsi::v1alpha2::ConnectTargetRequest) -> iscsi::v1alpha2::ConnectTargetResponse;
        disconnect_target(iscsi::v1alpha2::DisconnectTargetRequest) -> iscsi::v1alpha2::DisconnectTargetResponse;
        discover_target_portal(iscsi::v1alpha2::DiscoverTargetPortalRequest) -> iscsi::v1alpha2::DiscoverTargetPortalResponse;
        get_target_disks(iscsi::v1alpha2::GetTargetDisksRequest) -> iscsi::v1alpha2::GetTargetDisksResponse;
        remove_target_portal(iscsi::v1alpha2::RemoveTargetPortalRequest) -> iscsi::v1alpha2::RemoveTargetPortalResponse;
        set_mutual_chap_secret(iscsi::v1alpha2::SetMutualChapSecretRequest) -> iscsi::v1alpha2::SetMutualChapSecretResponse;
    }
}

#[tonic::async_trait]
impl smb::v1::smb_server::Smb for Fake {
    async fn remove_smb_global_mapping(
        &self,
        request: Request<smb::v1::RemoveSmbGlobalMappingRequest>,
    ) -> Result<Response<smb::v1::RemoveSmbGlobalMappingResponse>, Status> {
        Err(Status::unknown(format!(
            "no mapping of {}",
            request.into_inner().remote_path
        )))
    }

    unserved! {
        new_smb_global_mapping(smb::v1::NewSmbGlobalMappingRequest) -> smb::v1::NewSmbGlobalMappingResponse;
    }
}

#[tonic::async_trait]
impl system::v1alpha1::system_server::System for Fake {
    async fn get_bios_serial_number(
        &self,
        _: Request<system::v1alpha1::GetBiosSerialNumberRequest>,
    ) -> Result<Response<system::v1alpha1::GetBiosSerialNumberResponse>, Status> {
        Ok(Response::new(
            system::v1alpha1::GetBiosSerialNumberResponse {
                serial_number: "VMware-42 1a".into(),
            },
        ))
    }

    unserved! {
        get_service(system::v1alpha1::GetServiceRequest) -> system::v1alpha1::GetServiceResponse;
        start_service(system::v1alpha1::StartServiceRequest) -> system::v1alpha1::StartServiceResponse;
        stop_service(system::v1alpha1::StopServiceRequest) -> system::v1alpha1::StopServiceResponse;
    }
}

#[tonic::async_trait]
impl volume::v2alpha1::volume_server::Volume for Fake {
    async fn get_closest_volume_id_from_target_path(
        &self,
        request: Request<volume::v2alpha1::GetClosestVolumeIdFromTargetPathRequest>,
    ) -> Result<Response<volume::v2alpha1::GetClosestVolumeIdFromTargetPathResponse>, Status> {
        let path = request.into_inner().target_path;
        let volume_id = format!(
            r"\\?\Volume{{{:08x}-0000-0000-0000-000000000000}}\",
            path.len()
        );
        Ok(Response::new(
            volume::v2alpha1::GetClosestVolumeIdFromTargetPathResponse { volume_id },
        ))
    }

    /// An ID of [`LARGE`] bytes: a response larger than the client's
    /// HTTP/2 stream window.
    async fn get_volume_id_from_target_path(
        &self,
        _: Request<volume::v2alpha1::GetVolumeIdFromTargetPathRequest>,
    ) -> Result<Response<volume::v2alpha1::GetVolumeIdFromTargetPathResponse>, Status> {
        Ok(Response::new(
            volume::v2alpha1::GetVolumeIdFromTargetPathResponse {
                volume_id: "v".repeat(LARGE),
            },
        ))
    }

    unserved! {
        format_volume(volume::v2alpha1::FormatVolumeRequest) -> volume::v2alpha1::FormatVolumeResponse;
        get_disk_number_from_volume_id(volume::v2alpha1::GetDiskNumberFromVolumeIdRequest) -> volume::v2alpha1::GetDiskNumberFromVolumeIdResponse;
        get_volume_stats(volume::v2alpha1::GetVolumeStatsRequest) -> volume::v2alpha1::GetVolumeStatsResponse;
        is_volume_formatted(volume::v2alpha1::IsVolumeFormattedRequest) -> volume::v2alpha1::IsVolumeFormattedResponse;
        list_volumes_on_disk(volume::v2alpha1::ListVolumesOnDiskRequest) -> volume::v2alpha1::ListVolumesOnDiskResponse;
        mount_volume(volume::v2alpha1::MountVolumeRequest) -> volume::v2alpha1::MountVolumeResponse;
        resize_volume(volume::v2alpha1::ResizeVolumeRequest) -> volume::v2alpha1::ResizeVolumeResponse;
        unmount_volume(volume::v2alpha1::UnmountVolumeRequest) -> volume::v2alpha1::UnmountVolumeResponse;
        write_volume_cache(volume::v2alpha1::WriteVolumeCacheRequest) -> volume::v2alpha1::WriteVolumeCacheResponse;
    }
}

/// A server on `path` with every fake service; stops when the sender is dropped or fired.
async fn serve(path: &Path, fake: Fake) -> oneshot::Sender<()> {
    let listener = UnixListener::bind(path).unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let router = tonic::transport::Server::builder()
        .add_service(disk::v1::disk_server::DiskServer::new(fake.clone()))
        .add_service(filesystem::v1::filesystem_server::FilesystemServer::new(
            fake.clone(),
        ))
        .add_service(iscsi::v1alpha2::iscsi_server::IscsiServer::new(
            fake.clone(),
        ))
        .add_service(smb::v1::smb_server::SmbServer::new(fake.clone()))
        .add_service(system::v1alpha1::system_server::SystemServer::new(
            fake.clone(),
        ))
        .add_service(volume::v2alpha1::volume_server::VolumeServer::new(fake));
    tokio::spawn(
        router.serve_with_incoming_shutdown(UnixListenerStream::new(listener), async {
            let _ = stopped.await;
        }),
    );
    stop
}

fn socket(dir: &tempfile::TempDir) -> (PathBuf, String) {
    let path = dir.path().join("csi-proxy-test.sock");
    let address = format!("unix://{}", path.display());
    (path, address)
}

#[tokio::test]
async fn one_rpc_of_each_group_round_trips() {
    use disk::v1::DiskApi;
    use filesystem::v1::FilesystemApi;
    use iscsi::v1alpha2::IscsiApi;
    use system::v1alpha1::SystemApi;
    use volume::v2alpha1::VolumeApi;

    let dir = tempfile::tempdir().unwrap();
    let (path, address) = socket(&dir);
    let _server = serve(&path, Fake::default()).await;

    let disk = disk::v1::Client::connect(&address).await.unwrap();
    let stats = disk
        .get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: 2 })
        .await
        .unwrap();
    assert_eq!(stats.total_bytes, 2_147_483_648);

    let fs = filesystem::v1::Client::connect(&address).await.unwrap();
    let yes = fs
        .path_exists(filesystem::v1::PathExistsRequest {
            path: r"C:\var\lib\kubelet".into(),
        })
        .await
        .unwrap();
    let no = fs
        .path_exists(filesystem::v1::PathExistsRequest {
            path: r"C:\nowhere".into(),
        })
        .await
        .unwrap();
    assert!(yes.exists && !no.exists);

    let iscsi = iscsi::v1alpha2::Client::connect(&address).await.unwrap();
    let portals = iscsi
        .list_target_portals(iscsi::v1alpha2::ListTargetPortalsRequest {})
        .await
        .unwrap();
    assert_eq!(portals.target_portals.len(), 1);
    assert_eq!(
        (
            portals.target_portals[0].target_address.as_str(),
            portals.target_portals[0].target_port
        ),
        ("10.0.0.20", 3260)
    );

    let system = system::v1alpha1::Client::connect(&address).await.unwrap();
    let serial = system
        .get_bios_serial_number(system::v1alpha1::GetBiosSerialNumberRequest {})
        .await
        .unwrap();
    assert_eq!(serial.serial_number, "VMware-42 1a");

    let volume = volume::v2alpha1::Client::connect(&address).await.unwrap();
    let request = volume::v2alpha1::GetClosestVolumeIdFromTargetPathRequest {
        target_path: "C:\\abc".into(),
    };
    let found = volume
        .get_closest_volume_id_from_target_path(request)
        .await
        .unwrap();
    assert_eq!(
        found.volume_id,
        r"\\?\Volume{00000006-0000-0000-0000-000000000000}\"
    );
}

/// 3 MiB: over the client's 2 MiB stream window, two of them over its
/// 5 MiB connection window, under the 4 MiB message limit.
const LARGE: usize = 3 << 20;

#[tokio::test]
async fn responses_larger_than_the_flow_control_windows_are_read_whole() {
    use volume::v2alpha1::VolumeApi;
    let dir = tempfile::tempdir().unwrap();
    let (path, address) = socket(&dir);
    let _server = serve(&path, Fake::default()).await;
    // A client that stopped giving back window would stall, not fail.
    let options = ConnectOptions::default().with_request_timeout(Duration::from_secs(20));
    let volume = volume::v2alpha1::Client::connect_with(&address, &options)
        .await
        .unwrap();
    for _ in 0..3 {
        let request = volume::v2alpha1::GetVolumeIdFromTargetPathRequest {
            target_path: "C:\\big".into(),
        };
        let found = volume
            .get_volume_id_from_target_path(request)
            .await
            .unwrap();
        assert_eq!(found.volume_id.len(), LARGE);
    }
}

#[tokio::test]
async fn an_error_status_keeps_code_message_method_and_endpoint() {
    use disk::v1::DiskApi;
    use smb::v1::SmbApi;

    let dir = tempfile::tempdir().unwrap();
    let (path, address) = socket(&dir);
    let _server = serve(&path, Fake::default()).await;

    let smb = smb::v1::Client::connect(&address).await.unwrap();
    let request = smb::v1::RemoveSmbGlobalMappingRequest {
        remote_path: r"\\srv\share".into(),
    };
    let err = smb.remove_smb_global_mapping(request).await.unwrap_err();
    assert_eq!(err.code(), Some(Code::Unknown));
    assert_eq!(
        err.status().unwrap().message(),
        r"no mapping of \\srv\share"
    );
    let Error::Rpc(rpc) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(rpc.method, "/v1.Smb/RemoveSmbGlobalMapping");
    assert_eq!(rpc.endpoint, path.display().to_string());
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );

    let disk = disk::v1::Client::connect(&address).await.unwrap();
    let err = disk
        .get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: 7 })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(Code::Unknown));
    assert_eq!(
        err.status().unwrap().message(),
        "could not get disk 7: not found"
    );
}

#[tokio::test]
async fn an_rpc_the_server_lacks_is_unimplemented() {
    use disk::v1::DiskApi;
    use disk::v1beta2::DiskApi as _;

    let dir = tempfile::tempdir().unwrap();
    let (path, address) = socket(&dir);
    let _server = serve(&path, Fake::default()).await;

    // Served service, method left to the default.
    let v1 = disk::v1::Client::connect(&address).await.unwrap();
    let err = v1.rescan(disk::v1::RescanRequest {}).await.unwrap_err();
    assert_eq!(err.code(), Some(Code::Unimplemented));
    // A version whose service is not served at all.
    let v1beta2 = disk::v1beta2::Client::connect(&address).await.unwrap();
    let err = v1beta2
        .rescan(disk::v1beta2::RescanRequest {})
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(Code::Unimplemented));
}

#[tokio::test]
async fn a_missing_socket_fails_at_connect_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let (path, address) = socket(&dir);
    let err = disk::v1::Client::connect(&address).await.unwrap_err();
    let Error::Connect { endpoint, source } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(endpoint, &path.display().to_string());
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[tokio::test]
async fn a_bad_address_fails_before_any_io() {
    let err = disk::v1::Client::connect("tcp://127.0.0.1:1")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidAddress { input, .. } if input == "tcp://127.0.0.1:1"),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_request_timeout_ends_a_slow_call() {
    use disk::v1::DiskApi;

    let dir = tempfile::tempdir().unwrap();
    let (path, address) = socket(&dir);
    let fake = Fake::default();
    let _server = serve(&path, fake.clone()).await;
    let options = ConnectOptions::default().with_request_timeout(Duration::from_millis(100));
    let disk = disk::v1::Client::connect_with(&address, &options)
        .await
        .unwrap();
    let err = disk
        .get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: 99 })
        .await
        .unwrap_err();
    let Error::Timeout { method, after, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(method, "/v1.Disk/GetDiskStats");
    assert_eq!(*after, Duration::from_millis(100));
    // The connection is still good for the next call.
    assert_eq!(
        disk.get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: 1 })
            .await
            .unwrap()
            .total_bytes,
        1 << 30
    );
    // The server was told the deadline, so it can stop working on the
    // call when the client stops waiting (tonic's server does).
    assert_eq!(
        *fake.deadlines.lock().unwrap(),
        [Some("100000u".to_string()), Some("100000u".to_string())]
    );
}

#[tokio::test]
async fn without_a_request_timeout_no_deadline_is_sent() {
    use disk::v1::DiskApi;

    let dir = tempfile::tempdir().unwrap();
    let (path, address) = socket(&dir);
    let fake = Fake::default();
    let _server = serve(&path, fake.clone()).await;
    let disk = disk::v1::Client::connect(&address).await.unwrap();
    disk.get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: 1 })
        .await
        .unwrap();
    assert_eq!(*fake.deadlines.lock().unwrap(), [None]);
}

#[tokio::test]
async fn one_client_serves_many_tasks_on_one_connection() {
    use disk::v1::DiskApi;

    let dir = tempfile::tempdir().unwrap();
    let (path, address) = socket(&dir);
    let fake = Fake::default();
    let _server = serve(&path, fake.clone()).await;
    let client = disk::v1::Client::connect(&address).await.unwrap();
    let tasks: Vec<_> = (0..32u32)
        .map(|n| {
            let client = client.clone();
            tokio::spawn(async move {
                for _ in 0..10 {
                    let r = client
                        .get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: n % 5 })
                        .await
                        .unwrap();
                    assert_eq!(r.total_bytes, (1i64 << 30) * i64::from(n % 5));
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(fake.calls.load(Ordering::SeqCst), 320);
}

#[tokio::test]
async fn a_stopped_server_gives_a_transport_error_and_a_restarted_one_is_reachable() {
    use disk::v1::DiskApi;

    let dir = tempfile::tempdir().unwrap();
    let (path, address) = socket(&dir);
    let stop = serve(&path, Fake::default()).await;
    let client = disk::v1::Client::connect(&address).await.unwrap();
    client
        .get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: 1 })
        .await
        .unwrap();

    stop.send(()).unwrap();
    std::fs::remove_file(&path).unwrap();
    // Give the server a moment to close the connection.
    let mut last = None;
    for _ in 0..50 {
        match client
            .get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: 1 })
            .await
        {
            Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => {
                last = Some(e);
                break;
            }
        }
    }
    let err = last.expect("calls kept succeeding after the server stopped");
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );

    let _again = serve(&path, Fake::default()).await;
    let fresh = disk::v1::Client::connect(&address).await.unwrap();
    assert_eq!(
        fresh
            .get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: 3 })
            .await
            .unwrap()
            .total_bytes,
        3 << 30
    );
}

// ------------------------------------------------------------ liveness
//
// Real time with short timeouts, not paused time: tokio's paused clock
// jumps to the next timer whenever the runtime idles, even with socket I/O
// in flight, which would fire the handshake timeout of a server that did
// answer. The assertions hold however slow the machine is.

use crate::support::front::Front;

/// The fake server behind a [`Front`] on a socket of `dir`: the front, the
/// server's stop handle, the front's address.
async fn fronted(dir: &tempfile::TempDir, silent: usize) -> (Front, oneshot::Sender<()>, String) {
    let backend = dir.path().join("backend.sock");
    let server = serve(&backend, Fake::default()).await;
    let path = dir.path().join("front.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let front = Front::new(silent);
    tokio::spawn({
        let front = front.clone();
        async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (front, backend) = (front.clone(), backend.clone());
                tokio::spawn(async move {
                    front
                        .serve(stream, tokio::net::UnixStream::connect(backend))
                        .await
                });
            }
        }
    });
    (front, server, format!("unix://{}", path.display()))
}

async fn stats(disk: &disk::v1::Client, number: u32) -> Result<i64, Error> {
    use disk::v1::DiskApi;
    disk.get_disk_stats(disk::v1::GetDiskStatsRequest {
        disk_number: number,
    })
    .await
    .map(|response| response.total_bytes)
}

#[tokio::test]
async fn a_first_connection_never_served_is_dropped_and_the_first_call_answered() {
    let dir = tempfile::tempdir().unwrap();
    let (front, _server, address) = fronted(&dir, 1).await;
    let options = ConnectOptions::default()
        .with_connect_timeout(Duration::from_secs(20))
        .with_handshake_timeout(Duration::from_millis(200))
        .with_request_timeout(Duration::from_secs(20));
    let disk = disk::v1::Client::connect_with(&address, &options)
        .await
        .unwrap();
    assert_eq!(stats(&disk, 3).await.unwrap(), 3 << 30);
    assert!(front.accepted() >= 2, "{} connections", front.accepted());
}

#[tokio::test]
async fn a_server_that_never_speaks_fails_the_connect_naming_the_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (front, _server, address) = fronted(&dir, usize::MAX).await;
    let options = ConnectOptions::default()
        .with_connect_timeout(Duration::from_millis(700))
        .with_handshake_timeout(Duration::from_millis(100));
    let err = disk::v1::Client::connect_with(&address, &options)
        .await
        .unwrap_err();
    let Error::Connect { endpoint, source } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(endpoint, &address["unix://".len()..]);
    assert_eq!(source.kind(), std::io::ErrorKind::TimedOut, "{err}");
    assert!(source.to_string().contains("SETTINGS"), "{source}");
    // Dropped and dialed again within the budget.
    assert!(front.accepted() >= 2, "{} connections", front.accepted());
}

#[test]
fn connect_options_clamp_durations_into_their_range() {
    use csi_proxy_client::{MAX_DURATION, MIN_PERIOD};
    let zero = ConnectOptions::default()
        .with_handshake_timeout(Duration::ZERO)
        .with_keepalive_interval(Some(Duration::ZERO))
        .with_keepalive_timeout(Duration::ZERO);
    assert_eq!(zero.handshake_timeout(), MIN_PERIOD);
    assert_eq!(zero.keepalive_interval(), Some(MIN_PERIOD));
    assert_eq!(zero.keepalive_timeout(), MIN_PERIOD);
    let huge = ConnectOptions::default()
        .with_connect_timeout(Duration::MAX)
        .with_handshake_timeout(Duration::MAX)
        .with_request_timeout(Duration::MAX)
        .with_keepalive_interval(Some(Duration::MAX))
        .with_keepalive_timeout(Duration::MAX)
        .with_retry(
            RetryPolicy::default()
                .with_initial_backoff(Duration::MAX)
                .with_max_backoff(Duration::MAX),
        );
    assert_eq!(huge.connect_timeout(), MAX_DURATION);
    assert_eq!(huge.handshake_timeout(), MAX_DURATION);
    assert_eq!(huge.request_timeout(), Some(MAX_DURATION));
    assert_eq!(huge.keepalive_interval(), Some(MAX_DURATION));
    assert_eq!(huge.keepalive_timeout(), MAX_DURATION);
    assert_eq!(huge.retry().initial_backoff(), MAX_DURATION);
    assert_eq!(huge.retry().max_backoff(), MAX_DURATION);
}

/// Zero and the longest durations where each is worst: calls are answered,
/// nothing panics or dials in a loop.
#[tokio::test]
async fn calls_go_through_with_zero_and_overflowing_durations() {
    let dir = tempfile::tempdir().unwrap();
    let (_front, _server, address) = fronted(&dir, 0).await;
    let options = ConnectOptions::default()
        .with_connect_timeout(Duration::MAX)
        .with_handshake_timeout(Duration::ZERO)
        .with_request_timeout(Duration::MAX)
        .with_keepalive_interval(Some(Duration::ZERO))
        .with_keepalive_while_idle(true);
    let calls = async {
        let disk = disk::v1::Client::connect_with(&address, &options)
            .await
            .unwrap();
        for number in 1..=3 {
            assert_eq!(stats(&disk, number).await.unwrap(), i64::from(number) << 30);
        }
    };
    tokio::time::timeout(Duration::from_secs(60), calls)
        .await
        .expect("the calls are answered");
}

/// Keepalive PINGs after 200 ms of silence, 1 s to answer them.
fn pinging() -> ConnectOptions {
    ConnectOptions::default()
        .with_request_timeout(Duration::from_secs(30))
        .with_keepalive_interval(Some(Duration::from_millis(200)))
        .with_keepalive_timeout(Duration::from_secs(1))
}

#[tokio::test]
async fn a_server_that_stops_answering_fails_the_call_and_the_next_call_redials() {
    let dir = tempfile::tempdir().unwrap();
    let (front, _server, address) = fronted(&dir, 0).await;
    // No retries, so that the failed call is seen.
    let options = pinging().with_retry(RetryPolicy::none());
    let disk = disk::v1::Client::connect_with(&address, &options)
        .await
        .unwrap();
    assert_eq!(stats(&disk, 1).await.unwrap(), 1 << 30);

    front.wedge();
    // The unanswered PING ends the call, long before its 30 s deadline.
    let err = stats(&disk, 2).await.unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    // The next call dials again.
    assert_eq!(stats(&disk, 2).await.unwrap(), 2 << 30);
    assert_eq!(front.accepted(), 2);
}

#[tokio::test]
async fn a_read_on_a_server_that_stops_answering_is_retried_on_a_new_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (front, _server, address) = fronted(&dir, 0).await;
    let disk = disk::v1::Client::connect_with(&address, &pinging())
        .await
        .unwrap();
    assert_eq!(stats(&disk, 1).await.unwrap(), 1 << 30);

    front.wedge();
    // GetDiskStats only reads: the attempt the unanswered PING ended is
    // made again on a new connection (the default retry policy).
    assert_eq!(stats(&disk, 2).await.unwrap(), 2 << 30);
    assert_eq!(front.accepted(), 2);
}

#[tokio::test]
async fn with_idle_pings_a_server_gone_silent_between_calls_is_replaced_before_the_next_call() {
    let dir = tempfile::tempdir().unwrap();
    let (front, _server, address) = fronted(&dir, 0).await;
    let options = pinging().with_keepalive_while_idle(true);
    let disk = disk::v1::Client::connect_with(&address, &options)
        .await
        .unwrap();
    assert_eq!(stats(&disk, 1).await.unwrap(), 1 << 30);

    front.wedge();
    // Detection takes 1.2 s (a PING after 200 ms, 1 s to answer); wait for
    // several times that, in case the machine is slow.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(stats(&disk, 4).await.unwrap(), 4 << 30);
    assert_eq!(front.accepted(), 2);
}

// ------------------------------------------------------------ spans

use crate::support::spans;

#[tokio::test]
async fn each_call_is_a_span_with_the_rpc_attributes_and_its_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let (path, address) = socket(&dir);
    let _server = serve(&path, Fake::default()).await;
    let disk = disk::v1::Client::connect(&address).await.unwrap();

    let (spans, _guard) = spans::Spans::capture();
    let outer = tracing::info_span!("driver");
    use tracing::Instrument;
    async {
        stats(&disk, 1).await.unwrap();
        stats(&disk, 7).await.unwrap_err();
    }
    .instrument(outer)
    .await;

    let all = spans.all();
    let calls: Vec<_> = all.iter().filter(|span| span.name == "rpc").collect();
    assert_eq!(calls.len(), 2, "{all:#?}");
    for (call, code) in calls.iter().zip(["0", "2"]) {
        assert_eq!(call.field("rpc.system"), Some("grpc"));
        assert_eq!(call.field("rpc.service"), Some("v1.Disk"));
        assert_eq!(call.field("rpc.method"), Some("GetDiskStats"));
        assert_eq!(call.field("otel.name"), Some("v1.Disk/GetDiskStats"));
        assert_eq!(call.field("otel.kind"), Some("client"));
        assert_eq!(call.field("endpoint"), Some(&*path.display().to_string()));
        assert_eq!(call.field("rpc.grpc.status_code"), Some(code), "{call:?}");
        let micros: u64 = call.field("duration_us").unwrap().parse().unwrap();
        assert!(micros > 0, "{call:?}");
        // The caller's span is the parent.
        assert_eq!(all[call.parent.unwrap()].name, "driver");
    }
}
