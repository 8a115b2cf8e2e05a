use tonic::Code;

use crate::host::smb::{DEFAULT_SMB_PASSWORD, MappingStatus};
use crate::server::filesystem::tests::{K, assert_status, fixture};

const ROOT: &str = r"\\fileserver\share";

/// Per version: map with a local path, use the share through the link,
/// remove; then the group's error cases.
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
                        "error remove smb mapping '\\\\fileserver\\share'. err: Not Found",
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
                        "NewSmbGlobalMapping failed. result: -1, err: Exception occurred. \
                         (The user name or password is incorrect. )",
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
                        "error remove smb mapping '\\\\fileserver\\other'. err: Not Found",
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
