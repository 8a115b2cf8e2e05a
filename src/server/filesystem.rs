//! The filesystem group's services: five versions
//! over the node's namespace.
//!
//! Two message families:
//! - legacy (v1alpha1, v1beta1): `LinkPath` and
//!   `IsMountPoint` are `CreateSymlink` and `IsSymlink`; the `context` field
//!   of requests is ignored (any value, also undefined enum numbers); the
//!   `error` field of responses is always empty (a failure is a status).
//! - current (v1beta2, v1, v2alpha1): field-for-field;
//!   v2alpha1 adds `RmdirContents`.

use tonic::Request;

use super::{ProxyService, Reply, reply};
use crate::filesystem::{v1, v1alpha1, v1beta1, v1beta2, v2alpha1};

/// `filesystem_service!(<version>: <rpc> <rpc> ...)` implements the
/// version's `Filesystem` trait with one method per RPC shape (a
/// tt-muncher, as for every group).
macro_rules! filesystem_service {
    ($v:ident: $($shape:ident)+) => {
        filesystem_service!(@acc $v [] $($shape)+);
    };

    (@acc $v:ident [$($methods:tt)*]) => {
        #[tonic::async_trait]
        impl $v::filesystem_server::Filesystem for ProxyService {
            $($methods)*
        }
    };

    // `..Default::default()` leaves the legacy `error` field empty (v1alpha1,
    // v1beta1) and is a no-op elsewhere.
    (@acc $v:ident [$($m:tt)*] path_exists $($rest:ident)*) => {
        filesystem_service!(@acc $v [$($m)*
            #[allow(clippy::needless_update)]
            async fn path_exists(
                &self,
                request: Request<$v::PathExistsRequest>,
            ) -> Reply<$v::PathExistsResponse> {
                let r = request.into_inner();
                reply(
                    self.host
                        .run(|node| node.path_exists(&r.path))
                        .map(|exists| $v::PathExistsResponse { exists, ..Default::default() }),
                )
            }
        ] $($rest)*);
    };

    (@acc $v:ident [$($m:tt)*] mkdir $($rest:ident)*) => {
        filesystem_service!(@acc $v [$($m)*
            async fn mkdir(
                &self,
                request: Request<$v::MkdirRequest>,
            ) -> Reply<$v::MkdirResponse> {
                let r = request.into_inner();
                reply(
                    self.host
                        .run(|node| node.mkdir(&r.path))
                        .map(|()| $v::MkdirResponse::default()),
                )
            }
        ] $($rest)*);
    };

    (@acc $v:ident [$($m:tt)*] rmdir $($rest:ident)*) => {
        filesystem_service!(@acc $v [$($m)*
            async fn rmdir(
                &self,
                request: Request<$v::RmdirRequest>,
            ) -> Reply<$v::RmdirResponse> {
                let r = request.into_inner();
                reply(
                    self.host
                        .run(|node| node.rmdir(&r.path, r.force))
                        .map(|()| $v::RmdirResponse::default()),
                )
            }
        ] $($rest)*);
    };

    (@acc $v:ident [$($m:tt)*] rmdir_contents $($rest:ident)*) => {
        filesystem_service!(@acc $v [$($m)*
            async fn rmdir_contents(
                &self,
                request: Request<$v::RmdirContentsRequest>,
            ) -> Reply<$v::RmdirContentsResponse> {
                let r = request.into_inner();
                reply(
                    self.host
                        .run(|node| node.rmdir_contents(&r.path))
                        .map(|()| $v::RmdirContentsResponse::default()),
                )
            }
        ] $($rest)*);
    };

    (@acc $v:ident [$($m:tt)*] create_symlink $($rest:ident)*) => {
        filesystem_service!(@acc $v [$($m)*
            async fn create_symlink(
                &self,
                request: Request<$v::CreateSymlinkRequest>,
            ) -> Reply<$v::CreateSymlinkResponse> {
                let r = request.into_inner();
                reply(
                    self.host
                        .run(|node| node.create_symlink(&r.source_path, &r.target_path))
                        .map(|()| $v::CreateSymlinkResponse::default()),
                )
            }
        ] $($rest)*);
    };

    (@acc $v:ident [$($m:tt)*] is_symlink $($rest:ident)*) => {
        filesystem_service!(@acc $v [$($m)*
            async fn is_symlink(
                &self,
                request: Request<$v::IsSymlinkRequest>,
            ) -> Reply<$v::IsSymlinkResponse> {
                let r = request.into_inner();
                reply(
                    self.host
                        .run(|node| node.is_symlink(&r.path))
                        .map(|is_symlink| $v::IsSymlinkResponse { is_symlink }),
                )
            }
        ] $($rest)*);
    };

    // LinkPath (v1alpha1, v1beta1) is CreateSymlink.
    (@acc $v:ident [$($m:tt)*] link_path $($rest:ident)*) => {
        filesystem_service!(@acc $v [$($m)*
            async fn link_path(
                &self,
                request: Request<$v::LinkPathRequest>,
            ) -> Reply<$v::LinkPathResponse> {
                let r = request.into_inner();
                reply(
                    self.host
                        .run(|node| node.create_symlink(&r.source_path, &r.target_path))
                        .map(|()| $v::LinkPathResponse::default()),
                )
            }
        ] $($rest)*);
    };

    // IsMountPoint (v1alpha1, v1beta1) is IsSymlink.
    (@acc $v:ident [$($m:tt)*] is_mount_point $($rest:ident)*) => {
        filesystem_service!(@acc $v [$($m)*
            #[allow(clippy::needless_update)]
            async fn is_mount_point(
                &self,
                request: Request<$v::IsMountPointRequest>,
            ) -> Reply<$v::IsMountPointResponse> {
                let r = request.into_inner();
                reply(
                    self.host
                        .run(|node| node.is_symlink(&r.path))
                        .map(|is_mount_point| $v::IsMountPointResponse { is_mount_point, ..Default::default() }),
                )
            }
        ] $($rest)*);
    };
}

filesystem_service!(v1alpha1: path_exists mkdir rmdir link_path is_mount_point);
filesystem_service!(v1beta1: path_exists mkdir rmdir link_path is_mount_point);
filesystem_service!(v1beta2: path_exists mkdir rmdir create_symlink is_symlink);
filesystem_service!(v1: path_exists mkdir rmdir create_symlink is_symlink);
filesystem_service!(v2alpha1: path_exists mkdir rmdir create_symlink is_symlink rmdir_contents);

#[cfg(test)]
pub(crate) mod tests;
