//! `csi-sim-cloud sanity`: csi-sanity against a node plugin in one command.
//!
//! The simulated node and the cloud's controller start in this process
//! (as `serve` starts them) under a temporary directory, unless the plugin
//! plays them in its own (`--node-in-plugin`, for HostProcess mode); the
//! plugin is started from the command line after `--`, its placeholders
//! filled in:
//!
//! | placeholder | becomes |
//! |---|---|
//! | `{endpoint}` | `unix://DIR/csi.sock`, where the plugin must serve |
//! | `{proxy}` | the proxy's socket directory (the plugin's `--csi-proxy-socket-dir`) |
//! | `{controller}` | `unix://DIR/controller.sock`, the cloud's controller (where a plugin run with `--node-in-plugin` serves it) |
//! | `{node-id}` | the node id the controller publishes to (`--node-id`) |
//! | `{local-root}` | the directory of the simulated node's `C:` volume, for a plugin that reads the node's paths itself (the example's `--local-root`: volume stats as a Windows build reads them) |
//!
//! Then csi-sanity runs the Node and Identity specs (more with
//! `--sanity-arg`), with its mount and staging directories under
//! `/var/lib/kubelet/csi-sanity`, created, removed and checked on the
//! simulated node through the proxy (`csi-sim-cloud path`), the share's
//! account as stage secrets for the share profiles, and
//! `--volume-parameter`s as `--csi.testvolumeparameters`. Everything is
//! stopped on exit; the exit status is csi-sanity's, [`SETUP_FAILURE`]
//! when it could not run.
//!
//! csi-sanity itself comes from `--csi-sanity PATH`, else `$CSI_SANITY`,
//! else `go install` of [`CSI_SANITY_PACKAGE`] at [`CSI_SANITY_VERSION`]
//! (once, kept in the user's cache directory); without any of them the
//! command stops at once and says so.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use csi_sim_cloud::{Profile, SMB_PASSWORD, SMB_USER, serve};
use tokio::io::AsyncBufReadExt;
use tokio::process::Command;

/// The exit status when csi-sanity could not be run (setup failed).
pub const SETUP_FAILURE: u8 = 2;
/// The csi-test release whose csi-sanity `go install` builds.
pub const CSI_SANITY_VERSION: &str = "v5.3.1";
/// The Go package of csi-sanity.
pub const CSI_SANITY_PACKAGE: &str = "github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity";
/// Where csi-sanity's directories are, as kubelet names them; the
/// simulated node confines them to `C:\var\lib\kubelet`.
const SANITY_DIR: &str = "/var/lib/kubelet/csi-sanity";
/// How long the plugin has to create its socket.
const PLUGIN_START: Duration = Duration::from_secs(30);

/// `csi-sim-cloud sanity` flags.
#[derive(Debug, clap::Args)]
pub struct Sanity {
    /// The cloud to play (as `serve --cloud`): generic, azure, azure-nvme,
    /// gcp, gcp-nvme, aws, vsphere, smb or azurefile.
    #[arg(long, value_name = "NAME", default_value = "generic")]
    cloud: Profile,

    /// The csi-sanity binary (default: $CSI_SANITY, else one built with
    /// `go install` when Go is installed and the network reachable).
    #[arg(long = "csi-sanity", value_name = "PATH")]
    csi_sanity: Option<PathBuf>,

    /// The node id the plugin reports and the controller publishes to.
    #[arg(long, value_name = "ID", default_value = "sanity-node")]
    node_id: String,

    /// A parameter of csi-sanity's CreateVolume requests
    /// (`--csi.testvolumeparameters`), which the cloud passes on in the
    /// volume context (repeatable).
    #[arg(long = "volume-parameter", value_name = "KEY=VALUE", value_parser = key_value)]
    volume_parameters: Vec<(String, String)>,

    /// One more csi-sanity flag, after the defaults (repeatable):
    /// `--sanity-arg=--ginkgo.focus=Controller`.
    #[arg(long = "sanity-arg", value_name = "FLAG", allow_hyphen_values = true)]
    sanity_args: Vec<String>,

    /// Keep the logs (cloud.log, plugin.log, sanity.log) in DIR (default:
    /// $CSI_SANITY_LOGS; else they go with the temporary directory).
    #[arg(long, value_name = "DIR")]
    logs: Option<PathBuf>,

    /// The plugin plays the simulated node and the cloud itself, in its
    /// own process (the example plugin's `--simulated-node`: HostProcess
    /// mode over the simulator, which a plugin in another process than the
    /// node cannot use): nothing is started here, and the plugin must serve
    /// the node's proxy in `{proxy}` (for csi-sanity's path commands) and
    /// the cloud's controller at `{controller}` before its own endpoint.
    #[arg(long)]
    node_in_plugin: bool,

    /// The plugin's command line, after `--`; `{endpoint}`, `{proxy}`,
    /// `{controller}`, `{node-id}` and `{local-root}` are replaced. Its GetPluginCapabilities must report
    /// CONTROLLER_SERVICE (csi-sanity then creates and publishes volumes
    /// through the simulated cloud).
    #[arg(last = true, required = true, value_name = "PLUGIN")]
    plugin: Vec<String>,
}

fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

/// Runs csi-sanity as `args` say; `Ok` is csi-sanity's exit status.
pub async fn run(args: Sanity) -> Result<u8, String> {
    // Before anything starts: without csi-sanity there is nothing to run.
    let sanity = find_csi_sanity(args.csi_sanity.clone())?;
    let work = tempfile::Builder::new()
        .prefix("csi-sanity.")
        .tempdir()
        .map_err(|e| format!("cannot make a temporary directory: {e}"))?;
    let logs = args
        .logs
        .clone()
        .or_else(|| std::env::var_os("CSI_SANITY_LOGS").map(PathBuf::from));
    let status = run_in(&args, &sanity, work.path()).await;
    if let Some(dir) = logs {
        keep_logs(work.path(), &dir);
    }
    status
}

async fn run_in(args: &Sanity, sanity: &Path, work: &Path) -> Result<u8, String> {
    let proxy = work.join("proxy");
    std::fs::create_dir_all(&proxy).map_err(|e| format!("{}: {e}", proxy.display()))?;
    log_to(&work.join("cloud.log"))?;
    let controller = format!("unix://{}", controller_socket(work).display());
    // The node and the cloud, here unless the plugin plays them itself.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let cloud = match args.node_in_plugin {
        true => None,
        false => {
            let mut options = serve::Options::new(args.cloud, &proxy, &controller, &args.node_id);
            options.sandbox = Some(work.join("node"));
            let serving = serve::start(options).await?;
            Some(tokio::spawn(serving.run_until(async {
                let _ = stopped.await;
            })))
        }
    };

    let endpoint = work.join("csi.sock");
    let result = match start_plugin(args, &endpoint, &proxy, work).await {
        Ok(mut plugin) => {
            // A SIGTERM or Ctrl-C stops csi-sanity (dropped: killed) and the
            // rest below, as its end does.
            let status = tokio::select! {
                status = csi_sanity(args, sanity, work, &endpoint, &controller) => status,
                () = super::shutdown_signal() => Err("stopped by a signal".into()),
            };
            let _ = plugin.start_kill();
            let _ = plugin.wait().await;
            status
        }
        Err(e) => Err(e),
    };
    let _ = stop.send(());
    if let Some(cloud) = cloud
        && let Ok(Err(e)) = cloud.await
    {
        eprintln!("csi-sim-cloud sanity: the simulated node and cloud: {e}");
    }
    result
}

/// Where the cloud's controller serves (`{controller}`), here or in a
/// plugin that plays the node.
fn controller_socket(work: &Path) -> PathBuf {
    work.join("controller.sock")
}

/// Tracing of the node and the cloud goes to `path`, not to the terminal
/// csi-sanity writes to.
fn log_to(path: &Path) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init();
    Ok(())
}

/// The plugin's command line with the placeholders filled in.
fn plugin_command(args: &Sanity, endpoint: &Path, proxy: &Path, work: &Path) -> Vec<String> {
    let endpoint = format!("unix://{}", endpoint.display());
    let controller = format!("unix://{}", controller_socket(work).display());
    let proxy = proxy.display().to_string();
    let local_root = system_volume_dir(&work.join("node")).unwrap_or_default();
    args.plugin
        .iter()
        .map(|a| {
            a.replace("{endpoint}", &endpoint)
                .replace("{proxy}", &proxy)
                .replace("{node-id}", &args.node_id)
                .replace("{controller}", &controller)
                .replace("{local-root}", &local_root)
        })
        .collect()
}

/// The directory of the simulated node's `C:` volume in its sandbox (the
/// one holding `var/lib/kubelet`): what a plugin reading the node's paths
/// itself (`--local-root`) takes as `C:\`.
fn system_volume_dir(sandbox: &Path) -> Option<String> {
    std::fs::read_dir(sandbox.join("volumes"))
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("var/lib/kubelet").is_dir())
        .map(|p| p.display().to_string())
}

/// Starts the plugin, its output in plugin.log, and waits for its socket.
async fn start_plugin(
    args: &Sanity,
    endpoint: &Path,
    proxy: &Path,
    work: &Path,
) -> Result<tokio::process::Child, String> {
    let command = plugin_command(args, endpoint, proxy, work);
    let log_path = work.join("plugin.log");
    let log = std::fs::File::create(&log_path).map_err(|e| format!("plugin.log: {e}"))?;
    let err = log.try_clone().map_err(|e| format!("plugin.log: {e}"))?;
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the plugin {:?}: {e}", command[0]))?;
    // A plugin that plays the node serves the controller too.
    let controller = controller_socket(work);
    let sockets = match args.node_in_plugin {
        true => format!("{} and {}", endpoint.display(), controller.display()),
        false => endpoint.display().to_string(),
    };
    let start = tokio::time::Instant::now();
    while start.elapsed() < PLUGIN_START {
        if endpoint.exists() && (!args.node_in_plugin || controller.exists()) {
            return Ok(child);
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "the plugin exited ({status}) before serving; its log:\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.start_kill();
    Err(format!(
        "the plugin did not create {sockets} within {} s; its log:\n{}",
        PLUGIN_START.as_secs(),
        std::fs::read_to_string(&log_path).unwrap_or_default()
    ))
}

/// Writes `name` under `dir` as an executable shell script.
fn script(dir: &Path, name: &str, body: &str) -> Result<PathBuf, String> {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n"))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(path)
}

/// `s` quoted for the shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The stage secrets csi-sanity sends for the cloud's volumes: the share's
/// account for the share profiles (csi-driver-smb's `username` and
/// `password`; azurefile's storage account name and key,
/// pkg/azurefile/azurefile.go `defaultSecretAccountName`/`Key`).
pub fn stage_secrets(profile: Profile) -> BTreeMap<&'static str, &'static str> {
    match profile {
        Profile::Smb => BTreeMap::from([("username", SMB_USER), ("password", SMB_PASSWORD)]),
        Profile::Azurefile => BTreeMap::from([
            ("azurestorageaccountname", SMB_USER),
            ("azurestorageaccountkey", SMB_PASSWORD),
        ]),
        _ => BTreeMap::new(),
    }
}

/// A YAML string (double-quoted, escaped).
fn yaml(s: &str) -> String {
    format!("{s:?}")
}

/// csi-sanity's command line: what `scripts/csi-sanity.sh` passed, and
/// the files it needs written under `work`.
fn sanity_args(
    args: &Sanity,
    work: &Path,
    endpoint: &Path,
    controller: &str,
) -> Result<Vec<OsString>, String> {
    let bin = work.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find csi-sim-cloud: {e}"))?;
    let proxy = work.join("proxy");
    let path_command = |action: &str| {
        script(
            &bin,
            action,
            &format!(
                "exec {} path {action} --socket-dir {} \"$1\"",
                quote(&exe.display().to_string()),
                quote(&proxy.display().to_string())
            ),
        )
    };
    let create = path_command("create")?;
    let remove = path_command("remove")?;
    let check = path_command("check")?;

    let mut out: Vec<OsString> = Vec::new();
    let mut flag = |name: &str, value: &dyn AsRef<std::ffi::OsStr>| {
        out.push(name.into());
        out.push(value.as_ref().to_os_string());
    };
    let secrets = stage_secrets(args.cloud);
    if !secrets.is_empty() {
        let path = work.join("secrets.yaml");
        let mut text = String::from("NodeStageVolumeSecret:\n");
        for (k, v) in secrets {
            text += &format!("  {k}: {}\n", yaml(v));
        }
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        flag("--csi.secrets", &path);
    }
    if !args.volume_parameters.is_empty() {
        let path = work.join("parameters.yaml");
        let text: String = args
            .volume_parameters
            .iter()
            .map(|(k, v)| format!("{}: {}\n", yaml(k), yaml(v)))
            .collect();
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        flag("--csi.testvolumeparameters", &path);
    }
    flag("--csi.endpoint", &format!("unix://{}", endpoint.display()));
    flag("--csi.controllerendpoint", &controller);
    flag("--csi.mountdir", &format!("{SANITY_DIR}/mount"));
    flag("--csi.stagingdir", &format!("{SANITY_DIR}/staging"));
    flag("--csi.createmountpathcmd", &create);
    flag("--csi.createstagingpathcmd", &create);
    flag("--csi.removemountpathcmd", &remove);
    flag("--csi.removestagingpathcmd", &remove);
    flag("--csi.checkpathcmd", &check);
    flag("--ginkgo.focus", &"Node Service|Identity Service");
    out.push("--ginkgo.no-color".into());
    out.extend(args.sanity_args.iter().map(OsString::from));
    Ok(out)
}

/// Runs csi-sanity, its output to the terminal and sanity.log; its exit
/// status, or 1 when it printed no summary (it did not run the specs).
async fn csi_sanity(
    args: &Sanity,
    sanity: &Path,
    work: &Path,
    endpoint: &Path,
    controller: &str,
) -> Result<u8, String> {
    let flags = sanity_args(args, work, endpoint, controller)?;
    let mut child = Command::new(sanity)
        .args(&flags)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start csi-sanity {}: {e}", sanity.display()))?;
    let mut log =
        std::fs::File::create(work.join("sanity.log")).map_err(|e| format!("sanity.log: {e}"))?;
    let mut summary = false;
    if let Some(stdout) = child.stdout.take() {
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            println!("{line}");
            let _ = writeln!(log, "{line}");
            summary |= is_summary(&line);
        }
    }
    let status = child.wait().await.map_err(|e| format!("csi-sanity: {e}"))?;
    let code = status.code().map_or(1, |c| u8::try_from(c).unwrap_or(1));
    if !summary {
        eprintln!("csi-sim-cloud sanity: no summary from csi-sanity (no spec ran)");
        return Ok(code.max(1));
    }
    Ok(code)
}

/// Whether `line` is ginkgo's summary, `Ran N of M Specs in ...`.
fn is_summary(line: &str) -> bool {
    let mut words = line.split_whitespace();
    words.next() == Some("Ran")
        && words.next().is_some_and(|n| n.parse::<u32>().is_ok())
        && words.next() == Some("of")
        && words.next().is_some_and(|n| n.parse::<u32>().is_ok())
        && words.next() == Some("Specs")
}

/// Copies the logs of `work` into `dir`.
fn keep_logs(work: &Path, dir: &Path) {
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("csi-sim-cloud sanity: logs: {}: {e}", dir.display());
        return;
    }
    for name in ["cloud.log", "plugin.log", "sanity.log"] {
        let _ = std::fs::copy(work.join(name), dir.join(name));
    }
}

/// The three ways to csi-sanity, for the error that none worked.
fn three_ways(why: &str) -> String {
    format!(
        "no csi-sanity to run ({why}). Give one of: --csi-sanity PATH; \
         CSI_SANITY=PATH in the environment; or Go (https://go.dev/dl/) on the PATH, \
         with the network reachable, so that `go install {CSI_SANITY_PACKAGE}@{CSI_SANITY_VERSION}` \
         builds it (kept for the next run)"
    )
}

/// csi-sanity from the flag, `$CSI_SANITY`, or `go install`.
fn find_csi_sanity(flag: Option<PathBuf>) -> Result<PathBuf, String> {
    let given = flag.map(|p| (p, "--csi-sanity")).or_else(|| {
        std::env::var_os("CSI_SANITY")
            .filter(|v| !v.is_empty())
            .map(|v| (PathBuf::from(v), "CSI_SANITY"))
    });
    if let Some((path, from)) = given {
        return match path.is_file() {
            true => Ok(path),
            false => Err(format!("{from} {}: no such file", path.display())),
        };
    }
    let Some(go) = on_path("go") else {
        return Err(three_ways(
            "no --csi-sanity, no CSI_SANITY, no `go` on the PATH",
        ));
    };
    let bin = cache_dir().join(format!("csi-sanity-{CSI_SANITY_VERSION}"));
    let built = bin.join("csi-sanity");
    if built.is_file() {
        return Ok(built);
    }
    eprintln!(
        "csi-sim-cloud sanity: building csi-sanity {CSI_SANITY_VERSION} with `go install` into {} (once)",
        bin.display()
    );
    let status = std::process::Command::new(go)
        .args([
            "install",
            &format!("{CSI_SANITY_PACKAGE}@{CSI_SANITY_VERSION}"),
        ])
        .env("GOBIN", &bin)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| three_ways(&format!("go could not be run: {e}")))?;
    if !status.success() || !built.is_file() {
        return Err(three_ways(&format!("`go install` failed: {status}")));
    }
    Ok(built)
}

/// `name` in a directory of `$PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// `$XDG_CACHE_HOME/csi-sim-cloud`, else `~/.cache/csi-sim-cloud`, else
/// the temporary directory's.
fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("csi-sim-cloud")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ginkgo_summary_lines_are_recognised() {
        assert!(is_summary("Ran 74 of 91 Specs in 6.958 seconds"));
        assert!(!is_summary("Ran out of time"));
        assert!(!is_summary("  Will run 74 of 91 specs"));
    }

    #[test]
    fn share_profiles_send_their_accounts_as_the_upstream_drivers_read_them() {
        assert_eq!(stage_secrets(Profile::Smb)["username"], SMB_USER);
        assert_eq!(
            stage_secrets(Profile::Azurefile)["azurestorageaccountkey"],
            SMB_PASSWORD
        );
        assert!(stage_secrets(Profile::Azure).is_empty());
    }
}
