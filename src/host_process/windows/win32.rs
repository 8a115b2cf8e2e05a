//! The Win32 and COM calls that std does not offer: volume mount points,
//! volume names, file attributes, a reparse point's tag, the disk id
//! ioctl, and the process's hold on COM's multithreaded apartment.
//!
//! Paths are spelled as each call needs (`super::super::encoding`): the
//! mount point calls get one trailing `\`, the others none.
//!
//! The one module of the crate allowed `unsafe`: each of these is an FFI
//! call through the `windows` crate, on buffers this module owns, sized
//! for the call; every result is copied into owned Rust values before it
//! leaves the module.
#![allow(unsafe_code)]

use std::sync::Mutex;

use windows::Win32::Foundation::HANDLE;
use windows::Win32::Storage::FileSystem::{
    DeleteVolumeMountPointW, FindClose, FindFirstFileW, GetDiskFreeSpaceExW, GetFileAttributesW,
    GetVolumeNameForVolumeMountPointW, GetVolumePathNameW, INVALID_FILE_ATTRIBUTES,
    SetVolumeMountPointW, WIN32_FIND_DATAW,
};
use windows::Win32::System::Com::{
    CoIncrementMTAUsage, CoInitializeSecurity, EOAC_NONE, RPC_C_AUTHN_LEVEL_DEFAULT,
    RPC_C_IMP_LEVEL_IMPERSONATE,
};
use windows::Win32::System::IO::DeviceIoControl;
use windows::Win32::System::Ioctl::{
    IOCTL_STORAGE_QUERY_PROPERTY, PropertyStandardQuery, STORAGE_PROPERTY_QUERY,
    StorageDeviceIdProperty,
};
use windows::core::HSTRING;

use crate::host_process::boundary::{DiskSpace, Failure, Result};
use crate::host_process::encoding::{with_trailing_separator, without_trailing_separator};

/// Longest path the volume calls are given room for (the long-path limit).
const PATH_CHARS: usize = 32_768;
/// Room for a `STORAGE_DEVICE_ID_DESCRIPTOR` and its identifiers.
const DEVICE_ID_BYTES: usize = 4096;

/// A Win32 call's failure as the boundary reports it: the Win32 code out of
/// the `HRESULT_FROM_WIN32` the `windows` crate made, and the system's text.
pub(super) fn win32_failure(e: &windows::core::Error) -> Failure {
    let hresult = e.code().0 as u32;
    let code = if hresult & 0xFFFF_0000 == 0x8007_0000 {
        hresult & 0xFFFF
    } else {
        hresult
    };
    Failure::win32(code, e.message().trim_end())
}

fn wide(s: &str) -> HSTRING {
    HSTRING::from(s)
}

fn until_nul(buf: &[u16]) -> String {
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    String::from_utf16_lossy(&buf[..end])
}

/// `SetVolumeMountPointW` (the mount point with its trailing `\`).
pub(super) fn set_volume_mount_point(mount_point: &str, volume: &str) -> Result<()> {
    let mount_point = wide(&with_trailing_separator(mount_point));
    // SAFETY: both arguments are NUL-terminated wide strings that outlive the call.
    unsafe { SetVolumeMountPointW(&mount_point, &wide(volume)) }.map_err(|e| win32_failure(&e))
}

/// `DeleteVolumeMountPointW` (the mount point with its trailing `\`).
pub(super) fn delete_volume_mount_point(mount_point: &str) -> Result<()> {
    let mount_point = wide(&with_trailing_separator(mount_point));
    // SAFETY: a NUL-terminated wide string that outlives the call.
    unsafe { DeleteVolumeMountPointW(&mount_point) }.map_err(|e| win32_failure(&e))
}

/// `GetVolumePathNameW`.
pub(super) fn volume_path_name(path: &str) -> Result<String> {
    let mut buf = vec![0u16; PATH_CHARS];
    // SAFETY: the output slice is ours and its length is passed with it.
    unsafe { GetVolumePathNameW(&wide(path), &mut buf) }.map_err(|e| win32_failure(&e))?;
    Ok(until_nul(&buf))
}

/// `GetVolumeNameForVolumeMountPointW` (the mount point with its trailing `\`).
pub(super) fn volume_name_for_mount_point(mount_point: &str) -> Result<String> {
    let mount_point = wide(&with_trailing_separator(mount_point));
    // A volume GUID path is 49 characters and a NUL; the documented
    // recommendation is 50, more costs nothing.
    let mut buf = vec![0u16; 260];
    // SAFETY: the output slice is ours and its length is passed with it.
    unsafe { GetVolumeNameForVolumeMountPointW(&mount_point, &mut buf) }
        .map_err(|e| win32_failure(&e))?;
    Ok(until_nul(&buf))
}

/// `GetFileAttributesW` (no trailing separator).
pub(super) fn file_attributes(path: &str) -> Result<u32> {
    let path = wide(without_trailing_separator(path));
    // SAFETY: a NUL-terminated wide string that outlives the call.
    let attributes = unsafe { GetFileAttributesW(&path) };
    if attributes == INVALID_FILE_ATTRIBUTES {
        return Err(win32_failure(&windows::core::Error::from_thread()));
    }
    Ok(attributes)
}

/// `GetDiskFreeSpaceExW` on the directory `path`, given with a trailing
/// `\` (a share's root needs it: `\\server\share\`).
pub(super) fn disk_free_space(path: &str) -> Result<DiskSpace> {
    let path = wide(&with_trailing_separator(path));
    let mut space = DiskSpace::default();
    // SAFETY: a NUL-terminated wide string and three u64 outputs, all ours
    // and alive for the call.
    unsafe {
        GetDiskFreeSpaceExW(
            &path,
            Some(&mut space.available),
            Some(&mut space.total),
            Some(&mut space.free),
        )
    }
    .map_err(|e| win32_failure(&e))?;
    Ok(space)
}

/// The reparse tag of the reparse point at `path` (`FindFirstFileW` puts
/// it in `dwReserved0` when the file has `FILE_ATTRIBUTE_REPARSE_POINT`).
/// `FindFirstFileW` fails on a trailing separator: it is cut.
pub(super) fn reparse_tag(path: &str) -> Result<u32> {
    let path = wide(without_trailing_separator(path));
    let mut data = WIN32_FIND_DATAW::default();
    // SAFETY: `data` is a properly sized, writable WIN32_FIND_DATAW.
    let handle: HANDLE =
        unsafe { FindFirstFileW(&path, &mut data) }.map_err(|e| win32_failure(&e))?;
    // SAFETY: `handle` came from FindFirstFileW and is closed once.
    let _ = unsafe { FindClose(handle) };
    Ok(data.dwReserved0)
}

/// `IOCTL_STORAGE_QUERY_PROPERTY` for `StorageDeviceIdProperty` on an open
/// disk: the raw descriptor, as many bytes as the driver returned.
pub(super) fn storage_device_id(device: HANDLE) -> Result<Vec<u8>> {
    let query = STORAGE_PROPERTY_QUERY {
        PropertyId: StorageDeviceIdProperty,
        QueryType: PropertyStandardQuery,
        ..Default::default()
    };
    let mut buf = vec![0u8; DEVICE_ID_BYTES];
    let mut returned = 0u32;
    // SAFETY: the input is our query struct and its size; the output is our
    // buffer and its size; `returned` is a writable u32; no OVERLAPPED, so
    // the call completes before it returns.
    unsafe {
        DeviceIoControl(
            device,
            IOCTL_STORAGE_QUERY_PROPERTY,
            Some(std::ptr::from_ref(&query).cast()),
            size_of::<STORAGE_PROPERTY_QUERY>() as u32,
            Some(buf.as_mut_ptr().cast()),
            buf.len() as u32,
            Some(&mut returned),
            None,
        )
    }
    .map_err(|e| win32_failure(&e))?;
    buf.truncate(returned as usize);
    Ok(buf)
}

/// Makes sure the process holds COM's multithreaded apartment
/// (`CoIncrementMTAUsage`), taking the hold on the first call and keeping
/// it for the life of the process, and sets the process's COM security
/// once (`CoInitializeSecurity`, impersonation: what WMI's storage and SMB
/// providers need to act for the caller).
///
/// While the hold lasts, every thread that has not entered COM itself is
/// in the multithreaded apartment implicitly, so the blocking threads the
/// backend calls from need no `CoInitializeEx` and have no
/// `CoUninitialize` to run when they exit. The hold is never released: a
/// release at process exit would race COM's own teardown, which is what
/// this avoids (see the module docs of `super`).
pub(super) fn hold_process_mta() -> Result<()> {
    static HELD: Mutex<bool> = Mutex::new(false);
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    if *held {
        return Ok(());
    }
    // SAFETY: no arguments; the cookie is deliberately never passed to
    // CoDecrementMTAUsage (the hold lasts until the process ends).
    let _cookie = unsafe { CoIncrementMTAUsage() }
        .map_err(|e| Failure::com(e.code().0 as u32, e.message()))?;
    // SAFETY: every pointer argument is None; called once, with COM
    // initialised. RPC_E_TOO_LATE (the process, or COM on its behalf, set
    // security first) leaves that setting in place.
    let _ = unsafe {
        CoInitializeSecurity(
            None,
            -1,
            None,
            None,
            RPC_C_AUTHN_LEVEL_DEFAULT,
            RPC_C_IMP_LEVEL_IMPERSONATE,
            None,
            EOAC_NONE,
            None,
        )
    };
    *held = true;
    Ok(())
}
