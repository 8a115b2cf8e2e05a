//! What a driver says it serves, over an in-process node (`MockHost`: blank
//! disks at LUN 1 and 2, the share `\\fileserver\share` for `smbuser`):
//! expansion and volume conditions only when reported, the plugin
//! capabilities it states, a stats cache, the lock's key, help added to
//! errors, a stage deferred to publish, and one call naming a share and
//! its account.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use csi_node_server::csi::v1::identity_server::Identity as _;
use csi_node_server::csi::v1::node_server::Node as _;
use csi_node_server::csi::v1::node_service_capability::rpc;
use csi_node_server::csi::v1::plugin_capability::{Type, service, volume_expansion};
use csi_node_server::csi::v1::volume_capability::access_mode::Mode;
use csi_node_server::csi::v1::volume_capability::{AccessMode, AccessType, MountVolume};
use csi_node_server::csi::v1::*;
use csi_node_server::{
    Driver, LockScope, Plugin, PluginFeature, RequestKind, Step, VolumeRequest, VolumeSource,
    async_trait,
};
use csi_proxy_client::node::{DiskSelector, MountState, Node, SmbCredentials};
use tonic::{Code, Request, Status};

mod support;
use support::*;

/// The key kubelet puts the service account tokens under, in the secrets
/// (or, before, the volume context) of a publish.
const TOKENS: &str = "csi.storage.k8s.io/serviceAccount.tokens";

/// A disk by `publish_context["lun"]`; a share named, with its account, by
/// one place as azurefile's Secret names both (`server`, `account` and
/// `key` in the secrets; `share` in the context); each choice settable.
#[derive(Default)]
struct Stated {
    capabilities: Option<Vec<rpc::Type>>,
    lock: LockScope,
    ttl: Option<Duration>,
    /// Add help to the status of a failed step.
    help: bool,
    /// Defer the stage of a workload-identity volume to its publish, by
    /// azurefile's rule.
    token_stage: bool,
    /// How many times `volume` ran.
    resolved: AtomicUsize,
    /// The steps `on_error` saw.
    failed: Mutex<Vec<String>>,
}

#[async_trait]
impl Driver for Stated {
    fn name(&self) -> &str {
        "stated.test"
    }
    fn version(&self) -> &str {
        "0.0.1"
    }
    fn node_id(&self) -> &str {
        "node-1"
    }
    fn node_capabilities(&self) -> Vec<rpc::Type> {
        self.capabilities
            .clone()
            .unwrap_or_else(|| csi_node_server::driver::CAPABILITIES.to_vec())
    }
    fn lock_scope(&self) -> LockScope {
        self.lock
    }
    fn stats_cache_ttl(&self) -> Option<Duration> {
        self.ttl
    }
    async fn volume(&self, r: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
        self.resolved.fetch_add(1, Ordering::SeqCst);
        if let Some(lun) = r.publish_context.get("lun") {
            return Ok(VolumeSource::Disk(DiskSelector::Lun(lun.parse().unwrap())));
        }
        // One read of the Secret gives the share's server and its account.
        let secret = |key: &str| r.secrets.get(key).cloned().unwrap_or_default();
        let share = format!(r"\\{}\{}", secret("server"), r.volume_context["share"]);
        let credentials = SmbCredentials::new(secret("account"), secret("key"));
        Ok(VolumeSource::Smb { share, credentials })
    }
    fn stage_at_publish(&self, r: &VolumeRequest<'_>) -> bool {
        // azurefile-csi-driver's rule (pkg/azurefile/nodeserver.go
        // shouldUseServiceAccountToken, pkg/azurefile/utils.go
        // getServiceAccountTokens).
        let context = |key: &str| r.volume_context.get(key).map_or("", String::as_str);
        let by_token = context("mountWithWIToken") == "true"
            || (!context("clientID").is_empty()
                && !context("mountWithManagedIdentity").eq_ignore_ascii_case("true"));
        let token = r
            .secrets
            .get(TOKENS)
            .or_else(|| r.volume_context.get(TOKENS))
            .is_some_and(|t| !t.is_empty());
        self.token_stage
            && by_token
            && match r.kind {
                RequestKind::Stage => !token,
                RequestKind::Publish => token,
            }
    }
    async fn on_error(&self, _: &Node, step: Step<'_>, status: Status) -> Status {
        let what = match step {
            Step::Stage { .. } => "stage",
            Step::Publish { .. } => "publish",
            Step::Unpublish { .. } => "unpublish",
            Step::Unstage { .. } => "unstage",
        };
        self.failed.lock().unwrap().push(what.to_string());
        if !self.help {
            return status;
        }
        Status::new(
            status.code(),
            format!("{}; check the storage account key", status.message()),
        )
    }
}

/// A [`Stated`] the test reads after the plugin took it (the defaults
/// but for `volume` and `on_error`).
struct Shared(Arc<Stated>);

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
    async fn on_error(&self, node: &Node, step: Step<'_>, status: Status) -> Status {
        self.0.on_error(node, step, status).await
    }
}

fn writer() -> Option<VolumeCapability> {
    Some(VolumeCapability {
        access_type: Some(AccessType::Mount(MountVolume::default())),
        access_mode: Some(AccessMode {
            mode: Mode::MultiNodeMultiWriter.into(),
        }),
    })
}

fn disk_stage(id: &str) -> NodeStageVolumeRequest {
    NodeStageVolumeRequest {
        volume_id: id.into(),
        publish_context: map(&[("lun", "1")]),
        staging_target_path: staging(id),
        volume_capability: Some(VolumeCapability {
            access_mode: Some(AccessMode {
                mode: Mode::SingleNodeWriter.into(),
            }),
            ..writer().unwrap()
        }),
        ..Default::default()
    }
}

/// The Secret of the default share: its server, and `smbuser`'s account.
fn secret() -> HashMap<String, String> {
    map(&[
        ("server", "fileserver"),
        ("account", "smbuser"),
        ("key", PASSWORD),
    ])
}

fn share_stage(id: &str) -> NodeStageVolumeRequest {
    NodeStageVolumeRequest {
        volume_id: id.into(),
        volume_context: map(&[("share", "share")]),
        secrets: secret(),
        staging_target_path: staging(id),
        volume_capability: writer(),
        ..Default::default()
    }
}

fn stats(id: &str) -> NodeGetVolumeStatsRequest {
    NodeGetVolumeStatsRequest {
        volume_id: id.into(),
        volume_path: target(id),
        ..Default::default()
    }
}

/// A staged and published disk, as kubelet leaves it for a pod.
async fn published_disk(plugin: &Plugin) {
    let stage = disk_stage("pv");
    plugin
        .node_stage_volume(Request::new(stage.clone()))
        .await
        .unwrap();
    plugin
        .node_publish_volume(Request::new(publish(&stage)))
        .await
        .unwrap();
}

async fn plugin_capabilities(plugin: &Plugin) -> Vec<Type> {
    plugin
        .get_plugin_capabilities(Request::new(GetPluginCapabilitiesRequest {}))
        .await
        .unwrap()
        .into_inner()
        .capabilities
        .into_iter()
        .filter_map(|c| c.r#type)
        .collect()
}

fn online() -> Type {
    Type::VolumeExpansion(plugin_capability::VolumeExpansion {
        r#type: volume_expansion::Type::Online.into(),
    })
}

/// A driver without EXPAND_VOLUME has NodeExpandVolume UNIMPLEMENTED, as
/// azurefile-csi-driver answers, and no VOLUME_EXPANSION reported; with
/// it (the default) both are there. Before, both were whatever the
/// capabilities said.
#[tokio::test]
async fn expansion_is_served_and_reported_only_with_expand_volume() {
    let without = Stated {
        capabilities: Some(vec![rpc::Type::StageUnstageVolume]),
        ..Default::default()
    };
    let (mock, _node, plugin) = setup(without);
    published_disk(&plugin).await;
    mock.clear_calls();
    let e = plugin
        .node_expand_volume(Request::new(NodeExpandVolumeRequest {
            volume_id: "pv".into(),
            volume_path: target("pv"),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented);
    assert!(mock.calls().is_empty(), "{:?}", mock.calls());
    assert_eq!(plugin_capabilities(&plugin).await, []);

    let (_mock, _node, plugin) = setup(Stated::default());
    published_disk(&plugin).await;
    let grown = plugin
        .node_expand_volume(Request::new(NodeExpandVolumeRequest {
            volume_id: "pv".into(),
            volume_path: target("pv"),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(grown.capacity_bytes > 0);
    assert_eq!(plugin_capabilities(&plugin).await, [online()]);
}

/// The plugin capabilities are the ones the driver states, in its order.
#[tokio::test]
async fn the_plugin_capabilities_are_the_drivers() {
    struct States;
    #[async_trait]
    impl Driver for States {
        fn name(&self) -> &str {
            "states.test"
        }
        fn version(&self) -> &str {
            "0.0.1"
        }
        fn node_id(&self) -> &str {
            "node-1"
        }
        async fn volume(&self, _: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
            Err(Status::invalid_argument("no volumes here"))
        }
        fn plugin_capabilities(&self) -> Vec<PluginFeature> {
            vec![
                PluginFeature::ControllerService,
                PluginFeature::VolumeAccessibilityConstraints,
                PluginFeature::OfflineExpansion,
            ]
        }
    }
    let (_mock, _node, plugin) = setup(States);
    let service = |t: service::Type| Type::Service(plugin_capability::Service { r#type: t.into() });
    assert_eq!(
        plugin_capabilities(&plugin).await,
        [
            service(service::Type::ControllerService),
            service(service::Type::VolumeAccessibilityConstraints),
            Type::VolumeExpansion(plugin_capability::VolumeExpansion {
                r#type: volume_expansion::Type::Offline.into(),
            }),
        ]
    );
}

/// `volume_condition` is set only when VOLUME_CONDITION is reported; the
/// figures come either way.
#[tokio::test]
async fn a_volume_condition_only_with_volume_condition() {
    let caps = vec![rpc::Type::StageUnstageVolume, rpc::Type::GetVolumeStats];
    let (_mock, _node, plugin) = setup(Stated {
        capabilities: Some(caps),
        ..Default::default()
    });
    published_disk(&plugin).await;
    let reply = plugin
        .node_get_volume_stats(Request::new(stats("pv")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.usage.len(), 1);
    assert_eq!(reply.volume_condition, None);

    let (_mock, _node, plugin) = setup(Stated::default());
    published_disk(&plugin).await;
    let reply = plugin
        .node_get_volume_stats(Request::new(stats("pv")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.usage.len(), 1);
    assert!(!reply.volume_condition.unwrap().abnormal);
}

/// With a TTL, a volume's stats answer is given again without a host call
/// until the TTL has passed; without one (the default) every request asks
/// the host.
#[tokio::test]
async fn stats_answers_are_kept_for_the_drivers_ttl() {
    let (mock, _node, plugin) = setup(Stated {
        ttl: Some(Duration::from_secs(600)),
        ..Default::default()
    });
    published_disk(&plugin).await;
    tokio::time::pause();
    let first = plugin
        .node_get_volume_stats(Request::new(stats("pv")))
        .await
        .unwrap()
        .into_inner();
    mock.clear_calls();
    tokio::time::advance(Duration::from_secs(599)).await;
    let kept = plugin
        .node_get_volume_stats(Request::new(stats("pv")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(kept, first);
    assert!(mock.calls().is_empty(), "{:?}", mock.calls());
    tokio::time::advance(Duration::from_secs(2)).await;
    plugin
        .node_get_volume_stats(Request::new(stats("pv")))
        .await
        .unwrap();
    assert!(
        !mock.calls().is_empty(),
        "the TTL has passed: the host is asked"
    );

    let (mock, _node, plugin) = setup(Stated::default());
    published_disk(&plugin).await;
    for _ in 0..2 {
        mock.clear_calls();
        plugin
            .node_get_volume_stats(Request::new(stats("pv")))
            .await
            .unwrap();
        assert!(!mock.calls().is_empty());
    }
}

/// Two pods publish one ReadWriteMany share at once: with the lock per
/// volume (the default) the second is ABORTED; per volume and path, both
/// are published.
#[tokio::test(start_paused = true)]
async fn two_pods_publish_one_share_at_once_when_the_lock_is_per_path() {
    for (lock, second_ok) in [(LockScope::Volume, false), (LockScope::VolumeAndPath, true)] {
        let (mock, node, plugin) = setup(Stated {
            lock,
            ..Default::default()
        });
        let stage = share_stage("pv");
        plugin
            .node_stage_volume(Request::new(stage.clone()))
            .await
            .unwrap();
        mock.add_latency("CreateSymlink", Duration::from_secs(5));
        let pod1 = publish(&stage);
        let mut pod2 = publish(&stage);
        pod2.target_path = format!(r"{KUBELET}\pods\uid-2\volumes\kubernetes.io~csi\pv\mount");
        let first = tokio::spawn({
            let plugin = plugin.clone();
            async move { plugin.node_publish_volume(Request::new(pod1)).await }
        });
        // The first publish now waits on its slow link.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(mock.calls_of("CreateSymlink").len(), 1);
        let second = plugin.node_publish_volume(Request::new(pod2.clone())).await;
        first.await.unwrap().unwrap();
        match second {
            Ok(_) => assert!(second_ok, "{lock:?}: the second publish went through"),
            Err(e) => {
                assert!(!second_ok, "{lock:?}: {e:?}");
                assert_eq!(e.code(), Code::Aborted);
            }
        }
        let linked = node.mount_state(&pod2.target_path).await.unwrap() == MountState::Linked;
        assert_eq!(linked, second_ok, "{lock:?}");
        assert_eq!(
            node.mount_state(&target("pv")).await.unwrap(),
            MountState::Linked
        );
    }
}

/// A failed step's status goes through `on_error`, which may add help; a
/// step that succeeds does not.
#[tokio::test]
async fn a_driver_adds_help_to_a_failed_steps_status() {
    let driver = Stated {
        help: true,
        ..Default::default()
    };
    let (mock, _node, plugin) = setup(driver);
    mock.fail_next(
        "NewSmbGlobalMapping",
        Code::Unknown,
        "NewSmbGlobalMapping failed: the user name or password is incorrect",
    );
    let e = plugin
        .node_stage_volume(Request::new(share_stage("pv")))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Internal);
    assert!(
        e.message()
            .ends_with("the user name or password is incorrect; check the storage account key"),
        "{}",
        e.message()
    );
    assert!(mock.host().lock().smb.mappings().is_empty());
}

/// The steps `on_error` sees: only the failed one.
#[tokio::test]
async fn on_error_sees_only_the_failed_step() {
    let inner = Arc::new(Stated::default());
    let (_mock, _node, plugin) = setup(Shared(inner.clone()));
    let stage = disk_stage("pv");
    plugin
        .node_stage_volume(Request::new(stage.clone()))
        .await
        .unwrap();
    // Published before the disk is staged elsewhere: not staged there.
    let mut elsewhere = publish(&stage);
    elsewhere.staging_target_path = staging("other");
    let e = plugin
        .node_publish_volume(Request::new(elsewhere))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    plugin
        .node_publish_volume(Request::new(publish(&stage)))
        .await
        .unwrap();
    assert_eq!(*inner.failed.lock().unwrap(), ["publish"]);
}

/// azurefile's workload identity: a stage without the token answers OK and
/// does nothing on the host; the publish that carries it stages the share
/// at the target; the unpublish unstages it and the mapping goes.
#[tokio::test]
async fn a_stage_deferred_until_the_publish_brings_a_token() {
    let (mock, node, plugin) = setup(Stated {
        token_stage: true,
        ..Default::default()
    });
    let mut stage = share_stage("pv");
    stage
        .volume_context
        .insert("mountWithWIToken".into(), "true".into());
    plugin
        .node_stage_volume(Request::new(stage.clone()))
        .await
        .unwrap();
    assert!(mock.calls().is_empty(), "{:?}", mock.calls());
    assert_eq!(
        node.mount_state(&staging("pv")).await.unwrap(),
        MountState::Missing
    );

    let mut publish = publish(&stage);
    publish.secrets = secret();
    publish
        .secrets
        .insert(TOKENS.into(), r#"{"api://AzureADTokenExchange":{}}"#.into());
    plugin
        .node_publish_volume(Request::new(publish))
        .await
        .unwrap();
    assert_eq!(
        node.mount_state(&target("pv")).await.unwrap(),
        MountState::Linked
    );
    let mappings: Vec<_> = mock
        .host()
        .lock()
        .smb
        .mappings()
        .iter()
        .map(|m| m.remote_path.clone())
        .collect();
    assert_eq!(mappings, [r"\\fileserver\share"]);

    plugin
        .node_unpublish_volume(Request::new(unpublish("pv")))
        .await
        .unwrap();
    plugin
        .node_unstage_volume(Request::new(unstage("pv")))
        .await
        .unwrap();
    assert_eq!(
        node.mount_state(&target("pv")).await.unwrap(),
        MountState::Missing
    );
    assert!(mock.host().lock().smb.mappings().is_empty());
}

/// The share's server and its account come from one `volume` call per
/// request, and the share is mapped with that account.
#[tokio::test]
async fn one_call_names_the_share_and_its_account() {
    let inner = Arc::new(Stated::default());
    let (mock, _node, plugin) = setup(Shared(inner.clone()));
    plugin
        .node_stage_volume(Request::new(share_stage("pv")))
        .await
        .unwrap();
    assert_eq!(inner.resolved.load(Ordering::SeqCst), 1);
    let host = mock.host();
    let host = host.lock();
    let mapping = host.smb.mapping(r"\\fileserver\share").unwrap();
    assert_eq!(
        mapping.credential,
        Some(("smbuser".to_string(), PASSWORD.to_string()))
    );
}
