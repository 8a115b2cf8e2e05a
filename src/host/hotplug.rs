//! Disks that come and go while the node runs, as a cloud attaches, detaches
//! and grows data disks of a running virtual machine.
//!
//! A disk attached here sits where [`HotAttach::location`] says, by default
//! on the data-disk SCSI controller
//! (`Integrated : Adapter 3 : Port 0 : Target 0 : LUN <n>`) at the lowest
//! LUN no disk of the node uses yet, and storage management lists it only
//! after a `Rescan` (and `rescan_delay` after it), as Windows lists a disk
//! the hypervisor just hot-added. The driver finds it the way it would on a
//! cloud node: by the LUN or id the controller returned, after a rescan.
//!
//! # Detaching a disk that is still mounted is refused
//! Azure detaches a data disk even while Windows has its volume mounted
//! (the volume vanishes under the mount point); AWS and GCE leave such a
//! detach pending until the guest lets go. The simulated node refuses it
//! ([`HotplugError::Mounted`]): a driver that forgot to unstage a volume
//! learns it from the simulated cloud instead of from a stuck
//! `VolumeAttachment` in production. A disk taken away regardless (the
//! Azure case) is `HostState::detach_disk_handle`, which leaves the mount
//! points dangling.
//!
//! # A detached disk keeps its contents
//! [`HostState::hot_detach`] gives back the disk ([`DetachedDisk`]: its
//! partitions, volumes and their files), and
//! [`HostState::hot_reattach`] attaches it again as it was, as a cloud
//! disk keeps its data between attachments.

use std::time::Duration;

use super::error::HostError;
use super::state::{Host, HostState};
use super::storage::{DetachedDisk, DiskHandle, DiskSpec, Page83, parse_location};

/// How many LUNs the data-disk controller has (0 to 63, Azure's limit).
pub const DATA_DISK_LUNS: u32 = 64;

/// A cloud disk to attach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotAttach {
    /// Capacity in bytes (a multiple of 512).
    pub size: u64,
    /// Where the disk sits (`MSFT_Disk.Location`); default the data-disk
    /// controller at [`HostState::free_lun`].
    pub location: Option<String>,
    /// Page 83 id; default an `MSFT    `+GUID id, as Hyper-V gives.
    pub page83: Option<Page83>,
    /// Serial number; default `""`.
    pub serial_number: Option<String>,
    /// Device interface path; default a Hyper-V SCSI disk's.
    pub device_path: Option<String>,
    /// Attached read-only, as a cloud attaches a disk for a readonly publish.
    pub read_only: bool,
    /// How long after the `Rescan` the disk shows.
    pub rescan_delay: Duration,
}

impl HotAttach {
    /// A blank disk of `size` bytes, listed as soon as a `Rescan` has run.
    pub fn new(size: u64) -> Self {
        Self {
            size,
            location: None,
            page83: None,
            serial_number: None,
            device_path: None,
            read_only: false,
            rescan_delay: Duration::ZERO,
        }
    }
}

/// A disk attached by [`HostState::hot_attach`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HotDisk {
    /// The disk number Windows gave it.
    pub number: u32,
    /// Its handle, for [`HostState::hot_detach`] and [`HostState::hot_grow`].
    pub handle: DiskHandle,
    /// The LUN in its location (`None` for an NVMe location, which has none).
    pub lun: Option<u32>,
}

/// Why a hot-plug operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HotplugError {
    /// Every LUN of the data-disk controller is taken.
    #[error("no free LUN: all {DATA_DISK_LUNS} LUNs of the data-disk controller are in use")]
    NoFreeLun,
    /// No disk of the node has this handle (never attached, or detached).
    #[error("no attached disk with handle {0}")]
    UnknownDisk(u64),
    /// A volume of the disk is still mounted (see the module docs).
    #[error("disk {disk} is in use: volume {volume} is mounted at {path}")]
    Mounted {
        /// The disk number.
        disk: u32,
        /// The mounted volume's id.
        volume: String,
        /// Where it is mounted.
        path: String,
    },
    /// Clouds grow disks, never shrink them.
    #[error("disk {disk} is {size} bytes: it cannot shrink to {requested}")]
    Shrink {
        /// The disk number.
        disk: u32,
        /// Its size now.
        size: u64,
        /// The size asked for.
        requested: u64,
    },
    /// The host refused the disk itself (a size that is no sector multiple).
    #[error(transparent)]
    Host(#[from] HostError),
}

impl HostState {
    /// The lowest LUN that no disk of the node names in its location
    /// (whatever its adapter: drivers match disks by LUN alone).
    pub fn free_lun(&self) -> Option<u32> {
        let used: Vec<u32> = self
            .storage
            .all_disks()
            .filter_map(|d| parse_location(&d.location)?[3].parse().ok())
            .collect();
        (0..DATA_DISK_LUNS).find(|lun| !used.contains(lun))
    }

    /// Attaches a blank RAW disk at `disk.location`, by default at
    /// [`free_lun`](Self::free_lun); it is listed only after a `Rescan`.
    pub fn hot_attach(&mut self, disk: HotAttach) -> Result<HotDisk, HotplugError> {
        let spec = self.hot_spec(&disk)?;
        let (number, handle) = self.attach_disk(spec)?;
        self.hot_attached(number, handle)
    }

    /// Attaches again a disk [`hot_detach`](Self::hot_detach) gave back,
    /// its partitions, volumes and files as they were, where and as `disk`
    /// says (`disk.size` grows it if larger: a cloud grew it meanwhile).
    pub fn hot_reattach(
        &mut self,
        detached: DetachedDisk,
        disk: HotAttach,
    ) -> Result<HotDisk, HotplugError> {
        let spec = self.hot_spec(&disk)?;
        let volumes = detached.volume_ids();
        let (number, handle) = self.storage.put_disk(detached, spec)?;
        for id in volumes {
            self.detached_volumes.remove(&id.to_ascii_lowercase());
        }
        self.hot_attached(number, handle)
    }

    /// Attaches a clone of the disk with handle `source` (a PVC clone, a
    /// snapshot restore: its partitions and their volume ids) beside it,
    /// where and as `disk` says (`disk.size` is ignored: the source's).
    /// It stays offline and cannot come online while its source's volumes
    /// are present ([`Storage::attach_clone`](super::storage::Storage)).
    pub fn hot_attach_clone(
        &mut self,
        source: DiskHandle,
        disk: HotAttach,
    ) -> Result<HotDisk, HotplugError> {
        let spec = self.hot_spec(&disk)?;
        let (number, handle) = self.storage.attach_clone(source, spec)?;
        self.hot_attached(number, handle)
    }

    fn hot_spec(&self, disk: &HotAttach) -> Result<DiskSpec, HotplugError> {
        let location = match &disk.location {
            Some(l) => l.clone(),
            None => {
                let lun = self.free_lun().ok_or(HotplugError::NoFreeLun)?;
                format!("Integrated : Adapter 3 : Port 0 : Target 0 : LUN {lun}")
            }
        };
        Ok(DiskSpec {
            location: Some(location),
            page83: disk.page83.clone(),
            serial_number: disk.serial_number.clone(),
            device_path: disk.device_path.clone(),
            read_only: disk.read_only,
            needs_rescan: true,
            rescan_delay: disk.rescan_delay,
            ..DiskSpec::new(disk.size)
        })
    }

    fn hot_attached(&self, number: u32, handle: DiskHandle) -> Result<HotDisk, HotplugError> {
        let disk = self
            .storage
            .disk_by_handle(handle)
            .ok_or(HotplugError::UnknownDisk(handle.0))?;
        let lun = parse_location(&disk.location).and_then(|l| l[3].parse().ok());
        tracing::debug!(
            number,
            location = disk.location,
            size = disk.size,
            "disk hot-attached"
        );
        Ok(HotDisk {
            number,
            handle,
            lun,
        })
    }

    /// Detaches a disk, refused while a volume of it is mounted; gives back
    /// the disk with its contents, for [`hot_reattach`](Self::hot_reattach).
    pub fn hot_detach(&mut self, handle: DiskHandle) -> Result<DetachedDisk, HotplugError> {
        let disk = self
            .storage
            .disk_by_handle(handle)
            .ok_or(HotplugError::UnknownDisk(handle.0))?;
        let number = disk.number;
        let volumes: Vec<String> = disk
            .partitions
            .iter()
            .filter_map(|p| p.volume.clone())
            .collect();
        let mounted = self
            .snapshot()
            .mount_points
            .into_iter()
            .find(|m| volumes.iter().any(|v| v.eq_ignore_ascii_case(&m.volume_id)));
        if let Some(m) = mounted {
            return Err(HotplugError::Mounted {
                disk: number,
                volume: m.volume_id,
                path: m.path,
            });
        }
        let detached = self.storage.take_disk(handle)?;
        for id in detached.volume_ids() {
            self.detached_volumes.insert(id.to_ascii_lowercase());
        }
        tracing::debug!(number, "disk hot-detached");
        Ok(detached)
    }

    /// Grows a disk to `size` bytes (at once: partitions stay, the driver
    /// extends its volume). The same size is a no-op; a smaller one is
    /// refused.
    pub fn hot_grow(&mut self, handle: DiskHandle, size: u64) -> Result<(), HotplugError> {
        let disk = self
            .storage
            .disk_by_handle(handle)
            .ok_or(HotplugError::UnknownDisk(handle.0))?;
        let number = disk.number;
        if size < disk.size {
            return Err(HotplugError::Shrink {
                disk: number,
                size: disk.size,
                requested: size,
            });
        }
        let disk = self.storage.disk_mut_any(number).expect("disk just found");
        disk.set_size(size)?;
        Ok(())
    }
}

impl Host {
    /// [`HostState::hot_attach`] under the node's lock.
    pub fn hot_attach(&self, disk: HotAttach) -> Result<HotDisk, HotplugError> {
        self.lock().hot_attach(disk)
    }

    /// [`HostState::hot_detach`] under the node's lock.
    pub fn hot_detach(&self, handle: DiskHandle) -> Result<DetachedDisk, HotplugError> {
        self.lock().hot_detach(handle)
    }

    /// [`HostState::hot_reattach`] under the node's lock.
    pub fn hot_reattach(
        &self,
        detached: DetachedDisk,
        disk: HotAttach,
    ) -> Result<HotDisk, HotplugError> {
        self.lock().hot_reattach(detached, disk)
    }

    /// [`HostState::hot_attach_clone`] under the node's lock.
    pub fn hot_attach_clone(
        &self,
        source: DiskHandle,
        disk: HotAttach,
    ) -> Result<HotDisk, HotplugError> {
        self.lock().hot_attach_clone(source, disk)
    }

    /// [`HostState::hot_grow`] under the node's lock.
    pub fn hot_grow(&self, handle: DiskHandle, size: u64) -> Result<(), HotplugError> {
        self.lock().hot_grow(handle, size)
    }
}
