//! A simulated cloud for Windows CSI node plugins: the CSI Identity and
//! Controller services of a cloud ([`Profile`]: Azure, GCE, AWS, vSphere,
//! an SMB server, or a generic one), over the same simulated Windows node
//! ([`Host`]) the reference CSI Proxy server serves.
//!
//! - `CreateVolume` records a disk of the requested capacity, rounded up to
//!   whole GiB as clouds bill disks (1 GiB when no size is asked; at most
//!   [`MAX_SIZE`], and within what is left of [`POOL_SIZE`]);
//!   `capacity_range.limit_bytes` is honoured. The same name gives the same
//!   volume while its size fits the range; otherwise `ALREADY_EXISTS`. The
//!   share profiles (smb, azurefile) make the volume's subdirectory on the
//!   share and return where it is in the volume context (`source` and
//!   `subDir`; azurefile's `server`, `shareName`, `folderName`). The
//!   request's parameters are in the volume context too, as the upstream
//!   controllers pass them on, the profile's own keys over them.
//! - `ControllerPublishVolume` attaches the disk to the node where and as
//!   its cloud does ([`Profile::attach`]), read-only for a `readonly`
//!   publish, and returns the cloud's publish context
//!   ([`Profile::publish_context`]); the node lists the disk after a
//!   rescan, as after a cloud attach. Publishing an attached volume again
//!   with the other `readonly` is `ALREADY_EXISTS`.
//! - `ControllerUnpublishVolume` detaches it; a disk whose volume is still
//!   mounted on the node is refused with `FAILED_PRECONDITION` (see
//!   [`csi_proxy_client::host::hotplug`] for why). An unknown volume or node
//!   is unpublished already: OK, as the CSI spec asks. The disk keeps its
//!   contents: published again, it shows the same partitions, volume and
//!   files.
//! - `ControllerExpandVolume` grows the disk (attached or not) and asks for a
//!   node expansion.
//! - `DeleteVolume` of an attached disk is `FAILED_PRECONDITION`, as clouds
//!   refuse to delete a disk in use.
//! - `ListVolumes` lists the volumes in creation order (a token is where the
//!   next page starts) with the node each is published on; `GetCapacity`
//!   answers what is left of [`POOL_SIZE`].
//!
//! Capabilities: `CREATE_DELETE_VOLUME`, `LIST_VOLUMES`,
//! `LIST_VOLUMES_PUBLISHED_NODES`, `GET_CAPACITY`, and for the disk
//! profiles `PUBLISH_UNPUBLISH_VOLUME`, `PUBLISH_READONLY`,
//! `EXPAND_VOLUME`; the other Controller RPCs answer `UNIMPLEMENTED`.
//! There is one node, whose id is given at start.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use csi::controller_server::{Controller, ControllerServer};
use csi::identity_server::{Identity, IdentityServer};
use csi::volume_capability::{AccessType, access_mode::Mode};
use csi_node_server::csi::v1 as csi;
use csi_proxy_client::host::{DetachedDisk, Host, HotDisk, HotplugError};
use tonic::{Request, Response, Status};

mod profile;
pub use profile::*;
pub mod serve;
pub mod template;

/// One GiB, the granularity of disk sizes.
pub const GIB: u64 = 1 << 30;
/// The size of a volume whose request names none.
pub const DEFAULT_SIZE: u64 = GIB;
/// The largest disk the cloud makes (32 TiB).
pub const MAX_SIZE: u64 = 32 << 40;
/// What all the cloud's volumes may hold together (256 TiB), for
/// `GetCapacity`.
pub const POOL_SIZE: u64 = 256 << 40;
/// The plugin name Identity reports in the generic profile.
pub const DRIVER_NAME: &str = "sim-cloud.csi-proxy-client.example";
/// How many slots (LUNs, targets, NVMe controllers) a node has for the
/// cloud's disks.
pub const SLOTS: u32 = 64;

/// The simulated cloud: its volumes and the node they attach to. Cheap to
/// clone (shared state).
#[derive(Debug, Clone)]
pub struct Cloud {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    host: Host,
    node_id: String,
    profile: Profile,
    volumes: Mutex<Volumes>,
}

#[derive(Debug, Default)]
struct Volumes {
    by_id: BTreeMap<String, CloudVolume>,
    created: u64,
}

#[derive(Debug)]
struct CloudVolume {
    /// Its creation number (from 1): ids and list order come from it.
    seq: u64,
    name: String,
    size: u64,
    context: HashMap<String, String>,
    attached: Option<Attached>,
    /// The disk's contents while detached (none before its first attach).
    kept: Option<DetachedDisk>,
}

#[derive(Debug, Clone, Copy)]
struct Attached {
    disk: HotDisk,
    slot: u32,
    read_only: bool,
}

impl Volumes {
    fn get(&mut self, id: &str) -> Result<&mut CloudVolume, Status> {
        self.by_id
            .get_mut(id)
            .ok_or_else(|| Status::not_found(format!("volume {id} does not exist")))
    }
}

impl Cloud {
    /// A generic cloud with no volumes whose one node is `host`, known to
    /// CSI as `node_id`.
    pub fn new(host: Host, node_id: impl Into<String>) -> Self {
        Self::with_profile(host, node_id, Profile::Generic)
    }

    /// A cloud playing `profile`, with no volumes, whose one node is `host`
    /// (laid out as [`Profile::layout`] says, by the caller).
    pub fn with_profile(host: Host, node_id: impl Into<String>, profile: Profile) -> Self {
        Cloud {
            inner: Arc::new(Inner {
                host,
                node_id: node_id.into(),
                profile,
                volumes: Mutex::default(),
            }),
        }
    }

    /// The cloud it plays.
    pub fn profile(&self) -> Profile {
        self.inner.profile
    }

    /// The Identity service.
    pub fn identity_service(&self) -> IdentityServer<Cloud> {
        IdentityServer::new(self.clone())
    }

    /// The Controller service.
    pub fn controller_service(&self) -> ControllerServer<Cloud> {
        ControllerServer::new(self.clone())
    }

    fn volumes(&self) -> MutexGuard<'_, Volumes> {
        self.inner.volumes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn check_node(&self, node_id: &str) -> Result<(), Status> {
        if node_id != self.inner.node_id {
            return Err(Status::not_found(format!("node {node_id} does not exist")));
        }
        Ok(())
    }
}

/// The disk size a capacity range asks for: whole GiB, within the limit.
pub fn disk_size(range: Option<&csi::CapacityRange>) -> Result<u64, Status> {
    let Some(range) = range else {
        return Ok(DEFAULT_SIZE);
    };
    let (Ok(required), Ok(limit)) = (
        u64::try_from(range.required_bytes),
        u64::try_from(range.limit_bytes),
    ) else {
        return Err(Status::invalid_argument("capacity_range: negative bytes"));
    };
    let size = match required {
        0 => DEFAULT_SIZE,
        r => r.div_ceil(GIB) * GIB,
    };
    // A limit below the rounded size: the largest whole GiB under it, if it
    // still covers what is required.
    let size = match limit {
        0 => size,
        l if size > l => l / GIB * GIB,
        _ => size,
    };
    if size == 0 || size < required || size > MAX_SIZE {
        return Err(Status::out_of_range(format!(
            "no disk of whole GiB up to {MAX_SIZE} bytes fits required_bytes {required} and limit_bytes {limit}"
        )));
    }
    Ok(size)
}

/// Whether a volume of `size` bytes satisfies `range` (a missing range or
/// bound is satisfied).
fn fits(size: u64, range: Option<&csi::CapacityRange>) -> bool {
    range.is_none_or(|r| {
        let required = u64::try_from(r.required_bytes).unwrap_or(0);
        let limit = u64::try_from(r.limit_bytes).unwrap_or(0);
        size >= required && (limit == 0 || size <= limit)
    })
}

/// The file system types a disk's capability may carry: NTFS, and the
/// Linux types provisioners put on PVs by default, which the node serves as
/// NTFS (csi-node-server's `LINUX_FS_TYPES`).
const DISK_FS_TYPES: [&str; 5] = ["", "ntfs", "ext4", "ext3", "xfs"];

/// Checks that every capability is complete and one the cloud's volumes
/// serve: an access type, an access mode, and for a disk a single-node mode
/// and a file system the node formats NTFS. `Some` is the reason.
fn unsupported(profile: Profile, capabilities: &[csi::VolumeCapability]) -> Option<String> {
    for c in capabilities {
        if c.access_type.is_none() {
            return Some("a volume capability has no access type".into());
        }
        let mode = c.access_mode.as_ref().map(|m| m.mode());
        match mode {
            None | Some(Mode::Unknown) => {
                return Some("a volume capability has no access mode".into());
            }
            _ if !profile.attaches() => {}
            Some(Mode::SingleNodeWriter | Mode::SingleNodeReaderOnly)
            | Some(Mode::SingleNodeSingleWriter | Mode::SingleNodeMultiWriter) => {}
            Some(m) => {
                return Some(format!(
                    "access mode {} needs a disk on several nodes",
                    m.as_str_name()
                ));
            }
        }
        if let Some(AccessType::Mount(m)) = &c.access_type
            && profile.attaches()
            && !DISK_FS_TYPES.contains(&m.fs_type.to_ascii_lowercase().as_str())
        {
            return Some(format!("fs_type {} is not one served as NTFS", m.fs_type));
        }
    }
    None
}

fn hotplug_status(e: HotplugError) -> Status {
    match e {
        HotplugError::NoFreeLun => Status::resource_exhausted(e.to_string()),
        HotplugError::Mounted { .. } => Status::failed_precondition(e.to_string()),
        _ => Status::internal(e.to_string()),
    }
}

fn required(field: &str, value: &str) -> Result<(), Status> {
    if value.is_empty() {
        return Err(Status::invalid_argument(format!("{field} is required")));
    }
    Ok(())
}

fn unimplemented<T>(rpc: &str) -> Result<Response<T>, Status> {
    Err(Status::unimplemented(format!(
        "{rpc} is not offered by the simulated cloud"
    )))
}

impl Cloud {
    /// Makes the SMB profile's subdirectory on the share (kept if there).
    fn make_smb_dir(&self, dir: &str) -> Result<(), Status> {
        let share = self
            .inner
            .host
            .run(|s| {
                s.smb
                    .share_dir(SMB_SERVER, SMB_SHARE)
                    .map(|p| p.to_path_buf())
            })
            .ok_or_else(|| {
                Status::failed_precondition(format!(
                    r"the node has no share \\{SMB_SERVER}\{SMB_SHARE} for SMB volumes"
                ))
            })?;
        std::fs::create_dir_all(share.join(dir))
            .map_err(|e| Status::internal(format!("cannot make {dir} on the share: {e}")))
    }

    /// Removes the SMB profile's subdirectory (gone already is fine).
    fn remove_smb_dir(&self, dir: &str) -> Result<(), Status> {
        let share = self.inner.host.run(|s| {
            s.smb
                .share_dir(SMB_SERVER, SMB_SHARE)
                .map(|p| p.to_path_buf())
        });
        match share.map(|p| std::fs::remove_dir_all(p.join(dir))) {
            Some(Err(e)) if e.kind() != std::io::ErrorKind::NotFound => Err(Status::internal(
                format!("cannot remove {dir} from the share: {e}"),
            )),
            _ => Ok(()),
        }
    }

    /// The volume context CreateVolume returns for the `n`th volume: the
    /// request's parameters, as the upstream controllers pass their
    /// StorageClass parameters on (so csi-sanity's
    /// `--csi.testvolumeparameters` reach the node), with the profile's own
    /// keys over them. For SMB the share and the subdirectory, written as a
    /// template the node fills from the PV name (csi-driver-smb
    /// pkg/smb/nodeserver.go), so that the node's templating is exercised
    /// too; for azurefile the server, the share and the directory.
    fn volume_context(
        &self,
        n: u64,
        parameters: &HashMap<String, String>,
    ) -> HashMap<String, String> {
        let own: Vec<(&str, String)> = match self.inner.profile {
            Profile::Smb => vec![
                ("source", format!("//{SMB_SERVER}/{SMB_SHARE}")),
                ("subDir", "${pv.metadata.name}".into()),
                ("csi.storage.k8s.io/pv/name", smb_dir(n)),
            ],
            Profile::Azurefile => vec![
                (AZUREFILE_SERVER, SMB_SERVER.into()),
                (AZUREFILE_SHARE_NAME, SMB_SHARE.into()),
                (AZUREFILE_FOLDER_NAME, smb_dir(n)),
            ],
            _ => vec![],
        };
        let mut context = parameters.clone();
        context.extend(own.into_iter().map(|(k, v)| (k.to_string(), v)));
        context
    }

    /// Attaches `volume` as its cloud does (again with its contents, if it
    /// was attached before).
    fn attach(&self, volume: &mut CloudVolume, read_only: bool) -> Result<Attached, Status> {
        let profile = self.inner.profile;
        let used: Vec<String> = self.inner.host.run(|s| {
            s.storage
                .all_disks()
                .flat_map(|d| [d.location.clone(), d.device_path.clone()])
                .collect()
        });
        let (mut attach, slot) =
            profile
                .attach(volume.seq, volume.size, &used)
                .ok_or_else(|| {
                    Status::resource_exhausted(format!(
                        "node {}: all {SLOTS} slots for data disks are taken",
                        self.inner.node_id
                    ))
                })?;
        attach.read_only = read_only;
        let disk = match volume.kept.take() {
            Some(kept) => self.inner.host.hot_reattach(kept, attach),
            None => self.inner.host.hot_attach(attach),
        }
        .map_err(hotplug_status)?;
        Ok(Attached {
            disk,
            slot,
            read_only,
        })
    }
}

#[tonic::async_trait]
impl Identity for Cloud {
    async fn get_plugin_info(
        &self,
        _: Request<csi::GetPluginInfoRequest>,
    ) -> Result<Response<csi::GetPluginInfoResponse>, Status> {
        Ok(Response::new(csi::GetPluginInfoResponse {
            name: self.inner.profile.driver_name().into(),
            vendor_version: env!("CARGO_PKG_VERSION").into(),
            manifest: HashMap::new(),
        }))
    }

    async fn get_plugin_capabilities(
        &self,
        _: Request<csi::GetPluginCapabilitiesRequest>,
    ) -> Result<Response<csi::GetPluginCapabilitiesResponse>, Status> {
        use csi::plugin_capability::{Service, Type, VolumeExpansion, service, volume_expansion};
        let mut capabilities = vec![Type::Service(Service {
            r#type: service::Type::ControllerService.into(),
        })];
        if self.inner.profile.attaches() {
            capabilities.push(Type::VolumeExpansion(VolumeExpansion {
                r#type: volume_expansion::Type::Online.into(),
            }));
        }
        Ok(Response::new(csi::GetPluginCapabilitiesResponse {
            capabilities: capabilities
                .into_iter()
                .map(|t| csi::PluginCapability { r#type: Some(t) })
                .collect(),
        }))
    }

    async fn probe(
        &self,
        _: Request<csi::ProbeRequest>,
    ) -> Result<Response<csi::ProbeResponse>, Status> {
        Ok(Response::new(csi::ProbeResponse { ready: Some(true) }))
    }
}

#[tonic::async_trait]
impl Controller for Cloud {
    async fn create_volume(
        &self,
        request: Request<csi::CreateVolumeRequest>,
    ) -> Result<Response<csi::CreateVolumeResponse>, Status> {
        let r = request.into_inner();
        required("name", &r.name)?;
        if r.volume_capabilities.is_empty() {
            return Err(Status::invalid_argument("volume_capabilities is required"));
        }
        if let Some(why) = unsupported(self.inner.profile, &r.volume_capabilities) {
            return Err(Status::invalid_argument(why));
        }
        if r.volume_content_source.is_some() {
            return Err(Status::invalid_argument(
                "volume_content_source: the simulated cloud has no snapshots or clones",
            ));
        }
        let range = r.capacity_range.as_ref();
        let mut volumes = self.volumes();
        let existing = volumes.by_id.iter().find(|(_, v)| v.name == r.name);
        let (id, size, context) = match existing {
            Some((id, v)) if fits(v.size, range) => (id.clone(), v.size, v.context.clone()),
            Some((id, v)) => {
                return Err(Status::already_exists(format!(
                    "volume {} ({id}) exists with {} bytes, outside the capacity range asked for",
                    r.name, v.size
                )));
            }
            None => {
                let size = disk_size(range)?;
                let used: u64 = volumes.by_id.values().map(|v| v.size).sum();
                if used + size > POOL_SIZE {
                    return Err(Status::resource_exhausted(format!(
                        "{size} bytes asked for, {} left of the cloud's {POOL_SIZE}",
                        POOL_SIZE - used
                    )));
                }
                let seq = volumes.created + 1;
                if self.inner.profile.shares() {
                    self.make_smb_dir(&smb_dir(seq))?;
                }
                volumes.created = seq;
                let id = self.inner.profile.volume_id(seq);
                let context = self.volume_context(seq, &r.parameters);
                volumes.by_id.insert(
                    id.clone(),
                    CloudVolume {
                        seq,
                        name: r.name.clone(),
                        size,
                        context: context.clone(),
                        attached: None,
                        kept: None,
                    },
                );
                tracing::info!(id, name = r.name, size, "volume created");
                (id, size, context)
            }
        };
        Ok(Response::new(csi::CreateVolumeResponse {
            volume: Some(csi::Volume {
                capacity_bytes: size as i64,
                volume_id: id,
                volume_context: context,
                ..Default::default()
            }),
        }))
    }

    async fn delete_volume(
        &self,
        request: Request<csi::DeleteVolumeRequest>,
    ) -> Result<Response<csi::DeleteVolumeResponse>, Status> {
        let r = request.into_inner();
        required("volume_id", &r.volume_id)?;
        let mut volumes = self.volumes();
        if let Some(v) = volumes.by_id.get(&r.volume_id) {
            if v.attached.is_some() {
                return Err(Status::failed_precondition(format!(
                    "volume {} is attached to node {}",
                    r.volume_id, self.inner.node_id
                )));
            }
            if self.inner.profile.shares() {
                self.remove_smb_dir(&smb_dir(v.seq))?;
            }
            volumes.by_id.remove(&r.volume_id);
            tracing::info!(id = r.volume_id, "volume deleted");
        }
        Ok(Response::new(csi::DeleteVolumeResponse {}))
    }

    async fn controller_publish_volume(
        &self,
        request: Request<csi::ControllerPublishVolumeRequest>,
    ) -> Result<Response<csi::ControllerPublishVolumeResponse>, Status> {
        if !self.inner.profile.attaches() {
            return unimplemented("ControllerPublishVolume");
        }
        let r = request.into_inner();
        required("volume_id", &r.volume_id)?;
        required("node_id", &r.node_id)?;
        let Some(capability) = r.volume_capability else {
            return Err(Status::invalid_argument("volume_capability is required"));
        };
        if let Some(why) = unsupported(self.inner.profile, std::slice::from_ref(&capability)) {
            return Err(Status::invalid_argument(why));
        }
        let mut volumes = self.volumes();
        let volume = volumes.get(&r.volume_id)?;
        self.check_node(&r.node_id)?;
        let attached = match volume.attached {
            Some(a) if a.read_only != r.readonly => {
                return Err(Status::already_exists(format!(
                    "volume {} is attached to node {} {}, not {} as asked",
                    r.volume_id,
                    r.node_id,
                    if a.read_only {
                        "read-only"
                    } else {
                        "read-write"
                    },
                    if r.readonly {
                        "read-only"
                    } else {
                        "read-write"
                    },
                )));
            }
            Some(a) => a,
            None => {
                let a = self.attach(volume, r.readonly)?;
                tracing::info!(
                    id = r.volume_id,
                    number = a.disk.number,
                    read_only = r.readonly,
                    "volume attached"
                );
                volume.attached = Some(a);
                a
            }
        };
        Ok(Response::new(csi::ControllerPublishVolumeResponse {
            publish_context: self.inner.profile.publish_context(
                volume.seq,
                attached.slot,
                attached.disk.lun,
            ),
        }))
    }

    async fn controller_unpublish_volume(
        &self,
        request: Request<csi::ControllerUnpublishVolumeRequest>,
    ) -> Result<Response<csi::ControllerUnpublishVolumeResponse>, Status> {
        if !self.inner.profile.attaches() {
            return unimplemented("ControllerUnpublishVolume");
        }
        let r = request.into_inner();
        required("volume_id", &r.volume_id)?;
        // A volume or node the cloud does not know is attached nowhere:
        // unpublished already, which the CSI spec answers with OK.
        let mut volumes = self.volumes();
        let Some(volume) = volumes.by_id.get_mut(&r.volume_id) else {
            return Ok(Response::new(csi::ControllerUnpublishVolumeResponse {}));
        };
        if !r.node_id.is_empty() && r.node_id != self.inner.node_id {
            return Ok(Response::new(csi::ControllerUnpublishVolumeResponse {}));
        }
        if let Some(a) = volume.attached {
            let kept = self
                .inner
                .host
                .hot_detach(a.disk.handle)
                .map_err(hotplug_status)?;
            volume.kept = Some(kept);
            volume.attached = None;
            tracing::info!(id = r.volume_id, number = a.disk.number, "volume detached");
        }
        Ok(Response::new(csi::ControllerUnpublishVolumeResponse {}))
    }

    async fn validate_volume_capabilities(
        &self,
        request: Request<csi::ValidateVolumeCapabilitiesRequest>,
    ) -> Result<Response<csi::ValidateVolumeCapabilitiesResponse>, Status> {
        let r = request.into_inner();
        required("volume_id", &r.volume_id)?;
        if r.volume_capabilities.is_empty() {
            return Err(Status::invalid_argument("volume_capabilities is required"));
        }
        self.volumes().get(&r.volume_id)?;
        let response = match unsupported(self.inner.profile, &r.volume_capabilities) {
            Some(message) => csi::ValidateVolumeCapabilitiesResponse {
                confirmed: None,
                message,
            },
            None => csi::ValidateVolumeCapabilitiesResponse {
                confirmed: Some(csi::validate_volume_capabilities_response::Confirmed {
                    volume_context: r.volume_context,
                    volume_capabilities: r.volume_capabilities,
                    parameters: r.parameters,
                    mutable_parameters: r.mutable_parameters,
                }),
                message: String::new(),
            },
        };
        Ok(Response::new(response))
    }

    async fn list_volumes(
        &self,
        request: Request<csi::ListVolumesRequest>,
    ) -> Result<Response<csi::ListVolumesResponse>, Status> {
        let r = request.into_inner();
        // The token is the creation number the next page starts at: a
        // volume deleted meanwhile leaves it valid, one created meanwhile
        // comes on a later page.
        let start: u64 = match r.starting_token.as_str() {
            "" => 1,
            token => token.parse().map_err(|_| {
                Status::aborted(format!(
                    "starting_token {token:?} is not one ListVolumes gave"
                ))
            })?,
        };
        let max = match usize::try_from(r.max_entries) {
            Ok(0) => usize::MAX,
            Ok(n) => n,
            Err(_) => return Err(Status::invalid_argument("max_entries is negative")),
        };
        let volumes = self.volumes();
        let mut listed: Vec<(&String, &CloudVolume)> = volumes
            .by_id
            .iter()
            .filter(|(_, v)| v.seq >= start)
            .collect();
        listed.sort_by_key(|(_, v)| v.seq);
        let next_token = match listed.get(max) {
            Some((_, v)) => v.seq.to_string(),
            None => String::new(),
        };
        let entries = listed
            .into_iter()
            .take(max)
            .map(|(id, v)| csi::list_volumes_response::Entry {
                volume: Some(csi::Volume {
                    capacity_bytes: v.size as i64,
                    volume_id: id.clone(),
                    volume_context: v.context.clone(),
                    ..Default::default()
                }),
                status: Some(csi::list_volumes_response::VolumeStatus {
                    published_node_ids: v
                        .attached
                        .map(|_| self.inner.node_id.clone())
                        .into_iter()
                        .collect(),
                    volume_condition: None,
                }),
            })
            .collect();
        Ok(Response::new(csi::ListVolumesResponse {
            entries,
            next_token,
        }))
    }

    async fn get_capacity(
        &self,
        request: Request<csi::GetCapacityRequest>,
    ) -> Result<Response<csi::GetCapacityResponse>, Status> {
        let r = request.into_inner();
        // Capabilities the cloud does not serve have no capacity (the CSI
        // spec asks for 0, not an error).
        let available = match unsupported(self.inner.profile, &r.volume_capabilities) {
            Some(_) => 0,
            None => {
                let used: u64 = self.volumes().by_id.values().map(|v| v.size).sum();
                POOL_SIZE.saturating_sub(used)
            }
        };
        Ok(Response::new(csi::GetCapacityResponse {
            available_capacity: available as i64,
            maximum_volume_size: Some(available.min(MAX_SIZE) as i64),
            minimum_volume_size: Some(GIB as i64),
        }))
    }

    async fn controller_get_capabilities(
        &self,
        _: Request<csi::ControllerGetCapabilitiesRequest>,
    ) -> Result<Response<csi::ControllerGetCapabilitiesResponse>, Status> {
        use csi::controller_service_capability::{Rpc, Type, rpc};
        let mut rpcs = vec![
            rpc::Type::CreateDeleteVolume,
            rpc::Type::ListVolumes,
            rpc::Type::ListVolumesPublishedNodes,
            rpc::Type::GetCapacity,
        ];
        if self.inner.profile.attaches() {
            rpcs.extend([
                rpc::Type::PublishUnpublishVolume,
                rpc::Type::PublishReadonly,
                rpc::Type::ExpandVolume,
            ]);
        }
        Ok(Response::new(csi::ControllerGetCapabilitiesResponse {
            capabilities: rpcs
                .into_iter()
                .map(|t| csi::ControllerServiceCapability {
                    r#type: Some(Type::Rpc(Rpc { r#type: t.into() })),
                })
                .collect(),
        }))
    }

    async fn create_snapshot(
        &self,
        _: Request<csi::CreateSnapshotRequest>,
    ) -> Result<Response<csi::CreateSnapshotResponse>, Status> {
        unimplemented("CreateSnapshot")
    }

    async fn delete_snapshot(
        &self,
        _: Request<csi::DeleteSnapshotRequest>,
    ) -> Result<Response<csi::DeleteSnapshotResponse>, Status> {
        unimplemented("DeleteSnapshot")
    }

    async fn list_snapshots(
        &self,
        _: Request<csi::ListSnapshotsRequest>,
    ) -> Result<Response<csi::ListSnapshotsResponse>, Status> {
        unimplemented("ListSnapshots")
    }

    async fn get_snapshot(
        &self,
        _: Request<csi::GetSnapshotRequest>,
    ) -> Result<Response<csi::GetSnapshotResponse>, Status> {
        unimplemented("GetSnapshot")
    }

    async fn controller_expand_volume(
        &self,
        request: Request<csi::ControllerExpandVolumeRequest>,
    ) -> Result<Response<csi::ControllerExpandVolumeResponse>, Status> {
        if !self.inner.profile.attaches() {
            return unimplemented("ControllerExpandVolume");
        }
        let r = request.into_inner();
        required("volume_id", &r.volume_id)?;
        let Some(range) = r.capacity_range else {
            return Err(Status::invalid_argument("capacity_range is required"));
        };
        let mut volumes = self.volumes();
        let volume = volumes.get(&r.volume_id)?;
        if fits(volume.size, Some(&range)) {
            return Ok(Response::new(csi::ControllerExpandVolumeResponse {
                capacity_bytes: volume.size as i64,
                node_expansion_required: false,
            }));
        }
        let size = disk_size(Some(&range))?;
        if size < volume.size {
            return Err(Status::out_of_range(format!(
                "volume {} has {} bytes, over limit_bytes: disks do not shrink",
                r.volume_id, volume.size
            )));
        }
        if let Some(a) = volume.attached {
            self.inner
                .host
                .hot_grow(a.disk.handle, size)
                .map_err(hotplug_status)?;
        }
        // A detached disk grows when it is attached again (hot_reattach
        // takes the larger size).
        volume.size = size;
        tracing::info!(id = r.volume_id, size, "volume expanded");
        Ok(Response::new(csi::ControllerExpandVolumeResponse {
            capacity_bytes: size as i64,
            node_expansion_required: true,
        }))
    }

    async fn controller_get_volume(
        &self,
        _: Request<csi::ControllerGetVolumeRequest>,
    ) -> Result<Response<csi::ControllerGetVolumeResponse>, Status> {
        unimplemented("ControllerGetVolume")
    }

    async fn controller_modify_volume(
        &self,
        _: Request<csi::ControllerModifyVolumeRequest>,
    ) -> Result<Response<csi::ControllerModifyVolumeResponse>, Status> {
        unimplemented("ControllerModifyVolume")
    }
}
