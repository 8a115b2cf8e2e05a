//! Publishing: a target linked to its staging path, and the link removed.

use super::protocol::Change;
use super::{MountState, Node, path};
use crate::Error;

impl Node {
    /// NodePublishVolume: links `target` to the volume staged at
    /// `staging` (kubelet's pre-created empty directory at `target` is
    /// replaced; parents are created).
    ///
    /// Already published (the same volume behind both): Ok. `staging`
    /// holding no volume or link, a plain directory included
    /// ([`Error::NotStaged`]: a pod linked there would write to the
    /// node's own disk), `target` holding something else
    /// ([`Error::PathInUse`]) or files ([`Error::NotEmpty`]): nothing is
    /// changed.
    pub async fn publish(&self, staging: &str, target: &str) -> Result<(), Error> {
        let staging = path::local(staging)?;
        let target = path::local(target)?;
        self.on_path(
            "publish",
            Change::Make,
            &target.clone(),
            move |node| async move { node.publish_at(&staging, &target).await },
        )
        .await
    }

    async fn publish_at(&self, staging: &str, target: &str) -> Result<(), Error> {
        let fs = self.fs()?;
        // The usual case first, in two calls: a staged volume (a mount
        // point or a link) and nothing at the target yet. Anything else
        // (the link refused: a target already there, a missing parent) is
        // looked at in full below before anything is changed.
        if fs.is_link(staging).await.unwrap_or(false) && fs.link(staging, target).await.is_ok() {
            tracing::info!(staging, target, "published");
            return Ok(());
        }
        let source = self.state(staging).await?;
        if matches!(source, MountState::Missing | MountState::NotMounted) {
            return Err(Error::NotStaged {
                path: staging.to_string(),
            });
        }
        match (self.state(target).await?, source) {
            (MountState::Missing, _) => self.ensure_parent(target).await?,
            (MountState::NotMounted, _) => self.remove_empty_dir(target).await?,
            (MountState::Mounted { volume_id: a }, MountState::Mounted { volume_id: b })
                if a == b =>
            {
                return Ok(());
            }
            // The proxy cannot tell where these links go: trust them.
            (MountState::Linked, MountState::Linked) => return Ok(()),
            (held, _) => {
                return Err(Error::PathInUse {
                    path: target.to_string(),
                    holds: match held {
                        MountState::Mounted { volume_id } => {
                            format!("a link to another volume ({volume_id})")
                        }
                        _ => "a link to something else".into(),
                    },
                });
            }
        }
        fs.link(staging, target).await?;
        tracing::info!(staging, target, "published");
        Ok(())
    }

    /// Removes the link at `target` (never the data behind it); an empty
    /// directory there is removed too. Absent: Ok.
    ///
    /// A target an SMB share is staged at (an ephemeral inline volume,
    /// [`Node::smb_stage`] at the target) is unstaged: its reference goes
    /// with the link, and the mapping with the last reference.
    pub async fn unpublish(&self, target: &str) -> Result<(), Error> {
        let target = path::local(target)?;
        self.on_path(
            "unpublish",
            Change::Remove,
            &target.clone(),
            move |node| async move { node.unpublish_at(&target).await },
        )
        .await
    }

    async fn unpublish_at(&self, target: &str) -> Result<(), Error> {
        if let Some(root) = self.smb_root_of(target).await? {
            return self.smb_unstage_at(target, &root).await.map(drop);
        }
        // One call when there is a link or an empty directory to remove,
        // as every driver does; a removal refused (nothing there, files in
        // a directory) is looked at before answering.
        if self.rmdir(target, false).await.is_ok() {
            return Ok(());
        }
        match self.state(target).await? {
            MountState::Missing => Ok(()),
            MountState::NotMounted => self.remove_empty_dir(target).await,
            MountState::Mounted { .. } | MountState::Linked => self.rmdir(target, false).await,
        }
    }
}
