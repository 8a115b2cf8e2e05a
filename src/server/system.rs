//! The System group's service: v1alpha1 over the node's
//! System model.
//!
//! Field-for-field; the host's status and start type map one-to-one onto
//! the proto enums (an unrecognised state is `UNKNOWN`, an unrecognised
//! start mode `BOOT`, both decided by the host). `StartService` and
//! `StopService` wait for the service (polling), so they run on the blocking
//! pool.

use std::time::Instant;

use tonic::{Request, Response};

use super::{ProxyService, Reply, reply};
use crate::host::system::{ServiceStatus, StartType};
use crate::system::v1alpha1;

/// The host's service status and start type map one-to-one onto the
/// version's enums.
macro_rules! system_enums_from_host {
    ($v:ident) => {
        impl From<ServiceStatus> for $v::ServiceStatus {
            fn from(status: ServiceStatus) -> Self {
                match status {
                    ServiceStatus::Unknown => Self::Unknown,
                    ServiceStatus::Stopped => Self::Stopped,
                    ServiceStatus::StartPending => Self::StartPending,
                    ServiceStatus::StopPending => Self::StopPending,
                    ServiceStatus::Running => Self::Running,
                    ServiceStatus::ContinuePending => Self::ContinuePending,
                    ServiceStatus::PausePending => Self::PausePending,
                    ServiceStatus::Paused => Self::Paused,
                }
            }
        }

        impl From<StartType> for $v::StartType {
            fn from(start_type: StartType) -> Self {
                match start_type {
                    StartType::Boot => Self::Boot,
                    StartType::System => Self::System,
                    StartType::Automatic => Self::Automatic,
                    StartType::Manual => Self::Manual,
                    StartType::Disabled => Self::Disabled,
                }
            }
        }
    };
}

system_enums_from_host!(v1alpha1);

/// `system_service!(<version>: <rpc> <rpc> ...)` implements the version's
/// `System` trait with one method per RPC shape (a tt-muncher, as for every
/// group: each rule appends one method, the last emits the impl block).
macro_rules! system_service {
    ($v:ident: $($shape:ident)+) => {
        system_service!(@acc $v [] $($shape)+);
    };

    (@acc $v:ident [$($methods:tt)*]) => {
        #[tonic::async_trait]
        impl $v::system_server::System for ProxyService {
            $($methods)*
        }
    };

    (@acc $v:ident [$($m:tt)*] get_bios_serial_number $($rest:ident)*) => {
        system_service!(@acc $v [$($m)*
            async fn get_bios_serial_number(
                &self,
                _request: Request<$v::GetBiosSerialNumberRequest>,
            ) -> Reply<$v::GetBiosSerialNumberResponse> {
                reply(
                    self.host
                        .run(|node| node.system.bios_serial_number())
                        .map(|serial_number| $v::GetBiosSerialNumberResponse { serial_number }),
                )
            }
        ] $($rest)*);
    };

    // Waits for the service (polling), so runs on the blocking pool.
    (@acc $v:ident [$($m:tt)*] start_service $($rest:ident)*) => {
        system_service!(@acc $v [$($m)*
            async fn start_service(
                &self,
                request: Request<$v::StartServiceRequest>,
            ) -> Reply<$v::StartServiceResponse> {
                let name = request.into_inner().name;
                self.blocking(move |host| host.start_service(&name))
                    .await
                    .map(|()| Response::new($v::StartServiceResponse {}))
            }
        ] $($rest)*);
    };

    // Waits for the service (polling), so runs on the blocking pool.
    (@acc $v:ident [$($m:tt)*] stop_service $($rest:ident)*) => {
        system_service!(@acc $v [$($m)*
            async fn stop_service(
                &self,
                request: Request<$v::StopServiceRequest>,
            ) -> Reply<$v::StopServiceResponse> {
                let r = request.into_inner();
                self.blocking(move |host| host.stop_service(&r.name, r.force))
                    .await
                    .map(|()| Response::new($v::StopServiceResponse {}))
            }
        ] $($rest)*);
    };

    (@acc $v:ident [$($m:tt)*] get_service $($rest:ident)*) => {
        system_service!(@acc $v [$($m)*
            async fn get_service(
                &self,
                request: Request<$v::GetServiceRequest>,
            ) -> Reply<$v::GetServiceResponse> {
                let r = request.into_inner();
                reply(
                    self.host
                        .run(|node| node.system.get_service(&r.name, Instant::now()))
                        .map(|info| $v::GetServiceResponse {
                            display_name: info.display_name,
                            start_type: $v::StartType::from(info.start_type).into(),
                            status: $v::ServiceStatus::from(info.status).into(),
                        }),
                )
            }
        ] $($rest)*);
    };
}

system_service!(v1alpha1: get_bios_serial_number start_service stop_service get_service);

#[cfg(test)]
mod tests;
