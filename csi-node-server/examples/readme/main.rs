//! The README's `csi-node-server` examples, compiled (`tests/readme.rs`
//! checks that the README shows them as they are here). They are not run:
//! they serve on kubelet's socket over the CSI Proxy of a Windows node.

// As written in the README (one-line methods and all); compiled, not run.
#[rustfmt::skip]
#[allow(dead_code)]
mod page;
#[rustfmt::skip]
#[allow(dead_code)]
mod layered;

fn main() {}
