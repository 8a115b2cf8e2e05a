//! The volume group's operations, version-neutral, as
//! methods of [`HostState`] over its storage and namespace.
//!
//! Every error is [`HostError::unknown`] with upstream's text. The old
//! versions' `Forward to <Op> failed, err=` wrappers are added by the services
//! (`forward_error`); `disk_id` strings are
//! parsed with `parse_legacy_disk_id` (`server::convert`)
//! and failures reported as `Failed to parse diskId: err=<strconv error>`.

use super::error::{HostError, HostResult};
use super::namespace::{Entry, LinkKind};
use super::path::{Win32Error, WinPath, WinRoot};
use super::state::{HostState, win_err};
use super::storage::{FileSystem, volume_not_found};
use super::texts;
use crate::win::ProxyRelease;

/// Bytes below which ResizeVolume growth is ignored (100 MiB).
pub(crate) const RESIZE_MIN_GROWTH: u64 = 104_857_600;
/// GetClosestVolumeIDFromTargetPath's iteration limit.
pub(crate) const CLOSEST_VOLUME_MAX_ITERATIONS: usize = 256;

/// Size and use of a volume (GetVolumeStats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct VolumeStats {
    /// Size in bytes (the partition size).
    pub total_bytes: i64,
    /// Bytes in use.
    pub used_bytes: i64,
}

fn query_error(id: &str) -> HostError {
    volume_not_found(id).context(format!("error querying volume ({id}). error: "))
}

fn require_id(id: &str) -> HostResult<()> {
    if id.is_empty() {
        return Err(HostError::unknown("volume id empty"));
    }
    Ok(())
}

impl HostState {
    /// Volume ids on a disk, in partition order; `partition_number` 0 = all.
    /// Unknown/offline disks and partitions give `[]` in v1.3, and `[""]`
    /// in v0.2 to v1.2: those split PowerShell's empty output on line
    /// breaks, which gives one empty string (csi-proxy v1.1.3
    /// `pkg/os/volume/api.go` and v0.2.2 `internal/os/volume/api.go`,
    /// `ListVolumesOnDisk`).
    pub fn list_volumes_on_disk(
        &self,
        disk_number: u32,
        partition_number: u32,
    ) -> HostResult<Vec<String>> {
        let ids = self.storage.volumes_on_disk(disk_number, partition_number);
        match self.release() {
            ProxyRelease::V0_2 | ProxyRelease::V1_1 if ids.is_empty() => Ok(vec![String::new()]),
            _ => Ok(ids),
        }
    }

    /// Mounts a volume on an existing empty directory.
    pub fn mount_volume(&mut self, id: &str, target: &str) -> HostResult<()> {
        if id.is_empty() {
            return Err(HostError::unknown("MountVolumeRequest.VolumeId is empty"));
        }
        if target.is_empty() {
            return Err(HostError::unknown("MountVolumeRequest.TargetPath is empty"));
        }
        let fail = |e: Win32Error| {
            HostError::unknown(format!(
                "error mount volume ({id}) to path {target}. error: {e}"
            ))
        };
        let path = WinPath::parse(target).map_err(fail)?;
        match self.ns.set_mount_point(self.ctx(), &path, id) {
            Ok(()) => Ok(()),
            Err(e) if e.code() == Win32Error::DIR_NOT_EMPTY => {
                match self.get_volume_id_from_target_path(target) {
                    Err(r) => Err(r.context(format!(
                        "error get target volume ({id}) to path {target}. error: "
                    ))),
                    Ok(mounted) if mounted == id => Ok(()),
                    Ok(_) => Err(fail(e)),
                }
            }
            Err(e) => Err(fail(e)),
        }
    }

    /// Flushes the volume, then removes the mount point at the path.
    pub fn unmount_volume(&mut self, id: &str, target: &str) -> HostResult<()> {
        require_id(id)?;
        if target.is_empty() {
            return Err(HostError::unknown("target path empty"));
        }
        self.storage.flush(id).map_err(|_| query_error(id))?;
        let fail = |e: Win32Error| {
            HostError::unknown(format!(
                "error umount volume ({id}) from path {target}. error: {e}"
            ))
        };
        let path = WinPath::parse(target).map_err(fail)?;
        self.ns.delete_mount_point(self.ctx(), &path).map_err(fail)
    }

    /// Whether the volume has any file system; in v0.2 whether it has
    /// NTFS (it compares `FileSystemType` with `ntfs`, csi-proxy v0.2.2
    /// `internal/os/volume/api.go`), so a ReFS, FAT32 or exFAT volume
    /// answers `false` there.
    pub fn is_volume_formatted(&self, id: &str) -> HostResult<bool> {
        require_id(id)?;
        let v = self.storage.volume(id).ok_or_else(|| query_error(id))?;
        Ok(match self.release() {
            ProxyRelease::V0_2 => v.fs == FileSystem::Ntfs,
            _ => v.fs.is_formatted(),
        })
    }

    /// Formats NTFS, forced, destructive.
    pub fn format_volume(&mut self, id: &str) -> HostResult<()> {
        require_id(id)?;
        if self.storage.volume(id).is_none() {
            return Err(query_error(id));
        }
        let release = self.release();
        self.format_volume_ntfs(id)
            .map_err(|e| match e.wmi_result() {
                Some(c) => HostError::wmi_method(texts::format_failed(release, id, c), c),
                None => e.context(format!("error formatting volume ({id}). error: ")),
            })
    }

    /// Grows the volume's partition; 0 = maximum.
    pub fn resize_volume(&mut self, id: &str, size_bytes: i64) -> HostResult<()> {
        require_id(id)?;
        let current = self
            .storage
            .volume_size(id)
            .ok_or_else(|| volume_not_found(id))?;
        let target = if size_bytes == 0 {
            let release = self.release();
            let (_, max) =
                self.storage
                    .get_supported_size(id)
                    .map_err(|e| match e.wmi_result() {
                        Some(c) => HostError::wmi_method(
                            texts::supported_size_failed_in(release, id, c),
                            c,
                        ),
                        None => e.context(format!(
                            "error getting sizeMin, sizeMax from volume ({id}). status: 0, error: "
                        )),
                    })?;
            max
        } else if size_bytes < 0 {
            return Err(HostError::unknown(format!(
                "invalid negative size {size_bytes} for volume ({id})"
            )));
        } else {
            size_bytes as u64
        };
        if target < current + RESIZE_MIN_GROWTH {
            return Ok(());
        }
        let release = self.release();
        self.storage
            .resize(id, target)
            .map_err(|e| match e.wmi_result() {
                Some(c) => {
                    let text = texts::resize_failed(release, id, size_bytes, target, c);
                    HostError::wmi_method(text, c)
                }
                None => e.context(format!(
                    "error resizing volume ({id}). size:{size_bytes}, finalSize {target}, error: "
                )),
            })
    }

    /// Total and used bytes.
    pub fn get_volume_stats(&self, id: &str) -> HostResult<VolumeStats> {
        require_id(id)?;
        let v = self.storage.volume(id).ok_or_else(|| query_error(id))?;
        let total = self.storage.volume_size(id).unwrap_or(0);
        let used = if v.fs == FileSystem::Raw {
            total
        } else {
            v.used.min(total)
        };
        Ok(VolumeStats {
            total_bytes: total as i64,
            used_bytes: used as i64,
        })
    }

    /// The number of the disk holding the volume.
    pub fn get_disk_number_from_volume_id(&self, id: &str) -> HostResult<u32> {
        require_id(id)?;
        self.storage
            .volume(id)
            .map(|v| v.disk)
            .ok_or_else(|| volume_not_found(id))
    }

    /// The volume behind `path`, already known to be a reparse point: its
    /// mount's volume, following links.
    fn volume_of_resolved(&self, path: &WinPath) -> HostResult<String> {
        let (_mount, volume) = self
            .ns
            .volume_path_name(self.ctx(), path)
            .map_err(win_err)?;
        let id = volume.ok_or_else(|| win_err(Win32Error::new(Win32Error::INVALID_PARAMETER)))?;
        // GetVolumeNameForVolumeMountPoint: the volume must (still) be present.
        self.storage
            .volume(&id)
            .map(|v| v.id.clone())
            .ok_or_else(|| win_err(Win32Error::new(Win32Error::NOT_READY)))
    }

    /// The volume mounted at (or linked from) a reparse point.
    pub fn get_volume_id_from_target_path(&self, target: &str) -> HostResult<String> {
        if target.is_empty() {
            return Err(HostError::unknown("target path is empty"));
        }
        let path = WinPath::parse(target).map_err(win_err)?;
        match self.ns.lstat(self.ctx(), &path).map_err(win_err)? {
            Entry::Link(_) => self.volume_of_resolved(&path),
            _ => Err(HostError::unknown("not a mounted folder")),
        }
    }

    /// The volume holding the path, walking up to the drive letter.
    pub fn get_closest_volume_id_from_target_path(&self, target: &str) -> HostResult<String> {
        if target.is_empty() {
            return Err(HostError::unknown("target path is empty"));
        }
        let wrap = |e: HostError| {
            e.context(format!(
                "error getting the closest volume for the path={target}, err="
            ))
        };
        // Go's os.Lstat on Windows reports a missing path as a *PathError
        // of its CreateFile step: `CreateFile <path>: <Windows text>`, the
        // path as upstream holds it (the request's text at first).
        let lstat_failed =
            |shown: &str, e| wrap(win_err(e).context(format!("CreateFile {shown}: ")));
        let mut p = WinPath::parse(target).map_err(|e| lstat_failed(target, e))?;
        let mut shown = target.to_owned();
        for _ in 0..CLOSEST_VOLUME_MAX_ITERATIONS {
            let entry = self
                .ns
                .lstat(self.ctx(), &p)
                .map_err(|e| lstat_failed(&shown, e))?;
            if matches!(entry, Entry::Link(_)) {
                return self.volume_of_resolved(&p).map_err(wrap);
            }
            match p.parent() {
                Some(parent) => {
                    shown = parent.to_string();
                    p = parent;
                }
                None => {
                    return match p.root_kind() {
                        WinRoot::Drive(c) => self
                            .storage
                            .volume_by_drive_letter(*c)
                            .map(|v| v.id.clone())
                            .ok_or_else(|| wrap(HostError::unknown("not found"))),
                        WinRoot::Volume(_) => self.volume_of_resolved(&p).map_err(wrap),
                        WinRoot::Unc { .. } => Err(wrap(HostError::unknown("not found"))),
                    };
                }
            }
        }
        Err(HostError::unknown(format!(
            "failed to find the closest volume for path={target}"
        )))
    }

    /// Flushes the volume's cache.
    pub fn write_volume_cache(&mut self, id: &str) -> HostResult<()> {
        require_id(id)?;
        self.storage.flush(id).map_err(|_| query_error(id))
    }
}

/// Whether an entry is a volume mount point (for callers inspecting paths).
pub fn is_mount_point(e: &Entry) -> bool {
    matches!(e, Entry::Link(l) if l.kind == LinkKind::Mount)
}
