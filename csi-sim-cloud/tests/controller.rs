//! The simulated cloud's controller over a simulated node, RPC by RPC: what
//! it answers, the CSI error codes, and what it leaves on the node.

mod support;

use csi::controller_server::Controller;
use csi::identity_server::Identity;
use csi::volume_capability::{AccessMode, access_mode::Mode};
use csi_node_server::csi::v1 as csi;
use csi_sim_cloud::{GIB, Profile};
use support::{Fixture, NODE, capability, fixture};
use tonic::{Code, Request};

fn range(required: u64, limit: u64) -> Option<csi::CapacityRange> {
    Some(csi::CapacityRange {
        required_bytes: required as i64,
        limit_bytes: limit as i64,
    })
}

fn code<T: std::fmt::Debug>(result: Result<T, tonic::Status>) -> Code {
    result.unwrap_err().code()
}

impl Fixture {
    async fn create(
        &self,
        name: &str,
        capacity: Option<csi::CapacityRange>,
    ) -> Result<csi::Volume, tonic::Status> {
        let request = csi::CreateVolumeRequest {
            name: name.into(),
            capacity_range: capacity,
            volume_capabilities: vec![capability(Mode::SingleNodeWriter)],
            ..Default::default()
        };
        let response = self.cloud.create_volume(Request::new(request)).await?;
        Ok(response.into_inner().volume.unwrap())
    }

    async fn publish(&self, id: &str, node: &str) -> Result<String, tonic::Status> {
        let request = csi::ControllerPublishVolumeRequest {
            volume_id: id.into(),
            node_id: node.into(),
            volume_capability: Some(capability(Mode::SingleNodeWriter)),
            ..Default::default()
        };
        let response = self
            .cloud
            .controller_publish_volume(Request::new(request))
            .await?;
        let context = response.into_inner().publish_context;
        assert_eq!(context.len(), 1, "{context:?}");
        Ok(context["lun"].clone())
    }

    async fn unpublish(&self, id: &str) -> Result<(), tonic::Status> {
        let request = csi::ControllerUnpublishVolumeRequest {
            volume_id: id.into(),
            node_id: NODE.into(),
            ..Default::default()
        };
        self.cloud
            .controller_unpublish_volume(Request::new(request))
            .await
            .map(|_| ())
    }

    async fn expand(
        &self,
        id: &str,
        capacity: Option<csi::CapacityRange>,
    ) -> Result<(i64, bool), tonic::Status> {
        let request = csi::ControllerExpandVolumeRequest {
            volume_id: id.into(),
            capacity_range: capacity,
            ..Default::default()
        };
        let r = self
            .cloud
            .controller_expand_volume(Request::new(request))
            .await?
            .into_inner();
        Ok((r.capacity_bytes, r.node_expansion_required))
    }

    async fn delete(&self, id: &str) -> Result<(), tonic::Status> {
        let request = csi::DeleteVolumeRequest {
            volume_id: id.into(),
            ..Default::default()
        };
        self.cloud
            .delete_volume(Request::new(request))
            .await
            .map(|_| ())
    }

    /// The node's disk at `lun` as storage management lists it: (number, size).
    fn listed_at(&self, lun: &str) -> Option<(u32, i64)> {
        let locations = self.host.run(|n| n.list_disk_locations()).unwrap();
        let (&number, _) = locations.iter().find(|(_, l)| l.lun_id == lun)?;
        Some((number, self.host.run(|n| n.get_disk_stats(number)).unwrap()))
    }
}

#[tokio::test]
async fn identity_and_capabilities() {
    let f = fixture(Profile::Generic);
    let info = f
        .cloud
        .get_plugin_info(Request::new(csi::GetPluginInfoRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.name, csi_sim_cloud::DRIVER_NAME);
    assert!(!info.vendor_version.is_empty());
    let plugin = f
        .cloud
        .get_plugin_capabilities(Request::new(csi::GetPluginCapabilitiesRequest {}))
        .await
        .unwrap()
        .into_inner();
    use csi::plugin_capability::{Type, service, volume_expansion};
    let types: Vec<_> = plugin
        .capabilities
        .into_iter()
        .filter_map(|c| c.r#type)
        .collect();
    assert!(
        types.iter().any(
            |t| matches!(t, Type::Service(s) if s.r#type() == service::Type::ControllerService)
        )
    );
    assert!(types.iter().any(
        |t| matches!(t, Type::VolumeExpansion(e) if e.r#type() == volume_expansion::Type::Online)
    ));
    let caps = f
        .cloud
        .controller_get_capabilities(Request::new(csi::ControllerGetCapabilitiesRequest {}))
        .await
        .unwrap()
        .into_inner();
    use csi::controller_service_capability::{Type as C, rpc::Type as R};
    let mut rpcs: Vec<R> = caps
        .capabilities
        .into_iter()
        .filter_map(|c| match c.r#type {
            Some(C::Rpc(rpc)) => Some(rpc.r#type()),
            _ => None,
        })
        .collect();
    rpcs.sort();
    assert_eq!(
        rpcs,
        [
            R::CreateDeleteVolume,
            R::PublishUnpublishVolume,
            R::ListVolumes,
            R::GetCapacity,
            R::PublishReadonly,
            R::ExpandVolume,
            R::ListVolumesPublishedNodes,
        ]
    );
    let probe = f
        .cloud
        .probe(Request::new(csi::ProbeRequest {}))
        .await
        .unwrap();
    assert_eq!(probe.into_inner().ready, Some(true));
}

#[tokio::test]
async fn create_rounds_to_whole_gib_within_the_range() {
    let f = fixture(Profile::Generic);
    assert_eq!(
        f.create("a", None).await.unwrap().capacity_bytes,
        GIB as i64
    );
    assert_eq!(
        f.create("b", range(GIB + GIB / 2, 0))
            .await
            .unwrap()
            .capacity_bytes,
        2 * GIB as i64
    );
    assert_eq!(
        f.create("c", range(1, GIB + GIB / 2))
            .await
            .unwrap()
            .capacity_bytes,
        GIB as i64
    );
    assert_eq!(
        f.create("d", range(0, 5 * GIB))
            .await
            .unwrap()
            .capacity_bytes,
        GIB as i64
    );
    assert_eq!(
        f.create("e", range(10 * GIB, 10 * GIB))
            .await
            .unwrap()
            .capacity_bytes,
        10 * GIB as i64
    );
    // no whole GiB between required and limit, a limit under 1 GiB, too big
    assert_eq!(
        code(f.create("f", range(GIB + 1, GIB + GIB / 2)).await),
        Code::OutOfRange
    );
    assert_eq!(
        code(f.create("g", range(0, GIB / 2)).await),
        Code::OutOfRange
    );
    assert_eq!(
        code(f.create("h", range(64 << 40, 0)).await),
        Code::OutOfRange
    );
    assert_eq!(
        code(f.create("i", range(2 * GIB, GIB)).await),
        Code::OutOfRange
    );
    let negative = Some(csi::CapacityRange {
        required_bytes: -1,
        limit_bytes: 0,
    });
    assert_eq!(code(f.create("j", negative).await), Code::InvalidArgument);
    // creating records a cloud disk: nothing on the node until it is attached
    assert_eq!(f.host.snapshot().disks.len(), 3);
}

#[tokio::test]
async fn the_same_name_gives_the_same_volume_unless_the_size_differs() {
    let f = fixture(Profile::Generic);
    let first = f.create("pvc-1", range(10 * GIB, 0)).await.unwrap();
    let again = f.create("pvc-1", range(10 * GIB, 0)).await.unwrap();
    assert_eq!(again, first);
    let within = f.create("pvc-1", range(5 * GIB, 20 * GIB)).await.unwrap();
    assert_eq!(within.volume_id, first.volume_id);
    assert_eq!(
        code(f.create("pvc-1", range(11 * GIB, 0)).await),
        Code::AlreadyExists
    );
    assert_eq!(
        code(f.create("pvc-1", range(GIB, 2 * GIB)).await),
        Code::AlreadyExists
    );
    let other = f.create("pvc-2", range(10 * GIB, 0)).await.unwrap();
    assert_ne!(other.volume_id, first.volume_id);
}

#[tokio::test]
async fn create_checks_its_arguments() {
    let f = fixture(Profile::Generic);
    assert_eq!(code(f.create("", None).await), Code::InvalidArgument);
    let mut request = csi::CreateVolumeRequest {
        name: "x".into(),
        ..Default::default()
    };
    assert_eq!(
        code(f.cloud.create_volume(Request::new(request.clone())).await),
        Code::InvalidArgument
    );
    request.volume_capabilities = vec![capability(Mode::MultiNodeMultiWriter)];
    assert_eq!(
        code(f.cloud.create_volume(Request::new(request.clone())).await),
        Code::InvalidArgument
    );
    request.volume_capabilities = vec![csi::VolumeCapability {
        access_mode: Some(AccessMode {
            mode: Mode::SingleNodeWriter.into(),
        }),
        access_type: None,
    }];
    assert_eq!(
        code(f.cloud.create_volume(Request::new(request.clone())).await),
        Code::InvalidArgument
    );
    request.volume_capabilities = vec![capability(Mode::SingleNodeWriter)];
    request.volume_content_source = Some(csi::VolumeContentSource::default());
    assert_eq!(
        code(f.cloud.create_volume(Request::new(request)).await),
        Code::InvalidArgument
    );
}

#[tokio::test]
async fn publish_attaches_at_a_free_lun_that_shows_after_a_rescan() {
    let f = fixture(Profile::Generic);
    let a = f.create("a", range(10 * GIB, 0)).await.unwrap().volume_id;
    let b = f.create("b", range(GIB, 0)).await.unwrap().volume_id;
    assert_eq!(f.publish(&a, NODE).await.unwrap(), "3");
    assert_eq!(f.listed_at("3"), None, "listed before a rescan");
    f.host.run(|n| n.rescan()).unwrap();
    let (number, size) = f.listed_at("3").unwrap();
    assert_eq!(size, 10 * GIB as i64);
    // publishing again changes nothing
    assert_eq!(f.publish(&a, NODE).await.unwrap(), "3");
    assert_eq!(f.host.snapshot().disks.len(), 4);
    assert_eq!(f.publish(&b, NODE).await.unwrap(), "4");
    f.host.run(|n| n.rescan()).unwrap();
    assert_eq!(f.listed_at("4").map(|(_, s)| s), Some(GIB as i64));
    assert_eq!(f.listed_at("3").unwrap().0, number);
}

#[tokio::test]
async fn publish_and_unpublish_error_codes() {
    let f = fixture(Profile::Generic);
    let id = f.create("a", None).await.unwrap().volume_id;
    assert_eq!(code(f.publish("sim-disk-99", NODE).await), Code::NotFound);
    assert_eq!(code(f.publish(&id, "other-node").await), Code::NotFound);
    assert_eq!(code(f.publish("", NODE).await), Code::InvalidArgument);
    assert_eq!(code(f.publish(&id, "").await), Code::InvalidArgument);
    let no_capability = csi::ControllerPublishVolumeRequest {
        volume_id: id.clone(),
        node_id: NODE.into(),
        ..Default::default()
    };
    assert_eq!(
        code(
            f.cloud
                .controller_publish_volume(Request::new(no_capability))
                .await
        ),
        Code::InvalidArgument
    );
    assert_eq!(f.host.snapshot().disks.len(), 3, "nothing attached");
    // an unknown volume is attached nowhere: unpublished already (CSI spec)
    f.unpublish("sim-disk-99").await.unwrap();
    assert_eq!(code(f.unpublish("").await), Code::InvalidArgument);
    // unpublishing a volume that is not attached is done already
    f.unpublish(&id).await.unwrap();
}

#[tokio::test]
async fn unpublish_detaches_but_not_while_the_node_has_the_volume_mounted() {
    let f = fixture(Profile::Generic);
    let id = f.create("a", None).await.unwrap().volume_id;
    f.publish(&id, NODE).await.unwrap();
    f.host.run(|n| n.rescan()).unwrap();
    let (number, _) = f.listed_at("3").unwrap();
    f.host.run(|n| n.partition_disk(number)).unwrap();
    let volume = f
        .host
        .run(|n| n.list_volumes_on_disk(number, 0))
        .unwrap()
        .remove(0);
    let staging = r"C:\var\lib\kubelet\plugins\sim\globalmount";
    f.host.run(|n| n.mkdir(staging)).unwrap();
    f.host.run(|n| n.mount_volume(&volume, staging)).unwrap();
    let refused = f.unpublish(&id).await.unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    assert!(refused.message().contains(&volume), "{refused:?}");
    assert_eq!(
        code(f.delete(&id).await),
        Code::FailedPrecondition,
        "attached"
    );
    assert!(f.listed_at("3").is_some());
    f.host.run(|n| n.unmount_volume(&volume, staging)).unwrap();
    f.unpublish(&id).await.unwrap();
    assert_eq!(f.listed_at("3"), None);
    assert!(f.host.snapshot().disk(number).is_none());
    f.unpublish(&id).await.unwrap();
    // the LUN is free for the next attach, and the volume can come back
    assert_eq!(f.publish(&id, NODE).await.unwrap(), "3");
    f.unpublish(&id).await.unwrap();
    f.delete(&id).await.unwrap();
    f.delete(&id).await.unwrap();
    assert_eq!(code(f.publish(&id, NODE).await), Code::NotFound);
    if let Err(v) = f.host.check_invariants() {
        panic!("{v:#?}");
    }
}

#[tokio::test]
async fn expand_grows_the_attached_disk_and_never_shrinks() {
    let f = fixture(Profile::Generic);
    let id = f.create("a", range(10 * GIB, 0)).await.unwrap().volume_id;
    f.publish(&id, NODE).await.unwrap();
    f.host.run(|n| n.rescan()).unwrap();
    assert_eq!(
        f.expand(&id, range(11 * GIB, 0)).await.unwrap(),
        (11 * GIB as i64, true)
    );
    assert_eq!(f.listed_at("3").unwrap().1, 11 * GIB as i64);
    // already big enough: unchanged
    assert_eq!(
        f.expand(&id, range(5 * GIB, 0)).await.unwrap(),
        (11 * GIB as i64, false)
    );
    assert_eq!(
        code(f.expand(&id, range(0, 4 * GIB)).await),
        Code::OutOfRange
    );
    assert_eq!(code(f.expand(&id, None).await), Code::InvalidArgument);
    assert_eq!(
        code(f.expand("", range(GIB, 0)).await),
        Code::InvalidArgument
    );
    assert_eq!(
        code(f.expand("sim-disk-99", range(GIB, 0)).await),
        Code::NotFound
    );
    // a detached volume grows too, and attaches at its new size
    f.unpublish(&id).await.unwrap();
    assert_eq!(
        f.expand(&id, range(12 * GIB + 1, 0)).await.unwrap(),
        (13 * GIB as i64, true)
    );
    f.publish(&id, NODE).await.unwrap();
    f.host.run(|n| n.rescan()).unwrap();
    assert_eq!(f.listed_at("3").unwrap().1, 13 * GIB as i64);
}

#[tokio::test]
async fn validate_confirms_single_node_disks_only() {
    let f = fixture(Profile::Generic);
    let id = f.create("a", None).await.unwrap().volume_id;
    let validate = |id: &str, mode: Mode| csi::ValidateVolumeCapabilitiesRequest {
        volume_id: id.into(),
        volume_capabilities: vec![capability(mode)],
        ..Default::default()
    };
    let ok = f
        .cloud
        .validate_volume_capabilities(Request::new(validate(&id, Mode::SingleNodeWriter)))
        .await
        .unwrap()
        .into_inner();
    assert!(ok.confirmed.is_some());
    let no = f
        .cloud
        .validate_volume_capabilities(Request::new(validate(&id, Mode::MultiNodeReaderOnly)))
        .await
        .unwrap()
        .into_inner();
    assert!(no.confirmed.is_none() && !no.message.is_empty());
    let missing = f
        .cloud
        .validate_volume_capabilities(Request::new(validate(
            "sim-disk-99",
            Mode::SingleNodeWriter,
        )))
        .await;
    assert_eq!(code(missing), Code::NotFound);
}
