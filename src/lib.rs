//! Typed client for the Kubernetes CSI Proxy (work in progress; see README).

#[cfg(feature = "server")]
pub mod host;

#[cfg(feature = "server")]
pub mod server;
