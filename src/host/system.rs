//! The System group of the simulated host: BIOS data and Windows services.
//!
//! The model follows `spec/system.md` §6: a BIOS serial number and a table of
//! services keyed by their case-folded key name. Each service has a state
//! (the Win32 `SERVICE_STATUS.dwCurrentState` values), a start mode, the
//! services it depends on (antecedents) and knobs for tests: delays spent in
//! the pending states, forced `Win32_Service` return codes and a `hang` flag
//! that keeps a service pending forever.
//!
//! State changes are driven by [`SystemState`] (pure, given the current
//! instant); the waiting loops of `StartService`/`StopService` (poll every
//! [`ServiceTiming::poll_interval`], give up after [`ServiceTiming::timeout`])
//! are [`Host::start_service`] and [`Host::stop_service`], which take the
//! node's lock for each poll only.
//! These loops **block the calling thread** while they sleep between polls;
//! async callers should run them on a blocking thread.
//!
//! Modelling choices where upstream leaves the outcome to Windows: starting
//! a service in `Stop Pending` returns code 5 (an error for start); a
//! `Paused` service answers start with 10 and then never reaches `Running`
//! (timeout); an antecedent that cannot start makes the start fail with 13;
//! stopping a `Start Pending` service is accepted (5) and waits for
//! `Stopped`. Every start/stop failure text follows system.md §4.3/§4.4.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::error::{HostError, HostResult};
use super::node::Host;

/// `Win32_Service.StartService`/`StopService` return code: accepted.
pub const CODE_ACCEPTED: u32 = 0;
/// Return code: the service has running dependents (stop refused).
pub const CODE_DEPENDENT_SERVICES_RUNNING: u32 = 3;
/// Return code: the service cannot accept the control now.
pub const CODE_CANNOT_ACCEPT_CONTROL: u32 = 5;
/// Return code: already running (start is a no-op).
pub const CODE_ALREADY_RUNNING: u32 = 10;
/// Return code: a service this one depends on failed to start.
pub const CODE_DEPENDENCY_FAILURE: u32 = 13;
/// Return code: the service is disabled.
pub const CODE_DISABLED: u32 = 14;

/// Default BIOS serial number of the default node.
pub const DEFAULT_BIOS_SERIAL: &str = "VMware-56 4d 3a 1c 9e 8b 2f 70-0a 61 5e 3d 2c 4b 1f 8a";

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
    pub fn state_text(self) -> &'static str {
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

    /// Maps a `Win32_Service.State` text as the proxy does (system.md §4.2):
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

    /// Maps a `Win32_Service.StartMode` text as the proxy does (system.md
    /// §4.2): `Boot`, `System`, `Auto`, `Manual`, `Disabled`; **anything else
    /// is `Boot`** (upstream quirk).
    pub fn from_start_mode_text(text: &str) -> Self {
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
    pub fn from_wmi_text(text: &str) -> Self {
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
    pub fn wmi_text(&self) -> &str {
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
    pub fn start_type(&self) -> StartType {
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

/// One simulated service (system.md §6).
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
    pub fn with_dependencies<I, S>(mut self, names: I) -> Self
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

/// Seed of one service (node seed file, `[[services]]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSeed {
    /// Key name (`MSiSCSI`).
    pub name: String,
    /// Display name; defaults to the key name.
    #[serde(default)]
    pub display_name: Option<String>,
    /// Initial status text (`Running`, `Stopped`, `Start Pending`, ...,
    /// case-insensitive); default `Stopped`.
    #[serde(default = "default_seed_status")]
    pub status: ServiceStatus,
    /// Start mode text (`Boot`, `System`, `Auto`, `Manual`, `Disabled`, or
    /// any other text, reported as BOOT); default `Manual`.
    #[serde(default = "default_seed_start_mode")]
    pub start_type: StartMode,
    /// Key names of the services this one depends on.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Milliseconds spent in `Start Pending`; default 0.
    #[serde(default)]
    pub start_delay_ms: u64,
    /// Milliseconds spent in `Stop Pending`; default 0.
    #[serde(default)]
    pub stop_delay_ms: u64,
}

fn default_seed_status() -> ServiceStatus {
    ServiceStatus::Stopped
}

fn default_seed_start_mode() -> StartMode {
    StartMode::Manual
}

impl ServiceSeed {
    fn to_service(&self) -> Service {
        let mut service = Service::new(
            self.name.clone(),
            self.display_name
                .clone()
                .unwrap_or_else(|| self.name.clone()),
            self.start_type.clone(),
            self.status,
        )
        .with_dependencies(self.depends_on.iter().cloned());
        service.start_delay = Duration::from_millis(self.start_delay_ms);
        service.stop_delay = Duration::from_millis(self.stop_delay_ms);
        service
    }
}

fn seed(
    name: &str,
    display: &str,
    mode: StartMode,
    status: ServiceStatus,
    deps: &[&str],
) -> ServiceSeed {
    ServiceSeed {
        name: name.into(),
        display_name: Some(display.into()),
        status,
        start_type: mode,
        depends_on: deps.iter().map(|d| (*d).to_owned()).collect(),
        start_delay_ms: 0,
        stop_delay_ms: 0,
    }
}

/// Services of the default node:
///
/// | name | display name | start | status | depends on |
/// |---|---|---|---|---|
/// | `MSiSCSI` | Microsoft iSCSI Initiator Service | Manual | Stopped | – |
/// | `SamSS` | Security Accounts Manager | Auto | Running | – |
/// | `LanmanServer` | Server | Auto | Running | `SamSS` |
/// | `LanmanWorkstation` | Workstation | Auto | Running | – |
/// | `Browser` | Computer Browser | Manual | Running | `LanmanWorkstation`, `LanmanServer` |
/// | `Netlogon` | Netlogon | Manual | Stopped | `LanmanWorkstation`, `LanmanServer` |
/// | `W32Time` | Windows Time | Manual | Running | – |
///
/// So a forced stop of `SamSS` stops `Browser`, `LanmanServer`, `SamSS` in
/// that order and skips the stopped `Netlogon`.
pub fn default_services() -> Vec<ServiceSeed> {
    use ServiceStatus::{Running, Stopped};
    vec![
        seed(
            "MSiSCSI",
            "Microsoft iSCSI Initiator Service",
            StartMode::Manual,
            Stopped,
            &[],
        ),
        seed(
            "SamSS",
            "Security Accounts Manager",
            StartMode::Auto,
            Running,
            &[],
        ),
        seed(
            "LanmanServer",
            "Server",
            StartMode::Auto,
            Running,
            &["SamSS"],
        ),
        seed(
            "LanmanWorkstation",
            "Workstation",
            StartMode::Auto,
            Running,
            &[],
        ),
        seed(
            "Browser",
            "Computer Browser",
            StartMode::Manual,
            Running,
            &["LanmanWorkstation", "LanmanServer"],
        ),
        seed(
            "Netlogon",
            "Netlogon",
            StartMode::Manual,
            Stopped,
            &["LanmanWorkstation", "LanmanServer"],
        ),
        seed("W32Time", "Windows Time", StartMode::Manual, Running, &[]),
    ]
}

/// The System part of a node seed file: BIOS serial and services.
///
/// ```toml
/// bios_serial = "0000-0000"
/// [[services]]
/// name = "MSiSCSI"
/// display_name = "Microsoft iSCSI Initiator Service"
/// status = "Stopped"
/// start_type = "Manual"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemSeed {
    /// BIOS serial number; absent = no BIOS instance (GetBIOSSerialNumber
    /// fails).
    #[serde(default)]
    pub bios_serial: Option<String>,
    /// Services; absent = none.
    #[serde(default)]
    pub services: Vec<ServiceSeed>,
}

impl SystemSeed {
    /// The default node: [`DEFAULT_BIOS_SERIAL`] and [`default_services`].
    pub fn default_node() -> Self {
        Self {
            bios_serial: Some(DEFAULT_BIOS_SERIAL.to_owned()),
            services: default_services(),
        }
    }

    /// Builds the state (see [`SystemState::from_seed`]).
    pub fn build(&self) -> HostResult<SystemState> {
        SystemState::from_seed(self.bios_serial.as_deref(), &self.services)
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

impl Default for SystemState {
    /// The default node: [`DEFAULT_BIOS_SERIAL`] and [`default_services`].
    fn default() -> Self {
        Self::from_seed(Some(DEFAULT_BIOS_SERIAL), &default_services())
            .expect("default services are consistent")
    }
}

impl SystemState {
    /// An empty host: the given BIOS serial (`None` = no BIOS instance, so
    /// `GetBIOSSerialNumber` fails) and no services.
    pub fn new(bios_serial: Option<String>) -> Self {
        Self {
            bios_serial,
            services: BTreeMap::new(),
            timing: ServiceTiming::default(),
        }
    }

    /// Builds the state from seed data. Errors (`INVALID_ARGUMENT`) name the
    /// offending entry: duplicate names, unknown or cyclic dependencies.
    pub fn from_seed(bios_serial: Option<&str>, services: &[ServiceSeed]) -> HostResult<Self> {
        let mut state = Self::new(bios_serial.map(str::to_owned));
        for (i, seed) in services.iter().enumerate() {
            if state.services.contains_key(&key(&seed.name)) {
                return Err(HostError::invalid_argument(format!(
                    "services[{i}].name: duplicate service `{}`",
                    seed.name
                )));
            }
            state.insert_service(seed.to_service());
        }
        for (i, seed) in services.iter().enumerate() {
            for dep in &seed.depends_on {
                if !state.services.contains_key(&key(dep)) {
                    return Err(HostError::invalid_argument(format!(
                        "services[{i}].depends_on: unknown service `{dep}`"
                    )));
                }
            }
            if state.depends_transitively(&seed.name, &seed.name) {
                return Err(HostError::invalid_argument(format!(
                    "services[{i}].depends_on: dependency cycle through `{}`",
                    seed.name
                )));
            }
        }
        Ok(state)
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
    pub fn timing(&self) -> ServiceTiming {
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
    pub fn get_service(&mut self, name: &str, now: Instant) -> HostResult<ServiceInfo> {
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
    pub fn dependents(&self, name: &str) -> Vec<String> {
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
    pub fn invoke_start(&mut self, name: &str, now: Instant) -> Option<u32> {
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
    pub fn invoke_stop(&mut self, name: &str, now: Instant) -> Option<u32> {
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
    /// (system.md §4.4): breadth-first over running dependents, each
    /// prepended, so the deepest dependents come first and `name` last.
    /// Dependents that are not running (and what depends on them) are
    /// skipped.
    pub fn force_stop_order(&mut self, name: &str, now: Instant) -> Vec<String> {
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

/// Why a single-service stop failed.
enum StopFailure {
    DependentsRunning(String),
    Other(String),
}

/// The System group's waiting RPCs: they poll the node and hold its lock
/// only for each poll, never while sleeping.
impl Host {
    /// Runs `f` on the node's System state under one short lock.
    fn with_system<R>(&self, f: impl FnOnce(&mut SystemState) -> R) -> R {
        self.run(|node| f(&mut node.system))
    }

    /// `StartService` (system.md §4.3): start, then poll until the state seen on
    /// the previous poll is `Running`, or time out. Blocks between polls.
    pub fn start_service(&self, name: &str) -> HostResult<()> {
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

    /// `StopService` (system.md §4.4): a single stop; with `force`, when refused
    /// because dependents are running, stops the running dependents deepest
    /// first and then the service. Blocks between polls.
    pub fn stop_service(&self, name: &str, force: bool) -> HostResult<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fast() -> ServiceTiming {
        ServiceTiming {
            poll_interval: Duration::from_millis(1),
            timeout: Duration::from_millis(60),
        }
    }

    fn running(name: &str, deps: &[&str]) -> Service {
        Service::new(
            name,
            format!("{name} service"),
            StartMode::Auto,
            ServiceStatus::Running,
        )
        .with_dependencies(deps.iter().copied())
    }

    /// A node in its own sandbox (dropped with it).
    struct Node1 {
        host: Host,
        _dir: tempfile::TempDir,
    }

    impl std::ops::Deref for Node1 {
        type Target = Host;
        fn deref(&self) -> &Host {
            &self.host
        }
    }

    /// A node whose System state is exactly `state`.
    fn node_with(state: SystemState) -> Node1 {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::new(crate::host::HostConfig::new(dir.path())).unwrap();
        host.lock().system = state;
        Node1 { host, _dir: dir }
    }

    fn adapter(services: Vec<Service>) -> Node1 {
        let mut state = SystemState::new(Some("SER-1".into()));
        state.set_timing(fast());
        for s in services {
            state.insert_service(s);
        }
        node_with(state)
    }

    fn status(a: &Host, name: &str) -> ServiceStatus {
        get_service(a, name).unwrap().status
    }

    fn get_service(h: &Host, name: &str) -> HostResult<ServiceInfo> {
        h.run(|node| node.system.get_service(name, Instant::now()))
    }

    #[test]
    fn default_node_has_the_default_system_seed() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::new(crate::host::HostConfig::new(dir.path())).unwrap();
        assert_eq!(
            SystemSeed::default_node()
                .build()
                .unwrap()
                .bios_serial_number()
                .unwrap(),
            host.with_system(|s| s.bios_serial_number()).unwrap()
        );
    }

    #[test]
    fn concurrent_start_stop_stays_consistent() {
        let a = std::sync::Arc::new(adapter(vec![running("A", &[]), running("B", &["A"])]));
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let a = a.clone();
                std::thread::spawn(move || {
                    for _ in 0..5 {
                        if i % 2 == 0 {
                            let _ = a.start_service("B");
                        } else {
                            let _ = a.stop_service("A", true);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // Whatever interleaving happened, B never runs without A.
        if status(&a, "B") == ServiceStatus::Running {
            assert_eq!(status(&a, "A"), ServiceStatus::Running);
        }
        a.start_service("B").unwrap();
        a.stop_service("A", true).unwrap();
        assert_eq!(status(&a, "B"), ServiceStatus::Stopped);
    }

    #[test]
    fn bios_serial_and_missing_bios() {
        let a = node_with(SystemState::default());
        assert_eq!(
            a.with_system(|s| s.bios_serial_number()).unwrap(),
            DEFAULT_BIOS_SERIAL
        );
        a.with_system(|s| s.set_bios_serial(None));
        let err = a.with_system(|s| s.bios_serial_number()).unwrap_err();
        assert_eq!(err.kind(), crate::host::HostErrorKind::Unknown);
        assert_eq!(
            err.message(),
            "failed to get BIOS element: failed to query BIOS element: not found"
        );
    }

    #[test]
    fn get_service_fields_of_default_msiscsi() {
        let a = node_with(SystemState::default());
        let info = get_service(&a, "msiscsi").unwrap();
        assert_eq!(
            info,
            ServiceInfo {
                display_name: "Microsoft iSCSI Initiator Service".into(),
                start_type: StartType::Manual,
                status: ServiceStatus::Stopped,
            }
        );
        assert_eq!(info.start_type.code(), 3);
        assert_eq!(info.status.code(), 1);
    }

    #[test]
    fn unknown_service_errors() {
        let a = adapter(vec![]);
        assert_eq!(
            get_service(&a, "").unwrap_err().message(),
            "failed to get service . error: failed to query service : not found"
        );
        assert_eq!(
            a.start_service("nope").unwrap_err().message(),
            "failed to get service nope. error: failed to query service nope: not found"
        );
        assert_eq!(
            a.stop_service("nope", true).unwrap_err().message(),
            "failed to stop service nope. error: failed to get service nope. error: failed to query service nope: not found"
        );
    }

    #[test]
    fn state_text_and_start_mode_mappings() {
        let table = [
            ("Stopped", 1),
            ("Start Pending", 2),
            ("Stop Pending", 3),
            ("Running", 4),
            ("Continue Pending", 5),
            ("Pause Pending", 6),
            ("Paused", 7),
            ("Unknown", 0),
            ("running", 0),
            ("Bogus", 0),
        ];
        for (text, code) in table {
            assert_eq!(ServiceStatus::from_state_text(text).code(), code, "{text}");
        }
        let modes = [
            ("Boot", 0),
            ("System", 1),
            ("Auto", 2),
            ("Manual", 3),
            ("Disabled", 4),
            ("Delayed", 0),
            ("", 0),
        ];
        for (text, code) in modes {
            assert_eq!(StartType::from_start_mode_text(text).code(), code, "{text}");
            assert_eq!(StartMode::from_wmi_text(text).start_type().code(), code);
        }
        assert_eq!(ServiceStatus::from_code(7), Some(ServiceStatus::Paused));
        assert_eq!(ServiceStatus::from_code(8), None);
        assert_eq!(StartType::from_code(4), Some(StartType::Disabled));
        assert_eq!(StartType::from_code(5), None);
    }

    #[test]
    fn start_then_stop_state_machine() {
        let a = node_with(SystemState::default());
        a.with_system(|s| s.set_timing(fast()));
        assert_eq!(status(&a, "MSiSCSI"), ServiceStatus::Stopped);
        a.start_service("MSiSCSI").unwrap();
        assert_eq!(status(&a, "MSiSCSI"), ServiceStatus::Running);
        // Idempotent start of a running service.
        a.start_service("msiscsi").unwrap();
        a.stop_service("MSiSCSI", false).unwrap();
        assert_eq!(status(&a, "MSiSCSI"), ServiceStatus::Stopped);
        // Idempotent stop.
        a.stop_service("MSiSCSI", false).unwrap();
    }

    #[test]
    fn start_with_delay_passes_through_start_pending() {
        let mut svc = Service::new("Slow", "Slow", StartMode::Manual, ServiceStatus::Stopped);
        svc.start_delay = Duration::from_millis(10);
        svc.stop_delay = Duration::from_millis(10);
        let a = adapter(vec![svc]);
        let now = Instant::now();
        assert_eq!(a.with_system(|s| s.invoke_start("Slow", now)), Some(0));
        assert_eq!(
            a.with_system(|s| s.refresh("Slow", now)),
            Some(ServiceStatus::StartPending)
        );
        a.start_service("Slow").unwrap();
        assert_eq!(status(&a, "Slow"), ServiceStatus::Running);
        a.stop_service("Slow", false).unwrap();
        assert_eq!(status(&a, "Slow"), ServiceStatus::Stopped);
    }

    #[test]
    fn start_failures_and_timeout() {
        let disabled = Service::new("Off", "Off", StartMode::Disabled, ServiceStatus::Stopped);
        let mut denied = Service::new(
            "Denied",
            "Denied",
            StartMode::Manual,
            ServiceStatus::Stopped,
        );
        denied.start_result = Some(2);
        let mut hung = Service::new("Hung", "Hung", StartMode::Manual, ServiceStatus::Stopped);
        hung.hang = true;
        let a = adapter(vec![disabled, denied, hung]);
        assert_eq!(
            a.start_service("Off").unwrap_err().message(),
            "failed to wait for service Off state change. error: error starting service name Off. return value: 14"
        );
        assert_eq!(
            a.start_service("Denied").unwrap_err().message(),
            "failed to wait for service Denied state change. error: error starting service name Denied. return value: 2"
        );
        assert_eq!(
            a.start_service("Hung").unwrap_err().message(),
            "timed out waiting for service Hung to become running"
        );
        assert_eq!(status(&a, "Hung"), ServiceStatus::StartPending);
    }

    #[test]
    fn start_starts_antecedents_and_fails_on_disabled_antecedent() {
        let a = adapter(vec![
            Service::new("A", "A", StartMode::Manual, ServiceStatus::Stopped),
            Service::new("B", "B", StartMode::Manual, ServiceStatus::Stopped)
                .with_dependencies(["A"]),
            Service::new("X", "X", StartMode::Disabled, ServiceStatus::Stopped),
            Service::new("Y", "Y", StartMode::Manual, ServiceStatus::Stopped)
                .with_dependencies(["X"]),
        ]);
        a.start_service("B").unwrap();
        assert_eq!(status(&a, "A"), ServiceStatus::Running);
        assert_eq!(status(&a, "B"), ServiceStatus::Running);
        assert_eq!(
            a.start_service("Y").unwrap_err().message(),
            "failed to wait for service Y state change. error: error starting service name Y. return value: 13"
        );
        assert_eq!(status(&a, "Y"), ServiceStatus::Stopped);
    }

    #[test]
    fn force_stop_order_is_c_b_a() {
        let a = adapter(vec![
            running("A", &[]),
            running("B", &["A"]),
            running("C", &["B"]),
        ]);
        let order = a.with_system(|s| s.force_stop_order("a", Instant::now()));
        assert_eq!(order, ["C", "B", "A"]);
    }

    #[test]
    fn force_stop_order_skips_stopped_dependent() {
        let a = adapter(vec![
            running("A", &[]),
            running("B", &["A"]),
            Service::new("C", "C", StartMode::Manual, ServiceStatus::Stopped)
                .with_dependencies(["A"]),
            running("D", &["C"]),
        ]);
        // C is stopped: it and what hangs below it are not explored.
        let order = a.with_system(|s| s.force_stop_order("A", Instant::now()));
        assert_eq!(order, ["B", "A"]);
    }

    #[test]
    fn stop_without_force_refuses_running_dependents() {
        let a = adapter(vec![
            running("A", &[]),
            running("B", &["A"]),
            running("C", &["B"]),
        ]);
        assert_eq!(
            a.stop_service("A", false).unwrap_err().message(),
            "failed to stop service A. error: error stopping service name A. current state: Running"
        );
        for name in ["A", "B", "C"] {
            assert_eq!(status(&a, name), ServiceStatus::Running);
        }
    }

    #[test]
    fn stop_with_force_stops_dependents_first() {
        let a = adapter(vec![
            running("A", &[]),
            running("B", &["A"]),
            running("C", &["B"]),
            Service::new("S", "S", StartMode::Manual, ServiceStatus::Stopped)
                .with_dependencies(["A"]),
        ]);
        a.stop_service("A", true).unwrap();
        for name in ["A", "B", "C", "S"] {
            assert_eq!(status(&a, name), ServiceStatus::Stopped, "{name}");
        }
    }

    #[test]
    fn force_stop_failure_names_requested_service() {
        let mut b = running("B", &["A"]);
        b.stop_result = Some(2);
        let a = adapter(vec![running("A", &[]), b]);
        assert_eq!(
            a.stop_service("A", true).unwrap_err().message(),
            "failed to stop service A. error: error stopping service name B. current state: Running"
        );
        assert_eq!(status(&a, "A"), ServiceStatus::Running);
    }

    #[test]
    fn stop_timeout_when_hung() {
        let mut h = running("H", &[]);
        h.hang = true;
        let a = adapter(vec![h]);
        assert_eq!(
            a.stop_service("H", false).unwrap_err().message(),
            "failed to stop service H. error: timed out waiting for service H to stop"
        );
        assert_eq!(status(&a, "H"), ServiceStatus::StopPending);
    }

    #[test]
    fn default_node_force_stop_of_samss() {
        let a = node_with(SystemState::default());
        a.with_system(|s| s.set_timing(fast()));
        let order = a.with_system(|s| s.force_stop_order("SamSS", Instant::now()));
        assert_eq!(order, ["Browser", "LanmanServer", "SamSS"]);
        a.stop_service("SamSS", true).unwrap();
        assert_eq!(status(&a, "Netlogon"), ServiceStatus::Stopped);
        assert_eq!(status(&a, "LanmanWorkstation"), ServiceStatus::Running);
    }

    type Seed = SystemSeed;

    #[test]
    fn seed_from_toml() {
        let seed: Seed = toml::from_str(
            r#"
bios_serial = "0000-0000"
[[services]]
name = "A"
display_name = "Service A"
status = "running"
start_type = "Auto"
[[services]]
name = "B"
depends_on = ["a"]
start_type = "Weird"
"#,
        )
        .unwrap();
        let mut state = seed.build().unwrap();
        assert_eq!(state.bios_serial_number().unwrap(), "0000-0000");
        let b = state.get_service("b", Instant::now()).unwrap();
        assert_eq!(b.display_name, "B");
        assert_eq!(b.status, ServiceStatus::Stopped);
        assert_eq!(b.start_type, StartType::Boot);
        assert_eq!(state.dependents("A"), ["B"]);
    }

    #[test]
    fn seed_errors_name_the_field() {
        let err = toml::from_str::<Seed>("[[services]]\nname = \"A\"\nstate = \"Running\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `state`"), "{err}");
        let err = toml::from_str::<Seed>("[[services]]\nname = \"A\"\nstatus = \"Up\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown service status `Up`"), "{err}");
        let err = toml::from_str::<Seed>("[[services]]\ndisplay_name = \"A\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing field `name`"), "{err}");

        let dep = ServiceSeed {
            depends_on: vec!["Ghost".into()],
            ..seed("A", "A", StartMode::Manual, ServiceStatus::Stopped, &[])
        };
        let err = SystemState::from_seed(None, &[dep]).unwrap_err();
        assert_eq!(err.kind(), crate::host::HostErrorKind::InvalidArgument);
        assert_eq!(
            err.message(),
            "services[0].depends_on: unknown service `Ghost`"
        );
        let cyc = [
            seed("A", "A", StartMode::Manual, ServiceStatus::Stopped, &["B"]),
            seed("B", "B", StartMode::Manual, ServiceStatus::Stopped, &["A"]),
        ];
        assert_eq!(
            SystemState::from_seed(None, &cyc).unwrap_err().message(),
            "services[0].depends_on: dependency cycle through `A`"
        );
        let dup = [
            seed("A", "A", StartMode::Manual, ServiceStatus::Stopped, &[]),
            seed("a", "A", StartMode::Manual, ServiceStatus::Stopped, &[]),
        ];
        assert_eq!(
            SystemState::from_seed(None, &dup).unwrap_err().message(),
            "services[1].name: duplicate service `a`"
        );
    }
}
