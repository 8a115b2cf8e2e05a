//! A typed Rust client for the Kubernetes [CSI Proxy], the Windows host
//! service that does privileged storage work for unprivileged CSI node
//! plugins, over gRPC on named pipes.
//!
//! ```no_run
//! use csi_proxy_client::disk::v1 as disk;
//! use csi_proxy_client::disk::v1::DiskApi;
//!
//! # async fn run() -> Result<(), csi_proxy_client::Error> {
//! // \\.\pipe\csi-proxy-disk-v1 on Windows; $CSI_PROXY_SOCKET_DIR/csi-proxy-disk-v1.sock elsewhere.
//! let client = disk::Client::connect_default().await?;
//! let locations = client.list_disk_locations(disk::ListDiskLocationsRequest {}).await?;
//! for (number, location) in &locations.disk_locations {
//!     println!("disk {number}: LUN {}", location.lunid);
//! }
//! # Ok(()) }
//! ```
//!
//! # The node layer
//!
//! [`node::Node`] is what a CSI node plugin needs, over whatever versions the
//! node serves: [`Node::connect`](node::Node::connect) picks each group's
//! newest served version (a csi-proxy v0.2 node with only v1beta1 works),
//! then one call per CSI node RPC, idempotent, with kubelet's paths taken
//! as given and every call bounded by a deadline:
//!
//! ```no_run
//! use csi_proxy_client::node::{DiskSelector, Node, NodeOptions};
//!
//! # async fn run(staging: &str, target: &str) -> Result<(), csi_proxy_client::Error> {
//! let node = Node::connect(NodeOptions::default()).await?;
//! let disk = node.find_disk(DiskSelector::Lun(3)).await?;
//! node.stage_disk(&disk, staging).await?;
//! node.publish(staging, target).await?;
//! # Ok(()) }
//! ```
//!
//! In a driver's unit tests the same code runs over
//! [`mock::MockHost`] with `Node::from_mock(&host)` (feature `mock`).
//! See [`node`] for what each operation does and refuses.
//!
//!
//! One module per API group and version, `csi_proxy_client::<group>::<version>`,
//! for the six groups [`disk`], [`filesystem`], [`iscsi`], [`smb`],
//! [`system`] and [`volume`] (23 group versions, 139 RPCs). Each holds the
//! messages of that version as prost generates them, a `Client`, constants
//! (`GROUP`, `VERSION`, `SERVICE_NAME`, `RPCS`), and the trait
//! `<Group>Api` (`DiskApi`, `FilesystemApi`, ...) with one `async fn` per RPC.
//! Driver code written against `&dyn DiskApi` runs against a real proxy
//! through `Client` and, in unit tests, against an in-process host.
//!
//! Method names are the RPC names in snake_case with each acronym kept as
//! one word: `ListDiskIDs` is `list_disk_ids`, `GetBIOSSerialNumber` is
//! `get_bios_serial_number`.
//!
//! # Addresses
//!
//! [`transport::Address`] accepts `npipe:////./pipe/NAME`, `\\.\pipe\NAME`
//! and `unix:///path` (a bare absolute path on Unix). The default endpoint
//! of a group version is the pipe `\\.\pipe\csi-proxy-<group>-<version>` on
//! Windows, and elsewhere the socket `csi-proxy-<group>-<version>.sock` in
//! the directory named by `CSI_PROXY_SOCKET_DIR`.
//!
//! # Versions
//!
#![doc = include_str!("generated/versions.md")]
//!
//! [`ApiVersion`] parses and orders version names
//! (`v1alpha1 < v1beta1 < v1 < v2alpha1`), e.g. to pick the newest version a
//! node offers; [`GroupVersion`] names one group version (`disk/v1`) and
//! lists them all.
//!
//! # Errors
//!
//! Every call returns [`Error`]. An error status from the proxy is
//! [`Error::Rpc`], with the gRPC code ([`Error::code`]) and message kept; the
//! real proxy reports nearly every failure as `UNKNOWN` with a Windows error
//! text. [`Error::host_code`] reads the number in it ([`HostCode`]: a Win32
//! error, an HRESULT or a WMI method result, in the formats of csi-proxy
//! v1.1 and v1.3; see [`codes`]) and [`Error::kind`] classifies it from that
//! code first, then from phrases known to mean one kind
//! ([`ErrorKind`]: not found, already exists, in use, credentials conflict, ...). Connecting reports a missing pipe or socket as [`Error::Connect`]
//! naming it, and a pipe whose instances stayed busy as [`Error::PipeBusy`].
//!
//! # Connections, liveness and tracing
//!
//! A `Client` holds one HTTP/2 connection, shared by its clones and their
//! calls, and dials again when it has closed. [`ConnectOptions`] bounds
//! connecting (the HTTP/2 handshake included: a server that accepts but
//! never speaks is dropped and dialed again), each call (sent to the server
//! as `grpc-timeout`), and checks with keepalive PINGs that the server still
//! answers; its docs give the defaults and why.
//!
//! ```no_run
//! use std::time::Duration;
//! use csi_proxy_client::{ConnectOptions, disk::v1 as disk};
//!
//! # async fn run() -> Result<(), csi_proxy_client::Error> {
//! let options = ConnectOptions::default()
//!     .with_connect_timeout(Duration::from_secs(10))
//!     .with_request_timeout(Duration::from_secs(60))
//!     // Against csi-proxy, not under 5 minutes (see ConnectOptions).
//!     .with_keepalive_interval(Some(Duration::from_secs(10 * 60)));
//! let _client = disk::Client::connect_default_with(&options).await?;
//! # Ok(()) }
//! ```
//!
//! Every call is a `tracing` span named `rpc` carrying OpenTelemetry's RPC
//! attributes (`rpc.system`, `rpc.service`, `rpc.method`,
//! `rpc.grpc.status_code`) with the endpoint and the duration, and every
//! [`node::Node`] operation a span named `node` whose calls are its
//! children (see [`transport::Connection`]). With no subscriber installed
//! they cost next to nothing.
//!
//! ## Retries
//!
//! A failed call is tried again when that cannot make the host do anything
//! twice ([`RetryPolicy`]): any call whose request never left the client (the
//! proxy restarting, a busy pipe), and calls that only read
//! ([`transport::rpc_effect`]: `List*`, `Get*`, `PathExists`, `IsSymlink`,
//! ...) after `UNAVAILABLE` or a broken connection. A call that changes the
//! node is never sent twice. Retries are on by default (4 attempts, sleeps
//! with jitter from 100 ms doubling up to 2 s), never sleep past the
//! request timeout or the [`node::Node`] operation's deadline, and
//! [`mock::MockHost`] makes one attempt unless asked otherwise.
//!
//! ```no_run
//! use std::time::Duration;
//! use csi_proxy_client::{ConnectOptions, RetryPolicy, disk::v1 as disk};
//!
//! # async fn run() -> Result<(), csi_proxy_client::Error> {
//! let patient = ConnectOptions::default()
//!     .with_request_timeout(Duration::from_secs(30))
//!     .with_retry(RetryPolicy::default().with_max_attempts(8).with_max_backoff(Duration::from_secs(5)));
//! let _client = disk::Client::connect_default_with(&patient).await?;
//! let once = ConnectOptions::default().with_retry(RetryPolicy::none());
//! let _client = disk::Client::connect_default_with(&once).await?;
//! # Ok(()) }
//! ```
//!
//! Each retry is an event in the call's `rpc` span, and the span's
//! `rpc.retries` says how many there were. With `tracing_subscriber::fmt`
//! installed, a read the proxy answered once with `UNAVAILABLE` logs:
//!
//! ```text
//! INFO rpc{otel.name="v1.Disk/GetDiskStats" otel.kind="client" rpc.system="grpc" rpc.service="v1.Disk" rpc.method="GetDiskStats" endpoint="/run/csi-proxy/csi-proxy-disk-v1.sock"}: retrying the call attempt=2 backoff_ms=50 error=/v1.Disk/GetDiskStats on /run/csi-proxy/csi-proxy-disk-v1.sock failed with Unavailable: ...
//! ```
//!
//! # Two modes: through the proxy, or on the host itself
//!
//! The same [`node::Node`] works in either mode, so a driver has one code
//! path per CSI request:
//!
//! - **Proxy mode** ([`Node::connect`](node::Node::connect)): an
//!   unprivileged plugin container talks to `csi-proxy.exe` over its named
//!   pipes. Needs csi-proxy installed on the node (any version back to
//!   v0.2) and the pipes mounted into the pod.
//! - **HostProcess mode** (feature `host-process`, `Node::host_process` on
//!   Windows): the plugin runs as a Windows HostProcess container and does
//!   the work itself through WMI and Win32, no proxy, no pipes. The
//!   backend ([`host_process::HostProcess`][hp-backend]) implements the newest
//!   `<Group>Api` traits (disk, volume, filesystem, smb at v1, iscsi at
//!   v1alpha2, system at v1alpha1) over a narrow boundary to Windows,
//!   [`host_process::WindowsHost`][hp-boundary], with csi-proxy v1.3.0's idempotency
//!   and error texts and the same path confinement. Its logic is tested on
//!   any platform over [`host_process::FakeWindows`][hp-fake], the boundary built on
//!   the simulated host; the Windows side of the boundary is
//!   `host_process::windows`.
//!
//! # Testing a driver without Windows
//!
//! With the `mock` feature, [`mock::MockHost`] is a simulated Windows node
//! in process that implements every `<Group>Api` trait: a driver's unit test
//! passes `&node` where production code passes a `Client`. It runs the
//! reference server's own services, so the answers (errors included) are the
//! server's; it also records calls and injects faults.
//!
//! ```
//! # #[cfg(feature = "mock")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), csi_proxy_client::Error> {
//! use csi_proxy_client::disk::v1::{self as disk, DiskApi};
//! use csi_proxy_client::mock::MockHost;
//!
//! async fn partition_lun(d: &dyn DiskApi, lun: &str) -> Result<Option<u32>, csi_proxy_client::Error> {
//!     let disks = d.list_disk_locations(disk::ListDiskLocationsRequest {}).await?;
//!     let Some((&number, _)) = disks.disk_locations.iter().find(|(_, l)| l.lunid == lun) else {
//!         return Ok(None);
//!     };
//!     d.partition_disk(disk::PartitionDiskRequest { disk_number: number }).await?;
//!     Ok(Some(number))
//! }
//!
//! let node = MockHost::new();
//! assert_eq!(partition_lun(&node, "1").await?, Some(1));
//! node.fail_next("PartitionDisk", tonic::Code::Unavailable, "try later");
//! let err = partition_lun(&node, "2").await.unwrap_err();
//! assert_eq!(err.code(), Some(tonic::Code::Unavailable));
//! # Ok(()) }
//! # #[cfg(not(feature = "mock"))] fn main() {}
//! ```
//!
//! # The reference server
//!
//! With the `server` feature, [`server::Server`] serves every group version
//! over the simulated host, one Unix socket per group version (on Windows,
//! the proxy's named pipes), and the binary `csi-proxy-server` runs it from
//! the command line (`--socket-dir`, `--seed`, `--serve`, ...). The host
//! ([`host`]) follows the upstream proxy's behaviour, error texts included.
//! It departs from upstream only where upstream is unsafe or crashes:
//!
//! - working-directory confinement compares whole path components, so
//!   `C:\var\lib\kubelet-evil` is outside `C:\var\lib\kubelet`
//!   (upstream compares string prefixes); see [`host::path`];
//! - paths that reach the host unvalidated (relative, device, `X:rel`) are
//!   refused instead of being resolved against the proxy's working
//!   directory, and links are never followed out of the sandbox; see
//!   [`host::namespace`];
//! - an iSCSI request without `target_portal`, which crashes upstream, gets
//!   `INVALID_ARGUMENT`;
//! - the reference server serialises calls under one lock, so races that
//!   upstream leaves to Windows (two mappings of one share at once) have one
//!   outcome.
//!
//! # Features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `client` | yes | each version's `Client` and `<Group>Api` trait, [`transport::Connection`], [`ConnectOptions`] and [`node`] (no server code) |
//! | `server` | no | the simulated Windows host ([`host`]), the reference server ([`server`]) and the `csi-proxy-server` binary (no client code unless `client` is on too) |
//! | `local-authority` | no | [`authority::LocalAuthority`], for any tonic server on a local socket (a CSI plugin's): answers the gRPC clients that send the socket path as `:authority` (implied by `server`) |
//! | `mock` | no | [`mock::MockHost`], in-process connections to the server's routes (implies `client` and `server`) |
//! | `mockall` | no | `mockall::automock` on every `<Group>Api` trait (`MockDiskApi`, ...) (implies `client`) |
//! | `host-process` | no | [`host_process`][hp]: the node layer in HostProcess mode, in process over WMI and Win32 (implies `client`; its fake over the simulated host also needs `server`) |
//!
//! With no feature at all the crate is the message types of every version,
//! their constants (`GROUP`, `VERSION`, `RPCS`), [`transport::Address`],
//! [`GroupVersion`], [`ApiVersion`] and [`Error`].
//!
//! # Expectation-style tests with `mockall`
//!
//! Where [`mock::MockHost`] answers as a whole node would, the `mockall`
//! feature gives each trait a [mockall] mock, `<group>::<version>::Mock<Group>Api`,
//! for tests that state exactly which calls a driver makes and script each
//! answer (including error statuses the simulated node would never give).
//! The methods are `async` through `async_trait`, so a `returning` closure
//! gives the `Result` itself, not a future. Enable it for tests only:
//!
//! ```toml
//! [dev-dependencies]
//! csi-proxy-client = { version = "0.1", features = ["mockall"] }
//! mockall = "0.13"   # for predicates and sequences, if you use them
//! ```
//!
//! ```
//! # #[cfg(feature = "mockall")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), csi_proxy_client::Error> {
//! use csi_proxy_client::disk::v1::{self as disk, DiskApi, MockDiskApi};
//!
//! async fn online(d: &dyn DiskApi, number: u32) -> Result<bool, csi_proxy_client::Error> {
//!     Ok(d.get_disk_state(disk::GetDiskStateRequest { disk_number: number }).await?.is_online)
//! }
//!
//! let mut mock = MockDiskApi::new();
//! mock.expect_get_disk_state()
//!     .withf(|request| request.disk_number == 1)
//!     .times(1)
//!     .returning(|_| Ok(disk::GetDiskStateResponse { is_online: true }));
//! mock.expect_get_disk_state()
//!     .withf(|request| request.disk_number == 2)
//!     .returning(|_| Err(csi_proxy_client::Error::rpc(
//!         "test", "/v1.Disk/GetDiskState", tonic::Status::unknown("disk 2 not found"))));
//!
//! assert!(online(&mock, 1).await?);
//! assert_eq!(online(&mock, 2).await.unwrap_err().code(), Some(tonic::Code::Unknown));
//! # Ok(()) }
//! # #[cfg(not(feature = "mockall"))] fn main() {}
//! ```
//!
//! [mockall]: https://docs.rs/mockall
//! [CSI Proxy]: https://github.com/kubernetes-csi/csi-proxy
#![cfg_attr(docsrs, feature(doc_cfg))]
// The host_process links of the docs above: to the items when the module is
// built, else to its page on docs.rs (built with every feature), so that a
// `cargo doc` without `host-process` has no broken link.
#![cfg_attr(
    feature = "host-process",
    doc = "[hp]: host_process\n[hp-backend]: host_process::HostProcess\n\
           [hp-boundary]: host_process::WindowsHost\n[hp-fake]: host_process::FakeWindows"
)]
#![cfg_attr(
    not(feature = "host-process"),
    doc = "[hp]: https://docs.rs/csi-proxy-client/latest/csi_proxy_client/host_process/\n\
           [hp-backend]: https://docs.rs/csi-proxy-client/latest/csi_proxy_client/host_process/\n\
           [hp-boundary]: https://docs.rs/csi-proxy-client/latest/csi_proxy_client/host_process/\n\
           [hp-fake]: https://docs.rs/csi-proxy-client/latest/csi_proxy_client/host_process/"
)]

mod durations;
mod error;
#[cfg(any(feature = "client", feature = "server"))]
mod h2io;
pub mod transport;
mod version;

#[cfg(feature = "mock")]
pub mod mock;

#[cfg(feature = "client")]
pub mod node;

#[cfg(feature = "server")]
pub mod host;

// The simulator uses all of it; the HostProcess backend the working-path
// validation, the texts and the credential encoding, not the Win32 path
// parser the simulated namespace resolves with (Windows does that for the
// real backend), so a build with `host-process` alone leaves that unused.
#[cfg(any(feature = "server", feature = "host-process"))]
#[cfg_attr(not(feature = "server"), allow(dead_code))]
mod win;

#[cfg(feature = "host-process")]
pub mod host_process;

#[cfg(feature = "server")]
pub mod server;

#[cfg(feature = "local-authority")]
pub mod authority;

pub use durations::{MAX_DURATION, MIN_PERIOD};
pub use error::{Error, ErrorKind, HostCode, RpcError, codes};
/// The gRPC library the API is built on (`tonic::Code`, `tonic::Status`),
/// re-exported so that callers use the same version.
pub use tonic;
#[cfg(feature = "client")]
pub use transport::{ConnectOptions, RetryPolicy};
pub use version::{ApiVersion, GroupVersion, Stage};

#[cfg(feature = "server")]
#[rustfmt::skip]
#[path = "generated/routes.rs"]
mod routes;

#[rustfmt::skip]
#[path = "generated/disk/mod.rs"]
pub mod disk;
#[rustfmt::skip]
#[path = "generated/filesystem/mod.rs"]
pub mod filesystem;
#[rustfmt::skip]
#[path = "generated/iscsi/mod.rs"]
pub mod iscsi;
#[rustfmt::skip]
#[path = "generated/smb/mod.rs"]
pub mod smb;
#[rustfmt::skip]
#[path = "generated/system/mod.rs"]
pub mod system;
#[rustfmt::skip]
#[path = "generated/volume/mod.rs"]
pub mod volume;
