//! iSCSI targets: attached (portal, discovery, login) and detached.

use std::fmt;

use super::Node;
use super::groups::IscsiLogin;
use crate::Error;

/// How an iSCSI initiator logs in.
#[derive(Clone, Default)]
pub enum IscsiAuth {
    /// No authentication.
    #[default]
    None,
    /// One-way CHAP: the target checks the initiator.
    Chap {
        /// CHAP user name.
        username: String,
        /// CHAP secret.
        secret: String,
    },
}

impl fmt::Debug for IscsiAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IscsiAuth::None => f.write_str("None"),
            IscsiAuth::Chap { username, .. } => f
                .debug_struct("Chap")
                .field("username", username)
                .field("secret", &"<hidden>")
                .finish(),
        }
    }
}

/// An iSCSI target behind a portal.
#[derive(Debug, Clone)]
pub struct IscsiTarget {
    /// Portal address (host name or IP).
    pub portal: String,
    /// Portal port (3260 by default).
    pub port: u32,
    /// Target IQN.
    pub iqn: String,
    /// How to log in.
    pub auth: IscsiAuth,
}

impl IscsiTarget {
    /// `iqn` behind `portal:3260`, without authentication.
    pub fn new(portal: impl Into<String>, iqn: impl Into<String>) -> Self {
        Self {
            portal: portal.into(),
            port: 3260,
            iqn: iqn.into(),
            auth: IscsiAuth::None,
        }
    }
}

impl Node {
    // ------------------------------------------------------------ iSCSI

    /// Adds the target's portal, checks it offers the target, logs in and
    /// returns the numbers of the target's disks. Already attached: Ok.
    pub async fn iscsi_attach(&self, target: &IscsiTarget) -> Result<Vec<u32>, Error> {
        self.bounded("iscsi_attach", async {
            let iscsi = self.iscsi()?;
            let (portal, port, iqn) = (&target.portal, target.port, &target.iqn);
            iscsi.add_portal(portal, port).await?;
            let offered = iscsi.discover(portal, port).await?;
            if !offered.iter().any(|t| t.eq_ignore_ascii_case(iqn)) {
                return Err(Error::IscsiTargetNotFound {
                    portal: format!("{portal}:{port}"),
                    iqn: iqn.clone(),
                    seen: offered.join(", "),
                });
            }
            if iscsi.disks(portal, port, iqn).await?.is_empty() {
                let login = match &target.auth {
                    IscsiAuth::None => IscsiLogin {
                        auth_type: 0,
                        user: "",
                        secret: "",
                    },
                    IscsiAuth::Chap { username, secret } => IscsiLogin {
                        auth_type: 1,
                        user: username,
                        secret,
                    },
                };
                iscsi.connect(portal, port, iqn, login).await?;
            }
            iscsi.disks(portal, port, iqn).await
        })
        .await
    }

    /// Logs out of the target, and removes its portal when no target
    /// behind it is still connected. Already detached: Ok.
    ///
    /// A target one of whose disks holds a volume this node staged (its
    /// records, see [`NodeOptions::records`](super::NodeOptions::records))
    /// and still mounted is [`Error::IscsiTargetInUse`], nothing changed:
    /// a logout removes the disk under the mounted volume, and a target
    /// often carries several LUNs, staged as several volumes, one of
    /// which may be unstaged while the others are in use.
    pub async fn iscsi_detach(&self, target: &IscsiTarget) -> Result<(), Error> {
        self.bounded("iscsi_detach", async {
            let iscsi = self.iscsi()?;
            let (portal, port, iqn) = (&target.portal, target.port, &target.iqn);
            let known = iscsi.portals().await?;
            if !known
                .iter()
                .any(|(a, p)| a.eq_ignore_ascii_case(portal) && *p == port)
            {
                return Ok(());
            }
            let disks = iscsi.disks(portal, port, iqn).await?;
            if !disks.is_empty() {
                let volume = self.volume()?;
                for n in &disks {
                    let volumes = volume.volumes_on_disk(*n).await?;
                    // No staging path is "": every recorded one counts.
                    if let Some(path) = self.other_user("", &volumes).await? {
                        return Err(Error::IscsiTargetInUse {
                            iqn: iqn.clone(),
                            path,
                        });
                    }
                }
                iscsi.disconnect(portal, port, iqn).await?;
            }
            for other in iscsi.discover(portal, port).await? {
                if !iscsi.disks(portal, port, &other).await?.is_empty() {
                    return Ok(());
                }
            }
            iscsi.remove_portal(portal, port).await
        })
        .await
    }
}
