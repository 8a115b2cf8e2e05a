//! Building a node: its configuration ([`HostConfig`], [`Host::new`]), the
//! default node, and seeds from code or a TOML file ([`NodeSeed`]).
//!
//! # Default node
//! When no [`NodeSeed`] is given, [`Host::new`] builds a small Hyper-V/Azure
//! style node:
//!
//! | disk | location | size | contents |
//! |---|---|---|---|
//! | 0 | `Integrated : Adapter 0 : Port 0 : Target 0 : LUN 0` | 128 GiB | GPT, system: #1 EFI 100 MiB (FAT32), #2 MSR 16 MiB, #3 basic `C:` (NTFS, rest of the disk) |
//! | 1 | `Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1` | 32 GiB | blank RAW |
//! | 2 | `Integrated : Adapter 3 : Port 0 : Target 0 : LUN 2` | 16 GiB | blank RAW |
//!
//! Page83 ids are `MSFT    `+GUID binary identifiers, serial numbers are
//! empty, volume ids come from the seedable generator
//! ([`HostConfig::id_seed`]). The kubelet path (`C:\var\lib\kubelet` by
//! default) and every working dir that resolves are created.
//!
//! The default node also has the SMB share of
//! [`default_smb_shares`](super::smb::default_smb_shares), the iSCSI portal
//! and targets of [`default_iscsi_portals`](super::iscsi::default_iscsi_portals)
//! and the BIOS serial and services of
//! [`default_services`](super::system::default_services) (`MSiSCSI` starts
//! `Stopped`, so iSCSI calls fail until it is started, as on a fresh
//! Windows node).
//!
//! # Seed files
//!
//! ```toml
//! [[disks]]
//! number = 0
//! location = "PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0"
//! page83 = "ascii:Google  persistent-disk-0"   # or "hex:4d5346...", or "" for none
//! serial = "                    "
//! size = 107374182400
//! partition_style = "gpt"        # raw | mbr | gpt
//! auto_msr = false               # gpt: do not create the MSR as partition 1
//! system = true
//!
//! [[volumes]]
//! disk = 0
//! kind = "efi"                   # basic (default) | efi | msr | recovery | mbr
//! size = 104857600               # omitted = the largest free extent
//! fs = "fat32"                   # raw (default) | ntfs | refs | fat32 | exfat
//!
//! [[volumes]]
//! disk = 0
//! kind = "msr"
//! size = 16777216
//!
//! [[volumes]]
//! disk = 0
//! fs = "ntfs"
//! drive_letter = "C"
//! system = true
//! ```
//!
//! Disk fields: `number` (default: next free), `location`, `page83`,
//! `serial`, `device_path`, `bus_type` (`MSFT_Disk.BusType`), `size` (required), `sector_size` (512), `partition_style`
//! (`raw`), `auto_msr` (true), `online` (true), `read_only` (false), `system`
//! (false), `needs_rescan` (false), `rescan_delay_ms` (0: with `needs_rescan`,
//! the disk shows that long after the `Rescan`), `volumes_arrive_ms` (0:
//! once the disk is brought online, its volumes are listed that long
//! after). Volume fields: `disk` (required), `kind`,
//! `size`, `fs`, `drive_letter`, `id` (`\\?\Volume{GUID}\`, default
//! generated), `used` (default: NTFS overhead), `system` (false), `holds`
//! (with `fs = "raw"`: what the volume holds that Windows does not show,
//! `"bitlocker"`, `"ext4"`, `"xfs"`, `"ntfs"`, `"linux_raid_1.0"`, ...,
//! at that format's place in the partition, or `"ext4@4096"`,
//! `"xfs@end-1048576"` to put it that many bytes from the partition's
//! start or before its end; a disk's `holds` likewise, on a raw disk).
//! Partitions
//! are created in file order; disk states (`online`, `read_only`,
//! `needs_rescan`) are applied after all volumes exist.
//!
//! Validation errors name the offending field (`disks[1].size: ...`,
//! `smb.shares[0].password: ...`).
//!
//! # SMB, iSCSI and System sections
//! ```toml
//! [smb]                          # SmbSeed
//! machine_identity = "everyone_shares_only"
//! [[smb.shares]]
//! server = "fileserver"
//! share = "share"
//! username = "smbuser"
//! password = "Sm8-Passw0rd!"
//!
//! [iscsi]                        # IscsiSeed
//! initiator_iqn = "iqn.1991-05.com.microsoft:node1"
//! [[iscsi.portals]]
//! address = "10.0.0.20"
//! [[iscsi.portals.targets]]
//! iqn = "iqn.1991-05.com.microsoft:storage01-lun0-target"
//! lun_sizes = [1073741824]
//!
//! [system]                       # SystemSeed
//! bios_serial = "0000-0000"
//! [[system.services]]
//! name = "MSiSCSI"
//! display_name = "Microsoft iSCSI Initiator Service"
//! status = "Stopped"
//! start_type = "Manual"
//! ```
//! An absent section gives that group the default node's data
//! ([`SmbSeed::default_node`], [`IscsiSeed::default_node`],
//! [`SystemSeed::default_node`]), and a seed with neither `[[disks]]` nor
//! `[[volumes]]` gets the default node's disks (its system disk with `C:`,
//! where the kubelet path lies, and the two blank data disks); a present
//! section is taken as written (an
//! empty `[system]` has no BIOS and no services, so with no `MSiSCSI`
//! service every iSCSI call fails).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::error::{HostError, HostResult};
use super::iscsi::{IscsiSeed, IscsiState};
use super::namespace::Namespace;
use super::path::{WinPath, volume_id_guid};
use super::smb::{SmbConfig, SmbSeed, SmbState};
use super::state::{Host, HostState};
use super::storage::{
    DiskSpec, FileSystem, GPT_BASIC_DATA, GPT_EFI, GPT_MSR, GPT_RECOVERY, MBR_HIDDEN_RECOVERY,
    MBR_IFS, MIB, Page83, PartitionSize, PartitionStyle, PartitionType, SYSTEM_RESERVED_LABEL,
    Storage, Visibility,
};
use super::system::{SystemSeed, SystemState};

/// The default kubelet directory.
pub const DEFAULT_KUBELET_PATH: &str = r"C:\var\lib\kubelet";

const MARKER: &str = ".csi-proxy-sandbox";
const GIB: u64 = 1 << 30;

/// How to build a [`Host`].
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Directory holding the simulated file namespace (created if missing).
    pub sandbox: PathBuf,
    /// `--kubelet-path`: appended last to the working-dir list.
    pub kubelet_path: String,
    /// `--working-dir` values, in order.
    pub working_dirs: Vec<String>,
    /// The node to build; `None` = the default node (module docs).
    pub seed: Option<NodeSeed>,
    /// Seed of the identifier generator (volume GUIDs, page83 ids).
    pub id_seed: u64,
    /// `--require-privacy`: SMB encryption required on every new global
    /// mapping.
    pub require_privacy: bool,
    /// `--proxy-release`: whose failure texts the node speaks (see
    /// [`ProxyRelease`](super::ProxyRelease)); default v1.3.
    pub release: super::ProxyRelease,
}

impl HostConfig {
    /// Defaults: kubelet path `C:\var\lib\kubelet`, no extra working dirs,
    /// the default node, id seed 0, privacy required, csi-proxy v1.3's texts.
    pub fn new(sandbox: impl Into<PathBuf>) -> Self {
        Self {
            sandbox: sandbox.into(),
            kubelet_path: DEFAULT_KUBELET_PATH.to_string(),
            working_dirs: Vec::new(),
            seed: None,
            id_seed: 0,
            require_privacy: true,
            release: super::ProxyRelease::default(),
        }
    }

    /// The filesystem group's working-dir list W: working dirs, then the
    /// kubelet path last.
    pub fn working_dir_list(&self) -> Vec<String> {
        let mut w = self.working_dirs.clone();
        w.push(self.kubelet_path.clone());
        w
    }
}

impl Host {
    /// Builds a node from `config`: the seeded node, or the default node.
    /// The sandbox's `volumes` directory is (re)created empty; a sandbox that
    /// already holds a `volumes` directory not made by a `Host` is refused.
    pub fn new(config: HostConfig) -> HostResult<Host> {
        std::fs::create_dir_all(&config.sandbox).map_err(|e| {
            HostError::invalid_argument(format!("sandbox {}: {e}", config.sandbox.display()))
        })?;
        let sb = &std::path::absolute(&config.sandbox).map_err(|e| {
            HostError::invalid_argument(format!("sandbox {}: {e}", config.sandbox.display()))
        })?;
        let vols = sb.join("volumes");
        if vols.exists() {
            if !sb.join(MARKER).exists() {
                return Err(HostError::invalid_argument(format!(
                    "sandbox {} already has a volumes directory not created by the simulated host",
                    sb.display()
                )));
            }
            std::fs::remove_dir_all(&vols).map_err(|e| {
                HostError::invalid_argument(format!("sandbox {}: {e}", vols.display()))
            })?;
        }
        std::fs::write(
            sb.join(MARKER),
            b"csi-proxy-client simulated host sandbox\n",
        )
        .and_then(|_| std::fs::create_dir_all(&vols))
        .map_err(|e| HostError::invalid_argument(format!("sandbox {}: {e}", sb.display())))?;
        let (mut smb, iscsi, system) =
            NodeSeed::build_groups(config.seed.as_ref(), sb, config.require_privacy)?;
        smb.set_config(SmbConfig {
            release: config.release,
            ..smb.config()
        });
        let mut node = HostState {
            storage: Storage::new(config.id_seed),
            ns: Namespace::new(sb.clone()),
            working_dirs: config.working_dir_list(),
            detached_volumes: BTreeSet::new(),
            smb,
            iscsi,
            system,
            iscsi_disks: BTreeMap::new(),
        };
        match &config.seed {
            // A seed without storage (only `[smb]`, say) still needs the
            // system disk: without `C:` no kubelet path exists and every
            // stage fails at its first mkdir. It gets the default node's
            // disks, as an absent group section gets the default node's.
            Some(seed) if seed.disks.is_empty() && seed.volumes.is_empty() => {
                build_default(&mut node)?
            }
            Some(seed) => seed.apply(&mut node)?,
            None => build_default(&mut node)?,
        }
        for w in node.working_dirs.clone() {
            ensure_dir(&node, &w);
        }
        Ok(Host::from_node(node))
    }
}

/// Creates the directory `p` if it parses and resolves (working dirs).
fn ensure_dir(node: &HostState, p: &str) {
    if let Ok(wp) = WinPath::parse(p) {
        let _ = node.ns.mkdir_all(node.ctx(), &wp);
    }
}

/// Builds the default node's storage into `node` (module docs).
fn build_default(node: &mut HostState) -> HostResult<()> {
    let (n, _) = node.storage.attach_disk(DiskSpec {
        number: Some(0),
        location: Some("Integrated : Adapter 0 : Port 0 : Target 0 : LUN 0".into()),
        system: true,
        ..DiskSpec::new(128 * GIB)
    })?;
    node.storage
        .set_partition_style_bare(n, PartitionStyle::Gpt)?;
    let (_, efi) = node.create_partition(
        n,
        PartitionType::Gpt(GPT_EFI.into()),
        PartitionSize::Bytes(100 * MIB),
    )?;
    node.create_partition(
        n,
        PartitionType::Gpt(GPT_MSR.into()),
        PartitionSize::Bytes(16 * MIB),
    )?;
    let (p, c) = node.create_partition(
        n,
        PartitionType::Gpt(GPT_BASIC_DATA.into()),
        PartitionSize::Max,
    )?;
    let efi = efi.expect("EFI volume");
    let c = c.expect("C: volume");
    node.set_volume_fs(&efi, FileSystem::Fat32, Some(30 * MIB), true)?;
    node.set_volume_fs(&c, FileSystem::Ntfs, Some(20 * GIB), true)?;
    node.storage.set_drive_letter(n, p, Some('C'))?;
    for lun in [1u32, 2] {
        node.storage.attach_disk(DiskSpec {
            number: Some(lun),
            location: Some(format!(
                "Integrated : Adapter 3 : Port 0 : Target 0 : LUN {lun}"
            )),
            ..DiskSpec::new(if lun == 1 { 32 * GIB } else { 16 * GIB })
        })?;
    }
    Ok(())
}

/// A whole node to build.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSeed {
    /// Disks, attached in order; none (and no volumes) = the default
    /// node's disks, so that the node has its system volume `C:`.
    #[serde(default)]
    pub disks: Vec<DiskSeed>,
    /// Partitions/volumes, created in order.
    #[serde(default)]
    pub volumes: Vec<VolumeSeed>,
    /// SMB servers and shares; absent = [`SmbSeed::default_node`].
    #[serde(default)]
    pub smb: Option<SmbSeed>,
    /// iSCSI initiator name and remote portals; absent =
    /// [`IscsiSeed::default_node`].
    #[serde(default)]
    pub iscsi: Option<IscsiSeed>,
    /// BIOS serial and services; absent = [`SystemSeed::default_node`].
    #[serde(default)]
    pub system: Option<SystemSeed>,
}

/// One disk.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskSeed {
    /// Disk number; default the lowest free.
    pub number: Option<u32>,
    /// `MSFT_Disk.Location`.
    pub location: Option<String>,
    /// Page83: `ascii:<text>`, `hex:<bytes>`, `""` for none, other text = ASCII.
    pub page83: Option<String>,
    /// Serial number.
    pub serial: Option<String>,
    /// Device interface path.
    pub device_path: Option<String>,
    /// `MSFT_Disk.BusType` (default 17 for an NVMe device path, else 1).
    pub bus_type: Option<u16>,
    /// Capacity in bytes.
    pub size: u64,
    /// Sector size (512 or 4096).
    pub sector_size: Option<u32>,
    /// `raw`, `mbr` or `gpt`.
    pub partition_style: Option<String>,
    /// GPT: create the MSR as partition 1 (default true).
    pub auto_msr: Option<bool>,
    /// Online (default true).
    pub online: Option<bool>,
    /// Read-only (default false).
    pub read_only: Option<bool>,
    /// Boot/system disk (default false).
    pub system: Option<bool>,
    /// Hidden until `Rescan` (default false).
    pub needs_rescan: Option<bool>,
    /// With `needs_rescan`: shown this many milliseconds after the
    /// `Rescan` (default 0).
    pub rescan_delay_ms: Option<u64>,
    /// A RAW disk's whole-device signature (`ext4`, `xfs`, `luks`, ...,
    /// a name of `crate::win::signatures`): data Windows shows as a blank
    /// disk.
    pub holds: Option<String>,
    /// Once the disk is brought online, its volumes are listed this many
    /// milliseconds later (default 0), as Windows mounts them some time
    /// after their disk comes online.
    pub volumes_arrive_ms: Option<u64>,
}

/// One partition (with its volume unless it is the MSR).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VolumeSeed {
    /// Disk number.
    pub disk: u32,
    /// `basic` (default), `efi`, `msr`, `recovery` (GPT recovery type; on
    /// MBR the hidden type 0x27), `mbr` (IFS on an MBR disk),
    /// `system_reserved` (MBR: an active IFS partition labelled "System
    /// Reserved", as Windows setup makes it).
    pub kind: Option<String>,
    /// Partition size; default the largest free extent.
    pub size: Option<u64>,
    /// `raw` (default), `ntfs`, `refs`, `fat32`, `exfat`.
    pub fs: Option<String>,
    /// Drive letter.
    pub drive_letter: Option<String>,
    /// Fixed volume id.
    pub id: Option<String>,
    /// Bytes in use.
    pub used: Option<u64>,
    /// Boot/system volume (cannot be formatted).
    pub system: Option<bool>,
    /// With `fs = "raw"`: the signature the volume holds though Windows
    /// shows no file system (`bitlocker`, `ext4`, `xfs`, `ntfs`, ...).
    pub holds: Option<String>,
}

/// `holds` if it names a signature of `crate::win::signatures`, alone or
/// with a place (`name@<bytes>`, `name@end-<bytes>`).
fn known_signature(field: String, holds: &str) -> HostResult<String> {
    match crate::win::signatures::placed(holds) {
        Some(_) => Ok(holds.to_string()),
        None => Err(field_err(field, format!("unknown signature {holds:?}"))),
    }
}

fn field_err(field: String, msg: impl std::fmt::Display) -> HostError {
    HostError::invalid_argument(format!("{field}: {msg}"))
}

fn parse_page83(field: String, s: &str) -> HostResult<Page83> {
    if s.is_empty() {
        return Ok(Page83::None);
    }
    if let Some(h) = s.strip_prefix("hex:") {
        if h.len() % 2 != 0 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(field_err(field, "hex: needs an even number of hex digits"));
        }
        let bytes = (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("checked hex"))
            .collect();
        return Ok(Page83::Binary(bytes));
    }
    let text = s.strip_prefix("ascii:").unwrap_or(s);
    Ok(Page83::Ascii(text.as_bytes().to_vec()))
}

impl NodeSeed {
    /// Parses a TOML seed.
    pub fn from_toml_str(s: &str) -> HostResult<NodeSeed> {
        toml::from_str(s).map_err(|e| HostError::invalid_argument(format!("node seed: {e}")))
    }

    /// Reads and parses a TOML seed file.
    pub fn from_file(path: impl AsRef<std::path::Path>) -> HostResult<NodeSeed> {
        let p = path.as_ref();
        let s = std::fs::read_to_string(p)
            .map_err(|e| HostError::invalid_argument(format!("node seed {}: {e}", p.display())))?;
        Self::from_toml_str(&s)
    }

    /// Builds the SMB, iSCSI and System states of `seed` (the default node's
    /// for `None` or an absent section). Share contents go under `sandbox`;
    /// errors name the field with its section (`iscsi.portals[0]...`).
    pub(crate) fn build_groups(
        seed: Option<&NodeSeed>,
        sandbox: &std::path::Path,
        require_privacy: bool,
    ) -> HostResult<(SmbState, IscsiState, SystemState)> {
        let smb = match seed.and_then(|s| s.smb.as_ref()) {
            Some(s) => s.build(sandbox, require_privacy),
            None => SmbSeed::default_node().build(sandbox, require_privacy),
        }
        .map_err(|e| e.context("smb."))?;
        let iscsi = match seed.and_then(|s| s.iscsi.as_ref()) {
            Some(s) => s.build(),
            None => IscsiSeed::default_node().build(),
        }
        .map_err(|e| e.context("iscsi."))?;
        let system = match seed.and_then(|s| s.system.as_ref()) {
            Some(s) => s.build(),
            None => SystemSeed::default_node().build(),
        }
        .map_err(|e| e.context("system."))?;
        Ok((smb, iscsi, system))
    }

    /// Builds the seeded storage into `node`.
    pub(crate) fn apply(&self, node: &mut HostState) -> HostResult<()> {
        let mut states = Vec::new();
        for (i, d) in self.disks.iter().enumerate() {
            let f = |name: &str| format!("disks[{i}].{name}");
            let style = match d.partition_style.as_deref().unwrap_or("raw") {
                "raw" => PartitionStyle::Raw,
                "mbr" => PartitionStyle::Mbr,
                "gpt" => PartitionStyle::Gpt,
                other => {
                    return Err(field_err(
                        f("partition_style"),
                        format!("unknown style {other:?} (raw, mbr, gpt)"),
                    ));
                }
            };
            let page83 = d
                .page83
                .as_deref()
                .map(|p| parse_page83(f("page83"), p))
                .transpose()?;
            let sector_size = d.sector_size.unwrap_or(512);
            if sector_size != 512 && sector_size != 4096 {
                return Err(field_err(f("sector_size"), "must be 512 or 4096"));
            }
            if d.size == 0 || d.size % u64::from(sector_size) != 0 {
                return Err(field_err(
                    f("size"),
                    format!("must be a positive multiple of {sector_size}"),
                ));
            }
            if let Some(n) = d.number
                && node.storage.all_disks().any(|x| x.number == n)
            {
                return Err(field_err(f("number"), format!("disk {n} defined twice")));
            }
            let bare = style == PartitionStyle::Gpt && d.auto_msr == Some(false);
            let spec = DiskSpec {
                number: d.number,
                location: d.location.clone(),
                page83,
                serial_number: d.serial.clone(),
                device_path: d.device_path.clone(),
                bus_type: d.bus_type,
                sector_size,
                partition_style: if bare { PartitionStyle::Raw } else { style },
                system: d.system.unwrap_or(false),
                ..DiskSpec::new(d.size)
            };
            let (n, _) = node
                .attach_disk(spec)
                .map_err(|e| field_err(format!("disks[{i}]"), e))?;
            if bare {
                node.storage
                    .set_partition_style_bare(n, PartitionStyle::Gpt)?;
            }
            if let Some(name) = &d.holds {
                if style != PartitionStyle::Raw {
                    return Err(field_err(
                        f("holds"),
                        "only a raw disk holds a whole-device signature",
                    ));
                }
                let name = known_signature(f("holds"), name)?;
                node.storage.disk_mut_any(n).expect("seeded disk").holds = Some(name);
            }
            let visibility = match (d.needs_rescan.unwrap_or(false), d.rescan_delay_ms) {
                (false, None) => Visibility::Listed,
                (false, Some(_)) => {
                    return Err(field_err(
                        f("rescan_delay_ms"),
                        "needs `needs_rescan = true`",
                    ));
                }
                (true, delay) => Visibility::AfterRescan {
                    delay: Duration::from_millis(delay.unwrap_or(0)),
                },
            };
            states.push((
                n,
                d.online.unwrap_or(true),
                d.read_only.unwrap_or(false),
                visibility,
                Duration::from_millis(d.volumes_arrive_ms.unwrap_or(0)),
            ));
        }
        for (i, v) in self.volumes.iter().enumerate() {
            let f = |name: &str| format!("volumes[{i}].{name}");
            let Some(style) = node.storage.disk(v.disk).map(|d| d.partition_style) else {
                return Err(field_err(
                    f("disk"),
                    format!("disk {} is not defined", v.disk),
                ));
            };
            let kind = match (
                v.kind
                    .as_deref()
                    .unwrap_or(if style == PartitionStyle::Mbr {
                        "mbr"
                    } else {
                        "basic"
                    }),
                style,
            ) {
                (_, PartitionStyle::Raw) => {
                    return Err(field_err(
                        f("disk"),
                        format!("disk {} is RAW (set partition_style)", v.disk),
                    ));
                }
                ("basic", PartitionStyle::Gpt) => PartitionType::Gpt(GPT_BASIC_DATA.into()),
                ("efi", PartitionStyle::Gpt) => PartitionType::Gpt(GPT_EFI.into()),
                ("msr", PartitionStyle::Gpt) => PartitionType::Gpt(GPT_MSR.into()),
                ("recovery", PartitionStyle::Gpt) => PartitionType::Gpt(GPT_RECOVERY.into()),
                ("mbr" | "basic" | "system_reserved", PartitionStyle::Mbr) => {
                    PartitionType::Mbr(MBR_IFS)
                }
                ("recovery", PartitionStyle::Mbr) => PartitionType::Mbr(MBR_HIDDEN_RECOVERY),
                (other, _) => {
                    return Err(field_err(
                        f("kind"),
                        format!("{other:?} does not fit a {style:?} disk"),
                    ));
                }
            };
            let fs = match v.fs.as_deref().unwrap_or("raw") {
                "raw" => FileSystem::Raw,
                "ntfs" => FileSystem::Ntfs,
                "refs" => FileSystem::Refs,
                "fat32" => FileSystem::Fat32,
                "exfat" => FileSystem::ExFat,
                other => return Err(field_err(f("fs"), format!("unknown file system {other:?}"))),
            };
            let letter = match v.drive_letter.as_deref() {
                None => None,
                Some(s) => {
                    let s = s.trim_end_matches(':');
                    let mut c = s.chars();
                    match (c.next(), c.next()) {
                        (Some(l), None) if l.is_ascii_alphabetic() => Some(l.to_ascii_uppercase()),
                        _ => {
                            return Err(field_err(
                                f("drive_letter"),
                                format!("{s:?} is not a drive letter"),
                            ));
                        }
                    }
                }
            };
            let size = v.size.map_or(PartitionSize::Max, PartitionSize::Bytes);
            let (p, id) = node
                .create_partition(v.disk, kind, size)
                .map_err(|e| field_err(f("size"), e))?;
            let Some(mut id) = id else {
                if letter.is_some() || v.id.is_some() || v.fs.is_some() {
                    return Err(field_err(f("kind"), "an MSR partition has no volume"));
                }
                continue;
            };
            if let Some(fixed) = &v.id {
                if volume_id_guid(fixed).is_none() {
                    return Err(field_err(f("id"), "must look like \\\\?\\Volume{GUID}\\"));
                }
                node.storage
                    .rename_volume(&id, fixed)
                    .map_err(|e| field_err(f("id"), e))?;
                let old = volume_id_guid(&id).unwrap_or_default();
                let _ = node.ns.remove_volume_root(&old);
                id = super::path::volume_id_for_guid(&volume_id_guid(fixed).unwrap_or_default());
                node.ns
                    .create_volume_root(&volume_id_guid(&id).unwrap_or_default())
                    .map_err(|e| field_err(f("id"), e))?;
            }
            node.set_volume_fs(&id, fs, v.used, v.system.unwrap_or(false))
                .map_err(|e| field_err(f("fs"), e))?;
            if let Some(name) = &v.holds {
                if fs != FileSystem::Raw {
                    return Err(field_err(
                        f("holds"),
                        "only a raw volume holds a signature Windows does not show",
                    ));
                }
                let name = known_signature(f("holds"), name)?;
                node.storage
                    .volume_mut_any(&id)
                    .expect("seeded volume")
                    .holds = Some(name);
            }
            if v.kind.as_deref() == Some("system_reserved") {
                let d = node.storage.disk_mut_any(v.disk).expect("seeded disk");
                if let Some(part) = d.partitions.iter_mut().find(|x| x.number == p) {
                    part.is_active = true;
                }
                if let Some(vol) = node.storage.volume_mut_any(&id) {
                    vol.label = SYSTEM_RESERVED_LABEL.to_string();
                }
            }
            if letter.is_some() {
                node.storage
                    .set_drive_letter(v.disk, p, letter)
                    .map_err(|e| field_err(f("drive_letter"), e))?;
            }
        }
        for (n, online, ro, visibility, arrival) in states {
            let d = node.storage.disk_mut_any(n).expect("seeded disk");
            d.is_offline = !online;
            d.is_read_only = ro;
            d.visibility = visibility;
            d.volume_arrival = arrival;
        }
        Ok(())
    }
}
