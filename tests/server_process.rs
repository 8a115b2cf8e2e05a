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
    let status = child.wait();
    panic!("server exited before it was ready ({status:?}): {lines:?}");
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

    let out = run(&["--socket-dir", d, "--serve", "disk/v9"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("\"disk/v9\" is not a served group version")
    );

    let out = run(&["--socket-dir", d, "--no-such-flag"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"));

    let missing = dir.path().join("missing.toml");
    let out = run(&["--socket-dir", d, "--seed", missing.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.toml"));

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[[disks]]\nnumber = 1\nsize = \"big\"\n").unwrap();
    let out = run(&["--socket-dir", d, "--seed", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.toml") && stderr.contains("size"),
        "{stderr}"
    );

    let out = run(&["--log-level", "not a [filter"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--log-level"));

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
