//! SMB volumes as the SMB drivers serve them, over an in-process node
//! (`MockHost`, the reference server's default node: the share
//! `\\fileserver\share` for `smbuser`): a directory below the share that
//! does not exist, and ephemeral inline volumes.

use std::collections::HashMap;

use csi_node_server::csi::v1::node_server::Node as _;
use csi_node_server::csi::v1::volume_capability::access_mode::Mode;
use csi_node_server::csi::v1::volume_capability::{AccessMode, AccessType, MountVolume};
use csi_node_server::csi::v1::*;
use csi_node_server::{Driver, Plugin, VolumeRequest, VolumeSource, async_trait};
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::MockNode;
use csi_proxy_client::node::{DiskSelector, MountState, Node};
use tonic::{Code, Request, Status};

mod support;
use support::*;

/// A share by `volume_context["source"]`, a disk by `volume_context["lun"]`; the directory below it created
/// when the context says `createFolderIfNotExist` (azurefile's key).
struct Smb;

#[async_trait]
impl Driver for Smb {
    fn name(&self) -> &str {
        "smb.test"
    }
    fn version(&self) -> &str {
        "0.0.1"
    }
    fn node_id(&self) -> &str {
        "node-1"
    }
    async fn volume(&self, r: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
        if let Some(lun) = r.volume_context.get("lun") {
            let lun = lun
                .parse()
                .map_err(|_| Status::invalid_argument("bad lun"))?;
            return Ok(VolumeSource::Disk(DiskSelector::Lun(lun)));
        }
        match r.volume_context.get("source") {
            Some(source) => r.smb(source.as_str()),
            None => Err(Status::invalid_argument("no source")),
        }
    }
    fn create_missing_smb_dir(&self, r: &VolumeRequest<'_>) -> bool {
        r.volume_context
            .get("createFolderIfNotExist")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }
}

fn capability() -> Option<VolumeCapability> {
    Some(VolumeCapability {
        access_type: Some(AccessType::Mount(MountVolume::default())),
        access_mode: Some(AccessMode {
            mode: Mode::MultiNodeMultiWriter.into(),
        }),
    })
}

fn stage_request(id: &str, source: &str) -> NodeStageVolumeRequest {
    NodeStageVolumeRequest {
        volume_id: id.into(),
        staging_target_path: staging(id),
        volume_capability: capability(),
        secrets: credentials(),
        volume_context: HashMap::from([("source".into(), source.into())]),
        ..Default::default()
    }
}

fn share_dir(mock: &MockHost) -> std::path::PathBuf {
    let host = mock.host().lock();
    host.smb
        .share_dir("fileserver", "share")
        .unwrap()
        .to_path_buf()
}

/// A directory below the share that does not exist fails the stage, naming
/// it, with nothing left behind (it used to stage, and the publish then
/// failed with FAILED_PRECONDITION "not staged").
#[tokio::test]
async fn a_missing_share_directory_is_not_found_at_stage() {
    let (mock, node, plugin) = setup(Smb);
    let request = stage_request("pv", r"\\fileserver\share\pvc-1234");
    let e = plugin
        .node_stage_volume(Request::new(request))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    assert!(
        e.message().contains(r"\\fileserver\share\pvc-1234"),
        "{e:?}"
    );
    assert_eq!(
        node.mount_state(&staging("pv")).await.unwrap(),
        MountState::Missing
    );
    assert!(
        mock.host().lock().smb.mappings().is_empty(),
        "no staged volume uses the mapping"
    );
}

/// With the driver's say-so the directory (and its parents) is created at
/// stage, and the volume is published and written through.
#[tokio::test]
async fn a_missing_share_directory_is_created_when_the_driver_asks() {
    let (mock, node, plugin) = setup(Smb);
    let mut request = stage_request("pv", r"\\fileserver\share\team\pvc-1234");
    request
        .volume_context
        .insert("createFolderIfNotExist".into(), "true".into());
    for _ in 0..2 {
        plugin
            .node_stage_volume(Request::new(request.clone()))
            .await
            .unwrap();
    }
    assert!(share_dir(&mock).join("team").join("pvc-1234").is_dir());
    assert_eq!(
        node.mount_state(&staging("pv")).await.unwrap(),
        MountState::Linked
    );
    plugin
        .node_publish_volume(Request::new(publish(&request)))
        .await
        .unwrap();
}

fn ephemeral_publish(id: &str, source: &str) -> NodePublishVolumeRequest {
    NodePublishVolumeRequest {
        volume_id: id.into(),
        target_path: target(id),
        volume_capability: capability(),
        secrets: credentials(),
        volume_context: HashMap::from([
            ("source".into(), source.into()),
            ("csi.storage.k8s.io/ephemeral".into(), "True".into()),
            ("csi.storage.k8s.io/pod.namespace".into(), "default".into()),
        ]),
        ..Default::default()
    }
}

/// An ephemeral inline volume (no staging path) is staged at its target on
/// NodePublish and unstaged on NodeUnpublish, its share's mapping counted
/// with the staged volumes' (it used to be INVALID_ARGUMENT "staging target
/// path missing").
#[tokio::test]
async fn an_ephemeral_inline_volume_is_staged_at_its_target_and_counted() {
    let (mock, node, plugin) = setup(Smb);
    std::fs::write(share_dir(&mock).join("hello.txt"), "hi").unwrap();
    let inline = ephemeral_publish("csi-inline-1", r"\\fileserver\share");
    for _ in 0..2 {
        plugin
            .node_publish_volume(Request::new(inline.clone()))
            .await
            .unwrap();
    }
    assert_eq!(
        node.mount_state(&target("csi-inline-1")).await.unwrap(),
        MountState::Linked
    );
    assert_eq!(mock.host().lock().smb.mappings().len(), 1);

    // A staged volume of the same share shares the mapping.
    let staged = stage_request("pv", r"\\fileserver\share");
    plugin
        .node_stage_volume(Request::new(staged.clone()))
        .await
        .unwrap();
    plugin
        .node_publish_volume(Request::new(publish(&staged)))
        .await
        .unwrap();

    for _ in 0..2 {
        plugin
            .node_unpublish_volume(Request::new(unpublish("csi-inline-1")))
            .await
            .unwrap();
    }
    assert_eq!(
        node.mount_state(&target("csi-inline-1")).await.unwrap(),
        MountState::Missing
    );
    assert!(
        mock.calls_of("RemoveSmbGlobalMapping").is_empty(),
        "the staged volume still uses the mapping"
    );
    plugin
        .node_unpublish_volume(Request::new(unpublish("pv")))
        .await
        .unwrap();
    plugin
        .node_unstage_volume(Request::new(NodeUnstageVolumeRequest {
            volume_id: "pv".into(),
            staging_target_path: staging("pv"),
        }))
        .await
        .unwrap();
    assert_eq!(mock.calls_of("RemoveSmbGlobalMapping").len(), 1);
    assert!(mock.host().lock().smb.mappings().is_empty());
}

/// The last reference of a share held by an ephemeral volume goes with
/// its unpublish, and the mapping with it.
#[tokio::test]
async fn the_last_ephemeral_volume_of_a_share_takes_the_mapping_with_it() {
    let (mock, _node, plugin) = setup(Smb);
    plugin
        .node_publish_volume(Request::new(ephemeral_publish(
            "csi-inline-2",
            r"\\fileserver\share",
        )))
        .await
        .unwrap();
    plugin
        .node_unpublish_volume(Request::new(unpublish("csi-inline-2")))
        .await
        .unwrap();
    assert_eq!(mock.calls_of("RemoveSmbGlobalMapping").len(), 1);
    assert!(mock.host().lock().smb.mappings().is_empty());
}

/// A disk cannot be an ephemeral inline volume: it is staged first.
#[tokio::test]
async fn an_ephemeral_volume_that_is_not_a_share_is_refused() {
    let (_mock, _node, plugin) = setup(Smb);
    let mut inline = ephemeral_publish("csi-inline-3", r"\\fileserver\share");
    inline.volume_context.remove("source");
    inline.volume_context.insert("lun".into(), "1".into());
    inline.volume_capability = Some(VolumeCapability {
        access_type: Some(AccessType::Mount(MountVolume::default())),
        access_mode: Some(AccessMode {
            mode: Mode::SingleNodeWriter.into(),
        }),
    });
    let e = plugin
        .node_publish_volume(Request::new(inline))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("must be an SMB share"), "{e:?}");
}

/// The plugin in HostProcess mode over the fake Windows boundary on the
/// same simulated host.
fn setup_host_process() -> (MockHost, Plugin) {
    use csi_proxy_client::host_process::FakeWindows;
    use csi_proxy_client::node::NodeOptions;
    let mock = MockHost::new();
    let fake = std::sync::Arc::new(FakeWindows::new(mock.host().clone()));
    let node = Node::host_process_with(fake, NodeOptions::default());
    (mock, Plugin::new(node, Smb))
}

async fn stats_of(plugin: &Plugin, id: &str, path: String) -> NodeGetVolumeStatsResponse {
    plugin
        .node_get_volume_stats(Request::new(NodeGetVolumeStatsRequest {
            volume_id: id.into(),
            volume_path: path,
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
}

/// In HostProcess mode an SMB volume's stats are its share's capacity and
/// free space (they used to be empty), at the staging path and at the
/// target; a mapping left Disconnected by a restart is abnormal, named,
/// until the volume is staged again (it used to be "mounted and readable").
#[tokio::test]
async fn host_process_stats_of_a_share_are_its_space_and_its_mapping_status() {
    use csi_proxy_client::host::smb::{MappingStatus, ShareSpace};
    let (mock, plugin) = setup_host_process();
    let space = ShareSpace {
        capacity: 100 * GIB,
        free: 40 * GIB,
    };
    mock.host()
        .lock()
        .smb
        .set_share_space("fileserver", "share", space)
        .unwrap();
    let request = stage_request("pv", r"\\fileserver\share");
    plugin
        .node_stage_volume(Request::new(request.clone()))
        .await
        .unwrap();
    plugin
        .node_publish_volume(Request::new(publish(&request)))
        .await
        .unwrap();
    for path in [staging("pv"), target("pv")] {
        let stats = stats_of(&plugin, "pv", path).await;
        let usage = &stats.usage[0];
        assert_eq!(
            (usage.total, usage.available, usage.used),
            ((100 * GIB) as i64, (40 * GIB) as i64, (60 * GIB) as i64)
        );
        assert!(!stats.volume_condition.unwrap().abnormal);
    }

    mock.host().lock().smb.reboot();
    let stats = stats_of(&plugin, "pv", target("pv")).await;
    let condition = stats.volume_condition.unwrap();
    assert!(condition.abnormal, "{condition:?}");
    assert!(condition.message.contains("Disconnected"), "{condition:?}");
    assert!(
        condition.message.contains(r"\\fileserver\share"),
        "{condition:?}"
    );

    // Staged again (kubelet retries NodeStageVolume): the mapping serves
    // the published volume and cannot be told from an outage, so it is
    // kept and the stage is UNAVAILABLE (issue 42, finding 12; docs/safety.md
    // "SMB mappings"). Once Windows reconnects it, healthy again.
    let e = plugin
        .node_stage_volume(Request::new(request.clone()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    mock.host()
        .lock()
        .smb
        .set_mapping_status(r"\\fileserver\share", MappingStatus::Ok)
        .unwrap();
    plugin
        .node_stage_volume(Request::new(request))
        .await
        .unwrap();
    let stats = stats_of(&plugin, "pv", target("pv")).await;
    assert!(!stats.volume_condition.unwrap().abnormal);
    assert_eq!(stats.usage[0].total, (100 * GIB) as i64);
}

/// Through the proxy the mapping's status cannot be read, and the plugin
/// reads the share's space itself on Windows only: the condition says so
/// rather than calling the share healthy.
#[tokio::test]
async fn proxy_mode_stats_of_a_share_say_what_cannot_be_read() {
    let (_mock, _node, plugin) = setup(Smb);
    let request = stage_request("pv", r"\\fileserver\share");
    plugin
        .node_stage_volume(Request::new(request))
        .await
        .unwrap();
    let stats = stats_of(&plugin, "pv", staging("pv")).await;
    let condition = stats.volume_condition.unwrap();
    assert!(!condition.abnormal);
    assert!(
        condition
            .message
            .contains("cannot be read through the proxy"),
        "{condition:?}"
    );
    // A share has no volume to read usage from: that is no failure for
    // an operator's dashboard (every stats call of a share counted one).
    let metrics = plugin.metrics().encode();
    assert!(
        !metrics.contains(r#"operation="usage""#),
        "a share's stats counted as a usage operation:\n{metrics}"
    );
    assert!(
        metrics.contains(r#"csi_node_operations_total{operation="volume_stats",result="ok"} 1"#),
        "{metrics}"
    );
}

/// The node operations the plugin has recorded, all kinds together.
fn node_operations(plugin: &Plugin) -> u64 {
    plugin
        .metrics()
        .encode()
        .lines()
        .filter(|l| l.starts_with("csi_node_operations_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// A share and a disk (LUN 1) staged through `plugin`, as "pv" and "disk".
async fn stage_a_share_and_a_disk(plugin: &Plugin) {
    let share = stage_request("pv", r"\\fileserver\share");
    let mut disk = stage_request("disk", "");
    disk.volume_context = HashMap::from([("lun".into(), "1".into())]);
    disk.volume_capability = Some(VolumeCapability {
        access_type: Some(AccessType::Mount(MountVolume::default())),
        access_mode: Some(AccessMode {
            mode: Mode::SingleNodeWriter.into(),
        }),
    });
    for request in [share, disk] {
        plugin
            .node_stage_volume(Request::new(request))
            .await
            .unwrap();
    }
}

/// NodeGetVolumeStats is one node call, whatever backs the path (issue
/// 43: it was up to three, `usage`, `mount_state` and `smb_share_stats`,
/// the plugin choosing between them): the plugin records one node
/// operation, and asks the proxy exactly what one `Node::volume_stats`
/// asks and no more, for a staged disk (the volume behind the path, its
/// stats) and a staged share (no volume behind its link: the path is
/// there and a link), both answered as the node answers them.
#[tokio::test]
async fn stats_are_one_node_call_for_a_disk_and_a_share() {
    let (mock, node, plugin) = setup(Smb);
    stage_a_share_and_a_disk(&plugin).await;
    let expected: [(&str, &[&str]); 2] = [
        ("disk", &["GetVolumeIDFromTargetPath", "GetVolumeStats"]),
        (
            "pv",
            &["GetVolumeIDFromTargetPath", "PathExists", "IsSymlink"],
        ),
    ];
    let names = |mock: &MockHost| -> Vec<&'static str> {
        mock.calls().iter().map(|c| c.rpc.name).collect()
    };
    for (id, calls) in expected {
        let path = staging(id);
        let operations = node_operations(&plugin);
        mock.clear_calls();
        let reply = stats_of(&plugin, id, path.clone()).await;
        let by_plugin = names(&mock);
        assert_eq!(node_operations(&plugin), operations + 1, "{id}");
        mock.clear_calls();
        let direct = node.volume_stats(&path).await.unwrap();
        assert_eq!(
            by_plugin,
            names(&mock),
            "{id}: the plugin's calls and the node's"
        );
        assert_eq!(by_plugin, calls, "{id}");
        eprintln!("{id}: {} host calls {by_plugin:?}", by_plugin.len());
        let condition = reply.volume_condition.unwrap();
        assert_eq!(condition.abnormal, direct.condition.abnormal, "{id}");
        assert_eq!(condition.message, direct.condition.message, "{id}");
        assert_eq!(
            reply.usage.first().map(|u| u.total as u64),
            direct.usage.map(|u| u.total_bytes),
            "{id}"
        );
    }
}

/// In HostProcess mode too the plugin's stats are one node operation for
/// a disk and a share, with the share's figures and condition.
#[tokio::test]
async fn host_process_stats_are_one_node_call_for_a_disk_and_a_share() {
    let (_mock, plugin) = setup_host_process();
    stage_a_share_and_a_disk(&plugin).await;
    for id in ["disk", "pv"] {
        let operations = node_operations(&plugin);
        let reply = stats_of(&plugin, id, staging(id)).await;
        assert_eq!(node_operations(&plugin), operations + 1, "{id}");
        assert_eq!(reply.usage.len(), 1, "{id}: {reply:?}");
        assert!(reply.usage[0].total > 0, "{id}: {reply:?}");
        assert!(!reply.volume_condition.unwrap().abnormal, "{id}");
    }
}

/// Proxy mode with a local root (the simulated `C:` volume's directory,
/// standing for the node's `C:\`): a staged share's and a staged disk's
/// NodeGetVolumeStats are read by the plugin itself through the staged
/// path (issue 35), at no host call, and say what the node layer's own
/// read says. Where the OS follows the simulator's links: Unix, and a
/// Windows build under Wine (`scripts/test-windows.sh`).
#[tokio::test]
async fn proxy_mode_stats_under_a_local_root_are_read_by_the_plugin() {
    use csi_proxy_client::node::NodeOptions;
    let mock = MockHost::new();
    if !mock.host().let_the_os_follow_links() {
        eprintln!("a Windows host that is not Wine: the simulator's links are files; not checked");
        return;
    }
    let root = mock.host().host_path(r"C:\").unwrap();
    let node = MockNode::new(&mock)
        .options(NodeOptions::default().local_root(&root))
        .build()
        .unwrap();
    let plugin = Plugin::new(node.clone(), Smb);
    let share = stage_request("pv", r"\\fileserver\share");
    let mut disk = stage_request("disk", "");
    disk.volume_context = HashMap::from([("lun".into(), "1".into())]);
    disk.volume_capability = Some(VolumeCapability {
        access_type: Some(AccessType::Mount(MountVolume::default())),
        access_mode: Some(AccessMode {
            mode: Mode::SingleNodeWriter.into(),
        }),
    });
    for request in [share, disk] {
        plugin
            .node_stage_volume(Request::new(request))
            .await
            .unwrap();
    }
    std::fs::write(share_dir(&mock).join("on-the-share"), b"share data").unwrap();
    for id in ["pv", "disk"] {
        let before = mock.calls().len();
        let stats = stats_of(&plugin, id, staging(id)).await;
        assert_eq!(mock.calls().len(), before, "{:?}", &mock.calls()[before..]);
        let usage = &stats.usage[0];
        assert!(
            usage.total > 0 && usage.available <= usage.total,
            "{id}: {usage:?}"
        );
        let own = node.usage(&staging(id)).await.unwrap();
        assert_eq!(usage.total, own.total_bytes as i64, "{id}");
        // Inodes where the local read counts them: statvfs, never Windows.
        let direct = node.volume_stats(&staging(id)).await.unwrap();
        assert!(cfg!(unix) || direct.inodes.is_none(), "{id}: {direct:?}");
        match direct.inodes {
            Some(inodes) => {
                assert_eq!(stats.usage.len(), 2, "{id}: {stats:?}");
                assert_eq!(stats.usage[1].unit(), volume_usage::Unit::Inodes);
                assert_eq!(stats.usage[1].total, inodes.total as i64, "{id}");
                assert!(inodes.used + inodes.available <= inodes.total, "{id}");
            }
            None => assert_eq!(stats.usage.len(), 1, "{id}: {stats:?}"),
        }
        assert_eq!(mock.calls().len(), before, "{:?}", &mock.calls()[before..]);
    }
    // The share's staged path reaches the share.
    let local = r"var\lib\kubelet\plugins\kubernetes.io\csi\example\pv\globalmount"
        .split('\\')
        .fold(root, |p, c| p.join(c));
    assert_eq!(
        std::fs::read(local.join("on-the-share")).unwrap(),
        b"share data"
    );
}
