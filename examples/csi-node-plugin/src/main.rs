//! `csi-node-plugin`: serves the CSI Identity and Node services.

fn main() {}
