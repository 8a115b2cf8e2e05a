//! The filesystem group (v1) over the boundary's Win32 path calls, with
//! Go's `os` semantics the proxy has (`MkdirAll`, `Remove`, `RemoveAll`,
//! `Symlink`), and the proxy's working-directory confinement.

use super::backend::{Ctx, HostProcess, is_missing};
use super::boundary::{Failure, FileKind};
use crate::Error;
use crate::filesystem::v1 as api;

/// The parent of a `X:\...` path; `None` at the drive root.
fn parent(path: &str) -> Option<&str> {
    let trimmed = path.trim_end_matches('\\');
    let at = trimmed.rfind('\\')?;
    // `C:\x` -> `C:\`; never above the drive root.
    if at <= 2 {
        return (trimmed.len() > 3).then(|| &path[..3]);
    }
    Some(&trimmed[..at])
}

/// Whether `kind` is, or leads to, a directory (Go's `Stat` follows links).
fn is_dir(kind: &FileKind) -> bool {
    match kind {
        FileKind::Directory | FileKind::MountPoint { .. } => true,
        FileKind::Symlink { directory, .. } => *directory,
        FileKind::File => false,
    }
}

fn path_exists(ctx: &Ctx, path: &str) -> Result<bool, String> {
    ctx.validate(path)?;
    match ctx.host().file_kind(path) {
        Ok(_) => Ok(true),
        Err(e) if is_missing(&e) => Ok(false),
        Err(e) => Err(format!("CreateFile {path}: {e}")),
    }
}

/// Go's `os.MkdirAll`: an existing directory is fine; parents first.
fn mkdir_all(ctx: &Ctx, path: &str) -> Result<(), String> {
    match ctx.host().file_kind(path) {
        Ok(kind) if is_dir(&kind) => return Ok(()),
        Ok(_) => {
            let e = Failure::win32(267, "The directory name is invalid.");
            return Err(format!("mkdir {path}: {e}"));
        }
        Err(_) => {}
    }
    if let Some(up) = parent(path) {
        mkdir_all(ctx, up)?;
    }
    match ctx.host().create_directory(path) {
        Ok(()) => Ok(()),
        Err(e) => match ctx.host().file_kind(path) {
            Ok(kind) if is_dir(&kind) => Ok(()),
            _ => Err(format!("mkdir {path}: {e}")),
        },
    }
}

/// Removes the entry at `path` itself: a directory (empty), a directory
/// link or mount point (never what it points to), a file or file link.
fn remove_one(ctx: &Ctx, path: &str, kind: &FileKind) -> Result<(), Failure> {
    match kind {
        FileKind::Directory
        | FileKind::MountPoint { .. }
        | FileKind::Symlink {
            directory: true, ..
        } => ctx.host().remove_directory(path),
        FileKind::File
        | FileKind::Symlink {
            directory: false, ..
        } => ctx.host().delete_file(path),
    }
}

/// Go's `os.RemoveAll`: a missing path is fine; links are removed, never followed.
fn remove_all(ctx: &Ctx, path: &str) -> Result<(), String> {
    let kind = match ctx.host().file_kind(path) {
        Ok(kind) => kind,
        Err(e) if is_missing(&e) => return Ok(()),
        Err(e) => return Err(format!("CreateFile {path}: {e}")),
    };
    if kind == FileKind::Directory {
        let names = ctx
            .host()
            .list_directory(path)
            .map_err(|e| format!("open {path}: {e}"))?;
        for name in names {
            remove_all(ctx, &format!("{}\\{name}", path.trim_end_matches('\\')))?;
        }
    }
    remove_one(ctx, path, &kind).map_err(|e| format!("remove {path}: {e}"))
}

fn rmdir(ctx: &Ctx, path: &str, force: bool) -> Result<(), String> {
    ctx.validate(path)?;
    if force {
        if path == "." || path.ends_with("\\.") || path.ends_with("/.") {
            return Err(format!("RemoveAll {path}: invalid argument"));
        }
        return remove_all(ctx, path);
    }
    let kind = ctx
        .host()
        .file_kind(path)
        .map_err(|e| format!("remove {path}: {e}"))?;
    remove_one(ctx, path, &kind).map_err(|e| format!("remove {path}: {e}"))
}

fn create_symlink(ctx: &Ctx, source: &str, target: &str) -> Result<(), String> {
    ctx.validate(target)?;
    ctx.validate(source)?;
    // Go's os.Symlink makes a directory link when the source is a directory now.
    let directory = ctx.host().file_kind(source).is_ok_and(|k| is_dir(&k));
    ctx.host()
        .create_symbolic_link(target, source, directory)
        .map_err(|e| format!("symlink {source} {target}: {e}"))
}

/// A link or mount point whose target is there.
fn is_symlink(ctx: &Ctx, path: &str) -> Result<bool, String> {
    let kind = ctx
        .host()
        .file_kind(path)
        .map_err(|e| format!("CreateFile {path}: {e}"))?;
    Ok(match kind {
        FileKind::Symlink { target, .. } | FileKind::MountPoint { target } => {
            ctx.host().file_kind(&target).is_ok()
        }
        FileKind::Directory | FileKind::File => false,
    })
}

#[async_trait::async_trait]
impl api::FilesystemApi for HostProcess {
    async fn create_symlink(
        &self,
        request: api::CreateSymlinkRequest,
    ) -> Result<api::CreateSymlinkResponse, Error> {
        self.run("/v1.Filesystem/CreateSymlink", move |ctx| {
            create_symlink(ctx, &request.source_path, &request.target_path)
                .map(|()| api::CreateSymlinkResponse {})
        })
        .await
    }

    async fn is_symlink(
        &self,
        request: api::IsSymlinkRequest,
    ) -> Result<api::IsSymlinkResponse, Error> {
        self.run("/v1.Filesystem/IsSymlink", move |ctx| {
            Ok(api::IsSymlinkResponse {
                is_symlink: is_symlink(ctx, &request.path)?,
            })
        })
        .await
    }

    async fn mkdir(&self, request: api::MkdirRequest) -> Result<api::MkdirResponse, Error> {
        self.run("/v1.Filesystem/Mkdir", move |ctx| {
            ctx.validate(&request.path)?;
            mkdir_all(ctx, &request.path).map(|()| api::MkdirResponse {})
        })
        .await
    }

    async fn path_exists(
        &self,
        request: api::PathExistsRequest,
    ) -> Result<api::PathExistsResponse, Error> {
        self.run("/v1.Filesystem/PathExists", move |ctx| {
            Ok(api::PathExistsResponse {
                exists: path_exists(ctx, &request.path)?,
            })
        })
        .await
    }

    async fn rmdir(&self, request: api::RmdirRequest) -> Result<api::RmdirResponse, Error> {
        self.run("/v1.Filesystem/Rmdir", move |ctx| {
            rmdir(ctx, &request.path, request.force).map(|()| api::RmdirResponse {})
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::parent;

    #[test]
    fn parents_stop_at_the_drive_root() {
        assert_eq!(parent(r"C:\a\b"), Some(r"C:\a"));
        assert_eq!(parent(r"C:\a\b\"), Some(r"C:\a"));
        assert_eq!(parent(r"C:\a"), Some(r"C:\"));
        assert_eq!(parent(r"C:\"), None);
    }
}
