//! The `iscsi` API group.
//!
//! iSCSI group: the node's iSCSI initiator: target portals, discovery, sessions and the disks they expose.
//!
//! Versions, oldest first: [`v1alpha1`], [`v1alpha2`]. Each module holds the messages of its version, its `Client`, and its `IscsiApi` trait.
/// Name of the API group.
pub const GROUP: &str = "iscsi";
/// The versions of this group, oldest first.
pub const VERSIONS: &[&str] = &["v1alpha1", "v1alpha2"];
pub mod v1alpha1;
pub mod v1alpha2;
