//! Shared support of the integration suite: one body of scenario code, run
//! against two backends.
//!
//! A [`Node`] is a simulated Windows node plus one `Arc<dyn <Group>Api>` for
//! each of the 23 group versions. [`Node::mock`] answers every trait with a
//! [`MockHost`] in process; [`Node::server`] starts the reference [`Server`]
//! on Unix sockets in a temporary directory (on Windows on its fixed named
//! pipes, one server per process at a time), over a [`Host`] the test keeps a
//! handle on, and connects one typed `Client` per group version. A scenario
//! is an `async fn(&Node)` that calls the traits and asserts both the
//! responses and the host's state; [`on_both_backends!`] turns a list of
//! scenarios into `mock::<name>` and `server::<name>` tests.
#![allow(dead_code)]

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

pub use csi_proxy_client::host::namespace::{Entry, LinkKind};
use csi_proxy_client::host::smb::GlobalMapping;
use csi_proxy_client::host::storage::{Disk, DiskSpec, Partition, Volume};
use csi_proxy_client::host::system::{ServiceStatus, ServiceTiming};
use csi_proxy_client::host::{Host, HostConfig, ProxyRelease, Snapshot};
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::server::{GroupVersion, Server};
use csi_proxy_client::{Error, disk, filesystem, iscsi, smb, system, volume};
use tempfile::TempDir;
use tonic::Code;

pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;

/// The default kubelet directory, the only working dir of the default node.
pub const KUBELET: &str = r"C:\var\lib\kubelet";

/// Runs each named scenario (an `async fn(&Node)` in scope at the call
/// site) as two tests, `mock::<name>` and `server::<name>`. After the
/// scenario the node's invariants must hold. With `after = path;` first,
/// `path(name, &node)` runs after each scenario as well.
#[macro_export]
macro_rules! on_both_backends {
    (after = $after:path; $($scenario:ident),+ $(,)?) => {
        $crate::on_both_backends!(@backend mock, mock, $after; $($scenario),+);
        $crate::on_both_backends!(@backend server, server, $after; $($scenario),+);
    };
    ($($scenario:ident),+ $(,)?) => {
        $crate::on_both_backends!(after = $crate::scenarios::no_check; $($scenario),+);
    };
    (@backend $module:ident, $ctor:ident, $after:path; $($scenario:ident),+) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test]
                async fn $scenario() {
                    let node = $crate::scenarios::Node::$ctor().await;
                    super::$scenario(&node).await;
                    $after(stringify!($scenario), &node);
                    node.finish().await;
                }
            )+
        }
    };
}

/// The default `after` hook: nothing beyond the invariants.
pub fn no_check(_scenario: &str, _node: &Node) {}

/// Which implementation answers the traits.
pub enum Backend {
    /// [`MockHost`] in process.
    Mock(MockHost),
    /// The reference server on Unix sockets.
    Server {
        server: Server,
        sockets: TempDir,
        _sandbox: TempDir,
        /// On Windows every server binds the same fixed pipe names: one
        /// server at a time ([`crate::support::SERVER_PIPES`]).
        #[cfg(windows)]
        _pipes: tokio::sync::MutexGuard<'static, ()>,
    },
}

macro_rules! apis {
    ($($field:ident: $group:ident :: $version:ident :: $api:ident),+ $(,)?) => {
        /// One trait object per group version.
        pub struct Apis {
            $(
                #[doc = concat!("`", stringify!($group), "/", stringify!($version), "`")]
                pub $field: Arc<dyn $group::$version::$api>,
            )+
        }

        impl Apis {
            /// Every trait answered by `mock`.
            pub fn of_mock(mock: &MockHost) -> Self {
                Self { $($field: Arc::new(mock.clone()),)+ }
            }

            /// One new `Client` connection per group version of `server`.
            pub async fn connect(server: &Server) -> Self {
                Self {
                    $($field: {
                        let address = server
                            .address(stringify!($group), stringify!($version))
                            .expect("every group version is served")
                            .to_string();
                        Arc::new(
                            $group::$version::Client::connect(&address)
                                .await
                                .unwrap_or_else(|e| panic!("connecting {address}: {e}")),
                        )
                    },)+
                }
            }
        }
    };
}

apis! {
    disk_v1alpha1: disk::v1alpha1::DiskApi,
    disk_v1beta1: disk::v1beta1::DiskApi,
    disk_v1beta2: disk::v1beta2::DiskApi,
    disk_v1beta3: disk::v1beta3::DiskApi,
    disk_v1: disk::v1::DiskApi,
    filesystem_v1alpha1: filesystem::v1alpha1::FilesystemApi,
    filesystem_v1beta1: filesystem::v1beta1::FilesystemApi,
    filesystem_v1beta2: filesystem::v1beta2::FilesystemApi,
    filesystem_v1: filesystem::v1::FilesystemApi,
    filesystem_v2alpha1: filesystem::v2alpha1::FilesystemApi,
    iscsi_v1alpha1: iscsi::v1alpha1::IscsiApi,
    iscsi_v1alpha2: iscsi::v1alpha2::IscsiApi,
    smb_v1alpha1: smb::v1alpha1::SmbApi,
    smb_v1beta1: smb::v1beta1::SmbApi,
    smb_v1beta2: smb::v1beta2::SmbApi,
    smb_v1: smb::v1::SmbApi,
    system_v1alpha1: system::v1alpha1::SystemApi,
    volume_v1alpha1: volume::v1alpha1::VolumeApi,
    volume_v1beta1: volume::v1beta1::VolumeApi,
    volume_v1beta2: volume::v1beta2::VolumeApi,
    volume_v1beta3: volume::v1beta3::VolumeApi,
    volume_v1: volume::v1::VolumeApi,
    volume_v2alpha1: volume::v2alpha1::VolumeApi,
}

/// A simulated node and one trait object per group version (through
/// `Deref`: `node.disk_v1.list_disk_locations(..)`).
pub struct Node {
    /// The simulated host, shared with the backend.
    pub host: Host,
    /// What answers the calls.
    pub backend: Backend,
    /// The traits.
    pub apis: Apis,
}

impl std::ops::Deref for Node {
    type Target = Apis;

    fn deref(&self) -> &Apis {
        &self.apis
    }
}

impl Node {
    fn assemble(host: Host, backend: Backend, apis: Apis) -> Self {
        Node {
            host,
            backend,
            apis,
        }
    }

    /// The default node as a [`MockHost`].
    pub async fn mock() -> Node {
        Node::mock_speaking(ProxyRelease::default()).await
    }

    /// The default node as a [`MockHost`] answering in `release`'s words.
    pub async fn mock_speaking(release: ProxyRelease) -> Node {
        let mock = MockHost::builder()
            .proxy_release(release)
            .build()
            .expect("default mock");
        let host = mock.host().clone();
        fast_services(&host);
        let apis = Apis::of_mock(&mock);
        Node::assemble(host, Backend::Mock(mock), apis)
    }

    /// The default node behind the reference server, every group version on
    /// its own socket, one `Client` per group version.
    pub async fn server() -> Node {
        Node::server_speaking(ProxyRelease::default()).await
    }

    /// The default node behind the reference server, answering in
    /// `release`'s words.
    pub async fn server_speaking(release: ProxyRelease) -> Node {
        #[cfg(windows)]
        let pipes = crate::support::SERVER_PIPES.lock().await;
        let sandbox = tempfile::tempdir().expect("sandbox dir");
        let sockets = tempfile::tempdir().expect("socket dir");
        let mut config = HostConfig::new(sandbox.path());
        config.release = release;
        let host = Host::new(config).expect("default host");
        fast_services(&host);
        let server = Server::builder()
            .socket_dir(sockets.path())
            .host(host.clone())
            .start()
            .await
            .expect("server starts");
        let apis = Apis::connect(&server).await;
        let backend = Backend::Server {
            server,
            sockets,
            _sandbox: sandbox,
            #[cfg(windows)]
            _pipes: pipes,
        };
        Node::assemble(host, backend, apis)
    }

    /// `mock` or `server`.
    pub fn backend_name(&self) -> &'static str {
        match self.backend {
            Backend::Mock(_) => "mock",
            Backend::Server { .. } => "server",
        }
    }

    /// The mock, on the mock backend.
    pub fn as_mock(&self) -> Option<&MockHost> {
        match &self.backend {
            Backend::Mock(mock) => Some(mock),
            Backend::Server { .. } => None,
        }
    }

    /// The server, on the server backend.
    pub fn as_server(&self) -> Option<&Server> {
        match &self.backend {
            Backend::Mock(_) => None,
            Backend::Server { server, .. } => Some(server),
        }
    }

    /// The socket of `group/version` (server backend).
    pub fn socket(&self, group: &str, version: &str) -> Option<String> {
        self.as_server()
            .and_then(|s| s.address(group, version))
            .map(ToString::to_string)
    }

    /// Calls the gRPC method `path` on the endpoint of `group/version`,
    /// below the typed API: through the server's socket, or through the
    /// same per-endpoint routes in process for the mock. This reaches
    /// methods an endpoint does not serve.
    pub async fn call_raw<Req, Resp>(
        &self,
        group: &str,
        version: &str,
        path: &'static str,
        request: Req,
    ) -> Result<Resp, tonic::Status>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let path = http::uri::PathAndQuery::from_static(path);
        let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
        let request = tonic::Request::new(request);
        let response = match &self.backend {
            Backend::Mock(mock) => {
                let endpoint = GroupVersion::parse(&format!("{group}/{version}"))
                    .expect("a served group version");
                let mut grpc = tonic::client::Grpc::new(endpoint.routes(mock.service()));
                grpc.ready().await.expect("in-process routes are ready");
                grpc.unary(request, path, codec).await
            }
            Backend::Server { server, .. } => {
                let socket = server
                    .address(group, version)
                    .expect("a served group version")
                    .to_string();
                let channel = unix_channel(socket).await;
                let mut grpc = tonic::client::Grpc::new(channel);
                grpc.ready().await.expect("channel ready");
                grpc.unary(request, path, codec).await
            }
        };
        response.map(tonic::Response::into_inner)
    }

    /// Checks the invariants and stops the server gracefully.
    pub async fn finish(self) {
        assert_invariants(&self.host);
        if let Backend::Server {
            server, sockets, ..
        } = self.backend
        {
            // Drop the clients first so shutdown does not wait on them.
            drop(self.apis);
            server.shutdown().await.expect("clean shutdown");
            let left: Vec<_> = std::fs::read_dir(sockets.path())
                .expect("socket dir")
                .collect();
            assert!(left.is_empty(), "sockets left after shutdown: {left:?}");
        }
    }
}

/// A tonic channel over the Unix socket (on Windows the named pipe) at
/// `path`.
pub async fn unix_channel(path: String) -> tonic::transport::Channel {
    tonic::transport::Endpoint::from_static("http://csi-proxy.invalid")
        .connect_with_connector(tower::service_fn(move |_: http::Uri| {
            let path = path.clone();
            async move {
                #[cfg(unix)]
                let stream = tokio::net::UnixStream::connect(path).await?;
                #[cfg(windows)]
                let stream = loop {
                    const ERROR_PIPE_BUSY: i32 = 231;
                    match tokio::net::windows::named_pipe::ClientOptions::new().open(&path) {
                        Err(e) if e.raw_os_error() == Some(ERROR_PIPE_BUSY) => {
                            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                        }
                        other => break other?,
                    }
                };
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
            }
        }))
        .await
        .expect("connect to the socket")
}

// ---- assertions ----

/// The error of `result`, which must be an RPC status with `code` whose
/// message contains `gist`. Returns the message.
#[track_caller]
pub fn rpc_err<T: Debug>(result: Result<T, Error>, code: Code, gist: &str) -> String {
    let error = match result {
        Ok(value) => panic!("expected {code:?} containing {gist:?}, got Ok({value:?})"),
        Err(e) => e,
    };
    let status = error
        .status()
        .unwrap_or_else(|| panic!("expected an RPC status, got {error:?}"));
    assert_eq!(status.code(), code, "status {status:?}");
    assert!(
        status.message().contains(gist),
        "message {:?} lacks {gist:?}",
        status.message()
    );
    status.message().to_string()
}

/// As [`rpc_err`] with `UNKNOWN`, the code of every proxy failure.
#[track_caller]
pub fn unknown<T: Debug>(result: Result<T, Error>, gist: &str) -> String {
    rpc_err(result, Code::Unknown, gist)
}

/// As [`rpc_err`] for a status from [`Node::call_raw`].
#[track_caller]
pub fn status_err<T: Debug>(result: Result<T, tonic::Status>, code: Code, gist: &str) {
    let status = match result {
        Ok(value) => panic!("expected {code:?}, got Ok({value:?})"),
        Err(s) => s,
    };
    assert_eq!(status.code(), code, "status {status:?}");
    assert!(
        status.message().contains(gist),
        "message {:?} lacks {gist:?}",
        status.message()
    );
}

/// Unwraps a call, naming the failure.
#[track_caller]
pub fn ok<T>(result: Result<T, Error>) -> T {
    result.unwrap_or_else(|e| panic!("call failed: {e}"))
}

#[track_caller]
pub fn assert_invariants(host: &Host) {
    if let Err(violations) = host.check_invariants() {
        panic!("host invariants violated: {violations:#?}");
    }
}

// ---- host state helpers ----

/// Service start/stop loops poll every 5 ms and give up after 5 s instead
/// of upstream's 200 ms / 30 s, to keep the suite fast.
pub fn fast_services(host: &Host) {
    host.lock().system.set_timing(ServiceTiming {
        poll_interval: std::time::Duration::from_millis(5),
        timeout: std::time::Duration::from_secs(5),
    });
}

/// A service's status now, as the host sees it.
pub fn service_status(host: &Host, name: &str) -> ServiceStatus {
    host.lock()
        .system
        .refresh(name, std::time::Instant::now())
        .unwrap_or_else(|| panic!("no service {name}"))
}

/// Forces a service's status behind the proxy's back.
pub fn set_service_status(host: &Host, name: &str, status: ServiceStatus) {
    host.lock()
        .system
        .set_status(name, status)
        .expect("known service");
}

/// The SMB global mapping of `root` (`\\server\share`), if any.
pub fn smb_mapping(host: &Host, root: &str) -> Option<GlobalMapping> {
    host.lock().smb.mapping(root).cloned()
}

/// Every SMB global mapping's root.
pub fn smb_roots(host: &Host) -> Vec<String> {
    host.lock()
        .smb
        .mappings()
        .into_iter()
        .map(|m| m.remote_path.clone())
        .collect()
}

/// A path as [`Snapshot::mount_points`] spells it: drive letter upper case,
/// every component case-folded.
pub fn folded(path: &str) -> String {
    let (drive, rest) = path.split_at(2);
    format!("{}{}", drive.to_uppercase(), rest.to_lowercase())
}

/// The disk `n` of `snapshot`.
#[track_caller]
pub fn disk_of(snapshot: &Snapshot, n: u32) -> &Disk {
    snapshot
        .disk(n)
        .unwrap_or_else(|| panic!("no disk {n} in {snapshot:#?}"))
}

/// The volume `id` of `snapshot`.
#[track_caller]
pub fn volume_of<'a>(snapshot: &'a Snapshot, id: &str) -> &'a Volume {
    snapshot
        .volume(id)
        .unwrap_or_else(|| panic!("no volume {id} in {snapshot:#?}"))
}

/// The partition holding volume `id`.
#[track_caller]
pub fn partition_of<'a>(snapshot: &'a Snapshot, id: &str) -> &'a Partition {
    let v = volume_of(snapshot, id);
    disk_of(snapshot, v.disk)
        .partition(v.partition)
        .unwrap_or_else(|| panic!("no partition for {v:?}"))
}

/// The volume ids mounted at `path` (case-insensitive path compare).
pub fn mounted_at(host: &Host, path: &str) -> Vec<String> {
    let want = folded(path);
    host.snapshot()
        .mount_points
        .into_iter()
        .filter(|m| m.path.trim_end_matches('\\') == want.trim_end_matches('\\'))
        .map(|m| m.volume_id)
        .collect()
}

/// The id of the volume with drive letter C:.
pub fn c_volume(host: &Host) -> String {
    let s = host.snapshot();
    s.disks
        .iter()
        .flat_map(|d| d.partitions.iter())
        .find(|p| p.drive_letter == Some('C'))
        .and_then(|p| p.volume.clone())
        .expect("the default node has C:")
}

/// What is at `path` (no final follow), `None` if missing.
pub fn entry(host: &Host, path: &str) -> Option<Entry> {
    host.entry(path).expect("path parses")
}

/// Whether `path` is a link of `kind` whose stored target is `target`.
pub fn is_link(host: &Host, path: &str, kind: LinkKind, target: &str) -> bool {
    matches!(entry(host, path), Some(Entry::Link(l)) if l.kind == kind && l.target == target)
}

/// Attaches a blank RAW disk of `size` bytes; returns its number.
pub fn attach_blank_disk(host: &Host, size: u64) -> u32 {
    host.attach_disk(DiskSpec::new(size))
        .expect("attach a disk")
        .0
}

/// Size of the one basic partition PartitionDisk makes on a blank GPT disk
/// of `disk_size` bytes (512-byte sectors): from 16 MiB to the backup GPT.
pub fn gpt_basic_size(disk_size: u64) -> u64 {
    disk_size - 16 * MIB - 16896
}

/// A staging path under the kubelet plugins dir, unique per `tag`.
pub fn staging(tag: &str) -> String {
    format!(r"{KUBELET}\plugins\kubernetes.io\csi\disk.csi.azure.com\{tag}\globalmount")
}

/// A publish path under the kubelet pods dir, unique per `tag`.
pub fn publish(tag: &str) -> String {
    format!(r"{KUBELET}\pods\pod-{tag}\volumes\kubernetes.io~csi\pvc-{tag}\mount")
}

/// The parent directory of a Windows path.
pub fn parent(path: &str) -> &str {
    path.rsplit_once('\\').map(|(p, _)| p).unwrap_or(path)
}

/// Attaches a 1 GiB disk and prepares it through the v1 APIs (partition,
/// format NTFS). Returns the disk number and the volume id.
pub async fn formatted_disk(node: &Node) -> (u32, String) {
    let n = attach_blank_disk(&node.host, GIB);
    ok(node
        .disk_v1
        .partition_disk(disk::v1::PartitionDiskRequest { disk_number: n })
        .await);
    let id = only_volume(node, n).await;
    ok(node
        .volume_v1
        .format_volume(volume::v1::FormatVolumeRequest {
            volume_id: id.clone(),
        })
        .await);
    (n, id)
}

/// The single volume of disk `n` (v1 ListVolumesOnDisk).
pub async fn only_volume(node: &Node, n: u32) -> String {
    let listed = ok(node
        .volume_v1
        .list_volumes_on_disk(volume::v1::ListVolumesOnDiskRequest {
            disk_number: n,
            partition_number: 0,
        })
        .await);
    assert_eq!(listed.volume_ids.len(), 1, "{listed:?}");
    listed.volume_ids[0].clone()
}

/// Whether a host path exists in the sandbox (for leak checks).
pub fn sandbox_has(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}
