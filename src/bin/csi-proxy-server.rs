//! `csi-proxy-server`: the reference CSI Proxy over a simulated Windows host.
//!
//! Serves every group version (or a subset) on Unix sockets in a directory,
//! or on Windows on the proxy's named pipes, until SIGTERM or Ctrl-C; then
//! stops accepting, lets calls in flight finish within `--shutdown-grace`,
//! closes every connection and removes the sockets it created.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use csi_proxy_client::host::{
    HostConfig, LatencyProfile, NodeSeed, ProxyRelease, temporary_sandbox,
};
use csi_proxy_client::server::{GroupVersion, Server};
use csi_proxy_client::{MAX_DURATION, MIN_PERIOD};

/// The reference CSI Proxy: every API group version over a simulated Windows node.
#[derive(Debug, Parser)]
#[command(name = "csi-proxy-server", version)]
struct Args {
    /// Directory for the Unix sockets `csi-proxy-<group>-<version>.sock`
    /// (required off Windows; on Windows the server uses named pipes).
    #[arg(long, value_name = "DIR")]
    socket_dir: Option<PathBuf>,

    /// The kubelet directory, appended last to the working directories.
    #[arg(long, value_name = "PATH", default_value = r"C:\var\lib\kubelet")]
    kubelet_path: String,

    /// A further directory the filesystem group may work in (repeatable).
    #[arg(long = "working-dir", value_name = "PATH")]
    working_dirs: Vec<String>,

    /// Root of the simulated drives and shares (a temporary directory,
    /// removed on exit, by default).
    #[arg(long, value_name = "DIR")]
    sandbox: Option<PathBuf>,

    /// A TOML file describing the node (disks, volumes, shares, iSCSI
    /// targets, services); the documented default node without it.
    #[arg(long, value_name = "FILE")]
    seed: Option<PathBuf>,

    /// Lay the node out as a cloud does: default, azure, azure-nvme, gce,
    /// aws or vsphere (not together with --seed).
    #[arg(long, value_name = "NAME", conflicts_with = "seed")]
    layout: Option<csi_proxy_client::host::Layout>,

    /// Answer failures in the words of this csi-proxy release: 1.3 (WMI
    /// era, the default) or 1.1 (PowerShell era).
    #[arg(long, value_name = "RELEASE", default_value = "1.3")]
    proxy_release: ProxyRelease,

    /// Serve only these group versions, e.g. `disk/v1,volume/v1` (all by default).
    #[arg(long, value_name = "GROUP/VERSION,...", value_delimiter = ',', value_parser = parse_group_version)]
    serve: Vec<GroupVersion>,

    /// On SIGTERM or Ctrl-C, seconds that calls in flight may still run
    /// before their connections are closed.
    #[arg(long, value_name = "SECONDS", default_value = "5", value_parser = parse_seconds)]
    shutdown_grace: Duration,

    /// Seconds after which a connection with no call in flight is closed.
    #[arg(long, value_name = "SECONDS", default_value = "300", value_parser = parse_period)]
    idle_timeout: Duration,

    /// Seconds without a frame from a client after which an HTTP/2 PING is
    /// sent (grpc-go's default, as csi-proxy: 2 hours).
    #[arg(long, value_name = "SECONDS", default_value = "7200", value_parser = parse_period)]
    keepalive_interval: Duration,

    /// Seconds to wait for the PING's answer before the connection is closed.
    #[arg(long, value_name = "SECONDS", default_value = "20", value_parser = parse_period)]
    keepalive_timeout: Duration,

    /// Seconds a client must leave between its PINGs, as grpc-go's default
    /// keepalive policy enforces at csi-proxy: the third PING sooner than
    /// that after the one before (sooner than 2 hours while no call is in
    /// flight) gets GOAWAY ENHANCE_YOUR_CALM "too_many_pings" and the
    /// connection closed.
    #[arg(long, value_name = "SECONDS", default_value = "300", value_parser = parse_seconds)]
    keepalive_min_time: Duration,

    /// Allow PINGs as often while no call is in flight.
    #[arg(long)]
    keepalive_permit_without_stream: bool,

    /// Concurrent calls per connection.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_concurrent_streams: u32,

    /// Open connections over all endpoints; further ones are closed at once.
    #[arg(long, value_name = "N", default_value_t = 512)]
    max_connections: usize,

    /// Injected latency, to test a driver against a slow proxy: calls of
    /// the method RPC (e.g. MountVolume) wait SECONDS before they are
    /// served. Repeatable.
    #[arg(long, value_name = "RPC=SECONDS", value_parser = parse_latency)]
    latency: Vec<(String, Duration)>,

    /// The real csi-proxy's host time per RPC, published figures of
    /// csi-proxy-1.3 (WMI) or csi-proxy-1.1 (PowerShell); sources in
    /// docs/latency-profiles.md. Added to --latency. Off by default. A
    /// call's work goes on when its caller gives up, as at the proxy.
    #[arg(long, value_name = "PROFILE", value_parser = parse_latency_profile)]
    latency_profile: Option<LatencyProfile>,

    /// Log filter: error, warn, info, debug, trace, or a tracing directive.
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    log_level: String,
}

fn parse_group_version(text: &str) -> Result<GroupVersion, String> {
    GroupVersion::parse(text).ok_or_else(|| {
        let all: Vec<String> = GroupVersion::all()
            .iter()
            .map(ToString::to_string)
            .collect();
        format!(
            "{text:?} is not a served group version; one of: {}",
            all.join(", ")
        )
    })
}

/// Seconds from 0 to [`MAX_DURATION`]: a grace period, an injected latency.
fn parse_seconds(text: &str) -> Result<Duration, String> {
    parse_within(text, Duration::ZERO)
}

/// Seconds from [`MIN_PERIOD`] to [`MAX_DURATION`]: a timer of every
/// connection, which zero would fire at once or make spin.
fn parse_period(text: &str) -> Result<Duration, String> {
    parse_within(text, MIN_PERIOD)
}

fn parse_within(text: &str, min: Duration) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|value| (min..=MAX_DURATION).contains(value))
        .ok_or_else(|| {
            format!(
                "{text} seconds is out of range: from {} to {} seconds allowed",
                min.as_secs_f64(),
                MAX_DURATION.as_secs()
            )
        })
}

fn parse_latency(text: &str) -> Result<(String, Duration), String> {
    let (rpc, seconds) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not RPC=SECONDS"))?;
    if !csi_proxy_client::server::is_rpc(rpc) {
        return Err(format!(
            "{rpc:?} is the name of no RPC of any API version (e.g. MountVolume)"
        ));
    }
    Ok((rpc.to_string(), parse_seconds(seconds)?))
}

fn parse_latency_profile(text: &str) -> Result<LatencyProfile, String> {
    text.parse()
}

fn main() -> ExitCode {
    let args = Args::parse();
    let filter = match tracing_subscriber::EnvFilter::try_new(&args.log_level) {
        Ok(filter) => filter,
        Err(e) => {
            eprintln!(
                "csi-proxy-server: invalid --log-level {:?}: {e}",
                args.log_level
            );
            return ExitCode::from(2);
        }
    };
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("csi-proxy-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("csi-proxy-server: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The error and its sources, one after another.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

async fn run(args: Args) -> Result<(), String> {
    let seed = match &args.seed {
        Some(path) => Some(
            NodeSeed::from_file(path).map_err(|e| format!("seed file {}: {e}", path.display()))?,
        ),
        None => args.layout.and_then(|l| l.seed()),
    };
    let temp_sandbox;
    let sandbox = match args.sandbox {
        Some(dir) => dir,
        None => {
            temp_sandbox = temporary_sandbox().map_err(|e| e.to_string())?;
            temp_sandbox.path().to_path_buf()
        }
    };
    let mut config = HostConfig::new(sandbox);
    config.kubelet_path = args.kubelet_path;
    config.working_dirs = args.working_dirs;
    config.seed = seed;
    config.release = args.proxy_release;

    let mut builder = Server::builder()
        .host_config(config)
        .shutdown_grace(args.shutdown_grace)
        .idle_timeout(args.idle_timeout)
        .keepalive(args.keepalive_interval, args.keepalive_timeout)
        .keepalive_enforcement(
            args.keepalive_min_time,
            args.keepalive_permit_without_stream,
        )
        .max_concurrent_streams(args.max_concurrent_streams)
        .max_connections(args.max_connections);
    for (rpc, delay) in args.latency {
        builder = builder.latency(rpc, delay);
    }
    if let Some(profile) = args.latency_profile {
        builder = builder.latency_profile(profile);
    }
    if let Some(dir) = args.socket_dir {
        builder = builder.socket_dir(dir);
    }
    if !args.serve.is_empty() {
        builder = builder.serve(args.serve);
    }
    let mut server = builder.start().await.map_err(|e| chain(&e))?;
    for (endpoint, address) in server.addresses() {
        println!("{endpoint} {address}");
    }
    // Signal handlers are in place before "ready" is printed, so a
    // supervisor may send SIGTERM as soon as it reads that line.
    let signal = shutdown_signal();
    println!("ready: serving {} endpoints", server.addresses().len());

    let failure = tokio::select! {
        () = signal => None,
        result = server.wait_for_failure() => Some(result),
    };
    tracing::info!("shutting down");
    let shutdown = server.shutdown().await;
    match failure {
        Some(Err(e)) => Err(chain(&e)),
        _ => shutdown.map_err(|e| chain(&e)),
    }
}

/// Registers the handlers now and returns a future that completes on
/// Ctrl-C, or on Unix also on SIGTERM.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate());
        let interrupt = signal(SignalKind::interrupt());
        async move {
            match (term, interrupt) {
                (Ok(mut term), Ok(mut interrupt)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = interrupt.recv() => {}
                    }
                }
                (Ok(mut one), Err(_)) | (Err(_), Ok(mut one)) => {
                    one.recv().await;
                }
                (Err(_), Err(_)) => std::future::pending().await,
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(flag: &str, value: &str) -> Result<Args, String> {
        Args::try_parse_from(["csi-proxy-server", &format!("{flag}={value}")])
            .map_err(|e| e.to_string())
    }

    #[test]
    fn connection_timers_refuse_zero_and_overflowing_values_and_say_the_range() {
        for flag in [
            "--idle-timeout",
            "--keepalive-interval",
            "--keepalive-timeout",
        ] {
            for value in ["0", "1e19", "-1", "inf"] {
                let error = parse(flag, value).expect_err(value);
                assert!(
                    error.contains("from 0.001 to 31536000 seconds allowed"),
                    "{flag} {value}: {error}"
                );
            }
            let args = parse(flag, "0.5").unwrap();
            let value = match flag {
                "--idle-timeout" => args.idle_timeout,
                "--keepalive-interval" => args.keepalive_interval,
                _ => args.keepalive_timeout,
            };
            assert_eq!(value, Duration::from_millis(500));
        }
    }

    #[test]
    fn a_grace_period_may_be_zero_but_not_overflowing() {
        assert_eq!(
            parse("--shutdown-grace", "0").unwrap().shutdown_grace,
            Duration::ZERO
        );
        let error = parse("--shutdown-grace", "1e19").unwrap_err();
        assert!(
            error.contains("from 0 to 31536000 seconds allowed"),
            "{error}"
        );
        let error = parse("--latency", "MountVolume=1e19").unwrap_err();
        assert!(error.contains("out of range"), "{error}");
    }

    #[test]
    fn the_keepalive_policy_defaults_to_grpc_gos_and_may_be_shrunk() {
        let defaults = Args::try_parse_from(["csi-proxy-server"]).unwrap();
        assert_eq!(defaults.keepalive_min_time, Duration::from_secs(300));
        assert!(!defaults.keepalive_permit_without_stream);
        assert_eq!(defaults.keepalive_interval, Duration::from_secs(7200));
        let shrunk = Args::try_parse_from([
            "csi-proxy-server",
            "--keepalive-min-time=0.5",
            "--keepalive-permit-without-stream",
        ])
        .unwrap();
        assert_eq!(shrunk.keepalive_min_time, Duration::from_millis(500));
        assert!(shrunk.keepalive_permit_without_stream);
    }
}
