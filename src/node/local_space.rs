//! Proxy mode's own view of a staged SMB volume on Windows: the proxy's
//! API has no call for a share's size (csi-proxy#208), so the plugin asks
//! Windows itself, `GetDiskFreeSpaceExW` on the path, as k8s' statfs on
//! Windows does (kubernetes pkg/volume/util/fs/fs_windows.go) and
//! csi-driver-smb's NodeGetVolumeStats through it. The plugin's container
//! sees kubelet's directory, and the SMB global mapping behind the link
//! serves every container of the node. Run here under Wine only, on local
//! directories: a real node's shares are not tried.
//!
//! The second module of the crate allowed `unsafe` (after HostProcess
//! mode's `win32.rs`): one FFI call on buffers it owns, declared here so
//! that proxy-mode builds need no `windows` crate.
#![allow(unsafe_code)]

use std::os::windows::ffi::OsStrExt;

#[link(name = "kernel32")]
unsafe extern "system" {
    fn GetDiskFreeSpaceExW(
        directory: *const u16,
        available_to_caller: *mut u64,
        total: *mut u64,
        free: *mut u64,
    ) -> i32;
}

/// Total, free and free-to-the-caller bytes of what the directory `path`
/// reaches, links followed.
pub(super) fn disk_free_space(path: &str) -> std::io::Result<(u64, u64, u64)> {
    let mut dir = path.to_string();
    if !dir.ends_with('\\') {
        dir.push('\\');
    }
    let wide: Vec<u16> = std::ffi::OsStr::new(&dir)
        .encode_wide()
        .chain(std::iter::once(0))
        .collect();
    let (mut available, mut total, mut free) = (0u64, 0u64, 0u64);
    // SAFETY: a NUL-terminated wide string and three u64 outputs, all
    // owned here and alive for the call.
    let ok = unsafe { GetDiskFreeSpaceExW(wide.as_ptr(), &mut available, &mut total, &mut free) };
    if ok == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((total, free, available))
}

#[cfg(test)]
mod tests {
    /// Under Wine (scripts/test-windows.sh): a local directory's volume.
    #[test]
    fn a_local_directory_has_space() {
        let dir = std::env::temp_dir();
        let (total, free, available) = super::disk_free_space(&dir.to_string_lossy()).unwrap();
        assert!(
            total > 0 && free <= total && available <= free,
            "{total} {free} {available}"
        );
        let missing = dir.join("no-such-directory-here");
        assert!(super::disk_free_space(&missing.to_string_lossy()).is_err());
    }
}
