//! The disk group's services, `v1alpha1` to `v1`.
//!
//! Every version is one `impl <version>::disk_server::Disk for ProxyService`
//! produced by `disk_service!` from the list of RPC *shapes* that version
//! has. A shape is one way an RPC looks on the wire (string disk ids and
//! text map keys on `v1alpha1`–`v1beta2`, numbers on `v1beta3`/`v1`); its
//! conversion is written once in the macro and instantiated for every
//! version with that shape, so `v1beta3` and `v1` share every body.
//!
//! The string-id shapes parse with Go's `strconv.ParseUint(s, 10, 64)` and
//! truncate to 32 bits, failing with the proxy's texts
//! (`server::convert`). Errors of forwarded calls are not wrapped in
//! this group.

use tonic::Request;

use super::convert;
use super::{ProxyService, Reply, reply};
use crate::disk::{v1, v1alpha1, v1beta1, v1beta2, v1beta3};
use crate::host::DiskLocation;

/// `DiskLocation` has the same four string fields in every version.
macro_rules! disk_location_from_host {
    ($($v:ident),+) => {$(
        impl From<DiskLocation> for $v::DiskLocation {
            fn from(l: DiskLocation) -> Self {
                Self {
                    adapter: l.adapter,
                    bus: l.bus,
                    target: l.target,
                    lunid: l.lun_id,
                }
            }
        }
    )+};
}

disk_location_from_host!(v1alpha1, v1beta1, v1beta2, v1beta3, v1);

/// `disk_service!(<version>: <shape> <shape> ...)` implements the version's
/// `Disk` trait with one method per shape (a tt-muncher: each rule appends
/// one method to the accumulator, the last rule emits the impl block so that
/// `async_trait` sees every method).
macro_rules! disk_service {
    ($v:ident: $($shape:ident)+) => {
        disk_service!(@acc $v [] $($shape)+);
    };

    (@acc $v:ident [$($methods:tt)*]) => {
        #[tonic::async_trait]
        impl $v::disk_server::Disk for ProxyService {
            $($methods)*
        }
    };

    // ListDiskLocations, keys as decimal text (v1alpha1-v1beta2).
    (@acc $v:ident [$($m:tt)*] list_disk_locations_text $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn list_disk_locations(
                &self,
                _request: Request<$v::ListDiskLocationsRequest>,
            ) -> Reply<$v::ListDiskLocationsResponse> {
                reply(self.host.run(|node| node.list_disk_locations()).map(|locations| {
                    $v::ListDiskLocationsResponse {
                        disk_locations: locations
                            .into_iter()
                            .map(|(n, l)| (n.to_string(), l.into()))
                            .collect(),
                    }
                }))
            }
        ] $($rest)*);
    };

    // ListDiskLocations, u32 keys (v1beta3, v1).
    (@acc $v:ident [$($m:tt)*] list_disk_locations $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn list_disk_locations(
                &self,
                _request: Request<$v::ListDiskLocationsRequest>,
            ) -> Reply<$v::ListDiskLocationsResponse> {
                reply(self.host.run(|node| node.list_disk_locations()).map(|locations| {
                    $v::ListDiskLocationsResponse {
                        disk_locations: locations.into_iter().map(|(n, l)| (n, l.into())).collect(),
                    }
                }))
            }
        ] $($rest)*);
    };

    // PartitionDisk{diskID: string}: `Failed to convert <v>.PartitionDiskRequest.DiskID to uint32: ...`.
    (@acc $v:ident [$($m:tt)*] partition_disk_text $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn partition_disk(
                &self,
                request: Request<$v::PartitionDiskRequest>,
            ) -> Reply<$v::PartitionDiskResponse> {
                let request = request.into_inner();
                reply(
                    convert::partition_disk_id(stringify!($v), &request.disk_id)
                        .and_then(|n| self.host.run(|node| node.partition_disk(n)))
                        .map(|()| $v::PartitionDiskResponse {}),
                )
            }
        ] $($rest)*);
    };

    // PartitionDisk{disk_number: u32}.
    (@acc $v:ident [$($m:tt)*] partition_disk $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn partition_disk(
                &self,
                request: Request<$v::PartitionDiskRequest>,
            ) -> Reply<$v::PartitionDiskResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| node.partition_disk(request.disk_number))
                        .map(|()| $v::PartitionDiskResponse {}),
                )
            }
        ] $($rest)*);
    };

    // Rescan (every version).
    (@acc $v:ident [$($m:tt)*] rescan $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn rescan(
                &self,
                _request: Request<$v::RescanRequest>,
            ) -> Reply<$v::RescanResponse> {
                reply(self.host.run(|node| node.rescan()).map(|()| $v::RescanResponse {}))
            }
        ] $($rest)*);
    };

    // GetDiskNumberByName (v1alpha1 only): the number as decimal text.
    (@acc $v:ident [$($m:tt)*] get_disk_number_by_name $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn get_disk_number_by_name(
                &self,
                request: Request<$v::GetDiskNumberByNameRequest>,
            ) -> Reply<$v::GetDiskNumberByNameResponse> {
                let request = request.into_inner();
                let found = self.host.run(|node| node.get_disk_number_by_name(&request.disk_name));
                reply(found.map(|n| {
                    $v::GetDiskNumberByNameResponse {
                        disk_number: n.to_string(),
                    }
                }))
            }
        ] $($rest)*);
    };

    // ListDiskIDs as text keys and an `identifiers` map with exactly the
    // keys `page83` and `serialNumber` (v1beta1, v1beta2).
    (@acc $v:ident [$($m:tt)*] list_disk_ids_map $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn list_disk_i_ds(
                &self,
                _request: Request<$v::ListDiskIDsRequest>,
            ) -> Reply<$v::ListDiskIDsResponse> {
                reply(self.host.run(|node| node.list_disk_ids()).map(|ids| $v::ListDiskIDsResponse {
                    disk_i_ds: ids
                        .into_iter()
                        .map(|(n, i)| {
                            let identifiers = [
                                ("page83".to_string(), i.page83),
                                ("serialNumber".to_string(), i.serial_number),
                            ]
                            .into_iter()
                            .collect();
                            (n.to_string(), $v::DiskIDs { identifiers })
                        })
                        .collect(),
                }))
            }
        ] $($rest)*);
    };

    // ListDiskIDs with u32 keys and `DiskIDs{page83, serial_number}` (v1beta3, v1).
    (@acc $v:ident [$($m:tt)*] list_disk_ids $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn list_disk_i_ds(
                &self,
                _request: Request<$v::ListDiskIDsRequest>,
            ) -> Reply<$v::ListDiskIDsResponse> {
                reply(self.host.run(|node| node.list_disk_ids()).map(|ids| $v::ListDiskIDsResponse {
                    disk_i_ds: ids
                        .into_iter()
                        .map(|(n, i)| {
                            (n, $v::DiskIDs { page83: i.page83, serial_number: i.serial_number })
                        })
                        .collect(),
                }))
            }
        ] $($rest)*);
    };

    // DiskStats{diskID: string} -> {diskSize} (v1beta1, v1beta2).
    (@acc $v:ident [$($m:tt)*] disk_stats_text $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn disk_stats(
                &self,
                request: Request<$v::DiskStatsRequest>,
            ) -> Reply<$v::DiskStatsResponse> {
                let request = request.into_inner();
                reply(
                    convert::disk_stats_id(&request.disk_id)
                        .and_then(|n| self.host.run(|node| node.get_disk_stats(n)))
                        .map(|disk_size| $v::DiskStatsResponse { disk_size }),
                )
            }
        ] $($rest)*);
    };

    // GetDiskStats{disk_number} -> {total_bytes} (v1beta3, v1).
    (@acc $v:ident [$($m:tt)*] get_disk_stats $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn get_disk_stats(
                &self,
                request: Request<$v::GetDiskStatsRequest>,
            ) -> Reply<$v::GetDiskStatsResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| node.get_disk_stats(request.disk_number))
                        .map(|total_bytes| $v::GetDiskStatsResponse { total_bytes }),
                )
            }
        ] $($rest)*);
    };

    // SetAttachState{diskID: string, isOnline} (v1beta2).
    (@acc $v:ident [$($m:tt)*] set_attach_state $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn set_attach_state(
                &self,
                request: Request<$v::SetAttachStateRequest>,
            ) -> Reply<$v::SetAttachStateResponse> {
                let request = request.into_inner();
                reply(
                    convert::set_attach_state_id(&request.disk_id)
                        .and_then(|n| {
                            self.host.run(|node| node.set_disk_state(n, request.is_online))
                        })
                        .map(|()| $v::SetAttachStateResponse {}),
                )
            }
        ] $($rest)*);
    };

    // GetAttachState{diskID: string} -> {isOnline} (v1beta2).
    (@acc $v:ident [$($m:tt)*] get_attach_state $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn get_attach_state(
                &self,
                request: Request<$v::GetAttachStateRequest>,
            ) -> Reply<$v::GetAttachStateResponse> {
                let request = request.into_inner();
                reply(
                    convert::get_attach_state_id(&request.disk_id)
                        .and_then(|n| self.host.run(|node| node.get_disk_state(n)))
                        .map(|is_online| $v::GetAttachStateResponse { is_online }),
                )
            }
        ] $($rest)*);
    };

    // SetDiskState{disk_number, is_online} (v1beta3, v1).
    (@acc $v:ident [$($m:tt)*] set_disk_state $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn set_disk_state(
                &self,
                request: Request<$v::SetDiskStateRequest>,
            ) -> Reply<$v::SetDiskStateResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| {
                        node.set_disk_state(request.disk_number, request.is_online)
                    })
                        .map(|()| $v::SetDiskStateResponse {}),
                )
            }
        ] $($rest)*);
    };

    // GetDiskState{disk_number} -> {is_online} (v1beta3, v1).
    (@acc $v:ident [$($m:tt)*] get_disk_state $($rest:ident)*) => {
        disk_service!(@acc $v [$($m)*
            async fn get_disk_state(
                &self,
                request: Request<$v::GetDiskStateRequest>,
            ) -> Reply<$v::GetDiskStateResponse> {
                let request = request.into_inner();
                reply(
                    self.host.run(|node| node.get_disk_state(request.disk_number))
                        .map(|is_online| $v::GetDiskStateResponse { is_online }),
                )
            }
        ] $($rest)*);
    };
}

disk_service!(v1alpha1:
    list_disk_locations_text partition_disk_text rescan get_disk_number_by_name);
disk_service!(v1beta1:
    list_disk_locations_text partition_disk_text rescan list_disk_ids_map disk_stats_text);
disk_service!(v1beta2:
    list_disk_locations_text partition_disk_text rescan list_disk_ids_map disk_stats_text
    set_attach_state get_attach_state);
disk_service!(v1beta3:
    list_disk_locations partition_disk rescan list_disk_ids get_disk_stats
    set_disk_state get_disk_state);
disk_service!(v1:
    list_disk_locations partition_disk rescan list_disk_ids get_disk_stats
    set_disk_state get_disk_state);

#[cfg(test)]
pub(super) mod tests;
