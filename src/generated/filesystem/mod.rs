//! The `filesystem` API group.
//!
//! Filesystem group: directory and link operations on paths below the kubelet working directories.
//!
//! Versions, oldest first: [`v1alpha1`], [`v1beta1`], [`v1beta2`], [`v1`], [`v2alpha1`]. Each module holds the messages of its version, its `Client`, and its `FilesystemApi` trait.
/// Name of the API group.
pub const GROUP: &str = "filesystem";
/// The versions of this group, oldest first.
pub const VERSIONS: &[&str] = &["v1alpha1", "v1beta1", "v1beta2", "v1", "v2alpha1"];
pub mod v1alpha1;
pub mod v1beta1;
pub mod v1beta2;
pub mod v1;
pub mod v2alpha1;
