//! The file namespace on a real sandbox directory.
//!
//! # Layout
//! ```text
//! <sandbox>/volumes/<guid>/...   root directory of each volume (present or not)
//! ```
//! Drive letters resolve through the storage model ([`Storage`]) to the
//! lettered volume's root; `\\?\Volume{GUID}\` roots to that volume's root;
//! UNC roots through the SMB model (`SmbState::share_root`). Every
//! component is stored case-folded ([`fold`]), so Windows' case-insensitive
//! names come for free.
//!
//! A link's *content* is a tagged Windows target (`winlink:dir:C:\...`,
//! `winlink:file:...`, `winlink:junction:...`,
//! `winlink:mount:\\?\Volume{guid}\`, see `link_content`). How that content
//! is stored on the host is known only to three functions, [`store_link`],
//! [`stored_link`] and [`remove_link`], and, for the links a process
//! reading the sandbox must be able to follow, `Namespace::store_viewed_link`:
//! - on Unix a link is a host symlink holding the content;
//! - on Windows a link is a regular file holding `LINK_FILE_MAGIC` followed
//!   by the content (host symlinks need a privilege there, and Wine does not
//!   give their content back faithfully). A real host symlink or junction
//!   found in the sandbox is read as a foreign link;
//! - a Windows build under Wine, when asked, stores a viewed link as a Unix
//!   symlink and a record of its content (see "Under Wine" below).
//!
//! The content is not a usable host path, and this module never asks the
//! host to follow a link. Every host access goes through a directory handle
//! opened beneath the sandbox (`cap-std`): each directory on the way,
//! starting at the sandbox itself, is opened relative to its parent without
//! following a host link (`open_dir_nofollow`), and the final entry is
//! reached by one name relative to its parent's handle, opened without
//! following a link. So a host link planted anywhere in the sandbox, also at
//! a volume or share root, is never followed, and a directory replaced by a
//! link between two steps makes the request fail instead of escaping: no
//! request can reach a file outside the sandbox. Windows links are walked
//! component by component with [`stored_link`], their targets spliced in by
//! this module (at most 63 hops); only components that passed
//! [`WinPath::parse`] are ever used as names. A link in the sandbox that is
//! not a `winlink:` is treated as unresolvable, never followed.
//!
//! # Under Wine
//! A Windows build run under Wine (`scripts/test-windows.sh`; recognised by
//! ntdll's `wine_get_version` export, never on real Windows: module
//! `wine`), once asked to (`Host::let_the_os_follow_links`, as the tests
//! that read the sandbox through the OS do), stores the links `store_viewed_link` makes (every link whose
//! target's place in the sandbox is known: mount points, directory and
//! file links, junctions, the SMB `local_path` link) as Unix symlinks to
//! that place, so that a Windows-built plugin given the `C:` volume's
//! directory as its local root reads a staged volume or share through
//! them, as it would on Windows (issue 35). Wine follows such a symlink in
//! every call and shows it as a plain directory, so this module does not
//! learn of it from a handle:
//! - the link's content is kept in a record,
//!   `<sandbox>/.winelinks/<path of the link in the sandbox>.winlink`
//!   (`LINK_FILE_MAGIC` and the content);
//! - an entry is such a link when `GetFileAttributesW` marks it a reparse
//!   point (Wine marks a Unix symlink to a directory so, and nothing else
//!   here) and its record is read; one Wine does not mark (to a file) or
//!   hides (dangling, its volume's directory gone, or looping) is known by
//!   its record and the Unix side's `test -L`. A reparse point without a
//!   record is a foreign link (opaque, never followed); a record without a
//!   symlink is stale and dropped;
//! - the symlink is made and removed on the Unix side (`ln -s -T`, `rm`),
//!   since Wine 8's `CreateSymbolicLinkW` makes nothing and Windows'
//!   removals follow the link; a directory holding such links is removed with
//!   `rm -rf`, which follows no symlink, where Windows' recursive removal
//!   would empty the linked directory.
//!
//! It is asked for, not the default, for its cost: a Unix process started
//! per link made or removed (some 10 to 30 ms each under wine-8.0). With
//! it taken by every host, the `node::` tests of `tests/it` took 98 s
//! under Wine instead of 67 s. Links made before it was asked for stay
//! files, and are still read as such.
//!
//! The resolution itself is unchanged: a link found so is walked by its
//! recorded content, never through the host. Under Wine a directory is
//! still opened through the host when it is none of these (a Unix
//! symlink that Wine did not mark would be followed); the sandbox's
//! safety there rests on the marking.
//!
//! # Divergences from upstream
//! - A symlink in the sandbox that is not a `winlink:` (planted from outside)
//!   is an opaque entry: it can be seen and removed, never followed.
//! - A mount point whose volume is absent (disk offline or detached) fails
//!   resolution with Win32 error 21 ("The device is not ready.").
//! - UNC paths resolve only through the SMB model; a share root outside the
//!   sandbox is refused with error 5.
//! - A volume or share root that is not a real directory of the sandbox (a
//!   host link planted in its place) is refused with error 5.
//! - Drive and volume roots cannot be removed (error 5).
//! - Names are stored case-folded, so the original case of a file name is not
//!   kept (no RPC of these groups returns names).
//! - On Windows, file data that starts with `LINK_FILE_MAGIC` cannot be
//!   written (error 5): it would read back as a link.
//! - Under Wine a dangling link (a mount point whose volume's directory
//!   has gone) is not listed by `list_dir`, as Wine does not show it.
//!
//! # Where other parts of the node meet it
//! - The storage and SMB models are passed in the [`Ctx`] (plain borrows of
//!   the node's parts): the storage answers which volumes are present and
//!   which carries a drive letter; `SmbState::share_root` gives
//!   the root directory of `\\server\share` while a global mapping grants
//!   access, else the Windows error. Share roots must lie inside the sandbox
//!   (checked).
//! - SMB creates its `local_path` link with `Namespace::create_link` and
//!   [`LinkKind::Dir`] whose target is the UNC path (`\\server\share\sub\`).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, Metadata, OpenOptions};

use super::path::{Win32Error, WinPath, WinRoot, fold, volume_id_for_guid, volume_id_guid};
use super::smb::SmbState;
use super::storage::Storage;
use super::wine;

const LINK_PREFIX: &str = "winlink:";
/// The sandbox's directory of link views (`Namespace::store_viewed_link`).
const VIEWS_DIR: &str = ".links";
/// Under Wine, the sandbox's directory of the records of links stored as
/// Unix symlinks: the record of the link at `<sandbox>/<rel>/<name>` is the
/// file `<sandbox>/.winelinks/<rel>/<name>.winlink` (see the module docs).
const WINE_LINKS_DIR: &str = ".winelinks";
/// The extension of a Wine link's record.
const WINE_RECORD_EXT: &str = "winlink";
/// Windows' limit on reparse-point hops in one resolution.
pub(crate) const MAX_LINK_HOPS: u32 = 63;

/// The kind of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// Directory symbolic link.
    Dir,
    /// File symbolic link.
    File,
    /// Directory junction.
    Junction,
    /// Volume mount point; the target is a volume id.
    Mount,
}

impl LinkKind {
    fn tag(self) -> &'static str {
        match self {
            LinkKind::Dir => "dir",
            LinkKind::File => "file",
            LinkKind::Junction => "junction",
            LinkKind::Mount => "mount",
        }
    }
}

/// A link: its kind and stored Windows target.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Link {
    /// Kind.
    pub kind: LinkKind,
    /// Target exactly as stored (a Windows path or, for mounts, a volume id).
    pub target: String,
}

/// What a path names (without following a final link).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A directory (also a drive, share or volume root).
    Dir,
    /// A regular file of this many bytes.
    File {
        /// Size in bytes.
        size: u64,
    },
    /// A link of any kind.
    Link(Link),
}

/// What a namespace operation resolves roots through.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// Drive letters and volume ids: the present volumes of the storage
    /// model (`Storage::present_volume`, `Storage::drive_volume`).
    pub volumes: &'a Storage,
    /// UNC shares: the root directory of `\\server\share` while a global
    /// mapping grants access (`SmbState::share_root`).
    pub smb: &'a SmbState,
}

/// Whether the final component is followed when it is a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Follow {
    /// Never (lstat).
    None,
    /// Symlinks and junctions, but stop at a mount point.
    Links,
    /// Everything, including mount points (stat).
    All,
}

/// The result of walking a path.
#[derive(Debug)]
pub(crate) struct Walk {
    /// Host path of the final entry (may not exist).
    pub host: PathBuf,
    /// Windows path of the final location after following links.
    pub win: WinPath,
    /// The final entry; `None` if it does not exist (its parent does).
    pub entry: Option<Entry>,
    /// Volume holding the final entry (canonical id); `None` on a share.
    pub volume: Option<String>,
    /// The volume path name: the last mount point crossed, else the root.
    pub mount: WinPath,
    /// Where the final entry is on the host, as a handle.
    place: Place,
}

/// A host location reached beneath the sandbox: an open directory and the
/// (folded) name of the entry in it, or no name for the directory itself (a
/// drive, volume or share root).
#[derive(Debug)]
struct Place {
    dir: Dir,
    name: Option<String>,
}

impl Place {
    fn root(dir: Dir) -> Self {
        Self { dir, name: None }
    }

    fn child(dir: Dir, name: String) -> Self {
        Self {
            dir,
            name: Some(name),
        }
    }

    /// The entry's name in its parent; a root has none (error 5: roots are
    /// neither created nor removed).
    fn name(&self) -> Result<&str, Win32Error> {
        self.name
            .as_deref()
            .ok_or_else(|| werr(Win32Error::ACCESS_DENIED))
    }

    /// Opens the entry as a directory (never through a host link).
    fn open_dir(&self) -> io::Result<Dir> {
        match &self.name {
            None => self.dir.try_clone(),
            Some(name) => self.dir.open_dir_nofollow(name),
        }
    }
}

/// The file namespace of one node.
#[derive(Debug, Clone)]
pub struct Namespace {
    sandbox: PathBuf,
    volumes_dir: PathBuf,
    /// Under Wine, whether links are stored as Unix symlinks
    /// ([`Namespace::store_wine_links`]); never set elsewhere.
    wine_links: bool,
}

fn werr(code: u32) -> Win32Error {
    Win32Error::new(code)
}

fn io_err(e: io::Error) -> Win32Error {
    Win32Error::from_io(&e)
}

/// The error for a root directory that cannot be opened: missing → 3,
/// anything else (a host link in its place) → 5.
fn root_err(e: io::Error) -> Win32Error {
    if e.kind() == io::ErrorKind::NotFound {
        werr(Win32Error::PATH_NOT_FOUND)
    } else {
        werr(Win32Error::ACCESS_DENIED)
    }
}

/// The content stored in a link (see [`store_link`]).
pub(crate) fn link_content(kind: LinkKind, target: &str) -> String {
    format!("{LINK_PREFIX}{}:{target}", kind.tag())
}

fn parse_link_content(content: &str) -> Option<Link> {
    let rest = content.strip_prefix(LINK_PREFIX)?;
    let (tag, target) = rest.split_once(':')?;
    let kind = match tag {
        "dir" => LinkKind::Dir,
        "file" => LinkKind::File,
        "junction" => LinkKind::Junction,
        "mount" => LinkKind::Mount,
        _ => return None,
    };
    Some(Link {
        kind,
        target: target.to_string(),
    })
}

impl Namespace {
    /// A namespace rooted at `sandbox` (directories are created by
    /// [`Namespace::create_volume_root`]).
    pub(crate) fn new(sandbox: PathBuf) -> Self {
        let volumes_dir = sandbox.join("volumes");
        Self {
            sandbox,
            volumes_dir,
            wine_links: false,
        }
    }

    /// Under Wine, stores the links made from now on as Unix symlinks the
    /// host follows (module docs, "Under Wine"); says whether it does:
    /// false for any other build or host.
    pub(crate) fn store_wine_links(&mut self) -> bool {
        self.wine_links = wine::active();
        self.wine_links
    }

    /// The sandbox directory.
    pub fn sandbox(&self) -> &Path {
        &self.sandbox
    }

    /// Host directory of a volume's root (by GUID, lowercase).
    pub(crate) fn volume_root(&self, guid: &str) -> PathBuf {
        self.volumes_dir.join(guid)
    }

    /// Opens the directory at `rel` (relative to the sandbox) component by
    /// component, never following a host link.
    fn open_beneath<'p>(&self, rel: impl IntoIterator<Item = &'p Path>) -> io::Result<Dir> {
        let mut dir = Dir::open_ambient_dir(&self.sandbox, ambient_authority())?;
        for name in rel {
            dir = dir.open_dir_nofollow(name)?;
        }
        Ok(dir)
    }

    /// The sandbox's `volumes` directory.
    fn volumes(&self) -> io::Result<Dir> {
        self.open_beneath([Path::new("volumes")])
    }

    /// Creates an (empty) root directory for a new volume.
    pub(crate) fn create_volume_root(&self, guid: &str) -> Result<(), Win32Error> {
        let volumes = self.volumes().map_err(io_err)?;
        match volumes.create_dir(guid) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                volumes.open_dir_nofollow(guid).map(drop).map_err(io_err)
            }
            other => other.map_err(io_err),
        }
    }

    /// Removes whatever is at a volume's root (never following a link).
    fn clear_volume_root(&self, volumes: &Dir, guid: &str) -> Result<(), Win32Error> {
        match volumes.symlink_metadata(guid) {
            Ok(m) if m.is_dir() => self
                .remove_tree(volumes, guid, &self.volume_root(guid))
                .map_err(io_err),
            Ok(_) => volumes.remove_file_or_symlink(guid).map_err(io_err),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(e)),
        }
    }

    /// Wipes a volume's contents (format): a fresh root holding only the
    /// hidden `System Volume Information` directory.
    pub(crate) fn wipe_volume_root(&self, guid: &str) -> Result<(), Win32Error> {
        let volumes = self.volumes().map_err(io_err)?;
        self.clear_volume_root(&volumes, guid)?;
        volumes.create_dir(guid).map_err(io_err)?;
        let root = volumes.open_dir_nofollow(guid).map_err(io_err)?;
        root.create_dir(fold("System Volume Information"))
            .map_err(io_err)
    }

    /// Removes a volume's root directory (disk detached).
    pub(crate) fn remove_volume_root(&self, guid: &str) -> Result<(), Win32Error> {
        let volumes = self.volumes().map_err(io_err)?;
        self.clear_volume_root(&volumes, guid)
    }

    /// Host path, handle and volume of a path root.
    fn root_dir(
        &self,
        ctx: Ctx<'_>,
        root: &WinRoot,
    ) -> Result<(PathBuf, Dir, Option<String>), Win32Error> {
        let (guid, volume) = match root {
            WinRoot::Drive(c) => {
                let id = ctx
                    .volumes
                    .drive_volume(*c)
                    .ok_or_else(|| werr(Win32Error::PATH_NOT_FOUND))?;
                let guid = volume_id_guid(&id).ok_or_else(|| werr(Win32Error::PATH_NOT_FOUND))?;
                (guid, id)
            }
            WinRoot::Volume(g) => {
                let id = ctx
                    .volumes
                    .present_volume(&volume_id_for_guid(g))
                    .ok_or_else(|| werr(Win32Error::PATH_NOT_FOUND))?;
                (g.clone(), id)
            }
            WinRoot::Unc { server, share } => {
                let p = ctx
                    .smb
                    .share_root(server, share)
                    .map_err(|e| werr(e.code))?;
                let (p, dir) = self.share_dir(p.to_path_buf())?;
                return Ok((p, dir, None));
            }
        };
        let dir = self
            .open_beneath([Path::new("volumes"), Path::new(&guid)])
            .map_err(root_err)?;
        Ok((self.volume_root(&guid), dir, Some(volume)))
    }

    /// Opens a share's root directory, which must lie inside the sandbox.
    fn share_dir(&self, p: PathBuf) -> Result<(PathBuf, Dir), Win32Error> {
        let rel = p
            .strip_prefix(&self.sandbox)
            .map_err(|_| werr(Win32Error::ACCESS_DENIED))?;
        let mut names = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(name) => names.push(Path::new(name)),
                _ => return Err(werr(Win32Error::ACCESS_DENIED)),
            }
        }
        let dir = self.open_beneath(names).map_err(root_err)?;
        Ok((p, dir))
    }

    /// The `winlink:` a stored link content names (error 1921 if it is none).
    fn parse_winlink(content: &OsString) -> Result<Link, Win32Error> {
        content
            .to_str()
            .and_then(parse_link_content)
            .ok_or_else(|| werr(Win32Error::CANT_RESOLVE_FILENAME))
    }

    /// Walks `path` component by component, following intermediate links and
    /// the final one per `follow`. With `create`, missing directories are
    /// created on the way (MkdirAll); a link whose target does not resolve to
    /// a directory is then an error (183, as Go's MkdirAll reports it).
    pub(crate) fn walk(
        &self,
        ctx: Ctx<'_>,
        path: &WinPath,
        follow: Follow,
        create: bool,
    ) -> Result<Walk, Win32Error> {
        let mut hops = 0u32;
        let mut pending: VecDeque<String> = path.components().iter().cloned().collect();
        let (mut host, mut dir, mut volume) = self.root_dir(ctx, path.root_kind())?;
        let mut win = WinPath::root(path.root_kind().clone());
        let mut mount = win.clone();
        let walk = |host, win, entry, volume, mount, place| Walk {
            host,
            win,
            entry,
            volume,
            mount,
            place,
        };
        if pending.is_empty() {
            return Ok(walk(
                host,
                win,
                Some(Entry::Dir),
                volume,
                mount,
                Place::root(dir),
            ));
        }
        while let Some(comp) = pending.pop_front() {
            let last = pending.is_empty();
            let name = fold(&comp);
            let next_host = host.join(&name);
            let next_win = win.join(&comp);
            // Under Wine a link that loops or dangles is no entry to a
            // handle (an error); its record may still name it.
            let (meta, unseen) = match dir.symlink_metadata(&name) {
                Ok(m) => (Some(m), None),
                Err(e) if e.kind() == io::ErrorKind::NotFound => (None, None),
                Err(e) if self.wine_links => (None, Some(e)),
                Err(e) => return Err(io_err(e)),
            };
            let stored = self
                .link_at(&dir, &name, &next_host, meta.as_ref())
                .map_err(io_err)?;
            if let (None, Some(e)) = (&stored, unseen) {
                return Err(io_err(e));
            }
            // No entry and no link: missing. (A link no handle sees is a
            // dangling one under Wine, known by its record: module docs.)
            if meta.is_none() && stored.is_none() {
                if create {
                    dir.create_dir(&name).map_err(io_err)?;
                    if last {
                        let place = Place::child(dir, name);
                        return Ok(walk(
                            next_host,
                            next_win,
                            Some(Entry::Dir),
                            volume,
                            mount,
                            place,
                        ));
                    }
                    dir = dir.open_dir_nofollow(&name).map_err(io_err)?;
                    host = next_host;
                    win = next_win;
                    continue;
                }
                if last {
                    let place = Place::child(dir, name);
                    return Ok(walk(next_host, next_win, None, volume, mount, place));
                }
                return Err(werr(Win32Error::PATH_NOT_FOUND));
            }
            if let Some(raw) = stored {
                let link = match Self::parse_winlink(&raw) {
                    Ok(l) => l,
                    // A foreign link is an opaque entry: it can be seen and
                    // removed, never followed.
                    Err(_) if last && follow == Follow::None => Link {
                        kind: LinkKind::File,
                        target: raw.to_string_lossy().into_owned(),
                    },
                    Err(e) => return Err(e),
                };
                let follow_this = !last
                    || match follow {
                        Follow::None => false,
                        Follow::Links => link.kind != LinkKind::Mount,
                        Follow::All => true,
                    };
                if !follow_this {
                    let place = Place::child(dir, name);
                    let entry = Some(Entry::Link(link));
                    return Ok(walk(next_host, next_win, entry, volume, mount, place));
                }
                hops += 1;
                if hops > MAX_LINK_HOPS {
                    return Err(werr(Win32Error::CANT_RESOLVE_FILENAME));
                }
                if create {
                    // MkdirAll never creates inside a dangling link.
                    let target = if link.kind == LinkKind::Mount {
                        WinPath::parse(&link.target)?
                    } else {
                        WinPath::parse(&link.target)
                            .map_err(|_| werr(Win32Error::ALREADY_EXISTS))?
                    };
                    match self.walk(ctx, &target, Follow::All, false) {
                        Ok(Walk {
                            entry: Some(Entry::Dir),
                            ..
                        }) => {}
                        Ok(Walk {
                            entry: Some(Entry::File { .. }),
                            ..
                        }) if last => {
                            return Err(Win32Error::not_a_directory());
                        }
                        Ok(Walk { entry: Some(_), .. }) => {
                            return Err(werr(Win32Error::PATH_NOT_FOUND));
                        }
                        Ok(Walk { entry: None, .. }) | Err(_) => {
                            return Err(werr(Win32Error::ALREADY_EXISTS));
                        }
                    }
                }
                if link.kind == LinkKind::Mount {
                    let id = ctx
                        .volumes
                        .present_volume(&link.target)
                        .ok_or_else(|| werr(Win32Error::NOT_READY))?;
                    let guid = volume_id_guid(&id).ok_or_else(|| werr(Win32Error::NOT_READY))?;
                    host = self.volume_root(&guid);
                    dir = self
                        .open_beneath([Path::new("volumes"), Path::new(&guid)])
                        .map_err(root_err)?;
                    volume = Some(id);
                    win = next_win.clone();
                    mount = next_win;
                    if last {
                        let place = Place::root(dir);
                        return Ok(walk(host, win, Some(Entry::Dir), volume, mount, place));
                    }
                    continue;
                }
                let target = WinPath::parse(&link.target)?;
                (host, dir, volume) = self.root_dir(ctx, target.root_kind())?;
                win = WinPath::root(target.root_kind().clone());
                mount = win.clone();
                for c in target.components().iter().rev() {
                    pending.push_front(c.clone());
                }
                if pending.is_empty() {
                    let place = Place::root(dir);
                    return Ok(walk(host, win, Some(Entry::Dir), volume, mount, place));
                }
            } else if meta.as_ref().is_some_and(|m| m.is_dir()) {
                if last {
                    let place = Place::child(dir, name);
                    let entry = Some(Entry::Dir);
                    return Ok(walk(next_host, next_win, entry, volume, mount, place));
                }
                dir = dir.open_dir_nofollow(&name).map_err(io_err)?;
                host = next_host;
                win = next_win;
            } else {
                if last {
                    let place = Place::child(dir, name);
                    let size = meta.as_ref().map_or(0, |m| m.len());
                    let entry = Some(Entry::File { size });
                    return Ok(walk(next_host, next_win, entry, volume, mount, place));
                }
                return Err(werr(Win32Error::PATH_NOT_FOUND));
            }
        }
        unreachable!("the loop returns at the last component")
    }

    /// The entry at `p` without following a final link. Missing → 2
    /// (missing parent → 3).
    pub(crate) fn lstat(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<Entry, Win32Error> {
        self.walk(ctx, p, Follow::None, false)?
            .entry
            .ok_or_else(|| werr(Win32Error::FILE_NOT_FOUND))
    }

    /// Resolves `p` completely (every link, including mount points).
    pub(crate) fn resolve(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<Walk, Win32Error> {
        let w = self.walk(ctx, p, Follow::All, false)?;
        if w.entry.is_none() {
            return Err(werr(Win32Error::FILE_NOT_FOUND));
        }
        Ok(w)
    }

    /// `GetVolumePathName`: the mount point or root of the volume holding the
    /// fully resolved `p` (with trailing `\`), and that volume's id.
    pub(crate) fn volume_path_name(
        &self,
        ctx: Ctx<'_>,
        p: &WinPath,
    ) -> Result<(String, Option<String>), Win32Error> {
        let w = self.resolve(ctx, p)?;
        Ok((w.mount.to_string_with_slash(), w.volume))
    }

    /// MkdirAll: creates missing directories; ok if `p` resolves to a directory.
    pub(crate) fn mkdir_all(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<(), Win32Error> {
        let w = self.walk(ctx, p, Follow::All, true)?;
        match w.entry {
            Some(Entry::Dir) => Ok(()),
            Some(Entry::File { .. }) => Err(Win32Error::not_a_directory()),
            _ => Err(werr(Win32Error::ALREADY_EXISTS)),
        }
    }

    /// Removes one entry: a file, a link (never its target) or an empty directory.
    pub(crate) fn remove(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<(), Win32Error> {
        if p.is_root() {
            return Err(werr(Win32Error::ACCESS_DENIED));
        }
        let w = self.walk(ctx, p, Follow::None, false)?;
        let (dir, name) = (&w.place.dir, w.place.name()?);
        match w.entry {
            None => Err(werr(Win32Error::FILE_NOT_FOUND)),
            Some(Entry::Dir) => dir.remove_dir(name).map_err(io_err),
            Some(Entry::File { .. }) => dir.remove_file(name).map_err(io_err),
            Some(Entry::Link(_)) => self.remove_link_entry(dir, name, &w.host).map_err(io_err),
        }
    }

    /// RemoveAll: recursive, never follows links, a missing path is fine.
    pub(crate) fn remove_all(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<(), Win32Error> {
        if p.is_root() {
            return Err(werr(Win32Error::ACCESS_DENIED));
        }
        let w = match self.walk(ctx, p, Follow::None, false) {
            Ok(w) => w,
            Err(e)
                if matches!(
                    e.code(),
                    Win32Error::FILE_NOT_FOUND | Win32Error::PATH_NOT_FOUND
                ) =>
            {
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let (dir, name) = (&w.place.dir, w.place.name()?);
        match w.entry {
            None => Ok(()),
            // Neither follows links; a link stored as a file is a file.
            Some(Entry::Dir) => self.remove_tree(dir, name, &w.host).map_err(io_err),
            Some(Entry::File { .. }) => dir.remove_file(name).map_err(io_err),
            Some(Entry::Link(_)) => self.remove_link_entry(dir, name, &w.host).map_err(io_err),
        }
    }

    /// Lists a directory (a final link is followed). Names are the stored
    /// (case-folded) names. Not a directory → 267.
    pub(crate) fn list_dir(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<Vec<String>, Win32Error> {
        let w = self.resolve(ctx, p)?;
        if w.entry != Some(Entry::Dir) {
            return Err(werr(Win32Error::DIRECTORY));
        }
        let mut names = Vec::new();
        for e in w
            .place
            .open_dir()
            .map_err(io_err)?
            .entries()
            .map_err(io_err)?
        {
            let e = e.map_err(io_err)?;
            names.push(e.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    /// Creates link `at` of `kind` with target `target` stored verbatim.
    /// `at` existing → 183; its parent missing → 3.
    pub(crate) fn create_link(
        &self,
        ctx: Ctx<'_>,
        at: &WinPath,
        kind: LinkKind,
        target: &str,
    ) -> Result<(), Win32Error> {
        if at.is_root() {
            return Err(werr(Win32Error::ALREADY_EXISTS));
        }
        let w = self.walk(ctx, at, Follow::None, false)?;
        if w.entry.is_some() {
            return Err(werr(Win32Error::ALREADY_EXISTS));
        }
        let content = link_content(kind, target);
        let view = self.view_target(ctx, target);
        self.store_viewed_link(&w.place.dir, w.place.name()?, &w.host, &content, view)
            .map_err(io_err)
    }

    /// `os.Symlink(source, at)`: a directory link if `source` currently
    /// resolves to a directory, else a file link; target stored verbatim.
    pub(crate) fn symlink(
        &self,
        ctx: Ctx<'_>,
        source: &str,
        at: &WinPath,
    ) -> Result<(), Win32Error> {
        let is_dir = WinPath::parse(source)
            .ok()
            .and_then(|s| self.resolve(ctx, &s).ok())
            .is_some_and(|w| w.entry == Some(Entry::Dir));
        let kind = if is_dir {
            LinkKind::Dir
        } else {
            LinkKind::File
        };
        self.create_link(ctx, at, kind, source)
    }

    /// The link at `p` (not followed). Not a link → 4390.
    pub fn readlink(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<Link, Win32Error> {
        match self.lstat(ctx, p)? {
            Entry::Link(l) => Ok(l),
            _ => Err(werr(Win32Error::NOT_A_REPARSE_POINT)),
        }
    }

    /// `SetVolumeMountPoint(dir, id)`: `dir` (symlinks followed) must be an
    /// existing empty directory on a present NTFS volume; it becomes a mount
    /// point of the present volume `id`. Already a mount point or not empty → 145.
    pub(crate) fn set_mount_point(
        &self,
        ctx: Ctx<'_>,
        dir: &WinPath,
        id: &str,
    ) -> Result<(), Win32Error> {
        let w = self.walk(ctx, dir, Follow::Links, false)?;
        match &w.entry {
            None => return Err(werr(Win32Error::FILE_NOT_FOUND)),
            Some(Entry::File { .. }) => return Err(werr(Win32Error::DIRECTORY)),
            Some(Entry::Link(l)) if l.kind == LinkKind::Mount => {
                return Err(werr(Win32Error::DIR_NOT_EMPTY));
            }
            Some(Entry::Link(_)) => return Err(werr(Win32Error::DIRECTORY)),
            Some(Entry::Dir) => {}
        }
        if w.win.is_root() {
            // a drive or volume root cannot become a mount point
            return Err(werr(Win32Error::DIR_NOT_EMPTY));
        }
        let empty = {
            let target = w.place.open_dir().map_err(io_err)?;
            target.entries().map_err(io_err)?.next().is_none()
        };
        if !empty {
            return Err(werr(Win32Error::DIR_NOT_EMPTY));
        }
        match &w.volume {
            Some(v) if ctx.volumes.is_ntfs(v) => {}
            _ => return Err(werr(Win32Error::NOT_SUPPORTED)),
        }
        let canonical = ctx
            .volumes
            .present_volume(id)
            .ok_or_else(|| werr(Win32Error::INVALID_PARAMETER))?;
        let (parent, name) = (&w.place.dir, w.place.name()?);
        parent.remove_dir(name).map_err(io_err)?;
        let content = link_content(LinkKind::Mount, &canonical);
        let view = self.view_target(ctx, &canonical);
        self.store_viewed_link(parent, name, &w.host, &content, view)
            .map_err(io_err)
    }

    /// Where a link's `target` is on the host, lexically (its root's host
    /// directory and its components, links in them left to the host's own
    /// resolution): what the [view](Self::store_viewed_link) points at.
    /// `None` when the target's root cannot be had (a share not mapped).
    fn view_target(&self, ctx: Ctx<'_>, target: &str) -> Option<PathBuf> {
        let win = WinPath::parse(target).ok()?;
        let (host, _, _) = self.root_dir(ctx, win.root_kind()).ok()?;
        Some(win.components().iter().fold(host, |p, c| p.join(fold(c))))
    }

    /// Stores the link `content` as `name` in `dir` so that, on Unix, the
    /// host itself can follow it to `view` (the target's directory in the
    /// sandbox): the host symlink points at `<sandbox>/.links/<content>`,
    /// itself a host symlink to `view`. A process reading the node's
    /// files through the sandbox (a plugin given the `C:` volume's root as
    /// its local root, `NodeOptions::local_root`) so reaches a staged
    /// volume as Windows would, while this module still reads the
    /// `winlink:` content back from the entry's name and never follows a
    /// host link itself. Divergence: the view of a share's link stays
    /// while its mapping has gone. Elsewhere (Windows, or a content that
    /// cannot be a file name) the link is stored as [`store_link`] does,
    /// except under Wine when asked, as a Unix symlink to `view` and a record
    /// ([`Namespace::store_wine_link`]). `host` is the link's host path
    /// (`name` in `dir`).
    fn store_viewed_link(
        &self,
        dir: &Dir,
        name: &str,
        host: &Path,
        content: &str,
        view: Option<PathBuf>,
    ) -> io::Result<()> {
        if self.wine_links
            && let Some(view) = &view
        {
            return self.store_wine_link(host, content, view);
        }
        #[cfg(unix)]
        if let Some(view) = view
            && !content.contains('/')
            && content.len() <= 255
        {
            let views = self.sandbox.join(VIEWS_DIR);
            std::fs::create_dir_all(&views)?;
            let entry = views.join(content);
            match std::fs::remove_file(&entry) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            std::os::unix::fs::symlink(&view, &entry)?;
            return dir.symlink_contents(&entry, name);
        }
        #[cfg(not(unix))]
        let _ = view;
        store_link_in(dir, name, content)
    }

    // ------------------------------------------------------------ Wine links
    //
    // Only under Wine (`wine::active`): see the module docs.

    /// The record of a Wine link at the host path `host`; `None` for a
    /// path outside the sandbox (or the sandbox itself).
    fn wine_record(&self, host: &Path) -> Option<PathBuf> {
        let rel = host.strip_prefix(&self.sandbox).ok()?;
        let mut file = rel.file_name()?.to_os_string();
        file.push(".");
        file.push(WINE_RECORD_EXT);
        Some(
            self.sandbox
                .join(WINE_LINKS_DIR)
                .join(rel)
                .with_file_name(file),
        )
    }

    /// Stores the link `content` at `host` as a Unix symlink to the
    /// directory `view`: first the record, then `ln -s -T` on the Unix
    /// side (the record is taken back if that fails).
    fn store_wine_link(&self, host: &Path, content: &str, view: &Path) -> io::Result<()> {
        let record = self
            .wine_record(host)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "outside the sandbox"))?;
        let (parent, name) = host_parent(host)?;
        let link = wine::unix_child(parent, name)?;
        let target = wine::unix_path(view)?;
        if let Some(dir) = record.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut data = LINK_FILE_MAGIC.to_vec();
        data.extend_from_slice(content.as_bytes());
        std::fs::write(&record, data)?;
        let made = wine::run(&[
            "/bin/ln".as_ref(),
            "-s".as_ref(),
            "-T".as_ref(),
            "--".as_ref(),
            target.as_ref(),
            link.as_ref(),
        ]);
        if made.is_err() {
            let _ = std::fs::remove_file(&record);
        }
        made
    }

    /// The content of the link at `host`, the entry `name` of `dir` whose
    /// `symlink_metadata` is `meta` (`None`: no handle sees it). Under Wine
    /// first a Unix symlink ([`Namespace::wine_link`]), then as elsewhere
    /// ([`stored_link`]).
    fn link_at(
        &self,
        dir: &Dir,
        name: impl AsRef<Path>,
        host: &Path,
        meta: Option<&Metadata>,
    ) -> io::Result<Option<OsString>> {
        if self.wine_links
            && let Some(content) = self.wine_link(host, meta.is_some())?
        {
            return Ok(Some(content));
        }
        match meta {
            Some(meta) => stored_link_in(dir, name, meta),
            None => Ok(None),
        }
    }

    /// Under Wine, the content of the Unix symlink at `host`, `visible` if
    /// a handle sees an entry there. A symlink is known by
    /// `FILE_ATTRIBUTE_REPARSE_POINT` (which Wine gives a Unix symlink to a
    /// directory, and nothing else in the sandbox) or, when it has a record
    /// and is not so marked (a link to a file, or one dangling or looping,
    /// which no handle sees), by the Unix side's `test -L`. Its content is its record's;
    /// a symlink without one was planted from outside and is opaque (no
    /// `winlink:`, never followed). A record with no symlink (a directory
    /// or file there, or nothing) is stale: dropped.
    fn wine_link(&self, host: &Path, visible: bool) -> io::Result<Option<OsString>> {
        let Some(record) = self.wine_record(host) else {
            return Ok(None);
        };
        let content = match std::fs::read(&record) {
            Ok(data) => data
                .strip_prefix(LINK_FILE_MAGIC)
                .map(|c| OsString::from(String::from_utf8_lossy(c).into_owned())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let marked =
            visible && wine::attributes(host).is_some_and(|a| a & wine::REPARSE_POINT != 0);
        // Unmarked: a link to a file (Wine marks only those to
        // directories), one that dangles or loops, or a stale record.
        let symlink = marked
            || content.is_some() && {
                let (parent, name) = host_parent(host)?;
                let unix = wine::unix_child(parent, name)?;
                wine::run(&["test".as_ref(), "-L".as_ref(), unix.as_ref()]).is_ok()
            };
        match (symlink, content) {
            (true, Some(content)) => Ok(Some(content)),
            (true, None) => Ok(Some(OsString::from("(a Unix symlink)"))),
            (false, Some(_)) => {
                let _ = std::fs::remove_file(&record);
                Ok(None)
            }
            (false, None) => Ok(None),
        }
    }

    /// Removes the link `name` of `dir` at host path `host`, never its
    /// target. Under Wine a Unix symlink is removed on the Unix side
    /// (Windows' removals follow it), and its record with it.
    fn remove_link_entry(&self, dir: &Dir, name: &str, host: &Path) -> io::Result<()> {
        if self.wine_links {
            let visible = dir.symlink_metadata(name).is_ok();
            if self.wine_link(host, visible)?.is_some() {
                let (parent, name) = host_parent(host)?;
                let unix = wine::unix_child(parent, name)?;
                wine::run(&[
                    "/bin/rm".as_ref(),
                    "-f".as_ref(),
                    "--".as_ref(),
                    unix.as_ref(),
                ])?;
                if let Some(record) = self.wine_record(host) {
                    match std::fs::remove_file(record) {
                        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                        _ => {}
                    }
                }
                return Ok(());
            }
        }
        dir.remove_file_or_symlink(name)
    }

    /// Removes the directory `name` of `dir` at host path `host` and
    /// everything in it, never following a link. Under Wine, when links
    /// of this module lie beneath (records there), on the Unix side
    /// (`rm -rf`, which follows no symlink; Windows' recursive removal
    /// follows Wine's), with those records.
    fn remove_tree(&self, dir: &Dir, name: &str, host: &Path) -> io::Result<()> {
        let records = match host.strip_prefix(&self.sandbox) {
            Ok(rel) if self.wine_links && rel.file_name().is_some() => {
                Some(self.sandbox.join(WINE_LINKS_DIR).join(rel))
            }
            _ => None,
        };
        // No record beneath: no link this module made (the Windows removal,
        // as elsewhere).
        let Some(records) = records.filter(|r| r.is_dir()) else {
            return dir.remove_dir_all(name);
        };
        let (parent, host_name) = host_parent(host)?;
        let unix = wine::unix_child(parent, host_name)?;
        wine::run(&[
            "/bin/rm".as_ref(),
            "-rf".as_ref(),
            "--".as_ref(),
            unix.as_ref(),
        ])?;
        match std::fs::remove_dir_all(records) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Under Wine, the mount points no handle sees (their volume's
    /// directory gone, so the Unix symlink dangles), from the records
    /// under `volumes`: `(host path, volume id)`.
    fn dangling_wine_mount_points(&self) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        let records = self.sandbox.join(WINE_LINKS_DIR);
        let mut stack = vec![records.join("volumes")];
        while let Some(at) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&at) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(p);
                    continue;
                }
                if p.extension() != Some(std::ffi::OsStr::new(WINE_RECORD_EXT)) {
                    continue;
                }
                let Ok(rel) = p
                    .with_extension("")
                    .strip_prefix(&records)
                    .map(Path::to_path_buf)
                else {
                    continue;
                };
                let host = self.sandbox.join(rel);
                if std::fs::symlink_metadata(&host).is_ok() {
                    continue; // seen by the scan of the volume roots
                }
                if let Ok(Some(raw)) = self.wine_link(&host, false)
                    && let Ok(l) = Self::parse_winlink(&raw)
                    && l.kind == LinkKind::Mount
                {
                    out.push((host, l.target));
                }
            }
        }
        out
    }

    /// `DeleteVolumeMountPoint(dir)`: the final component must be a mount
    /// point (4390 otherwise; missing → 2); it becomes an empty directory.
    pub(crate) fn delete_mount_point(&self, ctx: Ctx<'_>, dir: &WinPath) -> Result<(), Win32Error> {
        let w = self.walk(ctx, dir, Follow::None, false)?;
        match &w.entry {
            None => Err(werr(Win32Error::FILE_NOT_FOUND)),
            Some(Entry::Link(l)) if l.kind == LinkKind::Mount => {
                let (parent, name) = (&w.place.dir, w.place.name()?);
                self.remove_link_entry(parent, name, &w.host)
                    .map_err(io_err)?;
                parent.create_dir(name).map_err(io_err)
            }
            Some(_) => Err(werr(Win32Error::NOT_A_REPARSE_POINT)),
        }
    }

    /// Writes (creates or replaces) a file's contents; the parent must exist.
    /// Returns the volume the file is on and the size it replaced.
    pub(crate) fn write_file(
        &self,
        ctx: Ctx<'_>,
        p: &WinPath,
        data: &[u8],
    ) -> Result<(Option<String>, u64), Win32Error> {
        let w = self.walk(ctx, p, Follow::All, false)?;
        let old = match w.entry {
            Some(Entry::Dir) => return Err(werr(Win32Error::ACCESS_DENIED)),
            Some(Entry::Link(_)) => return Err(werr(Win32Error::CANT_RESOLVE_FILENAME)),
            Some(Entry::File { size }) => size,
            None => 0,
        };
        if cfg!(windows) && data.starts_with(LINK_FILE_MAGIC) {
            // It would read back as a link (see the module docs).
            return Err(werr(Win32Error::ACCESS_DENIED));
        }
        let mut options = OpenOptions::new();
        options
            .write(true)
            .create(true)
            .truncate(true)
            .follow(FollowSymlinks::No);
        let mut f = w
            .place
            .dir
            .open_with(w.place.name()?, &options)
            .map_err(io_err)?;
        f.write_all(data).map_err(io_err)?;
        Ok((w.volume, old))
    }

    /// Reads a file (links followed).
    pub(crate) fn read_file(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<Vec<u8>, Win32Error> {
        let w = self.resolve(ctx, p)?;
        if !matches!(w.entry, Some(Entry::File { .. })) {
            return Err(werr(Win32Error::ACCESS_DENIED));
        }
        let mut data = Vec::new();
        open_nofollow(&w.place.dir, w.place.name()?)
            .and_then(|mut f| f.read_to_end(&mut data))
            .map_err(io_err)?;
        Ok(data)
    }

    /// Every mount point under the volume roots: `(host path, volume id)`.
    pub(crate) fn mount_points(&self) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        let Ok(volumes) = self.volumes() else {
            return out;
        };
        let mut stack = vec![(volumes, self.volumes_dir.clone())];
        while let Some((dir, host)) = stack.pop() {
            let Ok(entries) = dir.entries() else { continue };
            for e in entries.flatten() {
                let name = e.file_name();
                let Ok(m) = dir.symlink_metadata(&name) else {
                    continue;
                };
                let p = host.join(&name);
                if let Ok(Some(raw)) = self.link_at(&dir, &name, &p, Some(&m)) {
                    if let Ok(l) = Self::parse_winlink(&raw)
                        && l.kind == LinkKind::Mount
                    {
                        out.push((p, l.target));
                    }
                } else if m.is_dir()
                    && let Ok(sub) = dir.open_dir_nofollow(&name)
                {
                    stack.push((sub, p));
                }
            }
        }
        if self.wine_links {
            out.extend(self.dangling_wine_mount_points());
        }
        out.sort();
        out
    }
}

// ---------------------------------------------------------------- link storage
//
// The only code that knows how a link is represented on the host.

/// The header of a file that stores a link on Windows; the link content
/// follows it (UTF-8).
pub(crate) const LINK_FILE_MAGIC: &[u8] = b"\0csi-proxy-winlink\0";

/// The host directory holding `host` and its name there.
fn host_parent(host: &Path) -> io::Result<(&Path, &std::ffi::OsStr)> {
    match (host.parent(), host.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "no parent")),
    }
}

/// Opens the file `name` in `dir` for reading, never through a host link.
fn open_nofollow(dir: &Dir, name: impl AsRef<Path>) -> io::Result<cap_std::fs::File> {
    let mut options = OpenOptions::new();
    options.read(true).follow(FollowSymlinks::No);
    dir.open_with(name, &options)
}

/// The directory holding `at` and its name there, opened on the host path.
fn parent_of(at: &Path) -> io::Result<(Dir, &Path)> {
    let name = at
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let parent = match at.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = Dir::open_ambient_dir(parent, ambient_authority())?;
    Ok((dir, Path::new(name)))
}

/// Stores a link with `content` at `at`, which must not exist (else
/// `AlreadyExists`). The host never follows it: on Unix it is a symlink whose
/// content is no valid host path; on Windows a regular file starting with
/// `LINK_FILE_MAGIC`.
pub fn store_link(content: &str, at: &Path) -> io::Result<()> {
    let (dir, name) = parent_of(at)?;
    store_link_in(&dir, name, content)
}

fn store_link_in(dir: &Dir, name: impl AsRef<Path>, content: &str) -> io::Result<()> {
    #[cfg(unix)]
    {
        dir.symlink_contents(content, name)
    }
    #[cfg(windows)]
    {
        let name = name.as_ref();
        let mut options = OpenOptions::new();
        options
            .write(true)
            .create_new(true)
            .follow(FollowSymlinks::No);
        let mut f = dir.open_with(name, &options)?;
        let written = f
            .write_all(LINK_FILE_MAGIC)
            .and_then(|()| f.write_all(content.as_bytes()))
            .and_then(|()| f.sync_all());
        drop(f);
        if let Err(e) = written {
            let _ = dir.remove_file(name);
            return Err(e);
        }
        Ok(())
    }
}

/// The content of the link at `at`, given `meta` (its `symlink_metadata`);
/// `None` if `at` is no link (a directory or a regular file). A host symlink
/// (or, on Windows, junction) this module did not create gives its raw
/// target: callers treat anything that is no `winlink:` as opaque.
pub fn stored_link(at: &Path, meta: &std::fs::Metadata) -> io::Result<Option<OsString>> {
    let (dir, name) = parent_of(at)?;
    let shape = Shape {
        symlink: meta.file_type().is_symlink(),
        file: meta.is_file(),
        len: meta.len(),
    };
    stored_link_as(&dir, name, shape)
}

/// What [`stored_link`] needs to know of an entry's metadata.
#[derive(Clone, Copy)]
struct Shape {
    symlink: bool,
    file: bool,
    len: u64,
}

/// [`stored_link`] of the entry `name` in `dir`, given `meta` (its
/// `symlink_metadata`).
fn stored_link_in(
    dir: &Dir,
    name: impl AsRef<Path>,
    meta: &Metadata,
) -> io::Result<Option<OsString>> {
    let shape = Shape {
        symlink: meta.file_type().is_symlink(),
        file: meta.is_file(),
        len: meta.len(),
    };
    stored_link_as(dir, name, shape)
}

fn stored_link_as(dir: &Dir, name: impl AsRef<Path>, shape: Shape) -> io::Result<Option<OsString>> {
    if shape.symlink {
        let target = dir.read_link_contents(name)?;
        // A viewed link (`Namespace::store_viewed_link`): its content is
        // the name of the entry it points at.
        if let (Some(parent), Some(entry)) = (target.parent(), target.file_name())
            && parent.file_name() == Some(std::ffi::OsStr::new(VIEWS_DIR))
            && entry.to_string_lossy().starts_with(LINK_PREFIX)
        {
            return Ok(Some(entry.to_os_string()));
        }
        return Ok(Some(target.into_os_string()));
    }
    if cfg!(unix) || !shape.file || shape.len < LINK_FILE_MAGIC.len() as u64 {
        return Ok(None);
    }
    let mut f = open_nofollow(dir, name)?;
    let mut head = [0u8; LINK_FILE_MAGIC.len()];
    match f.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    if head != LINK_FILE_MAGIC {
        return Ok(None);
    }
    let mut rest = Vec::new();
    f.read_to_end(&mut rest)?;
    Ok(Some(match String::from_utf8(rest) {
        Ok(s) => OsString::from(s),
        // No `winlink:` (callers refuse to follow it), but visible.
        Err(e) => OsString::from(format!("\u{FFFD}{}", String::from_utf8_lossy(e.as_bytes()))),
    }))
}

/// Removes the link at `at` (never its target).
pub fn remove_link(at: &Path) -> io::Result<()> {
    let (dir, name) = parent_of(at)?;
    dir.remove_file_or_symlink(name)
}
