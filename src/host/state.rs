//! [`Host`]: one simulated Windows node behind one lock, test hooks,
//! snapshots and invariant checks; [`HostState`], the state behind the lock.
//! Building a node (its configuration, the default node, seeds) lives in
//! [`seed`](super::seed).
//!
//! # The smb, iscsi and system groups
//! [`HostState`] holds their state (`smb`, `iscsi`, `system`) behind the same
//! mutex as storage and namespace, so every RPC is atomic across groups. The
//! namespace resolves `\\server\share` through [`SmbState`] (the share's
//! directory while a global mapping with status OK grants access); an SMB
//! `local_path` link is an ordinary [`LinkKind::Dir`] link to the UNC path.
//! iSCSI LUNs become disks through [`NodeDisks`](super::iscsi::NodeDisks),
//! the node's disks borrowed apart from its iSCSI state (offline and RAW,
//! as Windows' SAN policy leaves them), and every iSCSI call fails while the
//! `MSiSCSI` service is not running. The System group's start/stop waits
//! release the lock between polls.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::error::{HostError, HostResult};
use super::iscsi::IscsiState;
use super::namespace::{Ctx, Entry, LinkKind, Namespace};
use super::path::{Win32Error, WinPath, volume_id_guid};
use super::smb::SmbState;
use super::storage::{
    Disk, DiskHandle, DiskSpec, FileSystem, PartitionSize, PartitionType, Storage, Visibility,
    Volume,
};
use super::system::SystemState;

/// All state of one simulated node (behind the [`Host`]'s mutex).
#[derive(Debug)]
pub struct HostState {
    /// Disks, partitions, volumes.
    pub storage: Storage,
    /// Files, directories, links, mount points.
    pub ns: Namespace,
    /// The filesystem group's working-dir list W.
    pub working_dirs: Vec<String>,
    /// Ids (ASCII-lowercased) of volumes whose disk was detached (their
    /// mount points may dangle).
    pub detached_volumes: BTreeSet<String>,
    /// SMB servers, shares and global mappings.
    pub smb: SmbState,
    /// iSCSI initiator: portals, discovered targets, sessions.
    pub iscsi: IscsiState,
    /// BIOS data and services.
    pub system: SystemState,
    /// Handles of the disks iSCSI sessions attached, by disk number.
    pub(crate) iscsi_disks: BTreeMap<u32, DiskHandle>,
}

impl HostState {
    /// Which csi-proxy release's failure texts the node speaks
    /// ([`HostConfig::release`](super::HostConfig::release)).
    pub fn release(&self) -> super::ProxyRelease {
        self.smb.config().release
    }

    /// The resolution context of the namespace (UNC paths through the SMB
    /// mappings).
    pub(crate) fn ctx(&self) -> Ctx<'_> {
        Ctx {
            volumes: &self.storage,
            smb: &self.smb,
        }
    }

    /// Attaches a disk and creates the root directories of any volumes on it.
    pub(crate) fn attach_disk(&mut self, spec: DiskSpec) -> HostResult<(u32, DiskHandle)> {
        self.storage.attach_disk(spec)
    }

    /// Detaches a disk by handle; its volumes' contents go, mount points
    /// referring to them stay (dangling).
    pub(crate) fn detach_disk_handle(&mut self, h: DiskHandle) -> HostResult<()> {
        detach_disk(&mut self.storage, &self.ns, &mut self.detached_volumes, h)
    }

    /// Creates a partition and, for a volume, its root directory.
    pub(crate) fn create_partition(
        &mut self,
        n: u32,
        kind: PartitionType,
        size: PartitionSize,
    ) -> HostResult<(u32, Option<String>)> {
        let (p, id) = self.storage.create_partition(n, kind, size)?;
        if let Some(g) = id.as_deref().and_then(volume_id_guid) {
            self.ns.create_volume_root(&g).map_err(win_err)?;
        }
        Ok((p, id))
    }

    /// Formats a volume NTFS and wipes its contents (present volume).
    pub(crate) fn format_volume_ntfs(&mut self, id: &str) -> HostResult<()> {
        self.storage.format_ntfs(id)?;
        let g = volume_id_guid(id).unwrap_or_default();
        self.ns.wipe_volume_root(&g).map_err(win_err)
    }

    /// Sets an existing volume's file system directly (seeding): the root is
    /// wiped when it becomes formatted.
    pub(crate) fn set_volume_fs(
        &mut self,
        id: &str,
        fs: FileSystem,
        used: Option<u64>,
        system: bool,
    ) -> HostResult<()> {
        let size = self
            .storage
            .volume_any(id)
            .and_then(|v| self.storage.partition_of(v))
            .map(|p| p.size)
            .unwrap_or(0);
        let used = match (fs, used) {
            (FileSystem::Raw, _) => 0,
            (_, Some(u)) => u.min(size),
            (_, None) => super::storage::ntfs_overhead(size),
        };
        self.storage.set_volume_fs(id, fs, used, system)?;
        if fs != FileSystem::Raw {
            let g = volume_id_guid(id).unwrap_or_default();
            self.ns.wipe_volume_root(&g).map_err(win_err)?;
        }
        Ok(())
    }

    fn parse(p: &str) -> HostResult<WinPath> {
        WinPath::parse(p).map_err(|e| HostError::unknown(format!("{p}: {e}")))
    }
}

/// Detaches a disk from the node's parts: its volumes' roots go, their ids
/// are remembered as detached (mount points may dangle).
pub(crate) fn detach_disk(
    storage: &mut Storage,
    ns: &Namespace,
    detached_volumes: &mut BTreeSet<String>,
    h: DiskHandle,
) -> HostResult<()> {
    for id in storage.detach_disk(h)? {
        if let Some(g) = volume_id_guid(&id) {
            ns.remove_volume_root(&g).map_err(win_err)?;
        }
        detached_volumes.insert(id.to_ascii_lowercase());
    }
    Ok(())
}

/// Maps a namespace error to a host error carrying the Win32 text.
pub(crate) fn win_err(e: Win32Error) -> HostError {
    HostError::unknown(e.message().to_string())
}

/// One simulated Windows node. Cheap to clone (shared state); every
/// operation locks the whole model, so each call is atomic.
#[derive(Debug, Clone)]
pub struct Host {
    inner: Arc<Mutex<HostState>>,
    /// Given once per host made in this process, never again (an address
    /// would be: a host dropped leaves it to the next one).
    #[cfg_attr(not(any(feature = "mock", feature = "host-process")), allow(dead_code))]
    id: u64,
}

impl Host {
    /// A number that names this host among the others of the process,
    /// never given to another (clones share it): what names a node's
    /// records and claims on a simulated host.
    #[cfg(any(feature = "mock", feature = "host-process"))]
    pub(crate) fn identity(&self) -> u64 {
        self.id
    }
}

/// A mount point as seen in a [`Snapshot`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MountPointInfo {
    /// Where it is: `C:\...` if its volume has a drive letter, else
    /// `\\?\Volume{guid}\...` (components case-folded).
    pub path: String,
    /// The volume id stored in it.
    pub volume_id: String,
    /// Whether that volume exists (present or absent) in the model.
    pub volume_exists: bool,
}

/// A plain copy of the whole storage state, for assertions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// All disks (visible or not), by number.
    pub disks: Vec<Disk>,
    /// All volumes (present or not), by id.
    pub volumes: Vec<Volume>,
    /// Every mount point in the namespace.
    pub mount_points: Vec<MountPointInfo>,
}

impl Snapshot {
    /// The disk with this number.
    pub fn disk(&self, n: u32) -> Option<&Disk> {
        self.disks.iter().find(|d| d.number == n)
    }

    /// The volume with this id (case-insensitive).
    pub fn volume(&self, id: &str) -> Option<&Volume> {
        self.volumes.iter().find(|v| v.id.eq_ignore_ascii_case(id))
    }
}

/// A new temporary directory for a sandbox, removed when the returned
/// handle is dropped: for a node that should not outlive its owner.
pub fn temporary_sandbox() -> HostResult<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("csi-proxy-sandbox-")
        .tempdir()
        .map_err(|e| HostError::unknown(format!("cannot create a sandbox directory: {e}")))
}

impl Host {
    /// The host of a built node.
    pub(super) fn from_node(node: HostState) -> Host {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Host {
            inner: Arc::new(Mutex::new(node)),
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Runs `op` on the node under its lock: the path of every request
    /// (`host.run(|node| node.partition_disk(1))`), atomic across groups.
    pub fn run<T>(&self, op: impl FnOnce(&mut HostState) -> T) -> T {
        op(&mut self.lock())
    }

    /// Locks the node, for multi-step atomic access (test code, hooks).
    pub fn lock(&self) -> MutexGuard<'_, HostState> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The working-dir list W.
    pub fn working_dirs(&self) -> Vec<String> {
        self.lock().working_dirs.clone()
    }

    /// Replaces the working-dir list W (test control).
    pub fn set_working_dirs(&self, dirs: Vec<String>) {
        self.lock().working_dirs = dirs;
    }

    // ---- disk test hooks ----

    /// Attaches a disk; returns its number and handle.
    pub fn attach_disk(&self, spec: DiskSpec) -> HostResult<(u32, DiskHandle)> {
        self.lock().attach_disk(spec)
    }

    /// Detaches disk `n` (with its partitions and volumes; mount points stay).
    pub fn detach_disk(&self, n: u32) -> HostResult<()> {
        let mut node = self.lock();
        let h = node
            .storage
            .all_disks()
            .find(|d| d.number == n)
            .map(|d| d.handle)
            .ok_or_else(|| super::storage::disk_not_found(n))?;
        node.detach_disk_handle(h)
    }

    /// Detaches a disk by handle.
    pub fn detach_disk_handle(&self, h: DiskHandle) -> HostResult<()> {
        self.lock().detach_disk_handle(h)
    }

    fn with_disk<T>(&self, n: u32, f: impl FnOnce(&mut Disk) -> HostResult<T>) -> HostResult<T> {
        let mut node = self.lock();
        let d = node
            .storage
            .disk_mut_any(n)
            .ok_or_else(|| super::storage::disk_not_found(n))?;
        f(d)
    }

    /// Grows (or sets) disk `n`'s size; partitions stay.
    pub fn grow_disk(&self, n: u32, new_size: u64) -> HostResult<()> {
        self.with_disk(n, |d| d.set_size(new_size))
    }

    /// Takes disk `n` offline / online behind the proxy's back (no checks).
    pub fn set_disk_offline(&self, n: u32, offline: bool) -> HostResult<()> {
        self.with_disk(n, |d| {
            d.is_offline = offline;
            Ok(())
        })
    }

    /// Marks disk `n` read-only (or writable).
    pub fn set_disk_read_only(&self, n: u32, read_only: bool) -> HostResult<()> {
        self.with_disk(n, |d| {
            d.is_read_only = read_only;
            Ok(())
        })
    }

    /// Makes probing disk `n` (ListDiskIDs, GetDiskNumberByName) fail with `error`.
    pub fn set_probe_error(&self, n: u32, error: Option<String>) -> HostResult<()> {
        self.with_disk(n, |d| {
            d.probe_error = error;
            Ok(())
        })
    }

    /// Hides disk `n` from storage management until the next `Rescan`.
    pub fn set_needs_rescan(&self, n: u32) -> HostResult<()> {
        self.with_disk(n, |d| {
            d.visibility = Visibility::AfterRescan {
                delay: Duration::ZERO,
            };
            Ok(())
        })
    }

    // ---- namespace test hooks ----

    /// Writes a file (creating or replacing it); the bytes count as used on
    /// the volume holding it (replacing a file gives its old bytes back;
    /// deleting files through the filesystem group does not: `used` is only
    /// adjusted by this hook and by format).
    pub fn write_file(&self, path: &str, data: &[u8]) -> HostResult<()> {
        let mut node = self.lock();
        let p = HostState::parse(path)?;
        let (vol, old) = node.ns.write_file(node.ctx(), &p, data).map_err(win_err)?;
        if let Some(v) = vol {
            node.storage.add_used(&v, data.len() as u64, old);
        }
        Ok(())
    }

    /// Reads a file (links followed).
    pub fn read_file(&self, path: &str) -> HostResult<Vec<u8>> {
        let node = self.lock();
        let p = HostState::parse(path)?;
        node.ns.read_file(node.ctx(), &p).map_err(win_err)
    }

    /// Creates a directory and its parents.
    pub fn create_dir(&self, path: &str) -> HostResult<()> {
        let node = self.lock();
        let p = HostState::parse(path)?;
        node.ns.mkdir_all(node.ctx(), &p).map_err(win_err)
    }

    /// Creates a link of any kind at `path` with `target` stored verbatim
    /// (for [`LinkKind::Mount`] a volume id: a volume mount point).
    pub fn create_link(&self, path: &str, kind: LinkKind, target: &str) -> HostResult<()> {
        let node = self.lock();
        let p = HostState::parse(path)?;
        node.ns
            .create_link(node.ctx(), &p, kind, target)
            .map_err(win_err)
    }

    /// The entry at `path` without following a final link; `None` if missing.
    pub fn entry(&self, path: &str) -> HostResult<Option<Entry>> {
        let node = self.lock();
        let p = HostState::parse(path)?;
        match node.ns.lstat(node.ctx(), &p) {
            Ok(e) => Ok(Some(e)),
            Err(e)
                if matches!(
                    e.code(),
                    Win32Error::FILE_NOT_FOUND | Win32Error::PATH_NOT_FOUND
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(win_err(e)),
        }
    }

    /// Whether `path` exists (lstat semantics).
    pub fn exists(&self, path: &str) -> bool {
        matches!(self.entry(path), Ok(Some(_)))
    }

    /// Names in a directory (case-folded, sorted; a final link is followed).
    pub fn list_dir(&self, path: &str) -> HostResult<Vec<String>> {
        let node = self.lock();
        let p = HostState::parse(path)?;
        node.ns.list_dir(node.ctx(), &p).map_err(win_err)
    }

    /// Has the node store its links so that a process reading its
    /// sandbox through its own OS follows its mount points, and its links
    /// whose target is in the sandbox, as Windows follows them (so a
    /// plugin given [`Host::host_path`] of `C:\` as its local root,
    /// `NodeOptions::local_root`, reads a staged volume or share through
    /// them), and says whether it does. On Unix they always are host
    /// symlinks: true, nothing changes. A Windows build under Wine stores
    /// the links made from now on as Unix symlinks
    /// ([`namespace`](super::namespace), "Under Wine"), at the cost of a
    /// Unix process started per link made or removed, so only when asked:
    /// true. On real Windows they stay files: false.
    pub fn let_the_os_follow_links(&self) -> bool {
        cfg!(unix) || self.lock().ns.store_wine_links()
    }

    /// The sandbox path of `path` (intermediate links followed, final not).
    pub fn host_path(&self, path: &str) -> HostResult<PathBuf> {
        let node = self.lock();
        let p = HostState::parse(path)?;
        node.ns
            .walk(node.ctx(), &p, super::namespace::Follow::None, false)
            .map(|w| w.host)
            .map_err(win_err)
    }

    // ---- assertions ----

    /// A plain copy of the whole state.
    pub fn snapshot(&self) -> Snapshot {
        let node = self.lock();
        node.snapshot()
    }

    /// Checks the model's invariants; `Err` lists every violation. Besides
    /// storage and namespace consistency: no lost mapping (every SMB global
    /// mapping refers to a configured share) and every disk of an iSCSI
    /// session exists.
    pub fn check_invariants(&self) -> Result<(), Vec<String>> {
        let node = self.lock();
        let mut out = node.storage.check();
        out.extend(node.smb.violations());
        out.extend(node.iscsi_violations());
        for v in node.storage.all_volumes() {
            let root = node.ns.volume_root(&v.guid());
            if !root.is_dir() {
                out.push(format!("volume {}: no root directory", v.id));
            }
        }
        for m in node.snapshot().mount_points {
            if !m.volume_exists
                && !node
                    .detached_volumes
                    .contains(&m.volume_id.to_ascii_lowercase())
            {
                out.push(format!(
                    "mount point {} refers to unknown volume {}",
                    m.path, m.volume_id
                ));
            }
        }
        if out.is_empty() { Ok(()) } else { Err(out) }
    }
}

impl HostState {
    /// A plain copy of the whole state.
    pub fn snapshot(&self) -> Snapshot {
        let vols_dir = self.ns.sandbox().join("volumes");
        let mount_points = self
            .ns
            .mount_points()
            .into_iter()
            .filter_map(|(host, id)| {
                let rel = host.strip_prefix(&vols_dir).ok()?;
                let mut comps = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned());
                let guid = comps.next()?;
                let rest: Vec<String> = comps.collect();
                let owner = format!(r"\\?\Volume{{{guid}}}\");
                let letter = self
                    .storage
                    .volume_any(&owner)
                    .and_then(|v| self.storage.partition_of(v))
                    .and_then(|p| p.drive_letter);
                let path = match letter {
                    Some(l) => format!("{l}:\\{}", rest.join("\\")),
                    None => format!("{owner}{}", rest.join("\\")),
                };
                Some(MountPointInfo {
                    path,
                    volume_exists: self.storage.volume_any(&id).is_some(),
                    volume_id: id,
                })
            })
            .collect();
        Snapshot {
            disks: self.storage.all_disks().cloned().collect(),
            volumes: self.storage.all_volumes().cloned().collect(),
            mount_points,
        }
    }
}
