//! HostProcess mode on a real Windows node, and the guard that keeps the
//! real-node suite to what the workflow made for it.
//!
//! Three parts (in `tests/real_node/`):
//!
//! - `guard.rs`, everywhere (Linux, Wine, Windows): which disks, paths and
//!   shares the suite may change, decided from the workspace manifest the
//!   workflow writes (`scripts/windows/new-test-node.ps1`), and a check
//!   that no file of the suite but `guarded.rs` makes a changing call.
//! - `boundary.rs`, Windows and Wine (`scripts/test-windows.sh --test
//!   host_process_windows`): the Windows boundary on what every Windows
//!   has; a few `#[ignore]`d tests read what only real Windows has (the OS
//!   disk's partition types, symbolic links).
//! - `suite.rs`, `#[ignore]`d, real Windows only: every `Node` operation in
//!   HostProcess mode, or through a real csi-proxy
//!   (`CSI_REAL_NODE_MODE=proxy`), against the VHDX disks, the localhost
//!   SMB share and the iSCSI target the workflow made; each changing call
//!   goes through `guarded.rs`, which checks the disk or path against the
//!   manifest first. `.github/workflows/windows.yml` runs it:
//!   `cargo test --features host-process --test host_process_windows -- --ignored --test-threads=1`.
//!   It ran nowhere before that workflow's first run.

mod real_node;
