//! The smb group (v1) over the boundary: `MSFT_SmbGlobalMapping`, and the
//! directory link at `local_path`.

use super::backend::{Ctx, HostProcess, text, wmi};
use super::boundary::{DiskSpace, FileKind};
use crate::Error;
use crate::smb::v1 as api;
use crate::win::texts;

/// A remote path: `/` made `\`, and its mapping root, the lowercase
/// `\\host\share` of its first two components.
struct Remote {
    normalized: String,
    root: String,
}

fn parse_remote(remote_path: &str) -> Result<Remote, String> {
    let normalized = remote_path.replace('/', "\\");
    if normalized.is_empty() {
        return Err("remote path is empty".into());
    }
    let mut parts = normalized.split('\\').filter(|p| !p.is_empty());
    match (parts.next(), parts.next()) {
        (Some(host), Some(share)) => Ok(Remote {
            root: format!("\\\\{host}\\{share}").to_lowercase(),
            normalized,
        }),
        _ => Err(format!("remote path ({normalized}) is invalid")),
    }
}

/// A mapping of `root` exists with status OK.
fn is_mapped(ctx: &Ctx, root: &str) -> bool {
    match ctx.host().smb_global_mappings(root) {
        Ok(mappings) => mappings.iter().any(|m| m.status == 0),
        Err(e) => {
            tracing::debug!(root, error = %e, "SMB mapping query failed; taken as not mapped");
            false
        }
    }
}

fn remove_mapping(ctx: &Ctx, root: &str) -> Result<(), String> {
    let fail = |e: String| format!("error remove smb mapping '{root}'. err: {e}");
    let found = ctx
        .host()
        .smb_global_mappings(root)
        .map_err(|e| fail(e.to_string()))?;
    if found.is_empty() {
        return Err(fail(format!(
            "failed to query SMB global mapping by remote path {root}: not found"
        )));
    }
    let result = ctx
        .host()
        .smb_remove_global_mapping(root)
        .map_err(|e| fail(e.to_string()))?;
    // v1.3.0 ignores Remove's return value; a failure is reported here, in
    // the words v1.3 uses for a method's result.
    wmi(result, |c| fail(format!("result: {c}, err: <nil>")))
}

fn new_mapping(ctx: &Ctx, request: &api::NewSmbGlobalMappingRequest) -> Result<(), String> {
    let remote = parse_remote(&request.remote_path)?;
    let root = &remote.root;
    let mut mapped = is_mapped(ctx, root);
    // A mapping whose share cannot be reached now (password changed) is
    // made again. Probed as csi-proxy's library-development branch does
    // (pkg/utils/utils.go IsPathValid, called from pkg/smb/smb.go
    // NewSMBGlobalMapping): `GetFileAttributesW` on the share root. An
    // open of the bare root (`file_kind`) is refused by some servers that
    // answer this, and every stage would then remove a mapping in use.
    if mapped && ctx.host().file_attributes(root).is_err() {
        tracing::debug!(root, "mapped root not valid; remapping");
        remove_mapping(ctx, root)?;
        mapped = false;
    }
    if !mapped {
        let fail = |e: String| format!("NewSmbGlobalMapping failed. err: {e}");
        let result = ctx
            .host()
            .smb_new_global_mapping(
                root,
                &request.username,
                &request.password,
                ctx.require_privacy,
            )
            .map_err(|e| fail(e.to_string()))?;
        wmi(result, texts::smb_create_failed)?;
    }
    link(ctx, &remote, &request.local_path)
}

/// The directory link at `local` to the remote path (none when `local` is
/// empty), as `NewSmbGlobalMapping` makes it after its mapping step.
fn link(ctx: &Ctx, remote: &Remote, local: &str) -> Result<(), String> {
    if local.is_empty() {
        return Ok(());
    }
    ctx.validate(local)?;
    let target = if remote.normalized.ends_with('\\') {
        remote.normalized.clone()
    } else {
        format!("{}\\", remote.normalized)
    };
    ctx.host()
        .create_symbolic_link(local, &target, true)
        .map_err(|e| {
            format!(
                "creating link {local} to {} failed with error: error linking {target} to \
                 {local}. err: {}",
                remote.normalized,
                text(e)
            )
        })
}

#[async_trait::async_trait]
impl api::SmbApi for HostProcess {
    async fn new_smb_global_mapping(
        &self,
        request: api::NewSmbGlobalMappingRequest,
    ) -> Result<api::NewSmbGlobalMappingResponse, Error> {
        self.run("/v1.Smb/NewSmbGlobalMapping", move |ctx| {
            new_mapping(ctx, &request).map(|()| api::NewSmbGlobalMappingResponse {})
        })
        .await
    }

    async fn remove_smb_global_mapping(
        &self,
        request: api::RemoveSmbGlobalMappingRequest,
    ) -> Result<api::RemoveSmbGlobalMappingResponse, Error> {
        self.run("/v1.Smb/RemoveSmbGlobalMapping", move |ctx| {
            let remote = parse_remote(&request.remote_path)?;
            remove_mapping(ctx, &remote.root).map(|()| api::RemoveSmbGlobalMappingResponse {})
        })
        .await
    }
}

/// What HostProcess mode reads of the SMB share behind a path, for an SMB
/// volume's stats.
#[derive(Debug, Clone)]
pub(crate) struct ShareView {
    /// The share root the path's links reach (`\\server\share`,
    /// lowercase); `None` when they reach no share.
    pub root: Option<String>,
    /// The status of the root's global mapping; `None` when it has none.
    pub status: Option<u32>,
    /// `GetDiskFreeSpaceExW` on the path, or the text of its failure.
    pub space: Result<DiskSpace, String>,
}

impl HostProcess {
    /// The share behind `path` (links followed), its mapping's status and
    /// its space. Fails only when the mappings cannot be queried.
    pub(crate) async fn share_view(&self, path: String) -> Result<ShareView, Error> {
        self.run("GetDiskFreeSpaceExW", move |ctx| {
            ctx.validate(&path)?;
            let root = share_behind(ctx, &path);
            let status = match &root {
                Some(root) => ctx
                    .host()
                    .smb_global_mappings(root)
                    .map_err(|e| format!("failed to query the SMB global mapping of {root}: {e}"))?
                    .first()
                    .map(|m| m.status),
                None => None,
            };
            let space = ctx.host().disk_free_space(&path).map_err(text);
            Ok(ShareView {
                root,
                status,
                space,
            })
        })
        .await
    }
}

/// The share root the links from `path` reach, each link's target read in
/// turn (a publish target links to the staging path, which links to the
/// share); `None` when a step is no link or the chain is longer than 8.
fn share_behind(ctx: &Ctx, path: &str) -> Option<String> {
    let mut at = path.to_string();
    for _ in 0..8 {
        let FileKind::Symlink { target, .. } = ctx.host().file_kind(&at).ok()? else {
            return None;
        };
        let unc = ["\\\\?\\UNC\\", "\\??\\UNC\\", "UNC\\"]
            .iter()
            .find_map(|prefix| target.strip_prefix(prefix))
            .map(|rest| format!("\\\\{rest}"));
        match unc {
            Some(unc) => return parse_remote(&unc).ok().map(|r| r.root),
            None if target.starts_with("\\\\") => {
                return parse_remote(&target).ok().map(|r| r.root);
            }
            None => at = target,
        }
    }
    None
}

impl HostProcess {
    /// Links `local` to `remote` over the mapping there, with no look at
    /// the mapping: what a stage of a share whose mapping serves staged
    /// volumes sends instead of `NewSmbGlobalMapping`, whose validity
    /// check removes a mapping whose share cannot be reached (an outage).
    pub(crate) async fn smb_link(&self, remote: String, local: String) -> Result<(), Error> {
        self.run("CreateSymbolicLinkW", move |ctx| {
            link(ctx, &parse_remote(&remote)?, &local)
        })
        .await
    }

    /// Whether the share root answers `GetFileAttributesW` now (the
    /// validity check `NewSmbGlobalMapping` makes).
    pub(crate) async fn share_reachable(&self, root: String) -> Result<bool, Error> {
        self.run("GetFileAttributesW", move |ctx| {
            Ok(ctx.host().file_attributes(&root).is_ok())
        })
        .await
    }

    /// Where the link at `path` points, as stored; `None` when `path` is
    /// no symbolic link (missing, a directory, a mount point). What
    /// csi-driver-smb reads with `os.Readlink` before it unmaps
    /// (pkg/os/smb/smb.go GetRemoteServerFromTarget).
    pub(crate) async fn link_target(&self, path: String) -> Result<Option<String>, Error> {
        self.run("readlink", move |ctx| {
            Ok(match ctx.host().file_kind(&path) {
                Ok(FileKind::Symlink { target, .. }) => Some(target),
                _ => None,
            })
        })
        .await
    }

    /// The names in the directory `dir`; none when it cannot be read.
    pub(crate) async fn names_in(&self, dir: String) -> Result<Vec<String>, Error> {
        self.run("list_directory", move |ctx| {
            Ok(ctx.host().list_directory(&dir).unwrap_or_default())
        })
        .await
    }

    /// The status (`MSFT_SmbGlobalMapping.Status`) of the global mapping of
    /// `root`; `None` when there is none.
    pub(crate) async fn mapping_status(&self, root: String) -> Result<Option<u32>, Error> {
        self.run("Get-SmbGlobalMapping", move |ctx| {
            ctx.host()
                .smb_global_mappings(&root)
                .map(|found| found.first().map(|m| m.status))
                .map_err(|e| format!("failed to query the SMB global mapping of {root}: {e}"))
        })
        .await
    }
}
