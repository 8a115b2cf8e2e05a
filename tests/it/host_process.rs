//! The host-process backend's own rules, through the raw v1 traits over
//! the fake Windows boundary (the node-layer scenarios run over it in
//! `node.rs` and `node_scenarios.rs`): which WMI return codes count as
//! done, that failures carry their codes so `Error::kind` and
//! `Error::windows_code` classify them, and path confinement, which no
//! proxy enforces in this mode.
#![cfg(all(feature = "host-process", feature = "server"))]

use std::sync::Arc;

use csi_proxy_client::disk::v1::{self as disk, DiskApi};
use csi_proxy_client::filesystem::v1::{self as fs, FilesystemApi};
use csi_proxy_client::host::storage::GPT_BASIC_DATA;
use csi_proxy_client::host::{Host, HostConfig};
use csi_proxy_client::host_process::{FakeWindows, HostProcess};
use csi_proxy_client::volume::v1::{self as volume, VolumeApi};
use csi_proxy_client::{Error, ErrorKind, HostCode};
use tempfile::TempDir;

struct Fixture {
    backend: HostProcess,
    fake: Arc<FakeWindows>,
    host: Host,
    _sandbox: TempDir,
}

/// The default simulated node (system disk 0, blank disks 1 and 2).
fn fixture() -> Fixture {
    let sandbox = tempfile::tempdir().expect("sandbox");
    let host = Host::new(HostConfig::new(sandbox.path())).expect("host");
    let fake = Arc::new(FakeWindows::new(host.clone()));
    Fixture {
        backend: HostProcess::new(fake.clone()),
        fake,
        host,
        _sandbox: sandbox,
    }
}

fn message(e: &Error) -> &str {
    e.status().expect("an RPC error").message()
}

#[tokio::test]
async fn host_process_partition_disk_takes_access_path_in_use_as_done() {
    let f = fixture();
    f.fake.answer_next("disk_create_partition", 42002);
    f.backend
        .partition_disk(disk::PartitionDiskRequest { disk_number: 1 })
        .await
        .expect("42002: the partition exists, only its access path failed");
    let snapshot = f.host.snapshot();
    let basic = snapshot.disk(1).expect("disk 1").partitions.iter().find(|p| {
        matches!(&p.kind, csi_proxy_client::host::storage::PartitionType::Gpt(t) if t == GPT_BASIC_DATA)
    });
    assert!(basic.is_some_and(|p| p.is_online), "{snapshot:#?}");

    // Any other code is a failure, and says which.
    f.fake.answer_next("disk_create_partition", 40000);
    let e = f
        .backend
        .partition_disk(disk::PartitionDiskRequest { disk_number: 2 })
        .await
        .expect_err("40000 is not done");
    assert!(
        message(&e) == "error creating partition on disk 2. result: 40000, err: <nil>",
        "{e}"
    );
    assert_eq!(e.host_code(), Some(HostCode::WmiResult(40000)), "{e}");
    assert_eq!(e.windows_code(), None, "{e}");
}

#[tokio::test]
async fn host_process_wmi_refusal_carries_its_code_and_changes_nothing() {
    let f = fixture();
    let e = f
        .backend
        .set_disk_state(disk::SetDiskStateRequest {
            disk_number: 0,
            is_online: false,
        })
        .await
        .expect_err("the system disk stays online");
    assert_eq!(
        message(&e),
        "setting disk 0 attach state (isOnline: false): result 41009, error: %!w(<nil>)"
    );
    assert_eq!(e.code(), Some(csi_proxy_client::tonic::Code::Unknown));
    assert!(!f.host.snapshot().disk(0).expect("disk 0").is_offline);
    // Already in the state asked for: nothing to do, no call.
    f.fake.answer_next("disk_set_online", 41009);
    f.backend
        .set_disk_state(disk::SetDiskStateRequest {
            disk_number: 0,
            is_online: true,
        })
        .await
        .expect("already online");
}

#[tokio::test]
async fn host_process_paths_outside_the_working_dirs_are_refused() {
    let f = fixture();
    for path in [
        r"C:\Windows\System32\evil",
        r"C:\var\lib\kubelet\..\..\evil",
        r"C:\var\lib\kubeletx\evil",
        r"\\server\share\evil",
    ] {
        let e = f
            .backend
            .mkdir(fs::MkdirRequest {
                path: path.to_string(),
            })
            .await
            .expect_err(path);
        assert_eq!(
            e.code(),
            Some(csi_proxy_client::tonic::Code::Unknown),
            "{e}"
        );
        assert!(!f.host.exists(path), "{path} was made");
    }
    let e = f
        .backend
        .mount_volume(volume::MountVolumeRequest {
            volume_id: r"\\?\Volume{00000000-0000-0000-0000-000000000000}\".into(),
            target_path: r"C:\Windows\mnt".into(),
        })
        .await
        .expect_err("mount target outside kubelet");
    assert!(
        message(&e).contains("is not within the working directories"),
        "{e}"
    );
}

#[tokio::test]
async fn host_process_a_directory_with_files_is_in_use_with_win32_145() {
    let f = fixture();
    let dir = r"C:\var\lib\kubelet\plugins\d\full";
    f.backend
        .mkdir(fs::MkdirRequest { path: dir.into() })
        .await
        .unwrap();
    f.host.write_file(&format!(r"{dir}\data"), b"kept").unwrap();
    let e = f
        .backend
        .rmdir(fs::RmdirRequest {
            path: dir.into(),
            force: false,
        })
        .await
        .expect_err("not empty");
    assert_eq!(e.windows_code(), Some(145), "{e}");
    assert_eq!(e.kind(), ErrorKind::InUse);
    assert!(message(&e).starts_with(&format!("remove {dir}: ")), "{e}");
    assert_eq!(f.host.read_file(&format!(r"{dir}\data")).unwrap(), b"kept");
    f.backend
        .rmdir(fs::RmdirRequest {
            path: dir.into(),
            force: true,
        })
        .await
        .unwrap();
    assert!(!f.host.exists(dir));
}

#[tokio::test]
async fn host_process_an_unknown_volume_is_not_found() {
    let f = fixture();
    let id = r"\\?\Volume{11111111-2222-4333-8444-555555555555}\";
    let e = f
        .backend
        .format_volume(volume::FormatVolumeRequest {
            volume_id: id.into(),
        })
        .await
        .expect_err("no such volume");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("host-process"), "{e}");
    assert_eq!(
        message(&e),
        format!("error querying volume ({id}). error: failed to query volume {id}: not found")
    );
}

#[tokio::test]
async fn host_process_system_reads_bios_and_services_and_stops_dependents_first() {
    use csi_proxy_client::host::system::{DEFAULT_BIOS_SERIAL, ServiceStatus};
    use csi_proxy_client::node::{Node, NodeOptions};
    use csi_proxy_client::system::v1alpha1::{self as system, SystemApi};
    let f = fixture();
    let node = Node::host_process_with(f.fake.clone(), NodeOptions::default().system(true));
    assert_eq!(
        node.bios_serial_number().await.unwrap(),
        DEFAULT_BIOS_SERIAL
    );

    let samss = f
        .backend
        .get_service(system::GetServiceRequest {
            name: "SamSS".into(),
        })
        .await
        .unwrap();
    assert_eq!(samss.display_name, "Security Accounts Manager");
    assert_eq!(samss.start_type, system::StartType::Automatic as i32);
    assert_eq!(samss.status, system::ServiceStatus::Running as i32);

    let status = |name: &'static str| {
        f.host
            .run(|s| s.system.service(name).map(|service| service.status()))
    };
    // LanmanServer runs and depends on SamSS: no stop without force.
    let e = f
        .backend
        .stop_service(system::StopServiceRequest {
            name: "SamSS".into(),
            force: false,
        })
        .await
        .expect_err("a dependent is running");
    assert!(
        message(&e).starts_with("failed to stop service SamSS. error: "),
        "{e}"
    );
    assert_eq!(status("SamSS"), Some(ServiceStatus::Running));
    f.backend
        .stop_service(system::StopServiceRequest {
            name: "SamSS".into(),
            force: true,
        })
        .await
        .unwrap();
    for name in ["SamSS", "LanmanServer", "Browser"] {
        assert_eq!(status(name), Some(ServiceStatus::Stopped), "{name}");
    }
    f.backend
        .start_service(system::StartServiceRequest {
            name: "SamSS".into(),
        })
        .await
        .unwrap();
    assert_eq!(status("SamSS"), Some(ServiceStatus::Running));
    let e = f
        .backend
        .get_service(system::GetServiceRequest {
            name: "NoSuch".into(),
        })
        .await
        .expect_err("unknown service");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

// ------------------------------------------------------------ iSCSI

mod iscsi_rules {
    use super::*;
    use csi_proxy_client::HostCode;
    use csi_proxy_client::host::system::ServiceStatus;
    use csi_proxy_client::iscsi::v1alpha2::{self as iscsi, IscsiApi};

    const CHAP_TARGET: &str = "iqn.1991-05.com.microsoft:storage01-chap-target";
    /// `ISDSC_TARGET_ALREADY_LOGGED_IN`.
    const ALREADY_LOGGED_IN: u32 = 0xEFFF_003F;
    /// `ISDSC_INVALID_SESSION_ID`.
    const INVALID_SESSION_ID: u32 = 0xEFFF_001C;
    /// `ISDSC_AUTHENTICATION_FAILURE`.
    const AUTHENTICATION_FAILURE: u32 = 0xEFFF_0009;

    fn portal() -> Option<iscsi::TargetPortal> {
        Some(iscsi::TargetPortal {
            target_address: "10.0.0.20".into(),
            target_port: 0,
        })
    }

    fn login(secret: &str) -> iscsi::ConnectTargetRequest {
        iscsi::ConnectTargetRequest {
            target_portal: portal(),
            iqn: CHAP_TARGET.into(),
            auth_type: iscsi::AuthenticationType::OneWayChap as i32,
            chap_username: "someuser".into(),
            chap_secret: secret.into(),
        }
    }

    /// The default node, `MSiSCSI` running and the portal added.
    async fn with_portal() -> Fixture {
        let f = fixture();
        f.host
            .lock()
            .system
            .set_status("MSiSCSI", ServiceStatus::Running)
            .unwrap();
        f.backend
            .add_target_portal(iscsi::AddTargetPortalRequest {
                target_portal: portal(),
            })
            .await
            .unwrap();
        f
    }

    async fn disks(f: &Fixture) -> Vec<String> {
        f.backend
            .get_target_disks(iscsi::GetTargetDisksRequest {
                target_portal: portal(),
                iqn: CHAP_TARGET.into(),
            })
            .await
            .unwrap()
            .disk_i_ds
    }

    /// The fake delivers the code as Windows does: the call fails with it
    /// as its HRESULT, there is no `ReturnValue` to read.
    #[test]
    fn host_process_iscsi_codes_arrive_as_the_calls_hresult() {
        use csi_proxy_client::host_process::{Failure, WindowsHost, boundary::IscsiAuthType};
        let f = fixture();
        f.host
            .lock()
            .system
            .set_status("MSiSCSI", ServiceStatus::Running)
            .unwrap();
        assert_eq!(f.fake.iscsi_new_portal("10.0.0.20", 3260).unwrap().code, 0);
        let login = || {
            f.fake.iscsi_connect(
                "10.0.0.20",
                3260,
                CHAP_TARGET,
                IscsiAuthType::OneWayChap,
                "someuser",
                "verysecretpass",
            )
        };
        assert_eq!(login().unwrap().code, 0);
        assert!(
            matches!(
                login(),
                Err(Failure::Com {
                    hresult: ALREADY_LOGGED_IN,
                    ..
                })
            ),
            "{:?}",
            login()
        );
        f.fake.answer_next("iscsi_disconnect", INVALID_SESSION_ID);
        let session = f.fake.iscsi_sessions(CHAP_TARGET).unwrap()[0]
            .identifier
            .clone();
        assert!(matches!(
            f.fake.iscsi_disconnect(CHAP_TARGET, &session),
            Err(Failure::Com {
                hresult: INVALID_SESSION_ID,
                ..
            })
        ));
    }

    #[tokio::test]
    async fn host_process_iscsi_login_takes_already_logged_in_as_done() {
        let f = with_portal().await;
        // Another login got there between the look and the call; Windows
        // fails the call with the code (see the test above).
        f.fake.answer_next("iscsi_connect", ALREADY_LOGGED_IN);
        f.backend
            .connect_target(login("verysecretpass"))
            .await
            .expect("already logged in: done");
        assert_eq!(f.host.lock().iscsi.sessions().len(), 1);
        assert_eq!(disks(&f).await.len(), 1);
        // Connected: a second login makes no call, whatever its credentials.
        f.backend
            .connect_target(login("wrong-secret!"))
            .await
            .expect("connected: nothing to do");
        assert_eq!(f.host.lock().iscsi.sessions().len(), 1);
    }

    #[tokio::test]
    async fn host_process_iscsi_logout_takes_a_session_gone_as_done() {
        let f = with_portal().await;
        f.backend
            .connect_target(login("verysecretpass"))
            .await
            .unwrap();
        let disk: u32 = disks(&f).await[0].parse().unwrap();
        assert_eq!(f.host.lock().iscsi.make_persistent(CHAP_TARGET), 1);
        // The session ended between the look and the call.
        f.fake.answer_next("iscsi_disconnect", INVALID_SESSION_ID);
        let disconnect = || {
            f.backend.disconnect_target(iscsi::DisconnectTargetRequest {
                target_portal: portal(),
                iqn: CHAP_TARGET.into(),
            })
        };
        disconnect().await.expect("no such session: done");
        {
            let node = f.host.lock();
            assert!(node.iscsi.sessions().is_empty());
            assert!(
                node.iscsi.persistent_logins().is_empty(),
                "unregistered first"
            );
            assert!(
                node.storage.disk(disk).is_none(),
                "the target's disk is gone"
            );
        }
        assert!(disks(&f).await.is_empty());
        disconnect().await.expect("not connected: nothing to do");
    }

    #[tokio::test]
    async fn host_process_iscsi_refused_login_carries_its_code_and_changes_nothing() {
        let f = with_portal().await;
        let before = f.host.snapshot();
        let e = f
            .backend
            .connect_target(login("wrong-secret!"))
            .await
            .expect_err("wrong CHAP secret");
        assert_eq!(
            message(&e),
            format!(
                "error connecting to target portal. err: WMI MSFT_iSCSITarget.Connect failed \
                 (target=<nil>): code={AUTHENTICATION_FAILURE}"
            )
        );
        assert_eq!(e.code(), Some(csi_proxy_client::tonic::Code::Unknown));
        // Classified as the reference server's same text is.
        assert_eq!(e.host_code(), Some(HostCode::Win32(AUTHENTICATION_FAILURE)));
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
        assert!(f.host.lock().iscsi.sessions().is_empty());
        assert_eq!(f.host.snapshot(), before, "no disk appeared");
        assert!(disks(&f).await.is_empty());
    }

    #[tokio::test]
    async fn host_process_iscsi_refuses_what_the_proxy_refuses() {
        let f = fixture();
        // The initiator service is stopped: the call cannot be made.
        let e = f
            .backend
            .add_target_portal(iscsi::AddTargetPortalRequest {
                target_portal: portal(),
            })
            .await
            .expect_err("MSiSCSI stopped");
        assert!(
            message(&e).starts_with("error adding target portal at (10.0.0.20:3260). err: "),
            "{e}"
        );
        assert_eq!(e.host_code(), Some(HostCode::HResult(0xEFFF_003E)), "{e}");
        let f = with_portal().await;
        // No portal in the request: refused before any call.
        let e = f
            .backend
            .get_target_disks(iscsi::GetTargetDisksRequest {
                target_portal: None,
                iqn: CHAP_TARGET.into(),
            })
            .await
            .expect_err("no portal");
        assert_eq!(
            e.code(),
            Some(csi_proxy_client::tonic::Code::InvalidArgument)
        );
        // An auth type outside the enum.
        let e = f
            .backend
            .connect_target(iscsi::ConnectTargetRequest {
                auth_type: 7,
                ..login("verysecretpass")
            })
            .await
            .expect_err("auth type 7");
        assert_eq!(message(&e), "invalid authentication type authType=7");
        // A target the portal does not offer.
        let e = f
            .backend
            .connect_target(iscsi::ConnectTargetRequest {
                iqn: "iqn.2000-01.example:none".into(),
                ..login("verysecretpass")
            })
            .await
            .expect_err("unknown target");
        assert_eq!(
            message(&e),
            "error query target iqn.2000-01.example:none from target portal at \
             (10.0.0.20:3260). err: not found"
        );
        // Removing a portal twice: the second time it is not there.
        let remove = || {
            f.backend
                .remove_target_portal(iscsi::RemoveTargetPortalRequest {
                    target_portal: portal(),
                })
        };
        remove().await.unwrap();
        let e = remove().await.expect_err("gone");
        assert_eq!(
            message(&e),
            "error query target portal at (10.0.0.20:3260). err: failed to query iSCSI \
             target portal at (10.0.0.20:3260). error: not found"
        );
        assert!(f.host.lock().iscsi.portals().is_empty());
        // The mutual CHAP secret: Windows' length rule, then stored.
        let e = f
            .backend
            .set_mutual_chap_secret(iscsi::SetMutualChapSecretRequest {
                mutual_chap_secret: "short".into(),
            })
            .await
            .expect_err("5 bytes");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert_eq!(f.host.lock().iscsi.mutual_chap_secret(), None);
        f.backend
            .set_mutual_chap_secret(iscsi::SetMutualChapSecretRequest {
                mutual_chap_secret: "twelve-bytes".into(),
            })
            .await
            .unwrap();
        assert_eq!(
            f.host.lock().iscsi.mutual_chap_secret(),
            Some("twelve-bytes")
        );
    }
}

// ------------------------------------------------------------ SMB

mod smb_rules {
    use super::*;
    use csi_proxy_client::host::smb::{
        DEFAULT_SMB_PASSWORD, DEFAULT_SMB_SERVER, DEFAULT_SMB_SHARE, DEFAULT_SMB_USER,
    };
    use csi_proxy_client::smb::v1::{self as smb, SmbApi};

    fn root() -> String {
        format!(r"\\{DEFAULT_SMB_SERVER}\{DEFAULT_SMB_SHARE}")
    }

    fn map(dir: &str, password: &str) -> smb::NewSmbGlobalMappingRequest {
        smb::NewSmbGlobalMappingRequest {
            remote_path: format!(r"{}\{dir}", root()),
            local_path: String::new(),
            username: DEFAULT_SMB_USER.into(),
            password: password.into(),
        }
    }

    /// A server that refuses a handle on its bare share root still answers
    /// `GetFileAttributesW` there, which is what csi-proxy probes a mapping
    /// with: the next volume of the share reuses the mapping, in use by the
    /// first, instead of removing it and mapping again.
    #[tokio::test]
    async fn host_process_smb_mapping_in_use_is_kept_when_the_server_refuses_opening_its_root() {
        let f = fixture();
        f.backend
            .new_smb_global_mapping(map("pv-a", DEFAULT_SMB_PASSWORD))
            .await
            .unwrap();
        f.fake.refuse_open(&root());
        f.backend
            .new_smb_global_mapping(map("pv-b", DEFAULT_SMB_PASSWORD))
            .await
            .unwrap();
        assert_eq!(f.fake.method_calls("smb_remove_global_mapping"), 0);
        assert_eq!(f.fake.method_calls("smb_new_global_mapping"), 1);
        assert!(f.host.lock().smb.is_mapped(&root().to_lowercase()));
    }

    /// The probe still finds a mapping that cannot reach its share: after
    /// the password changed on the server, the mapping is made again with
    /// the new one (upstream's reason for the probe).
    #[tokio::test]
    async fn host_process_smb_mapping_that_cannot_reach_its_share_is_made_again() {
        let f = fixture();
        f.backend
            .new_smb_global_mapping(map("pv-a", DEFAULT_SMB_PASSWORD))
            .await
            .unwrap();
        let changed = "N3w-Passw0rd!";
        f.host
            .lock()
            .smb
            .set_account_password(DEFAULT_SMB_SERVER, DEFAULT_SMB_USER, changed)
            .unwrap();
        f.backend
            .new_smb_global_mapping(map("pv-b", changed))
            .await
            .unwrap();
        assert_eq!(f.fake.method_calls("smb_remove_global_mapping"), 1);
        assert_eq!(f.fake.method_calls("smb_new_global_mapping"), 2);
        assert!(f.host.lock().smb.is_mapped(&root().to_lowercase()));
    }
}
