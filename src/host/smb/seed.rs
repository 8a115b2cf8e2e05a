//! The `[smb]` section of a node seed and the default node's share.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;

use super::{
    MachineIdentityPolicy, ShareAccess, SmbConfig, SmbState, account_name, check_component,
};
use crate::host::error::{HostError, HostResult};

/// Seed of one share (node seed file). Several seeds may name the same
/// server (they then share accounts and server flags).
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmbShareSeed {
    /// Server host name or IP.
    pub server: String,
    /// Share name.
    pub share: String,
    /// Account allowed on the share (created on the server), may be
    /// `DOMAIN\user` or `user@domain`.
    #[serde(default)]
    pub username: Option<String>,
    /// Password of `username`.
    #[serde(default)]
    pub password: Option<String>,
    /// Whether the share is open to Everyone (also to mappings without
    /// credentials); default false.
    #[serde(default)]
    pub everyone: bool,
    /// Whether the server is reachable; default true.
    #[serde(default = "default_true")]
    pub reachable: bool,
    /// Whether the server supports SMB encryption; default true.
    #[serde(default = "default_true")]
    pub supports_encryption: bool,
}

impl fmt::Debug for SmbShareSeed {
    /// Never prints the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmbShareSeed")
            .field("server", &self.server)
            .field("share", &self.share)
            .field("username", &self.username)
            .field("everyone", &self.everyone)
            .field("reachable", &self.reachable)
            .field("supports_encryption", &self.supports_encryption)
            .finish_non_exhaustive()
    }
}

fn default_true() -> bool {
    true
}

/// The SMB part of a node seed file.
///
/// ```toml
/// machine_identity = "everyone_shares_only"
/// [[shares]]
/// server = "fileserver"
/// share = "share"
/// username = "smbuser"
/// password = "Sm8-Passw0rd!"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmbSeed {
    /// What mappings without credentials may access; default
    /// `everyone_shares_only`.
    #[serde(default)]
    pub machine_identity: MachineIdentityPolicy,
    /// Shares; absent = none.
    #[serde(default)]
    pub shares: Vec<SmbShareSeed>,
}

impl SmbSeed {
    /// The default node: [`default_smb_shares`], default policy.
    pub fn default_node() -> Self {
        Self {
            machine_identity: MachineIdentityPolicy::default(),
            shares: default_smb_shares(),
        }
    }

    /// Builds the state under `sandbox` with the server's
    /// `--require-privacy` value (see [`SmbState::from_seed`]).
    pub fn build(
        &self,
        sandbox: impl Into<PathBuf>,
        require_privacy: bool,
    ) -> HostResult<SmbState> {
        let config = SmbConfig {
            require_privacy,
            machine_identity: self.machine_identity,
            ..SmbConfig::default()
        };
        SmbState::from_seed(sandbox, config, &self.shares)
    }
}

/// Server name of the default share.
pub const DEFAULT_SMB_SERVER: &str = "fileserver";
/// Share name of the default share.
pub const DEFAULT_SMB_SHARE: &str = "share";
/// Account of the default share.
pub const DEFAULT_SMB_USER: &str = "smbuser";
/// Password of [`DEFAULT_SMB_USER`].
pub const DEFAULT_SMB_PASSWORD: &str = "Sm8-Passw0rd!";

/// The default node's share: `\\fileserver\share`, usable by account
/// `smbuser` with password `Sm8-Passw0rd!` (any domain prefix), not open to
/// Everyone; the server is reachable and supports encryption.
pub fn default_smb_shares() -> Vec<SmbShareSeed> {
    vec![SmbShareSeed {
        server: DEFAULT_SMB_SERVER.into(),
        share: DEFAULT_SMB_SHARE.into(),
        username: Some(DEFAULT_SMB_USER.into()),
        password: Some(DEFAULT_SMB_PASSWORD.into()),
        everyone: false,
        reachable: true,
        supports_encryption: true,
    }]
}

impl SmbState {
    /// Builds the state from seed data, creating each share's content
    /// directory. Errors (`INVALID_ARGUMENT`) name the offending field as
    /// `shares[i].<field>`.
    pub fn from_seed(
        sandbox: impl Into<PathBuf>,
        config: SmbConfig,
        shares: &[SmbShareSeed],
    ) -> HostResult<Self> {
        let mut state = Self::new(sandbox, config);
        for (i, seed) in shares.iter().enumerate() {
            let field = |name: &str| format!("shares[{i}].{name}");
            let invalid = |name: &str, msg: String| {
                HostError::invalid_argument(format!("{}: {msg}", field(name)))
            };
            check_component(&field("server"), &seed.server)?;
            check_component(&field("share"), &seed.share)?;
            if state
                .server(&seed.server)
                .is_some_and(|s| s.share(&seed.share).is_some())
            {
                return Err(invalid(
                    "share",
                    format!("duplicate share \\\\{}\\{}", seed.server, seed.share),
                ));
            }
            if let Some(existing) = state.server(&seed.server) {
                if existing.reachable != seed.reachable {
                    return Err(invalid(
                        "reachable",
                        format!("conflicts with an earlier share on server {}", seed.server),
                    ));
                }
                if existing.supports_encryption != seed.supports_encryption {
                    return Err(invalid(
                        "supports_encryption",
                        format!("conflicts with an earlier share on server {}", seed.server),
                    ));
                }
            }
            let mut users = BTreeSet::new();
            match (&seed.username, &seed.password) {
                (Some(user), Some(password)) => {
                    if user.is_empty() || account_name(user).is_empty() {
                        return Err(invalid("username", "must not be empty".into()));
                    }
                    let conflict = state.server(&seed.server).is_some_and(|s| {
                        s.accounts
                            .get(&account_name(user))
                            .is_some_and(|p| p != password)
                    });
                    if conflict {
                        return Err(invalid(
                            "password",
                            format!(
                                "conflicts with an earlier password for {user} on server {}",
                                seed.server
                            ),
                        ));
                    }
                    state.add_account(&seed.server, user, password)?;
                    users.insert(account_name(user));
                }
                (None, None) => {}
                (Some(_), None) => {
                    return Err(invalid("password", "required when username is set".into()));
                }
                (None, Some(_)) => {
                    return Err(invalid("username", "required when password is set".into()));
                }
            }
            let access = if seed.everyone {
                ShareAccess::Everyone
            } else {
                ShareAccess::Users(users)
            };
            state
                .add_share(&seed.server, &seed.share, access)
                .map_err(|e| e.context(format!("{}: ", field("share"))))?;
            let server = state.server_entry(&seed.server);
            server.reachable = seed.reachable;
            server.supports_encryption = seed.supports_encryption;
        }
        Ok(state)
    }
}
