//! Soak: many clients through mixed node operations against the server
//! binary, for a bounded time. Not a test: it prints figures.
//!
//! ```text
//! cargo bench --features server --bench soak                 # 60 s, 32 clients
//! cargo bench --features server --bench soak -- --seconds 5 --clients 8
//! ```
//!
//! Each client owns a directory under the kubelet path and loops through
//! Mkdir, PathExists, IsSymlink, Rmdir and PathExists again (filesystem
//! v1), ListDiskLocations and GetDiskStats (disk v1), ListVolumesOnDisk and
//! GetVolumeStats (volume v1), GetService and GetBIOSSerialNumber (system
//! v1alpha1), each answer checked. Printed: calls, p50 and p99 per
//! operation, unexpected errors (the run fails if there are any), and the
//! server's resident memory at start (ready, before any call), peak and end.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use csi_proxy_client::disk::v1::{self as disk, DiskApi};
use csi_proxy_client::filesystem::v1::{self as fs, FilesystemApi};
use csi_proxy_client::system::v1alpha1::{self as system, SystemApi};
use csi_proxy_client::volume::v1::{self as volume, VolumeApi};

const SERVER: &str = env!("CARGO_BIN_EXE_csi-proxy-server");

struct Options {
    seconds: u64,
    clients: usize,
}

fn options() -> Options {
    let mut options = Options {
        seconds: 60,
        clients: 32,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().and_then(|v| v.parse().ok());
        match arg.as_str() {
            "--seconds" => options.seconds = value().expect("--seconds N"),
            "--clients" => options.clients = value().expect("--clients N") as usize,
            _ => {} // cargo's own arguments (--bench)
        }
    }
    options
}

/// Resident memory of `pid` in KiB (Linux).
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn start_server(sockets: &Path, sandbox: &Path) -> Child {
    let mut child = Command::new(SERVER)
        .arg("--socket-dir")
        .arg(sockets)
        .arg("--sandbox")
        .arg(sandbox)
        .args(["--log-level", "warn"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start csi-proxy-server");
    let stdout = child.stdout.take().unwrap();
    for line in BufReader::new(stdout).lines() {
        if line.expect("server output").starts_with("ready:") {
            return child;
        }
    }
    let status = child.wait();
    panic!("the server exited before it was ready: {status:?}");
}

fn address(sockets: &Path, group: &str, version: &str) -> String {
    format!(
        "unix://{}",
        sockets
            .join(format!("csi-proxy-{group}-{version}.sock"))
            .display()
    )
}

/// Latencies per operation, and the unexpected errors, of one client.
#[derive(Default)]
struct Record {
    latencies: BTreeMap<&'static str, Vec<Duration>>,
    errors: Vec<String>,
}

impl Record {
    /// Times `call`; an error or a failed `check` of its answer is recorded.
    async fn time<T, E: std::fmt::Display>(
        &mut self,
        name: &'static str,
        call: impl Future<Output = Result<T, E>>,
        check: impl FnOnce(&T) -> bool,
    ) -> Option<T> {
        let start = Instant::now();
        let result = call.await;
        self.latencies
            .entry(name)
            .or_default()
            .push(start.elapsed());
        match result {
            Ok(answer) if check(&answer) => Some(answer),
            Ok(_) => {
                self.errors.push(format!("{name}: unexpected answer"));
                None
            }
            Err(e) => {
                self.errors.push(format!("{name}: {e}"));
                None
            }
        }
    }
}

async fn client(sockets: PathBuf, id: usize, until: Instant) -> Record {
    let mut record = Record::default();
    let fs = fs::Client::connect(&address(&sockets, "filesystem", "v1"))
        .await
        .unwrap();
    let disk = disk::Client::connect(&address(&sockets, "disk", "v1"))
        .await
        .unwrap();
    let volume = volume::Client::connect(&address(&sockets, "volume", "v1"))
        .await
        .unwrap();
    let system = system::Client::connect(&address(&sockets, "system", "v1alpha1"))
        .await
        .unwrap();
    let mut round = 0u64;
    while Instant::now() < until {
        let dir = format!(r"C:\var\lib\kubelet\soak\client{id}\dir{round}");
        let path = |path: &str| path.to_owned();
        let r = &mut record;
        r.time(
            "Mkdir",
            fs.mkdir(fs::MkdirRequest { path: path(&dir) }),
            |_| true,
        )
        .await;
        r.time(
            "PathExists",
            fs.path_exists(fs::PathExistsRequest { path: path(&dir) }),
            |a| a.exists,
        )
        .await;
        r.time(
            "IsSymlink",
            fs.is_symlink(fs::IsSymlinkRequest { path: path(&dir) }),
            |a| !a.is_symlink,
        )
        .await;
        r.time(
            "Rmdir",
            fs.rmdir(fs::RmdirRequest {
                path: path(&dir),
                force: true,
            }),
            |_| true,
        )
        .await;
        r.time(
            "PathExists",
            fs.path_exists(fs::PathExistsRequest { path: path(&dir) }),
            |a| !a.exists,
        )
        .await;
        r.time(
            "ListDiskLocations",
            disk.list_disk_locations(disk::ListDiskLocationsRequest {}),
            |a| !a.disk_locations.is_empty(),
        )
        .await;
        r.time(
            "GetDiskStats",
            disk.get_disk_stats(disk::GetDiskStatsRequest { disk_number: 0 }),
            |a| a.total_bytes > 0,
        )
        .await;
        let volumes = r
            .time(
                "ListVolumesOnDisk",
                volume.list_volumes_on_disk(volume::ListVolumesOnDiskRequest {
                    disk_number: 0,
                    partition_number: 0,
                }),
                |a| !a.volume_ids.is_empty(),
            )
            .await;
        if let Some(first) = volumes.and_then(|v| v.volume_ids.into_iter().next()) {
            r.time(
                "GetVolumeStats",
                volume.get_volume_stats(volume::GetVolumeStatsRequest { volume_id: first }),
                |a| a.total_bytes > 0,
            )
            .await;
        }
        r.time(
            "GetService",
            system.get_service(system::GetServiceRequest {
                name: "MSiSCSI".into(),
            }),
            |a| !a.display_name.is_empty(),
        )
        .await;
        r.time(
            "GetBIOSSerialNumber",
            system.get_bios_serial_number(system::GetBiosSerialNumberRequest {}),
            |_| true,
        )
        .await;
        round += 1;
    }
    record
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn main() {
    let options = options();
    let tmp = tempfile::tempdir().unwrap();
    let (sockets, sandbox) = (tmp.path().join("sockets"), tmp.path().join("sandbox"));
    std::fs::create_dir(&sockets).unwrap();
    let mut server = start_server(&sockets, &sandbox);
    let pid = server.id();
    let rss_start = rss_kib(pid).unwrap_or(0);

    // Sample the server's memory every 100 ms while the clients run.
    let peak = Arc::new(AtomicU64::new(rss_start));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = std::thread::spawn({
        let (peak, done) = (peak.clone(), done.clone());
        move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(kib) = rss_kib(pid) {
                    peak.fetch_max(kib, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    });

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let started = Instant::now();
    let until = started + Duration::from_secs(options.seconds);
    let records: Vec<Record> = runtime.block_on(async {
        let tasks: Vec<_> = (0..options.clients)
            .map(|id| tokio::spawn(client(sockets.clone(), id, until)))
            .collect();
        let mut records = Vec::new();
        for task in tasks {
            records.push(task.await.unwrap());
        }
        records
    });
    let elapsed = started.elapsed();
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let rss_end = rss_kib(pid).unwrap_or(0);
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = server.wait();

    let mut latencies: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    let mut errors = Vec::new();
    for record in records {
        for (name, mut times) in record.latencies {
            latencies.entry(name).or_default().append(&mut times);
        }
        errors.extend(record.errors);
    }
    let calls: usize = latencies.values().map(Vec::len).sum();
    println!(
        "soak: {} clients, {:.1} s, {calls} calls ({:.0}/s), {} unexpected errors",
        options.clients,
        elapsed.as_secs_f64(),
        calls as f64 / elapsed.as_secs_f64(),
        errors.len()
    );
    println!(
        "{:<22}{:>9}{:>12}{:>12}",
        "operation", "calls", "p50", "p99"
    );
    for (name, times) in &mut latencies {
        times.sort();
        println!(
            "{name:<22}{:>9}{:>12.2?}{:>12.2?}",
            times.len(),
            percentile(times, 0.50),
            percentile(times, 0.99)
        );
    }
    println!(
        "server RSS: start {} MiB, peak {} MiB, end {} MiB",
        rss_start / 1024,
        peak.load(Ordering::Relaxed) / 1024,
        rss_end / 1024
    );
    for error in errors.iter().take(10) {
        println!("error: {error}");
    }
    if !errors.is_empty() {
        std::process::exit(1);
    }
}
