//! The error cases the specs name, on both backends: the exact gRPC code
//! (`UNKNOWN` for every proxy failure, `INVALID_ARGUMENT` where upstream
//! would crash, `UNIMPLEMENTED` for methods an endpoint lacks), the
//! message's gist, and that the failed call left the host as it was.
// On Windows the server halves use named pipes and take turns.
#![cfg(feature = "mock")]

mod disk;
mod filesystem;
mod iscsi;
mod smb;
mod system;
mod unimplemented;
mod volume;
