//! An SMB volume on a Windows node, as a CSI SMB node plugin drives it
//! through the CSI Proxy: map the share globally with the volume's
//! credentials and link it into the pod's volume directory, use it, then
//! remove the link and the mapping.
//!
//! ```text
//! cargo run --example smb_mount                       # embedded reference server
//! cargo run --example smb_mount -- --socket-dir DIR   # a running csi-proxy-server
//! CSI_PROXY_SOCKET_DIR=DIR cargo run --example smb_mount
//! SMB_PASSWORD=... cargo run --example smb_mount -- --proxy --remote '\\server\share' --username 'DOMAIN\user'
//! ```
//!
//! Without a socket directory it starts the reference server with its
//! default node on a temporary directory, and maps that node's share
//! `\\fileserver\share` as `smbuser` (see `csi_proxy_client::host::smb`).
//! Only the embedded server offers the host's test hooks, so only there does
//! the example write a file through the link and look for it on the file
//! server; against another server or the real proxy it says it skips that.
//!
//! On Windows, `--proxy` talks to the real CSI Proxy's default pipes: it
//! then needs `--remote`, `--username` and the password in `SMB_PASSWORD`,
//! and it creates (then removes) a global mapping of that share and a link
//! under `C:\var\lib\kubelet\pods\`.

use std::error::Error as StdError;
use std::path::PathBuf;
use std::process::ExitCode;

use csi_proxy_client::filesystem::v1::{self as filesystem, FilesystemApi};
use csi_proxy_client::host::Host;
use csi_proxy_client::host::smb::{
    DEFAULT_SMB_PASSWORD, DEFAULT_SMB_SERVER, DEFAULT_SMB_SHARE, DEFAULT_SMB_USER,
};
use csi_proxy_client::smb::v1::{self as smb, SmbApi};

/// Where the kubelet wants the volume: the link goes here.
const LOCAL: &str = r"C:\var\lib\kubelet\pods\7c2e\volumes\kubernetes.io~csi\pv-smb\mount";
/// The file the "pod" writes through the link (embedded server only).
const FILE: &str = "hello.txt";
const CONTENT: &[u8] = b"written by the pod through the link\n";

type Result<T> = std::result::Result<T, Box<dyn StdError>>;

struct Args {
    socket_dir: Option<PathBuf>,
    proxy: bool,
    share: Share,
}

/// The share and the account the volume's secret names.
struct Share {
    remote: String,
    username: String,
    password: String,
}

fn parse_args() -> std::result::Result<Args, String> {
    let mut args = Args {
        socket_dir: std::env::var_os(csi_proxy_client::transport::SOCKET_DIR_ENV)
            .map(PathBuf::from),
        proxy: false,
        share: Share {
            remote: format!(r"\\{DEFAULT_SMB_SERVER}\{DEFAULT_SMB_SHARE}"),
            username: DEFAULT_SMB_USER.to_string(),
            password: std::env::var("SMB_PASSWORD")
                .unwrap_or_else(|_| DEFAULT_SMB_PASSWORD.to_string()),
        },
    };
    let (mut remote, mut username) = (false, false);
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--socket-dir" => {
                args.socket_dir = Some(it.next().ok_or("--socket-dir needs a directory")?.into())
            }
            "--proxy" => args.proxy = true,
            "--remote" => {
                args.share.remote = it.next().ok_or(r"--remote needs \\server\share")?;
                remote = true;
            }
            "--username" => {
                args.share.username = it.next().ok_or("--username needs a user name")?;
                username = true;
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}; see the example's doc comment"
                ));
            }
        }
    }
    if args.proxy && !(remote && username && std::env::var_os("SMB_PASSWORD").is_some()) {
        return Err("--proxy needs --remote, --username and SMB_PASSWORD".into());
    }
    Ok(args)
}

/// The two v1 clients an SMB node plugin uses.
struct Clients {
    smb: smb::Client,
    fs: filesystem::Client,
}

impl Clients {
    async fn connect(address: impl Fn(&str) -> String) -> Result<Self> {
        Ok(Self {
            smb: smb::Client::connect(address("smb")).await?,
            fs: filesystem::Client::connect(address("filesystem")).await?,
        })
    }
}

/// Runs one step; a failure names the step.
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

async fn path_exists(c: &Clients, path: &str) -> Result<bool> {
    let request = filesystem::PathExistsRequest { path: path.into() };
    Ok(step!("PathExists", c.fs.path_exists(request)).exists)
}

/// What the simulated node holds: its global mappings (embedded server only).
fn mappings(host: &Host) -> String {
    let node = host.lock();
    let list: Vec<String> = node
        .smb
        .mappings()
        .iter()
        .map(|m| {
            let user = m.credential.as_ref().map_or("machine", |(u, _)| u.as_str());
            format!("{} ({:?}, as {user})", m.remote_path, m.status)
        })
        .collect();
    if list.is_empty() {
        "none".into()
    } else {
        list.join(", ")
    }
}

/// The file as the file server holds it, read from the share's directory
/// (embedded server only; independent of the node's mappings and links).
fn on_the_share(host: &Host, remote: &str, name: &str) -> Result<Option<Vec<u8>>> {
    let parsed = csi_proxy_client::host::smb::parse_remote_path(remote)?;
    let node = host.lock();
    let Some(dir) = node.smb.share_dir(&parsed.host, &parsed.share) else {
        return Err(format!("no share {} on the simulated file server", parsed.root).into());
    };
    // The share's content directory stores names case-folded.
    let mut path = dir.to_path_buf();
    for part in parsed
        .normalized
        .split('\\')
        .filter(|p| !p.is_empty())
        .skip(2)
    {
        path.push(part.to_lowercase());
    }
    path.push(name.to_lowercase());
    match std::fs::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("reading {}: {e}", path.display()).into()),
    }
}

async fn walk(c: &Clients, share: &Share, host: Option<&Host>) -> Result<()> {
    let remote = share.remote.as_str();
    println!("NodePublishVolume: {remote} at {LOCAL}");
    // The kubelet creates the pod's volume directory; the link goes inside it.
    let parent = LOCAL.rsplit_once('\\').map_or(LOCAL, |(parent, _)| parent);
    step!(
        "Mkdir",
        c.fs.mkdir(filesystem::MkdirRequest {
            path: parent.into()
        })
    );
    println!("  Mkdir                  -> {parent}");

    let request = smb::NewSmbGlobalMappingRequest {
        remote_path: remote.into(),
        local_path: LOCAL.into(),
        username: share.username.clone(),
        password: share.password.clone(),
    };
    step!("NewSmbGlobalMapping", c.smb.new_smb_global_mapping(request));
    match host {
        Some(host) => println!(
            "  NewSmbGlobalMapping    -> mapped as {}; node's mappings: {}",
            share.username,
            mappings(host)
        ),
        None => println!("  NewSmbGlobalMapping    -> mapped as {}", share.username),
    }

    let request = filesystem::IsSymlinkRequest { path: LOCAL.into() };
    let is_link = step!("IsSymlink", c.fs.is_symlink(request)).is_symlink;
    println!("  IsSymlink              -> {is_link}");
    if !is_link {
        return Err(format!("step 'IsSymlink' failed: {LOCAL} is not a link").into());
    }
    let exists = path_exists(c, LOCAL).await?;
    println!("  PathExists             -> {exists}");
    if !exists {
        return Err(format!("step 'PathExists' failed: {LOCAL} does not resolve").into());
    }

    let through_link = format!(r"{LOCAL}\{FILE}");
    match host {
        Some(host) => {
            host.write_file(&through_link, CONTENT)
                .map_err(|e| format!("step 'write through the link' failed: {}", chain(&e)))?;
            let landed = on_the_share(host, remote, FILE)
                .map_err(|e| format!("step 'read the share' failed: {e}"))?;
            if landed.as_deref() != Some(CONTENT) {
                return Err(format!(
                    "step 'read the share' failed: {FILE} on the file server holds {landed:?}"
                )
                .into());
            }
            println!(
                "  write via the link     -> {FILE} ({} bytes) is on the file server in {remote}",
                CONTENT.len()
            );
        }
        None => println!(
            "  write via the link     -> skipped: only the embedded server has the host's test hooks"
        ),
    }

    println!("NodeUnpublishVolume");
    step!(
        "Rmdir",
        c.fs.rmdir(filesystem::RmdirRequest {
            path: LOCAL.into(),
            force: false
        })
    );
    let exists = path_exists(c, LOCAL).await?;
    if exists {
        return Err(format!("step 'Rmdir' failed: {LOCAL} still exists").into());
    }
    match host {
        Some(host) => {
            let kept = on_the_share(host, remote, FILE)
                .map_err(|e| format!("step 'read the share' failed: {e}"))?
                .is_some();
            if !kept {
                return Err(format!(
                    "step 'Rmdir' failed: removing the link removed {FILE} from the share"
                )
                .into());
            }
            println!(
                "  Rmdir link             -> link exists: false; {FILE} still on the share: true"
            );
        }
        None => println!("  Rmdir link             -> link exists: false"),
    }

    let request = smb::RemoveSmbGlobalMappingRequest {
        remote_path: remote.into(),
    };
    step!(
        "RemoveSmbGlobalMapping",
        c.smb.remove_smb_global_mapping(request.clone())
    );
    match host {
        Some(host) => println!(
            "  RemoveSmbGlobalMapping -> node's mappings: {}",
            mappings(host)
        ),
        None => println!("  RemoveSmbGlobalMapping -> removed"),
    }
    // Not idempotent: a second removal must find no mapping.
    match c.smb.remove_smb_global_mapping(request).await {
        Ok(_) => {
            return Err(
                "step 'RemoveSmbGlobalMapping again' failed: it succeeded, so the mapping was still there"
                    .into(),
            );
        }
        Err(e) => println!(
            "  RemoveSmbGlobalMapping -> again: {}",
            e.status()
                .map_or_else(|| chain(&e), |s| format!("{:?}: {}", s.code(), s.message()))
        ),
    }
    println!("done: {remote} mapped, linked into the pod, used and cleaned up");
    Ok(())
}

async fn run(args: Args) -> Result<()> {
    let address = |dir: PathBuf| {
        move |group: &str| format!("unix://{}/csi-proxy-{group}-v1.sock", dir.display())
    };
    if args.proxy {
        println!("talking to the CSI Proxy's default endpoints");
        let c = Clients {
            smb: smb::Client::connect_default().await?,
            fs: filesystem::Client::connect_default().await?,
        };
        return walk(&c, &args.share, None).await;
    }
    if let Some(dir) = args.socket_dir {
        println!("talking to the server in {}", dir.display());
        let c = Clients::connect(address(dir)).await?;
        return walk(&c, &args.share, None).await;
    }
    embedded(args, address).await
}

#[cfg(unix)]
async fn embedded<F: Fn(&str) -> String>(args: Args, address: impl Fn(PathBuf) -> F) -> Result<()> {
    use csi_proxy_client::server::{GroupVersion, Server};
    let dir = tempfile::tempdir()?;
    let endpoints =
        ["smb", "filesystem"].map(|g| GroupVersion::parse(&format!("{g}/v1")).expect("served"));
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
    let result = walk(&c, &args.share, Some(server.host())).await;
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
            eprintln!("smb_mount: {e}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("smb_mount: {}", chain(&*e));
            ExitCode::FAILURE
        }
    }
}
