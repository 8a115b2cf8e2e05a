//! The chaos harness of disks (issue 42, item 9): seeded schedules of
//! kubelet-like callers over a simulated node, in both modes, judged from
//! the host. Each schedule has two blank disks (one named by its page 83
//! id, one by its serial number) and two holding data Windows shows with
//! no file system (ext4, one disk online and one offline), and:
//! - callers that stage and unstage the blank disks twice each, every call
//!   dropped at a deadline of theirs and retried (the dropped call's host
//!   work going on beside the retry), a pod writing a file between;
//! - callers that try to stage the disks holding data;
//! - host calls that take from a millisecond to minutes, answers lost to
//!   the request timeout (the host does the work all the same), requests
//!   refused before the host (a proxy restarting);
//! - two plugin processes over one state directory (a rolling update),
//!   either of them replaced now and then by a new one over the same
//!   directory; or, in a quarter of the schedules, one process whose
//!   records are in its memory, never restarted.
//!
//! After each schedule, with late host work landed:
//! - the disks holding data still hold their ext4 file system;
//! - the file the pod wrote in the first round is there in the second
//!   (the volume was not formatted again);
//! - every blank disk staged, both rounds (none refused for good), and
//!   every staging path is gone once unstaged.
//!
//! Two processes are two `Node`s of this test's process, each with its
//! own `NodeRecords::directory` over the same directory: the claims they
//! share are the in-process ones and the directory's file locks; a test
//! with a second OS process is in `src/node/records.rs`.
//!
//! A fixed set of seeds runs in CI; `CHAOS_SEEDS=N` runs `N` (from seed 0),
//! `CHAOS_SEED=S` the one schedule `S`.
#![cfg(feature = "mock")]

use std::future::IntoFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::node_support::*;
use csi_proxy_client::host::{Host, NodeSeed};
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::{MockNode, Node, NodeOptions, NodeRecords};

/// Schedules of each mode run by `cargo test`.
const SEEDS_IN_CI_MOCK: u64 = 24;
#[cfg(feature = "host-process")]
const SEEDS_IN_CI_HOST_PROCESS: u64 = 4;

const BLANK: [u32; 2] = [1, 2];
const HOLDING_DATA: [u32; 2] = [3, 4];

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

/// The times of one mode's schedules.
struct Times {
    /// How long a slow host call takes.
    host: &'static [Duration],
    /// kubelet's deadline for one call.
    caller: &'static [Duration],
    /// The node's deadline (`NodeOptions::deadline`).
    node: &'static [Duration],
    /// The settle time: every host call sent has ended within it.
    settle: Duration,
    /// How much shorter than the mock's the pauses between calls are.
    pause_scale: u32,
    /// How long late host work is given to land before the host is judged.
    late: Duration,
    /// How long a caller retries before the schedule has failed.
    give_up: Duration,
}

/// The mock, on a paused clock: the real proxy's times.
const MOCK_TIMES: Times = Times {
    host: HOST_TIMES,
    caller: CALLER_DEADLINES,
    node: &[Duration::from_secs(30), Duration::from_secs(120)],
    settle: Duration::from_secs(600),
    pause_scale: 1,
    late: Duration::from_secs(3600),
    give_up: Duration::from_secs(4 * 3600),
};

/// The HostProcess fake runs in real time (its host time is a blocking
/// sleep) and, under Wine, slowly: short host times, deadlines of seconds
/// still above what a stage takes there, a settle time above the slowest
/// host call.
#[cfg(feature = "host-process")]
const HOST_PROCESS_TIMES: Times = Times {
    host: &[
        Duration::from_millis(1),
        Duration::from_millis(20),
        Duration::from_millis(200),
    ],
    caller: &[
        Duration::from_millis(20),
        Duration::from_millis(200),
        Duration::from_secs(2),
        Duration::from_secs(8),
    ],
    node: &[Duration::from_secs(3), Duration::from_secs(8)],
    settle: Duration::from_secs(2),
    pause_scale: 100,
    late: Duration::from_secs(3),
    give_up: Duration::from_secs(120),
};

/// The calls made slow in proxy mode.
const SLOW_RPCS: &[&str] = &[
    "PartitionDisk",
    "FormatVolume",
    "MountVolume",
    "IsVolumeFormatted",
    "ListVolumesOnDisk",
    "SetDiskState",
    "GetVolumeIDFromTargetPath",
    "Mkdir",
    "Rmdir",
];

/// The calls whose request may never reach the host (UNAVAILABLE). Not
/// `FormatVolume`: a format whose outcome is unknown is waited for until
/// the volume shows formatted or the settle time has passed by the wall
/// clock, which a paused clock does not move (its lost answers are
/// here all the same: a slow format outlives the request timeout).
const REFUSED_RPCS: &[&str] = &["PartitionDisk", "MountVolume", "SetDiskState", "Rmdir"];

fn host_seed() -> String {
    let disk = |n: u32, id: &str, online: bool, data: bool| {
        let mut s = format!(
            "[[disks]]\nnumber = {n}\nlocation = \"Integrated : Adapter 3 : Port 0 : Target 0 : LUN {n}\"\nsize = {}\nonline = {online}\n{id}\n",
            32 * GIB
        );
        if data {
            s += &format!(
                "partition_style = \"mbr\"\n[[volumes]]\ndisk = {n}\nkind = \"mbr\"\nholds = \"ext4\"\n"
            );
        }
        s
    };
    [
        OS_DISK.to_string(),
        disk(
            1,
            "page83 = \"60022480c0ffee0000000000000000a1\"",
            true,
            false,
        ),
        disk(2, "serial = \"chaos-serial-2\"", true, false),
        disk(
            3,
            "page83 = \"60022480c0ffee0000000000000000a3\"",
            true,
            true,
        ),
        disk(4, "serial = \"chaos-serial-4\"", false, true),
    ]
    .concat()
}

fn staging(disk: u32) -> String {
    format!(
        r"c:\var\lib\kubelet\plugins\kubernetes.io\csi\disk.csi.azure.com\pv-{disk}\globalmount"
    )
}

/// The simulated node of a schedule, in one mode.
enum Backend {
    Mock(MockHost),
    #[cfg(feature = "host-process")]
    HostProcess {
        fake: Arc<csi_proxy_client::host_process::FakeWindows>,
        /// Where the fake keeps the host's files, removed with it.
        _sandbox: tempfile::TempDir,
    },
}

impl Backend {
    fn mock(rng: &mut Rng) -> Backend {
        let mock = MockHost::builder()
            .seed(NodeSeed::from_toml_str(&host_seed()).expect("valid seed"))
            .request_timeout(rng.pick(&[Duration::from_secs(30), Duration::from_secs(120)]))
            .build()
            .expect("mock host");
        for rpc in SLOW_RPCS {
            if rng.chance(60) {
                mock.add_latency(*rpc, rng.pick(MOCK_TIMES.host));
            }
        }
        for rpc in REFUSED_RPCS {
            if rng.chance(25) {
                let n = 1 + rng.below(3) as usize;
                mock.fail_nth(*rpc, n, tonic::Code::Unavailable, "the proxy is restarting");
            }
        }
        Backend::Mock(mock)
    }

    #[cfg(feature = "host-process")]
    fn host_process(rng: &mut Rng) -> Backend {
        use csi_proxy_client::host::HostConfig;
        use csi_proxy_client::host_process::FakeWindows;
        let sandbox = tempfile::tempdir().expect("sandbox");
        let mut config = HostConfig::new(sandbox.path());
        config.seed = Some(NodeSeed::from_toml_str(&host_seed()).expect("valid seed"));
        let fake = Arc::new(FakeWindows::new(Host::new(config).expect("host")));
        for name in ["volume_format_ntfs", "partition_supported_size"] {
            if rng.chance(60) {
                fake.add_latency(name, rng.pick(HOST_PROCESS_TIMES.host));
            }
        }
        Backend::HostProcess {
            fake,
            _sandbox: sandbox,
        }
    }

    fn host(&self) -> &Host {
        match self {
            Backend::Mock(mock) => mock.host(),
            #[cfg(feature = "host-process")]
            Backend::HostProcess { fake, .. } => fake.host(),
        }
    }

    fn node(&self, options: NodeOptions) -> Node {
        match self {
            Backend::Mock(mock) => MockNode::new(mock)
                .options(options)
                .build()
                .expect("versions"),
            #[cfg(feature = "host-process")]
            Backend::HostProcess { fake, .. } => Node::host_process_with(fake.clone(), options),
        }
    }

    /// The times of the schedule as this backend runs them.
    fn times(&self) -> &'static Times {
        match self {
            Backend::Mock(_) => &MOCK_TIMES,
            #[cfg(feature = "host-process")]
            Backend::HostProcess { .. } => &HOST_PROCESS_TIMES,
        }
    }

    /// A pause of a caller or of the schedule, `d` on the mock's clock.
    fn pause(&self, d: Duration) -> Duration {
        d / self.times().pause_scale
    }

    /// After many dropped tries the host is fast again (its slow calls
    /// done): a call slower than every deadline would otherwise be retried
    /// for ever.
    fn recover(&self) {
        match self {
            Backend::Mock(mock) => mock.clear_faults(),
            // The fake's slow calls are at most 200 ms.
            #[cfg(feature = "host-process")]
            Backend::HostProcess { .. } => {}
        }
    }
}

/// The plugin processes of the moment: a restart puts a new one in a
/// place.
#[derive(Clone)]
struct Processes(Arc<Mutex<Vec<Node>>>);

impl Processes {
    fn any(&self, rng: &mut Rng) -> Node {
        let nodes = self.0.lock().unwrap();
        nodes[rng.below(nodes.len() as u64) as usize].clone()
    }
}

/// Calls `work` as kubelet does until it answers OK, each try dropped at
/// a deadline of the caller's, for up to four hours; the last error when
/// it never did.
async fn until_ok<T, Fut>(
    backend: &Backend,
    rng: &mut Rng,
    processes: &Processes,
    mut work: impl FnMut(Node) -> Fut,
) -> Result<T, String>
where
    Fut: std::future::Future<Output = Result<T, csi_proxy_client::Error>>,
{
    let mut last = String::new();
    let give_up = tokio::time::Instant::now() + backend.times().give_up;
    for attempt in 0.. {
        if attempt == 8 {
            backend.recover();
        }
        if tokio::time::Instant::now() > give_up {
            break;
        }
        let node = processes.any(rng);
        let wait = rng.pick(backend.times().caller);
        match tokio::time::timeout(wait, work(node)).await {
            Ok(Ok(done)) => return Ok(done),
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = format!("no answer within {wait:?}"),
        }
        tokio::time::sleep(backend.pause(Duration::from_millis(rng.below(3_000)))).await;
    }
    Err(last)
}

/// One schedule; `Err` says what the host showed wrong.
async fn schedule(backend: Backend, seed: u64) -> Result<(), String> {
    let backend = Arc::new(backend);
    let mut rng = Rng(seed ^ 0xc4a0_5eed);
    let state = tempfile::tempdir().expect("a state directory");
    let durable = rng.chance(75);
    let deadline = rng.pick(backend.times().node);
    let options = {
        let (dir, backend) = (state.path().to_path_buf(), backend.clone());
        move || {
            let options = NodeOptions::default()
                .deadline(deadline)
                .format_settle(backend.times().settle);
            match durable {
                true => options.records(NodeRecords::directory(&dir)),
                false => options.records(NodeRecords::memory()),
            }
        }
    };
    let count = if durable { 2 } else { 1 };
    let processes = Processes(Arc::new(Mutex::new(
        (0..count).map(|_| backend.node(options())).collect(),
    )));
    let problems = Arc::new(Mutex::new(Vec::<String>::new()));
    let problem = {
        let problems = problems.clone();
        move |p: String| problems.lock().unwrap().push(p)
    };

    let mut actors = Vec::new();
    for (i, disk) in BLANK.into_iter().enumerate() {
        let mut rng = Rng(seed.wrapping_mul(31).wrapping_add(i as u64 + 1));
        let (backend, processes, problem) = (backend.clone(), processes.clone(), problem.clone());
        actors.push(tokio::spawn(async move {
            let path = staging(disk);
            let file = format!(r"{path}\written-in-round-0");
            for round in 0..2 {
                tokio::time::sleep(backend.pause(Duration::from_millis(rng.below(5_000)))).await;
                let staged = until_ok(&backend, &mut rng, &processes, |node| {
                    let path = path.clone();
                    async move { node.stage_disk(disk, &path).await }
                })
                .await;
                if let Err(e) = staged {
                    problem(format!("blank disk {disk} never staged (round {round}): {e}"));
                    return;
                }
                let host = backend.host();
                match round {
                    0 => {
                        if let Err(e) = host.write_file(&file, b"a pod's data") {
                            problem(format!("disk {disk} staged, yet a pod cannot write: {e}"));
                        }
                    }
                    _ => {
                        if !matches!(host.read_file(&file), Ok(b) if b == b"a pod's data") {
                            problem(format!(
                                "disk {disk}: the pod's file of round 0 is gone at its second stage (formatted again)"
                            ));
                        }
                    }
                }
                tokio::time::sleep(backend.pause(Duration::from_millis(rng.below(20_000)))).await;
                let offline = rng.chance(50);
                let unstaged = until_ok(&backend, &mut rng, &processes, |node| {
                    let path = path.clone();
                    async move { node.unstage(&path).offline(offline).into_future().await }
                })
                .await;
                if let Err(e) = unstaged {
                    problem(format!("disk {disk} never unstaged (round {round}): {e}"));
                    return;
                }
            }
        }));
    }
    for disk in HOLDING_DATA {
        let mut rng = Rng(seed.wrapping_mul(77).wrapping_add(disk as u64));
        let (backend, processes, problem) = (backend.clone(), processes.clone(), problem.clone());
        actors.push(tokio::spawn(async move {
            for _ in 0..3 {
                let node = processes.any(&mut rng);
                let wait = rng.pick(backend.times().caller);
                if let Ok(Ok(volume)) =
                    tokio::time::timeout(wait, node.stage_disk(disk, &staging(disk)).into_future())
                        .await
                {
                    problem(format!("disk {disk}, holding data, was staged as {volume}"));
                }
                tokio::time::sleep(backend.pause(Duration::from_millis(rng.below(10_000)))).await;
            }
        }));
    }
    // A process replaced by a new one over the same directory.
    let restarts = {
        let (backend, processes, options) = (backend.clone(), processes.clone(), options.clone());
        let mut rng = Rng(seed ^ 0xabcd);
        tokio::spawn(async move {
            if !durable {
                return;
            }
            for _ in 0..rng.below(3) {
                tokio::time::sleep(backend.pause(Duration::from_millis(rng.below(60_000)))).await;
                let place = rng.below(2) as usize;
                processes.0.lock().unwrap()[place] = backend.node(options());
            }
        })
    };

    for actor in actors {
        actor.await.map_err(|e| format!("an actor panicked: {e}"))?;
    }
    restarts.await.map_err(|e| e.to_string())?;
    // Late host work ends.
    tokio::time::sleep(backend.times().late).await;

    let mut wrong = problems.lock().unwrap().clone();
    let host = backend.host();
    for disk in HOLDING_DATA {
        let shown = shows(&first_partition_bytes(host, disk));
        if shown != "ext4" {
            wrong.push(format!("disk {disk} held ext4 and now shows {shown}"));
        }
    }
    for disk in BLANK.into_iter().chain(HOLDING_DATA) {
        if host.exists(&staging(disk)) {
            wrong.push(format!("{} is left", staging(disk)));
        }
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(wrong.join("; ")),
    }
}

fn seeds(in_ci: u64) -> Vec<u64> {
    match (std::env::var("CHAOS_SEED"), std::env::var("CHAOS_SEEDS")) {
        (Ok(one), _) => vec![one.parse().expect("CHAOS_SEED is a number")],
        (_, Ok(n)) => (0..n.parse().expect("CHAOS_SEEDS is a number")).collect(),
        _ => (0..in_ci).collect(),
    }
}

fn run(seeds: Vec<u64>, paused: bool, backend: impl Fn(&mut Rng) -> Backend) {
    let mut failed = Vec::new();
    for &seed in &seeds {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(paused)
            .build()
            .expect("a runtime");
        let backend = backend(&mut Rng(seed));
        if let Err(why) = runtime.block_on(schedule(backend, seed)) {
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

#[test]
fn seeded_disk_schedules_lose_no_data_and_stage_every_blank_disk_mock() {
    run(seeds(SEEDS_IN_CI_MOCK), true, Backend::mock);
}

#[cfg(feature = "host-process")]
#[test]
fn seeded_disk_schedules_lose_no_data_and_stage_every_blank_disk_host_process() {
    run(
        seeds(SEEDS_IN_CI_HOST_PROCESS),
        false,
        Backend::host_process,
    );
}
