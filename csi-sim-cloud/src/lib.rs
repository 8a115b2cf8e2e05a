//! A simulated cloud for Windows CSI node plugins: the CSI Identity and
//! Controller services of a block-disk cloud, over the same simulated
//! Windows node ([`Host`]) the reference CSI Proxy server serves.
//!
//! - `CreateVolume` records a disk of the requested capacity, rounded up to
//!   whole GiB as clouds bill disks (1 GiB when no size is asked; at most
//!   [`MAX_SIZE`]); `capacity_range.limit_bytes` is honoured. The same name
//!   gives the same volume while its size fits the range; otherwise
//!   `ALREADY_EXISTS`.
//! - `ControllerPublishVolume` attaches the disk to the node at its lowest
//!   free LUN ([`Host::hot_attach`]) and returns `publish_context {"lun": N}`;
//!   the node lists the disk after a rescan, as after a cloud attach.
//! - `ControllerUnpublishVolume` detaches it; a disk whose volume is still
//!   mounted on the node is refused with `FAILED_PRECONDITION` (see
//!   [`csi_proxy_client::host::hotplug`] for why). An unknown volume or node
//!   is unpublished already: OK, as the CSI spec asks.
//! - `ControllerExpandVolume` grows the disk (attached or not) and asks for a
//!   node expansion.
//! - `DeleteVolume` of an attached disk is `FAILED_PRECONDITION`, as clouds
//!   refuse to delete a disk in use.
//!
//! Capabilities: `CREATE_DELETE_VOLUME`, `PUBLISH_UNPUBLISH_VOLUME`,
//! `EXPAND_VOLUME`; the other Controller RPCs answer `UNIMPLEMENTED`. There
//! is one node, whose id is given at start; its disks' contents do not
//! survive a detach (a re-attached volume is blank again), and `readonly`
//! publishes attach read-write.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use csi::controller_server::{Controller, ControllerServer};
use csi::identity_server::{Identity, IdentityServer};
use csi::volume_capability::{AccessType, access_mode::Mode};
use csi_node_server::csi::v1 as csi;
use csi_proxy_client::host::{Host, HotAttach, HotDisk, HotplugError};
use tonic::{Request, Response, Status};

/// One GiB, the granularity of disk sizes.
pub const GIB: u64 = 1 << 30;
/// The size of a volume whose request names none.
pub const DEFAULT_SIZE: u64 = GIB;
/// The largest disk the cloud makes (32 TiB).
pub const MAX_SIZE: u64 = 32 << 40;
/// The plugin name Identity reports.
pub const DRIVER_NAME: &str = "sim-cloud.csi-proxy-client.example";

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
    volumes: Mutex<Volumes>,
}

#[derive(Debug, Default)]
struct Volumes {
    by_id: BTreeMap<String, CloudVolume>,
    created: u64,
}

#[derive(Debug)]
struct CloudVolume {
    name: String,
    size: u64,
    attached: Option<HotDisk>,
}

impl Volumes {
    fn get(&mut self, id: &str) -> Result<&mut CloudVolume, Status> {
        self.by_id
            .get_mut(id)
            .ok_or_else(|| Status::not_found(format!("volume {id} does not exist")))
    }
}

impl Cloud {
    /// A cloud with no volumes whose one node is `host`, known to CSI as `node_id`.
    pub fn new(host: Host, node_id: impl Into<String>) -> Self {
        Cloud {
            inner: Arc::new(Inner {
                host,
                node_id: node_id.into(),
                volumes: Mutex::default(),
            }),
        }
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

/// Checks that every capability is complete and one a disk can serve: an
/// access type and a single-node access mode. `Err` is the reason.
fn unsupported(capabilities: &[csi::VolumeCapability]) -> Option<String> {
    for c in capabilities {
        if c.access_type.is_none() {
            return Some("a volume capability has no access type".into());
        }
        let mode = c.access_mode.as_ref().map(|m| m.mode());
        match mode {
            None | Some(Mode::Unknown) => {
                return Some("a volume capability has no access mode".into());
            }
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
            && !matches!(m.fs_type.to_ascii_lowercase().as_str(), "" | "ntfs")
        {
            return Some(format!("fs_type {} is not NTFS", m.fs_type));
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

#[tonic::async_trait]
impl Identity for Cloud {
    async fn get_plugin_info(
        &self,
        _: Request<csi::GetPluginInfoRequest>,
    ) -> Result<Response<csi::GetPluginInfoResponse>, Status> {
        Ok(Response::new(csi::GetPluginInfoResponse {
            name: DRIVER_NAME.into(),
            vendor_version: env!("CARGO_PKG_VERSION").into(),
            manifest: HashMap::new(),
        }))
    }

    async fn get_plugin_capabilities(
        &self,
        _: Request<csi::GetPluginCapabilitiesRequest>,
    ) -> Result<Response<csi::GetPluginCapabilitiesResponse>, Status> {
        use csi::plugin_capability::{Service, Type, VolumeExpansion, service, volume_expansion};
        let capabilities = vec![
            Type::Service(Service {
                r#type: service::Type::ControllerService.into(),
            }),
            Type::VolumeExpansion(VolumeExpansion {
                r#type: volume_expansion::Type::Online.into(),
            }),
        ];
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
        if let Some(why) = unsupported(&r.volume_capabilities) {
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
        let (id, size) = match existing {
            Some((id, v)) if fits(v.size, range) => (id.clone(), v.size),
            Some((id, v)) => {
                return Err(Status::already_exists(format!(
                    "volume {} ({id}) exists with {} bytes, outside the capacity range asked for",
                    r.name, v.size
                )));
            }
            None => {
                let size = disk_size(range)?;
                volumes.created += 1;
                let id = format!("sim-disk-{}", volumes.created);
                volumes.by_id.insert(
                    id.clone(),
                    CloudVolume {
                        name: r.name.clone(),
                        size,
                        attached: None,
                    },
                );
                tracing::info!(id, name = r.name, size, "volume created");
                (id, size)
            }
        };
        Ok(Response::new(csi::CreateVolumeResponse {
            volume: Some(csi::Volume {
                capacity_bytes: size as i64,
                volume_id: id,
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
            if let Some(disk) = v.attached {
                return Err(Status::failed_precondition(format!(
                    "volume {} is attached to node {} at LUN {}",
                    r.volume_id, self.inner.node_id, disk.lun
                )));
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
        let r = request.into_inner();
        required("volume_id", &r.volume_id)?;
        required("node_id", &r.node_id)?;
        let Some(capability) = r.volume_capability else {
            return Err(Status::invalid_argument("volume_capability is required"));
        };
        if let Some(why) = unsupported(std::slice::from_ref(&capability)) {
            return Err(Status::invalid_argument(why));
        }
        let mut volumes = self.volumes();
        let volume = volumes.get(&r.volume_id)?;
        self.check_node(&r.node_id)?;
        let disk = match volume.attached {
            Some(disk) => disk,
            None => {
                let disk = self
                    .inner
                    .host
                    .hot_attach(HotAttach::new(volume.size))
                    .map_err(hotplug_status)?;
                tracing::info!(id = r.volume_id, lun = disk.lun, "volume attached");
                volume.attached = Some(disk);
                disk
            }
        };
        Ok(Response::new(csi::ControllerPublishVolumeResponse {
            publish_context: HashMap::from([("lun".to_string(), disk.lun.to_string())]),
        }))
    }

    async fn controller_unpublish_volume(
        &self,
        request: Request<csi::ControllerUnpublishVolumeRequest>,
    ) -> Result<Response<csi::ControllerUnpublishVolumeResponse>, Status> {
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
        if let Some(disk) = volume.attached {
            self.inner
                .host
                .hot_detach(disk.handle)
                .map_err(hotplug_status)?;
            volume.attached = None;
            tracing::info!(id = r.volume_id, lun = disk.lun, "volume detached");
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
        let response = match unsupported(&r.volume_capabilities) {
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
        _: Request<csi::ListVolumesRequest>,
    ) -> Result<Response<csi::ListVolumesResponse>, Status> {
        unimplemented("ListVolumes")
    }

    async fn get_capacity(
        &self,
        _: Request<csi::GetCapacityRequest>,
    ) -> Result<Response<csi::GetCapacityResponse>, Status> {
        unimplemented("GetCapacity")
    }

    async fn controller_get_capabilities(
        &self,
        _: Request<csi::ControllerGetCapabilitiesRequest>,
    ) -> Result<Response<csi::ControllerGetCapabilitiesResponse>, Status> {
        use csi::controller_service_capability::{Rpc, Type, rpc};
        let rpcs = [
            rpc::Type::CreateDeleteVolume,
            rpc::Type::PublishUnpublishVolume,
            rpc::Type::ExpandVolume,
        ];
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
        if let Some(disk) = volume.attached {
            self.inner
                .host
                .hot_grow(disk.handle, size)
                .map_err(hotplug_status)?;
        }
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
