//! The `smb` API group.
//!
//! SMB group: global SMB mappings of remote shares, optionally linked into a local path.
//!
//! Versions, oldest first: [`v1alpha1`], [`v1beta1`], [`v1beta2`], [`v1`]. Each module holds the messages of its version, its `Client`, and its `SmbApi` trait.
/// Name of the API group.
pub const GROUP: &str = "smb";
/// The versions of this group, oldest first.
pub const VERSIONS: &[&str] = &["v1alpha1", "v1beta1", "v1beta2", "v1"];
pub mod v1alpha1;
pub mod v1beta1;
pub mod v1beta2;
pub mod v1;
