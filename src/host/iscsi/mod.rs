//! The iSCSI group of the simulated host: portals, targets, sessions.
//!
//! The *remote side* is configuration: iSCSI
//! servers ([`IscsiServer`]) reachable at an address and port, each with
//! targets ([`IscsiTarget`]) that may require one-way CHAP, prove themselves
//! with a reverse (mutual) CHAP secret, restrict initiators and expose LUNs.
//! The *node side* ([`IscsiState`]) is what the Windows initiator holds:
//! registered portals in insertion order, the targets discovered through
//! each, sessions and the node-global mutual CHAP secret.
//!
//! A session's LUNs become disks of the node through [`NodeDisks`], the
//! node's disks borrowed apart from its iSCSI state
//! (`HostState::iscsi`): one [`DiskSpec`] per LUN on
//! connect, detached again on disconnect.
//!
//! # Files
//! - `mod.rs`: request types, the remote side, the node side
//!   ([`IscsiState`]) and its operations.
//! - `disks.rs`: where iSCSI meets the node's disks ([`NodeDisks`],
//!   `HostState::iscsi`).
//! - `seed.rs`: the `[iscsi]` seed section and the default node's portal.
//! - `wmi.rs`: the model as Windows' iSCSI WMI classes show it, one call at
//!   a time, for the host-process backend's fake boundary.
//! - `tests.rs`: the model's tests and the iSCSI scenarios on a whole node.
//!
//! Divergences from upstream (stricter, documented): a request without
//! `target_portal` fails with `INVALID_ARGUMENT` (`target_portal is
//! required`) where upstream's process crashes; ports above 65535 are
//! truncated to 16 bits as the current upstream does.

use std::collections::BTreeMap;
use std::fmt;

use super::error::{HostError, HostResult};

mod disks;
mod seed;
#[cfg(test)]
mod tests;
// The HostProcess fake calls the WMI model.
#[cfg_attr(not(feature = "host-process"), allow(dead_code))]
mod wmi;

pub use disks::NodeDisks;
pub use seed::{
    DEFAULT_INITIATOR_IQN, IscsiPortalSeed, IscsiSeed, IscsiTargetSeed, default_iscsi_portals,
};

/// Key name of the Microsoft iSCSI Initiator Service.
pub(crate) const MSISCSI: &str = "MSiSCSI";

/// The iSCSI port used when a request gives port 0.
pub(crate) const DEFAULT_ISCSI_PORT: u16 = 3260;

/// `ISDSC_CONNECTION_FAILED`: the portal cannot be reached.
pub(crate) const ISDSC_CONNECTION_FAILED: u32 = 0xEFFF_0003;
/// `ISDSC_AUTHENTICATION_FAILURE`: CHAP failed (either direction).
pub(crate) const ISDSC_AUTHENTICATION_FAILURE: u32 = 0xEFFF_0009;
/// `ISDSC_AUTHORIZATION_FAILURE`: the initiator is not allowed on the target.
pub(crate) const ISDSC_AUTHORIZATION_FAILURE: u32 = 0xEFFF_000A;
/// `ISDSC_NOT_FOUND`: the target no longer exists on the server.
pub(crate) const ISDSC_NOT_FOUND: u32 = 0xEFFF_000B;
/// `ISDSC_INVALID_SESSION_ID`: no such session (logging out twice).
#[cfg_attr(not(feature = "host-process"), allow(dead_code))]
pub(crate) const ISDSC_INVALID_SESSION_ID: u32 = 0xEFFF_001C;
/// `ISDSC_SERVICE_NOT_RUNNING`: the initiator service (`MSiSCSI`) is stopped.
#[cfg_attr(not(feature = "host-process"), allow(dead_code))]
pub(crate) const ISDSC_SERVICE_NOT_RUNNING: u32 = 0xEFFF_003E;
/// `ISDSC_TARGET_ALREADY_LOGGED_IN`: a session to the target exists already.
#[cfg_attr(not(feature = "host-process"), allow(dead_code))]
pub(crate) const ISDSC_TARGET_ALREADY_LOGGED_IN: u32 = 0xEFFF_003F;
/// `ERROR_INVALID_PARAMETER`: e.g. a CHAP secret outside 12..=16 bytes.
pub(crate) const ERROR_INVALID_PARAMETER: u32 = 87;

/// Bounds (bytes, inclusive) Windows puts on CHAP secrets for non-IPsec
/// connections.
pub(crate) const CHAP_SECRET_LEN: std::ops::RangeInclusive<usize> = 12..=16;

// ---------------------------------------------------------------------------
// Version-neutral request types and conversion helpers
// ---------------------------------------------------------------------------

/// A portal as given in requests (`TargetPortal` of every version).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TargetPortal {
    /// Host name or IP, as given.
    pub target_address: String,
    /// Port as given: `0` means 3260, values above 65535 are truncated.
    pub target_port: u32,
}

impl TargetPortal {
    /// A portal with the given address and port.
    pub(crate) fn new(address: impl Into<String>, port: u32) -> Self {
        Self {
            target_address: address.into(),
            target_port: port,
        }
    }

    /// The identity of this portal on the node.
    pub(crate) fn key(&self) -> PortalKey {
        PortalKey::new(&self.target_address, effective_port(self.target_port))
    }
}

/// The port the proxy uses for a requested one: `0` becomes
/// 3260, anything else is truncated to 16 bits (68796 → 3260, 65536 → 0),
/// as the current upstream does.
pub(crate) fn effective_port(requested: u32) -> u16 {
    if requested == 0 {
        DEFAULT_ISCSI_PORT
    } else {
        // Truncation is the documented upstream behaviour.
        (requested & 0xFFFF) as u16
    }
}

/// Identity of a portal: case-folded address and effective port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortalKey {
    /// Lowercased address.
    pub address: String,
    /// Effective port.
    pub port: u16,
}

impl PortalKey {
    /// Key for an address (any case) and an effective port.
    pub(crate) fn new(address: &str, port: u16) -> Self {
        Self {
            address: address.to_lowercase(),
            port,
        }
    }
}

/// Login authentication (`AuthenticationType` of both versions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthenticationType {
    /// `NONE = 0`.
    None = 0,
    /// `ONE_WAY_CHAP = 1`.
    OneWayChap = 1,
    /// `MUTUAL_CHAP = 2`.
    MutualChap = 2,
}

impl AuthenticationType {
    /// The type for a wire number; anything but 0, 1, 2 is the proxy's
    /// error `invalid authentication type authType=<n>` (gRPC `UNKNOWN`).
    pub(crate) fn from_code(code: i32) -> HostResult<Self> {
        match code {
            0 => Ok(Self::None),
            1 => Ok(Self::OneWayChap),
            2 => Ok(Self::MutualChap),
            n => Err(HostError::unknown(format!(
                "invalid authentication type authType={n}"
            ))),
        }
    }

    /// The wire number.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The string the proxy passes to the host (`NONE`, `ONEWAYCHAP`,
    /// `MUTUALCHAP`).
    pub(crate) fn host_name(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::OneWayChap => "ONEWAYCHAP",
            Self::MutualChap => "MUTUALCHAP",
        }
    }
}

/// The iSCSI API versions, ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IscsiApiVersion {
    /// `v1alpha1`.
    V1alpha1,
    /// `v1alpha2` (adds `SetMutualChapSecret`).
    V1alpha2,
}

/// The version gate of `SetMutualChapSecret`.
pub(crate) fn check_mutual_chap_version(version: IscsiApiVersion) -> HostResult<()> {
    if version >= IscsiApiVersion::V1alpha2 {
        Ok(())
    } else {
        Err(HostError::unknown(
            "SetMutualChapSecret requires CSI-Proxy API version v1alpha2 or greater",
        ))
    }
}

/// Internal `ConnectTarget` request (mirrors v1alpha2).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ConnectTargetRequest {
    /// Portal through which to log in (required).
    pub target_portal: Option<TargetPortal>,
    /// Target node address, compared exactly.
    pub iqn: String,
    /// Authentication type as its wire number (validated by the host).
    pub auth_type: i32,
    /// CHAP user presented by the initiator.
    pub chap_username: String,
    /// CHAP secret of the initiator.
    pub chap_secret: String,
}

/// Internal request naming a target behind a portal (`DisconnectTarget`,
/// `GetTargetDisks`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TargetRequest {
    /// Portal (required).
    pub target_portal: Option<TargetPortal>,
    /// Target node address.
    pub iqn: String,
}

/// Debug text of an optional secret: whether it is set, never its value.
fn redact(secret: Option<&str>) -> &'static str {
    if secret.is_some() {
        "<redacted>"
    } else {
        "<none>"
    }
}

impl fmt::Debug for ConnectTargetRequest {
    /// Never prints the CHAP secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectTargetRequest")
            .field("target_portal", &self.target_portal)
            .field("iqn", &self.iqn)
            .field("auth_type", &self.auth_type)
            .field("chap_username", &self.chap_username)
            .field("chap_secret", &redact(Some(&self.chap_secret)))
            .finish()
    }
}

fn require_portal(portal: Option<&TargetPortal>) -> HostResult<&TargetPortal> {
    portal.ok_or_else(|| HostError::invalid_argument("target_portal is required"))
}

fn at(portal: &TargetPortal) -> String {
    format!(
        "({}:{})",
        portal.target_address,
        effective_port(portal.target_port)
    )
}

/// A static WMI method (no instance) that returned `code`.
fn wmi(call: &str, code: u32) -> String {
    crate::host::texts::iscsi_failed(call, "<nil>", code)
}

/// The WMI lookup of a portal that is not registered.
fn portal_not_found(portal: &TargetPortal) -> String {
    format!(
        "failed to query iSCSI target portal at {}. error: not found",
        at(portal)
    )
}

const SERVICE_STOPPED: &str = "the Microsoft iSCSI Initiator Service (MSiSCSI) is not running";

// ---------------------------------------------------------------------------
// Remote side
// ---------------------------------------------------------------------------

/// One-way CHAP credentials a target requires from initiators.
#[derive(Clone, PartialEq, Eq)]
pub struct ChapCredentials {
    /// CHAP user name.
    pub user: String,
    /// CHAP secret.
    pub secret: String,
}

impl fmt::Debug for ChapCredentials {
    /// Never prints the secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChapCredentials")
            .field("user", &self.user)
            .field("secret", &redact(Some(&self.secret)))
            .finish()
    }
}

/// A LUN of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lun {
    /// Size in bytes.
    pub size_bytes: u64,
}

/// A target on a simulated iSCSI server.
#[derive(Clone, PartialEq, Eq)]
pub struct IscsiTarget {
    /// Node address (IQN).
    pub iqn: String,
    /// Initiator IQNs allowed to see and log in; `None` = any.
    pub allowed_initiators: Option<Vec<String>>,
    /// One-way CHAP required if set.
    pub chap: Option<ChapCredentials>,
    /// Secret the target proves itself with in mutual CHAP.
    pub reverse_chap_secret: Option<String>,
    /// LUNs, in LUN-number order.
    pub luns: Vec<Lun>,
}

impl IscsiTarget {
    /// A target open to any initiator, without CHAP, with LUNs of the given
    /// sizes.
    pub fn new(iqn: impl Into<String>, lun_sizes: &[u64]) -> Self {
        Self {
            iqn: iqn.into(),
            allowed_initiators: None,
            chap: None,
            reverse_chap_secret: None,
            luns: lun_sizes
                .iter()
                .map(|&size_bytes| Lun { size_bytes })
                .collect(),
        }
    }

    fn visible_to(&self, initiator: &str) -> bool {
        self.allowed_initiators
            .as_ref()
            .is_none_or(|list| list.iter().any(|i| i.eq_ignore_ascii_case(initiator)))
    }
}

impl fmt::Debug for IscsiTarget {
    /// Never prints secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IscsiTarget")
            .field("iqn", &self.iqn)
            .field("allowed_initiators", &self.allowed_initiators)
            .field("chap", &self.chap)
            .field(
                "reverse_chap_secret",
                &redact(self.reverse_chap_secret.as_deref()),
            )
            .field("luns", &self.luns)
            .finish()
    }
}

/// A simulated iSCSI server (target portal on the network).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IscsiServer {
    /// Address, matched case-insensitively.
    pub address: String,
    /// Port.
    pub port: u16,
    /// `false` ⇒ every connection fails (`ISDSC_CONNECTION_FAILED`).
    pub reachable: bool,
    /// Targets in configuration order (= discovery order).
    pub targets: Vec<IscsiTarget>,
}

// ---------------------------------------------------------------------------
// Node side
// ---------------------------------------------------------------------------

/// What the storage model needs to create a disk for a LUN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskSpec {
    /// Size in bytes.
    pub size: u64,
    /// SCSI VPD page 0x83 device identifier, binary code set (an NAA
    /// designator, as the Microsoft iSCSI Target reports).
    pub page83: Vec<u8>,
    /// Serial number.
    pub serial: String,
    /// Location string (`Integrated : Adapter 1 : Port 0 : Target <t> : LUN <l>`).
    pub location: String,
    /// LUN number within the target.
    pub lun: u32,
    /// Target IQN the disk belongs to.
    pub target_iqn: String,
}

/// A portal registered on the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredPortal {
    /// Address as first given.
    pub address: String,
    /// Effective port.
    pub port: u16,
}

impl RegisteredPortal {
    fn key(&self) -> PortalKey {
        PortalKey::new(&self.address, self.port)
    }

    /// As reported by `ListTargetPortals`.
    pub(crate) fn to_target_portal(&self) -> TargetPortal {
        TargetPortal::new(self.address.clone(), u32::from(self.port))
    }
}

/// A login session to a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Session identifier (`ffffe000c4b8a010-4000013700000001` style).
    pub id: String,
    /// Portal the session was made through.
    pub portal: PortalKey,
    /// Target node address.
    pub iqn: String,
    /// Whether a persistent login is registered for it.
    pub persistent: bool,
    /// Disk numbers of its LUNs, in LUN order.
    pub disks: Vec<u32>,
}

/// Node-side iSCSI state plus the configured remote servers.
#[derive(Clone)]
pub struct IscsiState {
    initiator_iqn: String,
    servers: Vec<IscsiServer>,
    portals: Vec<RegisteredPortal>,
    discovered: BTreeMap<PortalKey, Vec<String>>,
    sessions: Vec<Session>,
    persistent_logins: Vec<(PortalKey, String)>,
    mutual_chap_secret: Option<String>,
    sessions_created: u64,
}

impl fmt::Debug for IscsiState {
    /// Never prints secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IscsiState")
            .field("initiator_iqn", &self.initiator_iqn)
            .field("servers", &self.servers)
            .field("portals", &self.portals)
            .field("discovered", &self.discovered)
            .field("sessions", &self.sessions)
            .field("persistent_logins", &self.persistent_logins)
            .field(
                "mutual_chap_secret",
                &redact(self.mutual_chap_secret.as_deref()),
            )
            .finish_non_exhaustive()
    }
}

impl IscsiState {
    /// An initiator with no servers, portals or sessions.
    pub(crate) fn new(initiator_iqn: impl Into<String>) -> Self {
        Self {
            initiator_iqn: initiator_iqn.into(),
            servers: Vec::new(),
            portals: Vec::new(),
            discovered: BTreeMap::new(),
            sessions: Vec::new(),
            persistent_logins: Vec::new(),
            mutual_chap_secret: None,
            sessions_created: 0,
        }
    }

    /// The initiator node name.
    pub fn initiator_iqn(&self) -> &str {
        &self.initiator_iqn
    }

    /// Adds or replaces (same address and port) a remote server.
    pub(crate) fn add_server(&mut self, server: IscsiServer) {
        let key = PortalKey::new(&server.address, server.port);
        self.servers
            .retain(|s| PortalKey::new(&s.address, s.port) != key);
        self.servers.push(server);
    }

    /// Mutable access to a remote server (test control: reachability,
    /// targets, CHAP).
    pub fn server_mut(&mut self, address: &str, port: u16) -> Option<&mut IscsiServer> {
        let key = PortalKey::new(address, port);
        self.servers
            .iter_mut()
            .find(|s| PortalKey::new(&s.address, s.port) == key)
    }

    /// Registered portals in insertion order.
    pub fn portals(&self) -> &[RegisteredPortal] {
        &self.portals
    }

    /// Current sessions.
    pub fn sessions(&self) -> &[Session] {
        &self.sessions
    }

    /// Registered persistent logins (portal, IQN).
    pub fn persistent_logins(&self) -> &[(PortalKey, String)] {
        &self.persistent_logins
    }

    /// The node's mutual CHAP secret (test inspection; no API reads it).
    pub fn mutual_chap_secret(&self) -> Option<&str> {
        self.mutual_chap_secret.as_deref()
    }

    /// Marks the sessions of `iqn` persistent and registers a persistent
    /// login for each (test control for the unregister-on-disconnect path).
    /// Returns how many sessions were marked.
    pub fn make_persistent(&mut self, iqn: &str) -> usize {
        let mut n = 0;
        for s in self.sessions.iter_mut().filter(|s| s.iqn == iqn) {
            s.persistent = true;
            self.persistent_logins
                .push((s.portal.clone(), s.iqn.clone()));
            n += 1;
        }
        n
    }

    fn server(&self, key: &PortalKey) -> Option<&IscsiServer> {
        self.servers
            .iter()
            .find(|s| PortalKey::new(&s.address, s.port) == *key)
    }

    fn portal_index(&self, key: &PortalKey) -> Option<usize> {
        self.portals.iter().position(|p| p.key() == *key)
    }

    /// Reads the targets visible to this initiator from the server behind
    /// `key`; `Err` is the failure code.
    fn read_targets(&self, key: &PortalKey) -> Result<Vec<String>, u32> {
        match self.server(key) {
            Some(server) if server.reachable => Ok(server
                .targets
                .iter()
                .filter(|t| t.visible_to(&self.initiator_iqn))
                .map(|t| t.iqn.clone())
                .collect()),
            _ => Err(ISDSC_CONNECTION_FAILED),
        }
    }

    fn check_service(disks: &NodeDisks<'_>, gist: impl FnOnce() -> String) -> HostResult<()> {
        if disks.initiator_service_running() {
            Ok(())
        } else {
            Err(HostError::unknown(format!(
                "{}. err: {SERVICE_STOPPED}",
                gist()
            )))
        }
    }

    /// `AddTargetPortal`.
    pub(crate) fn add_target_portal(
        &mut self,
        disks: &mut NodeDisks<'_>,
        portal: Option<&TargetPortal>,
    ) -> HostResult<()> {
        let portal = require_portal(portal)?;
        let gist = || format!("error adding target portal at {}", at(portal));
        Self::check_service(disks, gist)?;
        let key = portal.key();
        if self.portal_index(&key).is_some() {
            return Ok(());
        }
        let targets = self.read_targets(&key).map_err(|code| {
            HostError::unknown(format!(
                "{}. err: {}",
                gist(),
                wmi("MSFT_iSCSITargetPortal.New", code)
            ))
        })?;
        self.portals.push(RegisteredPortal {
            address: portal.target_address.clone(),
            port: key.port,
        });
        self.discovered.insert(key, targets);
        Ok(())
    }

    /// `DiscoverTargetPortal`: the IQNs associated with a
    /// registered portal when it was added; the server is not asked again.
    pub(crate) fn discover_target_portal(
        &mut self,
        disks: &mut NodeDisks<'_>,
        portal: Option<&TargetPortal>,
    ) -> HostResult<Vec<String>> {
        let portal = require_portal(portal)?;
        let gist = || format!("error list targets by target portal at {}", at(portal));
        Self::check_service(disks, gist)?;
        self.discovered.get(&portal.key()).cloned().ok_or_else(|| {
            HostError::unknown(format!("{}. err: {}", gist(), portal_not_found(portal)))
        })
    }

    /// `RemoveTargetPortal`: not idempotent; sessions stay.
    pub(crate) fn remove_target_portal(
        &mut self,
        disks: &mut NodeDisks<'_>,
        portal: Option<&TargetPortal>,
    ) -> HostResult<()> {
        let portal = require_portal(portal)?;
        let gist = || format!("error removing target portal at {}", at(portal));
        Self::check_service(disks, gist)?;
        let key = portal.key();
        let Some(index) = self.portal_index(&key) else {
            return Err(HostError::unknown(format!(
                "error query target portal at {}. err: {}",
                at(portal),
                portal_not_found(portal)
            )));
        };
        self.portals.remove(index);
        self.discovered.remove(&key);
        Ok(())
    }

    /// `ListTargetPortals`, in insertion order.
    pub(crate) fn list_target_portals(
        &self,
        disks: &NodeDisks<'_>,
    ) -> HostResult<Vec<TargetPortal>> {
        Self::check_service(disks, || "error listing target portals".to_owned())?;
        Ok(self
            .portals
            .iter()
            .map(RegisteredPortal::to_target_portal)
            .collect())
    }

    /// "Find the target": the portal is registered and `iqn` was discovered
    /// through it.
    fn find_target(&self, portal: &TargetPortal, iqn: &str) -> HostResult<PortalKey> {
        let key = portal.key();
        let missing = match self.discovered.get(&key) {
            None => portal_not_found(portal),
            Some(iqns) if iqns.iter().any(|i| i == iqn) => return Ok(key),
            Some(_) => "not found".to_owned(),
        };
        Err(HostError::unknown(format!(
            "error query target {iqn} from target portal at {}. err: {missing}",
            at(portal)
        )))
    }

    fn is_connected(&self, iqn: &str) -> bool {
        self.sessions.iter().any(|s| s.iqn == iqn)
    }

    /// Checks a login against the server's configuration; `Err` is the
    /// failure code.
    fn authenticate(
        &self,
        key: &PortalKey,
        iqn: &str,
        auth: AuthenticationType,
        user: &str,
        secret: &str,
    ) -> Result<&IscsiTarget, u32> {
        let server = self
            .server(key)
            .filter(|s| s.reachable)
            .ok_or(ISDSC_CONNECTION_FAILED)?;
        let target = server
            .targets
            .iter()
            .find(|t| t.iqn == iqn)
            .ok_or(ISDSC_NOT_FOUND)?;
        if !target.visible_to(&self.initiator_iqn) {
            return Err(ISDSC_AUTHORIZATION_FAILURE);
        }
        match auth {
            AuthenticationType::None => {
                if target.chap.is_some() {
                    return Err(ISDSC_AUTHENTICATION_FAILURE);
                }
            }
            AuthenticationType::OneWayChap | AuthenticationType::MutualChap => {
                if !CHAP_SECRET_LEN.contains(&secret.len()) {
                    return Err(ERROR_INVALID_PARAMETER);
                }
                let chap = target.chap.as_ref().ok_or(ISDSC_AUTHENTICATION_FAILURE)?;
                if chap.user != user || chap.secret != secret {
                    return Err(ISDSC_AUTHENTICATION_FAILURE);
                }
                if auth == AuthenticationType::MutualChap {
                    let proven = match (&target.reverse_chap_secret, &self.mutual_chap_secret) {
                        (Some(reverse), Some(ours)) => reverse == ours,
                        _ => false,
                    };
                    if !proven {
                        return Err(ISDSC_AUTHENTICATION_FAILURE);
                    }
                }
            }
        }
        Ok(target)
    }

    /// `ConnectTarget`: validate the auth type, find the
    /// target, do nothing if connected, else log in and attach one disk per
    /// LUN through `disks`.
    pub(crate) fn connect_target(
        &mut self,
        disks: &mut NodeDisks<'_>,
        req: &ConnectTargetRequest,
    ) -> HostResult<()> {
        let auth = AuthenticationType::from_code(req.auth_type)?;
        let portal = require_portal(req.target_portal.as_ref())?;
        tracing::debug!(
            portal = %at(portal),
            iqn = %req.iqn,
            auth = auth.host_name(),
            chap_username = %req.chap_username,
            "ConnectTarget"
        );
        Self::check_service(disks, || "error connecting to target portal".to_owned())?;
        let key = self.find_target(portal, &req.iqn)?;
        if self.is_connected(&req.iqn) {
            return Ok(());
        }
        self.log_in(
            disks,
            key,
            &req.iqn,
            auth,
            &req.chap_username,
            &req.chap_secret,
        )
        .map_err(|code| {
            HostError::unknown(format!(
                "error connecting to target portal. err: {}",
                wmi("MSFT_iSCSITarget.Connect", code)
            ))
        })
    }

    /// Logs in to `iqn` through the server behind `key` (authenticating as
    /// [`Self::authenticate`] does) and attaches one disk per LUN through
    /// `disks`; `Err` is the failure code.
    fn log_in(
        &mut self,
        disks: &mut NodeDisks<'_>,
        key: PortalKey,
        iqn: &str,
        auth: AuthenticationType,
        user: &str,
        secret: &str,
    ) -> Result<(), u32> {
        let target = self.authenticate(&key, iqn, auth, user, secret)?.clone();
        let ordinal = self.sessions_created;
        self.sessions_created += 1;
        let numbers = target
            .luns
            .iter()
            .enumerate()
            .map(|(lun, l)| {
                let lun = u32::try_from(lun).unwrap_or(u32::MAX);
                disks.attach(disk_spec(&target.iqn, lun, l.size_bytes, ordinal))
            })
            .collect();
        self.sessions.push(Session {
            id: format!("ffffe000c4b8a010-40000137{:08x}", ordinal + 1),
            portal: key,
            iqn: iqn.to_owned(),
            persistent: false,
            disks: numbers,
        });
        Ok(())
    }

    /// `DisconnectTarget`: idempotent while the target is
    /// known; unregisters a persistent login first; detaches the disks.
    pub(crate) fn disconnect_target(
        &mut self,
        disks: &mut NodeDisks<'_>,
        req: &TargetRequest,
    ) -> HostResult<()> {
        let portal = require_portal(req.target_portal.as_ref())?;
        Self::check_service(disks, || {
            "error disconnecting from target portal".to_owned()
        })?;
        self.find_target(portal, &req.iqn)?;
        let Some(index) = self.sessions.iter().position(|s| s.iqn == req.iqn) else {
            return Ok(());
        };
        // A persistent login is unregistered before the session is dropped.
        self.unregister(index);
        self.log_out(disks, index);
        Ok(())
    }

    /// Drops the persistent login of session `index`, if it has one.
    fn unregister(&mut self, index: usize) {
        let session = &mut self.sessions[index];
        if session.persistent
            && let Some(i) = self
                .persistent_logins
                .iter()
                .position(|(k, iqn)| *k == session.portal && *iqn == session.iqn)
        {
            self.persistent_logins.remove(i);
        }
        session.persistent = false;
    }

    /// Ends session `index` and detaches its disks.
    fn log_out(&mut self, disks: &mut NodeDisks<'_>, index: usize) {
        let session = self.sessions.remove(index);
        for number in session.disks {
            disks.detach(number);
        }
    }

    /// `GetTargetDisks`: disk numbers as decimal strings,
    /// empty while not connected.
    pub(crate) fn get_target_disks(
        &self,
        disks: &NodeDisks<'_>,
        req: &TargetRequest,
    ) -> HostResult<Vec<String>> {
        let portal = require_portal(req.target_portal.as_ref())?;
        Self::check_service(disks, || "error getting target disks".to_owned())?;
        self.find_target(portal, &req.iqn)?;
        Ok(self
            .sessions
            .iter()
            .filter(|s| s.iqn == req.iqn)
            .flat_map(|s| s.disks.iter().map(u32::to_string))
            .collect())
    }

    /// `SetMutualChapSecret`: version gate, Windows' 12..=16
    /// byte rule, then store (overwriting).
    pub(crate) fn set_mutual_chap_secret(
        &mut self,
        disks: &NodeDisks<'_>,
        secret: &str,
        version: IscsiApiVersion,
    ) -> HostResult<()> {
        check_mutual_chap_version(version)?;
        let gist = || "error setting mutual chap secret".to_owned();
        Self::check_service(disks, gist)?;
        if !CHAP_SECRET_LEN.contains(&secret.len()) {
            return Err(HostError::unknown(format!(
                "{}. err: {}",
                gist(),
                wmi("MSFT_iSCSISession.SetCHAPSecret", ERROR_INVALID_PARAMETER)
            )));
        }
        self.mutual_chap_secret = Some(secret.to_owned());
        Ok(())
    }
}

/// FNV-1a, for deterministic identifiers.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.iter().chain(std::iter::once(&0xFF)) {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// The disk a LUN becomes: NAA-6 binary page 0x83 id and serial derived
/// deterministically from the target IQN and LUN number.
fn disk_spec(iqn: &str, lun: u32, size: u64, session_ordinal: u64) -> DiskSpec {
    let h1 = fnv1a(&[iqn.as_bytes(), &lun.to_le_bytes()]);
    let h2 = fnv1a(&[&h1.to_le_bytes(), iqn.as_bytes()]);
    // NAA 6 (IEEE registered extended), Microsoft's OUI 00-03-FF.
    let mut page83 = vec![0x60, 0x00, 0x3F, 0xF0];
    page83.extend_from_slice(&h1.to_be_bytes()[..6]);
    page83.extend_from_slice(&h2.to_be_bytes()[..6]);
    DiskSpec {
        size,
        page83,
        serial: format!("{h1:016X}"),
        location: format!("Integrated : Adapter 1 : Port 0 : Target {session_ordinal} : LUN {lun}"),
        lun,
        target_iqn: iqn.to_owned(),
    }
}
