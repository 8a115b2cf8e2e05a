//! The `[system]` section of a node seed and the default node's BIOS and
//! services.

use std::time::Duration;

use serde::Deserialize;

use super::{Service, ServiceStatus, StartMode, SystemState, key};
use crate::host::error::{HostError, HostResult};

/// Default BIOS serial number of the default node.
pub const DEFAULT_BIOS_SERIAL: &str = "VMware-56 4d 3a 1c 9e 8b 2f 70-0a 61 5e 3d 2c 4b 1f 8a";

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

pub(super) fn service_seed(
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
        service_seed(
            "MSiSCSI",
            "Microsoft iSCSI Initiator Service",
            StartMode::Manual,
            Stopped,
            &[],
        ),
        service_seed(
            "SamSS",
            "Security Accounts Manager",
            StartMode::Auto,
            Running,
            &[],
        ),
        service_seed(
            "LanmanServer",
            "Server",
            StartMode::Auto,
            Running,
            &["SamSS"],
        ),
        service_seed(
            "LanmanWorkstation",
            "Workstation",
            StartMode::Auto,
            Running,
            &[],
        ),
        service_seed(
            "Browser",
            "Computer Browser",
            StartMode::Manual,
            Running,
            &["LanmanWorkstation", "LanmanServer"],
        ),
        service_seed(
            "Netlogon",
            "Netlogon",
            StartMode::Manual,
            Stopped,
            &["LanmanWorkstation", "LanmanServer"],
        ),
        service_seed("W32Time", "Windows Time", StartMode::Manual, Running, &[]),
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

impl Default for SystemState {
    /// The default node: [`DEFAULT_BIOS_SERIAL`] and [`default_services`].
    fn default() -> Self {
        Self::from_seed(Some(DEFAULT_BIOS_SERIAL), &default_services())
            .expect("default services are consistent")
    }
}

impl SystemState {
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
}
