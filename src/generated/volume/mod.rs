//! The `volume` API group.
//!
//! Volume group: volumes on disk partitions: format, mount into a directory, resize, statistics and path lookups.
//!
//! Versions, oldest first: [`v1`], [`v1alpha1`], [`v1beta1`], [`v1beta2`], [`v1beta3`], [`v2alpha1`]. Each module holds the messages of its version, its `Client`, and its `VolumeApi` trait.
pub mod v1;
pub mod v1alpha1;
pub mod v1beta1;
pub mod v1beta2;
pub mod v1beta3;
pub mod v2alpha1;
