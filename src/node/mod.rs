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
//! | | proxy mode | HostProcess mode (feature `host-process`) |
//! |---|---|---|
//! | on a node | [`Node::connect`]`(options)` | `Node::host_process(options)` (Windows) |
//! | in unit tests (feature `mock`) | [`Node::from_mock`]`(&host)`; versions or options: `MockNode::new(&host).versions(..).options(..).build()` | `Node::host_process_with(FakeWindows::new(host), options)`, or over a configured `HostProcess` |
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
//! # One method per CSI call
//!
//! Each CSI node call is one method; what varies between drivers is an
//! option set on the call before `.await` (the method returns a builder
//! that implements [`std::future::IntoFuture`]):
//!
//! ```no_run
//! # use csi_proxy_client::node::{Node, SmbCredentials};
//! # async fn run(node: Node, staging: &str, disk: u32) -> Result<(), csi_proxy_client::Error> {
//! # let user = SmbCredentials::none();
//! node.stage_disk(disk, staging).grow(1 << 30).await?;            // and grow over a larger disk
//! node.smb_stage(r"\\srv\share\pv", staging, &user).create_dir(true).await?;
//! node.expand(staging).size(20 << 30).await?;                     // when the maximum cannot be had
//! node.unstage(staging).offline(true).await?;                     // and take the disk offline
//! # Ok(()) }
//! ```
//!
//! | CSI call | method | effect | already done | refused, nothing changed |
//! |---|---|---|---|---|
//! | NodeStageVolume (disk) | [`Node::stage_disk`] ([`StageDisk`]) | onlines, partitions, formats (NTFS) and mounts the disk's data volume | mounted from that disk: Ok | [`Error::OsDisk`], [`Error::OsDiskUnknown`], [`Error::DifferentDisk`], [`Error::StagedElsewhere`], [`Error::PathInUse`], [`Error::NotEmpty`], [`Error::NoVolume`], [`Error::ReadOnlyDisk`] |
//! | NodeStageVolume (share) | [`Node::smb_stage`] ([`SmbStage`]) | maps the share (a stale mapping made again), links the staging path, counts a reference | same link: Ok, mapping checked | [`Error::PathInUse`], [`Error::NotEmpty`], [`Error::SmbCredentialsConflict`], [`Error::SmbDirectoryMissing`] |
//! | NodePublishVolume | [`Node::publish`] | links the target to the staged volume, replacing kubelet's empty directory | linked to the same volume: Ok | [`Error::NotStaged`] (a plain directory too), [`Error::PathInUse`], [`Error::NotEmpty`] |
//! | NodeUnpublishVolume | [`Node::unpublish`] | removes the link (a share staged at the target, an ephemeral volume, is unstaged) | absent: Ok | [`Error::NotEmpty`] (a plain directory with files) |
//! | NodeUnstageVolume | [`Node::unstage`] ([`Unstage`]) | a disk's volume: flushes, unmounts, removes the staging path; a share's link: removed, the mapping with its last reference; with offline, the disk stays online while another staging path holds it | absent: Ok | [`Error::NotEmpty`], [`Error::PathInUse`] (a file), with offline [`Error::DifferentDisk`], [`Error::OsDisk`], [`Error::OsDiskUnknown`] |
//! | NodeExpandVolume | [`Node::expand`] ([`Expand`]) | rescans, grows the volume to its partition | nothing to grow: Ok | [`Error::DifferentDisk`], [`Error::OsDisk`], [`Error::OsDiskUnknown`] |
//! | NodeGetVolumeStats | [`Node::volume_stats`] ([`VolumeStats`]) | reads the figures and condition of a disk's volume or a share's link, the plugin's own read first (bytes alone: [`Node::usage`]; a share's: [`Node::smb_share_stats`]) | | [`Error::NotStaged`] (nothing at the path) |
//!
//! And for paths and start-up: [`Node::ensure_dir`] (creates the directory
//! and its parents), [`Node::remove`] (a directory tree, or a link, never
//! its target), [`Node::mount_state`], [`Node::find_disk`], and
//! [`Node::smb_reconcile`] (drops references of paths holding no link;
//! the mapping goes with the last).
//!
//! The proxy cannot say where a link points, only which volume is behind a
//! path: [`MountState::Mounted`] is any path with a volume behind it (a
//! mount point, or a link to one), [`MountState::Linked`] a link with no
//! volume the proxy can name (an SMB share). `publish` therefore treats a
//! target as "already published" when the same volume is behind it.

// One file per concern: `Node` and its groups here; `connect` (versions
// and constructors), `fs` (what is at a path), `disks` (finding disks, the
// OS disk), `volumes` (a disk's volume: stage, unstage, expand, usage),
// `publish`, `smb`, `iscsi` and `system`; below them the version adapters
// (`groups`), path rules (`path`), options, the node's records (`records`)
// and the SMB reference store.
mod connect;
mod disks;
mod fs;
mod groups;
mod host_work;
mod identity;
mod iscsi;
mod local_space;
mod options;
mod path;
mod path_claim;
mod protocol;
#[cfg(test)]
mod protocol_model;
#[cfg(test)]
mod protocol_model_smb;
mod publish;
mod records;
mod removal;
mod smb;
mod smb_store;
mod smb_view;
mod stats;
mod store;
mod system;
mod volumes;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tracing::Instrument;

#[cfg(feature = "mock")]
pub use connect::MockNode;
pub use disks::{BusType, DiskInfo, DiskPredicate, DiskSelector, PartitionStyle};
use groups::{DiskGroup, FilesystemGroup, IscsiGroup, SmbGroup, SystemGroup, VolumeGroup};
pub use iscsi::{IscsiAuth, IscsiTarget};
pub use options::{
    DEFAULT_DEADLINE, DEFAULT_FIND_DISK_INTERVAL, DEFAULT_FIND_DISK_TIMEOUT, DEFAULT_FORMAT_SETTLE,
    DEFAULT_MAX_CONCURRENT_FORMATS, DEFAULT_SMB_SETTLE, DEFAULT_VOLUME_ARRIVAL, NodeOptions,
    NodeVersions,
};
pub use records::NodeRecords;
pub use smb::{ShareStats, SmbCredentials, SmbStage};
pub use smb_store::SmbStore;
pub use stats::{InodeUsage, VolumeCondition, VolumeStats};
pub use volumes::{Expand, StageDisk, Unstage};

use crate::Error;

/// A boxed operation future: what the builders' `.await` runs
/// ([`StageDisk`], [`Unstage`], [`Expand`], [`SmbStage`]).
type Operation<'a, T> = std::pin::Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 'a>>;

/// The span of a node operation: named `node`, with the operation's name
/// in `operation`; the spans of its proxy calls are its children.
fn operation_span(operation: &'static str) -> tracing::Span {
    tracing::info_span!("node", otel.name = operation, operation)
}

/// Whether a call's failure leaves its outcome at the host unknown: the
/// host was not reached or did not answer in time (UNAVAILABLE,
/// DEADLINE_EXCEEDED). Such a failure says nothing about the host's
/// state: a change may still land, and nothing is concluded from it.
fn outcome_unknown(e: &Error) -> bool {
    matches!(
        e.kind(),
        crate::ErrorKind::Unavailable | crate::ErrorKind::TimedOut
    )
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

/// A disk known only by its number: staged as it is, its place not
/// checked ([`Node::stage_disk`]).
impl From<u32> for DiskInfo {
    fn from(number: u32) -> DiskInfo {
        DiskInfo::new(number)
    }
}

impl From<&DiskInfo> for DiskInfo {
    fn from(disk: &DiskInfo) -> DiskInfo {
        disk.clone()
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
    /// How the node reads the host without the proxy (`smb_view`).
    view: smb_view::HostView,
    /// Volume v2alpha1, for its one call that finds the volume of `C:\`
    /// (the OS disk through the proxy); `None` while not served or not
    /// reached, dialled again when next needed (`dials_os_volume`).
    os_volume: Mutex<Option<VolumeGroup>>,
    /// Whether a missing `os_volume` is dialled again when needed (a node
    /// over the proxy's endpoints; a mock has nothing more to dial).
    dials_os_volume: bool,
    /// The OS disk's number through the proxy, once known: it does not
    /// change while the node runs. Not kept while unknown: asked again.
    os_disk: tokio::sync::OnceCell<u32>,
    /// Volumes known to lie on a disk other than the OS disk (ids in lower
    /// case): staged by this node, or checked once. A volume id names one
    /// partition, which never moves to another disk, and the OS disk is
    /// never detached while the node runs, so the answer cannot go stale.
    data_volumes: Mutex<HashSet<String>>,
    /// HostProcess mode: the backend, for what the proxy's API lacks
    /// (`IsSystem`, `IsBoot`, `IsReadOnly`, `SetAttributes`).
    #[cfg(feature = "host-process")]
    host_process: Option<Arc<crate::host_process::HostProcess>>,
    /// Formats allowed at once ([`NodeOptions::max_concurrent_formats`]).
    format_permits: tokio::sync::Semaphore,
    /// The tasks this node's operations run on, stopped together by
    /// [`Node::kill`].
    tasks: Arc<Tasks>,
}

/// The tasks of a node's operations (`Node::spawn`), and whether the node
/// was killed.
#[derive(Default)]
struct Tasks {
    killed: AtomicBool,
    running: Mutex<Vec<tokio::task::AbortHandle>>,
}

impl Tasks {
    fn killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }
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

impl Node {
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
        if self.inner.tasks.killed() {
            return Err(self.killed());
        }
        group.as_ref().ok_or_else(|| self.missing(name))
    }

    /// What a killed node answers ([`Node::kill`]).
    fn killed(&self) -> Error {
        Error::Connect {
            endpoint: "this node".into(),
            source: std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "killed (Node::kill)",
            ),
        }
    }

    /// Runs `work` on a task of its own, which goes on if its caller gives
    /// up and stops with the node ([`Node::kill`]).
    fn spawn<T: Send + 'static>(
        &self,
        work: impl Future<Output = T> + Send + 'static,
    ) -> tokio::task::JoinHandle<T> {
        let tasks = self.inner.tasks.clone();
        let task = tokio::spawn(async move {
            if tasks.killed() {
                std::future::pending::<()>().await;
            }
            work.await
        });
        let mut running = self
            .inner
            .tasks
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        running.retain(|t| !t.is_finished());
        running.push(task.abort_handle());
        // Killed meanwhile: the task never runs, and what it owns goes.
        if self.inner.tasks.killed() {
            task.abort();
        }
        task
    }

    /// The answer of a task [`Node::spawn`] ran: its panic resumed here;
    /// stopped with the node ([`Node::kill`]), a killed node's answer.
    fn joined<T>(
        &self,
        joined: Result<Result<T, Error>, tokio::task::JoinError>,
    ) -> Result<T, Error> {
        match joined {
            Ok(result) => result,
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(_) => Err(self.killed()),
            },
        }
    }

    /// Ends this node as its process's death would, for tests of what a
    /// driver's restart leaves (the next process is another `Node` over
    /// the same records): every operation it runs stops at the await it
    /// is at, its claims go (their OS file locks with them), and each host
    /// call it had sent lands or not as the host has it (MockHost and the
    /// HostProcess fake finish what they were sent). Every later call on
    /// it, and on its clones, fails with [`Error::Connect`] before reaching
    /// the host, as a dead plugin's socket would.
    ///
    /// The test's OS process lives on: what belongs to it rather than to
    /// the node stays, namely a directory store's epoch (so the killed
    /// node's records name a writer still running, which only error
    /// messages say) and how long the process has watched a record
    /// pending (so the next node may wait less than a real new process,
    /// which starts watching afresh, would: a harder test, not an easier
    /// one).
    #[cfg(feature = "mock")]
    pub fn kill(&self) {
        let tasks = &self.inner.tasks;
        tasks.killed.store(true, Ordering::SeqCst);
        let mut running = tasks.running.lock().unwrap_or_else(|p| p.into_inner());
        for task in running.drain(..) {
            task.abort();
        }
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
}

// A `Node` moves between tasks and threads.
const _: fn() = || {
    fn check<T: Send + Sync + Clone>() {}
    check::<Node>();
};

// So do its operations: a plugin serves them on a multi-threaded runtime.
const _: fn(&Node) = |node| {
    use std::future::IntoFuture;
    fn send<T: Send>(_: T) {}
    send(node.stage_disk(0u32, "").into_future());
    send(node.unstage("").into_future());
    send(node.expand("").into_future());
    send(
        node.smb_stage("", "", &SmbCredentials::none())
            .into_future(),
    );
};
