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
//!
//! # Modules
//! - [`path`]: Windows path parsing and normalisation, working-dir validation
//!   (with the list of divergences from upstream).
//! - [`namespace`]: the file namespace on the sandbox directory.
//! - [`storage`]: disks, partitions, volumes.
//! - [`disk`], [`volume`], [`filesystem`]: the groups' operations, methods
//!   of [`Node`].
//! - [`smb`], [`iscsi`], [`system`]: those groups' models (`node.smb`,
//!   `node.iscsi`, `node.system`), with the node's methods where they meet
//!   the other groups (SMB links, iSCSI disks: [`Node::iscsi`]).
//!
//! A service runs every RPC as one call of [`Host::run`], one lock of the
//! node, so an RPC of any group is atomic.
//! - [`seed`]: building a node from code or TOML.
//! - [`node`]: [`Host`], [`HostConfig`], the default node, test hooks.
//!
//! # Divergences from upstream
//! See [`path`] (working-dir confinement by whole components, host-side path
//! syntax) and [`namespace`] (links are never followed outside the sandbox).
//! Other deliberate choices: volume mount points of absent volumes resolve
//! with Win32 error 21 ("The device is not ready."); WMI result codes that
//! upstream never pinned down are the constants in [`storage::wmi`].

pub mod disk;
mod error;
pub mod filesystem;
pub mod iscsi;
pub mod namespace;
pub mod node;
pub mod path;
pub mod seed;
pub mod smb;
pub mod storage;
pub mod system;
pub mod volume;

pub use disk::{DiskIds, DiskLocation};
pub use error::{HostError, HostErrorKind, HostResult};

pub use iscsi::NodeDisks;
pub use node::{Host, MountPointInfo, Node, Snapshot, temporary_sandbox};
pub use seed::{HostConfig, NodeSeed};
pub use volume::VolumeStats;

#[cfg(test)]
mod tests;
