//! What a driver decides, over an in-process node (`MockHost`, the
//! reference server's default node: blank 32 GiB disks at LUN 1 and 2, the
//! share `\\fileserver\share` for `smbuser`): the policies with their
//! defaults (file system types, mount flags, access modes, capabilities,
//! growing after stage, offline at unstage, the steps of an expand), an
//! async volume resolver that sees the secrets, the hooks around each step,
//! and the plugin served with a tower layer and a service beside it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use csi_node_server::csi::v1::node_server::Node as _;
use csi_node_server::csi::v1::node_service_capability::rpc;
use csi_node_server::csi::v1::volume_capability::access_mode::Mode;
use csi_node_server::csi::v1::volume_capability::{AccessMode, AccessType, MountVolume};
use csi_node_server::csi::v1::*;
use csi_node_server::{Driver, Plugin, Step, VolumeRequest, VolumeSource, async_trait, status_of};
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::{DiskSelector, MountState, Node};
use tonic::{Code, Request, Status};

mod support;
use support::*;

/// A disk by `publish_context["lun"]`, a share by `volume_context["source"]`;
/// every policy settable, every hook recorded.
#[derive(Default)]
struct Configurable {
    grow_after_stage: Option<bool>,
    offline_at_unstage: bool,
    refuse_ext4: bool,
    refuse_flag: Option<&'static str>,
    capabilities: Option<Vec<rpc::Type>>,
    /// A stage secret the resolver requires (as a cloud key would be).
    key: Option<&'static str>,
    fail_before: Option<&'static str>,
    steps: Mutex<Vec<String>>,
}

#[async_trait]
impl Driver for Configurable {
    fn name(&self) -> &str {
        "configurable.test"
    }
    fn version(&self) -> &str {
        "0.0.1"
    }
    fn node_id(&self) -> &str {
        "node-1"
    }
    async fn volume(&self, r: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
        // Something async, as a cloud call is.
        tokio::task::yield_now().await;
        if let Some(key) = self.key
            && r.secrets.get("key").map(String::as_str) != Some(key)
        {
            return Err(Status::permission_denied("no key in the secrets"));
        }
        if let Some(source) = r.volume_context.get("source") {
            return r.smb(source.as_str());
        }
        let lun = r.publish_context["lun"].parse().unwrap();
        Ok(VolumeSource::Disk(DiskSelector::Lun(lun)))
    }
    fn fs_type(&self, volume: &VolumeSource, fs_type: &str) -> Result<(), Status> {
        if self.refuse_ext4 && fs_type == "ext4" {
            return Err(Status::invalid_argument("this driver formats NTFS only"));
        }
        csi_node_server::default_fs_type(volume, fs_type)
    }
    fn mount_flags(&self, _: &VolumeSource, flags: &[String]) -> Result<(), Status> {
        match self.refuse_flag {
            Some(bad) if flags.iter().any(|f| f == bad) => Err(Status::invalid_argument(format!(
                "mount flag {bad} refused"
            ))),
            _ => Ok(()),
        }
    }
    fn node_capabilities(&self) -> Vec<rpc::Type> {
        self.capabilities
            .clone()
            .unwrap_or_else(|| csi_node_server::plugin::CAPABILITIES.to_vec())
    }
    fn grow_after_stage(&self) -> bool {
        self.grow_after_stage.unwrap_or(true)
    }
    fn offline_at_unstage(&self) -> bool {
        self.offline_at_unstage
    }
    async fn before(&self, node: &Node, step: Step<'_>) -> Result<(), Status> {
        let what = match step {
            Step::Stage { volume, .. } => format!("before stage {volume:?}"),
            Step::Publish { .. } => "before publish".into(),
            Step::Unpublish { .. } => "before unpublish".into(),
            Step::Unstage { .. } => "before unstage".into(),
        };
        self.steps.lock().unwrap().push(what);
        if let Step::Stage { request, .. } = step {
            // What a hook sees of the node: nothing staged yet.
            let state = node
                .mount_state(&request.staging_target_path)
                .await
                .map_err(status_of)?;
            self.steps.lock().unwrap().push(format!("{state:?}"));
        }
        match self.fail_before {
            Some(message) => Err(Status::failed_precondition(message)),
            None => Ok(()),
        }
    }
    async fn after(&self, _: &Node, step: Step<'_>) -> Result<(), Status> {
        self.steps
            .lock()
            .unwrap()
            .push(format!("after {}", step.volume_id()));
        Ok(())
    }
}

fn mount(mode: Mode, fs_type: &str, flags: &[&str], group: &str) -> Option<VolumeCapability> {
    Some(VolumeCapability {
        access_type: Some(AccessType::Mount(MountVolume {
            fs_type: fs_type.into(),
            mount_flags: flags.iter().map(|f| f.to_string()).collect(),
            volume_mount_group: group.into(),
        })),
        access_mode: Some(AccessMode { mode: mode.into() }),
    })
}

fn disk_stage(id: &str, lun: u32, cap: Option<VolumeCapability>) -> NodeStageVolumeRequest {
    NodeStageVolumeRequest {
        volume_id: id.into(),
        publish_context: HashMap::from([("lun".into(), lun.to_string())]),
        staging_target_path: staging(id),
        volume_capability: cap,
        ..Default::default()
    }
}

fn smb_stage(id: &str, cap: Option<VolumeCapability>) -> NodeStageVolumeRequest {
    NodeStageVolumeRequest {
        volume_id: id.into(),
        staging_target_path: staging(id),
        volume_capability: cap,
        secrets: credentials(),
        volume_context: HashMap::from([("source".into(), r"\\fileserver\share".into())]),
        ..Default::default()
    }
}

fn expand(id: &str, cap: Option<VolumeCapability>, required: u64) -> NodeExpandVolumeRequest {
    NodeExpandVolumeRequest {
        volume_id: id.into(),
        volume_path: staging(id),
        capacity_range: Some(CapacityRange {
            required_bytes: required as i64,
            limit_bytes: 0,
        }),
        volume_capability: cap,
        ..Default::default()
    }
}

fn writer() -> Option<VolumeCapability> {
    mount(Mode::SingleNodeWriter, "", &[], "")
}

async fn stage(plugin: &Plugin, request: NodeStageVolumeRequest) -> Result<(), Status> {
    plugin
        .node_stage_volume(Request::new(request))
        .await
        .map(drop)
}

/// The volume's size at the staging path, in bytes.
async fn size_at(node: &Node, id: &str) -> u64 {
    node.usage(&staging(id)).await.unwrap().total_bytes
}

/// Grows the disk at `lun` to `size`, as the cloud does.
async fn grow_disk(mock: &MockHost, node: &Node, lun: u32, size: u64) -> u32 {
    let number = node.find_disk(DiskSelector::Lun(lun)).await.unwrap().number;
    let handle = mock.host().lock().storage.disk(number).unwrap().handle;
    mock.host().hot_grow(handle, size).unwrap();
    number
}

#[tokio::test]
async fn linux_file_system_types_are_served_as_ntfs_others_refused_and_the_rule_replaceable() {
    let (_mock, node, plugin) = setup(Configurable::default());
    for (id, fs) in [("pv-ext4", "ext4"), ("pv-xfs", "XFS")] {
        let lun = if fs == "ext4" { 1 } else { 2 };
        let cap = mount(Mode::SingleNodeWriter, fs, &[], "");
        stage(&plugin, disk_stage(id, lun, cap.clone()))
            .await
            .unwrap();
        plugin
            .node_publish_volume(Request::new(publish(&disk_stage(id, lun, cap))))
            .await
            .unwrap();
        assert!(matches!(
            node.mount_state(&target(id)).await.unwrap(),
            MountState::Mounted { .. }
        ));
    }
    for fs in ["btrfs", "refs", "ext2"] {
        let cap = mount(Mode::SingleNodeWriter, fs, &[], "");
        let e = stage(&plugin, disk_stage("pv-other", 1, cap))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{fs}");
        assert!(e.message().contains(fs), "{}", e.message());
    }
    // A share's file system is the server's: any type goes.
    stage(
        &plugin,
        smb_stage("pv-smb", mount(Mode::MultiNodeMultiWriter, "cifs", &[], "")),
    )
    .await
    .unwrap();

    let strict = Configurable {
        refuse_ext4: true,
        ..Default::default()
    };
    let (_mock, _node, plugin) = setup(strict);
    let cap = mount(Mode::SingleNodeWriter, "ext4", &[], "");
    let e = stage(&plugin, disk_stage("pv", 1, cap)).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("NTFS only"), "{}", e.message());
}

#[tokio::test]
async fn mount_flags_are_accepted_and_ignored_unless_the_driver_validates_them() {
    let (_mock, _node, plugin) = setup(Configurable::default());
    let flags = ["dir_mode=0777", "file_mode=0777", "vers=3.0"];
    let cap = mount(Mode::MultiNodeMultiWriter, "", &flags, "");
    stage(&plugin, smb_stage("pv-smb", cap)).await.unwrap();
    let cap = mount(Mode::SingleNodeWriter, "", &["read_ahead_kb=4096"], "");
    stage(&plugin, disk_stage("pv-disk", 1, cap.clone()))
        .await
        .unwrap();
    plugin
        .node_publish_volume(Request::new(publish(&disk_stage("pv-disk", 1, cap))))
        .await
        .unwrap();

    let picky = Configurable {
        refuse_flag: Some("vers=1.0"),
        ..Default::default()
    };
    let (mock, _node, plugin) = setup(picky);
    let cap = mount(Mode::MultiNodeMultiWriter, "", &["vers=1.0"], "");
    let e = stage(&plugin, smb_stage("pv", cap)).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("vers=1.0"));
    assert!(mock.calls_of("NewSmbGlobalMapping").is_empty());
}

#[tokio::test]
async fn reader_modes_are_served_for_disks_and_multi_node_writers_are_not() {
    let (mock, node, plugin) = setup(Configurable::default());
    let reader = mount(Mode::MultiNodeReaderOnly, "", &[], "");
    stage(&plugin, disk_stage("pv-rox", 1, reader.clone()))
        .await
        .unwrap();
    plugin
        .node_publish_volume(Request::new(publish(&disk_stage("pv-rox", 1, reader))))
        .await
        .unwrap();
    assert!(matches!(
        node.mount_state(&target("pv-rox")).await.unwrap(),
        MountState::Mounted { .. }
    ));
    let single_reader = mount(Mode::SingleNodeReaderOnly, "", &[], "");
    stage(&plugin, disk_stage("pv-ro", 2, single_reader))
        .await
        .unwrap();
    mock.clear_calls();
    for mode in [
        Mode::MultiNodeMultiWriter,
        Mode::MultiNodeSingleWriter,
        Mode::Unknown,
    ] {
        let cap = mount(mode, "", &[], "");
        let e = stage(&plugin, disk_stage("pv-rwx", 1, cap))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{mode:?}");
    }
    assert!(mock.calls().is_empty());
}

fn reported(plugin_caps: NodeGetCapabilitiesResponse) -> Vec<rpc::Type> {
    plugin_caps
        .capabilities
        .iter()
        .filter_map(|c| c.r#type)
        .map(|node_service_capability::Type::Rpc(r)| r.r#type())
        .collect()
}

#[tokio::test]
async fn the_driver_chooses_its_capabilities_and_a_mount_group_needs_one() {
    let (_mock, _node, plugin) = setup(Configurable::default());
    let caps = plugin
        .node_get_capabilities(Request::new(NodeGetCapabilitiesRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reported(caps), csi_node_server::plugin::CAPABILITIES);
    let grouped = mount(Mode::MultiNodeMultiWriter, "", &[], "2000");
    let e = stage(&plugin, smb_stage("pv", grouped.clone()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().contains("VOLUME_MOUNT_GROUP"),
        "{}",
        e.message()
    );

    let mut wanted = csi_node_server::plugin::CAPABILITIES.to_vec();
    wanted.extend([
        rpc::Type::SingleNodeMultiWriter,
        rpc::Type::VolumeMountGroup,
    ]);
    let (_mock, _node, plugin) = setup(Configurable {
        capabilities: Some(wanted.clone()),
        ..Default::default()
    });
    let caps = plugin
        .node_get_capabilities(Request::new(NodeGetCapabilitiesRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reported(caps), wanted);
    stage(&plugin, smb_stage("pv", grouped)).await.unwrap();
    let cap = mount(Mode::SingleNodeMultiWriter, "", &[], "");
    stage(&plugin, disk_stage("pv-disk", 1, cap)).await.unwrap();
}

#[tokio::test]
async fn a_volume_smaller_than_its_disk_is_grown_right_after_staging() {
    let (mock, node, plugin) = setup(Configurable::default());
    stage(&plugin, disk_stage("pv", 1, writer())).await.unwrap();
    // The volume fills its fresh disk: no resize is even asked for.
    assert!(mock.calls_of("ResizeVolume").is_empty());
    let before = size_at(&node, "pv").await;
    plugin
        .node_unstage_volume(Request::new(unstage("pv")))
        .await
        .unwrap();
    // As a volume restored from a 32 GiB snapshot onto a 40 GiB disk.
    grow_disk(&mock, &node, 1, 40 * GIB).await;
    stage(&plugin, disk_stage("pv", 1, writer())).await.unwrap();
    let after = size_at(&node, "pv").await;
    assert!(after >= before + 8 * GIB - (1 << 20), "{before} -> {after}");

    // A driver that does not want it.
    let (mock, node, plugin) = setup(Configurable {
        grow_after_stage: Some(false),
        ..Default::default()
    });
    stage(&plugin, disk_stage("pv", 1, writer())).await.unwrap();
    let before = size_at(&node, "pv").await;
    plugin
        .node_unstage_volume(Request::new(unstage("pv")))
        .await
        .unwrap();
    grow_disk(&mock, &node, 1, 40 * GIB).await;
    stage(&plugin, disk_stage("pv", 1, writer())).await.unwrap();
    assert_eq!(size_at(&node, "pv").await, before);
    assert!(mock.calls_of("ResizeVolume").is_empty());
}

#[tokio::test]
async fn the_disk_goes_offline_at_unstage_when_the_driver_asks() {
    for offline in [false, true] {
        let (mock, node, plugin) = setup(Configurable {
            offline_at_unstage: offline,
            ..Default::default()
        });
        stage(&plugin, disk_stage("pv", 1, writer())).await.unwrap();
        let number = node.find_disk(DiskSelector::Lun(1)).await.unwrap().number;
        plugin
            .node_unstage_volume(Request::new(unstage("pv")))
            .await
            .unwrap();
        let is_offline = mock.host().lock().storage.disk(number).unwrap().is_offline;
        assert_eq!(is_offline, offline);
    }
}

#[tokio::test]
async fn expand_rescans_first_skips_readers_and_checks_the_size() {
    let (mock, node, plugin) = setup(Configurable::default());
    stage(&plugin, disk_stage("pv", 1, writer())).await.unwrap();
    grow_disk(&mock, &node, 1, 40 * GIB).await;
    mock.clear_calls();
    let size = plugin
        .node_expand_volume(Request::new(expand("pv", writer(), 40 * GIB)))
        .await
        .unwrap()
        .into_inner()
        .capacity_bytes;
    assert!(size as u64 > 39 * GIB, "{size}");
    // The disks rescanned (AWS), then the resize. The disk's state is read
    // only when growing fails: an offline disk's volume is not reachable
    // through its mount point (on the simulated node as on Windows), so an
    // online disk, the one that can be grown, costs no call for it.
    mock.assert_called_in_order(&["Rescan", "ResizeVolume"]);
    assert!(mock.calls_of("GetDiskState").is_empty());

    // More than the disk has: the size is checked against the request.
    let e = plugin
        .node_expand_volume(Request::new(expand("pv", writer(), 50 * GIB)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::OutOfRange);

    // A volume published read-only is left alone.
    grow_disk(&mock, &node, 1, 48 * GIB).await;
    mock.clear_calls();
    let reader = mount(Mode::MultiNodeReaderOnly, "", &[], "");
    plugin
        .node_expand_volume(Request::new(expand("pv", reader, 48 * GIB)))
        .await
        .unwrap();
    assert!(mock.calls_of("ResizeVolume").is_empty());
    assert!(size_at(&node, "pv").await < 41 * GIB);
}

#[tokio::test]
async fn the_async_resolver_sees_the_secrets_and_the_hooks_run_around_each_step() {
    let (_mock, _node, plugin) = setup(Configurable {
        key: Some("cloud-key"),
        ..Default::default()
    });
    let mut request = disk_stage("pv", 1, writer());
    let e = stage(&plugin, request.clone()).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    request.secrets.insert("key".into(), "cloud-key".into());
    stage(&plugin, request.clone()).await.unwrap();
    let mut publish = publish(&request);
    publish.secrets = request.secrets.clone();
    plugin
        .node_publish_volume(Request::new(publish))
        .await
        .unwrap();
    plugin
        .node_unpublish_volume(Request::new(NodeUnpublishVolumeRequest {
            volume_id: "pv".into(),
            target_path: target("pv"),
        }))
        .await
        .unwrap();
    plugin
        .node_unstage_volume(Request::new(unstage("pv")))
        .await
        .unwrap();

    // A failing hook's status is the call's, and nothing is done.
    let (mock, node, plugin) = setup(Configurable {
        fail_before: Some("the cloud says no"),
        ..Default::default()
    });
    let e = stage(&plugin, disk_stage("pv", 1, writer()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert_eq!(e.message(), "the cloud says no");
    assert!(mock.calls_of("PartitionDisk").is_empty());
    assert_eq!(
        node.mount_state(&staging("pv")).await.unwrap(),
        MountState::Missing
    );
}

/// The hooks of one life cycle, in order.
#[tokio::test]
async fn hooks_run_in_order_around_the_node_work() {
    // The plugin owns its driver: the steps are read through a shared one.
    struct Shared(Arc<Configurable>);
    #[async_trait]
    impl Driver for Shared {
        fn name(&self) -> &str {
            self.0.name()
        }
        fn version(&self) -> &str {
            self.0.version()
        }
        fn node_id(&self) -> &str {
            self.0.node_id()
        }
        async fn volume(&self, r: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
            self.0.volume(r).await
        }
        async fn before(&self, node: &Node, step: Step<'_>) -> Result<(), Status> {
            self.0.before(node, step).await
        }
        async fn after(&self, node: &Node, step: Step<'_>) -> Result<(), Status> {
            self.0.after(node, step).await
        }
    }
    let inner = Arc::new(Configurable::default());
    let mock = MockHost::new();
    let plugin = Plugin::new(Node::from_mock(&mock), Shared(inner.clone()));
    let request = disk_stage("pv", 1, writer());
    stage(&plugin, request.clone()).await.unwrap();
    plugin
        .node_publish_volume(Request::new(publish(&request)))
        .await
        .unwrap();
    plugin
        .node_unpublish_volume(Request::new(NodeUnpublishVolumeRequest {
            volume_id: "pv".into(),
            target_path: target("pv"),
        }))
        .await
        .unwrap();
    plugin
        .node_unstage_volume(Request::new(unstage("pv")))
        .await
        .unwrap();
    assert_eq!(
        *inner.steps.lock().unwrap(),
        [
            "before stage Disk(Lun(1))",
            "Missing",
            "after pv",
            "before publish",
            "after pv",
            "before unpublish",
            "after pv",
            "before unstage",
            "after pv",
        ]
    );
}

fn secrets(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// As csi-driver-smb reads them (pkg/smb/nodeserver.go): keys in any case,
/// values trimmed, the domain put before a user name that has none.
#[test]
fn smb_credentials_are_read_as_csi_driver_smb_reads_them() {
    let read = |pairs: &[(&str, &str)]| {
        csi_node_server::default_smb_credentials(&secrets(pairs))
            .map(|c| c.username().to_string())
            .map_err(|e| e.code())
    };
    assert_eq!(
        read(&[("username", "user"), ("password", "pw")]),
        Ok("user".into())
    );
    assert_eq!(
        read(&[
            ("UserName", " user\n"),
            ("Password", "pw "),
            ("Domain", " CORP ")
        ]),
        Ok(r"CORP\user".into())
    );
    // A user name with its domain already is left alone.
    assert_eq!(
        read(&[
            ("username", r"CORP\user"),
            ("password", "pw"),
            ("domain", "CORP")
        ]),
        Ok(r"CORP\user".into())
    );
    assert_eq!(read(&[("domain", "CORP")]), Ok(String::new()));
    // White space only is no value: half the pair is missing.
    assert_eq!(
        read(&[("username", "user"), ("password", "  ")]),
        Err(Code::InvalidArgument)
    );
}

/// The password reaches the mapping trimmed, as the user name does.
#[tokio::test]
async fn the_trimmed_secrets_map_the_share() {
    let (mock, _node, plugin) = setup(Configurable::default());
    let mut request = smb_stage("pv", mount(Mode::MultiNodeMultiWriter, "", &[], ""));
    request.secrets = secrets(&[("USERNAME", " smbuser "), ("PASSWORD", "Sm8-Passw0rd!\n")]);
    stage(&plugin, request).await.unwrap();
    assert_eq!(mock.calls_of("NewSmbGlobalMapping").len(), 1);
}

/// `serve` with what a driver composes (over AF_UNIX: the Windows listener
/// is the same code path past the accept).
#[cfg(unix)]
mod composed {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll};

    use csi_node_server::csi::v1::controller_client::ControllerClient;
    use csi_node_server::csi::v1::identity_client::IdentityClient;
    use csi_node_server::csi::v1::identity_server::Identity;

    /// Counts the requests through it: a tower layer around the whole router.
    #[derive(Clone, Default)]
    struct CountLayer(Arc<AtomicUsize>);

    impl<S> tower::Layer<S> for CountLayer {
        type Service = Counted<S>;
        fn layer(&self, inner: S) -> Counted<S> {
            Counted(inner, self.0.clone())
        }
    }

    #[derive(Clone)]
    struct Counted<S>(S, Arc<AtomicUsize>);

    impl<S: tower::Service<R>, R> tower::Service<R> for Counted<S> {
        type Response = S::Response;
        type Error = S::Error;
        type Future = S::Future;
        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
            self.0.poll_ready(cx)
        }
        fn call(&mut self, request: R) -> S::Future {
            self.1.fetch_add(1, Ordering::SeqCst);
            self.0.call(request)
        }
    }

    /// A service beside the plugin's: the Controller, answering every call
    /// with its own UNIMPLEMENTED.
    #[derive(Clone)]
    struct NoController;

    impl tonic::server::NamedService for NoController {
        const NAME: &'static str = "csi.v1.Controller";
    }

    impl tower::Service<http::Request<tonic::body::Body>> for NoController {
        type Response = http::Response<tonic::body::Body>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Self::Response, Self::Error>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, _: http::Request<tonic::body::Body>) -> Self::Future {
            std::future::ready(Ok(Status::unimplemented("no controller here").into_http()))
        }
    }

    #[tokio::test]
    async fn serve_takes_the_plugin_in_a_tower_layer_with_a_service_beside_it() {
        let mock = MockHost::new();
        let plugin = Plugin::new(Node::from_mock(&mock), Configurable::default());
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("csi.sock");
        let count = CountLayer::default();
        let router = tonic::transport::Server::builder()
            .layer(count.clone())
            .add_routes(plugin.routes())
            .add_service(NoController);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn({
            let socket = socket.clone();
            async move {
                csi_node_server::serve(router, &socket, async {
                    stopped.await.ok();
                })
                .await
            }
        });
        while !socket.exists() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let path = socket.clone();
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
        let info = IdentityClient::new(channel.clone())
            .get_plugin_info(GetPluginInfoRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(info.name, "configurable.test");
        let e = ControllerClient::new(channel)
            .controller_get_capabilities(ControllerGetCapabilitiesRequest {})
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unimplemented);
        assert_eq!(e.message(), "no controller here");
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
        stop.send(()).unwrap();
        served.await.unwrap().unwrap();
        assert!(!socket.exists());

        // The plugin alone, as before.
        let _ = plugin.probe(Request::new(ProbeRequest {})).await.unwrap();
    }
}

/// Issue 42, found case 17: a reader access mode stages its disk
/// read-only. In HostProcess mode (the fake Windows boundary over the
/// simulated host), disk 1 holds data and the cloud attached it read-only
/// (online, read-only): a `MULTI_NODE_READER_ONLY` stage mounts it as it
/// is (before, every stage was refused as a read-write stage of a
/// read-only disk). Disk 2 holds data and is offline and read-only, as a
/// SAN policy leaves a disk: a `SINGLE_NODE_READER_ONLY` stage brings it
/// online and mounts it, read-only still (before, it was made writable).
#[tokio::test]
async fn reader_modes_stage_a_read_only_disk_as_it_is_host_process() {
    use csi_proxy_client::host_process::FakeWindows;
    use csi_proxy_client::node::NodeOptions;
    let mock = MockHost::new();
    let fake = Arc::new(FakeWindows::new(mock.host().clone()));
    let node = Node::host_process_with(fake, NodeOptions::default());
    let plugin = Plugin::new(node.clone(), Configurable::default());
    let writer = mount(Mode::SingleNodeWriter, "", &[], "");
    // Each disk formatted by a writer first, then unstaged.
    for (id, lun) in [("pv-w1", 1), ("pv-w2", 2)] {
        stage(&plugin, disk_stage(id, lun, writer.clone()))
            .await
            .unwrap();
        plugin
            .node_unstage_volume(Request::new(unstage(id)))
            .await
            .unwrap();
    }
    let host = mock.host();
    host.set_disk_read_only(1, true).unwrap();
    host.set_disk_offline(2, true).unwrap();
    host.set_disk_read_only(2, true).unwrap();
    let volume_of = |n: u32| {
        let snapshot = host.snapshot();
        let ids: Vec<String> = snapshot
            .volumes
            .iter()
            .filter(|v| v.disk == n)
            .map(|v| v.id.clone())
            .collect();
        assert_eq!(ids.len(), 1, "disk {n}: {ids:?}");
        ids[0].clone()
    };
    let mounted_at = |volume: &str| -> Vec<String> {
        host.snapshot()
            .mount_points
            .iter()
            .filter(|m| m.volume_id.eq_ignore_ascii_case(volume))
            .map(|m| m.path.to_lowercase())
            .collect()
    };
    let reader_many = mount(Mode::MultiNodeReaderOnly, "", &[], "");
    stage(&plugin, disk_stage("pv-rox", 1, reader_many))
        .await
        .unwrap();
    let disk_1 = host.snapshot().disk(1).unwrap().clone();
    assert!(disk_1.is_read_only && !disk_1.is_offline, "{disk_1:?}");
    assert_eq!(
        mounted_at(&volume_of(1)),
        vec![staging("pv-rox").to_lowercase()]
    );
    let reader_once = mount(Mode::SingleNodeReaderOnly, "", &[], "");
    stage(&plugin, disk_stage("pv-ro", 2, reader_once))
        .await
        .unwrap();
    let disk_2 = host.snapshot().disk(2).unwrap().clone();
    assert!(disk_2.is_read_only, "made writable: {disk_2:?}");
    assert!(!disk_2.is_offline, "{disk_2:?}");
    assert_eq!(
        mounted_at(&volume_of(2)),
        vec![staging("pv-ro").to_lowercase()]
    );
}
