//! The crate's integration suite as one test binary (`cargo test --test it`):
//! one module per part, each named as its file was when every file was a
//! binary of its own, so a test's path starts with its part
//! (`node::mock_v1::...`, `host_process::...`) and name filters select a
//! part as before (`cargo test --all-features host_process`). One binary
//! links the crate once instead of once per part.
//!
//! Kept out as binaries of their own: `no_panic` (its panic hook counts
//! every panic of the process), `real_proxy` (run alone by
//! `scripts/real-proxy.sh`) and `host_process_windows` (run alone on
//! Windows, as `docs/host-process.md` says).
//!
//! A new part: a file `tests/it/NAME.rs` and a `mod NAME;` line below; it
//! reaches the shared helpers as `crate::scenarios`, `crate::node_support`
//! and `crate::support`, and `on_both_backends!`, `node_tests!` and
//! `unserved!` are in scope without an import.

#[macro_use]
mod support;

#[cfg(feature = "mock")]
#[macro_use]
mod scenarios;

#[cfg(feature = "mock")]
#[allow(dead_code)]
#[macro_use]
mod node_support;

mod adversarial;
mod adversary_42;
mod adversary_kill;
mod adversary_session2;
mod adversary_session3;
mod adversary_session4;
mod adversary_session5;
mod cancellation;
mod chaos;
mod client_unix;
mod concurrency;
mod confinement;
mod discovery;
mod errors;
mod field_time;
mod flows;
mod format_safety;
mod host_process;
mod identity_safety;
mod keepalive_policy;
mod local_stats;
mod mock;
mod mockall;
mod node;
mod node_connect;
mod node_errors;
mod node_scenarios;
mod node_smb_field;
mod operations_end;
mod protocol_safety;
mod public_shape;
mod quirks;
mod retries;
mod rpc_matrix;
mod server_connection;
mod server_process;
mod windows_pipes;
