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
//! Here a volume's format is decided and done under its claim
//! (`NodeRecords::claim_exclusive`, named `format <volume id>`), which is
//! held host-wide: by every `Node` of the process over the same records,
//! and with a directory store by every process on the host, and which the
//! OS releases when its holder dies. The claim is taken by the caller
//! (cancel-safe: a caller that gives up while waiting holds nothing and
//! leaves no task behind); the check and the format then run in a task of
//! their own that holds it until the host has answered, whether or not the
//! caller still waits. At most
//! [`NodeOptions::max_concurrent_formats`](super::NodeOptions::max_concurrent_formats)
//! formats run at once in a `Node`, the bound azuredisk-csi-driver keeps
//! (`--max-concurrent-format`, 2 by default, pkg/azuredisk/azuredisk_option.go);
//! a permit is held until the host answers, not released after a timeout
//! as k8s mount-utils' `WithMaxConcurrentFormat` does, so the bound holds
//! at the host too.
//!
//! A `FormatVolume` can end without its outcome (the request timeout, a
//! lost connection, a restarted proxy, a plugin that died), while the host
//! goes on formatting. So a format is recorded (kind `format`, keyed by
//! volume id: when it was sent and by which epoch) before it is sent, and
//! the record goes only when the host has answered, or shows the volume
//! formatted. Whoever takes the claim next decides from that record and
//! the host alone (`protocol::format_step`): formatted, the record and the
//! partition licence go; not formatted within
//! [`NodeOptions::format_settle`](super::NodeOptions::format_settle) of
//! the send, [`Error::FormatPending`] (UNAVAILABLE: retry), never a second
//! format; after it, the volume is checked again as a blank one. A record
//! that cannot be read fails the stage with an error naming its file.
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
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tracing::Instrument;

use super::protocol::{FormatRecord, FormatStep, format_step};
use super::{Node, outcome_unknown};
use crate::Error;

/// The records' kind of a format sent (keyed by volume id).
const FORMAT: &str = "format";
/// The records' kind of a partition licence: a partition this node's
/// `PartitionDisk` created, formattable through the proxy until its format
/// is known done (keyed by volume id).
pub(super) const PARTITION: &str = "partition";
/// How often a pending format's volume is asked whether it is formatted.
const POLL: Duration = Duration::from_secs(1);

/// The wall clock's time in Unix seconds, as records keep it.
pub(super) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// A `format` record's text: when the format was sent (Unix seconds) and
/// by which writer ([`sent_parts`] reads it back).
fn sent_record(owner: &str) -> String {
    format!("sent {} by {owner}\n", now_secs())
}

/// A [`sent_record`]'s time (`None`: unreadable) and writer.
fn sent_parts(text: &str) -> (Option<u64>, &str) {
    let (head, writer) = text.split_once(" by ").unwrap_or((text, ""));
    let at = head
        .strip_prefix("sent ")
        .and_then(|secs| secs.trim().parse::<u64>().ok());
    (at, writer.trim())
}

/// How long this process has watched volume `id`'s record `text`
/// pending, on its monotonic clock (zero when first seen).
fn watched(id: &str, text: &str) -> Duration {
    type Seen = HashMap<(String, String), Instant>;
    static SEEN: OnceLock<Mutex<Seen>> = OnceLock::new();
    let mut seen = SEEN
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    seen.entry((id.to_lowercase(), text.to_string()))
        .or_insert_with(Instant::now)
        .elapsed()
}

/// The record of volume `id` as the protocol reads it. A format sent is
/// as old as the lesser of the wall clock's time since it was sent and
/// the time this process has watched it pending on its own monotonic
/// clock: a step of the wall clock (a time sync at boot) never makes a
/// format still running look settled. Text it cannot read is pending
/// (never a second format).
fn read_record(id: &str, text: Option<&str>) -> FormatRecord {
    let Some(text) = text else {
        return FormatRecord::None;
    };
    let (sent, _) = sent_parts(text);
    let wall = sent
        .and_then(|at| now_secs().checked_sub(at))
        .map(Duration::from_secs);
    FormatRecord::Sent {
        elapsed: wall.map(|wall| wall.min(watched(id, text))),
    }
}

impl Node {
    /// Formats volume `id` NTFS unless it is formatted already, under the
    /// volume's claim, in a task that goes on if the caller gives up (see
    /// the module docs). `made_now`: the caller's own `PartitionDisk`
    /// made the volume moments ago, under the disk's claim, on a disk
    /// listing no volume: the host has just shown it blank, and it is not
    /// asked again (`IsVolumeFormatted` costs a PowerShell or WMI call).
    pub(super) async fn ensure_formatted(
        &self,
        disk: u32,
        id: &str,
        made_now: bool,
    ) -> Result<(), Error> {
        let records = &self.inner.options.records;
        let claim = records.claim_exclusive(&format!("format {id}")).await?;
        let node = self.clone();
        let id = id.to_string();
        let work = async move {
            let result = node.format_claimed(disk, &id, made_now).await;
            drop(claim);
            result
        };
        self.joined(self.spawn(work.in_current_span()).await)
    }

    /// The protocol's step for volume `id`, its claim held: what its
    /// record and the host show decide.
    async fn format_claimed(&self, disk: u32, id: &str, made_now: bool) -> Result<(), Error> {
        let volume = self.volume()?;
        let records = &self.inner.options.records;
        let settle = self.inner.options.format_settle;
        let patience = tokio::time::Instant::now() + self.inner.options.deadline / 2;
        let mut known_blank = made_now;
        loop {
            let text = records.get(FORMAT, id)?;
            let record = read_record(id, text.as_deref());
            // Only a new volume with no format recorded is taken as the
            // host showed it; anything else is asked.
            let formatted = match known_blank && text.is_none() {
                true => false,
                false => volume.is_formatted(id).await?,
            };
            known_blank = false;
            match format_step(record, formatted, settle) {
                FormatStep::Formatted => {
                    records.remove(FORMAT, id)?;
                    return records.remove(PARTITION, id);
                }
                FormatStep::Check => break,
                FormatStep::Pending if tokio::time::Instant::now() < patience => {
                    tracing::info!(volume = %id, record = ?text, "waiting for a format sent earlier");
                    tokio::time::sleep(POLL).await;
                }
                FormatStep::Pending => {
                    let text = text.unwrap_or_default();
                    let (_, writer) = sent_parts(&text);
                    let state = match records.is_alive(writer)? {
                        true => "running",
                        false => "ended",
                    };
                    return Err(Error::FormatPending {
                        volume: id.to_string(),
                        since: format!("{}; its writer's process has {state}", text.trim()),
                    });
                }
            }
        }
        self.may_format(disk, id).await?;
        let _permit = self
            .inner
            .format_permits
            .acquire()
            .await
            .expect("the format semaphore is never closed");
        records.put(FORMAT, id, &sent_record(&records.owner()?))?;
        tracing::info!(volume = %id, "formatting NTFS");
        match volume.format(id).await {
            Err(e) if outcome_unknown(&e) => {
                tracing::warn!(volume = %id, error = %e, "the format's outcome is unknown: the host may still be formatting; it is not sent again until the volume shows formatted or the settle time has passed");
                Err(e)
            }
            Err(e) => {
                records.remove(FORMAT, id)?;
                Err(e)
            }
            Ok(()) => {
                records.remove(FORMAT, id)?;
                records.remove(PARTITION, id)
            }
        }
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
            let found = backend.volume_signature(id).await?;
            if super::protocol::may_format(Some(found.is_some()), false) {
                return Ok(());
            }
            return Err(Error::MayHoldData {
                disk,
                volume: id.to_string(),
                why: format!(
                    "Windows shows no file system on it, but its sectors hold {}",
                    found.unwrap_or_default()
                ),
            });
        }
        let licensed = self.inner.options.records.get(PARTITION, id)?.is_some();
        if super::protocol::may_format(None, licensed) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sent_record_reads_back_its_time_and_writer() {
        let text = sent_record("epoch 7");
        let (at, writer) = sent_parts(&text);
        assert!(at.is_some_and(|at| at <= now_secs()), "{text:?}");
        assert_eq!(writer, "epoch 7");
        assert_eq!(sent_parts("garbage"), (None, ""));
        assert_eq!(
            read_record("v", Some("garbage")),
            FormatRecord::Sent { elapsed: None },
            "unreadable: pending"
        );
    }
}
