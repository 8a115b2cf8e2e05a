//! What a plugin keeps in its node's records: what each stage resolved
//! (the publish, expand and stats of a staged volume answered without
//! asking the driver again, where kubelet sends no stage secrets), and,
//! with default options, all of it in `state` beside the socket, so that a
//! restarted plugin knows what the one before it did.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use csi_node_server::csi::v1::node_server::Node as _;
use csi_node_server::csi::v1::volume_capability::access_mode::Mode;
use csi_node_server::csi::v1::volume_capability::{AccessMode, AccessType, MountVolume};
use csi_node_server::csi::v1::*;
use csi_node_server::{Driver, Plugin, VolumeRequest, VolumeSource, async_trait};
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::{DiskSelector, MockNode, MountState, SmbCredentials};
use tonic::{Code, Request, Status};

mod support;
use support::*;

/// A share by `volume_context["source"]` with its account from the stage
/// secrets, as csi-driver-smb resolves it, refused when the request has
/// none; a disk by `volume_context["lun"]`. Counts its answers.
#[derive(Default, Clone)]
struct SecretShares {
    asked: Arc<AtomicUsize>,
    at_publish: bool,
}

impl SecretShares {
    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Driver for SecretShares {
    fn name(&self) -> &str {
        "records.test"
    }
    fn version(&self) -> &str {
        "0.0.1"
    }
    fn node_id(&self) -> &str {
        "node-1"
    }
    async fn volume(&self, r: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if let Some(lun) = r.volume_context.get("lun") {
            return Ok(VolumeSource::Disk(DiskSelector::Lun(lun.parse().unwrap())));
        }
        if r.secrets.is_empty() {
            return Err(Status::invalid_argument(
                "no secrets: the share's account is in the stage secrets",
            ));
        }
        let source = r
            .volume_context
            .get("source")
            .ok_or_else(|| Status::invalid_argument("no source"))?;
        r.smb(source.as_str())
    }
    fn volume_at_publish(&self) -> bool {
        self.at_publish
    }
}

fn capability(mode: Mode) -> Option<VolumeCapability> {
    Some(VolumeCapability {
        access_type: Some(AccessType::Mount(MountVolume::default())),
        access_mode: Some(AccessMode { mode: mode.into() }),
    })
}

fn share_stage(id: &str) -> NodeStageVolumeRequest {
    NodeStageVolumeRequest {
        volume_id: id.into(),
        staging_target_path: staging(id),
        volume_capability: capability(Mode::MultiNodeMultiWriter),
        secrets: credentials(),
        volume_context: HashMap::from([("source".into(), r"\\fileserver\share".into())]),
        ..Default::default()
    }
}

fn disk_stage(id: &str, lun: &str) -> NodeStageVolumeRequest {
    NodeStageVolumeRequest {
        volume_id: id.into(),
        staging_target_path: staging(id),
        volume_capability: capability(Mode::SingleNodeWriter),
        volume_context: HashMap::from([("lun".into(), lun.into())]),
        ..Default::default()
    }
}

fn expand(id: &str) -> NodeExpandVolumeRequest {
    NodeExpandVolumeRequest {
        volume_id: id.into(),
        volume_path: target(id),
        staging_target_path: staging(id),
        capacity_range: Some(CapacityRange {
            required_bytes: 1 << 30,
            limit_bytes: 0,
        }),
        ..Default::default()
    }
}

fn stats(id: &str) -> NodeGetVolumeStatsRequest {
    NodeGetVolumeStatsRequest {
        volume_id: id.into(),
        volume_path: target(id),
        staging_target_path: staging(id),
    }
}

/// An SMB driver that resolves its share from the stage secrets (which
/// kubelet does not send again) is asked once, at the stage: the publish,
/// the expand and the stats of the staged share are answered from what the
/// stage resolved. Before, the publish asked the driver again and failed
/// without secrets (a driver had to fake an answer there).
#[tokio::test]
async fn a_share_resolved_from_stage_secrets_publishes_expands_and_serves_stats() {
    let driver = SecretShares::default();
    let (mock, node, plugin) = setup(driver.clone());
    let stage = share_stage("pv");
    plugin
        .node_stage_volume(Request::new(stage.clone()))
        .await
        .unwrap();
    let publish = publish(&stage);
    assert!(publish.secrets.is_empty(), "kubelet sends no stage secrets");
    plugin
        .node_publish_volume(Request::new(publish))
        .await
        .unwrap();
    assert_eq!(
        node.mount_state(&target("pv")).await.unwrap(),
        MountState::Linked
    );
    mock.clear_calls();
    let grown = plugin
        .node_expand_volume(Request::new(expand("pv")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(grown.capacity_bytes, 0, "a share grows on its server");
    assert!(
        mock.calls().is_empty(),
        "answered from the stage's record: {:?}",
        mock.calls()
    );
    let figures = plugin
        .node_get_volume_stats(Request::new(stats("pv")))
        .await
        .unwrap()
        .into_inner();
    // Its figures need a local read of the node's paths (a local root
    // off Windows); its condition is the node's either way.
    let condition = figures.volume_condition.expect("VOLUME_CONDITION reported");
    assert!(!condition.abnormal, "{condition:?}");
    assert_eq!(driver.asked(), 1, "asked at the stage only");
}

/// `Driver::volume` is asked once per stage: not at the publishes, the
/// expand or the stats of the staged volume, and again at the next
/// stage. Once unstaged, the record is gone: a publish asks the driver
/// (and finds nothing staged).
#[tokio::test]
async fn the_driver_is_asked_once_per_stage() {
    let driver = SecretShares::default();
    let (_mock, _node, plugin) = setup(driver.clone());
    let stage = disk_stage("pv", "1");
    plugin
        .node_stage_volume(Request::new(stage.clone()))
        .await
        .unwrap();
    for _ in 0..2 {
        plugin
            .node_publish_volume(Request::new(publish(&stage)))
            .await
            .unwrap();
    }
    plugin
        .node_expand_volume(Request::new(expand("pv")))
        .await
        .unwrap();
    plugin
        .node_get_volume_stats(Request::new(stats("pv")))
        .await
        .unwrap();
    assert_eq!(driver.asked(), 1);

    plugin
        .node_unpublish_volume(Request::new(unpublish("pv")))
        .await
        .unwrap();
    plugin
        .node_unstage_volume(Request::new(unstage("pv")))
        .await
        .unwrap();
    plugin
        .node_stage_volume(Request::new(stage.clone()))
        .await
        .unwrap();
    assert_eq!(driver.asked(), 2, "once more for the second stage");
    plugin
        .node_unstage_volume(Request::new(unstage("pv")))
        .await
        .unwrap();
    let e = plugin
        .node_publish_volume(Request::new(publish(&stage)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert_eq!(
        driver.asked(),
        3,
        "no record once unstaged: the driver is asked"
    );
}

/// A driver that asks for it is asked at every publish too.
#[tokio::test]
async fn a_driver_that_asks_for_it_is_asked_at_publish() {
    let driver = SecretShares {
        at_publish: true,
        ..Default::default()
    };
    let (_mock, _node, plugin) = setup(driver.clone());
    let stage = disk_stage("pv", "2");
    plugin
        .node_stage_volume(Request::new(stage.clone()))
        .await
        .unwrap();
    plugin
        .node_publish_volume(Request::new(publish(&stage)))
        .await
        .unwrap();
    assert_eq!(driver.asked(), 2);
}

/// A volume staged with nothing kept (by a plugin version that kept
/// nothing: here, staged through the node directly) is published by
/// asking the driver, as before.
#[tokio::test]
async fn a_volume_staged_without_a_record_asks_the_driver_at_publish() {
    let driver = SecretShares::default();
    let (_mock, node, plugin) = setup(driver.clone());
    let user = SmbCredentials::new("smbuser", PASSWORD);
    node.smb_stage(r"\\fileserver\share", &staging("pv"), &user)
        .await
        .unwrap();
    let e = plugin
        .node_publish_volume(Request::new(publish(&share_stage("pv"))))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("no secrets"), "{e:?}");
    assert_eq!(driver.asked(), 1, "the driver answered the publish");
}

/// A record that cannot be read fails the publish with an error naming
/// its file, and the driver is not asked in its place.
#[tokio::test]
async fn an_unreadable_record_fails_the_publish_naming_its_file() {
    let mock = MockHost::new();
    let state = tempfile::tempdir().unwrap();
    let driver = SecretShares::default();
    let node = MockNode::new(&mock).build().unwrap();
    let plugin = Plugin::new(node, driver.clone())
        .with_state_dir(state.path())
        .unwrap();
    let stage = disk_stage("pv", "1");
    plugin
        .node_stage_volume(Request::new(stage.clone()))
        .await
        .unwrap();
    let kept = state.path().join("records").join("program-stage-source");
    let files: Vec<_> = std::fs::read_dir(&kept)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::write(&files[0], "").unwrap();
    let e = plugin
        .node_publish_volume(Request::new(publish(&stage)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Internal, "{e:?}");
    assert!(
        e.message().contains(&files[0].display().to_string()),
        "{e:?}"
    );
    assert_eq!(driver.asked(), 1, "not asked in the record's place");
}

/// Served on a socket: the plugin kept in `state` beside it.
#[cfg(unix)]
mod served {
    use super::*;
    use std::path::{Path, PathBuf};

    use csi_node_server::csi::v1::node_client::NodeClient;
    use csi_proxy_client::node::{Node, NodeOptions, NodeRecords, SmbStore};
    use csi_proxy_client::server::Server;
    use tokio::sync::oneshot;
    use tokio::task::JoinHandle;

    /// A plugin served at `socket` until the sender is used or dropped.
    type Serving = (oneshot::Sender<()>, JoinHandle<std::io::Result<()>>);

    fn serve(plugin: Plugin, socket: &Path) -> Serving {
        let (stop, stopped) = oneshot::channel::<()>();
        let socket = socket.to_path_buf();
        let served = tokio::spawn(async move {
            csi_node_server::serve(plugin, &socket, async {
                stopped.await.ok();
            })
            .await
        });
        (stop, served)
    }

    async fn client(socket: &Path) -> NodeClient<tonic::transport::Channel> {
        while !socket.exists() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let path = socket.to_path_buf();
        let channel = tonic::transport::Endpoint::from_static("http://[::]:50051")
            .connect_with_connector(tower::service_fn(move |_: http::Uri| {
                let path = path.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(path).await?;
                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
                }
            }))
            .await
            .unwrap();
        NodeClient::new(channel)
    }

    async fn stop((stop, served): Serving) {
        stop.send(()).unwrap();
        served.await.unwrap().unwrap();
    }

    /// A plugin process over the proxy whose endpoints are in `proxy`,
    /// with default options. Each process of a test gets endpoints of its
    /// own over the one simulated host: a `Node`'s default records are per
    /// host and process, and a new endpoint is a new host to this process,
    /// as a restarted process knows nothing of the one before.
    async fn process(host: &csi_proxy_client::host::Host, proxy: &Path) -> (Server, Node) {
        std::fs::create_dir_all(proxy).unwrap();
        let server = Server::builder()
            .socket_dir(proxy)
            .host(host.clone())
            .start()
            .await
            .unwrap();
        let node = Node::connect(NodeOptions::default().socket_dir(proxy))
            .await
            .unwrap();
        (server, node)
    }

    /// A plugin with default options, as the README builds it, served
    /// over the proxy; then stopped (its process gone) and a new one
    /// started over the same socket directory: the new one answers the
    /// publish of the volume the first one staged from the first one's
    /// record, and unstages it. Before, the records were in the first
    /// process's memory: the new plugin asked the driver, which cannot
    /// name the share without the stage secrets.
    #[tokio::test]
    async fn a_restarted_plugin_with_default_options_sees_the_first_ones_records() {
        let mock = MockHost::new();
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("plugin").join("csi.sock");
        let driver = SecretShares::default();

        let (first_proxy, node) = process(mock.host(), &dir.path().join("proxy-1")).await;
        let first = serve(Plugin::new(node, driver.clone()), &socket);
        client(&socket)
            .await
            .node_stage_volume(share_stage("pv"))
            .await
            .unwrap();
        stop(first).await;
        first_proxy.shutdown().await.unwrap();

        let state = dir.path().join("plugin").join("state");
        assert!(
            state.join("records").join("program-stage-source").is_dir(),
            "kept beside the socket"
        );
        let (_proxy, node) = process(mock.host(), &dir.path().join("proxy-2")).await;
        let restarted = serve(Plugin::new(node, driver.clone()), &socket);
        let mut client = client(&socket).await;
        client
            .node_publish_volume(publish(&share_stage("pv")))
            .await
            .unwrap();
        client.node_unpublish_volume(unpublish("pv")).await.unwrap();
        client.node_unstage_volume(unstage("pv")).await.unwrap();
        assert!(mock.host().lock().smb.mappings().is_empty());
        assert_eq!(driver.asked(), 1, "asked at the stage only");
        stop(restarted).await;
    }

    /// A state directory that cannot be made fails the serve before the
    /// socket is bound: never records in memory.
    #[tokio::test]
    async fn a_state_directory_that_cannot_be_made_fails_the_start() {
        let mock = MockHost::new();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("state"), "a file where the directory goes").unwrap();
        let socket = dir.path().join("csi.sock");
        let plugin = Plugin::new(Node::from_mock(&mock), SecretShares::default());
        let (_stop, served) = serve(plugin, &socket);
        let started = std::time::Duration::from_secs(10);
        let e = tokio::time::timeout(started, served)
            .await
            .expect("the serve fails at start, it does not serve")
            .unwrap()
            .unwrap_err();
        assert!(
            e.to_string()
                .contains(&dir.path().join("state").display().to_string()),
            "{e}"
        );
        assert!(!socket.exists());
    }

    /// Stores the program chose are its own: nothing is made beside the
    /// socket.
    #[tokio::test]
    async fn stores_the_program_chose_are_kept() {
        let mock = MockHost::new();
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("csi.sock");
        let options = NodeOptions::default()
            .records(NodeRecords::memory())
            .smb_store(SmbStore::memory());
        let node = MockNode::new(&mock).options(options).build().unwrap();
        let served = serve(Plugin::new(node, SecretShares::default()), &socket);
        client(&socket)
            .await
            .node_stage_volume(share_stage("pv"))
            .await
            .unwrap();
        stop(served).await;
        let made: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(made.is_empty(), "{made:?}");
    }
}
