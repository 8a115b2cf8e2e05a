//! The `disk` API group.
//!
//! Disk group: enumerates the node's disks, reports their identifiers, size and online state, and initialises a blank disk with one data partition.
//!
//! Versions, oldest first: [`v1alpha1`], [`v1beta1`], [`v1beta2`], [`v1beta3`], [`v1`]. Each module holds the messages of its version, its `Client`, and its `DiskApi` trait.
/// Name of the API group.
pub const GROUP: &str = "disk";
/// The versions of this group, oldest first.
pub const VERSIONS: &[&str] = &["v1alpha1", "v1beta1", "v1beta2", "v1beta3", "v1"];
pub mod v1alpha1;
pub mod v1beta1;
pub mod v1beta2;
pub mod v1beta3;
pub mod v1;
