//! The System group of the simulated host: BIOS data and Windows services.
//!
//! The model: a BIOS serial number and a table of
//! services keyed by their case-folded key name. Each service has a state
//! (the Win32 `SERVICE_STATUS.dwCurrentState` values), a start mode, the
//! services it depends on (antecedents) and knobs for tests: delays spent in
//! the pending states, forced `Win32_Service` return codes and a `hang` flag
//! that keeps a service pending forever.
//!
//! State changes are driven by [`SystemState`] (pure, given the current
//! instant); the waiting loops of `StartService`/`StopService` (poll every
//! [`ServiceTiming::poll_interval`], give up after [`ServiceTiming::timeout`])
//! are `Host::start_service` and
//! `Host::stop_service` (in `wait.rs`),
//! which take the node's lock for each poll only.
//! These loops **block the calling thread** while they sleep between polls;
//! async callers should run them on a blocking thread.
//!
//! Modelling choices where upstream leaves the outcome to Windows: starting
//! a service in `Stop Pending` returns code 5 (an error for start); a
//! `Paused` service answers start with 10 and then never reaches `Running`
//! (timeout); an antecedent that cannot start makes the start fail with 13;
//! stopping a `Start Pending` service is accepted (5) and waits for
//! `Stopped`. Every start/stop failure text is the proxy's own
//! (csi-proxy v1.3.0 pkg/os/system).
//!
//! # Files
//! - `mod.rs`: services, their states and [`SystemState`]'s operations.
//! - `wait.rs`: the waiting loops of `StartService`/`StopService` over the
//!   [`Host`](crate::host::Host).
//! - `seed.rs`: the `[system]` seed section and the default node's BIOS and
//!   services.
//! - `tests.rs`: the model's tests and the waits on a whole node.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::error::{HostError, HostResult};

mod seed;
#[cfg(test)]
mod tests;
mod wait;

pub use seed::{DEFAULT_BIOS_SERIAL, ServiceSeed, SystemSeed, default_services};

/// `Win32_Service.StartService`/`StopService` return code: accepted.
pub(crate) const CODE_ACCEPTED: u32 = 0;
/// Return code: the service has running dependents (stop refused).
pub(crate) const CODE_DEPENDENT_SERVICES_RUNNING: u32 = 3;
/// Return code: the service cannot accept the control now.
pub(crate) const CODE_CANNOT_ACCEPT_CONTROL: u32 = 5;
/// Return code: already running (start is a no-op).
pub(crate) const CODE_ALREADY_RUNNING: u32 = 10;
/// Return code: a service this one depends on failed to start.
pub(crate) const CODE_DEPENDENCY_FAILURE: u32 = 13;
/// Return code: the service is disabled.
pub(crate) const CODE_DISABLED: u32 = 14;

/// Current state of a service; the numbers are the proto `ServiceStatus`
/// values (and Win32 `dwCurrentState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub enum ServiceStatus {
    /// `UNKNOWN = 0`: any state text the proxy does not recognise.
    Unknown = 0,
    /// `STOPPED = 1`.
    Stopped = 1,
    /// `START_PENDING = 2`.
    StartPending = 2,
    /// `STOP_PENDING = 3`.
    StopPending = 3,
    /// `RUNNING = 4`.
    Running = 4,
    /// `CONTINUE_PENDING = 5`.
    ContinuePending = 5,
    /// `PAUSE_PENDING = 6`.
    PausePending = 6,
    /// `PAUSED = 7`.
    Paused = 7,
}

impl ServiceStatus {
    const ALL: [ServiceStatus; 8] = [
        Self::Unknown,
        Self::Stopped,
        Self::StartPending,
        Self::StopPending,
        Self::Running,
        Self::ContinuePending,
        Self::PausePending,
        Self::Paused,
    ];

    /// The proto enum number.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The status with the given proto number, if it is one.
    pub fn from_code(code: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.code() == code)
    }

    /// The `Win32_Service.State` text of this status (`Start Pending`, ...).
    pub(crate) fn state_text(self) -> &'static str {
        match self {
            Self::Unknown => "Unknown",
            Self::Stopped => "Stopped",
            Self::StartPending => "Start Pending",
            Self::StopPending => "Stop Pending",
            Self::Running => "Running",
            Self::ContinuePending => "Continue Pending",
            Self::PausePending => "Pause Pending",
            Self::Paused => "Paused",
        }
    }

    /// Maps a `Win32_Service.State` text as the proxy does:
    /// exact known texts map to their status, anything else to `Unknown`.
    pub fn from_state_text(text: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|s| *s != Self::Unknown && s.state_text() == text)
            .unwrap_or(Self::Unknown)
    }
}

impl TryFrom<String> for ServiceStatus {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|s| s.state_text().eq_ignore_ascii_case(&text))
            .ok_or_else(|| {
                format!(
                    "unknown service status `{text}`, expected one of: Stopped, Start Pending, \
                     Stop Pending, Running, Continue Pending, Pause Pending, Paused, Unknown"
                )
            })
    }
}

impl fmt::Display for ServiceStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.state_text())
    }
}

/// Start type as reported by `GetService`; the numbers are the proto
/// `StartType` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StartType {
    /// `BOOT = 0` (also what an unrecognised start mode reports).
    Boot = 0,
    /// `SYSTEM = 1`.
    System = 1,
    /// `AUTOMATIC = 2`.
    Automatic = 2,
    /// `MANUAL = 3`.
    Manual = 3,
    /// `DISABLED = 4`.
    Disabled = 4,
}

impl StartType {
    /// The proto enum number.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The start type with the given proto number, if it is one.
    pub fn from_code(code: i32) -> Option<Self> {
        [
            Self::Boot,
            Self::System,
            Self::Automatic,
            Self::Manual,
            Self::Disabled,
        ]
        .into_iter()
        .find(|t| t.code() == code)
    }

    /// Maps a `Win32_Service.StartMode` text as the proxy does: `Boot`, `System`, `Auto`, `Manual`, `Disabled`; **anything else
    /// is `Boot`** (upstream quirk).
    pub(crate) fn from_start_mode_text(text: &str) -> Self {
        match text {
            "System" => Self::System,
            "Auto" => Self::Automatic,
            "Manual" => Self::Manual,
            "Disabled" => Self::Disabled,
            _ => Self::Boot,
        }
    }
}

/// Configured start mode of a simulated service (`Win32_Service.StartMode`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(from = "String")]
pub enum StartMode {
    /// `Boot`.
    Boot,
    /// `System`.
    System,
    /// `Auto` (also delayed-auto services).
    Auto,
    /// `Manual`.
    Manual,
    /// `Disabled`: starting fails with return code 14.
    Disabled,
    /// Any other text; reported as start type `BOOT` (0).
    Other(String),
}

impl StartMode {
    /// Parses a `StartMode` text; unknown texts become [`StartMode::Other`].
    pub(crate) fn from_wmi_text(text: &str) -> Self {
        match text {
            "Boot" => Self::Boot,
            "System" => Self::System,
            "Auto" => Self::Auto,
            "Manual" => Self::Manual,
            "Disabled" => Self::Disabled,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The `StartMode` text WMI reports.
    pub(crate) fn wmi_text(&self) -> &str {
        match self {
            Self::Boot => "Boot",
            Self::System => "System",
            Self::Auto => "Auto",
            Self::Manual => "Manual",
            Self::Disabled => "Disabled",
            Self::Other(text) => text,
        }
    }

    /// The start type `GetService` reports for this mode.
    pub(crate) fn start_type(&self) -> StartType {
        StartType::from_start_mode_text(self.wmi_text())
    }
}

impl From<String> for StartMode {
    fn from(text: String) -> Self {
        Self::from_wmi_text(&text)
    }
}

/// What `GetService` returns (internal, version-neutral).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceInfo {
    /// The display name.
    pub display_name: String,
    /// Start type derived from the start mode.
    pub start_type: StartType,
    /// Current status.
    pub status: ServiceStatus,
}

/// A pending transition: the state reached at `ready_at` (`None` = never).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pending {
    target: ServiceStatus,
    ready_at: Option<Instant>,
}

/// One simulated service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// Key name, original case.
    pub name: String,
    /// Display name.
    pub display_name: String,
    /// Start mode.
    pub start_mode: StartMode,
    /// Key names of the services this one depends on (antecedents).
    pub depends_on: Vec<String>,
    /// Time spent in `Start Pending` before `Running` (zero = immediate).
    pub start_delay: Duration,
    /// Time spent in `Stop Pending` before `Stopped` (zero = immediate).
    pub stop_delay: Duration,
    /// Forces the return code of the next and every later start (e.g. 2, 14).
    pub start_result: Option<u32>,
    /// Forces the return code of every stop.
    pub stop_result: Option<u32>,
    /// Never leaves a pending state (for timeout tests).
    pub hang: bool,
    status: ServiceStatus,
    pending: Option<Pending>,
}

impl Service {
    /// A service with the given key name, display name, start mode and
    /// status; no dependencies, no delays.
    pub fn new(
        name: impl Into<String>,
        display_name: impl Into<String>,
        start_mode: StartMode,
        status: ServiceStatus,
    ) -> Self {
        Self {
            name: name.into(),
            display_name: display_name.into(),
            start_mode,
            depends_on: Vec::new(),
            start_delay: Duration::ZERO,
            stop_delay: Duration::ZERO,
            start_result: None,
            stop_result: None,
            hang: false,
            status,
            pending: None,
        }
    }

    /// Builder: the services this one depends on.
    pub(crate) fn with_dependencies<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.depends_on = names.into_iter().map(Into::into).collect();
        self
    }

    /// Current status as last refreshed.
    pub fn status(&self) -> ServiceStatus {
        self.status
    }

    fn refresh(&mut self, now: Instant) {
        if let Some(p) = self.pending {
            if self.hang {
                return;
            }
            if p.ready_at.is_some_and(|t| now >= t) {
                self.status = p.target;
                self.pending = None;
            }
        }
    }
}

/// Poll interval and timeout of the start/stop waiting loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceTiming {
    /// Time between two polls (upstream: 200 ms).
    pub poll_interval: Duration,
    /// Time after which a start/stop gives up (upstream: 30 s).
    pub timeout: Duration,
}

impl Default for ServiceTiming {
    /// Upstream's values: 200 ms poll interval, 30 s timeout.
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_millis(200),
            timeout: Duration::from_secs(30),
        }
    }
}

fn key(name: &str) -> String {
    name.to_lowercase()
}

fn not_found(name: &str) -> String {
    format!("failed to query service {name}: not found")
}

/// Upstream's text when the service lookup that opens every RPC fails.
fn get_failed(name: &str) -> String {
    format!("failed to get service {name}. error: {}", not_found(name))
}

/// State of the System group: BIOS serial number and services.
#[derive(Debug, Clone)]
pub struct SystemState {
    bios_serial: Option<String>,
    services: BTreeMap<String, Service>,
    timing: ServiceTiming,
}

impl SystemState {
    /// An empty host: the given BIOS serial (`None` = no BIOS instance, so
    /// `GetBIOSSerialNumber` fails) and no services.
    pub(crate) fn new(bios_serial: Option<String>) -> Self {
        Self {
            bios_serial,
            services: BTreeMap::new(),
            timing: ServiceTiming::default(),
        }
    }

    fn depends_transitively(&self, from: &str, on: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut queue: VecDeque<String> = self
            .services
            .get(&key(from))
            .map(|s| s.depends_on.iter().map(|d| key(d)).collect())
            .unwrap_or_default();
        while let Some(k) = queue.pop_front() {
            if k == key(on) {
                return true;
            }
            if seen.insert(k.clone())
                && let Some(s) = self.services.get(&k)
            {
                queue.extend(s.depends_on.iter().map(|d| key(d)));
            }
        }
        false
    }

    /// Sets the BIOS serial number (`None` removes the BIOS instance).
    pub fn set_bios_serial(&mut self, serial: Option<String>) {
        self.bios_serial = serial;
    }

    /// Adds or replaces a service (test control).
    pub fn insert_service(&mut self, service: Service) {
        self.services.insert(key(&service.name), service);
    }

    /// The service with this key name (case-insensitive), if any.
    pub fn service(&self, name: &str) -> Option<&Service> {
        self.services.get(&key(name))
    }

    /// Mutable access to a service, for test controls (delays, forced
    /// codes, `hang`).
    pub fn service_mut(&mut self, name: &str) -> Option<&mut Service> {
        self.services.get_mut(&key(name))
    }

    /// Forces a service's status behind the proxy's back (like
    /// `Stop-Service` in PowerShell); cancels any pending transition.
    pub fn set_status(&mut self, name: &str, status: ServiceStatus) -> HostResult<()> {
        let service = self
            .services
            .get_mut(&key(name))
            .ok_or_else(|| HostError::unknown(not_found(name)))?;
        service.status = status;
        service.pending = None;
        Ok(())
    }

    /// Whether the service exists and is `Running` now (used by the iSCSI
    /// coupling to `MSiSCSI`).
    pub fn is_running(&mut self, name: &str, now: Instant) -> bool {
        self.refresh(name, now) == Some(ServiceStatus::Running)
    }

    /// The timing of the start/stop loops.
    pub(crate) fn timing(&self) -> ServiceTiming {
        self.timing
    }

    /// Sets the timing of the start/stop loops (tests use short values).
    pub fn set_timing(&mut self, timing: ServiceTiming) {
        self.timing = timing;
    }

    /// `GetBIOSSerialNumber`.
    pub fn bios_serial_number(&self) -> HostResult<String> {
        self.bios_serial.clone().ok_or_else(|| {
            HostError::unknown(
                "failed to get BIOS element: failed to query BIOS element: not found",
            )
        })
    }

    /// `GetService` at `now`.
    pub(crate) fn get_service(&mut self, name: &str, now: Instant) -> HostResult<ServiceInfo> {
        let service = self
            .services
            .get_mut(&key(name))
            .ok_or_else(|| HostError::unknown(get_failed(name)))?;
        service.refresh(now);
        Ok(ServiceInfo {
            display_name: service.display_name.clone(),
            start_type: service.start_mode.start_type(),
            status: service.status,
        })
    }

    /// Refreshes and reads a service's status (`None` if unknown).
    pub fn refresh(&mut self, name: &str, now: Instant) -> Option<ServiceStatus> {
        let service = self.services.get_mut(&key(name))?;
        service.refresh(now);
        Some(service.status)
    }

    /// Key names of the services that depend directly on `name`, in key
    /// order.
    pub(crate) fn dependents(&self, name: &str) -> Vec<String> {
        let k = key(name);
        self.services
            .values()
            .filter(|s| s.depends_on.iter().any(|d| key(d) == k))
            .map(|s| s.name.clone())
            .collect()
    }

    /// `Win32_Service.StartService` at `now`: returns the return code; on 0
    /// the service (and any stopped antecedents) is on its way to `Running`.
    /// `None` if the service does not exist.
    pub(crate) fn invoke_start(&mut self, name: &str, now: Instant) -> Option<u32> {
        let service = self.services.get_mut(&key(name))?;
        service.refresh(now);
        if let Some(code) = service.start_result.filter(|c| *c != CODE_ACCEPTED) {
            return Some(code);
        }
        Some(match service.status {
            ServiceStatus::Stopped => match self.start_tree(name, now, &mut Vec::new()) {
                Ok(_) => CODE_ACCEPTED,
                Err(code) => code,
            },
            ServiceStatus::StopPending | ServiceStatus::Unknown => CODE_CANNOT_ACCEPT_CONTROL,
            _ => CODE_ALREADY_RUNNING,
        })
    }

    /// Starts `name` and its stopped antecedents; returns when it will be
    /// running (`None` = never) or the failure code.
    fn start_tree(
        &mut self,
        name: &str,
        now: Instant,
        stack: &mut Vec<String>,
    ) -> Result<Option<Instant>, u32> {
        let k = key(name);
        if stack.contains(&k) {
            return Err(CODE_DEPENDENCY_FAILURE);
        }
        let service = self.services.get_mut(&k).ok_or(CODE_DEPENDENCY_FAILURE)?;
        service.refresh(now);
        match service.status {
            ServiceStatus::Running => return Ok(Some(now)),
            ServiceStatus::StartPending => {
                return Ok(service.pending.and_then(|p| p.ready_at));
            }
            ServiceStatus::Stopped => {}
            _ => return Err(CODE_DEPENDENCY_FAILURE),
        }
        if service.start_mode == StartMode::Disabled {
            return Err(CODE_DISABLED);
        }
        if let Some(code) = service.start_result.filter(|c| *c != CODE_ACCEPTED) {
            return Err(code);
        }
        let antecedents = service.depends_on.clone();
        stack.push(k.clone());
        let mut ready = Some(now);
        for antecedent in &antecedents {
            let r = self
                .start_tree(antecedent, now, stack)
                .map_err(|_| CODE_DEPENDENCY_FAILURE)?;
            ready = match (ready, r) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
        }
        stack.pop();
        let service = self.services.get_mut(&k).expect("checked above");
        let ready_at = if service.hang {
            None
        } else {
            ready.map(|t| t + service.start_delay)
        };
        match ready_at {
            Some(t) if t <= now => {
                service.status = ServiceStatus::Running;
                service.pending = None;
            }
            _ => {
                service.status = ServiceStatus::StartPending;
                service.pending = Some(Pending {
                    target: ServiceStatus::Running,
                    ready_at,
                });
            }
        }
        Ok(ready_at)
    }

    /// `Win32_Service.StopService` at `now`: returns the return code
    /// (`3` while a dependent is running); `None` if the service does not
    /// exist.
    pub(crate) fn invoke_stop(&mut self, name: &str, now: Instant) -> Option<u32> {
        let k = key(name);
        let dependents = self.dependents(name);
        let mut dependent_running = false;
        for d in dependents {
            if self.refresh(&d, now) == Some(ServiceStatus::Running) {
                dependent_running = true;
            }
        }
        let service = self.services.get_mut(&k)?;
        service.refresh(now);
        if let Some(code) = service.stop_result.filter(|c| *c != CODE_ACCEPTED) {
            return Some(code);
        }
        if dependent_running {
            return Some(CODE_DEPENDENT_SERVICES_RUNNING);
        }
        match service.status {
            ServiceStatus::Stopped => return Some(CODE_ACCEPTED),
            ServiceStatus::StopPending | ServiceStatus::StartPending => {
                return Some(CODE_CANNOT_ACCEPT_CONTROL);
            }
            _ => {}
        }
        if !service.hang && service.stop_delay.is_zero() {
            service.status = ServiceStatus::Stopped;
            service.pending = None;
        } else {
            service.status = ServiceStatus::StopPending;
            service.pending = Some(Pending {
                target: ServiceStatus::Stopped,
                ready_at: (!service.hang).then(|| now + service.stop_delay),
            });
        }
        Some(CODE_ACCEPTED)
    }

    /// The order in which a forced stop of `name` stops services
    ///: breadth-first over running dependents, each
    /// prepended, so the deepest dependents come first and `name` last.
    /// Dependents that are not running (and what depends on them) are
    /// skipped.
    pub(crate) fn force_stop_order(&mut self, name: &str, now: Instant) -> Vec<String> {
        let mut order: VecDeque<String> = VecDeque::new();
        let mut seen = BTreeSet::new();
        let mut queue = VecDeque::new();
        let Some(service) = self.service(name) else {
            return Vec::new();
        };
        let start = service.name.clone();
        seen.insert(key(&start));
        queue.push_back(start);
        while let Some(current) = queue.pop_front() {
            order.push_front(current.clone());
            for dependent in self.dependents(&current) {
                if self.refresh(&dependent, now) == Some(ServiceStatus::Running)
                    && seen.insert(key(&dependent))
                {
                    queue.push_back(dependent);
                }
            }
        }
        order.into()
    }
}
