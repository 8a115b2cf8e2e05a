//! `csi-sim-cloud sanity` as a driver author runs it: the installed binary,
//! a plugin command with placeholders, csi-sanity from the flag or nowhere.
//! A stand-in csi-sanity (a shell script) records what it was given and
//! uses the path commands on the simulated node; a stand-in plugin (Python)
//! serves a socket at `{endpoint}`.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_csi-sim-cloud");

fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn runs_the_plugin_and_csi_sanity_and_reports_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let plugin = out.join("plugin");
    script(
        &plugin,
        &format!(
            "echo $$ > {o}/plugin.pid\necho \"$@\" > {o}/plugin.args\n\
             exec python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); time.sleep(600)' \"${{2#unix://}}\"",
            o = out.display()
        ),
    );
    let sanity = out.join("csi-sanity");
    script(
        &sanity,
        &format!(
            "printf '%s\\n' \"$@\" > {o}/sanity.args\n\
             while [ $# -gt 0 ]; do case \"$1\" in\n\
               --csi.createmountpathcmd) create=$2;; --csi.checkpathcmd) check=$2;;\n\
               --csi.removemountpathcmd) remove=$2;; --csi.secrets) secrets=$2;;\n\
               --csi.testvolumeparameters) parameters=$2;; esac; shift; done\n\
             \"$create\" /var/lib/kubelet/csi-sanity/mount/x > {o}/created\n\
             \"$check\" /var/lib/kubelet/csi-sanity/mount/x > {o}/checked\n\
             \"$remove\" /var/lib/kubelet/csi-sanity/mount/x\n\
             \"$check\" /var/lib/kubelet/csi-sanity/mount/x > {o}/removed\n\
             cat \"$secrets\" > {o}/secrets\ncat \"$parameters\" > {o}/parameters\n\
             echo 'Ran 1 of 2 Specs in 0.100 seconds'\nexit 3",
            o = out.display()
        ),
    );
    let status = Command::new(BIN)
        .args(["sanity", "--cloud", "azurefile", "--csi-sanity"])
        .arg(&sanity)
        .args([
            "--volume-parameter",
            "mountPermissions=0777",
            "--sanity-arg=--ginkgo.focus",
            "--sanity-arg=Controller Service",
            "--",
        ])
        .arg(&plugin)
        .args([
            "--endpoint",
            "{endpoint}",
            "--csi-proxy-socket-dir",
            "{proxy}",
            "--node-id",
            "{node-id}",
        ])
        .env_remove("CSI_SANITY_LOGS")
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(3), "csi-sanity's own status");

    let args = read(&out.join("plugin.args"));
    let words: Vec<&str> = args.split_whitespace().collect();
    assert_eq!(words[0], "--endpoint");
    assert!(
        words[1].starts_with("unix:///") && words[1].ends_with("/csi.sock"),
        "{args}"
    );
    assert_eq!(words[2], "--csi-proxy-socket-dir");
    assert!(words[3].ends_with("/proxy"), "{args}");
    assert_eq!(words[4..], ["--node-id", "sanity-node"]);

    let flags = read(&out.join("sanity.args"));
    let flags: Vec<&str> = flags.lines().collect();
    let after = |flag: &str| flags[flags.iter().position(|f| *f == flag).unwrap() + 1];
    assert_eq!(after("--csi.endpoint"), words[1]);
    assert_eq!(after("--csi.mountdir"), "/var/lib/kubelet/csi-sanity/mount");
    assert_eq!(
        after("--csi.stagingdir"),
        "/var/lib/kubelet/csi-sanity/staging"
    );
    assert_eq!(
        flags[flags.len() - 2..],
        ["--ginkgo.focus", "Controller Service"]
    );

    // the path commands work on the simulated node, through its proxy
    assert_eq!(
        read(&out.join("created")).trim(),
        "/var/lib/kubelet/csi-sanity/mount/x"
    );
    assert_eq!(read(&out.join("checked")).trim(), "other");
    assert_eq!(read(&out.join("removed")).trim(), "not_found");
    // azurefile's stage secrets: the storage account and its key
    let secrets = read(&out.join("secrets"));
    assert!(secrets.starts_with("NodeStageVolumeSecret:\n"), "{secrets}");
    assert!(
        secrets.contains("  azurestorageaccountname: \"smbuser\"\n"),
        "{secrets}"
    );
    assert_eq!(
        read(&out.join("parameters")),
        "\"mountPermissions\": \"0777\"\n"
    );

    // the plugin was stopped (and reaped) before the command returned
    let pid = read(&out.join("plugin.pid"));
    assert!(
        !Path::new(&format!("/proc/{}", pid.trim())).exists(),
        "plugin {pid} still runs"
    );
}

#[test]
fn without_csi_sanity_it_stops_at_once_naming_the_three_ways() {
    let empty = tempfile::tempdir().unwrap();
    let output = Command::new(BIN)
        .args(["sanity", "--cloud", "smb", "--", "/nonexistent/plugin"])
        .env_remove("CSI_SANITY")
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for way in [
        "--csi-sanity PATH",
        "CSI_SANITY=PATH",
        "go install github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@v5.3.1",
    ] {
        assert!(stderr.contains(way), "{way} missing from: {stderr}");
    }
}

#[test]
fn csi_sanity_that_runs_no_spec_is_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let sanity = dir.path().join("csi-sanity");
    script(&sanity, "echo 'flag provided but not defined'\nexit 0");
    let plugin = dir.path().join("plugin");
    script(
        &plugin,
        "exec python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); time.sleep(600)' \"${2#unix://}\"",
    );
    let status = Command::new(BIN)
        .args(["sanity", "--csi-sanity"])
        .arg(&sanity)
        .arg("--")
        .arg(&plugin)
        .args(["--endpoint", "{endpoint}"])
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
}

/// `--node-in-plugin`: no node or cloud is started here (the proxy's
/// directory stays empty), the plugin is told where to serve the
/// controller, and csi-sanity starts only once the plugin serves it too
/// (the stand-in serves its endpoint first, the controller a second later).
#[test]
fn with_the_node_in_the_plugin_csi_sanity_waits_for_its_controller() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let plugin = out.join("plugin");
    script(
        &plugin,
        &format!(
            "echo \"$@\" > {o}/plugin.args\n\
             exec python3 -c 'import socket,sys,time\n\
             def serve(p):\n    s=socket.socket(socket.AF_UNIX); s.bind(p); s.listen(1); return s\n\
             a=serve(sys.argv[1]); time.sleep(1); b=serve(sys.argv[2]); time.sleep(600)' \
             \"${{2#unix://}}\" \"${{4#unix://}}\"",
            o = out.display()
        ),
    );
    let sanity = out.join("csi-sanity");
    script(
        &sanity,
        &format!(
            "while [ $# -gt 0 ]; do case \"$1\" in\n\
               --csi.controllerendpoint) controller=$2;; esac; shift; done\n\
             echo \"$controller\" > {o}/controller\n\
             if [ -S \"${{controller#unix://}}\" ]; then echo serving; else echo absent; fi > {o}/served\n\
             ls \"$(dirname \"${{controller#unix://}}\")/proxy\" | wc -l > {o}/proxy\n\
             echo 'Ran 1 of 2 Specs in 0.100 seconds'",
            o = out.display()
        ),
    );
    let status = Command::new(BIN)
        .args([
            "sanity",
            "--cloud",
            "azure-nvme",
            "--node-in-plugin",
            "--csi-sanity",
        ])
        .arg(&sanity)
        .arg("--")
        .arg(&plugin)
        .args(["--endpoint", "{endpoint}", "--controller", "{controller}"])
        .env_remove("CSI_SANITY_LOGS")
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let args = read(&out.join("plugin.args"));
    let controller = args.split_whitespace().nth(3).unwrap().to_string();
    assert!(
        controller.starts_with("unix:///") && controller.ends_with("/controller.sock"),
        "{args}"
    );
    assert_eq!(read(&out.join("controller")).trim(), controller);
    assert_eq!(read(&out.join("served")).trim(), "serving");
    assert_eq!(read(&out.join("proxy")).trim(), "0", "a proxy was started");
}

/// The repository's file `path` (this test runs in a checkout; the
/// package leaves its tests out).
fn repo_file(path: &str) -> String {
    read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path))
}

/// The placeholders `csi-sim-cloud sanity` replaces, read from its source
/// (`.replace("{name}", ...)`), and its long flags, read from its `--help`.
fn placeholders_and_flags() -> (Vec<String>, Vec<String>) {
    let source = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/sanity.rs"));
    let placeholders: Vec<String> = source
        .split(".replace(\"{")
        .skip(1)
        .filter_map(|s| s.split_once("}\"").map(|(name, _)| format!("{{{name}}}")))
        .collect();
    let help = Command::new(BIN)
        .args(["sanity", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let flags: Vec<String> = help
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("--"))
        .filter_map(|l| l.split([' ', '=']).next())
        .filter(|f| *f != "help")
        .map(|f| format!("--{f}"))
        .collect();
    assert!(placeholders.len() >= 5, "{placeholders:?}");
    assert!(flags.len() >= 7, "{flags:?} from {help}");
    (placeholders, flags)
}

/// Every placeholder and every flag of `csi-sim-cloud sanity` has its row
/// in the tables of csi-sim-cloud's README and of docs/development.md
/// (issue 43: `{local-root}` was in neither), and each document shows a
/// plugin with other flag names than the example's (`--nodeid`).
#[test]
fn every_placeholder_and_flag_is_documented() {
    let (placeholders, flags) = placeholders_and_flags();
    for (name, text) in [
        (
            "csi-sim-cloud/README.md",
            repo_file("csi-sim-cloud/README.md"),
        ),
        ("docs/development.md", repo_file("docs/development.md")),
    ] {
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| `")).collect();
        for p in &placeholders {
            let row = format!("| `{p}` |");
            assert!(
                rows.iter().any(|r| r.starts_with(&row)),
                "{name}: no row {row}"
            );
        }
        for f in &flags {
            let row = format!("| `{f}");
            assert!(
                rows.iter()
                    .any(|r| r.starts_with(&format!("{row}`")) || r.starts_with(&format!("{row} "))),
                "{name}: no row for {f}"
            );
        }
        assert!(
            text.contains("--nodeid {node-id}"),
            "{name}: no worked example with another plugin's flag names"
        );
    }
}

/// scripts/csi-sanity.sh: every option it takes is in docs/development.md's
/// synopsis of it, and every placeholder in its own header.
#[test]
fn every_option_of_the_script_is_documented() {
    let script = repo_file("scripts/csi-sanity.sh");
    let development = repo_file("docs/development.md");
    let synopsis = development
        .split("scripts/csi-sanity.sh [")
        .nth(1)
        .and_then(|s| s.split("\n\n").next())
        .map(|s| format!("[{s}"))
        .expect("docs/development.md: no synopsis of scripts/csi-sanity.sh");
    // The option parser's arms: `    --cloud) ...`, `--node-id|--volume-parameter)`.
    let options: Vec<&str> = script
        .lines()
        .filter_map(|l| l.trim_start().split_once(')').map(|(arm, _)| arm))
        .filter(|arm| arm.starts_with("--") && *arm != "--")
        .flat_map(|arm| arm.split('|'))
        .filter(|o| *o != "--plugin-arg") // gone: it refuses, naming --plugin
        .collect();
    assert!(options.len() >= 5, "{options:?}");
    for o in options {
        assert!(
            synopsis.contains(&format!("[{o} ")) || synopsis.contains(&format!("[{o}]")),
            "docs/development.md's synopsis of scripts/csi-sanity.sh lacks {o}: {synopsis}"
        );
    }
    let header: String = script
        .lines()
        .take_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    for p in placeholders_and_flags().0 {
        assert!(
            header.contains(&format!("#   {p} ")),
            "scripts/csi-sanity.sh's header lacks {p}"
        );
    }
}

/// scripts/csi-sanity.sh --plugin runs an installed csi-sim-cloud (the one
/// on the PATH; `CSI_SIM_CLOUD` first) instead of building one, with the
/// plugin's command line as given, placeholders untouched for it to fill.
#[test]
fn the_script_uses_an_installed_csi_sim_cloud() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = |path: &Path, who: &str| {
        script(
            path,
            &format!(
                "printf '%s\\n' {who} \"$@\" > {}/args",
                dir.path().display()
            ),
        )
    };
    fake(&bin.join("csi-sim-cloud"), "installed");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let plugin = [
        "--plugin",
        "target/debug/azurefile-windows",
        "--endpoint",
        "{endpoint}",
        "--nodeid",
        "{node-id}",
        "--local-root={local-root}",
    ];
    let run = |env: &[(&str, &str)]| {
        let mut command =
            Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/csi-sanity.sh"));
        command
            .args(["--cloud", "azurefile", "--node-id", "aks-node-7"])
            .args(plugin)
            .args(["--", "--ginkgo.v"])
            .env("PATH", &path)
            .env("CSI_SANITY", "/bin/true")
            .env_remove("CSI_SIM_CLOUD");
        for (k, v) in env {
            command.env(k, v);
        }
        let status = command.status().unwrap();
        assert!(status.success(), "{status}");
        read(&dir.path().join("args"))
    };
    let expected = |who: &str| {
        let mut args = vec![
            who,
            "sanity",
            "--cloud",
            "azurefile",
            "--node-id",
            "aks-node-7",
            "--csi-sanity",
            "/bin/true",
            "--sanity-arg=--ginkgo.v",
            "--",
        ];
        args.extend(&plugin[1..]);
        args.join("\n") + "\n"
    };
    assert_eq!(run(&[]), expected("installed"));
    let chosen = dir.path().join("chosen");
    fake(&chosen, "chosen");
    assert_eq!(
        run(&[("CSI_SIM_CLOUD", chosen.to_str().unwrap())]),
        expected("chosen")
    );
}
