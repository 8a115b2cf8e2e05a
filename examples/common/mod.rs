//! What the examples share: their command line, where the proxy is (the
//! embedded reference server, a socket directory, or the real proxy's
//! pipes), and printing an error with its causes.
#![allow(dead_code)]

use std::error::Error as StdError;
use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;

use csi_proxy_client::host::Host;
use csi_proxy_client::server::Server;

pub type Result<T> = std::result::Result<T, Box<dyn StdError>>;

/// The command line: `--socket-dir DIR` (or `CSI_PROXY_SOCKET_DIR`),
/// `--proxy` (the real proxy's default pipes, Windows), and the example's
/// own `--name value` options.
pub struct Args {
    pub socket_dir: Option<PathBuf>,
    pub proxy: bool,
    options: Vec<(String, String)>,
}

impl Args {
    /// Parses the command line, accepting the options named in `own`
    /// (without their `--`).
    pub fn parse(own: &[&str]) -> std::result::Result<Args, String> {
        let mut args = Args {
            socket_dir: std::env::var_os(csi_proxy_client::transport::SOCKET_DIR_ENV)
                .map(PathBuf::from),
            proxy: false,
            options: Vec::new(),
        };
        let mut it = std::env::args().skip(1);
        while let Some(arg) = it.next() {
            let name = arg.strip_prefix("--").unwrap_or(&arg);
            match name {
                "socket-dir" => {
                    args.socket_dir =
                        Some(it.next().ok_or("--socket-dir needs a directory")?.into())
                }
                "proxy" => args.proxy = true,
                _ if own.contains(&name) => {
                    let value = it.next().ok_or(format!("{arg} needs a value"))?;
                    args.options.push((name.to_string(), value));
                }
                _ => {
                    return Err(format!(
                        "unknown argument {arg:?}; see the example's doc comment"
                    ));
                }
            }
        }
        Ok(args)
    }

    /// The value of `--name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Where the proxy is.
pub enum Proxy {
    /// The reference server started here, over its default node.
    Embedded {
        server: Server,
        dir: tempfile::TempDir,
    },
    /// A server or proxy found through the command line.
    Elsewhere { socket_dir: Option<PathBuf> },
}

impl Proxy {
    /// From the command line: `--proxy` or a socket directory, else the
    /// embedded reference server (Unix only; on Windows it would take the
    /// real proxy's pipe names).
    pub async fn from_args(args: &Args) -> Result<Proxy> {
        if args.proxy {
            println!("talking to the CSI Proxy's default endpoints");
            return Ok(Proxy::Elsewhere { socket_dir: None });
        }
        if let Some(dir) = &args.socket_dir {
            println!("talking to the server in {}", dir.display());
            return Ok(Proxy::Elsewhere {
                socket_dir: Some(dir.clone()),
            });
        }
        if cfg!(windows) {
            return Err(
                "on Windows, pass --proxy to use the real CSI Proxy, or --socket-dir".into(),
            );
        }
        let dir = tempfile::tempdir()?;
        let server = Server::builder().socket_dir(dir.path()).start().await?;
        println!(
            "started the embedded reference server in {} (default node)",
            dir.path().display()
        );
        Ok(Proxy::Embedded { server, dir })
    }

    /// The socket directory; `None` for the proxy's default endpoints.
    pub fn socket_dir(&self) -> Option<PathBuf> {
        match self {
            Proxy::Embedded { dir, .. } => Some(dir.path().to_path_buf()),
            Proxy::Elsewhere { socket_dir } => socket_dir.clone(),
        }
    }

    /// Node options pointing at this proxy.
    pub fn node_options(&self) -> csi_proxy_client::node::NodeOptions {
        let options = csi_proxy_client::node::NodeOptions::default();
        match self {
            Proxy::Embedded { dir, .. } => options.socket_dir(dir.path()),
            Proxy::Elsewhere {
                socket_dir: Some(dir),
            } => options.socket_dir(dir),
            Proxy::Elsewhere { socket_dir: None } => options,
        }
    }

    /// The simulated host, when the server is embedded (for its test hooks).
    pub fn host(&self) -> Option<&Host> {
        match self {
            Proxy::Embedded { server, .. } => Some(server.host()),
            Proxy::Elsewhere { .. } => None,
        }
    }

    /// Stops the embedded server.
    pub async fn stop(self) -> Result<()> {
        if let Proxy::Embedded { server, .. } = self {
            server.shutdown().await?;
        }
        Ok(())
    }
}

/// `error: cause: cause ...`.
pub fn chain(e: &dyn StdError) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

/// Runs an example's body, printing a failure with its causes.
pub async fn main(
    name: &str,
    own: &[&str],
    body: impl AsyncFnOnce(Args) -> Result<()>,
) -> ExitCode {
    let args = match Args::parse(own) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::from(2);
        }
    };
    finish(name, body(args)).await
}

async fn finish(name: &str, run: impl Future<Output = Result<()>>) -> ExitCode {
    match run.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {}", chain(&*e));
            ExitCode::FAILURE
        }
    }
}
