//! [`MockHost`]: a simulated Windows node in process, for a driver's unit tests.
//!
//! `MockHost` holds one in-process [`Connection`] per group version, each
//! backed by the reference server's own routes
//! ([`GroupVersion::routes`](crate::GroupVersion::routes)) over the same
//! simulated host, with no socket and no server process. Its `<Group>Api`
//! implementations are the client's: the same call over that connection, so
//! requests and answers are encoded and decoded as on the wire, and a driver
//! that passes against `MockHost` meets the same answers, errors included,
//! from the reference server. Clones share one node.
//!
//! In front of the routes sits the mock's layer: it records each call (the
//! call log) and applies the injected faults, matched on the method path,
//! and, like the server, gives up on a call whose `grpc-timeout` has passed.
//! A call with host time (an injected latency or a latency profile's) is
//! done at the host once that time has passed, whether or not its caller
//! still waits: as at the real proxy, work does not stop with its caller.
//!
//! ```
//! use csi_proxy_client::disk::v1::{self as disk, DiskApi};
//! use csi_proxy_client::mock::MockHost;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), csi_proxy_client::Error> {
//! let node = MockHost::new();
//! let api: &dyn DiskApi = &node;
//! let disks = api.list_disk_locations(disk::ListDiskLocationsRequest {}).await?;
//! assert!(disks.disk_locations.len() >= 3);
//! assert_eq!(node.calls()[0].rpc.name, "ListDiskLocations");
//! # Ok(()) }
//! ```
//!
//! # A worked example
//!
//! The driver function under test finds the disk on a LUN, partitions it,
//! formats its volume if needed and mounts it at the staging path; the
//! tests check the happy path, that a retry after a partial failure is
//! idempotent, and that an injected failure reaches the caller as the same
//! error the proxy would send.
//!
//! ```
//! use csi_proxy_client::{Error, disk::v1 as disk, filesystem::v1 as fs, volume::v1 as volume};
//! use csi_proxy_client::mock::MockHost;
//!
//! const STAGING: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv\globalmount";
//!
//! async fn stage(
//!     d: &dyn disk::DiskApi,
//!     v: &dyn volume::VolumeApi,
//!     f: &dyn fs::FilesystemApi,
//!     lun: &str,
//! ) -> Result<Option<String>, Error> {
//!     let disks = d.list_disk_locations(disk::ListDiskLocationsRequest {}).await?;
//!     let Some((&n, _)) = disks.disk_locations.iter().find(|(_, l)| l.lunid == lun) else {
//!         return Ok(None);
//!     };
//!     d.partition_disk(disk::PartitionDiskRequest { disk_number: n }).await?;
//!     let request = volume::ListVolumesOnDiskRequest { disk_number: n, partition_number: 0 };
//!     let id = v.list_volumes_on_disk(request).await?.volume_ids.remove(0);
//!     let formatted = v.is_volume_formatted(volume::IsVolumeFormattedRequest { volume_id: id.clone() }).await?;
//!     if !formatted.formatted {
//!         v.format_volume(volume::FormatVolumeRequest { volume_id: id.clone() }).await?;
//!     }
//!     f.mkdir(fs::MkdirRequest { path: STAGING.into() }).await?;
//!     let request = volume::MountVolumeRequest { volume_id: id.clone(), target_path: STAGING.into() };
//!     v.mount_volume(request).await?;
//!     Ok(Some(id))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! // Happy path: the volume ends up mounted at the staging path.
//! let node = MockHost::new();
//! let id = stage(&node, &node, &node, "1").await.unwrap().unwrap();
//! assert!(node.host().snapshot().mount_points.iter().any(|m| m.volume_id == id));
//!
//! // A failure after partial progress: the retry neither reformats nor fails.
//! let node = MockHost::new();
//! node.fail_next("MountVolume", tonic::Code::Unknown, "The device is not ready.");
//! assert!(stage(&node, &node, &node, "1").await.is_err());
//! stage(&node, &node, &node, "1").await.unwrap();
//! assert_eq!(node.calls_of("FormatVolume").len(), 1);
//!
//! // An injected failure surfaces as the status the proxy would send.
//! let node = MockHost::new();
//! node.fail_next("disk/v1/PartitionDisk", tonic::Code::Unavailable, "try again");
//! let err = stage(&node, &node, &node, "2").await.unwrap_err();
//! assert_eq!(err.code(), Some(tonic::Code::Unavailable));
//! assert!(node.calls_of("ListVolumesOnDisk").is_empty());
//! # }
//! ```
//!
//! Beyond the traits it offers what a test needs:
//! - the node's state: [`MockHost::host`] (snapshots, files, test hooks);
//! - the call log: [`MockHost::calls`], [`MockHost::calls_of`],
//!   [`MockHost::assert_called_in_order`];
//! - faults: [`MockHost::fail_next`], [`MockHost::fail_nth`],
//!   [`MockHost::add_latency`], [`MockHost::remove_disk`]; the real proxy's
//!   host times with [`MockHostBuilder::latency_profile`]. A fault surfaces
//!   through the trait exactly as the same status from the proxy would:
//!   [`Error::Rpc`] with the code and message given.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use prost::bytes::{Buf, Bytes};
use tonic::body::Body;

#[cfg(doc)]
use crate::Error;
use crate::GroupVersion;
use crate::host::{
    Host, HostConfig, HostError, LatencyProfile, NodeSeed, ProxyRelease, temporary_sandbox,
};
use crate::server::{ProxyService, deadline, host_time};
use crate::transport::{Connection, RetryPolicy};

/// The endpoint named in errors of mock calls.
pub use crate::transport::IN_PROCESS;

/// Identifies one RPC of one group version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rpc {
    /// API group, e.g. `disk`.
    pub group: &'static str,
    /// API version, e.g. `v1`.
    pub version: &'static str,
    /// Fully qualified service, e.g. `v1.Disk`.
    pub service: &'static str,
    /// RPC name as on the wire, e.g. `GetDiskStats`.
    pub name: &'static str,
}

impl Rpc {
    /// The gRPC method path, `/v1.Disk/GetDiskStats`.
    pub fn path(&self) -> String {
        format!("/{}/{}", self.service, self.name)
    }
}

/// One call made through a [`MockHost`], in the order made.
#[derive(Clone)]
pub struct Call {
    /// Which RPC.
    pub rpc: Rpc,
    /// The request as sent: one gRPC message frame.
    frame: Bytes,
}

impl Call {
    /// The request decoded as `T` (the message type of that version), or
    /// `None` if it does not decode as one.
    pub fn request<T: prost::Message + Default>(&self) -> Option<T> {
        let mut frame = self.frame.clone();
        // The frame: a compression flag, a 4-byte length, the message.
        if frame.remaining() < 5 || frame.get_u8() != 0 {
            return None;
        }
        let length = frame.get_u32() as usize;
        (frame.remaining() == length)
            .then(|| T::decode(frame).ok())
            .flatten()
    }
}

impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} {}({} bytes)",
            self.rpc.group,
            self.rpc.version,
            self.rpc.name,
            self.frame.len().saturating_sub(5)
        )
    }
}

/// Which calls a fault applies to: an RPC name, optionally narrowed to a
/// group and version. `"PartitionDisk"`, `"disk/PartitionDisk"` and
/// `"disk/v1/PartitionDisk"` are accepted by the `&str` conversion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcMatch {
    group: Option<String>,
    version: Option<String>,
    name: String,
}

impl From<&str> for RpcMatch {
    fn from(text: &str) -> Self {
        let parts: Vec<&str> = text.split('/').collect();
        let owned = |s: &str| Some(s.to_string());
        match parts.as_slice() {
            [group, version, name] => RpcMatch {
                group: owned(group),
                version: owned(version),
                name: name.to_string(),
            },
            [group, name] => RpcMatch {
                group: owned(group),
                version: None,
                name: name.to_string(),
            },
            _ => RpcMatch {
                group: None,
                version: None,
                name: text.to_string(),
            },
        }
    }
}

impl RpcMatch {
    fn matches(&self, rpc: &Rpc) -> bool {
        self.name == rpc.name
            && self.group.as_deref().is_none_or(|g| g == rpc.group)
            && self.version.as_deref().is_none_or(|v| v == rpc.version)
    }
}

#[derive(Debug)]
enum FaultKind {
    /// Fail the matching call after `skip` more matching calls have passed.
    Fail { skip: usize, status: tonic::Status },
    /// Delay every matching call.
    Latency(Duration),
}

#[derive(Debug)]
struct Fault {
    rpc: RpcMatch,
    kind: FaultKind,
}

/// The call log and the faults, shared by the layers of every connection.
#[derive(Debug, Default)]
struct Log {
    calls: Mutex<Vec<Call>>,
    faults: Mutex<Vec<Fault>>,
    /// The host time of every call, before the injected latency.
    profile: Option<LatencyProfile>,
}

impl Log {
    /// Logs the call; returns the latency to add and the failure to give.
    fn record(&self, call: Call) -> (Duration, Option<tonic::Status>) {
        let rpc = call.rpc;
        lock(&self.calls).push(call);
        let mut faults = lock(&self.faults);
        let mut delay = self
            .profile
            .map_or(Duration::ZERO, |profile| profile.latency(rpc.name));
        let mut failure = None;
        let mut spent = None;
        for (i, fault) in faults
            .iter_mut()
            .enumerate()
            .filter(|(_, f)| f.rpc.matches(&rpc))
        {
            match &mut fault.kind {
                FaultKind::Latency(d) => delay += *d,
                FaultKind::Fail { skip, status } if failure.is_none() => {
                    if *skip == 0 {
                        failure = Some(status.clone());
                        spent = Some(i);
                    } else {
                        *skip -= 1;
                    }
                }
                FaultKind::Fail { .. } => {}
            }
        }
        if let Some(i) = spent {
            faults.remove(i);
        }
        (delay, failure)
    }
}

/// The mock's layer in front of one group version's routes: logs each
/// call, applies the faults matching its method path, and ends a call when
/// its `grpc-timeout` passes, as the reference server does.
#[derive(Clone)]
struct Recorded<S> {
    inner: S,
    endpoint: GroupVersion,
    service: &'static str,
    rpcs: &'static [&'static str],
    log: Arc<Log>,
}

impl<S> Recorded<S> {
    fn new(endpoint: GroupVersion, inner: S, log: Arc<Log>) -> Self {
        Self {
            inner,
            endpoint,
            service: endpoint.service_name(),
            rpcs: endpoint.rpcs(),
            log,
        }
    }

    /// The RPC a method path (`/v1.Disk/GetDiskStats`) names.
    fn rpc(&self, path: &str) -> Rpc {
        let wanted = path.rsplit('/').next().unwrap_or_default();
        let name = self
            .rpcs
            .iter()
            .find(|name| **name == wanted)
            .copied()
            .unwrap_or("<unknown>");
        Rpc {
            group: self.endpoint.group,
            version: self.endpoint.version,
            service: self.service,
            name,
        }
    }
}

type Answer = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

impl<S> tower::Service<http::Request<Body>> for Recorded<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Answer {
        let rpc = self.rpc(request.uri().path());
        let deadline = deadline::grpc_timeout(request.headers());
        let log = self.log.clone();
        // The clone is ready; `self.inner` was made ready for this call.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let frame = match body.collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(e) => return Ok(tonic::Status::internal(e.to_string()).into_http()),
            };
            // A copy for the log: `frame` shares the encoder's whole buffer
            // (8 KiB), which the log would otherwise keep alive per call.
            let (delay, failure) = log.record(Call {
                rpc,
                frame: Bytes::copy_from_slice(&frame),
            });
            // Host time: the work goes on when the caller leaves, as at
            // the proxy (see `server::host_time`).
            let answer = host_time::after(delay, async move {
                if let Some(status) = failure {
                    return Ok(status.into_http());
                }
                let request = http::Request::from_parts(parts, Body::new(Full::new(frame)));
                inner.call(request).await
            });
            deadline::within(deadline, answer).await
        })
    }
}

#[derive(Debug)]
struct Inner {
    service: ProxyService,
    /// One in-process connection per group version, all through the layer.
    connections: Vec<(GroupVersion, Connection)>,
    log: Arc<Log>,
    /// Keeps the temporary sandbox of [`MockHost::new`] alive.
    _sandbox: Option<tempfile::TempDir>,
}

/// A simulated Windows node in process implementing every `<Group>Api`.
///
/// Cheap to clone; clones share the node, the call log and the faults.
#[derive(Clone, Debug)]
pub struct MockHost {
    inner: Arc<Inner>,
}

impl Default for MockHost {
    fn default() -> Self {
        Self::new()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl MockHost {
    /// The reference server's default node, in a temporary sandbox removed
    /// when the last clone is dropped.
    ///
    /// # Panics
    /// If the temporary directory cannot be created.
    pub fn new() -> Self {
        Self::builder()
            .build()
            .expect("building the default mock node in a temporary directory")
    }

    /// A builder to seed the node or configure paths.
    pub fn builder() -> MockHostBuilder {
        MockHostBuilder::default()
    }

    /// The simulated host: its state, snapshots and test hooks.
    pub fn host(&self) -> &Host {
        self.inner.service.host()
    }

    /// The services the calls go to.
    pub fn service(&self) -> &ProxyService {
        &self.inner.service
    }

    /// The in-process connection of `group` `version`, through the call
    /// log and the faults; e.g. `disk::v1::Client::from_connection(..)`
    /// makes a client of this node.
    ///
    /// # Panics
    /// If there is no such group version.
    pub fn connection(&self, group: &str, version: &str) -> &Connection {
        self.inner
            .connections
            .iter()
            .find(|(gv, _)| gv.group == group && gv.version == version)
            .map(|(_, connection)| connection)
            .unwrap_or_else(|| panic!("no group version {group}/{version}"))
    }

    /// Every call made so far, oldest first.
    pub fn calls(&self) -> Vec<Call> {
        lock(&self.inner.log.calls).clone()
    }

    /// The calls matching `rpc` (`"PartitionDisk"`, `"disk/v1/PartitionDisk"`).
    pub fn calls_of(&self, rpc: impl Into<RpcMatch>) -> Vec<Call> {
        let rpc = rpc.into();
        lock(&self.inner.log.calls)
            .iter()
            .filter(|c| rpc.matches(&c.rpc))
            .cloned()
            .collect()
    }

    /// Forgets the calls made so far.
    pub fn clear_calls(&self) {
        lock(&self.inner.log.calls).clear();
    }

    /// Panics unless calls matching `expected` happened in this order (other
    /// calls may come between them).
    #[track_caller]
    pub fn assert_called_in_order(&self, expected: &[&str]) {
        let calls = self.calls();
        let mut remaining = calls.iter();
        for want in expected {
            let m = RpcMatch::from(*want);
            if !remaining.any(|c| m.matches(&c.rpc)) {
                panic!(
                    "expected the calls {expected:?} in this order; {want:?} is missing after the earlier ones; calls were {calls:#?}"
                );
            }
        }
    }

    /// The next call matching `rpc` fails with `code` and `message` instead
    /// of reaching the host.
    pub fn fail_next(
        &self,
        rpc: impl Into<RpcMatch>,
        code: tonic::Code,
        message: impl Into<String>,
    ) {
        self.fail_nth(rpc, 1, code, message);
    }

    /// The `n`th call from now matching `rpc` (1 = the next) fails with
    /// `code` and `message`; the calls before it go through.
    pub fn fail_nth(
        &self,
        rpc: impl Into<RpcMatch>,
        n: usize,
        code: tonic::Code,
        message: impl Into<String>,
    ) {
        assert!(n >= 1, "fail_nth counts from 1");
        let status = tonic::Status::new(code, message);
        lock(&self.inner.log.faults).push(Fault {
            rpc: rpc.into(),
            kind: FaultKind::Fail {
                skip: n - 1,
                status,
            },
        });
    }

    /// Every call matching `rpc` takes `delay` longer at the host: its work
    /// is done once the delay has passed, also when the caller has given
    /// up by then.
    pub fn add_latency(&self, rpc: impl Into<RpcMatch>, delay: Duration) {
        lock(&self.inner.log.faults).push(Fault {
            rpc: rpc.into(),
            kind: FaultKind::Latency(delay),
        });
    }

    /// Removes every injected fault and latency.
    pub fn clear_faults(&self) {
        lock(&self.inner.log.faults).clear();
    }

    /// Detaches disk `number`, as if it was removed from the VM.
    pub fn remove_disk(&self, number: u32) -> Result<(), HostError> {
        self.host().detach_disk(number)
    }
}

/// Builds a [`MockHost`].
#[derive(Debug, Default)]
pub struct MockHostBuilder {
    seed: Option<NodeSeed>,
    sandbox: Option<PathBuf>,
    kubelet_path: Option<String>,
    working_dirs: Vec<String>,
    id_seed: Option<u64>,
    request_timeout: Option<Duration>,
    retry: Option<RetryPolicy>,
    release: ProxyRelease,
    latency_profile: Option<LatencyProfile>,
}

impl MockHostBuilder {
    /// The node to simulate (the default node without it).
    #[must_use]
    pub fn seed(mut self, seed: NodeSeed) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The node laid out as a cloud lays it out ([`Layout`](crate::host::Layout):
    /// `azure`, `azure-nvme`, `gce`, `aws`, `vsphere`); replaces any seed.
    #[must_use]
    pub fn layout(mut self, layout: crate::host::Layout) -> Self {
        self.seed = layout.seed();
        self
    }

    /// Reads the node from a seed file (the server's `--seed` format).
    pub fn seed_file(self, path: impl AsRef<std::path::Path>) -> Result<Self, HostError> {
        Ok(self.seed(NodeSeed::from_file(path)?))
    }

    /// Keeps the simulated drives in `dir` instead of a temporary directory.
    #[must_use]
    pub fn sandbox(mut self, dir: impl Into<PathBuf>) -> Self {
        self.sandbox = Some(dir.into());
        self
    }

    /// The kubelet directory (default `C:\var\lib\kubelet`).
    #[must_use]
    pub fn kubelet_path(mut self, path: impl Into<String>) -> Self {
        self.kubelet_path = Some(path.into());
        self
    }

    /// A further working directory of the filesystem group.
    #[must_use]
    pub fn working_dir(mut self, path: impl Into<String>) -> Self {
        self.working_dirs.push(path.into());
        self
    }

    /// Seed of the identifier generator (volume GUIDs), for reproducible ids.
    #[must_use]
    pub fn id_seed(mut self, seed: u64) -> Self {
        self.id_seed = Some(seed);
        self
    }

    /// Whose failure texts the node speaks: csi-proxy v1.3's (the default)
    /// or v1.1's (PowerShell era); see [`ProxyRelease`].
    #[must_use]
    pub fn proxy_release(mut self, release: ProxyRelease) -> Self {
        self.release = release;
        self
    }

    /// Every call takes the host time the real csi-proxy `profile` takes
    /// for its RPC (see [`LatencyProfile`]), on top of any latency added
    /// with [`MockHost::add_latency`]. Off by default: calls are answered
    /// at once. The work goes on when the caller gives up, as at the proxy;
    /// use tokio's paused time (`#[tokio::test(start_paused = true)]`) to
    /// keep tests fast.
    #[must_use]
    pub fn latency_profile(mut self, profile: LatencyProfile) -> Self {
        self.latency_profile = Some(profile);
        self
    }

    /// Bounds every call, as [`ConnectOptions::with_request_timeout`]
    /// does for a client: the call fails with [`Error::Timeout`] once
    /// `timeout` has passed, injected latency included.
    ///
    /// [`ConnectOptions::with_request_timeout`]: crate::ConnectOptions::with_request_timeout
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// Retries failed calls as `policy` says, as a [`Client`] does
    /// ([`ConnectOptions::with_retry`]). Without it the mock makes one
    /// attempt per call: it is where a driver tests its own handling of a
    /// failure, so a fault injected with [`MockHost::fail_next`] reaches
    /// the driver as injected. Give [`RetryPolicy::default()`] to see the
    /// calls as a `Client` with default options makes them.
    ///
    /// [`Client`]: crate::disk::v1::Client
    /// [`ConnectOptions::with_retry`]: crate::ConnectOptions::with_retry
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// Builds the node.
    pub fn build(self) -> Result<MockHost, HostError> {
        let (sandbox, temp) = match self.sandbox {
            Some(dir) => (dir, None),
            None => {
                let temp = temporary_sandbox()?;
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        let mut config = HostConfig::new(sandbox);
        if let Some(path) = self.kubelet_path {
            config.kubelet_path = path;
        }
        config.working_dirs = self.working_dirs;
        config.seed = self.seed;
        if let Some(seed) = self.id_seed {
            config.id_seed = seed;
        }
        config.release = self.release;
        let service = ProxyService::new(Host::new(config)?);
        let log = Arc::new(Log {
            profile: self.latency_profile,
            ..Log::default()
        });
        let connections = GroupVersion::all()
            .into_iter()
            .map(|endpoint| {
                let routes = Recorded::new(endpoint, endpoint.routes(&service), log.clone());
                let connection = Connection::in_process(routes)
                    .with_request_timeout(self.request_timeout)
                    .with_retry(self.retry.unwrap_or_else(RetryPolicy::none));
                (endpoint, connection)
            })
            .collect();
        let inner = Inner {
            service,
            connections,
            log,
            _sandbox: temp,
        };
        Ok(MockHost {
            inner: Arc::new(inner),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layer alone, with no client timer around it: only the header
    /// can end the call held by the latency.
    #[tokio::test(start_paused = true)]
    async fn the_layer_ends_a_call_when_its_grpc_timeout_passes() {
        let node = MockHost::new();
        node.add_latency("GetDiskStats", Duration::from_secs(3600));
        let endpoint = GroupVersion::parse("disk/v1").unwrap();
        let layer = Recorded::new(
            endpoint,
            endpoint.routes(node.service()),
            node.inner.log.clone(),
        );
        // GetDiskStatsRequest { disk_number: 0 }: an empty message frame.
        let request = http::Request::builder()
            .uri("/v1.Disk/GetDiskStats")
            .header("content-type", "application/grpc")
            .header("grpc-timeout", "50m")
            .body(Body::new(Full::new(Bytes::from_static(&[0, 0, 0, 0, 0]))))
            .unwrap();
        let response = tower::ServiceExt::oneshot(layer, request).await.unwrap();
        let code = response.headers().get("grpc-status");
        assert_eq!(code.map(|c| c.to_str().unwrap()), Some("4"), "{response:?}");
        assert_eq!(node.calls_of("GetDiskStats").len(), 1);
    }
}
