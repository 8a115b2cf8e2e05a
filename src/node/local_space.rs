//! The plugin's own read of a volume's space, at no host call: the
//! staging or target path as the plugin's process sees it, asked of its
//! own OS. On Windows `GetDiskFreeSpaceExW`, as azuredisk-csi-driver does
//! in NodeGetVolumeStats since #2287 (which replaced a PowerShell call
//! per stat), aws-ebs-csi-driver's Windows mounter and k8s' statfs on
//! Windows (kubernetes pkg/volume/util/fs/fs_windows.go) do; the call
//! follows the mount point or the SMB link at the path, so a share reports
//! its own space (kubernetes/kubernetes#110261 is the bug of reporting the
//! node's disk instead). The plugin's container sees kubelet's directory,
//! and an SMB global mapping serves every container of the node.
//!
//! On Unix `statvfs`, for a plugin run against the simulated node: it is
//! given a local root standing for the node's `C:\` (the simulated `C:`
//! volume's directory, where the simulator's links are host symlinks), so
//! that the same read is made as on Windows, through the OS, never through
//! the proxy. Without a root a Unix build reads nothing locally.
//!
//! The second module of the crate allowed `unsafe` (after HostProcess
//! mode's `win32.rs`): one FFI call on buffers it owns, declared here so
//! that proxy-mode builds need no `windows` or `libc`-wrapping crate.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};

/// What one local read of a directory's file system tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LocalSpace {
    /// Bytes of the file system.
    pub total: u64,
    /// Bytes free.
    pub free: u64,
    /// Bytes free to this process.
    pub available: u64,
    /// Inodes: total, free, free to this process; `None` where the file
    /// system has no fixed count (NTFS; a Unix one that reports none).
    pub inodes: Option<(u64, u64, u64)>,
}

/// Where the plugin reads the node's `path` (`C:\...`, as `path::local`
/// gives it): under `root` when given (only `C:` paths: another drive is
/// not mapped), else the path itself on Windows; `None` where no local
/// read can be made (no root on a Unix build, a drive the root does not
/// map).
pub(super) fn local_path(root: Option<&Path>, path: &str) -> Option<PathBuf> {
    let Some(root) = root else {
        return cfg!(windows).then(|| PathBuf::from(path));
    };
    let rest = path
        .get(..3)?
        .eq_ignore_ascii_case("c:\\")
        .then(|| &path[3..])?;
    Some(
        rest.split('\\')
            .filter(|c| !c.is_empty())
            .fold(root.to_path_buf(), |p, c| p.join(c.to_lowercase())),
    )
}

/// Total, free and free-to-the-caller bytes of what the directory `path`
/// reaches, links followed; no inode counts (NTFS has no fixed number).
#[cfg(windows)]
pub(super) fn disk_free_space(path: &Path) -> std::io::Result<LocalSpace> {
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

    let mut dir = path.as_os_str().to_os_string();
    if !dir.to_string_lossy().ends_with('\\') {
        dir.push("\\");
    }
    let wide: Vec<u16> = dir.encode_wide().chain(std::iter::once(0)).collect();
    let (mut available, mut total, mut free) = (0u64, 0u64, 0u64);
    // SAFETY: a NUL-terminated wide string and three u64 outputs, all
    // owned here and alive for the call.
    let ok = unsafe { GetDiskFreeSpaceExW(wide.as_ptr(), &mut available, &mut total, &mut free) };
    if ok == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(LocalSpace {
        total,
        free,
        available,
        inodes: None,
    })
}

/// Total, free and free-to-the-caller bytes and inodes of the file system
/// holding `path`, links followed (`statvfs`).
#[cfg(unix)]
pub(super) fn disk_free_space(path: &Path) -> std::io::Result<LocalSpace> {
    use std::os::unix::ffi::OsStrExt;

    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    if !std::fs::metadata(path)?.is_dir() {
        // GetDiskFreeSpaceExW takes a directory only.
        return Err(std::io::Error::from_raw_os_error(libc::ENOTDIR));
    }
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a NUL-terminated path and a buffer of the struct's size,
    // both owned here and alive for the call.
    if unsafe { libc::statvfs(c_path.as_ptr(), st.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs succeeded, so it filled the struct.
    let st = unsafe { st.assume_init() };
    // The field types differ by target (u32 or u64).
    #[allow(clippy::useless_conversion)]
    let (block, blocks, free, available) = (
        u64::from(st.f_frsize),
        u64::from(st.f_blocks),
        u64::from(st.f_bfree),
        u64::from(st.f_bavail),
    );
    #[allow(clippy::useless_conversion)]
    let (files, files_free, files_available) = (
        u64::from(st.f_files),
        u64::from(st.f_ffree),
        u64::from(st.f_favail),
    );
    Ok(LocalSpace {
        total: blocks * block,
        free: free * block,
        available: available * block,
        // A file system without a fixed count (btrfs) reports none.
        inodes: (files > 0).then_some((files, files_free, files_available)),
    })
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// Under Wine (scripts/test-windows.sh) or on Unix: a local
    /// directory's volume.
    #[test]
    fn a_local_directory_has_space() {
        let dir = std::env::temp_dir();
        let space = super::disk_free_space(&dir).unwrap();
        assert!(
            space.total > 0 && space.free <= space.total && space.available <= space.free,
            "{space:?}"
        );
        if let Some((files, free, available)) = space.inodes {
            assert!(free <= files && available <= free, "{space:?}");
        }
        assert!(
            cfg!(unix) || space.inodes.is_none(),
            "Windows has no inode counts: {space:?}"
        );
        let missing = dir.join("no-such-directory-here");
        assert!(super::disk_free_space(&missing).is_err());
    }

    #[test]
    fn a_root_maps_the_c_drive_only() {
        let root = Path::new("/sim/c");
        assert_eq!(
            super::local_path(Some(root), r"c:\Var\lib\kubelet\x"),
            Some(PathBuf::from("/sim/c/var/lib/kubelet/x"))
        );
        assert_eq!(super::local_path(Some(root), r"d:\data"), None);
        let own = super::local_path(None, r"c:\var\x");
        assert_eq!(own, cfg!(windows).then(|| PathBuf::from(r"c:\var\x")));
    }
}
