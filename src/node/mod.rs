//! The node layer: what a Windows CSI node plugin does, once, over whatever
//! API versions the node serves.
//!
//! [`Node::connect`] picks, per API group, the newest version the node
//! serves; every operation then takes paths as kubelet gives them, is
//! idempotent, and is bounded by a deadline. The same [`Node`] runs over
//! the real proxy, in unit tests over [`MockHost`](crate::mock::MockHost)
//! ([`Node::from_mock`]), and in HostProcess mode on the Windows host
//! itself, no proxy (feature `host-process`, `Node::host_process`).
//!
//! ```no_run
//! use csi_proxy_client::node::{DiskSelector, Node, NodeOptions};
//!
//! # async fn run() -> Result<(), csi_proxy_client::Error> {
//! let node = Node::connect(NodeOptions::default()).await?;
//! println!("csi-proxy versions: {}", node.versions());
//!
//! let staging = r"\var\lib\kubelet\plugins\kubernetes.io\csi\disk.csi.example.com\pv1\globalmount";
//! let target = r"\var\lib\kubelet\pods\uid\volumes\kubernetes.io~csi\pv1\mount";
//! let disk = node.find_disk(DiskSelector::AzureLun(3)).await?; // NodeStageVolume
//! node.stage_disk(&disk, staging).await?;
//! node.publish(staging, target).await?;                       // NodePublishVolume
//! node.unpublish(target).await?;                              // NodeUnpublishVolume
//! node.unstage(staging).await?;                               // NodeUnstageVolume
//! # Ok(()) }
//! ```
//!
//! # What the operations do
//!
//! | operation | effect | already done | refused, nothing changed |
//! |---|---|---|---|
//! | [`Node::ensure_dir`] | creates the directory and its parents | Ok | |
//! | [`Node::remove`] | removes a directory tree, or a link (never its target) | absent: Ok | |
//! | [`Node::stage_disk`] | onlines, partitions, formats (NTFS) and mounts the disk's data volume | mounted from that disk: Ok | [`Error::OsDisk`], [`Error::PathInUse`], [`Error::NotEmpty`], [`Error::NoVolume`], [`Error::ReadOnlyDisk`] |
//! | [`Node::publish`] | links the target to the staging path, replacing kubelet's empty directory | linked to the same volume: Ok | [`Error::NotStaged`], [`Error::PathInUse`], [`Error::NotEmpty`] |
//! | [`Node::unpublish`] | removes the link (a share staged at the target, an ephemeral volume, is unstaged) | absent: Ok | [`Error::NotEmpty`] (a plain directory with files) |
//! | [`Node::unstage`] | flushes, unmounts, removes the staging path | absent: Ok | [`Error::NotEmpty`] |
//! | [`Node::expand`] | grows the volume to its partition | nothing to grow: Ok | |
//! | [`Node::smb_stage`] | maps the share (a stale mapping made again), links the staging path, counts a reference | same link: Ok, mapping checked | [`Error::PathInUse`], [`Error::NotEmpty`], [`Error::SmbCredentialsConflict`], [`Error::SmbDirectoryMissing`] |
//! | [`Node::smb_unstage`] | removes the link; the mapping goes with its last reference | absent: Ok | [`Error::PathInUse`] |
//! | [`Node::smb_reconcile`] | drops references of paths holding no link; the mapping goes with the last | nothing stale: Ok | |
//!
//! The proxy cannot say where a link points, only which volume is behind a
//! path: [`MountState::Mounted`] is any path with a volume behind it (a
//! mount point, or a link to one), [`MountState::Linked`] a link with no
//! volume the proxy can name (an SMB share). `publish` therefore treats a
//! target as "already published" when the same volume is behind it.

mod disks;
mod groups;
mod host_work;
#[cfg(windows)]
mod local_space;
mod options;
mod path;
mod smb_store;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tracing::Instrument;

pub use disks::{DiskInfo, DiskPredicate, DiskSelector, PartitionStyle};
use groups::{
    DiskGroup, FilesystemGroup, IscsiGroup, IscsiLogin, SmbGroup, SystemGroup, VolumeGroup,
};
pub use options::{
    DEFAULT_DEADLINE, DEFAULT_FIND_DISK_INTERVAL, DEFAULT_FIND_DISK_TIMEOUT,
    DEFAULT_MAX_CONCURRENT_FORMATS, NodeOptions, NodeVersions,
};
pub use smb_store::SmbStore;

use crate::{ApiVersion, Error, ErrorKind, Stage};

/// The span of a node operation: named `node`, with the operation's name
/// in `operation`; the spans of its proxy calls are its children.
fn operation_span(operation: &'static str) -> tracing::Span {
    tracing::info_span!("node", otel.name = operation, operation)
}

/// What is at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountState {
    /// Nothing.
    Missing,
    /// A plain directory (or file, or a link whose target is gone).
    NotMounted,
    /// A path with a volume behind it: a mount point, or a link to one.
    Mounted {
        /// The volume (`\\?\Volume{GUID}\`).
        volume_id: String,
    },
    /// A link with no volume the proxy can name behind it (an SMB share).
    Linked,
}

/// A disk as [`Node::find_disk`] found it: the facts of [`Node::disks`], its ids
/// only when the selector reads them.
pub type Disk = DiskInfo;

impl From<&DiskInfo> for u32 {
    fn from(disk: &DiskInfo) -> u32 {
        disk.number
    }
}

impl From<DiskInfo> for u32 {
    fn from(disk: DiskInfo) -> u32 {
        disk.number
    }
}

/// Space on a volume, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolumeUsage {
    /// Size of the volume.
    pub total_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
    /// Bytes free.
    pub available_bytes: u64,
}

/// What the node can tell of the SMB share behind a staged path
/// ([`Node::smb_share_stats`]). Which mode tells what:
///
/// | mode | space | mapping's status |
/// |---|---|---|
/// | HostProcess | `GetDiskFreeSpaceExW` on the path | `MSFT_SmbGlobalMapping.Status` |
/// | proxy, plugin on Windows | the plugin's own `GetDiskFreeSpaceExW` on the path | not readable (no proxy call) |
/// | proxy, elsewhere (tests over `MockHost`) | none | not readable |
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShareStats {
    /// The share's capacity and free space as its server reports them;
    /// `None` when they could not be read ([`ShareStats::unread`] says why).
    pub usage: Option<VolumeUsage>,
    /// What is known to be wrong: the share's global mapping is not OK
    /// (its status named, `Disconnected` after a restart), has gone, or
    /// is OK and the share cannot be read. Only HostProcess mode reads
    /// the mapping; through the proxy this is always `None`.
    pub trouble: Option<String>,
    /// Why [`ShareStats::usage`] is `None`.
    pub unread: Option<String>,
    /// Whether the mapping's status was read (HostProcess mode).
    pub mapping_checked: bool,
}

/// The name of an `MSFT_SmbGlobalMapping.Status` value.
#[cfg(feature = "host-process")]
fn mapping_status_name(status: u32) -> String {
    let name = match status {
        0 => "OK",
        1 => "Paused",
        2 => "Disconnected",
        3 => "NetworkError",
        4 => "Connecting",
        5 => "Reconnecting",
        6 => "Unavailable",
        _ => return format!("status {status}"),
    };
    name.to_string()
}

/// The account an SMB share is mapped with. The password never appears in
/// `Debug` output, logs or errors.
#[derive(Clone)]
pub struct SmbCredentials {
    username: String,
    password: String,
}

impl SmbCredentials {
    /// `username` (`user`, `DOMAIN\user` or `user@domain`) and its password.
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Self {
        Self {
            username: username.into(),
            password: password.into(),
        }
    }

    /// No credentials: the node's own identity.
    pub fn none() -> Self {
        Self::new("", "")
    }

    /// The user name.
    pub fn username(&self) -> &str {
        &self.username
    }
}

impl fmt::Debug for SmbCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmbCredentials")
            .field("username", &self.username)
            .field("password", &"<hidden>")
            .finish()
    }
}

/// How an iSCSI initiator logs in.
#[derive(Clone, Default)]
pub enum IscsiAuth {
    /// No authentication.
    #[default]
    None,
    /// One-way CHAP: the target checks the initiator.
    Chap {
        /// CHAP user name.
        username: String,
        /// CHAP secret.
        secret: String,
    },
}

impl fmt::Debug for IscsiAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IscsiAuth::None => f.write_str("None"),
            IscsiAuth::Chap { username, .. } => f
                .debug_struct("Chap")
                .field("username", username)
                .field("secret", &"<hidden>")
                .finish(),
        }
    }
}

/// An iSCSI target behind a portal.
#[derive(Debug, Clone)]
pub struct IscsiTarget {
    /// Portal address (host name or IP).
    pub portal: String,
    /// Portal port (3260 by default).
    pub port: u32,
    /// Target IQN.
    pub iqn: String,
    /// How to log in.
    pub auth: IscsiAuth,
}

impl IscsiTarget {
    /// `iqn` behind `portal:3260`, without authentication.
    pub fn new(portal: impl Into<String>, iqn: impl Into<String>) -> Self {
        Self {
            portal: portal.into(),
            port: 3260,
            iqn: iqn.into(),
            auth: IscsiAuth::None,
        }
    }
}

/// The groups of one node, each at its negotiated version or absent with
/// the versions tried.
struct Inner {
    disk: Option<DiskGroup>,
    volume: Option<VolumeGroup>,
    filesystem: Option<FilesystemGroup>,
    smb: Option<SmbGroup>,
    iscsi: Option<IscsiGroup>,
    system: Option<SystemGroup>,
    tried: HashMap<&'static str, String>,
    versions: NodeVersions,
    options: NodeOptions,
    smb_locks: Mutex<HashMap<String, Arc<tokio::sync::RwLock<()>>>>,
    /// Volume v2alpha1, for its one call that finds the volume of `C:\`
    /// (the OS disk through the proxy); `None` when not served.
    os_volume: Option<VolumeGroup>,
    /// The OS disk's number (`None`: this mode or proxy cannot tell), looked
    /// up once: it does not change while the node runs.
    os_disk: tokio::sync::OnceCell<Option<u32>>,
    /// Volumes known to lie on a disk other than the OS disk (ids in lower
    /// case): staged by this node, or checked once. A volume id names one
    /// partition, which never moves to another disk, and the OS disk is
    /// never detached while the node runs, so the answer cannot go stale.
    data_volumes: Mutex<HashSet<String>>,
    /// HostProcess mode: the backend, for what the proxy's API lacks
    /// (`IsSystem`, `IsBoot`, `IsReadOnly`, `SetAttributes`).
    #[cfg(feature = "host-process")]
    host_process: Option<Arc<crate::host_process::HostProcess>>,
    /// Format tasks running, by volume id (`host_work`).
    formats: host_work::Running,
    /// Formats allowed at once ([`NodeOptions::max_concurrent_formats`]).
    format_permits: tokio::sync::Semaphore,
}

/// A Windows node through the CSI Proxy, version-independent. Cheap to
/// clone; clones share the connections. See the [module](self) docs.
#[derive(Clone)]
pub struct Node {
    inner: Arc<Inner>,
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("versions", &self.inner.versions.to_string())
            .finish_non_exhaustive()
    }
}

/// The versions to try for a group, newest first.
fn candidates(
    group: &'static str,
    speaks: &[&str],
    options: &NodeOptions,
    alpha_only: bool,
) -> Result<Vec<String>, Error> {
    if let Some(&pinned) = options.pinned.get(group) {
        if !speaks.contains(&pinned) {
            return Err(Error::UnsupportedVersion {
                group,
                version: pinned.to_string(),
            });
        }
        return Ok(vec![pinned.to_string()]);
    }
    let mut versions: Vec<ApiVersion> = speaks
        .iter()
        .filter_map(|v| v.parse().ok())
        .filter(|v: &ApiVersion| {
            alpha_only || options.allow_alpha || !matches!(v.stage(), Stage::Alpha(_))
        })
        .collect();
    versions.sort_by(|a, b| b.cmp(a));
    Ok(versions.iter().map(ToString::to_string).collect())
}

/// A write to disk `disk` that Windows refused because the disk is
/// read-only (WMI result 41002 from a disk method or 43006 from
/// `MSFT_Volume.Format` in csi-proxy's texts, or Win32 error 19, "the
/// media is write protected"), as [`Error::ReadOnlyDisk`]; any other error
/// unchanged.
fn read_only_refusal(disk: u32, e: Error) -> Error {
    use crate::HostCode;
    match e.host_code() {
        Some(HostCode::WmiResult(41002 | 43006)) | Some(HostCode::Win32(19)) => {
            Error::ReadOnlyDisk {
                disk,
                cause: e.to_string(),
            }
        }
        _ => e,
    }
}

fn is_not_empty(e: &Error) -> bool {
    e.windows_code() == Some(145) || e.to_string().to_lowercase().contains("not empty")
}

impl Node {
    /// Connects to the node's proxy: for each group (disk, volume,
    /// filesystem, smb, and iscsi and system when asked for), dials the
    /// versions newest first and keeps the first that answers. A group
    /// with none is absent, and operations needing it fail with
    /// [`Error::GroupUnavailable`]. Fails only on invalid options.
    pub async fn connect(options: NodeOptions) -> Result<Node, Error> {
        let mut tried = HashMap::new();
        macro_rules! negotiate {
            ($Group:ident, $alpha_only:expr, $wanted:expr) => {{
                let mut chosen = None;
                let mut attempts = Vec::new();
                if $wanted {
                    for version in
                        candidates($Group::GROUP, $Group::VERSIONS, &options, $alpha_only)?
                    {
                        let address = match &options.socket_dir {
                            Some(dir) => crate::transport::Address::socket_in(
                                dir,
                                $Group::GROUP,
                                &version,
                            ),
                            None => {
                                match crate::transport::Address::default_for(
                                    $Group::GROUP,
                                    &version,
                                ) {
                                    Ok(address) => address,
                                    Err(e) => {
                                        tracing::debug!(group = $Group::GROUP, %version, error = %e, "no endpoint");
                                        attempts.push(version);
                                        continue;
                                    }
                                }
                            }
                        };
                        match $Group::dial(&version, &address.to_string(), &options.connect).await {
                            Ok(group) => {
                                chosen = Some(group);
                                break;
                            }
                            Err(e) => {
                                tracing::debug!(group = $Group::GROUP, %version, error = %e, "not served");
                                attempts.push(version);
                            }
                        }
                    }
                }
                if chosen.is_none() {
                    let text = if attempts.is_empty() {
                        "none; the group was not asked for".to_string()
                    } else {
                        attempts.join(", ")
                    };
                    tried.insert($Group::GROUP, text);
                }
                chosen
            }};
        }
        let disk = negotiate!(DiskGroup, false, true);
        let volume = negotiate!(VolumeGroup, false, true);
        let filesystem = negotiate!(FilesystemGroup, false, true);
        let smb = negotiate!(SmbGroup, false, true);
        let iscsi = negotiate!(IscsiGroup, true, options.iscsi);
        let system = negotiate!(SystemGroup, true, options.system);
        let os_volume = match &volume {
            Some(v) if v.finds_closest_volume() => Some(v.clone()),
            Some(_) => Self::dial_os_volume(&options).await,
            None => None,
        };
        let mut node = Self::assemble(disk, volume, filesystem, smb, iscsi, system, tried, options);
        node.inner_mut().os_volume = os_volume;
        tracing::info!(versions = %node.versions(), "connected to csi-proxy");
        Ok(node)
    }

    /// Volume v2alpha1 for the OS disk lookup alone, whatever version the
    /// volume group speaks otherwise; `None` when the proxy does not serve it.
    async fn dial_os_volume(options: &NodeOptions) -> Option<VolumeGroup> {
        let version = "v2alpha1";
        let address = match &options.socket_dir {
            Some(dir) => crate::transport::Address::socket_in(dir, VolumeGroup::GROUP, version),
            None => crate::transport::Address::default_for(VolumeGroup::GROUP, version).ok()?,
        };
        match VolumeGroup::dial(version, &address.to_string(), &options.connect).await {
            Ok(group) => Some(group),
            Err(e) => {
                tracing::debug!(error = %e, "no volume v2alpha1: the OS disk cannot be found through the proxy");
                None
            }
        }
    }

    /// The fields set after [`Node::assemble`], before the node is shared.
    fn inner_mut(&mut self) -> &mut Inner {
        Arc::get_mut(&mut self.inner).expect("a node being built is not shared")
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        disk: Option<DiskGroup>,
        volume: Option<VolumeGroup>,
        filesystem: Option<FilesystemGroup>,
        smb: Option<SmbGroup>,
        iscsi: Option<IscsiGroup>,
        system: Option<SystemGroup>,
        tried: HashMap<&'static str, String>,
        options: NodeOptions,
    ) -> Node {
        let version = |v: Option<&'static str>| v.and_then(|v| v.parse().ok());
        let versions = NodeVersions {
            disk: version(disk.as_ref().map(DiskGroup::version)),
            volume: version(volume.as_ref().map(VolumeGroup::version)),
            filesystem: version(filesystem.as_ref().map(FilesystemGroup::version)),
            smb: version(smb.as_ref().map(SmbGroup::version)),
            iscsi: version(iscsi.as_ref().map(IscsiGroup::version)),
            system: version(system.as_ref().map(SystemGroup::version)),
        };
        let formats_at_once = options.max_concurrent_formats;
        Node {
            inner: Arc::new(Inner {
                disk,
                volume,
                filesystem,
                smb,
                iscsi,
                system,
                tried,
                versions,
                options,
                smb_locks: Mutex::default(),
                os_volume: None,
                os_disk: tokio::sync::OnceCell::new(),
                data_volumes: Mutex::default(),
                #[cfg(feature = "host-process")]
                host_process: None,
                formats: Mutex::default(),
                format_permits: tokio::sync::Semaphore::new(formats_at_once),
            }),
        }
    }

    /// The node layer over an in-process [`MockHost`](crate::mock::MockHost),
    /// every group at its newest non-alpha version ([`NodeVersions::newest`]).
    #[cfg(feature = "mock")]
    pub fn from_mock(host: &crate::mock::MockHost) -> Node {
        Self::from_mock_with(host, NodeVersions::newest())
            .expect("the node layer speaks every newest version")
    }

    /// The node layer over a [`MockHost`](crate::mock::MockHost) at the
    /// given versions (a group set to `None` is absent).
    #[cfg(feature = "mock")]
    pub fn from_mock_with(
        host: &crate::mock::MockHost,
        versions: NodeVersions,
    ) -> Result<Node, Error> {
        Self::from_mock_with_options(host, versions, NodeOptions::default())
    }

    /// [`Node::from_mock_with`] with options (deadlines, SMB store, ...).
    #[cfg(feature = "mock")]
    pub fn from_mock_with_options(
        host: &crate::mock::MockHost,
        versions: NodeVersions,
        options: NodeOptions,
    ) -> Result<Node, Error> {
        let mut tried = HashMap::new();
        macro_rules! wrap {
            ($Group:ident, $field:ident) => {
                match versions.$field {
                    Some(v) => Some($Group::mock(&v.to_string(), host)?),
                    None => {
                        tried.insert(
                            $Group::GROUP,
                            "none; absent from the mock's versions".to_string(),
                        );
                        None
                    }
                }
            };
        }
        let disk = wrap!(DiskGroup, disk);
        let volume = wrap!(VolumeGroup, volume);
        let filesystem = wrap!(FilesystemGroup, filesystem);
        let smb = wrap!(SmbGroup, smb);
        let iscsi = wrap!(IscsiGroup, iscsi);
        let system = wrap!(SystemGroup, system);
        let os_volume = match versions.volume {
            Some(_) => Some(VolumeGroup::mock("v2alpha1", host)?),
            None => None,
        };
        let mut node = Self::assemble(disk, volume, filesystem, smb, iscsi, system, tried, options);
        node.inner_mut().os_volume = os_volume;
        Ok(node)
    }

    /// HostProcess mode: the node layer doing its work on this Windows host
    /// directly (WMI and Win32; no CSI Proxy), every group at the newest
    /// version the backend implements. Fails when this build has no
    /// Windows implementation of the boundary.
    #[cfg(all(feature = "host-process", windows))]
    pub fn host_process(options: NodeOptions) -> Result<Node, Error> {
        let host = crate::host_process::windows::host()?;
        Ok(Self::host_process_with(host, options))
    }

    /// HostProcess mode over any implementation of the Windows boundary
    /// (the fake over the simulated host in tests,
    /// [`FakeWindows`](crate::host_process::FakeWindows)).
    #[cfg(feature = "host-process")]
    pub fn host_process_with(
        host: Arc<dyn crate::host_process::WindowsHost>,
        options: NodeOptions,
    ) -> Node {
        Self::from_host_process(crate::host_process::HostProcess::new(host), options)
    }

    /// HostProcess mode over a configured backend (working directories,
    /// SMB privacy). Disk, volume, filesystem and smb are at v1; iscsi at
    /// v1alpha2 and system at v1alpha1 when asked for
    /// ([`NodeOptions::iscsi`], [`NodeOptions::system`]).
    #[cfg(feature = "host-process")]
    pub fn from_host_process(
        backend: crate::host_process::HostProcess,
        options: NodeOptions,
    ) -> Node {
        let backend = Arc::new(backend);
        let mut tried = HashMap::new();
        let iscsi = if options.iscsi {
            Some(IscsiGroup::V1alpha2(backend.clone()))
        } else {
            tried.insert(
                IscsiGroup::GROUP,
                "none; the group was not asked for".to_string(),
            );
            None
        };
        let system = if options.system {
            Some(SystemGroup::V1alpha1(backend.clone()))
        } else {
            tried.insert(
                SystemGroup::GROUP,
                "none; the group was not asked for".to_string(),
            );
            None
        };
        let mut node = Self::assemble(
            Some(DiskGroup::V1(backend.clone())),
            Some(VolumeGroup::V1(backend.clone())),
            Some(FilesystemGroup::V1(backend.clone())),
            Some(SmbGroup::V1(backend.clone())),
            iscsi,
            system,
            tried,
            options,
        );
        node.inner_mut().host_process = Some(backend);
        tracing::info!(versions = %node.versions(), "host-process mode");
        node
    }

    /// The version chosen for each group (for logs: it implements `Display`).
    pub fn versions(&self) -> NodeVersions {
        self.inner.versions
    }

    fn missing(&self, group: &'static str) -> Error {
        Error::GroupUnavailable {
            group,
            tried: self
                .inner
                .tried
                .get(group)
                .cloned()
                .unwrap_or_else(|| "none".into()),
        }
    }

    fn need<'a, G>(&self, group: &'a Option<G>, name: &'static str) -> Result<&'a G, Error> {
        group.as_ref().ok_or_else(|| self.missing(name))
    }
    fn disk(&self) -> Result<&DiskGroup, Error> {
        self.need(&self.inner.disk, "disk")
    }
    fn volume(&self) -> Result<&VolumeGroup, Error> {
        self.need(&self.inner.volume, "volume")
    }
    fn fs(&self) -> Result<&FilesystemGroup, Error> {
        self.need(&self.inner.filesystem, "filesystem")
    }
    fn smb(&self) -> Result<&SmbGroup, Error> {
        self.need(&self.inner.smb, "smb")
    }
    fn iscsi(&self) -> Result<&IscsiGroup, Error> {
        self.need(&self.inner.iscsi, "iscsi")
    }
    fn system(&self) -> Result<&SystemGroup, Error> {
        self.need(&self.inner.system, "system")
    }

    /// Runs `work` within the operation deadline, in the operation's span.
    async fn bounded<T>(
        &self,
        operation: &'static str,
        work: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        self.within_deadline(operation, work)
            .instrument(operation_span(operation))
            .await
    }

    /// Runs `work` within the operation deadline, which its calls' retries
    /// do not sleep past.
    async fn within_deadline<T>(
        &self,
        operation: &'static str,
        work: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let after = self.inner.options.deadline;
        let deadline = tokio::time::Instant::now() + after;
        let work = crate::transport::retry::within(deadline, work);
        match tokio::time::timeout_at(deadline, work).await {
            Ok(result) => result,
            Err(_) => Err(Error::DeadlineExceeded { operation, after }),
        }
    }

    // ------------------------------------------------------------ paths

    /// Whether something is at `path` (a link counts; its target is not followed).
    pub async fn exists(&self, path: &str) -> Result<bool, Error> {
        let path = path::local(path)?;
        self.bounded("exists", self.fs()?.exists(&path)).await
    }

    /// Creates the directory `path` and its parents; Ok if it exists.
    pub async fn ensure_dir(&self, path: &str) -> Result<(), Error> {
        let path = path::local(path)?;
        self.bounded("ensure_dir", self.fs()?.mkdir(&path)).await
    }

    /// Removes `path`: a directory with its contents, or a link (never what
    /// it points to); Ok if absent.
    pub async fn remove(&self, path: &str) -> Result<(), Error> {
        let path = path::local(path)?;
        self.bounded("remove", async {
            let fs = self.fs()?;
            if !fs.exists(&path).await? {
                return Ok(());
            }
            let link = fs.is_link(&path).await?;
            fs.rmdir(&path, !link).await
        })
        .await
    }

    /// One cheap round trip to the host, for health checks such as a CSI
    /// plugin's `Probe`: asks the filesystem group whether `C:\` is a link,
    /// a question the proxy passes on without checking the path against
    /// its working directories. Fails when the proxy, or the host behind
    /// it, cannot be reached (or the filesystem group was never found).
    pub async fn ping(&self) -> Result<(), Error> {
        self.bounded("ping", self.fs()?.is_link(r"C:\"))
            .await
            .map(drop)
    }

    /// What is at `path`.
    pub async fn mount_state(&self, path: &str) -> Result<MountState, Error> {
        let path = path::local(path)?;
        self.bounded("mount_state", self.state(&path)).await
    }

    async fn state(&self, path: &str) -> Result<MountState, Error> {
        let fs = self.fs()?;
        if !fs.exists(path).await? {
            return Ok(MountState::Missing);
        }
        if !fs.is_link(path).await? {
            return Ok(MountState::NotMounted);
        }
        match self.volume()?.volume_at(path).await {
            Ok(volume_id) if !volume_id.is_empty() => Ok(MountState::Mounted { volume_id }),
            _ => Ok(MountState::Linked),
        }
    }

    /// Removes the empty directory at `path` (kubelet pre-creates targets);
    /// a directory with files is [`Error::NotEmpty`].
    async fn remove_empty_dir(&self, path: &str) -> Result<(), Error> {
        self.fs()?.rmdir(path, false).await.map_err(|e| {
            if is_not_empty(&e) {
                Error::NotEmpty {
                    path: path.to_string(),
                }
            } else {
                e
            }
        })
    }

    async fn ensure_parent(&self, path: &str) -> Result<(), Error> {
        match path::parent(path) {
            Some(parent) => self.fs()?.mkdir(parent).await,
            None => Ok(()),
        }
    }

    // ------------------------------------------------------------ disks

    /// Finds an attached disk: rescans once, then looks every
    /// [interval](NodeOptions::find_disk_interval) until the
    /// [timeout](NodeOptions::find_disk_timeout); [`Error::DiskNotFound`]
    /// lists what the node showed at the last look.
    ///
    /// A selector by location or number ([`DiskSelector::Lun`],
    /// [`DiskSelector::AzureLun`], [`DiskSelector::Number`]) is answered
    /// from the disks' locations alone: through the proxy the ids are not
    /// listed (`ListDiskIDs`, the slowest disk listing), and the disk
    /// returned has `page83` and `serial_number` `None`. [`Node::disks`]
    /// reads every fact.
    pub async fn find_disk(&self, selector: DiskSelector) -> Result<Disk, Error> {
        self.find_disk_polling(selector)
            .instrument(operation_span("find_disk"))
            .await
    }

    async fn find_disk_polling(&self, selector: DiskSelector) -> Result<Disk, Error> {
        let disk = self.disk()?;
        let (interval, timeout) = (
            self.inner.options.find_disk_interval,
            self.inner.options.find_disk_timeout,
        );
        let start = tokio::time::Instant::now();
        let details = selector.needs_details();
        // A selector by location is answered by the locations alone: the
        // ids (every disk's page 83 query, the slowest listing) only when
        // the selector reads them, or at the last look, for the error.
        let ids = selector.needs_ids();
        let last = || start.elapsed() >= timeout;
        let mut with_ids = ids || last();
        // The first look: the rescan, then the listing. The OS disk, which
        // the listing marks, is looked up once per node, at the same time.
        let first = async {
            let listed = async {
                disk.rescan().await?;
                self.listing(details, with_ids).await
            };
            tokio::try_join!(listed, self.os_disk()).map(|(disks, _)| disks)
        };
        let mut disks = self.within_deadline("find_disk", first).await?;
        loop {
            if let Some(found) = disks.iter().find(|d| d.selectable() && selector.matches(d)) {
                tracing::debug!(%selector, number = found.number, "found disk");
                return Ok(found.clone());
            }
            let waited = start.elapsed();
            if waited >= timeout {
                // The error names what each disk shows, ids included.
                let disks = match with_ids {
                    true => disks,
                    false => {
                        self.within_deadline("find_disk", self.listing(details, true))
                            .await?
                    }
                };
                let seen: Vec<String> = disks.iter().map(DiskInfo::describe).collect();
                return Err(Error::DiskNotFound {
                    selector: selector.to_string(),
                    waited,
                    seen: if seen.is_empty() {
                        "no disks".into()
                    } else {
                        seen.join("; ")
                    },
                });
            }
            tokio::time::sleep(interval.min(timeout - waited)).await;
            with_ids = ids || last();
            disks = self
                .within_deadline("find_disk", self.listing(details, with_ids))
                .await?;
        }
    }

    /// Every disk the node lists, by number, with its location, ids, size
    /// and state, and whether it is the OS disk or a cloud's temporary
    /// disk; see [`DiskInfo`] for where each field comes from and what
    /// each mode cannot tell. Changes nothing.
    pub async fn disks(&self) -> Result<Vec<DiskInfo>, Error> {
        self.bounded("disks", self.listing(true, true)).await
    }

    /// The disk list; sizes and states only with `details` (through the
    /// proxy they cost one call per disk each), page 83 ids and serial
    /// numbers only with `ids` (through the proxy, one more listing).
    async fn listing(&self, details: bool, ids: bool) -> Result<Vec<DiskInfo>, Error> {
        let disk = self.disk()?;
        let number = |s: &Option<String>| s.as_deref().and_then(|t| t.trim().parse().ok());
        let mut out: Vec<DiskInfo> = disk
            .disks(ids)
            .await?
            .into_iter()
            .map(|(n, f)| {
                let mut info = DiskInfo::new(n);
                info.adapter = number(&f.adapter);
                info.bus = number(&f.bus);
                info.target = number(&f.target);
                info.lun = number(&f.lun);
                info.page83 = f.page83;
                info.serial_number = f.serial_number;
                info
            })
            .collect();
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            let objects = backend.disk_objects().await?;
            for info in &mut out {
                let Some(o) = objects.iter().find(|o| o.number == info.number) else {
                    continue;
                };
                use crate::host_process::boundary as b;
                info.nvme_namespace = disks::nvme_namespace_of_path(&o.path);
                info.size = Some(o.size);
                info.online = Some(!o.is_offline);
                info.read_only = Some(o.is_read_only);
                info.partition_style = match o.partition_style {
                    b::PARTITION_STYLE_RAW => Some(PartitionStyle::Raw),
                    b::PARTITION_STYLE_MBR => Some(PartitionStyle::Mbr),
                    b::PARTITION_STYLE_GPT => Some(PartitionStyle::Gpt),
                    _ => None,
                };
                info.os_disk = Some(o.is_system || o.is_boot);
            }
            disks::mark_temporary(&mut out);
            return Ok(out);
        }
        if details {
            for info in &mut out {
                info.size = Some(disk.size(info.number).await?);
                info.online = disk.is_online(info.number).await?;
            }
        }
        if let Some(os) = self.os_disk().await? {
            for info in &mut out {
                info.os_disk = Some(info.number == os);
            }
        }
        disks::mark_temporary(&mut out);
        Ok(out)
    }

    /// The number of the disk holding Windows, looked up once per node
    /// (callers at once share the one lookup); `None` when this mode or
    /// proxy cannot tell (see [`DiskInfo::os_disk`]). A lookup that fails is
    /// not kept: the next caller asks again.
    async fn os_disk(&self) -> Result<Option<u32>, Error> {
        self.inner
            .os_disk
            .get_or_try_init(|| self.look_up_os_disk())
            .await
            .copied()
    }

    async fn look_up_os_disk(&self) -> Result<Option<u32>, Error> {
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            return Ok(backend
                .disk_objects()
                .await?
                .into_iter()
                .find(|o| o.is_system || o.is_boot)
                .map(|o| o.number));
        }
        let Some(volume) = &self.inner.os_volume else {
            return Ok(None);
        };
        let Some(id) = volume.closest_volume(r"C:\").await? else {
            return Ok(None);
        };
        Ok(Some(volume.disk_of(&id).await?))
    }

    /// Refuses any change to volume `id` when it lies on the OS disk, as
    /// [`Node::refuse_os_disk`]; asks the volume's disk only the first
    /// time (see `Inner::data_volumes`), and not at all when the OS disk
    /// cannot be known.
    async fn refuse_os_volume(&self, id: &str, operation: &'static str) -> Result<(), Error> {
        if self.known_data_volume(id) || self.os_disk().await?.is_none() {
            return Ok(());
        }
        let n = self.volume()?.disk_of(id).await?;
        self.refuse_os_disk(n, operation).await?;
        self.remember_data_volume(id);
        Ok(())
    }

    fn data_volumes(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.inner
            .data_volumes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn known_data_volume(&self, id: &str) -> bool {
        self.data_volumes().contains(&id.to_lowercase())
    }

    fn remember_data_volume(&self, id: &str) {
        self.data_volumes().insert(id.to_lowercase());
    }

    /// Refuses any change to the OS disk: [`Error::OsDisk`] for disk `n`
    /// when it holds Windows, before any call that changes it.
    async fn refuse_os_disk(&self, n: u32, operation: &'static str) -> Result<(), Error> {
        match self.os_disk().await? {
            Some(os) if os == n => Err(Error::OsDisk {
                disk: n,
                operation,
                why: if self.is_host_process() {
                    "MSFT_Disk.IsSystem/IsBoot".into()
                } else {
                    r"it holds the volume of C:\".into()
                },
            }),
            _ => Ok(()),
        }
    }

    fn is_host_process(&self) -> bool {
        #[cfg(feature = "host-process")]
        if self.inner.host_process.is_some() {
            return true;
        }
        false
    }

    /// Stages a disk at `path`: onlines it if offline, partitions it if
    /// blank, formats its first volume NTFS if unformatted, and mounts it
    /// at `path` (parents created). Returns the volume id.
    ///
    /// Already mounted at `path` from this disk: Ok. `path` holding another
    /// volume or a link ([`Error::PathInUse`]), a directory with files
    /// ([`Error::NotEmpty`]): nothing is changed.
    ///
    /// The disk that holds Windows is never touched: [`Error::OsDisk`],
    /// before any call that changes it (see [`DiskInfo::os_disk`] for how
    /// it is found; through a proxy without volume v2alpha1 it cannot be).
    /// On a disk with several partitions the data partition is staged,
    /// never a System Reserved, EFI, MSR or recovery one: in HostProcess
    /// mode chosen by partition type (`MSFT_Partition.GptType`, `MbrType`,
    /// `IsSystem`, `IsActive`, `IsHidden`); through the proxy, whose API
    /// shows no partition type, label or flag, the largest formatted
    /// volume, else the largest (a data partition smaller than a system
    /// partition beside it cannot be told apart there).
    ///
    /// A read-only disk: in HostProcess mode it is made writable first
    /// (`MSFT_Disk.SetAttributes`, `IsReadOnly = false`). Through the proxy,
    /// whose API neither reports nor clears read-only, a blank read-only
    /// disk fails with [`Error::ReadOnlyDisk`] when Windows refuses to
    /// initialise, partition or format it; a read-only disk that already
    /// holds NTFS is **not** detected through the proxy: it is mounted
    /// read-only and writes fail later, in the pod.
    pub async fn stage_disk(&self, disk: impl Into<u32>, path: &str) -> Result<String, Error> {
        let number = disk.into();
        let path = path::local(path)?;
        self.bounded("stage_disk", self.stage_disk_at(number, &path))
            .await
    }

    async fn stage_disk_at(&self, number: u32, path: &str) -> Result<String, Error> {
        let (disk, volume, fs) = (self.disk()?, self.volume()?, self.fs()?);
        self.refuse_os_disk(number, "stage").await?;
        match self.state(path).await? {
            MountState::Mounted { volume_id } => {
                return if volume.disk_of(&volume_id).await? == number {
                    Ok(volume_id)
                } else {
                    Err(Error::PathInUse {
                        path: path.to_string(),
                        holds: format!("volume {volume_id} of another disk"),
                    })
                };
            }
            MountState::Linked => {
                return Err(Error::PathInUse {
                    path: path.to_string(),
                    holds: "a link".into(),
                });
            }
            // Proves it empty; it is made again before the mount.
            MountState::NotMounted => self.remove_empty_dir(path).await?,
            MountState::Missing => {}
        }
        self.make_writable(number).await?;
        let read_only = |e: Error| read_only_refusal(number, e);
        let prepare = || async {
            disk.partition(number).await.map_err(read_only)?;
            self.data_volume(number).await
        };
        // An online disk is the usual case: its state is read only when it
        // cannot be partitioned or shows no volume, as an offline disk
        // does; it is then brought online and prepared again.
        let id = match prepare().await {
            Ok(id) => id,
            Err(e) if matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::TimedOut) => {
                return Err(e);
            }
            Err(e) => {
                if disk.is_online(number).await? != Some(false) {
                    return Err(e);
                }
                tracing::info!(disk = number, error = %e, "bringing the disk online");
                disk.set_online(number, true).await?;
                prepare().await?
            }
        };
        // Not the OS disk's (refused above): later checks need no call.
        self.remember_data_volume(&id);
        // A format in a task of its own: it outlives this caller at the
        // host, and a retry must wait for it rather than format again.
        self.ensure_formatted(&id).await.map_err(read_only)?;
        fs.mkdir(path).await?;
        volume.mount(&id, path).await?;
        tracing::info!(disk = number, volume = %id, path, "staged");
        Ok(id)
    }

    /// HostProcess mode: clears the read-only flag of disk `n`
    /// (`MSFT_Disk.SetAttributes(IsReadOnly = false)`), so that a disk a
    /// SAN policy left read-only is never staged read-only. Through the
    /// proxy nothing can be read or done ([`Node::stage_disk`]).
    async fn make_writable(&self, n: u32) -> Result<(), Error> {
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            let read_only = backend
                .disk_objects()
                .await?
                .iter()
                .any(|o| o.number == n && o.is_read_only);
            if read_only {
                tracing::info!(disk = n, "the disk is read-only: making it writable");
                backend.make_writable(n).await?;
            }
        }
        let _ = n;
        Ok(())
    }

    /// The volume to stage on disk `n`.
    ///
    /// HostProcess mode chooses by partition type (`MSFT_Partition`
    /// `GptType`, `MbrType`, `IsSystem`, `IsActive`, `IsHidden`): the basic
    /// data partition (GPT) or data-typed partition (MBR) with a volume,
    /// never an EFI, MSR, recovery, hidden or system one, and never the
    /// active System Reserved partition of an MBR disk beside a data one;
    /// formatted before unformatted, then the largest.
    ///
    /// Through the proxy no partition type, label or flag is visible (its
    /// volume API lists a disk's volumes and tells of each only whether
    /// it is formatted and its size; the MSR has no volume and is never
    /// listed): its only volume, else the largest formatted one, else the
    /// largest. System Reserved (about 500 MiB), EFI (100 MiB) and
    /// recovery partitions are small beside a data partition, so this
    /// finds it on the layouts Windows makes; a data partition smaller
    /// than a system one beside it is not told apart there. The only
    /// system volume proxy mode knows, the one holding `C:\`, lies on the
    /// OS disk, which is refused before this.
    async fn data_volume(&self, n: u32) -> Result<String, Error> {
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            return backend
                .data_volume(n)
                .await?
                .ok_or(Error::NoVolume { disk: n });
        }
        let volume = self.volume()?;
        let ids = volume.volumes_on_disk(n).await?;
        if ids.len() <= 1 {
            return ids.into_iter().next().ok_or(Error::NoVolume { disk: n });
        }
        let mut best: Option<(i64, String)> = None;
        for id in &ids {
            if !volume.is_formatted(id).await? {
                continue;
            }
            let (total, _) = volume.stats(id).await?;
            if best.as_ref().is_none_or(|(size, _)| total > *size) {
                best = Some((total, id.clone()));
            }
        }
        if best.is_none() {
            // Nothing formatted: the largest, as the data partition is on
            // the layouts Windows makes (never the first: an EFI or
            // System Reserved partition comes first).
            for id in &ids {
                let (total, _) = volume.stats(id).await?;
                if best.as_ref().is_none_or(|(size, _)| total > *size) {
                    best = Some((total, id.clone()));
                }
            }
        }
        Ok(best.map_or_else(|| ids[0].clone(), |(_, id)| id))
    }

    /// Links `target` to `staging` (kubelet's pre-created empty directory
    /// at `target` is replaced; parents are created).
    ///
    /// Already published (the same volume behind both): Ok. Nothing at
    /// `staging` ([`Error::NotStaged`]), `target` holding something else
    /// ([`Error::PathInUse`]) or files ([`Error::NotEmpty`]): nothing is changed.
    pub async fn publish(&self, staging: &str, target: &str) -> Result<(), Error> {
        let staging = path::local(staging)?;
        let target = path::local(target)?;
        self.bounded("publish", self.publish_at(&staging, &target, false))
            .await
    }

    /// [`Node::publish`] of a staged volume: `staging` must hold a volume
    /// or a link (what [`Node::stage_disk`] and [`Node::smb_stage`] leave);
    /// a plain directory there is [`Error::NotStaged`] too. For a plugin
    /// that would otherwise look at the staging path itself first: the
    /// look is made once.
    pub async fn publish_staged(&self, staging: &str, target: &str) -> Result<(), Error> {
        let staging = path::local(staging)?;
        let target = path::local(target)?;
        self.bounded("publish", self.publish_at(&staging, &target, true))
            .await
    }

    async fn publish_at(&self, staging: &str, target: &str, staged: bool) -> Result<(), Error> {
        let fs = self.fs()?;
        // The usual case first, in two calls: a staged volume (a mount
        // point or a link) and nothing at the target yet. Anything else
        // (the link refused: a target already there, a missing parent) is
        // looked at in full below before anything is changed.
        if fs.is_link(staging).await.unwrap_or(false) && fs.link(staging, target).await.is_ok() {
            tracing::info!(staging, target, "published");
            return Ok(());
        }
        let source = self.state(staging).await?;
        if source == MountState::Missing || (staged && source == MountState::NotMounted) {
            return Err(Error::NotStaged {
                path: staging.to_string(),
            });
        }
        match (self.state(target).await?, source) {
            (MountState::Missing, _) => self.ensure_parent(target).await?,
            (MountState::NotMounted, _) => self.remove_empty_dir(target).await?,
            (MountState::Mounted { volume_id: a }, MountState::Mounted { volume_id: b })
                if a == b =>
            {
                return Ok(());
            }
            // The proxy cannot tell where these links go: trust them.
            (MountState::Linked, MountState::Linked | MountState::NotMounted) => return Ok(()),
            (MountState::Mounted { .. }, MountState::NotMounted) => return Ok(()),
            (held, _) => {
                return Err(Error::PathInUse {
                    path: target.to_string(),
                    holds: match held {
                        MountState::Mounted { volume_id } => {
                            format!("a link to another volume ({volume_id})")
                        }
                        _ => "a link to something else".into(),
                    },
                });
            }
        }
        fs.link(staging, target).await?;
        tracing::info!(staging, target, "published");
        Ok(())
    }

    /// Removes the link at `target` (never the data behind it); an empty
    /// directory there is removed too. Absent: Ok.
    ///
    /// A target an SMB share is staged at (an ephemeral inline volume,
    /// [`Node::smb_stage`] at the target) is unstaged: its reference goes
    /// with the link, and the mapping with the last reference.
    pub async fn unpublish(&self, target: &str) -> Result<(), Error> {
        let target = path::local(target)?;
        if self.inner.options.smb_store.root_of(&target)?.is_some() {
            return self.smb_unstage(&target).await;
        }
        self.bounded("unpublish", async {
            // One call when there is a link or an empty directory to
            // remove, as every driver does; a removal refused (nothing
            // there, files in a directory) is looked at before answering.
            if self.fs()?.rmdir(&target, false).await.is_ok() {
                return Ok(());
            }
            match self.state(&target).await? {
                MountState::Missing => Ok(()),
                MountState::NotMounted => self.remove_empty_dir(&target).await,
                MountState::Mounted { .. } | MountState::Linked => {
                    self.fs()?.rmdir(&target, false).await
                }
            }
        })
        .await
    }

    /// Unstages `path`: flushes the volume mounted there, unmounts it and
    /// removes `path`. Absent: Ok.
    pub async fn unstage(&self, path: &str) -> Result<(), Error> {
        let path = path::local(path)?;
        self.bounded("unstage", self.unstage_at(&path, false)).await
    }

    /// [`Node::unstage`], then takes the volume's disk offline (for disks
    /// that are detached next, or clones that must not be seen twice).
    pub async fn unstage_and_offline(&self, path: &str) -> Result<(), Error> {
        let path = path::local(path)?;
        self.bounded("unstage", self.unstage_at(&path, true)).await
    }

    /// Unstages what this node staged at `path`, whichever kind it is, and
    /// returns what it found there: a disk's volume
    /// ([`MountState::Mounted`]) as [`Node::unstage`] does (with `offline`,
    /// as [`Node::unstage_and_offline`]); a link to a share
    /// ([`MountState::Linked`]) as [`Node::smb_unstage`] does. Nothing or
    /// a plain directory is left as it is. For a plugin serving disks and
    /// shares alike, which cannot tell from the request which kind it
    /// unstages: the path is looked at once.
    pub async fn unstage_staged(&self, path: &str, offline: bool) -> Result<MountState, Error> {
        let path = path::local(path)?;
        self.bounded("unstage", async {
            let state = self.state_expecting_volume(&path).await?;
            match &state {
                MountState::Mounted { volume_id } => {
                    self.unstage_volume(&path, volume_id, offline).await?
                }
                MountState::Linked => {
                    let root = self.inner.options.smb_store.root_of(&path)?;
                    let _serial = match &root {
                        Some(root) => Some(self.smb_lock(root).await),
                        None => None,
                    };
                    self.fs()?.rmdir(&path, false).await?;
                    if let Some(root) = root {
                        self.smb_release(&root, &path).await?;
                    }
                }
                MountState::Missing | MountState::NotMounted => {}
            }
            Ok(state)
        })
        .await
    }

    async fn unstage_at(&self, path: &str, offline: bool) -> Result<(), Error> {
        match self.state_expecting_volume(path).await? {
            MountState::Missing => Ok(()),
            MountState::NotMounted => self.remove_empty_dir(path).await,
            MountState::Linked => self.fs()?.rmdir(path, false).await,
            MountState::Mounted { volume_id } => {
                self.unstage_volume(path, &volume_id, offline).await
            }
        }
    }

    /// What is at `path` where a volume is expected: the volume behind it
    /// answers in one call, and only a path with none is looked at further.
    async fn state_expecting_volume(&self, path: &str) -> Result<MountState, Error> {
        match self.volume()?.volume_at(path).await {
            Ok(volume_id) if !volume_id.is_empty() => Ok(MountState::Mounted { volume_id }),
            Err(e) if matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::TimedOut) => Err(e),
            _ => {
                let fs = self.fs()?;
                if !fs.exists(path).await? {
                    Ok(MountState::Missing)
                } else if fs.is_link(path).await? {
                    Ok(MountState::Linked)
                } else {
                    Ok(MountState::NotMounted)
                }
            }
        }
    }

    /// Flushes volume `volume_id` and removes its mount point at `path`,
    /// then takes its disk offline with `offline`.
    async fn unstage_volume(
        &self,
        path: &str,
        volume_id: &str,
        offline: bool,
    ) -> Result<(), Error> {
        let volume = self.volume()?;
        self.refuse_os_volume(volume_id, "unstage").await?;
        let disk = match offline {
            true => Some(volume.disk_of(volume_id).await?),
            false => None,
        };
        if volume.can_flush() {
            // Flushed, the mount point goes with its directory: one call
            // less than UnmountVolume, which flushes again before removing
            // the access path (azuredisk-csi-driver unstages so through the
            // proxy, pkg/mounter/safe_mounter_windows.go).
            volume.flush(volume_id).await?;
        } else {
            // volume v1beta1 cannot flush; its dismount does.
            volume.unmount(volume_id, path).await?;
        }
        self.remove_empty_dir(path).await?;
        if let Some(n) = disk {
            self.disk()?.set_online(n, false).await?;
        }
        tracing::info!(volume = %volume_id, path, "unstaged");
        Ok(())
    }

    /// The id of the volume behind `path`.
    pub async fn volume_at(&self, path: &str) -> Result<String, Error> {
        let path = path::local(path)?;
        self.bounded("volume_at", self.volume()?.volume_at(&path))
            .await
    }

    /// Grows the volume behind `path` over its whole partition and returns
    /// its size in bytes afterwards. Nothing to grow is not an error.
    pub async fn expand(&self, path: &str) -> Result<u64, Error> {
        self.expand_to(path, 0).await
    }

    /// [`Node::expand`], with a way out when the host cannot tell the
    /// partition's maximum size: growing to the maximum asks
    /// `MSFT_Partition.GetSupportedSize`, which needs the defrag service
    /// and fails with `StorageWMI 4` when it is disabled
    /// (aws-ebs-csi-driver#2877) or takes minutes when it is busy
    /// (AgentBaker#3804). When that call fails so, or has not answered
    /// within half the operation deadline, the partition is grown to
    /// `size_bytes` instead (the size the volume must have, e.g. the CSI
    /// request's required bytes less what the disk layout keeps). With
    /// `size_bytes` 0, as [`Node::expand`]: the maximum only.
    ///
    /// The proxy leaves a growth under 100 MiB undone (csi-proxy v1.3.0
    /// `pkg/os/volume/api.go`, `minimumResizeSize`); the size returned is
    /// then the volume's unchanged size.
    pub async fn expand_to(&self, path: &str, size_bytes: u64) -> Result<u64, Error> {
        let path = path::local(path)?;
        self.bounded("expand", async {
            let id = self.volume()?.volume_at(&path).await?;
            self.expand_volume(&id, size_bytes).await
        })
        .await
    }

    /// The work of [`Node::expand_to`] on volume `id`.
    async fn expand_volume(&self, id: &str, size_bytes: u64) -> Result<u64, Error> {
        let volume = self.volume()?;
        let patience = self.inner.options.deadline / 2;
        self.refuse_os_volume(id, "expand").await?;
        if size_bytes == 0 {
            grow(volume, id, 0).await?;
        } else {
            let size = i64::try_from(size_bytes).unwrap_or(i64::MAX);
            match tokio::time::timeout(patience, grow(volume, id, 0)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) if no_supported_size(&e) => {
                    tracing::warn!(volume = %id, error = %e, size_bytes, "the maximum size cannot be had; growing to the size asked for");
                    grow(volume, id, size).await?;
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    // The query goes on at the host; growing to a
                    // size of our own does not need it.
                    tracing::warn!(volume = %id, ?patience, size_bytes, "the maximum size did not come; growing to the size asked for");
                    grow(volume, id, size).await?;
                }
            }
        }
        let (total, _) = volume.stats(id).await?;
        Ok(u64::try_from(total).unwrap_or(0))
    }

    /// Grows the volume behind `path` over what its disk has gained, as
    /// drivers do before a resize and right after staging a disk restored
    /// from a smaller snapshot: rescans the disks first, so that the host
    /// sees the size the cloud gave the disk (aws-ebs-csi-driver
    /// pkg/mounter/mount_windows.go), brings the disk online if it is
    /// offline (vsphere-csi-driver pkg/csi/service/mounter/mounter_windows.go),
    /// then grows the volume as [`Node::expand_to`] does with `size_bytes`.
    /// With a `min_growth` above 0, the volume is left as it is when its
    /// disk has less than that beyond the volume's partition (the GPT
    /// layout the proxy makes is taken off: 16 MiB before the partition,
    /// the backup table after it). Returns the volume's size afterwards.
    ///
    /// With `min_growth` 0, the disk's state is read only when growing
    /// fails (an online disk, the usual case, costs no call for it); the
    /// growth is then made again once the disk is online.
    pub async fn grow(&self, path: &str, min_growth: u64, size_bytes: u64) -> Result<u64, Error> {
        let local = path::local(path)?;
        self.bounded("grow", async {
            let (disk, volume) = (self.disk()?, self.volume()?);
            // Neither waits for the other.
            let ((), id) = tokio::try_join!(disk.rescan(), volume.volume_at(&local))?;
            if min_growth == 0 {
                return self.grow_volume(&id, None, 0, size_bytes).await;
            }
            // The sizes are read before growing: the disk must be online.
            let number = volume.disk_of(&id).await?;
            if disk.is_online(number).await? == Some(false) {
                tracing::info!(disk = number, "bringing the disk online before growing");
                disk.set_online(number, true).await?;
            }
            self.grow_volume(&id, Some(number), min_growth, size_bytes)
                .await
        })
        .await
    }

    /// Right after [`Node::stage_disk`] of `disk` returned `volume_id`:
    /// grows the volume over its disk when the disk has at least
    /// `min_growth` bytes beyond it, as [`Node::grow`] does, without its
    /// rescan and lookups (the stage's discovery rescanned, and the stage
    /// named the disk and the volume). The volume's size and the disk's
    /// are read at once. Returns the volume's size afterwards.
    pub async fn grow_staged(
        &self,
        disk: impl Into<u32>,
        volume_id: &str,
        min_growth: u64,
    ) -> Result<u64, Error> {
        let number = disk.into();
        self.bounded(
            "grow",
            self.grow_volume(volume_id, Some(number), min_growth, 0),
        )
        .await
    }

    /// Grows volume `id` (of disk `number`, when known) unless `min_growth`
    /// is above 0 and its disk has less room than that beyond it.
    async fn grow_volume(
        &self,
        id: &str,
        number: Option<u32>,
        min_growth: u64,
        size_bytes: u64,
    ) -> Result<u64, Error> {
        let (disk, volume) = (self.disk()?, self.volume()?);
        if let (Some(n), true) = (number, min_growth > 0) {
            let ((total, _), size) = tokio::try_join!(volume.stats(id), disk.size(n))?;
            let total = u64::try_from(total).unwrap_or(0);
            let room = size.saturating_sub(total + GPT_LAYOUT);
            if room < min_growth {
                tracing::debug!(volume = %id, room, "the volume fills its disk");
                return Ok(total);
            }
            tracing::info!(volume = %id, room, "the disk has grown: growing the volume");
        }
        match self.expand_volume(id, size_bytes).await {
            Err(e) if !matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::TimedOut) => {
                let n = match number {
                    Some(n) => n,
                    None => volume.disk_of(id).await?,
                };
                if disk.is_online(n).await? != Some(false) {
                    return Err(e);
                }
                tracing::info!(disk = n, error = %e, "the disk is offline: bringing it online to grow");
                disk.set_online(n, true).await?;
                self.expand_volume(id, size_bytes).await
            }
            other => other,
        }
    }

    /// Total, used and available bytes of the volume behind `path`.
    pub async fn usage(&self, path: &str) -> Result<VolumeUsage, Error> {
        let path = path::local(path)?;
        self.bounded("usage", async {
            let volume = self.volume()?;
            let id = volume.volume_at(&path).await?;
            let (total, used) = volume.stats(&id).await?;
            let (total, used) = (
                u64::try_from(total).unwrap_or(0),
                u64::try_from(used).unwrap_or(0),
            );
            Ok(VolumeUsage {
                total_bytes: total,
                used_bytes: used,
                available_bytes: total.saturating_sub(used),
            })
        })
        .await
    }

    /// The space of the SMB share behind `path` (a staging path, or a
    /// target linked to one) and, in HostProcess mode, the status of its
    /// global mapping: what csi-driver-smb and azurefile-csi-driver report
    /// as an SMB volume's stats (pkg/smb/nodeserver.go NodeGetVolumeStats;
    /// pkg/azurefile/azure_common_windows.go). See [`ShareStats`] for which
    /// mode tells what. Fails only when the host cannot be asked.
    pub async fn smb_share_stats(&self, path: &str) -> Result<ShareStats, Error> {
        let path = path::local(path)?;
        self.bounded("smb_share_stats", async {
            #[cfg(feature = "host-process")]
            if let Some(backend) = &self.inner.host_process {
                return Ok(host_process_share_stats(
                    backend.share_view(path.clone()).await?,
                    &path,
                ));
            }
            Ok(local_share_stats(&path))
        })
        .await
    }

    // ------------------------------------------------------------ SMB

    /// Serialises the SMB work on one server that maps, unmaps or releases:
    /// Windows keeps one account per server (error 1219), so recovering a
    /// mapping of one share may touch another share of the same server.
    async fn smb_lock(&self, root: &str) -> tokio::sync::OwnedRwLockWriteGuard<()> {
        self.smb_server_lock(root).write_owned().await
    }

    /// Shares the server with other stages that only link to a share
    /// already mapped for staged volumes (under the same account); none
    /// of them maps or unmaps, so they run together.
    async fn smb_lock_shared(&self, root: &str) -> tokio::sync::OwnedRwLockReadGuard<()> {
        self.smb_server_lock(root).read_owned().await
    }

    fn smb_server_lock(&self, root: &str) -> Arc<tokio::sync::RwLock<()>> {
        let server = smb_server(root).to_string();
        let mut locks = self
            .inner
            .smb_locks
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        locks.entry(server).or_default().clone()
    }

    /// Stages the SMB share path `remote` (`\\server\share\dir`, `/` accepted)
    /// at `path`: maps the share root with `credentials` and links `path`
    /// to `remote`, recording one reference for the share root in the
    /// [store](NodeOptions::smb_store). Already staged: Ok, once the
    /// mapping is checked (a stale one, `Disconnected` after a restart, is
    /// made again).
    ///
    /// A share already mapped for staged volumes under another account is
    /// [`Error::SmbCredentialsConflict`]: Windows would reuse the mapping
    /// whatever the credentials, or refuse with error 1219.
    ///
    /// A directory below the share (`\\server\share\dir`) that does not
    /// exist is [`Error::SmbDirectoryMissing`], the path left as it was:
    /// csi-driver-smb creates it in its controller (pkg/smb/controllerserver.go
    /// CreateVolume); to create it at stage, [`Node::smb_stage_creating_dir`].
    pub async fn smb_stage(
        &self,
        remote: &str,
        path: &str,
        credentials: &SmbCredentials,
    ) -> Result<(), Error> {
        self.smb_stage_with(remote, path, credentials, false).await
    }

    /// [`Node::smb_stage`], creating the directory `remote` names below
    /// its share (with its parents) when it does not exist, as
    /// azurefile-csi-driver does before mounting with
    /// `createFolderIfNotExist` (pkg/azurefile/nodeserver.go). The
    /// directory is made through a link from `path` to the share's root:
    /// the proxy takes local paths only.
    pub async fn smb_stage_creating_dir(
        &self,
        remote: &str,
        path: &str,
        credentials: &SmbCredentials,
    ) -> Result<(), Error> {
        self.smb_stage_with(remote, path, credentials, true).await
    }

    async fn smb_stage_with(
        &self,
        remote: &str,
        path: &str,
        credentials: &SmbCredentials,
        create_dir: bool,
    ) -> Result<(), Error> {
        let path = path::local(path)?;
        let (remote, root) = path::remote(remote)?;
        self.bounded("smb_stage", async {
            let Some(_serial) = self
                .smb_link_or_lock(&remote, &root, &path, credentials)
                .await?
            else {
                return Ok(());
            };
            let store = &self.inner.options.smb_store;
            let user = &credentials.username;
            let link_at = match self.state(&path).await? {
                MountState::Linked => {
                    if let Some(other) = store.root_of(&path)?.filter(|r| *r != root) {
                        return Err(Error::PathInUse {
                            path: path.clone(),
                            holds: format!("a link to another share ({other})"),
                        });
                    }
                    // The link is there; the mapping behind it may not be.
                    ""
                }
                MountState::Mounted { volume_id } => {
                    return Err(Error::PathInUse {
                        path: path.clone(),
                        holds: format!("volume {volume_id}"),
                    });
                }
                MountState::NotMounted => {
                    self.remove_empty_dir(&path).await?;
                    path.as_str()
                }
                MountState::Missing => {
                    self.ensure_parent(&path).await?;
                    path.as_str()
                }
            };
            self.check_smb_account(&root, &path, user)?;
            self.smb_map(&remote, &root, link_at, credentials).await?;
            // The proxy's IsSymlink is false for a link whose target is
            // missing: the directory below the share is not there.
            if !self.fs()?.is_link(&path).await? {
                self.smb_missing_dir(&remote, &root, &path, credentials, create_dir)
                    .await?;
            }
            store.add(&root, &path, user)?;
            tracing::info!(share = %root, path, "SMB share staged");
            Ok(())
        })
        .await
    }

    /// Whether staged volumes hold `root` mapped, all under `user`.
    fn smb_mapped_for(&self, root: &str, user: &str) -> Result<bool, Error> {
        let users = self.inner.options.smb_store.users_of(root)?;
        Ok(!users.is_empty()
            && users
                .iter()
                .all(|u| u.as_deref().is_some_and(|u| u.eq_ignore_ascii_case(user))))
    }

    /// A share its staged volumes already hold mapped under this account
    /// needs only a link: such stages share the server (a boot storm of
    /// many volumes on a few shares runs them at once), and `None` says
    /// `path` is staged. Anything else, or a link that needs more, gets the
    /// server held alone for the whole stage. A stage that finds no
    /// mapping waits for the server first: the stage ahead of it may be
    /// mapping the share, and then it links beside the others.
    async fn smb_link_or_lock(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        credentials: &SmbCredentials,
    ) -> Result<Option<tokio::sync::OwnedRwLockWriteGuard<()>>, Error> {
        let user = &credentials.username;
        if !self.smb_mapped_for(root, user)? {
            let serial = self.smb_lock(root).await;
            if !self.smb_mapped_for(root, user)? {
                return Ok(Some(serial));
            }
        }
        {
            let _shared = self.smb_lock_shared(root).await;
            if self.smb_mapped_for(root, user)?
                && self.smb_link(remote, root, path, credentials).await?
            {
                return Ok(None);
            }
        }
        Ok(Some(self.smb_lock(root).await))
    }

    /// Stages `path` as a link to `remote` on a share its staged volumes
    /// hold mapped, with the server shared: `Ok(false)` when the stage
    /// needs more than a link (the path holds a link or a volume, the
    /// mapping is stale, the directory is missing), left to the stage
    /// that holds the server alone. The link made when the directory
    /// below the share is missing is removed first.
    async fn smb_link(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        credentials: &SmbCredentials,
    ) -> Result<bool, Error> {
        match self.state(path).await? {
            MountState::Missing => self.ensure_parent(path).await?,
            MountState::NotMounted => self.remove_empty_dir(path).await?,
            MountState::Linked | MountState::Mounted { .. } => return Ok(false),
        }
        let smb = self.smb()?;
        let (user, password) = (&credentials.username, &credentials.password);
        if smb.map(remote, path, user, password).await.is_err() {
            return Ok(false);
        }
        // The proxy's IsSymlink is false for a link whose target is
        // missing: the directory below the share is not there.
        if !self.fs()?.is_link(path).await? {
            self.fs()?.rmdir(path, false).await?;
            return Ok(false);
        }
        self.inner.options.smb_store.add(root, path, user)?;
        tracing::info!(share = %root, path, "SMB share staged");
        Ok(true)
    }

    /// The link at `path` to `remote` reaches nothing: with `create`, the
    /// directory is made through a link to the share's root and `path`
    /// linked again; otherwise (or if it is still missing) the link is
    /// removed, the mapping too when no staged volume uses it, and the
    /// stage fails with [`Error::SmbDirectoryMissing`].
    async fn smb_missing_dir(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        credentials: &SmbCredentials,
        create: bool,
    ) -> Result<(), Error> {
        self.fs()?.rmdir(path, false).await?;
        let made = match create {
            true => self.smb_create_dir(remote, root, path, credentials).await,
            false => Ok(false),
        };
        if !matches!(made, Ok(true)) && self.inner.options.smb_store.references(root)? == 0 {
            self.smb_unmap(root).await?;
        }
        match made? {
            true => Ok(()),
            false => Err(Error::SmbDirectoryMissing {
                remote: remote.to_string(),
                path: path.to_string(),
            }),
        }
    }

    /// Makes the directory `remote` names below its share through a link
    /// at `path` to the share's root, then links `path` to it. Whether
    /// `path` then reaches it (if not, nothing is left at `path`).
    async fn smb_create_dir(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        credentials: &SmbCredentials,
    ) -> Result<bool, Error> {
        let (fs, smb) = (self.fs()?, self.smb()?);
        let (user, password) = (&credentials.username, &credentials.password);
        let below: Vec<&str> = remote.split('\\').filter(|c| !c.is_empty()).collect();
        if below.len() <= 2 {
            return Ok(false);
        }
        let dir = format!("{path}\\{}", below[2..].join("\\"));
        tracing::info!(remote, "creating the directory on the share");
        smb.map(root, path, user, password).await?;
        let made = fs.mkdir(&dir).await;
        fs.rmdir(path, false).await?;
        made?;
        smb.map(remote, path, user, password).await?;
        if fs.is_link(path).await? {
            return Ok(true);
        }
        fs.rmdir(path, false).await?;
        Ok(false)
    }

    /// A share whose mapping serves staged volumes under another account
    /// is not mapped again for this one: the proxy would reuse the mapping
    /// whatever the credentials, and the volume would run on the other
    /// account.
    fn check_smb_account(&self, root: &str, path: &str, user: &str) -> Result<(), Error> {
        let store = &self.inner.options.smb_store;
        let others: Vec<String> = store
            .references_all()?
            .into_iter()
            .filter(|r| r.root == root && !r.path.eq_ignore_ascii_case(path))
            .filter_map(|r| r.user)
            .filter(|u| !u.eq_ignore_ascii_case(user))
            .collect();
        match others.first() {
            None => Ok(()),
            Some(other) => Err(Error::SmbCredentialsConflict {
                share: root.to_string(),
                user: user.to_string(),
                held_by: format!(
                    "it is mapped as {other:?} for {} staged volume(s) on this node",
                    others.len()
                ),
            }),
        }
    }

    /// Maps `root` (and links `link_at` to `remote` unless empty), making
    /// a stale mapping again and recovering error 1219 where no staged
    /// volume needs the mapping in the way.
    async fn smb_map(
        &self,
        remote: &str,
        root: &str,
        link_at: &str,
        credentials: &SmbCredentials,
    ) -> Result<(), Error> {
        let smb = self.smb()?;
        let (user, password) = (&credentials.username, &credentials.password);
        let Err(e) = smb.map(remote, link_at, user, password).await else {
            return Ok(());
        };
        if e.windows_code() == Some(85) {
            // The proxy reuses a mapping whose status is OK and creates one
            // otherwise: 85 is a mapping left `Disconnected` or `Unavailable`
            // (after a restart: azurefile-csi-driver#3416, csi-driver-smb#1219).
            // Its volumes reach nothing until it is made again.
            tracing::info!(share = %root, "stale SMB mapping: removing it and mapping again");
            self.smb_unmap(root).await?;
            return smb.map(remote, link_at, user, password).await;
        }
        if e.kind() != ErrorKind::CredentialsConflict {
            return Err(e);
        }
        // 1219: the server is mapped under another account, by this share
        // (a mapping no staged volume uses) or by another share of the
        // server (Windows Server 2025 holds one connection per server and
        // account: azurefile-csi-driver#2974, csi-driver-smb#1007).
        // A holder whose path holds no link any more (a crash between
        // removing the link and the mapping) is released, and its mapping
        // with its last reference; holders still linked are in use.
        let store = &self.inner.options.smb_store;
        let server = smb_server(root);
        let mut holders = Vec::new();
        for r in store.references_all()? {
            if smb_server(&r.root) != server || r.user.as_deref() == Some(user.as_str()) {
                continue;
            }
            if self.state(&r.path).await? == MountState::Linked {
                holders.push(r);
            } else {
                tracing::info!(share = %r.root, path = %r.path, "releasing the reference of a path that holds no link");
                self.smb_release(&r.root, &r.path).await?;
            }
        }
        if let Some(holder) = holders.first() {
            return Err(Error::SmbCredentialsConflict {
                share: root.to_string(),
                user: user.to_string(),
                held_by: format!(
                    "{} is mapped as {:?} for {} staged volume(s) on this node, and Windows \
                     keeps one account per SMB server (error 1219)",
                    holder.root,
                    holder.user.as_deref().unwrap_or("an unrecorded account"),
                    holders.len()
                ),
            });
        }
        if store.references(root)? == 0 {
            tracing::info!(share = %root, "replacing an unused mapping of the share made with other credentials");
            self.smb_unmap(root).await?;
        }
        match smb.map(remote, link_at, user, password).await {
            Err(e) if e.kind() == ErrorKind::CredentialsConflict => {
                Err(Error::SmbCredentialsConflict {
                    share: root.to_string(),
                    user: user.to_string(),
                    held_by: format!(
                        "a mapping of server {server} under another account, which no volume \
                         staged by this node records, holds the server (error 1219: {e})"
                    ),
                })
            }
            other => other,
        }
    }

    /// Removes the mapping of `root`; one already gone counts as removed.
    async fn smb_unmap(&self, root: &str) -> Result<(), Error> {
        match self.smb()?.unmap(root).await {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Removes the link at `path` and its reference; the share's global
    /// mapping is removed with the last reference. Absent: Ok.
    pub async fn smb_unstage(&self, path: &str) -> Result<(), Error> {
        let path = path::local(path)?;
        self.bounded("smb_unstage", async {
            let store = &self.inner.options.smb_store;
            let root = store.root_of(&path)?;
            let _serial = match &root {
                Some(root) => Some(self.smb_lock(root).await),
                None => None,
            };
            match self.state(&path).await? {
                MountState::Missing => {}
                MountState::Mounted { volume_id } => {
                    return Err(Error::PathInUse {
                        path,
                        holds: format!("volume {volume_id}, not an SMB link"),
                    });
                }
                MountState::NotMounted => self.remove_empty_dir(&path).await?,
                MountState::Linked => self.fs()?.rmdir(&path, false).await?,
            }
            if let Some(root) = root {
                self.smb_release(&root, &path).await?;
            }
            Ok(())
        })
        .await
    }

    /// Drops the reference of `path` to `root`, and the mapping with the
    /// last reference. The last reference goes only once the mapping has:
    /// a removal that failed (WMI down, access denied) leaves the
    /// reference, so that the retry removes the mapping.
    async fn smb_release(&self, root: &str, path: &str) -> Result<(), Error> {
        let store = &self.inner.options.smb_store;
        if store.references(root)? == 1 {
            self.smb_unmap(root).await?;
            tracing::info!(share = %root, "last reference gone: mapping removed");
        }
        store.remove(path)
    }

    /// Removes the SMB mappings no staged volume uses, for a driver to call
    /// when it starts: a reference whose path no longer holds a link (a
    /// crash between removing the link and the mapping, or a volume
    /// unstaged while the references were lost) is dropped, and the
    /// mapping goes with the last one. A mapping a linked path still uses
    /// is never removed. Only mappings the [store](NodeOptions::smb_store)
    /// records are known: with a store in memory there is nothing to do.
    /// Returns the share roots whose mappings were removed.
    pub async fn smb_reconcile(&self) -> Result<Vec<String>, Error> {
        self.bounded("smb_reconcile", async {
            let store = &self.inner.options.smb_store;
            let mut removed = Vec::new();
            for reference in store.references_all()? {
                let _serial = self.smb_lock(&reference.root).await;
                if self.state(&reference.path).await? == MountState::Linked {
                    continue;
                }
                let last = store.references(&reference.root)? == 1;
                self.smb_release(&reference.root, &reference.path).await?;
                tracing::info!(share = %reference.root, path = %reference.path, "SMB reference of a path that holds no link dropped");
                if last {
                    removed.push(reference.root);
                }
            }
            Ok(removed)
        })
        .await
    }

    // ------------------------------------------------------------ iSCSI

    /// Adds the target's portal, checks it offers the target, logs in and
    /// returns the numbers of the target's disks. Already attached: Ok.
    pub async fn iscsi_attach(&self, target: &IscsiTarget) -> Result<Vec<u32>, Error> {
        self.bounded("iscsi_attach", async {
            let iscsi = self.iscsi()?;
            let (portal, port, iqn) = (&target.portal, target.port, &target.iqn);
            iscsi.add_portal(portal, port).await?;
            let offered = iscsi.discover(portal, port).await?;
            if !offered.iter().any(|t| t.eq_ignore_ascii_case(iqn)) {
                return Err(Error::IscsiTargetNotFound {
                    portal: format!("{portal}:{port}"),
                    iqn: iqn.clone(),
                    seen: offered.join(", "),
                });
            }
            if iscsi.disks(portal, port, iqn).await?.is_empty() {
                let login = match &target.auth {
                    IscsiAuth::None => IscsiLogin {
                        auth_type: 0,
                        user: "",
                        secret: "",
                    },
                    IscsiAuth::Chap { username, secret } => IscsiLogin {
                        auth_type: 1,
                        user: username,
                        secret,
                    },
                };
                iscsi.connect(portal, port, iqn, login).await?;
            }
            iscsi.disks(portal, port, iqn).await
        })
        .await
    }

    /// Logs out of the target, and removes its portal when no target
    /// behind it is still connected. Already detached: Ok.
    pub async fn iscsi_detach(&self, target: &IscsiTarget) -> Result<(), Error> {
        self.bounded("iscsi_detach", async {
            let iscsi = self.iscsi()?;
            let (portal, port, iqn) = (&target.portal, target.port, &target.iqn);
            let known = iscsi.portals().await?;
            if !known
                .iter()
                .any(|(a, p)| a.eq_ignore_ascii_case(portal) && *p == port)
            {
                return Ok(());
            }
            if !iscsi.disks(portal, port, iqn).await?.is_empty() {
                iscsi.disconnect(portal, port, iqn).await?;
            }
            for other in iscsi.discover(portal, port).await? {
                if !iscsi.disks(portal, port, &other).await?.is_empty() {
                    return Ok(());
                }
            }
            iscsi.remove_portal(portal, port).await
        })
        .await
    }

    // ------------------------------------------------------------ system

    /// The machine's BIOS serial number (system group).
    pub async fn bios_serial_number(&self) -> Result<String, Error> {
        self.bounded("bios_serial_number", self.system()?.bios_serial_number())
            .await
    }
}

/// An SMB volume's stats from what HostProcess mode read.
#[cfg(feature = "host-process")]
fn host_process_share_stats(view: crate::host_process::smb::ShareView, path: &str) -> ShareStats {
    let usage = view.space.as_ref().ok().map(|space| VolumeUsage {
        total_bytes: space.total,
        used_bytes: space.total.saturating_sub(space.free),
        available_bytes: space.available,
    });
    let unread = view.space.as_ref().err().cloned();
    let trouble = match (&view.root, view.status) {
        (None, _) => Some(format!("{path} reaches no SMB share")),
        (Some(root), None) => Some(format!(
            "the SMB global mapping of {root} is gone: the volume reaches nothing until it is staged again"
        )),
        (Some(root), Some(status)) if status != 0 => Some(format!(
            "the SMB global mapping of {root} is {}: the volume reaches nothing until it is staged again",
            mapping_status_name(status)
        )),
        (Some(root), Some(_)) => unread.as_ref().map(|e| {
            format!("the SMB global mapping of {root} is OK, but the share cannot be read: {e}")
        }),
    };
    ShareStats {
        usage,
        trouble,
        unread,
        mapping_checked: true,
    }
}

/// An SMB volume's stats as the plugin sees the path itself (proxy mode).
fn local_share_stats(path: &str) -> ShareStats {
    #[cfg(windows)]
    let (usage, unread) = match local_space::disk_free_space(path) {
        Ok((total, free, available)) => (
            Some(VolumeUsage {
                total_bytes: total,
                used_bytes: total.saturating_sub(free),
                available_bytes: available,
            }),
            None,
        ),
        Err(e) => (
            None,
            Some(format!("the plugin cannot read the space of {path}: {e}")),
        ),
    };
    #[cfg(not(windows))]
    let (usage, unread) = (
        None,
        Some(format!(
            "the proxy has no call for a share's space, and the plugin reads {path} itself only on Windows"
        )),
    );
    ShareStats {
        usage,
        trouble: None,
        unread,
        mapping_checked: false,
    }
}

/// The server of a share root `\\server\share`, lowercase.
fn smb_server(root: &str) -> &str {
    let rest = root.trim_start_matches('\\');
    rest.split('\\').next().unwrap_or(rest)
}

/// ResizeVolume of volume `id` to `size` bytes (0: the maximum), nothing
/// to grow taken as done.
async fn grow(volume: &VolumeGroup, id: &str, size: i64) -> Result<(), Error> {
    match volume.resize(id, size).await {
        // Windows' answer when the volume already fills its partition. v1.1
        // quotes PowerShell's "The size of the extent is less than the
        // minimum of 1MB."; other wordings leave out the "is".
        Err(e)
            if e.to_string()
                .to_lowercase()
                .contains("less than the minimum") =>
        {
            tracing::debug!(volume = %id, "nothing to grow");
            Ok(())
        }
        other => other,
    }
}

/// Whether a ResizeVolume failed asking for the partition's supported
/// size: v1.3's "error getting sizeMin, sizeMax from volume ...", v1.1's
/// "error getting sizemin,sizemax from mount ..." (csi-proxy
/// `pkg/os/volume/api.go` of v1.3.0 and v1.1.3).
fn no_supported_size(e: &Error) -> bool {
    e.to_string().to_lowercase().contains("sizemin")
}

/// What a disk the proxy partitioned keeps outside its data partition: the
/// protective MBR, the GPT and the MSR before it (16 MiB) and the backup
/// GPT after it (16.5 KiB with 512-byte sectors, 20 KiB with 4 KiB ones).
const GPT_LAYOUT: u64 = (16 << 20) + (20 << 10);

// A `Node` moves between tasks and threads.
const _: fn() = || {
    fn check<T: Send + Sync + Clone>() {}
    check::<Node>();
};

// So do its operations: a plugin serves them on a multi-threaded runtime.
const _: fn(&Node) = |node| {
    fn send<T: Send>(_: T) {}
    send(node.stage_disk(0u32, ""));
    send(node.expand_to("", 0));
};
