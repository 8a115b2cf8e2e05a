//! The `smb` API group.
//!
//! SMB group: global SMB mappings of remote shares, optionally linked into a local path.
//!
//! Versions, oldest first: [`v1`], [`v1alpha1`], [`v1beta1`], [`v1beta2`]. Each module holds the messages of its version, its `Client`, and its `SmbApi` trait.
pub mod v1;
pub mod v1alpha1;
pub mod v1beta1;
pub mod v1beta2;
