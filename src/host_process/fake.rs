//! [`FakeWindows`]: the boundary over the simulated host (feature `server`
//! with `host-process`), so the HostProcess backend runs on any platform
//! against the same disks, partitions, volumes, namespace and SMB shares
//! as `MockHost` and the reference server.
//!
//! Each method does what its Windows counterpart does, with the simulated
//! host's primitives: WMI methods return the codes the simulator's storage
//! model gives (`host::storage::wmi`), Win32 calls the namespace's Win32
//! errors, services the system model's states and codes, iSCSI the
//! initiator model's portals, targets and sessions
//! (`host::iscsi`, its WMI view): a login attaches the target's LUNs as
//! disks, a logout detaches them, and every iSCSI call fails with
//! `ISDSC_SERVICE_NOT_RUNNING` while `MSiSCSI` is stopped.
//!
//! `disk_free_space` answers from the simulated volume's size and use, or
//! for a path whose links reach a share, from the share's space while its
//! mapping grants access (the Win32 error otherwise, as any access).
//!
//! [`FakeWindows::answer_next`] makes the next call of a WMI method report
//! a return code after doing its work, as Windows does when it creates a
//! partition but cannot give it an access path (42002);
//! [`FakeWindows::method_calls`] counts the calls of each WMI method;
//! [`FakeWindows::refuse_open`] makes opening one path fail while its
//! attributes can still be read, as an SMB server that refuses a handle on
//! its share root does.
//!
//! iSCSI methods fail as Windows' initiator provider fails them: an
//! `ISDSC_*` code (`0xEFFFxxxx`) is the HRESULT of the call
//! ([`Failure::Com`]), not a `ReturnValue`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::boundary::{
    DeviceId, DiskObject, DiskSpace, Failure, FileKind, IscsiAuthType, MethodResult,
    PartitionObject, PortalObject, Result, ServiceObject, SessionObject, SmbMappingObject,
    SupportedSize, TargetObject, VolumeObject, WindowsHost,
};
use crate::host::iscsi::{AuthenticationType, ISDSC_SERVICE_NOT_RUNNING, IscsiState, NodeDisks};
use crate::host::namespace::{Entry, LinkKind};
use crate::host::path::{Win32Error, WinPath};
use crate::host::smb::parse_remote_path;
use crate::host::storage::{
    Disk, FileSystem, GPT_EFI, Page83, Partition, PartitionSize, PartitionStyle, PartitionType,
    Volume,
};
use crate::host::{Host, HostError, HostState};

/// `WBEM_E_NOT_FOUND`: the object a method was called on is gone.
pub const WBEM_E_NOT_FOUND: u32 = 0x8004_1002;
/// `MSFT_Disk.SetAttributes`' "the disk is offline" (Windows' storage
/// management documentation of the method).
pub const DISK_OFFLINE: u32 = 41003;
/// `WBEM_E_INVALID_PARAMETER`: a method's argument was refused.
pub const WBEM_E_INVALID_PARAMETER: u32 = 0x8004_1008;

/// Where the fake keeps the node's records on the simulated host by
/// default ([`WindowsHost::state_dir`]), as the real host keeps them under
/// `%ProgramData%`.
pub const FAKE_STATE_DIR: &str = r"C:\ProgramData\csi-proxy-client";

/// The Windows boundary over a simulated [`Host`]. Cheap to clone; clones
/// share the host.
#[derive(Debug, Clone)]
pub struct FakeWindows {
    host: Host,
    answers: Arc<Mutex<HashMap<&'static str, u32>>>,
    calls: Arc<Mutex<HashMap<&'static str, usize>>>,
    refused_opens: Arc<Mutex<Vec<String>>>,
    latency: Arc<Mutex<HashMap<&'static str, Duration>>>,
    null_flags: Arc<Mutex<Vec<u32>>>,
}

impl FakeWindows {
    /// The boundary over `host`.
    pub fn new(host: Host) -> FakeWindows {
        FakeWindows {
            host,
            answers: Arc::default(),
            calls: Arc::default(),
            refused_opens: Arc::default(),
            latency: Arc::default(),
            null_flags: Arc::default(),
        }
    }

    /// From now on, `MSFT_Disk.IsSystem` and `IsBoot` of disk `number` read
    /// as Null, as WMI may answer for a disk whose storage provider does
    /// not fill them.
    pub fn null_system_flags(&self, number: u32) {
        self.null_flags
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(number);
    }

    /// How many times the WMI method `name` (as for
    /// [`answer_next`](Self::answer_next)) was called.
    pub fn method_calls(&self, name: &str) -> usize {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls.get(name).copied().unwrap_or(0)
    }

    /// From now on, opening `path` (spelled as given, case ignored) for
    /// [`WindowsHost::file_kind`] fails with `ERROR_ACCESS_DENIED`, while
    /// [`WindowsHost::file_attributes`] still answers: what an SMB server
    /// that refuses a handle on its bare share root does.
    pub fn refuse_open(&self, path: &str) {
        self.refused_opens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(path.to_string());
    }

    fn open_refused(&self, path: &str) -> bool {
        let refused = self.refused_opens.lock().unwrap_or_else(|p| p.into_inner());
        refused.iter().any(|r| r.eq_ignore_ascii_case(path))
    }

    /// The next call of the WMI method `name` (the [`WindowsHost`] method's
    /// name, such as `"disk_create_partition"`) does its work and then
    /// returns `code` instead of 0.
    pub fn answer_next(&self, name: &'static str, code: u32) {
        self.answers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name, code);
    }

    /// Every later call of the WMI method or Win32 call `name`
    /// (`"volume_format_ntfs"`, `"partition_supported_size"`,
    /// `"smb_new_global_mapping"`, `"smb_remove_global_mapping"`,
    /// `"disk_set_online"`, `"remove_directory"`) waits
    /// `delay` before its work: host time, in real time on the blocking
    /// thread the backend runs the call on, so it goes on when the caller
    /// gives up, as the backend's calls do on Windows. Delays of one
    /// method add up.
    pub fn add_latency(&self, name: &'static str, delay: Duration) {
        *self
            .latency
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name)
            .or_default() += delay;
    }

    /// Calls take no host time again.
    pub fn clear_latency(&self) {
        self.latency
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Waits the host time set for `name` ([`FakeWindows::add_latency`]).
    fn host_time(&self, name: &'static str) {
        let delay = self
            .latency
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .copied();
        if let Some(delay) = delay {
            std::thread::sleep(delay);
        }
    }

    /// `result`, its code replaced by the one set for `name`, if any.
    fn answer<T>(
        &self,
        name: &'static str,
        result: Result<MethodResult<T>>,
    ) -> Result<MethodResult<T>> {
        *self
            .calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name)
            .or_default() += 1;
        let set = self
            .answers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        match (set, result) {
            (Some(code), Ok(r)) if r.code == 0 => Ok(MethodResult { code, out: r.out }),
            (_, result) => result,
        }
    }

    /// The simulated host behind it.
    pub fn host(&self) -> &Host {
        &self.host
    }
}

fn win32(e: Win32Error) -> Failure {
    Failure::win32(e.code(), e.message())
}

/// The disk whose device path is `path`, as opening it finds it.
fn disk_at<'a>(s: &'a HostState, path: &str) -> Result<&'a Disk> {
    s.storage
        .disks()
        .find(|d| d.device_path.eq_ignore_ascii_case(path))
        .ok_or_else(|| win32(Win32Error::new(Win32Error::FILE_NOT_FOUND)))
}

fn parse(path: &str) -> Result<WinPath> {
    WinPath::parse(path).map_err(win32)
}

/// A simulated WMI method's outcome: its return value when the method
/// ran and failed, else the object was not there.
fn method(result: std::result::Result<(), HostError>) -> Result<MethodResult> {
    match result {
        Ok(()) => Ok(MethodResult::code(0)),
        Err(e) => match e.wmi_result() {
            Some(code) => Ok(MethodResult::code(code)),
            None => Err(Failure::com(WBEM_E_NOT_FOUND, e.message())),
        },
    }
}

/// An iSCSI query that could not be made: the initiator service is
/// stopped (the only way the model's queries fail).
fn iscsi_failure(code: u32) -> Failure {
    if code == ISDSC_SERVICE_NOT_RUNNING {
        Failure::com(code, "The Microsoft iSCSI Initiator Service is not running")
    } else {
        Failure::com(code, "the iSCSI call failed")
    }
}

/// An iSCSI WMI method's outcome: its code (before
/// [`iscsi_delivered`]), unless the call could not be made at all (the
/// initiator service is stopped).
fn iscsi_method(result: std::result::Result<(), u32>) -> Result<MethodResult> {
    match result {
        Ok(()) => Ok(MethodResult::code(0)),
        Err(ISDSC_SERVICE_NOT_RUNNING) => Err(iscsi_failure(ISDSC_SERVICE_NOT_RUNNING)),
        Err(code) => Ok(MethodResult::code(code)),
    }
}

/// Whether `code` is one of the iSCSI initiator's own (`ISDSC_*`).
fn is_isdsc(code: u32) -> bool {
    code & 0xFFFF_0000 == 0xEFFF_0000
}

/// An iSCSI method's result as Windows delivers it: the initiator's
/// `ISDSC_*` codes fail the call (they are `ExecMethod`'s HRESULT), they
/// are never a `ReturnValue`.
fn iscsi_delivered(result: Result<MethodResult>) -> Result<MethodResult> {
    match result {
        Ok(r) if is_isdsc(r.code) => Err(iscsi_failure(r.code)),
        other => other,
    }
}

/// `TargetPortalPortNumber` is a 16-bit property.
fn iscsi_port(port: u32) -> Result<u16> {
    u16::try_from(port).map_err(|_| Failure::com(WBEM_E_INVALID_PARAMETER, "port out of range"))
}

fn file_system_type(fs: FileSystem) -> u16 {
    match fs {
        FileSystem::Raw => 0,
        FileSystem::Fat32 => 6,
        FileSystem::Ntfs => 14,
        FileSystem::Refs => 15,
        FileSystem::ExFat => 0x8001,
    }
}

/// `MSFT_Partition` as Windows shows the simulated partition `p` of disk
/// `d`: `IsSystem` on the boot disk's EFI or active (System Reserved)
/// partition.
fn partition_object(d: &Disk, p: &Partition) -> PartitionObject {
    let (gpt_type, mbr_type) = match &p.kind {
        PartitionType::Gpt(t) => (t.clone(), 0),
        PartitionType::Mbr(t) => (String::new(), u16::from(*t)),
    };
    let boots = p.is_active || gpt_type.eq_ignore_ascii_case(GPT_EFI);
    PartitionObject {
        disk_number: d.number,
        partition_number: p.number,
        offset: p.offset,
        size: p.size,
        gpt_type,
        mbr_type,
        is_offline: !p.is_online,
        is_system: d.is_system && boots,
        is_active: p.is_active,
        is_hidden: p.kind.is_hidden(),
    }
}

fn volume_object(s: &HostState, v: &Volume) -> VolumeObject {
    let size = s.storage.volume_size(&v.id).unwrap_or(0);
    let used = if v.fs == FileSystem::Raw {
        size
    } else {
        v.used.min(size)
    };
    VolumeObject {
        unique_id: v.id.clone(),
        file_system_type: file_system_type(v.fs),
        size,
        size_remaining: size - used,
    }
}

fn volume_of_partition(s: &HostState, disk: u32, partition: u32) -> Result<String> {
    s.storage
        .disk(disk)
        .and_then(|d| d.partition(partition))
        .and_then(|p| p.volume.clone())
        .ok_or_else(|| Failure::com(WBEM_E_NOT_FOUND, "no such partition"))
}

/// `Win32_Service` as the simulated host has it now.
fn service_object(s: &mut HostState, name: &str) -> Option<ServiceObject> {
    let status = s.system.refresh(name, Instant::now())?;
    let service = s.system.service(name)?;
    Some(ServiceObject {
        name: service.name.clone(),
        display_name: service.display_name.clone(),
        state: status.state_text().to_string(),
        start_mode: service.start_mode.wmi_text().to_string(),
    })
}

impl FakeWindows {
    fn run<T>(&self, op: impl FnOnce(&mut HostState) -> T) -> T {
        self.host.run(op)
    }

    fn iscsi<T>(&self, op: impl FnOnce(&mut IscsiState, &mut NodeDisks<'_>) -> T) -> T {
        self.run(|s| s.iscsi(op))
    }
}

impl WindowsHost for FakeWindows {
    fn host_name(&self) -> String {
        format!("simulated host {}", self.host.identity())
    }

    fn state_dir(&self) -> Option<std::path::PathBuf> {
        // Made on the simulated host where it is missing, as a real
        // host's `%ProgramData%` is there.
        if !self.host.exists(FAKE_STATE_DIR) {
            let _ = self.host.create_dir(r"C:\ProgramData");
            let _ = self.host.create_dir(FAKE_STATE_DIR);
        }
        self.host.host_path(FAKE_STATE_DIR).ok()
    }

    fn update_host_storage_cache(&self) -> Result<MethodResult> {
        let result = self.run(|s| method(s.rescan()));
        self.answer("update_host_storage_cache", result)
    }

    fn disks(&self) -> Result<Vec<DiskObject>> {
        let null_flags = self
            .null_flags
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        self.run(|s| {
            Ok(s.storage
                .disks()
                .map(|d| DiskObject {
                    number: d.number,
                    location: d.location.clone(),
                    serial_number: d.serial_number.clone(),
                    path: d.device_path.clone(),
                    size: d.size,
                    is_offline: d.is_offline,
                    partition_style: match d.partition_style {
                        PartitionStyle::Raw => 0,
                        PartitionStyle::Mbr => 1,
                        PartitionStyle::Gpt => 2,
                    },
                    is_read_only: d.is_read_only,
                    // The model has one flag for the disk that boots the
                    // node and holds Windows.
                    is_system: (!null_flags.contains(&d.number)).then_some(d.is_system),
                    is_boot: (!null_flags.contains(&d.number)).then_some(d.is_system),
                    bus_type: d.bus_type,
                })
                .collect())
        })
    }

    fn disk_device_id(&self, path: &str) -> Result<DeviceId> {
        self.run(|s| {
            let disk = disk_at(s, path)?;
            if let Some(e) = &disk.probe_error {
                // The simulator keeps the proxy's whole text; the call's part is after the colon.
                let message = e.rsplit(": ").next().unwrap_or(e);
                return Err(Failure::win32(1, message));
            }
            Ok(match &disk.page83 {
                Page83::None => DeviceId::None,
                Page83::Ascii(b) => DeviceId::Ascii(b.clone()),
                Page83::Binary(b) => DeviceId::Binary(b.clone()),
            })
        })
    }

    fn disk_read(&self, path: &str, offset: u64, len: usize) -> Result<Vec<u8>> {
        self.run(|s| {
            let disk = disk_at(s, path)?;
            let len = usize::try_from(disk.size.saturating_sub(offset))
                .unwrap_or(len)
                .min(len);
            s.storage
                .read(disk.number, offset, len)
                .map_err(|e| Failure::win32(1, e.message()))
        })
    }

    fn disk_initialize(&self, number: u32, partition_style: u16) -> Result<MethodResult> {
        let result = {
            let style = match partition_style {
                1 => PartitionStyle::Mbr,
                2 => PartitionStyle::Gpt,
                _ => PartitionStyle::Raw,
            };
            self.run(|s| method(s.storage.initialize(number, style)))
        };
        self.answer("disk_initialize", result)
    }

    fn disk_set_online(&self, number: u32, online: bool) -> Result<MethodResult> {
        self.host_time("disk_set_online");
        let result = self.run(|s| method(s.storage.set_online(number, online)));
        self.answer("disk_set_online", result)
    }

    fn disk_set_read_only(&self, number: u32, read_only: bool) -> Result<MethodResult> {
        let result = self.run(|s| match s.storage.disk_mut_any(number) {
            Some(d) if d.is_offline => Ok(MethodResult::code(DISK_OFFLINE)),
            Some(d) => {
                d.is_read_only = read_only;
                Ok(MethodResult::code(0))
            }
            None => Err(Failure::com(WBEM_E_NOT_FOUND, "no such disk")),
        });
        self.answer("disk_set_read_only", result)
    }

    fn disk_refresh(&self, number: u32) -> Result<MethodResult> {
        let result = {
            self.run(|s| match s.storage.disk(number) {
                Some(_) => Ok(MethodResult::code(0)),
                None => Err(Failure::com(WBEM_E_NOT_FOUND, "no such disk")),
            })
        };
        self.answer("disk_refresh", result)
    }

    fn disk_create_partition(&self, number: u32, gpt_type: &str) -> Result<MethodResult> {
        let result = {
            let kind = PartitionType::Gpt(gpt_type.to_string());
            self.run(|s| {
                method(
                    s.create_partition(number, kind, PartitionSize::Max)
                        .map(drop),
                )
            })
        };
        self.answer("disk_create_partition", result)
    }

    fn partitions(&self, disk: u32) -> Result<Vec<PartitionObject>> {
        self.run(|s| {
            let Some(d) = s.storage.disk(disk) else {
                return Ok(Vec::new());
            };
            Ok(d.partitions
                .iter()
                .map(|p| partition_object(d, p))
                .collect())
        })
    }

    fn partition_set_online(
        &self,
        disk: u32,
        partition: u32,
        online: bool,
    ) -> Result<MethodResult> {
        let result = self.run(|s| method(s.storage.set_partition_online(disk, partition, online)));
        self.answer("partition_set_online", result)
    }

    fn partition_supported_size(
        &self,
        disk: u32,
        partition: u32,
    ) -> Result<MethodResult<SupportedSize>> {
        self.host_time("partition_supported_size");
        // The simulated host's own host time of the query
        // (`Storage::slow_supported_size`), on this blocking thread as any.
        let delay = self.run(|s| s.storage.supported_size_delay());
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        let result = {
            self.run(|s| {
                let id = volume_of_partition(s, disk, partition)?;
                match s.storage.get_supported_size(&id) {
                    Ok((min, max)) => Ok(MethodResult {
                        code: 0,
                        out: SupportedSize { min, max },
                    }),
                    Err(e) => method(Err(e)).map(|r| MethodResult {
                        code: r.code,
                        out: SupportedSize::default(),
                    }),
                }
            })
        };
        self.answer("partition_supported_size", result)
    }

    fn partition_resize(&self, disk: u32, partition: u32, size: u64) -> Result<MethodResult> {
        let result = {
            self.run(|s| {
                let id = volume_of_partition(s, disk, partition)?;
                method(s.storage.resize(&id, size))
            })
        };
        self.answer("partition_resize", result)
    }

    fn partition_volumes(&self, disk: u32, partition: u32) -> Result<Vec<VolumeObject>> {
        self.run(|s| {
            Ok(s.storage
                .volumes_on_disk(disk, partition)
                .iter()
                .filter_map(|id| s.storage.volume(id))
                .map(|v| volume_object(s, v))
                .collect())
        })
    }

    fn volumes(&self, id: &str) -> Result<Vec<VolumeObject>> {
        self.run(|s| {
            Ok(s.storage
                .volume(id)
                .map(|v| volume_object(s, v))
                .into_iter()
                .collect())
        })
    }

    fn volume_partitions(&self, id: &str) -> Result<Vec<PartitionObject>> {
        self.run(|s| {
            let Some(v) = s.storage.volume(id) else {
                return Ok(Vec::new());
            };
            let Some(d) = s.storage.disk(v.disk) else {
                return Ok(Vec::new());
            };
            Ok(s.storage
                .partition_of(v)
                .map(|p| partition_object(d, p))
                .into_iter()
                .collect())
        })
    }

    fn volume_format_ntfs(&self, id: &str) -> Result<MethodResult> {
        self.host_time("volume_format_ntfs");
        let result = self.run(|s| method(s.format_volume_ntfs(id)));
        self.answer("volume_format_ntfs", result)
    }

    fn volume_flush(&self, id: &str) -> Result<MethodResult> {
        let result = self.run(|s| method(s.storage.flush(id)));
        self.answer("volume_flush", result)
    }

    fn set_volume_mount_point(&self, mount_point: &str, volume_id: &str) -> Result<()> {
        let p = parse(mount_point)?;
        self.run(|s| s.ns.set_mount_point(s.ctx(), &p, volume_id).map_err(win32))
    }

    fn delete_volume_mount_point(&self, mount_point: &str) -> Result<()> {
        let p = parse(mount_point)?;
        self.run(|s| s.ns.delete_mount_point(s.ctx(), &p).map_err(win32))
    }

    fn volume_path_name(&self, path: &str) -> Result<String> {
        let p = parse(path)?;
        self.run(|s| {
            s.ns.volume_path_name(s.ctx(), &p)
                .map(|(mount, _)| mount)
                .map_err(win32)
        })
    }

    fn volume_name_for_mount_point(&self, mount_point: &str) -> Result<String> {
        let p = parse(mount_point)?;
        self.run(|s| {
            let (_, volume) = s.ns.volume_path_name(s.ctx(), &p).map_err(win32)?;
            let id = volume.ok_or_else(|| win32(Win32Error::new(Win32Error::INVALID_PARAMETER)))?;
            s.storage
                .present_volume(&id)
                .ok_or_else(|| win32(Win32Error::new(Win32Error::NOT_READY)))
        })
    }

    fn file_kind(&self, path: &str) -> Result<FileKind> {
        let p = parse(path)?;
        if self.open_refused(path) {
            return Err(win32(Win32Error::new(Win32Error::ACCESS_DENIED)));
        }
        self.run(|s| {
            Ok(match s.ns.lstat(s.ctx(), &p).map_err(win32)? {
                Entry::Dir => FileKind::Directory,
                Entry::File { .. } => FileKind::File,
                Entry::Link(l) => match l.kind {
                    LinkKind::Dir | LinkKind::File => FileKind::Symlink {
                        target: l.target,
                        directory: l.kind == LinkKind::Dir,
                    },
                    LinkKind::Junction | LinkKind::Mount => {
                        FileKind::MountPoint { target: l.target }
                    }
                },
            })
        })
    }

    fn file_attributes(&self, path: &str) -> Result<u32> {
        const DIRECTORY: u32 = 0x10;
        const NORMAL: u32 = 0x80;
        const REPARSE_POINT: u32 = 0x400;
        let p = parse(path)?;
        self.run(|s| {
            Ok(match s.ns.lstat(s.ctx(), &p).map_err(win32)? {
                Entry::Dir => DIRECTORY,
                Entry::File { .. } => NORMAL,
                Entry::Link(l) if l.kind == LinkKind::File => REPARSE_POINT,
                Entry::Link(_) => REPARSE_POINT | DIRECTORY,
            })
        })
    }

    fn create_directory(&self, path: &str) -> Result<()> {
        let p = parse(path)?;
        self.run(|s| {
            if s.ns.lstat(s.ctx(), &p).is_ok() {
                return Err(win32(Win32Error::new(Win32Error::ALREADY_EXISTS)));
            }
            if let Some(parent) = p.parent() {
                match s.ns.resolve(s.ctx(), &parent) {
                    Ok(w) if w.entry == Some(Entry::Dir) => {}
                    _ => return Err(win32(Win32Error::new(Win32Error::PATH_NOT_FOUND))),
                }
            }
            s.ns.mkdir_all(s.ctx(), &p).map_err(win32)
        })
    }

    fn remove_directory(&self, path: &str) -> Result<()> {
        self.host_time("remove_directory");
        let p = parse(path)?;
        self.run(|s| match s.ns.lstat(s.ctx(), &p).map_err(win32)? {
            Entry::File { .. } => Err(win32(Win32Error::new(Win32Error::DIRECTORY))),
            Entry::Link(l) if l.kind == LinkKind::File => {
                Err(win32(Win32Error::new(Win32Error::DIRECTORY)))
            }
            _ => s.ns.remove(s.ctx(), &p).map_err(win32),
        })
    }

    fn delete_file(&self, path: &str) -> Result<()> {
        let p = parse(path)?;
        self.run(|s| match s.ns.lstat(s.ctx(), &p).map_err(win32)? {
            Entry::File { .. } => s.ns.remove(s.ctx(), &p).map_err(win32),
            Entry::Link(l) if l.kind == LinkKind::File => s.ns.remove(s.ctx(), &p).map_err(win32),
            _ => Err(win32(Win32Error::new(Win32Error::ACCESS_DENIED))),
        })
    }

    fn list_directory(&self, path: &str) -> Result<Vec<String>> {
        let p = parse(path)?;
        self.run(|s| s.ns.list_dir(s.ctx(), &p).map_err(win32))
    }

    fn create_symbolic_link(&self, link: &str, target: &str, directory: bool) -> Result<()> {
        let at = parse(link)?;
        let kind = if directory {
            LinkKind::Dir
        } else {
            LinkKind::File
        };
        self.run(|s| s.ns.create_link(s.ctx(), &at, kind, target).map_err(win32))
    }

    fn disk_free_space(&self, path: &str) -> Result<DiskSpace> {
        use crate::win::path::WinRoot;
        let p = parse(path)?;
        self.run(|s| {
            let walk = s.ns.resolve(s.ctx(), &p).map_err(win32)?;
            if let WinRoot::Unc { server, share } = walk.win.root_kind() {
                let space = s
                    .smb
                    .share_space(server, share)
                    .map_err(|e| Failure::win32(e.code, e.message()))?;
                return Ok(DiskSpace {
                    total: space.capacity,
                    free: space.free,
                    available: space.free,
                });
            }
            let id = walk
                .volume
                .ok_or_else(|| win32(Win32Error::new(Win32Error::PATH_NOT_FOUND)))?;
            let stats = s
                .get_volume_stats(&id)
                .map_err(|_| win32(Win32Error::new(Win32Error::NOT_READY)))?;
            let (total, used) = (stats.total_bytes as u64, stats.used_bytes as u64);
            Ok(DiskSpace {
                total,
                free: total - used,
                available: total - used,
            })
        })
    }

    fn smb_global_mappings(&self, remote_path: &str) -> Result<Vec<SmbMappingObject>> {
        self.run(|s| {
            Ok(s.smb
                .mapping(remote_path)
                .map(|m| SmbMappingObject {
                    remote_path: m.remote_path.clone(),
                    status: m.status.code(),
                })
                .into_iter()
                .collect())
        })
    }

    fn smb_new_global_mapping(
        &self,
        remote_path: &str,
        user: &str,
        password: &str,
        _require_privacy: bool,
    ) -> Result<MethodResult> {
        self.host_time("smb_new_global_mapping");
        let result = {
            // The simulated SMB client takes privacy from its own configuration.
            let remote = parse_remote_path(remote_path)
                .map_err(|e| Failure::com(WBEM_E_NOT_FOUND, e.message()))?;
            // The SMB client's refusal (85 over a stale mapping, 1219 for
            // another account on the server) is modelled as the method
            // raising the Win32 error as an HRESULT of facility Win32, the
            // way the SMB provider reports a Windows error (PowerShell shows
            // it as `Windows System Error N`); only a real node can confirm
            // the HRESULT ExecMethod returns.
            self.run(|s| match s.smb.create_mapping(&remote, user, password) {
                Ok(()) => Ok(MethodResult::code(0)),
                Err(e) => Err(Failure::com(0x8007_0000 | e.code, e.message())),
            })
        };
        self.answer("smb_new_global_mapping", result)
    }

    fn smb_remove_global_mapping(&self, remote_path: &str) -> Result<MethodResult> {
        self.host_time("smb_remove_global_mapping");
        let result = {
            self.run(|s| {
                s.smb
                    .remove_smb_global_mapping(remote_path)
                    .map(|()| MethodResult::code(0))
                    .map_err(|e| Failure::com(WBEM_E_NOT_FOUND, e.message()))
            })
        };
        self.answer("smb_remove_global_mapping", result)
    }

    fn iscsi_portals(&self) -> Result<Vec<PortalObject>> {
        let portals = self.iscsi(|i, d| i.wmi_portals(d)).map_err(iscsi_failure)?;
        Ok(portals
            .into_iter()
            .map(|p| PortalObject {
                address: p.address,
                port: u32::from(p.port),
            })
            .collect())
    }

    fn iscsi_new_portal(&self, address: &str, port: u32) -> Result<MethodResult> {
        let port = iscsi_port(port)?;
        let result = iscsi_method(self.iscsi(|i, d| i.wmi_new_portal(d, address, port)));
        iscsi_delivered(self.answer("iscsi_new_portal", result))
    }

    fn iscsi_remove_portal(&self, address: &str, port: u32) -> Result<MethodResult> {
        let port = iscsi_port(port)?;
        let result = match self.iscsi(|i, d| i.wmi_remove_portal(d, address, port)) {
            Ok(true) => Ok(MethodResult::code(0)),
            Ok(false) => Err(Failure::com(WBEM_E_NOT_FOUND, "no such target portal")),
            Err(code) => Err(iscsi_failure(code)),
        };
        iscsi_delivered(self.answer("iscsi_remove_portal", result))
    }

    fn iscsi_targets(&self, address: &str, port: u32) -> Result<Vec<TargetObject>> {
        let port = iscsi_port(port)?;
        let targets = self
            .iscsi(|i, d| i.wmi_targets(d, address, port))
            .map_err(iscsi_failure)?
            .ok_or_else(|| Failure::com(WBEM_E_NOT_FOUND, "no such target portal"))?;
        Ok(targets
            .into_iter()
            .map(|(node_address, is_connected)| TargetObject {
                node_address,
                is_connected,
            })
            .collect())
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
        let port = iscsi_port(port)?;
        let auth = match auth {
            IscsiAuthType::None => AuthenticationType::None,
            IscsiAuthType::OneWayChap => AuthenticationType::OneWayChap,
            IscsiAuthType::MutualChap => AuthenticationType::MutualChap,
        };
        let result = iscsi_method(
            self.iscsi(|i, d| i.wmi_connect(d, address, port, iqn, auth, chap_user, chap_secret)),
        );
        iscsi_delivered(self.answer("iscsi_connect", result))
    }

    fn iscsi_sessions(&self, iqn: &str) -> Result<Vec<SessionObject>> {
        let sessions = self
            .iscsi(|i, d| i.wmi_sessions(d, iqn))
            .map_err(iscsi_failure)?;
        Ok(sessions
            .into_iter()
            .map(|s| SessionObject {
                identifier: s.id,
                is_persistent: s.persistent,
            })
            .collect())
    }

    fn iscsi_unregister_session(&self, identifier: &str) -> Result<MethodResult> {
        let result = iscsi_method(self.iscsi(|i, d| i.wmi_unregister(d, identifier)));
        iscsi_delivered(self.answer("iscsi_unregister_session", result))
    }

    fn iscsi_disconnect(&self, iqn: &str, session: &str) -> Result<MethodResult> {
        let result = iscsi_method(self.iscsi(|i, d| i.wmi_disconnect(d, iqn, session)));
        iscsi_delivered(self.answer("iscsi_disconnect", result))
    }

    fn iscsi_target_disks(&self, iqn: &str) -> Result<Vec<u32>> {
        self.iscsi(|i, d| i.wmi_target_disks(d, iqn))
            .map_err(iscsi_failure)
    }

    fn iscsi_set_chap_secret(&self, secret: &str) -> Result<MethodResult> {
        let result = iscsi_method(self.iscsi(|i, d| i.wmi_set_chap_secret(d, secret)));
        iscsi_delivered(self.answer("iscsi_set_chap_secret", result))
    }

    fn bios_serial_numbers(&self) -> Result<Vec<String>> {
        self.run(|s| Ok(s.system.bios_serial_number().ok().into_iter().collect()))
    }

    fn services(&self, name: &str) -> Result<Vec<ServiceObject>> {
        self.run(|s| Ok(service_object(s, name).into_iter().collect()))
    }

    fn service_start(&self, name: &str) -> Result<MethodResult> {
        self.run(|s| match s.system.invoke_start(name, Instant::now()) {
            Some(code) => Ok(MethodResult::code(code)),
            None => Err(Failure::com(WBEM_E_NOT_FOUND, "no such service")),
        })
    }

    fn service_stop(&self, name: &str) -> Result<MethodResult> {
        self.run(|s| match s.system.invoke_stop(name, Instant::now()) {
            Some(code) => Ok(MethodResult::code(code)),
            None => Err(Failure::com(WBEM_E_NOT_FOUND, "no such service")),
        })
    }

    fn service_dependents(&self, name: &str) -> Result<Vec<ServiceObject>> {
        self.run(|s| {
            let names = s.system.dependents(name);
            Ok(names.iter().filter_map(|n| service_object(s, n)).collect())
        })
    }
}
