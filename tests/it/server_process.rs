//! The `csi-proxy-server` binary as an operator runs it: start-up output,
//! the sockets it creates, SIGTERM, and its errors.
#![cfg(all(unix, feature = "server"))]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_csi-proxy-server");

fn sockets_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sock"))
        .collect();
    names.sort();
    names
}

/// Starts the server and reads its address lines up to `ready`.
fn start(args: &[&str]) -> (Child, Vec<String>) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        let ready = line.starts_with("ready:");
        lines.push(line);
        if ready {
            return (child, lines);
        }
    }
    let _ = child.kill();
    let status = child.wait().unwrap();
    panic!("server exited ({status}) before it was ready: {lines:?}");
}

fn terminate(child: &mut Child) -> std::process::ExitStatus {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    for _ in 0..100 {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    panic!("server did not stop within 5 s of SIGTERM");
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

#[test]
fn serves_23_sockets_prints_them_and_removes_them_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, lines) = start(&["--socket-dir", dir.path().to_str().unwrap()]);
    assert_eq!(lines.last().unwrap(), "ready: serving 23 endpoints");
    assert_eq!(lines.len(), 24);
    assert!(
        lines.contains(&format!(
            "disk/v1 {}",
            dir.path().join("csi-proxy-disk-v1.sock").display()
        )),
        "{lines:?}"
    );
    let sockets = sockets_in(dir.path());
    assert_eq!(sockets.len(), 23, "{sockets:?}");
    assert!(sockets.contains(&"csi-proxy-iscsi-v1alpha2.sock".to_string()));

    let status = terminate(&mut child);
    assert!(status.success(), "{status:?}");
    assert!(
        sockets_in(dir.path()).is_empty(),
        "{:?}",
        sockets_in(dir.path())
    );
}

#[test]
fn serves_only_the_requested_subset() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, lines) = start(&[
        "--socket-dir",
        dir.path().to_str().unwrap(),
        "--serve",
        "disk/v1,volume/v2alpha1",
    ]);
    assert_eq!(lines.last().unwrap(), "ready: serving 2 endpoints");
    assert_eq!(
        sockets_in(dir.path()),
        ["csi-proxy-disk-v1.sock", "csi-proxy-volume-v2alpha1.sock"]
    );
    assert!(terminate(&mut child).success());
}

/// `--proxy-release 1.1`: failures in the PowerShell era's words, which
/// classify as the v1.3 ones do.
#[cfg(feature = "client")]
#[test]
fn proxy_release_1_1_answers_in_powershell_words() {
    use csi_proxy_client::smb::v1::{self as smb, SmbApi};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (mut child, _) = start(&[
        "--socket-dir",
        d,
        "--serve",
        "smb/v1",
        "--proxy-release",
        "1.1",
    ]);
    let socket = dir.path().join("csi-proxy-smb-v1.sock");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let e = rt.block_on(async {
        let client = smb::Client::connect(socket.to_str().unwrap())
            .await
            .unwrap();
        client
            .remove_smb_global_mapping(smb::RemoveSmbGlobalMappingRequest {
                remote_path: r"\\fileserver\share".into(),
            })
            .await
            .unwrap_err()
    });
    drop(rt); // closes the connection, so the server stops at once
    let text = e.status().unwrap().message().to_string();
    assert!(
        text.starts_with("UnmountSmbShare failed. output: \"Remove-SmbGlobalMapping : No MSFT_SmbGlobalMapping objects found")
            && text.ends_with("err: exit status 1"),
        "{text}"
    );
    assert_eq!(e.kind(), csi_proxy_client::ErrorKind::NotFound, "{text}");
    assert!(terminate(&mut child).success());
}

#[test]
fn a_second_server_on_the_same_directory_fails_with_address_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (mut first, _) = start(&["--socket-dir", d, "--serve", "disk/v1"]);
    let second = run(&["--socket-dir", d, "--serve", "smb/v1,disk/v1"]);
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains("csi-proxy-disk-v1.sock") && stderr.contains("address in use"),
        "{stderr}"
    );
    // The second server created smb/v1 first and removed it again; the first server is untouched.
    assert_eq!(sockets_in(dir.path()), ["csi-proxy-disk-v1.sock"]);
    assert!(terminate(&mut first).success());
}

#[test]
fn bad_flags_and_seed_files_fail_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    // Runs the server, which must refuse to start; returns what it said.
    let refused = |args: &[&str]| -> String {
        let out = run(args);
        assert!(!out.status.success(), "{args:?} started");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };

    let stderr = refused(&["--socket-dir", d, "--serve", "disk/v9"]);
    assert!(stderr.contains("\"disk/v9\" is not a served group version"));

    let stderr = refused(&["--socket-dir", d, "--no-such-flag"]);
    assert!(stderr.contains("--no-such-flag"));

    let missing = dir.path().join("missing.toml");
    let stderr = refused(&["--socket-dir", d, "--seed", missing.to_str().unwrap()]);
    assert!(stderr.contains("missing.toml"));

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[[disks]]\nnumber = 1\nsize = \"big\"\n").unwrap();
    let stderr = refused(&["--socket-dir", d, "--seed", bad.to_str().unwrap()]);
    assert!(
        stderr.contains("bad.toml") && stderr.contains("size"),
        "{stderr}"
    );

    let early = dir.path().join("early.toml");
    std::fs::write(&early, "[[disks]]\nsize = 1024\nrescan_delay_ms = 500\n").unwrap();
    let stderr = refused(&["--socket-dir", d, "--seed", early.to_str().unwrap()]);
    assert!(
        stderr.contains("disks[0].rescan_delay_ms: needs `needs_rescan = true`"),
        "{stderr}"
    );

    let stderr = refused(&["--socket-dir", d, "--latency", "MountVolum=2"]);
    assert!(
        stderr.contains("\"MountVolum\" is the name of no RPC"),
        "{stderr}"
    );
    let stderr = refused(&["--socket-dir", d, "--latency", "MountVolume"]);
    assert!(stderr.contains("is not RPC=SECONDS"));

    let stderr = refused(&["--socket-dir", d, "--proxy-release", "2.0"]);
    assert!(stderr.contains("unknown csi-proxy release"), "{stderr}");

    let stderr = refused(&["--log-level", "not a [filter"]);
    assert!(stderr.contains("--log-level"));

    assert!(sockets_in(dir.path()).is_empty());
}

#[test]
fn without_a_socket_directory_it_says_so() {
    let out = run(&[]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("socket directory"),
        "{out:?}"
    );
}

/// The pid of a running server.
fn pid(child: &Child) -> String {
    child.id().to_string()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn socket(dir: &Path, group: &str, version: &str) -> String {
    format!(
        "unix://{}",
        dir.join(format!("csi-proxy-{group}-{version}.sock"))
            .display()
    )
}

async fn mkdir(dir: &Path, path: &str) {
    use csi_proxy_client::filesystem::v1::{self as fs, FilesystemApi};
    let client = fs::Client::connect(&socket(dir, "filesystem", "v1"))
        .await
        .unwrap();
    client
        .mkdir(fs::MkdirRequest { path: path.into() })
        .await
        .unwrap();
}

async fn exists(dir: &Path, path: &str) -> bool {
    use csi_proxy_client::filesystem::v1::{self as fs, FilesystemApi};
    let client = fs::Client::connect(&socket(dir, "filesystem", "v1"))
        .await
        .unwrap();
    client
        .path_exists(fs::PathExistsRequest { path: path.into() })
        .await
        .unwrap()
        .exists
}

/// Waits until the process exits; its status, or `None` after `limit`.
fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn sigterm(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &pid(child)])
        .status()
        .unwrap();
    assert!(status.success());
}

const DIR: &str = r"C:\var\lib\kubelet\plugins\kept";

#[test]
fn a_second_server_on_the_same_sandbox_refuses_and_touches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (sockets, sandbox) = (tmp.path().join("s"), tmp.path().join("b"));
    std::fs::create_dir(&sockets).unwrap();
    let (s, b) = (sockets.to_str().unwrap(), sandbox.to_str().unwrap());
    let (mut first, _) = start(&["--socket-dir", s, "--sandbox", b]);
    let rt = runtime();
    rt.block_on(mkdir(&sockets, DIR));

    let second = run(&["--socket-dir", s, "--sandbox", b]);
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains("in use") && stderr.contains(&format!("pid {}", pid(&first))),
        "{stderr}"
    );
    assert!(
        rt.block_on(exists(&sockets, DIR)),
        "the first server's node was wiped"
    );
    assert_eq!(sockets_in(&sockets).len(), 23);
    assert!(terminate(&mut first).success());
}

#[test]
fn a_server_that_cannot_bind_leaves_its_sandbox_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let (sockets, sandbox) = (tmp.path().join("s"), tmp.path().join("b"));
    std::fs::create_dir(&sockets).unwrap();
    let (s, b) = (sockets.to_str().unwrap(), sandbox.to_str().unwrap());
    // A node left in the sandbox by an earlier server.
    let (mut earlier, _) = start(&["--socket-dir", s, "--sandbox", b]);
    let rt = runtime();
    rt.block_on(mkdir(&sockets, DIR));
    assert!(terminate(&mut earlier).success());
    let files = |dir: &Path| walk(dir);
    let before = files(&sandbox);

    // Another server holds the sockets; the next one fails to bind.
    let other = tmp.path().join("other");
    let (mut holder, _) = start(&["--socket-dir", s, "--sandbox", other.to_str().unwrap()]);
    let failed = run(&["--socket-dir", s, "--sandbox", b]);
    assert!(!failed.status.success());
    assert!(String::from_utf8_lossy(&failed.stderr).contains("address in use"));
    assert_eq!(files(&sandbox), before, "the sandbox changed");
    assert!(terminate(&mut holder).success());
}

/// Every path under `dir`, sorted.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.is_symlink() {
                todo.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn sigterm_stops_the_server_while_a_client_holds_an_idle_connection() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (mut child, _) = start(&["--socket-dir", d, "--shutdown-grace", "2"]);
    let rt = runtime();
    // A client that has called once and keeps its connection open.
    let client = rt.block_on(async {
        use csi_proxy_client::disk::v1::{self as disk, DiskApi};
        let client = disk::Client::connect(&socket(dir.path(), "disk", "v1"))
            .await
            .unwrap();
        client
            .list_disk_locations(disk::ListDiskLocationsRequest {})
            .await
            .unwrap();
        client
    });
    sigterm(&child);
    let status = wait_exit(&mut child, Duration::from_secs(4));
    let _ = child.kill();
    assert!(
        status.is_some_and(|s| s.success()),
        "not stopped within 4 s: {status:?}"
    );
    assert!(sockets_in(dir.path()).is_empty());
    drop(client);
}

/// A seed whose `Slow` service takes `ms` to start: StartService on it is a
/// call that stays in flight that long.
fn slow_seed(dir: &Path, ms: u64) -> String {
    let path = dir.join("slow.toml");
    std::fs::write(
        &path,
        format!("[system]\n[[system.services]]\nname = \"Slow\"\nstart_delay_ms = {ms}\n"),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

async fn start_slow(dir: &Path) -> Result<(), csi_proxy_client::Error> {
    use csi_proxy_client::system::v1alpha1::{self as system, SystemApi};
    let client = system::Client::connect(&socket(dir, "system", "v1alpha1")).await?;
    client
        .start_service(system::StartServiceRequest {
            name: "Slow".into(),
        })
        .await
        .map(drop)
}

#[test]
fn a_call_in_flight_at_sigterm_finishes_within_the_grace_period() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = slow_seed(tmp.path(), 1500);
    let sockets = tmp.path().join("s");
    std::fs::create_dir(&sockets).unwrap();
    let s = sockets.to_str().unwrap();
    let (mut child, _) = start(&["--socket-dir", s, "--seed", &seed, "--shutdown-grace", "5"]);
    let rt = runtime();
    let call = rt.spawn({
        let sockets = sockets.clone();
        async move { start_slow(&sockets).await }
    });
    std::thread::sleep(Duration::from_millis(500));
    sigterm(&child);
    let status = wait_exit(&mut child, Duration::from_secs(5));
    let _ = child.kill();
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    rt.block_on(call)
        .unwrap()
        .expect("the call in flight failed");
}

#[test]
fn a_stopping_server_leaves_the_sockets_of_its_replacement_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = slow_seed(tmp.path(), 4000);
    let sockets = tmp.path().join("s");
    std::fs::create_dir(&sockets).unwrap();
    let s = sockets.to_str().unwrap();
    let (mut old, _) = start(&[
        "--socket-dir",
        s,
        "--seed",
        &seed,
        "--serve",
        "system/v1alpha1,disk/v1",
    ]);
    let rt = runtime();
    let call = rt.spawn({
        let sockets = sockets.clone();
        async move { start_slow(&sockets).await }
    });
    std::thread::sleep(Duration::from_millis(500));
    sigterm(&old);
    // The old server stops accepting at once; a replacement takes over
    // while the old one still finishes its call.
    let disk = sockets.join("csi-proxy-disk-v1.sock");
    for _ in 0..100 {
        if std::os::unix::net::UnixStream::connect(&disk).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let (mut new, _) = start(&["--socket-dir", s, "--serve", "system/v1alpha1,disk/v1"]);
    assert!(
        old.try_wait().unwrap().is_none(),
        "the old server did not wait for its call"
    );
    let status = wait_exit(&mut old, Duration::from_secs(6));
    let _ = old.kill();
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    rt.block_on(call)
        .unwrap()
        .expect("the call in flight failed");

    assert_eq!(
        sockets_in(&sockets),
        ["csi-proxy-disk-v1.sock", "csi-proxy-system-v1alpha1.sock"]
    );
    rt.block_on(async {
        use csi_proxy_client::disk::v1::{self as disk, DiskApi};
        let client = disk::Client::connect(&socket(&sockets, "disk", "v1"))
            .await
            .unwrap();
        client
            .list_disk_locations(disk::ListDiskLocationsRequest {})
            .await
            .unwrap();
    });
    assert!(terminate(&mut new).success());
}

/// `--layout azure` lays the node out as Azure does: the node layer over
/// the binary finds LUN 0's data disk on adapter 3 and lists the OS disk
/// and the resource disk on adapter 0; an unknown layout is refused by name.
#[test]
fn layout_azure_lays_the_node_out_as_azure_does() {
    use csi_proxy_client::node::{DiskSelector, Node, NodeOptions};
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().to_str().unwrap();
    let (mut child, _) = start(&["--socket-dir", s, "--layout", "azure"]);
    let rt = runtime();
    let disks = rt.block_on(async {
        let node = Node::connect(NodeOptions::default().socket_dir(tmp.path()))
            .await
            .unwrap();
        let disk = node.find_disk(DiskSelector::AzureLun(0)).await.unwrap();
        assert_eq!((disk.number, disk.adapter), (2, Some(3)));
        node.disks().await.unwrap()
    });
    assert_eq!(disks[0].os_disk, Some(true));
    assert!(disks[1].temporary);
    assert!(terminate(&mut child).success());
    let out = run(&["--socket-dir", s, "--layout", "nope"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown layout \"nope\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
