//! The file namespace on a real sandbox directory (filesystem.md §6,
//! volume.md §7.3).
//!
//! # Layout
//! ```text
//! <sandbox>/volumes/<guid>/...   root directory of each volume (present or not)
//! ```
//! Drive letters resolve through the volume registry ([`VolumeLookup`]) to the
//! lettered volume's root; `\\?\Volume{GUID}\` roots to that volume's root;
//! UNC roots through an [`UncResolver`]. Every component is stored
//! case-folded ([`fold`]), so Windows' case-insensitive names come for free.
//!
//! A link's *content* is a tagged Windows target (`winlink:dir:C:\...`,
//! `winlink:file:...`, `winlink:junction:...`,
//! `winlink:mount:\\?\Volume{guid}\`, see [`link_content`]). How that content
//! is stored on the host is known only to three functions, [`store_link`],
//! [`stored_link`] and [`remove_link`]:
//! - on Unix a link is a host symlink holding the content;
//! - on Windows a link is a regular file holding [`LINK_FILE_MAGIC`] followed
//!   by the content (host symlinks need a privilege there, and Wine does not
//!   give their content back faithfully). A real host symlink or junction
//!   found in the sandbox is read as a foreign link.
//!
//! The content is not a usable host path, and this module never asks the
//! host to follow a link: it walks component by component with
//! `symlink_metadata` / [`stored_link`], splices link targets in itself (at
//! most 63 hops), and only ever builds host paths as
//! `<root>/<folded component>/...` from components that passed
//! [`WinPath::parse`]. A link in the sandbox that is not a `winlink:` is
//! treated as unresolvable, never followed. So no request can reach a file
//! outside the sandbox.
//!
//! # Divergences from upstream
//! - A symlink in the sandbox that is not a `winlink:` (planted from outside)
//!   is an opaque entry: it can be seen and removed, never followed.
//! - A mount point whose volume is absent (disk offline or detached) fails
//!   resolution with Win32 error 21 ("The device is not ready.").
//! - UNC paths resolve only through the [`UncResolver`]; a resolver answer
//!   outside the sandbox is refused with error 5.
//! - Drive and volume roots cannot be removed (error 5).
//! - Names are stored case-folded, so the original case of a file name is not
//!   kept (no RPC of these groups returns names).
//! - On Windows, file data that starts with [`LINK_FILE_MAGIC`] cannot be
//!   written (error 5): it would read back as a link.
//!
//! # Seams for other host modules
//! - SMB implements [`UncResolver`] (root directory of `\\server\share` while a
//!   global mapping exists, else an error) and is passed in the [`Ctx`]; until
//!   then [`NoUnc`] refuses every UNC path with error 67. Share roots must lie
//!   inside the sandbox (checked).
//! - SMB creates its `local_path` link with [`Namespace::create_link`] and
//!   [`LinkKind::Dir`] whose target is the UNC path (`\\server\share\sub\`).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use super::path::{Win32Error, WinPath, WinRoot, fold, volume_id_for_guid, volume_id_guid};

const LINK_PREFIX: &str = "winlink:";
/// Windows' limit on reparse-point hops in one resolution.
pub const MAX_LINK_HOPS: u32 = 63;

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

/// The volume registry the namespace resolves drive letters and volume ids
/// through (implemented by the storage model).
pub trait VolumeLookup {
    /// The canonical id of the *present* volume `id` (matched
    /// case-insensitively), or `None`.
    fn present_volume(&self, id: &str) -> Option<String>;
    /// The canonical id of the present volume with drive letter `letter`.
    fn drive_volume(&self, letter: char) -> Option<String>;
    /// Whether the present volume `id` is formatted NTFS.
    fn is_ntfs(&self, id: &str) -> bool;
}

/// Resolves UNC roots (`\\server\share`) to directories inside the sandbox.
/// The SMB model implements it.
pub trait UncResolver {
    /// The root directory of the share if it is reachable, else a Win32 error.
    fn share_root(&self, server: &str, share: &str) -> Result<PathBuf, Win32Error>;
}

/// The default [`UncResolver`]: every share is unreachable (error 67).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoUnc;

impl UncResolver for NoUnc {
    fn share_root(&self, _server: &str, _share: &str) -> Result<PathBuf, Win32Error> {
        Err(Win32Error::new(Win32Error::BAD_NET_NAME))
    }
}

/// What a namespace operation resolves roots through.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// Drive letters and volume ids.
    pub volumes: &'a dyn VolumeLookup,
    /// UNC shares.
    pub unc: &'a dyn UncResolver,
}

/// Whether the final component is followed when it is a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Never (lstat).
    None,
    /// Symlinks and junctions, but stop at a mount point.
    Links,
    /// Everything, including mount points (stat).
    All,
}

/// The result of walking a path.
#[derive(Debug, Clone)]
pub struct Walk {
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
}

/// The file namespace of one node.
#[derive(Debug, Clone)]
pub struct Namespace {
    sandbox: PathBuf,
    volumes_dir: PathBuf,
}

fn werr(code: u32) -> Win32Error {
    Win32Error::new(code)
}

fn io_err(e: std::io::Error) -> Win32Error {
    Win32Error::from_io(&e)
}

/// The content stored in a link (see [`store_link`]).
pub fn link_content(kind: LinkKind, target: &str) -> String {
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
    pub fn new(sandbox: PathBuf) -> Self {
        let volumes_dir = sandbox.join("volumes");
        Self {
            sandbox,
            volumes_dir,
        }
    }

    /// The sandbox directory.
    pub fn sandbox(&self) -> &Path {
        &self.sandbox
    }

    /// Host directory of a volume's root (by GUID, lowercase).
    pub fn volume_root(&self, guid: &str) -> PathBuf {
        self.volumes_dir.join(guid)
    }

    /// Creates an (empty) root directory for a new volume.
    pub fn create_volume_root(&self, guid: &str) -> Result<(), Win32Error> {
        fs::create_dir_all(self.volume_root(guid)).map_err(io_err)
    }

    /// Wipes a volume's contents (format): a fresh root holding only the
    /// hidden `System Volume Information` directory.
    pub fn wipe_volume_root(&self, guid: &str) -> Result<(), Win32Error> {
        let root = self.volume_root(guid);
        if fs::symlink_metadata(&root).is_ok() {
            fs::remove_dir_all(&root).map_err(io_err)?;
        }
        fs::create_dir_all(root.join(fold("System Volume Information"))).map_err(io_err)
    }

    /// Removes a volume's root directory (disk detached).
    pub fn remove_volume_root(&self, guid: &str) -> Result<(), Win32Error> {
        let root = self.volume_root(guid);
        if fs::symlink_metadata(&root).is_ok() {
            fs::remove_dir_all(&root).map_err(io_err)?;
        }
        Ok(())
    }

    fn check_in_sandbox(&self, p: &Path) -> Result<(), Win32Error> {
        if !p.starts_with(&self.sandbox)
            || p.components()
                .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
        {
            return Err(werr(Win32Error::ACCESS_DENIED));
        }
        Ok(())
    }

    /// Host directory and volume of a path root.
    fn root_dir(
        &self,
        ctx: Ctx<'_>,
        root: &WinRoot,
    ) -> Result<(PathBuf, Option<String>), Win32Error> {
        match root {
            WinRoot::Drive(c) => {
                let id = ctx
                    .volumes
                    .drive_volume(*c)
                    .ok_or_else(|| werr(Win32Error::PATH_NOT_FOUND))?;
                let guid = volume_id_guid(&id).ok_or_else(|| werr(Win32Error::PATH_NOT_FOUND))?;
                Ok((self.volume_root(&guid), Some(id)))
            }
            WinRoot::Volume(g) => {
                let id = ctx
                    .volumes
                    .present_volume(&volume_id_for_guid(g))
                    .ok_or_else(|| werr(Win32Error::PATH_NOT_FOUND))?;
                Ok((self.volume_root(g), Some(id)))
            }
            WinRoot::Unc { server, share } => {
                let p = ctx.unc.share_root(server, share)?;
                self.check_in_sandbox(&p)?;
                Ok((p, None))
            }
        }
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
    pub fn walk(
        &self,
        ctx: Ctx<'_>,
        path: &WinPath,
        follow: Follow,
        create: bool,
    ) -> Result<Walk, Win32Error> {
        let mut hops = 0u32;
        let mut pending: VecDeque<String> = path.components().iter().cloned().collect();
        let (mut host, mut volume) = self.root_dir(ctx, path.root_kind())?;
        let mut win = WinPath::root(path.root_kind().clone());
        let mut mount = win.clone();
        let dir_walk = |host: PathBuf, win: WinPath, volume: Option<String>, mount: WinPath| Walk {
            host,
            win,
            entry: Some(Entry::Dir),
            volume,
            mount,
        };
        if pending.is_empty() {
            return Ok(dir_walk(host, win, volume, mount));
        }
        while let Some(comp) = pending.pop_front() {
            let last = pending.is_empty();
            let next_host = host.join(fold(&comp));
            let next_win = win.join(&comp);
            let meta = match fs::symlink_metadata(&next_host) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if create {
                        fs::create_dir(&next_host).map_err(io_err)?;
                        host = next_host;
                        win = next_win;
                        if last {
                            return Ok(dir_walk(host, win, volume, mount));
                        }
                        continue;
                    }
                    if last {
                        return Ok(Walk {
                            host: next_host,
                            win: next_win,
                            entry: None,
                            volume,
                            mount,
                        });
                    }
                    return Err(werr(Win32Error::PATH_NOT_FOUND));
                }
                Err(e) => return Err(io_err(e)),
            };
            if let Some(raw) = stored_link(&next_host, &meta).map_err(io_err)? {
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
                    return Ok(Walk {
                        host: next_host,
                        win: next_win,
                        entry: Some(Entry::Link(link)),
                        volume,
                        mount,
                    });
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
                    volume = Some(id);
                    win = next_win.clone();
                    mount = next_win;
                    if last {
                        return Ok(dir_walk(host, win, volume, mount));
                    }
                    continue;
                }
                let target = WinPath::parse(&link.target)?;
                let (h, v) = self.root_dir(ctx, target.root_kind())?;
                host = h;
                volume = v;
                win = WinPath::root(target.root_kind().clone());
                mount = win.clone();
                for c in target.components().iter().rev() {
                    pending.push_front(c.clone());
                }
                if pending.is_empty() {
                    return Ok(dir_walk(host, win, volume, mount));
                }
            } else if meta.is_dir() {
                host = next_host;
                win = next_win;
                if last {
                    return Ok(dir_walk(host, win, volume, mount));
                }
            } else {
                if last {
                    return Ok(Walk {
                        host: next_host,
                        win: next_win,
                        entry: Some(Entry::File { size: meta.len() }),
                        volume,
                        mount,
                    });
                }
                return Err(werr(Win32Error::PATH_NOT_FOUND));
            }
        }
        unreachable!("the loop returns at the last component")
    }

    /// The entry at `p` without following a final link. Missing → 2
    /// (missing parent → 3).
    pub fn lstat(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<Entry, Win32Error> {
        self.walk(ctx, p, Follow::None, false)?
            .entry
            .ok_or_else(|| werr(Win32Error::FILE_NOT_FOUND))
    }

    /// Resolves `p` completely (every link, including mount points).
    pub fn resolve(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<Walk, Win32Error> {
        let w = self.walk(ctx, p, Follow::All, false)?;
        if w.entry.is_none() {
            return Err(werr(Win32Error::FILE_NOT_FOUND));
        }
        Ok(w)
    }

    /// `GetVolumePathName`: the mount point or root of the volume holding the
    /// fully resolved `p` (with trailing `\`), and that volume's id.
    pub fn volume_path_name(
        &self,
        ctx: Ctx<'_>,
        p: &WinPath,
    ) -> Result<(String, Option<String>), Win32Error> {
        let w = self.resolve(ctx, p)?;
        Ok((w.mount.to_string_with_slash(), w.volume))
    }

    /// MkdirAll: creates missing directories; ok if `p` resolves to a directory.
    pub fn mkdir_all(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<(), Win32Error> {
        let w = self.walk(ctx, p, Follow::All, true)?;
        match w.entry {
            Some(Entry::Dir) => Ok(()),
            Some(Entry::File { .. }) => Err(Win32Error::not_a_directory()),
            _ => Err(werr(Win32Error::ALREADY_EXISTS)),
        }
    }

    /// Removes one entry: a file, a link (never its target) or an empty directory.
    pub fn remove(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<(), Win32Error> {
        if p.is_root() {
            return Err(werr(Win32Error::ACCESS_DENIED));
        }
        let w = self.walk(ctx, p, Follow::None, false)?;
        match w.entry {
            None => Err(werr(Win32Error::FILE_NOT_FOUND)),
            Some(Entry::Dir) => fs::remove_dir(&w.host).map_err(io_err),
            Some(Entry::File { .. }) => fs::remove_file(&w.host).map_err(io_err),
            Some(Entry::Link(_)) => remove_link(&w.host).map_err(io_err),
        }
    }

    /// RemoveAll: recursive, never follows links, a missing path is fine.
    pub fn remove_all(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<(), Win32Error> {
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
        match w.entry {
            None => Ok(()),
            Some(Entry::Dir) => {
                self.check_in_sandbox(&w.host)?;
                // std's remove_dir_all does not follow symlinks (nor
                // junctions), and a link stored as a file is a file to it.
                fs::remove_dir_all(&w.host).map_err(io_err)
            }
            Some(Entry::File { .. }) => fs::remove_file(&w.host).map_err(io_err),
            Some(Entry::Link(_)) => remove_link(&w.host).map_err(io_err),
        }
    }

    /// Lists a directory (a final link is followed). Names are the stored
    /// (case-folded) names. Not a directory → 267.
    pub fn list_dir(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<Vec<String>, Win32Error> {
        let w = self.resolve(ctx, p)?;
        if w.entry != Some(Entry::Dir) {
            return Err(werr(Win32Error::DIRECTORY));
        }
        let mut names = Vec::new();
        for e in fs::read_dir(&w.host).map_err(io_err)? {
            let e = e.map_err(io_err)?;
            names.push(e.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    /// Creates link `at` of `kind` with target `target` stored verbatim.
    /// `at` existing → 183; its parent missing → 3.
    pub fn create_link(
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
        self.check_in_sandbox(&w.host)?;
        store_link(&link_content(kind, target), &w.host).map_err(io_err)
    }

    /// `os.Symlink(source, at)`: a directory link if `source` currently
    /// resolves to a directory, else a file link; target stored verbatim.
    pub fn symlink(&self, ctx: Ctx<'_>, source: &str, at: &WinPath) -> Result<(), Win32Error> {
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
    pub fn set_mount_point(&self, ctx: Ctx<'_>, dir: &WinPath, id: &str) -> Result<(), Win32Error> {
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
        if fs::read_dir(&w.host).map_err(io_err)?.next().is_some() {
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
        self.check_in_sandbox(&w.host)?;
        fs::remove_dir(&w.host).map_err(io_err)?;
        store_link(&link_content(LinkKind::Mount, &canonical), &w.host).map_err(io_err)
    }

    /// `DeleteVolumeMountPoint(dir)`: the final component must be a mount
    /// point (4390 otherwise; missing → 2); it becomes an empty directory.
    pub fn delete_mount_point(&self, ctx: Ctx<'_>, dir: &WinPath) -> Result<(), Win32Error> {
        let w = self.walk(ctx, dir, Follow::None, false)?;
        match &w.entry {
            None => Err(werr(Win32Error::FILE_NOT_FOUND)),
            Some(Entry::Link(l)) if l.kind == LinkKind::Mount => {
                remove_link(&w.host).map_err(io_err)?;
                fs::create_dir(&w.host).map_err(io_err)
            }
            Some(_) => Err(werr(Win32Error::NOT_A_REPARSE_POINT)),
        }
    }

    /// Writes (creates or replaces) a file's contents; the parent must exist.
    /// Returns the volume the file is on and the size it replaced.
    pub fn write_file(
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
        self.check_in_sandbox(&w.host)?;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&w.host)
            .map_err(io_err)?;
        f.write_all(data).map_err(io_err)?;
        Ok((w.volume, old))
    }

    /// Reads a file (links followed).
    pub fn read_file(&self, ctx: Ctx<'_>, p: &WinPath) -> Result<Vec<u8>, Win32Error> {
        let w = self.resolve(ctx, p)?;
        match w.entry {
            Some(Entry::File { .. }) => fs::read(&w.host).map_err(io_err),
            _ => Err(werr(Win32Error::ACCESS_DENIED)),
        }
    }

    /// Every mount point under the volume roots: `(host path, volume id)`.
    pub fn mount_points(&self) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        let mut stack = vec![self.volumes_dir.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(rd) = fs::read_dir(&dir) else { continue };
            for e in rd.flatten() {
                let p = e.path();
                let Ok(m) = fs::symlink_metadata(&p) else {
                    continue;
                };
                if let Ok(Some(raw)) = stored_link(&p, &m) {
                    if let Ok(l) = Self::parse_winlink(&raw)
                        && l.kind == LinkKind::Mount
                    {
                        out.push((p, l.target));
                    }
                } else if m.is_dir() {
                    stack.push(p);
                }
            }
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
pub const LINK_FILE_MAGIC: &[u8] = b"\0csi-proxy-winlink\0";

/// Stores a link with `content` at `at`, which must not exist (else
/// `AlreadyExists`). The host never follows it: on Unix it is a symlink whose
/// content is no valid host path; on Windows a regular file starting with
/// [`LINK_FILE_MAGIC`].
pub fn store_link(content: &str, at: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(content, at)
    }
    #[cfg(windows)]
    {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(at)?;
        let written = f
            .write_all(LINK_FILE_MAGIC)
            .and_then(|()| f.write_all(content.as_bytes()))
            .and_then(|()| f.sync_all());
        drop(f);
        if let Err(e) = written {
            let _ = fs::remove_file(at);
            return Err(e);
        }
        Ok(())
    }
}

/// The content of the link at `at`, given `meta` (its `symlink_metadata`);
/// `None` if `at` is no link (a directory or a regular file). A host symlink
/// (or, on Windows, junction) this module did not create gives its raw
/// target: callers treat anything that is no `winlink:` as opaque.
pub fn stored_link(at: &Path, meta: &fs::Metadata) -> std::io::Result<Option<OsString>> {
    if meta.file_type().is_symlink() {
        return fs::read_link(at).map(|t| Some(t.into_os_string()));
    }
    #[cfg(unix)]
    {
        Ok(None)
    }
    #[cfg(windows)]
    {
        use std::io::Read;
        if !meta.is_file() || meta.len() < LINK_FILE_MAGIC.len() as u64 {
            return Ok(None);
        }
        let mut f = fs::File::open(at)?;
        let mut head = [0u8; LINK_FILE_MAGIC.len()];
        match f.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
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
}

/// Removes the link at `at` (never its target).
pub fn remove_link(at: &Path) -> std::io::Result<()> {
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileTypeExt;
        // A foreign directory symlink or junction is removed as a directory.
        if fs::symlink_metadata(at)?.file_type().is_symlink_dir() {
            return fs::remove_dir(at);
        }
    }
    fs::remove_file(at)
}
