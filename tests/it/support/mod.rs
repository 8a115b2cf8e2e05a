//! Helpers shared by several modules of the suite.
// Each helper serves the modules of one platform or feature set, so on any
// one build some of them go unused.
#![allow(dead_code)]

#[macro_use]
pub mod unserved;

pub mod attacks;
pub mod front;
pub mod spans;

/// Held by whoever binds the reference server's fixed pipe names on
/// Windows (every server there binds `\\.\pipe\csi-proxy-<group>-<version>`
/// whatever its socket directory), so the tests of all modules that start
/// one take turns: they share this one process.
#[cfg(windows)]
pub static SERVER_PIPES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
