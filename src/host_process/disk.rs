//! The disk group (v1) over the boundary: `MSFT_Disk`, `MSFT_Partition`,
//! the page 0x83 query.

use std::collections::HashMap;

use super::backend::{Ctx, HostProcess, text, wmi};
use super::boundary::{
    DeviceId, DiskObject, PARTITION_STYLE_GPT, PARTITION_STYLE_RAW, PartitionObject, VolumeObject,
};
use crate::Error;
use crate::disk::v1 as api;
use crate::win::ProxyRelease::V1_3;
use crate::win::location::parse_location;
use crate::win::texts;

/// GPT type of a basic data partition.
pub const GPT_BASIC_DATA: &str = "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}";
/// GPT type of the Microsoft Reserved partition.
pub const GPT_MSR: &str = "{e3c9e316-0b5c-4db8-817d-f92df00215ae}";
/// MBR types (`MSFT_Partition.MbrType`) of partitions that hold a file
/// system Windows mounts as data: FAT16 (4, and 6 above 32 MiB), IFS (7:
/// NTFS, exFAT, ReFS), FAT32 (0x0B, and 0x0C with LBA), FAT16 with LBA
/// (0x0E).
const MBR_DATA_TYPES: [u16; 6] = [0x04, 0x06, 0x07, 0x0B, 0x0C, 0x0E];

/// Whether `p` is a data partition by its type: a GPT basic data
/// partition, or an MBR partition of a data type; never one Windows marks
/// system or hidden. EFI, MSR and recovery partitions have other types (GPT)
/// or a hidden one (MBR recovery, 0x27).
fn is_data_partition(p: &PartitionObject) -> bool {
    if p.is_system || p.is_hidden {
        return false;
    }
    if p.gpt_type.is_empty() {
        MBR_DATA_TYPES.contains(&p.mbr_type)
    } else {
        p.gpt_type.eq_ignore_ascii_case(GPT_BASIC_DATA)
    }
}

/// The volume to stage among a disk's partitions and their volumes: the
/// data partitions ([`is_data_partition`]) that have a volume; of those,
/// an active one (System Reserved on MBR: an IFS partition like the data
/// one) only when no other is left; then a formatted one before an
/// unformatted one, the largest first. `None`: no data partition.
fn data_partition_volume(parts: Vec<(PartitionObject, Vec<VolumeObject>)>) -> Option<String> {
    let mut data: Vec<(PartitionObject, VolumeObject)> = parts
        .into_iter()
        .filter(|(p, _)| is_data_partition(p))
        .filter_map(|(p, v)| v.into_iter().next().map(|v| (p, v)))
        .collect();
    if data.iter().any(|(p, _)| !p.is_active) {
        data.retain(|(p, _)| !p.is_active);
    }
    data.into_iter()
        .max_by_key(|(p, v)| {
            let formatted = v.file_system_type != 0;
            (formatted, p.size, std::cmp::Reverse(p.partition_number))
        })
        .map(|(_, v)| v.unique_id)
}

/// `CreatePartition`'s "access path already in use": the partition was
/// made, only the drive letter could not be given; success for us.
pub const ACCESS_PATH_IN_USE: u32 = 42002;

pub(super) fn find_disk(ctx: &Ctx, n: u32) -> Result<DiskObject, String> {
    ctx.host()
        .disks()
        .map_err(|e| format!("failed to query disk {n}. error: {e}"))?
        .into_iter()
        .find(|d| d.number == n)
        .ok_or_else(|| format!("failed to query disk {n}. error: not found"))
}

/// Partitions that are not the MSR, by number.
fn basic_partitions(ctx: &Ctx, n: u32) -> Result<Vec<u32>, String> {
    let mut parts: Vec<u32> = ctx
        .host()
        .partitions(n)
        .map_err(text)?
        .into_iter()
        .filter(|p| !p.gpt_type.eq_ignore_ascii_case(GPT_MSR))
        .map(|p| p.partition_number)
        .collect();
    parts.sort_unstable();
    Ok(parts)
}

fn partition_disk(ctx: &Ctx, n: u32) -> Result<(), String> {
    let disk = find_disk(ctx, n)
        .map_err(|e| format!("error checking initialized status of disk {n}: {e}"))?;
    if disk.partition_style == PARTITION_STYLE_RAW {
        let result = ctx
            .host()
            .disk_initialize(n, PARTITION_STYLE_GPT)
            .map_err(|e| format!("failed to initializing disk {n}. error: {e}"))?;
        wmi(result, |c| texts::initialize_failed(V1_3, n, c))?;
    }
    let present = basic_partitions(ctx, n)
        .map_err(|e| format!("error checking presence of partitions on disk {n}:, {e}"))?;
    if !present.is_empty() {
        return Ok(());
    }
    let created = ctx
        .host()
        .disk_create_partition(n, GPT_BASIC_DATA)
        .map_err(|e| format!("error creating partition on disk {n}. err: {e}"))?;
    if created.code != ACCESS_PATH_IN_USE {
        wmi(created, |c| texts::create_partition_failed(V1_3, n, c))?;
    }
    let refreshed = ctx
        .host()
        .disk_refresh(n)
        .map_err(|e| format!("error rescan disk ({n}). error: {e}"))?;
    wmi(refreshed, |c| texts::refresh_failed(n, c))?;
    let parts = basic_partitions(ctx, n)
        .map_err(|e| format!("error query basic partition on disk {n}:, {e}"))?;
    let Some(&first) = parts.first() else {
        return Err(format!(
            "failed to create basic partition on disk {n}:, %!w(<nil>)"
        ));
    };
    let fail = |e: String| format!("error bring partition {first} on disk {n} online. err: {e}");
    let result = ctx
        .host()
        .partition_set_online(n, first, true)
        .map_err(|e| fail(e.to_string()))?;
    wmi(result, |c| texts::partition_online_failed(n, first, c))
}

fn list_disk_locations(ctx: &Ctx) -> Result<HashMap<u32, api::DiskLocation>, String> {
    let disks = ctx
        .host()
        .disks()
        .map_err(|e| format!("failed to list disks: {e}"))?;
    Ok(disks
        .into_iter()
        .filter_map(|d| {
            let [adapter, bus, target, lunid] = parse_location(&d.location)?;
            Some((
                d.number,
                api::DiskLocation {
                    adapter,
                    bus,
                    target,
                    lunid,
                },
            ))
        })
        .collect())
}

fn page83(id: DeviceId) -> String {
    match id {
        DeviceId::None => String::new(),
        DeviceId::Ascii(b) => String::from_utf8_lossy(&b).into_owned(),
        DeviceId::Binary(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
    }
}

fn list_disk_ids(ctx: &Ctx) -> Result<HashMap<u32, api::DiskIDs>, String> {
    let disks = ctx
        .host()
        .disks()
        .map_err(|e| format!("failed to list disks: {e}"))?;
    let mut out = HashMap::new();
    for d in disks {
        let id = ctx
            .host()
            .disk_device_id(&d.path)
            .map_err(|e| format!("IOCTL_STORAGE_QUERY_PROPERTY failed: {e}"))?;
        out.insert(
            d.number,
            api::DiskIDs {
                page83: page83(id),
                serial_number: d.serial_number,
            },
        );
    }
    Ok(out)
}

fn set_disk_state(ctx: &Ctx, n: u32, online: bool) -> Result<(), String> {
    let disk = find_disk(ctx, n)?;
    if disk.is_offline != online {
        return Ok(());
    }
    let fail =
        |e: String| format!("setting disk {n} attach state (isOnline: {online}): error: {e}");
    let result = ctx
        .host()
        .disk_set_online(n, online)
        .map_err(|e| fail(e.to_string()))?;
    wmi(result, |c| texts::set_disk_state_failed(V1_3, n, online, c))
}

#[async_trait::async_trait]
impl api::DiskApi for HostProcess {
    async fn get_disk_state(
        &self,
        request: api::GetDiskStateRequest,
    ) -> Result<api::GetDiskStateResponse, Error> {
        let n = request.disk_number;
        self.run("/v1.Disk/GetDiskState", move |ctx| {
            let disk = find_disk(ctx, n)?;
            Ok(api::GetDiskStateResponse {
                is_online: !disk.is_offline,
            })
        })
        .await
    }

    async fn get_disk_stats(
        &self,
        request: api::GetDiskStatsRequest,
    ) -> Result<api::GetDiskStatsResponse, Error> {
        let n = request.disk_number;
        self.run("/v1.Disk/GetDiskStats", move |ctx| {
            let disk = find_disk(ctx, n)?;
            Ok(api::GetDiskStatsResponse {
                total_bytes: i64::try_from(disk.size).unwrap_or(i64::MAX),
            })
        })
        .await
    }

    async fn list_disk_ids(
        &self,
        _request: api::ListDiskIDsRequest,
    ) -> Result<api::ListDiskIDsResponse, Error> {
        self.run("/v1.Disk/ListDiskIDs", |ctx| {
            Ok(api::ListDiskIDsResponse {
                disk_i_ds: list_disk_ids(ctx)?,
            })
        })
        .await
    }

    async fn list_disk_locations(
        &self,
        _request: api::ListDiskLocationsRequest,
    ) -> Result<api::ListDiskLocationsResponse, Error> {
        self.run("/v1.Disk/ListDiskLocations", |ctx| {
            Ok(api::ListDiskLocationsResponse {
                disk_locations: list_disk_locations(ctx)?,
            })
        })
        .await
    }

    async fn partition_disk(
        &self,
        request: api::PartitionDiskRequest,
    ) -> Result<api::PartitionDiskResponse, Error> {
        let n = request.disk_number;
        self.run("/v1.Disk/PartitionDisk", move |ctx| {
            partition_disk(ctx, n).map(|()| api::PartitionDiskResponse {})
        })
        .await
    }

    async fn rescan(&self, _request: api::RescanRequest) -> Result<api::RescanResponse, Error> {
        self.run("/v1.Disk/Rescan", |ctx| {
            let fail = |e: String| format!("error updating host storage cache output. err: {e}");
            let result = ctx
                .host()
                .update_host_storage_cache()
                .map_err(|e| fail(e.to_string()))?;
            wmi(result, texts::update_cache_failed)?;
            Ok(api::RescanResponse {})
        })
        .await
    }

    async fn set_disk_state(
        &self,
        request: api::SetDiskStateRequest,
    ) -> Result<api::SetDiskStateResponse, Error> {
        let (n, online) = (request.disk_number, request.is_online);
        self.run("/v1.Disk/SetDiskState", move |ctx| {
            set_disk_state(ctx, n, online).map(|()| api::SetDiskStateResponse {})
        })
        .await
    }
}

/// What the node layer reads and changes beyond the proxy's disk API
/// (its disk list, the OS disk, read-only disks).
impl HostProcess {
    /// Every `MSFT_Disk` with the properties the boundary reads.
    pub(crate) async fn disk_objects(&self) -> Result<Vec<DiskObject>, Error> {
        self.run("MSFT_Disk", |ctx| {
            ctx.host()
                .disks()
                .map_err(|e| format!("failed to list disks: {e}"))
        })
        .await
    }

    /// The volume of disk `n`'s data partition, chosen by partition type
    /// ([`data_partition_volume`] over every `MSFT_Partition` of the disk
    /// and its `MSFT_PartitionToVolume` volumes). `None`: the disk shows no
    /// data partition with a volume (blank, offline, or only system ones).
    pub(crate) async fn data_volume(&self, n: u32) -> Result<Option<String>, Error> {
        self.run("MSFT_Partition", move |ctx| {
            let fail = |e: String| format!("failed to list partitions on disk {n}: {e}");
            let parts = ctx.host().partitions(n).map_err(|e| fail(e.to_string()))?;
            let mut out = Vec::with_capacity(parts.len());
            for p in parts {
                let volumes = ctx
                    .host()
                    .partition_volumes(n, p.partition_number)
                    .map_err(|e| fail(e.to_string()))?;
                out.push((p, volumes));
            }
            Ok(data_partition_volume(out))
        })
        .await
    }

    /// Makes disk `n` writable: `MSFT_Disk.SetAttributes(IsReadOnly = false)`.
    pub(crate) async fn make_writable(&self, n: u32) -> Result<(), Error> {
        self.run("MSFT_Disk.SetAttributes", move |ctx| {
            let fail = |e: String| format!("failed to make disk {n} writable. error: {e}");
            let result = ctx
                .host()
                .disk_set_read_only(n, false)
                .map_err(|e| fail(e.to_string()))?;
            wmi(result, |c| {
                format!("failed to make disk {n} writable: MSFT_Disk.SetAttributes result {c}")
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn gpt(number: u32, gpt_type: &str, size: u64) -> PartitionObject {
        PartitionObject {
            partition_number: number,
            gpt_type: gpt_type.into(),
            size,
            ..PartitionObject::default()
        }
    }

    fn mbr(number: u32, mbr_type: u16, size: u64, active: bool) -> PartitionObject {
        PartitionObject {
            partition_number: number,
            mbr_type,
            size,
            is_active: active,
            is_hidden: mbr_type == 0x27,
            ..PartitionObject::default()
        }
    }

    fn with_volume(p: PartitionObject, formatted: bool) -> (PartitionObject, Vec<VolumeObject>) {
        let v = VolumeObject {
            unique_id: format!("v{}", p.partition_number),
            file_system_type: if formatted { 14 } else { 0 },
            size: p.size,
            size_remaining: 0,
        };
        (p, vec![v])
    }

    const EFI: &str = "{c12a7328-f81f-11d2-ba4b-00a0c93ec93b}";
    const RECOVERY: &str = "{de94bba4-06d1-4d40-a16a-bfd50179d6ac}";

    #[test]
    fn gpt_basic_data_is_chosen_over_larger_system_partitions() {
        let parts = vec![
            with_volume(gpt(1, EFI, 100 * MIB), true),
            (gpt(2, GPT_MSR, 16 * MIB), Vec::new()),
            with_volume(gpt(3, GPT_BASIC_DATA, 200 * MIB), true),
            with_volume(gpt(4, RECOVERY, 1024 * MIB), true),
        ];
        assert_eq!(data_partition_volume(parts).as_deref(), Some("v3"));
    }

    #[test]
    fn mbr_system_reserved_only_when_nothing_else_is_left() {
        let image = vec![
            with_volume(mbr(1, 0x07, 500 * MIB, true), true),
            with_volume(mbr(2, 0x07, 300 * MIB, false), true),
            with_volume(mbr(3, 0x27, 600 * MIB, false), true),
        ];
        assert_eq!(data_partition_volume(image).as_deref(), Some("v2"));
        let alone = vec![with_volume(mbr(1, 0x07, 500 * MIB, true), true)];
        assert_eq!(data_partition_volume(alone).as_deref(), Some("v1"));
    }

    #[test]
    fn system_partitions_alone_give_none() {
        let mut efi = gpt(1, EFI, 100 * MIB);
        efi.is_system = true;
        let mut hidden_basic = gpt(2, GPT_BASIC_DATA, 100 * MIB);
        hidden_basic.is_hidden = true;
        let parts = vec![with_volume(efi, true), with_volume(hidden_basic, true)];
        assert_eq!(data_partition_volume(parts), None);
    }

    #[test]
    fn formatted_before_larger_unformatted() {
        let parts = vec![
            with_volume(gpt(2, GPT_BASIC_DATA, 100 * MIB), true),
            with_volume(gpt(3, GPT_BASIC_DATA, 900 * MIB), false),
        ];
        assert_eq!(data_partition_volume(parts).as_deref(), Some("v2"));
    }
}
