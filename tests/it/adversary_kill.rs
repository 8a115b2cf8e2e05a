//! Adversary review: process death (`Node::kill`), judged from the
//! simulated host. A test that shows a loss asserts the safe outcome and
//! failed on the code reviewed; the three that did are FIXED (below). One
//! the code withstood passes and says WITHSTOOD.
//!
//! Every attack runs two plugin processes over one state directory
//! (`NodeRecords::directory`, and `SmbStore::directory` for shares): the
//! first is killed with a host call held at the host (`add_latency`), the
//! second acts as kubelet's next calls reach it, and an hour passes on the
//! paused clock before the host is judged.
//!
//! A note on faithfulness: the watch of a pending `path` or `removing`
//! record (`NodeRecords::watched`) is process-global, so in a test the
//! second `Node` inherits the first one's watch (begun when the first wrote
//! the record), where a real second process would begin its own when it
//! first reads the record. The attacks below are timed so that each holds
//! with the second process's own watch, begun at its first call.
#![cfg(feature = "mock")]

use std::future::IntoFuture;
use std::time::Duration;

use crate::adversary_session2::until_ok;
use crate::node_support::*;
use csi_proxy_client::Error;
use csi_proxy_client::host::Host;
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::{Node, NodeOptions, NodeRecords, SmbStore};

/// One state directory of the node, records and SMB references, shared
/// by every process of an attack.
struct State {
    records: tempfile::TempDir,
    smb: tempfile::TempDir,
}

impl State {
    fn new() -> State {
        State {
            records: tempfile::tempdir().unwrap(),
            smb: tempfile::tempdir().unwrap(),
        }
    }

    /// The options of a plugin process over this state (default deadline
    /// 120 s, default settle 600 s).
    fn options(&self) -> NodeOptions {
        NodeOptions::default()
            .records(NodeRecords::directory(self.records.path()))
            .smb_store(SmbStore::directory(self.smb.path()))
    }
}

/// Waits until the `rpc` call number `n` (counted from `before`, the
/// number of such calls seen before) has reached the host, then clears
/// every injected latency (the calls already sent keep theirs).
async fn sent_then_clear(mock: &MockHost, rpc: &str, before: usize) {
    while mock.calls_of(rpc).len() == before {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    mock.clear_faults();
}

/// What the host has at `path` (lstat), for the messages.
fn at(host: &Host, path: &str) -> String {
    format!("{:?}", host.entry(path).unwrap())
}

/// An hour later (late host work landed), the share still serves the pod
/// staged at `staging` (`pv`, for the messages): no file closed under
/// use, the share mapped, the volume's link there.
async fn after_an_hour_the_share_serves(host: &Host, staging: &str, pv: &str) {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let closed = format!("{:?}", host.lock().smb.closed_under_use());
    assert_eq!(closed, "[]", "a pod's open file closed under use");
    assert!(mapped(host), "the mapping of {pv}'s stage gone");
    assert!(
        mounted(host, staging),
        "{pv}'s link gone: {}",
        at(host, staging)
    );
}

/// Kills `node` once its operation `work` has been running for `after`;
/// the operation's answer (an error: it was killed).
async fn kill_during<T: Send + 'static>(
    node: &Node,
    after: Duration,
    work: impl std::future::Future<Output = Result<T, Error>> + Send + 'static,
) -> Error {
    let task = tokio::spawn(work);
    tokio::time::sleep(after).await;
    node.kill();
    match task.await.unwrap() {
        Ok(_) => panic!("the killed operation answered OK"),
        Err(e) => e,
    }
}

/// FIXED (this attack and the two after it failed before the fix): a
/// `path` or `removing` record now names its writer's deadline, a joining
/// operation dates the record anew, and a record is pending until the
/// settle time plus that deadline (`Node::settle_of`).
///
/// ATTACK: a `path` record's settle time is counted from when the record
/// was written (or first read), not from when the operation's last host
/// call was sent. An operation that joins a dead process's record
/// (`PathStep::Join`: kubelet's retry, the same change) records nothing of
/// its own, and its own calls may be sent up to the node's deadline
/// (120 s) after it first read the record; one held at the host for less
/// than the settle time (the assumption the settle time rests on) still
/// lands after the settle time has passed, and so after the opposite
/// operation, let through by then, has answered OK.
///
/// Sequence (proxy mode, v1.3, records and references in a state
/// directory, default deadline 120 s and settle 600 s): disk 1 staged at
/// STAGING; process 1 publishes TARGET (its parent made by kubelet) and
/// is killed 5 s in, its first call (`IsSymlink`) held at the host, so
/// its `path` record (make) stays. Process 2, started at once: kubelet's
/// retry of the publish at 5 s joins the record; its `IsSymlink` takes
/// 110 s at the host, its `CreateSymlink`, sent at 115 s, 550 s (less
/// than the settle time); the publish is stopped at its deadline (125 s,
/// DeadlineExceeded). The pod is deleted: kubelet unpublishes TARGET,
/// PathPending until the record has been watched for the settle time
/// (600 s in this test; 605 s with process 2's own watch), then OK: the
/// target holds nothing then. At 665 s the `CreateSymlink` lands.
///
/// Host: a link at TARGET, to the staged volume, after its unpublish
/// answered OK; kubelet has forgotten the pod. One process with no
/// death shows it too (`a_stopped_publishs_late_link_never_lands_after_the_unpublish`). Safe outcome: the unpublish waits
/// until the last call sent under the path has had the settle time (or
/// a joining operation records its own time), and removes the link.
#[tokio::test(start_paused = true)]
async fn a_joined_publishs_late_link_never_lands_after_the_unpublish() {
    let state = State::new();
    let f = Fixture::mock(Family::V1, state.options()).await;
    let mock = f.mock.as_ref().unwrap();
    f.node.stage_disk(1u32, STAGING).await.unwrap();
    let parent = TARGET_C.rsplit_once('\\').unwrap().0;
    f.host.create_dir(parent).unwrap();
    let start = tokio::time::Instant::now();

    // Process 1: killed during its publish, nothing sent that changes.
    mock.add_latency("IsSymlink", Duration::from_secs(60));
    let node = f.node.clone();
    let e = kill_during(&f.node, Duration::from_secs(5), async move {
        node.publish(STAGING, TARGET).await
    })
    .await;
    assert!(matches!(e, Error::Connect { .. }), "{e:?}");
    mock.clear_faults();

    // Process 2: kubelet's retry joins the dead one's record; its calls
    // are slow at the host and it is stopped at its deadline.
    let next = f.another_node_with(state.options()).await;
    mock.add_latency("IsSymlink", Duration::from_secs(110));
    mock.add_latency("CreateSymlink", Duration::from_secs(550));
    let before = mock.calls_of("CreateSymlink").len();
    let node = next.clone();
    let publish = tokio::spawn(async move { node.publish(STAGING, TARGET).await });
    sent_then_clear(mock, "CreateSymlink", before).await;
    let sent = start.elapsed();
    let e = publish.await.unwrap().unwrap_err();
    assert!(
        matches!(e, Error::DeadlineExceeded { .. }),
        "the retry: {e:?}"
    );

    // The pod is deleted: kubelet unpublishes until OK.
    until_ok(Duration::from_secs(20), || next.unpublish(TARGET)).await;
    let answered = start.elapsed();
    assert!(
        !f.host.exists(TARGET_C),
        "the unpublish answered OK with {} there",
        at(&f.host, TARGET_C)
    );
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        !f.host.exists(TARGET_C),
        "the unpublish answered OK at {answered:?}; the joined publish's CreateSymlink, sent at \
         {sent:?} and 550 s at the host (under the 600 s settle), landed after it: {} at the \
         pod's target",
        at(&f.host, TARGET_C)
    );
}

/// ATTACK: the root of the two attacks above without a death or a join:
/// the `path` record is written before the operation's first host call,
/// and its settle time is counted from then, while the operation may send
/// its last call up to its deadline later.
///
/// Sequence (proxy mode, v1.3, state directory, defaults; one process):
/// disk 1 staged at STAGING; publish TARGET (its parent made by kubelet):
/// its record written at 0 s, its `IsSymlink` 110 s at the host, its
/// `CreateSymlink`, sent at 110 s, 550 s; stopped at its deadline (120 s).
/// kubelet unpublishes: PathPending, then OK at 600 s. At 660 s the link
/// lands.
///
/// Host: a link at TARGET after its unpublish answered OK. Safe outcome:
/// the record's time is that of the last call sent under it (or the
/// settle time counted from the deadline of the operation that wrote or
/// joined it).
#[tokio::test(start_paused = true)]
async fn a_stopped_publishs_late_link_never_lands_after_the_unpublish() {
    let state = State::new();
    let f = Fixture::mock(Family::V1, state.options()).await;
    let mock = f.mock.as_ref().unwrap();
    f.node.stage_disk(1u32, STAGING).await.unwrap();
    let parent = TARGET_C.rsplit_once('\\').unwrap().0;
    f.host.create_dir(parent).unwrap();
    let start = tokio::time::Instant::now();
    mock.add_latency("IsSymlink", Duration::from_secs(110));
    mock.add_latency("CreateSymlink", Duration::from_secs(550));
    let before = mock.calls_of("CreateSymlink").len();
    let node = f.node.clone();
    let publish = tokio::spawn(async move { node.publish(STAGING, TARGET).await });
    sent_then_clear(mock, "CreateSymlink", before).await;
    let sent = start.elapsed();
    let e = publish.await.unwrap().unwrap_err();
    assert!(matches!(e, Error::DeadlineExceeded { .. }), "{e:?}");
    until_ok(Duration::from_secs(20), || f.node.unpublish(TARGET)).await;
    let answered = start.elapsed();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        !f.host.exists(TARGET_C),
        "the unpublish answered OK at {answered:?}; the stopped publish's CreateSymlink, sent \
         at {sent:?} and 550 s at the host, landed after it: {} at the pod's target",
        at(&f.host, TARGET_C)
    );
}

/// ATTACK: the same, on an SMB stage that only links (its share mapped
/// for another volume staged here: the proxy's `NewSmbGlobalMapping`
/// links, and records no `removing`), and what follows when the other
/// volume is unstaged.
///
/// Sequence (proxy mode, v1.3, state directory, default deadline and
/// settle): process 1 stages `pv4` (maps the share); it stages `pv3` and
/// is killed 5 s in, its `PathExists` of the path held at the host (its
/// `path` record stays; no reference yet). Process 2: kubelet's retry of
/// `pv3`'s stage at 5 s joins; its `PathExists` takes 110 s, its
/// `NewSmbGlobalMapping` (link only), sent at about 115 s, 550 s; stopped
/// at its deadline. kubelet unstages `pv3` (the volume's pod gone):
/// PathPending, then OK at 600 s (605 s with the process's own watch):
/// no link there, its reference dropped, the mapping kept for `pv4`. At
/// about 665 s the link lands at `pv3`'s staging path. kubelet unstages
/// `pv4`: OK.
///
/// Host: a link at `pv3`'s staging path after its unstage answered OK,
/// and the share's global mapping after every unstage answered OK (the
/// unstage of `pv4` reads `pv3`'s link beside it and keeps the mapping
/// for it, a volume no reference records and kubelet no longer knows).
/// Safe outcome: no link and no mapping left.
#[tokio::test(start_paused = true)]
async fn a_joined_smb_stages_late_link_never_lands_after_the_unstage() {
    let state = State::new();
    let f = Fixture::mock(Family::V1, state.options()).await;
    let mock = f.mock.as_ref().unwrap();
    let user = smb_user();
    f.node
        .smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &user)
        .await
        .unwrap();
    let start = tokio::time::Instant::now();

    mock.add_latency("PathExists", Duration::from_secs(60));
    let node = f.node.clone();
    let e = kill_during(&f.node, Duration::from_secs(5), async move {
        node.smb_stage(SHARE_DIR, SMB_STAGING, &smb_user()).await
    })
    .await;
    assert!(matches!(e, Error::Connect { .. }), "{e:?}");
    mock.clear_faults();

    let next = f.another_node_with(state.options()).await;
    mock.add_latency("PathExists", Duration::from_secs(110));
    mock.add_latency("NewSmbGlobalMapping", Duration::from_secs(550));
    let before = mock.calls_of("NewSmbGlobalMapping").len();
    let node = next.clone();
    let stage =
        tokio::spawn(async move { node.smb_stage(SHARE_DIR, SMB_STAGING, &smb_user()).await });
    sent_then_clear(mock, "NewSmbGlobalMapping", before).await;
    let sent = start.elapsed();
    let e = stage.await.unwrap().unwrap_err();
    assert!(
        matches!(e, Error::DeadlineExceeded { .. }),
        "the retry: {e:?}"
    );

    until_ok(Duration::from_secs(20), || {
        next.unstage(SMB_STAGING).into_future()
    })
    .await;
    let answered = start.elapsed();
    assert!(
        !f.host.exists(SMB_STAGING),
        "the unstage answered OK with {} there",
        at(&f.host, SMB_STAGING)
    );
    tokio::time::sleep(Duration::from_secs(3600)).await;
    until_ok(Duration::from_secs(20), || {
        next.unstage(SMB_OTHER_STAGING).into_future()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        !f.host.exists(SMB_STAGING) && !mapped(&f.host),
        "pv3's unstage answered OK at {answered:?}, pv4's later; the joined stage's \
         NewSmbGlobalMapping, sent at {sent:?} and 550 s at the host (under the 600 s settle), \
         landed after: {} at pv3's staging path, the share mapped: {}",
        at(&f.host, SMB_STAGING),
        mapped(&f.host)
    );
}

/// Whether the host has a link at `path` (a mount point or a symlink,
/// lstat).
fn mounted(host: &Host, path: &str) -> bool {
    matches!(
        host.entry(path).unwrap(),
        Some(csi_proxy_client::host::namespace::Entry::Link(_))
    )
}

/// Whether disk 1 is online on the host.
fn online(f: &Fixture) -> bool {
    f.host.run(|s| s.get_disk_state(1).unwrap())
}

/// WITHSTOOD: a stage killed with its `MountVolume` at the host, and the
/// same disk staged at another path by the next process before that
/// mount lands (the pod rescheduled to another volume name; kubelet's
/// retry of the first path).
///
/// Sequence (state directory, defaults): process 1 stages disk 1 at
/// STAGING, its `MountVolume` held 60 s, killed at 5 s (no stage record
/// for STAGING yet, its `path` record stays). Process 2 stages disk 1 at
/// OTHER_STAGING at 5 s: OK (the volume formatted, mounted there); the pod
/// writes a file there. At 60 s the dead process's mount lands at STAGING
/// (the volume at two paths, neither record knowing of the other). The
/// retry of the stage at STAGING: `StagedElsewhere`. kubelet unstages
/// STAGING with offline: PathPending until the settle time, then OK,
/// the disk kept online for OTHER_STAGING. An hour passes.
///
/// Host: one `FormatVolume`; disk 1 online; the pod's file read back
/// through OTHER_STAGING; nothing mounted at STAGING.
#[tokio::test(start_paused = true)]
async fn a_killed_stages_late_mount_beside_a_stage_elsewhere_loses_nothing() {
    let state = State::new();
    let f = Fixture::mock(Family::V1, state.options()).await;
    let mock = f.mock.as_ref().unwrap();
    mock.add_latency("MountVolume", Duration::from_secs(60));
    let node = f.node.clone();
    kill_during(&f.node, Duration::from_secs(5), async move {
        node.stage_disk(1u32, STAGING).await
    })
    .await;
    mock.clear_faults();
    let next = f.another_node_with(state.options()).await;
    until_ok(Duration::from_secs(20), || {
        next.stage_disk(1u32, OTHER_STAGING).into_future()
    })
    .await;
    let other_c = format!("C:{OTHER_STAGING}");
    let file = format!(r"{other_c}\pod-data");
    f.host.write_file(&file, b"the pod's data").unwrap();
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert!(
        mounted(&f.host, STAGING_C),
        "the dead process's mount did not land: {}",
        at(&f.host, STAGING_C)
    );
    let retry = next.stage_disk(1u32, STAGING).await;
    assert!(
        matches!(retry, Err(Error::StagedElsewhere { .. })),
        "the retry at STAGING: {retry:?}"
    );
    until_ok(Duration::from_secs(20), || {
        next.unstage(STAGING).offline(true).into_future()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let formats = mock.calls_of("FormatVolume").len();
    assert_eq!(formats, 1, "formatted again");
    assert!(
        online(&f),
        "disk 1 taken offline under OTHER_STAGING's stage"
    );
    assert_eq!(
        f.host.read_file(&file).ok().as_deref(),
        Some(&b"the pod's data"[..]),
        "the pod's file lost"
    );
    assert!(
        !mounted(&f.host, STAGING_C),
        "a mount at STAGING after its unstage answered OK: {}",
        at(&f.host, STAGING_C)
    );
}

/// WITHSTOOD: an unstage with offline killed with its `SetDiskState`
/// (offline) at the host for 300 s, and the next process staging the
/// disk at another path (the pod rescheduled) while it may still land.
///
/// Sequence (state directory, defaults): disk 1 staged at STAGING;
/// process 1 unstages it with offline, the offline held 300 s, killed at
/// 5 s. Process 2 stages disk 1 at OTHER_STAGING, kubelet retrying:
/// `RemovalPending` until the offline's record has had the settle time;
/// the offline lands at 300 s; the stage then brings the disk online and
/// mounts it: OK. The pod writes; an hour passes.
///
/// Host: disk 1 online, the pod's file there, one `FormatVolume`.
#[tokio::test(start_paused = true)]
async fn a_killed_unstages_late_offline_never_lands_under_the_next_stage() {
    let state = State::new();
    let f = Fixture::mock(Family::V1, state.options()).await;
    let mock = f.mock.as_ref().unwrap();
    f.node.stage_disk(1u32, STAGING).await.unwrap();
    mock.add_latency("SetDiskState", Duration::from_secs(300));
    let node = f.node.clone();
    kill_during(&f.node, Duration::from_secs(5), async move {
        node.unstage(STAGING).offline(true).await
    })
    .await;
    assert!(
        mock.calls_of("SetDiskState").len() == 1,
        "the offline was not sent before the kill"
    );
    mock.clear_faults();
    let next = f.another_node_with(state.options()).await;
    let first = next.stage_disk(1u32, OTHER_STAGING).await;
    assert!(
        matches!(first, Err(Error::RemovalPending { .. })),
        "the first stage while the offline may land: {first:?}"
    );
    until_ok(Duration::from_secs(20), || {
        next.stage_disk(1u32, OTHER_STAGING).into_future()
    })
    .await;
    let other_c = format!("C:{OTHER_STAGING}");
    let file = format!(r"{other_c}\pod-data");
    f.host.write_file(&file, b"the pod's data").unwrap();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        online(&f),
        "disk 1 taken offline under OTHER_STAGING's stage"
    );
    assert_eq!(
        f.host.read_file(&file).ok().as_deref(),
        Some(&b"the pod's data"[..]),
        "the pod's file lost"
    );
    assert_eq!(mock.calls_of("FormatVolume").len(), 1, "formatted again");
}

/// WITHSTOOD: an SMB unstage killed with the share's last
/// `RemoveSmbGlobalMapping` at the host for 300 s, and the next process
/// staging another volume of the share.
///
/// Sequence (state directory, references in a directory, defaults): `pv3`
/// staged; process 1 unstages it (its last reference: the mapping is
/// removed), `RemoveSmbGlobalMapping` held 300 s, killed at 5 s (`pv3`'s
/// link and reference still there). Process 2: kubelet retries `pv3`'s
/// unstage (`PathPending`/`RemovalPending` until the settle time, then
/// OK), then stages `pv4`, retrying: the share mapped again and linked,
/// OK. (A stage of `pv4` tried before `pv3`'s unstage has answered
/// answers `SmbShareUnavailable` after the settle time: `pv3`'s link and
/// reference count the mapping, removed by the late call, in use.) A pod opens a file through the
/// mapping; an hour passes.
///
/// Host: no file closed under use, the share mapped, `pv4`'s link there.
#[tokio::test(start_paused = true)]
async fn a_killed_smb_unstages_late_unmap_never_lands_under_the_next_stage() {
    let state = State::new();
    let f = Fixture::mock(Family::V1, state.options()).await;
    let mock = f.mock.as_ref().unwrap();
    let user = smb_user();
    f.node
        .smb_stage(SHARE_DIR, SMB_STAGING, &user)
        .await
        .unwrap();
    mock.add_latency("RemoveSmbGlobalMapping", Duration::from_secs(300));
    let node = f.node.clone();
    kill_during(&f.node, Duration::from_secs(5), async move {
        node.unstage(SMB_STAGING).await
    })
    .await;
    assert_eq!(mock.calls_of("RemoveSmbGlobalMapping").len(), 1);
    mock.clear_faults();
    let next = f.another_node_with(state.options()).await;
    // kubelet retries both: the unstage that did not answer, and the
    // stage of the pod rescheduled.
    until_ok(Duration::from_secs(60), || {
        next.unstage(SMB_STAGING).into_future()
    })
    .await;
    until_ok(Duration::from_secs(60), || {
        next.smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &user)
            .into_future()
    })
    .await;
    f.host.lock().smb.open_file(SHARE_ROOT);
    after_an_hour_the_share_serves(&f.host, SMB_OTHER_STAGING, "pv4").await;
}

/// WITHSTOOD: `smb_reconcile` killed with the `RemoveSmbGlobalMapping` of
/// a reference it dropped at the host for 300 s, and the next process
/// staging a volume of the share.
///
/// Sequence (state directory, references in a directory, defaults):
/// `pv4` staged, its link then removed by hand (`Node::remove`), its
/// reference left; process 1 (the plugin starting) runs `smb_reconcile`:
/// the reference holds no link and is dropped, the mapping with it, its
/// `RemoveSmbGlobalMapping` held 300 s; killed at 5 s. Process 2 runs
/// its start-up `smb_reconcile` until it answers (`RemovalPending` until
/// the removal's record has had the settle time; then it drops `pv4`'s
/// reference), and kubelet stages `pv3`, retrying until OK; a pod opens a
/// file through the mapping; an hour passes. (A start-up reconcile run
/// once, as drivers do, answers `RemovalPending` and leaves `pv4`'s
/// reference: every stage of the share then answers
/// `SmbShareUnavailable`, the mapping gone and counted in use by a
/// reference with no link, until a later reconcile; seen, not asserted.)
///
/// Host: no file closed under use, the share mapped, `pv3`'s link there.
#[tokio::test(start_paused = true)]
async fn a_killed_reconciles_late_unmap_never_lands_under_the_next_stage() {
    let state = State::new();
    let f = Fixture::mock(Family::V1, state.options()).await;
    let mock = f.mock.as_ref().unwrap();
    let user = smb_user();
    f.node
        .smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &user)
        .await
        .unwrap();
    f.node.remove(SMB_OTHER_STAGING).await.unwrap();
    mock.add_latency("RemoveSmbGlobalMapping", Duration::from_secs(300));
    let node = f.node.clone();
    kill_during(&f.node, Duration::from_secs(5), async move {
        node.smb_reconcile().await
    })
    .await;
    assert_eq!(mock.calls_of("RemoveSmbGlobalMapping").len(), 1);
    mock.clear_faults();
    let next = f.another_node_with(state.options()).await;
    // The driver's start-up reconcile, retried until it answers (the
    // first ones: RemovalPending), then kubelet's stage of pv3.
    until_ok(Duration::from_secs(60), || next.smb_reconcile()).await;
    until_ok(Duration::from_secs(60), || {
        next.smb_stage(SHARE_DIR, SMB_STAGING, &user).into_future()
    })
    .await;
    f.host.lock().smb.open_file(SHARE_ROOT);
    after_an_hour_the_share_serves(&f.host, SMB_STAGING, "pv3").await;
}

/// WITHSTOOD: two processes alive at once; the first, mapping the share
/// for `pv3` (the server held alone, `NewSmbGlobalMapping` 60 s at the
/// host), is killed while the second waits for the server's claim to
/// stage `pv4`.
///
/// Sequence (state directory, references in a directory, defaults):
/// process 1 stages `pv3`, its `NewSmbGlobalMapping` held 60 s; process 2
/// stages `pv4` at 1 s and waits for the server; process 1 killed at 5 s:
/// its claim goes, process 2 goes on and finds the map recorded as a
/// removal of the share (`RemovalPending`), kubelet retrying until OK;
/// the dead process's map lands at 60 s (the mapping, `pv3`'s link). A pod
/// of `pv4` opens a file through the mapping; kubelet stages `pv3` again
/// (OK), then unstages it (OK); an hour passes.
///
/// Host: no file closed under use; `pv4` linked and the share mapped;
/// nothing at `pv3`'s path. Then `pv4` unstaged: no mapping left.
#[tokio::test(start_paused = true)]
async fn two_processes_at_once_one_killed_mapping_loses_nothing() {
    let state = State::new();
    let f = Fixture::mock(Family::V1, state.options()).await;
    let mock = f.mock.as_ref().unwrap();
    let next = f.another_node_with(state.options()).await;
    mock.add_latency("NewSmbGlobalMapping", Duration::from_secs(60));
    let node = f.node.clone();
    let first =
        tokio::spawn(async move { node.smb_stage(SHARE_DIR, SMB_STAGING, &smb_user()).await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    mock.clear_faults();
    let node = next.clone();
    let second = tokio::spawn(async move {
        node.smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &smb_user())
            .await
    });
    tokio::time::sleep(Duration::from_secs(4)).await;
    f.node.kill();
    first.await.unwrap().unwrap_err();
    let second = second.await.unwrap();
    let user = smb_user();
    if second.is_err() {
        until_ok(Duration::from_secs(20), || {
            next.smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &user)
                .into_future()
        })
        .await;
    }
    f.host.lock().smb.open_file(SHARE_ROOT);
    until_ok(Duration::from_secs(20), || {
        next.smb_stage(SHARE_DIR, SMB_STAGING, &user).into_future()
    })
    .await;
    until_ok(Duration::from_secs(20), || {
        next.unstage(SMB_STAGING).into_future()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let closed = format!("{:?}", f.host.lock().smb.closed_under_use());
    assert_eq!(
        closed, "[]",
        "a pod's open file closed under use ({second:?})"
    );
    assert!(mapped(&f.host), "pv4's mapping gone");
    assert!(mounted(&f.host, SMB_OTHER_STAGING), "pv4's link gone");
    assert!(
        !f.host.exists(SMB_STAGING),
        "pv3's path after its unstage answered OK: {}",
        at(&f.host, SMB_STAGING)
    );
    until_ok(Duration::from_secs(20), || {
        next.unstage(SMB_OTHER_STAGING).into_future()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        !mapped(&f.host) && !f.host.exists(SMB_OTHER_STAGING),
        "left after every unstage answered OK: mapped {}, pv4 {}",
        mapped(&f.host),
        at(&f.host, SMB_OTHER_STAGING)
    );
}
