//! The iSCSI group of the simulated host: portals, targets, sessions.
//!
//! Follows `spec/iscsi.md` §6. The *remote side* is configuration: iSCSI
//! servers ([`IscsiServer`]) reachable at an address and port, each with
//! targets ([`IscsiTarget`]) that may require one-way CHAP, prove themselves
//! with a reverse (mutual) CHAP secret, restrict initiators and expose LUNs.
//! The *node side* ([`IscsiState`]) is what the Windows initiator holds:
//! registered portals in insertion order, the targets discovered through
//! each, sessions and the node-global mutual CHAP secret.
//!
//! A session's LUNs become disks of the node through an [`IscsiDiskSink`]
//! (on the node: its disks borrowed apart from the iSCSI state,
//! [`NodeDisks`](super::NodeDisks)): one [`DiskSpec`] per LUN on connect,
//! detached again on disconnect.
//!
//! Divergences from upstream (stricter, documented): a request without
//! `target_portal` fails with `INVALID_ARGUMENT` (`target_portal is
//! required`) where upstream's process crashes; ports above 65535 are
//! truncated to 16 bits as the current upstream does.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

use super::error::{HostError, HostResult};

/// The iSCSI port used when a request gives port 0.
pub const DEFAULT_ISCSI_PORT: u16 = 3260;

/// Initiator node name of the default node.
pub const DEFAULT_INITIATOR_IQN: &str = "iqn.1991-05.com.microsoft:sim-node";

/// `ISDSC_CONNECTION_FAILED`: the portal cannot be reached.
pub const ISDSC_CONNECTION_FAILED: u32 = 0xEFFF_0003;
/// `ISDSC_AUTHENTICATION_FAILURE`: CHAP failed (either direction).
pub const ISDSC_AUTHENTICATION_FAILURE: u32 = 0xEFFF_0009;
/// `ISDSC_AUTHORIZATION_FAILURE`: the initiator is not allowed on the target.
pub const ISDSC_AUTHORIZATION_FAILURE: u32 = 0xEFFF_000A;
/// `ISDSC_NOT_FOUND`: the target no longer exists on the server.
pub const ISDSC_NOT_FOUND: u32 = 0xEFFF_000B;
/// `ERROR_INVALID_PARAMETER`: e.g. a CHAP secret outside 12..=16 bytes.
pub const ERROR_INVALID_PARAMETER: u32 = 87;

/// Bounds (bytes, inclusive) Windows puts on CHAP secrets for non-IPsec
/// connections.
pub const CHAP_SECRET_LEN: std::ops::RangeInclusive<usize> = 12..=16;

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
    pub fn new(address: impl Into<String>, port: u32) -> Self {
        Self {
            target_address: address.into(),
            target_port: port,
        }
    }

    /// The identity of this portal on the node.
    pub fn key(&self) -> PortalKey {
        PortalKey::new(&self.target_address, effective_port(self.target_port))
    }
}

/// The port the proxy uses for a requested one (iscsi.md §3): `0` becomes
/// 3260, anything else is truncated to 16 bits (68796 → 3260, 65536 → 0),
/// as the current upstream does.
pub fn effective_port(requested: u32) -> u16 {
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
    pub fn new(address: &str, port: u16) -> Self {
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
    pub fn from_code(code: i32) -> HostResult<Self> {
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
    pub fn host_name(self) -> &'static str {
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

/// The version gate of `SetMutualChapSecret` (iscsi.md §4.8).
pub fn check_mutual_chap_version(version: IscsiApiVersion) -> HostResult<()> {
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
    format!("WMI {call} failed (target=<nil>): code={code}")
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

/// Hook into the node's storage model (and services) used by the iSCSI
/// group.
pub trait IscsiDiskSink {
    /// Adds a disk for a LUN (offline, raw, as Windows' SAN policy leaves
    /// shared-bus disks) and returns its disk number (the lowest free one).
    fn attach(&mut self, disk: DiskSpec) -> u32;
    /// Removes the disk with this number (and its partitions and volumes).
    fn detach(&mut self, number: u32);
    /// Whether the `MSiSCSI` service runs; while it does not, every iSCSI
    /// operation fails. Default: always running (no coupling).
    fn initiator_service_running(&self) -> bool {
        true
    }
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
    pub fn to_target_portal(&self) -> TargetPortal {
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

impl Default for IscsiState {
    /// The default node: [`DEFAULT_INITIATOR_IQN`] and
    /// [`default_iscsi_portals`].
    fn default() -> Self {
        Self::from_seed(DEFAULT_INITIATOR_IQN, &default_iscsi_portals())
            .expect("default iSCSI seed is consistent")
    }
}

impl IscsiState {
    /// An initiator with no servers, portals or sessions.
    pub fn new(initiator_iqn: impl Into<String>) -> Self {
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
    pub fn add_server(&mut self, server: IscsiServer) {
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

    fn check_service(sink: &dyn IscsiDiskSink, gist: impl FnOnce() -> String) -> HostResult<()> {
        if sink.initiator_service_running() {
            Ok(())
        } else {
            Err(HostError::unknown(format!(
                "{}. err: {SERVICE_STOPPED}",
                gist()
            )))
        }
    }

    /// `AddTargetPortal` (iscsi.md §4.1).
    pub fn add_target_portal(
        &mut self,
        sink: &mut dyn IscsiDiskSink,
        portal: Option<&TargetPortal>,
    ) -> HostResult<()> {
        let portal = require_portal(portal)?;
        let gist = || format!("error adding target portal at {}", at(portal));
        Self::check_service(sink, gist)?;
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

    /// `DiscoverTargetPortal` (iscsi.md §4.2): the IQNs associated with a
    /// registered portal when it was added; the server is not asked again.
    pub fn discover_target_portal(
        &mut self,
        sink: &mut dyn IscsiDiskSink,
        portal: Option<&TargetPortal>,
    ) -> HostResult<Vec<String>> {
        let portal = require_portal(portal)?;
        let gist = || format!("error list targets by target portal at {}", at(portal));
        Self::check_service(sink, gist)?;
        self.discovered.get(&portal.key()).cloned().ok_or_else(|| {
            HostError::unknown(format!("{}. err: {}", gist(), portal_not_found(portal)))
        })
    }

    /// `RemoveTargetPortal` (iscsi.md §4.3): not idempotent; sessions stay.
    pub fn remove_target_portal(
        &mut self,
        sink: &mut dyn IscsiDiskSink,
        portal: Option<&TargetPortal>,
    ) -> HostResult<()> {
        let portal = require_portal(portal)?;
        let gist = || format!("error removing target portal at {}", at(portal));
        Self::check_service(sink, gist)?;
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

    /// `ListTargetPortals` (iscsi.md §4.4), in insertion order.
    pub fn list_target_portals(&self, sink: &dyn IscsiDiskSink) -> HostResult<Vec<TargetPortal>> {
        Self::check_service(sink, || "error listing target portals".to_owned())?;
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

    /// `ConnectTarget` (iscsi.md §4.5): validate the auth type, find the
    /// target, do nothing if connected, else log in and attach one disk per
    /// LUN through `sink`.
    pub fn connect_target(
        &mut self,
        sink: &mut dyn IscsiDiskSink,
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
        Self::check_service(sink, || "error connecting to target portal".to_owned())?;
        let key = self.find_target(portal, &req.iqn)?;
        if self.is_connected(&req.iqn) {
            return Ok(());
        }
        let target = self
            .authenticate(&key, &req.iqn, auth, &req.chap_username, &req.chap_secret)
            .map_err(|code| {
                HostError::unknown(format!(
                    "error connecting to target portal. err: {}",
                    wmi("MSFT_iSCSITarget.Connect", code)
                ))
            })?
            .clone();
        let ordinal = self.sessions_created;
        self.sessions_created += 1;
        let disks = target
            .luns
            .iter()
            .enumerate()
            .map(|(lun, l)| {
                let lun = u32::try_from(lun).unwrap_or(u32::MAX);
                sink.attach(disk_spec(&target.iqn, lun, l.size_bytes, ordinal))
            })
            .collect();
        self.sessions.push(Session {
            id: format!("ffffe000c4b8a010-40000137{:08x}", ordinal + 1),
            portal: key,
            iqn: req.iqn.clone(),
            persistent: false,
            disks,
        });
        Ok(())
    }

    /// `DisconnectTarget` (iscsi.md §4.6): idempotent while the target is
    /// known; unregisters a persistent login first; detaches the disks.
    pub fn disconnect_target(
        &mut self,
        sink: &mut dyn IscsiDiskSink,
        req: &TargetRequest,
    ) -> HostResult<()> {
        let portal = require_portal(req.target_portal.as_ref())?;
        Self::check_service(sink, || "error disconnecting from target portal".to_owned())?;
        self.find_target(portal, &req.iqn)?;
        let Some(index) = self.sessions.iter().position(|s| s.iqn == req.iqn) else {
            return Ok(());
        };
        let session = self.sessions.remove(index);
        // A persistent login is unregistered before the session is dropped.
        if session.persistent
            && let Some(i) = self
                .persistent_logins
                .iter()
                .position(|(k, iqn)| *k == session.portal && *iqn == session.iqn)
        {
            self.persistent_logins.remove(i);
        }
        for number in session.disks {
            sink.detach(number);
        }
        Ok(())
    }

    /// `GetTargetDisks` (iscsi.md §4.7): disk numbers as decimal strings,
    /// empty while not connected.
    pub fn get_target_disks(
        &self,
        sink: &dyn IscsiDiskSink,
        req: &TargetRequest,
    ) -> HostResult<Vec<String>> {
        let portal = require_portal(req.target_portal.as_ref())?;
        Self::check_service(sink, || "error getting target disks".to_owned())?;
        self.find_target(portal, &req.iqn)?;
        Ok(self
            .sessions
            .iter()
            .filter(|s| s.iqn == req.iqn)
            .flat_map(|s| s.disks.iter().map(u32::to_string))
            .collect())
    }

    /// `SetMutualChapSecret` (iscsi.md §4.8): version gate, Windows' 12..=16
    /// byte rule, then store (overwriting).
    pub fn set_mutual_chap_secret(
        &mut self,
        sink: &dyn IscsiDiskSink,
        secret: &str,
        version: IscsiApiVersion,
    ) -> HostResult<()> {
        check_mutual_chap_version(version)?;
        let gist = || "error setting mutual chap secret".to_owned();
        Self::check_service(sink, gist)?;
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

// ---------------------------------------------------------------------------
// Seeds
// ---------------------------------------------------------------------------

/// Seed of one iSCSI server/portal (node seed file).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IscsiPortalSeed {
    /// Portal address (host name or IP).
    pub address: String,
    /// TCP port; default 3260.
    #[serde(default = "default_port")]
    pub port: u16,
    /// Whether the server answers; default true.
    #[serde(default = "default_true")]
    pub reachable: bool,
    /// Targets behind the portal.
    #[serde(default)]
    pub targets: Vec<IscsiTargetSeed>,
}

/// Seed of one target.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IscsiTargetSeed {
    /// Target IQN.
    pub iqn: String,
    /// One-way CHAP user required from initiators (with `chap_secret`).
    #[serde(default)]
    pub chap_username: Option<String>,
    /// One-way CHAP secret (12..=16 bytes).
    #[serde(default)]
    pub chap_secret: Option<String>,
    /// Reverse secret the target proves itself with in mutual CHAP
    /// (12..=16 bytes; requires one-way CHAP).
    #[serde(default)]
    pub mutual_chap_secret: Option<String>,
    /// LUN sizes in bytes, LUN 0 first; each a non-zero multiple of 512.
    #[serde(default)]
    pub lun_sizes: Vec<u64>,
    /// Initiator IQNs allowed; absent = any.
    #[serde(default)]
    pub allowed_initiators: Option<Vec<String>>,
}

impl fmt::Debug for IscsiTargetSeed {
    /// Never prints secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IscsiTargetSeed")
            .field("iqn", &self.iqn)
            .field("chap_username", &self.chap_username)
            .field("chap_secret", &redact(self.chap_secret.as_deref()))
            .field(
                "mutual_chap_secret",
                &redact(self.mutual_chap_secret.as_deref()),
            )
            .field("lun_sizes", &self.lun_sizes)
            .field("allowed_initiators", &self.allowed_initiators)
            .finish()
    }
}

fn default_port() -> u16 {
    DEFAULT_ISCSI_PORT
}

fn default_true() -> bool {
    true
}

fn seed_error(field: String, msg: &str) -> HostError {
    HostError::invalid_argument(format!("{field}: {msg}"))
}

impl IscsiTargetSeed {
    fn to_target(&self, field: &str) -> HostResult<IscsiTarget> {
        let chap = match (&self.chap_username, &self.chap_secret) {
            (Some(user), Some(secret)) => Some(ChapCredentials {
                user: user.clone(),
                secret: secret.clone(),
            }),
            (None, None) => None,
            (Some(_), None) => {
                return Err(seed_error(
                    format!("{field}.chap_secret"),
                    "required when chap_username is set",
                ));
            }
            (None, Some(_)) => {
                return Err(seed_error(
                    format!("{field}.chap_username"),
                    "required when chap_secret is set",
                ));
            }
        };
        for (name, value) in [
            ("chap_secret", &self.chap_secret),
            ("mutual_chap_secret", &self.mutual_chap_secret),
        ] {
            if value
                .as_ref()
                .is_some_and(|s| !CHAP_SECRET_LEN.contains(&s.len()))
            {
                return Err(seed_error(
                    format!("{field}.{name}"),
                    "must be 12 to 16 bytes long",
                ));
            }
        }
        if self.mutual_chap_secret.is_some() && chap.is_none() {
            return Err(seed_error(
                format!("{field}.mutual_chap_secret"),
                "requires chap_username and chap_secret",
            ));
        }
        if let Some(i) = self.lun_sizes.iter().position(|s| *s == 0 || s % 512 != 0) {
            return Err(seed_error(
                format!("{field}.lun_sizes[{i}]"),
                "must be a non-zero multiple of 512",
            ));
        }
        Ok(IscsiTarget {
            iqn: self.iqn.clone(),
            allowed_initiators: self.allowed_initiators.clone(),
            chap,
            reverse_chap_secret: self.mutual_chap_secret.clone(),
            luns: self
                .lun_sizes
                .iter()
                .map(|&size_bytes| Lun { size_bytes })
                .collect(),
        })
    }
}

impl IscsiState {
    /// Builds the state from seed data. Errors (`INVALID_ARGUMENT`) name the
    /// offending field as `portals[i].targets[j].<field>`.
    pub fn from_seed(initiator_iqn: &str, portals: &[IscsiPortalSeed]) -> HostResult<Self> {
        let mut state = Self::new(initiator_iqn);
        for (i, p) in portals.iter().enumerate() {
            let key = PortalKey::new(&p.address, p.port);
            if state.server(&key).is_some() {
                return Err(seed_error(
                    format!("portals[{i}].address"),
                    &format!("duplicate portal {}:{}", p.address, p.port),
                ));
            }
            let mut targets: Vec<IscsiTarget> = Vec::new();
            for (j, t) in p.targets.iter().enumerate() {
                let field = format!("portals[{i}].targets[{j}]");
                if targets.iter().any(|x| x.iqn == t.iqn) {
                    return Err(seed_error(format!("{field}.iqn"), "duplicate target"));
                }
                targets.push(t.to_target(&field)?);
            }
            state.add_server(IscsiServer {
                address: p.address.clone(),
                port: p.port,
                reachable: p.reachable,
                targets,
            });
        }
        Ok(state)
    }
}

/// The iSCSI part of a node seed file.
///
/// ```toml
/// initiator_iqn = "iqn.1991-05.com.microsoft:node1"
/// [[portals]]
/// address = "10.0.0.20"
/// [[portals.targets]]
/// iqn = "iqn.1991-05.com.microsoft:storage01-chap-target"
/// chap_username = "someuser"
/// chap_secret = "verysecretpass"
/// lun_sizes = [1073741824]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IscsiSeed {
    /// The node's initiator name; default [`DEFAULT_INITIATOR_IQN`].
    #[serde(default = "default_initiator_iqn")]
    pub initiator_iqn: String,
    /// Remote servers; absent = none.
    #[serde(default)]
    pub portals: Vec<IscsiPortalSeed>,
}

fn default_initiator_iqn() -> String {
    DEFAULT_INITIATOR_IQN.to_owned()
}

impl IscsiSeed {
    /// The default node: [`DEFAULT_INITIATOR_IQN`] and
    /// [`default_iscsi_portals`].
    pub fn default_node() -> Self {
        Self {
            initiator_iqn: default_initiator_iqn(),
            portals: default_iscsi_portals(),
        }
    }

    /// Builds the state (see [`IscsiState::from_seed`]).
    pub fn build(&self) -> HostResult<IscsiState> {
        IscsiState::from_seed(&self.initiator_iqn, &self.portals)
    }
}

/// One GiB, the LUN size of the default targets.
const GIB: u64 = 1 << 30;

/// The default node's iSCSI server: portal `10.0.0.20:3260` with three
/// 1 GiB single-LUN targets:
///
/// | IQN | CHAP |
/// |---|---|
/// | `iqn.1991-05.com.microsoft:storage01-lun0-target` | none |
/// | `iqn.1991-05.com.microsoft:storage01-chap-target` | one-way: `someuser` / `verysecretpass` |
/// | `iqn.1991-05.com.microsoft:storage01-mutual-target` | `anotheruser` / `averylongsecret`, reverse secret `reversssssssse` |
pub fn default_iscsi_portals() -> Vec<IscsiPortalSeed> {
    let target = |iqn: &str, chap: Option<(&str, &str)>, mutual: Option<&str>| IscsiTargetSeed {
        iqn: format!("iqn.1991-05.com.microsoft:{iqn}"),
        chap_username: chap.map(|c| c.0.to_owned()),
        chap_secret: chap.map(|c| c.1.to_owned()),
        mutual_chap_secret: mutual.map(str::to_owned),
        lun_sizes: vec![GIB],
        allowed_initiators: None,
    };
    vec![IscsiPortalSeed {
        address: "10.0.0.20".into(),
        port: DEFAULT_ISCSI_PORT,
        reachable: true,
        targets: vec![
            target("storage01-lun0-target", None, None),
            target(
                "storage01-chap-target",
                Some(("someuser", "verysecretpass")),
                None,
            ),
            target(
                "storage01-mutual-target",
                Some(("anotheruser", "averylongsecret")),
                Some("reversssssssse"),
            ),
        ],
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostErrorKind;

    /// Disk table with disk 0 pre-populated; lowest free number wins.
    #[derive(Debug, Default)]
    struct FakeDisks {
        disks: BTreeMap<u32, DiskSpec>,
        stopped: bool,
    }

    impl IscsiDiskSink for FakeDisks {
        fn attach(&mut self, disk: DiskSpec) -> u32 {
            let n = (1..).find(|n| !self.disks.contains_key(n)).unwrap();
            self.disks.insert(n, disk);
            n
        }
        fn detach(&mut self, number: u32) {
            self.disks.remove(&number);
        }
        fn initiator_service_running(&self) -> bool {
            !self.stopped
        }
    }

    /// The iSCSI model and a fake disk sink behind one lock, with the RPCs
    /// as the node runs them.
    struct TestIscsi<S> {
        inner: std::sync::Mutex<(IscsiState, S)>,
    }

    impl<S: IscsiDiskSink> TestIscsi<S> {
        fn new(state: IscsiState, sink: S) -> Self {
            Self {
                inner: std::sync::Mutex::new((state, sink)),
            }
        }

        fn with<R>(&self, f: impl FnOnce(&mut IscsiState, &mut S) -> R) -> R {
            let mut guard = self.inner.lock().unwrap();
            let (state, sink) = &mut *guard;
            f(state, sink)
        }

        fn add_target_portal(&self, portal: Option<&TargetPortal>) -> HostResult<()> {
            self.with(|s, sink| s.add_target_portal(sink, portal))
        }

        fn discover_target_portal(&self, portal: Option<&TargetPortal>) -> HostResult<Vec<String>> {
            self.with(|s, sink| s.discover_target_portal(sink, portal))
        }

        fn remove_target_portal(&self, portal: Option<&TargetPortal>) -> HostResult<()> {
            self.with(|s, sink| s.remove_target_portal(sink, portal))
        }

        fn list_target_portals(&self) -> HostResult<Vec<TargetPortal>> {
            self.with(|s, sink| s.list_target_portals(sink))
        }

        fn connect_target(&self, req: &ConnectTargetRequest) -> HostResult<()> {
            self.with(|s, sink| s.connect_target(sink, req))
        }

        fn disconnect_target(&self, req: &TargetRequest) -> HostResult<()> {
            self.with(|s, sink| s.disconnect_target(sink, req))
        }

        fn get_target_disks(&self, req: &TargetRequest) -> HostResult<Vec<String>> {
            self.with(|s, sink| s.get_target_disks(sink, req))
        }

        fn set_mutual_chap_secret(&self, secret: &str, version: IscsiApiVersion) -> HostResult<()> {
            self.with(|s, sink| s.set_mutual_chap_secret(sink, secret, version))
        }
    }

    const ADDR: &str = "10.0.0.20";
    const LUN0: &str = "iqn.1991-05.com.microsoft:storage01-lun0-target";
    const CHAP: &str = "iqn.1991-05.com.microsoft:storage01-chap-target";
    const MUTUAL: &str = "iqn.1991-05.com.microsoft:storage01-mutual-target";

    fn host() -> TestIscsi<FakeDisks> {
        TestIscsi::new(IscsiState::default(), FakeDisks::default())
    }

    fn portal(port: u32) -> TargetPortal {
        TargetPortal::new(ADDR, port)
    }

    fn connect(iqn: &str, auth: i32, user: &str, secret: &str) -> ConnectTargetRequest {
        ConnectTargetRequest {
            target_portal: Some(portal(3260)),
            iqn: iqn.into(),
            auth_type: auth,
            chap_username: user.into(),
            chap_secret: secret.into(),
        }
    }

    fn target(iqn: &str) -> TargetRequest {
        TargetRequest {
            target_portal: Some(portal(0)),
            iqn: iqn.into(),
        }
    }

    #[test]
    fn debug_output_never_shows_secrets() {
        let h = host();
        h.set_mutual_chap_secret("reversssssssse", IscsiApiVersion::V1alpha2)
            .unwrap();
        let text = format!(
            "{:?} {:?} {:?}",
            h.with(|s, _| format!("{s:?}")),
            default_iscsi_portals(),
            connect(CHAP, 1, "someuser", "verysecretpass")
        );
        for secret in ["verysecretpass", "averylongsecret", "reversssssssse"] {
            assert!(!text.contains(secret), "{secret} leaked");
        }
        assert!(text.contains("someuser"));
    }

    #[test]
    fn concurrent_connects_make_one_session_per_target() {
        let host = std::sync::Arc::new(TestIscsi::new(
            IscsiSeed::default_node().build().unwrap(),
            FakeDisks::default(),
        ));
        host.add_target_portal(Some(&portal(0))).unwrap();
        let threads: Vec<_> = [LUN0, LUN0, CHAP, CHAP]
            .into_iter()
            .map(|iqn| {
                let host = host.clone();
                std::thread::spawn(move || {
                    host.connect_target(&connect(
                        iqn,
                        i32::from(iqn == CHAP),
                        "someuser",
                        "verysecretpass",
                    ))
                    .unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // Concurrent connects to the same target make one session each.
        let mut disks: Vec<String> = [LUN0, CHAP]
            .into_iter()
            .flat_map(|iqn| host.get_target_disks(&target(iqn)).unwrap())
            .collect();
        disks.sort();
        assert_eq!(disks, ["1", "2"]);
    }

    #[test]
    fn port_defaulting_and_truncation() {
        assert_eq!(effective_port(0), 3260);
        assert_eq!(effective_port(3260), 3260);
        assert_eq!(effective_port(68796), 3260);
        assert_eq!(effective_port(65536), 0);
        assert_eq!(effective_port(65535), 65535);
    }

    #[test]
    fn auth_type_mapping() {
        let expected = [(0, "NONE"), (1, "ONEWAYCHAP"), (2, "MUTUALCHAP")];
        for (code, name) in expected {
            let t = AuthenticationType::from_code(code).unwrap();
            assert_eq!(t.host_name(), name);
            assert_eq!(t.code(), code);
        }
        for bad in [3, -1] {
            let err = AuthenticationType::from_code(bad).unwrap_err();
            assert_eq!(err.kind(), HostErrorKind::Unknown);
            assert_eq!(
                err.message(),
                format!("invalid authentication type authType={bad}")
            );
        }
    }

    #[test]
    fn portal_add_list_remove_with_port_3260_and_0() {
        let h = host();
        for port in [3260, 0] {
            assert!(h.list_target_portals().unwrap().is_empty());
            h.add_target_portal(Some(&portal(port))).unwrap();
            // Idempotent, and the address matches case-insensitively.
            h.add_target_portal(Some(&TargetPortal::new("10.0.0.20", 3260)))
                .unwrap();
            assert_eq!(
                h.list_target_portals().unwrap(),
                [TargetPortal::new(ADDR, 3260)]
            );
            h.remove_target_portal(Some(&portal(port))).unwrap();
            assert!(h.list_target_portals().unwrap().is_empty());
            assert_eq!(
                h.remove_target_portal(Some(&portal(port)))
                    .unwrap_err()
                    .message(),
                "error query target portal at (10.0.0.20:3260). err: failed to query iSCSI target portal at (10.0.0.20:3260). error: not found"
            );
        }
    }

    #[test]
    fn add_unreachable_or_unknown_portal_fails() {
        let h = host();
        let err = h
            .add_target_portal(Some(&TargetPortal::new("10.9.9.9", 0)))
            .unwrap_err();
        assert_eq!(
            err.message(),
            "error adding target portal at (10.9.9.9:3260). err: WMI MSFT_iSCSITargetPortal.New failed (target=<nil>): code=4026466307"
        );
        h.with(|s, _| s.server_mut(ADDR, 3260).unwrap().reachable = false);
        assert!(h.add_target_portal(Some(&portal(0))).is_err());
        assert!(h.list_target_portals().unwrap().is_empty());
    }

    #[test]
    fn discover_lists_targets_and_requires_registration() {
        let h = host();
        assert_eq!(
            h.discover_target_portal(Some(&portal(0)))
                .unwrap_err()
                .message(),
            "error list targets by target portal at (10.0.0.20:3260). err: failed to query iSCSI target portal at (10.0.0.20:3260). error: not found"
        );
        // Targets restricted to other initiators are invisible.
        h.with(|s, _| {
            s.server_mut(ADDR, 3260).unwrap().targets[1].allowed_initiators =
                Some(vec!["iqn.other".into()]);
        });
        h.add_target_portal(Some(&portal(0))).unwrap();
        assert_eq!(
            h.discover_target_portal(Some(&portal(3260))).unwrap(),
            [LUN0, MUTUAL]
        );
        // Discovery lists the targets found when the portal was added; it
        // never asks the server again, so neither a change on the server
        // nor an unreachable server shows.
        h.with(|s, _| {
            let server = s.server_mut(ADDR, 3260).unwrap();
            server.targets[1].allowed_initiators = None;
            server.reachable = false;
        });
        assert_eq!(
            h.discover_target_portal(Some(&portal(0))).unwrap(),
            [LUN0, MUTUAL]
        );
    }

    #[test]
    fn connect_without_chap_then_disks_then_disconnect() {
        let h = host();
        h.add_target_portal(Some(&portal(0))).unwrap();
        assert!(h.get_target_disks(&target(LUN0)).unwrap().is_empty());
        h.connect_target(&connect(LUN0, 0, "", "")).unwrap();
        assert_eq!(h.get_target_disks(&target(LUN0)).unwrap(), ["1"]);
        h.with(|s, sink| {
            assert_eq!(s.sessions().len(), 1);
            let disk = &sink.disks[&1];
            assert_eq!(disk.size, 1 << 30);
            assert_eq!(disk.lun, 0);
            assert_eq!(disk.page83.len(), 16);
            assert_eq!(disk.page83[0] >> 4, 6);
            assert_eq!(
                disk.location,
                "Integrated : Adapter 1 : Port 0 : Target 0 : LUN 0"
            );
        });
        // Repeat connect: no-op, even with other credentials.
        h.connect_target(&connect(LUN0, 1, "x", "yyyyyyyyyyyyy"))
            .unwrap();
        assert_eq!(h.with(|_, sink| sink.disks.len()), 1);
        h.disconnect_target(&target(LUN0)).unwrap();
        assert!(h.get_target_disks(&target(LUN0)).unwrap().is_empty());
        assert!(h.with(|_, sink| sink.disks.is_empty()));
        // Idempotent disconnect.
        h.disconnect_target(&target(LUN0)).unwrap();
    }

    #[test]
    fn connect_unknown_target_or_unregistered_portal_fails() {
        let h = host();
        let expected =
            "error query target iqn.none from target portal at (10.0.0.20:3260). err: not found";
        h.add_target_portal(Some(&portal(0))).unwrap();
        assert_eq!(
            h.connect_target(&connect("iqn.none", 0, "", ""))
                .unwrap_err()
                .message(),
            expected
        );
        assert_eq!(
            h.disconnect_target(&target("iqn.none"))
                .unwrap_err()
                .message(),
            expected
        );
        assert_eq!(
            h.get_target_disks(&target("iqn.none"))
                .unwrap_err()
                .message(),
            expected
        );
        // IQNs compare exactly.
        assert!(
            h.connect_target(&connect(&LUN0.to_uppercase(), 0, "", ""))
                .is_err()
        );
        h.remove_target_portal(Some(&portal(0))).unwrap();
        let no_portal = "error query target iqn.none from target portal at (10.0.0.20:3260). \
                         err: failed to query iSCSI target portal at (10.0.0.20:3260). error: not found";
        assert_eq!(
            h.connect_target(&connect("iqn.none", 0, "", ""))
                .unwrap_err()
                .message(),
            no_portal
        );
        assert_eq!(
            h.disconnect_target(&target("iqn.none"))
                .unwrap_err()
                .message(),
            no_portal
        );
        assert_eq!(
            h.get_target_disks(&target("iqn.none"))
                .unwrap_err()
                .message(),
            no_portal
        );
    }

    #[test]
    fn invalid_auth_type_checked_first() {
        let h = host();
        let mut req = connect("iqn.none", 7, "", "");
        req.target_portal = None;
        assert_eq!(
            h.connect_target(&req).unwrap_err().message(),
            "invalid authentication type authType=7"
        );
    }

    #[test]
    fn one_way_chap() {
        let h = host();
        h.add_target_portal(Some(&portal(0))).unwrap();
        let auth_failure = "error connecting to target portal. err: WMI MSFT_iSCSITarget.Connect failed (target=<nil>): code=4026466313";
        assert_eq!(
            h.connect_target(&connect(CHAP, 0, "", ""))
                .unwrap_err()
                .message(),
            auth_failure
        );
        assert_eq!(
            h.connect_target(&connect(CHAP, 1, "someuser", "wrongsecret!!"))
                .unwrap_err()
                .message(),
            auth_failure
        );
        assert_eq!(
            h.connect_target(&connect(CHAP, 1, "other", "verysecretpass"))
                .unwrap_err()
                .message(),
            auth_failure
        );
        assert_eq!(
            h.connect_target(&connect(CHAP, 1, "someuser", "short"))
                .unwrap_err()
                .message(),
            "error connecting to target portal. err: WMI MSFT_iSCSITarget.Connect failed (target=<nil>): code=87"
        );
        // One-way CHAP against a target without CHAP is rejected.
        assert_eq!(
            h.connect_target(&connect(LUN0, 1, "someuser", "verysecretpass"))
                .unwrap_err()
                .message(),
            auth_failure
        );
        assert!(h.with(|s, _| s.sessions().is_empty()));
        h.connect_target(&connect(CHAP, 1, "someuser", "verysecretpass"))
            .unwrap();
        assert_eq!(h.get_target_disks(&target(CHAP)).unwrap(), ["1"]);
    }

    #[test]
    fn mutual_chap_wrong_then_right_secret() {
        let h = host();
        h.add_target_portal(Some(&portal(0))).unwrap();
        let req = connect(MUTUAL, 2, "anotheruser", "averylongsecret");
        // No mutual secret set yet.
        assert!(h.connect_target(&req).is_err());
        h.set_mutual_chap_secret("made-up-pass", IscsiApiVersion::V1alpha2)
            .unwrap();
        assert_eq!(
            h.connect_target(&req).unwrap_err().message(),
            "error connecting to target portal. err: WMI MSFT_iSCSITarget.Connect failed (target=<nil>): code=4026466313"
        );
        h.set_mutual_chap_secret("reversssssssse", IscsiApiVersion::V1alpha2)
            .unwrap();
        // Wrong forward secret still fails.
        assert!(
            h.connect_target(&connect(MUTUAL, 2, "anotheruser", "averylongsecreX"))
                .is_err()
        );
        h.connect_target(&req).unwrap();
        assert_eq!(h.get_target_disks(&target(MUTUAL)).unwrap(), ["1"]);
        h.disconnect_target(&target(MUTUAL)).unwrap();
        assert!(h.with(|_, sink| sink.disks.is_empty()));
    }

    #[test]
    fn set_mutual_chap_secret_version_gate_and_length() {
        let h = host();
        let err = h
            .set_mutual_chap_secret("reversssssssse", IscsiApiVersion::V1alpha1)
            .unwrap_err();
        assert_eq!(err.kind(), HostErrorKind::Unknown);
        assert_eq!(
            err.message(),
            "SetMutualChapSecret requires CSI-Proxy API version v1alpha2 or greater"
        );
        assert_eq!(
            h.with(|s, _| s.mutual_chap_secret().map(str::to_owned)),
            None
        );
        for bad in ["elevenchars", "seventeen-chars!!"] {
            assert_eq!(
                h.set_mutual_chap_secret(bad, IscsiApiVersion::V1alpha2)
                    .unwrap_err()
                    .message(),
                "error setting mutual chap secret. err: WMI MSFT_iSCSISession.SetCHAPSecret failed (target=<nil>): code=87"
            );
        }
        for good in ["twelve-chars", "sixteen-chars-ok"] {
            h.set_mutual_chap_secret(good, IscsiApiVersion::V1alpha2)
                .unwrap();
            assert_eq!(
                h.with(|s, _| s.mutual_chap_secret().map(str::to_owned))
                    .as_deref(),
                Some(good)
            );
        }
    }

    #[test]
    fn missing_portal_is_invalid_argument() {
        let h = host();
        let errs = [
            h.add_target_portal(None).unwrap_err(),
            h.discover_target_portal(None).unwrap_err(),
            h.remove_target_portal(None).unwrap_err(),
            h.connect_target(&ConnectTargetRequest {
                target_portal: None,
                iqn: LUN0.into(),
                ..Default::default()
            })
            .unwrap_err(),
            h.disconnect_target(&TargetRequest::default()).unwrap_err(),
            h.get_target_disks(&TargetRequest::default()).unwrap_err(),
        ];
        for err in errs {
            assert_eq!(err.kind(), HostErrorKind::InvalidArgument);
            assert_eq!(err.message(), "target_portal is required");
        }
    }

    #[test]
    fn disk_numbers_are_lowest_free_and_in_lun_order() {
        let mut state = IscsiState::new("iqn.init");
        state.add_server(IscsiServer {
            address: "Target.Example".into(),
            port: 3261,
            reachable: true,
            targets: vec![
                IscsiTarget::new("iqn.a", &[512 * 1024, 1024 * 1024]),
                IscsiTarget::new("iqn.b", &[4096]),
            ],
        });
        let h = TestIscsi::new(state, FakeDisks::default());
        let p = TargetPortal::new("target.example", 3261);
        h.add_target_portal(Some(&p)).unwrap();
        let req = |iqn: &str| ConnectTargetRequest {
            target_portal: Some(p.clone()),
            iqn: iqn.into(),
            ..Default::default()
        };
        let t = |iqn: &str| TargetRequest {
            target_portal: Some(p.clone()),
            iqn: iqn.into(),
        };
        h.connect_target(&req("iqn.a")).unwrap();
        h.connect_target(&req("iqn.b")).unwrap();
        assert_eq!(h.get_target_disks(&t("iqn.a")).unwrap(), ["1", "2"]);
        assert_eq!(h.get_target_disks(&t("iqn.b")).unwrap(), ["3"]);
        h.disconnect_target(&t("iqn.a")).unwrap();
        h.connect_target(&req("iqn.a")).unwrap();
        assert_eq!(h.get_target_disks(&t("iqn.a")).unwrap(), ["1", "2"]);
        assert_eq!(
            h.list_target_portals().unwrap(),
            [TargetPortal::new("target.example", 3261)]
        );
    }

    #[test]
    fn persistent_session_is_unregistered_on_disconnect() {
        let h = host();
        h.add_target_portal(Some(&portal(0))).unwrap();
        h.connect_target(&connect(LUN0, 0, "", "")).unwrap();
        assert_eq!(h.with(|s, _| s.make_persistent(LUN0)), 1);
        assert_eq!(h.with(|s, _| s.persistent_logins().len()), 1);
        h.disconnect_target(&target(LUN0)).unwrap();
        assert!(h.with(|s, _| s.persistent_logins().is_empty() && s.sessions().is_empty()));
    }

    #[test]
    fn remove_portal_keeps_sessions() {
        let h = host();
        h.add_target_portal(Some(&portal(0))).unwrap();
        h.connect_target(&connect(LUN0, 0, "", "")).unwrap();
        h.remove_target_portal(Some(&portal(0))).unwrap();
        assert_eq!(
            h.with(|s, sink| (s.sessions().len(), sink.disks.len())),
            (1, 1)
        );
    }

    #[test]
    fn stopped_initiator_service_fails_everything() {
        let h = host();
        h.with(|_, sink| sink.stopped = true);
        assert_eq!(
            h.add_target_portal(Some(&portal(0))).unwrap_err().message(),
            "error adding target portal at (10.0.0.20:3260). err: the Microsoft iSCSI Initiator Service (MSiSCSI) is not running"
        );
        assert!(h.list_target_portals().is_err());
        h.with(|_, sink| sink.stopped = false);
        h.add_target_portal(Some(&portal(0))).unwrap();
    }

    type Seed = IscsiSeed;

    #[test]
    fn seed_from_toml_and_field_errors() {
        let seed: Seed = toml::from_str(
            r#"
[[portals]]
address = "san.local"
[[portals.targets]]
iqn = "iqn.2020-01.local.san:t1"
chap_username = "u"
chap_secret = "0123456789ab"
lun_sizes = [1073741824]
"#,
        )
        .unwrap();
        assert_eq!(seed.portals[0].port, 3260);
        assert_eq!(seed.initiator_iqn, DEFAULT_INITIATOR_IQN);
        let state = seed.build().unwrap();
        assert_eq!(state.initiator_iqn(), DEFAULT_INITIATOR_IQN);
        let h = TestIscsi::new(state, FakeDisks::default());
        let p = TargetPortal::new("SAN.local", 0);
        h.add_target_portal(Some(&p)).unwrap();
        assert_eq!(
            h.discover_target_portal(Some(&p)).unwrap(),
            ["iqn.2020-01.local.san:t1"]
        );

        let err = toml::from_str::<Seed>("[[portals]]\naddress = \"a\"\nprot = 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `prot`"), "{err}");
        let err = toml::from_str::<Seed>("[[portals]]\nport = 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing field `address`"), "{err}");

        let bad = |t: IscsiTargetSeed| {
            IscsiState::from_seed(
                "iqn.init",
                &[IscsiPortalSeed {
                    address: "a".into(),
                    port: 3260,
                    reachable: true,
                    targets: vec![t],
                }],
            )
            .unwrap_err()
        };
        let base = IscsiTargetSeed {
            iqn: "iqn.t".into(),
            chap_username: None,
            chap_secret: None,
            mutual_chap_secret: None,
            lun_sizes: vec![],
            allowed_initiators: None,
        };
        let err = bad(IscsiTargetSeed {
            chap_username: Some("u".into()),
            ..base.clone()
        });
        assert_eq!(err.kind(), HostErrorKind::InvalidArgument);
        assert_eq!(
            err.message(),
            "portals[0].targets[0].chap_secret: required when chap_username is set"
        );
        let err = bad(IscsiTargetSeed {
            mutual_chap_secret: Some("0123456789ab".into()),
            ..base.clone()
        });
        assert_eq!(
            err.message(),
            "portals[0].targets[0].mutual_chap_secret: requires chap_username and chap_secret"
        );
        let err = bad(IscsiTargetSeed {
            lun_sizes: vec![512, 100],
            ..base.clone()
        });
        assert_eq!(
            err.message(),
            "portals[0].targets[0].lun_sizes[1]: must be a non-zero multiple of 512"
        );
        let err = bad(IscsiTargetSeed {
            chap_username: Some("u".into()),
            chap_secret: Some("short".into()),
            ..base
        });
        assert_eq!(
            err.message(),
            "portals[0].targets[0].chap_secret: must be 12 to 16 bytes long"
        );
    }
}
