//! The SMB group's services (smb.md §2, §5): four versions over the node's
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
mod tests {
    use tonic::Code;

    use crate::host::smb::{DEFAULT_SMB_PASSWORD, MappingStatus};
    use crate::server::filesystem::tests::{
        K, assert_no_rpc_unimplemented, assert_status, fixture,
    };

    const ROOT: &str = r"\\fileserver\share";

    #[tokio::test]
    async fn no_smb_rpc_is_unimplemented() {
        let f = fixture();
        macro_rules! check {
            ($($v:ident),*) => {$(
                assert_no_rpc_unimplemented(
                    crate::smb::$v::smb_server::SmbServer::new(f.svc.clone()),
                    crate::smb::$v::SERVICE_NAME,
                    crate::smb::$v::RPCS,
                )
                .await;
            )*};
        }
        check!(v1alpha1, v1beta1, v1beta2, v1);
    }

    /// Per version: map with a local path, use the share through the link,
    /// remove; then the error cases of smb.md §3, §4.
    macro_rules! smb_flow {
        ($v:ident { $($resp:tt)* }) => {
            mod $v {
                use super::{
                    Code, DEFAULT_SMB_PASSWORD, K, MappingStatus, ROOT, assert_status, fixture,
                };
                use crate::smb::$v::smb_server::Smb;
                use crate::smb::$v::*;
                use tonic::Request;

                fn new_mapping(
                    remote: &str,
                    local: &str,
                    password: &str,
                ) -> Request<NewSmbGlobalMappingRequest> {
                    Request::new(NewSmbGlobalMappingRequest {
                        remote_path: remote.into(),
                        local_path: local.into(),
                        username: r"domain\smbuser".into(),
                        password: password.into(),
                    })
                }

                fn remove(remote: &str) -> Request<RemoveSmbGlobalMappingRequest> {
                    Request::new(RemoveSmbGlobalMappingRequest { remote_path: remote.into() })
                }

                #[tokio::test]
                async fn flow_asserts_responses_and_host_state() {
                    let f = fixture();
                    let (s, h) = (&f.svc, f.host());
                    let pods = format!(r"{K}\pods\p\volumes");
                    h.create_dir(&pods).unwrap();
                    let link = format!(r"{pods}\smb");
                    let r = s
                        .new_smb_global_mapping(new_mapping(
                            r"\\FileServer\Share\vol",
                            &link,
                            DEFAULT_SMB_PASSWORD,
                        ))
                        .await
                        .unwrap()
                        .into_inner();
                    assert_eq!(r, NewSmbGlobalMappingResponse { $($resp)* });
                    {
                        let node = h.lock();
                        let m = node.smb.mapping(ROOT).unwrap();
                        assert_eq!(m.status, MappingStatus::Ok);
                        assert!(m.require_privacy);
                    }
                    h.create_dir(r"\\fileserver\share\vol").unwrap();
                    h.write_file(&format!(r"{link}\hello.txt"), b"hello").unwrap();
                    assert_eq!(
                        h.read_file(r"\\FILESERVER\share\vol\hello.txt").unwrap(),
                        b"hello"
                    );
                    // Same root again without local path: idempotent.
                    s.new_smb_global_mapping(new_mapping(ROOT, "", DEFAULT_SMB_PASSWORD))
                        .await
                        .unwrap();
                    assert_eq!(h.lock().smb.mappings().len(), 1);

                    let r = s.remove_smb_global_mapping(remove(r"\\fileserver\share\other"))
                        .await
                        .unwrap()
                        .into_inner();
                    assert_eq!(r, RemoveSmbGlobalMappingResponse { $($resp)* });
                    assert!(h.lock().smb.mappings().is_empty());
                    assert!(h.exists(&link), "the link stays");
                    assert!(h.read_file(&format!(r"{link}\hello.txt")).is_err());
                    // Double remove.
                    assert_status(
                        s.remove_smb_global_mapping(remove(ROOT)).await,
                        Code::Unknown,
                        "error remove smb mapping '\\\\fileserver\\share'. err: failed to query \
                         SMB global mapping by remote path \\\\fileserver\\share: not found",
                    );
                    h.check_invariants().unwrap();
                }

                #[tokio::test]
                async fn errors() {
                    let f = fixture();
                    let (s, h) = (&f.svc, f.host());
                    assert_status(
                        s.new_smb_global_mapping(new_mapping("", "", "")).await,
                        Code::Unknown,
                        "remote path is empty",
                    );
                    assert_status(
                        s.new_smb_global_mapping(new_mapping("hostname", "", "")).await,
                        Code::Unknown,
                        "remote path (hostname) is invalid",
                    );
                    assert_status(
                        s.new_smb_global_mapping(new_mapping(ROOT, "", "wrong")).await,
                        Code::Unknown,
                        "NewSmbGlobalMapping failed. err: WMI MSFT_SmbGlobalMapping.Create \
                         failed (target=<nil>): code=1326",
                    );
                    assert!(h.lock().smb.mappings().is_empty());
                    // A local path outside the working dirs fails after the
                    // mapping was made; the mapping stays.
                    let evil = r"C:\var\lib\kubelet-evil\x";
                    assert_status(
                        s.new_smb_global_mapping(new_mapping(ROOT, evil, DEFAULT_SMB_PASSWORD)).await,
                        Code::Unknown,
                        &format!(r"path: {evil} is not within the working directories: [{K}]"),
                    );
                    assert!(h.lock().smb.is_mapped(ROOT));
                    assert!(!h.exists(evil));
                    let dotdot = format!(r"{K}\..\x");
                    assert_status(
                        s.new_smb_global_mapping(new_mapping(ROOT, &dotdot, DEFAULT_SMB_PASSWORD)).await,
                        Code::Unknown,
                        &format!("path contains invalid characters: {dotdot}"),
                    );
                    assert_status(
                        s.remove_smb_global_mapping(remove("")).await,
                        Code::Unknown,
                        "remote path is empty",
                    );
                    assert_status(
                        s.remove_smb_global_mapping(remove(r"\\fileserver\other")).await,
                        Code::Unknown,
                        "error remove smb mapping '\\\\fileserver\\other'. err: failed to query \
                         SMB global mapping by remote path \\\\fileserver\\other: not found",
                    );
                }
            }
        };
    }

    smb_flow!(v1alpha1 {
        error: String::new()
    });
    smb_flow!(v1beta1 {
        error: String::new()
    });
    smb_flow!(v1beta2 {});
    smb_flow!(v1 {});
}
