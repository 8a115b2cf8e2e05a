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
//! # Modules
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
//! # Features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `client` | yes | the typed clients and traits |
//! | `server` | no | the simulated Windows host (the reference server is being built) |
//! | `mock` | no | in-process calls of service implementations through the traits |
//! | `mockall` | no | `mockall::automock` on every `<Group>Api` trait |
//!
//! [CSI Proxy]: https://github.com/kubernetes-csi/csi-proxy
#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
pub mod transport;
mod version;

#[cfg(feature = "mock")]
pub mod mock;

#[cfg(feature = "server")]
pub mod host;

#[cfg(feature = "server")]
pub mod server;

pub use error::{Error, RpcError};
pub use transport::ConnectOptions;
pub use version::{ApiVersion, Stage};

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
