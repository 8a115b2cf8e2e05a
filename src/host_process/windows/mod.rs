//! The real Windows implementation of [`WindowsHost`]: WMI over COM
//! through the `wmi` crate, Win32 through std where std makes exactly the
//! call the boundary names and through the `windows` crate where it does
//! not (module `win32`, the crate's one `unsafe` module).
//!
//! # Threads and COM
//!
//! Every method runs on the thread that calls it, which the backend keeps
//! off the tokio runtime: tokio's blocking threads, which exit after 10 s
//! idle. Nothing of COM may be left for such a thread's exit. Rust runs
//! `thread_local!` destructors after COM has done its own per-thread
//! teardown, so a WMI object or a `CoUninitialize` kept in thread-local
//! storage is released too late, the access violation of wmi-rs#136 (a
//! `WMIConnection` in a `thread_local!` of a tokio thread). This module
//! therefore keeps no COM state per thread:
//!
//! - The process holds COM's multithreaded apartment
//!   (`CoIncrementMTAUsage`, once, never released, with
//!   `CoInitializeSecurity`): every thread that did not enter COM itself
//!   is in that apartment implicitly, so no thread calls `CoInitializeEx`
//!   or has a `CoUninitialize` to run. The `wmi` crate (0.18) does the same
//!   when it finds COM uninitialised; doing it here first keeps the
//!   security setting this backend needs.
//! - Each WMI call connects to its namespace, and the connection and every
//!   object obtained through it are released before the call returns, on
//!   the calling thread, as csi-proxy's `library-development` branch does
//!   (`pkg/wmi/wmi.go`: `WithCOMThread` and `WithWMIService` per call).
//!
//! Chosen over keeping connections in owned worker threads, which would
//! save a local `ConnectServer` per call at the price of a thread pool,
//! a queue and an explicit shutdown, a saving upstream does not make
//! either. A broken connection (the WMI service restarted) is simply not
//! reused. Nothing here retries or waits: the backend's deadline is the
//! only clock.
//!
//! Paths are spelled as each Win32 call needs them (one trailing `\` for
//! the mount point calls, none for the others: `FindFirstFileW` fails on
//! one and would make a link or mount point look missing), so a path means
//! the same with or without a trailing separator.
//!
//! # Facts this follows
//!
//! - `uint64` properties and parameters (sizes) travel as strings, `uint16`
//!   and `uint32` as 32-bit integers; the `wmi` crate converts both ways.
//! - Volumes are listed whole and matched on `UniqueId` in Rust rather than
//!   with a `WHERE UniqueId = ...` clause, as csi-proxy v1.3 does: a volume
//!   id is all backslashes and braces, and a literal that WQL reads
//!   differently would silently match nothing.
//! - `MSFT_SmbGlobalMapping.Create` takes the credential as one string,
//!   `user:password`, with the user name's `\` and `:` escaped.
//!
//! # What ran where
//!
//! Nothing here has run on a real Windows host yet. Under Wine 8
//! (`scripts/test-windows.sh --test host_process_windows`, 10 tests):
//!
//! - ran for real: `CreateDirectoryW`, `RemoveDirectoryW`, `DeleteFileW`,
//!   directory listing, file kinds and the Win32 codes of failures (2, 3,
//!   145, 183); `GetVolumePathNameW` and `GetVolumeNameForVolumeMountPointW`
//!   on the drive holding the temp directory; in `ROOT\CIMV2`,
//!   `Win32_BIOS.SerialNumber`, `Win32_Service` by name, its
//!   `StartService` and `StopService` (codes 0 and 10), and `ASSOCIATORS OF`
//!   a service; COM entered on many threads, one after another (Wine's
//!   in-process WMI corrupts its heap when two threads query services at
//!   once, so the tests take turns).
//! - COM: WMI calls on tokio's blocking threads left to exit idle between
//!   calls (a keep-alive of 100 ms), each on a new thread, all answered,
//!   none leaving COM entered on its thread; and on a thread already in a
//!   single-threaded apartment. With the former per-thread apartment and
//!   connections the threads exited with COM entered and Wine 8 did not
//!   crash: it does not reproduce the ordering that crashes Windows
//!   (wmi-rs#136), so only a real node shows that crash gone.
//! - Trailing separators: files and directories given with a `\` (Wine 8
//!   refused `file\` with 123 before), and a mount point given without one
//!   to `GetVolumeNameForVolumeMountPointW`. A mount point or link with
//!   one, the case `FindFirstFileW` failed on, only on real Windows.
//! - `GetFileAttributesW` on directories, files and missing paths (no SMB
//!   share root: Wine has no SMB client mappings).
//! - Wine lacks, and the tests assert it does: its storage namespace
//!   answers `MSFT_Disk`, `MSFT_Volume` and `MSFT_iSCSITargetPortal` queries
//!   with nothing and has no `MSFT_StorageSetting`; there is no SMB
//!   namespace; `SetVolumeMountPointW` fails with 120 (not implemented);
//!   the disk id ioctl fails with 50 (not supported).
//! - Wine 8's `CreateSymbolicLinkW` reports success and creates nothing,
//!   so links, like every storage, SMB and mount-point call, are tested
//!   only by the `#[ignore]`d real-Windows tests of the same file, which
//!   have never run.
//!
//! Running there found two bugs, fixed here: Wine's `__PATH` values carry
//! NULs after the text (cut in `cim::object_path`), and its WQL parser
//! refuses `\'` in a single-quoted literal (literals are double-quoted).

mod cim;
mod win32;

use std::os::windows::fs::MetadataExt;
use std::os::windows::io::AsRawHandle;
use std::sync::Arc;

use wmi::{IWbemClassWrapper, Variant, WMIConnection};
// WQL string literals: in double quotes, `\\` and `\"` escaped. Wine's
// WQL parser refuses a `\'` inside single quotes, and takes a `'` inside
// double quotes (a test asks for a service named `it's-not-there`).
use wmi::quote_and_escape_wql_str as wql_string;

use self::cim::{
    Namespace, associators, boolean, call, optional_boolean, path_of, query, return_value, string,
    u32_prop, unsigned,
};
use super::boundary::{
    DeviceId, DiskObject, DiskSpace, Failure, FileKind, IscsiAuthType, MethodResult,
    PartitionObject, PortalObject, Result, ServiceObject, SessionObject, SmbMappingObject,
    SupportedSize, TargetObject, VolumeObject, WindowsHost,
};
use super::encoding::{parse_device_id, without_trailing_separator};
use crate::Error;
use crate::win::credential;

/// `FILE_ATTRIBUTE_DIRECTORY`.
const FILE_ATTRIBUTE_DIRECTORY: u32 = 0x10;
/// `FILE_ATTRIBUTE_REPARSE_POINT`.
const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;
/// `IO_REPARSE_TAG_MOUNT_POINT`: a junction or a volume mount point.
const IO_REPARSE_TAG_MOUNT_POINT: u32 = 0xA000_0003;
/// `IO_REPARSE_TAG_SYMLINK`.
const IO_REPARSE_TAG_SYMLINK: u32 = 0xA000_000C;

/// The local Windows host behind the boundary.
pub fn host() -> std::result::Result<Arc<dyn WindowsHost>, Error> {
    Ok(Arc::new(LocalHost))
}

/// [`WindowsHost`] on the machine this process runs on. Holds nothing:
/// COM and the WMI connections belong to the calling thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalHost;

/// A std I/O error from a Win32 call as the boundary reports it.
fn io_failure(e: std::io::Error) -> Failure {
    match e.raw_os_error() {
        Some(code) => {
            let text = windows::core::HRESULT::from_win32(code as u32).message();
            Failure::win32(code as u32, text.trim_end())
        }
        None => Failure::win32(0, e.to_string()),
    }
}

fn method_result(out: Option<IWbemClassWrapper>, method: &str) -> Result<MethodResult> {
    Ok(MethodResult::code(return_value(out.as_ref(), method)?))
}

fn disk_path(conn: &WMIConnection, number: u32) -> Result<String> {
    path_of(
        conn,
        &format!("SELECT * FROM MSFT_Disk WHERE Number = {number}"),
    )
}

fn partition_path(conn: &WMIConnection, disk: u32, partition: u32) -> Result<String> {
    path_of(
        conn,
        &format!(
            "SELECT * FROM MSFT_Partition WHERE DiskNumber = {disk} AND PartitionNumber = {partition}"
        ),
    )
}

/// The `MSFT_Volume` instances whose `UniqueId` is `id` (see the module
/// docs for why the match is done here).
fn volumes_with_id(conn: &WMIConnection, id: &str) -> Result<Vec<IWbemClassWrapper>> {
    let mut found = Vec::new();
    for volume in query(conn, "SELECT * FROM MSFT_Volume")? {
        if string(&volume, "UniqueId")? == id {
            found.push(volume);
        }
    }
    Ok(found)
}

fn volume_path(conn: &WMIConnection, id: &str) -> Result<String> {
    let volume = volumes_with_id(conn, id)?
        .into_iter()
        .next()
        .ok_or_else(|| {
            Failure::com(
                cim::WBEM_E_NOT_FOUND,
                format!("no MSFT_Volume with UniqueId {id}: WBEM_E_NOT_FOUND"),
            )
        })?;
    cim::object_path(&volume)
}

fn disk_object(obj: &IWbemClassWrapper) -> Result<DiskObject> {
    Ok(DiskObject {
        number: u32_prop(obj, "Number")?,
        location: string(obj, "Location")?,
        serial_number: string(obj, "SerialNumber")?,
        path: string(obj, "Path")?,
        size: unsigned(obj, "Size")?,
        is_offline: boolean(obj, "IsOffline")?,
        partition_style: unsigned(obj, "PartitionStyle")? as u16,
        is_read_only: boolean(obj, "IsReadOnly")?,
        // Null is "cannot tell": the node layer refuses such a disk
        // rather than take it for a data disk.
        is_system: optional_boolean(obj, "IsSystem")?,
        is_boot: optional_boolean(obj, "IsBoot")?,
        bus_type: unsigned(obj, "BusType")? as u16,
    })
}

fn partition_object(obj: &IWbemClassWrapper) -> Result<PartitionObject> {
    Ok(PartitionObject {
        disk_number: u32_prop(obj, "DiskNumber")?,
        partition_number: u32_prop(obj, "PartitionNumber")?,
        offset: unsigned(obj, "Offset")?,
        size: unsigned(obj, "Size")?,
        gpt_type: string(obj, "GptType")?.to_ascii_lowercase(),
        // Null on GPT disks: read as 0.
        mbr_type: unsigned(obj, "MbrType")? as u16,
        is_offline: boolean(obj, "IsOffline")?,
        is_system: boolean(obj, "IsSystem")?,
        is_active: boolean(obj, "IsActive")?,
        is_hidden: boolean(obj, "IsHidden")?,
    })
}

fn volume_object(obj: &IWbemClassWrapper) -> Result<VolumeObject> {
    Ok(VolumeObject {
        unique_id: string(obj, "UniqueId")?,
        file_system_type: unsigned(obj, "FileSystemType")? as u16,
        size: unsigned(obj, "Size")?,
        size_remaining: unsigned(obj, "SizeRemaining")?,
    })
}

fn service_object(obj: &IWbemClassWrapper) -> Result<ServiceObject> {
    Ok(ServiceObject {
        name: string(obj, "Name")?,
        display_name: string(obj, "DisplayName")?,
        state: string(obj, "State")?,
        start_mode: string(obj, "StartMode")?,
    })
}

fn target_path(conn: &WMIConnection, iqn: &str) -> Result<String> {
    path_of(
        conn,
        &format!(
            "SELECT * FROM MSFT_iSCSITarget WHERE NodeAddress = {}",
            wql_string(iqn)
        ),
    )
}

fn portal_path(conn: &WMIConnection, address: &str, port: u32) -> Result<String> {
    path_of(
        conn,
        &format!(
            "SELECT * FROM MSFT_iSCSITargetPortal WHERE TargetPortalAddress = {} AND TargetPortalPortNumber = {port}",
            wql_string(address)
        ),
    )
}

fn service_path(conn: &WMIConnection, name: &str) -> Result<String> {
    path_of(
        conn,
        &format!(
            "SELECT * FROM Win32_Service WHERE Name = {}",
            wql_string(name)
        ),
    )
}

fn str_arg(s: &str) -> Variant {
    Variant::String(s.to_string())
}

impl WindowsHost for LocalHost {
    /// `%ProgramData%\csi-proxy-client` (`C:\ProgramData` when unset): a
    /// HostProcess container sees the host's file system, and a directory
    /// there outlives the plugin's container.
    fn state_dir(&self) -> Option<std::path::PathBuf> {
        let base = std::env::var_os("ProgramData").unwrap_or_else(|| r"C:\ProgramData".into());
        Some(std::path::PathBuf::from(base).join("csi-proxy-client"))
    }

    fn update_host_storage_cache(&self) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let out = call(
                conn,
                "MSFT_StorageSetting",
                "MSFT_StorageSetting",
                "UpdateHostStorageCache",
                vec![],
            )?;
            method_result(out, "MSFT_StorageSetting.UpdateHostStorageCache")
        })
    }

    fn disks(&self) -> Result<Vec<DiskObject>> {
        cim::with(Namespace::Storage, |conn| {
            query(conn, "SELECT * FROM MSFT_Disk")?
                .iter()
                .map(disk_object)
                .collect()
        })
    }

    fn disk_device_id(&self, path: &str) -> Result<DeviceId> {
        let disk = std::fs::OpenOptions::new()
            .read(true)
            .open(path)
            .map_err(io_failure)?;
        let handle = windows::Win32::Foundation::HANDLE(disk.as_raw_handle());
        let descriptor = win32::storage_device_id(handle)?;
        drop(disk);
        Ok(parse_device_id(&descriptor))
    }

    fn disk_read(&self, path: &str, offset: u64, len: usize) -> Result<Vec<u8>> {
        use std::os::windows::fs::FileExt;
        let disk = std::fs::OpenOptions::new()
            .read(true)
            .open(path)
            .map_err(io_failure)?;
        let mut bytes = vec![0u8; len];
        let mut done = 0;
        while done < len {
            let n = disk
                .seek_read(&mut bytes[done..], offset + done as u64)
                .map_err(io_failure)?;
            if n == 0 {
                break;
            }
            done += n;
        }
        bytes.truncate(done);
        Ok(bytes)
    }

    fn disk_initialize(&self, number: u32, partition_style: u16) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let path = disk_path(conn, number)?;
            let args = vec![("PartitionStyle", Variant::UI2(partition_style))];
            method_result(
                call(conn, "MSFT_Disk", &path, "Initialize", args)?,
                "MSFT_Disk.Initialize",
            )
        })
    }

    fn disk_set_online(&self, number: u32, online: bool) -> Result<MethodResult> {
        let method = if online { "Online" } else { "Offline" };
        cim::with(Namespace::Storage, |conn| {
            let path = disk_path(conn, number)?;
            method_result(call(conn, "MSFT_Disk", &path, method, vec![])?, method)
        })
    }

    fn disk_set_read_only(&self, number: u32, read_only: bool) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let path = disk_path(conn, number)?;
            let args = vec![("IsReadOnly", Variant::Bool(read_only))];
            method_result(
                call(conn, "MSFT_Disk", &path, "SetAttributes", args)?,
                "MSFT_Disk.SetAttributes",
            )
        })
    }

    fn disk_refresh(&self, number: u32) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let path = disk_path(conn, number)?;
            method_result(
                call(conn, "MSFT_Disk", &path, "Refresh", vec![])?,
                "MSFT_Disk.Refresh",
            )
        })
    }

    fn disk_create_partition(&self, number: u32, gpt_type: &str) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let path = disk_path(conn, number)?;
            let args = vec![
                ("UseMaximumSize", Variant::Bool(true)),
                ("AssignDriveLetter", Variant::Bool(false)),
                ("GptType", str_arg(gpt_type)),
            ];
            method_result(
                call(conn, "MSFT_Disk", &path, "CreatePartition", args)?,
                "MSFT_Disk.CreatePartition",
            )
        })
    }

    fn partitions(&self, disk: u32) -> Result<Vec<PartitionObject>> {
        cim::with(Namespace::Storage, |conn| {
            let wql = format!("SELECT * FROM MSFT_Partition WHERE DiskNumber = {disk}");
            let mut partitions = query(conn, &wql)?
                .iter()
                .map(partition_object)
                .collect::<Result<Vec<_>>>()?;
            partitions.sort_by_key(|p| p.partition_number);
            Ok(partitions)
        })
    }

    fn partition_set_online(
        &self,
        disk: u32,
        partition: u32,
        online: bool,
    ) -> Result<MethodResult> {
        let method = if online { "Online" } else { "Offline" };
        cim::with(Namespace::Storage, |conn| {
            let path = partition_path(conn, disk, partition)?;
            method_result(call(conn, "MSFT_Partition", &path, method, vec![])?, method)
        })
    }

    fn partition_supported_size(
        &self,
        disk: u32,
        partition: u32,
    ) -> Result<MethodResult<SupportedSize>> {
        cim::with(Namespace::Storage, |conn| {
            let path = partition_path(conn, disk, partition)?;
            let name = "MSFT_Partition.GetSupportedSize";
            let out = call(conn, "MSFT_Partition", &path, "GetSupportedSize", vec![])?;
            let code = return_value(out.as_ref(), name)?;
            let out = out.expect("return_value checked it is there");
            let sizes = if code == 0 {
                SupportedSize {
                    min: unsigned(&out, "SizeMin")?,
                    max: unsigned(&out, "SizeMax")?,
                }
            } else {
                SupportedSize::default()
            };
            Ok(MethodResult { code, out: sizes })
        })
    }

    fn partition_resize(&self, disk: u32, partition: u32, size: u64) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let path = partition_path(conn, disk, partition)?;
            let args = vec![("Size", Variant::UI8(size))];
            method_result(
                call(conn, "MSFT_Partition", &path, "Resize", args)?,
                "MSFT_Partition.Resize",
            )
        })
    }

    fn partition_volumes(&self, disk: u32, partition: u32) -> Result<Vec<VolumeObject>> {
        cim::with(Namespace::Storage, |conn| {
            let path = partition_path(conn, disk, partition)?;
            associators(conn, &path, "MSFT_PartitionToVolume", "MSFT_Volume")?
                .iter()
                .map(volume_object)
                .collect()
        })
    }

    fn volumes(&self, id: &str) -> Result<Vec<VolumeObject>> {
        cim::with(Namespace::Storage, |conn| {
            volumes_with_id(conn, id)?
                .iter()
                .map(volume_object)
                .collect()
        })
    }

    fn volume_partitions(&self, id: &str) -> Result<Vec<PartitionObject>> {
        cim::with(Namespace::Storage, |conn| {
            let Some(volume) = volumes_with_id(conn, id)?.into_iter().next() else {
                return Ok(Vec::new());
            };
            let path = cim::object_path(&volume)?;
            associators(conn, &path, "MSFT_PartitionToVolume", "MSFT_Partition")?
                .iter()
                .map(partition_object)
                .collect()
        })
    }

    fn volume_format_ntfs(&self, id: &str) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let path = volume_path(conn, id)?;
            let args = vec![
                ("FileSystem", str_arg("NTFS")),
                ("FileSystemLabel", str_arg("")),
                ("Full", Variant::Bool(false)),
                ("Force", Variant::Bool(true)),
            ];
            method_result(
                call(conn, "MSFT_Volume", &path, "Format", args)?,
                "MSFT_Volume.Format",
            )
        })
    }

    fn volume_flush(&self, id: &str) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let path = volume_path(conn, id)?;
            method_result(
                call(conn, "MSFT_Volume", &path, "Flush", vec![])?,
                "MSFT_Volume.Flush",
            )
        })
    }

    fn set_volume_mount_point(&self, mount_point: &str, volume_id: &str) -> Result<()> {
        win32::set_volume_mount_point(mount_point, volume_id)
    }

    fn delete_volume_mount_point(&self, mount_point: &str) -> Result<()> {
        win32::delete_volume_mount_point(mount_point)
    }

    fn volume_path_name(&self, path: &str) -> Result<String> {
        win32::volume_path_name(path)
    }

    fn disk_free_space(&self, path: &str) -> Result<DiskSpace> {
        win32::disk_free_space(path)
    }

    fn volume_name_for_mount_point(&self, mount_point: &str) -> Result<String> {
        win32::volume_name_for_mount_point(mount_point)
    }

    fn file_kind(&self, path: &str) -> Result<FileKind> {
        let path = without_trailing_separator(path);
        let meta = std::fs::symlink_metadata(path).map_err(io_failure)?;
        let attributes = meta.file_attributes();
        if attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
            let tag = win32::reparse_tag(path)?;
            if tag == IO_REPARSE_TAG_SYMLINK || tag == IO_REPARSE_TAG_MOUNT_POINT {
                // std reads the reparse data (FSCTL_GET_REPARSE_POINT) and
                // turns the stored `\??\` prefix into the path users write.
                let target = std::fs::read_link(path)
                    .map_err(io_failure)?
                    .to_string_lossy()
                    .into_owned();
                return Ok(if tag == IO_REPARSE_TAG_SYMLINK {
                    FileKind::Symlink {
                        target,
                        directory: attributes & FILE_ATTRIBUTE_DIRECTORY != 0,
                    }
                } else {
                    FileKind::MountPoint { target }
                });
            }
        }
        Ok(if attributes & FILE_ATTRIBUTE_DIRECTORY != 0 {
            FileKind::Directory
        } else {
            FileKind::File
        })
    }

    fn file_attributes(&self, path: &str) -> Result<u32> {
        win32::file_attributes(path)
    }

    fn create_directory(&self, path: &str) -> Result<()> {
        std::fs::create_dir(without_trailing_separator(path)).map_err(io_failure)
    }

    fn remove_directory(&self, path: &str) -> Result<()> {
        std::fs::remove_dir(without_trailing_separator(path)).map_err(io_failure)
    }

    fn delete_file(&self, path: &str) -> Result<()> {
        std::fs::remove_file(without_trailing_separator(path)).map_err(io_failure)
    }

    fn list_directory(&self, path: &str) -> Result<Vec<String>> {
        std::fs::read_dir(without_trailing_separator(path))
            .map_err(io_failure)?
            .map(|entry| {
                entry
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .map_err(io_failure)
            })
            .collect()
    }

    fn create_symbolic_link(&self, link: &str, target: &str, directory: bool) -> Result<()> {
        // std calls CreateSymbolicLinkW with ALLOW_UNPRIVILEGED_CREATE (and
        // again without it on systems that do not know the flag). The
        // target is stored as given (an SMB link's keeps its `\`).
        let link = without_trailing_separator(link);
        let made = if directory {
            std::os::windows::fs::symlink_dir(target, link)
        } else {
            std::os::windows::fs::symlink_file(target, link)
        };
        made.map_err(io_failure)
    }

    fn smb_global_mappings(&self, remote_path: &str) -> Result<Vec<SmbMappingObject>> {
        cim::with(Namespace::Smb, |conn| {
            let wql = format!(
                "SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = {}",
                wql_string(remote_path)
            );
            query(conn, &wql)?
                .iter()
                .map(|m| {
                    Ok(SmbMappingObject {
                        remote_path: string(m, "RemotePath")?,
                        status: u32_prop(m, "Status")?,
                    })
                })
                .collect()
        })
    }

    fn smb_new_global_mapping(
        &self,
        remote_path: &str,
        user: &str,
        password: &str,
        require_privacy: bool,
    ) -> Result<MethodResult> {
        cim::with(Namespace::Smb, |conn| {
            let mut args = vec![
                ("RemotePath", str_arg(remote_path)),
                ("RequirePrivacy", Variant::Bool(require_privacy)),
            ];
            if !user.is_empty() {
                args.push((
                    "Credential",
                    Variant::String(credential::join(user, password)),
                ));
            }
            let class = "MSFT_SmbGlobalMapping";
            method_result(
                call(conn, class, class, "Create", args)?,
                "MSFT_SmbGlobalMapping.Create",
            )
        })
    }

    fn smb_remove_global_mapping(&self, remote_path: &str) -> Result<MethodResult> {
        cim::with(Namespace::Smb, |conn| {
            let wql = format!(
                "SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = {}",
                wql_string(remote_path)
            );
            let path = path_of(conn, &wql)?;
            let args = vec![("Force", Variant::Bool(true))];
            method_result(
                call(conn, "MSFT_SmbGlobalMapping", &path, "Remove", args)?,
                "MSFT_SmbGlobalMapping.Remove",
            )
        })
    }

    fn iscsi_portals(&self) -> Result<Vec<PortalObject>> {
        cim::with(Namespace::Storage, |conn| {
            query(conn, "SELECT * FROM MSFT_iSCSITargetPortal")?
                .iter()
                .map(|p| {
                    Ok(PortalObject {
                        address: string(p, "TargetPortalAddress")?,
                        port: u32_prop(p, "TargetPortalPortNumber")?,
                    })
                })
                .collect()
        })
    }

    fn iscsi_new_portal(&self, address: &str, port: u32) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let args = vec![
                ("TargetPortalAddress", str_arg(address)),
                ("TargetPortalPortNumber", Variant::UI2(port as u16)),
            ];
            let class = "MSFT_iSCSITargetPortal";
            method_result(
                call(conn, class, class, "New", args)?,
                "MSFT_iSCSITargetPortal.New",
            )
        })
    }

    fn iscsi_remove_portal(&self, address: &str, port: u32) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let path = portal_path(conn, address, port)?;
            let args = vec![
                ("TargetPortalAddress", str_arg(address)),
                ("TargetPortalPortNumber", Variant::UI2(port as u16)),
            ];
            method_result(
                call(conn, "MSFT_iSCSITargetPortal", &path, "Remove", args)?,
                "MSFT_iSCSITargetPortal.Remove",
            )
        })
    }

    fn iscsi_targets(&self, address: &str, port: u32) -> Result<Vec<TargetObject>> {
        cim::with(Namespace::Storage, |conn| {
            let path = portal_path(conn, address, port)?;
            associators(
                conn,
                &path,
                "MSFT_iSCSITargetToiSCSITargetPortal",
                "MSFT_iSCSITarget",
            )?
            .iter()
            .map(|t| {
                Ok(TargetObject {
                    node_address: string(t, "NodeAddress")?,
                    is_connected: boolean(t, "IsConnected")?,
                })
            })
            .collect()
        })
    }

    fn iscsi_connect(
        &self,
        address: &str,
        port: u32,
        iqn: &str,
        auth: IscsiAuthType,
        chap_user: &str,
        chap_secret: &str,
    ) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let kind = match auth {
                IscsiAuthType::None => "NONE",
                IscsiAuthType::OneWayChap => "ONEWAYCHAP",
                IscsiAuthType::MutualChap => "MUTUALCHAP",
            };
            let mut args = vec![
                ("NodeAddress", str_arg(iqn)),
                ("TargetPortalAddress", str_arg(address)),
                ("TargetPortalPortNumber", Variant::UI2(port as u16)),
                ("AuthenticationType", str_arg(kind)),
            ];
            if auth != IscsiAuthType::None {
                args.push(("ChapUsername", str_arg(chap_user)));
                args.push(("ChapSecret", str_arg(chap_secret)));
            }
            let class = "MSFT_iSCSITarget";
            method_result(
                call(conn, class, class, "Connect", args)?,
                "MSFT_iSCSITarget.Connect",
            )
        })
    }

    fn iscsi_sessions(&self, iqn: &str) -> Result<Vec<SessionObject>> {
        cim::with(Namespace::Storage, |conn| {
            let path = target_path(conn, iqn)?;
            associators(
                conn,
                &path,
                "MSFT_iSCSITargetToiSCSISession",
                "MSFT_iSCSISession",
            )?
            .iter()
            .map(|s| {
                Ok(SessionObject {
                    identifier: string(s, "SessionIdentifier")?,
                    is_persistent: boolean(s, "IsPersistent")?,
                })
            })
            .collect()
        })
    }

    fn iscsi_unregister_session(&self, identifier: &str) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let wql = format!(
                "SELECT * FROM MSFT_iSCSISession WHERE SessionIdentifier = {}",
                wql_string(identifier)
            );
            let path = path_of(conn, &wql)?;
            method_result(
                call(conn, "MSFT_iSCSISession", &path, "Unregister", vec![])?,
                "MSFT_iSCSISession.Unregister",
            )
        })
    }

    fn iscsi_disconnect(&self, iqn: &str, session: &str) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let path = target_path(conn, iqn)?;
            let args = vec![("SessionIdentifier", str_arg(session))];
            method_result(
                call(conn, "MSFT_iSCSITarget", &path, "Disconnect", args)?,
                "MSFT_iSCSITarget.Disconnect",
            )
        })
    }

    fn iscsi_target_disks(&self, iqn: &str) -> Result<Vec<u32>> {
        cim::with(Namespace::Storage, |conn| {
            let path = target_path(conn, iqn)?;
            let mut numbers = Vec::new();
            for session in associators(
                conn,
                &path,
                "MSFT_iSCSITargetToiSCSISession",
                "MSFT_iSCSISession",
            )? {
                let session = cim::object_path(&session)?;
                for disk in associators(conn, &session, "MSFT_iSCSISessionToDisk", "MSFT_Disk")? {
                    numbers.push(u32_prop(&disk, "Number")?);
                }
            }
            numbers.sort_unstable();
            numbers.dedup();
            Ok(numbers)
        })
    }

    fn iscsi_set_chap_secret(&self, secret: &str) -> Result<MethodResult> {
        cim::with(Namespace::Storage, |conn| {
            let class = "MSFT_iSCSISession";
            let args = vec![("ChapSecret", str_arg(secret))];
            method_result(
                call(conn, class, class, "SetCHAPSecret", args)?,
                "MSFT_iSCSISession.SetCHAPSecret",
            )
        })
    }

    fn bios_serial_numbers(&self) -> Result<Vec<String>> {
        cim::with(Namespace::Cimv2, |conn| {
            query(conn, "SELECT SerialNumber FROM Win32_BIOS")?
                .iter()
                .map(|b| string(b, "SerialNumber"))
                .collect()
        })
    }

    fn services(&self, name: &str) -> Result<Vec<ServiceObject>> {
        cim::with(Namespace::Cimv2, |conn| {
            let wql = format!(
                "SELECT * FROM Win32_Service WHERE Name = {}",
                wql_string(name)
            );
            query(conn, &wql)?.iter().map(service_object).collect()
        })
    }

    fn service_start(&self, name: &str) -> Result<MethodResult> {
        cim::with(Namespace::Cimv2, |conn| {
            let path = service_path(conn, name)?;
            method_result(
                call(conn, "Win32_Service", &path, "StartService", vec![])?,
                "Win32_Service.StartService",
            )
        })
    }

    fn service_stop(&self, name: &str) -> Result<MethodResult> {
        cim::with(Namespace::Cimv2, |conn| {
            let path = service_path(conn, name)?;
            method_result(
                call(conn, "Win32_Service", &path, "StopService", vec![])?,
                "Win32_Service.StopService",
            )
        })
    }

    fn service_dependents(&self, name: &str) -> Result<Vec<ServiceObject>> {
        cim::with(Namespace::Cimv2, |conn| {
            let path = service_path(conn, name)?;
            let wql = format!(
                "ASSOCIATORS OF {{{path}}} WHERE AssocClass = Win32_DependentService Role = Antecedent"
            );
            query(conn, &wql)?.iter().map(service_object).collect()
        })
    }
}
