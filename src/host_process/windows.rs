//! The real Windows implementation of [`WindowsHost`](super::WindowsHost)
//! (WMI over COM, Win32). Hook for that implementation: until it lands,
//! [`host`] reports that there is none, so `Node::host_process` fails
//! instead of pretending.

use std::sync::Arc;

use super::WindowsHost;
use crate::Error;

/// The local Windows host behind the boundary.
pub fn host() -> Result<Arc<dyn WindowsHost>, Error> {
    Err(Error::GroupUnavailable {
        group: "host-process",
        tried: "none; this build has no Windows implementation of the boundary yet".into(),
    })
}
