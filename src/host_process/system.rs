//! The system group (v1alpha1) over the boundary: `Win32_BIOS` and
//! `Win32_Service`, with the proxy's waits (a poll every 200 ms, 30 s at
//! most) on the blocking thread.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::backend::{Ctx, HostProcess, text};
use super::boundary::ServiceObject;
use crate::Error;
use crate::system::v1alpha1 as api;

/// How often a start or stop looks at the service.
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// How long a start or stop waits for the service.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(30);

/// `StartService`: accepted, and already running.
const START_OK: [u32; 2] = [0, 10];
/// `StopService`: accepted, and cannot accept the control now.
const STOP_OK: [u32; 2] = [0, 5];
/// `StopService`: services that depend on it are running.
const DEPENDENTS_RUNNING: u32 = 3;

fn service(ctx: &Ctx, name: &str) -> Result<ServiceObject, String> {
    let fail = |e: String| format!("failed to get service {name}. error: {e}");
    ctx.host()
        .services(name)
        .map_err(|e| fail(e.to_string()))?
        .into_iter()
        .next()
        .ok_or_else(|| fail(format!("failed to query service {name}: not found")))
}

fn status(state: &str) -> api::ServiceStatus {
    use api::ServiceStatus as S;
    match state {
        "Stopped" => S::Stopped,
        "Start Pending" => S::StartPending,
        "Stop Pending" => S::StopPending,
        "Running" => S::Running,
        "Continue Pending" => S::ContinuePending,
        "Pause Pending" => S::PausePending,
        "Paused" => S::Paused,
        _ => S::Unknown,
    }
}

fn start_type(mode: &str) -> api::StartType {
    use api::StartType as T;
    match mode {
        "System" => T::System,
        "Auto" => T::Automatic,
        "Manual" => T::Manual,
        "Disabled" => T::Disabled,
        // The proxy's quirk: anything else reads as Boot.
        _ => T::Boot,
    }
}

/// Polls `name` until its state is `wanted` or the wait times out.
fn wait_for(ctx: &Ctx, name: &str, wanted: &str) -> Result<bool, String> {
    let started = Instant::now();
    loop {
        if service(ctx, name)?.state == wanted {
            return Ok(true);
        }
        if started.elapsed() >= WAIT_TIMEOUT {
            return Ok(false);
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

fn start_service(ctx: &Ctx, name: &str) -> Result<(), String> {
    service(ctx, name)?;
    let wait_failed =
        |e: String| format!("failed to wait for service {name} state change. error: {e}");
    let code = ctx
        .host()
        .service_start(name)
        .map_err(|e| wait_failed(text(e)))?
        .code;
    if !START_OK.contains(&code) {
        return Err(wait_failed(format!(
            "error starting service name {name}. return value: {code}"
        )));
    }
    if wait_for(ctx, name, "Running")? {
        Ok(())
    } else {
        Err(format!(
            "timed out waiting for service {name} to become running"
        ))
    }
}

enum StopFailure {
    DependentsRunning(String),
    Other(String),
}

fn stop_single(ctx: &Ctx, name: &str) -> Result<(), StopFailure> {
    let current = service(ctx, name).map_err(StopFailure::Other)?;
    if current.state == "Stopped" {
        return Ok(());
    }
    let code = ctx
        .host()
        .service_stop(name)
        .map_err(|e| StopFailure::Other(text(e)))?
        .code;
    if code == DEPENDENTS_RUNNING {
        return Err(StopFailure::DependentsRunning(format!(
            "error stopping service name {name}. current state: {}",
            current.state
        )));
    }
    if !STOP_OK.contains(&code) {
        return Err(StopFailure::Other(format!(
            "error stopping service {name}. return value: {code}"
        )));
    }
    match wait_for(ctx, name, "Stopped") {
        Ok(true) => Ok(()),
        Ok(false) => Err(StopFailure::Other(format!(
            "timed out waiting for service {name} to stop"
        ))),
        Err(e) => Err(StopFailure::Other(e)),
    }
}

/// The running services that depend on `name`, transitively, deepest
/// first, `name` last.
fn stop_order(ctx: &Ctx, name: &str) -> Result<Vec<String>, String> {
    let mut order = vec![name.to_string()];
    let mut queue = VecDeque::from([name.to_string()]);
    while let Some(next) = queue.pop_front() {
        for dependent in ctx.host().service_dependents(&next).map_err(text)? {
            if dependent.state == "Running" && !order.contains(&dependent.name) {
                order.insert(0, dependent.name.clone());
                queue.push_back(dependent.name);
            }
        }
    }
    Ok(order)
}

fn stop_service(ctx: &Ctx, name: &str, force: bool) -> Result<(), String> {
    let fail = |e: String| format!("failed to stop service {name}. error: {e}");
    match stop_single(ctx, name) {
        Ok(()) => Ok(()),
        Err(StopFailure::DependentsRunning(e)) if force => {
            tracing::debug!(service = name, "stopping its running dependents first: {e}");
            for service in stop_order(ctx, name).map_err(fail)? {
                stop_single(ctx, &service).map_err(|e| match e {
                    StopFailure::DependentsRunning(e) | StopFailure::Other(e) => fail(e),
                })?;
            }
            Ok(())
        }
        Err(StopFailure::DependentsRunning(e) | StopFailure::Other(e)) => Err(fail(e)),
    }
}

#[async_trait::async_trait]
impl api::SystemApi for HostProcess {
    async fn get_bios_serial_number(
        &self,
        _request: api::GetBiosSerialNumberRequest,
    ) -> Result<api::GetBiosSerialNumberResponse, Error> {
        self.run("/v1alpha1.System/GetBIOSSerialNumber", |ctx| {
            let fail = |e: String| format!("failed to get BIOS element: {e}");
            let serial = ctx
                .host()
                .bios_serial_numbers()
                .map_err(|e| fail(text(e)))?
                .into_iter()
                .next()
                .ok_or_else(|| fail("failed to query BIOS element: not found".into()))?;
            Ok(api::GetBiosSerialNumberResponse {
                serial_number: serial,
            })
        })
        .await
    }

    async fn get_service(
        &self,
        request: api::GetServiceRequest,
    ) -> Result<api::GetServiceResponse, Error> {
        self.run("/v1alpha1.System/GetService", move |ctx| {
            let s = service(ctx, &request.name)?;
            Ok(api::GetServiceResponse {
                display_name: s.display_name,
                start_type: start_type(&s.start_mode) as i32,
                status: status(&s.state) as i32,
            })
        })
        .await
    }

    async fn start_service(
        &self,
        request: api::StartServiceRequest,
    ) -> Result<api::StartServiceResponse, Error> {
        self.run("/v1alpha1.System/StartService", move |ctx| {
            start_service(ctx, &request.name).map(|()| api::StartServiceResponse {})
        })
        .await
    }

    async fn stop_service(
        &self,
        request: api::StopServiceRequest,
    ) -> Result<api::StopServiceResponse, Error> {
        self.run("/v1alpha1.System/StopService", move |ctx| {
            stop_service(ctx, &request.name, request.force).map(|()| api::StopServiceResponse {})
        })
        .await
    }
}
