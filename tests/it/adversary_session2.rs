//! Adversary review, session 2: attacks on the path claims and path
//! records, the detached disk's unstage, and the SMB decisions, judged
//! from the simulated host. A test that shows a loss asserts the safe
//! outcome, fails on the code reviewed and is ignored with "open: ...";
//! one the code withstands passes and says WITHSTOOD.
//!
//! Fixed after the review, each test failing before its fix: error
//! 1219's recovery read another volume's link during an outage as absent
//! and unmapped it in use (both modes); it now decides as
//! `smb_reconcile` does.
//!
//! Fixed after the review, each failing before: a retry of the same
//! change joined the stopped attempt (`path_step`'s `Join`), whose late
//! `Rmdir` then removed the retry's mount or link (disk stage, publish,
//! SMB stage, and through `smb_reconcile` an unmap in use), and a stopped
//! unstage's late unmap or offline landed under the next stage. Every
//! removal is now recorded until it answers (`src/node/removal.rs`), and
//! what it removes from waits (`RemovalPending`) while it may still land;
//! a retry after a lost answer of a call that makes still joins at once.
//!
//! Open (ignored): proxy mode's default path records are in memory, so a
//! restart forgets a stopped stage (csi-node-server's default state
//! directory withstands it); the detached disk's unstage deletes a file
//! put at the staging path behind the node's back.
#![cfg(feature = "mock")]

use std::future::IntoFuture;
use std::time::Duration;

use crate::node_support::*;
use csi_proxy_client::Error;
use csi_proxy_client::node::NodeOptions;

/// Calls `work` as kubelet does, each try dropped after `wait`, until
/// one answers OK; the number of tries.
pub(crate) async fn until_ok<F, Fut, T>(wait: Duration, mut work: F) -> u32
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    for attempt in 1..10_000 {
        if let Ok(Ok(_)) = tokio::time::timeout(wait, work()).await {
            return attempt;
        }
        tokio::time::sleep(wait / 10).await;
    }
    panic!("never answered OK");
}

/// The kubelet staging path of `pv1`, spelled as Windows reads the same
/// directory: a `.` component, a doubled separator, a trailing dot, a
/// trailing space (Win32 drops the first two and strips the last two).
const ALIASES: [&str; 4] = [
    r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv1\.\globalmount",
    r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv1\\globalmount",
    r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv1\globalmount.",
    r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv1\globalmount ",
];

/// WITHSTOOD: the path claim and the records were keyed by the path as
/// given, normalised only for case, `/` and a missing drive, while Windows
/// (and the simulator, which follows Win32's rules) also drops `.`
/// components and empty ones and strips trailing dots and spaces; the
/// same directory spelled another way was another claim and another
/// record (caught then only by the disk's stage record, `StagedElsewhere`).
/// Paths are now spelled as Windows resolves them (`path::local`), so
/// each spelling is the one path and waits for the stopped unstage.
///
/// Sequence (proxy mode, v1.3, default records, deadline 30 s): disk 1
/// staged at STAGING; its unstage flushes, then its `Rmdir` of the mount
/// point takes 150 s at the host and the unstage is stopped at 30 s; a
/// stage of the same directory spelled with `\.\` (or `\\`, or a trailing
/// dot or space) fails `RemovalPending`, never OK, so no pod is started
/// on a mount about to go.
#[tokio::test(start_paused = true)]
async fn an_alias_of_the_staging_path_waits_for_the_stopped_unstage() {
    for alias in ALIASES {
        let (f, r) = stage_after_a_stopped_unstage(alias).await;
        assert!(
            matches!(r, Err(Error::RemovalPending { .. })),
            "{alias:?}: {r:?}"
        );
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert!(!f.host.exists(STAGING_C), "{alias:?}");
    }
}

/// WITHSTOOD: the control of the attack above: the stage spelled as the
/// stopped unstage was waits for it (`RemovalPending`: its `Rmdir` did
/// not answer).
#[tokio::test(start_paused = true)]
async fn the_same_spelling_waits_for_the_stopped_unstage() {
    let (_f, r) = stage_after_a_stopped_unstage(STAGING_C).await;
    assert!(matches!(r, Err(Error::RemovalPending { .. })), "{r:?}");
}

async fn stage_after_a_stopped_unstage(spelling: &str) -> (Fixture, Result<String, Error>) {
    let options = NodeOptions::default().deadline(Duration::from_secs(30));
    let f = Fixture::mock(Family::V1, options).await;
    let mock = f.mock.as_ref().unwrap();
    f.node.stage_disk(1u32, STAGING).await.unwrap();
    mock.add_latency("Rmdir", Duration::from_secs(150));
    let e = f.node.unstage(STAGING).await.unwrap_err();
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
    mock.clear_faults();
    let r = f.node.stage_disk(1u32, spelling).await;
    (f, r)
}

/// ATTACK: the same-change `Join` rule. A retry of a stopped stage runs
/// beside what the stopped attempt still has at the host, "since both
/// converge whatever lands" (docs/safety.md). They do not when the
/// stopped attempt's late call is a removal of what the retry then makes:
/// the stage removes kubelet's empty directory before it makes the mount
/// point.
///
/// Sequence (proxy mode, v1.3, default records, deadline 30 s): the
/// staging path is an empty directory; stage disk 1 there; its `Rmdir` of
/// that directory takes 150 s at the host and the stage is stopped at
/// 30 s; kubelet's retry (the host answering promptly again) finds the
/// `make` record, joins, removes the directory, makes the mount point,
/// mounts, answers OK; the pod writes a file through it; at 150 s the
/// first attempt's `Rmdir` lands on the staging path.
///
/// Host: the mount point of the staged volume removed after its stage
/// answered OK (the pod's file no longer reachable at the staging path;
/// the staged volume unmounted under a running pod). Safe outcome: the
/// retry waits (PathPending or the claim) until the stopped attempt's
/// calls have settled, or the mount stays.
#[tokio::test(start_paused = true)]
async fn a_stopped_stages_late_rmdir_never_removes_the_retrys_mount() {
    let options = NodeOptions::default().deadline(Duration::from_secs(30));
    let f = Fixture::mock(Family::V1, options).await;
    let mock = f.mock.as_ref().unwrap();
    f.host.create_dir(STAGING_C).unwrap();
    mock.add_latency("Rmdir", Duration::from_secs(150));
    let e = f.node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
    mock.clear_faults();
    let tries = until_ok(Duration::from_secs(20), || {
        f.node.stage_disk(1u32, STAGING).into_future()
    })
    .await;
    let file = format!(r"{STAGING_C}\pod-data");
    f.host.write_file(&file, b"the pod's data").unwrap();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        f.host.exists(&file),
        "the retry's stage answered OK after {tries} tries, then the stopped attempt's Rmdir \
         removed the staged volume's mount point: {} Rmdir calls, {} MountVolume",
        mock.calls_of("Rmdir").len(),
        mock.calls_of("MountVolume").len()
    );
}

/// ATTACK: the same `Join` rule at publish: publish removes kubelet's
/// empty target directory before it links the target.
///
/// Sequence (proxy mode, v1.3, default records, deadline 30 s): disk 1
/// staged; the pod's target is an empty directory; publish; its `Rmdir`
/// of the target takes 150 s at the host and the publish is stopped at
/// 30 s; the retry joins, removes the directory, links the target to the
/// staging path, answers OK; the pod writes a file; at 150 s the first
/// attempt's `Rmdir` lands on the target.
///
/// Host: the pod's link removed after its publish answered OK; the pod's
/// file no longer at its target (a container started next writes to the
/// node's own disk at that path). Safe outcome: the link stays.
#[tokio::test(start_paused = true)]
async fn a_stopped_publishs_late_rmdir_never_removes_the_pods_link() {
    let options = NodeOptions::default().deadline(Duration::from_secs(30));
    let f = Fixture::mock(Family::V1, options).await;
    let mock = f.mock.as_ref().unwrap();
    f.node.stage_disk(1u32, STAGING).await.unwrap();
    f.host.create_dir(TARGET_C).unwrap();
    mock.add_latency("Rmdir", Duration::from_secs(150));
    let e = f.node.publish(STAGING, TARGET).await.unwrap_err();
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
    mock.clear_faults();
    let tries = until_ok(Duration::from_secs(20), || {
        let node = f.node.clone();
        async move { node.publish(STAGING, TARGET).await }
    })
    .await;
    let file = format!(r"{TARGET_C}\pod-data");
    f.host.write_file(&file, b"the pod's data").unwrap();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        f.host.exists(&file),
        "the publish answered OK after {tries} tries, then the stopped attempt's Rmdir removed \
         the pod's link: {} Rmdir calls",
        mock.calls_of("Rmdir").len()
    );
}

/// ATTACK: the same `Join` rule on an SMB stage: the stage removes
/// kubelet's empty staging directory before it links the share.
///
/// Sequence (proxy mode, v1.3, default records, deadline 30 s): the
/// staging path is an empty directory; stage the share's `pv3` there; its
/// `Rmdir` of that directory takes 150 s at the host and the stage is
/// stopped at 30 s; the retry joins, removes the directory, maps the
/// share, links the path, answers OK; the pod writes a file; at 150 s the
/// first attempt's `Rmdir` lands on the staging path.
///
/// Host: the staged volume's link removed after its stage answered OK,
/// its mapping and reference left (a pod's writes to its path fail or go
/// to the node's disk). Safe outcome: the link stays.
#[tokio::test(start_paused = true)]
async fn a_stopped_smb_stages_late_rmdir_never_removes_the_retrys_link() {
    let options = NodeOptions::default().deadline(Duration::from_secs(30));
    let f = Fixture::mock(Family::V1, options).await;
    let mock = f.mock.as_ref().unwrap();
    f.host.create_dir(SMB_STAGING).unwrap();
    mock.add_latency("Rmdir", Duration::from_secs(150));
    let e = f
        .node
        .smb_stage(SHARE_DIR, SMB_STAGING, &smb_user())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
    mock.clear_faults();
    let user = smb_user();
    let tries = until_ok(Duration::from_secs(20), || {
        f.node
            .smb_stage(SHARE_DIR, SMB_STAGING, &user)
            .into_future()
    })
    .await;
    let file = format!(r"{SMB_STAGING}\pod-data");
    f.host.write_file(&file, b"the pod's data").unwrap();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        f.host.exists(&file),
        "the SMB stage answered OK after {tries} tries, then the stopped attempt's Rmdir removed \
         its link (mapped: {}): {} Rmdir calls",
        mapped(&f.host),
        mock.calls_of("Rmdir").len()
    );
}

/// ATTACK, the attack above carried on: the plugin restarts (records kept)
/// and calls `smb_reconcile`, as a driver does when it starts, while the
/// pod holds a file open on the share.
///
/// Sequence: as above (the SMB stage's retry answers OK, the stopped
/// attempt's `Rmdir` removes the link at 150 s) while the pod has a file
/// open on the share; then `smb_reconcile`: the volume's reference
/// finds no link at its path, is dropped, and the mapping, used by no
/// other reference, is removed with force.
///
/// Host: `smb.closed_under_use()` names the share: the running pod's
/// open file closed under it. Safe outcome: no mapping removed while a
/// volume is staged on it (the stage answered OK and no unstage came).
#[tokio::test(start_paused = true)]
async fn a_stopped_smb_stages_late_rmdir_never_leads_to_an_unmap_in_use() {
    let options = NodeOptions::default().deadline(Duration::from_secs(30));
    let f = Fixture::mock(Family::V1, options).await;
    let mock = f.mock.as_ref().unwrap();
    f.host.create_dir(SMB_STAGING).unwrap();
    mock.add_latency("Rmdir", Duration::from_secs(150));
    let user = smb_user();
    let e = f
        .node
        .smb_stage(SHARE_DIR, SMB_STAGING, &user)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
    mock.clear_faults();
    until_ok(Duration::from_secs(20), || {
        f.node
            .smb_stage(SHARE_DIR, SMB_STAGING, &user)
            .into_future()
    })
    .await;
    f.host.lock().smb.open_file(SHARE_ROOT);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let removed = f.node.smb_reconcile().await;
    let closed = format!("{:?}", f.host.lock().smb.closed_under_use());
    assert!(
        closed == "[]",
        "reconcile answered {removed:?} and closed the running pod's open file: {closed:?}"
    );
}

/// ATTACK: the detached disk's unstage (finding 6's fix) removes what is
/// at the staging path on the proof of the path's stage record: the
/// record proves what the path held when it was staged, not what it holds
/// now. In proxy mode a file and a dangling mount point read alike, and
/// the proxy's `Rmdir` deletes a file as readily.
///
/// Sequence (proxy mode, v1.3, default records): disk 1 staged at
/// STAGING (its record names disk 1's id); the volume is unmounted behind
/// the node's back and the directory left; something on the node (an
/// administrator's copy, a backup agent, a mis-set hostPath pod) writes a
/// file there in its place; the cloud detaches disk 1; kubelet unstages
/// STAGING.
///
/// Host: the file at the staging path deleted by the unstage. Safe
/// outcome: PathInUse, the file kept (a file is not a mount point this
/// node made). Contrived (needs a file put at a kubelet staging path), so
/// ranked low.
#[tokio::test]
#[ignore = "open: dangling_mount trusts the stage record for what the path holds now; Rmdir deletes a file"]
async fn a_file_at_a_detached_disks_staging_path_is_never_deleted() {
    let f = Fixture::mock(Family::V1, NodeOptions::default()).await;
    let volume = f.node.stage_disk(1u32, STAGING).await.unwrap();
    f.host
        .run(|s| s.unmount_volume(&volume, STAGING_C))
        .expect("unmounted behind the node's back");
    if f.host.exists(STAGING_C) {
        f.host
            .run(|s| s.rmdir(STAGING_C, false))
            .expect("the empty directory removed");
    }
    f.host.write_file(STAGING_C, b"someone's file").unwrap();
    f.host.detach_disk(1).unwrap();
    let r = f.node.unstage(STAGING).await;
    assert!(
        f.host.exists(STAGING_C),
        "the unstage answered {r:?} and deleted the file at the staging path"
    );
}

/// ATTACK: path records in memory (proxy mode's default, "survives
/// retries, clones and every other `Node` of the process") and a plugin
/// restart: the path record of a stopped stage is lost with its process,
/// while csi-proxy still holds the stage's last host call. Issue 42 asks
/// that across a restart the node fail closed where it cannot know.
///
/// Sequence (proxy mode, v1.3, `NodeOptions::default()` with a 30 s
/// deadline): stage `pv3` of the share; its `NewSmbGlobalMapping` (which
/// makes the link too, its local path given) takes 150 s at the host; the stage is stopped at 30 s; the plugin restarts (a new
/// `Node`, its records and SMB store new and empty, as a new process's
/// are); kubelet unstages: nothing at the path, OK; the link lands.
///
/// Host: a link to the share (and its mapping) at a staging path whose
/// unstage answered OK; nothing will unstage it again (finding 5 across a
/// restart). Safe outcome: the link never lands after the unstage's OK,
/// or the unstage of a path the node cannot know fails (UNAVAILABLE)
/// until the settle time has passed. With csi-node-server's default
/// (records beside the socket) the `path` record survives; this is the
/// library's `NodeOptions::default()` in proxy mode.
#[tokio::test(start_paused = true)]
#[ignore = "open: proxy mode's default path records are in memory; a restart forgets a stopped stage whose link is still at the proxy"]
async fn a_restart_never_lets_a_stopped_stages_link_land_after_the_unstage() {
    use csi_proxy_client::node::{NodeRecords, SmbStore};
    let deadline = Duration::from_secs(30);
    let f = Fixture::mock(Family::V1, NodeOptions::default().deadline(deadline)).await;
    let mock = f.mock.as_ref().unwrap();
    mock.add_latency("NewSmbGlobalMapping", Duration::from_secs(150));
    let e = f
        .node
        .smb_stage(SHARE_DIR, SMB_STAGING, &smb_user())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
    mock.clear_faults();
    let restarted = f
        .another_node_with(
            NodeOptions::default()
                .deadline(deadline)
                .records(NodeRecords::memory())
                .smb_store(SmbStore::memory()),
        )
        .await;
    let r = restarted.unstage(SMB_STAGING).await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        !f.host.exists(SMB_STAGING),
        "the restarted plugin's unstage answered {r:?}, then the stopped stage's link landed \
         (mapped: {})",
        mapped(&f.host)
    );
}

/// WITHSTOOD: the attack above with csi-node-server's default (the node's
/// state beside its socket, `Node::with_state_dir`, in both processes):
/// the restarted plugin reads the stopped stage's `path` record and its
/// unstage fails `PathPending` until the settle time has passed; then it
/// removes the link and the mapping that landed meanwhile.
#[tokio::test(start_paused = true)]
async fn a_restart_over_the_state_dir_waits_for_the_stopped_stages_link() {
    let state = tempfile::tempdir().unwrap();
    let deadline = Duration::from_secs(30);
    let f = Fixture::mock(Family::V1, NodeOptions::default().deadline(deadline)).await;
    let node = f.node.with_state_dir(state.path()).unwrap();
    let mock = f.mock.as_ref().unwrap();
    mock.add_latency("NewSmbGlobalMapping", Duration::from_secs(150));
    let e = node
        .smb_stage(SHARE_DIR, SMB_STAGING, &smb_user())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
    mock.clear_faults();
    let restarted = f
        .another_node_with(NodeOptions::default().deadline(deadline))
        .await
        .with_state_dir(state.path())
        .unwrap();
    let e = restarted.unstage(SMB_STAGING).await.unwrap_err();
    assert!(matches!(e, Error::PathPending { .. }), "{e:?}");
    until_ok(Duration::from_secs(20), || {
        restarted.unstage(SMB_STAGING).into_future()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!f.host.exists(SMB_STAGING), "the link left behind");
    assert!(!mapped(&f.host), "the mapping left behind");
}

/// ATTACK: error 1219's recovery in `smb_map` releases every other
/// account's reference on the server "whose path holds no link any more",
/// read with `state`, i.e. the proxy's `IsSymlink`, which answers false
/// for a link whose target cannot be reached (csi-proxy v1.1.3 and
/// v1.3.0; finding 13). `smb_reconcile` and the link-only stage were
/// taught that an unseen link during an outage is kept; this path was
/// not.
///
/// Sequence (proxy mode, v1.3, and HostProcess mode, default records): `pv3` of
/// `\\fileserver\share` staged as `smbuser`, a pod holding a file open on
/// it; the server drops off the network; a pod of another namespace (or
/// another PV) stages `pv5` of `\\fileserver\other` as `otheruser`:
/// Windows answers 1219 (one account per server); the node reads
/// `pv3`'s link as absent, releases its reference and removes the
/// mapping with force.
///
/// Host: `smb.closed_under_use()` names `\\fileserver\share`: the running
/// pod's open file closed, its volume left with a link and no mapping.
/// Safe outcome: `SmbCredentialsConflict` (or UNAVAILABLE), the mapping
/// kept.
#[tokio::test]
async fn error_1219_during_an_outage_never_unmaps_a_share_in_use() {
    error_1219_during_an_outage(Fixture::mock(Family::V1, NodeOptions::default()).await).await;
}

/// ATTACK, the attack above in HostProcess mode: the same (the backend's
/// link check fails for any error on the target, finding 13), so the
/// mapping in use goes there too.
#[cfg(feature = "host-process")]
#[tokio::test]
async fn error_1219_during_an_outage_never_unmaps_a_share_in_use_host_process() {
    error_1219_during_an_outage(Fixture::host_process(Family::V1, NodeOptions::default()).await)
        .await;
}

async fn error_1219_during_an_outage(f: Fixture) {
    use csi_proxy_client::host::smb::ShareAccess;
    {
        let mut node = f.host.lock();
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
    f.node
        .smb_stage(SHARE_DIR, SMB_STAGING, &smb_user())
        .await
        .unwrap();
    {
        let mut host = f.host.lock();
        host.smb.open_file(SHARE_ROOT);
        host.smb.set_server_reachable("fileserver", false).unwrap();
    }
    let other = csi_proxy_client::node::SmbCredentials::new("otheruser", "0ther-Passw0rd!");
    let r = f
        .node
        .smb_stage(
            r"\\fileserver\other\pv5",
            r"c:\var\lib\kubelet\plugins\kubernetes.io\csi\smb\pv5\globalmount",
            &other,
        )
        .await;
    let closed = format!("{:?}", f.host.lock().smb.closed_under_use());
    assert!(
        closed == "[]" && mapped(&f.host),
        "the other account's stage answered {r:?}; the mapping in use was removed: {closed}"
    );
}

/// ATTACK: an unstage with offline stopped while its `SetDiskState
/// (offline)` is still at the host; the `path` record guards only its
/// own path, the disk's stage claim goes with the stopped task, and the
/// late offline lands under the next stage of the same disk at another
/// path (a Retain-policy disk bound again under a new PV name, as static
/// provisioning does; a kubelet upgrade changing the staging path's
/// shape).
///
/// Sequence (proxy mode, v1.3, default records, deadline 30 s): disk 1
/// staged at STAGING; `unstage(STAGING).offline(true)`: flush and mount
/// point removal answer, `SetDiskState` takes 150 s at the host, the
/// unstage is stopped at 30 s; the retry joins and answers OK (nothing
/// at the path); the disk is staged at OTHER_STAGING (online, its volume
/// found and mounted; OK); the pod writes; at 150 s the offline lands.
///
/// Host: the disk offline and its volume gone under a stage that
/// answered OK (the pod's file unreachable). Safe outcome: the new stage
/// waits for the disk's pending change (the offline recorded per disk,
/// not only per path), or brings the disk online after it lands.
#[tokio::test(start_paused = true)]
async fn a_stopped_unstages_late_offline_never_lands_under_the_next_stage() {
    let options = NodeOptions::default().deadline(Duration::from_secs(30));
    let f = Fixture::mock(Family::V1, options).await;
    let mock = f.mock.as_ref().unwrap();
    f.node.stage_disk(1u32, STAGING).await.unwrap();
    mock.add_latency("SetDiskState", Duration::from_secs(150));
    let e = f.node.unstage(STAGING).offline(true).await.unwrap_err();
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
    mock.clear_faults();
    until_ok(Duration::from_secs(20), || {
        f.node.unstage(STAGING).offline(true).into_future()
    })
    .await;
    let r = until_ok(Duration::from_secs(20), || {
        f.node.stage_disk(1u32, OTHER_STAGING).into_future()
    })
    .await;
    let other = format!("C:{OTHER_STAGING}");
    let file = format!(r"{other}\pod-data");
    let wrote = f.host.write_file(&file, b"the pod's data");
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        f.host.exists(&file),
        "the stage at the other path answered OK after {r} tries (write {wrote:?}), then the stopped \
         unstage's offline landed: {} SetDiskState calls",
        mock.calls_of("SetDiskState").len()
    );
}

/// WITHSTOOD: an SMB inline volume (staged at its pod's target) whose
/// publish is stopped while its `NewSmbGlobalMapping` (mapping and link)
/// is still at the host: kubelet's unpublish of the target fails
/// `PathPending` until the settle time, then finds the link that landed
/// and removes it with its reference and the mapping; nothing is left.
#[tokio::test(start_paused = true)]
async fn a_stopped_inline_smb_publish_is_unpublished_after_it_lands() {
    let options = NodeOptions::default().deadline(Duration::from_secs(30));
    let f = Fixture::mock(Family::V1, options).await;
    let mock = f.mock.as_ref().unwrap();
    mock.add_latency("NewSmbGlobalMapping", Duration::from_secs(150));
    let e = f
        .node
        .smb_stage(SHARE_DIR, TARGET, &smb_user())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
    mock.clear_faults();
    let e = f.node.unpublish(TARGET).await.unwrap_err();
    assert!(matches!(e, Error::PathPending { .. }), "{e:?}");
    until_ok(Duration::from_secs(20), || {
        let node = f.node.clone();
        async move { node.unpublish(TARGET).await }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!f.host.exists(TARGET_C), "the inline volume's link left");
    assert!(!mapped(&f.host), "the inline volume's mapping left");
}

/// WITHSTOOD: an SMB stage stopped while its `NewSmbGlobalMapping` (mapping
/// and link) is still at the host; the retry joins, finds the first
/// attempt's reference (recorded before the mapping) and may only link.
/// Whatever order the two land in, the volume must end linked and mapped
/// once its stage answered OK.
#[tokio::test(start_paused = true)]
async fn a_stopped_smb_stages_late_mapping_leaves_the_retry_staged() {
    let options = NodeOptions::default().deadline(Duration::from_secs(30));
    let f = Fixture::mock(Family::V1, options).await;
    let mock = f.mock.as_ref().unwrap();
    mock.add_latency("NewSmbGlobalMapping", Duration::from_secs(150));
    let user = smb_user();
    let e = f
        .node
        .smb_stage(SHARE_DIR, SMB_STAGING, &user)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
    mock.clear_faults();
    let tries = until_ok(Duration::from_secs(20), || {
        f.node
            .smb_stage(SHARE_DIR, SMB_STAGING, &user)
            .into_future()
    })
    .await;
    f.host.lock().smb.open_file(SHARE_ROOT);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let closed = format!("{:?}", f.host.lock().smb.closed_under_use());
    assert!(
        f.host.exists(SMB_STAGING) && mapped(&f.host) && closed == "[]",
        "staged after {tries} tries; then linked: {}, mapped: {}, closed: {closed}; calls {:?}",
        f.host.exists(SMB_STAGING),
        mapped(&f.host),
        mock.calls()
            .iter()
            .map(|c| format!("{c:?}"))
            .collect::<Vec<_>>()
    );
}

/// ATTACK: a share's last unstage stopped while its
/// `RemoveSmbGlobalMapping` is still at the host; the `path` record
/// guards only the unstaged path, the server's claim goes with the
/// stopped task, and the late removal lands under the next volume staged
/// on the share at another path.
///
/// Sequence (proxy mode, v1.3, default records, deadline 30 s): `pv3`
/// staged; its unstage removes the link, then `RemoveSmbGlobalMapping`
/// takes 150 s at the host and the unstage is stopped at 30 s; the retry
/// joins and answers OK; `pv4` of the same share is staged at its own
/// path (OK) and its pod opens a file; at 150 s the first removal lands.
///
/// Host: `smb.closed_under_use()` names the share (the pod of `pv4` had
/// its open file closed), or `pv4` left linked with no mapping. Safe
/// outcome: the mapping `pv4` staged on stays.
#[tokio::test(start_paused = true)]
async fn a_stopped_unstages_late_unmap_never_lands_under_the_next_stage() {
    let options = NodeOptions::default().deadline(Duration::from_secs(30));
    let f = Fixture::mock(Family::V1, options).await;
    let mock = f.mock.as_ref().unwrap();
    let user = smb_user();
    f.node
        .smb_stage(SHARE_DIR, SMB_STAGING, &user)
        .await
        .unwrap();
    mock.add_latency("RemoveSmbGlobalMapping", Duration::from_secs(150));
    let e = f.node.unstage(SMB_STAGING).await.unwrap_err();
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
    mock.clear_faults();
    until_ok(Duration::from_secs(20), || {
        f.node.unstage(SMB_STAGING).into_future()
    })
    .await;
    let r = until_ok(Duration::from_secs(20), || {
        f.node
            .smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &user)
            .into_future()
    })
    .await;
    f.host.lock().smb.open_file(SHARE_ROOT);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let closed = format!("{:?}", f.host.lock().smb.closed_under_use());
    assert!(
        closed == "[]" && mapped(&f.host),
        "pv4's stage answered OK after {r} tries; then mapped: {}, closed under use: {closed}, {} removals",
        mapped(&f.host),
        mock.calls_of("RemoveSmbGlobalMapping").len()
    );
}

/// WITHSTOOD: a blank disk's stage stopped while its `PartitionDisk` is
/// still at the host; kubelet's retries join it. Once the partition has
/// landed a retry stages the disk, formatted once, and no retry is
/// refused for good.
#[tokio::test(start_paused = true)]
async fn a_stopped_stages_late_partition_never_refuses_the_disk_for_good() {
    let options = NodeOptions::default().deadline(Duration::from_secs(30));
    let f = Fixture::mock(Family::V1, options).await;
    let mock = f.mock.as_ref().unwrap();
    mock.add_latency("PartitionDisk", Duration::from_secs(150));
    let e = f.node.stage_disk(1u32, STAGING).await.unwrap_err();
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
    mock.clear_faults();
    let mut last = None;
    for _ in 0..200 {
        match f.node.stage_disk(1u32, STAGING).await {
            Ok(_) => {
                last = None;
                break;
            }
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
    assert!(last.is_none(), "never staged: {last:?}");
    assert_eq!(mock.calls_of("FormatVolume").len(), 1);
}

/// The removal attacks above in HostProcess mode, each failing before
/// the `removing` records: the backend runs each host call on a blocking
/// thread that goes on when the node stops waiting, as on Windows. Real
/// time, so short times, yet above what a stage takes under Wine: a 5 s
/// deadline, removals taking 8 s at the host, a 12 s settle time.
#[cfg(feature = "host-process")]
mod host_process {
    use super::*;

    const LATE: Duration = Duration::from_secs(8);
    /// kubelet's wait for each try: above the node's deadline.
    const TRY: Duration = Duration::from_secs(6);

    async fn fixture() -> Fixture {
        let options = NodeOptions::default()
            .deadline(Duration::from_secs(5))
            .format_settle(Duration::from_secs(12));
        Fixture::host_process(Family::V1, options).await
    }

    /// Until the late calls have landed, and a second more.
    async fn after_the_late_calls() {
        tokio::time::sleep(LATE + Duration::from_secs(1)).await;
    }

    #[tokio::test]
    async fn a_stopped_stages_late_rmdir_never_removes_the_retrys_mount() {
        let f = fixture().await;
        let fake = f.fake().unwrap();
        f.host.create_dir(STAGING_C).unwrap();
        fake.add_latency("remove_directory", LATE);
        let e = f.node.stage_disk(1u32, STAGING).await.unwrap_err();
        assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
        fake.clear_latency();
        let tries = until_ok(TRY, || f.node.stage_disk(1u32, STAGING).into_future()).await;
        let file = format!(r"{STAGING_C}\pod-data");
        f.host.write_file(&file, b"the pod's data").unwrap();
        after_the_late_calls().await;
        assert!(
            f.host.exists(&file),
            "the retry's stage answered OK after {tries} tries, then the stopped attempt's \
             removal took its mount point"
        );
    }

    #[tokio::test]
    async fn a_stopped_unstages_late_offline_never_lands_under_the_next_stage() {
        let f = fixture().await;
        let fake = f.fake().unwrap();
        f.node.stage_disk(1u32, STAGING).await.unwrap();
        fake.add_latency("disk_set_online", LATE);
        let e = f.node.unstage(STAGING).offline(true).await.unwrap_err();
        assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
        fake.clear_latency();
        until_ok(TRY, || f.node.unstage(STAGING).offline(true).into_future()).await;
        let tries = until_ok(TRY, || f.node.stage_disk(1u32, OTHER_STAGING).into_future()).await;
        let file = format!(r"C:{OTHER_STAGING}\pod-data");
        let wrote = f.host.write_file(&file, b"the pod's data");
        after_the_late_calls().await;
        assert!(
            f.host.exists(&file),
            "the stage at the other path answered OK after {tries} tries (write {wrote:?}), \
             then the stopped unstage's offline landed"
        );
    }

    #[tokio::test]
    async fn a_stopped_unstages_late_unmap_never_lands_under_the_next_stage() {
        let f = fixture().await;
        let fake = f.fake().unwrap();
        let user = smb_user();
        f.node
            .smb_stage(SHARE_DIR, SMB_STAGING, &user)
            .await
            .unwrap();
        fake.add_latency("smb_remove_global_mapping", LATE);
        let e = f.node.unstage(SMB_STAGING).await.unwrap_err();
        assert_eq!(e.kind(), csi_proxy_client::ErrorKind::TimedOut, "{e}");
        fake.clear_latency();
        until_ok(TRY, || f.node.unstage(SMB_STAGING).into_future()).await;
        let tries = until_ok(TRY, || {
            f.node
                .smb_stage(SHARE_OTHER_DIR, SMB_OTHER_STAGING, &user)
                .into_future()
        })
        .await;
        f.host.lock().smb.open_file(SHARE_ROOT);
        after_the_late_calls().await;
        let closed = format!("{:?}", f.host.lock().smb.closed_under_use());
        assert!(
            closed == "[]" && mapped(&f.host),
            "pv4's stage answered OK after {tries} tries; then mapped: {}, closed under use: \
             {closed}",
            mapped(&f.host)
        );
    }
}
