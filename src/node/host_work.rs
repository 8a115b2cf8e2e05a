//! A volume's host work tracked past its caller.
//!
//! A format goes on at the host after its caller has given up: csi-proxy
//! runs it without the call's context (v1.1.3 starts PowerShell with
//! `exec.Command`; v1.3.0 calls `MSFT_Volume.Format` through WMI), and the
//! HostProcess backend runs it on a blocking thread nobody can stop. When
//! kubelet's deadline passed during a format, a retry used to find the
//! volume still unformatted, format it again and mount it; then the first
//! format ended and wiped the mounted volume (azuredisk-csi-driver#2690).
//!
//! Here the check and the format of a volume run in a task of their own,
//! registered under the volume id until they end. A caller that finds a
//! task registered for its volume waits for it to end (its own deadline
//! still applies), then checks again: a volume is never formatted twice by
//! one `Node` (and its clones). At most
//! [`NodeOptions::max_concurrent_formats`](super::NodeOptions::max_concurrent_formats)
//! formats run at once, the bound azuredisk-csi-driver keeps
//! (`--max-concurrent-format`, 2 by default, pkg/azuredisk/azuredisk_option.go);
//! a permit is held until the host answers, not released after a timeout
//! as k8s mount-utils' `WithMaxConcurrentFormat` does, so the bound holds
//! at the host too.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;
use tracing::Instrument;

use super::Node;
use crate::Error;

/// The volumes whose format task is running, each with the channel that
/// closes when it ends.
pub(super) type Running = Mutex<HashMap<String, watch::Receiver<()>>>;

/// A running format task's registration: dropped when the task ends (or
/// panics), it removes the volume's entry and then wakes the waiters.
struct Registration {
    node: Node,
    id: String,
    _ended: watch::Sender<()>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        running(&self.node).remove(&self.id);
        // `_ended` is dropped after this: waiters find the entry gone.
    }
}

fn running(node: &Node) -> std::sync::MutexGuard<'_, HashMap<String, watch::Receiver<()>>> {
    node.inner.formats.lock().unwrap_or_else(|p| p.into_inner())
}

impl Node {
    /// Formats volume `id` NTFS unless it is formatted already, in a task
    /// that goes on if the caller gives up; waits for a format of `id`
    /// already running instead of starting another (see the module docs).
    pub(super) async fn ensure_formatted(&self, id: &str) -> Result<(), Error> {
        loop {
            let (sender, ended) = watch::channel(());
            // The guard ends with this block: the map is never held across
            // an await (nor the future made !Send by it).
            let already = {
                let mut running = running(self);
                match running.get(id) {
                    Some(ended) => Some(ended.clone()),
                    None => {
                        running.insert(id.to_string(), ended);
                        None
                    }
                }
            };
            if let Some(mut ended) = already {
                tracing::info!(volume = %id, "waiting for the format already running");
                // Only ever closed, never sent to: this returns when the task ends.
                let _ = ended.changed().await;
                continue;
            }
            let registration = Registration {
                node: self.clone(),
                id: id.to_string(),
                _ended: sender,
            };
            let work = async move {
                let result = registration.node.format_if_blank(&registration.id).await;
                drop(registration);
                result
            };
            return match tokio::spawn(work.in_current_span()).await {
                Ok(result) => result,
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            };
        }
    }

    /// The check and the format, within the bound of formats at once.
    async fn format_if_blank(&self, id: &str) -> Result<(), Error> {
        let volume = self.volume()?;
        if volume.is_formatted(id).await? {
            return Ok(());
        }
        let _permit = self
            .inner
            .format_permits
            .acquire()
            .await
            .expect("the format semaphore is never closed");
        tracing::info!(volume = %id, "formatting NTFS");
        volume.format(id).await
    }
}
