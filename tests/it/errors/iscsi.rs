//! iSCSI group errors: CHAP secrets, a missing target portal, the rest.

use csi_proxy_client::host::system::ServiceStatus;
use csi_proxy_client::iscsi;
use tonic::Code;

use crate::scenarios::*;

on_both_backends![
    iscsi_wrong_chap_secrets,
    iscsi_missing_target_portal_is_invalid_argument,
    iscsi_other_errors
];

const PLAIN: &str = "iqn.1991-05.com.microsoft:storage01-lun0-target";
const CHAP: &str = "iqn.1991-05.com.microsoft:storage01-chap-target";
const MUTUAL: &str = "iqn.1991-05.com.microsoft:storage01-mutual-target";

fn portal() -> Option<iscsi::v1alpha2::TargetPortal> {
    Some(iscsi::v1alpha2::TargetPortal {
        target_address: "10.0.0.20".into(),
        target_port: 3260,
    })
}

/// Starts MSiSCSI and registers the default portal (v1alpha2).
async fn iscsi_ready(node: &Node) {
    set_service_status(&node.host, "MSiSCSI", ServiceStatus::Running);
    ok(node
        .iscsi_v1alpha2
        .add_target_portal(iscsi::v1alpha2::AddTargetPortalRequest {
            target_portal: portal(),
        })
        .await);
}

fn connect_request(
    iqn: &str,
    auth: iscsi::v1alpha2::AuthenticationType,
    user: &str,
    secret: &str,
) -> iscsi::v1alpha2::ConnectTargetRequest {
    iscsi::v1alpha2::ConnectTargetRequest {
        target_portal: portal(),
        iqn: iqn.into(),
        auth_type: auth as i32,
        chap_username: user.into(),
        chap_secret: secret.into(),
    }
}

fn sessions(node: &Node) -> usize {
    node.host.lock().iscsi.sessions().len()
}

async fn iscsi_wrong_chap_secrets(node: &Node) {
    use iscsi::v1alpha2::AuthenticationType as Auth;
    iscsi_ready(node).await;
    let api = &node.iscsi_v1alpha2;
    let before = node.host.snapshot();
    let refused = "error connecting to target portal. err: WMI MSFT_iSCSITarget.Connect failed (target=<nil>): code=";
    for request in [
        connect_request(CHAP, Auth::OneWayChap, "someuser", "wrongsecret1"),
        connect_request(CHAP, Auth::OneWayChap, "otheruser", "verysecretpass"),
        // CHAP required but none offered.
        connect_request(CHAP, Auth::None, "", ""),
        // The right one-way secret, but the node's mutual secret is unset.
        connect_request(MUTUAL, Auth::MutualChap, "anotheruser", "averylongsecret"),
    ] {
        unknown(api.connect_target(request).await, refused);
    }
    // A wrong mutual secret.
    ok(api
        .set_mutual_chap_secret(iscsi::v1alpha2::SetMutualChapSecretRequest {
            mutual_chap_secret: "made-up-pass".into(),
        })
        .await);
    unknown(
        api.connect_target(connect_request(
            MUTUAL,
            Auth::MutualChap,
            "anotheruser",
            "averylongsecret",
        ))
        .await,
        refused,
    );
    // A secret Windows refuses (shorter than 12 bytes) leaves the old one.
    unknown(
        api.set_mutual_chap_secret(iscsi::v1alpha2::SetMutualChapSecretRequest {
            mutual_chap_secret: "short".into(),
        })
        .await,
        "error setting mutual chap secret",
    );
    assert_eq!(
        node.host.lock().iscsi.mutual_chap_secret(),
        Some("made-up-pass")
    );
    assert_eq!(sessions(node), 0);
    assert_eq!(node.host.snapshot(), before, "no disk appeared");

    // The right secret then works (v1alpha1 logs in the same way).
    ok(api
        .set_mutual_chap_secret(iscsi::v1alpha2::SetMutualChapSecretRequest {
            mutual_chap_secret: "reversssssssse".into(),
        })
        .await);
    ok(api
        .connect_target(connect_request(
            MUTUAL,
            Auth::MutualChap,
            "anotheruser",
            "averylongsecret",
        ))
        .await);
    assert_eq!(sessions(node), 1);
}

async fn iscsi_missing_target_portal_is_invalid_argument(node: &Node) {
    iscsi_ready(node).await;
    let gist = "target_portal is required";
    let invalid = Code::InvalidArgument;
    let a2 = &node.iscsi_v1alpha2;
    use iscsi::v1alpha2 as i;
    rpc_err(
        a2.add_target_portal(i::AddTargetPortalRequest {
            target_portal: None,
        })
        .await,
        invalid,
        gist,
    );
    rpc_err(
        a2.discover_target_portal(i::DiscoverTargetPortalRequest {
            target_portal: None,
        })
        .await,
        invalid,
        gist,
    );
    rpc_err(
        a2.remove_target_portal(i::RemoveTargetPortalRequest {
            target_portal: None,
        })
        .await,
        invalid,
        gist,
    );
    let mut connect = connect_request(PLAIN, i::AuthenticationType::None, "", "");
    connect.target_portal = None;
    rpc_err(a2.connect_target(connect).await, invalid, gist);
    rpc_err(
        a2.disconnect_target(i::DisconnectTargetRequest {
            target_portal: None,
            iqn: PLAIN.into(),
        })
        .await,
        invalid,
        gist,
    );
    rpc_err(
        a2.get_target_disks(i::GetTargetDisksRequest {
            target_portal: None,
            iqn: PLAIN.into(),
        })
        .await,
        invalid,
        gist,
    );
    // The same on v1alpha1.
    rpc_err(
        node.iscsi_v1alpha1
            .connect_target(iscsi::v1alpha1::ConnectTargetRequest {
                target_portal: None,
                iqn: PLAIN.into(),
                auth_type: 0,
                chap_username: String::new(),
                chap_secret: String::new(),
            })
            .await,
        invalid,
        gist,
    );
    // The portal registered before is still the only one.
    assert_eq!(node.host.lock().iscsi.portals().len(), 1);
    assert_eq!(sessions(node), 0);
}

async fn iscsi_other_errors(node: &Node) {
    use iscsi::v1alpha2 as i;
    let api = &node.iscsi_v1alpha2;
    // Every call fails while the initiator service is stopped.
    unknown(
        api.add_target_portal(i::AddTargetPortalRequest {
            target_portal: portal(),
        })
        .await,
        "error adding target portal at (10.0.0.20:3260). err: the Microsoft iSCSI Initiator Service (MSiSCSI) is not running",
    );
    assert!(node.host.lock().iscsi.portals().is_empty());
    set_service_status(&node.host, "MSiSCSI", ServiceStatus::Running);

    // Portal not registered: discover, connect and remove fail.
    let no_portal = "failed to query iSCSI target portal at (10.0.0.20:3260). error: not found";
    let message = unknown(
        api.discover_target_portal(i::DiscoverTargetPortalRequest {
            target_portal: portal(),
        })
        .await,
        no_portal,
    );
    assert_eq!(
        message,
        format!("error list targets by target portal at (10.0.0.20:3260). err: {no_portal}")
    );
    let message = unknown(
        api.connect_target(connect_request(PLAIN, i::AuthenticationType::None, "", ""))
            .await,
        no_portal,
    );
    assert_eq!(
        message,
        format!(
            "error query target {PLAIN} from target portal at (10.0.0.20:3260). err: {no_portal}"
        )
    );
    let message = unknown(
        api.remove_target_portal(i::RemoveTargetPortalRequest {
            target_portal: portal(),
        })
        .await,
        no_portal,
    );
    assert_eq!(
        message,
        format!("error query target portal at (10.0.0.20:3260). err: {no_portal}")
    );
    // An unreachable portal cannot be added.
    unknown(
        api.add_target_portal(i::AddTargetPortalRequest {
            target_portal: Some(i::TargetPortal {
                target_address: "10.0.0.99".into(),
                target_port: 3260,
            }),
        })
        .await,
        "error adding target portal at (10.0.0.99:3260)",
    );
    assert!(node.host.lock().iscsi.portals().is_empty());

    iscsi_ready(node).await;
    // An auth type outside the enum is refused before anything else.
    let mut bad = connect_request(PLAIN, i::AuthenticationType::None, "", "");
    bad.auth_type = 7;
    unknown(
        api.connect_target(bad).await,
        "invalid authentication type authType=7",
    );
    // An unknown IQN behind a known portal.
    let nope = "iqn.2000-01.com.example:nope";
    assert_eq!(
        unknown(
            api.get_target_disks(i::GetTargetDisksRequest {
                target_portal: portal(),
                iqn: nope.into(),
            })
            .await,
            nope,
        ),
        format!("error query target {nope} from target portal at (10.0.0.20:3260). err: not found")
    );
    // IQNs compare case-sensitively.
    unknown(
        api.connect_target(connect_request(
            &PLAIN.to_uppercase(),
            i::AuthenticationType::None,
            "",
            "",
        ))
        .await,
        "not found",
    );
    assert_eq!(sessions(node), 0);
    // Remove is not idempotent.
    let remove = || async {
        api.remove_target_portal(i::RemoveTargetPortalRequest {
            target_portal: portal(),
        })
        .await
    };
    ok(remove().await);
    unknown(
        remove().await,
        &format!("error query target portal at (10.0.0.20:3260). err: {no_portal}"),
    );
}
