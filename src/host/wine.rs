//! The Windows-built simulator when it runs under Wine: what the
//! namespace needs to store a link as a Unix symlink there
//! (`Namespace::store_viewed_link`, once `Host::let_the_os_follow_links`
//! asked for it), so that a Windows-built plugin reading the sandbox
//! through the OS (`NodeOptions::local_root`) follows it.
//!
//! Wine is recognised by ntdll's `wine_get_version` export, which no
//! Windows ships; everywhere else (real Windows, Unix builds) [`active`] is
//! false and nothing here is used. What Wine 8.0 was measured to do, and
//! what this module therefore relies on:
//! - `CreateSymbolicLinkW` answers success and makes nothing, but a Windows
//!   program can start a Unix program (`/bin/sh`); `std::process::Command`
//!   then starts it (`spawn` is `Ok`) and cannot wait for it (error 6,
//!   "Invalid handle."), so [`run`] learns the exit status from a marker
//!   file the Unix side writes last.
//! - A Unix symlink to a directory reads as a plain directory through a
//!   handle (`symlink_metadata`: a directory, no link, attributes 0x10),
//!   and is followed by every call; only `GetFileAttributesW` and a
//!   directory listing mark it `FILE_ATTRIBUTE_REPARSE_POINT` (0x410).
//!   [`attributes`] asks the former.
//! - A dangling Unix symlink is invisible (error 2, absent from listings),
//!   yet a directory cannot be created in its place (183).
//! - Windows' removals follow it: `RemoveDirectoryW` on a link to an empty
//!   directory removes the target and leaves the link; a recursive
//!   removal empties the target, then fails with 145. Links are therefore
//!   removed on the Unix side ([`run`] of `rm`).
//!
//! The one module of the simulator allowed `unsafe`: two FFI calls of
//! kernel32 and one of a Wine export, on buffers owned here.
#![allow(unsafe_code)]

use std::ffi::OsStr;
use std::io;
use std::path::Path;

/// `FILE_ATTRIBUTE_REPARSE_POINT`.
pub(crate) const REPARSE_POINT: u32 = 0x400;

/// Whether this process is a Windows build running under Wine (checked
/// once).
pub(crate) fn active() -> bool {
    static WINE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WINE.get_or_init(imp::wine_version_export)
}

/// The Unix path Wine maps the host path `p` to: its deepest existing
/// ancestor's, as Wine gives it, and the missing names after it as they
/// are. `p` itself is converted only when it is a directory (so a link at
/// `p` is never resolved by Wine): name entries with [`unix_child`].
pub(crate) fn unix_path(p: &Path) -> io::Result<String> {
    match std::fs::metadata(p) {
        Ok(m) if m.is_dir() => imp::unix_file_name(p),
        _ => {
            let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
                return imp::unix_file_name(p);
            };
            unix_child(parent, name)
        }
    }
}

/// The Unix path of the entry `name` of the host directory `dir`: Wine's
/// path of the directory, then the name, which is not looked up (so not
/// followed when it is a link).
pub(crate) fn unix_child(dir: &Path, name: &OsStr) -> io::Result<String> {
    let name = name
        .to_str()
        .filter(|n| !n.is_empty() && !n.contains(['/', '\\']) && *n != "." && *n != "..")
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a plain name"))?;
    Ok(format!("{}/{name}", unix_path(dir)?.trim_end_matches('/')))
}

/// `GetFileAttributesW` of `p`, `None` if it fails (missing).
pub(crate) fn attributes(p: &Path) -> Option<u32> {
    imp::file_attributes(p)
}

/// Runs the Unix program `args[0]` with the other `args` (through
/// `/bin/sh`, never interpreted by it) and waits for it: `Ok` if it
/// exited 0. The exit status comes back in a marker file in the Windows
/// temporary directory, polled for at most 60 s.
pub(crate) fn run(args: &[&OsStr]) -> io::Result<()> {
    use std::process::{Command, Stdio};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    static RUNS: AtomicU64 = AtomicU64::new(0);
    let marker = std::env::temp_dir().join(format!(
        "csi-wine-run-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_file(&marker);
    let unix_marker = unix_child(
        &std::env::temp_dir(),
        marker.file_name().unwrap_or_default(),
    )?;
    // "$0" is the marker; the status is written beside it and renamed, so
    // the marker appears whole.
    let script = r#"rc=0; "$@" || rc=$?; echo "$rc" > "$0.tmp" && mv -f -- "$0.tmp" "$0""#;
    let spawned = Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .arg(&unix_marker)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    // The child handle is unusable under Wine (error 6); it is dropped.
    drop(spawned?);
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match std::fs::read_to_string(&marker) {
            Ok(status) => {
                let _ = std::fs::remove_file(&marker);
                return match status.trim() {
                    "0" => Ok(()),
                    rc => Err(io::Error::other(format!(
                        "{} exited with status {rc}",
                        args.first()
                            .map(|a| a.to_string_lossy())
                            .unwrap_or_default()
                    ))),
                };
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        if start.elapsed() > Duration::from_secs(60) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the Unix program started under Wine did not report back",
            ));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

#[cfg(windows)]
mod imp {
    use std::ffi::{CStr, c_char, c_void};
    use std::io;
    use std::os::windows::ffi::OsStrExt;
    use std::path::Path;

    #[link(name = "kernel32")]
    unsafe extern "system" {
        fn GetModuleHandleW(name: *const u16) -> *mut c_void;
        fn GetProcAddress(module: *mut c_void, name: *const c_char) -> *mut c_void;
        fn GetFileAttributesW(name: *const u16) -> u32;
        fn GetProcessHeap() -> *mut c_void;
        fn HeapFree(heap: *mut c_void, flags: u32, mem: *mut c_void) -> i32;
    }

    fn wide(s: &std::ffi::OsStr) -> Vec<u16> {
        s.encode_wide().chain(std::iter::once(0)).collect()
    }

    /// The address of `export` in the loaded module `module`, if any.
    fn export(module: &str, export: &CStr) -> Option<*mut c_void> {
        let name = wide(module.as_ref());
        // SAFETY: a NUL-terminated wide name owned here; the module is one
        // every process has loaded (no reference is taken).
        let handle = unsafe { GetModuleHandleW(name.as_ptr()) };
        if handle.is_null() {
            return None;
        }
        // SAFETY: a valid module handle and a NUL-terminated name.
        let f = unsafe { GetProcAddress(handle, export.as_ptr()) };
        (!f.is_null()).then_some(f)
    }

    pub(super) fn wine_version_export() -> bool {
        export("ntdll.dll", c"wine_get_version").is_some()
    }

    pub(super) fn unix_file_name(p: &Path) -> io::Result<String> {
        let f = export("kernel32.dll", c"wine_get_unix_file_name")
            .ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, "not running under Wine"))?;
        // SAFETY: Wine's `char * CDECL wine_get_unix_file_name(LPCWSTR)`
        // (CDECL and the system ABI are one on x86_64).
        let f: unsafe extern "system" fn(*const u16) -> *mut c_char =
            unsafe { std::mem::transmute(f) };
        let name = wide(p.as_os_str());
        // SAFETY: a NUL-terminated wide path owned here.
        let out = unsafe { f(name.as_ptr()) };
        if out.is_null() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("Wine has no Unix path for {}", p.display()),
            ));
        }
        // SAFETY: Wine returns a NUL-terminated string from the process
        // heap, ours to free once copied.
        let unix = unsafe { CStr::from_ptr(out) }.to_str().map(str::to_owned);
        // SAFETY: as above; freed once.
        unsafe { HeapFree(GetProcessHeap(), 0, out.cast()) };
        unix.map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a Unix path not UTF-8"))
    }

    pub(super) fn file_attributes(p: &Path) -> Option<u32> {
        let name = wide(p.as_os_str());
        // SAFETY: a NUL-terminated wide path owned here.
        let attrs = unsafe { GetFileAttributesW(name.as_ptr()) };
        (attrs != u32::MAX).then_some(attrs)
    }
}

#[cfg(not(windows))]
mod imp {
    use std::io;
    use std::path::Path;

    pub(super) fn wine_version_export() -> bool {
        false
    }

    pub(super) fn unix_file_name(_: &Path) -> io::Result<String> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "not a Windows build",
        ))
    }

    pub(super) fn file_attributes(_: &Path) -> Option<u32> {
        None
    }
}
