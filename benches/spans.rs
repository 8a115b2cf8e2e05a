//! The cost of the crate's spans (a `rpc` span per call, a `node` span per
//! `Node` operation) in three settings:
//! - `none`: no subscriber installed, ever (tracing's fast path);
//! - `off`: a `fmt` subscriber writing to a sink, at `WARN`, so the INFO
//!   spans are disabled by level;
//! - `on`: the same subscriber at `INFO`, recording every span (the
//!   registry stores it, `fmt` formats its fields);
//! - `compiled_out`, when `CSI_SPAN_BENCH_BASELINE` names this bench built
//!   with `--features tracing/max_level_off`: no span at all (tracing's
//!   static filter turns every span and event into nothing).
//!
//! A subscriber is process-wide state that tracing caches per callsite (a
//! subscriber installed and dropped leaves its level behind), so each
//! setting runs in a process of its own: the bench starts itself once per
//! setting per round, the settings in turn, so that load on the machine
//! weighs on all of them alike. Each process times four cases, sequential
//! calls each: disk v1 `GetDiskStats` on `MockHost` and against the
//! reference server on a Unix socket (the `rpc` span), and `Node::exists`
//! (one `PathExists` inside a `node` span) on both. It prints, per setting
//! and case, the median over rounds of each process's median batch, and
//! each setting's ratio to `none` (and `none`'s to `compiled_out`).
//!
//! `cargo bench --bench spans` (`scripts/bench-spans.sh` adds the
//! `compiled_out` baseline). `CSI_SPAN_BENCH_ROUNDS` (default 7).

#[cfg(unix)]
fn main() {
    unix::main();
}

#[cfg(not(unix))]
fn main() {
    eprintln!("the span bench uses Unix sockets; run it on Linux or macOS");
}

#[cfg(unix)]
mod unix {
    use std::collections::BTreeMap;
    use std::future::Future;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use csi_proxy_client::disk::v1::{self as disk, DiskApi};
    use csi_proxy_client::mock::MockHost;
    use csi_proxy_client::node::{Node, NodeOptions};
    use csi_proxy_client::server::{GroupVersion, Server};
    use tracing::Level;

    /// The environment variable that makes a process one setting's child.
    const CHILD: &str = "CSI_SPAN_BENCH_CHILD";
    const SETTINGS: [&str; 3] = ["none", "off", "on"];
    const CASES: [&str; 4] = ["mock_rpc", "mock_node", "server_rpc", "server_node"];
    /// Calls in one timed batch, and batches per case in one process.
    const BATCH: u32 = 2_000;
    const BATCHES: usize = 7;
    const PATH: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv\globalmount";

    pub fn main() {
        match std::env::var(CHILD) {
            Ok(setting) => child(&setting),
            Err(_) => parent(),
        }
    }

    // ---------------------------------------------------------------- parent

    fn parent() {
        let rounds: usize = std::env::var("CSI_SPAN_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(7);
        let me = std::env::current_exe().unwrap();
        let baseline = std::env::var_os("CSI_SPAN_BENCH_BASELINE");
        let mut runs: Vec<(&str, std::ffi::OsString)> = SETTINGS
            .iter()
            .map(|s| (*s, me.clone().into_os_string()))
            .collect();
        if let Some(baseline) = baseline {
            runs.push(("compiled_out", baseline));
        }
        // (setting, case) -> one median per round, in ns a call.
        let mut figures: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
        let started = Instant::now();
        for round in 0..rounds {
            // Rotate the order so that no setting always runs first.
            for i in 0..runs.len() {
                let (setting, exe) = &runs[(i + round) % runs.len()];
                // The baseline binary runs as `none`: nothing is installed.
                let as_setting = if *setting == "compiled_out" {
                    "none"
                } else {
                    setting
                };
                let out = Command::new(exe)
                    .env(CHILD, as_setting)
                    .output()
                    .expect("start a child");
                assert!(out.status.success(), "{setting}: {out:?}");
                for line in String::from_utf8_lossy(&out.stdout).lines() {
                    let (case, ns) = line.split_once(' ').expect("case ns");
                    let case = CASES.iter().find(|c| **c == case).expect("a known case");
                    figures
                        .entry((setting, case))
                        .or_default()
                        .push(ns.parse().unwrap());
                }
            }
            eprintln!("round {} of {rounds} done", round + 1);
        }
        println!(
            "{rounds} rounds, {:.0} s; ns a call, median over rounds of each process's median batch of {BATCH}:",
            started.elapsed().as_secs_f64()
        );
        let medians: BTreeMap<_, _> = figures
            .into_iter()
            .map(|(key, mut v)| (key, median(&mut v)))
            .collect();
        print!("{:<12}", "case");
        for (setting, _) in &runs {
            print!(" {setting:>12}");
        }
        println!("   off/none   on/none  none/compiled_out");
        for case in CASES {
            print!("{case:<12}");
            for (setting, _) in &runs {
                print!(" {:>12.0}", medians[&(*setting, case)]);
            }
            let none = medians[&("none", case)];
            print!(
                "   {:>7.3}x  {:>7.3}x",
                medians[&("off", case)] / none,
                medians[&("on", case)] / none
            );
            if let Some(out) = medians.get(&("compiled_out", case)) {
                print!("  {:>7.3}x", none / out);
            }
            println!();
        }
    }

    fn median(values: &mut [f64]) -> f64 {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    }

    // ---------------------------------------------------------------- child

    fn child(setting: &str) {
        match setting {
            "none" => {}
            "off" | "on" => {
                let level = if setting == "on" {
                    Level::INFO
                } else {
                    Level::WARN
                };
                tracing_subscriber::fmt()
                    .with_max_level(level)
                    .with_writer(std::io::sink)
                    .init();
            }
            other => panic!("unknown setting {other}"),
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let endpoints = ["disk/v1", "volume/v1", "filesystem/v1"]
                .map(|gv| GroupVersion::parse(gv).unwrap());
            let server = Server::builder()
                .socket_dir(dir.path())
                .serve(endpoints)
                .start()
                .await
                .unwrap();
            let client = disk::Client::connect(&server.address("disk", "v1").unwrap().to_string())
                .await
                .unwrap();
            let options = NodeOptions::default().socket_dir(dir.path());
            let server_node = Node::connect(options).await.unwrap();
            let mock = MockHost::new();
            let mock_node = Node::from_mock(&mock);
            let request = || disk::GetDiskStatsRequest { disk_number: 1 };

            let mut results = Vec::new();
            results.push(
                time_case(&mock, || async {
                    mock.get_disk_stats(request()).await.unwrap();
                })
                .await,
            );
            results.push(
                time_case(&mock, || async {
                    assert!(!mock_node.exists(PATH).await.unwrap());
                })
                .await,
            );
            results.push(
                time_case(&mock, || async {
                    client.get_disk_stats(request()).await.unwrap();
                })
                .await,
            );
            results.push(
                time_case(&mock, || async {
                    assert!(!server_node.exists(PATH).await.unwrap());
                })
                .await,
            );
            for (case, ns) in CASES.iter().zip(results) {
                println!("{case} {ns:.1}");
            }
            server.shutdown().await.unwrap();
        });
    }

    /// The median over [`BATCHES`] batches of ns a call (after one batch
    /// of warm-up); the mock's call log is cleared between batches.
    async fn time_case<F, Fut>(mock: &MockHost, call: F) -> f64
    where
        F: Fn() -> Fut,
        Fut: Future<Output = ()>,
    {
        let mut batches = Vec::with_capacity(BATCHES);
        for batch in 0..=BATCHES {
            mock.clear_calls();
            let start = Instant::now();
            for _ in 0..BATCH {
                call().await;
            }
            let took: Duration = start.elapsed();
            if batch > 0 {
                batches.push(took.as_nanos() as f64 / f64::from(BATCH));
            }
        }
        median(&mut batches)
    }
}
