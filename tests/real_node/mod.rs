//! See the crate docs in `tests/host_process_windows.rs`.

mod guard;

#[cfg(all(windows, feature = "host-process"))]
mod boundary;
#[cfg(all(windows, feature = "host-process"))]
mod guarded;
#[cfg(all(windows, feature = "host-process"))]
mod suite;
