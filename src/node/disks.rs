//! What the node layer knows about a disk ([`DiskInfo`]), how a driver
//! names the disk it wants ([`DiskSelector`]), and the rules every cloud's
//! driver follows to find its disks.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use tracing::Instrument;

use super::{Disk, Node, operation_span};
use crate::Error;

/// How a disk's partitions are laid out (`MSFT_Disk.PartitionStyle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionStyle {
    /// No partition table: a blank disk.
    Raw,
    /// Master boot record.
    Mbr,
    /// GUID partition table.
    Gpt,
}

/// One disk as the node lists it ([`Node::disks`](super::Node::disks)).
///
/// Through the proxy, the location comes from `ListDiskLocations`, the ids
/// from `ListDiskIDs`, the size from `GetDiskStats` (`DiskStats` before
/// v1beta3), the state from `GetDiskState` (`GetAttachState` in v1beta2;
/// v1beta1 cannot tell). In HostProcess mode every field comes from the
/// disk's `MSFT_Disk` instance, the page 83 id from
/// `IOCTL_STORAGE_QUERY_PROPERTY`. `None` is "this mode or proxy version
/// cannot tell", never a guess.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiskInfo {
    /// The disk number Windows gave it (`MSFT_Disk.Number`).
    pub number: u32,
    /// `Adapter N` of `MSFT_Disk.Location` (the proxy's `adapter`).
    pub adapter: Option<u32>,
    /// `Bus N` of the location (NVMe and PCI locations); a SCSI `Port` is
    /// not reported by the proxy and stays `None`.
    pub bus: Option<u32>,
    /// `Target N` of the location.
    pub target: Option<u32>,
    /// `LUN N` of the location: SCSI disks only, never NVMe.
    pub lun: Option<u32>,
    /// The NVMe namespace id, read from the device path
    /// (`MSFT_Disk.Path`, `ven_nvme`, the number after `&0&`, the form
    /// azuredisk-csi-driver pkg/os/disk/disk.go reads). HostProcess mode
    /// only: the proxy's API shows no device path.
    pub nvme_namespace: Option<u32>,
    /// The page 83 id as the proxy reports it (ASCII ids as text, binary
    /// ids as lowercase hex); `None` when the disk has none, or when
    /// [`Node::find_disk`](super::Node::find_disk) found it by location
    /// (the ids are not read then).
    pub page83: Option<String>,
    /// The serial number verbatim (`MSFT_Disk.SerialNumber`); `None` when
    /// empty, or not read (as `page83`).
    pub serial_number: Option<String>,
    /// Size in bytes (`GetDiskStats`, `MSFT_Disk.Size`).
    pub size: Option<u64>,
    /// Online (`GetDiskState`, `MSFT_Disk.IsOffline`); `None` on v1beta1.
    pub online: Option<bool>,
    /// Read-only (`MSFT_Disk.IsReadOnly`). HostProcess mode only: no
    /// proxy version reports it.
    pub read_only: Option<bool>,
    /// Partition style (`MSFT_Disk.PartitionStyle`). HostProcess mode only.
    pub partition_style: Option<PartitionStyle>,
    /// Whether this disk holds Windows or boots the node. HostProcess mode:
    /// `MSFT_Disk.IsSystem` or `IsBoot` (`None` when neither is true and
    /// one is Null). Through the proxy: the disk of the volume holding
    /// `C:\` (volume v2alpha1's `GetClosestVolumeIDFromTargetPath`, then
    /// `GetDiskNumberFromVolumeID`); `None` when the proxy serves no volume
    /// v2alpha1 (before v1.1). `None` is "cannot tell": a selector may
    /// return such a disk, but a call that changes it is refused unless it
    /// shows no volume or holds one this node staged
    /// ([`Error::OsDiskUnknown`]). A lookup that fails fails the
    /// operation: the rule is never skipped on an error.
    pub os_disk: Option<bool>,
    /// The bus the disk sits on (`MSFT_Disk.BusType`). HostProcess mode
    /// only: no proxy version reports it. A file-backed virtual disk (a
    /// mounted VHDX, such as containerd's `sandbox.vhdx` scratch disks)
    /// and a Storage Spaces disk are never selected.
    pub bus_type: Option<BusType>,
    /// The device path (`MSFT_Disk.Path`). HostProcess mode only.
    pub device_path: Option<String>,
    /// Whether this is a cloud's temporary (resource) disk: another LUN of
    /// the OS disk's SCSI adapter and target, as Azure places its resource
    /// disk (`D:`, adapter 0, LUN 1; azuredisk-csi-driver skips adapter 0
    /// for this reason, its commit f890cd269). `false` when the OS disk is
    /// unknown.
    pub temporary: bool,
}

impl DiskInfo {
    /// Where the disk was found: adapter, bus, target, LUN.
    pub(super) fn place(&self) -> super::groups::Place {
        (self.adapter, self.bus, self.target, self.lun)
    }

    /// A disk known only by its number.
    pub fn new(number: u32) -> DiskInfo {
        DiskInfo {
            number,
            adapter: None,
            bus: None,
            target: None,
            lun: None,
            nvme_namespace: None,
            page83: None,
            serial_number: None,
            size: None,
            online: None,
            read_only: None,
            partition_style: None,
            os_disk: None,
            bus_type: None,
            device_path: None,
            temporary: false,
        }
    }

    /// The NVMe EUI-64 a GCE NVMe disk shows: the first 16 hex digits after
    /// `eui.` in the page 83 id, or of a serial number written as
    /// `10CC_9636_B6E3_CE3B_0000_0000_0000_0000.` (the two forms
    /// gcp-compute-persistent-disk-csi-driver pkg/mount-manager/safe-mounter-v1_windows.go
    /// reads, gcp-compute-persistent-disk-csi-driver#2114).
    pub fn eui64(&self) -> Option<u64> {
        let from_page83 = self.page83.as_deref().and_then(|p| {
            let hex = p.trim().strip_prefix("eui.")?;
            hex.get(..16).and_then(|h| u64::from_str_radix(h, 16).ok())
        });
        from_page83.or_else(|| {
            let serial = self.serial_number.as_deref()?.trim();
            let hex: String = serial.trim_end_matches('.').replace('_', "");
            if hex.len() != 32 {
                return None;
            }
            u64::from_str_radix(&hex[..16], 16).ok()
        })
    }

    /// Whether a selector may return this disk: never the OS disk, never
    /// the temporary disk, never a file-backed virtual or Storage Spaces
    /// disk ([`BusType::is_host_made`]).
    pub fn selectable(&self) -> bool {
        self.os_disk != Some(true)
            && !self.temporary
            && !self.bus_type.is_some_and(BusType::is_host_made)
    }

    pub(crate) fn describe(&self) -> String {
        let mut s = format!("disk {}", self.number);
        let mut parts = Vec::new();
        match (self.lun, self.nvme_namespace) {
            (Some(l), _) => parts.push(format!("LUN {l}")),
            (None, Some(ns)) => parts.push(format!("LUN none, NVMe namespace {ns}")),
            (None, None) => parts.push("LUN none".into()),
        }
        if let Some(a) = self.adapter {
            parts.push(format!("adapter {a}"));
        }
        if let Some(t) = self.target {
            parts.push(format!("target {t}"));
        }
        parts.push(format!("page83 {:?}", self.page83.as_deref().unwrap_or("")));
        parts.push(format!(
            "serial {:?}",
            self.serial_number.as_deref().unwrap_or("")
        ));
        if self.os_disk == Some(true) {
            parts.push("OS disk, never selected".into());
        }
        if self.temporary {
            parts.push("temporary disk, never selected".into());
        }
        match self.bus_type {
            Some(b) if b.is_host_made() => parts.push(format!("{b:?} disk, never selected")),
            Some(b) => parts.push(format!("bus {b:?}")),
            None => {}
        }
        s.push_str(&format!(" ({})", parts.join(", ")));
        s
    }
}

/// The bus a disk sits on (`MSFT_Disk.BusType`, whose values are those of
/// `STORAGE_BUS_TYPE`/`VDS_STORAGE_BUS_TYPE` in Microsoft's
/// documentation of vdslun.h: 1 SCSI, 9 iSCSI, 10 SAS, 11 SATA, 15
/// file-backed virtual, 16 Storage Spaces, 17 NVMe).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BusType {
    /// SCSI (1).
    Scsi,
    /// iSCSI (9).
    Iscsi,
    /// Serial Attached SCSI (10).
    Sas,
    /// SATA (11).
    Sata,
    /// A file-backed virtual disk (15): a VHD or VHDX file the host
    /// mounted, such as containerd's `sandbox.vhdx` container scratch disk.
    FileBackedVirtual,
    /// A Storage Spaces virtual disk (16), built from other disks.
    StorageSpaces,
    /// NVMe (17).
    Nvme,
    /// Any other value.
    Other(u16),
}

impl BusType {
    /// The bus of an `MSFT_Disk.BusType` value; `None` for 0 (unknown).
    pub fn from_msft(value: u16) -> Option<BusType> {
        Some(match value {
            0 => return None,
            1 => BusType::Scsi,
            9 => BusType::Iscsi,
            10 => BusType::Sas,
            11 => BusType::Sata,
            15 => BusType::FileBackedVirtual,
            16 => BusType::StorageSpaces,
            17 => BusType::Nvme,
            n => BusType::Other(n),
        })
    }

    /// Whether the host itself made the disk out of files or other disks
    /// (file-backed virtual, Storage Spaces): never a cloud's disk, never
    /// selected.
    pub fn is_host_made(self) -> bool {
        matches!(self, BusType::FileBackedVirtual | BusType::StorageSpaces)
    }
}

/// Whether a device path is of a disk of Azure's remote NVMe controller
/// (`prod_msft_nvme_accele`, the product azuredisk-csi-driver's tests of
/// pkg/os/disk/disk.go show, its CIM listing keeping the model
/// `Virtual_Disk NVME Premium`): never a local NVMe temporary disk, whose
/// product differs.
pub(crate) fn is_azure_remote_nvme(path: &str) -> bool {
    path.to_ascii_lowercase().contains("prod_msft_nvme_accele")
}

/// What the node knows of the OS disk ([`Node::os_disk`]).
#[derive(Debug, Clone)]
pub(super) enum OsDisk {
    /// The disks holding Windows or booting the node (HostProcess mode:
    /// every disk with `IsSystem` or `IsBoot`; through the proxy: the disk
    /// of `C:\`'s volume).
    Known(Vec<u32>),
    /// HostProcess mode, some disks' flags Null: those cannot be told.
    #[cfg_attr(not(feature = "host-process"), allow(dead_code))]
    Unreadable {
        /// The disks known to hold Windows.
        os: Vec<u32>,
        /// The disks whose flags are Null.
        unreadable: Vec<u32>,
    },
    /// Nothing tells (why).
    Unknown(String),
}

/// Whether a disk holds Windows or boots the node by its `MSFT_Disk`
/// flags: either flag true is enough; `None` when neither is true and
/// one is Null (never read as false).
#[cfg(feature = "host-process")]
fn os_flag(o: &crate::host_process::boundary::DiskObject) -> Option<bool> {
    match (o.is_system, o.is_boot) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

/// Marks the temporary disks of `disks` (see [`DiskInfo::temporary`]):
/// another LUN at the OS disk's adapter, bus and target.
pub(crate) fn mark_temporary(disks: &mut [DiskInfo]) {
    let Some(os) = disks.iter().find(|d| d.os_disk == Some(true)) else {
        return;
    };
    if os.lun.is_none() || os.adapter.is_none() {
        return;
    }
    let (number, adapter, bus, target) = (os.number, os.adapter, os.bus, os.target);
    for d in disks.iter_mut() {
        if d.number != number
            && d.lun.is_some()
            && (d.adapter, d.bus, d.target) == (adapter, bus, target)
        {
            d.temporary = true;
        }
    }
}

/// The NVMe namespace id in a disk's device path: `ven_nvme`, then the
/// digits after `&0&` (azuredisk-csi-driver pkg/os/disk/disk.go).
#[cfg(any(feature = "host-process", test))]
pub(crate) fn nvme_namespace_of_path(path: &str) -> Option<u32> {
    let lower = path.to_ascii_lowercase();
    if !lower.contains("ven_nvme") {
        return None;
    }
    let (_, rest) = lower.rsplit_once("&0&")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() || !matches!(rest[digits.len()..].chars().next(), None | Some('#')) {
        return None;
    }
    digits.parse().ok().filter(|&n| n >= 1)
}

/// A driver's own rule for [`DiskSelector::Matching`]: a description (for
/// logs and errors) and a test over [`DiskInfo`]. Two predicates are equal
/// when they are the same closure.
#[derive(Clone)]
pub struct DiskPredicate {
    description: String,
    test: Arc<dyn Fn(&DiskInfo) -> bool + Send + Sync>,
}

impl DiskPredicate {
    /// A rule named `description`.
    pub fn new(
        description: impl Into<String>,
        test: impl Fn(&DiskInfo) -> bool + Send + Sync + 'static,
    ) -> DiskPredicate {
        DiskPredicate {
            description: description.into(),
            test: Arc::new(test),
        }
    }

    /// What the rule looks for.
    pub fn description(&self) -> &str {
        &self.description
    }
}

impl fmt::Debug for DiskPredicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DiskPredicate")
            .field(&self.description)
            .finish()
    }
}

impl PartialEq for DiskPredicate {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.test, &other.test)
    }
}

impl Eq for DiskPredicate {}

/// Which disk [`Node::find_disk`](super::Node::find_disk) looks for. No
/// selector ever returns the OS disk or a cloud's temporary disk
/// ([`DiskInfo::selectable`]). The rule of each cloud is in the repository's `docs/clouds.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DiskSelector {
    /// The SCSI LUN on any adapter (a disk without one, NVMe, never
    /// matches). Prefer the cloud's own selector: on Azure, use
    /// [`DiskSelector::AzureLun`].
    Lun(u32),
    /// Azure's LUN: the SCSI LUN of a data disk (an adapter other than 0,
    /// where Azure puts the OS and resource disks), or on NVMe VM sizes the
    /// disk of Azure's remote NVMe controller (`prod_msft_nvme_accele` in
    /// its device path, never a local NVMe temporary disk) whose namespace
    /// id is LUN + 1 (azuredisk-csi-driver pkg/os/disk/disk.go, its commit
    /// f890cd269 and #3632). The namespace and device path are known in
    /// HostProcess mode only.
    AzureLun(u32),
    /// GCE's device name: the last word of the page 83 id
    /// (`Google  <device name>`, gcp-compute-persistent-disk-csi-driver
    /// pkg/mount-manager/safe-mounter-v1_windows.go).
    GceDeviceName(String),
    /// A GCE NVMe disk (Hyperdisk) by the `nvmeNamespaceIdentifier` of the
    /// instance metadata: equal to [`DiskInfo::eui64`]
    /// (gcp-compute-persistent-disk-csi-driver#2114).
    GceNvmeNamespace(u64),
    /// An EBS volume id (`vol-0123...` or `vol0123...`): the serial number
    /// up to its `_` suffix equals the id without its `-` (Windows shows
    /// `vol0123456789abcdef0_00000001.`). aws-ebs-csi-driver
    /// pkg/mounter/mount_windows_proxyV1.go finds the id anywhere in the
    /// serial; here a part of an id never matches.
    EbsVolumeId(String),
    /// vSphere's disk UUID: the page 83 id equal to it, case and `-`
    /// ignored (vsphere-csi-driver pkg/csi/service/mounter/mounter_windows.go).
    VsphereUuid(String),
    /// The page 83 id, whole or its last word (case-insensitive).
    Page83(String),
    /// The serial number (case-insensitive, surrounding blanks ignored).
    SerialNumber(String),
    /// The disk number Windows gave it.
    Number(u32),
    /// A driver's own rule over [`DiskInfo`]. With it, every disk's size
    /// and state are read at each look (one call each per disk).
    Matching(DiskPredicate),
}

impl DiskSelector {
    /// [`DiskSelector::Matching`] over `test`, described as `description`.
    pub fn matching(
        description: impl Into<String>,
        test: impl Fn(&DiskInfo) -> bool + Send + Sync + 'static,
    ) -> DiskSelector {
        DiskSelector::Matching(DiskPredicate::new(description, test))
    }

    /// Whether `disk` is the one looked for (the OS and temporary disks
    /// aside: [`Node::find_disk`](super::Node::find_disk) leaves those out first).
    pub fn matches(&self, disk: &DiskInfo) -> bool {
        let same = |a: &str, b: &str| a.trim().eq_ignore_ascii_case(b.trim());
        match self {
            DiskSelector::Lun(lun) => disk.lun == Some(*lun),
            DiskSelector::AzureLun(lun) => match (disk.lun, disk.nvme_namespace) {
                (Some(l), _) => l == *lun && disk.adapter != Some(0),
                // Only Azure's remote-disk controller: a local NVMe temp
                // disk has namespaces too.
                (None, Some(ns)) => {
                    u64::from(ns) == u64::from(*lun) + 1
                        && disk
                            .device_path
                            .as_deref()
                            .is_some_and(is_azure_remote_nvme)
                }
                (None, None) => false,
            },
            DiskSelector::GceDeviceName(name) => disk
                .page83
                .as_deref()
                .and_then(|p| p.split_whitespace().last())
                .is_some_and(|w| !name.trim().is_empty() && w == name.trim()),
            DiskSelector::GceNvmeNamespace(id) => disk.eui64() == Some(*id),
            DiskSelector::EbsVolumeId(id) => {
                // The whole id, never a part of it: aws-ebs-csi-driver
                // (pkg/mounter/mount_windows_proxyV1.go and
                // mount_windows_proxyV2.go) tests `strings.Contains`, so
                // `vol-0` matches every volume; here the serial's text up
                // to its `_` suffix must equal the id without its `-`.
                let id = id.trim().replace('-', "").to_ascii_lowercase();
                id.len() > 3
                    && id.starts_with("vol")
                    && disk.serial_number.as_deref().is_some_and(|s| {
                        let s = s.trim().trim_end_matches('.').to_ascii_lowercase();
                        s.split_once('_').map_or(s.as_str(), |(base, _)| base) == id
                    })
            }
            DiskSelector::VsphereUuid(uuid) => {
                let plain = |s: &str| s.trim().replace('-', "").to_ascii_lowercase();
                !uuid.trim().is_empty()
                    && disk
                        .page83
                        .as_deref()
                        .is_some_and(|p| plain(p) == plain(uuid))
            }
            DiskSelector::Page83(id) => disk.page83.as_deref().is_some_and(|p| {
                same(p, id) || p.split_whitespace().last().is_some_and(|w| same(w, id))
            }),
            DiskSelector::SerialNumber(s) => disk
                .serial_number
                .as_deref()
                .is_some_and(|serial| !s.trim().is_empty() && same(serial, s)),
            DiskSelector::Number(n) => *n == disk.number,
            DiskSelector::Matching(p) => (p.test)(disk),
        }
    }

    /// Whether looking needs the disks' page 83 ids and serial numbers: not
    /// for a selector by location or number.
    pub(crate) fn needs_ids(&self) -> bool {
        !matches!(
            self,
            DiskSelector::Lun(_) | DiskSelector::AzureLun(_) | DiskSelector::Number(_)
        )
    }

    /// Whether looking needs every disk's size and state.
    pub(crate) fn needs_details(&self) -> bool {
        matches!(self, DiskSelector::Matching(_))
    }
}

impl fmt::Display for DiskSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiskSelector::Lun(n) => write!(f, "LUN {n}"),
            DiskSelector::AzureLun(n) => write!(f, "Azure LUN {n}"),
            DiskSelector::GceDeviceName(n) => write!(f, "GCE device name {n:?}"),
            DiskSelector::GceNvmeNamespace(n) => write!(f, "GCE NVMe namespace identifier {n}"),
            DiskSelector::EbsVolumeId(id) => write!(f, "EBS volume {id:?}"),
            DiskSelector::VsphereUuid(id) => write!(f, "vSphere disk UUID {id:?}"),
            DiskSelector::Page83(id) => write!(f, "page83 id {id:?}"),
            DiskSelector::SerialNumber(s) => write!(f, "serial number {s:?}"),
            DiskSelector::Number(n) => write!(f, "disk number {n}"),
            DiskSelector::Matching(p) => write!(f, "rule {:?}", p.description),
        }
    }
}

// ------------------------------------------------------------ finding disks

impl Node {
    // ------------------------------------------------------------ disks

    /// Finds an attached disk: rescans once, listing the disks meanwhile
    /// (and again as soon as the rescan has ended, when the disk was not
    /// listed), then looks every
    /// [interval](super::NodeOptions::find_disk_interval) until the
    /// [timeout](super::NodeOptions::find_disk_timeout); [`Error::DiskNotFound`]
    /// lists what the node showed at the last look.
    ///
    /// A selector by location or number ([`DiskSelector::Lun`],
    /// [`DiskSelector::AzureLun`], [`DiskSelector::Number`]) is answered
    /// from the disks' locations alone: through the proxy the ids are not
    /// listed (`ListDiskIDs`, the slowest disk listing), and the disk
    /// returned has `page83` and `serial_number` `None`. [`Node::disks`]
    /// reads every fact.
    pub async fn find_disk(&self, selector: DiskSelector) -> Result<Disk, Error> {
        self.find_disk_polling(selector)
            .instrument(operation_span("find_disk"))
            .await
    }

    async fn find_disk_polling(&self, selector: DiskSelector) -> Result<Disk, Error> {
        let disk = self.disk()?;
        let (interval, timeout) = (
            self.inner.options.find_disk_interval,
            self.inner.options.find_disk_timeout,
        );
        let start = tokio::time::Instant::now();
        let details = selector.needs_details();
        // A selector by location is answered by the locations alone: the
        // ids (every disk's page 83 query, the slowest listing) only when
        // the selector reads them, or at the last look, for the error.
        let ids = selector.needs_ids();
        let last = || start.elapsed() >= timeout;
        let mut with_ids = ids || last();
        // The first look: the rescan and the listing at once, and the OS
        // disk (which the listing marks, looked up once per node). A disk
        // that listing shows is attached, as gcp-pd and aws-ebs find
        // theirs with no rescan (pkg/gce-pd-csi-driver/utils_windows.go,
        // aws-ebs-csi-driver pkg/driver/node.go: `ListDiskIDs` alone); one
        // it does not show is looked for again as soon as the rescan has
        // ended, which is what azuredisk-csi-driver's rescan before its
        // look is for (a disk just attached that Windows has not listed
        // yet, pkg/azuredisk/azure_common_windows.go).
        // A listing made while the rescan runs can still show a disk
        // Windows has removed: a stage checks that the disk it is given is
        // still where it was found, and its identity against what the
        // staging path recorded (`identity`).
        let first = async {
            tokio::try_join!(
                disk.rescan(),
                self.listing(details, with_ids),
                self.os_disk()
            )
            .map(|((), disks, _)| disks)
        };
        let mut disks = self.within_deadline("find_disk", first).await?;
        let mut rescanned_look = false;
        loop {
            let found: Vec<&DiskInfo> = disks
                .iter()
                .filter(|d| d.selectable() && selector.matches(d))
                .collect();
            match found.as_slice() {
                [] => {}
                [one] => {
                    tracing::debug!(%selector, number = one.number, "found disk");
                    return Ok((*one).clone());
                }
                // Never the first of several: the wrong one may be another
                // pod's, or Windows' own where the OS disk is unknown.
                many => {
                    let candidates: Vec<String> = many.iter().map(|d| d.describe()).collect();
                    return Err(Error::AmbiguousDisk {
                        selector: selector.to_string(),
                        candidates: candidates.join("; "),
                    });
                }
            }
            if !rescanned_look {
                rescanned_look = true;
                disks = self
                    .within_deadline("find_disk", self.listing(details, with_ids))
                    .await?;
                continue;
            }
            let waited = start.elapsed();
            if waited >= timeout {
                // The error names what each disk shows, ids included.
                let disks = match with_ids {
                    true => disks,
                    false => {
                        self.within_deadline("find_disk", self.listing(details, true))
                            .await?
                    }
                };
                let seen: Vec<String> = disks.iter().map(DiskInfo::describe).collect();
                return Err(Error::DiskNotFound {
                    selector: selector.to_string(),
                    waited,
                    seen: if seen.is_empty() {
                        "no disks".into()
                    } else {
                        seen.join("; ")
                    },
                });
            }
            tokio::time::sleep(interval.min(timeout - waited)).await;
            with_ids = ids || last();
            disks = self
                .within_deadline("find_disk", self.listing(details, with_ids))
                .await?;
        }
    }

    /// Every disk the node lists, by number, with its location, ids, size
    /// and state, and whether it is the OS disk or a cloud's temporary
    /// disk; see [`DiskInfo`] for where each field comes from and what
    /// each mode cannot tell. Changes nothing.
    pub async fn disks(&self) -> Result<Vec<DiskInfo>, Error> {
        self.bounded("disks", self.listing(true, true)).await
    }

    /// The disk list; sizes and states only with `details` (through the
    /// proxy they cost one call per disk each), page 83 ids and serial
    /// numbers only with `ids` (through the proxy, one more listing).
    async fn listing(&self, details: bool, ids: bool) -> Result<Vec<DiskInfo>, Error> {
        let disk = self.disk()?;
        let mut out: Vec<DiskInfo> = disk
            .disks(ids)
            .await?
            .into_iter()
            .map(|(n, f)| {
                let mut info = DiskInfo::new(n);
                (info.adapter, info.bus, info.target, info.lun) = f.place();
                info.page83 = f.page83;
                info.serial_number = f.serial_number;
                info
            })
            .collect();
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            let objects = backend.disk_objects().await?;
            for info in &mut out {
                let Some(o) = objects.iter().find(|o| o.number == info.number) else {
                    continue;
                };
                use crate::host_process::boundary as b;
                info.nvme_namespace = nvme_namespace_of_path(&o.path);
                info.size = Some(o.size);
                info.online = Some(!o.is_offline);
                info.read_only = Some(o.is_read_only);
                info.bus_type = BusType::from_msft(o.bus_type);
                info.device_path = Some(o.path.clone()).filter(|p| !p.is_empty());
                info.partition_style = match o.partition_style {
                    b::PARTITION_STYLE_RAW => Some(PartitionStyle::Raw),
                    b::PARTITION_STYLE_MBR => Some(PartitionStyle::Mbr),
                    b::PARTITION_STYLE_GPT => Some(PartitionStyle::Gpt),
                    _ => None,
                };
                info.os_disk = os_flag(o);
            }
            mark_temporary(&mut out);
            return Ok(out);
        }
        if details {
            for info in &mut out {
                info.size = Some(disk.size(info.number).await?);
                info.online = disk.is_online(info.number).await?;
            }
        }
        if let OsDisk::Known(os) = self.os_disk().await? {
            for info in &mut out {
                info.os_disk = Some(os.contains(&info.number));
            }
        }
        mark_temporary(&mut out);
        Ok(out)
    }

    /// What the node knows of the OS disk. HostProcess mode reads every
    /// disk's flags at each call (a disk attached later has its own).
    /// Through the proxy the disk of `C:\`'s volume is looked up once
    /// known (callers at once share the one lookup); while it is unknown
    /// (no volume v2alpha1, or a lookup that failed) it is asked again,
    /// the endpoint dialled again, at the next call that needs it.
    pub(super) async fn os_disk(&self) -> Result<OsDisk, Error> {
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            let objects = backend.disk_objects().await?;
            let mut os = Vec::new();
            let mut unreadable = Vec::new();
            for o in &objects {
                match os_flag(o) {
                    Some(true) => os.push(o.number),
                    Some(false) => {}
                    None => unreadable.push(o.number),
                }
            }
            return Ok(match unreadable.is_empty() {
                true => OsDisk::Known(os),
                false => OsDisk::Unreadable { os, unreadable },
            });
        }
        let looked_up = self
            .inner
            .os_disk
            .get_or_try_init(|| async {
                match self.look_up_os_disk().await {
                    Ok(Some(n)) => Ok(n),
                    Ok(None) => Err(None),
                    Err(e) => Err(Some(e)),
                }
            })
            .await;
        match looked_up {
            Ok(n) => Ok(OsDisk::Known(vec![*n])),
            Err(None) => Ok(OsDisk::Unknown(
                "csi-proxy serves no volume v2alpha1 (it came with v1.1), or it did not answer"
                    .into(),
            )),
            Err(Some(e)) => Err(e),
        }
    }

    /// The disk of `C:\`'s volume through volume v2alpha1, dialled again
    /// when it was not reached before; `None` when it cannot be reached.
    async fn look_up_os_disk(&self) -> Result<Option<u32>, Error> {
        let known = self.os_volume_group().clone();
        let volume = match known {
            Some(v) => v,
            None if self.inner.dials_os_volume => {
                let Some(v) = Self::dial_os_volume(&self.inner.options).await else {
                    return Ok(None);
                };
                *self.os_volume_group() = Some(v.clone());
                v
            }
            None => return Ok(None),
        };
        let Some(id) = volume.closest_volume(r"C:\").await? else {
            return Ok(None);
        };
        Ok(Some(volume.disk_of(&id).await?))
    }

    fn os_volume_group(&self) -> std::sync::MutexGuard<'_, Option<super::groups::VolumeGroup>> {
        self.inner
            .os_volume
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Refuses a change to volume `id` when it lies on the OS disk, as
    /// [`Node::refuse_os_disk`]. A volume this node staged (or checked
    /// before) needs no call. When the OS disk cannot be known, only a
    /// call that `changes_disk` (offline, resize) is refused, unless the
    /// volume is one this node staged: removing a mount point and
    /// flushing change no disk.
    pub(super) async fn refuse_os_volume(
        &self,
        id: &str,
        operation: &'static str,
        changes_disk: bool,
    ) -> Result<(), Error> {
        if self.known_data_volume(id)? {
            return Ok(());
        }
        let os = self.os_disk().await?;
        if let OsDisk::Unknown(_) = os
            && !changes_disk
        {
            return Ok(());
        }
        let n = self.volume()?.disk_of(id).await?;
        self.judge_os_disk(os, n, operation).await?;
        self.remember_data_volume(id);
        Ok(())
    }

    fn data_volumes(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.inner
            .data_volumes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Whether volume `id` is known to lie on a data disk: this node
    /// checked it, or staged it (its stage records, which outlive the
    /// process with [`NodeRecords::directory`](super::NodeRecords::directory)).
    fn known_data_volume(&self, id: &str) -> Result<bool, Error> {
        if self.data_volumes().contains(&id.to_lowercase()) {
            return Ok(true);
        }
        Ok(self
            .stage_records()?
            .iter()
            .any(|(_, r)| r.volume.eq_ignore_ascii_case(id)))
    }

    pub(super) fn remember_data_volume(&self, id: &str) {
        self.data_volumes().insert(id.to_lowercase());
    }

    /// Refuses any change to the OS disk: [`Error::OsDisk`] for disk `n`
    /// when it holds Windows, before any call that changes it. When the
    /// OS disk cannot be known, [`Error::OsDiskUnknown`] unless disk `n`
    /// shows no volume (a blank or offline disk never holds the running
    /// Windows), holds a volume this node staged, or the caller accepted
    /// the risk ([`NodeOptions::allow_unknown_os_disk`](super::NodeOptions::allow_unknown_os_disk)).
    pub(super) async fn refuse_os_disk(
        &self,
        n: u32,
        operation: &'static str,
    ) -> Result<(), Error> {
        let os = self.os_disk().await?;
        self.judge_os_disk(os, n, operation).await
    }

    async fn judge_os_disk(
        &self,
        os: OsDisk,
        n: u32,
        operation: &'static str,
    ) -> Result<(), Error> {
        let why = match os {
            OsDisk::Known(os) | OsDisk::Unreadable { os, .. } if os.contains(&n) => {
                return Err(Error::OsDisk {
                    disk: n,
                    operation,
                    why: if self.is_host_process() {
                        "MSFT_Disk.IsSystem/IsBoot".into()
                    } else {
                        r"it holds the volume of C:\".into()
                    },
                });
            }
            OsDisk::Unreadable { unreadable, .. } if unreadable.contains(&n) => {
                format!("MSFT_Disk.IsSystem or IsBoot of disk {n} is Null")
            }
            OsDisk::Unknown(why) => why,
            OsDisk::Known(_) | OsDisk::Unreadable { .. } => return Ok(()),
        };
        if self.inner.options.allow_unknown_os_disk {
            tracing::warn!(disk = n, operation, %why, "the OS disk cannot be known: going on, as NodeOptions::allow_unknown_os_disk accepts");
            return Ok(());
        }
        let volumes = self.volume()?.volumes_on_disk(n).await?;
        let volumes: Vec<&String> = volumes.iter().filter(|v| !v.is_empty()).collect();
        if volumes.is_empty() {
            return Ok(());
        }
        for v in volumes {
            if self.known_data_volume(v)? {
                return Ok(());
            }
        }
        Err(Error::OsDiskUnknown {
            disk: n,
            operation,
            why,
        })
    }

    /// Whether the node works in HostProcess mode.
    pub(super) fn is_host_process(&self) -> bool {
        #[cfg(feature = "host-process")]
        if self.inner.host_process.is_some() {
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(f: impl FnOnce(&mut DiskInfo)) -> DiskInfo {
        let mut d = DiskInfo::new(4);
        f(&mut d);
        d
    }

    #[test]
    fn azure_lun_skips_adapter_0_and_maps_nvme_namespaces() {
        let os = disk(|d| (d.adapter, d.lun) = (Some(0), Some(0)));
        let data = disk(|d| (d.adapter, d.lun) = (Some(3), Some(0)));
        let path = r"\\?\scsi#disk&ven_nvme&prod_msft_nvme_accele#6&ca10229&0&000001#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}";
        let nvme = disk(|d| {
            (d.adapter, d.nvme_namespace) = (Some(2), Some(1));
            d.device_path = Some(path.into());
        });
        assert!(!DiskSelector::AzureLun(0).matches(&os));
        assert!(DiskSelector::AzureLun(0).matches(&data));
        assert!(DiskSelector::AzureLun(0).matches(&nvme));
        assert!(!DiskSelector::AzureLun(1).matches(&nvme));
        assert!(!DiskSelector::Lun(0).matches(&nvme));
        // A local NVMe disk (not Azure's remote controller), or one whose
        // device path is unknown, is never an Azure LUN.
        let local = disk(|d| {
            d.nvme_namespace = Some(1);
            d.device_path = Some(path.replace("prod_msft_nvme_accele", "prod_microsoft_nvme_d"));
        });
        assert!(!DiskSelector::AzureLun(0).matches(&local));
        let unknown = disk(|d| d.nvme_namespace = Some(1));
        assert!(!DiskSelector::AzureLun(0).matches(&unknown));
    }

    #[test]
    fn nvme_namespace_comes_from_the_device_path() {
        let p = r"\\?\scsi#disk&ven_nvme&prod_msft_nvme_accele#6&ca10229&0&000002#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}";
        assert_eq!(nvme_namespace_of_path(p), Some(2));
        let scsi = r"\\?\scsi#disk&ven_msft&prod_virtual_disk#000001#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}";
        assert_eq!(nvme_namespace_of_path(scsi), None);
    }

    #[test]
    fn ebs_ids_match_with_or_without_dash_and_suffix() {
        let d = disk(|d| d.serial_number = Some("vol0123456789abcdef0_00000001.".into()));
        assert!(DiskSelector::EbsVolumeId("vol-0123456789abcdef0".into()).matches(&d));
        assert!(DiskSelector::EbsVolumeId("vol0123456789abcdef0".into()).matches(&d));
        assert!(!DiskSelector::EbsVolumeId("vol-0123456789abcdef1".into()).matches(&d));
        assert!(!DiskSelector::SerialNumber("vol0123456789abcdef0".into()).matches(&d));
        // Never a part of an id (aws-ebs-csi-driver's strings.Contains
        // matches both).
        assert!(!DiskSelector::EbsVolumeId("vol-0".into()).matches(&d));
        assert!(!DiskSelector::EbsVolumeId("vol-01234567".into()).matches(&d));
        assert!(!DiskSelector::EbsVolumeId("56789abcdef0".into()).matches(&d));
        let bare = disk(|d| d.serial_number = Some("vol0123456789abcdef0".into()));
        assert!(DiskSelector::EbsVolumeId("vol-0123456789abcdef0".into()).matches(&bare));
    }

    #[test]
    fn host_made_disks_are_never_selectable() {
        for (value, host_made) in [(15, true), (16, true), (17, false), (1, false)] {
            let d = disk(|d| d.bus_type = BusType::from_msft(value));
            assert_eq!(d.selectable(), !host_made, "bus type {value}");
        }
        assert_eq!(BusType::from_msft(0), None);
    }

    #[test]
    fn gce_eui_from_page83_or_serial() {
        let a = disk(|d| d.page83 = Some("eui.10CC9636B6E3CE3B0000000000000000".into()));
        let b = disk(|d| d.serial_number = Some("10CC_9636_B6E3_CE3B_0000_0000_0000_0000.".into()));
        assert_eq!(a.eui64(), Some(0x10CC_9636_B6E3_CE3B));
        assert_eq!(b.eui64(), Some(0x10CC_9636_B6E3_CE3B));
        assert!(DiskSelector::GceNvmeNamespace(0x10CC_9636_B6E3_CE3B).matches(&a));
        let pd = disk(|d| d.page83 = Some("Google  data-disk-1".into()));
        assert!(DiskSelector::GceDeviceName("data-disk-1".into()).matches(&pd));
        assert!(!DiskSelector::GceDeviceName("disk-1".into()).matches(&pd));
    }

    #[test]
    fn vsphere_uuid_ignores_case_and_dashes() {
        let d = disk(|d| d.page83 = Some("6000c29a98d05e384a43f0ef189aaf5a".into()));
        assert!(
            DiskSelector::VsphereUuid("6000C29A-98D0-5E38-4A43-F0EF189AAF5A".into()).matches(&d)
        );
        assert!(!DiskSelector::VsphereUuid("6000c29a98d05e384a43f0ef189aaf5b".into()).matches(&d));
    }
}
