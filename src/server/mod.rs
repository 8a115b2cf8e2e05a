//! The reference CSI Proxy server: services for every group version,
//! listeners and the builder (work in progress).

#[cfg(windows)]
pub mod pipe;
