//! The `volume` API group.
//!
//! Volume group: volumes on disk partitions: format, mount into a directory, resize, statistics and path lookups.
//!
//! Versions, oldest first: [`v1alpha1`], [`v1beta1`], [`v1beta2`], [`v1beta3`], [`v1`], [`v2alpha1`]. Each module holds the messages of its version, its `Client`, and its `VolumeApi` trait.
/// Name of the API group.
pub const GROUP: &str = "volume";
/// The versions of this group, oldest first.
pub const VERSIONS: &[&str] = &[
    "v1alpha1",
    "v1beta1",
    "v1beta2",
    "v1beta3",
    "v1",
    "v2alpha1",
];
pub mod v1alpha1;
pub mod v1beta1;
pub mod v1beta2;
pub mod v1beta3;
pub mod v1;
pub mod v2alpha1;
