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
//! The node and how it is built:
//! - [`state`]: [`Host`] (the node behind one lock; [`Host::run`] runs an
//!   RPC as one call on the [`HostState`], so an RPC of any group is atomic),
//!   [`HostState`] (the state of every part), snapshots, invariant checks, test
//!   hooks.
//! - [`seed`]: building a node: [`HostConfig`], [`Host::new`], the default
//!   node and [`NodeSeed`] (code or TOML; each group's section is that
//!   group's `seed.rs`). `seed` depends on `state`, never the reverse.
//!
//! The parts of the node:
//! - [`path`]: Windows path parsing and normalisation, working-dir validation
//!   (with the list of divergences from upstream).
//! - [`namespace`]: the file namespace on the sandbox directory; it resolves
//!   drive letters through [`storage`] and UNC roots through [`smb`].
//! - [`storage`]: disks, partitions, volumes.
//! - [`hotplug`]: disks a cloud attaches, detaches and grows while the node
//!   runs (at a free LUN, listed after a rescan).
//!
//! The groups, one design: a model owning the group's state, and operations
//! on it that the services call directly.
//! - [`disk`], [`volume`], [`filesystem`]: operations on the node's storage
//!   and namespace, methods of [`HostState`] (one file each).
//! - [`smb`], [`iscsi`], [`system`]: folders holding the model (`mod.rs`,
//!   the state is `node.smb`, `node.iscsi`, `node.system`), its seed section
//!   and defaults (`seed.rs`), its tests (`tests.rs`), and the one file where
//!   it meets the rest of the node: `smb/link.rs` (the `local_path` link in
//!   the namespace), `iscsi/disks.rs` (session LUNs become disks through
//!   [`NodeDisks`], a split borrow of the node's disk side:
//!   `HostState::iscsi`), `system/wait.rs` (`StartService`/`StopService` poll
//!   over the [`Host`], holding its lock only for each poll).
//!
//! Tests on whole nodes are in `tests/`, one file per part
//! (`tests/disk.rs`, `tests/volume.rs`, `tests/filesystem.rs`,
//! `tests/namespace.rs`, `tests/seed.rs`, ...).
//!
//! # Divergences from upstream
//! See [`path`] (working-dir confinement by whole components, host-side path
//! syntax) and [`namespace`] (links are never followed outside the sandbox).
//! Other deliberate choices: volume mount points of absent volumes resolve
//! with Win32 error 21 ("The device is not ready."); WMI result codes that
//! upstream never pinned down are the constants in [`storage::wmi`].
//!
//! The Windows facts this host shares with the HostProcess backend (path
//! rules, the proxy's error texts, credential encoding, disk locations, the
//! release, [`HostError`]) live in a module of their own that both use, so
//! a build with `host-process` alone compiles none of the simulator; they
//! are re-exported here under the names they always had.

pub mod disk;
pub mod filesystem;
pub mod hotplug;
pub mod iscsi;
pub mod latency;
#[cfg(feature = "server")]
pub mod layout;
pub mod namespace;
pub mod seed;
pub mod smb;
pub mod state;
pub mod storage;
pub mod system;
pub mod volume;
mod wine;

pub use crate::win::ProxyRelease;
use crate::win::error;
pub use crate::win::path;
pub(crate) use crate::win::{credential, location, release, texts};
pub use error::{HostError, HostErrorKind, HostResult};

pub use disk::{DiskIds, DiskLocation};
pub use hotplug::{HotAttach, HotDisk, HotplugError};
pub use storage::DetachedDisk;

pub use iscsi::NodeDisks;
pub use latency::LatencyProfile;
#[cfg(feature = "server")]
pub use layout::Layout;
pub use seed::{HostConfig, NodeSeed};
pub use state::{Host, HostState, MountPointInfo, Snapshot, temporary_sandbox};
pub use volume::VolumeStats;

#[cfg(test)]
mod tests;
