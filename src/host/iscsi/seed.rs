//! The `[iscsi]` section of a node seed and the default node's iSCSI side.

use std::fmt;

use serde::Deserialize;

use super::{
    CHAP_SECRET_LEN, ChapCredentials, DEFAULT_ISCSI_PORT, IscsiServer, IscsiState, IscsiTarget,
    Lun, PortalKey, redact,
};
use crate::host::error::{HostError, HostResult};

/// Initiator node name of the default node.
pub const DEFAULT_INITIATOR_IQN: &str = "iqn.1991-05.com.microsoft:sim-node";

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

impl Default for IscsiState {
    /// The default node: [`DEFAULT_INITIATOR_IQN`] and
    /// [`default_iscsi_portals`].
    fn default() -> Self {
        Self::from_seed(DEFAULT_INITIATOR_IQN, &default_iscsi_portals())
            .expect("default iSCSI seed is consistent")
    }
}
