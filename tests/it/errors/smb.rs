//! SMB group errors: bad input and credentials.

use csi_proxy_client::host::ProxyRelease;
use csi_proxy_client::host::smb::MappingStatus;
use csi_proxy_client::{ErrorKind, smb};

use crate::scenarios::*;

on_both_backends![smb_bad_input_and_credentials];

async fn smb_bad_input_and_credentials(node: &Node) {
    use smb::v1 as s;
    let api = &node.smb_v1;
    let new = |remote: &str, user: &str, password: &str| {
        let request = s::NewSmbGlobalMappingRequest {
            remote_path: remote.into(),
            local_path: String::new(),
            username: user.into(),
            password: password.into(),
        };
        async move { api.new_smb_global_mapping(request).await }
    };
    // csi-proxy v1.3: the WMI method raised an exception carrying
    // Windows' message.
    let create_failed = |windows: &str| {
        format!("NewSmbGlobalMapping failed. result: -1, err: Exception occurred. ({windows} )")
    };
    let not_mapped = r"error remove smb mapping '\\fileserver\share'. err: Not Found";
    unknown(new("", "smbuser", "x").await, "remote path is empty");
    unknown(
        new("hostname", "smbuser", "x").await,
        "remote path (hostname) is invalid",
    );
    unknown(
        new(r"\\fileserver\share", "smbuser", "wrong").await,
        &create_failed("The user name or password is incorrect."),
    );
    // The network name cannot be found.
    unknown(
        new(r"\\fileserver\nosuchshare", "smbuser", "Sm8-Passw0rd!").await,
        &create_failed("The network name cannot be found."),
    );
    // The network path was not found.
    unknown(
        new(r"\\nosuchserver\share", "smbuser", "Sm8-Passw0rd!").await,
        &create_failed("The network path was not found."),
    );
    // The machine identity may not use a share that is not open to Everyone.
    unknown(
        new(r"\\fileserver\share", "", "").await,
        &create_failed("Access is denied."),
    );
    assert!(smb_roots(&node.host).is_empty());

    unknown(
        api.remove_smb_global_mapping(s::RemoveSmbGlobalMappingRequest {
            remote_path: r"\\fileserver\share\pv".into(),
        })
        .await,
        not_mapped,
    );
    // Remove is not idempotent.
    ok(new(r"\\fileserver\share", "smbuser", "Sm8-Passw0rd!").await);
    let remove = || async {
        api.remove_smb_global_mapping(s::RemoveSmbGlobalMappingRequest {
            remote_path: r"\\fileserver\share".into(),
        })
        .await
    };
    ok(remove().await);
    unknown(remove().await, not_mapped);

    // A local path that already exists: the mapping is made, the link not.
    let local = format!(r"{KUBELET}\pods\taken");
    node.host.create_dir(&local).expect("mkdir");
    unknown(
        api.new_smb_global_mapping(s::NewSmbGlobalMappingRequest {
            remote_path: r"\\fileserver\share\x".into(),
            local_path: local.clone(),
            username: "smbuser".into(),
            password: "Sm8-Passw0rd!".into(),
        })
        .await,
        &format!(
            "creating link {local} to {remote} failed with error: \
             error linking {remote}\\ to {local}. err: ",
            remote = r"\\fileserver\share\x"
        ),
    );
    assert_eq!(entry(&node.host, &local), Some(Entry::Dir));
    assert_eq!(smb_roots(&node.host), [r"\\fileserver\share"]);
}

/// The SMB failures the node layer decides on, in each release's words
/// (`MockHostBuilder::proxy_release`, `HostConfig::release`), with the kind
/// and code they must read as.
#[tokio::test]
async fn smb_failures_in_each_release() {
    use smb::v1 as s;
    let v1_1_conflict = "FullyQualifiedErrorId : Windows System Error 1219,New-SmbGlobalMapping";
    // Go's %q of PowerShell's record doubles the backslashes.
    let v1_1_gone = r#"UnmountSmbShare failed. output: "Remove-SmbGlobalMapping : No MSFT_SmbGlobalMapping objects found with property 'RemotePath' equal to '\\\\fileserver\\share'."#;
    for release in ProxyRelease::ALL {
        for node in [
            Node::mock_speaking(release).await,
            Node::server_speaking(release).await,
        ] {
            let at = format!("{release} on {}", node.backend_name());
            let api = &node.smb_v1;
            let map = |user: &str, password: &str| {
                api.new_smb_global_mapping(s::NewSmbGlobalMappingRequest {
                    remote_path: r"\\fileserver\share".into(),
                    local_path: String::new(),
                    username: user.into(),
                    password: password.into(),
                })
            };
            let remove = || {
                api.remove_smb_global_mapping(s::RemoveSmbGlobalMappingRequest {
                    remote_path: r"\\fileserver\share".into(),
                })
            };
            let e = remove().await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotFound, "{at}: {e}");
            let gone = match release {
                ProxyRelease::V1_1 => v1_1_gone,
                _ => r"error remove smb mapping '\\fileserver\share'. err: Not Found",
            };
            assert!(e.to_string().contains(gone), "{at}: {e}");

            let e = map("smbuser", "wrong").await.unwrap_err();
            assert_eq!(e.windows_code(), Some(1326), "{at}: {e}");
            assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{at}: {e}");

            ok(map("smbuser", "Sm8-Passw0rd!").await);
            node.host
                .lock()
                .smb
                .set_mapping_status(r"\\fileserver\share", MappingStatus::Disconnected)
                .expect("status");
            let e = map("other", "0ther-Passw0rd!").await.unwrap_err();
            assert_eq!(e.windows_code(), Some(1219), "{at}: {e}");
            assert_eq!(e.kind(), ErrorKind::CredentialsConflict, "{at}: {e}");
            let conflict = match release {
                ProxyRelease::V1_1 => v1_1_conflict,
                _ => {
                    "NewSmbGlobalMapping failed. result: -1, err: Exception occurred. (Multiple connections"
                }
            };
            assert!(e.to_string().contains(conflict), "{at}: {e}");
            node.finish().await;
        }
    }
}
