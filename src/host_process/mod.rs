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
//! The Windows implementation of the boundary is the `windows` submodule
//! (Windows only).
//!
//! # What ran where
//!
//! The logic above the boundary runs in `cargo test` on Linux over a fake
//! of the boundary built on the simulated host (`crate::host`). The Windows
//! implementation of the boundary is a separate piece; see its module docs
//! for what ran under Wine and what waits for a real Windows node.

pub mod boundary;
// Formats the Windows side reads and writes; plain Rust, tested everywhere.
#[cfg(any(windows, test))]
mod encoding;
#[cfg(windows)]
pub mod windows;

pub use boundary::{Failure, MethodResult, WindowsHost};
