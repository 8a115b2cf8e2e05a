//! What operators expect of a node plugin: Probe follows the node's health,
//! NodeGetVolumeStats reports the volume's condition, SMB volumes take any
//! fs_type, NodeGetInfo reports limits and topology, and every call shows in
//! the metrics. Over `MockHost` (blank disks at LUN 1 and 2, the share
//! `\\fileserver\share` for `smbuser`).

use std::collections::HashMap;

use csi_node_server::csi::v1::identity_server::Identity;
use csi_node_server::csi::v1::node_server::Node as _;
use csi_node_server::csi::v1::volume_capability::access_mode::Mode;
use csi_node_server::csi::v1::volume_capability::{AccessMode, AccessType, MountVolume};
use csi_node_server::csi::v1::*;
use csi_node_server::metrics::serve_metrics;
use csi_node_server::{Driver, Plugin, VolumeRequest, VolumeSource};
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::{DiskSelector, Node, NodeOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::{Code, Request, Status};

const STAGING: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\test\pv\globalmount";

/// Disks by `publish_context["lun"]`, shares by `volume_context["source"]`,
/// on a node in zone `z1` that takes 16 volumes.
struct Zoned;

#[csi_node_server::async_trait]
impl Driver for Zoned {
    fn name(&self) -> &str {
        "zoned.test"
    }
    fn version(&self) -> &str {
        "1.2.3"
    }
    fn node_id(&self) -> &str {
        "node-7"
    }
    fn topology(&self) -> HashMap<String, String> {
        HashMap::from([("topology.test/zone".to_string(), "z1".to_string())])
    }
    fn max_volumes_per_node(&self) -> i64 {
        16
    }
    async fn volume(&self, r: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
        if let Some(source) = r.volume_context.get("source") {
            return r.smb(source.as_str());
        }
        let lun = r.publish_context.get("lun").and_then(|l| l.parse().ok());
        lun.map(|l| VolumeSource::Disk(DiskSelector::Lun(l)))
            .ok_or_else(|| Status::invalid_argument("no lun"))
    }
}

fn capability(fs_type: &str, mode: Mode) -> Option<VolumeCapability> {
    Some(VolumeCapability {
        access_type: Some(AccessType::Mount(MountVolume {
            fs_type: fs_type.into(),
            ..Default::default()
        })),
        access_mode: Some(AccessMode { mode: mode.into() }),
    })
}

fn disk_stage() -> NodeStageVolumeRequest {
    NodeStageVolumeRequest {
        volume_id: "pv".into(),
        publish_context: HashMap::from([("lun".to_string(), "1".to_string())]),
        staging_target_path: STAGING.into(),
        volume_capability: capability("ntfs", Mode::SingleNodeWriter),
        ..Default::default()
    }
}

fn stats() -> NodeGetVolumeStatsRequest {
    NodeGetVolumeStatsRequest {
        volume_id: "pv".into(),
        volume_path: STAGING.into(),
        staging_target_path: String::new(),
    }
}

async fn ready(plugin: &Plugin) -> Option<bool> {
    plugin
        .probe(Request::new(ProbeRequest {}))
        .await
        .unwrap()
        .into_inner()
        .ready
}

#[tokio::test]
async fn probe_is_ready_only_while_the_node_answers() {
    let mock = MockHost::new();
    let plugin = Plugin::new(Node::from_mock(&mock), Zoned);
    assert_eq!(ready(&plugin).await, Some(true));
    mock.fail_next("IsSymlink", Code::Unavailable, "the proxy went away");
    assert_eq!(ready(&plugin).await, Some(false));
    assert_eq!(ready(&plugin).await, Some(true), "the node is back");

    // No proxy at all behind the sockets: never ready.
    let empty = tempfile::tempdir().unwrap();
    let node = Node::connect(NodeOptions::default().socket_dir(empty.path()))
        .await
        .unwrap();
    let plugin = Plugin::new(node, Zoned);
    assert_eq!(ready(&plugin).await, Some(false));
}

#[tokio::test]
async fn volume_condition_is_normal_while_readable_and_abnormal_when_not() {
    let mock = MockHost::new();
    let node = Node::from_mock(&mock);
    let plugin = Plugin::new(node.clone(), Zoned);
    plugin
        .node_stage_volume(Request::new(disk_stage()))
        .await
        .unwrap();
    let reply = plugin
        .node_get_volume_stats(Request::new(stats()))
        .await
        .unwrap()
        .into_inner();
    let condition = reply.volume_condition.expect("a condition");
    assert!(!condition.abnormal, "{condition:?}");
    assert_eq!(reply.usage.len(), 1);

    mock.fail_next("GetVolumeStats", Code::Unknown, "The device is not ready.");
    let reply = plugin
        .node_get_volume_stats(Request::new(stats()))
        .await
        .unwrap()
        .into_inner();
    let condition = reply.volume_condition.expect("a condition");
    assert!(condition.abnormal);
    assert!(
        condition.message.contains("device is not ready"),
        "{condition:?}"
    );
    assert!(reply.usage.is_empty());

    // The disk is gone from under the mount.
    let disk = node.find_disk(DiskSelector::Lun(1)).await.unwrap();
    mock.host().detach_disk(disk.number).unwrap();
    let reply = plugin
        .node_get_volume_stats(Request::new(stats()))
        .await
        .unwrap()
        .into_inner();
    let condition = reply.volume_condition.expect("a condition");
    assert!(condition.abnormal, "{condition:?}");
    assert!(
        condition.message.contains("no volume behind"),
        "{condition:?}"
    );

    // Nothing at all at the path is still NOT_FOUND.
    let gone = NodeGetVolumeStatsRequest {
        volume_path: format!(r"{STAGING}-absent"),
        ..stats()
    };
    let status = plugin
        .node_get_volume_stats(Request::new(gone))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
}

#[tokio::test]
async fn smb_volumes_accept_and_ignore_any_fs_type() {
    let mock = MockHost::new();
    let plugin = Plugin::new(Node::from_mock(&mock), Zoned);
    for (id, fs_type) in [("pv-ntfs", "ntfs"), ("pv-ext4", "ext4"), ("pv-none", "")] {
        let stage = NodeStageVolumeRequest {
            volume_id: id.into(),
            staging_target_path: format!(r"C:\var\lib\kubelet\plugins\smb\{id}\globalmount"),
            volume_capability: capability(fs_type, Mode::MultiNodeMultiWriter),
            secrets: HashMap::from([
                ("username".to_string(), "smbuser".to_string()),
                ("password".to_string(), "Sm8-Passw0rd!".to_string()),
            ]),
            volume_context: HashMap::from([(
                "source".to_string(),
                r"\\fileserver\share".to_string(),
            )]),
            ..Default::default()
        };
        plugin
            .node_stage_volume(Request::new(stage))
            .await
            .unwrap_or_else(|e| panic!("fs_type {fs_type:?}: {e:?}"));
    }
    // A disk is formatted NTFS: a type that is not served as NTFS is refused.
    let btrfs = NodeStageVolumeRequest {
        volume_capability: capability("btrfs", Mode::SingleNodeWriter),
        ..disk_stage()
    };
    let status = plugin
        .node_stage_volume(Request::new(btrfs))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
}

#[tokio::test]
async fn node_info_reports_the_drivers_limit_and_topology() {
    let plugin = Plugin::new(Node::from_mock(&MockHost::new()), Zoned);
    let info = plugin
        .node_get_info(Request::new(NodeGetInfoRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.node_id, "node-7");
    assert_eq!(info.max_volumes_per_node, 16);
    let topology = info.accessible_topology.expect("a topology");
    assert_eq!(topology.segments["topology.test/zone"], "z1");
}

#[tokio::test]
async fn metrics_count_and_time_calls_and_node_operations_over_http() {
    let mock = MockHost::new();
    let plugin = Plugin::new(Node::from_mock(&mock), Zoned);
    plugin
        .node_stage_volume(Request::new(disk_stage()))
        .await
        .unwrap();
    plugin
        .node_stage_volume(Request::new(disk_stage()))
        .await
        .unwrap();
    let bad = NodeStageVolumeRequest {
        volume_id: String::new(),
        ..disk_stage()
    };
    plugin
        .node_stage_volume(Request::new(bad))
        .await
        .unwrap_err();
    mock.fail_next("IsSymlink", Code::Unavailable, "gone");
    ready(&plugin).await;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_metrics(
        listener,
        plugin.metrics().clone(),
        async move {
            stopped.await.ok();
        },
    ));
    let get = |path: &'static str| async move {
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    };
    let text = get("/metrics").await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.contains("content-type: application/openmetrics-text"),
        "{text}"
    );
    for line in [
        r#"csi_calls_total{method="NodeStageVolume",code="Ok"} 2"#,
        r#"csi_calls_total{method="NodeStageVolume",code="InvalidArgument"} 1"#,
        r#"csi_calls_total{method="Probe",code="Ok"} 1"#,
        r#"csi_call_duration_seconds_count{method="NodeStageVolume",code="Ok"} 2"#,
        r#"csi_node_operations_total{operation="stage_disk",result="ok"} 2"#,
        r#"csi_node_operations_total{operation="ping",result="Unavailable"} 1"#,
        r#"csi_node_operation_duration_seconds_count{operation="find_disk",result="ok"} 2"#,
    ] {
        assert!(text.contains(line), "no {line} in\n{text}");
    }
    assert!(get("/other").await.starts_with("HTTP/1.1 404"));
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}
