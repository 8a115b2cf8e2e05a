//! What a driver tells the server: [`Driver`], and the policies it may
//! replace ([`default_fs_type`], [`default_access_mode`]).

use std::collections::HashMap;

use csi_proxy_client::node::{DiskSelector, Node, SmbCredentials};
use tonic::Status;

use crate::csi::v1 as csi;
use crate::csi::v1::node_service_capability::rpc;
use crate::csi::v1::volume_capability::access_mode::Mode;

/// The Node capabilities the plugin reports unless the driver says
/// otherwise ([`Driver::node_capabilities`]).
pub const CAPABILITIES: [rpc::Type; 4] = [
    rpc::Type::StageUnstageVolume,
    rpc::Type::GetVolumeStats,
    rpc::Type::ExpandVolume,
    rpc::Type::VolumeCondition,
];

/// The CSI call a [`VolumeRequest`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// `NodeStageVolume`.
    Stage,
    /// `NodePublishVolume`.
    Publish,
}

/// What one stage or publish request says about its volume, for
/// [`Driver::volume`] and [`Driver::smb_credentials`]. Fields may be
/// added: read them, do not build the struct.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct VolumeRequest<'a> {
    /// The call.
    pub call: Call,
    /// The volume id.
    pub volume_id: &'a str,
    /// The volume context (what CreateVolume returned, and for inline
    /// volumes the pod's attributes).
    pub volume_context: &'a HashMap<String, String>,
    /// The publish context (what ControllerPublishVolume returned).
    pub publish_context: &'a HashMap<String, String>,
    /// The request's secrets (stage or publish secrets). Never put them in
    /// a message or a log.
    pub secrets: &'a HashMap<String, String>,
    /// The capability asked for (checked after the volume is resolved).
    pub capability: Option<&'a csi::VolumeCapability>,
    /// The staging path (empty when the request has none).
    pub staging_target_path: &'a str,
    /// The target path of a publish (empty for a stage).
    pub target_path: &'a str,
}

/// The volume a request is about, as the driver names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Volume {
    /// A disk attached to the node, staged as an NTFS volume.
    Disk(DiskSelector),
    /// An SMB share path (`\\server\share[\dir]`), staged as a link to it.
    Smb(String),
}

/// A step of a volume's life, for the hooks [`Driver::before`] and
/// [`Driver::after`]: the request as it came, and for a stage or publish
/// the volume the driver resolved.
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    /// `NodeStageVolume`.
    Stage {
        /// The request.
        request: &'a csi::NodeStageVolumeRequest,
        /// The volume [`Driver::volume`] named.
        volume: &'a Volume,
    },
    /// `NodePublishVolume`.
    Publish {
        /// The request.
        request: &'a csi::NodePublishVolumeRequest,
        /// The volume [`Driver::volume`] named.
        volume: &'a Volume,
    },
    /// `NodeUnpublishVolume`.
    Unpublish {
        /// The request.
        request: &'a csi::NodeUnpublishVolumeRequest,
    },
    /// `NodeUnstageVolume`.
    Unstage {
        /// The request.
        request: &'a csi::NodeUnstageVolumeRequest,
    },
}

impl Step<'_> {
    /// The volume id of the step's request.
    pub fn volume_id(&self) -> &str {
        match self {
            Step::Stage { request, .. } => &request.volume_id,
            Step::Publish { request, .. } => &request.volume_id,
            Step::Unpublish { request } => &request.volume_id,
            Step::Unstage { request } => &request.volume_id,
        }
    }
}

/// The part of a CSI node plugin that is the driver's own: who it is, how
/// its requests name volumes, and the policies where drivers differ.
/// Everything else (checks, locks, the node layer's calls, logs, metrics)
/// is [`Plugin`](crate::Plugin)'s.
///
/// The async methods are written in an impl marked
/// `#[csi_node_server::async_trait]`. Only `name`, `version`, `node_id`
/// and `volume` are required; the defaults are what the upstream Windows
/// drivers agree on.
#[crate::async_trait]
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
    /// none is the driver's to refuse, with `INVALID_ARGUMENT`. It may ask
    /// a cloud (the request's secrets are here); it runs before the
    /// volume's lock is taken, so it must not change anything.
    async fn volume(&self, request: &VolumeRequest<'_>) -> Result<Volume, Status>;

    /// The credentials for an SMB volume. By default [`smb_credentials`]
    /// over the request's secrets, as csi-driver-smb reads them. A driver
    /// that fetches a key (azurefile's storage account key) does it here.
    /// Secrets never go into a message or a log.
    async fn smb_credentials(&self, request: &VolumeRequest<'_>) -> Result<SmbCredentials, Status> {
        smb_credentials(request.secrets)
    }

    /// Whether the directory an SMB volume names below its share
    /// (`\\server\share\dir`) is created at stage when it does not
    /// exist, as azurefile-csi-driver does before mounting when the volume
    /// context says `createFolderIfNotExist` (pkg/azurefile/nodeserver.go).
    /// No by default: csi-driver-smb creates it in its controller
    /// (pkg/smb/controllerserver.go CreateVolume), and a missing directory
    /// fails the stage with `NOT_FOUND` naming it.
    fn create_missing_smb_dir(&self, request: &VolumeRequest<'_>) -> bool {
        let _ = request;
        false
    }

    /// Whether the plugin serves `fs_type` for `volume` (the capability's
    /// file system type, as given). By default [`default_fs_type`].
    fn fs_type(&self, volume: &Volume, fs_type: &str) -> Result<(), Status> {
        default_fs_type(volume, fs_type)
    }

    /// Whether the plugin serves a volume with these mount flags. Windows
    /// mounts take none, so by default they are accepted and ignored, as
    /// the upstream drivers do on Windows (csi-driver-smb's StorageClass
    /// carries `dir_mode`, `file_mode` and `vers`).
    fn mount_flags(&self, volume: &Volume, flags: &[String]) -> Result<(), Status> {
        let _ = (volume, flags);
        Ok(())
    }

    /// Whether the plugin serves `mode` for `volume`. By default
    /// [`default_access_mode`].
    fn access_mode(&self, volume: &Volume, mode: Mode) -> Result<(), Status> {
        default_access_mode(volume, mode)
    }

    /// The Node capabilities `NodeGetCapabilities` reports; by default
    /// [`CAPABILITIES`]. A driver may add `SINGLE_NODE_MULTI_WRITER`, and
    /// `VOLUME_MOUNT_GROUP` (then a capability's `volume_mount_group` is
    /// accepted and ignored: Windows has no group ids; without it, it is
    /// `INVALID_ARGUMENT`). The plugin serves stage, stats, expand and
    /// volume conditions whatever is reported.
    fn node_capabilities(&self) -> Vec<rpc::Type> {
        CAPABILITIES.to_vec()
    }

    /// Whether a disk's volume is grown right after staging when its disk
    /// is larger (a volume restored from a smaller snapshot, kubernetes#94929;
    /// azuredisk, GCE and AWS do it). On by default; skipped for reader
    /// access modes and when the disk has less than 1 MiB beyond the volume.
    fn grow_after_stage(&self) -> bool {
        true
    }

    /// Whether a disk is taken offline after its volume is unstaged
    /// ([`Unstage::offline`](csi_proxy_client::node::Unstage::offline)), as the GCE, AWS and vSphere
    /// drivers do before the disk is detached. Off by default.
    fn offline_at_unstage(&self) -> bool {
        false
    }

    /// Runs before the node work of `step`, with the volume's lock held
    /// (cloud calls, a subdirectory to create, extra checks). An error
    /// ends the call with that status and nothing done on the node; a
    /// node-layer error is best mapped with [`status_of`](crate::status_of).
    /// Called again when kubelet retries: it must be idempotent.
    async fn before(&self, node: &Node, step: Step<'_>) -> Result<(), Status> {
        let _ = (node, step);
        Ok(())
    }

    /// Runs after the node work of `step` succeeded, with the volume's
    /// lock held. An error ends the call with that status (the node work
    /// stays done; kubelet retries the call, which finds it done).
    async fn after(&self, node: &Node, step: Step<'_>) -> Result<(), Status> {
        let _ = (node, step);
        Ok(())
    }
}

/// The file system types the default policy serves on a disk as NTFS: the
/// Linux types provisioners put on PVs by default (aws-ebs-csi-driver's
/// chart runs its provisioner with `--default-fstype=ext4`; the vSphere
/// driver maps `""` and `ext4` to NTFS on Windows; azuredisk ignores it).
pub const LINUX_FS_TYPES: [&str; 3] = ["ext4", "ext3", "xfs"];

/// The default file system policy: a share's file system is its server's,
/// so any type is accepted and ignored for SMB (as the SMB drivers do); a
/// disk takes `""` and `ntfs` (any case), and the types of
/// [`LINUX_FS_TYPES`] are served as NTFS with a log line saying so;
/// anything else is `INVALID_ARGUMENT`.
pub fn default_fs_type(volume: &Volume, fs_type: &str) -> Result<(), Status> {
    if matches!(volume, Volume::Smb(_)) {
        return Ok(());
    }
    let lower = fs_type.to_ascii_lowercase();
    if lower.is_empty() || lower == "ntfs" {
        return Ok(());
    }
    if LINUX_FS_TYPES.contains(&lower.as_str()) {
        tracing::info!(fs_type, "file system type served as NTFS on Windows");
        return Ok(());
    }
    Err(Status::invalid_argument(format!(
        "file system type {fs_type:?} is not supported for a disk: \
         it is formatted NTFS (\"\", ntfs, or {} served as NTFS)",
        LINUX_FS_TYPES.join(", ")
    )))
}

/// The reader access modes, served read-write on Windows: a link cannot be
/// made read-only, and the volume is mounted the same way.
pub fn is_reader(mode: Mode) -> bool {
    matches!(mode, Mode::SingleNodeReaderOnly | Mode::MultiNodeReaderOnly)
}

/// The default access mode policy: a share takes every mode; a disk takes
/// the single-node modes and `MULTI_NODE_READER_ONLY` (GCE serves
/// read-only-many disks), not the multi-node writer modes; no mode is
/// `INVALID_ARGUMENT`.
pub fn default_access_mode(volume: &Volume, mode: Mode) -> Result<(), Status> {
    let disk_ok = matches!(
        mode,
        Mode::SingleNodeWriter
            | Mode::SingleNodeReaderOnly
            | Mode::SingleNodeSingleWriter
            | Mode::SingleNodeMultiWriter
            | Mode::MultiNodeReaderOnly
    );
    match (mode, volume) {
        (Mode::Unknown, _) => Err(Status::invalid_argument("access mode missing")),
        (_, Volume::Disk(_)) if !disk_ok => Err(Status::invalid_argument(format!(
            "access mode {} is not supported for a disk, which one node writes at a time",
            mode.as_str_name()
        ))),
        _ => Ok(()),
    }
}

/// SMB credentials from secrets, as csi-driver-smb reads them
/// (pkg/smb/nodeserver.go): the keys `username`, `password` and `domain`
/// in any case, values trimmed of surrounding white space; with a domain,
/// the user becomes `DOMAIN\user` unless the user name already holds a
/// `\`. No user and no password means the node's own identity. The values
/// never reach a message.
pub fn smb_credentials(secrets: &HashMap<String, String>) -> Result<SmbCredentials, Status> {
    let get = |key: &str| {
        secrets
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.trim())
            .unwrap_or_default()
    };
    let (user, password, domain) = (get("username"), get("password"), get("domain"));
    match (user.is_empty(), password.is_empty()) {
        (true, true) => Ok(SmbCredentials::none()),
        (false, false) if domain.is_empty() || user.contains('\\') => {
            Ok(SmbCredentials::new(user, password))
        }
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
