//! A volume's life on a Windows node, as a CSI node plugin drives it through
//! the CSI Proxy: stage, publish, stats, expand, unpublish, unstage.
//!
//! ```text
//! cargo run --example node_stage                       # embedded reference server
//! cargo run --example node_stage -- --socket-dir DIR   # a running csi-proxy-server
//! CSI_PROXY_SOCKET_DIR=DIR cargo run --example node_stage
//! ```
//!
//! Without a socket directory it starts the reference server with its
//! default node on a temporary directory. On Windows, `--proxy` talks to the
//! real CSI Proxy's default pipes instead: careful, it partitions and formats
//! the disk on the LUN given with `--lun`.

use std::error::Error as StdError;
use std::path::PathBuf;
use std::process::ExitCode;

use csi_proxy_client::disk::v1::{self as disk, DiskApi};
use csi_proxy_client::filesystem::v1::{self as filesystem, FilesystemApi};
use csi_proxy_client::volume::v1::{self as volume, VolumeApi};

const STAGING: &str =
    r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\disk.csi.example.com\pv-demo\globalmount";
const PUBLISH: &str = r"C:\var\lib\kubelet\pods\3f1c\volumes\kubernetes.io~csi\pv-demo\mount";

type Result<T> = std::result::Result<T, Box<dyn StdError>>;

struct Args {
    socket_dir: Option<PathBuf>,
    proxy: bool,
    lun: String,
}

fn parse_args() -> std::result::Result<Args, String> {
    let mut args = Args {
        socket_dir: std::env::var_os(csi_proxy_client::transport::SOCKET_DIR_ENV)
            .map(PathBuf::from),
        proxy: false,
        lun: "1".to_string(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--socket-dir" => {
                args.socket_dir = Some(it.next().ok_or("--socket-dir needs a directory")?.into())
            }
            "--proxy" => args.proxy = true,
            "--lun" => args.lun = it.next().ok_or("--lun needs a number")?,
            other => {
                return Err(format!(
                    "unknown argument {other:?}; see the example's doc comment"
                ));
            }
        }
    }
    Ok(args)
}

/// The three v1 clients a node plugin uses for block volumes.
struct Clients {
    disk: disk::Client,
    volume: volume::Client,
    fs: filesystem::Client,
}

impl Clients {
    async fn connect(address: impl Fn(&str) -> String) -> Result<Self> {
        Ok(Self {
            disk: disk::Client::connect(address("disk")).await?,
            volume: volume::Client::connect(address("volume")).await?,
            fs: filesystem::Client::connect(address("filesystem")).await?,
        })
    }
}

/// Runs one step, printing its name and what came back; a failure names the step.
macro_rules! step {
    ($name:expr, $call:expr) => {{
        match $call.await {
            Ok(value) => value,
            Err(e) => return Err(format!("step '{}' failed: {}", $name, chain(&e)).into()),
        }
    }};
}

fn chain(e: &dyn StdError) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

async fn stage(c: &Clients, lun: &str) -> Result<String> {
    let locations = step!(
        "ListDiskLocations",
        c.disk
            .list_disk_locations(disk::ListDiskLocationsRequest {})
    );
    let number = locations
        .disk_locations
        .iter()
        .find(|(_, l)| l.lunid == lun)
        .map(|(n, _)| *n)
        .ok_or_else(|| format!("step 'find disk' failed: no disk on LUN {lun}"))?;
    println!("  find disk by LUN {lun:<4} -> disk {number}");
    step!(
        "PartitionDisk",
        c.disk.partition_disk(disk::PartitionDiskRequest {
            disk_number: number
        })
    );
    println!("  PartitionDisk        -> ok");
    let request = volume::ListVolumesOnDiskRequest {
        disk_number: number,
        partition_number: 0,
    };
    let volumes = step!("ListVolumesOnDisk", c.volume.list_volumes_on_disk(request));
    let id = volumes
        .volume_ids
        .first()
        .cloned()
        .ok_or("step 'ListVolumesOnDisk' failed: no volume on the disk")?;
    println!("  ListVolumesOnDisk    -> {id}");
    let request = volume::IsVolumeFormattedRequest {
        volume_id: id.clone(),
    };
    let formatted = step!("IsVolumeFormatted", c.volume.is_volume_formatted(request)).formatted;
    println!("  IsVolumeFormatted    -> {formatted}");
    if !formatted {
        step!(
            "FormatVolume",
            c.volume.format_volume(volume::FormatVolumeRequest {
                volume_id: id.clone()
            })
        );
        println!("  FormatVolume         -> NTFS");
    }
    let exists = step!(
        "PathExists",
        c.fs.path_exists(filesystem::PathExistsRequest {
            path: STAGING.into()
        })
    )
    .exists;
    let request = volume::GetVolumeIdFromTargetPathRequest {
        target_path: STAGING.into(),
    };
    if exists
        && c.volume
            .get_volume_id_from_target_path(request)
            .await
            .is_ok_and(|r| r.volume_id == id)
    {
        println!("  staging path         -> already mounted, nothing to do");
        return Ok(id);
    }
    step!(
        "Mkdir",
        c.fs.mkdir(filesystem::MkdirRequest {
            path: STAGING.into()
        })
    );
    let request = volume::MountVolumeRequest {
        volume_id: id.clone(),
        target_path: STAGING.into(),
    };
    step!("MountVolume", c.volume.mount_volume(request));
    println!("  MountVolume          -> {STAGING}");
    Ok(id)
}

async fn stats(c: &Clients, path: &str) -> Result<(i64, i64)> {
    let request = volume::GetVolumeIdFromTargetPathRequest {
        target_path: path.into(),
    };
    let id = step!(
        "GetVolumeIDFromTargetPath",
        c.volume.get_volume_id_from_target_path(request)
    )
    .volume_id;
    let stats = step!(
        "GetVolumeStats",
        c.volume
            .get_volume_stats(volume::GetVolumeStatsRequest { volume_id: id })
    );
    Ok((stats.total_bytes, stats.used_bytes))
}

async fn walk(c: &Clients, lun: &str, grow: impl AsyncFnOnce(u32) -> Result<()>) -> Result<()> {
    println!("NodeStageVolume");
    let id = stage(c, lun).await?;
    println!("NodeStageVolume again (must be idempotent)");
    let again = stage(c, lun).await?;
    if again != id {
        return Err(
            format!("step 'stage again' failed: got volume {again}, first time {id}").into(),
        );
    }

    println!("NodePublishVolume");
    let request = filesystem::CreateSymlinkRequest {
        source_path: STAGING.into(),
        target_path: PUBLISH.into(),
    };
    step!("CreateSymlink", c.fs.create_symlink(request));
    println!("  CreateSymlink        -> {PUBLISH} -> staging");
    let request = filesystem::IsSymlinkRequest {
        path: PUBLISH.into(),
    };
    println!(
        "  IsSymlink            -> {}",
        step!("IsSymlink", c.fs.is_symlink(request)).is_symlink
    );

    println!("NodeGetVolumeStats");
    let (total, used) = stats(c, PUBLISH).await?;
    println!("  GetVolumeStats       -> total {total} bytes, used {used} bytes");

    println!("NodeExpandVolume");
    let request = volume::GetDiskNumberFromVolumeIdRequest {
        volume_id: id.clone(),
    };
    let number = step!(
        "GetDiskNumberFromVolumeID",
        c.volume.get_disk_number_from_volume_id(request)
    )
    .disk_number;
    grow(number).await?;
    step!("Rescan", c.disk.rescan(disk::RescanRequest {}));
    let size = step!(
        "GetDiskStats",
        c.disk.get_disk_stats(disk::GetDiskStatsRequest {
            disk_number: number
        })
    );
    println!(
        "  GetDiskStats         -> disk {number} is {} bytes",
        size.total_bytes
    );
    let request = volume::ResizeVolumeRequest {
        volume_id: id.clone(),
        size_bytes: 0,
    };
    step!("ResizeVolume", c.volume.resize_volume(request));
    let (grown, _) = stats(c, PUBLISH).await?;
    println!("  ResizeVolume         -> total {total} -> {grown} bytes");

    println!("NodeUnpublishVolume");
    step!(
        "WriteVolumeCache",
        c.volume
            .write_volume_cache(volume::WriteVolumeCacheRequest {
                volume_id: id.clone()
            })
    );
    step!(
        "Rmdir",
        c.fs.rmdir(filesystem::RmdirRequest {
            path: PUBLISH.into(),
            force: false
        })
    );
    println!("  Rmdir publish path   -> removed");

    println!("NodeUnstageVolume");
    let request = volume::UnmountVolumeRequest {
        volume_id: id.clone(),
        target_path: STAGING.into(),
    };
    step!("UnmountVolume", c.volume.unmount_volume(request));
    step!(
        "Rmdir",
        c.fs.rmdir(filesystem::RmdirRequest {
            path: STAGING.into(),
            force: false
        })
    );
    let exists = step!(
        "PathExists",
        c.fs.path_exists(filesystem::PathExistsRequest {
            path: STAGING.into()
        })
    )
    .exists;
    println!("  UnmountVolume, Rmdir -> staging path exists: {exists}");
    println!("done: volume {id} staged, published, expanded and cleaned up");
    Ok(())
}

async fn run(args: Args) -> Result<()> {
    let address = |dir: PathBuf| {
        move |group: &str| format!("unix://{}/csi-proxy-{group}-v1.sock", dir.display())
    };
    if args.proxy {
        println!("talking to the CSI Proxy's default endpoints");
        let c = Clients {
            disk: disk::Client::connect_default().await?,
            volume: volume::Client::connect_default().await?,
            fs: filesystem::Client::connect_default().await?,
        };
        return walk(&c, &args.lun, async |_| Ok(())).await;
    }
    if let Some(dir) = args.socket_dir {
        println!("talking to the server in {}", dir.display());
        let c = Clients::connect(address(dir)).await?;
        return walk(&c, &args.lun, async |_| Ok(())).await;
    }
    embedded(args, address).await
}

#[cfg(unix)]
async fn embedded<F: Fn(&str) -> String>(args: Args, address: impl Fn(PathBuf) -> F) -> Result<()> {
    use csi_proxy_client::server::{GroupVersion, Server};
    let dir = tempfile::tempdir()?;
    let endpoints = ["disk", "volume", "filesystem"]
        .map(|g| GroupVersion::parse(&format!("{g}/v1")).expect("served"));
    let server = Server::builder()
        .socket_dir(dir.path())
        .serve(endpoints)
        .start()
        .await?;
    println!(
        "started the embedded reference server in {} (default node)",
        dir.path().display()
    );
    let c = Clients::connect(address(dir.path().to_path_buf())).await?;
    let host = server.host().clone();
    let result = walk(&c, &args.lun, async move |number| {
        host.grow_disk(number, 64 << 30)?;
        println!("  (the cloud disk grew to 64 GiB)");
        Ok(())
    })
    .await;
    server.shutdown().await?;
    result
}

#[cfg(not(unix))]
async fn embedded<F: Fn(&str) -> String>(_: Args, _: impl Fn(PathBuf) -> F) -> Result<()> {
    Err("on Windows, pass --proxy to use the real CSI Proxy, or --socket-dir".into())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("node_stage: {e}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("node_stage: {e}");
            ExitCode::FAILURE
        }
    }
}
