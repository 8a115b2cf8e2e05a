//! The Windows boundary of HostProcess mode
//! (`csi_proxy_client::host_process::windows::LocalHost`), called for real
//! on what every Windows has (and on what Wine 8 has: where the two
//! differ, a test asserts what each does, so it fails if either changes):
//! directories and files, volume path names, WMI in `ROOT\CIMV2` (the
//! BIOS, services, starting and stopping one), COM on many threads at once,
//! and what the storage and SMB namespaces offer. Nothing here changes a
//! disk: that is `suite.rs`, through `guarded.rs`.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use csi_proxy_client::host_process::WindowsHost;
use csi_proxy_client::host_process::boundary::{DeviceId, FileKind};
use csi_proxy_client::host_process::windows::LocalHost;
use csi_proxy_client::host_process::{Failure, MethodResult};

/// Wine sets this in every Windows process it starts.
fn under_wine() -> bool {
    std::env::var_os("WINECONFIGDIR").is_some()
}

/// Held by every test that calls WMI. Wine's WMI runs in the calling
/// process (wbemprox), and two threads querying `Win32_Service` at once
/// corrupt its heap and crash the test binary; Windows' WMI service has no
/// such limit, and the tests hold the lock there too only to stay simple.
pub(super) fn wmi_lock() -> std::sync::MutexGuard<'static, ()> {
    static WMI: std::sync::Mutex<()> = std::sync::Mutex::new(());
    WMI.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

const ERROR_FILE_NOT_FOUND: u32 = 2;
const ERROR_PATH_NOT_FOUND: u32 = 3;
const ERROR_ALREADY_EXISTS: u32 = 183;
const ERROR_DIR_NOT_EMPTY: u32 = 145;
const WBEM_E_NOT_FOUND: u32 = 0x8004_1002;
const WBEM_E_INVALID_NAMESPACE: u32 = 0x8004_100E;

/// A fresh directory of this test under the temp directory, as a string.
fn scratch(name: &str) -> String {
    let dir: PathBuf = std::env::temp_dir().join(format!("csi-hp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.to_str().unwrap().to_string()
}

fn win32_code<T: std::fmt::Debug>(result: Result<T, Failure>) -> u32 {
    match result {
        Err(Failure::Win32 { code, message }) => {
            assert!(!message.is_empty(), "code {code} without the system's text");
            assert!(!message.ends_with('\n'), "{message:?}");
            code
        }
        other => panic!("expected a Win32 failure, got {other:?}"),
    }
}

fn com_code<T: std::fmt::Debug>(result: Result<T, Failure>) -> u32 {
    match result {
        Err(Failure::Com { hresult, .. }) => hresult,
        other => panic!("expected a COM failure, got {other:?}"),
    }
}

#[test]
fn host_process_directories_are_made_listed_and_removed_one_level_at_a_time() {
    let host = LocalHost;
    let root = scratch("dirs");
    let sub = format!(r"{root}\sub");

    host.create_directory(&sub).unwrap();
    assert_eq!(host.file_kind(&sub).unwrap(), FileKind::Directory);
    assert_eq!(
        win32_code(host.create_directory(&sub)),
        ERROR_ALREADY_EXISTS
    );
    // One level: the parent must exist.
    assert_eq!(
        win32_code(host.create_directory(&format!(r"{root}\no\deeper"))),
        ERROR_PATH_NOT_FOUND
    );

    std::fs::write(format!(r"{sub}\a"), b"x").unwrap();
    host.create_directory(&format!(r"{sub}\b")).unwrap();
    let mut names = host.list_directory(&sub).unwrap();
    names.sort();
    assert_eq!(names, ["a", "b"], "no . or ..");
    assert_eq!(win32_code(host.remove_directory(&sub)), ERROR_DIR_NOT_EMPTY);

    host.remove_directory(&format!(r"{sub}\b")).unwrap();
    host.delete_file(&format!(r"{sub}\a")).unwrap();
    assert!(host.list_directory(&sub).unwrap().is_empty());
    host.remove_directory(&sub).unwrap();
    assert_eq!(win32_code(host.file_kind(&sub)), ERROR_FILE_NOT_FOUND);
    assert_eq!(win32_code(host.list_directory(&sub)), ERROR_PATH_NOT_FOUND);
    std::fs::remove_dir(&root).unwrap();
}

#[test]
fn host_process_files_and_missing_paths_are_told_apart() {
    let host = LocalHost;
    let root = scratch("files");
    let file = format!(r"{root}\f");
    std::fs::write(&file, b"x").unwrap();
    assert_eq!(host.file_kind(&file).unwrap(), FileKind::File);
    // A file is not a directory to remove, and the file stays.
    assert!(host.remove_directory(&file).is_err());
    host.delete_file(&file).unwrap();
    assert_eq!(win32_code(host.delete_file(&file)), ERROR_FILE_NOT_FOUND);
    assert_eq!(
        win32_code(host.file_kind(&format!(r"{root}\missing"))),
        ERROR_FILE_NOT_FOUND
    );
    assert_eq!(
        win32_code(host.file_kind(&format!(r"{root}\missing\below"))),
        ERROR_PATH_NOT_FOUND
    );
    std::fs::remove_dir(&root).unwrap();
}

#[test]
fn host_process_volume_names_of_the_temp_directory() {
    let host = LocalHost;
    let root = scratch("volumes");
    let mount = host.volume_path_name(&root).unwrap();
    // The temp directory is on a drive, and that drive's root holds it.
    assert!(mount.ends_with('\\'), "{mount}");
    assert!(
        root.to_ascii_lowercase()
            .starts_with(&mount.to_ascii_lowercase()),
        "{mount} does not hold {root}"
    );
    let volume = host.volume_name_for_mount_point(&mount).unwrap();
    assert!(
        volume.starts_with(r"\\?\Volume{") && volume.ends_with(r"}\") && volume.len() == 49,
        "{volume}"
    );
    std::fs::remove_dir(&root).unwrap();
}

/// `GetDiskFreeSpaceExW` on a local directory (a share's space is the
/// same call on the link: the real-Windows SMB test reads it).
#[test]
fn host_process_disk_free_space_of_the_temp_directory() {
    let host = LocalHost;
    let root = scratch("space");
    let space = host.disk_free_space(&root).unwrap();
    assert!(
        space.total > 0 && space.free <= space.total && space.available <= space.free,
        "{space:?}"
    );
    let missing = format!(r"{root}\missing");
    assert!(matches!(
        win32_code(host.disk_free_space(&missing)),
        ERROR_FILE_NOT_FOUND | ERROR_PATH_NOT_FOUND
    ));
    std::fs::remove_dir(&root).unwrap();
}

#[test]
fn host_process_bios_serial_number_and_services_from_cimv2() {
    let _wmi = wmi_lock();
    let host = LocalHost;
    let serials = host.bios_serial_numbers().unwrap();
    assert_eq!(serials.len(), 1, "{serials:?}");

    // WMI's own service exists on every Windows and in Wine.
    let services = host.services("Winmgmt").unwrap();
    assert_eq!(services.len(), 1, "{services:?}");
    let winmgmt = &services[0];
    assert!(winmgmt.name.eq_ignore_ascii_case("winmgmt"), "{winmgmt:?}");
    assert!(!winmgmt.display_name.is_empty(), "{winmgmt:?}");
    assert!(!winmgmt.state.is_empty(), "{winmgmt:?}");
    assert!(
        ["Auto", "Manual", "Disabled", "Boot", "System"].contains(&winmgmt.start_mode.as_str()),
        "{winmgmt:?}"
    );
    // A quote in the name is escaped, not a broken query.
    assert!(host.services("no-such-service").unwrap().is_empty());
    assert!(host.services("it's-not-there").unwrap().is_empty());
    // A method on a service that is not there: WMI's not found.
    assert_eq!(
        com_code(host.service_start("no-such-service")),
        WBEM_E_NOT_FOUND
    );
}

/// Guards the NUL padding Wine puts after `__PATH`: before it was cut, the
/// `ASSOCIATORS OF` query built from the path was refused
/// (`WBEM_E_INVALID_QUERY`).
#[test]
fn host_process_service_dependents_query_the_service_by_its_path() {
    let _wmi = wmi_lock();
    let host = LocalHost;
    let dependents = host.service_dependents("RpcSs").unwrap();
    if under_wine() {
        // Wine's WMI has no Win32_DependentService: nothing depends.
        assert!(dependents.is_empty(), "{dependents:?}");
    } else {
        // Half of Windows needs the RPC service.
        assert!(!dependents.is_empty());
    }
    assert!(dependents.iter().all(|d| !d.name.is_empty()));
}

/// Starts and stops the Print Spooler through `Win32_Service`, and leaves
/// it as it found it. On a real node it bounces the spooler for a moment.
#[test]
fn host_process_starting_and_stopping_a_service_changes_its_state() {
    let _wmi = wmi_lock();
    let host = LocalHost;
    let state = || host.services("Spooler").unwrap()[0].state.clone();
    let was = state();
    if was == "Running" {
        assert_eq!(host.service_stop("Spooler").unwrap(), MethodResult::code(0));
        assert_eq!(state(), "Stopped");
    }
    assert_eq!(
        host.service_start("Spooler").unwrap(),
        MethodResult::code(0)
    );
    assert_eq!(state(), "Running");
    // Starting a running service: 10, "already running".
    assert_eq!(
        host.service_start("Spooler").unwrap(),
        MethodResult::code(10)
    );
    assert_eq!(host.service_stop("Spooler").unwrap(), MethodResult::code(0));
    assert_eq!(state(), "Stopped");
    if was == "Running" {
        assert_eq!(
            host.service_start("Spooler").unwrap(),
            MethodResult::code(0)
        );
    }
    assert_eq!(state(), was);
}

/// Each thread enters COM and connects on its own; many at once, and the
/// same thread again, all answer. Under Wine the threads take turns (see
/// [`wmi_lock`]): each still has its own apartment and connections.
#[test]
fn host_process_wmi_calls_from_many_threads() {
    let _wmi = wmi_lock();
    let first = LocalHost.bios_serial_numbers().unwrap();
    let work = || {
        let host = LocalHost;
        for _ in 0..5 {
            assert_eq!(host.bios_serial_numbers().unwrap(), first);
            assert_eq!(host.services("Winmgmt").unwrap().len(), 1);
        }
    };
    std::thread::scope(|s| {
        let mut running = Vec::new();
        for _ in 0..6 {
            let thread = s.spawn(work);
            if under_wine() {
                thread.join().unwrap();
            } else {
                running.push(thread);
            }
        }
        for thread in running {
            thread.join().unwrap();
        }
    });
}

/// Whether this thread has entered COM of its own: `CoInitializeEx` here
/// would be a nested entry (`S_FALSE`) rather than the first (`S_OK`).
/// A thread in the process's multithreaded apartment only implicitly has
/// not. Leaves the thread as it found it.
// The one unsafe block of the tests: two COM calls with no pointers.
#[allow(unsafe_code)]
fn thread_entered_com() -> bool {
    use windows::Win32::Foundation::S_OK;
    use windows::Win32::System::Com::{COINIT_MULTITHREADED, CoInitializeEx, CoUninitialize};
    // SAFETY: no reserved pointer; balanced by CoUninitialize right away
    // when it succeeded.
    let hr = unsafe { CoInitializeEx(None, COINIT_MULTITHREADED) };
    if hr.is_ok() {
        // SAFETY: balances the successful CoInitializeEx above, same thread.
        unsafe { CoUninitialize() };
    }
    hr != S_OK
}

/// WMI calls on tokio's blocking threads, as the backend makes them, with
/// the threads left to exit idle between calls (a keep-alive of 100 ms
/// instead of tokio's 10 s): every call answers, each on a new thread, and
/// no call leaves COM entered on its thread, so no thread has anything of
/// COM to release when it exits (wmi-rs#136: releasing it from a
/// `thread_local!` destructor, after COM's own teardown of the thread,
/// is an access violation on Windows). Before the fix the calls left the
/// thread in COM and Wine 8 still did not crash when the threads exited.
#[test]
fn host_process_wmi_calls_on_blocking_threads_that_exit_idle_leave_no_com_behind() {
    let _wmi = wmi_lock();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .thread_keep_alive(Duration::from_millis(100))
        .build()
        .unwrap();
    let mut threads = HashSet::new();
    runtime.block_on(async {
        for round in 0..4 {
            let (serials, entered, thread) = tokio::task::spawn_blocking(|| {
                let serials = LocalHost.bios_serial_numbers();
                (serials, thread_entered_com(), std::thread::current().id())
            })
            .await
            .unwrap();
            assert_eq!(serials.unwrap().len(), 1, "round {round}");
            assert!(
                !entered,
                "round {round}: the WMI call left COM entered on its thread"
            );
            threads.insert(thread);
            // Long past the keep-alive: the thread exits, its destructors run.
            tokio::time::sleep(Duration::from_millis(600)).await;
        }
    });
    assert_eq!(threads.len(), 4, "each call on a new thread: {threads:?}");
    // And on a thread of our own that entered COM first (single-threaded
    // apartment even): the call works there too and leaves it as it was.
    std::thread::spawn(|| {
        use windows::Win32::System::Com::COINIT_APARTMENTTHREADED;
        #[allow(unsafe_code)]
        // SAFETY: no reserved pointer; balanced below, same thread.
        let hr =
            unsafe { windows::Win32::System::Com::CoInitializeEx(None, COINIT_APARTMENTTHREADED) };
        assert!(hr.is_ok(), "{hr:?}");
        assert_eq!(LocalHost.services("Winmgmt").unwrap().len(), 1);
        assert!(thread_entered_com());
        #[allow(unsafe_code)]
        // SAFETY: balances the CoInitializeEx above.
        unsafe {
            windows::Win32::System::Com::CoUninitialize()
        };
    })
    .join()
    .unwrap();
}

/// A path means the same with a trailing separator, in every path call:
/// before the fix, `GetVolumeNameForVolumeMountPointW` refused a mount
/// point without one, and `FindFirstFileW` (the reparse tag) failed on a
/// path with one, which made a link or mount point look missing (the
/// latter only on real Windows: Wine 8 makes no reparse points).
#[test]
fn host_process_a_trailing_separator_names_the_same_path() {
    const FILE_ATTRIBUTE_DIRECTORY: u32 = 0x10;
    let host = LocalHost;
    let root = scratch("trailing");
    let dir = format!(r"{root}\d");
    let slash = |p: &str| format!(r"{p}\");
    host.create_directory(&slash(&dir)).unwrap();
    assert_eq!(host.file_kind(&slash(&dir)).unwrap(), FileKind::Directory);
    let attributes = host.file_attributes(&slash(&dir)).unwrap();
    assert_eq!(
        attributes & FILE_ATTRIBUTE_DIRECTORY,
        FILE_ATTRIBUTE_DIRECTORY
    );
    let file = format!(r"{dir}\f");
    std::fs::write(&file, b"x").unwrap();
    assert_eq!(host.list_directory(&slash(&dir)).unwrap(), ["f"]);
    assert_eq!(host.file_kind(&slash(&file)).unwrap(), FileKind::File);
    assert_eq!(
        host.file_attributes(&slash(&file)).unwrap() & FILE_ATTRIBUTE_DIRECTORY,
        0
    );
    host.delete_file(&slash(&file)).unwrap();
    host.remove_directory(&slash(&dir)).unwrap();
    assert_eq!(
        win32_code(host.file_kind(&slash(&dir))),
        ERROR_FILE_NOT_FOUND
    );
    assert_eq!(win32_code(host.file_attributes(&dir)), ERROR_FILE_NOT_FOUND);

    // The mount point calls, given a mount point without its `\`.
    let mount = host.volume_path_name(&root).unwrap();
    let volume = host.volume_name_for_mount_point(&mount).unwrap();
    assert_eq!(
        host.volume_name_for_mount_point(mount.trim_end_matches('\\'))
            .unwrap(),
        volume
    );
    std::fs::remove_dir(&root).unwrap();
}

/// What Wine 8 offers beyond `ROOT\CIMV2`, and what a real Windows offers
/// instead, asserted both ways: Wine's storage namespace exists with no
/// objects and no `MSFT_StorageSetting`, there is no SMB namespace, no
/// volume mount points and no disk id ioctl.
#[test]
fn host_process_storage_smb_mount_points_and_disk_ids_wine_or_windows() {
    let _wmi = wmi_lock();
    let host = LocalHost;
    let disks = host.disks().unwrap();
    let smb = host.smb_global_mappings(r"\\no-server\no-share");
    let rescan = host.update_host_storage_cache();
    let root = scratch("mount");
    let mount = format!(r"{root}\m\");
    std::fs::create_dir(&mount).unwrap();
    let system_volume = host
        .volume_name_for_mount_point(&host.volume_path_name(&root).unwrap())
        .unwrap();
    if under_wine() {
        assert!(disks.is_empty(), "{disks:?}");
        assert!(host.volumes(&system_volume).unwrap().is_empty());
        assert!(host.iscsi_portals().unwrap().is_empty());
        assert_eq!(com_code(rescan), WBEM_E_NOT_FOUND);
        assert_eq!(com_code(smb), WBEM_E_INVALID_NAMESPACE);
        // ERROR_CALL_NOT_IMPLEMENTED, ERROR_NOT_SUPPORTED.
        assert_eq!(
            win32_code(host.set_volume_mount_point(&mount, &system_volume)),
            120
        );
        assert_eq!(win32_code(host.disk_device_id(r"\\.\PhysicalDrive0")), 50);
    } else {
        assert!(!disks.is_empty(), "every Windows has a boot disk");
        let boot = &disks[0];
        assert!(boot.size > 0, "{boot:?}");
        assert_ne!(
            host.disk_device_id(&boot.path).unwrap(),
            DeviceId::None,
            "{boot:?}"
        );
        assert_eq!(host.volumes(&system_volume).unwrap().len(), 1);
        assert_eq!(rescan.unwrap(), MethodResult::code(0));
        assert!(smb.unwrap().is_empty());
        // A second mount point of the system volume, and gone again.
        host.set_volume_mount_point(&mount, &system_volume).unwrap();
        let m = mount.trim_end_matches('\\');
        // With and without its trailing `\`: FindFirstFileW, which reads
        // the reparse tag, fails on a trailing separator.
        for spelled in [m, mount.as_str()] {
            assert_eq!(
                host.file_kind(spelled).unwrap(),
                FileKind::MountPoint {
                    target: system_volume.clone()
                },
                "{spelled}"
            );
        }
        assert_eq!(
            host.volume_name_for_mount_point(&mount).unwrap(),
            system_volume
        );
        host.delete_volume_mount_point(&mount).unwrap();
        assert_eq!(host.file_kind(m).unwrap(), FileKind::Directory);
    }
    std::fs::remove_dir_all(&root).unwrap();
}

// ---------------------------------------------------------------- real Windows only

/// The partition types stage_disk chooses by, as Windows reports them for
/// the disk it runs from: `C:` lies on a basic data (GPT) or IFS (MBR)
/// partition that is neither system nor hidden, and that disk has a
/// system partition (EFI, or System Reserved on MBR). Read-only.
#[test]
#[ignore = "real Windows only: Wine 8 has no storage WMI"]
fn real_windows_the_os_disk_shows_its_partition_types() {
    const BASIC_DATA: &str = "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}";
    let host = LocalHost;
    let system = host
        .volume_name_for_mount_point(&host.volume_path_name(r"C:\Windows").unwrap())
        .unwrap();
    let c = host.volume_partitions(&system).unwrap().remove(0);
    assert!(
        c.gpt_type == BASIC_DATA || c.mbr_type == 0x07,
        "C: lies on {c:?}"
    );
    assert!(!c.is_system && !c.is_hidden, "C: lies on {c:?}");
    let parts = host.partitions(c.disk_number).unwrap();
    assert!(parts.iter().any(|p| p.is_system), "{parts:#?}");
}

/// Symbolic links, which Wine 8 reports created and does not create.
#[test]
#[ignore = "real Windows only: Wine 8 does not create symbolic links"]
fn real_windows_symbolic_links_are_described_and_removed_without_their_target() {
    let host = LocalHost;
    let root = scratch("links");
    let target = format!(r"{root}\target");
    host.create_directory(&target).unwrap();
    std::fs::write(format!(r"{target}\f"), b"x").unwrap();

    let link = format!(r"{root}\dirlink");
    host.create_symbolic_link(&link, &target, true).unwrap();
    assert_eq!(
        host.file_kind(&link).unwrap(),
        FileKind::Symlink {
            target: target.clone(),
            directory: true
        }
    );
    assert_eq!(host.list_directory(&link).unwrap(), ["f"]);
    let file_link = format!(r"{root}\filelink");
    host.create_symbolic_link(&file_link, &format!(r"{target}\f"), false)
        .unwrap();
    assert!(matches!(
        host.file_kind(&file_link).unwrap(),
        FileKind::Symlink {
            directory: false,
            ..
        }
    ));

    host.delete_file(&file_link).unwrap();
    host.remove_directory(&link).unwrap();
    assert_eq!(win32_code(host.file_kind(&link)), ERROR_FILE_NOT_FOUND);
    assert_eq!(host.list_directory(&target).unwrap(), ["f"], "target kept");
    std::fs::remove_dir_all(&root).unwrap();
}
