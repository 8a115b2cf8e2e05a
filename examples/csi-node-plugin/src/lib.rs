//! A Windows CSI node plugin built on `csi-proxy-client`: the CSI v1
//! Identity and Node services, with all host work done through
//! [`csi_proxy_client::node::Node`].
//!
//! [`plugin::Plugin`] implements both services; [`serve::serve`] serves them
//! on the AF_UNIX socket kubelet dials.

pub use csi_node_server::csi::v1 as csi;
pub mod plugin;
pub mod serve;
