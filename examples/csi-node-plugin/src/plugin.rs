//! The CSI Identity and Node services over a [`Node`].
//!
//! Two kinds of volume, told apart by what the controller hands over:
//! a disk (`publish_context["lun"]`), staged as an NTFS volume mounted at the
//! staging path; an SMB share (`volume_context["source"]`), staged as a link
//! to the share. Both are published as a link from the pod's path to the
//! staging path. Every call is idempotent (the node layer's operations are);
//! calls on one volume id run one at a time, a second one is `ABORTED`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use csi_proxy_client::node::{DiskSelector, MountState, Node, SmbCredentials};
use csi_proxy_client::{Error, ErrorKind};
use tonic::{Code, Request, Response, Status};

use crate::csi::node_server::Node as NodeService;
use crate::csi::volume_capability::AccessType;
use crate::csi::volume_capability::access_mode::Mode;
use crate::csi::{self, identity_server::Identity};

/// The driver name the plugin registers with, unless told otherwise.
pub const DEFAULT_DRIVER_NAME: &str = "windows.csi-node-plugin.example";

/// The plugin: one per process, cheap to clone.
#[derive(Clone)]
pub struct Plugin {
    node: Node,
    name: String,
    node_id: String,
    busy: Arc<Mutex<HashSet<String>>>,
}

impl Plugin {
    /// A plugin doing its host work through `node`, answering `NodeGetInfo`
    /// with `node_id`.
    pub fn new(node: Node, node_id: impl Into<String>) -> Self {
        Self {
            node,
            name: DEFAULT_DRIVER_NAME.to_string(),
            node_id: node_id.into(),
            busy: Arc::default(),
        }
    }

    /// Registers under `name` instead of [`DEFAULT_DRIVER_NAME`].
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Marks `volume_id` busy until the guard is dropped; `ABORTED` if a
    /// call on it is running already.
    fn claim(&self, volume_id: &str) -> Result<Busy, Status> {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        if !busy.insert(volume_id.to_string()) {
            return Err(Status::aborted(format!(
                "an operation on volume {volume_id} is in progress"
            )));
        }
        Ok(Busy {
            set: self.busy.clone(),
            id: volume_id.to_string(),
        })
    }

    async fn state(&self, path: &str) -> Result<MountState, Status> {
        self.node.mount_state(path).await.map_err(status_of)
    }

    async fn stage(
        &self,
        r: csi::NodeStageVolumeRequest,
    ) -> Result<csi::NodeStageVolumeResponse, Status> {
        require(&r.volume_id, "volume id")?;
        require(&r.staging_target_path, "staging target path")?;
        let kind = VolumeKind::of(&r.volume_context, &r.publish_context)?;
        check_capability(r.volume_capability.as_ref(), &kind)?;
        let credentials = match kind {
            VolumeKind::Smb(_) => Some(credentials(&r.secrets)?),
            VolumeKind::Disk(_) => None,
        };
        let _busy = self.claim(&r.volume_id)?;
        let path = &r.staging_target_path;
        match (kind, credentials) {
            (VolumeKind::Smb(source), Some(credentials)) => self
                .node
                .smb_stage(&source, path, &credentials)
                .await
                .map_err(status_of)?,
            (VolumeKind::Disk(lun), _) => {
                let disk = self
                    .node
                    .find_disk(DiskSelector::Lun(lun))
                    .await
                    .map_err(status_of)?;
                self.node.stage_disk(disk, path).await.map_err(status_of)?;
            }
            (VolumeKind::Smb(_), None) => unreachable!("SMB credentials are read above"),
        }
        Ok(csi::NodeStageVolumeResponse {})
    }

    async fn unstage(
        &self,
        r: csi::NodeUnstageVolumeRequest,
    ) -> Result<csi::NodeUnstageVolumeResponse, Status> {
        require(&r.volume_id, "volume id")?;
        require(&r.staging_target_path, "staging target path")?;
        let _busy = self.claim(&r.volume_id)?;
        let path = &r.staging_target_path;
        let done = match self.state(path).await? {
            MountState::Mounted { .. } => self.node.unstage(path).await,
            MountState::Linked => self.node.smb_unstage(path).await,
            // Nothing staged (any more): a plain directory is kubelet's.
            MountState::Missing | MountState::NotMounted => Ok(()),
        };
        done.map_err(status_of)?;
        Ok(csi::NodeUnstageVolumeResponse {})
    }

    async fn publish(
        &self,
        r: csi::NodePublishVolumeRequest,
    ) -> Result<csi::NodePublishVolumeResponse, Status> {
        require(&r.volume_id, "volume id")?;
        require(&r.staging_target_path, "staging target path")?;
        require(&r.target_path, "target path")?;
        let kind = VolumeKind::of(&r.volume_context, &r.publish_context)?;
        check_capability(r.volume_capability.as_ref(), &kind)?;
        let _busy = self.claim(&r.volume_id)?;
        if matches!(
            self.state(&r.staging_target_path).await?,
            MountState::Missing | MountState::NotMounted
        ) {
            return Err(Status::failed_precondition(format!(
                "volume {} is not staged at {}",
                r.volume_id, r.staging_target_path
            )));
        }
        self.node
            .publish(&r.staging_target_path, &r.target_path)
            .await
            .map_err(status_of)?;
        Ok(csi::NodePublishVolumeResponse {})
    }

    async fn unpublish(
        &self,
        r: csi::NodeUnpublishVolumeRequest,
    ) -> Result<csi::NodeUnpublishVolumeResponse, Status> {
        require(&r.volume_id, "volume id")?;
        require(&r.target_path, "target path")?;
        let _busy = self.claim(&r.volume_id)?;
        self.node
            .unpublish(&r.target_path)
            .await
            .map_err(status_of)?;
        Ok(csi::NodeUnpublishVolumeResponse {})
    }

    async fn stats(
        &self,
        r: csi::NodeGetVolumeStatsRequest,
    ) -> Result<csi::NodeGetVolumeStatsResponse, Status> {
        require(&r.volume_id, "volume id")?;
        require(&r.volume_path, "volume path")?;
        let _busy = self.claim(&r.volume_id)?;
        let usage = match self.state(&r.volume_path).await? {
            MountState::Missing | MountState::NotMounted => {
                return Err(no_volume(&r.volume_id, &r.volume_path));
            }
            // The proxy has no call for the size of a share: no figures.
            MountState::Linked => Vec::new(),
            MountState::Mounted { .. } => {
                let usage = self.node.usage(&r.volume_path).await.map_err(status_of)?;
                vec![csi::VolumeUsage {
                    available: bytes(usage.available_bytes),
                    total: bytes(usage.total_bytes),
                    used: bytes(usage.used_bytes),
                    unit: csi::volume_usage::Unit::Bytes.into(),
                }]
            }
        };
        Ok(csi::NodeGetVolumeStatsResponse {
            usage,
            volume_condition: None,
        })
    }

    async fn expand(
        &self,
        r: csi::NodeExpandVolumeRequest,
    ) -> Result<csi::NodeExpandVolumeResponse, Status> {
        require(&r.volume_id, "volume id")?;
        require(&r.volume_path, "volume path")?;
        if let Some(cap) = &r.volume_capability
            && matches!(cap.access_type, Some(AccessType::Block(_)))
        {
            return Err(block_unsupported());
        }
        let _busy = self.claim(&r.volume_id)?;
        let size = match self.state(&r.volume_path).await? {
            MountState::Missing | MountState::NotMounted => {
                return Err(no_volume(&r.volume_id, &r.volume_path));
            }
            // A share grows on its server; nothing to do on the node.
            MountState::Linked => return Ok(csi::NodeExpandVolumeResponse { capacity_bytes: 0 }),
            MountState::Mounted { .. } => {
                bytes(self.node.expand(&r.volume_path).await.map_err(status_of)?)
            }
        };
        let required = r.capacity_range.map_or(0, |c| c.required_bytes);
        if size < required {
            return Err(Status::out_of_range(format!(
                "volume {} has {size} bytes after growing, {required} are required",
                r.volume_id
            )));
        }
        Ok(csi::NodeExpandVolumeResponse {
            capacity_bytes: size,
        })
    }
}

/// Releases a volume id claimed by [`Plugin::claim`].
struct Busy {
    set: Arc<Mutex<HashSet<String>>>,
    id: String,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
    }
}

/// What kind of volume a request is about.
enum VolumeKind {
    /// A disk attached at this LUN.
    Disk(u32),
    /// An SMB share path (`\\server\share[\dir]`).
    Smb(String),
}

impl VolumeKind {
    fn of(
        volume_context: &HashMap<String, String>,
        publish_context: &HashMap<String, String>,
    ) -> Result<Self, Status> {
        if let Some(source) = volume_context.get("source").filter(|s| !s.is_empty()) {
            return Ok(VolumeKind::Smb(source.clone()));
        }
        match publish_context.get("lun") {
            Some(lun) => lun.trim().parse().map(VolumeKind::Disk).map_err(|_| {
                Status::invalid_argument(format!("publish_context lun {lun:?} is not a LUN number"))
            }),
            None => Err(Status::invalid_argument(
                "neither volume_context source (an SMB share) nor publish_context lun (a disk) is given",
            )),
        }
    }
}

fn require(value: &str, what: &str) -> Result<(), Status> {
    if value.is_empty() {
        return Err(Status::invalid_argument(format!("{what} missing")));
    }
    Ok(())
}

fn block_unsupported() -> Status {
    Status::invalid_argument("block access type is not supported: this plugin serves file systems")
}

fn no_volume(volume_id: &str, path: &str) -> Status {
    Status::not_found(format!("volume {volume_id}: no volume at {path}"))
}

/// Checks that the plugin can serve the capability for this kind of volume.
fn check_capability(cap: Option<&csi::VolumeCapability>, kind: &VolumeKind) -> Result<(), Status> {
    let cap = cap.ok_or_else(|| Status::invalid_argument("volume capability missing"))?;
    let mount = match &cap.access_type {
        Some(AccessType::Mount(mount)) => mount,
        Some(AccessType::Block(_)) => return Err(block_unsupported()),
        None => {
            return Err(Status::invalid_argument(
                "volume capability has no access type",
            ));
        }
    };
    let fs_ok = match kind {
        VolumeKind::Disk(_) => ["", "ntfs"].contains(&mount.fs_type.to_lowercase().as_str()),
        VolumeKind::Smb(_) => ["", "smb", "cifs"].contains(&mount.fs_type.to_lowercase().as_str()),
    };
    if !fs_ok {
        return Err(Status::invalid_argument(format!(
            "file system type {:?} is not supported for this volume",
            mount.fs_type
        )));
    }
    if !mount.mount_flags.is_empty() {
        return Err(Status::invalid_argument(
            "mount flags are not supported on Windows",
        ));
    }
    if !mount.volume_mount_group.is_empty() {
        return Err(Status::invalid_argument(
            "volume mount group is not supported",
        ));
    }
    let mode = cap.access_mode.map_or(Mode::Unknown, |m| m.mode());
    let single_node = matches!(
        mode,
        Mode::SingleNodeWriter
            | Mode::SingleNodeReaderOnly
            | Mode::SingleNodeSingleWriter
            | Mode::SingleNodeMultiWriter
    );
    match (mode, kind) {
        (Mode::Unknown, _) => Err(Status::invalid_argument("access mode missing")),
        (_, VolumeKind::Disk(_)) if !single_node => Err(Status::invalid_argument(format!(
            "access mode {} is not supported for a disk, which one node uses at a time",
            mode.as_str_name()
        ))),
        _ => Ok(()),
    }
}

/// SMB credentials from the secrets; the values never reach a message.
fn credentials(secrets: &HashMap<String, String>) -> Result<SmbCredentials, Status> {
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

fn bytes(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The CSI status of a node-layer failure; its message is kept. Failures of
/// the proxy are `UNAVAILABLE` when it cannot be reached (retrying helps)
/// and `INTERNAL` otherwise; what the node layer refuses before calling the
/// proxy keeps its meaning (a bad path, a disk that never appeared).
pub fn status_of(e: Error) -> Status {
    let from_proxy = e.status().is_some();
    let code = match e.kind() {
        ErrorKind::Unavailable | ErrorKind::TimedOut => Code::Unavailable,
        ErrorKind::InvalidArgument if !from_proxy => Code::InvalidArgument,
        ErrorKind::NotFound if !from_proxy => Code::NotFound,
        _ => Code::Internal,
    };
    Status::new(code, e.to_string())
}

/// Logs one line for a CSI call and wraps its reply.
fn logged<T>(rpc: &str, volume_id: &str, result: Result<T, Status>) -> Result<Response<T>, Status> {
    match &result {
        Ok(_) => tracing::info!(rpc, volume_id, "ok"),
        Err(s) => tracing::warn!(rpc, volume_id, code = ?s.code(), error = s.message(), "failed"),
    }
    result.map(Response::new)
}

#[tonic::async_trait]
impl Identity for Plugin {
    async fn get_plugin_info(
        &self,
        _: Request<csi::GetPluginInfoRequest>,
    ) -> Result<Response<csi::GetPluginInfoResponse>, Status> {
        tracing::debug!(rpc = "GetPluginInfo", "ok");
        Ok(Response::new(csi::GetPluginInfoResponse {
            name: self.name.clone(),
            vendor_version: env!("CARGO_PKG_VERSION").to_string(),
            manifest: HashMap::from([("node".to_string(), self.node.versions().to_string())]),
        }))
    }

    async fn get_plugin_capabilities(
        &self,
        _: Request<csi::GetPluginCapabilitiesRequest>,
    ) -> Result<Response<csi::GetPluginCapabilitiesResponse>, Status> {
        use csi::plugin_capability::{Type, VolumeExpansion, volume_expansion};
        tracing::debug!(rpc = "GetPluginCapabilities", "ok");
        let online = VolumeExpansion {
            r#type: volume_expansion::Type::Online.into(),
        };
        Ok(Response::new(csi::GetPluginCapabilitiesResponse {
            capabilities: vec![csi::PluginCapability {
                r#type: Some(Type::VolumeExpansion(online)),
            }],
        }))
    }

    async fn probe(
        &self,
        _: Request<csi::ProbeRequest>,
    ) -> Result<Response<csi::ProbeResponse>, Status> {
        tracing::debug!(rpc = "Probe", "ok");
        Ok(Response::new(csi::ProbeResponse { ready: Some(true) }))
    }
}

#[tonic::async_trait]
impl NodeService for Plugin {
    async fn node_stage_volume(
        &self,
        request: Request<csi::NodeStageVolumeRequest>,
    ) -> Result<Response<csi::NodeStageVolumeResponse>, Status> {
        let r = request.into_inner();
        let id = r.volume_id.clone();
        logged("NodeStageVolume", &id, self.stage(r).await)
    }

    async fn node_unstage_volume(
        &self,
        request: Request<csi::NodeUnstageVolumeRequest>,
    ) -> Result<Response<csi::NodeUnstageVolumeResponse>, Status> {
        let r = request.into_inner();
        let id = r.volume_id.clone();
        logged("NodeUnstageVolume", &id, self.unstage(r).await)
    }

    async fn node_publish_volume(
        &self,
        request: Request<csi::NodePublishVolumeRequest>,
    ) -> Result<Response<csi::NodePublishVolumeResponse>, Status> {
        let r = request.into_inner();
        let id = r.volume_id.clone();
        logged("NodePublishVolume", &id, self.publish(r).await)
    }

    async fn node_unpublish_volume(
        &self,
        request: Request<csi::NodeUnpublishVolumeRequest>,
    ) -> Result<Response<csi::NodeUnpublishVolumeResponse>, Status> {
        let r = request.into_inner();
        let id = r.volume_id.clone();
        logged("NodeUnpublishVolume", &id, self.unpublish(r).await)
    }

    async fn node_get_volume_stats(
        &self,
        request: Request<csi::NodeGetVolumeStatsRequest>,
    ) -> Result<Response<csi::NodeGetVolumeStatsResponse>, Status> {
        let r = request.into_inner();
        let id = r.volume_id.clone();
        logged("NodeGetVolumeStats", &id, self.stats(r).await)
    }

    async fn node_expand_volume(
        &self,
        request: Request<csi::NodeExpandVolumeRequest>,
    ) -> Result<Response<csi::NodeExpandVolumeResponse>, Status> {
        let r = request.into_inner();
        let id = r.volume_id.clone();
        logged("NodeExpandVolume", &id, self.expand(r).await)
    }

    async fn node_get_capabilities(
        &self,
        _: Request<csi::NodeGetCapabilitiesRequest>,
    ) -> Result<Response<csi::NodeGetCapabilitiesResponse>, Status> {
        use csi::node_service_capability::{Rpc, Type, rpc};
        tracing::debug!(rpc = "NodeGetCapabilities", "ok");
        let capabilities = [
            rpc::Type::StageUnstageVolume,
            rpc::Type::GetVolumeStats,
            rpc::Type::ExpandVolume,
        ]
        .into_iter()
        .map(|t| csi::NodeServiceCapability {
            r#type: Some(Type::Rpc(Rpc { r#type: t.into() })),
        })
        .collect();
        Ok(Response::new(csi::NodeGetCapabilitiesResponse {
            capabilities,
        }))
    }

    async fn node_get_info(
        &self,
        _: Request<csi::NodeGetInfoRequest>,
    ) -> Result<Response<csi::NodeGetInfoResponse>, Status> {
        tracing::debug!(rpc = "NodeGetInfo", "ok");
        Ok(Response::new(csi::NodeGetInfoResponse {
            node_id: self.node_id.clone(),
            max_volumes_per_node: 0,
            accessible_topology: None,
        }))
    }
}
