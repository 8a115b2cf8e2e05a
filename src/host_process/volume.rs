//! The volume group (v1) over the boundary: `MSFT_Volume`, the partition
//! behind a volume, and the Win32 mount point calls.

use super::backend::{Ctx, HostProcess, text, with_slash, wmi};
use super::boundary::{FileKind, PartitionObject, VolumeObject};
use crate::Error;
use crate::volume::v1 as api;
use crate::win::ProxyRelease::V1_3;
use crate::win::texts;

/// Growth below which `ResizeVolume` does nothing (100 MiB), as the proxy.
pub const RESIZE_MIN_GROWTH: u64 = 100 * 1024 * 1024;

fn require_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        Err("volume id empty".into())
    } else {
        Ok(())
    }
}

fn not_found(id: &str) -> String {
    format!("failed to query volume {id}: not found")
}

/// The volume `id`, or the proxy's "error querying volume" text.
fn volume(ctx: &Ctx, id: &str) -> Result<VolumeObject, String> {
    require_id(id)?;
    let query = |e: String| format!("error querying volume ({id}). error: {e}");
    ctx.host()
        .volumes(id)
        .map_err(|e| query(e.to_string()))?
        .into_iter()
        .next()
        .ok_or_else(|| query(not_found(id)))
}

/// The partition the volume `id` lives on.
fn partition_of(ctx: &Ctx, id: &str) -> Result<PartitionObject, String> {
    require_id(id)?;
    ctx.host()
        .volume_partitions(id)
        .map_err(text)?
        .into_iter()
        .next()
        .ok_or_else(|| not_found(id))
}

fn flush(ctx: &Ctx, id: &str) -> Result<(), String> {
    volume(ctx, id)?;
    let result = ctx.host().volume_flush(id).map_err(text)?;
    wmi(result, |c| texts::flush_failed(id, c))
}

fn list_volumes_on_disk(ctx: &Ctx, disk: u32, partition: u32) -> Result<Vec<String>, String> {
    let mut parts = ctx
        .host()
        .partitions(disk)
        .map_err(|e| format!("failed to list partition on disk {disk}: {e}"))?;
    parts.retain(|p| partition == 0 || p.partition_number == partition);
    parts.sort_by_key(|p| p.partition_number);
    let mut ids = Vec::new();
    for p in parts {
        let volumes = ctx
            .host()
            .partition_volumes(disk, p.partition_number)
            .map_err(|e| format!("failed to list volumes on disk {disk}: {e}"))?;
        ids.extend(volumes.into_iter().map(|v| v.unique_id));
    }
    Ok(ids)
}

/// The volume behind the reparse point `path` (a mount point, or a link
/// to one): its volume path name, then that mount point's volume.
fn target_volume(ctx: &Ctx, path: &str) -> Result<String, String> {
    match ctx.host().file_kind(path).map_err(text)? {
        FileKind::Symlink { .. } | FileKind::MountPoint { .. } => {}
        FileKind::Directory | FileKind::File => return Err("not a mounted folder".into()),
    }
    let mount = ctx.host().volume_path_name(path).map_err(text)?;
    ctx.host()
        .volume_name_for_mount_point(&with_slash(&mount))
        .map_err(text)
}

fn mount_volume(ctx: &Ctx, id: &str, target: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("MountVolumeRequest.VolumeId is empty".into());
    }
    if target.is_empty() {
        return Err("MountVolumeRequest.TargetPath is empty".into());
    }
    ctx.validate(target)?;
    match ctx.host().set_volume_mount_point(&with_slash(target), id) {
        Ok(()) => Ok(()),
        // Already a mount point: fine if it is this volume's.
        Err(e) if e.win32_code() == Some(145) => match target_volume(ctx, target) {
            Err(r) => Err(format!(
                "error get target volume ({id}) to path {target}. error: {r}"
            )),
            Ok(mounted) if mounted.eq_ignore_ascii_case(id) => Ok(()),
            Ok(_) => Err(format!(
                "error mount volume ({id}) to path {target}. error: {e}"
            )),
        },
        Err(e) => Err(format!(
            "error mount volume ({id}) to path {target}. error: {e}"
        )),
    }
}

fn unmount_volume(ctx: &Ctx, id: &str, target: &str) -> Result<(), String> {
    require_id(id)?;
    if target.is_empty() {
        return Err("target path empty".into());
    }
    ctx.validate(target)?;
    flush(ctx, id)?;
    ctx.host()
        .delete_volume_mount_point(&with_slash(target))
        .map_err(|e| format!("error umount volume ({id}) from path {target}. error: {e}"))
}

fn resize_volume(ctx: &Ctx, id: &str, size: i64) -> Result<(), String> {
    let part = partition_of(ctx, id)?;
    let (d, p) = (part.disk_number, part.partition_number);
    let wanted = if size == 0 {
        let result = ctx.host().partition_supported_size(d, p).map_err(|e| {
            format!("error getting sizeMin, sizeMax from volume ({id}). status: 0, error: {e}")
        })?;
        wmi(result, |c| texts::supported_size_failed(id, c))?.max
    } else if size < 0 {
        return Err(format!("invalid negative size {size} for volume ({id})"));
    } else {
        size.unsigned_abs()
    };
    if wanted < part.size + RESIZE_MIN_GROWTH {
        tracing::debug!(volume = id, current = part.size, wanted, "nothing to grow");
        return Ok(());
    }
    let fail = |e: String| {
        format!("error resizing volume ({id}). size:{size}, finalSize {wanted}, error: {e}")
    };
    let result = ctx
        .host()
        .partition_resize(d, p, wanted)
        .map_err(|e| fail(e.to_string()))?;
    wmi(result, |c| texts::resize_failed(V1_3, id, size, wanted, c))?;
    let refreshed = ctx
        .host()
        .disk_refresh(d)
        .map_err(|e| format!("error rescan disk ({d}). error: {e}"))?;
    wmi(refreshed, |c| texts::refresh_failed(d, c))
}

#[async_trait::async_trait]
impl api::VolumeApi for HostProcess {
    async fn format_volume(
        &self,
        request: api::FormatVolumeRequest,
    ) -> Result<api::FormatVolumeResponse, Error> {
        self.run("/v1.Volume/FormatVolume", move |ctx| {
            let id = request.volume_id;
            volume(ctx, &id)?;
            let result = ctx
                .host()
                .volume_format_ntfs(&id)
                .map_err(|e| format!("error formatting volume ({id}). error: {e}"))?;
            wmi(result, |c| texts::format_failed(V1_3, &id, c))?;
            Ok(api::FormatVolumeResponse {})
        })
        .await
    }

    async fn get_disk_number_from_volume_id(
        &self,
        request: api::GetDiskNumberFromVolumeIdRequest,
    ) -> Result<api::GetDiskNumberFromVolumeIdResponse, Error> {
        self.run("/v1.Volume/GetDiskNumberFromVolumeID", move |ctx| {
            let part = partition_of(ctx, &request.volume_id)?;
            Ok(api::GetDiskNumberFromVolumeIdResponse {
                disk_number: part.disk_number,
            })
        })
        .await
    }

    async fn get_volume_id_from_target_path(
        &self,
        request: api::GetVolumeIdFromTargetPathRequest,
    ) -> Result<api::GetVolumeIdFromTargetPathResponse, Error> {
        self.run("/v1.Volume/GetVolumeIDFromTargetPath", move |ctx| {
            let target = request.target_path;
            if target.is_empty() {
                return Err("target path is empty".into());
            }
            Ok(api::GetVolumeIdFromTargetPathResponse {
                volume_id: target_volume(ctx, &target)?,
            })
        })
        .await
    }

    async fn get_volume_stats(
        &self,
        request: api::GetVolumeStatsRequest,
    ) -> Result<api::GetVolumeStatsResponse, Error> {
        self.run("/v1.Volume/GetVolumeStats", move |ctx| {
            let v = volume(ctx, &request.volume_id)?;
            let used = v.size.saturating_sub(v.size_remaining);
            Ok(api::GetVolumeStatsResponse {
                total_bytes: i64::try_from(v.size).unwrap_or(i64::MAX),
                used_bytes: i64::try_from(used).unwrap_or(i64::MAX),
            })
        })
        .await
    }

    async fn is_volume_formatted(
        &self,
        request: api::IsVolumeFormattedRequest,
    ) -> Result<api::IsVolumeFormattedResponse, Error> {
        self.run("/v1.Volume/IsVolumeFormatted", move |ctx| {
            let v = volume(ctx, &request.volume_id)?;
            Ok(api::IsVolumeFormattedResponse {
                formatted: v.file_system_type != 0,
            })
        })
        .await
    }

    async fn list_volumes_on_disk(
        &self,
        request: api::ListVolumesOnDiskRequest,
    ) -> Result<api::ListVolumesOnDiskResponse, Error> {
        self.run("/v1.Volume/ListVolumesOnDisk", move |ctx| {
            Ok(api::ListVolumesOnDiskResponse {
                volume_ids: list_volumes_on_disk(
                    ctx,
                    request.disk_number,
                    request.partition_number,
                )?,
            })
        })
        .await
    }

    async fn mount_volume(
        &self,
        request: api::MountVolumeRequest,
    ) -> Result<api::MountVolumeResponse, Error> {
        self.run("/v1.Volume/MountVolume", move |ctx| {
            mount_volume(ctx, &request.volume_id, &request.target_path)
                .map(|()| api::MountVolumeResponse {})
        })
        .await
    }

    async fn resize_volume(
        &self,
        request: api::ResizeVolumeRequest,
    ) -> Result<api::ResizeVolumeResponse, Error> {
        self.run("/v1.Volume/ResizeVolume", move |ctx| {
            resize_volume(ctx, &request.volume_id, request.size_bytes)
                .map(|()| api::ResizeVolumeResponse {})
        })
        .await
    }

    async fn unmount_volume(
        &self,
        request: api::UnmountVolumeRequest,
    ) -> Result<api::UnmountVolumeResponse, Error> {
        self.run("/v1.Volume/UnmountVolume", move |ctx| {
            unmount_volume(ctx, &request.volume_id, &request.target_path)
                .map(|()| api::UnmountVolumeResponse {})
        })
        .await
    }

    async fn write_volume_cache(
        &self,
        request: api::WriteVolumeCacheRequest,
    ) -> Result<api::WriteVolumeCacheResponse, Error> {
        self.run("/v1.Volume/WriteVolumeCache", move |ctx| {
            flush(ctx, &request.volume_id).map(|()| api::WriteVolumeCacheResponse {})
        })
        .await
    }
}
