//! `Error::kind` and `Error::windows_code` against the texts the simulated
//! host gives (upstream's texts), through raw v1 clients on `MockHost`.
#![cfg(feature = "mock")]

use csi_proxy_client::mock::MockHost;
use csi_proxy_client::{Error, ErrorKind, disk, filesystem, iscsi, smb, volume};

use disk::v1::DiskApi;
use filesystem::v1::FilesystemApi;
use iscsi::v1alpha2::IscsiApi;
use smb::v1::SmbApi;
use volume::v1::VolumeApi;

const DIR: &str = r"C:\var\lib\kubelet\plugins\errors";

fn show(e: &Error) -> String {
    format!("{e} (kind {:?}, code {:?})", e.kind(), e.windows_code())
}

#[tokio::test]
async fn a_missing_path_disk_or_volume_is_not_found() {
    let node = MockHost::new();
    let e = node
        .rmdir(filesystem::v1::RmdirRequest {
            path: format!(r"{DIR}\missing"),
            force: false,
        })
        .await
        .unwrap_err();
    assert_eq!(e.windows_code(), Some(3), "{}", show(&e));
    assert_eq!(e.kind(), ErrorKind::NotFound, "{}", show(&e));

    let e = node
        .get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: 99 })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{}", show(&e));

    let e = node
        .get_volume_stats(volume::v1::GetVolumeStatsRequest {
            volume_id: r"\\?\Volume{00000000-0000-0000-0000-000000000000}\".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{}", show(&e));
}

#[tokio::test]
async fn a_link_over_an_existing_path_already_exists() {
    let node = MockHost::new();
    node.host().create_dir(&format!(r"{DIR}\a")).unwrap();
    node.host().create_dir(&format!(r"{DIR}\b")).unwrap();
    let e = node
        .create_symlink(filesystem::v1::CreateSymlinkRequest {
            source_path: format!(r"{DIR}\a"),
            target_path: format!(r"{DIR}\b"),
        })
        .await
        .unwrap_err();
    assert_eq!(e.windows_code(), Some(183), "{}", show(&e));
    assert_eq!(e.kind(), ErrorKind::AlreadyExists);
}

#[tokio::test]
async fn removing_a_directory_with_files_is_in_use() {
    let node = MockHost::new();
    node.host().create_dir(&format!(r"{DIR}\full")).unwrap();
    node.host()
        .write_file(&format!(r"{DIR}\full\file"), b"x")
        .unwrap();
    let e = node
        .rmdir(filesystem::v1::RmdirRequest {
            path: format!(r"{DIR}\full"),
            force: false,
        })
        .await
        .unwrap_err();
    assert_eq!(e.windows_code(), Some(145), "{}", show(&e));
    assert_eq!(e.kind(), ErrorKind::InUse);
}

#[tokio::test]
async fn a_wrong_password_is_permission_denied() {
    let node = MockHost::new();
    let e = node
        .new_smb_global_mapping(smb::v1::NewSmbGlobalMappingRequest {
            remote_path: r"\\fileserver\share".into(),
            local_path: String::new(),
            username: "smbuser".into(),
            password: "wrong".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.windows_code(), Some(1326), "{}", show(&e));
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    assert!(!e.to_string().contains("wrong"), "{e}");
}

#[tokio::test]
async fn a_request_without_a_portal_is_an_invalid_argument() {
    let node = MockHost::new();
    let e = node
        .add_target_portal(iscsi::v1alpha2::AddTargetPortalRequest {
            target_portal: None,
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", show(&e));
}

/// The proxy refuses a path outside its working directories: a refusal,
/// not a missing path (the text read as Other).
#[tokio::test]
async fn a_path_outside_the_working_directories_is_permission_denied() {
    let node = MockHost::new();
    let e = node
        .mkdir(filesystem::v1::MkdirRequest {
            path: r"C:\Windows\evil".into(),
        })
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("is not within the working directories"),
        "{e}"
    );
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{}", show(&e));
}

/// csi-proxy v1.3.0's failed WMI: the text holds "not found" only in
/// Windows' missing message for the HRESULT.
#[test]
fn a_failed_wmi_is_not_a_not_found() {
    let e = Error::rpc(
        "pipe",
        "/v1.Smb/NewSmbGlobalMapping",
        tonic::Status::unknown(
            "NewSmbGlobalMapping failed. result: -1, err: failed to connect to WMI. error: \
             error 2147614729 (FormatMessage failed with: Message 0x%1 not found in file %2.)",
        ),
    );
    assert_eq!(e.kind(), ErrorKind::Other, "{}", show(&e));
    assert_eq!(e.windows_code(), None, "{}", show(&e));
}

#[test]
fn the_credential_conflict_text_is_1219() {
    use csi_proxy_client::host::smb::{ERROR_SESSION_CREDENTIAL_CONFLICT, SmbError};
    let windows = SmbError {
        code: ERROR_SESSION_CREDENTIAL_CONFLICT,
    };
    // With the number, as the proxy's WMI errors carry it, and without.
    for text in [
        format!(
            "NewSmbGlobalMapping failed. err: WMI MSFT_SmbGlobalMapping.Create failed: {} code={}",
            windows.message(),
            windows.code
        ),
        windows.message().to_string(),
    ] {
        let e = Error::rpc(
            "pipe",
            "/v1.Smb/NewSmbGlobalMapping",
            tonic::Status::unknown(text),
        );
        assert_eq!(e.windows_code(), Some(1219));
        assert_eq!(e.kind(), ErrorKind::CredentialsConflict);
    }
}

#[test]
fn other_codes_and_other_errors() {
    let status = |code, text: &str| Error::rpc("p", "/m", tonic::Status::new(code, text));
    // A code is read only from UNKNOWN statuses.
    let e = status(tonic::Code::Internal, "code=5");
    assert_eq!(e.windows_code(), None);
    assert_eq!(e.kind(), ErrorKind::Other);
    assert_eq!(
        status(tonic::Code::Unknown, "something odd").kind(),
        ErrorKind::Other
    );
    assert_eq!(
        status(tonic::Code::Unavailable, "").kind(),
        ErrorKind::Unavailable
    );
    let e = Error::Connect {
        endpoint: "/nowhere.sock".into(),
        source: std::io::ErrorKind::NotFound.into(),
    };
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert_eq!(e.windows_code(), None);
}

#[tokio::test]
async fn a_missing_socket_is_unavailable() {
    // A socket path is no address on Windows: a pipe no one serves is.
    #[cfg(unix)]
    let dir = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    let missing = dir.path().join("none.sock").to_str().unwrap().to_owned();
    #[cfg(windows)]
    let missing = format!(r"\\.\pipe\csi-proxy-none-{}", std::process::id());
    let e = disk::v1::Client::connect(&missing).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
}
