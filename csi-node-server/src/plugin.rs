//! The CSI Identity and Node services over a [`Node`], for any [`Driver`].
//!
//! Two kinds of volume, as the driver names them ([`VolumeSource`]): a
//! disk, staged as an NTFS volume mounted at the staging path; an SMB
//! share, staged as a link to the share. Both are published as a link from
//! the workload's path to the staging path. Every call is idempotent (the
//! node layer's operations are); calls on one volume id (or one volume id
//! and path, [`LockScope`]) run one at a time, a second one is `ABORTED`.

use std::collections::{HashMap, HashSet};
use std::future::{Future, IntoFuture};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::time::Instant as CacheInstant;

use csi_proxy_client::node::{MountState, Node};
use csi_proxy_client::{Error, ErrorKind};
use tonic::{Code, Request, Response, Status};

use crate::csi::v1 as csi;
use crate::csi::v1::identity_server::{Identity, IdentityServer};
use crate::csi::v1::node_server::Node as NodeService;
use crate::csi::v1::node_server::NodeServer;
use crate::csi::v1::node_service_capability::rpc;
use crate::csi::v1::volume_capability::AccessType;
use crate::csi::v1::volume_capability::access_mode::Mode;
use crate::driver::{
    Driver, LockScope, PluginFeature, RequestKind, Step, VolumeRequest, VolumeSource, is_reader,
};
use crate::kept;
use crate::metrics::Metrics;

pub use crate::driver::CAPABILITIES;

/// The least growth of its disk for which a volume is grown right after
/// staging: below it, the volume already fills the disk.
pub const MIN_GROWTH_AFTER_STAGE: u64 = 1 << 20;

/// The CSI Identity and Node services of one driver over one [`Node`]:
/// one per process, cheap to clone.
#[derive(Clone)]
pub struct Plugin {
    node: Node,
    driver: Arc<dyn Driver>,
    metrics: Metrics,
    busy: Arc<Mutex<HashSet<String>>>,
    /// The stats answers kept ([`Driver::stats_cache_ttl`]), by volume id,
    /// with when each was read.
    stats_cache: Arc<Mutex<HashMap<String, (CacheInstant, csi::NodeGetVolumeStatsResponse)>>>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("driver", &self.driver.name())
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl Plugin {
    /// The services of `driver`, doing the host work through `node` (which
    /// the program builds: proxy pipes, sockets, or an in-process host).
    /// What the node keeps in stores the program did not choose is kept
    /// in `state` beside the socket once [`serve`](crate::serve()) serves
    /// the plugin ([`Plugin::with_state_dir`]).
    pub fn new(node: Node, driver: impl Driver) -> Self {
        Self {
            node,
            driver: Arc::new(driver),
            metrics: Metrics::default(),
            busy: Arc::default(),
            stats_cache: Arc::default(),
        }
    }

    /// This plugin with what its node keeps in default stores (its records,
    /// its SMB references) kept in `dir`, so that a restarted plugin knows
    /// what the one before it did: a format sent, the disk staged at each
    /// path, the shares in use, and what each stage resolved
    /// ([`Driver::volume`]). Stores the program chose, and HostProcess
    /// mode's records on the host, stay as they are
    /// ([`Node::with_state_dir`]). [`serve`](crate::serve()) does this with
    /// [`state_dir`](crate::state_dir) of its socket for a plugin it is
    /// given; a program that serves a tonic router of the plugin's
    /// [routes](Plugin::routes), or calls [`reconcile`](Plugin::reconcile)
    /// before serving, calls it first. A directory that cannot be created,
    /// read or written is an error.
    pub fn with_state_dir(mut self, dir: impl AsRef<std::path::Path>) -> Result<Self, Error> {
        self.node = self.node.with_state_dir(dir)?;
        Ok(self)
    }

    /// Removes the SMB mappings no staged volume uses
    /// ([`Node::smb_reconcile`]), never one a staged volume's link still
    /// uses: what a crash between removing a link and its mapping leaves
    /// (csi-driver-smb#1039, #1035). Run it once before serving, as the
    /// example plugin does. Returns the share roots unmapped.
    pub async fn reconcile(&self) -> Result<Vec<String>, Error> {
        self.op("smb_reconcile", self.node.smb_reconcile()).await
    }

    /// The plugin's Identity and Node services, as tonic routes: add
    /// services beside them with `add_service`, or give them to
    /// `Server::builder().layer(..).add_routes(..)` to wrap them in tower
    /// layers, and serve the result with [`serve`](crate::serve()).
    pub fn routes(&self) -> tonic::service::Routes {
        tonic::service::Routes::new(IdentityServer::new(self.clone()))
            .add_service(NodeServer::new(self.clone()))
    }

    /// The node the plugin works through.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The plugin's metrics, to serve with
    /// [`serve_metrics`](crate::metrics::serve_metrics).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Runs a node-layer operation, counting and timing it.
    async fn op<T>(
        &self,
        operation: &'static str,
        work: impl IntoFuture<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let start = Instant::now();
        let result = work.await;
        self.metrics
            .record_operation(operation, result.as_ref().map(drop), start.elapsed());
        result
    }

    /// Marks `volume_id` (and `path`, when the driver locks per path)
    /// busy until the guard is dropped; `ABORTED` if a call on it is
    /// running already.
    fn claim(&self, volume_id: &str, path: &str) -> Result<Busy, Status> {
        let (key, what) = match self.driver.lock_scope() {
            LockScope::Volume => (volume_id.to_string(), format!("volume {volume_id}")),
            // A NUL is in no volume id or path: the pair is one key.
            LockScope::VolumeAndPath => (
                format!("{volume_id}\0{path}"),
                format!("volume {volume_id} at {path}"),
            ),
        };
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        if !busy.insert(key.clone()) {
            return Err(Status::aborted(format!(
                "an operation on {what} is in progress"
            )));
        }
        Ok(Busy {
            set: self.busy.clone(),
            id: key,
        })
    }

    /// Runs `work`, the node work of `step`, between the driver's `before`
    /// and `after` hooks; a failure of any of the three goes through the
    /// driver's `on_error`.
    async fn in_step<T>(
        &self,
        step: Step<'_>,
        work: impl Future<Output = Result<T, Status>>,
    ) -> Result<T, Status> {
        let result = async {
            self.driver.before(&self.node, step).await?;
            let done = work.await?;
            self.driver.after(&self.node, step).await?;
            Ok(done)
        }
        .await;
        match result {
            Err(status) => Err(self.driver.on_error(&self.node, step, status).await),
            done => done,
        }
    }

    /// Whether the driver reports the Node capability `capability`.
    fn reports(&self, capability: rpc::Type) -> bool {
        self.driver.node_capabilities().contains(&capability)
    }

    async fn state(&self, path: &str) -> Result<MountState, Status> {
        self.op("mount_state", self.node.mount_state(path))
            .await
            .map_err(status_of)
    }

    /// What is at the volume path of a stats or expand request. A path the
    /// node layer refuses before asking the proxy (a relative one) holds no
    /// volume: `NOT_FOUND`, as a missing path.
    async fn volume_state(&self, volume_id: &str, path: &str) -> Result<MountState, Status> {
        match self.state(path).await {
            Err(s) if s.code() == Code::InvalidArgument => Err(Status::not_found(format!(
                "volume {volume_id}: no volume at {path}: {}",
                s.message()
            ))),
            other => other,
        }
    }

    /// The volume a stage or publish request names, checked against its
    /// capability.
    async fn volume_of(&self, request: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
        check_access_type(request.capability)?;
        let volume = self.driver.volume(request).await?;
        self.check_capability(request.capability, &volume)?;
        Ok(volume)
    }

    /// The volume of a publish of a staged volume: what its stage resolved,
    /// else (a volume staged by a plugin that kept nothing, or a driver
    /// that asks for it) the driver's answer to the publish; checked
    /// against the capability.
    async fn staged_volume(&self, request: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
        if self.driver.volume_at_publish() {
            return self.volume_of(request).await;
        }
        let staged = kept::kept(
            self.node.records(),
            request.volume_id,
            request.staging_target_path,
        )
        .map_err(status_of)?;
        let Some(volume) = staged else {
            return self.volume_of(request).await;
        };
        check_access_type(request.capability)?;
        self.check_capability(request.capability, &volume)?;
        Ok(volume)
    }

    /// Checks that the plugin serves the capability for this volume, by
    /// the driver's policies.
    fn check_capability(
        &self,
        cap: Option<&csi::VolumeCapability>,
        volume: &VolumeSource,
    ) -> Result<(), Status> {
        let cap = cap.ok_or_else(|| Status::invalid_argument("volume capability missing"))?;
        let Some(AccessType::Mount(mount)) = &cap.access_type else {
            return check_access_type(Some(cap));
        };
        self.driver.fs_type(volume, &mount.fs_type)?;
        self.driver.mount_flags(volume, &mount.mount_flags)?;
        if !mount.volume_mount_group.is_empty() {
            if !self.reports(rpc::Type::VolumeMountGroup) {
                return Err(Status::invalid_argument(
                    "volume mount group is not supported (capability VOLUME_MOUNT_GROUP not reported)",
                ));
            }
            tracing::debug!("volume mount group ignored: Windows has no group ids");
        }
        let mode = cap.access_mode.map_or(Mode::Unknown, |m| m.mode());
        self.driver.access_mode(volume, mode)
    }

    async fn stage(
        &self,
        r: csi::NodeStageVolumeRequest,
    ) -> Result<csi::NodeStageVolumeResponse, Status> {
        require(&r.volume_id, "volume id")?;
        require(&r.staging_target_path, "staging target path")?;
        let request = VolumeRequest {
            kind: RequestKind::Stage,
            volume_id: &r.volume_id,
            volume_context: &r.volume_context,
            publish_context: &r.publish_context,
            secrets: &r.secrets,
            capability: r.volume_capability.as_ref(),
            staging_target_path: &r.staging_target_path,
            target_path: "",
        };
        check_access_type(request.capability)?;
        if self.driver.stage_at_publish(&request) {
            tracing::info!(volume_id = r.volume_id, "stage deferred to publish");
            return Ok(csi::NodeStageVolumeResponse {});
        }
        let volume = self.volume_of(&request).await?;
        let create_dir = self.driver.create_missing_smb_dir(&request);
        let _busy = self.claim(&r.volume_id, &r.staging_target_path)?;
        let step = Step::Stage {
            request: &r,
            volume: &volume,
        };
        let path = &r.staging_target_path;
        let work = async {
            match &volume {
                VolumeSource::Smb { share, credentials } => {
                    self.stage_share(share, credentials, path, create_dir).await
                }
                VolumeSource::Disk(selector) => {
                    let disk = self
                        .op("find_disk", self.node.find_disk(selector.clone()))
                        .await
                        .map_err(status_of)?;
                    let mode = r.volume_capability.as_ref().and_then(|c| c.access_mode);
                    let reader = mode.is_some_and(|m| is_reader(m.mode()));
                    // A reader's disk is staged read-only: in HostProcess
                    // mode a disk the cloud attached read-only is then
                    // mounted as it is, and one a SAN policy left read-only
                    // is not made writable. As GCE PD's node plugin mounts
                    // reader modes read-only at stage
                    // (gcp-compute-persistent-disk-csi-driver
                    // pkg/gce-pd-csi-driver/utils.go,
                    // getReadOnlyFromCapability, used by node.go's
                    // NodeStageVolume); azuredisk-csi-driver's
                    // pkg/azuredisk/nodeserver.go stages every mode alike
                    // and marks only the publish "ro".
                    let mut stage = self.node.stage_disk(&disk, path).read_only(reader);
                    if self.driver.grow_after_stage() && !reader {
                        stage = stage.grow(MIN_GROWTH_AFTER_STAGE);
                    }
                    self.op("stage_disk", stage).await.map_err(status_of)?;
                    Ok(())
                }
            }?;
            // Kept before answering OK, so that the publish and expand of
            // the staged volume (which carry no stage secrets) find it,
            // also after a restart.
            kept::keep(self.node.records(), &r.volume_id, path, &volume).map_err(status_of)
        };
        self.in_step(step, work).await?;
        Ok(csi::NodeStageVolumeResponse {})
    }

    /// Stages an SMB share at `path` (a staging path, or the target of a
    /// publish that stages).
    async fn stage_share(
        &self,
        share: &str,
        credentials: &csi_proxy_client::node::SmbCredentials,
        path: &str,
        create_dir: bool,
    ) -> Result<(), Status> {
        let stage = self
            .node
            .smb_stage(share, path, credentials)
            .create_dir(create_dir);
        self.op("smb_stage", stage).await.map_err(status_of)
    }

    async fn unstage(
        &self,
        r: csi::NodeUnstageVolumeRequest,
    ) -> Result<csi::NodeUnstageVolumeResponse, Status> {
        require(&r.volume_id, "volume id")?;
        require(&r.staging_target_path, "staging target path")?;
        let _busy = self.claim(&r.volume_id, &r.staging_target_path)?;
        let step = Step::Unstage { request: &r };
        let path = &r.staging_target_path;
        // A disk's volume or a share's link, unstaged by the one look that
        // finds it. Nothing staged (any more, or a stage deferred to
        // publish): a plain directory is kubelet's.
        let offline = self.driver.offline_at_unstage();
        let operation = if offline {
            "unstage_and_offline"
        } else {
            "unstage"
        };
        let work = async {
            self.op(operation, self.node.unstage(path).offline(offline))
                .await
                .map_err(status_of)?;
            // Only once the volume is gone: a failed unstage is retried,
            // and its volume is still published from the record.
            kept::forget(self.node.records(), &r.volume_id, path).map_err(status_of)
        };
        self.in_step(step, work).await?;
        Ok(csi::NodeUnstageVolumeResponse {})
    }

    async fn publish(
        &self,
        r: csi::NodePublishVolumeRequest,
    ) -> Result<csi::NodePublishVolumeResponse, Status> {
        require(&r.volume_id, "volume id")?;
        let ephemeral = is_ephemeral(&r.volume_context);
        if !ephemeral {
            require(&r.staging_target_path, "staging target path")?;
        }
        require(&r.target_path, "target path")?;
        let request = VolumeRequest {
            kind: RequestKind::Publish,
            volume_id: &r.volume_id,
            volume_context: &r.volume_context,
            publish_context: &r.publish_context,
            secrets: &r.secrets,
            capability: r.volume_capability.as_ref(),
            staging_target_path: &r.staging_target_path,
            target_path: &r.target_path,
        };
        if ephemeral {
            let volume = self.volume_of(&request).await?;
            let why = format!("an ephemeral inline volume ({EPHEMERAL})");
            return self.stage_at_target(&r, &request, &volume, &why).await;
        }
        if self.driver.stage_at_publish(&request) {
            let volume = self.volume_of(&request).await?;
            let why = "a volume staged at publish".to_string();
            return self.stage_at_target(&r, &request, &volume, &why).await;
        }
        let volume = self.staged_volume(&request).await?;
        let _busy = self.claim(&r.volume_id, &r.target_path)?;
        let step = Step::Publish {
            request: &r,
            volume: &volume,
        };
        let work = async {
            let publish = self.node.publish(&r.staging_target_path, &r.target_path);
            match self.op("publish", publish).await {
                Ok(()) => Ok(()),
                Err(Error::NotStaged { .. }) => Err(Status::failed_precondition(format!(
                    "volume {} is not staged at {}",
                    r.volume_id, r.staging_target_path
                ))),
                Err(e) => Err(status_of(e)),
            }
        };
        self.in_step(step, work).await?;
        Ok(csi::NodePublishVolumeResponse {})
    }

    /// A share staged at its publish's target: an ephemeral inline volume,
    /// as csi-driver-smb does (pkg/smb/nodeserver.go NodePublishVolume
    /// stages with the target as staging path), or a volume whose stage
    /// the driver defers to publish ([`Driver::stage_at_publish`]). Its
    /// mapping is counted like any staged volume's, and [`Node::unpublish`]
    /// drops the reference with the link. `what` names the kind of volume
    /// in the error for a disk.
    async fn stage_at_target(
        &self,
        r: &csi::NodePublishVolumeRequest,
        request: &VolumeRequest<'_>,
        volume: &VolumeSource,
        what: &str,
    ) -> Result<csi::NodePublishVolumeResponse, Status> {
        let VolumeSource::Smb { share, credentials } = volume else {
            return Err(Status::invalid_argument(format!(
                "volume {}: {what} must be an SMB share; a disk is staged first",
                r.volume_id
            )));
        };
        let create_dir = self.driver.create_missing_smb_dir(request);
        let _busy = self.claim(&r.volume_id, &r.target_path)?;
        let step = Step::Publish { request: r, volume };
        let work = self.stage_share(share, credentials, &r.target_path, create_dir);
        self.in_step(step, work).await?;
        Ok(csi::NodePublishVolumeResponse {})
    }

    async fn unpublish(
        &self,
        r: csi::NodeUnpublishVolumeRequest,
    ) -> Result<csi::NodeUnpublishVolumeResponse, Status> {
        require(&r.volume_id, "volume id")?;
        require(&r.target_path, "target path")?;
        let _busy = self.claim(&r.volume_id, &r.target_path)?;
        let step = Step::Unpublish { request: &r };
        let work = async {
            self.op("unpublish", self.node.unpublish(&r.target_path))
                .await
                .map_err(status_of)
        };
        self.in_step(step, work).await?;
        Ok(csi::NodeUnpublishVolumeResponse {})
    }

    async fn stats(
        &self,
        r: csi::NodeGetVolumeStatsRequest,
    ) -> Result<csi::NodeGetVolumeStatsResponse, Status> {
        require(&r.volume_id, "volume id")?;
        require(&r.volume_path, "volume path")?;
        let ttl = self.driver.stats_cache_ttl();
        if let Some(ttl) = ttl
            && let Some(kept) = self.kept_stats(&r.volume_id, ttl)
        {
            return Ok(kept);
        }
        let _busy = self.claim(&r.volume_id, &r.volume_path)?;
        // One node call, whatever backs the path (a disk's volume, a
        // share's link): the node reads locally first, asks the host only
        // where it must, and says the volume's condition.
        let stats = match self
            .op("volume_stats", self.node.volume_stats(&r.volume_path))
            .await
        {
            Ok(stats) => stats,
            // Nothing at the path, or a path the node refuses before asking
            // the host (a relative one): no volume there.
            Err(Error::NotStaged { .. }) => return Err(no_volume(&r.volume_id, &r.volume_path)),
            Err(e @ Error::InvalidPath { .. }) => {
                return Err(Status::not_found(format!(
                    "volume {}: no volume at {}: {e}",
                    r.volume_id, r.volume_path
                )));
            }
            Err(e) => return Err(status_of(e)),
        };
        let bytes_usage = stats.usage.map(|u| csi::VolumeUsage {
            available: bytes(u.available_bytes),
            total: bytes(u.total_bytes),
            used: bytes(u.used_bytes),
            unit: csi::volume_usage::Unit::Bytes.into(),
        });
        let inode_usage = stats.inodes.map(|i| csi::VolumeUsage {
            available: bytes(i.available),
            total: bytes(i.total),
            used: bytes(i.used),
            unit: csi::volume_usage::Unit::Inodes.into(),
        });
        let usage = bytes_usage.into_iter().chain(inode_usage).collect();
        let volume_condition = csi::VolumeCondition {
            abnormal: stats.condition.abnormal,
            message: stats.condition.message,
        };
        let reply = csi::NodeGetVolumeStatsResponse {
            usage,
            volume_condition: self
                .reports(rpc::Type::VolumeCondition)
                .then_some(volume_condition),
        };
        if ttl.is_some() {
            let mut cache = self.stats_cache.lock().unwrap_or_else(|p| p.into_inner());
            cache.insert(r.volume_id.clone(), (CacheInstant::now(), reply.clone()));
        }
        Ok(reply)
    }

    /// The stats answer kept for `volume_id`, when it is younger than
    /// `ttl`; an older one is dropped.
    fn kept_stats(
        &self,
        volume_id: &str,
        ttl: Duration,
    ) -> Option<csi::NodeGetVolumeStatsResponse> {
        let mut cache = self.stats_cache.lock().unwrap_or_else(|p| p.into_inner());
        match cache.get(volume_id) {
            Some((read, reply)) if read.elapsed() < ttl => Some(reply.clone()),
            Some(_) => {
                cache.remove(volume_id);
                None
            }
            None => None,
        }
    }

    async fn expand(
        &self,
        r: csi::NodeExpandVolumeRequest,
    ) -> Result<csi::NodeExpandVolumeResponse, Status> {
        if !self.reports(rpc::Type::ExpandVolume) {
            return Err(Status::unimplemented(
                "NodeExpandVolume is not served: the driver does not report EXPAND_VOLUME",
            ));
        }
        require(&r.volume_id, "volume id")?;
        require(&r.volume_path, "volume path")?;
        if let Some(cap) = &r.volume_capability
            && matches!(cap.access_type, Some(AccessType::Block(_)))
        {
            return Err(block_unsupported());
        }
        let _busy = self.claim(&r.volume_id, &r.volume_path)?;
        // A share its stage kept grows on its server: nothing to ask the
        // node (a grow of a link would fail before the path is looked at).
        if !r.staging_target_path.is_empty()
            && let Some(VolumeSource::Smb { .. }) =
                kept::kept(self.node.records(), &r.volume_id, &r.staging_target_path)
                    .map_err(status_of)?
        {
            return Ok(csi::NodeExpandVolumeResponse { capacity_bytes: 0 });
        }
        // The required size is the disk's; the volume filling it is smaller
        // by what the partition table keeps.
        let required = r.capacity_range.map_or(0, |c| c.required_bytes);
        // The size to grow to when the host cannot tell the maximum.
        let explicit = u64::try_from(required.saturating_sub(DISK_LAYOUT_OVERHEAD)).unwrap_or(0);
        // A volume published to readers is not written to, as GCE's
        // driver does (pkg/gce-pd-csi-driver/node.go).
        let reader = r
            .volume_capability
            .as_ref()
            .and_then(|c| c.access_mode)
            .is_some_and(|m| is_reader(m.mode()));
        // A volume is the usual answer, grown at once (rescan first, for
        // the disk's new size); only a path that could not be grown, or a
        // reader's, is looked at.
        let grown = match reader {
            true => None,
            false => match self
                .op("grow", self.node.expand(&r.volume_path).size(explicit))
                .await
            {
                Ok(size) => Some(Ok(bytes(size))),
                Err(e) if unreachable(&e) => return Err(status_of(e)),
                Err(e) => Some(Err(e)),
            },
        };
        let size = match grown {
            Some(Ok(size)) => size,
            _ => match self.volume_state(&r.volume_id, &r.volume_path).await? {
                MountState::Missing | MountState::NotMounted => {
                    return Err(no_volume(&r.volume_id, &r.volume_path));
                }
                // A share grows on its server; nothing to do on the node.
                MountState::Linked => {
                    return Ok(csi::NodeExpandVolumeResponse { capacity_bytes: 0 });
                }
                MountState::Mounted { .. } => match grown {
                    Some(Err(e)) => return Err(status_of(e)),
                    _ => {
                        tracing::info!(volume_id = r.volume_id, "read-only volume: not grown");
                        return Ok(csi::NodeExpandVolumeResponse { capacity_bytes: 0 });
                    }
                },
            },
        };
        // A growth the proxy leaves undone (under 100 MiB) is done as far
        // as the node can do it: never OUT_OF_RANGE for it.
        if size + DISK_LAYOUT_OVERHEAD + SKIPPED_GROWTH < required {
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

/// What a Windows disk keeps outside its one data volume: the volume of a
/// GPT disk starts at 16 MiB (after the MSR) and ends before the backup
/// GPT (16.5 KiB with 512-byte sectors, 20 KiB with 4 KiB ones); 17 MiB
/// covers both.
const DISK_LAYOUT_OVERHEAD: i64 = 17 << 20;

/// The growth csi-proxy's ResizeVolume leaves undone: under 100 MiB more
/// than the partition has, it returns OK without resizing (v1.3.0
/// `pkg/os/volume/api.go`, `minimumResizeSize`).
const SKIPPED_GROWTH: i64 = 100 << 20;

fn require(value: &str, what: &str) -> Result<(), Status> {
    if value.is_empty() {
        return Err(Status::invalid_argument(format!("{what} missing")));
    }
    Ok(())
}

/// The volume context key kubelet sets on an ephemeral inline volume.
pub const EPHEMERAL: &str = "csi.storage.k8s.io/ephemeral";

/// Whether a publish is of an ephemeral inline volume: the context says
/// so, `true` in any case (as csi-driver-smb compares it).
fn is_ephemeral(context: &HashMap<String, String>) -> bool {
    context
        .get(EPHEMERAL)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

fn block_unsupported() -> Status {
    Status::invalid_argument("block access type is not supported: this plugin serves file systems")
}

fn no_volume(volume_id: &str, path: &str) -> Status {
    Status::not_found(format!("volume {volume_id}: no volume at {path}"))
}

/// Checks the parts of a capability that do not depend on the volume: a
/// file system is asked for (no block volumes).
fn check_access_type(cap: Option<&csi::VolumeCapability>) -> Result<(), Status> {
    let cap = cap.ok_or_else(|| Status::invalid_argument("volume capability missing"))?;
    match &cap.access_type {
        Some(AccessType::Mount(_)) => Ok(()),
        Some(AccessType::Block(_)) => Err(block_unsupported()),
        None => Err(Status::invalid_argument(
            "volume capability has no access type",
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
        _ if unreachable(&e) => Code::Unavailable,
        ErrorKind::InvalidArgument if !from_proxy => Code::InvalidArgument,
        ErrorKind::NotFound if !from_proxy => Code::NotFound,
        ErrorKind::FailedPrecondition if !from_proxy => Code::FailedPrecondition,
        _ => Code::Internal,
    };
    Status::new(code, e.to_string())
}

/// Whether the proxy (or host) could not be reached or did not answer in
/// time: the error is about the way there, not about the volume.
fn unreachable(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::TimedOut)
}

impl Plugin {
    /// Logs one line for a CSI call, counts and times it, and wraps its reply.
    fn finish<T>(
        &self,
        rpc: &'static str,
        volume_id: &str,
        start: Instant,
        result: Result<T, Status>,
    ) -> Result<Response<T>, Status> {
        let code = result.as_ref().map_or_else(Status::code, |_| Code::Ok);
        self.metrics.record_call(rpc, code, start.elapsed());
        match &result {
            Ok(_) if volume_id.is_empty() => tracing::debug!(rpc, "ok"),
            Ok(_) => tracing::info!(rpc, volume_id, "ok"),
            Err(s) => {
                tracing::warn!(rpc, volume_id, code = ?s.code(), error = s.message(), "failed")
            }
        }
        result.map(Response::new)
    }

    async fn probe_node(&self) -> Result<csi::ProbeResponse, Status> {
        let ready = match self.op("ping", self.node.ping()).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "not ready: the node cannot be reached");
                false
            }
        };
        Ok(csi::ProbeResponse { ready: Some(ready) })
    }
}

#[tonic::async_trait]
impl Identity for Plugin {
    async fn get_plugin_info(
        &self,
        _: Request<csi::GetPluginInfoRequest>,
    ) -> Result<Response<csi::GetPluginInfoResponse>, Status> {
        let start = Instant::now();
        let info = csi::GetPluginInfoResponse {
            name: self.driver.name().to_string(),
            vendor_version: self.driver.version().to_string(),
            manifest: HashMap::from([("node".to_string(), self.node.versions().to_string())]),
        };
        self.finish("GetPluginInfo", "", start, Ok(info))
    }

    async fn get_plugin_capabilities(
        &self,
        _: Request<csi::GetPluginCapabilitiesRequest>,
    ) -> Result<Response<csi::GetPluginCapabilitiesResponse>, Status> {
        use csi::plugin_capability::{Service, Type, VolumeExpansion, service, volume_expansion};
        let start = Instant::now();
        let service = |t: service::Type| Type::Service(Service { r#type: t.into() });
        let expansion =
            |t: volume_expansion::Type| Type::VolumeExpansion(VolumeExpansion { r#type: t.into() });
        let capabilities = self
            .driver
            .plugin_capabilities()
            .into_iter()
            .map(|c| match c {
                PluginFeature::ControllerService => service(service::Type::ControllerService),
                PluginFeature::VolumeAccessibilityConstraints => {
                    service(service::Type::VolumeAccessibilityConstraints)
                }
                PluginFeature::GroupControllerService => {
                    service(service::Type::GroupControllerService)
                }
                PluginFeature::OnlineExpansion => expansion(volume_expansion::Type::Online),
                PluginFeature::OfflineExpansion => expansion(volume_expansion::Type::Offline),
            })
            .map(|t| csi::PluginCapability { r#type: Some(t) })
            .collect();
        let capabilities = csi::GetPluginCapabilitiesResponse { capabilities };
        self.finish("GetPluginCapabilities", "", start, Ok(capabilities))
    }

    async fn probe(
        &self,
        _: Request<csi::ProbeRequest>,
    ) -> Result<Response<csi::ProbeResponse>, Status> {
        let start = Instant::now();
        let ready = self.probe_node().await;
        self.finish("Probe", "", start, ready)
    }
}

/// A Node call: its request's volume id, the work, and one line and one
/// count at the end.
macro_rules! node_call {
    ($self:ident, $rpc:literal, $request:ident, $work:ident) => {{
        let start = Instant::now();
        let r = $request.into_inner();
        let id = r.volume_id.clone();
        let result = $self.$work(r).await;
        $self.finish($rpc, &id, start, result)
    }};
}

#[tonic::async_trait]
impl NodeService for Plugin {
    async fn node_stage_volume(
        &self,
        request: Request<csi::NodeStageVolumeRequest>,
    ) -> Result<Response<csi::NodeStageVolumeResponse>, Status> {
        node_call!(self, "NodeStageVolume", request, stage)
    }

    async fn node_unstage_volume(
        &self,
        request: Request<csi::NodeUnstageVolumeRequest>,
    ) -> Result<Response<csi::NodeUnstageVolumeResponse>, Status> {
        node_call!(self, "NodeUnstageVolume", request, unstage)
    }

    async fn node_publish_volume(
        &self,
        request: Request<csi::NodePublishVolumeRequest>,
    ) -> Result<Response<csi::NodePublishVolumeResponse>, Status> {
        node_call!(self, "NodePublishVolume", request, publish)
    }

    async fn node_unpublish_volume(
        &self,
        request: Request<csi::NodeUnpublishVolumeRequest>,
    ) -> Result<Response<csi::NodeUnpublishVolumeResponse>, Status> {
        node_call!(self, "NodeUnpublishVolume", request, unpublish)
    }

    async fn node_get_volume_stats(
        &self,
        request: Request<csi::NodeGetVolumeStatsRequest>,
    ) -> Result<Response<csi::NodeGetVolumeStatsResponse>, Status> {
        node_call!(self, "NodeGetVolumeStats", request, stats)
    }

    async fn node_expand_volume(
        &self,
        request: Request<csi::NodeExpandVolumeRequest>,
    ) -> Result<Response<csi::NodeExpandVolumeResponse>, Status> {
        node_call!(self, "NodeExpandVolume", request, expand)
    }

    async fn node_get_capabilities(
        &self,
        _: Request<csi::NodeGetCapabilitiesRequest>,
    ) -> Result<Response<csi::NodeGetCapabilitiesResponse>, Status> {
        use csi::node_service_capability::{Rpc, Type};
        let start = Instant::now();
        let capabilities = self
            .driver
            .node_capabilities()
            .into_iter()
            .map(|t| csi::NodeServiceCapability {
                r#type: Some(Type::Rpc(Rpc { r#type: t.into() })),
            })
            .collect();
        let reply = csi::NodeGetCapabilitiesResponse { capabilities };
        self.finish("NodeGetCapabilities", "", start, Ok(reply))
    }

    async fn node_get_info(
        &self,
        _: Request<csi::NodeGetInfoRequest>,
    ) -> Result<Response<csi::NodeGetInfoResponse>, Status> {
        let start = Instant::now();
        let segments = self.driver.topology();
        let info = csi::NodeGetInfoResponse {
            node_id: self.driver.node_id().to_string(),
            max_volumes_per_node: self.driver.max_volumes_per_node(),
            accessible_topology: (!segments.is_empty()).then_some(csi::Topology { segments }),
        };
        self.finish("NodeGetInfo", "", start, Ok(info))
    }
}
