//! NodeGetVolumeStats in one call: the figures and condition of what a
//! staged path reaches, a disk's volume or an SMB share's link.

use super::{Node, VolumeUsage, outcome_unknown, path};
use crate::Error;

/// Inodes of a file system: what Unix file systems count and NTFS does not
/// (it has no fixed number of files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InodeUsage {
    /// Inodes the file system holds.
    pub total: u64,
    /// Inodes in use.
    pub used: u64,
    /// Inodes free to the plugin's process.
    pub available: u64,
}

/// Whether what backs a staged path is healthy, as CSI's `VolumeCondition`
/// says it: `abnormal` with a message for an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeCondition {
    /// Something is known to be wrong with the volume.
    pub abnormal: bool,
    /// What was seen, healthy or not.
    pub message: String,
}

/// What [`Node::volume_stats`] tells of a staged path. Which mode tells
/// what:
///
/// | the plugin runs | a disk's volume | an SMB share's link | inodes | when its own read fails |
/// |---|---|---|---|---|
/// | HostProcess, on Windows | bytes: `GetDiskFreeSpaceExW` on the path, which follows the mount point | bytes: the same read, which follows the link to the share | never (NTFS) | asks the host (WMI, Win32): the volume behind the path and its bytes; for a link with none, the share behind it and its global mapping's status (`MSFT_SmbGlobalMapping`), abnormal when not OK or gone |
/// | proxy, on Windows | bytes: the plugin's own `GetDiskFreeSpaceExW` | bytes: the same read | never (NTFS) | asks the proxy: `GetVolumeIDFromTargetPath`, `GetVolumeStats` (bytes); for a link with no volume, `PathExists` and `IsSymlink`, and no figures: the proxy cannot read a share's space or its mapping, and the message says so |
/// | proxy, elsewhere, with a [local root](super::NodeOptions::local_root) (the simulated node) | bytes: the plugin's own `statvfs` of the mapped path | bytes: the same | `statvfs`'s counts, when it has them | as on Windows |
/// | proxy, elsewhere, without one | from the proxy: 2 calls | no figures: 3 calls | never | (always) |
/// | HostProcess over a fake (unit tests), no local root | from the fake host | bytes and the mapping's status from the fake host | never | (always) |
///
/// A path with nothing there is [`Error::NotStaged`]; a directory with no
/// volume behind it (a mount point whose disk went away looks so) is
/// abnormal, with no figures.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VolumeStats {
    /// Total, used and available bytes; `None` when they could not be
    /// read (the condition says why).
    pub usage: Option<VolumeUsage>,
    /// Inodes, where the read counts them (never on Windows).
    pub inodes: Option<InodeUsage>,
    /// Whether the volume is healthy, and what was seen.
    pub condition: VolumeCondition,
}

impl VolumeStats {
    fn healthy(usage: VolumeUsage, inodes: Option<InodeUsage>, message: &str) -> Self {
        VolumeStats {
            usage: Some(usage),
            inodes,
            condition: VolumeCondition {
                abnormal: false,
                message: message.to_string(),
            },
        }
    }

    fn abnormal(message: String) -> Self {
        VolumeStats {
            usage: None,
            inodes: None,
            condition: VolumeCondition {
                abnormal: true,
                message,
            },
        }
    }
}

/// The condition of a volume whose figures were read.
const READABLE: &str = "the volume is mounted and readable";

impl Node {
    /// NodeGetVolumeStats: the figures and condition of what the staged
    /// path `path` (a staging path, or a target linked to one) reaches,
    /// whatever backs it (a disk's volume mounted there, an SMB share's
    /// link), in both modes. See [`VolumeStats`] for which mode tells what.
    ///
    /// Read by this process itself first, at no host call, as
    /// [`Node::usage`] does; only where that read cannot be made (or
    /// fails) is the host asked: the volume behind the path and its stats,
    /// and for a path with no volume behind it, whether it is there and a
    /// link (a share's, whose mapping HostProcess mode reads).
    ///
    /// Fails with [`Error::NotStaged`] when nothing is at `path`, with
    /// [`Error::InvalidPath`] for a path the node refuses, and when the
    /// host cannot be asked
    /// ([`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable),
    /// [`ErrorKind::TimedOut`](crate::ErrorKind::TimedOut)); what is wrong
    /// with the volume itself is its condition.
    pub async fn volume_stats(&self, path: &str) -> Result<VolumeStats, Error> {
        let path = path::local(path)?;
        let unread = match self.local_space(&path) {
            Ok((usage, inodes)) => return Ok(VolumeStats::healthy(usage, inodes, READABLE)),
            Err(why) => why,
        };
        tracing::debug!(path, why = unread, "volume stats from the host");
        self.bounded("volume_stats", async {
            let volume = self.volume()?;
            let failed = match volume.volume_at(&path).await {
                Ok(id) if !id.is_empty() => match volume.stats(&id).await {
                    Ok((total, used)) => {
                        let total = u64::try_from(total).unwrap_or(0);
                        let used = u64::try_from(used).unwrap_or(0);
                        let usage = VolumeUsage {
                            total_bytes: total,
                            used_bytes: used,
                            available_bytes: total.saturating_sub(used),
                        };
                        return Ok(VolumeStats::healthy(usage, None, READABLE));
                    }
                    Err(e) if outcome_unknown(&e) => return Err(e),
                    // A volume is there, and cannot be read.
                    Err(e) => {
                        return Ok(VolumeStats::abnormal(format!(
                            "the volume cannot be read: {e}"
                        )));
                    }
                },
                Err(e) if outcome_unknown(&e) => return Err(e),
                Ok(_) => None,
                Err(e) => Some(e),
            };
            if let Some(e) = &failed {
                tracing::debug!(path, error = %e, "no volume named behind the path");
            }
            // No volume the host names behind the path: what is there?
            let fs = self.fs()?;
            if !fs.exists(&path).await? {
                return Err(Error::NotStaged { path: path.clone() });
            }
            if !fs.is_link(&path).await? {
                return Ok(VolumeStats::abnormal(format!("no volume behind {path}")));
            }
            self.linked_stats(&path, unread).await
        })
        .await
    }

    /// The stats of a link with no volume behind it (a share's): in
    /// HostProcess mode the share's space and its mapping's status; through
    /// the proxy what the plugin's own read said, since the proxy cannot
    /// read a mapping.
    async fn linked_stats(&self, path: &str, unread: String) -> Result<VolumeStats, Error> {
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            let view = backend.share_view(path.to_string()).await?;
            let share = super::smb::host_process_share_stats(view, path);
            if let Some(why) = &share.unread {
                tracing::debug!(path, why, "no SMB share figures");
            }
            return Ok(VolumeStats {
                usage: share.usage,
                inodes: None,
                condition: match share.trouble {
                    Some(trouble) => VolumeCondition {
                        abnormal: true,
                        message: trouble,
                    },
                    None => VolumeCondition {
                        abnormal: false,
                        message: "the SMB share is mapped and readable".to_string(),
                    },
                },
            });
        }
        let _ = path;
        Ok(VolumeStats {
            usage: None,
            inodes: None,
            condition: VolumeCondition {
                abnormal: false,
                message: format!(
                    "the plugin cannot read the share's space: {unread}; \
                     the SMB mapping's status cannot be read through the proxy"
                ),
            },
        })
    }
}
