//! The simulated Windows host behind the reference server and the mock.
//!
//! One [`Host`] models one Windows node: disks with partitions and volumes,
//! a file namespace rooted in a real sandbox directory, SMB global mappings,
//! iSCSI portals, targets and sessions, BIOS data and services. Every
//! operation is version-neutral (the latest internal model); the services in
//! `crate::server` convert each API version's messages to and from it.
//!
//! Errors are [`HostError`]: a kind (which becomes the gRPC code) and the
//! message the real proxy would send.

mod error;
pub mod iscsi;
pub mod smb;
pub mod system;

pub use error::{HostError, HostErrorKind, HostResult};
