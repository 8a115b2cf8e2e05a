//! The iSCSI group's services: v1alpha1 and v1alpha2 over
//! the node's iSCSI model.
//!
//! Both versions have the same messages; v1alpha2 adds
//! `SetMutualChapSecret` (on v1alpha1 the generated stub answers
//! `UNIMPLEMENTED`, as upstream). Every shape converts field-for-field:
//! the auth type stays its wire number (the host rejects numbers outside
//! 0..=2 with upstream's text), port 0 becomes 3260 in the host, and a
//! request without `target_portal` is `INVALID_ARGUMENT`
//! (`target_portal is required`) where upstream's process crashes.

use tonic::Request;

use super::{ProxyService, Reply, reply};
use crate::host::iscsi::{ConnectTargetRequest, IscsiApiVersion, TargetPortal, TargetRequest};
use crate::iscsi::{v1alpha1, v1alpha2};

/// `iscsi_service!(<version> (<host API version>): <rpc> <rpc> ...)`
/// implements the version's `Iscsi` trait with one method per RPC shape (a
/// tt-muncher, as for every group). Every RPC runs the iSCSI model with the
/// node's disks ([`HostState::iscsi`](crate::host::HostState::iscsi)).
macro_rules! iscsi_service {
    ($v:ident ($api:path): $($shape:ident)+) => {
        impl From<$v::TargetPortal> for TargetPortal {
            fn from(p: $v::TargetPortal) -> Self {
                Self {
                    target_address: p.target_address,
                    target_port: p.target_port,
                }
            }
        }

        impl From<TargetPortal> for $v::TargetPortal {
            fn from(p: TargetPortal) -> Self {
                Self {
                    target_address: p.target_address,
                    target_port: p.target_port,
                }
            }
        }

        impl From<$v::ConnectTargetRequest> for ConnectTargetRequest {
            fn from(r: $v::ConnectTargetRequest) -> Self {
                Self {
                    target_portal: r.target_portal.map(Into::into),
                    iqn: r.iqn,
                    auth_type: r.auth_type,
                    chap_username: r.chap_username,
                    chap_secret: r.chap_secret,
                }
            }
        }

        impl From<$v::DisconnectTargetRequest> for TargetRequest {
            fn from(r: $v::DisconnectTargetRequest) -> Self {
                Self {
                    target_portal: r.target_portal.map(Into::into),
                    iqn: r.iqn,
                }
            }
        }

        impl From<$v::GetTargetDisksRequest> for TargetRequest {
            fn from(r: $v::GetTargetDisksRequest) -> Self {
                Self {
                    target_portal: r.target_portal.map(Into::into),
                    iqn: r.iqn,
                }
            }
        }

        iscsi_service!(@acc $v $api [] $($shape)+);
    };

    (@acc $v:ident $api:path [$($methods:tt)*]) => {
        #[tonic::async_trait]
        impl $v::iscsi_server::Iscsi for ProxyService {
            $($methods)*
        }
    };

    (@acc $v:ident $api:path [$($m:tt)*] add_target_portal $($rest:ident)*) => {
        iscsi_service!(@acc $v $api [$($m)*
            async fn add_target_portal(
                &self,
                request: Request<$v::AddTargetPortalRequest>,
            ) -> Reply<$v::AddTargetPortalResponse> {
                let portal = request.into_inner().target_portal.map(TargetPortal::from);
                reply(
                    self.host
                        .run(|node| node.iscsi(|iscsi, disks| iscsi.add_target_portal(disks, portal.as_ref())))
                        .map(|()| $v::AddTargetPortalResponse {}),
                )
            }
        ] $($rest)*);
    };

    (@acc $v:ident $api:path [$($m:tt)*] discover_target_portal $($rest:ident)*) => {
        iscsi_service!(@acc $v $api [$($m)*
            async fn discover_target_portal(
                &self,
                request: Request<$v::DiscoverTargetPortalRequest>,
            ) -> Reply<$v::DiscoverTargetPortalResponse> {
                let portal = request.into_inner().target_portal.map(TargetPortal::from);
                reply(
                    self.host
                        .run(|node| node.iscsi(|iscsi, disks| iscsi.discover_target_portal(disks, portal.as_ref())))
                        .map(|iqns| $v::DiscoverTargetPortalResponse { iqns }),
                )
            }
        ] $($rest)*);
    };

    (@acc $v:ident $api:path [$($m:tt)*] remove_target_portal $($rest:ident)*) => {
        iscsi_service!(@acc $v $api [$($m)*
            async fn remove_target_portal(
                &self,
                request: Request<$v::RemoveTargetPortalRequest>,
            ) -> Reply<$v::RemoveTargetPortalResponse> {
                let portal = request.into_inner().target_portal.map(TargetPortal::from);
                reply(
                    self.host
                        .run(|node| node.iscsi(|iscsi, disks| iscsi.remove_target_portal(disks, portal.as_ref())))
                        .map(|()| $v::RemoveTargetPortalResponse {}),
                )
            }
        ] $($rest)*);
    };

    (@acc $v:ident $api:path [$($m:tt)*] list_target_portals $($rest:ident)*) => {
        iscsi_service!(@acc $v $api [$($m)*
            async fn list_target_portals(
                &self,
                _request: Request<$v::ListTargetPortalsRequest>,
            ) -> Reply<$v::ListTargetPortalsResponse> {
                reply(
                    self.host
                        .run(|node| node.iscsi(|iscsi, disks| iscsi.list_target_portals(disks)))
                        .map(|portals| $v::ListTargetPortalsResponse {
                            target_portals: portals.into_iter().map(Into::into).collect(),
                        }),
                )
            }
        ] $($rest)*);
    };

    (@acc $v:ident $api:path [$($m:tt)*] connect_target $($rest:ident)*) => {
        iscsi_service!(@acc $v $api [$($m)*
            async fn connect_target(
                &self,
                request: Request<$v::ConnectTargetRequest>,
            ) -> Reply<$v::ConnectTargetResponse> {
                let r = ConnectTargetRequest::from(request.into_inner());
                reply(
                    self.host
                        .run(|node| node.iscsi(|iscsi, disks| iscsi.connect_target(disks, &r)))
                        .map(|()| $v::ConnectTargetResponse {}),
                )
            }
        ] $($rest)*);
    };

    (@acc $v:ident $api:path [$($m:tt)*] disconnect_target $($rest:ident)*) => {
        iscsi_service!(@acc $v $api [$($m)*
            async fn disconnect_target(
                &self,
                request: Request<$v::DisconnectTargetRequest>,
            ) -> Reply<$v::DisconnectTargetResponse> {
                let r = TargetRequest::from(request.into_inner());
                reply(
                    self.host
                        .run(|node| node.iscsi(|iscsi, disks| iscsi.disconnect_target(disks, &r)))
                        .map(|()| $v::DisconnectTargetResponse {}),
                )
            }
        ] $($rest)*);
    };

    (@acc $v:ident $api:path [$($m:tt)*] get_target_disks $($rest:ident)*) => {
        iscsi_service!(@acc $v $api [$($m)*
            async fn get_target_disks(
                &self,
                request: Request<$v::GetTargetDisksRequest>,
            ) -> Reply<$v::GetTargetDisksResponse> {
                let r = TargetRequest::from(request.into_inner());
                reply(
                    self.host
                        .run(|node| node.iscsi(|iscsi, disks| iscsi.get_target_disks(disks, &r)))
                        .map(|disk_i_ds| $v::GetTargetDisksResponse { disk_i_ds }),
                )
            }
        ] $($rest)*);
    };

    (@acc $v:ident $api:path [$($m:tt)*] set_mutual_chap_secret $($rest:ident)*) => {
        iscsi_service!(@acc $v $api [$($m)*
            async fn set_mutual_chap_secret(
                &self,
                request: Request<$v::SetMutualChapSecretRequest>,
            ) -> Reply<$v::SetMutualChapSecretResponse> {
                let secret = request.into_inner().mutual_chap_secret;
                reply(
                    self.host
                        .run(|node| node.iscsi(|iscsi, disks| iscsi.set_mutual_chap_secret(disks, &secret, $api)))
                        .map(|()| $v::SetMutualChapSecretResponse {}),
                )
            }
        ] $($rest)*);
    };
}

iscsi_service!(v1alpha1 (IscsiApiVersion::V1alpha1):
    add_target_portal discover_target_portal remove_target_portal list_target_portals
    connect_target disconnect_target get_target_disks);
iscsi_service!(v1alpha2 (IscsiApiVersion::V1alpha2):
    add_target_portal discover_target_portal remove_target_portal list_target_portals
    connect_target disconnect_target get_target_disks set_mutual_chap_secret);

#[cfg(test)]
mod tests;
