//! The CSI node server of a Windows CSI plugin, as a library: the CSI v1
//! protos ([`csi::v1`]), with server and client stubs for the Identity, Node
//! and Controller services.

pub mod csi;
