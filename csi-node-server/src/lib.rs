//! The CSI node server of a Windows CSI plugin, as a library: the CSI
//! Identity and Node services over [`csi_proxy_client::node::Node`], for a
//! driver that says who it is and how its requests name volumes
//! ([`Driver`]), served on the AF_UNIX socket kubelet dials ([`serve()`]),
//! with Prometheus metrics ([`metrics`]). The CSI v1 protos, with server and
//! client stubs for the Identity, Node and Controller services, are
//! [`csi::v1`].
//!
//! ```no_run
//! use std::collections::HashMap;
//! use csi_node_server::{Driver, Plugin, VolumeRequest, VolumeSource, async_trait, serve, stop_signal};
//! use csi_proxy_client::node::{DiskSelector, Node, NodeOptions};
//! use tonic::Status;
//!
//! struct Disks;
//!
//! #[async_trait]
//! impl Driver for Disks {
//!     fn name(&self) -> &str { "disk.example.com" }
//!     fn version(&self) -> &str { "1.0.0" }
//!     fn node_id(&self) -> &str { "node-1" }
//!     async fn volume(&self, r: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
//!         let lun = r.publish_context.get("lun").and_then(|l| l.parse().ok());
//!         lun.map(|l| VolumeSource::Disk(DiskSelector::Lun(l)))
//!             .ok_or_else(|| Status::invalid_argument("publish_context lun missing"))
//!     }
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let node = Node::connect(NodeOptions::default()).await?;
//! serve(Plugin::new(node, Disks), "/csi/csi.sock".as_ref(), stop_signal()).await?;
//! # Ok(()) }
//! ```
//!
//! What the plugin must remember across a restart (the node's records: a
//! format sent, the disk staged at each path; the SMB shares in use; what
//! each stage resolved) is kept durably by default, in `state` beside the
//! socket ([`state_dir`]: the driver's kubelet plugin directory, which
//! every deployment has), unless the program gave the node stores of its
//! own ([`Plugin::with_state_dir`]).

// The stage's future (the node's checks, the format task, the SMB work run
// to the host's answer) is deep enough that computing its layout for the
// Windows targets passes rustc's default query depth of 128.
#![recursion_limit = "256"]
pub mod csi;
pub mod driver;
mod kept;
pub mod metrics;
pub mod plugin;
pub mod serve;

// The workspace README's code blocks, compiled (and the unit test over
// `MockHost` run) as this crate's doc tests, with `csi-proxy-client`'s
// `mock` from the dev-dependencies; the plugin examples are `ignore` there
// because tests/readme.rs checks them equal to examples/readme, which build.
// Only under `cargo test --doc` in the repository; the file is not part of
// this package.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod workspace_readme {}

/// The generated CSI Identity service trait (`csi::v1::identity_server::Identity`),
/// which [`Plugin`] implements, under a name of its own.
pub use csi::v1::identity_server::Identity as IdentityService;
/// The generated CSI Node service trait (`csi::v1::node_server::Node`),
/// which [`Plugin`] implements, under a name that does not collide with
/// `csi_proxy_client::node::Node`: bring it in scope (`use
/// csi_node_server::NodeService as _;`) to call a plugin's handlers
/// directly, as tests do.
pub use csi::v1::node_server::Node as NodeService;
pub use driver::{
    Driver, LockScope, PluginFeature, RequestKind, Step, VolumeRequest, VolumeSource,
    default_access_mode, default_fs_type, default_smb_credentials, host_name,
};
pub use plugin::{Plugin, status_of};
pub use serve::{Services, serve, socket_path, state_dir, stop_signal};
/// The attribute for an `impl Driver` (its methods `volume`, `before`,
/// `after` and `on_error` are async).
pub use tonic::async_trait;
