//! [`NodeOptions`] and [`NodeVersions`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use super::{NodeRecords, SmbStore};
use crate::{ApiVersion, ConnectOptions, Error, GroupVersion};

/// How [`Node::connect`](super::Node::connect) finds the proxy and how long
/// operations may take.
///
/// ```
/// use std::time::Duration;
/// use csi_proxy_client::GroupVersion;
/// use csi_proxy_client::node::NodeOptions;
///
/// let options = NodeOptions::default()
///     .socket_dir("/run/csi-proxy")
///     .pin(GroupVersion::parse("disk/v1beta3").expect("a served group version"))
///     .deadline(Duration::from_secs(30));
/// # let _ = options;
/// ```
#[derive(Debug, Clone)]
pub struct NodeOptions {
    pub(crate) socket_dir: Option<PathBuf>,
    pub(crate) allow_alpha: bool,
    pub(crate) pinned: BTreeMap<&'static str, &'static str>,
    pub(crate) iscsi: bool,
    pub(crate) system: bool,
    pub(crate) connect: ConnectOptions,
    pub(crate) deadline: Duration,
    pub(crate) find_disk_interval: Duration,
    pub(crate) find_disk_timeout: Duration,
    pub(crate) smb_store: SmbStore,
    pub(crate) records: NodeRecords,
    pub(crate) max_concurrent_formats: usize,
    pub(crate) local_root: Option<PathBuf>,
    pub(crate) smb_settle: Duration,
    pub(crate) format_settle: Duration,
    pub(crate) volume_arrival: Duration,
    pub(crate) allow_unknown_os_disk: bool,
}

/// Default bound of one [`Node`](super::Node) operation: 2 minutes.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(120);
/// Default pause between two looks for a disk in `find_disk`: 1 second.
pub const DEFAULT_FIND_DISK_INTERVAL: Duration = Duration::from_secs(1);
/// Default time `find_disk` waits for a disk to appear: 2 minutes.
pub const DEFAULT_FIND_DISK_TIMEOUT: Duration = Duration::from_secs(120);
/// Default number of formats a `Node` runs at once: 2, as
/// azuredisk-csi-driver's `--max-concurrent-format`.
pub const DEFAULT_MAX_CONCURRENT_FORMATS: usize = 2;
/// Default time a stage of a share whose mapping is in use gives the
/// share to answer (and its mapping to be OK) before it fails
/// UNAVAILABLE, having removed nothing: 10 seconds.
pub const DEFAULT_SMB_SETTLE: Duration = Duration::from_secs(10);
/// Default time a format sent is given to end at the host before a volume
/// still showing no file system is taken as not formatted by it: 10
/// minutes. Both csi-proxy releases and HostProcess mode send a quick
/// format (`Format-Volume` in v1.1, `MSFT_Volume.Format` with `Full`
/// false in v1.3), which ends in seconds on any size of disk.
pub const DEFAULT_FORMAT_SETTLE: Duration = Duration::from_secs(600);
/// Default time a disk this node brought online is given to list its
/// volumes before an empty listing is taken as a blank disk: 5 seconds.
/// Not measured on Windows (see [`NodeOptions::volume_arrival`]).
pub const DEFAULT_VOLUME_ARRIVAL: Duration = Duration::from_secs(5);

impl Default for NodeOptions {
    /// The default endpoints, no alpha versions, no iSCSI or system group,
    /// [`DEFAULT_DEADLINE`], [`DEFAULT_FIND_DISK_INTERVAL`],
    /// [`DEFAULT_FIND_DISK_TIMEOUT`], SMB references in memory,
    /// [`DEFAULT_MAX_CONCURRENT_FORMATS`].
    fn default() -> Self {
        Self {
            socket_dir: None,
            allow_alpha: false,
            pinned: BTreeMap::new(),
            iscsi: false,
            system: false,
            connect: ConnectOptions::default(),
            deadline: DEFAULT_DEADLINE,
            find_disk_interval: DEFAULT_FIND_DISK_INTERVAL,
            find_disk_timeout: DEFAULT_FIND_DISK_TIMEOUT,
            smb_store: SmbStore::default(),
            records: NodeRecords::default(),
            max_concurrent_formats: DEFAULT_MAX_CONCURRENT_FORMATS,
            local_root: None,
            smb_settle: DEFAULT_SMB_SETTLE,
            format_settle: DEFAULT_FORMAT_SETTLE,
            volume_arrival: DEFAULT_VOLUME_ARRIVAL,
            allow_unknown_os_disk: false,
        }
    }
}

impl NodeOptions {
    /// Looks for the sockets `csi-proxy-<group>-<version>.sock` in `dir`
    /// instead of the default endpoints (the proxy's named pipes on
    /// Windows, `$CSI_PROXY_SOCKET_DIR` elsewhere).
    #[must_use]
    pub fn socket_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.socket_dir = Some(dir.into());
        self
    }

    /// Also considers alpha versions (`v2alpha1` before `v1`); default off.
    #[must_use]
    pub fn allow_alpha(mut self, allow: bool) -> Self {
        self.allow_alpha = allow;
        self
    }

    /// Uses only this version for its group (`disk/v1beta2`: disk at
    /// `v1beta2`); `connect` fails with [`Error::UnsupportedVersion`] when the
    /// node layer does not speak it (e.g. `disk/v1alpha1`).
    #[must_use]
    pub fn pin(mut self, version: GroupVersion) -> Self {
        self.pinned.insert(version.group, version.version);
        self
    }

    /// Also connects the iSCSI group (its versions are all alpha); default off.
    #[must_use]
    pub fn iscsi(mut self, use_it: bool) -> Self {
        self.iscsi = use_it;
        self
    }

    /// Also connects the system group (its one version is alpha); default off.
    #[must_use]
    pub fn system(mut self, use_it: bool) -> Self {
        self.system = use_it;
        self
    }

    /// Dial and per-call timeouts of the underlying clients.
    #[must_use]
    pub fn connect_options(mut self, options: ConnectOptions) -> Self {
        self.connect = options;
        self
    }

    /// Bound of every operation (default [`DEFAULT_DEADLINE`]); past it the
    /// operation fails with [`Error::DeadlineExceeded`]. At most
    /// [`MAX_DURATION`](crate::MAX_DURATION); longer is clamped.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline.min(crate::MAX_DURATION);
        self
    }

    /// Pause between two looks of `find_disk` (default
    /// [`DEFAULT_FIND_DISK_INTERVAL`]; clamped to [`MIN_PERIOD`](crate::MIN_PERIOD)
    /// ..= [`MAX_DURATION`](crate::MAX_DURATION)).
    #[must_use]
    pub fn find_disk_interval(mut self, interval: Duration) -> Self {
        self.find_disk_interval = crate::durations::clamp_period(interval);
        self
    }

    /// How long `find_disk` waits for the disk (default
    /// [`DEFAULT_FIND_DISK_TIMEOUT`]; at most [`MAX_DURATION`](crate::MAX_DURATION),
    /// longer is clamped).
    #[must_use]
    pub fn find_disk_timeout(mut self, timeout: Duration) -> Self {
        self.find_disk_timeout = timeout.min(crate::MAX_DURATION);
        self
    }

    /// How many volumes `stage_disk` formats at once (default
    /// [`DEFAULT_MAX_CONCURRENT_FORMATS`]; 0 is taken as 1). A format
    /// holds its place until the host answers, also after its caller has
    /// given up: formats of large disks take minutes and go on at the host.
    #[must_use]
    pub fn max_concurrent_formats(mut self, formats: usize) -> Self {
        self.max_concurrent_formats = formats.max(1);
        self
    }

    /// Where SMB share references are kept (default in memory; a driver
    /// that may restart with volumes staged gives a directory it owns).
    #[must_use]
    pub fn smb_store(mut self, store: SmbStore) -> Self {
        self.smb_store = store;
        self
    }

    /// How long a stage of a share whose global mapping serves volumes
    /// staged on this node waits for the share to answer before it fails
    /// [`Error::SmbShareUnavailable`](crate::Error::SmbShareUnavailable)
    /// (UNAVAILABLE; kubelet retries); default [`DEFAULT_SMB_SETTLE`].
    /// Through the proxy that is: the share root read by the node answers
    /// (else nothing is sent, as csi-proxy's `NewSmbGlobalMapping` would
    /// remove the mapping whose root fails its check) and the mapping is
    /// OK (Windows answers 85 while it is not). A new stage whose link
    /// cannot reach the share waits as long before failing the same way.
    ///
    /// No value of it ever leads to a removal: a mapping in use is never
    /// removed or made again by a stage, whatever its status (issue 42,
    /// findings 1 and 12; docs/safety.md "SMB mappings",
    /// `an_outage_never_removes_a_mapping_in_use`,
    /// `a_mapping_left_disconnected_by_a_restart_is_never_removed_in_use`).
    /// A mapping no staged volume uses is made again without waiting for
    /// it; in HostProcess mode a `Connecting` or `Reconnecting` one is
    /// waited for within the operation's deadline and only a `Disconnected`
    /// or `Unavailable` one is made again. One window stays in proxy mode:
    /// an outage that starts between the node's read of the root and the
    /// proxy's own check still makes csi-proxy remove the mapping (it has
    /// no call that maps without the check).
    #[must_use]
    pub fn smb_settle(mut self, settle: Duration) -> Self {
        self.smb_settle = settle.min(crate::MAX_DURATION);
        self
    }

    /// With `true`, accepts the risk of changing a disk that may be the OS
    /// disk when the node cannot know which disk that is (a csi-proxy
    /// before v1.1 serves no volume v2alpha1, or its lookup failed): a
    /// selector that matches Windows' own disk then hands it to a pod.
    /// `false`, the default: such a call runs only when the disk shows no
    /// volume, or holds a volume this node staged (docs/safety.md, "The
    /// OS disk"); otherwise [`Error::OsDiskUnknown`](crate::Error::OsDiskUnknown).
    #[must_use]
    pub fn allow_unknown_os_disk(mut self, allow: bool) -> Self {
        self.allow_unknown_os_disk = allow;
        self
    }

    /// How long a format sent is given to end at the host (default
    /// [`DEFAULT_FORMAT_SETTLE`]). A format whose answer was lost (a
    /// request timeout, a restarted proxy, a plugin that died) may still
    /// be running: until this long after it was sent, a volume showing no
    /// file system is [`Error::FormatPending`](crate::Error::FormatPending),
    /// never formatted again; after it, the host has ended that format
    /// without one, and the volume is checked and formatted as a blank
    /// one. Set it above the longest format the host can run. Time is
    /// counted both by the wall clock from the send and by this process's
    /// monotonic clock from when it first found the format pending: the
    /// lesser counts, so a step of the wall clock never shortens it (a
    /// restarted plugin waits the settle time again).
    ///
    /// It is also the time any other host call sent and not answered (a
    /// mount, a link, a removal) is given to land, counted from the
    /// deadline of the operation that sent it (the later of the writer's
    /// and this node's): until then the opposite operation on its path,
    /// disk or share fails [`Error::PathPending`](crate::Error::PathPending)
    /// or [`Error::RemovalPending`](crate::Error::RemovalPending).
    #[must_use]
    pub fn format_settle(mut self, settle: Duration) -> Self {
        self.format_settle = settle.min(crate::MAX_DURATION);
        self
    }

    /// Proxy mode: how long after this node brings a disk online (a stage
    /// of a disk Windows' SAN policy left offline) its volumes are given
    /// to be listed (default [`DEFAULT_VOLUME_ARRIVAL`]). Windows mounts
    /// a disk's volumes some time after the disk comes online, and the
    /// proxy cannot show partitions: in that time an empty listing is no
    /// proof of a blank disk, and a volume listed after `PartitionDisk`
    /// (which does nothing on a partitioned disk) would be taken for the
    /// one it made. So until this long after the online was answered
    /// (if it was not, after the settle time of a call that may still
    /// land, [`NodeOptions::format_settle`]), no `PartitionDisk` is sent
    /// to that disk: the stage waits, or fails
    /// [`Error::VolumesPending`](crate::Error::VolumesPending) when the
    /// wait is longer than this. Set it above the longest time your hosts
    /// take to list a disk's volumes once it is online. The default is
    /// not measured on Windows. A disk found online when it is first
    /// looked at (onlined by someone else moments before) is not covered:
    /// see `docs/safety.md`. HostProcess mode reads the disk's sectors
    /// instead and does not wait.
    #[must_use]
    pub fn volume_arrival(mut self, arrival: Duration) -> Self {
        self.volume_arrival = arrival.min(crate::MAX_DURATION);
        self
    }

    /// Where the node keeps what it must remember past one call (see
    /// [`NodeRecords`]); by default this process's memory, shared by its
    /// `Node`s of the same host.
    #[must_use]
    pub fn records(mut self, records: NodeRecords) -> Self {
        self.records = records;
        self
    }

    /// The local directory that holds what the node's `C:\` holds, as
    /// this process sees it, for the volume stats read locally
    /// ([`Node::usage`](super::Node::usage),
    /// [`Node::smb_share_stats`](super::Node::smb_share_stats)). Not
    /// needed on Windows, where a plugin reads the node's paths as they
    /// are (the default). On other systems, with no root, stats go through
    /// the proxy; a plugin run against the simulated node is given the
    /// simulated `C:` volume's directory
    /// ([`Host::host_path`](crate::host::Host::host_path) of `C:\`, under
    /// the features `server`/`mock`), so that it reads its paths through
    /// the same local read as on Windows.
    #[must_use]
    pub fn local_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.local_root = Some(root.into());
        self
    }
}

/// The version chosen for each group; `None` for a group not available.
///
/// Displays as `disk=v1 volume=v1 filesystem=v1 smb=v1 iscsi=none
/// system=none`, and parses from that form (groups left out are `None`):
///
/// ```
/// use csi_proxy_client::node::NodeVersions;
/// let v: NodeVersions = "disk=v1beta1 volume=v1beta1 filesystem=v1beta1 smb=v1beta1".parse()?;
/// assert_eq!(v.disk.unwrap().to_string(), "v1beta1");
/// assert!(v.iscsi.is_none());
/// # Ok::<(), csi_proxy_client::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeVersions {
    /// The disk group.
    pub disk: Option<ApiVersion>,
    /// The volume group.
    pub volume: Option<ApiVersion>,
    /// The filesystem group.
    pub filesystem: Option<ApiVersion>,
    /// The smb group.
    pub smb: Option<ApiVersion>,
    /// The iscsi group.
    pub iscsi: Option<ApiVersion>,
    /// The system group.
    pub system: Option<ApiVersion>,
}

impl NodeVersions {
    /// Every group at its newest non-alpha version (`v1`), iSCSI at
    /// `v1alpha2` and system at `v1alpha1`.
    pub fn newest() -> Self {
        "disk=v1 volume=v1 filesystem=v1 smb=v1 iscsi=v1alpha2 system=v1alpha1"
            .parse()
            .expect("valid versions")
    }

    pub(crate) fn slot(&mut self, group: &str) -> Option<&mut Option<ApiVersion>> {
        Some(match group {
            "disk" => &mut self.disk,
            "volume" => &mut self.volume,
            "filesystem" => &mut self.filesystem,
            "smb" => &mut self.smb,
            "iscsi" => &mut self.iscsi,
            "system" => &mut self.system,
            _ => return None,
        })
    }
}

impl fmt::Display for NodeVersions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let groups = [
            ("disk", self.disk),
            ("volume", self.volume),
            ("filesystem", self.filesystem),
            ("smb", self.smb),
            ("iscsi", self.iscsi),
            ("system", self.system),
        ];
        for (i, (group, version)) in groups.into_iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            match version {
                Some(v) => write!(f, "{sep}{group}={v}")?,
                None => write!(f, "{sep}{group}=none")?,
            }
        }
        Ok(())
    }
}

impl FromStr for NodeVersions {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let mut out = NodeVersions::default();
        for pair in text.split([' ', ',']).filter(|p| !p.is_empty()) {
            let invalid = || Error::InvalidVersion {
                input: pair.to_string(),
            };
            let (group, version) = pair.split_once('=').ok_or_else(invalid)?;
            let slot = out.slot(group).ok_or_else(invalid)?;
            *slot = match version {
                "none" => None,
                v => Some(v.parse()?),
            };
        }
        Ok(out)
    }
}
