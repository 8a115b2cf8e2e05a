//! What csi-sanity's Node suite asks of a node plugin beyond the handlers'
//! own tests: found by running it (`scripts/csi-sanity.sh`), kept here so
//! they hold without Go.

use csi_node_server::csi::v1::identity_server::Identity;
use csi_node_server::csi::v1::node_server::Node as _;
use csi_node_server::csi::v1::plugin_capability::{Type, service};
use csi_node_server::csi::v1::*;
use csi_node_server::{Driver, Plugin, VolumeRequest, VolumeSource};
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::{DiskSelector, Node};
use tonic::{Code, Request, Status};

/// A disk by `publish_context["lun"]`; `controller` says whether the
/// driver has a Controller service.
struct Disks {
    controller: bool,
}

#[csi_node_server::async_trait]
impl Driver for Disks {
    fn name(&self) -> &str {
        "disks.test"
    }
    fn version(&self) -> &str {
        "0.0.1"
    }
    fn node_id(&self) -> &str {
        "node-1"
    }
    fn controller_service(&self) -> bool {
        self.controller
    }
    async fn volume(&self, r: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
        let lun = r.publish_context.get("lun").and_then(|l| l.parse().ok());
        let lun = lun.ok_or_else(|| Status::invalid_argument("no publish_context lun"))?;
        Ok(VolumeSource::Disk(DiskSelector::Lun(lun)))
    }
}

fn plugin(controller: bool) -> (MockHost, Plugin) {
    let mock = MockHost::new();
    let plugin = Plugin::new(Node::from_mock(&mock), Disks { controller });
    (mock, plugin)
}

async fn has_controller_service(plugin: &Plugin) -> bool {
    let response = plugin
        .get_plugin_capabilities(Request::new(GetPluginCapabilitiesRequest {}))
        .await
        .unwrap()
        .into_inner();
    response.capabilities.iter().any(|c| {
        matches!(&c.r#type, Some(Type::Service(s)) if s.r#type() == service::Type::ControllerService)
    })
}

/// csi-sanity learns whether the driver has a controller from the node
/// endpoint's Identity; without CONTROLLER_SERVICE there it publishes no
/// volume, and every disk spec fails with no `lun` to stage.
#[tokio::test]
async fn a_driver_with_a_controller_reports_the_controller_service() {
    let (_mock, with) = plugin(true);
    assert!(has_controller_service(&with).await);
    let (_mock, without) = plugin(false);
    assert!(!has_controller_service(&without).await);
}

/// A volume path that cannot be a path on the node (csi-sanity sends
/// `some/path`) holds no volume: NOT_FOUND, as a missing one does.
#[tokio::test]
async fn stats_and_expand_of_a_path_that_is_no_node_path_are_not_found() {
    let (_mock, plugin) = plugin(false);
    for path in ["some/path", r"relative\dir"] {
        let stats = plugin
            .node_get_volume_stats(Request::new(NodeGetVolumeStatsRequest {
                volume_id: "vol-1".into(),
                volume_path: path.into(),
                staging_target_path: String::new(),
            }))
            .await
            .unwrap_err();
        assert_eq!(stats.code(), Code::NotFound, "{path}: {stats:?}");
        let expand = plugin
            .node_expand_volume(Request::new(NodeExpandVolumeRequest {
                volume_id: "vol-1".into(),
                volume_path: path.into(),
                ..Default::default()
            }))
            .await
            .unwrap_err();
        assert_eq!(expand.code(), Code::NotFound, "{path}: {expand:?}");
    }
    // a missing field stays INVALID_ARGUMENT
    let missing = plugin
        .node_get_volume_stats(Request::new(NodeGetVolumeStatsRequest {
            volume_id: "vol-1".into(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::InvalidArgument);
}

/// NodeExpandVolume's `required_bytes` is the disk's new size, and a
/// Windows volume is always smaller than its disk (the GPT, the MSR and the
/// 1 MiB alignment keep about 16 MiB): the volume filling the disk meets
/// it. A disk that has not grown enough is still OUT_OF_RANGE.
#[tokio::test]
async fn expand_meets_a_required_size_equal_to_the_disk() {
    const GIB: i64 = 1 << 30;
    let (mock, plugin) = plugin(true);
    let staging = r"C:\var\lib\kubelet\plugins\disks.test\vol-1\globalmount";
    plugin
        .node_stage_volume(Request::new(NodeStageVolumeRequest {
            volume_id: "vol-1".into(),
            publish_context: [("lun".to_string(), "2".to_string())].into(),
            staging_target_path: staging.into(),
            volume_capability: Some(VolumeCapability {
                access_type: Some(volume_capability::AccessType::Mount(Default::default())),
                access_mode: Some(volume_capability::AccessMode {
                    mode: volume_capability::access_mode::Mode::SingleNodeWriter.into(),
                }),
            }),
            ..Default::default()
        }))
        .await
        .unwrap();
    // the default node's disk at LUN 2 has 16 GiB; the cloud grows it to 20
    mock.host().grow_disk(2, 20 * GIB as u64).unwrap();
    let expand = |required: i64| {
        plugin.node_expand_volume(Request::new(NodeExpandVolumeRequest {
            volume_id: "vol-1".into(),
            volume_path: staging.into(),
            capacity_range: Some(CapacityRange {
                required_bytes: required,
                limit_bytes: 0,
            }),
            ..Default::default()
        }))
    };
    let grown = expand(20 * GIB).await.unwrap().into_inner().capacity_bytes;
    assert_eq!(
        grown,
        20 * GIB - (16 << 20) - 16896,
        "the partition fills the disk"
    );
    let short = expand(21 * GIB).await.unwrap_err();
    assert_eq!(short.code(), Code::OutOfRange, "{short:?}");
}
