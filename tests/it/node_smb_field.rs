//! SMB failures Windows nodes show in production, replayed on every
//! backend (MockHost, the reference server, the HostProcess fake): a
//! mapping left `Disconnected` by a restart (azurefile-csi-driver#3416,
//! csi-driver-smb#1219), one account per server (error 1219,
//! azurefile-csi-driver#2974, csi-driver-smb#1007), and mappings leaked by
//! a driver restart or a crash (csi-driver-smb#1039, #1035). Every
//! scenario writes a file on the share between two stages and finds it
//! after.
#![cfg(feature = "mock")]

use crate::node_support::*;
use csi_proxy_client::Error;
use csi_proxy_client::host::Host;
use csi_proxy_client::host::smb::{MappingStatus, ShareAccess};
use csi_proxy_client::node::{MountState, Node, NodeOptions, SmbCredentials, SmbStore};

node_tests![
    an_unavailable_mapping_in_use_is_never_removed,
    a_mapping_in_use_is_not_reused_with_another_account,
    another_account_on_a_server_in_use_is_refused_clearly,
    error_1219_from_a_mapping_whose_link_is_gone_is_recovered,
    error_1219_from_a_mapping_this_node_does_not_know_is_reported,
    references_survive_a_restart_and_reconcile_removes_only_unused_mappings,
    a_reconnecting_mapping_in_use_is_waited_for_never_removed,
    a_node_restarted_with_default_options_leaves_no_mapping,
    an_outage_never_removes_a_mapping_in_use,
    reconcile_during_an_outage_keeps_staged_shares,
    a_link_to_the_share_root_is_never_taken_for_the_stage,
    a_wrong_password_never_rides_a_mapping_in_use,
    a_mapping_left_disconnected_by_a_restart_is_never_removed_in_use,
];

const OTHER_SHARE_DIR: &str = r"\\fileserver\other\pv5";
const OTHER_SHARE_ROOT: &str = r"\\fileserver\other";
const OTHER_STAGING: &str = r"c:\var\lib\kubelet\plugins\kubernetes.io\csi\smb\pv5\globalmount";

fn other_user() -> SmbCredentials {
    SmbCredentials::new("otheruser", "0ther-Passw0rd!")
}

/// A second share on the default server, `\\fileserver\other`, for
/// `smbuser` and `otheruser`, with its volume directory `pv5`; and
/// `otheruser` allowed on the default share too.
fn add_other_share(host: &Host) {
    let mut node = host.lock();
    node.smb
        .add_account("fileserver", "otheruser", "0ther-Passw0rd!")
        .unwrap();
    let users = ShareAccess::Users(["smbuser".to_string(), "otheruser".to_string()].into());
    let dir = node
        .smb
        .add_share("fileserver", "other", users.clone())
        .unwrap();
    std::fs::create_dir_all(dir.join("pv5")).unwrap();
    node.smb.add_share("fileserver", "share", users).unwrap();
}

fn status(host: &Host, root: &str) -> Option<MappingStatus> {
    host.lock().smb.mapping(root).map(|m| m.status)
}

/// Stages `pv3` of the default share as `smbuser`.
async fn stage_pv3(node: &Node) {
    node.smb_stage(SHARE_DIR, SMB_STAGING, &smb_user())
        .await
        .unwrap();
}

/// Stages `pv5` of `\\fileserver\other` as `otheruser`.
async fn stage_pv5_as_otheruser(node: &Node) -> Result<(), Error> {
    node.smb_stage(OTHER_SHARE_DIR, OTHER_STAGING, &other_user())
        .await
}

/// `pv3` staged by the fixture's node, and a file written on it: the file.
async fn pv3_with_a_file(f: &Fixture) -> std::path::PathBuf {
    stage_pv3(&f.node).await;
    write_on_share(&f.host, "kept.txt")
}

/// Writes a file on the share, as a workload would between two stages.
fn write_on_share(host: &Host, name: &str) -> std::path::PathBuf {
    let dir = host
        .lock()
        .smb
        .share_dir("fileserver", "share")
        .unwrap()
        .join("pv3");
    let file = dir.join(name);
    std::fs::write(&file, b"written between two stages").unwrap();
    file
}

/// A node that gives a mapping that is not OK a short time to come back
/// (through the proxy, which cannot read its status).
async fn settling_node(f: &Fixture) -> Node {
    let options = NodeOptions::default().smb_settle(std::time::Duration::from_millis(200));
    f.another_node_with(options).await
}

/// A mapping left `Disconnected` by a restart while volumes are staged
/// through it (azurefile-csi-driver#3416, csi-driver-smb#1219) is never
/// removed by a stage (issue 42, finding 12: the node cannot tell it from
/// an outage): the stage links, or fails UNAVAILABLE until Windows
/// reconnects it.
async fn a_mapping_left_disconnected_by_a_restart_is_never_removed_in_use(f: &Fixture) {
    let node = &settling_node(f).await;
    stage_pv3(node).await;
    let file = write_on_share(&f.host, "kept.txt");
    f.host.lock().smb.reboot();
    for (remote, path) in [
        (SHARE_DIR, SMB_STAGING),
        (SHARE_OTHER_DIR, SMB_OTHER_STAGING),
    ] {
        let staged = node.smb_stage(remote, path, &smb_user()).await;
        if let Err(e) = &staged {
            assert_eq!(e.kind(), csi_proxy_client::ErrorKind::Unavailable, "{e}");
        }
        assert_eq!(
            status(&f.host, SHARE_ROOT),
            Some(MappingStatus::Disconnected),
            "the mapping in use is kept ({staged:?})"
        );
    }
    // Windows reconnects the mapping: the stages succeed.
    f.host
        .lock()
        .smb
        .set_mapping_status(SHARE_ROOT, MappingStatus::Ok)
        .unwrap();
    stage_pv3(node).await;
    node.smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &smb_user())
        .await
        .unwrap();
    assert!(file.exists(), "the file written between two stages is kept");
    node.unstage(SMB_STAGING).await.unwrap();
    assert!(mapped(&f.host));
    node.unstage(SMB_OTHER_STAGING).await.unwrap();
    assert!(!mapped(&f.host));
}

/// An `Unavailable` mapping in use is never removed by a new volume's
/// stage (issue 42, findings 1 and 12).
async fn an_unavailable_mapping_in_use_is_never_removed(f: &Fixture) {
    let node = &settling_node(f).await;
    stage_pv3(node).await;
    let file = write_on_share(&f.host, "kept.txt");
    {
        let mut host = f.host.lock();
        host.smb.open_file(SHARE_ROOT);
        host.smb
            .set_mapping_status(SHARE_ROOT, MappingStatus::Unavailable)
            .unwrap();
    }
    let staged = node
        .smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &smb_user())
        .await;
    if let Err(e) = &staged {
        assert_eq!(e.kind(), csi_proxy_client::ErrorKind::Unavailable, "{e}");
    }
    assert_eq!(f.host.lock().smb.closed_under_use(), []);
    assert_eq!(
        status(&f.host, SHARE_ROOT),
        Some(MappingStatus::Unavailable)
    );
    f.host
        .lock()
        .smb
        .set_mapping_status(SHARE_ROOT, MappingStatus::Ok)
        .unwrap();
    node.smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &smb_user())
        .await
        .unwrap();
    assert!(file.exists());
    // Both volumes counted: the first unstage keeps the mapping.
    node.unstage(SMB_OTHER_STAGING).await.unwrap();
    assert!(mapped(&f.host));
    node.unstage(SMB_STAGING).await.unwrap();
    assert!(!mapped(&f.host));
}

async fn a_mapping_in_use_is_not_reused_with_another_account(f: &Fixture) {
    add_other_share(&f.host);
    let node = &f.node;
    stage_pv3(node).await;
    // The proxy would reuse the healthy mapping: volume B would run on
    // volume A's account.
    let e = node
        .smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &other_user())
        .await
        .unwrap_err();
    let Error::SmbCredentialsConflict { share, user, .. } = &e else {
        panic!("{e}");
    };
    assert_eq!((share.as_str(), user.as_str()), (SHARE_ROOT, "otheruser"));
    assert!(e.to_string().contains("smbuser"), "{e}");
    assert!(!node.exists(SMB_OTHER_STAGING).await.unwrap());
    // The volume of the same account still stages.
    node.smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &smb_user())
        .await
        .unwrap();
    node.unstage(SMB_OTHER_STAGING).await.unwrap();
    node.unstage(SMB_STAGING).await.unwrap();
    assert!(!mapped(&f.host));
}

async fn another_account_on_a_server_in_use_is_refused_clearly(f: &Fixture) {
    add_other_share(&f.host);
    let node = &f.node;
    let file = pv3_with_a_file(f).await;
    let e = stage_pv5_as_otheruser(node).await.unwrap_err();
    assert!(matches!(e, Error::SmbCredentialsConflict { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains(SHARE_ROOT) && text.contains("1219"),
        "names the mapping in the way: {text}"
    );
    assert_eq!(
        status(&f.host, SHARE_ROOT),
        Some(MappingStatus::Ok),
        "untouched"
    );
    // Once the share's volume is unstaged, the other account maps.
    node.unstage(SMB_STAGING).await.unwrap();
    stage_pv5_as_otheruser(node).await.unwrap();
    assert!(file.exists());
    node.unstage(OTHER_STAGING).await.unwrap();
    assert!(status(&f.host, OTHER_SHARE_ROOT).is_none());
}

async fn error_1219_from_a_mapping_whose_link_is_gone_is_recovered(f: &Fixture) {
    add_other_share(&f.host);
    let node = &f.node;
    let file = pv3_with_a_file(f).await;
    // The link goes, the mapping and its reference stay (a crash between
    // the two steps of an unstage).
    node.remove(SMB_STAGING).await.unwrap();
    // Windows refuses the other account with 1219 and the share being
    // staged has no mapping at all: the mapping in the way is released.
    stage_pv5_as_otheruser(node).await.unwrap();
    assert!(!mapped(&f.host), "the unused mapping is gone");
    assert_eq!(status(&f.host, OTHER_SHARE_ROOT), Some(MappingStatus::Ok));
    assert!(file.exists());
    node.unstage(OTHER_STAGING).await.unwrap();
    assert!(status(&f.host, OTHER_SHARE_ROOT).is_none());
}

async fn error_1219_from_a_mapping_this_node_does_not_know_is_reported(f: &Fixture) {
    add_other_share(&f.host);
    // Another driver (its own references) uses the server as smbuser.
    let other_driver = f.another_node().await;
    stage_pv3(&other_driver).await;
    let e = stage_pv5_as_otheruser(&f.node).await.unwrap_err();
    assert!(matches!(e, Error::SmbCredentialsConflict { .. }), "{e}");
    assert!(e.to_string().contains("1219"), "{e}");
    assert_eq!(
        status(&f.host, SHARE_ROOT),
        Some(MappingStatus::Ok),
        "a mapping this node does not know is never removed"
    );
    assert!(!f.node.exists(OTHER_STAGING).await.unwrap());
    other_driver.unstage(SMB_STAGING).await.unwrap();
    stage_pv5_as_otheruser(&f.node).await.unwrap();
    f.node.unstage(OTHER_STAGING).await.unwrap();
}

async fn references_survive_a_restart_and_reconcile_removes_only_unused_mappings(f: &Fixture) {
    add_other_share(&f.host);
    let state = tempfile::tempdir().unwrap();
    let options = || NodeOptions::default().smb_store(SmbStore::directory(state.path()));
    let before = f.another_node_with(options()).await;
    stage_pv3(&before).await;
    before
        .smb_stage(OTHER_SHARE_DIR, OTHER_STAGING, &smb_user())
        .await
        .unwrap();
    let file = write_on_share(&f.host, "kept.txt");
    // The driver dies after removing the link of pv5, before its mapping.
    before.remove(OTHER_STAGING).await.unwrap();
    drop(before);

    let restarted = f.another_node_with(options()).await;
    let removed = restarted.smb_reconcile().await.unwrap();
    assert_eq!(removed, [OTHER_SHARE_ROOT.to_lowercase()]);
    assert!(
        status(&f.host, OTHER_SHARE_ROOT).is_none(),
        "unused: removed"
    );
    assert_eq!(
        status(&f.host, SHARE_ROOT),
        Some(MappingStatus::Ok),
        "in use: kept"
    );
    assert!(restarted.smb_reconcile().await.unwrap().is_empty());
    // The restarted driver still counts pv3: its unstage takes the mapping.
    restarted.unstage(SMB_STAGING).await.unwrap();
    assert!(!mapped(&f.host));
    assert!(file.exists());
}

/// Volumes on a share already mapped for a staged volume need only a link
/// each, so their stages run together instead of one at a time behind the
/// server's lock: a boot storm of many volumes on a few shares. With the
/// mapping call taking 1 s of (paused) host time, three such stages take
/// about 1 s together; one at a time, 3 s.
#[tokio::test(start_paused = true)]
async fn stages_of_a_mapped_share_run_together() {
    let host = csi_proxy_client::mock::MockHost::new();
    make_share_dirs(host.host());
    let node = Node::from_mock(&host);
    stage_pv3(&node).await;
    host.add_latency("NewSmbGlobalMapping", std::time::Duration::from_secs(1));
    let staging =
        |pv: &str| format!(r"c:\var\lib\kubelet\plugins\kubernetes.io\csi\smb\{pv}\globalmount");
    let stage = |pv: &'static str| {
        let (node, staging) = (&node, staging(pv));
        async move {
            let remote = format!(r"{SHARE_ROOT}\{pv}");
            node.smb_stage(&remote, &staging, &smb_user()).await
        }
    };
    let start = tokio::time::Instant::now();
    let (a, b, c) = tokio::join!(stage("pv4"), stage("a"), stage("b"));
    let took = start.elapsed();
    for staged in [a, b, c] {
        staged.unwrap();
    }
    assert!(
        took < std::time::Duration::from_secs(2),
        "the stages waited for each other: {took:?} for three"
    );
    for pv in ["pv4", "a", "b"] {
        assert_eq!(
            node.mount_state(&staging(pv)).await.unwrap(),
            MountState::Linked
        );
    }
}

/// Found case 8: a mapping that is not OK was removed with force (and its
/// files closed) by the next stage, a transient `Reconnecting` included,
/// with no look at the volumes using it. A pod holds a file open through
/// the mapping of pv3; the mapping reconnects while pv4 is staged: the
/// stage waits for it and reuses it, and the pod's file stays open.
async fn a_reconnecting_mapping_in_use_is_waited_for_never_removed(f: &Fixture) {
    let options = NodeOptions::default().smb_settle(std::time::Duration::from_secs(5));
    let node = f.another_node_with(options).await;
    stage_pv3(&node).await;
    {
        let mut host = f.host.lock();
        host.smb.open_file(SHARE_ROOT);
        host.smb
            .set_mapping_status(SHARE_ROOT, MappingStatus::Reconnecting)
            .unwrap();
    }
    let host = f.host.clone();
    let reconnected = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(700));
        host.lock()
            .smb
            .set_mapping_status(SHARE_ROOT, MappingStatus::Ok)
            .unwrap();
    });
    node.smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &smb_user())
        .await
        .unwrap();
    reconnected.join().unwrap();
    assert_eq!(
        f.host.lock().smb.closed_under_use(),
        [],
        "no mapping removed under the pod's open file"
    );
    assert_eq!(status(&f.host, SHARE_ROOT), Some(MappingStatus::Ok));
    for path in [SMB_STAGING, SMB_OTHER_STAGING] {
        assert_eq!(node.mount_state(path).await.unwrap(), MountState::Linked);
    }
}

/// Issue 35: a driver with `NodeOptions::default()` (references in memory)
/// stages three volumes of one share, restarts (a new `Node` over the same
/// host), and unstages them: the mapping stays while a volume links to
/// the share, and goes with the last. The node learns it from the links
/// on the host, as csi-driver-smb does; a node that cannot read them
/// (through the reference server from Linux) knows only its store, which
/// the restart emptied, and leaves the mapping.
async fn a_node_restarted_with_default_options_leaves_no_mapping(f: &Fixture) {
    let staging =
        |pv: &str| format!(r"c:\var\lib\kubelet\plugins\kubernetes.io\csi\smb\{pv}\globalmount");
    let before = f.another_node_with(NodeOptions::default()).await;
    for pv in ["pv3", "a", "b"] {
        before
            .smb_stage(&format!(r"{SHARE_ROOT}\{pv}"), &staging(pv), &smb_user())
            .await
            .unwrap();
    }
    let file = write_on_share(&f.host, "kept.txt");
    drop(before);
    let restarted = f.another_node_with(NodeOptions::default()).await;
    for (i, pv) in ["a", "pv3", "b"].into_iter().enumerate() {
        restarted.unstage(&staging(pv)).await.unwrap();
        let last = i == 2;
        assert!(!f.host.exists(&staging(pv)), "{pv}: link removed");
        assert_eq!(
            mapped(&f.host),
            !last || !f.sees_the_host(),
            "after unstaging {pv}"
        );
    }
    assert!(file.exists());
}

/// Findings 1 and 12 (issue 42): a brief outage of the SMB server while a
/// second volume of a share is staged. csi-proxy (v0.2.2 to v1.3.0) and
/// the HostProcess backend check the share root of a mapping that is OK
/// and remove it with force when the check fails: the pod's open file was
/// closed. A stage of a share whose mapping serves staged volumes only
/// links (HostProcess) or fails UNAVAILABLE; never a removal.
async fn an_outage_never_removes_a_mapping_in_use(f: &Fixture) {
    // A short settle: what is checked is what the stage sends during the
    // outage, not how long it waits for the share first (10 s by default).
    let node = &f
        .another_node_with(NodeOptions::default().smb_settle(std::time::Duration::from_secs(1)))
        .await;
    stage_pv3(node).await;
    let file = write_on_share(&f.host, "kept.txt");
    {
        let mut host = f.host.lock();
        host.smb.open_file(SHARE_ROOT);
        host.smb.set_server_reachable("fileserver", false).unwrap();
    }
    let staged = node
        .smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &smb_user())
        .await;
    assert_eq!(
        f.host.lock().smb.closed_under_use(),
        [],
        "no mapping removed under the pod's open file ({staged:?})"
    );
    assert!(mapped(&f.host), "the mapping in use stays");
    match &staged {
        Ok(()) => assert_eq!(
            node.mount_state(SMB_OTHER_STAGING).await.unwrap(),
            MountState::Linked
        ),
        Err(e) => assert_eq!(e.kind(), csi_proxy_client::ErrorKind::Unavailable, "{e}"),
    }
    f.host
        .lock()
        .smb
        .set_server_reachable("fileserver", true)
        .unwrap();
    node.smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &smb_user())
        .await
        .unwrap();
    assert_eq!(status(&f.host, SHARE_ROOT), Some(MappingStatus::Ok));
    assert!(file.exists());
    node.unstage(SMB_OTHER_STAGING).await.unwrap();
    assert!(mapped(&f.host));
    node.unstage(SMB_STAGING).await.unwrap();
    assert!(!mapped(&f.host));
}

/// Finding 13 (issue 42): `smb_reconcile` while the server is unreachable.
/// A link whose target cannot be read is not "no link": the reference and
/// the mapping stay.
async fn reconcile_during_an_outage_keeps_staged_shares(f: &Fixture) {
    let state = tempfile::tempdir().unwrap();
    let options = || NodeOptions::default().smb_store(SmbStore::directory(state.path()));
    let before = f.another_node_with(options()).await;
    stage_pv3(&before).await;
    let file = write_on_share(&f.host, "kept.txt");
    drop(before);
    {
        let mut host = f.host.lock();
        host.smb.open_file(SHARE_ROOT);
        host.smb.set_server_reachable("fileserver", false).unwrap();
    }
    let restarted = f.another_node_with(options()).await;
    let removed = restarted.smb_reconcile().await.unwrap();
    assert!(removed.is_empty(), "{removed:?}");
    assert!(mapped(&f.host), "the mapping of a staged share stays");
    assert_eq!(f.host.lock().smb.closed_under_use(), []);
    assert!(f.host.exists(SMB_STAGING), "the link stays");
    f.host
        .lock()
        .smb
        .set_server_reachable("fileserver", true)
        .unwrap();
    // The reference was kept: the unstage takes the mapping with it.
    restarted.unstage(SMB_STAGING).await.unwrap();
    assert!(!mapped(&f.host));
    assert!(file.exists());
}

/// Finding 10 (issue 42): a staging path left linked to the share's root
/// (the link `create_dir` made there, its `Rmdir` failed) with the
/// stage's reference kept. The retry accepted the link as the stage: the
/// pod would read every volume's directory on the share. A link is
/// accepted only where its target is the directory asked for, read where
/// the node reads links (MockHost, HostProcess).
async fn a_link_to_the_share_root_is_never_taken_for_the_stage(f: &Fixture) {
    let node = &f.node;
    // What the failed stage left: a link to the root, and its reference.
    node.smb_stage(SHARE_ROOT, SMB_STAGING, &smb_user())
        .await
        .unwrap();
    let staged = node
        .smb_stage(SHARE_DIR, SMB_STAGING, &smb_user())
        .create_dir(true)
        .await;
    if !f.sees_the_host() {
        // The node reads no link through the proxy from Linux.
        return;
    }
    let e = staged.unwrap_err();
    assert!(matches!(e, Error::PathInUse { .. }), "{e}");
    assert!(f.host.exists(SMB_STAGING));
    node.unstage(SMB_STAGING).await.unwrap();
    assert!(!mapped(&f.host));
    // Staged with the directory made, and no link to the root left
    // anywhere beside the staging path.
    node.smb_stage(r"\\fileserver\share\made", SMB_STAGING, &smb_user())
        .create_dir(true)
        .await
        .unwrap();
    let dir = f
        .host
        .lock()
        .smb
        .share_dir("fileserver", "share")
        .unwrap()
        .join("made");
    assert!(dir.is_dir());
    let parent = SMB_STAGING.rsplit_once('\\').unwrap().0;
    let names = f.host.list_dir(parent).unwrap();
    assert_eq!(names, ["globalmount"], "nothing else left beside the stage");
    node.unstage(SMB_STAGING).await.unwrap();
    assert!(!mapped(&f.host));
}

/// Finding 11 (issue 42): a volume naming a share mapped on the node and
/// its account with another password got the share (Windows reuses the
/// mapping whatever the credentials). A mapping is reused only with the
/// credentials it was made with: another password is PermissionDenied.
async fn a_wrong_password_never_rides_a_mapping_in_use(f: &Fixture) {
    let state = tempfile::tempdir().unwrap();
    let options = || NodeOptions::default().smb_store(SmbStore::directory(state.path()));
    let node = &f.another_node_with(options()).await;
    stage_pv3(node).await;
    let wrong = SmbCredentials::new("smbuser", "not-the-password");
    let e = node
        .smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &wrong)
        .await
        .unwrap_err();
    assert_eq!(
        e.kind(),
        csi_proxy_client::ErrorKind::PermissionDenied,
        "{e}"
    );
    assert!(!f.host.exists(SMB_OTHER_STAGING), "no link for the pod");
    assert_eq!(status(&f.host, SHARE_ROOT), Some(MappingStatus::Ok));
    // A restarted node knows the credentials from its store.
    let restarted = f.another_node_with(options()).await;
    let e = restarted
        .smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &wrong)
        .await
        .unwrap_err();
    assert_eq!(
        e.kind(),
        csi_proxy_client::ErrorKind::PermissionDenied,
        "{e}"
    );
    restarted
        .smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &smb_user())
        .await
        .unwrap();
    // The password is never written down.
    for entry in walk(state.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("Sm8-Passw0rd!"), "{}", entry.display());
    }
    restarted.unstage(SMB_OTHER_STAGING).await.unwrap();
    restarted.unstage(SMB_STAGING).await.unwrap();
    assert!(!mapped(&f.host));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
