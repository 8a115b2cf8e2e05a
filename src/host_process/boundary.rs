//! The narrow Windows boundary of HostProcess mode: every call the backend
//! makes to the Windows host, one WMI query, one WMI method call or one
//! Win32 call each.
//!
//! Everything that decides something (which return code means "already
//! done", what to do when a path is missing, the error texts, path
//! confinement) lives above this trait, in the backend, and is tested on
//! any platform against the fake (`host_process::fake`). An implementation
//! of [`WindowsHost`] only carries calls across: it never retries, never
//! treats a code as success, never formats an error text of its own.
//!
//! # What an implementation must do
//!
//! - Methods are synchronous and may block (COM is blocking). The backend
//!   calls them from a blocking thread (never from a tokio worker), one
//!   call at a time per thread; an implementation that needs COM sees to
//!   it itself, and leaves nothing of COM on the thread when a call
//!   returns: tokio's blocking threads exit when idle, and a COM object or
//!   `CoUninitialize` left to a thread-local destructor runs after COM's
//!   own teardown of the thread (wmi-rs#136).
//! - A WMI method call returns its `ReturnValue` as a number ([`MethodResult`]
//!   and its out parameters); 0 is success, and every other value goes to
//!   the backend unchanged. Only a failure to make the call at all (COM
//!   could not connect, the object is gone, the method is missing) is an
//!   `Err(`[`Failure::Com`]`)` with its HRESULT. A provider that fails the
//!   call itself with a code of its own (the iSCSI initiator's `ISDSC_*`
//!   codes, `0xEFFFxxxx`, arrive as `ExecMethod`'s HRESULT, not as a
//!   `ReturnValue`) is passed on the same way, unchanged: reading it is
//!   the backend's business.
//! - A WMI query returns the instances it found, an empty `Vec` when none
//!   matched; a failure to query is [`Failure::Com`].
//! - A Win32 call that fails is [`Failure::Win32`] with `GetLastError()`'s
//!   code and `FormatMessageW`'s text for it (no trailing newline).
//! - Strings go across as Rust `String`s: paths as given (the backend has
//!   validated them; no `\\?\` prefix added), volume ids in their
//!   `\\?\Volume{GUID}\` form. A path may come with or without a trailing
//!   `\`; the implementation spells it as each Win32 call needs
//!   (`FindFirstFileW` fails on a trailing separator, the mount point calls
//!   require one), so a path means the same thing either way.
//! - WMI namespaces: storage and iSCSI classes in
//!   `root\Microsoft\Windows\Storage`, SMB in `root\Microsoft\Windows\SMB`,
//!   services and BIOS in `root\cimv2`.

use std::fmt;

/// Why a boundary call could not be made, as Windows said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A Win32 call failed.
    Win32 {
        /// `GetLastError()` (for example 2, file not found; 145, directory not empty).
        code: u32,
        /// The system's text for the code (`FormatMessageW`).
        message: String,
    },
    /// A COM or WMI call failed before any `ReturnValue` (connecting, querying,
    /// executing a method).
    Com {
        /// The HRESULT, as an unsigned number (for example `0x80041002`,
        /// `WBEM_E_NOT_FOUND`).
        hresult: u32,
        /// The system's text for it, or what the implementation knows.
        message: String,
    },
}

impl Failure {
    /// A Win32 failure.
    pub fn win32(code: u32, message: impl Into<String>) -> Failure {
        Failure::Win32 {
            code,
            message: message.into(),
        }
    }

    /// A COM/WMI failure.
    pub fn com(hresult: u32, message: impl Into<String>) -> Failure {
        Failure::Com {
            hresult,
            message: message.into(),
        }
    }

    /// The Win32 error code, if this is a Win32 failure.
    pub fn win32_code(&self) -> Option<u32> {
        match self {
            Failure::Win32 { code, .. } => Some(*code),
            Failure::Com { .. } => None,
        }
    }
}

/// Shown as the system's text followed by the code, so that
/// [`Error::windows_code`](crate::Error::windows_code) finds the number in
/// any error text the backend builds from it, whatever the system's language.
impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Win32 { code, message } => write!(f, "{message} (code={code})"),
            Failure::Com { hresult, message } => {
                write!(f, "{message} (HRESULT 0x{hresult:08X})")
            }
        }
    }
}

impl std::error::Error for Failure {}

/// What a boundary call returns.
pub type Result<T> = std::result::Result<T, Failure>;

/// A WMI method's `ReturnValue` (0 is success) and its out parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MethodResult<T = ()> {
    /// The method's `ReturnValue`.
    pub code: u32,
    /// Its out parameters (meaningful when `code` is 0).
    pub out: T,
}

impl MethodResult {
    /// A result without out parameters.
    pub fn code(code: u32) -> MethodResult {
        MethodResult { code, out: () }
    }
}

/// `MSFT_Disk.PartitionStyle`: no partition table (raw).
pub const PARTITION_STYLE_RAW: u16 = 0;
/// `MSFT_Disk.PartitionStyle`: master boot record.
pub const PARTITION_STYLE_MBR: u16 = 1;
/// `MSFT_Disk.PartitionStyle`: GUID partition table.
pub const PARTITION_STYLE_GPT: u16 = 2;

/// The properties of one `MSFT_Disk` instance the backend reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DiskObject {
    /// `Number`.
    pub number: u32,
    /// `Location` (for example `PCI Slot 3 : Adapter 0 : Port 0 : Target 0 : LUN 3`).
    pub location: String,
    /// `SerialNumber` (verbatim, padding kept).
    pub serial_number: String,
    /// `Path`, the device path to open for [`WindowsHost::disk_device_id`].
    pub path: String,
    /// `Size` in bytes.
    pub size: u64,
    /// `IsOffline`.
    pub is_offline: bool,
    /// `PartitionStyle` (see `PARTITION_STYLE_*`).
    pub partition_style: u16,
    /// `IsReadOnly` (a SAN policy or `SetAttributes` made the disk read-only).
    pub is_read_only: bool,
    /// `IsSystem`: the disk holds the system partition (EFI / System
    /// Reserved); `None` when WMI gave Null, which the node layer takes as
    /// "cannot tell", never as false.
    pub is_system: Option<bool>,
    /// `IsBoot`: the disk holds the Windows installation; `None` for Null.
    pub is_boot: Option<bool>,
    /// `BusType` (1 SCSI, 10 SAS, 11 SATA, 15 file-backed virtual, 16
    /// Storage Spaces, 17 NVMe; 0 unknown or Null).
    pub bus_type: u16,
}

/// The page 0x83 identifier of a disk (`IOCTL_STORAGE_QUERY_PROPERTY`,
/// `StorageDeviceIdProperty`): the first identifier whose association is
/// the device and whose code set is binary or ASCII.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceId {
    /// No such identifier.
    #[default]
    None,
    /// An ASCII identifier, its bytes as the descriptor holds them.
    Ascii(Vec<u8>),
    /// A binary identifier.
    Binary(Vec<u8>),
}

/// The properties of one `MSFT_Partition` instance the backend reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionObject {
    /// `DiskNumber`.
    pub disk_number: u32,
    /// `PartitionNumber` (1-based).
    pub partition_number: u32,
    /// `Offset` in bytes.
    pub offset: u64,
    /// `Size` in bytes.
    pub size: u64,
    /// `GptType` (`{...}` lowercase), empty on MBR disks.
    pub gpt_type: String,
    /// `MbrType` (the MBR type byte: 7 IFS, 0x27 hidden recovery, ...), 0
    /// on GPT disks.
    pub mbr_type: u16,
    /// `IsOffline`.
    pub is_offline: bool,
    /// `IsSystem`: the partition the node boots from (EFI, or System
    /// Reserved on MBR).
    pub is_system: bool,
    /// `IsActive`: the MBR boot indicator (System Reserved on MBR).
    pub is_active: bool,
    /// `IsHidden`: a hidden partition (an MBR hidden type, the GPT hidden
    /// attribute).
    pub is_hidden: bool,
}

/// The properties of one `MSFT_Volume` instance the backend reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VolumeObject {
    /// `UniqueId` (`\\?\Volume{GUID}\`).
    pub unique_id: String,
    /// `FileSystemType` (0 unknown = unformatted; 14 NTFS).
    pub file_system_type: u16,
    /// `Size` in bytes.
    pub size: u64,
    /// `SizeRemaining` in bytes.
    pub size_remaining: u64,
}

/// `MSFT_Partition.GetSupportedSize`'s out parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SupportedSize {
    /// `SizeMin` in bytes.
    pub min: u64,
    /// `SizeMax` in bytes.
    pub max: u64,
}

/// What is at a path, without following a link (a reparse point is
/// described, not entered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileKind {
    /// A directory.
    Directory,
    /// Any other file.
    File,
    /// A symbolic link (`IO_REPARSE_TAG_SYMLINK`), with its target as stored.
    Symlink {
        /// The target (`\??\` prefix removed, as `os.Readlink` gives it).
        target: String,
        /// Whether it is a directory link.
        directory: bool,
    },
    /// A mount point or junction (`IO_REPARSE_TAG_MOUNT_POINT`), with its
    /// target (a volume's `\\?\Volume{GUID}\` for a volume mount point).
    MountPoint {
        /// The target as stored.
        target: String,
    },
}

/// What `GetDiskFreeSpaceExW` reports for a directory, in bytes: of the
/// volume or share the path reaches, links followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiskSpace {
    /// `TotalNumberOfBytes`.
    pub total: u64,
    /// `TotalNumberOfFreeBytes`.
    pub free: u64,
    /// `FreeBytesAvailableToCaller` (less than `free` under a quota).
    pub available: u64,
}

/// The properties of one `MSFT_SmbGlobalMapping` instance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SmbMappingObject {
    /// `RemotePath` (`\\server\share`).
    pub remote_path: String,
    /// `Status` (0 OK, 1 paused, 2 disconnected, 3 network error,
    /// 4 connecting, 5 reconnecting, 6 unavailable).
    pub status: u32,
}

/// The properties of one `MSFT_iSCSITargetPortal` instance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PortalObject {
    /// `TargetPortalAddress`.
    pub address: String,
    /// `TargetPortalPortNumber`.
    pub port: u32,
}

/// The properties of one `MSFT_iSCSITarget` instance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TargetObject {
    /// `NodeAddress` (the IQN).
    pub node_address: String,
    /// `IsConnected`.
    pub is_connected: bool,
}

/// The properties of one `MSFT_iSCSISession` instance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionObject {
    /// `SessionIdentifier`.
    pub identifier: String,
    /// `IsPersistent`.
    pub is_persistent: bool,
}

/// How an iSCSI login authenticates (`MSFT_iSCSITarget.Connect`'s
/// `AuthenticationType`: `NONE`, `ONEWAYCHAP`, `MUTUALCHAP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IscsiAuthType {
    /// `NONE`.
    None,
    /// `ONEWAYCHAP`.
    OneWayChap,
    /// `MUTUALCHAP`.
    MutualChap,
}

/// The properties of one `Win32_Service` instance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServiceObject {
    /// `Name`.
    pub name: String,
    /// `DisplayName`.
    pub display_name: String,
    /// `State` (`Running`, `Stopped`, `Start Pending`, ...).
    pub state: String,
    /// `StartMode` (`Auto`, `Manual`, `Disabled`, `Boot`, `System`).
    pub start_mode: String,
}

/// The Windows host, one call per method. See the [module](self) docs for
/// what an implementation must do. Object safe: the backend holds an
/// `Arc<dyn WindowsHost>`.
pub trait WindowsHost: Send + Sync + 'static {
    /// Which host this is, among the hosts of the process: every `Node`
    /// over one host shares its records and claims in the process. The
    /// real host is the one the process runs on.
    fn host_name(&self) -> String {
        "this Windows host".into()
    }

    /// Where the node layer keeps its records on this host when the
    /// driver names no place ([`NodeOptions::records`](crate::node::NodeOptions::records)
    /// left at its default): a directory on the host itself, so that a
    /// restarted plugin knows what the one before it sent. `None`: in
    /// this process's memory.
    fn state_dir(&self) -> Option<std::path::PathBuf> {
        None
    }

    // ------------------------------------------------ storage (WMI)

    /// `MSFT_StorageSetting.UpdateHostStorageCache()` (static method): rescan.
    fn update_host_storage_cache(&self) -> Result<MethodResult>;

    /// `SELECT * FROM MSFT_Disk`: every disk storage management lists.
    fn disks(&self) -> Result<Vec<DiskObject>>;

    /// Win32: opens the disk's device path ([`DiskObject::path`]) read-only
    /// and asks `IOCTL_STORAGE_QUERY_PROPERTY` for `StorageDeviceIdProperty`.
    fn disk_device_id(&self, path: &str) -> Result<DeviceId>;

    /// Win32: opens the disk's device path ([`DiskObject::path`]) read-only
    /// and reads `len` bytes from byte `offset` (both multiples of 4096,
    /// as an unbuffered device read needs); fewer bytes at the disk's end.
    /// What HostProcess mode reads a volume's first sectors, and a RAW
    /// disk's first and last MiB, with before it formats or initialises
    /// (`crate::win::signatures`).
    fn disk_read(&self, path: &str, offset: u64, len: usize) -> Result<Vec<u8>>;

    /// `MSFT_Disk.Initialize(PartitionStyle)` on disk `number`.
    fn disk_initialize(&self, number: u32, partition_style: u16) -> Result<MethodResult>;

    /// `MSFT_Disk.Online()` (`online`) or `MSFT_Disk.Offline()` on disk `number`.
    fn disk_set_online(&self, number: u32, online: bool) -> Result<MethodResult>;

    /// `MSFT_Disk.SetAttributes(IsReadOnly = read_only)` on disk `number`.
    fn disk_set_read_only(&self, number: u32, read_only: bool) -> Result<MethodResult>;

    /// `MSFT_Disk.Refresh()` on disk `number`.
    fn disk_refresh(&self, number: u32) -> Result<MethodResult>;

    /// `MSFT_Disk.CreatePartition(UseMaximumSize = true, AssignDriveLetter = false,
    /// GptType = gpt_type)` on disk `number`.
    fn disk_create_partition(&self, number: u32, gpt_type: &str) -> Result<MethodResult>;

    /// `SELECT * FROM MSFT_Partition WHERE DiskNumber = disk`, by partition number.
    fn partitions(&self, disk: u32) -> Result<Vec<PartitionObject>>;

    /// `MSFT_Partition.Online()` or `Offline()` on partition `partition` of disk `disk`.
    fn partition_set_online(&self, disk: u32, partition: u32, online: bool)
    -> Result<MethodResult>;

    /// `MSFT_Partition.GetSupportedSize()`.
    fn partition_supported_size(
        &self,
        disk: u32,
        partition: u32,
    ) -> Result<MethodResult<SupportedSize>>;

    /// `MSFT_Partition.Resize(Size = size)`.
    fn partition_resize(&self, disk: u32, partition: u32, size: u64) -> Result<MethodResult>;

    /// `ASSOCIATORS OF` the partition `WHERE AssocClass = MSFT_PartitionToVolume`:
    /// the volumes on it (none for a reserved partition).
    fn partition_volumes(&self, disk: u32, partition: u32) -> Result<Vec<VolumeObject>>;

    /// `SELECT * FROM MSFT_Volume WHERE UniqueId = id`.
    fn volumes(&self, id: &str) -> Result<Vec<VolumeObject>>;

    /// `ASSOCIATORS OF` the volume `id` `WHERE AssocClass = MSFT_PartitionToVolume`:
    /// the partition it lives on.
    fn volume_partitions(&self, id: &str) -> Result<Vec<PartitionObject>>;

    /// `MSFT_Volume.Format(FileSystem = "NTFS", FileSystemLabel = "",
    /// Full = false, Force = true)` on volume `id`.
    fn volume_format_ntfs(&self, id: &str) -> Result<MethodResult>;

    /// `MSFT_Volume.Flush()` on volume `id`.
    fn volume_flush(&self, id: &str) -> Result<MethodResult>;

    // ------------------------------------------------ volumes and paths (Win32)

    /// `SetVolumeMountPointW(mount_point, volume_id)`; `mount_point` ends with `\`.
    fn set_volume_mount_point(&self, mount_point: &str, volume_id: &str) -> Result<()>;

    /// `DeleteVolumeMountPointW(mount_point)`; `mount_point` ends with `\`.
    fn delete_volume_mount_point(&self, mount_point: &str) -> Result<()>;

    /// `GetVolumePathNameW(path)`: the mount point (or drive root) holding `path`.
    fn volume_path_name(&self, path: &str) -> Result<String>;

    /// `GetVolumeNameForVolumeMountPointW(mount_point)`: the volume's
    /// `\\?\Volume{GUID}\`; `mount_point` ends with `\`.
    fn volume_name_for_mount_point(&self, mount_point: &str) -> Result<String>;

    /// What is at `path`, not following a final link: the path opened
    /// (`CreateFileW` with `FILE_FLAG_OPEN_REPARSE_POINT`) for its
    /// attributes, and for a reparse point its tag and target. Missing: the
    /// Win32 failure (2 or 3).
    fn file_kind(&self, path: &str) -> Result<FileKind>;

    /// `GetFileAttributesW(path)`: the attribute bits (`FILE_ATTRIBUTE_*`),
    /// asked by name without opening a handle, a final link not followed.
    /// What csi-proxy probes a mapped share root with: a server can refuse
    /// an open of the bare root and still answer this.
    fn file_attributes(&self, path: &str) -> Result<u32>;

    /// `CreateDirectoryW(path)`: one directory, its parent must exist.
    fn create_directory(&self, path: &str) -> Result<()>;

    /// `RemoveDirectoryW(path)`: an empty directory, or a directory link or
    /// mount point itself (never what it points to).
    fn remove_directory(&self, path: &str) -> Result<()>;

    /// `DeleteFileW(path)`: a file, or a file link itself.
    fn delete_file(&self, path: &str) -> Result<()>;

    /// The names in directory `path` (`FindFirstFileW`/`FindNextFileW`,
    /// `.` and `..` left out).
    fn list_directory(&self, path: &str) -> Result<Vec<String>>;

    /// `CreateSymbolicLinkW(link, target, flags)`: `SYMBOLIC_LINK_FLAG_DIRECTORY`
    /// when `directory`, and `SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE`.
    fn create_symbolic_link(&self, link: &str, target: &str, directory: bool) -> Result<()>;

    /// `GetDiskFreeSpaceExW(path)`: the space of the volume or SMB share
    /// the directory `path` reaches (links followed; a share's space is
    /// what its server reports). What csi-driver-smb and azurefile report
    /// as an SMB volume's usage (azurefile-csi-driver
    /// pkg/azurefile/azure_common_windows.go `GetFreeSpace`).
    fn disk_free_space(&self, path: &str) -> Result<DiskSpace>;

    // ------------------------------------------------ SMB (WMI)

    /// `SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = remote_path`.
    fn smb_global_mappings(&self, remote_path: &str) -> Result<Vec<SmbMappingObject>>;

    /// `MSFT_SmbGlobalMapping.Create(RemotePath, Credential, RequirePrivacy)`
    /// (static method); with an empty `user` no credential is passed. The
    /// password never appears in logs or failures.
    fn smb_new_global_mapping(
        &self,
        remote_path: &str,
        user: &str,
        password: &str,
        require_privacy: bool,
    ) -> Result<MethodResult>;

    /// `MSFT_SmbGlobalMapping.Remove(Force = true)` on the mapping of `remote_path`.
    fn smb_remove_global_mapping(&self, remote_path: &str) -> Result<MethodResult>;

    // ------------------------------------------------ iSCSI (WMI)

    /// `SELECT * FROM MSFT_iSCSITargetPortal`.
    fn iscsi_portals(&self) -> Result<Vec<PortalObject>>;

    /// `MSFT_iSCSITargetPortal.New(TargetPortalAddress, TargetPortalPortNumber)`
    /// (static method).
    fn iscsi_new_portal(&self, address: &str, port: u32) -> Result<MethodResult>;

    /// `MSFT_iSCSITargetPortal.Remove()` on the portal `address:port`.
    fn iscsi_remove_portal(&self, address: &str, port: u32) -> Result<MethodResult>;

    /// `ASSOCIATORS OF` the portal `address:port` `WHERE AssocClass =
    /// MSFT_iSCSITargetToiSCSITargetPortal`: the targets it offers.
    fn iscsi_targets(&self, address: &str, port: u32) -> Result<Vec<TargetObject>>;

    /// `MSFT_iSCSITarget.Connect(NodeAddress = iqn, TargetPortalAddress,
    /// TargetPortalPortNumber, AuthenticationType, ChapUsername, ChapSecret)`
    /// (static method), `IsPersistent` not passed (false: csi-proxy's logins
    /// do not survive a reboot either); CHAP values are passed only when
    /// `auth` is not `None`. `port` is at most 65535.
    fn iscsi_connect(
        &self,
        address: &str,
        port: u32,
        iqn: &str,
        auth: IscsiAuthType,
        chap_user: &str,
        chap_secret: &str,
    ) -> Result<MethodResult>;

    /// `ASSOCIATORS OF` the target `iqn` `WHERE AssocClass = MSFT_iSCSITargetToiSCSISession`.
    fn iscsi_sessions(&self, iqn: &str) -> Result<Vec<SessionObject>>;

    /// `MSFT_iSCSISession.Unregister()` on session `identifier` (drops its persistence).
    fn iscsi_unregister_session(&self, identifier: &str) -> Result<MethodResult>;

    /// `MSFT_iSCSITarget.Disconnect(SessionIdentifier)` on target `iqn`.
    fn iscsi_disconnect(&self, iqn: &str, session: &str) -> Result<MethodResult>;

    /// The numbers of the disks behind target `iqn`: its sessions'
    /// `ASSOCIATORS ... WHERE AssocClass = MSFT_iSCSISessionToDisk`, each disk's `Number`.
    fn iscsi_target_disks(&self, iqn: &str) -> Result<Vec<u32>>;

    /// `MSFT_iSCSISession.SetCHAPSecret(ChapSecret)` (static method): the
    /// initiator's mutual CHAP secret.
    fn iscsi_set_chap_secret(&self, secret: &str) -> Result<MethodResult>;

    // ------------------------------------------------ system (WMI, root\cimv2)

    /// `SELECT SerialNumber FROM Win32_BIOS`: each instance's `SerialNumber`.
    fn bios_serial_numbers(&self) -> Result<Vec<String>>;

    /// `SELECT * FROM Win32_Service WHERE Name = name`.
    fn services(&self, name: &str) -> Result<Vec<ServiceObject>>;

    /// `Win32_Service.StartService()` on service `name`.
    fn service_start(&self, name: &str) -> Result<MethodResult>;

    /// `Win32_Service.StopService()` on service `name`.
    fn service_stop(&self, name: &str) -> Result<MethodResult>;

    /// `ASSOCIATORS OF` service `name` `WHERE AssocClass = Win32_DependentService
    /// Role = Antecedent`: the services that depend on it.
    fn service_dependents(&self, name: &str) -> Result<Vec<ServiceObject>>;
}

// The backend holds the host as a trait object.
const _: fn(&dyn WindowsHost) = |_| {};
