//! The storage model: disks, partitions and volumes.
//!
//! Pure state and arithmetic, no paths: the file contents of each volume live
//! in the namespace (`namespace.rs`), under a directory named after the
//! volume's GUID. The group operations (`disk.rs`, `volume.rs`) add upstream's
//! error wrapping on top of the primitives here.
//!
//! # Layout
//! GPT with 512-byte sectors: usable area from 17408 (LBA 34) to
//! `size − 16896` (backup GPT, 33 sectors); initialising creates the MSR as
//! partition 1 at 17408, size 16759808 (ending at 16 MiB). A maximum-size
//! partition takes the largest free extent, start rounded up to 1 MiB, end not
//! aligned. For 4096-byte sectors the header/entry-array sizes are scaled
//! (first usable LBA 6, backup 5 sectors). MBR: usable 1 MiB … `size`, no MSR.
//!
//! # Seams for other host modules
//! - iSCSI attaches one disk per LUN with `Storage::attach_disk` (a
//!   [`DiskSpec`] carrying the ids and size) and detaches it with
//!   `Storage::detach_disk` by the [`DiskHandle`] it got back; handles are
//!   never reused, so a stale handle cannot detach a disk that later took the
//!   same number.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use super::error::{HostError, HostResult};
pub use super::location::parse_location;
use super::path::{volume_id_for_guid, volume_id_guid};

/// One MiB.
pub(crate) const MIB: u64 = 1 << 20;
/// GPT type of a basic data partition.
pub const GPT_BASIC_DATA: &str = "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}";
/// GPT type of the Microsoft Reserved partition.
pub const GPT_MSR: &str = "{e3c9e316-0b5c-4db8-817d-f92df00215ae}";
/// GPT type of the EFI system partition.
pub(crate) const GPT_EFI: &str = "{c12a7328-f81f-11d2-ba4b-00a0c93ec93b}";
/// GPT type of a recovery partition.
pub(crate) const GPT_RECOVERY: &str = "{de94bba4-06d1-4d40-a16a-bfd50179d6ac}";
/// MBR type byte of an IFS (NTFS) partition. System Reserved, on MBR, is
/// one of these too: the active one, about 500 MiB, labelled
/// [`SYSTEM_RESERVED_LABEL`].
pub(crate) const MBR_IFS: u8 = 0x07;
/// MBR type byte of a hidden recovery partition (Windows RE on MBR).
pub(crate) const MBR_HIDDEN_RECOVERY: u8 = 0x27;
/// The file system label Windows setup gives the System Reserved partition.
pub(crate) const SYSTEM_RESERVED_LABEL: &str = "System Reserved";
/// The disk class interface GUID that ends every disk device path.
pub const DISK_INTERFACE_GUID: &str = "{53f56307-b6bf-11d0-94f2-00a0c91efb8b}";
/// Total size of the MSR partition plus the primary GPT: the MSR ends here.
const MSR_END: u64 = 16 * MIB;

/// WMI result codes the simulator returns, as Windows' storage provider
/// documents them: Microsoft's "Storage Management API Common Return
/// Codes" table
/// (<https://learn.microsoft.com/en-us/windows-hardware/drivers/storage/storage-management-api-common-return-codes>)
/// and the return value lists of the methods that give them:
/// "Initialize method of the MSFT_Disk class" (41001), "Offline method of
/// the MSFT_Disk class" (41009), "Format method of the MSFT_Volume class"
/// (42010, 43006), "CreatePartition method of the MSFT_Disk class" (41002,
/// 41003).
pub mod wmi {
    /// Generic failure.
    pub const FAILED: u32 = 4;
    /// Invalid parameter (e.g. a GPT type on an MBR disk).
    pub(crate) const INVALID_PARAMETER: u32 = 5;
    /// Size outside the supported range (resize).
    pub(crate) const SIZE_NOT_SUPPORTED: u32 = 4097;
    /// Not enough available capacity for a new partition.
    pub(crate) const NOT_ENOUGH_SPACE: u32 = 40000;
    /// The disk is already initialised (`Initialize` on a disk that has a
    /// partition table).
    pub(crate) const ALREADY_INITIALIZED: u32 = 41001;
    /// The disk is read-only.
    pub(crate) const DISK_READ_ONLY: u32 = 41002;
    /// The disk is offline.
    pub(crate) const DISK_OFFLINE: u32 = 41003;
    /// The operation is not supported on a critical disk (taking the
    /// system/boot disk offline).
    pub(crate) const SYSTEM_DISK: u32 = 41009;
    /// Cannot resize a partition whose file system the resize does not
    /// know.
    pub(crate) const FS_NOT_SUPPORTED: u32 = 42009;
    /// Not allowed on a system or critical partition (formatting the
    /// system volume).
    pub(crate) const SYSTEM_VOLUME: u32 = 42010;
    /// The drive is read-only (`MSFT_Volume.Format` on a read-only disk,
    /// where the disk methods answer [`DISK_READ_ONLY`]).
    pub(crate) const VOLUME_READ_ONLY: u32 = 43006;
}

/// A tiny deterministic generator (splitmix64) for volume GUIDs and other
/// identifiers, so seeded hosts produce the same ids every run.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// 16 random bytes.
    pub(crate) fn bytes16(&mut self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.next_u64().to_be_bytes());
        b[8..].copy_from_slice(&self.next_u64().to_be_bytes());
        b
    }

    /// A random (version 4) GUID in lowercase `8-4-4-4-12` form.
    pub(crate) fn guid(&mut self) -> String {
        let mut b = self.bytes16();
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }
}

/// How a disk is partitioned (`MSFT_Disk.PartitionStyle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PartitionStyle {
    /// Uninitialised (0).
    Raw,
    /// Master boot record (1).
    Mbr,
    /// GUID partition table (2).
    Gpt,
}

/// A disk's SCSI page 0x83 device identifier.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Page83 {
    /// No usable identifier: reported as `""`.
    None,
    /// An ASCII identifier: reported as the raw text, padding kept.
    Ascii(Vec<u8>),
    /// A binary identifier: reported as lowercase hex.
    Binary(Vec<u8>),
}

impl Page83 {
    /// The identifier as ListDiskIDs reports it.
    pub fn reported(&self) -> String {
        match self {
            Page83::None => String::new(),
            Page83::Ascii(b) => String::from_utf8_lossy(b).into_owned(),
            Page83::Binary(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
        }
    }

    /// A Hyper-V/Azure style identifier: `MSFT    ` followed by 16 bytes.
    pub(crate) fn msft_virtual(id: [u8; 16]) -> Self {
        let mut v = b"MSFT    ".to_vec();
        v.extend_from_slice(&id);
        Page83::Binary(v)
    }
}

/// A volume's file system (`MSFT_Volume.FileSystemType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileSystem {
    /// Unformatted (type 0).
    Raw,
    /// NTFS (14).
    Ntfs,
    /// ReFS.
    Refs,
    /// FAT32.
    Fat32,
    /// exFAT.
    ExFat,
}

impl FileSystem {
    /// Whether IsVolumeFormatted reports true (any file system but RAW).
    pub fn is_formatted(self) -> bool {
        self != FileSystem::Raw
    }
}

/// The type of a partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PartitionType {
    /// A GPT partition type GUID, lowercase with braces (see the `GPT_*` constants).
    Gpt(String),
    /// An MBR partition type byte.
    Mbr(u8),
}

impl PartitionType {
    /// Whether this is the Microsoft Reserved partition (no volume).
    pub(crate) fn is_msr(&self) -> bool {
        matches!(self, PartitionType::Gpt(t) if t.eq_ignore_ascii_case(GPT_MSR))
    }

    /// Whether Windows hides the partition (`MSFT_Partition.IsHidden`): an
    /// MBR hidden type.
    pub fn is_hidden(&self) -> bool {
        matches!(self, PartitionType::Mbr(MBR_HIDDEN_RECOVERY))
    }
}

/// A stable handle of an attached disk (never reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DiskHandle(pub u64);

/// A partition of a disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// 1-based partition number.
    pub number: u32,
    /// Byte offset on the disk.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
    /// Partition type.
    pub kind: PartitionType,
    /// Whether the partition is online (its volume is reachable).
    pub is_online: bool,
    /// MBR boot indicator (`MSFT_Partition.IsActive`): set on System
    /// Reserved; always false on GPT.
    pub is_active: bool,
    /// Drive letter (uppercase), if assigned.
    pub drive_letter: Option<char>,
    /// The volume on this partition (canonical id); `None` for the MSR.
    pub volume: Option<String>,
}

/// `MSFT_Disk.BusType` of a SCSI disk.
pub const BUS_TYPE_SCSI: u16 = 1;
/// `MSFT_Disk.BusType` of a file-backed virtual disk (a mounted VHD/VHDX,
/// such as containerd's `sandbox.vhdx` scratch disks).
pub const BUS_TYPE_FILE_BACKED_VIRTUAL: u16 = 15;
/// `MSFT_Disk.BusType` of a Storage Spaces virtual disk.
pub const BUS_TYPE_SPACES: u16 = 16;
/// `MSFT_Disk.BusType` of an NVMe disk.
pub const BUS_TYPE_NVME: u16 = 17;

/// A disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disk {
    /// Stable handle.
    pub handle: DiskHandle,
    /// Disk number (0 = OS disk).
    pub number: u32,
    /// Device interface path.
    pub device_path: String,
    /// `MSFT_Disk.BusType` (1 SCSI, 10 SAS, 11 SATA, 15 file-backed
    /// virtual, 16 Storage Spaces, 17 NVMe, ...).
    pub bus_type: u16,
    /// `MSFT_Disk.Location`.
    pub location: String,
    /// Page 0x83 identifier.
    pub page83: Page83,
    /// `MSFT_Disk.SerialNumber`.
    pub serial_number: String,
    /// Capacity in bytes.
    pub size: u64,
    /// Logical sector size (512 or 4096).
    pub sector_size: u32,
    /// Partition style.
    pub partition_style: PartitionStyle,
    /// `MSFT_Disk.IsOffline`.
    pub is_offline: bool,
    /// `MSFT_Disk.IsReadOnly`.
    pub is_read_only: bool,
    /// Boot/system disk.
    pub is_system: bool,
    /// Partitions, ordered by number.
    pub partitions: Vec<Partition>,
    /// Fault injection: ListDiskIDs / GetDiskNumberByName fail with this text.
    pub probe_error: Option<String>,
    /// When storage management lists the disk.
    pub visibility: Visibility,
    /// What a RAW disk holds across the whole device, though Windows shows
    /// no partition table: the name of a signature
    /// (`crate::win::signatures`, e.g. `ext4` for a file system Linux's
    /// mount-utils made on the whole device, `linux_raid_0.90` for an md
    /// member), written where that format puts it (from the device's start
    /// or its end) when its sectors are read; `name@<bytes>` and
    /// `name@end-<bytes>` place it that many bytes from the start or before
    /// the end instead (`signatures::placed`). Initialising the disk
    /// overwrites it.
    pub holds: Option<String>,
    /// A clone attached beside its source (`Host::hot_attach_clone`): the
    /// source's handle. Its partitions carry the source's volume ids (a
    /// PVC clone or snapshot restore keeps the partition GUIDs); it has
    /// no volume of its own.
    pub clone_of: Option<DiskHandle>,
    /// How long after the disk is brought online its volumes are listed
    /// (zero: at once). Windows mounts a disk's volumes some time after
    /// the disk comes online; a node must not read their absence in that
    /// time as a blank disk.
    pub volume_arrival: Duration,
    /// Brought online with a `volume_arrival`: its volumes are present
    /// from this instant (tokio's clock).
    pub volumes_from: Option<Instant>,
}

/// When storage management lists a disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// Listed.
    Listed,
    /// Not listed until a `Rescan`, and then only `delay` after it, as a
    /// disk the storage stack is still bringing up.
    AfterRescan {
        /// How long after the `Rescan` the disk shows.
        delay: Duration,
    },
    /// A `Rescan` has run: listed from this instant (tokio's clock, so
    /// paused-time tests see it too).
    From(Instant),
}

impl Disk {
    /// Whether storage management lists the disk now.
    pub fn is_listed(&self) -> bool {
        match self.visibility {
            Visibility::Listed => true,
            Visibility::AfterRescan { .. } => false,
            Visibility::From(at) => Instant::now() >= at,
        }
    }
}

impl Disk {
    /// First usable byte of the partition area.
    pub(crate) fn usable_start(&self) -> u64 {
        let ss = u64::from(self.sector_size);
        match self.partition_style {
            PartitionStyle::Gpt => ss * (2 + 16384 / ss),
            PartitionStyle::Mbr => MIB,
            PartitionStyle::Raw => 0,
        }
    }

    /// End (exclusive) of the partition area.
    pub(crate) fn usable_end(&self) -> u64 {
        let ss = u64::from(self.sector_size);
        match self.partition_style {
            PartitionStyle::Gpt => self.size.saturating_sub(ss * (1 + 16384 / ss)),
            _ => self.size,
        }
    }

    /// The partition with this number.
    pub fn partition(&self, number: u32) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.number == number)
    }

    /// Free extents `(start, end)` of the partition area, in disk order.
    pub(crate) fn free_extents(&self) -> Vec<(u64, u64)> {
        let mut parts: Vec<&Partition> = self.partitions.iter().collect();
        parts.sort_by_key(|p| p.offset);
        let mut out = Vec::new();
        let mut cur = self.usable_start();
        for p in parts {
            if p.offset > cur {
                out.push((cur, p.offset));
            }
            cur = cur.max(p.offset + p.size);
        }
        let end = self.usable_end();
        if end > cur {
            out.push((cur, end));
        }
        out
    }

    /// Sets the capacity, as a cloud resizing the disk does: partitions
    /// stay, so the new size must be a sector multiple that leaves room for
    /// them (and for the backup GPT).
    pub(crate) fn set_size(&mut self, new_size: u64) -> HostResult<()> {
        let ss = u64::from(self.sector_size);
        let end = self
            .partitions
            .iter()
            .map(|p| p.offset + p.size)
            .max()
            .unwrap_or(0);
        let backup = if self.partition_style == PartitionStyle::Gpt {
            ss * (1 + 16384 / ss)
        } else {
            0
        };
        if !new_size.is_multiple_of(ss) || new_size < end + backup {
            return Err(HostError::invalid_argument(format!(
                "new size {new_size} is not a sector multiple or cuts into partitions"
            )));
        }
        self.size = new_size;
        Ok(())
    }

    fn wmi_target(&self) -> String {
        format!("MSFT_Disk (Number = {})", self.number)
    }
}

/// A volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volume {
    /// Canonical id `\\?\Volume{guid}\` (lowercase).
    pub id: String,
    /// Number of the disk holding it.
    pub disk: u32,
    /// Number of its partition.
    pub partition: u32,
    /// File system.
    pub fs: FileSystem,
    /// Label.
    pub label: String,
    /// Bytes in use (formatted volumes).
    pub used: u64,
    /// Flushes (WriteVolumeCache / UnmountVolume) so far.
    pub flushes: u64,
    /// Boot/system volume (cannot be formatted).
    pub is_system: bool,
    /// What a volume Windows shows as RAW holds: the name of a signature
    /// (`crate::win::signatures`: `bitlocker` for a volume locked without
    /// its key, `ext4` or `xfs` in a basic-data or 0x07 partition, `ntfs`
    /// that Windows no longer mounts, `drbd_09` for DRBD's internal
    /// meta-data at the partition's end), written where that format puts
    /// it in the partition, or at `name@<bytes>` / `name@end-<bytes>`
    /// (`signatures::placed`). Formatting overwrites it.
    pub holds: Option<String>,
}

impl Volume {
    /// The GUID part of the id (lowercase, no braces): the name of the
    /// volume's root directory in the sandbox.
    pub(crate) fn guid(&self) -> String {
        volume_id_guid(&self.id).unwrap_or_default()
    }
}

/// What to attach: the identifiers and size of a new disk. Fields left `None`
/// get realistic generated values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskSpec {
    /// Disk number to use; default the lowest free number.
    pub number: Option<u32>,
    /// Location text; default `Integrated : Adapter 3 : Port 0 : Target 0 : LUN <n>`.
    pub location: Option<String>,
    /// Page83 id; default an `MSFT    `+GUID binary id.
    pub page83: Option<Page83>,
    /// Serial number; default `""`.
    pub serial_number: Option<String>,
    /// Device path; default a Hyper-V SCSI path.
    pub device_path: Option<String>,
    /// `MSFT_Disk.BusType`; default 17 (NVMe) for an NVMe device path
    /// (`ven_nvme`), else 1 (SCSI).
    pub bus_type: Option<u16>,
    /// Capacity in bytes.
    pub size: u64,
    /// Sector size (default 512).
    pub sector_size: u32,
    /// Partition style (default RAW).
    pub partition_style: PartitionStyle,
    /// Offline at attach.
    pub offline: bool,
    /// Read-only.
    pub read_only: bool,
    /// Boot/system disk.
    pub system: bool,
    /// Needs a `Rescan` before storage management sees it.
    pub needs_rescan: bool,
    /// With `needs_rescan`: how long after the `Rescan` it shows (default 0).
    pub rescan_delay: Duration,
}

impl DiskSpec {
    /// A blank RAW, online, 512-byte-sector disk of `size` bytes with generated ids.
    pub fn new(size: u64) -> Self {
        Self {
            number: None,
            location: None,
            page83: None,
            serial_number: None,
            device_path: None,
            bus_type: None,
            size,
            sector_size: 512,
            partition_style: PartitionStyle::Raw,
            offline: false,
            read_only: false,
            system: false,
            needs_rescan: false,
            rescan_delay: Duration::ZERO,
        }
    }
}

/// A disk taken off the node by `Storage::take_disk`: its partitions
/// and volumes, for `Storage::put_disk`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetachedDisk {
    disk: Disk,
    volumes: Vec<Volume>,
}

impl DetachedDisk {
    /// Its capacity in bytes.
    pub fn size(&self) -> u64 {
        self.disk.size
    }

    /// The ids of its volumes.
    pub(crate) fn volume_ids(&self) -> Vec<String> {
        self.volumes.iter().map(|v| v.id.clone()).collect()
    }
}

/// Where a new partition goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionSize {
    /// Fill the largest free extent (UseMaximumSize).
    Max,
    /// Exactly this many bytes, at the start of the first extent that fits
    /// (1 MiB aligned).
    Bytes(u64),
}

/// The disk/partition/volume model.
#[derive(Debug, Clone)]
pub struct Storage {
    disks: BTreeMap<u32, Disk>,
    volumes: BTreeMap<String, Volume>,
    rng: SplitMix64,
    next_handle: u64,
    /// What `MSFT_Partition.GetSupportedSize` returns instead of its
    /// answer, when set ([`Storage::fail_supported_size`]).
    supported_size_failure: Option<u32>,
    /// How long `MSFT_Partition.GetSupportedSize` takes
    /// ([`Storage::slow_supported_size`]).
    supported_size_delay: std::time::Duration,
}

fn wmi_error(class_method: &str, target: &str, code: u32) -> HostError {
    let message = format!("WMI {class_method} failed (target={target}): result {code}");
    HostError::wmi_method(message, code)
}

/// `failed to query disk <n>. error: not found`.
pub(crate) fn disk_not_found(n: u32) -> HostError {
    HostError::unknown(format!("failed to query disk {n}. error: not found"))
}

/// `failed to query volume <id>: not found`.
pub(crate) fn volume_not_found(id: &str) -> HostError {
    HostError::unknown(format!("failed to query volume {id}: not found"))
}

/// Metadata bytes a fresh NTFS format uses: `clamp(size / 256, 4 MiB, 128 MiB)`
/// (never more than the volume).
pub fn ntfs_overhead(size: u64) -> u64 {
    (size / 256).clamp(4 * MIB, 128 * MIB).min(size)
}

impl Storage {
    /// An empty model whose generated ids come from `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            disks: BTreeMap::new(),
            volumes: BTreeMap::new(),
            rng: SplitMix64::new(seed),
            next_handle: 1,
            supported_size_failure: None,
            supported_size_delay: std::time::Duration::ZERO,
        }
    }

    /// A fresh volume id.
    pub(crate) fn new_volume_id(&mut self) -> String {
        volume_id_for_guid(&self.rng.guid())
    }

    /// All disks, including ones not yet visible, by number.
    pub fn all_disks(&self) -> impl Iterator<Item = &Disk> {
        self.disks.values()
    }

    /// All volumes (present or not), by id.
    pub(crate) fn all_volumes(&self) -> impl Iterator<Item = &Volume> {
        self.volumes.values()
    }

    /// Visible disks (what storage management enumerates), by number.
    pub(crate) fn disks(&self) -> impl Iterator<Item = &Disk> {
        self.disks.values().filter(|d| d.is_listed())
    }

    /// A visible disk by number.
    pub fn disk(&self, n: u32) -> Option<&Disk> {
        self.disks.get(&n).filter(|d| d.is_listed())
    }

    /// Any disk (visible or not) by number, mutable: for test hooks.
    pub(crate) fn disk_mut_any(&mut self, n: u32) -> Option<&mut Disk> {
        self.disks.get_mut(&n)
    }

    fn disk_mut(&mut self, n: u32) -> Option<&mut Disk> {
        self.disks.get_mut(&n).filter(|d| d.is_listed())
    }

    /// The disk with this handle.
    pub(crate) fn disk_by_handle(&self, h: DiskHandle) -> Option<&Disk> {
        self.disks.values().find(|d| d.handle == h)
    }

    fn lowest_free_number(&self) -> u32 {
        let mut n = 0;
        while self.disks.contains_key(&n) {
            n += 1;
        }
        n
    }

    /// Attaches a disk (test hook, iSCSI login). Returns its number and handle.
    pub(crate) fn attach_disk(&mut self, spec: DiskSpec) -> HostResult<(u32, DiskHandle)> {
        if spec.sector_size != 512 && spec.sector_size != 4096 {
            return Err(HostError::invalid_argument(format!(
                "sector size {} is not 512 or 4096",
                spec.sector_size
            )));
        }
        if spec.size == 0 || !spec.size.is_multiple_of(u64::from(spec.sector_size)) {
            return Err(HostError::invalid_argument(format!(
                "disk size {} is not a positive multiple of the sector size {}",
                spec.size, spec.sector_size
            )));
        }
        let number = match spec.number {
            Some(n) if self.disks.contains_key(&n) => {
                return Err(HostError::invalid_argument(format!(
                    "disk number {n} is already in use"
                )));
            }
            Some(n) => n,
            None => self.lowest_free_number(),
        };
        let handle = DiskHandle(self.next_handle);
        self.next_handle += 1;
        let location = spec.location.unwrap_or_else(|| {
            format!("Integrated : Adapter 3 : Port 0 : Target 0 : LUN {number}")
        });
        let page83 = match spec.page83 {
            Some(p) => p,
            None => Page83::msft_virtual(self.rng.bytes16()),
        };
        let device_path = spec.device_path.unwrap_or_else(|| {
            format!(
                r"\\?\scsi#disk&ven_msft&prod_virtual_disk#{:06x}#{DISK_INTERFACE_GUID}",
                handle.0 as u32 & 0xff_ffff
            )
        });
        let bus_type = spec.bus_type.unwrap_or_else(|| {
            match device_path.to_ascii_lowercase().contains("ven_nvme") {
                true => BUS_TYPE_NVME,
                false => BUS_TYPE_SCSI,
            }
        });
        let mut disk = Disk {
            handle,
            number,
            bus_type,
            device_path,
            location,
            page83,
            serial_number: spec.serial_number.unwrap_or_default(),
            size: spec.size,
            sector_size: spec.sector_size,
            partition_style: PartitionStyle::Raw,
            is_offline: spec.offline,
            is_read_only: spec.read_only,
            is_system: spec.system,
            partitions: Vec::new(),
            probe_error: None,
            holds: None,
            clone_of: None,
            volume_arrival: Duration::ZERO,
            volumes_from: None,
            visibility: if spec.needs_rescan {
                Visibility::AfterRescan {
                    delay: spec.rescan_delay,
                }
            } else {
                Visibility::Listed
            },
        };
        match spec.partition_style {
            PartitionStyle::Raw => {}
            PartitionStyle::Mbr => disk.partition_style = PartitionStyle::Mbr,
            PartitionStyle::Gpt => init_gpt(&mut disk),
        }
        self.disks.insert(number, disk);
        Ok((number, handle))
    }

    /// Detaches a disk by handle: removes it with its partitions and volumes
    /// (mount points referring to them stay, dangling). Returns the removed
    /// volumes' ids so the caller can drop their contents.
    pub(crate) fn detach_disk(&mut self, h: DiskHandle) -> HostResult<Vec<String>> {
        let n = self
            .disk_by_handle(h)
            .map(|d| d.number)
            .ok_or_else(|| HostError::invalid_argument(format!("no disk with handle {}", h.0)))?;
        let disk = self.disks.remove(&n).expect("disk just found");
        let ids: Vec<String> = disk
            .partitions
            .iter()
            .filter_map(|p| p.volume.clone())
            .collect();
        for id in &ids {
            self.volumes.remove(&vkey(id));
        }
        Ok(ids)
    }

    /// Takes a disk off the node with its partitions and volumes, kept as a
    /// cloud keeps a detached disk: [`Storage::put_disk`] brings it back as
    /// it was. The volumes' contents are the caller's to keep.
    pub(crate) fn take_disk(&mut self, h: DiskHandle) -> HostResult<DetachedDisk> {
        let n = self
            .disk_by_handle(h)
            .map(|d| d.number)
            .ok_or_else(|| HostError::invalid_argument(format!("no disk with handle {}", h.0)))?;
        let disk = self.disks.remove(&n).expect("disk just found");
        let volumes = disk
            .partitions
            .iter()
            .filter_map(|p| self.volumes.remove(&vkey(p.volume.as_deref()?)))
            .collect();
        Ok(DetachedDisk { disk, volumes })
    }

    /// Attaches a disk [`Storage::take_disk`] took, its partitions and
    /// volumes as they were, under the ids, size and state of `spec`
    /// (`partition_style` and `system` are the disk's own). A drive letter
    /// another volume took meanwhile is dropped.
    pub(crate) fn put_disk(
        &mut self,
        detached: DetachedDisk,
        spec: DiskSpec,
    ) -> HostResult<(u32, DiskHandle)> {
        let DetachedDisk {
            disk: mut kept,
            volumes,
        } = detached;
        let size = spec.size.max(kept.size);
        let (number, handle) = self.attach_disk(DiskSpec {
            size: kept.size,
            sector_size: kept.sector_size,
            ..spec
        })?;
        let taken: Vec<char> = self
            .disks
            .values()
            .flat_map(|d| d.partitions.iter().filter_map(|p| p.drive_letter))
            .collect();
        let disk = self.disks.get_mut(&number).expect("disk just attached");
        for p in &mut kept.partitions {
            if p.drive_letter.is_some_and(|l| taken.contains(&l)) {
                p.drive_letter = None;
            }
        }
        disk.partition_style = kept.partition_style;
        disk.partitions = kept.partitions;
        disk.is_system = kept.is_system;
        if let Err(e) = disk.set_size(size) {
            self.disks.remove(&number);
            return Err(e);
        }
        for mut v in volumes {
            v.disk = number;
            self.volumes.insert(vkey(&v.id), v);
        }
        Ok((number, handle))
    }

    /// Sets a blank disk's partition style without creating the MSR
    /// (seeding an OS disk whose layout is built partition by partition).
    pub(crate) fn set_partition_style_bare(
        &mut self,
        n: u32,
        style: PartitionStyle,
    ) -> HostResult<()> {
        let d = self.disks.get_mut(&n).ok_or_else(|| disk_not_found(n))?;
        if !d.partitions.is_empty() {
            return Err(HostError::invalid_argument(format!(
                "disk {n} already has partitions"
            )));
        }
        d.partition_style = style;
        Ok(())
    }

    /// `Rescan`: every attached disk is listed, those with a delay once it
    /// has passed.
    pub(crate) fn rescan(&mut self) {
        for d in self.disks.values_mut() {
            if let Visibility::AfterRescan { delay } = d.visibility {
                d.visibility = match delay.is_zero() {
                    true => Visibility::Listed,
                    false => Visibility::From(Instant::now() + delay),
                };
            }
        }
    }

    /// Initialises a RAW disk (`MSFT_Disk.Initialize`); GPT also creates the MSR.
    pub(crate) fn initialize(&mut self, n: u32, style: PartitionStyle) -> HostResult<()> {
        let d = self.disk_mut(n).ok_or_else(|| disk_not_found(n))?;
        let target = d.wmi_target();
        let code = if d.partition_style != PartitionStyle::Raw {
            Some(wmi::ALREADY_INITIALIZED)
        } else if d.is_offline {
            Some(wmi::DISK_OFFLINE)
        } else if d.is_read_only {
            Some(wmi::DISK_READ_ONLY)
        } else if style == PartitionStyle::Raw {
            Some(wmi::INVALID_PARAMETER)
        } else {
            None
        };
        if let Some(c) = code {
            return Err(wmi_error("MSFT_Disk.Initialize", &target, c));
        }
        match style {
            PartitionStyle::Gpt => init_gpt(d),
            _ => d.partition_style = PartitionStyle::Mbr,
        }
        // The partition table overwrites what the device held.
        d.holds = None;
        Ok(())
    }

    /// Creates a partition (`MSFT_Disk.CreatePartition`). Every partition but
    /// the MSR gets a new RAW volume. Returns the partition number and volume id.
    pub(crate) fn create_partition(
        &mut self,
        n: u32,
        kind: PartitionType,
        size: PartitionSize,
    ) -> HostResult<(u32, Option<String>)> {
        let id = if kind.is_msr() {
            None
        } else {
            Some(self.new_volume_id())
        };
        let d = self.disk_mut(n).ok_or_else(|| disk_not_found(n))?;
        let target = d.wmi_target();
        let fail = |c| Err(wmi_error("MSFT_Disk.CreatePartition", &target, c));
        if d.is_offline {
            return fail(wmi::DISK_OFFLINE);
        }
        if d.is_read_only {
            return fail(wmi::DISK_READ_ONLY);
        }
        match (&d.partition_style, &kind) {
            (PartitionStyle::Gpt, PartitionType::Gpt(_))
            | (PartitionStyle::Mbr, PartitionType::Mbr(_)) => {}
            _ => return fail(wmi::INVALID_PARAMETER),
        }
        let ss = u64::from(d.sector_size);
        let extents = d.free_extents();
        let placed = match size {
            PartitionSize::Max => extents
                .iter()
                .max_by_key(|(s, e)| (e - s, std::cmp::Reverse(*s)))
                .and_then(|&(s, e)| {
                    let start = s.div_ceil(MIB) * MIB;
                    let len = e.saturating_sub(start) / ss * ss;
                    (len >= MIB).then_some((start, len))
                }),
            PartitionSize::Bytes(want) => {
                let want = want / ss * ss;
                extents.iter().find_map(|&(s, e)| {
                    let start = s.div_ceil(MIB) * MIB;
                    (want > 0 && start + want <= e).then_some((start, want))
                })
            }
        };
        let Some((offset, len)) = placed else {
            return fail(wmi::NOT_ENOUGH_SPACE);
        };
        let number = d.partitions.iter().map(|p| p.number).max().unwrap_or(0) + 1;
        d.partitions.push(Partition {
            number,
            offset,
            size: len,
            kind,
            is_online: true,
            is_active: false,
            drive_letter: None,
            volume: id.clone(),
        });
        d.partitions.sort_by_key(|p| p.number);
        if let Some(id) = &id {
            self.volumes.insert(
                vkey(id),
                Volume {
                    id: id.clone(),
                    disk: n,
                    partition: number,
                    fs: FileSystem::Raw,
                    label: String::new(),
                    used: 0,
                    flushes: 0,
                    is_system: false,
                    holds: None,
                },
            );
        }
        Ok((number, id))
    }

    /// Sets a partition online (`MSFT_Partition.Online`).
    pub(crate) fn set_partition_online(&mut self, n: u32, p: u32, online: bool) -> HostResult<()> {
        let d = self.disk_mut(n).ok_or_else(|| disk_not_found(n))?;
        let part = d
            .partitions
            .iter_mut()
            .find(|x| x.number == p)
            .ok_or_else(|| HostError::unknown("not found"))?;
        part.is_online = online;
        Ok(())
    }

    /// Sets a partition's drive letter (seeding and test hooks).
    pub(crate) fn set_drive_letter(
        &mut self,
        n: u32,
        p: u32,
        letter: Option<char>,
    ) -> HostResult<()> {
        let letter = letter.map(|c| c.to_ascii_uppercase());
        if let Some(l) = letter {
            if !l.is_ascii_uppercase() {
                return Err(HostError::invalid_argument(format!(
                    "invalid drive letter {l}"
                )));
            }
            let taken = self.disks.values().any(|d| {
                d.partitions
                    .iter()
                    .any(|x| x.drive_letter == Some(l) && !(d.number == n && x.number == p))
            });
            if taken {
                return Err(HostError::invalid_argument(format!(
                    "drive letter {l} is already in use"
                )));
            }
        }
        let d = self.disks.get_mut(&n).ok_or_else(|| disk_not_found(n))?;
        let part = d
            .partitions
            .iter_mut()
            .find(|x| x.number == p)
            .ok_or_else(|| HostError::unknown("not found"))?;
        part.drive_letter = letter;
        Ok(())
    }

    /// Attaches a clone of the disk with handle `source` beside it, under
    /// the ids and place of `spec`: the source's size, partition style and
    /// partitions, their volume ids included. Windows keeps such a disk
    /// offline (a disk signature collision, kubernetes-csi/csi-proxy#287),
    /// and [`set_online`](Storage::set_online) refuses it while a volume
    /// of its ids is present on another disk. The smallest model: the
    /// clone never gets volumes of its own (no resignature), and the
    /// method's answer (generic failure, 4) is an assumption, not read
    /// from a real node.
    pub(crate) fn attach_clone(
        &mut self,
        source: DiskHandle,
        spec: DiskSpec,
    ) -> HostResult<(u32, DiskHandle)> {
        let src = self.disk_by_handle(source).cloned().ok_or_else(|| {
            HostError::invalid_argument(format!("no disk with handle {}", source.0))
        })?;
        let (number, handle) = self.attach_disk(DiskSpec {
            size: src.size,
            sector_size: src.sector_size,
            partition_style: PartitionStyle::Raw,
            offline: true,
            system: false,
            ..spec
        })?;
        let disk = self.disks.get_mut(&number).expect("disk just attached");
        disk.partition_style = src.partition_style;
        disk.partitions = src.partitions;
        for p in &mut disk.partitions {
            p.drive_letter = None;
        }
        disk.clone_of = Some(source);
        Ok((number, handle))
    }

    /// Whether disk `n` carries a volume id present on another disk (a
    /// clone beside its source).
    fn collides(&self, n: u32) -> bool {
        self.disks.get(&n).is_some_and(|d| {
            d.partitions
                .iter()
                .filter_map(|p| p.volume.as_deref())
                .any(|id| {
                    self.volumes
                        .get(&vkey(id))
                        .is_some_and(|v| v.disk != n && self.is_present(v))
                })
        })
    }

    /// Takes a disk offline or brings it online (no checks: the test hook
    /// "behind the proxy's back"). Unknown disk → error.
    pub fn force_offline(&mut self, n: u32, offline: bool) -> HostResult<()> {
        let d = self.disks.get_mut(&n).ok_or_else(|| disk_not_found(n))?;
        d.is_offline = offline;
        Ok(())
    }

    /// `MSFT_Disk.Online` / `.Offline` with Windows' refusals (the system disk
    /// cannot be taken offline). No-op when already in the state.
    pub(crate) fn set_online(&mut self, n: u32, online: bool) -> HostResult<()> {
        let d = self.disk_mut(n).ok_or_else(|| disk_not_found(n))?;
        if d.is_offline != online {
            return Ok(());
        }
        if !online && d.is_system {
            let method = "MSFT_Disk.Offline";
            return Err(wmi_error(method, &d.wmi_target(), wmi::SYSTEM_DISK));
        }
        let (clone, target) = (d.clone_of.is_some(), d.wmi_target());
        if online && clone && self.collides(n) {
            return Err(wmi_error("MSFT_Disk.Online", &target, wmi::FAILED));
        }
        let d = self.disk_mut(n).expect("disk just found");
        d.is_offline = !online;
        if online && !d.volume_arrival.is_zero() {
            d.volumes_from = Some(Instant::now() + d.volume_arrival);
        }
        Ok(())
    }

    /// Whether the volume (canonical id) is present: disk exists, visible,
    /// online, partition online.
    fn is_present(&self, v: &Volume) -> bool {
        self.disk(v.disk).is_some_and(|d| {
            !d.is_offline
                && d.volumes_from.is_none_or(|at| Instant::now() >= at)
                && d.partition(v.partition).is_some_and(|p| p.is_online)
        })
    }

    /// A present volume by id, matched case-insensitively (whole string,
    /// trailing `\` required).
    pub(crate) fn volume(&self, id: &str) -> Option<&Volume> {
        let v = self.volumes.get(&vkey(id))?;
        self.is_present(v).then_some(v)
    }

    /// The canonical id of the present volume `id` (matched
    /// case-insensitively): how the namespace resolves volume roots.
    pub(crate) fn present_volume(&self, id: &str) -> Option<String> {
        self.volume(id).map(|v| v.id.clone())
    }

    /// The canonical id of the present volume with drive letter `letter`.
    pub(crate) fn drive_volume(&self, letter: char) -> Option<String> {
        self.volume_by_drive_letter(letter).map(|v| v.id.clone())
    }

    /// Whether the present volume `id` is formatted NTFS.
    pub(crate) fn is_ntfs(&self, id: &str) -> bool {
        self.volume(id).is_some_and(|v| v.fs == FileSystem::Ntfs)
    }

    /// A volume by id whether present or not.
    pub(crate) fn volume_any(&self, id: &str) -> Option<&Volume> {
        self.volumes.get(&vkey(id))
    }

    /// A present volume by id, mutable.
    pub(crate) fn volume_mut(&mut self, id: &str) -> Option<&mut Volume> {
        let key = vkey(id);
        let present = self.volumes.get(&key).is_some_and(|v| self.is_present(v));
        if present {
            self.volumes.get_mut(&key)
        } else {
            None
        }
    }

    /// Any volume by id (present or not), mutable: for seeding and test hooks.
    pub(crate) fn volume_mut_any(&mut self, id: &str) -> Option<&mut Volume> {
        self.volumes.get_mut(&vkey(id))
    }

    /// The present volume whose partition carries drive letter `letter`.
    pub(crate) fn volume_by_drive_letter(&self, letter: char) -> Option<&Volume> {
        let l = letter.to_ascii_uppercase();
        self.disks()
            .flat_map(|d| d.partitions.iter())
            .find(|p| p.drive_letter == Some(l))
            .and_then(|p| p.volume.as_deref().and_then(|id| self.volume(id)))
    }

    /// The partition backing a volume.
    pub(crate) fn partition_of(&self, v: &Volume) -> Option<&Partition> {
        self.disks.get(&v.disk)?.partition(v.partition)
    }

    /// `len` bytes of disk `n` from byte `offset`, as a raw read of the
    /// device gives them: zeros but for the signatures the model knows of
    /// (`crate::win::signatures`): the partition table's (protective MBR
    /// and GPT header, or the MBR's boot signature), each formatted
    /// volume's file system at its partition's start, what a RAW volume
    /// [`holds`](Volume::holds), and on a RAW disk what the device
    /// [`holds`](Disk::holds) at its start.
    pub fn read(&self, n: u32, offset: u64, len: usize) -> HostResult<Vec<u8>> {
        use crate::win::signatures::{placed, position_at, write};
        let d = self.disk(n).ok_or_else(|| disk_not_found(n))?;
        let mut bytes = vec![0u8; len];
        // `holds` (a name, or a name and a place) in the region of `size`
        // bytes from `start`.
        let mut put = |holds: &str, start: u64, size: u64| {
            if let Some((s, place)) = placed(holds)
                && let Some(at) = position_at(s, place, size)
            {
                write(s, start + at, offset, &mut bytes);
            }
        };
        match d.partition_style {
            PartitionStyle::Raw => {
                if let Some(holds) = &d.holds {
                    put(holds, 0, d.size);
                }
            }
            PartitionStyle::Mbr => put("mbr", 0, d.size),
            PartitionStyle::Gpt => {
                put("mbr", 0, d.size);
                // The GPT header is in the second logical sector.
                // (`gpt` is the header at 0x200 of that sector.)
                let sector = u64::from(d.sector_size) - 0x200;
                put(&format!("gpt@{sector}"), 0, d.size);
            }
        }
        for p in &d.partitions {
            let Some(v) = p.volume.as_deref().and_then(|id| self.volume_any(id)) else {
                continue;
            };
            let name = match v.fs {
                FileSystem::Ntfs => Some("ntfs"),
                FileSystem::Refs => Some("refs"),
                FileSystem::Fat32 => Some("fat32"),
                FileSystem::ExFat => Some("exfat"),
                FileSystem::Raw => v.holds.as_deref(),
            };
            if let Some(name) = name {
                put(name, p.offset, p.size);
            }
        }
        Ok(bytes)
    }

    /// Present volumes on a disk (all partitions if `p == 0`), in partition order.
    pub(crate) fn volumes_on_disk(&self, n: u32, p: u32) -> Vec<String> {
        let Some(d) = self.disk(n) else {
            return Vec::new();
        };
        if d.is_offline {
            return Vec::new();
        }
        d.partitions
            .iter()
            .filter(|x| p == 0 || x.number == p)
            .filter_map(|x| x.volume.as_deref())
            .filter_map(|id| self.volume(id))
            .map(|v| v.id.clone())
            .collect()
    }

    /// `MSFT_Partition.GetSupportedSize` for a volume's partition: `(min, max)`.
    pub(crate) fn supported_size(&self, id: &str) -> HostResult<(u64, u64)> {
        let v = self.volume(id).ok_or_else(|| volume_not_found(id))?;
        let d = self.disk(v.disk).ok_or_else(|| disk_not_found(v.disk))?;
        let p = d
            .partition(v.partition)
            .ok_or_else(|| HostError::unknown("not found"))?;
        let next = d
            .partitions
            .iter()
            .filter(|x| x.offset > p.offset)
            .map(|x| x.offset)
            .min()
            .unwrap_or_else(|| d.usable_end());
        let max =
            next.saturating_sub(p.offset) / u64::from(d.sector_size) * u64::from(d.sector_size);
        let min = match v.fs {
            FileSystem::Raw => p.size,
            _ => v.used.div_ceil(MIB).max(1) * MIB,
        };
        Ok((min.min(max), max))
    }

    /// Makes `MSFT_Partition.GetSupportedSize` return `code` (`Some(4)`:
    /// `StorageWMI 4`, "Failed") until cleared with `None`. The method
    /// asks the defrag service for the minimum size; with that service
    /// disabled or busy it fails this way (aws-ebs-csi-driver#2877 on
    /// Windows Server 2025). A resize to an explicit size does not ask it.
    pub fn fail_supported_size(&mut self, code: Option<u32>) {
        self.supported_size_failure = code;
    }

    /// Makes `MSFT_Partition.GetSupportedSize` take `delay` of host time
    /// (zero: instant, the default), as it does when the defrag service it
    /// needs is busy (AgentBaker#3804: minutes). Its answer or its failure
    /// ([`Storage::fail_supported_size`]) comes at the end of the delay,
    /// and the work goes on when the caller gives up: the reference
    /// server's and `MockHost`'s `ResizeVolume` to the maximum (size 0)
    /// waits it out in a task of its own (`server::host_time`), the
    /// HostProcess fake on the blocking thread of its call.
    pub fn slow_supported_size(&mut self, delay: std::time::Duration) {
        self.supported_size_delay = delay;
    }

    /// The host time of `MSFT_Partition.GetSupportedSize`
    /// ([`Storage::slow_supported_size`]).
    pub fn supported_size_delay(&self) -> std::time::Duration {
        self.supported_size_delay
    }

    /// The WMI method `MSFT_Partition.GetSupportedSize` for a volume's
    /// partition: [`Storage::supported_size`], or the failure set with
    /// [`Storage::fail_supported_size`].
    pub(crate) fn get_supported_size(&self, id: &str) -> HostResult<(u64, u64)> {
        let answer = self.supported_size(id)?;
        match self.supported_size_failure {
            Some(code) => {
                let v = self.volume(id).ok_or_else(|| volume_not_found(id))?;
                let target = format!(
                    "MSFT_Partition (DiskNumber = {}, PartitionNumber = {})",
                    v.disk, v.partition
                );
                Err(wmi_error("MSFT_Partition.GetSupportedSize", &target, code))
            }
            None => Ok(answer),
        }
    }

    /// `MSFT_Partition.Resize` of a volume's partition to `size` (rounded
    /// down to the sector size). The file system follows; `used` unchanged.
    pub(crate) fn resize(&mut self, id: &str, size: u64) -> HostResult<()> {
        let (min, max) = self.supported_size(id)?;
        let v = self.volume(id).ok_or_else(|| volume_not_found(id))?.clone();
        let d = self.disk(v.disk).ok_or_else(|| disk_not_found(v.disk))?;
        let target = format!(
            "MSFT_Partition (DiskNumber = {}, PartitionNumber = {})",
            v.disk, v.partition
        );
        let fail = |c| Err(wmi_error("MSFT_Partition.Resize", &target, c));
        if !matches!(v.fs, FileSystem::Raw | FileSystem::Ntfs) {
            return fail(wmi::FS_NOT_SUPPORTED);
        }
        if d.is_read_only {
            return fail(wmi::DISK_READ_ONLY);
        }
        let size = size / u64::from(d.sector_size) * u64::from(d.sector_size);
        if size < min || size > max {
            return fail(wmi::SIZE_NOT_SUPPORTED);
        }
        let d = self.disks.get_mut(&v.disk).expect("disk present");
        let p = d
            .partitions
            .iter_mut()
            .find(|x| x.number == v.partition)
            .expect("partition present");
        p.size = size;
        Ok(())
    }

    /// `MSFT_Volume.Format` as NTFS, quick, forced. The caller wipes the
    /// volume's contents.
    pub(crate) fn format_ntfs(&mut self, id: &str) -> HostResult<()> {
        let v = self.volume(id).ok_or_else(|| volume_not_found(id))?.clone();
        let d = self.disk(v.disk).ok_or_else(|| disk_not_found(v.disk))?;
        let target = format!("MSFT_Volume (UniqueId = \"{}\")", v.id);
        let fail = |c| Err(wmi_error("MSFT_Volume.Format", &target, c));
        if v.is_system {
            return fail(wmi::SYSTEM_VOLUME);
        }
        if d.is_read_only {
            return fail(wmi::VOLUME_READ_ONLY);
        }
        let size = self.partition_of(&v).map(|p| p.size).unwrap_or(0);
        let vm = self.volume_mut(id).expect("volume present");
        vm.fs = FileSystem::Ntfs;
        vm.holds = None;
        vm.label.clear();
        vm.used = ntfs_overhead(size);
        Ok(())
    }

    /// Volume size (the partition size) of a present volume.
    pub fn volume_size(&self, id: &str) -> Option<u64> {
        let v = self.volume(id)?;
        self.partition_of(v).map(|p| p.size)
    }

    /// Accounts a write on a formatted volume: `added` bytes written
    /// replacing `replaced` bytes (`used` stays within the volume's size).
    pub(crate) fn add_used(&mut self, id: &str, added: u64, replaced: u64) {
        let size = self
            .volume_any(id)
            .and_then(|v| self.partition_of(v))
            .map(|p| p.size);
        if let (Some(size), Some(v)) = (size, self.volume_mut_any(id))
            && v.fs != FileSystem::Raw
        {
            v.used = v
                .used
                .saturating_sub(replaced)
                .saturating_add(added)
                .min(size);
        }
    }

    /// Counts a flush of a present volume.
    pub(crate) fn flush(&mut self, id: &str) -> HostResult<()> {
        let v = self.volume_mut(id).ok_or_else(|| volume_not_found(id))?;
        v.flushes += 1;
        Ok(())
    }

    /// Sets fields of an existing volume (seeding and test hooks).
    pub(crate) fn set_volume_fs(
        &mut self,
        id: &str,
        fs: FileSystem,
        used: u64,
        system: bool,
    ) -> HostResult<()> {
        let v = self
            .volume_mut_any(id)
            .ok_or_else(|| volume_not_found(id))?;
        v.fs = fs;
        v.used = used;
        v.is_system = system;
        Ok(())
    }

    /// Changes the id of a volume (seeding with fixed ids).
    pub(crate) fn rename_volume(&mut self, old: &str, new: &str) -> HostResult<()> {
        let Some(guid) = volume_id_guid(new) else {
            return Err(HostError::invalid_argument(format!(
                "invalid volume id {new}"
            )));
        };
        let new = volume_id_for_guid(&guid);
        if self.volumes.contains_key(&vkey(&new)) {
            return Err(HostError::invalid_argument(format!(
                "volume id {new} is already in use"
            )));
        }
        let mut v = self
            .volumes
            .remove(&vkey(old))
            .ok_or_else(|| volume_not_found(old))?;
        v.id = new.clone();
        if let Some(d) = self.disks.get_mut(&v.disk) {
            for p in &mut d.partitions {
                if p.number == v.partition {
                    p.volume = Some(new.clone());
                }
            }
        }
        self.volumes.insert(vkey(&new), v);
        Ok(())
    }

    /// Checks the model's structural invariants; returns every violation.
    pub(crate) fn check(&self) -> Vec<String> {
        let mut out = Vec::new();
        for d in self.disks.values() {
            let ss = u64::from(d.sector_size);
            if d.size % ss != 0 {
                out.push(format!("disk {}: size not a sector multiple", d.number));
            }
            let mut parts: Vec<&Partition> = d.partitions.iter().collect();
            parts.sort_by_key(|p| p.offset);
            let mut end = d.usable_start();
            for p in &parts {
                if p.offset < end {
                    out.push(format!(
                        "disk {} partition {}: overlaps or precedes usable area",
                        d.number, p.number
                    ));
                }
                if p.offset + p.size > d.usable_end() {
                    out.push(format!(
                        "disk {} partition {}: beyond usable end",
                        d.number, p.number
                    ));
                }
                end = p.offset + p.size;
                match (&p.volume, p.kind.is_msr()) {
                    (Some(_), true) => out.push(format!(
                        "disk {} partition {}: MSR with a volume",
                        d.number, p.number
                    )),
                    (None, false) => out.push(format!(
                        "disk {} partition {}: no volume",
                        d.number, p.number
                    )),
                    // A clone's partitions carry its source's volume ids.
                    (Some(_), false) if d.clone_of.is_some() => {}
                    (Some(id), false) => match self.volumes.get(&vkey(id)) {
                        Some(v) if v.disk == d.number && v.partition == p.number => {}
                        _ => out.push(format!(
                            "disk {} partition {}: volume {id} does not point back",
                            d.number, p.number
                        )),
                    },
                    (None, true) => {}
                }
            }
            if d.partition_style == PartitionStyle::Raw && !d.partitions.is_empty() {
                out.push(format!("disk {}: RAW disk with partitions", d.number));
            }
        }
        for v in self.volumes.values() {
            let n = self
                .disks
                .get(&v.disk)
                .map(|d| {
                    d.partitions
                        .iter()
                        .filter(|p| p.volume.as_deref() == Some(&v.id))
                        .count()
                })
                .unwrap_or(0);
            if n != 1 {
                out.push(format!("volume {}: on {n} partitions", v.id));
            }
            if let Some(size) = self.partition_of(v).map(|p| p.size)
                && v.used > size
            {
                out.push(format!("volume {}: used {} > size {size}", v.id, v.used));
            }
        }
        let mut letters = std::collections::HashSet::new();
        for p in self.disks.values().flat_map(|d| d.partitions.iter()) {
            if let Some(l) = p.drive_letter
                && !letters.insert(l)
            {
                out.push(format!("drive letter {l} used twice"));
            }
        }
        out
    }
}

/// The map key of a volume id: the whole string, ASCII-lowercased.
fn vkey(id: &str) -> String {
    id.to_ascii_lowercase()
}

fn init_gpt(d: &mut Disk) {
    d.partition_style = PartitionStyle::Gpt;
    let start = d.usable_start();
    d.partitions.push(Partition {
        number: 1,
        offset: start,
        size: MSR_END - start,
        kind: PartitionType::Gpt(GPT_MSR.to_string()),
        is_online: true,
        is_active: false,
        drive_letter: None,
        volume: None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn basic() -> PartitionType {
        PartitionType::Gpt(GPT_BASIC_DATA.to_string())
    }

    #[test]
    fn gpt_worked_example_1gib_then_grow_to_2gib() {
        let mut s = Storage::new(1);
        let (n, _) = s.attach_disk(DiskSpec::new(GIB)).unwrap();
        s.initialize(n, PartitionStyle::Gpt).unwrap();
        let d = s.disk(n).unwrap();
        assert_eq!(
            (d.partitions[0].offset, d.partitions[0].size),
            (17408, 16759808)
        );
        assert!(d.partitions[0].kind.is_msr() && d.partitions[0].volume.is_none());
        let (p, id) = s.create_partition(n, basic(), PartitionSize::Max).unwrap();
        assert_eq!(p, 2);
        let part = s.disk(n).unwrap().partition(2).unwrap().clone();
        assert_eq!((part.offset, part.size), (16777216, 1056947712));
        let id = id.unwrap();
        assert!(volume_id_guid(&id).is_some());
        assert_eq!(s.volume(&id).unwrap().fs, FileSystem::Raw);
        // grow the disk to 2 GiB: the partition may grow to 2130689536
        s.disk_mut_any(n).unwrap().size = 2 * GIB;
        assert_eq!(s.supported_size(&id).unwrap(), (1056947712, 2130689536));
        s.resize(&id, 2130689536).unwrap();
        assert_eq!(s.volume_size(&id), Some(2130689536));
        assert!(s.check().is_empty(), "{:?}", s.check());
    }

    #[test]
    fn gpt_worked_example_10gib() {
        let mut s = Storage::new(1);
        let (n, _) = s.attach_disk(DiskSpec::new(10 * GIB)).unwrap();
        s.initialize(n, PartitionStyle::Gpt).unwrap();
        s.create_partition(n, basic(), PartitionSize::Max).unwrap();
        let p = s.disk(n).unwrap().partition(2).unwrap().clone();
        assert_eq!((p.offset, p.size), (16777216, 10720624128));
        // 20 GiB after growing: 21458042368
        s.disk_mut_any(n).unwrap().size = 20 * GIB;
        let id = p.volume.clone().unwrap();
        assert_eq!(s.supported_size(&id).unwrap().1, 21458042368);
    }

    #[test]
    fn full_disk_and_mbr_and_offline_refusals() {
        let mut s = Storage::new(1);
        let (n, _) = s.attach_disk(DiskSpec::new(GIB)).unwrap();
        s.initialize(n, PartitionStyle::Gpt).unwrap();
        s.create_partition(n, basic(), PartitionSize::Max).unwrap();
        let e = s
            .create_partition(n, basic(), PartitionSize::Max)
            .unwrap_err();
        assert_eq!(
            e.message(),
            "WMI MSFT_Disk.CreatePartition failed (target=MSFT_Disk (Number = 0)): result 40000"
        );
        let (m, _) = s
            .attach_disk(DiskSpec {
                partition_style: PartitionStyle::Mbr,
                ..DiskSpec::new(GIB)
            })
            .unwrap();
        let e = s
            .create_partition(m, basic(), PartitionSize::Max)
            .unwrap_err();
        assert!(e.message().ends_with("result 5"), "{e}");
        let (p, _) = s
            .create_partition(m, PartitionType::Mbr(MBR_IFS), PartitionSize::Max)
            .unwrap();
        let part = s.disk(m).unwrap().partition(p).unwrap();
        assert_eq!((part.offset, part.size), (MIB, GIB - MIB));
        let (o, _) = s
            .attach_disk(DiskSpec {
                offline: true,
                ..DiskSpec::new(GIB)
            })
            .unwrap();
        assert!(
            s.initialize(o, PartitionStyle::Gpt)
                .unwrap_err()
                .message()
                .ends_with("result 41003")
        );
        assert_eq!(s.disk(o).unwrap().partition_style, PartitionStyle::Raw);
    }

    #[test]
    fn four_k_sectors_scale_gpt() {
        let mut s = Storage::new(1);
        let (n, _) = s
            .attach_disk(DiskSpec {
                sector_size: 4096,
                ..DiskSpec::new(GIB)
            })
            .unwrap();
        s.initialize(n, PartitionStyle::Gpt).unwrap();
        let d = s.disk(n).unwrap();
        assert_eq!(d.usable_start(), 24576);
        assert_eq!(d.usable_end(), GIB - 20480);
        assert_eq!(d.partitions[0].offset + d.partitions[0].size, 16 * MIB);
    }

    #[test]
    fn location_parsing() {
        assert_eq!(
            parse_location("PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0"),
            Some(["0".into(), "".into(), "1".into(), "0".into()])
        );
        assert_eq!(
            parse_location("Integrated : Adapter 3 : Port 0 : Target 0 : LUN 2"),
            Some(["3".into(), "".into(), "0".into(), "2".into()])
        );
        assert_eq!(
            parse_location("Integrated : Adapter 3 : Bus 1 : Target 0 : LUN  2"),
            Some(["3".into(), "1".into(), "0".into(), "".into()])
        );
        assert_eq!(
            parse_location(r"C:\var\lib\kubelet\plugins\t\disk-7.vhdx"),
            None
        );
        assert_eq!(parse_location(""), None);
        assert_eq!(parse_location("a : b : c : d : e"), None);
        assert_eq!(
            parse_location("x y : b : c : d : e"),
            Some(Default::default())
        );
    }

    #[test]
    fn deterministic_guids() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        let g = a.guid();
        assert_eq!(g, b.guid());
        assert_eq!(g.len(), 36);
        assert_eq!(&g[14..15], "4");
        assert_eq!(g, g.to_ascii_lowercase());
    }

    #[test]
    fn page83_reporting() {
        assert_eq!(
            Page83::Ascii(b"Google  persistent-disk-0".to_vec()).reported(),
            "Google  persistent-disk-0"
        );
        assert_eq!(
            Page83::msft_virtual([
                0x89, 0x56, 0xa9, 0x1d, 0xad, 0xfe, 0x3d, 0x48, 0x86, 0x5f, 0x9b, 0x9b, 0xcb, 0xdb,
                0x8d, 0x3e
            ])
            .reported(),
            "4d534654202020208956a91dadfe3d48865f9b9bcbdb8d3e"
        );
        assert_eq!(Page83::None.reported(), "");
    }
}
