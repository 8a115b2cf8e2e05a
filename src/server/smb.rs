//! The SMB group's services: four versions over the node's
//! SMB model.
//!
//! All versions have the same requests; v1alpha1/v1beta1 responses carry a
//! legacy `error` field that is always empty (a failure is a status), v1beta2
//! and v1 responses are empty.

use tonic::Request;

use super::{ProxyService, Reply, reply};
use crate::host::smb::NewSmbGlobalMappingRequest;
use crate::smb::{v1, v1alpha1, v1beta1, v1beta2};

/// `smb_service!(<version>: <rpc> <rpc> ...)` implements the version's `Smb`
/// trait with one method per RPC shape (a tt-muncher, as for every group).
/// Responses are built with `..Default::default()`, which leaves the legacy
/// `error` field of v1alpha1/v1beta1 empty and is a no-op elsewhere.
macro_rules! smb_service {
    ($v:ident: $($shape:ident)+) => {
        impl From<$v::NewSmbGlobalMappingRequest> for NewSmbGlobalMappingRequest {
            fn from(r: $v::NewSmbGlobalMappingRequest) -> Self {
                Self {
                    remote_path: r.remote_path,
                    local_path: r.local_path,
                    username: r.username,
                    password: r.password,
                }
            }
        }

        smb_service!(@acc $v [] $($shape)+);
    };

    (@acc $v:ident [$($methods:tt)*]) => {
        #[tonic::async_trait]
        impl $v::smb_server::Smb for ProxyService {
            $($methods)*
        }
    };

    // Maps on the node: the mapping, then the local link (a node-wide RPC).
    (@acc $v:ident [$($m:tt)*] new_smb_global_mapping $($rest:ident)*) => {
        smb_service!(@acc $v [$($m)*
            #[allow(clippy::needless_update)]
            async fn new_smb_global_mapping(
                &self,
                request: Request<$v::NewSmbGlobalMappingRequest>,
            ) -> Reply<$v::NewSmbGlobalMappingResponse> {
                let r = NewSmbGlobalMappingRequest::from(request.into_inner());
                reply(
                    self.host
                        .run(|node| node.new_smb_global_mapping(&r))
                        .map(|()| $v::NewSmbGlobalMappingResponse { ..Default::default() }),
                )
            }
        ] $($rest)*);
    };

    (@acc $v:ident [$($m:tt)*] remove_smb_global_mapping $($rest:ident)*) => {
        smb_service!(@acc $v [$($m)*
            #[allow(clippy::needless_update)]
            async fn remove_smb_global_mapping(
                &self,
                request: Request<$v::RemoveSmbGlobalMappingRequest>,
            ) -> Reply<$v::RemoveSmbGlobalMappingResponse> {
                let r = request.into_inner();
                reply(
                    self.host
                        .run(|node| node.smb.remove_smb_global_mapping(&r.remote_path))
                        .map(|()| $v::RemoveSmbGlobalMappingResponse { ..Default::default() }),
                )
            }
        ] $($rest)*);
    };
}

smb_service!(v1alpha1: new_smb_global_mapping remove_smb_global_mapping);
smb_service!(v1beta1: new_smb_global_mapping remove_smb_global_mapping);
smb_service!(v1beta2: new_smb_global_mapping remove_smb_global_mapping);
smb_service!(v1: new_smb_global_mapping remove_smb_global_mapping);

#[cfg(test)]
mod tests;
