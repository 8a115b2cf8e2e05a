//! The System group's waiting RPCs over the [`Host`]: `StartService` and
//! `StopService` poll the node and hold its lock only for each poll, never
//! while sleeping.

use std::time::Instant;

use super::{
    CODE_ACCEPTED, CODE_ALREADY_RUNNING, CODE_CANNOT_ACCEPT_CONTROL,
    CODE_DEPENDENT_SERVICES_RUNNING, ServiceStatus, SystemState, get_failed,
};
use crate::host::error::{HostError, HostResult};
use crate::host::state::Host;

/// Why a single-service stop failed.
enum StopFailure {
    DependentsRunning(String),
    Other(String),
}

/// The System group's waiting RPCs: they poll the node and hold its lock
/// only for each poll, never while sleeping.
impl Host {
    /// Runs `f` on the node's System state under one short lock.
    pub(super) fn with_system<R>(&self, f: impl FnOnce(&mut SystemState) -> R) -> R {
        self.run(|node| f(&mut node.system))
    }

    /// `StartService`: start, then poll until the state seen on
    /// the previous poll is `Running`, or time out. Blocks between polls.
    pub(crate) fn start_service(&self, name: &str) -> HostResult<()> {
        let wait_failed = |e: String| {
            HostError::unknown(format!(
                "failed to wait for service {name} state change. error: {e}"
            ))
        };
        let started = Instant::now();
        let (code, timing) =
            self.with_system(|s| (s.invoke_start(name, Instant::now()), s.timing()));
        let Some(code) = code else {
            return Err(HostError::unknown(get_failed(name)));
        };
        if code != CODE_ACCEPTED && code != CODE_ALREADY_RUNNING {
            return Err(wait_failed(format!(
                "error starting service name {name}. return value: {code}"
            )));
        }
        // Upstream quirk: the "done" test looks at the state read on the previous
        // poll, so even a running service needs one poll.
        let mut previous = None;
        loop {
            if previous == Some(ServiceStatus::Running) {
                return Ok(());
            }
            if started.elapsed() >= timing.timeout {
                break;
            }
            std::thread::sleep(timing.poll_interval);
            previous = self.with_system(|s| s.refresh(name, Instant::now()));
        }
        match self.with_system(|s| s.refresh(name, Instant::now())) {
            Some(ServiceStatus::Running) => Ok(()),
            _ => Err(HostError::unknown(format!(
                "timed out waiting for service {name} to become running"
            ))),
        }
    }

    fn stop_single(&self, name: &str) -> Result<(), StopFailure> {
        let (status, timing) = self.with_system(|s| (s.refresh(name, Instant::now()), s.timing()));
        match status {
            None => return Err(StopFailure::Other(get_failed(name))),
            Some(ServiceStatus::Stopped) => return Ok(()),
            Some(_) => {}
        }
        let started = Instant::now();
        let (code, state) = self.with_system(|s| {
            let code = s.invoke_stop(name, Instant::now());
            (code, s.refresh(name, Instant::now()))
        });
        let state = state.unwrap_or(ServiceStatus::Unknown);
        // Upstream quirk: the failure text is the service's state, not the code.
        let refused = format!("error stopping service name {name}. current state: {state}");
        match code {
            None => return Err(StopFailure::Other(get_failed(name))),
            Some(CODE_ACCEPTED | CODE_CANNOT_ACCEPT_CONTROL) => {}
            Some(CODE_DEPENDENT_SERVICES_RUNNING) => {
                return Err(StopFailure::DependentsRunning(refused));
            }
            Some(_) => return Err(StopFailure::Other(refused)),
        }
        loop {
            if self.with_system(|s| s.refresh(name, Instant::now())) == Some(ServiceStatus::Stopped)
            {
                return Ok(());
            }
            if started.elapsed() >= timing.timeout {
                return Err(StopFailure::Other(format!(
                    "timed out waiting for service {name} to stop"
                )));
            }
            std::thread::sleep(timing.poll_interval);
        }
    }

    /// `StopService`: a single stop; with `force`, when refused
    /// because dependents are running, stops the running dependents deepest
    /// first and then the service. Blocks between polls.
    pub(crate) fn stop_service(&self, name: &str, force: bool) -> HostResult<()> {
        let failed =
            |e: String| HostError::unknown(format!("failed to stop service {name}. error: {e}"));
        match self.stop_single(name) {
            Ok(()) => Ok(()),
            Err(StopFailure::Other(e)) => Err(failed(e)),
            Err(StopFailure::DependentsRunning(e)) if !force => Err(failed(e)),
            Err(StopFailure::DependentsRunning(_)) => {
                let order = self.with_system(|s| s.force_stop_order(name, Instant::now()));
                for service in order {
                    match self.stop_single(&service) {
                        Ok(()) => {}
                        Err(StopFailure::Other(e) | StopFailure::DependentsRunning(e)) => {
                            return Err(failed(e));
                        }
                    }
                }
                Ok(())
            }
        }
    }
}
