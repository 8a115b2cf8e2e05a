//! SMB group errors: bad input and credentials.

use csi_proxy_client::smb;

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
    let create_failed = |code: u32| {
        format!(
            "NewSmbGlobalMapping failed. err: WMI MSFT_SmbGlobalMapping.Create failed \
             (target=<nil>): code={code}"
        )
    };
    let not_mapped = r"error remove smb mapping '\\fileserver\share'. err: failed to query SMB global mapping by remote path \\fileserver\share: not found";
    unknown(new("", "smbuser", "x").await, "remote path is empty");
    unknown(
        new("hostname", "smbuser", "x").await,
        "remote path (hostname) is invalid",
    );
    unknown(
        new(r"\\fileserver\share", "smbuser", "wrong").await,
        &create_failed(1326),
    );
    // The network name cannot be found.
    unknown(
        new(r"\\fileserver\nosuchshare", "smbuser", "Sm8-Passw0rd!").await,
        &create_failed(67),
    );
    // The network path was not found.
    unknown(
        new(r"\\nosuchserver\share", "smbuser", "Sm8-Passw0rd!").await,
        &create_failed(53),
    );
    // The machine identity may not use a share that is not open to Everyone.
    unknown(new(r"\\fileserver\share", "", "").await, &create_failed(5));
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
