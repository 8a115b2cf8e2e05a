//! The volume group's services, `v1alpha1` to `v2alpha1`.
//!
//! As for the disk group, each version is one
//! `impl <version>::volume_server::Volume for ProxyService` produced by
//! `volume_service!` from the list of RPC shapes it has; a shape's
//! conversion is written once. `v1beta3`, `v1` and `v2alpha1` share every
//! body (`v2alpha1` adds the closest-volume shape).
//!
//! The old versions (`v1alpha1`–`v1beta2`) parse `disk_id` text like Go's
//! `strconv.ParseUint` with 32-bit truncation (`Failed to parse diskId:
//! err=...`), and the four RPCs they forward under an older name wrap every
//! error as `Forward to <Op> failed, err=<inner>`: `DismountVolume`
//! (UnmountVolume), `VolumeStats` (GetVolumeStats), `GetVolumeDiskNumber`
//! (GetDiskNumberFromVolumeID), `GetVolumeIDFromMount`
//! (GetVolumeIDFromTargetPath).
//!
//! Host calls run inline (they are quick and take one lock), except
//! FormatVolume, which wipes the volume's tree in the sandbox and therefore
//! runs on the blocking pool ([`ProxyService::blocking`]), and a
//! ResizeVolume to the maximum whose supported-size query has host time
//! (`resize`).

use std::time::Duration;

use tonic::{Request, Response};

use super::convert;
use super::host_time;
use super::{ProxyService, Reply, reply};
use crate::host::HostResult;
use crate::volume::{v1, v1alpha1, v1beta1, v1beta2, v1beta3, v2alpha1};

/// ResizeVolume's host work. To the maximum (`size` 0) it first asks
/// `MSFT_Partition.GetSupportedSize`, whose host time
/// (`Storage::slow_supported_size`) is waited out with the work in a task
/// of its own: the query and the resize after it go on when the caller
/// gives up, as csi-proxy's WMI calls and PowerShell commands do.
async fn resize(service: &ProxyService, id: String, size: i64) -> HostResult<()> {
    let host = service.host.clone();
    let delay = if size == 0 {
        host.lock().storage.supported_size_delay()
    } else {
        Duration::ZERO
    };
    host_time::after(delay, async move {
        host.run(|node| node.resize_volume(&id, size))
    })
    .await
}

/// `volume_service!(<version>: <shape> <shape> ...)` implements the
/// version's `Volume` trait with one method per shape (a tt-muncher: each
/// rule appends one method, the last emits the `async_trait` impl block).
macro_rules! volume_service {
    ($v:ident: $($shape:ident)+) => {
        volume_service!(@acc $v [] $($shape)+);
    };

    (@acc $v:ident [$($methods:tt)*]) => {
        #[tonic::async_trait]
        impl $v::volume_server::Volume for ProxyService {
            $($methods)*
        }
    };

    // ListVolumesOnDisk{disk_id: string}: every partition (v1alpha1-v1beta2).
    (@acc $v:ident [$($m:tt)*] list_volumes_on_disk_text $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn list_volumes_on_disk(
                &self,
                request: Request<$v::ListVolumesOnDiskRequest>,
            ) -> Reply<$v::ListVolumesOnDiskResponse> {
                let request = request.into_inner();
                reply(
                    convert::list_volumes_disk_id(&request.disk_id)
                        .and_then(|n| self.host.run(|node| node.list_volumes_on_disk(n, 0)))
                        .map(|volume_ids| $v::ListVolumesOnDiskResponse { volume_ids }),
                )
            }
        ] $($rest)*);
    };

    // ListVolumesOnDisk{disk_number, partition_number} (v1beta3+).
    (@acc $v:ident [$($m:tt)*] list_volumes_on_disk $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn list_volumes_on_disk(
                &self,
                request: Request<$v::ListVolumesOnDiskRequest>,
            ) -> Reply<$v::ListVolumesOnDiskResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| {
                        node.list_volumes_on_disk(request.disk_number, request.partition_number)
                    })
                        .map(|volume_ids| $v::ListVolumesOnDiskResponse { volume_ids }),
                )
            }
        ] $($rest)*);
    };

    // MountVolume{volume_id, path} (v1alpha1-v1beta2); errors not wrapped.
    (@acc $v:ident [$($m:tt)*] mount_volume_path $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn mount_volume(
                &self,
                request: Request<$v::MountVolumeRequest>,
            ) -> Reply<$v::MountVolumeResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| node.mount_volume(&request.volume_id, &request.path))
                        .map(|()| $v::MountVolumeResponse {}),
                )
            }
        ] $($rest)*);
    };

    // MountVolume{volume_id, target_path} (v1beta3+).
    (@acc $v:ident [$($m:tt)*] mount_volume $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn mount_volume(
                &self,
                request: Request<$v::MountVolumeRequest>,
            ) -> Reply<$v::MountVolumeResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| {
                        node.mount_volume(&request.volume_id, &request.target_path)
                    })
                        .map(|()| $v::MountVolumeResponse {}),
                )
            }
        ] $($rest)*);
    };

    // DismountVolume{volume_id, path} -> UnmountVolume, errors wrapped.
    (@acc $v:ident [$($m:tt)*] dismount_volume $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn dismount_volume(
                &self,
                request: Request<$v::DismountVolumeRequest>,
            ) -> Reply<$v::DismountVolumeResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| node.unmount_volume(&request.volume_id, &request.path))
                        .map_err(|e| convert::forward_error("UnmountVolume", e))
                        .map(|()| $v::DismountVolumeResponse {}),
                )
            }
        ] $($rest)*);
    };

    // UnmountVolume{volume_id, target_path} (v1beta3+).
    (@acc $v:ident [$($m:tt)*] unmount_volume $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn unmount_volume(
                &self,
                request: Request<$v::UnmountVolumeRequest>,
            ) -> Reply<$v::UnmountVolumeResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| {
                        node.unmount_volume(&request.volume_id, &request.target_path)
                    })
                        .map(|()| $v::UnmountVolumeResponse {}),
                )
            }
        ] $($rest)*);
    };

    // IsVolumeFormatted (same shape in every version).
    (@acc $v:ident [$($m:tt)*] is_volume_formatted $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn is_volume_formatted(
                &self,
                request: Request<$v::IsVolumeFormattedRequest>,
            ) -> Reply<$v::IsVolumeFormattedResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| node.is_volume_formatted(&request.volume_id))
                        .map(|formatted| $v::IsVolumeFormattedResponse { formatted }),
                )
            }
        ] $($rest)*);
    };

    // FormatVolume (same shape in every version).
    (@acc $v:ident [$($m:tt)*] format_volume $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn format_volume(
                &self,
                request: Request<$v::FormatVolumeRequest>,
            ) -> Reply<$v::FormatVolumeResponse> {
                // formatting wipes the volume's tree in the sandbox: real
                // file-system work whose cost grows with the data, so it
                // runs on the blocking pool
                let volume_id = request.into_inner().volume_id;
                self.blocking(move |host| host.run(|node| node.format_volume(&volume_id)))
                    .await
                    .map(|()| Response::new($v::FormatVolumeResponse {}))
            }
        ] $($rest)*);
    };

    // ResizeVolume{volume_id, size} (v1alpha1-v1beta2); errors not wrapped.
    (@acc $v:ident [$($m:tt)*] resize_volume_size $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn resize_volume(
                &self,
                request: Request<$v::ResizeVolumeRequest>,
            ) -> Reply<$v::ResizeVolumeResponse> {
                let request = request.into_inner();
                reply(
                    resize(self, request.volume_id, request.size)
                        .await
                        .map(|()| $v::ResizeVolumeResponse {}),
                )
            }
        ] $($rest)*);
    };

    // ResizeVolume{volume_id, size_bytes} (v1beta3+).
    (@acc $v:ident [$($m:tt)*] resize_volume $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn resize_volume(
                &self,
                request: Request<$v::ResizeVolumeRequest>,
            ) -> Reply<$v::ResizeVolumeResponse> {
                let request = request.into_inner();
                reply(
                    resize(self, request.volume_id, request.size_bytes)
                        .await
                        .map(|()| $v::ResizeVolumeResponse {}),
                )
            }
        ] $($rest)*);
    };

    // VolumeStats -> GetVolumeStats{volumeSize, volumeUsedSize}, errors wrapped.
    (@acc $v:ident [$($m:tt)*] volume_stats $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn volume_stats(
                &self,
                request: Request<$v::VolumeStatsRequest>,
            ) -> Reply<$v::VolumeStatsResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| node.get_volume_stats(&request.volume_id))
                        .map_err(|e| convert::forward_error("GetVolumeStats", e))
                        .map(|s| $v::VolumeStatsResponse {
                            volume_size: s.total_bytes,
                            volume_used_size: s.used_bytes,
                        }),
                )
            }
        ] $($rest)*);
    };

    // GetVolumeStats{total_bytes, used_bytes} (v1beta3+).
    (@acc $v:ident [$($m:tt)*] get_volume_stats $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn get_volume_stats(
                &self,
                request: Request<$v::GetVolumeStatsRequest>,
            ) -> Reply<$v::GetVolumeStatsResponse> {
                let request = request.into_inner();
                reply(self.host.run(|node| node.get_volume_stats(&request.volume_id)).map(|s| {
                    $v::GetVolumeStatsResponse {
                        total_bytes: s.total_bytes,
                        used_bytes: s.used_bytes,
                    }
                }))
            }
        ] $($rest)*);
    };

    // GetVolumeDiskNumber -> GetDiskNumberFromVolumeID, widened to int64, errors wrapped.
    (@acc $v:ident [$($m:tt)*] get_volume_disk_number $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn get_volume_disk_number(
                &self,
                request: Request<$v::VolumeDiskNumberRequest>,
            ) -> Reply<$v::VolumeDiskNumberResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| node.get_disk_number_from_volume_id(&request.volume_id))
                        .map_err(|e| convert::forward_error("GetDiskNumberFromVolumeID", e))
                        .map(|n| $v::VolumeDiskNumberResponse {
                            disk_number: i64::from(n),
                        }),
                )
            }
        ] $($rest)*);
    };

    // GetDiskNumberFromVolumeID{disk_number: u32} (v1beta3+).
    (@acc $v:ident [$($m:tt)*] get_disk_number_from_volume_id $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn get_disk_number_from_volume_id(
                &self,
                request: Request<$v::GetDiskNumberFromVolumeIdRequest>,
            ) -> Reply<$v::GetDiskNumberFromVolumeIdResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| node.get_disk_number_from_volume_id(&request.volume_id))
                        .map(|disk_number| $v::GetDiskNumberFromVolumeIdResponse { disk_number }),
                )
            }
        ] $($rest)*);
    };

    // GetVolumeIDFromMount{mount} -> GetVolumeIDFromTargetPath, errors wrapped.
    (@acc $v:ident [$($m:tt)*] get_volume_id_from_mount $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn get_volume_id_from_mount(
                &self,
                request: Request<$v::VolumeIdFromMountRequest>,
            ) -> Reply<$v::VolumeIdFromMountResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| node.get_volume_id_from_target_path(&request.mount))
                        .map_err(|e| convert::forward_error("GetVolumeIDFromTargetPath", e))
                        .map(|volume_id| $v::VolumeIdFromMountResponse { volume_id }),
                )
            }
        ] $($rest)*);
    };

    // GetVolumeIDFromTargetPath{target_path} (v1beta3+).
    (@acc $v:ident [$($m:tt)*] get_volume_id_from_target_path $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn get_volume_id_from_target_path(
                &self,
                request: Request<$v::GetVolumeIdFromTargetPathRequest>,
            ) -> Reply<$v::GetVolumeIdFromTargetPathResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| node.get_volume_id_from_target_path(&request.target_path))
                        .map(|volume_id| $v::GetVolumeIdFromTargetPathResponse { volume_id }),
                )
            }
        ] $($rest)*);
    };

    // GetClosestVolumeIDFromTargetPath{target_path} (v2alpha1).
    (@acc $v:ident [$($m:tt)*] get_closest_volume_id_from_target_path $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn get_closest_volume_id_from_target_path(
                &self,
                request: Request<$v::GetClosestVolumeIdFromTargetPathRequest>,
            ) -> Reply<$v::GetClosestVolumeIdFromTargetPathResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| {
                        node.get_closest_volume_id_from_target_path(&request.target_path)
                    })
                        .map(|volume_id| $v::GetClosestVolumeIdFromTargetPathResponse {
                            volume_id,
                        }),
                )
            }
        ] $($rest)*);
    };

    // WriteVolumeCache (same shape from v1beta2 on); errors not wrapped.
    (@acc $v:ident [$($m:tt)*] write_volume_cache $($rest:ident)*) => {
        volume_service!(@acc $v [$($m)*
            async fn write_volume_cache(
                &self,
                request: Request<$v::WriteVolumeCacheRequest>,
            ) -> Reply<$v::WriteVolumeCacheResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| node.write_volume_cache(&request.volume_id))
                        .map(|()| $v::WriteVolumeCacheResponse {}),
                )
            }
        ] $($rest)*);
    };
}

volume_service!(v1alpha1:
    list_volumes_on_disk_text mount_volume_path dismount_volume is_volume_formatted
    format_volume resize_volume_size);
volume_service!(v1beta1:
    list_volumes_on_disk_text mount_volume_path dismount_volume is_volume_formatted
    format_volume resize_volume_size volume_stats get_volume_disk_number
    get_volume_id_from_mount);
volume_service!(v1beta2:
    list_volumes_on_disk_text mount_volume_path dismount_volume is_volume_formatted
    format_volume resize_volume_size volume_stats get_volume_disk_number
    get_volume_id_from_mount write_volume_cache);
volume_service!(v1beta3:
    list_volumes_on_disk mount_volume unmount_volume is_volume_formatted format_volume
    resize_volume get_volume_stats get_disk_number_from_volume_id
    get_volume_id_from_target_path write_volume_cache);
volume_service!(v1:
    list_volumes_on_disk mount_volume unmount_volume is_volume_formatted format_volume
    resize_volume get_volume_stats get_disk_number_from_volume_id
    get_volume_id_from_target_path write_volume_cache);
volume_service!(v2alpha1:
    list_volumes_on_disk mount_volume unmount_volume is_volume_formatted format_volume
    resize_volume get_volume_stats get_disk_number_from_volume_id
    get_volume_id_from_target_path get_closest_volume_id_from_target_path
    write_volume_cache);

#[cfg(test)]
mod tests;
