//! A disk's volume: staged (onlined, partitioned, formatted, mounted),
//! unstaged, expanded, and its usage.

use super::groups::VolumeGroup;
use super::{MountState, Node, VolumeUsage, path};
use crate::{Error, ErrorKind};

/// A write to disk `disk` that Windows refused because the disk is
/// read-only (WMI result 41002 from a disk method or 43006 from
/// `MSFT_Volume.Format` in csi-proxy's texts, or Win32 error 19, "the
/// media is write protected"), as [`Error::ReadOnlyDisk`]; any other error
/// unchanged.
fn read_only_refusal(disk: u32, e: Error) -> Error {
    use crate::HostCode;
    match e.host_code() {
        Some(HostCode::WmiResult(41002 | 43006)) | Some(HostCode::Win32(19)) => {
            Error::ReadOnlyDisk {
                disk,
                cause: e.to_string(),
            }
        }
        _ => e,
    }
}

impl Node {
    /// Stages a disk at `path`: onlines it if offline, partitions it if
    /// blank, formats its first volume NTFS if unformatted, and mounts it
    /// at `path` (parents created). Returns the volume id.
    ///
    /// Already mounted at `path` from this disk: Ok. `path` holding another
    /// volume or a link ([`Error::PathInUse`]), a directory with files
    /// ([`Error::NotEmpty`]): nothing is changed.
    ///
    /// The disk that holds Windows is never touched: [`Error::OsDisk`],
    /// before any call that changes it (see [`DiskInfo::os_disk`] for how
    /// it is found; through a proxy without volume v2alpha1 it cannot be).
    /// On a disk with several partitions the data partition is staged,
    /// never a System Reserved, EFI, MSR or recovery one: in HostProcess
    /// mode chosen by partition type (`MSFT_Partition.GptType`, `MbrType`,
    /// `IsSystem`, `IsActive`, `IsHidden`); through the proxy, whose API
    /// shows no partition type, label or flag, the largest formatted
    /// volume, else the largest (a data partition smaller than a system
    /// partition beside it cannot be told apart there).
    ///
    /// A read-only disk: in HostProcess mode it is made writable first
    /// (`MSFT_Disk.SetAttributes`, `IsReadOnly = false`). Through the proxy,
    /// whose API neither reports nor clears read-only, a blank read-only
    /// disk fails with [`Error::ReadOnlyDisk`] when Windows refuses to
    /// initialise, partition or format it; a read-only disk that already
    /// holds NTFS is **not** detected through the proxy: it is mounted
    /// read-only and writes fail later, in the pod.
    pub async fn stage_disk(&self, disk: impl Into<u32>, path: &str) -> Result<String, Error> {
        let number = disk.into();
        let path = path::local(path)?;
        self.bounded("stage_disk", self.stage_disk_at(number, &path))
            .await
    }

    async fn stage_disk_at(&self, number: u32, path: &str) -> Result<String, Error> {
        let (disk, volume, fs) = (self.disk()?, self.volume()?, self.fs()?);
        self.refuse_os_disk(number, "stage").await?;
        match self.state(path).await? {
            MountState::Mounted { volume_id } => {
                return if volume.disk_of(&volume_id).await? == number {
                    Ok(volume_id)
                } else {
                    Err(Error::PathInUse {
                        path: path.to_string(),
                        holds: format!("volume {volume_id} of another disk"),
                    })
                };
            }
            MountState::Linked => {
                return Err(Error::PathInUse {
                    path: path.to_string(),
                    holds: "a link".into(),
                });
            }
            // Proves it empty; it is made again before the mount.
            MountState::NotMounted => self.remove_empty_dir(path).await?,
            MountState::Missing => {}
        }
        self.make_writable(number).await?;
        let read_only = |e: Error| read_only_refusal(number, e);
        let prepare = || async {
            disk.partition(number).await.map_err(read_only)?;
            self.data_volume(number).await
        };
        // An online disk is the usual case: its state is read only when it
        // cannot be partitioned or shows no volume, as an offline disk
        // does; it is then brought online and prepared again.
        let id = match prepare().await {
            Ok(id) => id,
            Err(e) if matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::TimedOut) => {
                return Err(e);
            }
            Err(e) => {
                if disk.is_online(number).await? != Some(false) {
                    return Err(e);
                }
                tracing::info!(disk = number, error = %e, "bringing the disk online");
                disk.set_online(number, true).await?;
                prepare().await?
            }
        };
        // Not the OS disk's (refused above): later checks need no call.
        self.remember_data_volume(&id);
        // A format in a task of its own: it outlives this caller at the
        // host, and a retry must wait for it rather than format again.
        self.ensure_formatted(&id).await.map_err(read_only)?;
        fs.mkdir(path).await?;
        volume.mount(&id, path).await?;
        tracing::info!(disk = number, volume = %id, path, "staged");
        Ok(id)
    }

    /// HostProcess mode: clears the read-only flag of disk `n`
    /// (`MSFT_Disk.SetAttributes(IsReadOnly = false)`), so that a disk a
    /// SAN policy left read-only is never staged read-only. Through the
    /// proxy nothing can be read or done ([`Node::stage_disk`]).
    async fn make_writable(&self, n: u32) -> Result<(), Error> {
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            let read_only = backend
                .disk_objects()
                .await?
                .iter()
                .any(|o| o.number == n && o.is_read_only);
            if read_only {
                tracing::info!(disk = n, "the disk is read-only: making it writable");
                backend.make_writable(n).await?;
            }
        }
        let _ = n;
        Ok(())
    }

    /// The volume to stage on disk `n`.
    ///
    /// HostProcess mode chooses by partition type (`MSFT_Partition`
    /// `GptType`, `MbrType`, `IsSystem`, `IsActive`, `IsHidden`): the basic
    /// data partition (GPT) or data-typed partition (MBR) with a volume,
    /// never an EFI, MSR, recovery, hidden or system one, and never the
    /// active System Reserved partition of an MBR disk beside a data one;
    /// formatted before unformatted, then the largest.
    ///
    /// Through the proxy no partition type, label or flag is visible (its
    /// volume API lists a disk's volumes and tells of each only whether
    /// it is formatted and its size; the MSR has no volume and is never
    /// listed): its only volume, else the largest formatted one, else the
    /// largest. System Reserved (about 500 MiB), EFI (100 MiB) and
    /// recovery partitions are small beside a data partition, so this
    /// finds it on the layouts Windows makes; a data partition smaller
    /// than a system one beside it is not told apart there. The only
    /// system volume proxy mode knows, the one holding `C:\`, lies on the
    /// OS disk, which is refused before this.
    async fn data_volume(&self, n: u32) -> Result<String, Error> {
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            return backend
                .data_volume(n)
                .await?
                .ok_or(Error::NoVolume { disk: n });
        }
        let volume = self.volume()?;
        let ids = volume.volumes_on_disk(n).await?;
        if ids.len() <= 1 {
            return ids.into_iter().next().ok_or(Error::NoVolume { disk: n });
        }
        let mut best: Option<(i64, String)> = None;
        for id in &ids {
            if !volume.is_formatted(id).await? {
                continue;
            }
            let (total, _) = volume.stats(id).await?;
            if best.as_ref().is_none_or(|(size, _)| total > *size) {
                best = Some((total, id.clone()));
            }
        }
        if best.is_none() {
            // Nothing formatted: the largest, as the data partition is on
            // the layouts Windows makes (never the first: an EFI or
            // System Reserved partition comes first).
            for id in &ids {
                let (total, _) = volume.stats(id).await?;
                if best.as_ref().is_none_or(|(size, _)| total > *size) {
                    best = Some((total, id.clone()));
                }
            }
        }
        Ok(best.map_or_else(|| ids[0].clone(), |(_, id)| id))
    }

    /// Unstages `path`: flushes the volume mounted there, unmounts it and
    /// removes `path`. Absent: Ok.
    pub async fn unstage(&self, path: &str) -> Result<(), Error> {
        let path = path::local(path)?;
        self.bounded("unstage", self.unstage_at(&path, false)).await
    }

    /// [`Node::unstage`], then takes the volume's disk offline (for disks
    /// that are detached next, or clones that must not be seen twice).
    pub async fn unstage_and_offline(&self, path: &str) -> Result<(), Error> {
        let path = path::local(path)?;
        self.bounded("unstage", self.unstage_at(&path, true)).await
    }

    /// Unstages what this node staged at `path`, whichever kind it is, and
    /// returns what it found there: a disk's volume
    /// ([`MountState::Mounted`]) as [`Node::unstage`] does (with `offline`,
    /// as [`Node::unstage_and_offline`]); a link to a share
    /// ([`MountState::Linked`]) as [`Node::smb_unstage`] does. Nothing or
    /// a plain directory is left as it is. For a plugin serving disks and
    /// shares alike, which cannot tell from the request which kind it
    /// unstages: the path is looked at once.
    pub async fn unstage_staged(&self, path: &str, offline: bool) -> Result<MountState, Error> {
        let path = path::local(path)?;
        self.bounded("unstage", async {
            let state = self.state_expecting_volume(&path).await?;
            match &state {
                MountState::Mounted { volume_id } => {
                    self.unstage_volume(&path, volume_id, offline).await?
                }
                MountState::Linked => {
                    let root = self.inner.options.smb_store.root_of(&path)?;
                    let _serial = match &root {
                        Some(root) => Some(self.smb_lock(root).await),
                        None => None,
                    };
                    self.fs()?.rmdir(&path, false).await?;
                    if let Some(root) = root {
                        self.smb_release(&root, &path).await?;
                    }
                }
                MountState::Missing | MountState::NotMounted => {}
            }
            Ok(state)
        })
        .await
    }

    async fn unstage_at(&self, path: &str, offline: bool) -> Result<(), Error> {
        match self.state_expecting_volume(path).await? {
            MountState::Missing => Ok(()),
            MountState::NotMounted => self.remove_empty_dir(path).await,
            MountState::Linked => self.fs()?.rmdir(path, false).await,
            MountState::Mounted { volume_id } => {
                self.unstage_volume(path, &volume_id, offline).await
            }
        }
    }

    /// What is at `path` where a volume is expected: the volume behind it
    /// answers in one call, and only a path with none is looked at further.
    async fn state_expecting_volume(&self, path: &str) -> Result<MountState, Error> {
        match self.volume()?.volume_at(path).await {
            Ok(volume_id) if !volume_id.is_empty() => Ok(MountState::Mounted { volume_id }),
            Err(e) if matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::TimedOut) => Err(e),
            _ => {
                let fs = self.fs()?;
                if !fs.exists(path).await? {
                    Ok(MountState::Missing)
                } else if fs.is_link(path).await? {
                    Ok(MountState::Linked)
                } else {
                    Ok(MountState::NotMounted)
                }
            }
        }
    }

    /// Flushes volume `volume_id` and removes its mount point at `path`,
    /// then takes its disk offline with `offline`.
    async fn unstage_volume(
        &self,
        path: &str,
        volume_id: &str,
        offline: bool,
    ) -> Result<(), Error> {
        let volume = self.volume()?;
        self.refuse_os_volume(volume_id, "unstage").await?;
        let disk = match offline {
            true => Some(volume.disk_of(volume_id).await?),
            false => None,
        };
        if volume.can_flush() {
            // Flushed, the mount point goes with its directory: one call
            // less than UnmountVolume, which flushes again before removing
            // the access path (azuredisk-csi-driver unstages so through the
            // proxy, pkg/mounter/safe_mounter_windows.go).
            volume.flush(volume_id).await?;
        } else {
            // volume v1beta1 cannot flush; its dismount does.
            volume.unmount(volume_id, path).await?;
        }
        self.remove_empty_dir(path).await?;
        if let Some(n) = disk {
            self.disk()?.set_online(n, false).await?;
        }
        tracing::info!(volume = %volume_id, path, "unstaged");
        Ok(())
    }

    /// The id of the volume behind `path`.
    pub async fn volume_at(&self, path: &str) -> Result<String, Error> {
        let path = path::local(path)?;
        self.bounded("volume_at", self.volume()?.volume_at(&path))
            .await
    }

    /// Grows the volume behind `path` over its whole partition and returns
    /// its size in bytes afterwards. Nothing to grow is not an error.
    pub async fn expand(&self, path: &str) -> Result<u64, Error> {
        self.expand_to(path, 0).await
    }

    /// [`Node::expand`], with a way out when the host cannot tell the
    /// partition's maximum size: growing to the maximum asks
    /// `MSFT_Partition.GetSupportedSize`, which needs the defrag service
    /// and fails with `StorageWMI 4` when it is disabled
    /// (aws-ebs-csi-driver#2877) or takes minutes when it is busy
    /// (AgentBaker#3804). When that call fails so, or has not answered
    /// within half the operation deadline, the partition is grown to
    /// `size_bytes` instead (the size the volume must have, e.g. the CSI
    /// request's required bytes less what the disk layout keeps). With
    /// `size_bytes` 0, as [`Node::expand`]: the maximum only.
    ///
    /// The proxy leaves a growth under 100 MiB undone (csi-proxy v1.3.0
    /// `pkg/os/volume/api.go`, `minimumResizeSize`); the size returned is
    /// then the volume's unchanged size.
    pub async fn expand_to(&self, path: &str, size_bytes: u64) -> Result<u64, Error> {
        let path = path::local(path)?;
        self.bounded("expand", async {
            let id = self.volume()?.volume_at(&path).await?;
            self.expand_volume(&id, size_bytes).await
        })
        .await
    }

    /// The work of [`Node::expand_to`] on volume `id`.
    async fn expand_volume(&self, id: &str, size_bytes: u64) -> Result<u64, Error> {
        let volume = self.volume()?;
        let patience = self.inner.options.deadline / 2;
        self.refuse_os_volume(id, "expand").await?;
        if size_bytes == 0 {
            grow(volume, id, 0).await?;
        } else {
            let size = i64::try_from(size_bytes).unwrap_or(i64::MAX);
            match tokio::time::timeout(patience, grow(volume, id, 0)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) if no_supported_size(&e) => {
                    tracing::warn!(volume = %id, error = %e, size_bytes, "the maximum size cannot be had; growing to the size asked for");
                    grow(volume, id, size).await?;
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    // The query goes on at the host; growing to a
                    // size of our own does not need it.
                    tracing::warn!(volume = %id, ?patience, size_bytes, "the maximum size did not come; growing to the size asked for");
                    grow(volume, id, size).await?;
                }
            }
        }
        let (total, _) = volume.stats(id).await?;
        Ok(u64::try_from(total).unwrap_or(0))
    }

    /// Grows the volume behind `path` over what its disk has gained, as
    /// drivers do before a resize and right after staging a disk restored
    /// from a smaller snapshot: rescans the disks first, so that the host
    /// sees the size the cloud gave the disk (aws-ebs-csi-driver
    /// pkg/mounter/mount_windows.go), brings the disk online if it is
    /// offline (vsphere-csi-driver pkg/csi/service/mounter/mounter_windows.go),
    /// then grows the volume as [`Node::expand_to`] does with `size_bytes`.
    /// With a `min_growth` above 0, the volume is left as it is when its
    /// disk has less than that beyond the volume's partition (the GPT
    /// layout the proxy makes is taken off: 16 MiB before the partition,
    /// the backup table after it). Returns the volume's size afterwards.
    ///
    /// With `min_growth` 0, the disk's state is read only when growing
    /// fails (an online disk, the usual case, costs no call for it); the
    /// growth is then made again once the disk is online.
    pub async fn grow(&self, path: &str, min_growth: u64, size_bytes: u64) -> Result<u64, Error> {
        let local = path::local(path)?;
        self.bounded("grow", async {
            let (disk, volume) = (self.disk()?, self.volume()?);
            // Neither waits for the other.
            let ((), id) = tokio::try_join!(disk.rescan(), volume.volume_at(&local))?;
            if min_growth == 0 {
                return self.grow_volume(&id, None, 0, size_bytes).await;
            }
            // The sizes are read before growing: the disk must be online.
            let number = volume.disk_of(&id).await?;
            if disk.is_online(number).await? == Some(false) {
                tracing::info!(disk = number, "bringing the disk online before growing");
                disk.set_online(number, true).await?;
            }
            self.grow_volume(&id, Some(number), min_growth, size_bytes)
                .await
        })
        .await
    }

    /// Right after [`Node::stage_disk`] of `disk` returned `volume_id`:
    /// grows the volume over its disk when the disk has at least
    /// `min_growth` bytes beyond it, as [`Node::grow`] does, without its
    /// rescan and lookups (the stage's discovery rescanned, and the stage
    /// named the disk and the volume). The volume's size and the disk's
    /// are read at once. Returns the volume's size afterwards.
    pub async fn grow_staged(
        &self,
        disk: impl Into<u32>,
        volume_id: &str,
        min_growth: u64,
    ) -> Result<u64, Error> {
        let number = disk.into();
        self.bounded(
            "grow",
            self.grow_volume(volume_id, Some(number), min_growth, 0),
        )
        .await
    }

    /// Grows volume `id` (of disk `number`, when known) unless `min_growth`
    /// is above 0 and its disk has less room than that beyond it.
    async fn grow_volume(
        &self,
        id: &str,
        number: Option<u32>,
        min_growth: u64,
        size_bytes: u64,
    ) -> Result<u64, Error> {
        let (disk, volume) = (self.disk()?, self.volume()?);
        if let (Some(n), true) = (number, min_growth > 0) {
            let ((total, _), size) = tokio::try_join!(volume.stats(id), disk.size(n))?;
            let total = u64::try_from(total).unwrap_or(0);
            let room = size.saturating_sub(total + GPT_LAYOUT);
            if room < min_growth {
                tracing::debug!(volume = %id, room, "the volume fills its disk");
                return Ok(total);
            }
            tracing::info!(volume = %id, room, "the disk has grown: growing the volume");
        }
        match self.expand_volume(id, size_bytes).await {
            Err(e) if !matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::TimedOut) => {
                let n = match number {
                    Some(n) => n,
                    None => volume.disk_of(id).await?,
                };
                if disk.is_online(n).await? != Some(false) {
                    return Err(e);
                }
                tracing::info!(disk = n, error = %e, "the disk is offline: bringing it online to grow");
                disk.set_online(n, true).await?;
                self.expand_volume(id, size_bytes).await
            }
            other => other,
        }
    }

    /// Total, used and available bytes of the volume behind `path`.
    pub async fn usage(&self, path: &str) -> Result<VolumeUsage, Error> {
        let path = path::local(path)?;
        self.bounded("usage", async {
            let volume = self.volume()?;
            let id = volume.volume_at(&path).await?;
            let (total, used) = volume.stats(&id).await?;
            let (total, used) = (
                u64::try_from(total).unwrap_or(0),
                u64::try_from(used).unwrap_or(0),
            );
            Ok(VolumeUsage {
                total_bytes: total,
                used_bytes: used,
                available_bytes: total.saturating_sub(used),
            })
        })
        .await
    }
}

/// ResizeVolume of volume `id` to `size` bytes (0: the maximum), nothing
/// to grow taken as done.
async fn grow(volume: &VolumeGroup, id: &str, size: i64) -> Result<(), Error> {
    match volume.resize(id, size).await {
        // Windows' answer when the volume already fills its partition. v1.1
        // quotes PowerShell's "The size of the extent is less than the
        // minimum of 1MB."; other wordings leave out the "is".
        Err(e)
            if e.to_string()
                .to_lowercase()
                .contains("less than the minimum") =>
        {
            tracing::debug!(volume = %id, "nothing to grow");
            Ok(())
        }
        other => other,
    }
}

/// Whether a ResizeVolume failed asking for the partition's supported
/// size: v1.3's "error getting sizeMin, sizeMax from volume ...", v1.1's
/// "error getting sizemin,sizemax from mount ..." (csi-proxy
/// `pkg/os/volume/api.go` of v1.3.0 and v1.1.3).
fn no_supported_size(e: &Error) -> bool {
    e.to_string().to_lowercase().contains("sizemin")
}

/// What a disk the proxy partitioned keeps outside its data partition: the
/// protective MBR, the GPT and the MSR before it (16 MiB) and the backup
/// GPT after it (16.5 KiB with 512-byte sectors, 20 KiB with 4 KiB ones).
const GPT_LAYOUT: u64 = (16 << 20) + (20 << 10);
