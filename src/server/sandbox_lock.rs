//! One server per sandbox: an exclusive OS file lock on
//! `<sandbox>/csi-proxy-server.lock`, held for the server's life.
//!
//! The lock is taken before the server touches anything (no socket bound,
//! nothing in the sandbox created or removed), so a second server given the
//! same sandbox refuses at once and names the holder, whose pid the lock
//! file records. The OS releases the lock when the holder exits, however it
//! exits; a stale lock file is therefore harmless.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

use super::ServerError;

/// The lock file's name inside the sandbox.
const LOCK_FILE: &str = "csi-proxy-server.lock";

/// A held sandbox lock; dropping it releases the lock.
#[derive(Debug)]
pub(super) struct SandboxLock {
    _file: File,
}

impl SandboxLock {
    /// Locks `sandbox` (creating the directory if needed), or says who holds it.
    pub(super) fn acquire(sandbox: &Path) -> Result<Self, ServerError> {
        let shown = sandbox.display().to_string();
        let io_error = |e: std::io::Error| {
            ServerError::Host(crate::host::HostError::invalid_argument(format!(
                "sandbox {shown}: cannot lock: {e}"
            )))
        };
        std::fs::create_dir_all(sandbox).map_err(io_error)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(sandbox.join(LOCK_FILE))
            .map_err(io_error)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                // On Windows the holder's lock also keeps others from reading.
                let _ = file.read_to_string(&mut holder);
                let holder = match holder.trim() {
                    "" => "another process".to_owned(),
                    text => text.to_owned(),
                };
                return Err(ServerError::SandboxInUse {
                    sandbox: sandbox.display().to_string(),
                    holder,
                });
            }
            Err(TryLockError::Error(e)) => return Err(io_error(e)),
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "pid {}", std::process::id()))
            .map_err(io_error)?;
        Ok(Self { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_sandbox_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = dir.path().join("node");
        let first = SandboxLock::acquire(&sandbox).unwrap();
        match SandboxLock::acquire(&sandbox) {
            Err(ServerError::SandboxInUse { holder, .. }) => {
                if cfg!(unix) {
                    assert_eq!(holder, format!("pid {}", std::process::id()));
                }
            }
            other => panic!("{other:?}"),
        }
        drop(first);
        SandboxLock::acquire(&sandbox).unwrap();
    }
}
