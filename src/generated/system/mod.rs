//! The `system` API group.
//!
//! System group: BIOS data and Windows services of the node.
//!
//! Versions, oldest first: [`v1alpha1`]. Each module holds the messages of its version, its `Client`, and its `SystemApi` trait.
/// Name of the API group.
pub const GROUP: &str = "system";
/// The versions of this group, oldest first.
pub const VERSIONS: &[&str] = &["v1alpha1"];
pub mod v1alpha1;
