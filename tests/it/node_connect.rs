//! The node layer's negotiation, deadlines, disk polling and iSCSI.
#![cfg(feature = "mock")]

use std::time::Duration;

use crate::node_support::*;
#[cfg(unix)]
use csi_proxy_client::host::HostConfig;
use csi_proxy_client::host::storage::DiskSpec;
use csi_proxy_client::host::system::ServiceStatus;
use csi_proxy_client::host::{Host, HotAttach};
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::{
    DiskSelector, IscsiAuth, IscsiTarget, MockNode, MountState, Node, NodeOptions, NodeVersions,
    SmbCredentials,
};
#[cfg(unix)]
use csi_proxy_client::server::{GroupVersion, Server};
use csi_proxy_client::{Error, ErrorKind};

const CHAP_TARGET: &str = "iqn.1991-05.com.microsoft:storage01-chap-target";
const OPEN_TARGET: &str = "iqn.1991-05.com.microsoft:storage01-lun0-target";

fn paused_options() -> NodeOptions {
    NodeOptions::default()
        .find_disk_interval(Duration::from_secs(1))
        .find_disk_timeout(Duration::from_secs(120))
}

// ------------------------------------------------------------ negotiation

#[cfg(unix)]
async fn serve(endpoints: &[&str]) -> (Server, tempfile::TempDir, tempfile::TempDir) {
    let sandbox = tempfile::tempdir().unwrap();
    let sockets = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::new(sandbox.path())).unwrap();
    let mut builder = Server::builder().socket_dir(sockets.path()).host(host);
    if !endpoints.is_empty() {
        builder = builder.serve(endpoints.iter().map(|e| GroupVersion::parse(e).unwrap()));
    }
    (builder.start().await.unwrap(), sockets, sandbox)
}

#[cfg(unix)]
#[tokio::test]
async fn each_group_gets_its_newest_served_version_independently() {
    let (server, sockets, _sandbox) = serve(&[
        "disk/v1beta2",
        "disk/v1beta3",
        "volume/v1",
        "volume/v1beta1",
        "filesystem/v1beta1",
        "smb/v1beta2",
        "volume/v2alpha1",
    ])
    .await;
    let node = Node::connect(NodeOptions::default().socket_dir(sockets.path()))
        .await
        .unwrap();
    assert_eq!(
        node.versions().to_string(),
        "disk=v1beta3 volume=v1 filesystem=v1beta1 smb=v1beta2 iscsi=none system=none"
    );
    let alpha = Node::connect(
        NodeOptions::default()
            .socket_dir(sockets.path())
            .allow_alpha(true),
    )
    .await
    .unwrap();
    assert_eq!(alpha.versions().volume.unwrap().to_string(), "v2alpha1");
    let pinned = Node::connect(
        NodeOptions::default()
            .socket_dir(sockets.path())
            .pin(GroupVersion::parse("disk/v1beta2").unwrap()),
    )
    .await
    .unwrap();
    assert_eq!(pinned.versions().disk.unwrap().to_string(), "v1beta2");
    drop((node, alpha, pinned));
    server.shutdown().await.unwrap();
}

#[cfg(unix)]
#[tokio::test]
async fn a_missing_group_names_itself_and_the_versions_tried() {
    let (server, sockets, _sandbox) = serve(&["disk/v1", "volume/v1", "filesystem/v1"]).await;
    let node = Node::connect(NodeOptions::default().socket_dir(sockets.path()))
        .await
        .unwrap();
    assert!(node.versions().smb.is_none());
    let err = node
        .smb_stage(SHARE_DIR, SMB_STAGING, &smb_user())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::GroupUnavailable { group: "smb", tried } if tried == "v1, v1beta2, v1beta1"),
        "{err}"
    );
    assert!(err.to_string().contains("smb"), "{err}");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    // The groups that are there still work.
    node.stage_disk(1u32, STAGING).await.unwrap();
    drop(node);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn pins_are_checked() {
    // Served by the proxy, not spoken by the node layer.
    let disk_v1alpha1 = csi_proxy_client::GroupVersion::parse("disk/v1alpha1").unwrap();
    let err = Node::connect(NodeOptions::default().pin(disk_v1alpha1))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::UnsupportedVersion { group: "disk", version } if version == "v1alpha1"),
        "{err}"
    );
    // A version nobody serves cannot be pinned at all.
    assert_eq!(csi_proxy_client::GroupVersion::parse("disk/v1beta"), None);
}

#[tokio::test]
async fn a_mock_without_a_group_reports_it() {
    let mock = MockHost::new();
    let versions: NodeVersions = "disk=v1 volume=v1 filesystem=v1".parse().unwrap();
    let node = MockNode::new(&mock).versions(versions).build().unwrap();
    let err = node
        .smb_stage(SHARE_DIR, SMB_STAGING, &SmbCredentials::none())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::GroupUnavailable { group: "smb", .. }),
        "{err}"
    );
    let err = MockNode::new(&mock)
        .versions("smb=v1alpha1".parse().unwrap())
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::UnsupportedVersion { .. }), "{err}");
}

// ------------------------------------------------------------ find_disk

#[tokio::test(start_paused = true)]
async fn find_disk_polls_until_the_disk_is_attached() {
    let mock = MockHost::new();
    let node = MockNode::new(&mock)
        .options(paused_options())
        .build()
        .unwrap();
    let host = mock.host().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(4500)).await;
        let spec = DiskSpec {
            location: Some("Integrated : Adapter 3 : Port 0 : Target 0 : LUN 7".into()),
            ..DiskSpec::new(8 * GIB)
        };
        host.attach_disk(spec).unwrap();
    });
    let start = tokio::time::Instant::now();
    let disk = node.find_disk(DiskSelector::Lun(7)).await.unwrap();
    assert_eq!(disk.lun, Some(7));
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    assert_eq!(mock.calls_of("Rescan").len(), 1);
    // Beside the rescan, at once after it, then each second from 1 s to 5 s.
    assert_eq!(mock.calls_of("ListDiskLocations").len(), 7);
}

/// The rescan and the listing go at once: a disk already listed is found
/// when the slower of the two has ended; one that shows only after the
/// rescan is listed again as soon as the rescan ends, not a poll
/// interval later.
#[tokio::test(start_paused = true)]
async fn find_disk_lists_beside_the_rescan_and_again_after_it() {
    let mock = MockHost::new();
    mock.add_latency("Rescan", Duration::from_secs(2));
    mock.add_latency("ListDiskLocations", Duration::from_millis(500));
    let options = paused_options().find_disk_interval(Duration::from_secs(30));
    let node = MockNode::new(&mock).options(options).build().unwrap();
    let start = tokio::time::Instant::now();
    node.find_disk(DiskSelector::Lun(1)).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(2));
    assert_eq!(mock.calls_of("ListDiskLocations").len(), 1);

    let hidden = mock.host().hot_attach(HotAttach::new(8 * GIB)).unwrap();
    let start = tokio::time::Instant::now();
    let disk = node
        .find_disk(DiskSelector::Lun(hidden.lun.unwrap()))
        .await
        .unwrap();
    assert_eq!(disk.number, hidden.number);
    assert_eq!(start.elapsed(), Duration::from_millis(2500));
    assert_eq!(mock.calls_of("ListDiskLocations").len(), 3);
}

#[tokio::test(start_paused = true)]
async fn find_disk_gives_up_listing_what_it_saw() {
    let mock = MockHost::new();
    let options = paused_options()
        .find_disk_interval(Duration::from_secs(2))
        .find_disk_timeout(Duration::from_secs(10));
    let node = MockNode::new(&mock).options(options).build().unwrap();
    let start = tokio::time::Instant::now();
    let err = node.find_disk(DiskSelector::Lun(9)).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(10));
    let Error::DiskNotFound { selector, seen, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(selector, "LUN 9");
    assert!(
        seen.contains("disk 1 (LUN 1") && seen.contains("disk 2"),
        "{seen}"
    );
    assert_eq!(err.kind(), ErrorKind::NotFound);
    // Beside the rescan, at once after it, then at 2, 4, 6, 8 and 10 s.
    assert_eq!(mock.calls_of("ListDiskLocations").len(), 7);
}

// ------------------------------------------------------------ deadlines

#[tokio::test(start_paused = true)]
async fn a_hung_call_ends_at_the_operation_deadline() {
    let mock = MockHost::new();
    mock.add_latency("MountVolume", Duration::from_secs(3600));
    let options = NodeOptions::default().deadline(Duration::from_secs(30));
    let node = MockNode::new(&mock).options(options).build().unwrap();
    let start = tokio::time::Instant::now();
    let err = node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(30));
    assert!(
        matches!(err, Error::DeadlineExceeded { operation: "stage_disk", after } if after == Duration::from_secs(30)),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::TimedOut);
}

#[tokio::test(start_paused = true)]
async fn a_deadline_past_the_longest_allowed_is_clamped_not_a_panic() {
    let mock = MockHost::new();
    let options = NodeOptions::default().deadline(Duration::MAX);
    let node = MockNode::new(&mock).options(options).build().unwrap();
    node.stage_disk(1u32, STAGING).await.unwrap();
    mock.add_latency("MountVolume", Duration::from_secs(400 * 24 * 3600));
    let err = node.stage_disk(2u32, OTHER_STAGING).await.unwrap_err();
    assert!(
        matches!(err, Error::DeadlineExceeded { after, .. } if after == csi_proxy_client::MAX_DURATION),
        "{err}"
    );
}

/// The reference server made slow where the driver waits (MountVolume):
/// the operation ends at its deadline, the connection stays usable, and
/// the server still stops within its grace period.
#[cfg(unix)]
#[tokio::test]
async fn a_slow_server_call_ends_at_the_operation_deadline() {
    let sockets = tempfile::tempdir().unwrap();
    let server = Server::builder()
        .socket_dir(sockets.path())
        .latency("MountVolume", Duration::from_secs(3600))
        .shutdown_grace(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    let options = NodeOptions::default()
        .socket_dir(sockets.path())
        .deadline(Duration::from_millis(300));
    let node = Node::connect(options).await.unwrap();
    let err = node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert!(
        matches!(err, Error::DeadlineExceeded { operation: "stage_disk", after } if after == Duration::from_millis(300)),
        "{err}"
    );
    // Everything before the slow call was done, and other calls still answer.
    assert_eq!(
        node.mount_state(STAGING).await.unwrap(),
        csi_proxy_client::node::MountState::NotMounted
    );
    server.shutdown().await.unwrap();
}

/// A proxy that accepts connections and never answers (a stranded pipe):
/// connecting gives each silent connection up and dials again, and once
/// the connect timeout is spent the group is unavailable; nothing waits
/// out an operation's deadline.
#[cfg(unix)]
#[tokio::test]
async fn a_proxy_that_never_answers_does_not_hang_the_driver() {
    let sockets = tempfile::tempdir().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut held = Vec::new();
    for group in ["disk", "volume", "filesystem", "smb"] {
        let path = sockets.path().join(format!("csi-proxy-{group}-v1.sock"));
        let listener = tokio::net::UnixListener::bind(path).unwrap();
        let accepted = accepted.clone();
        held.push(tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                accepted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                open.push(stream);
            }
        }));
    }
    let connect = csi_proxy_client::ConnectOptions::default()
        .with_connect_timeout(Duration::from_millis(400))
        .with_handshake_timeout(Duration::from_millis(100));
    let options = NodeOptions::default()
        .socket_dir(sockets.path())
        .connect_options(connect)
        .deadline(Duration::from_secs(600));
    let node = Node::connect(options).await.unwrap();
    assert_eq!(node.versions().disk, None);
    let err = node.unstage(STAGING).await.unwrap_err();
    assert!(matches!(err, Error::GroupUnavailable { .. }), "{err}");
    // Each silent connection was given up for another.
    let accepted = accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert!(accepted >= 8, "{accepted} connections to 4 groups");
    for task in held {
        task.abort();
    }
}

// ------------------------------------------------------------ iSCSI

async fn iscsi_attach_and_detach(node: &Node, host: &Host) {
    host.lock()
        .system
        .set_status("MSiSCSI", ServiceStatus::Running)
        .unwrap();
    let target = IscsiTarget {
        auth: IscsiAuth::Chap {
            username: "someuser".into(),
            secret: "verysecretpass".into(),
        },
        ..IscsiTarget::new("10.0.0.20", CHAP_TARGET)
    };
    assert!(!format!("{target:?}").contains("verysecretpass"));
    let disks = node.iscsi_attach(&target).await.unwrap();
    assert_eq!(disks.len(), 1);
    assert_eq!(node.iscsi_attach(&target).await.unwrap(), disks);
    let other = node
        .iscsi_attach(&IscsiTarget::new("10.0.0.20", OPEN_TARGET))
        .await
        .unwrap();
    assert_eq!(other.len(), 1);
    let disk = node
        .find_disk(DiskSelector::Number(disks[0]))
        .await
        .unwrap();
    node.stage_disk(&disk, STAGING).await.unwrap();
    // Its disk holds a staged volume: no logout under it. Before, the
    // session was dropped and the disk with it, the volume still mounted.
    let err = node.iscsi_detach(&target).await.unwrap_err();
    assert!(matches!(err, Error::IscsiTargetInUse { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::InUse);
    assert!(matches!(
        node.mount_state(STAGING).await.unwrap(),
        csi_proxy_client::node::MountState::Mounted { .. }
    ));
    node.unstage(STAGING).await.unwrap();

    node.iscsi_detach(&target).await.unwrap();
    assert_eq!(
        host.lock().iscsi.portals().len(),
        1,
        "the other target is connected"
    );
    node.iscsi_detach(&IscsiTarget::new("10.0.0.20", OPEN_TARGET))
        .await
        .unwrap();
    assert!(host.lock().iscsi.portals().is_empty());
    node.iscsi_detach(&target).await.unwrap();

    let err = node
        .iscsi_attach(&IscsiTarget::new("10.0.0.20", "iqn.2000-01.example:none"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::IscsiTargetNotFound { .. }), "{err}");
}

#[tokio::test]
async fn iscsi_on_the_mock() {
    let mock = MockHost::new();
    let node = Node::from_mock(&mock);
    iscsi_attach_and_detach(&node, mock.host()).await;
}

#[cfg(unix)]
#[tokio::test]
async fn iscsi_on_the_server() {
    let sandbox = tempfile::tempdir().unwrap();
    let sockets = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::new(sandbox.path())).unwrap();
    let server = Server::builder()
        .socket_dir(sockets.path())
        .host(host.clone())
        .start()
        .await
        .unwrap();
    let node = Node::connect(
        NodeOptions::default()
            .socket_dir(sockets.path())
            .iscsi(true)
            .system(true),
    )
    .await
    .unwrap();
    assert_eq!(
        node.versions().to_string(),
        "disk=v1 volume=v1 filesystem=v1 smb=v1 iscsi=v1alpha2 system=v1alpha1"
    );
    assert!(!node.bios_serial_number().await.unwrap().is_empty());
    iscsi_attach_and_detach(&node, &host).await;
    drop(node);
    server.shutdown().await.unwrap();
}

#[cfg(feature = "host-process")]
#[tokio::test]
async fn iscsi_on_the_host_process() {
    use csi_proxy_client::host_process::FakeWindows;
    let sandbox = tempfile::tempdir().unwrap();
    let host = Host::new(csi_proxy_client::host::HostConfig::new(sandbox.path())).unwrap();
    let fake = std::sync::Arc::new(FakeWindows::new(host.clone()));
    let node = Node::host_process_with(fake, NodeOptions::default().iscsi(true).system(true));
    assert_eq!(
        node.versions().to_string(),
        "disk=v1 volume=v1 filesystem=v1 smb=v1 iscsi=v1alpha2 system=v1alpha1"
    );
    iscsi_attach_and_detach(&node, &host).await;
    if let Err(violations) = host.check_invariants() {
        panic!("invariants broken: {violations:#?}");
    }
}

#[cfg(feature = "host-process")]
#[tokio::test]
async fn iscsi_on_the_host_process_only_when_asked_for() {
    let node = Node::host_process_with(
        std::sync::Arc::new(csi_proxy_client::host_process::FakeWindows::new(
            MockHost::new().host().clone(),
        )),
        NodeOptions::default(),
    );
    let err = node
        .iscsi_attach(&IscsiTarget::new("10.0.0.20", OPEN_TARGET))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::GroupUnavailable { group: "iscsi", .. }),
        "{err}"
    );
}

/// The deprecated mock constructors (kept for one release) build the node
/// `MockNode` builds: the same versions, and a working node.
#[tokio::test]
#[allow(deprecated)]
async fn the_deprecated_mock_constructors_build_what_mock_node_builds() {
    let mock = MockHost::new();
    let versions: NodeVersions = "disk=v1beta2 volume=v1beta2 filesystem=v1beta1 smb=v1beta1"
        .parse()
        .unwrap();
    let old = Node::from_mock_with(&mock, versions).unwrap();
    let older = Node::from_mock_with_options(&mock, versions, NodeOptions::default()).unwrap();
    let new = MockNode::new(&mock).versions(versions).build().unwrap();
    assert_eq!(old.versions(), new.versions());
    assert_eq!(older.versions(), new.versions());
    assert_eq!(new.versions(), versions);
    // The default builder is `Node::from_mock`'s node.
    assert_eq!(
        MockNode::new(&mock).build().unwrap().versions(),
        Node::from_mock(&mock).versions()
    );
    old.stage_disk(1u32, STAGING).await.unwrap();
    assert!(matches!(
        new.mount_state(STAGING).await.unwrap(),
        MountState::Mounted { .. }
    ));
    // A version the node layer does not speak fails as before.
    let bad: NodeVersions = "smb=v1alpha1".parse().unwrap();
    assert!(matches!(
        Node::from_mock_with(&mock, bad),
        Err(Error::UnsupportedVersion { .. })
    ));
}

/// HostProcess mode over a fake takes the fake as is, in an `Arc`, as an
/// `Arc<dyn WindowsHost>`, or a configured `HostProcess` (what the
/// deprecated `from_host_process` took): the same node each time.
#[cfg(feature = "host-process")]
#[tokio::test]
#[allow(deprecated)]
async fn host_process_with_takes_a_fake_an_arc_or_a_configured_backend() {
    use csi_proxy_client::host_process::{FakeWindows, HostProcess, WindowsHost};
    use std::sync::Arc;
    let mock = MockHost::new();
    let fake = || FakeWindows::new(mock.host().clone());
    let dyn_host: Arc<dyn WindowsHost> = Arc::new(fake());
    let nodes = [
        Node::host_process_with(fake(), NodeOptions::default()),
        Node::host_process_with(Arc::new(fake()), NodeOptions::default()),
        Node::host_process_with(dyn_host, NodeOptions::default()),
        Node::host_process_with(HostProcess::new(Arc::new(fake())), NodeOptions::default()),
        Node::from_host_process(HostProcess::new(Arc::new(fake())), NodeOptions::default()),
    ];
    for node in &nodes {
        assert_eq!(
            node.versions().to_string(),
            "disk=v1 volume=v1 filesystem=v1 smb=v1 iscsi=none system=none"
        );
    }
    // They act on the one simulated host.
    nodes[0].stage_disk(1u32, STAGING).await.unwrap();
    for node in &nodes[1..] {
        assert!(matches!(
            node.mount_state(STAGING).await.unwrap(),
            MountState::Mounted { .. }
        ));
    }
}
