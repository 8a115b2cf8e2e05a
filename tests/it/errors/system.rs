//! System group errors.

use csi_proxy_client::host::system::ServiceStatus;
use csi_proxy_client::system;

use crate::scenarios::*;

on_both_backends![system_errors];

async fn system_errors(node: &Node) {
    use system::v1alpha1 as s;
    let api = &node.system_v1alpha1;
    for name in ["nope", ""] {
        unknown(
            api.get_service(s::GetServiceRequest { name: name.into() })
                .await,
            &format!(
                "failed to get service {name}. error: failed to query service {name}: not found"
            ),
        );
        let not_found = format!(
            "failed to get service {name}. error: failed to query service {name}: not found"
        );
        assert_eq!(
            unknown(
                api.start_service(s::StartServiceRequest { name: name.into() })
                    .await,
                &not_found,
            ),
            not_found
        );
        assert_eq!(
            unknown(
                api.stop_service(s::StopServiceRequest {
                    name: name.into(),
                    force: true,
                })
                .await,
                &not_found,
            ),
            format!("failed to stop service {name}. error: {not_found}")
        );
    }
    // Running dependents block a stop without force.
    unknown(
        api.stop_service(s::StopServiceRequest {
            name: "SamSS".into(),
            force: false,
        })
        .await,
        "failed to stop service SamSS. error: error stopping service name SamSS. current state: Running",
    );
    for running in ["SamSS", "LanmanServer", "Browser"] {
        assert_eq!(
            service_status(&node.host, running),
            ServiceStatus::Running,
            "{running}"
        );
    }
}
