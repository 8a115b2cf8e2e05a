//! The disk group's operations, version-neutral, as
//! methods of [`HostState`] over its storage.
//!
//! Every error is [`HostError::unknown`] with upstream's text. The string disk
//! ids of `v1alpha1`–`v1beta2` are converted by the services with
//! `parse_legacy_disk_id` (`server::convert`); errors of
//! forwarded calls are returned unwrapped in this group.

use std::collections::BTreeMap;

use super::error::{HostError, HostResult};
use super::state::HostState;
use super::storage::{
    GPT_BASIC_DATA, PartitionSize, PartitionStyle, PartitionType, disk_not_found, parse_location,
};
use super::texts;

/// A parsed disk location (ListDiskLocations). Fields are the raw tokens;
/// missing ones are `""`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct DiskLocation {
    /// `Adapter` number.
    pub adapter: String,
    /// `Bus` number (only when the location names one).
    pub bus: String,
    /// `Target` id.
    pub target: String,
    /// `LUN`.
    pub lun_id: String,
}

/// A disk's identifiers (ListDiskIDs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct DiskIds {
    /// Page 0x83 identifier as text (`""` if none).
    pub page83: String,
    /// Serial number verbatim.
    pub serial_number: String,
}

/// A failed WMI method's error in the words `text` gives its return value;
/// any other error unchanged.
pub(super) fn with_result(e: HostError, text: impl FnOnce(u32) -> String) -> HostError {
    match e.wmi_result() {
        Some(code) => HostError::wmi_method(text(code), code),
        None => e,
    }
}

impl HostState {
    /// Disks whose location parses, by number; offline disks included.
    pub fn list_disk_locations(&self) -> HostResult<BTreeMap<u32, DiskLocation>> {
        Ok(self
            .storage
            .disks()
            .filter_map(|d| {
                let [adapter, bus, target, lun_id] = parse_location(&d.location)?;
                Some((
                    d.number,
                    DiskLocation {
                        adapter,
                        bus,
                        target,
                        lun_id,
                    },
                ))
            })
            .collect())
    }

    /// Makes sure the disk has a partition table and a non-reserved partition.
    pub fn partition_disk(&mut self, n: u32) -> HostResult<()> {
        let style = self
            .storage
            .disk(n)
            .map(|d| d.partition_style)
            .ok_or_else(|| {
                disk_not_found(n)
                    .context(format!("error checking initialized status of disk {n}: "))
            })?;
        let release = self.release();
        if style == PartitionStyle::Raw {
            self.storage
                .initialize(n, PartitionStyle::Gpt)
                .map_err(|e| with_result(e, |c| texts::initialize_failed(release, n, c)))?;
        }
        let has_basic = |node: &HostState| {
            node.storage
                .disk(n)
                .is_some_and(|d| d.partitions.iter().any(|p| !p.kind.is_msr()))
        };
        if has_basic(self) {
            return Ok(());
        }
        match self.create_partition(
            n,
            PartitionType::Gpt(GPT_BASIC_DATA.to_string()),
            PartitionSize::Max,
        ) {
            Ok(_) => {}
            Err(e) => {
                return Err(with_result(e, |c| {
                    texts::create_partition_failed(release, n, c)
                }));
            }
        }
        let first = self.storage.disk(n).and_then(|d| {
            d.partitions
                .iter()
                .find(|p| !p.kind.is_msr())
                .map(|p| p.number)
        });
        match first {
            Some(p) => self.storage.set_partition_online(n, p, true),
            None => Err(HostError::unknown(format!(
                "failed to create basic partition on disk {n}:, %!w(<nil>)"
            ))),
        }
    }

    /// Re-enumerates disks.
    pub fn rescan(&mut self) -> HostResult<()> {
        self.storage.rescan();
        Ok(())
    }

    /// The first disk whose page83 equals `disk_name` (v1alpha1).
    pub fn get_disk_number_by_name(&self, name: &str) -> HostResult<u32> {
        for d in self.storage.disks() {
            if let Some(e) = &d.probe_error {
                return Err(HostError::unknown(e.clone()));
            }
            if d.page83.reported() == name {
                return Ok(d.number);
            }
        }
        Err(HostError::unknown(format!(
            "could not find disk with Page83 ID {name}: not found"
        )))
    }

    /// Page83 and serial of every disk.
    pub fn list_disk_ids(&self) -> HostResult<BTreeMap<u32, DiskIds>> {
        let mut out = BTreeMap::new();
        for d in self.storage.disks() {
            if let Some(e) = &d.probe_error {
                return Err(HostError::unknown(e.clone()));
            }
            out.insert(
                d.number,
                DiskIds {
                    page83: d.page83.reported(),
                    serial_number: d.serial_number.clone(),
                },
            );
        }
        Ok(out)
    }

    /// The disk's capacity in bytes.
    pub fn get_disk_stats(&self, n: u32) -> HostResult<i64> {
        self.storage
            .disk(n)
            .map(|d| d.size as i64)
            .ok_or_else(|| disk_not_found(n))
    }

    /// Brings the disk online or takes it offline; no-op if already so.
    pub fn set_disk_state(&mut self, n: u32, online: bool) -> HostResult<()> {
        if self.storage.disk(n).is_none() {
            return Err(disk_not_found(n));
        }
        let release = self.release();
        self.storage
            .set_online(n, online)
            .map_err(|e| with_result(e, |c| texts::set_disk_state_failed(release, n, online, c)))
    }

    /// Whether the disk is online.
    pub fn get_disk_state(&self, n: u32) -> HostResult<bool> {
        self.storage
            .disk(n)
            .map(|d| !d.is_offline)
            .ok_or_else(|| disk_not_found(n))
    }
}
