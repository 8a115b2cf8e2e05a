//! Where SMB meets the namespace: `NewSmbGlobalMapping`'s `local_path`.
//!
//! The SMB model maps and returns the link to make (an [`UncLink`]); the
//! node validates `local_path` with the filesystem group's working-dir
//! validation and creates the link ([`LinkKind::Dir`] to the UNC path) right
//! after, so that it resolves through the mapping the same call just made.
//! The namespace resolves UNC roots through the node's [`SmbState`]
//! ([`Ctx::smb`](crate::host::namespace::Ctx::smb)).

use super::NewSmbGlobalMappingRequest;
#[cfg(doc)]
use super::{SmbState, UncLink};
use crate::host::error::HostResult;
use crate::host::namespace::LinkKind;
use crate::host::path::{WinPath, validate_working_path};
use crate::host::state::{HostState, win_err};

impl HostState {
    /// Creates the directory link `local_path` → `unc_target` (SMB
    /// `local_path`); Windows texts on failure.
    pub(crate) fn create_unc_link(&self, local_path: &str, unc_target: &str) -> HostResult<()> {
        let at = WinPath::parse(local_path).map_err(win_err)?;
        self.ns
            .create_link(self.ctx(), &at, LinkKind::Dir, unc_target)
            .map_err(win_err)
    }

    /// `NewSmbGlobalMapping` on this node: the SMB model maps,
    /// then the link it asks for is validated and made in the namespace
    /// (after the mapping, so the link resolves through it).
    pub(crate) fn new_smb_global_mapping(
        &mut self,
        req: &NewSmbGlobalMappingRequest,
    ) -> HostResult<()> {
        let Some(link) = self.smb.new_smb_global_mapping(req)? else {
            return Ok(());
        };
        validate_working_path(&link.local_path, &self.working_dirs)?;
        self.create_unc_link(&link.local_path, &link.target)
            .map_err(|e| link.failed(e))
    }
}
