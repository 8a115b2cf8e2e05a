//! Methods an endpoint lacks: `UNIMPLEMENTED`, nothing changed.

use csi_proxy_client::host::system::ServiceStatus;
use csi_proxy_client::{disk, filesystem, iscsi, volume};
use tonic::Code;

use crate::scenarios::*;

on_both_backends![methods_an_endpoint_lacks_are_unimplemented];

async fn methods_an_endpoint_lacks_are_unimplemented(node: &Node) {
    // SetMutualChapSecret does not exist on iscsi v1alpha1.
    status_err(
        node.call_raw::<_, iscsi::v1alpha2::SetMutualChapSecretResponse>(
            "iscsi",
            "v1alpha1",
            "/v1alpha1.Iscsi/SetMutualChapSecret",
            iscsi::v1alpha2::SetMutualChapSecretRequest {
                mutual_chap_secret: "reversssssssse".into(),
            },
        )
        .await,
        Code::Unimplemented,
        "",
    );
    // RmdirContents does not exist on filesystem v1.
    let dir = format!(r"{KUBELET}\pods\keep");
    node.host
        .create_dir(&format!(r"{dir}\child"))
        .expect("mkdir");
    status_err(
        node.call_raw::<_, filesystem::v2alpha1::RmdirContentsResponse>(
            "filesystem",
            "v1",
            "/v1.Filesystem/RmdirContents",
            filesystem::v2alpha1::RmdirContentsRequest { path: dir.clone() },
        )
        .await,
        Code::Unimplemented,
        "",
    );
    assert_eq!(node.host.list_dir(&dir).expect("list"), ["child"]);
    // GetDiskNumberByName exists on disk v1alpha1 only.
    status_err(
        node.call_raw::<_, disk::v1alpha1::GetDiskNumberByNameResponse>(
            "disk",
            "v1",
            "/v1.Disk/GetDiskNumberByName",
            disk::v1alpha1::GetDiskNumberByNameRequest {
                disk_name: String::new(),
            },
        )
        .await,
        Code::Unimplemented,
        "",
    );
    // Another version's service on an endpoint: unknown service.
    status_err(
        node.call_raw::<_, volume::v2alpha1::GetClosestVolumeIdFromTargetPathResponse>(
            "volume",
            "v1",
            "/v2alpha1.Volume/GetClosestVolumeIDFromTargetPath",
            volume::v2alpha1::GetClosestVolumeIdFromTargetPathRequest {
                target_path: KUBELET.into(),
            },
        )
        .await,
        Code::Unimplemented,
        "",
    );
    // The endpoint still serves its own methods.
    let exists = node
        .call_raw::<_, filesystem::v1::PathExistsResponse>(
            "filesystem",
            "v1",
            "/v1.Filesystem/PathExists",
            filesystem::v1::PathExistsRequest { path: dir.clone() },
        )
        .await
        .expect("PathExists on v1");
    assert!(exists.exists);
}

/// The typed client of a newer version on an older version's socket: the
/// server answers `UNIMPLEMENTED` and nothing changes (server only: the
/// mock has no sockets).
#[tokio::test]
async fn typed_clients_of_another_version_get_unimplemented() {
    let node = Node::server().await;
    set_service_status(&node.host, "MSiSCSI", ServiceStatus::Running);
    let iscsi_v1alpha1 = node.socket("iscsi", "v1alpha1").expect("socket");
    let client = iscsi::v1alpha2::Client::connect(&iscsi_v1alpha1)
        .await
        .expect("connect");
    rpc_err(
        iscsi::v1alpha2::IscsiApi::set_mutual_chap_secret(
            &client,
            iscsi::v1alpha2::SetMutualChapSecretRequest {
                mutual_chap_secret: "reversssssssse".into(),
            },
        )
        .await,
        Code::Unimplemented,
        "",
    );
    assert_eq!(node.host.lock().iscsi.mutual_chap_secret(), None);

    let filesystem_v1 = node.socket("filesystem", "v1").expect("socket");
    let client = filesystem::v2alpha1::Client::connect(&filesystem_v1)
        .await
        .expect("connect");
    let dir = format!(r"{KUBELET}\pods\keep");
    node.host
        .create_dir(&format!(r"{dir}\child"))
        .expect("mkdir");
    rpc_err(
        filesystem::v2alpha1::FilesystemApi::rmdir_contents(
            &client,
            filesystem::v2alpha1::RmdirContentsRequest { path: dir.clone() },
        )
        .await,
        Code::Unimplemented,
        "",
    );
    assert_eq!(node.host.list_dir(&dir).expect("list"), ["child"]);
    drop(client);
    node.finish().await;
}
