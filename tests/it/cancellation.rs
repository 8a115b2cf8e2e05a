//! Seeded schedules of kubelet-like callers over `MockHost` on a paused
//! clock, judged from the host: SMB volumes of one share staged and
//! unstaged by callers whose deadline drops the call at any await and who
//! retry (the dropped call's host work going on beside the retry), the
//! share's mapping reconnecting under them, the node layer rebuilt over
//! the same host (a directory store kept, or a store in memory lost),
//! `smb_reconcile` run beside them, and host times from milliseconds to
//! minutes. After each schedule:
//! - no mapping was removed while a pod held a file open through it
//!   (`SmbState::closed_under_use`: `Remove-SmbGlobalMapping -Force`
//!   closes them);
//! - every volume unstaged, the host holds no mapping and no link;
//! - each file a pod wrote through its staged path is on the share.
//!
//! A fixed set of seeds runs in CI; `CANCEL_SEEDS=N` runs `N` (from seed
//! 0), `CANCEL_SEED=S` the one schedule `S`.
#![cfg(feature = "mock")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::node_support::*;
use csi_proxy_client::host::smb::MappingStatus;
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::MockNode;
use csi_proxy_client::node::{Node, NodeOptions, SmbStore};

/// Schedules run by `cargo test` (about 10 s of the machine's time). A
/// Windows build runs 4: the schedules are the same code on both, and
/// under Wine they took 18 times as long (130 s against 7 s).
const SEEDS_IN_CI: u64 = if cfg!(windows) { 4 } else { 40 };

/// Host times, from a fast WMI call to a stuck PowerShell.
const HOST_TIMES: &[Duration] = &[
    Duration::from_millis(1),
    Duration::from_millis(40),
    Duration::from_millis(600),
    Duration::from_secs(3),
    Duration::from_secs(40),
    Duration::from_secs(150),
];

/// kubelet's deadline for one call (its operation timeout is 2 minutes;
/// shorter ones stand for a plugin restart or a cancelled context).
const CALLER_DEADLINES: &[Duration] = &[
    Duration::from_millis(500),
    Duration::from_secs(2),
    Duration::from_secs(15),
    Duration::from_secs(120),
];

const VOLUMES: &[&str] = &["pv3", "pv4", "a"];

fn staging(pv: &str) -> String {
    format!(r"c:\var\lib\kubelet\plugins\kubernetes.io\csi\smb\{pv}\globalmount")
}

/// The node layer of the moment: a restart puts a new one in its place.
#[derive(Clone)]
struct Current {
    node: Arc<Mutex<Node>>,
}

impl Current {
    fn get(&self) -> Node {
        self.node.lock().unwrap().clone()
    }
}

fn new_node(host: &MockHost, store: &Option<std::path::PathBuf>, deadline: Duration) -> Node {
    let mut options = NodeOptions::default().deadline(deadline);
    if let Some(dir) = store {
        options = options.smb_store(SmbStore::directory(dir));
    }
    MockNode::new(host)
        .options(options)
        .build()
        .expect("newest versions")
}

/// After many dropped tries the host is fast again (its slow calls done):
/// a call slower than every deadline would otherwise be retried forever.
fn recover(host: &MockHost, attempt: u32) {
    if attempt == 6 {
        host.clear_faults();
    }
}

/// One schedule; `Err` says what the host showed wrong.
async fn schedule(seed: u64) -> Result<(), String> {
    let mut rng = Rng(seed);
    let host = MockHost::new();
    make_share_dirs(host.host());
    for rpc in [
        "NewSmbGlobalMapping",
        "RemoveSmbGlobalMapping",
        "Rmdir",
        "Mkdir",
        "PathExists",
        "IsSymlink",
        "GetVolumeIDFromTargetPath",
    ] {
        host.add_latency(rpc, rng.pick(HOST_TIMES));
    }
    let state = tempfile::tempdir().expect("a state directory");
    let store = rng.chance(50).then(|| state.path().to_path_buf());
    let deadline = rng.pick(&[Duration::from_secs(30), Duration::from_secs(120)]);
    let current = Current {
        node: Arc::new(Mutex::new(new_node(&host, &store, deadline))),
    };
    let written = Arc::new(Mutex::new(Vec::<String>::new()));
    let problems = Arc::new(Mutex::new(Vec::<String>::new()));

    let mut actors = Vec::new();
    for (i, pv) in VOLUMES.iter().enumerate() {
        let mut rng = Rng(seed.wrapping_mul(31).wrapping_add(i as u64 + 1));
        let (host, current) = (host.clone(), current.clone());
        let (written, problems) = (written.clone(), problems.clone());
        let pv = pv.to_string();
        actors.push(tokio::spawn(async move {
            let (remote, path) = (format!(r"{SHARE_ROOT}\{pv}"), staging(&pv));
            for round in 0..2 {
                tokio::time::sleep(Duration::from_millis(rng.below(5_000))).await;
                // NodeStageVolume until it answers OK, each try dropped at
                // kubelet's deadline.
                for attempt in 0.. {
                    recover(&host, attempt);
                    let node = current.get();
                    let wait = rng.pick(CALLER_DEADLINES);
                    let tried =
                        tokio::time::timeout(wait, node.smb_stage(&remote, &path, &smb_user()))
                            .await;
                    if matches!(tried, Ok(Ok(()))) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(rng.below(3_000))).await;
                }
                // The pod runs: it holds a file open through the mapping
                // and writes one through the staged path.
                host.host().lock().smb.open_file(SHARE_ROOT);
                let name = format!("{pv}-{round}.txt");
                let ok = host.host().lock().smb.is_mapped(SHARE_ROOT);
                if ok {
                    let file = format!(r"{path}\{name}");
                    match host.host().write_file(&file, b"a pod's data") {
                        Ok(()) => written.lock().unwrap().push(format!(r"{pv}\{name}")),
                        Err(e) => problems.lock().unwrap().push(format!(
                            "{path} staged with its mapping OK, yet a pod cannot write through it: {e}"
                        )),
                    }
                }
                tokio::time::sleep(Duration::from_millis(rng.below(20_000))).await;
                host.host().lock().smb.close_file(SHARE_ROOT);
                // NodeUnstageVolume until it answers OK.
                for attempt in 0.. {
                    recover(&host, attempt);
                    let node = current.get();
                    let wait = rng.pick(CALLER_DEADLINES);
                    if matches!(
                        tokio::time::timeout(wait, std::future::IntoFuture::into_future(node.unstage(&path))).await,
                        Ok(Ok(_))
                    ) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(rng.below(3_000))).await;
                }
            }
        }));
    }

    // The share's mapping reconnects now and then.
    let blips = {
        let host = host.clone();
        let mut rng = Rng(seed ^ 0x5eed);
        tokio::spawn(async move {
            for _ in 0..rng.below(4) {
                tokio::time::sleep(Duration::from_millis(rng.below(30_000))).await;
                let set = host
                    .host()
                    .lock()
                    .smb
                    .set_mapping_status(SHARE_ROOT, MappingStatus::Reconnecting);
                if set.is_err() {
                    continue;
                }
                tokio::time::sleep(Duration::from_millis(100 + rng.below(5_000))).await;
                let mut node = host.host().lock();
                if node.smb.mapping(SHARE_ROOT).map(|m| m.status)
                    == Some(MappingStatus::Reconnecting)
                {
                    node.smb
                        .set_mapping_status(SHARE_ROOT, MappingStatus::Ok)
                        .unwrap();
                }
            }
        })
    };

    // The node layer is rebuilt over the same host, and reconciles.
    let restarts = {
        let (host, current, store) = (host.clone(), current.clone(), store.clone());
        let mut rng = Rng(seed ^ 0xabcd);
        tokio::spawn(async move {
            for _ in 0..rng.below(3) {
                tokio::time::sleep(Duration::from_millis(rng.below(60_000))).await;
                let node = new_node(&host, &store, deadline);
                *current.node.lock().unwrap() = node.clone();
                if rng.chance(50) {
                    let wait = rng.pick(CALLER_DEADLINES);
                    let _ = tokio::time::timeout(wait, node.smb_reconcile()).await;
                }
            }
        })
    };

    for actor in actors {
        actor.await.map_err(|e| format!("an actor panicked: {e}"))?;
    }
    blips.await.map_err(|e| e.to_string())?;
    restarts.await.map_err(|e| e.to_string())?;
    // Late host work ends.
    tokio::time::sleep(Duration::from_secs(600)).await;

    let mut wrong = problems.lock().unwrap().clone();
    {
        let node = host.host().lock();
        for closed in node.smb.closed_under_use() {
            wrong.push(format!(
                "the mapping of {} was removed ({:?}) while a pod held {} file(s) open through it",
                closed.root, closed.status, closed.files
            ));
        }
        for mapping in node.smb.mappings() {
            wrong.push(format!(
                "every volume unstaged, the mapping of {} ({:?}) is left",
                mapping.remote_path, mapping.status
            ));
        }
    }
    for pv in VOLUMES {
        if host.host().exists(&staging(pv)) {
            wrong.push(format!("every volume unstaged, {} is left", staging(pv)));
        }
    }
    let share = host
        .host()
        .lock()
        .smb
        .share_dir("fileserver", "share")
        .expect("the share")
        .to_path_buf();
    for file in written.lock().unwrap().iter() {
        if !share.join(file.replace('\\', "/")).exists() {
            wrong.push(format!("{file}, written by a pod, is gone from the share"));
        }
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(wrong.join("; ")),
    }
}

#[test]
fn seeded_schedules_leave_records_and_host_in_agreement() {
    let seeds: Vec<u64> = match (std::env::var("CANCEL_SEED"), std::env::var("CANCEL_SEEDS")) {
        (Ok(one), _) => vec![one.parse().expect("CANCEL_SEED is a number")],
        (_, Ok(n)) => (0..n.parse().expect("CANCEL_SEEDS is a number")).collect(),
        _ => (0..SEEDS_IN_CI).collect(),
    };
    let mut failed = Vec::new();
    for &seed in &seeds {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a runtime");
        if let Err(why) = runtime.block_on(schedule(seed)) {
            failed.push(format!("seed {seed}: {why}"));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} schedules failed:\n{}",
        failed.len(),
        seeds.len(),
        failed.join("\n")
    );
}
