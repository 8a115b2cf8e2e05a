use std::time::Duration;

use tonic::Code;

use super::*;
use crate::host::system::{DEFAULT_BIOS_SERIAL, ServiceTiming};
use crate::server::filesystem::tests::{Fixture, assert_status, fixture};
use crate::system::v1alpha1 as api;
use api::system_server::System;

/// A default node with fast service polling.
fn fast() -> Fixture {
    let f = fixture();
    f.host().lock().system.set_timing(ServiceTiming {
        poll_interval: Duration::from_millis(2),
        timeout: Duration::from_millis(500),
    });
    f
}

fn status(f: &Fixture, name: &str) -> ServiceStatus {
    f.host().lock().system.service(name).unwrap().status()
}

#[tokio::test]
async fn bios_serial_and_missing_bios() {
    let f = fast();
    let s = &f.svc;
    let r = s
        .get_bios_serial_number(Request::new(api::GetBiosSerialNumberRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        r,
        api::GetBiosSerialNumberResponse {
            serial_number: DEFAULT_BIOS_SERIAL.into()
        }
    );
    f.host().lock().system.set_bios_serial(None);
    assert_status(
        s.get_bios_serial_number(Request::new(api::GetBiosSerialNumberRequest {}))
            .await,
        Code::Unknown,
        "failed to get BIOS element: failed to query BIOS element: not found",
    );
}

#[tokio::test]
async fn service_commands_flow() {
    let f = fast();
    let s = &f.svc;
    let get =
        |name: &str| s.get_service(Request::new(api::GetServiceRequest { name: name.into() }));
    let r = get("msiscsi").await.unwrap().into_inner();
    assert_eq!(
        r,
        api::GetServiceResponse {
            display_name: "Microsoft iSCSI Initiator Service".into(),
            start_type: api::StartType::Manual.into(),
            status: api::ServiceStatus::Stopped.into(),
        }
    );
    let r = get("SamSS").await.unwrap().into_inner();
    assert_eq!(r.start_type, i32::from(api::StartType::Automatic));
    assert_eq!(r.status, i32::from(api::ServiceStatus::Running));

    let r = s
        .start_service(Request::new(api::StartServiceRequest {
            name: "MSiSCSI".into(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r, api::StartServiceResponse {});
    assert_eq!(status(&f, "MSiSCSI"), ServiceStatus::Running);
    assert_eq!(
        get("MSiSCSI").await.unwrap().into_inner().status,
        i32::from(api::ServiceStatus::Running)
    );
    // Idempotent.
    s.start_service(Request::new(api::StartServiceRequest {
        name: "MSiSCSI".into(),
    }))
    .await
    .unwrap();

    let r = s
        .stop_service(Request::new(api::StopServiceRequest {
            name: "MSiSCSI".into(),
            force: false,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r, api::StopServiceResponse {});
    assert_eq!(status(&f, "MSiSCSI"), ServiceStatus::Stopped);
    s.stop_service(Request::new(api::StopServiceRequest {
        name: "MSiSCSI".into(),
        force: false,
    }))
    .await
    .unwrap();
}

#[tokio::test]
async fn stop_with_and_without_force() {
    let f = fast();
    let s = &f.svc;
    let stop = |force| {
        s.stop_service(Request::new(api::StopServiceRequest {
            name: "SamSS".into(),
            force,
        }))
    };
    assert_status(
        stop(false).await,
        Code::Unknown,
        "failed to stop service SamSS. error: error stopping service name SamSS. \
             current state: Running",
    );
    assert_eq!(status(&f, "SamSS"), ServiceStatus::Running);
    stop(true).await.unwrap();
    for name in ["SamSS", "LanmanServer", "Browser", "Netlogon"] {
        assert_eq!(status(&f, name), ServiceStatus::Stopped, "{name}");
    }
    assert_eq!(status(&f, "LanmanWorkstation"), ServiceStatus::Running);
}

#[tokio::test]
async fn unknown_service_and_enum_mappings() {
    let f = fast();
    let s = &f.svc;
    assert_status(
        s.get_service(Request::new(api::GetServiceRequest {
            name: "Nope".into(),
        }))
        .await,
        Code::Unknown,
        "failed to get service Nope. error: failed to query service Nope: not found",
    );
    assert_status(
        s.start_service(Request::new(api::StartServiceRequest {
            name: "Nope".into(),
        }))
        .await,
        Code::Unknown,
        "failed to get service Nope. error: failed to query service Nope: not found",
    );
    assert_status(
        s.stop_service(Request::new(api::StopServiceRequest {
            name: "Nope".into(),
            force: true,
        }))
        .await,
        Code::Unknown,
        "failed to stop service Nope. error: failed to get service Nope. error: \
             failed to query service Nope: not found",
    );
    // Every host value maps onto the proto enum of the same number.
    for code in 0..=7 {
        let st = ServiceStatus::from_code(code).unwrap();
        assert_eq!(i32::from(api::ServiceStatus::from(st)), code);
    }
    for code in 0..=4 {
        let t = StartType::from_code(code).unwrap();
        assert_eq!(i32::from(api::StartType::from(t)), code);
    }
    // A disabled service cannot start; an unrecognised start mode is BOOT.
    {
        let mut node = f.host().lock();
        let w = node.system.service_mut("W32Time").unwrap();
        w.start_mode = crate::host::system::StartMode::Disabled;
        node.system
            .set_status("W32Time", ServiceStatus::Stopped)
            .unwrap();
        node.system.service_mut("Netlogon").unwrap().start_mode =
            crate::host::system::StartMode::Other("Delayed".into());
    }
    assert_status(
        s.start_service(Request::new(api::StartServiceRequest {
            name: "W32Time".into(),
        }))
        .await,
        Code::Unknown,
        "failed to wait for service W32Time state change. error: error starting service \
             name W32Time. return value: 14",
    );
    let r = s
        .get_service(Request::new(api::GetServiceRequest {
            name: "Netlogon".into(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.start_type, i32::from(api::StartType::Boot));
}

#[tokio::test]
async fn start_timeout() {
    let f = fast();
    {
        let mut node = f.host().lock();
        node.system.service_mut("MSiSCSI").unwrap().hang = true;
    }
    assert_status(
        f.svc
            .start_service(Request::new(api::StartServiceRequest {
                name: "MSiSCSI".into(),
            }))
            .await,
        Code::Unknown,
        "timed out waiting for service MSiSCSI to become running",
    );
    assert_eq!(status(&f, "MSiSCSI"), ServiceStatus::StartPending);
}
