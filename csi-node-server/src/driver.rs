//! What a driver tells the server: [`Driver`], and the policies it may
//! replace ([`default_fs_type`], [`default_access_mode`],
//! [`default_smb_credentials`]).

use std::collections::HashMap;
use std::time::Duration;

use csi_proxy_client::node::{DiskSelector, Node, SmbCredentials};
use tonic::Status;

use crate::csi::v1 as csi;
use crate::csi::v1::node_service_capability::rpc;
use crate::csi::v1::volume_capability::access_mode::Mode;

/// The Node capabilities the plugin reports unless the driver says
/// otherwise ([`Driver::node_capabilities`]): `STAGE_UNSTAGE_VOLUME`,
/// `GET_VOLUME_STATS`, `EXPAND_VOLUME` (`NodeExpandVolume` is served only
/// when it is reported) and `VOLUME_CONDITION` (`NodeGetVolumeStats`
/// carries a `volume_condition` only when it is reported).
pub const CAPABILITIES: [rpc::Type; 4] = [
    rpc::Type::StageUnstageVolume,
    rpc::Type::GetVolumeStats,
    rpc::Type::ExpandVolume,
    rpc::Type::VolumeCondition,
];

/// The CSI call a [`VolumeRequest`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// `NodeStageVolume`.
    Stage,
    /// `NodePublishVolume`.
    Publish,
}

/// What one stage or publish request says about its volume, for
/// [`Driver::volume`] and the policies that depend on the request. Fields
/// may be added: read them, do not build the struct.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct VolumeRequest<'a> {
    /// The call.
    pub kind: RequestKind,
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

impl VolumeRequest<'_> {
    /// The SMB share `share` (`\\server\share[\dir]`) with the account
    /// [`default_smb_credentials`] reads from this request's secrets: the
    /// usual answer of [`Driver::volume`] for a share whose account is in
    /// the stage secrets, as csi-driver-smb's is.
    pub fn smb(&self, share: impl Into<String>) -> Result<VolumeSource, Status> {
        Ok(VolumeSource::Smb {
            share: share.into(),
            credentials: default_smb_credentials(self.secrets)?,
        })
    }
}

/// Where the volume a request is about comes from, as the driver names it:
/// a disk, or an SMB share with the account it is mapped with.
#[derive(Debug, Clone)]
pub enum VolumeSource {
    /// A disk attached to the node, staged as an NTFS volume.
    Disk(DiskSelector),
    /// An SMB share, staged as a link to it.
    Smb {
        /// The share path (`\\server\share[\dir]`).
        share: String,
        /// The account the share is mapped with (its `Debug` hides the
        /// password). Used where the share is mapped: at a stage, and at
        /// a publish that stages ([`Driver::stage_at_publish`], ephemeral
        /// inline volumes); elsewhere it is not read. At a publish answered
        /// from what the stage resolved it is empty: no password is kept.
        credentials: SmbCredentials,
    },
}

impl VolumeSource {
    /// Whether the volume is an SMB share.
    pub fn is_smb(&self) -> bool {
        matches!(self, VolumeSource::Smb { .. })
    }
}

/// How [`Plugin`](crate::Plugin) keeps two calls from working on one
/// volume at once: a second call with the same key while the first runs is
/// `ABORTED` (kubelet retries it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LockScope {
    /// One call at a time per volume id, whatever its path (the default).
    #[default]
    Volume,
    /// One call at a time per volume id and path: the staging path of a
    /// stage or unstage, the target path of a publish or unpublish, the
    /// volume path of a stats or expand request. Two pods publishing one
    /// `ReadWriteMany` volume at once then both go through, as they do
    /// with the SMB drivers: csi-driver-smb and azurefile-csi-driver key
    /// their stage and unstage lock on the volume id and the staging path
    /// and take none at publish (pkg/smb/nodeserver.go,
    /// pkg/azurefile/nodeserver.go: `volumeID-targetPath`).
    VolumeAndPath,
}

/// A capability `GetPluginCapabilities` reports ([`Driver::plugin_capabilities`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PluginFeature {
    /// `Service` `CONTROLLER_SERVICE`: the driver has a Controller service.
    ControllerService,
    /// `Service` `VOLUME_ACCESSIBILITY_CONSTRAINTS`: volumes are not
    /// reachable from every node (the driver reports topology).
    VolumeAccessibilityConstraints,
    /// `Service` `GROUP_CONTROLLER_SERVICE`.
    GroupControllerService,
    /// `VolumeExpansion` `ONLINE`: a volume grows while published.
    OnlineExpansion,
    /// `VolumeExpansion` `OFFLINE`: a volume grows only while unpublished.
    OfflineExpansion,
}

/// A step of a volume's life, for the hooks [`Driver::before`],
/// [`Driver::after`] and [`Driver::on_error`]: the request as it came, and
/// for a stage or publish the volume the driver resolved.
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    /// `NodeStageVolume`.
    Stage {
        /// The request.
        request: &'a csi::NodeStageVolumeRequest,
        /// The volume [`Driver::volume`] named.
        volume: &'a VolumeSource,
    },
    /// `NodePublishVolume`.
    Publish {
        /// The request.
        request: &'a csi::NodePublishVolumeRequest,
        /// The volume [`Driver::volume`] named.
        volume: &'a VolumeSource,
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
    /// or another (a cloud's controller): the default
    /// [`plugin_capabilities`](Driver::plugin_capabilities) then reports
    /// CONTROLLER_SERVICE, as a driver whose one binary serves both does.
    /// Tools that learn the driver's services from the node endpoint,
    /// csi-sanity among them, publish volumes through the controller only
    /// when it is reported. No by default.
    fn controller_service(&self) -> bool {
        false
    }

    /// What `GetPluginCapabilities` reports. By default
    /// [`PluginFeature::OnlineExpansion`] when the node capabilities
    /// hold `EXPAND_VOLUME`, and [`PluginFeature::ControllerService`]
    /// when [`controller_service`](Driver::controller_service) says so, as
    /// the upstream drivers pair them: azuredisk-csi-driver reports ONLINE
    /// expansion and a node `EXPAND_VOLUME`, csi-driver-smb and
    /// azurefile-csi-driver neither (pkg/azuredisk/identityserver.go,
    /// pkg/smb/identityserver.go, pkg/azurefile/identityserver.go). A
    /// driver whose controller alone expands volumes states it here.
    fn plugin_capabilities(&self) -> Vec<PluginFeature> {
        let mut capabilities = Vec::new();
        if self.node_capabilities().contains(&rpc::Type::ExpandVolume) {
            capabilities.push(PluginFeature::OnlineExpansion);
        }
        if self.controller_service() {
            capabilities.push(PluginFeature::ControllerService);
        }
        capabilities
    }

    /// The volume a stage or publish request names, with the account of an
    /// SMB share, in one call: the share's name and its key usually come
    /// from one place (a Secret, a cloud). [`VolumeRequest::smb`] reads the
    /// account from the secrets as csi-driver-smb does; a driver that
    /// fetches a key (azurefile's storage account key) builds
    /// [`VolumeSource::Smb`] with it. A request that names no volume is the
    /// driver's to refuse, with `INVALID_ARGUMENT`. It may ask a cloud; it
    /// runs before the volume's lock is taken, so it must not change
    /// anything. Secrets never go into a message or a log.
    ///
    /// It runs once per `NodeStageVolume`. The plugin keeps what it
    /// answered in the node's records (the share without its account, a
    /// disk's selector), keyed by the volume id and the staging path, and
    /// answers the publish, expand and stats of the staged volume from
    /// them, where kubelet sends no stage secrets; the record goes with a
    /// successful `NodeUnstageVolume`. It runs at a `NodePublishVolume`
    /// ([`VolumeRequest::kind`] says which) only where the publish maps a
    /// share (an ephemeral inline volume, a publish that stages:
    /// [`stage_at_publish`](Driver::stage_at_publish)), where nothing was
    /// kept (a volume staged by a plugin that kept nothing, a disk named by
    /// [`DiskSelector::Matching`], whose rule is code), and for a driver
    /// that asks for it ([`volume_at_publish`](Driver::volume_at_publish)).
    /// At such a publish of a staged volume the request carries the
    /// publish secrets (usually none) and only the kind of volume is used,
    /// for the [`fs_type`](Driver::fs_type),
    /// [`mount_flags`](Driver::mount_flags) and
    /// [`access_mode`](Driver::access_mode) policies. A share's account is
    /// read only where the share is mapped.
    async fn volume(&self, request: &VolumeRequest<'_>) -> Result<VolumeSource, Status>;

    /// Whether [`volume`](Driver::volume) is asked again at the publish of
    /// a staged volume, instead of the plugin answering from what the
    /// stage resolved: for a driver whose answer may change between stage
    /// and publish and that can give it from the publish request alone. No
    /// by default.
    fn volume_at_publish(&self) -> bool {
        false
    }

    /// Whether this request's volume is staged by `NodePublishVolume` at
    /// the target path instead of by `NodeStageVolume`; asked at both. At
    /// a stage, `true` answers OK with nothing done ([`volume`](Driver::volume)
    /// does not run); at a publish, `true` stages the share at the target
    /// itself with the publish's secrets and context, as an ephemeral
    /// inline volume is, and `NodeUnpublishVolume` unstages it. Only an
    /// SMB share can be staged at publish. No by default.
    ///
    /// It is for an account kubelet gives only at publish:
    /// azurefile-csi-driver skips the stage of a volume mounted with a
    /// workload identity token (`mountWithWIToken` is `true`, or `clientID`
    /// is set and `mountWithManagedIdentity` is not `true`) when the
    /// request has no token (`csi.storage.k8s.io/serviceAccount.tokens`,
    /// in the secrets or else the volume context), and at a publish of
    /// such a volume that has one, stages at the target path
    /// (pkg/azurefile/nodeserver.go: NodeStageVolume, NodePublishVolume,
    /// `shouldUseServiceAccountToken`; pkg/azurefile/utils.go
    /// `getServiceAccountTokens`).
    fn stage_at_publish(&self, request: &VolumeRequest<'_>) -> bool {
        let _ = request;
        false
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
    fn fs_type(&self, volume: &VolumeSource, fs_type: &str) -> Result<(), Status> {
        default_fs_type(volume, fs_type)
    }

    /// Whether the plugin serves a volume with these mount flags. Windows
    /// mounts take none, so by default they are accepted and ignored, as
    /// the upstream drivers do on Windows (csi-driver-smb's StorageClass
    /// carries `dir_mode`, `file_mode` and `vers`).
    fn mount_flags(&self, volume: &VolumeSource, flags: &[String]) -> Result<(), Status> {
        let _ = (volume, flags);
        Ok(())
    }

    /// Whether the plugin serves `mode` for `volume`. By default
    /// [`default_access_mode`].
    fn access_mode(&self, volume: &VolumeSource, mode: Mode) -> Result<(), Status> {
        default_access_mode(volume, mode)
    }

    /// The Node capabilities `NodeGetCapabilities` reports; by default
    /// [`CAPABILITIES`]. A driver may add `SINGLE_NODE_MULTI_WRITER`, and
    /// `VOLUME_MOUNT_GROUP` (then a capability's `volume_mount_group` is
    /// accepted and ignored: Windows has no group ids; without it, it is
    /// `INVALID_ARGUMENT`). Without `EXPAND_VOLUME`, `NodeExpandVolume` is
    /// `UNIMPLEMENTED`; without `VOLUME_CONDITION`, `NodeGetVolumeStats`
    /// carries no `volume_condition`. Stage and stats are served whatever
    /// is reported.
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

    /// How calls on one volume are kept apart ([`LockScope`]): one at a
    /// time per volume id by default.
    fn lock_scope(&self) -> LockScope {
        LockScope::Volume
    }

    /// How long a volume's `NodeGetVolumeStats` answer is kept and given
    /// again without asking the node; `None` (the default) asks every
    /// time. Kept per volume id, successful answers only, as
    /// azurefile-csi-driver keeps them (pkg/azurefile/nodeserver.go
    /// NodeGetVolumeStats, `volStatsCache` keyed by the volume id;
    /// pkg/azurefile/azurefile.go: 10 minutes unless
    /// `--vol-stats-cache-expire-in-minutes` says otherwise): kubelet asks
    /// for every volume every minute, and a share's figures come from its
    /// server.
    fn stats_cache_ttl(&self) -> Option<Duration> {
        None
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

    /// Runs when `step` failed, in [`before`](Driver::before), the node
    /// work or [`after`](Driver::after), with the volume's lock held: the
    /// status it returns is the call's. By default `status` as it is; a
    /// driver adds what an operator should check (`Status::new(status.code(),
    /// format!("{}: is the storage account's firewall open to the node?",
    /// status.message()))`). Failures before the step (a missing field, a
    /// volume the driver cannot name, a busy volume) do not reach it.
    async fn on_error(&self, node: &Node, step: Step<'_>, status: Status) -> Status {
        let _ = (node, step);
        status
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
pub fn default_fs_type(volume: &VolumeSource, fs_type: &str) -> Result<(), Status> {
    if volume.is_smb() {
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

/// The reader access modes. A disk of such a mode is staged read-only
/// (`StageDisk::read_only`: in HostProcess mode its read-only flag is left
/// as it is, never cleared); its links are made as for any mode, since a
/// link cannot be made read-only on Windows.
pub fn is_reader(mode: Mode) -> bool {
    matches!(mode, Mode::SingleNodeReaderOnly | Mode::MultiNodeReaderOnly)
}

/// The default access mode policy: a share takes every mode; a disk takes
/// the single-node modes and `MULTI_NODE_READER_ONLY` (GCE serves
/// read-only-many disks), not the multi-node writer modes; no mode is
/// `INVALID_ARGUMENT`.
pub fn default_access_mode(volume: &VolumeSource, mode: Mode) -> Result<(), Status> {
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
        (_, VolumeSource::Disk(_)) if !disk_ok => Err(Status::invalid_argument(format!(
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
pub fn default_smb_credentials(
    secrets: &HashMap<String, String>,
) -> Result<SmbCredentials, Status> {
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
