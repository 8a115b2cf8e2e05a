//! What the plugin's test suites share: kubelet's paths for a volume id,
//! the default share's account, a plugin over an in-process node
//! (`MockHost`, the reference server's default node: blank disks at LUN 1
//! and 2, the share `\\fileserver\share` for `smbuser`), and the CSI
//! requests built from a stage request as kubelet builds them.
// Each suite is its own crate and uses a part of this.
#![allow(dead_code)]

use std::collections::HashMap;

use csi_node_server::csi::v1::*;
use csi_node_server::{Driver, Plugin};
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::Node;

pub const KUBELET: &str = r"C:\var\lib\kubelet";
/// The password of `smbuser` on the default share.
pub const PASSWORD: &str = "Sm8-Passw0rd!";
pub const GIB: u64 = 1 << 30;

/// A plugin with `driver` over a fresh in-process node.
pub fn setup(driver: impl Driver) -> (MockHost, Node, Plugin) {
    let mock = MockHost::new();
    let node = Node::from_mock(&mock);
    let plugin = Plugin::new(node.clone(), driver);
    (mock, node, plugin)
}

/// Kubelet's staging path of volume `id`.
pub fn staging(id: &str) -> String {
    format!(r"{KUBELET}\plugins\kubernetes.io\csi\example\{id}\globalmount")
}

/// Kubelet's target path of volume `id` in its pod.
pub fn target(id: &str) -> String {
    format!(r"{KUBELET}\pods\uid-{id}\volumes\kubernetes.io~csi\{id}\mount")
}

/// A map of string pairs, as the requests' contexts and secrets are.
pub fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `smbuser`'s secrets, as csi-driver-smb's keys name them.
pub fn credentials() -> HashMap<String, String> {
    map(&[("username", "smbuser"), ("password", PASSWORD)])
}

/// The publish of a staged volume at its target, with the stage's contexts.
pub fn publish(stage: &NodeStageVolumeRequest) -> NodePublishVolumeRequest {
    NodePublishVolumeRequest {
        volume_id: stage.volume_id.clone(),
        publish_context: stage.publish_context.clone(),
        staging_target_path: stage.staging_target_path.clone(),
        target_path: target(&stage.volume_id),
        volume_capability: stage.volume_capability.clone(),
        volume_context: stage.volume_context.clone(),
        ..Default::default()
    }
}

pub fn unpublish(id: &str) -> NodeUnpublishVolumeRequest {
    NodeUnpublishVolumeRequest {
        volume_id: id.into(),
        target_path: target(id),
    }
}

pub fn unstage(id: &str) -> NodeUnstageVolumeRequest {
    NodeUnstageVolumeRequest {
        volume_id: id.into(),
        staging_target_path: staging(id),
    }
}
