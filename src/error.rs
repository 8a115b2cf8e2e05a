//! The crate's error type.

use std::time::Duration;

pub mod codes;
pub use codes::HostCode;

/// Everything that can go wrong talking to the CSI Proxy, or doing a
/// node operation over it.
///
/// The variants come in two kinds. Those of reaching the proxy
/// (`InvalidAddress` to `Rpc`) name the endpoint (pipe, socket path or
/// address text) and keep the underlying error as their
/// [`source`](std::error::Error::source); an RPC the proxy answered with
/// an error is [`Error::Rpc`] ([`Error::code`], [`Error::status`]). The
/// node layer's outcomes (`InvalidPath` to `ReadOnlyDisk`) say what it
/// found on the node: no such disk, a path in use, a volume not staged,
/// and so on. `InvalidVersion` is a version text that does not parse.
///
/// They are one type because one `node::Node` call fails either way: a
/// stage may end in a broken pipe or in a disk that is not there, and a
/// caller matching two nested types would write longer matches for the
/// same decisions. To decide what to do (retry, treat as done, report),
/// match [`Error::kind`], which classifies both kinds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The address text is not one this crate understands.
    #[error("invalid CSI Proxy address {input:?}: {reason}")]
    InvalidAddress {
        /// The text as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },

    /// There is no default endpoint on this platform (on Unix,
    /// `CSI_PROXY_SOCKET_DIR` is not set).
    #[error("no default endpoint for csi-proxy-{group}-{version}: {reason}")]
    NoDefaultEndpoint {
        /// API group.
        group: String,
        /// API version.
        version: String,
        /// Why there is none.
        reason: String,
    },

    /// Opening the pipe or socket failed (missing, refused, not permitted, timed out).
    #[error("cannot connect to {endpoint}")]
    Connect {
        /// The pipe or socket.
        endpoint: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },

    /// Every instance of the named pipe stayed busy until the connect timeout.
    #[error("named pipe {endpoint} stayed busy for {waited:?} (every instance in use)")]
    PipeBusy {
        /// The pipe.
        endpoint: String,
        /// How long the client retried.
        waited: Duration,
    },

    /// The HTTP/2 connection failed or could not be set up.
    #[error("transport error on {endpoint}")]
    Transport {
        /// The pipe or socket.
        endpoint: String,
        /// What failed underneath.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A call took longer than the request timeout.
    #[error("{method} on {endpoint} timed out after {after:?}")]
    Timeout {
        /// The pipe or socket.
        endpoint: String,
        /// The gRPC method path.
        method: String,
        /// The request timeout.
        after: Duration,
    },

    /// The proxy answered an RPC with an error status.
    #[error(transparent)]
    Rpc(Box<RpcError>),

    /// A path given to the node layer is not one it will send to the proxy
    /// (relative, with `..`, UNC for a local target, ...); nothing was called.
    #[error("refused path \"{path}\": {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// Why it is refused.
        reason: String,
    },

    /// The node serves no version of an API group the operation needs.
    #[error("the node serves no usable version of the {group} API (tried: {tried})")]
    GroupUnavailable {
        /// The API group.
        group: &'static str,
        /// The versions tried, newest first (`none` if none was allowed).
        tried: String,
    },

    /// The node layer does not speak this version of the group.
    #[error("the node layer does not support {group} {version}")]
    UnsupportedVersion {
        /// The API group.
        group: &'static str,
        /// The version asked for.
        version: String,
    },

    /// `find_disk` did not see a matching disk before its timeout.
    #[error("no disk with {selector} after {waited:?}; the node listed: {seen}")]
    DiskNotFound {
        /// What was looked for.
        selector: String,
        /// How long it looked.
        waited: Duration,
        /// The disks the node listed at the last look.
        seen: String,
    },

    /// The disk has no volume to stage, even after partitioning; nothing changed.
    #[error("disk {disk} has no data volume")]
    NoVolume {
        /// The disk number.
        disk: u32,
    },

    /// A volume or disk shows no file system, but the node cannot show that
    /// it holds nothing, so it is neither formatted nor initialised;
    /// nothing changed. In HostProcess mode its first or last MiB holds a
    /// known signature (BitLocker, ext4, XFS, LUKS, an md RAID superblock,
    /// DRBD meta-data, an LDM database, ...); through the proxy, which
    /// cannot read sectors, the node did not create its partition.
    #[error(
        "disk {disk}: {volume} may hold data, so it is not formatted: {why} (check what it holds; wipe it only if it is meant to be blank)"
    )]
    MayHoldData {
        /// The disk number.
        disk: u32,
        /// The volume id, or `the whole disk` for a RAW disk.
        volume: String,
        /// What the node saw.
        why: String,
    },

    /// An earlier `FormatVolume` of the volume was sent and its outcome is
    /// not known yet (its call timed out or its connection, the proxy or
    /// the plugin ended while the host may still be formatting); the
    /// volume is not formatted again until the host shows it formatted.
    /// Retry later.
    #[error(
        "volume {volume}: a format sent earlier ({since}) has not been seen to end; not formatting again, retry later"
    )]
    FormatPending {
        /// The volume id.
        volume: String,
        /// What the record of that format says (when, which process).
        since: String,
    },

    /// An earlier operation on the path (kubelet dropped it, or its
    /// process died) may still change it at the host: one that makes
    /// (a stage, a publish) before one that removes, or the other way;
    /// nothing is done until the host has had the settle time to end it.
    /// Retry later.
    #[error(
        "{path}: an earlier {earlier} of this path ({since}) may still land at the host; retry later"
    )]
    PathPending {
        /// The path.
        path: String,
        /// What that operation did: `stage or publish`, `unstage or unpublish`.
        earlier: String,
        /// When it was sent and by which process, as its record says.
        since: String,
    },

    /// Proxy mode: this node brought disk `disk` online moments ago, and
    /// Windows may not list its volumes yet: its empty listing is not
    /// taken as a blank disk, and nothing is sent to it until the
    /// volumes have had their time to arrive
    /// ([`NodeOptions::volume_arrival`](crate::node::NodeOptions::volume_arrival)).
    /// Retry later.
    #[error(
        "disk {disk} was brought online ({since}) and may not list its volumes yet: not partitioning it, retry later"
    )]
    VolumesPending {
        /// The disk number.
        disk: u32,
        /// The online's record: when it was sent or answered, by which
        /// process.
        since: String,
    },

    /// A removal the node sent earlier from this path, disk or share
    /// (`Rmdir`, `UnmountVolume`, an offline, `RemoveSmbGlobalMapping`)
    /// did not answer, and may still land at the host, where it would
    /// remove what this operation makes; nothing is done until the host
    /// has had the settle time to end it. Retry later.
    #[error("{what}: a removal sent earlier ({since}) may still land at the host; retry later")]
    RemovalPending {
        /// What it removes from: `path <path>`, `disk <number>`,
        /// `share <root>`.
        what: String,
        /// The call, when it was sent and by which process, as its record
        /// says.
        since: String,
    },

    /// A directory the operation would replace holds files; nothing changed.
    #[error("{path} is a directory that is not empty")]
    NotEmpty {
        /// The path.
        path: String,
    },

    /// The path already holds another volume or a link; nothing changed.
    #[error("{path} is already in use: {holds}")]
    PathInUse {
        /// The path.
        path: String,
        /// What is there (`volume \\?\Volume{..}\`, `a link`, ...).
        holds: String,
    },

    /// A publish found no staged volume at the staging path, or
    /// [`Node::volume_stats`](crate::node::Node::volume_stats) nothing at
    /// the path; nothing changed.
    #[error("nothing is staged at {path}")]
    NotStaged {
        /// The staging path.
        path: String,
    },

    /// A node operation did not finish within its deadline.
    #[error("{operation} did not finish within {after:?}")]
    DeadlineExceeded {
        /// The node operation (`stage_disk`, ...).
        operation: &'static str,
        /// The deadline.
        after: Duration,
    },

    /// The node's records ([`NodeRecords`](crate::node::NodeRecords))
    /// could not be read or written.
    #[error("node records {path}")]
    Store {
        /// The file or directory.
        path: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },

    /// The SMB reference store could not be read or written.
    #[error("SMB reference store {path}")]
    SmbStore {
        /// The file or directory.
        path: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },

    /// The share cannot be mapped with the volume's account: the share, or
    /// another share of its server, is mapped under another account for
    /// volumes staged on this node, and Windows keeps one account per SMB
    /// server (error 1219); nothing changed.
    #[error("SMB share {share} cannot be mapped as {user:?}: {held_by}")]
    SmbCredentialsConflict {
        /// The share root, `\\server\share`.
        share: String,
        /// The account the volume asked for (empty: none).
        user: String,
        /// Which mappings hold the server, under which account.
        held_by: String,
    },

    /// The share is mapped for volumes staged on this node with other
    /// credentials than the volume's (the same account, another password;
    /// or credentials this node did not keep): Windows would reuse the
    /// mapping whatever the password, so the volume would reach the share
    /// on credentials it does not hold. Nothing changed.
    #[error(
        "SMB share {share} is mapped for staged volumes with other credentials than the ones given for {user:?}: {why}"
    )]
    SmbCredentialsDiffer {
        /// The share root, `\\server\share`.
        share: String,
        /// The account the volume asked for (empty: none).
        user: String,
        /// What the node knows of the mapping's credentials.
        why: String,
    },

    /// The share's mapping serves volumes staged on this node and cannot
    /// be shown reachable now (an outage, a mapping not OK): the stage
    /// sent nothing the host would answer by removing the mapping, and
    /// can be retried.
    #[error("SMB share {share} is unavailable: {why}")]
    SmbShareUnavailable {
        /// The share root, `\\server\share`.
        share: String,
        /// What the node saw.
        why: String,
    },

    /// The directory an SMB volume names below its share does not exist;
    /// the staging path was left as it was found (the link made to the
    /// directory removed, the mapping too when no staged volume uses it).
    #[error(
        "SMB directory {remote} does not exist on its share (staging path {path}): \
         create it on the share, or have the driver create it"
    )]
    SmbDirectoryMissing {
        /// The share path asked for, `\\server\share\dir`.
        remote: String,
        /// The staging path.
        path: String,
    },

    /// A disk of the iSCSI target holds a volume still staged by this node:
    /// logging out would take the disk from under the volume (unflushed
    /// writes lost, the pod's I/O failing). Unstage it first.
    #[error(
        "iSCSI target {iqn} is in use: its disk holds the volume staged at {path}; unstage it before detaching the target"
    )]
    IscsiTargetInUse {
        /// The target asked to detach.
        iqn: String,
        /// A staging path holding a volume of one of its disks.
        path: String,
    },

    /// The iSCSI portal does not offer the target.
    #[error("portal {portal} does not offer iSCSI target {iqn} (it offers: {seen})")]
    IscsiTargetNotFound {
        /// `address:port`.
        portal: String,
        /// The target asked for.
        iqn: String,
        /// The targets the portal offered.
        seen: String,
    },

    /// The node layer never changes the disk that holds Windows or boots
    /// the node; nothing was changed.
    #[error(
        "refusing to {operation} disk {disk}: it is the OS disk ({why}); the node layer never initialises, partitions, formats, brings online or offline, mounts or unmounts it"
    )]
    OsDisk {
        /// The disk number.
        disk: u32,
        /// What was asked (`stage`, `unstage`, `expand`).
        operation: &'static str,
        /// How the node knows (`MSFT_Disk.IsSystem/IsBoot`, the volume of `C:\`).
        why: String,
    },

    /// Windows refused a write to the disk because it is read-only
    /// (typically its SAN policy left a newly attached disk read-only).
    #[error(
        "disk {disk} is read-only (Windows' SAN policy keeps new shared disks offline and read-only; make it writable, e.g. Set-Disk -IsReadOnly $false, or use HostProcess mode, which does): {cause}"
    )]
    ReadOnlyDisk {
        /// The disk number.
        disk: u32,
        /// The refused call's error.
        cause: String,
    },

    /// The OS disk cannot be known on this node (a csi-proxy that serves no
    /// volume v2alpha1, before v1.1, or a lookup that failed), and nothing
    /// shows that disk `disk` is not it: a call that changes a disk is
    /// refused rather than risk Windows' own. Nothing was changed.
    #[error(
        "refusing to {operation} disk {disk}: the OS disk cannot be known on this node ({why}) and nothing shows disk {disk} is not it; serve csi-proxy v1.1 or later (volume v2alpha1), or accept the risk with NodeOptions::allow_unknown_os_disk"
    )]
    OsDiskUnknown {
        /// The disk number.
        disk: u32,
        /// What was asked (`stage`, `unstage`, `expand`).
        operation: &'static str,
        /// Why the OS disk cannot be known.
        why: String,
    },

    /// The staging path was staged from another disk than the one the call
    /// reaches now (a LUN reused after a detach, a stale attachment):
    /// nothing was changed.
    #[error(
        "refusing to {operation} {path}: it was staged from {recorded}, but the call reaches {found}"
    )]
    DifferentDisk {
        /// The staging path.
        path: String,
        /// What was asked (`stage`, `unstage`, `expand`).
        operation: &'static str,
        /// The disk and volume the path was staged from.
        recorded: Box<str>,
        /// The disk or volume the call reaches now.
        found: Box<str>,
    },

    /// The disk's volume is already staged at another path: one volume is
    /// never staged at two paths. Nothing was changed.
    #[error("refusing to stage disk {disk} at {path}: it is already staged at {other}")]
    StagedElsewhere {
        /// The disk number.
        disk: u32,
        /// The staging path asked for.
        path: String,
        /// The path it is staged at.
        other: String,
    },

    /// More than one disk matches the selector: none is chosen.
    #[error("more than one disk matches {selector}: {candidates}")]
    AmbiguousDisk {
        /// The selector.
        selector: String,
        /// The disks that match, described.
        candidates: String,
    },

    /// A text is not an API version (`v1`, `v1beta2`, ...).
    #[error(
        "invalid API version {input:?}: expected v<major>, v<major>alpha<n> or v<major>beta<n> with numbers from 1 and no leading zeros"
    )]
    InvalidVersion {
        /// The text as given.
        input: String,
    },
}

/// An RPC that the proxy (or the mock host) answered with an error status.
#[derive(Debug, thiserror::Error)]
#[error("{method} on {endpoint} failed with {code:?}: {message}", code = status.code(), message = status.message())]
pub struct RpcError {
    /// The pipe, socket or `in-process` for the mock host.
    pub endpoint: String,
    /// The gRPC method path, e.g. `/v1.Disk/PartitionDisk`.
    pub method: String,
    /// The status as received: code, message and any details (already
    /// part of this error's message, so not repeated as its source).
    pub status: tonic::Status,
}

impl Error {
    /// An RPC error status received from `endpoint` for `method`.
    pub fn rpc(
        endpoint: impl Into<String>,
        method: impl Into<String>,
        status: tonic::Status,
    ) -> Self {
        Error::Rpc(Box::new(RpcError {
            endpoint: endpoint.into(),
            method: method.into(),
            status,
        }))
    }

    /// The gRPC code of an RPC error; `None` for every other kind of error.
    pub fn code(&self) -> Option<tonic::Code> {
        self.status().map(tonic::Status::code)
    }

    /// The status of an RPC error; `None` for every other kind of error.
    pub fn status(&self) -> Option<&tonic::Status> {
        match self {
            Error::Rpc(rpc) => Some(&rpc.status),
            _ => None,
        }
    }
}

/// What kind of failure an [`Error`] is, for code that reacts to it
/// (retry, treat as done, report); see [`Error::kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The path, disk, volume, mapping or target is not there.
    NotFound,
    /// The thing to create is already there.
    AlreadyExists,
    /// The request is malformed or refers to something of the wrong kind.
    InvalidArgument,
    /// Access denied or a wrong user name or password.
    PermissionDenied,
    /// In use or busy: a non-empty directory, a path holding something
    /// else, a device that is not ready.
    InUse,
    /// Windows error 1219: the share is mapped with other credentials.
    CredentialsConflict,
    /// The proxy, or the group the operation needs, cannot be reached.
    Unavailable,
    /// A deadline or timeout passed.
    TimedOut,
    /// The thing is in a state that forbids the operation, and retrying
    /// will not help: the OS disk, a read-only disk.
    FailedPrecondition,
    /// Anything else.
    Other,
}

impl Error {
    /// The Win32 error code an `UNKNOWN` status from the proxy carries
    /// ([`HostCode::Win32`] of [`Error::host_code`]): written as a number
    /// (`code=N`, `Windows System Error N`, `0x8007xxxx`) or as the Windows
    /// message of the code. `None` for other errors, and for texts whose
    /// code is an HRESULT or a WMI method result.
    ///
    /// ```
    /// use csi_proxy_client::Error;
    /// let e = Error::rpc("pipe", "/v1.Smb/NewSmbGlobalMapping", tonic::Status::unknown(
    ///     "NewSmbGlobalMapping failed. err: ... code=1219"));
    /// assert_eq!(e.windows_code(), Some(1219));
    /// ```
    pub fn windows_code(&self) -> Option<u32> {
        self.host_code().and_then(HostCode::win32)
    }

    /// The code in the text of an `UNKNOWN` status from the proxy, and which
    /// kind of code it is (Win32 error, HRESULT, WMI method result); see
    /// [`HostCode::find`]. `None` for other errors.
    ///
    /// ```
    /// use csi_proxy_client::{Error, ErrorKind, HostCode};
    /// let e = Error::rpc("pipe", "/v1.Smb/NewSmbGlobalMapping", tonic::Status::unknown(
    ///     "NewSmbGlobalMapping failed. result: -1, err: failed to connect to WMI. error: \
    ///      error 2147614729 (FormatMessage failed with: Message 0x%1 not found in file %2.)"));
    /// assert_eq!(e.host_code(), Some(HostCode::HResult(0x8002_0009)));
    /// assert_eq!(e.windows_code(), None);
    /// assert_eq!(e.kind(), ErrorKind::Other);
    /// ```
    pub fn host_code(&self) -> Option<HostCode> {
        let status = self.status()?;
        if status.code() != tonic::Code::Unknown {
            return None;
        }
        HostCode::find(status.message())
    }

    /// A small classification of the error: from the variant, the gRPC
    /// code, or for an `UNKNOWN` status its text
    /// ([`ErrorKind::of_host_text`]: the code in it first, then phrases
    /// known to mean one kind).
    pub fn kind(&self) -> ErrorKind {
        use tonic::Code;
        match self {
            Error::Rpc(rpc) => match rpc.status.code() {
                Code::NotFound => ErrorKind::NotFound,
                Code::AlreadyExists => ErrorKind::AlreadyExists,
                Code::InvalidArgument | Code::OutOfRange => ErrorKind::InvalidArgument,
                Code::PermissionDenied | Code::Unauthenticated => ErrorKind::PermissionDenied,
                Code::Unavailable => ErrorKind::Unavailable,
                Code::DeadlineExceeded => ErrorKind::TimedOut,
                Code::FailedPrecondition | Code::Aborted => ErrorKind::InUse,
                Code::Unknown => ErrorKind::of_host_text(rpc.status.message()),
                _ => ErrorKind::Other,
            },
            Error::InvalidAddress { .. }
            | Error::InvalidVersion { .. }
            | Error::InvalidPath { .. }
            | Error::UnsupportedVersion { .. } => ErrorKind::InvalidArgument,
            Error::NoDefaultEndpoint { .. }
            | Error::Connect { .. }
            | Error::PipeBusy { .. }
            | Error::Transport { .. }
            | Error::GroupUnavailable { .. } => ErrorKind::Unavailable,
            Error::Timeout { .. } | Error::DeadlineExceeded { .. } => ErrorKind::TimedOut,
            Error::DiskNotFound { .. }
            | Error::NotStaged { .. }
            | Error::IscsiTargetNotFound { .. }
            | Error::SmbDirectoryMissing { .. } => ErrorKind::NotFound,
            Error::NotEmpty { .. } | Error::PathInUse { .. } | Error::IscsiTargetInUse { .. } => {
                ErrorKind::InUse
            }
            Error::SmbCredentialsConflict { .. } => ErrorKind::CredentialsConflict,
            Error::SmbCredentialsDiffer { .. } => ErrorKind::PermissionDenied,
            Error::SmbShareUnavailable { .. } => ErrorKind::Unavailable,
            Error::NoVolume { .. } | Error::SmbStore { .. } | Error::Store { .. } => {
                ErrorKind::Other
            }
            Error::OsDisk { .. }
            | Error::ReadOnlyDisk { .. }
            | Error::MayHoldData { .. }
            | Error::OsDiskUnknown { .. }
            | Error::DifferentDisk { .. }
            | Error::StagedElsewhere { .. }
            | Error::AmbiguousDisk { .. } => ErrorKind::FailedPrecondition,
            Error::FormatPending { .. } => ErrorKind::Unavailable,
            Error::PathPending { .. } => ErrorKind::Unavailable,
            Error::RemovalPending { .. } => ErrorKind::Unavailable,
            Error::VolumesPending { .. } => ErrorKind::Unavailable,
        }
    }
}

impl ErrorKind {
    /// The kind of failure a Windows host's error text (the message of an
    /// `UNKNOWN` status from the proxy) reports: the kind of its code
    /// ([`HostCode::find`], [`HostCode::kind`]) where it has a code that
    /// means one, else the kind of a phrase known to mean one
    /// ([`codes::phrase_kind`]), else [`ErrorKind::Other`].
    pub fn of_host_text(text: &str) -> ErrorKind {
        HostCode::find(text)
            .and_then(HostCode::kind)
            .or_else(|| codes::phrase_kind(text))
            .unwrap_or(ErrorKind::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_stays_small() {
        assert!(
            std::mem::size_of::<Result<(), Error>>() <= 80,
            "{}",
            std::mem::size_of::<Error>()
        );
    }

    #[test]
    fn rpc_error_keeps_code_message_and_endpoint() {
        let e = Error::rpc(
            "/tmp/x.sock",
            "/v1.Disk/PartitionDisk",
            tonic::Status::unknown("disk 9 not found"),
        );
        assert_eq!(e.code(), Some(tonic::Code::Unknown));
        assert_eq!(e.status().unwrap().message(), "disk 9 not found");
        let text = e.to_string();
        assert!(
            text.contains("/tmp/x.sock")
                && text.contains("PartitionDisk")
                && text.contains("disk 9 not found"),
            "{text}"
        );
    }

    #[test]
    fn connect_error_names_endpoint_and_keeps_source() {
        let e = Error::Connect {
            endpoint: "/run/x.sock".into(),
            source: std::io::ErrorKind::NotFound.into(),
        };
        assert!(e.to_string().contains("/run/x.sock"));
        assert!(std::error::Error::source(&e).is_some());
        assert_eq!(e.code(), None);
    }
}
