use tonic::Code;

use crate::host::iscsi::{ERROR_INVALID_PARAMETER, ISDSC_AUTHENTICATION_FAILURE};
use crate::host::system::ServiceStatus;
use crate::server::filesystem::tests::{Fixture, fixture};

const ADDR: &str = "10.0.0.20";
const LUN0: &str = "iqn.1991-05.com.microsoft:storage01-lun0-target";
const CHAP: &str = "iqn.1991-05.com.microsoft:storage01-chap-target";
const MUTUAL: &str = "iqn.1991-05.com.microsoft:storage01-mutual-target";

/// A default node with `MSiSCSI` running.
fn running() -> Fixture {
    let f = fixture();
    f.host()
        .lock()
        .system
        .set_status("MSiSCSI", ServiceStatus::Running)
        .unwrap();
    f
}

fn connect_failed(code: u32) -> String {
    format!(
        "error connecting to target portal. err: WMI MSFT_iSCSITarget.Connect failed \
             (target=<nil>): code={code}"
    )
}

#[tokio::test]
async fn set_mutual_chap_secret_is_unimplemented_on_v1alpha1() {
    use tower::ServiceExt;
    let f = running();
    let request = http::Request::builder()
        .method("POST")
        .uri("/v1alpha1.Iscsi/SetMutualChapSecret")
        .header("content-type", "application/grpc")
        .body("\0\0\0\0\0".to_string())
        .unwrap();
    let response = crate::iscsi::v1alpha1::iscsi_server::IscsiServer::new(f.svc.clone())
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.headers()["grpc-status"], "12");
    assert!(f.host().lock().iscsi.mutual_chap_secret().is_none());
}

/// Per version: the upstream portal, discovery, connect and disk flows,
/// then the group's error cases.
macro_rules! iscsi_flow {
    ($v:ident) => {
        mod $v {
            use super::*;
            use crate::iscsi::$v::iscsi_server::Iscsi;
            use crate::iscsi::$v::*;
            use tonic::Request;

            fn portal(port: u32) -> Option<TargetPortal> {
                Some(TargetPortal {
                    target_address: ADDR.into(),
                    target_port: port,
                })
            }

            fn connect(
                iqn: &str,
                auth: AuthenticationType,
                user: &str,
                secret: &str,
            ) -> Request<ConnectTargetRequest> {
                Request::new(ConnectTargetRequest {
                    target_portal: portal(0),
                    iqn: iqn.into(),
                    auth_type: auth.into(),
                    chap_username: user.into(),
                    chap_secret: secret.into(),
                })
            }

            fn disks(iqn: &str) -> Request<GetTargetDisksRequest> {
                Request::new(GetTargetDisksRequest {
                    target_portal: portal(3260),
                    iqn: iqn.into(),
                })
            }

            fn disconnect(iqn: &str) -> Request<DisconnectTargetRequest> {
                Request::new(DisconnectTargetRequest {
                    target_portal: portal(0),
                    iqn: iqn.into(),
                })
            }

            #[tokio::test]
            async fn portals_list_add_remove_with_port_0_and_3260() {
                let f = running();
                let s = &f.svc;
                for port in [3260, 0] {
                    let list = || s.list_target_portals(Request::new(ListTargetPortalsRequest {}));
                    assert!(list().await.unwrap().into_inner().target_portals.is_empty());
                    let r = s
                        .add_target_portal(Request::new(AddTargetPortalRequest {
                            target_portal: portal(port),
                        }))
                        .await
                        .unwrap()
                        .into_inner();
                    assert_eq!(r, AddTargetPortalResponse {});
                    // Idempotent.
                    s.add_target_portal(Request::new(AddTargetPortalRequest {
                        target_portal: portal(port),
                    }))
                    .await
                    .unwrap();
                    assert_eq!(
                        list().await.unwrap().into_inner(),
                        ListTargetPortalsResponse {
                            target_portals: vec![TargetPortal {
                                target_address: ADDR.into(),
                                target_port: 3260
                            }],
                        }
                    );
                    assert_eq!(f.host().lock().iscsi.portals().len(), 1);
                    let r = s
                        .remove_target_portal(Request::new(RemoveTargetPortalRequest {
                            target_portal: portal(port),
                        }))
                        .await
                        .unwrap()
                        .into_inner();
                    assert_eq!(r, RemoveTargetPortalResponse {});
                    assert!(f.host().lock().iscsi.portals().is_empty());
                    // Not idempotent.
                    assert!(
                        s.remove_target_portal(Request::new(RemoveTargetPortalRequest {
                            target_portal: portal(port)
                        }))
                        .await
                        .is_err()
                    );
                }
            }

            #[tokio::test]
            async fn discover_connect_disks_disconnect() {
                let f = running();
                let (s, h) = (&f.svc, f.host());
                s.add_target_portal(Request::new(AddTargetPortalRequest {
                    target_portal: portal(0),
                }))
                .await
                .unwrap();
                let iqns = s
                    .discover_target_portal(Request::new(DiscoverTargetPortalRequest {
                        target_portal: portal(0),
                    }))
                    .await
                    .unwrap()
                    .into_inner()
                    .iqns;
                assert_eq!(iqns, [LUN0, CHAP, MUTUAL]);
                // Not connected: no disks.
                assert!(
                    s.get_target_disks(disks(LUN0))
                        .await
                        .unwrap()
                        .into_inner()
                        .disk_i_ds
                        .is_empty()
                );
                let r = s
                    .connect_target(connect(LUN0, AuthenticationType::None, "", ""))
                    .await
                    .unwrap()
                    .into_inner();
                assert_eq!(r, ConnectTargetResponse {});
                assert_eq!(h.lock().iscsi.sessions().len(), 1);
                let ids = s
                    .get_target_disks(disks(LUN0))
                    .await
                    .unwrap()
                    .into_inner()
                    .disk_i_ds;
                assert_eq!(ids, ["3"]);
                let n: u32 = ids[0].parse().unwrap();
                // The disk group sees it: offline, then online and partitioned.
                assert!(!h.run(|node| node.get_disk_state(n)).unwrap());
                h.run(|node| node.set_disk_state(n, true)).unwrap();
                h.run(|node| node.partition_disk(n)).unwrap();
                // Connecting again is a no-op, even with other credentials.
                s.connect_target(connect(LUN0, AuthenticationType::OneWayChap, "x", "y"))
                    .await
                    .unwrap();
                assert_eq!(h.lock().iscsi.sessions().len(), 1);

                let r = s
                    .disconnect_target(disconnect(LUN0))
                    .await
                    .unwrap()
                    .into_inner();
                assert_eq!(r, DisconnectTargetResponse {});
                assert!(h.snapshot().disk(n).is_none());
                assert!(h.lock().iscsi.sessions().is_empty());
                // Idempotent while the target is known.
                s.disconnect_target(disconnect(LUN0)).await.unwrap();
                h.check_invariants().unwrap();
            }

            #[tokio::test]
            async fn chap_and_validation_errors() {
                let f = running();
                let (s, h) = (&f.svc, f.host());
                // Target not found before the portal is added.
                assert_status(
                    s.connect_target(connect(LUN0, AuthenticationType::None, "", ""))
                        .await,
                    Code::Unknown,
                    &format!(
                        "error query target {LUN0} from target portal at ({ADDR}:3260). \
                             err: failed to query iSCSI target portal at ({ADDR}:3260). \
                             error: not found"
                    ),
                );
                s.add_target_portal(Request::new(AddTargetPortalRequest {
                    target_portal: portal(0),
                }))
                .await
                .unwrap();
                // One-way CHAP: wrong secret, then right.
                assert_status(
                    s.connect_target(connect(
                        CHAP,
                        AuthenticationType::OneWayChap,
                        "someuser",
                        "wrongsecret!",
                    ))
                    .await,
                    Code::Unknown,
                    &connect_failed(ISDSC_AUTHENTICATION_FAILURE),
                );
                assert_status(
                    s.connect_target(connect(CHAP, AuthenticationType::None, "", ""))
                        .await,
                    Code::Unknown,
                    &connect_failed(ISDSC_AUTHENTICATION_FAILURE),
                );
                assert_status(
                    s.connect_target(connect(
                        CHAP,
                        AuthenticationType::OneWayChap,
                        "someuser",
                        "short",
                    ))
                    .await,
                    Code::Unknown,
                    &connect_failed(ERROR_INVALID_PARAMETER),
                );
                assert!(h.lock().iscsi.sessions().is_empty());
                s.connect_target(connect(
                    CHAP,
                    AuthenticationType::OneWayChap,
                    "someuser",
                    "verysecretpass",
                ))
                .await
                .unwrap();
                assert_eq!(
                    s.get_target_disks(disks(CHAP))
                        .await
                        .unwrap()
                        .into_inner()
                        .disk_i_ds
                        .len(),
                    1
                );
                // Invalid auth type, checked before anything else.
                let mut bad = connect(LUN0, AuthenticationType::None, "", "");
                bad.get_mut().auth_type = 5;
                assert_status(
                    s.connect_target(bad).await,
                    Code::Unknown,
                    "invalid authentication type authType=5",
                );
                // Mutual CHAP without the node's secret fails.
                assert_status(
                    s.connect_target(connect(
                        MUTUAL,
                        AuthenticationType::MutualChap,
                        "anotheruser",
                        "averylongsecret",
                    ))
                    .await,
                    Code::Unknown,
                    &connect_failed(ISDSC_AUTHENTICATION_FAILURE),
                );
                // No target_portal: INVALID_ARGUMENT, for every RPC taking one.
                let required = "target_portal is required";
                assert_status(
                    s.add_target_portal(Request::new(AddTargetPortalRequest {
                        target_portal: None,
                    }))
                    .await,
                    Code::InvalidArgument,
                    required,
                );
                assert_status(
                    s.discover_target_portal(Request::new(DiscoverTargetPortalRequest {
                        target_portal: None,
                    }))
                    .await,
                    Code::InvalidArgument,
                    required,
                );
                assert_status(
                    s.remove_target_portal(Request::new(RemoveTargetPortalRequest {
                        target_portal: None,
                    }))
                    .await,
                    Code::InvalidArgument,
                    required,
                );
                let mut c = connect(LUN0, AuthenticationType::None, "", "");
                c.get_mut().target_portal = None;
                assert_status(s.connect_target(c).await, Code::InvalidArgument, required);
                assert_status(
                    s.disconnect_target(Request::new(DisconnectTargetRequest {
                        target_portal: None,
                        iqn: LUN0.into(),
                    }))
                    .await,
                    Code::InvalidArgument,
                    required,
                );
                assert_status(
                    s.get_target_disks(Request::new(GetTargetDisksRequest {
                        target_portal: None,
                        iqn: LUN0.into(),
                    }))
                    .await,
                    Code::InvalidArgument,
                    required,
                );
                // MSiSCSI stopped: every call fails.
                h.lock()
                    .system
                    .set_status("MSiSCSI", ServiceStatus::Stopped)
                    .unwrap();
                assert_status(
                    s.list_target_portals(Request::new(ListTargetPortalsRequest {}))
                        .await,
                    Code::Unknown,
                    "error listing target portals. err: the Microsoft iSCSI Initiator \
                         Service (MSiSCSI) is not running",
                );
            }
        }
    };
}

use crate::server::filesystem::tests::assert_status;

iscsi_flow!(v1alpha1);
iscsi_flow!(v1alpha2);

mod v1alpha2_mutual_chap {
    use tonic::Request;

    use super::*;
    use crate::iscsi::v1alpha2::iscsi_server::Iscsi;
    use crate::iscsi::v1alpha2::*;

    fn mutual() -> Request<ConnectTargetRequest> {
        Request::new(ConnectTargetRequest {
            target_portal: Some(TargetPortal {
                target_address: ADDR.into(),
                target_port: 0,
            }),
            iqn: MUTUAL.into(),
            auth_type: AuthenticationType::MutualChap.into(),
            chap_username: "anotheruser".into(),
            chap_secret: "averylongsecret".into(),
        })
    }

    fn secret(s: &str) -> Request<SetMutualChapSecretRequest> {
        Request::new(SetMutualChapSecretRequest {
            mutual_chap_secret: s.into(),
        })
    }

    #[tokio::test]
    async fn wrong_then_right_secret() {
        let f = running();
        let (s, h) = (&f.svc, f.host());
        s.add_target_portal(Request::new(AddTargetPortalRequest {
            target_portal: mutual().into_inner().target_portal,
        }))
        .await
        .unwrap();
        let r = s
            .set_mutual_chap_secret(secret("made-up-pass"))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r, SetMutualChapSecretResponse {});
        assert_eq!(h.lock().iscsi.mutual_chap_secret(), Some("made-up-pass"));
        assert_status(
            s.connect_target(mutual()).await,
            Code::Unknown,
            &connect_failed(ISDSC_AUTHENTICATION_FAILURE),
        );
        assert_status(
            s.set_mutual_chap_secret(secret("too-short")).await,
            Code::Unknown,
            &format!(
                "error setting mutual chap secret. err: WMI MSFT_iSCSISession.SetCHAPSecret \
                     failed (target=<nil>): code={ERROR_INVALID_PARAMETER}"
            ),
        );
        assert_eq!(h.lock().iscsi.mutual_chap_secret(), Some("made-up-pass"));
        s.set_mutual_chap_secret(secret("reversssssssse"))
            .await
            .unwrap();
        s.connect_target(mutual()).await.unwrap();
        assert_eq!(h.lock().iscsi.sessions().len(), 1);
        s.disconnect_target(Request::new(DisconnectTargetRequest {
            target_portal: mutual().into_inner().target_portal,
            iqn: MUTUAL.into(),
        }))
        .await
        .unwrap();
        assert!(h.lock().iscsi.sessions().is_empty());
        h.check_invariants().unwrap();
    }
}
