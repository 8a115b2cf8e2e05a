//! A disk's volume: staged (onlined, partitioned, formatted, mounted),
//! unstaged, expanded, and its usage.

use super::groups::VolumeGroup;
use std::future::IntoFuture;
use std::time::Duration;

use super::path_claim::may_still_land;
use super::protocol::{ArrivalStep, Change, OnlinedRecord, arrival_step};
use super::removal::disk_subject;
use super::{DiskInfo, MountState, Node, Operation, VolumeUsage, outcome_unknown, path};
use crate::Error;

/// The records' kind of a `PartitionDisk` about to be sent, keyed by the
/// disk's id: its intent, kept until the partition's licence is recorded.
const PARTITIONING: &str = "partitioning";
/// The records' kind of a `SetDiskState(online)` this node sent for a
/// stage, keyed by disk (`disk N`): until the disk's volumes have had
/// their time to arrive, its empty listing is no proof of a blank disk.
/// A stale one (the number now another disk's) only delays a stage.
const ONLINED: &str = "onlined";
/// How often a disk brought online is listed again while its volumes
/// may still arrive.
const ARRIVAL_POLL: Duration = Duration::from_millis(250);

/// What a stage staged: the volume, and whether the stage made its
/// partition.
pub(super) struct StagedVolume {
    pub id: String,
    pub partitioned: bool,
}

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
    /// `disk` is a [`Disk`](super::Disk) found earlier, or a disk number.
    /// A `Disk` is checked to be still where it was found (its location
    /// listed again, at the same time as its id): a disk number given to
    /// another disk since is [`Error::DiskNotFound`], nothing changed.
    ///
    /// Already mounted at `path` from this disk: Ok. `path` holding another
    /// volume or a link ([`Error::PathInUse`]), a directory with files
    /// ([`Error::NotEmpty`]): nothing is changed.
    ///
    /// The disk that holds Windows is never touched: [`Error::OsDisk`],
    /// before any call that changes it (see [`DiskInfo::os_disk`](super::DiskInfo::os_disk) for how
    /// it is found). Where it cannot be known (a proxy without volume
    /// v2alpha1), a disk showing volumes this node did not stage is
    /// [`Error::OsDiskUnknown`] unless
    /// [`NodeOptions::allow_unknown_os_disk`](super::NodeOptions::allow_unknown_os_disk).
    ///
    /// The disk's id is checked against what `path` was staged from
    /// ([`Error::DifferentDisk`]), and a disk whose volume another staging
    /// path holds is [`Error::StagedElsewhere`]: a LUN reused after a
    /// detach never hands one pod's disk to another (docs/safety.md, "The
    /// right disk"). A file at `path` is [`Error::PathInUse`], never
    /// deleted. Stages of one disk run one at a time in this `Node` and
    /// its clones.
    /// On a disk with several partitions the data partition is staged,
    /// never a System Reserved, EFI, MSR or recovery one: in HostProcess
    /// mode chosen by partition type (`MSFT_Partition.GptType`, `MbrType`,
    /// `IsSystem`, `IsActive`, `IsHidden`); through the proxy, whose API
    /// shows no partition type, label or flag, the largest formatted
    /// volume, else the largest (a data partition smaller than a system
    /// partition beside it cannot be told apart there).
    ///
    /// A read-only disk: in HostProcess mode a read-write stage makes a
    /// disk that is offline and read-only, as Windows' SAN policy leaves
    /// it, writable (`MSFT_Disk.SetAttributes`, `IsReadOnly = false`); a
    /// disk online and read-only was made so on purpose and is never made
    /// writable ([`Error::ReadOnlyDisk`]; [`StageDisk::read_only`] stages
    /// it as it is). Through the proxy,
    /// whose API neither reports nor clears read-only, a blank read-only
    /// disk fails with [`Error::ReadOnlyDisk`] when Windows refuses to
    /// initialise, partition or format it; a read-only disk that already
    /// holds NTFS is **not** detected through the proxy: it is mounted
    /// read-only and writes fail later, in the pod.
    ///
    /// A disk or volume that may hold data is never initialised,
    /// partitioned or formatted ([`Error::MayHoldData`], nothing changed):
    /// HostProcess mode reads the first sectors for known signatures
    /// (BitLocker, ext4, XFS, LUKS, ...); through the proxy, which cannot
    /// read sectors, only a volume whose partition this node created is
    /// formatted. What proxy mode cannot tell: a disk holding a file
    /// system made on the whole device looks like a new blank disk there,
    /// and is partitioned (see `docs/safety.md`). A format is sent once:
    /// while an earlier one's outcome is unknown the stage waits for it or
    /// fails with [`Error::FormatPending`] (retry).
    ///
    /// [`StageDisk::grow`] also grows the volume over its disk right after
    /// staging it, as drivers do for a disk restored from a smaller
    /// snapshot.
    pub fn stage_disk<'a>(&'a self, disk: impl Into<DiskInfo>, path: &'a str) -> StageDisk<'a> {
        StageDisk {
            node: self,
            disk: disk.into(),
            path,
            min_growth: None,
            read_only: false,
        }
    }

    /// The stage itself, once [`Node::stage_identified`] has checked the
    /// disk's identity; `listed` is what disk `number` showed it (its
    /// volumes, read together with its id).
    pub(super) async fn stage_disk_at(
        &self,
        number: u32,
        disk_id: Option<&str>,
        path: &str,
        read_only: bool,
        listed: &[String],
    ) -> Result<StagedVolume, Error> {
        let (disk, volume, fs) = (self.disk()?, self.volume()?, self.fs()?);
        // An offline of this disk that did not answer (an unstage stopped
        // at another path) would land under this stage.
        self.removal_settled(&disk_subject(number))?;
        let path_ready = async {
            // The OS disk is refused before anything is changed.
            self.refuse_os_disk(number, "stage").await?;
            match self.state(path).await? {
                MountState::Mounted { volume_id } => {
                    return if volume.disk_of(&volume_id).await? == number {
                        Ok(Some(StagedVolume {
                            id: volume_id,
                            partitioned: false,
                        }))
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
                // Proves it an empty directory (a file is refused, never
                // deleted); it is made again before the mount.
                MountState::NotMounted => self.remove_empty_dir_only(path).await?,
                MountState::Missing => {}
            }
            Ok(None)
        };
        // A disk listing no volume is asked whether it is online (only an
        // online disk's empty listing says it holds none): asked beside
        // the OS disk's and the path's checks, which it does not depend
        // on (a read; nothing is changed before the checks pass). Proxy
        // mode only.
        let online = async {
            match listed.is_empty() && !self.is_host_process() {
                true => disk.is_online(number).await.map(Some),
                false => Ok(None),
            }
        };
        let (ready, online) = tokio::join!(path_ready, online);
        if let Some(staged) = ready? {
            return Ok(staged);
        }
        let online = online?;
        self.make_writable(number, read_only).await?;
        let read_only = |e: Error| read_only_refusal(number, e);
        let prepare = |listed, online| async move {
            self.partition_if_blank(number, disk_id, listed, online)
                .await
                .map_err(read_only)
        };
        // An online disk is the usual case: its state is read only when it
        // cannot be partitioned or shows no volume, as an offline disk
        // does; it is then brought online and prepared again, its volumes
        // listed again.
        let (id, partitioned) = match prepare(Some(listed), online).await {
            Ok(found) => found,
            Err(e) if outcome_unknown(&e) => {
                return Err(e);
            }
            Err(e) => {
                if disk.is_online(number).await? != Some(false) {
                    return Err(e);
                }
                tracing::info!(disk = number, error = %e, "bringing the disk online");
                self.bring_online(number).await?;
                let found = prepare(None, None).await?;
                // Offline, the disk's volume could not be read at another
                // path's mount point of it (the device not ready), which
                // the stage's check took for a path holding nothing: asked
                // again now that it is online (an adversary review staged
                // a pod's volume at a second path so).
                if let Some(other) = self
                    .other_user(path, std::slice::from_ref(&found.0))
                    .await?
                {
                    return Err(Error::StagedElsewhere {
                        disk: number,
                        path: path.to_string(),
                        other,
                    });
                }
                found
            }
        };
        // Not the OS disk's (refused above): later checks need no call.
        self.remember_data_volume(&id);
        // A format in a task of its own: it outlives this caller at the
        // host, and a retry must wait for it rather than format again.
        self.ensure_formatted(number, &id, partitioned)
            .await
            .map_err(read_only)?;
        fs.mkdir(path).await?;
        volume.mount(&id, path).await?;
        tracing::info!(disk = number, volume = %id, path, "staged");
        Ok(StagedVolume { id, partitioned })
    }

    /// HostProcess mode, a read-write stage (`read_only` false): clears
    /// the read-only flag of disk `n` (`MSFT_Disk.SetAttributes(IsReadOnly
    /// = false)`) when Windows' SAN policy set it, which it does to a new
    /// disk together with taking it offline: only an offline read-only
    /// disk is made writable. A disk online and read-only was made so on
    /// purpose (attached read-only by the cloud, or set by an
    /// administrator): it is never made writable, and a read-write stage
    /// of it is [`Error::ReadOnlyDisk`], nothing changed. A read-only stage
    /// changes no flag. Through the proxy nothing can be read or done
    /// ([`Node::stage_disk`]).
    async fn make_writable(&self, n: u32, read_only: bool) -> Result<(), Error> {
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            let objects = backend.disk_objects().await?;
            let Some(o) = objects.iter().find(|o| o.number == n) else {
                return Ok(());
            };
            match (o.is_read_only, o.is_offline, read_only) {
                (false, _, _) | (true, _, true) => {}
                (true, true, false) => {
                    // Windows changes no attribute of an offline disk
                    // (41003): online first, as the stage would.
                    tracing::info!(
                        disk = n,
                        "the disk is offline and read-only, as a SAN policy leaves it: bringing it online and making it writable"
                    );
                    self.disk()?.set_online(n).await?;
                    backend.make_writable(n).await?;
                }
                (true, false, false) => {
                    return Err(Error::ReadOnlyDisk {
                        disk: n,
                        cause: "it is online and read-only, as a cloud attaches a disk read-only on purpose (a SAN policy leaves a disk offline too): it is not made writable; stage it read-only".into(),
                    });
                }
            }
        }
        let _ = (n, read_only);
        Ok(())
    }

    /// Partitions disk `n` if it shows nothing, and returns the volume to
    /// stage on it ([`Node::data_volume`]) and whether this call made its
    /// partition. `listed`: the disk's volumes as just read, if they were.
    ///
    /// HostProcess mode initialises a RAW disk only when its first and
    /// last MiB hold no signature ([`Error::MayHoldData`] otherwise).
    /// Through the proxy, `PartitionDisk` is sent only to a disk that
    /// lists no volume, and a volume that appears through it is recorded
    /// as this node's (a `partition` record): the only unformatted volumes
    /// proxy mode formats ([`Node::may_format`]). The proxy cannot read
    /// sectors, so a disk that holds a file system made on the whole
    /// device (no partition table: Windows shows it RAW) is initialised
    /// and partitioned as a new disk would be; see `docs/safety.md`.
    async fn partition_if_blank(
        &self,
        n: u32,
        disk_id: Option<&str>,
        listed: Option<&[String]>,
        online: Option<Option<bool>>,
    ) -> Result<(String, bool), Error> {
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            if let Some(found) = backend.raw_disk_signature(n).await? {
                return Err(Error::MayHoldData {
                    disk: n,
                    volume: "the whole disk".into(),
                    why: format!("Windows shows no partition table, but the disk holds {found}"),
                });
            }
            self.disk()?.partition(n).await?;
            // The backend's partitioning leaves a partitioned disk as it
            // is: whether it made one is not told, so the stage's grow
            // still looks.
            return backend
                .data_volume(n)
                .await?
                .map(|id| (id, false))
                .ok_or(Error::NoVolume { disk: n });
        }
        let records = &self.inner.options.records;
        // The intent is keyed by what names the disk (its page 83 id or
        // serial), so it never passes to another disk. A disk that shows
        // neither gets none: its number is given to the next disk
        // attached, whose data a stale intent would license.
        let disk_key = disk_id.map(str::to_string);
        let mut ids = match listed {
            Some(ids) => ids.to_vec(),
            // Listed again after the caller's online, which took a call's
            // time: the disk's id is read again beside the listing, as the
            // stage's check read them.
            None => {
                let (ids, ()) = tokio::try_join!(self.volume_ids(n), self.same_disk(n, disk_id))?;
                ids
            }
        };
        if ids.is_empty() {
            // Only an online disk's empty listing says it holds no
            // volume: an offline disk lists none whatever it holds. The
            // caller brings it online and prepares it again. (A proxy
            // that cannot tell, None, is taken at its listing, as
            // before.)
            let online = match online {
                Some(known) => known,
                None => self.disk()?.is_online(n).await?,
            };
            if online == Some(false) {
                return Err(Error::NoVolume { disk: n });
            }
            // Finding 7: nor is an empty listing of a disk just brought
            // online, whose volumes Windows has yet to mount.
            ids = self.volumes_arrived(n, disk_id).await?;
        }
        if !ids.is_empty() {
            let id = self.data_volume(n, ids).await?;
            // Finding 4: a stage dropped between PartitionDisk and its
            // licence left the disk's new partition unlicensed, refused
            // as "may hold data" at every retry. The intent recorded
            // before PartitionDisk is the same evidence the licence is
            // given on (the disk listed no volume, under the disk's
            // claim): the volume gets its licence now.
            if let Some(key) = &disk_key
                && records.get(PARTITIONING, key)?.is_some()
            {
                self.license(n, &id)?;
                records.remove(PARTITIONING, key)?;
            }
            return Ok((id, false));
        }
        if let Some(key) = &disk_key {
            records.put(
                PARTITIONING,
                key,
                &format!("PartitionDisk of online disk {n}, which listed no volume"),
            )?;
        }
        match self.disk()?.partition(n).await {
            Ok(()) => {}
            // Its outcome unknown, the PartitionDisk may have landed: the
            // intent stays for the retry.
            Err(e) if outcome_unknown(&e) => {
                return Err(e);
            }
            // Known not to have made a partition: nothing a later listing
            // shows is this intent's.
            Err(e) => {
                if let Some(key) = &disk_key {
                    records.remove(PARTITIONING, key)?;
                }
                return Err(e);
            }
        }
        // Made: the intent stays until the licence is recorded, whatever
        // ends the listing (a failed call, or a volume Windows shows late).
        let ids = self.volume_ids(n).await?;
        let id = self.data_volume(n, ids).await?;
        // Before the call the disk listed no volume: this one is the
        // partition PartitionDisk made (an offline disk lists none after
        // it either, and is onlined and looked at again by the caller).
        self.license(n, &id)?;
        if let Some(key) = &disk_key {
            records.remove(PARTITIONING, key)?;
        }
        Ok((id, true))
    }

    /// Proxy mode: brings disk `n` online (for a stage or a growth: a
    /// later stage of the disk must know it was), its `onlined` record
    /// written first (a lost answer may still bring it online)
    /// and rewritten with the answer's time: from then its volumes are
    /// given [`NodeOptions::volume_arrival`](super::NodeOptions::volume_arrival)
    /// to be listed ([`Node::volumes_arrived`]).
    async fn bring_online(&self, n: u32) -> Result<(), Error> {
        let disk = self.disk()?;
        if self.is_host_process() {
            return disk.set_online(n).await;
        }
        let records = &self.inner.options.records;
        let key = disk_subject(n);
        let text = self.sent_text("SetDiskState(online)")?;
        records.put(ONLINED, &key, &text)?;
        records.watch_anew(ONLINED, &key, &text);
        match disk.set_online(n).await {
            Ok(()) => {
                let (secs, owner) = (super::host_work::now_secs(), records.owner()?);
                let text = format!("SetDiskState(online) answered {secs} by {owner}\n");
                records.put(ONLINED, &key, &text)?;
                records.watch_anew(ONLINED, &key, &text);
                Ok(())
            }
            Err(e) if may_still_land(&e) => Err(e),
            Err(e) => {
                records.remove(ONLINED, &key)?;
                Err(e)
            }
        }
    }

    /// Proxy mode, disk `n` online and listing no volume: if this node
    /// brought it online (an `onlined` record), waits until its volumes
    /// are listed (returned) or have had their time to arrive (none
    /// returned, the record gone). Counted on this process's monotonic
    /// clock from when it wrote or first read the record: a restarted
    /// plugin waits again. A wait longer than the arrival time itself (an
    /// online whose answer was lost, which may still land) is
    /// [`Error::VolumesPending`].
    ///
    /// After a wait, disk `n` is asked its id again (`id`, what the stage
    /// checked; [`Node::same_disk`]): an adversary review found the old
    /// stage partitioning, formatting and mounting a disk attached under
    /// the number while it waited.
    async fn volumes_arrived(&self, n: u32, id: Option<&str>) -> Result<Vec<String>, Error> {
        let records = &self.inner.options.records;
        let key = disk_subject(n);
        let arrival = self.inner.options.volume_arrival;
        let mut waited = false;
        let found = loop {
            let text = records.get(ONLINED, &key)?;
            let (record, seen, settle) = match &text {
                None => (OnlinedRecord::None, Duration::ZERO, Duration::ZERO),
                Some(text) => (
                    match text.contains(" answered ") {
                        true => OnlinedRecord::Answered,
                        false => OnlinedRecord::Unanswered,
                    },
                    records.watched(ONLINED, &key, text),
                    self.settle_of(text),
                ),
            };
            let left = match arrival_step(record, seen, arrival, settle) {
                ArrivalStep::Trust => {
                    if text.is_some() {
                        records.remove(ONLINED, &key)?;
                    }
                    break Vec::new();
                }
                ArrivalStep::Pending => {
                    return Err(Error::VolumesPending {
                        disk: n,
                        since: text.unwrap_or_default().trim().to_string(),
                    });
                }
                ArrivalStep::Wait(left) => left,
            };
            tokio::time::sleep(left.min(ARRIVAL_POLL)).await;
            waited = true;
            let ids = self.volume_ids(n).await?;
            if !ids.is_empty() {
                tracing::info!(disk = n, "the disk brought online lists its volumes");
                break ids;
            }
        };
        if waited {
            self.same_disk(n, id).await?;
        }
        Ok(found)
    }

    /// Whether disk `n` still shows `id`, the id the stage checked:
    /// [`Error::DiskNotFound`] if another disk has taken its number (a
    /// detach and an attach while the stage waited), nothing sent to it.
    /// A disk that shows no id cannot be told from its successor so.
    async fn same_disk(&self, n: u32, id: Option<&str>) -> Result<(), Error> {
        let now = super::identity::disk_id(&self.disk()?.ids().await?, n);
        if now.as_deref() == id {
            return Ok(());
        }
        let name = |id: Option<&str>| id.map_or("no id".to_string(), str::to_string);
        Err(Error::DiskNotFound {
            selector: format!("disk {n} ({})", name(id)),
            waited: Duration::ZERO,
            seen: format!(
                "disk {n} shows {} now: another disk took its number during the stage",
                name(now.as_deref())
            ),
        })
    }

    /// Records the partition licence of volume `id` on disk `n`: its
    /// partition is this node's, formattable until its format is known
    /// done (`host_work`).
    fn license(&self, n: u32, id: &str) -> Result<(), Error> {
        self.inner.options.records.put(
            super::host_work::PARTITION,
            id,
            &format!("created on disk {n}"),
        )
    }

    /// The volumes the proxy lists on disk `n`, without the empty id
    /// csi-proxy v0.2 to v1.2 answer for a disk with none (`[""]`: they
    /// split PowerShell's empty output on line breaks, v1.1.3
    /// `pkg/os/volume/api.go`, `ListVolumesOnDisk`); an empty id is never
    /// a volume.
    async fn volume_ids(&self, n: u32) -> Result<Vec<String>, Error> {
        let mut ids = self.volume()?.volumes_on_disk(n).await?;
        ids.retain(|id| !id.trim().is_empty());
        Ok(ids)
    }

    /// The volume to stage among `ids`, the volumes the proxy lists on
    /// disk `n` (HostProcess mode chooses in [`Node::partition_if_blank`]).
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
    async fn data_volume(&self, n: u32, ids: Vec<String>) -> Result<String, Error> {
        let volume = self.volume()?;
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

    /// NodeUnstageVolume: unstages what this node staged at `path`,
    /// whichever kind it is, and returns what it found there. A disk's
    /// volume ([`MountState::Mounted`]) is flushed, its mount point
    /// removed, and with [`Unstage::offline`] its disk taken offline (for
    /// disks that are detached next, or clones that must not be seen
    /// twice). A share's link ([`MountState::Linked`]) is removed with its
    /// reference, and the share's global mapping with the last reference.
    /// An empty directory is removed; nothing there: Ok.
    ///
    /// A directory with files is [`Error::NotEmpty`], left as it is.
    pub fn unstage<'a>(&'a self, path: &'a str) -> Unstage<'a> {
        Unstage {
            node: self,
            path,
            offline: false,
        }
    }

    async fn unstage_at(&self, path: &str, offline: bool) -> Result<MountState, Error> {
        if let Some(root) = self.smb_root_of(path).await? {
            return self.smb_unstage_at(path, &root).await;
        }
        let state = self.state_expecting_volume(path).await?;
        match &state {
            MountState::Missing => {}
            MountState::NotMounted => match self.remove_empty_dir_only(path).await {
                Err(Error::PathInUse { .. }) if self.dangling_mount(path).await? => {
                    self.rmdir(path, false).await?
                }
                other => other?,
            },
            // A link no staged share records: removed, never what it reaches.
            MountState::Linked => self.rmdir(path, false).await?,
            MountState::Mounted { volume_id } => {
                self.unstage_volume(path, volume_id, offline).await?
            }
        }
        self.forget_stage(path)?;
        Ok(state)
    }

    /// What is at `path` where a volume is expected: the volume behind it
    /// answers in one call, and only a path with none is looked at further.
    async fn state_expecting_volume(&self, path: &str) -> Result<MountState, Error> {
        match self.volume()?.volume_at(path).await {
            Ok(volume_id) if !volume_id.is_empty() => Ok(MountState::Mounted { volume_id }),
            Err(e) if outcome_unknown(&e) => Err(e),
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
        self.refuse_os_volume(volume_id, "unstage", offline).await?;
        let disk = match offline {
            true => {
                // The disk staged here, not one that took its LUN.
                let read = self
                    .check_staged_volume(path, volume_id, "take offline the disk of")
                    .await?;
                Some(match read {
                    Some(n) => n,
                    None => volume.disk_of(volume_id).await?,
                })
            }
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
            self.unmount(volume_id, path).await?;
        }
        self.remove_empty_dir(path).await?;
        if let Some(n) = disk {
            // Never offline under another staging path (one volume staged
            // twice, another partition of the disk staged elsewhere), nor
            // under a stage of the disk made meanwhile: its stages wait.
            let _no_stage = self.disk_stage_claim(n).await?;
            let volumes = volume.volumes_on_disk(n).await?;
            match self.other_user(path, &volumes).await? {
                Some(other) => {
                    tracing::warn!(
                        disk = n,
                        path,
                        other,
                        "the disk stays online: another staging path uses it"
                    );
                }
                None => self.take_offline(n).await?,
            }
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

    /// NodeExpandVolume: grows the volume behind `path` over its whole
    /// partition and returns its size in bytes afterwards. Nothing to grow
    /// is not an error.
    ///
    /// The disks are rescanned first, so that the host sees the size the
    /// cloud gave the disk (aws-ebs-csi-driver
    /// pkg/mounter/mount_windows.go); the rescan and the volume's lookup
    /// run at once. A disk found offline when the growth fails is brought
    /// online and the growth made again (vsphere-csi-driver
    /// pkg/csi/service/mounter/mounter_windows.go).
    ///
    /// Growing to the maximum asks `MSFT_Partition.GetSupportedSize`,
    /// which needs the defrag service and fails with `StorageWMI 4` when
    /// it is disabled (aws-ebs-csi-driver#2877) or takes minutes when it
    /// is busy (AgentBaker#3804). When that call fails so or has not
    /// answered within half the operation deadline, the partition is grown
    /// to [`Expand::size`] instead, or without it to the disk's size less
    /// the GPT layout the node made (16 MiB before the partition, the
    /// backup table after it).
    /// [`Expand::min_growth`] leaves a volume whose disk has less room
    /// than that beyond it as it is.
    ///
    /// The proxy leaves a growth under 100 MiB undone (csi-proxy v1.3.0
    /// `pkg/os/volume/api.go`, `minimumResizeSize`); the size returned is
    /// then the volume's unchanged size.
    pub fn expand<'a>(&'a self, path: &'a str) -> Expand<'a> {
        Expand {
            node: self,
            path,
            size: 0,
            min_growth: 0,
        }
    }

    async fn expand_at(&self, path: &str, min_growth: u64, size_bytes: u64) -> Result<u64, Error> {
        let (disk, volume) = (self.disk()?, self.volume()?);
        // Neither waits for the other.
        let ((), id) = tokio::try_join!(disk.rescan(), volume.volume_at(path))?;
        let read = self.check_staged_volume(path, &id, "expand").await?;
        if min_growth == 0 {
            return self.grow_volume(&id, None, 0, size_bytes).await;
        }
        // The sizes are read before growing: the disk must be online.
        let number = match read {
            Some(n) => n,
            None => volume.disk_of(&id).await?,
        };
        if disk.is_online(number).await? == Some(false) {
            tracing::info!(disk = number, "bringing the disk online before growing");
            self.bring_online(number).await?;
        }
        self.grow_volume(&id, Some(number), min_growth, size_bytes)
            .await
    }

    /// Grows volume `id`: to the maximum, or to `size_bytes` when that
    /// is above 0 and the maximum cannot be had ([`Node::expand`]).
    async fn expand_volume(&self, id: &str, size_bytes: u64) -> Result<u64, Error> {
        let volume = self.volume()?;
        let patience = self.inner.options.deadline / 2;
        self.refuse_os_volume(id, "expand", true).await?;
        match tokio::time::timeout(patience, grow(volume, id, 0)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) if no_supported_size(&e) => {
                let size = self.fallback_size(id, size_bytes).await?;
                tracing::warn!(volume = %id, error = %e, size, "the maximum size cannot be had; growing to a size of our own");
                grow(volume, id, size).await?;
            }
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                // The query goes on at the host; growing to a size of
                // our own does not need it.
                let size = self.fallback_size(id, size_bytes).await?;
                tracing::warn!(volume = %id, ?patience, size, "the maximum size did not come; growing to a size of our own");
                grow(volume, id, size).await?;
            }
        }
        let (total, _) = volume.stats(id).await?;
        Ok(u64::try_from(total).unwrap_or(0))
    }

    /// The size to grow volume `id` to when its partition's maximum
    /// cannot be had: `asked` when above 0, else its disk's size less the
    /// layout the node made ([`GPT_LAYOUT`]), so that an expansion without
    /// a size (legal CSI: no capacity range) still grows.
    async fn fallback_size(&self, id: &str, asked: u64) -> Result<i64, Error> {
        let size = if asked > 0 {
            asked
        } else {
            let number = self.volume()?.disk_of(id).await?;
            self.disk()?.size(number).await?.saturating_sub(GPT_LAYOUT)
        };
        Ok(i64::try_from(size).unwrap_or(i64::MAX))
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
            Err(e) if !outcome_unknown(&e) => {
                let n = match number {
                    Some(n) => n,
                    None => volume.disk_of(id).await?,
                };
                if disk.is_online(n).await? != Some(false) {
                    return Err(e);
                }
                tracing::info!(disk = n, error = %e, "the disk is offline: bringing it online to grow");
                self.bring_online(n).await?;
                self.expand_volume(id, size_bytes).await
            }
            other => other,
        }
    }

    /// Total, used and available bytes of the volume behind `path`.
    ///
    /// Read by this process itself where it can, at no host call: on
    /// Windows (proxy and HostProcess mode alike) `GetDiskFreeSpaceExW` on
    /// the path as the plugin sees it, which follows the mount point or
    /// link there (azuredisk-csi-driver#2287, aws-ebs-csi-driver's Windows
    /// mounter); elsewhere only with a
    /// [local root](super::NodeOptions::local_root). The proxy
    /// (`GetVolumeIDFromTargetPath`, `GetVolumeStats`: 2 host calls) is
    /// asked where the local read cannot be made: no local root on a
    /// non-Windows build, a path on another drive than the root maps, a
    /// path this process does not see (not mounted into its container),
    /// a missing path or one that is no directory, a volume the OS cannot
    /// read; its answer (and error) is then the one returned. A local read
    /// of a plain directory reports the volume holding it, as upstream's.
    pub async fn usage(&self, path: &str) -> Result<VolumeUsage, Error> {
        let path = path::local(path)?;
        match self.local_usage(&path) {
            Ok(usage) => return Ok(usage),
            Err(why) => tracing::debug!(path, why, "usage through the proxy"),
        }
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

impl Node {
    /// The space of the directory `path` reaches, read by this process
    /// (`local_space`); why not, where it cannot be.
    pub(super) fn local_usage(&self, path: &str) -> Result<VolumeUsage, String> {
        self.local_space(path).map(|(usage, _)| usage)
    }

    /// [`Node::local_usage`] with the inodes, where the read tells them.
    pub(super) fn local_space(
        &self,
        path: &str,
    ) -> Result<(VolumeUsage, Option<super::InodeUsage>), String> {
        let root = self.inner.options.local_root.as_deref();
        let local = super::local_space::local_path(root, path).ok_or_else(|| match root {
            Some(_) => format!("the local root maps C: only, not {path}"),
            None => "no local root: this process reads the node's paths itself only on Windows"
                .to_string(),
        })?;
        let space = super::local_space::disk_free_space(&local)
            .map_err(|e| format!("{} cannot be read here: {e}", local.display()))?;
        let usage = VolumeUsage {
            total_bytes: space.total,
            used_bytes: space.total.saturating_sub(space.free),
            available_bytes: space.available,
        };
        let inodes = space
            .inodes
            .map(|(total, free, available)| super::InodeUsage {
                total,
                used: total.saturating_sub(free),
                available,
            });
        Ok((usage, inodes))
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

/// [`Node::stage_disk`], its options set before `.await`. Resolves to the
/// staged volume's id.
#[must_use = "nothing is staged until it is awaited"]
#[derive(Debug)]
pub struct StageDisk<'a> {
    node: &'a Node,
    disk: DiskInfo,
    path: &'a str,
    min_growth: Option<u64>,
    read_only: bool,
}

impl StageDisk<'_> {
    /// With `true` (a read-only access mode), the disk's read-only flag is
    /// left as it is in HostProcess mode; `false`, the default: a disk a
    /// SAN policy left offline and read-only is made writable (see
    /// [`Node::stage_disk`]). A read-only disk whose volume needs a format
    /// still fails so.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Once staged, grows the volume over its disk when the disk has at
    /// least `min_growth` bytes beyond it (the GPT layout the proxy makes
    /// is taken off: 16 MiB before the partition, the backup table after
    /// it), as drivers do for a disk restored from a smaller snapshot. The
    /// volume's size and the disk's are read at once; the stage's own
    /// discovery counts as the rescan. Nothing is read after the stage
    /// made the volume's partition itself: csi-proxy's `PartitionDisk`
    /// gives it the whole disk.
    pub fn grow(mut self, min_growth: u64) -> Self {
        self.min_growth = Some(min_growth);
        self
    }
}

impl<'a> IntoFuture for StageDisk<'a> {
    type Output = Result<String, Error>;
    type IntoFuture = Operation<'a, String>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (node, number) = (self.node, self.disk.number);
            let path = path::local(self.path)?;
            let (disk, read_only) = (self.disk, self.read_only);
            let staged = node
                .on_path(
                    "stage_disk",
                    Change::Make,
                    &path.clone(),
                    move |node| async move { node.stage_identified(&disk, &path, read_only).await },
                )
                .await?;
            // A partition this stage made fills the disk: csi-proxy's
            // PartitionDisk asks for the maximum size (v1.1.3 `New-Partition
            // -UseMaximumSize`, v1.3.0 `CreatePartition(UseMaximumSize)`,
            // pkg/os/disk/api.go), so there is nothing to grow.
            if let (Some(min_growth), false) = (self.min_growth, staged.partitioned) {
                node.bounded(
                    "grow",
                    node.grow_volume(&staged.id, Some(number), min_growth, 0),
                )
                .await?;
            }
            Ok(staged.id)
        })
    }
}

/// [`Node::unstage`], its options set before `.await`. Resolves to what
/// was found at the path.
#[must_use = "nothing is unstaged until it is awaited"]
#[derive(Debug)]
pub struct Unstage<'a> {
    node: &'a Node,
    path: &'a str,
    offline: bool,
}

impl Unstage<'_> {
    /// With `true`, a disk's volume unstaged takes its disk offline too
    /// (never the OS disk's).
    pub fn offline(mut self, offline: bool) -> Self {
        self.offline = offline;
        self
    }
}

impl<'a> IntoFuture for Unstage<'a> {
    type Output = Result<MountState, Error>;
    type IntoFuture = Operation<'a, MountState>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let path = path::local(self.path)?;
            let offline = self.offline;
            self.node
                .on_path(
                    "unstage",
                    Change::Remove,
                    &path.clone(),
                    move |node| async move { node.unstage_at(&path, offline).await },
                )
                .await
        })
    }
}

/// [`Node::expand`], its options set before `.await`. Resolves to the
/// volume's size in bytes afterwards.
#[must_use = "nothing is grown until it is awaited"]
#[derive(Debug)]
pub struct Expand<'a> {
    node: &'a Node,
    path: &'a str,
    size: u64,
    min_growth: u64,
}

impl Expand<'_> {
    /// The size to grow the volume to when the host cannot tell the
    /// partition's maximum (e.g. the CSI request's required bytes less
    /// what the disk layout keeps); 0, the default: the disk's size less
    /// the layout the node made.
    pub fn size(mut self, bytes: u64) -> Self {
        self.size = bytes;
        self
    }

    /// Leaves the volume as it is when its disk has less than `bytes`
    /// beyond the volume's partition (the sizes are read first, the disk
    /// brought online if it is offline); 0, the default: always grow.
    pub fn min_growth(mut self, bytes: u64) -> Self {
        self.min_growth = bytes;
        self
    }
}

impl<'a> IntoFuture for Expand<'a> {
    type Output = Result<u64, Error>;
    type IntoFuture = Operation<'a, u64>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let path = path::local(self.path)?;
            self.node
                .bounded(
                    "expand",
                    self.node.expand_at(&path, self.min_growth, self.size),
                )
                .await
        })
    }
}
