//! The `system` API group.
//!
//! System group: BIOS data and Windows services of the node.
//!
//! Versions, oldest first: [`v1alpha1`]. Each module holds the messages of its version, its `Client`, and its `SystemApi` trait.
pub mod v1alpha1;
