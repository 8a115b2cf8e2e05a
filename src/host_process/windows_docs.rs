//! The real Windows implementation of [`WindowsHost`]: WMI and Win32 on the
//! machine the plugin runs on (Windows only).
//!
//! This page comes from a documentation build for another platform
//! (`--cfg docsrs`, as docs.rs builds its default Linux page): the module's
//! code needs the `wmi` and `windows` crates, which only a Windows build
//! has, so what is listed here is a stand-in with the same public items and
//! signatures. The Windows page of these docs has the module itself, with
//! its notes on COM threads and what ran under Wine.
//!
//! [`LocalHost`] implements [`WindowsHost`] there; [`host`] returns it, and
//! [`Node::host_process`](crate::node::Node::host_process) is the node layer
//! over it.
//!
//! `scripts/check-docs.sh` fails when this file's public items and the
//! Windows module's differ.

// Nothing here runs: a `docsrs` build is only ever documented, never
// executed, so the bodies below are placeholders (`unimplemented!`) for
// code that needs the Windows-only crates.

use std::sync::Arc;

use super::boundary::WindowsHost;
use crate::Error;
use crate::node::{Node, NodeOptions};

/// The local Windows host behind the boundary.
pub fn host() -> std::result::Result<Arc<dyn WindowsHost>, Error> {
    unimplemented!("documentation stand-in: built only for the Linux docs")
}

/// [`WindowsHost`] on the machine this process runs on. Holds nothing:
/// COM and the WMI connections belong to the calling thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalHost;

impl Node {
    /// HostProcess mode: the node layer doing its work on this Windows host
    /// directly (WMI and Win32; no CSI Proxy), every group at the newest
    /// version the backend implements. Fails when this build has no
    /// Windows implementation of the boundary.
    ///
    /// Windows only. In a driver's tests on any platform,
    /// [`Node::host_process_with`] over `FakeWindows` (feature `server`)
    /// does the same over the simulated host.
    #[doc(cfg(all(feature = "host-process", windows)))]
    pub fn host_process(options: NodeOptions) -> Result<Node, Error> {
        let _ = options;
        unimplemented!("documentation stand-in: built only for the Linux docs")
    }
}
