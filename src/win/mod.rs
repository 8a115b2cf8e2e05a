//! What Windows and the CSI Proxy do, as both backends need it: the
//! simulated host (`host`, feature `server`) and the HostProcess backend
//! (`host_process`, feature `host-process`) take their path rules and
//! working-directory confinement, the proxy's failure texts in each
//! release's words, the disk location format, the SMB credential encoding
//! and the error type from here, so that they agree and a production
//! HostProcess build compiles none of the simulator.
//!
//! The modules are re-exported under `host` (`host::path`, `host::texts`,
//! ...), where the reference server's users have always found them.

pub mod credential;
pub(crate) mod error;
pub mod location;
pub mod path;
pub mod release;
pub mod signatures;
// Some texts are only the HostProcess backend's (the simulator words
// those failures itself or never fails there).
#[cfg_attr(not(feature = "host-process"), allow(dead_code))]
pub mod texts;

pub use release::ProxyRelease;
