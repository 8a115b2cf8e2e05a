//! Lists a Windows node's disks as the CSI Proxy reports them: number,
//! location (adapter, bus, target, LUN), page83 id and serial number, size,
//! online state, and each disk's volumes with their file system state and
//! usage. Read only: it changes nothing on the node.
//!
//! ```text
//! cargo run -p csi-proxy-examples --bin list_disks                       # embedded reference server (not on Windows)
//! cargo run -p csi-proxy-examples --bin list_disks -- --socket-dir DIR   # a running csi-proxy-server
//! CSI_PROXY_SOCKET_DIR=DIR cargo run -p csi-proxy-examples --bin list_disks
//! ```
//!
//! Without a socket directory it starts the reference server with its
//! default node on a temporary directory (on Unix). **On Windows, without
//! `--socket-dir`, it talks to the real CSI Proxy** on its default pipes
//! (`\\.\pipe\csi-proxy-disk-v1`, `\\.\pipe\csi-proxy-volume-v1`, through
//! `Client::connect_default`), so it lists the machine's own disks.
//!
//! Every call that fails is shown in place of its value; the listing goes
//! on, and the exit status is non-zero if any call failed.

mod common;

use std::collections::BTreeMap;
use std::process::ExitCode;

use common::{Args, Proxy, Result, chain};
use csi_proxy_client::disk::v1::{self as disk, DiskApi};
use csi_proxy_client::volume::v1::{self as volume, VolumeApi};

struct Clients {
    disk: disk::Client,
    volume: volume::Client,
}

impl Clients {
    async fn connect(proxy: &Proxy) -> Result<Self> {
        Ok(match proxy.socket_dir() {
            Some(dir) => {
                let address =
                    |group: &str| format!("unix://{}/csi-proxy-{group}-v1.sock", dir.display());
                Self {
                    disk: disk::Client::connect(address("disk")).await?,
                    volume: volume::Client::connect(address("volume")).await?,
                }
            }
            None => Self {
                disk: disk::Client::connect_default().await?,
                volume: volume::Client::connect_default().await?,
            },
        })
    }
}

/// Failed calls, in order, each named by its step.
#[derive(Default)]
struct Failures(Vec<String>);

impl Failures {
    /// The value of a call, or, after recording its failure, the text to
    /// print in its place (the gRPC status, or the error chain).
    fn check<T>(
        &mut self,
        step: &str,
        result: std::result::Result<T, csi_proxy_client::Error>,
    ) -> std::result::Result<T, String> {
        result.map_err(|e| {
            let detail = match e.status() {
                Some(s) => format!("{:?}: {}", s.code(), s.message()),
                None => chain(&e),
            };
            self.0.push(format!("step '{step}' failed: {detail}"));
            format!("{step} failed: {detail}")
        })
    }
}

fn size(bytes: i64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    const MIB: f64 = (1u64 << 20) as f64;
    let b = bytes as f64;
    if b >= GIB {
        format!("{bytes} bytes ({:.1} GiB)", b / GIB)
    } else {
        format!("{bytes} bytes ({:.1} MiB)", b / MIB)
    }
}

async fn list(c: &Clients) -> Result<()> {
    // Without the list of disks there is nothing to show: a hard failure.
    let locations = c
        .disk
        .list_disk_locations(disk::ListDiskLocationsRequest {})
        .await
        .map_err(|e| format!("step 'ListDiskLocations' failed: {}", chain(&e)))?
        .disk_locations;
    let mut failures = Failures::default();
    let ids = failures
        .check(
            "ListDiskIDs",
            c.disk.list_disk_ids(disk::ListDiskIDsRequest {}).await,
        )
        .map(|r| r.disk_i_ds);
    let numbers: Vec<u32> = {
        let mut all: Vec<u32> = locations.keys().copied().collect();
        if let Ok(ids) = &ids {
            all.extend(ids.keys().copied());
        }
        all.sort_unstable();
        all.dedup();
        all
    };
    println!("{} disks", numbers.len());
    let locations: BTreeMap<_, _> = locations.into_iter().collect();
    for number in numbers {
        println!("disk {number}");
        match locations.get(&number) {
            // The proxy leaves `bus` empty; shown only when a server fills it.
            Some(l) if l.bus.is_empty() => println!(
                "  location  adapter {}, target {}, LUN {}",
                l.adapter, l.target, l.lunid
            ),
            Some(l) => println!(
                "  location  adapter {}, bus {}, target {}, LUN {}",
                l.adapter, l.bus, l.target, l.lunid
            ),
            None => println!("  location  (not reported by ListDiskLocations)"),
        }
        match &ids {
            Ok(ids) => match ids.get(&number) {
                Some(id) => {
                    println!("  page83    {}", or_none(&id.page83));
                    println!("  serial    {}", or_none(&id.serial_number));
                }
                None => println!("  ids       (not reported by ListDiskIDs)"),
            },
            Err(e) => println!("  ids       {e}"),
        }
        let request = disk::GetDiskStatsRequest {
            disk_number: number,
        };
        match failures.check("GetDiskStats", c.disk.get_disk_stats(request).await) {
            Ok(stats) => println!("  size      {}", size(stats.total_bytes)),
            Err(e) => println!("  size      {e}"),
        }
        let request = disk::GetDiskStateRequest {
            disk_number: number,
        };
        match failures.check("GetDiskState", c.disk.get_disk_state(request).await) {
            Ok(state) if state.is_online => println!("  state     online"),
            Ok(_) => println!("  state     offline"),
            Err(e) => println!("  state     {e}"),
        }
        let request = volume::ListVolumesOnDiskRequest {
            disk_number: number,
            partition_number: 0,
        };
        let volumes = match failures.check(
            "ListVolumesOnDisk",
            c.volume.list_volumes_on_disk(request).await,
        ) {
            Ok(r) => r.volume_ids,
            Err(e) => {
                println!("  volumes   {e}");
                continue;
            }
        };
        if volumes.is_empty() {
            println!("  volumes   none");
        }
        for id in volumes {
            println!("  volume    {id}");
            let request = volume::IsVolumeFormattedRequest {
                volume_id: id.clone(),
            };
            let formatted = match failures.check(
                "IsVolumeFormatted",
                c.volume.is_volume_formatted(request).await,
            ) {
                Ok(r) => r.formatted,
                Err(e) => {
                    println!("    formatted {e}");
                    continue;
                }
            };
            if !formatted {
                println!("    formatted no (no file system, so no usage)");
                continue;
            }
            println!("    formatted yes");
            let request = volume::GetVolumeStatsRequest { volume_id: id };
            match failures.check("GetVolumeStats", c.volume.get_volume_stats(request).await) {
                Ok(s) => println!(
                    "    usage     {} used of {}",
                    size(s.used_bytes),
                    size(s.total_bytes)
                ),
                Err(e) => println!("    usage     {e}"),
            }
        }
    }
    match failures.0.as_slice() {
        [] => Ok(()),
        [only] => Err(only.clone().into()),
        [first, rest @ ..] => {
            Err(format!("{} calls failed, the first: {first}", rest.len() + 1).into())
        }
    }
}

fn or_none(text: &str) -> &str {
    if text.is_empty() { "(none)" } else { text }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    common::main("list_disks", &[], async |mut args: Args| {
        // On Windows the default is the machine's own proxy.
        args.proxy |= cfg!(windows) && args.socket_dir.is_none();
        let proxy = Proxy::from_args(&args).await?;
        let result = list(&Clients::connect(&proxy).await?).await;
        proxy.stop().await?;
        result
    })
    .await
}
