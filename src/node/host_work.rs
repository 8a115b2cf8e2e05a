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
//!
//! That task ends with the call at the latest when the process does, and
//! a `FormatVolume` can also end without its outcome (the request
//! timeout, a lost connection, a restarted proxy), while the host goes on
//! formatting. So a format is also recorded in the node's
//! [`NodeRecords`](super::NodeRecords) (kind `format`, keyed by volume id)
//! before it is sent, and the record is removed only when the host has
//! answered, or shows the volume formatted. A call that finds the record
//! polls `IsVolumeFormatted` instead of formatting, and fails with
//! [`Error::FormatPending`] (UNAVAILABLE: retry) while the volume still
//! shows no file system. The record is taken in one step
//! (`NodeRecords::claim`) before the volume is checked: two `Node`s over
//! one set of records (a driver that rebuilds its `Node`) never both
//! format. With [`NodeRecords::directory`](super::NodeRecords::directory)
//! it survives a restart of the plugin.
//!
//! What may be formatted at all ([`Node::may_format`]): a volume Windows
//! shows with no file system may still hold data (a BitLocker volume
//! locked without its key, ext4 or XFS in a basic-data partition, NTFS
//! Windows no longer mounts). Linux's mount-utils formats only what
//! `blkid -p` finds no signature on (`mount_linux.go`,
//! `formatAndMountSensitive`, `getDiskFormat`); azuredisk-csi-driver's
//! Windows path formats whatever `IsVolumeFormatted` calls unformatted
//! (`pkg/mounter/safe_mounter_windows.go`, `FormatAndMount`), with `Force`
//! from csi-proxy v1.3.0 (`pkg/os/volume/api.go`, `FormatVolume`).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::watch;
use tracing::Instrument;

use super::Node;
use crate::{Error, ErrorKind};

/// The records' kind of a format sent or about to be (keyed by volume id).
const FORMAT: &str = "format";
/// The records' kind of a partition this node created (keyed by volume id).
pub(super) const PARTITION: &str = "partition";
/// How often a pending format's volume is asked whether it is formatted.
const POLL: Duration = Duration::from_secs(1);

/// This process, as the format records name it: its id and when it first
/// wrote one, so that a restarted plugin (even one given the same id)
/// tells its own records from its predecessor's.
fn this_process() -> &'static str {
    static ME: OnceLock<String> = OnceLock::new();
    ME.get_or_init(|| {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        format!("{}-{}", std::process::id(), since.as_nanos())
    })
}

/// A format record's value: what stage the format is at, and by whom.
fn mark(stage: &str) -> String {
    format!("{stage} by process {}", this_process())
}

/// Whether a call's failure leaves its outcome at the host unknown.
fn outcome_unknown(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::TimedOut)
}

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
    pub(super) async fn ensure_formatted(&self, disk: u32, id: &str) -> Result<(), Error> {
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
                let result = registration
                    .node
                    .format_if_blank(disk, &registration.id)
                    .await;
                drop(registration);
                result
            };
            return match tokio::spawn(work.in_current_span()).await {
                Ok(result) => result,
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            };
        }
    }

    /// The check and the format, within the bound of formats at once,
    /// recorded before the format is sent (see the module docs).
    async fn format_if_blank(&self, disk: u32, id: &str) -> Result<(), Error> {
        let volume = self.volume()?;
        let records = &self.inner.options.records;
        if !records.claim(FORMAT, id, &mark("checking"))? {
            let found = records.get(FORMAT, id)?.unwrap_or_default();
            return self.await_format(id, &found).await;
        }
        // Checked once this call alone may format it (another `Node` over
        // these records may have formatted it just before), and refused
        // before waiting for a format slot: a formatted volume never
        // waits behind other volumes' formats.
        let blank = async {
            if volume.is_formatted(id).await? {
                return Ok(false);
            }
            self.may_format(disk, id).await.map(|()| true)
        };
        match blank.await {
            Ok(true) => {}
            other => {
                records.remove(FORMAT, id)?;
                return other.map(drop);
            }
        }
        let _permit = self
            .inner
            .format_permits
            .acquire()
            .await
            .expect("the format semaphore is never closed");
        records.put(FORMAT, id, &mark("sent"))?;
        tracing::info!(volume = %id, "formatting NTFS");
        match volume.format(id).await {
            Err(e) if outcome_unknown(&e) => {
                tracing::warn!(volume = %id, error = %e, "the format's outcome is unknown: the host may still be formatting; it is not sent again until the volume shows formatted");
                Err(e)
            }
            result => {
                records.remove(FORMAT, id)?;
                result
            }
        }
    }

    /// A format of `id` recorded as `found`: waits (polling
    /// `IsVolumeFormatted`) for the volume to show formatted, then forgets
    /// the record; [`Error::FormatPending`] if it has not within half the
    /// operation deadline. A record a previous process left while it was
    /// only checking (it never sent the format) is forgotten and the
    /// format made again from the start.
    async fn await_format(&self, id: &str, found: &str) -> Result<(), Error> {
        let records = &self.inner.options.records;
        if found.starts_with("checking") && !found.ends_with(this_process()) {
            tracing::info!(volume = %id, record = found, "forgetting a format a previous process checked but never sent");
            records.remove(FORMAT, id)?;
            return Box::pin(self.format_if_blank_again(id)).await;
        }
        let volume = self.volume()?;
        let patience = self.inner.options.deadline / 2;
        let waited = tokio::time::timeout(patience, async {
            loop {
                if volume.is_formatted(id).await? {
                    return Ok::<bool, Error>(true);
                }
                if records.get(FORMAT, id)?.is_none() {
                    // Its holder ended without formatting (it refused, or
                    // the host answered a failure): no format is under way.
                    return Ok(false);
                }
                tracing::info!(volume = %id, record = found, "waiting for a format sent earlier");
                tokio::time::sleep(POLL).await;
            }
        })
        .await;
        match waited {
            Ok(Ok(true)) => {
                // Only a record of a format sent goes; a check running in
                // this process removes its own.
                if records
                    .get(FORMAT, id)?
                    .is_some_and(|r| r.starts_with("sent"))
                {
                    records.remove(FORMAT, id)?;
                }
                Ok(())
            }
            Ok(Ok(false)) => Box::pin(self.format_if_blank_again(id)).await,
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::FormatPending {
                volume: id.to_string(),
                since: found.to_string(),
            }),
        }
    }

    /// [`Node::format_if_blank`] for a volume whose disk is looked up.
    async fn format_if_blank_again(&self, id: &str) -> Result<(), Error> {
        let disk = self.volume()?.disk_of(id).await?;
        self.format_if_blank(disk, id).await
    }

    /// Whether volume `id` of disk `disk`, which shows no file system, may
    /// be formatted: [`Error::MayHoldData`] unless the node can show it
    /// holds nothing. HostProcess mode reads its partition's first and last
    /// MiB for a known signature (`crate::win::signatures`). Through the proxy,
    /// which cannot read sectors, only a partition this node created (a
    /// `partition` record) may be.
    pub(super) async fn may_format(&self, disk: u32, id: &str) -> Result<(), Error> {
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            return match backend.volume_signature(id).await? {
                None => Ok(()),
                Some(found) => Err(Error::MayHoldData {
                    disk,
                    volume: id.to_string(),
                    why: format!(
                        "Windows shows no file system on it, but its sectors hold {found}"
                    ),
                }),
            };
        }
        if self.inner.options.records.get(PARTITION, id)?.is_some() {
            return Ok(());
        }
        Err(Error::MayHoldData {
            disk,
            volume: id.to_string(),
            why: "Windows shows no file system on it and this node did not create its partition; \
                  through the CSI Proxy the node cannot read its sectors to show it is blank \
                  (a BitLocker-locked volume, ext4 or XFS in a basic-data partition, or NTFS \
                  Windows no longer mounts all look so)"
                .into(),
        })
    }
}
