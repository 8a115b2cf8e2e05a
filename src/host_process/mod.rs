//! HostProcess mode: the node layer doing its work on the Windows host
//! itself, no CSI Proxy in between (feature `host-process`).
//!
//! A CSI node plugin that runs as a Windows HostProcess container can call
//! WMI and Win32 directly. This module is that backend: in-process
//! implementations of the newest `<Group>Api` traits (disk v1, volume v1,
//! filesystem v1, smb v1, iscsi v1alpha2, system v1alpha1) over a narrow
//! boundary to Windows, [`WindowsHost`]: one WMI query, one WMI method call
//! or one Win32 call per method, with plain structs for the properties read
//! and return codes as numbers. Everything that decides (idempotency, which
//! return code is success, error texts, path confinement) sits above the
//! boundary and is tested on any platform.
//!
//! Over the real host,
//! [`Node::host_process`][hp] (Windows only);
//! over any boundary,
//! [`Node::host_process_with`](crate::node::Node::host_process_with). The
//! Windows implementation of the boundary is the [`windows`][hp-windows]
//! submodule (Windows only).
//!
//! Groups: disk, volume, filesystem and smb at v1, iscsi at v1alpha2,
//! system at v1alpha1 (iscsi and system when the `NodeOptions` ask for
//! them, as over the proxy). iSCSI logins are not persistent (as the
//! proxy's): after a reboot the driver logs in again.
//!
//! # Departures from the proxy
//!
//! Mount and unmount targets are confined to the working directories too
//! (the proxy checks only its filesystem group's paths): in this mode no
//! proxy stands between the plugin and the host.
//!
//! # What ran where
//!
//! The logic above the boundary runs in `cargo test` on Linux over
//! [`FakeWindows`], the boundary built on the simulated host (`crate::host`):
//! every node-layer scenario (`tests/it/node.rs`, `tests/it/node_scenarios.rs`)
//! and the backend's own rules (`tests/it/host_process.rs`). The Windows side
//! of the boundary is a separate piece; see its module docs for what ran
//! under Wine and what waits for a real Windows node.
// The links above: to the items where this build has them (Windows, or the
// docs.rs build's stand-in), else to the docs.rs page, so that `cargo doc`
// on Linux without `--cfg docsrs` has no broken link.
#![cfg_attr(
    any(windows, docsrs),
    doc = "\n\n[hp]: crate::node::Node::host_process\n[hp-windows]: self::windows"
)]
#![cfg_attr(
    not(any(windows, docsrs)),
    doc = "\n\n[hp]: https://docs.rs/csi-proxy-client/latest/csi_proxy_client/node/struct.Node.html#method.host_process\n\
           [hp-windows]: https://docs.rs/csi-proxy-client/latest/csi_proxy_client/host_process/windows/index.html"
)]

mod backend;
mod blank;
pub mod boundary;
mod disk;
// Formats the Windows side reads and writes; plain Rust, tested everywhere.
#[cfg(any(windows, test))]
mod encoding;
#[cfg(feature = "server")]
pub mod fake;
mod filesystem;
mod iscsi;
pub(crate) mod smb;
mod system;
mod volume;
#[cfg(windows)]
#[cfg_attr(docsrs, doc(cfg(windows)))]
pub mod windows;
// The Linux docs (docs.rs's default page) list the Windows module's public
// items too, and `Node::host_process`: a stand-in with the same signatures,
// built only for documentation (`scripts/check-docs.sh` keeps the two alike).
#[cfg(all(docsrs, not(windows)))]
#[doc(cfg(windows))]
#[path = "windows_docs.rs"]
pub mod windows;

pub use backend::{DEFAULT_KUBELET_DIR, ENDPOINT, HostProcess};
pub use boundary::{Failure, MethodResult, WindowsHost};
#[cfg(feature = "server")]
pub use fake::{FAKE_STATE_DIR, FakeWindows};
