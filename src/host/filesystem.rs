//! The filesystem group's operations,
//! version-neutral, as methods of [`HostState`] over its namespace.
//!
//! Paths are validated against the node's working-dir list with
//! [`validate_working_path`] (stricter than upstream, see
//! [`path`](super::path)); `IsSymlink` is not validated, as upstream. Host
//! errors read like Go's `<op> <path>: <Win32 message>`. `LinkPath` and
//! `IsMountPoint` of the old versions are `create_symlink` and `is_symlink`.

use super::error::{HostError, HostResult};
use super::namespace::{Entry, LinkKind};
use super::path::{Win32Error, WinPath, validate_working_path};
use super::state::HostState;

fn op_err(op: &str, p: &str, e: Win32Error) -> HostError {
    HostError::unknown(format!("{op} {p}: {e}"))
}

/// The parents of the validated `C:\...` path `p` that Go's `MkdirAll`
/// recurses into, outermost first: `p` cut before each separator that
/// starts a component, the drive excluded.
fn go_parents(p: &str) -> impl Iterator<Item = &str> {
    let sep = |b: u8| b == b'\\' || b == b'/';
    let b = p.as_bytes();
    (3..b.len().saturating_sub(1))
        .filter(move |&i| sep(b[i]) && !sep(b[i + 1]))
        .map(move |i| &p[..i])
}

impl HostState {
    fn validate(&self, p: &str) -> HostResult<()> {
        validate_working_path(p, &self.working_dirs)
    }

    /// Whether the path exists (lstat: a dangling link exists).
    pub fn path_exists(&self, p: &str) -> HostResult<bool> {
        self.validate(p)?;
        let path = WinPath::parse(p).map_err(|e| op_err("CreateFile", p, e))?;
        match self.ns.lstat(self.ctx(), &path) {
            Ok(_) => Ok(true),
            Err(e)
                if matches!(
                    e.code(),
                    Win32Error::FILE_NOT_FOUND | Win32Error::PATH_NOT_FOUND
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(op_err("CreateFile", p, e)),
        }
    }

    /// Creates the directory and its parents; existing directory is fine.
    pub fn mkdir(&self, p: &str) -> HostResult<()> {
        self.validate(p)?;
        let path = WinPath::parse(p).map_err(|e| op_err("mkdir", p, e))?;
        let Err(e) = self.ns.mkdir_all(self.ctx(), &path) else {
            return Ok(());
        };
        // Go's MkdirAll makes each parent first, so its error names the
        // first parent that cannot be made, if any.
        for parent in go_parents(p) {
            let at = WinPath::parse(parent).map_err(|e| op_err("mkdir", parent, e))?;
            self.ns
                .mkdir_all(self.ctx(), &at)
                .map_err(|e| op_err("mkdir", parent, e))?;
        }
        Err(op_err("mkdir", p, e))
    }

    /// Removes one entry, or recursively with `force`.
    pub fn rmdir(&self, p: &str, force: bool) -> HostResult<()> {
        self.validate(p)?;
        if force {
            if p == "." || p.ends_with("\\.") || p.ends_with("/.") {
                return Err(HostError::unknown(format!(
                    "RemoveAll {p}: invalid argument"
                )));
            }
            let path = WinPath::parse(p).map_err(|e| op_err("remove", p, e))?;
            self.remove_all(&path, p)
        } else {
            let path = WinPath::parse(p).map_err(|e| op_err("remove", p, e))?;
            self.ns
                .remove(self.ctx(), &path)
                .map_err(|e| op_err("remove", p, e))
        }
    }

    /// Go's `os.RemoveAll` on Windows (`shown` is `path` as the caller gave
    /// it): a missing path is fine; a lookup that fails otherwise reads as
    /// Lstat's `CreateFile`, a removal that fails as `remove`.
    fn remove_all(&self, path: &WinPath, shown: &str) -> HostResult<()> {
        match self.ns.lstat(self.ctx(), path) {
            Err(e)
                if !matches!(
                    e.code(),
                    Win32Error::FILE_NOT_FOUND | Win32Error::PATH_NOT_FOUND
                ) =>
            {
                Err(op_err("CreateFile", shown, e))
            }
            _ => self
                .ns
                .remove_all(self.ctx(), path)
                .map_err(|e| op_err("remove", shown, e)),
        }
    }

    /// Removes everything inside a directory, keeping it (v2alpha1).
    pub fn rmdir_contents(&self, p: &str) -> HostResult<()> {
        self.validate(p)?;
        let path = WinPath::parse(p).map_err(|e| op_err("open", p, e))?;
        let names = self
            .ns
            .list_dir(self.ctx(), &path)
            .map_err(|e| op_err("open", p, e))?;
        for name in names {
            let child = path.join(&name);
            self.remove_all(&child, &child.to_string())?;
        }
        Ok(())
    }

    /// Creates the link `target` pointing at `source`.
    pub fn create_symlink(&self, source: &str, target: &str) -> HostResult<()> {
        self.validate(target)?;
        self.validate(source)?;
        let err = |e| HostError::unknown(format!("symlink {source} {target}: {e}"));
        let at = WinPath::parse(target).map_err(err)?;
        self.ns.symlink(self.ctx(), source, &at).map_err(err)
    }

    /// Whether the path is a link/junction/mount point whose target exists.
    pub fn is_symlink(&self, p: &str) -> HostResult<bool> {
        let path = WinPath::parse(p).map_err(|e| op_err("CreateFile", p, e))?;
        let link = match self
            .ns
            .lstat(self.ctx(), &path)
            .map_err(|e| op_err("CreateFile", p, e))?
        {
            Entry::Link(l) => l,
            _ => return Ok(false),
        };
        // Read the target one level and lstat it; a missing target is false.
        let exists = if link.kind == LinkKind::Mount {
            self.storage.volume(&link.target).is_some()
        } else {
            WinPath::parse(&link.target)
                .ok()
                .is_some_and(|t| self.ns.lstat(self.ctx(), &t).is_ok())
        };
        Ok(exists)
    }
}
