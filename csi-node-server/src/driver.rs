//! What a driver tells the server: [`Driver`].

use std::collections::HashMap;

use csi_proxy_client::node::{DiskSelector, SmbCredentials};
use tonic::Status;

/// What one CSI request says about its volume, for [`Driver::volume`].
#[derive(Debug, Clone, Copy)]
pub struct VolumeRequest<'a> {
    /// The volume id.
    pub volume_id: &'a str,
    /// The volume context (what CreateVolume returned).
    pub volume_context: &'a HashMap<String, String>,
    /// The publish context (what ControllerPublishVolume returned).
    pub publish_context: &'a HashMap<String, String>,
}

/// The volume a request is about, as the driver names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Volume {
    /// A disk attached to the node, staged as an NTFS volume.
    Disk(DiskSelector),
    /// An SMB share path (`\\server\share[\dir]`), staged as a link to it.
    Smb(String),
}

/// The part of a CSI node plugin that is the driver's own: who it is, and
/// how its requests name volumes. Everything else (checks, locks, the node
/// layer's calls, logs, metrics) is [`Plugin`](crate::Plugin)'s.
pub trait Driver: Send + Sync + 'static {
    /// The name the driver registers under (reverse DNS).
    fn name(&self) -> &str;

    /// The driver's version, for `GetPluginInfo`.
    fn version(&self) -> &str;

    /// The node id `NodeGetInfo` reports (what the controller attaches to).
    fn node_id(&self) -> &str;

    /// The node's topology segments for `NodeGetInfo` (none by default).
    fn topology(&self) -> HashMap<String, String> {
        HashMap::new()
    }

    /// How many volumes the node takes, for `NodeGetInfo`; 0 (the
    /// default) gives no limit.
    fn max_volumes_per_node(&self) -> i64 {
        0
    }

    /// Whether the driver has a Controller service, served by this program
    /// or another (a cloud's controller): `GetPluginCapabilities` then
    /// reports CONTROLLER_SERVICE, as a driver whose one binary serves both
    /// does. Tools that learn the driver's services from the node endpoint,
    /// csi-sanity among them, publish volumes through the controller only
    /// when it is reported. No by default.
    fn controller_service(&self) -> bool {
        false
    }

    /// The volume a stage or publish request names. A request that names
    /// none is the driver's to refuse, with `INVALID_ARGUMENT`.
    fn volume(&self, request: &VolumeRequest<'_>) -> Result<Volume, Status>;

    /// The credentials for an SMB volume, from the stage request's secrets.
    /// By default [`smb_credentials`]: `username`, `password` and an
    /// optional `domain`. Secrets never go into a message or a log.
    fn smb_credentials(&self, secrets: &HashMap<String, String>) -> Result<SmbCredentials, Status> {
        smb_credentials(secrets)
    }
}

/// SMB credentials from secrets `username`, `password` and an optional
/// `domain` (none at all means the node's own identity); the values never
/// reach a message.
pub fn smb_credentials(secrets: &HashMap<String, String>) -> Result<SmbCredentials, Status> {
    let get = |k: &str| secrets.get(k).map(String::as_str).unwrap_or_default();
    let (user, password, domain) = (get("username"), get("password"), get("domain"));
    match (user.is_empty(), password.is_empty()) {
        (true, true) => Ok(SmbCredentials::none()),
        (false, false) if domain.is_empty() => Ok(SmbCredentials::new(user, password)),
        (false, false) => Ok(SmbCredentials::new(format!("{domain}\\{user}"), password)),
        _ => Err(Status::invalid_argument(
            "secrets must hold both username and password, or neither",
        )),
    }
}

/// The machine's name, the usual node id of a plugin run by a DaemonSet:
/// `COMPUTERNAME` on Windows, the kernel's host name elsewhere, and
/// `localhost` when neither is known.
pub fn host_name() -> String {
    let name = if cfg!(windows) {
        std::env::var("COMPUTERNAME").ok()
    } else {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
    };
    name.map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}
