//! Paths: what is at a path, and directories made and removed.

use super::{MountState, Node, outcome_unknown, path};
use crate::Error;

fn is_not_empty(e: &Error) -> bool {
    e.windows_code() == Some(145) || e.to_string().to_lowercase().contains("not empty")
}

impl Node {
    // ------------------------------------------------------------ paths

    /// Whether something is at `path` (a link counts; its target is not followed).
    pub async fn exists(&self, path: &str) -> Result<bool, Error> {
        let path = path::local(path)?;
        self.bounded("exists", self.fs()?.exists(&path)).await
    }

    /// Creates the directory `path` and its parents; Ok if it exists.
    pub async fn ensure_dir(&self, path: &str) -> Result<(), Error> {
        let path = path::local(path)?;
        self.bounded("ensure_dir", self.fs()?.mkdir(&path)).await
    }

    /// Removes `path`: a directory with its contents, or a link (never what
    /// it points to); Ok if absent. What the node recorded as staged at
    /// `path` goes with it, so a later stage there is a new one (before,
    /// it was [`Error::DifferentDisk`] against the removed volume's disk).
    pub async fn remove(&self, path: &str) -> Result<(), Error> {
        let path = path::local(path)?;
        self.bounded("remove", async {
            let fs = self.fs()?;
            if fs.exists(&path).await? {
                let link = fs.is_link(&path).await?;
                self.rmdir(&path, !link).await?;
            }
            self.forget_stage(&path)
        })
        .await
    }

    /// One cheap round trip to the host, for health checks such as a CSI
    /// plugin's `Probe`: asks the filesystem group whether `C:\` is a link,
    /// a question the proxy passes on without checking the path against
    /// its working directories. Fails when the proxy, or the host behind
    /// it, cannot be reached (or the filesystem group was never found).
    pub async fn ping(&self) -> Result<(), Error> {
        self.bounded("ping", self.fs()?.is_link(r"C:\"))
            .await
            .map(drop)
    }

    /// What is at `path`.
    pub async fn mount_state(&self, path: &str) -> Result<MountState, Error> {
        let path = path::local(path)?;
        self.bounded("mount_state", self.state(&path)).await
    }

    pub(super) async fn state(&self, path: &str) -> Result<MountState, Error> {
        let fs = self.fs()?;
        if !fs.exists(path).await? {
            return Ok(MountState::Missing);
        }
        if !fs.is_link(path).await? {
            return Ok(MountState::NotMounted);
        }
        match self.volume()?.volume_at(path).await {
            Ok(volume_id) if !volume_id.is_empty() => Ok(MountState::Mounted { volume_id }),
            _ => Ok(MountState::Linked),
        }
    }

    /// Removes the empty directory at `path` (kubelet pre-creates targets);
    /// a directory with files is [`Error::NotEmpty`].
    pub(super) async fn remove_empty_dir(&self, path: &str) -> Result<(), Error> {
        self.rmdir(path, false).await.map_err(|e| {
            if is_not_empty(&e) {
                Error::NotEmpty {
                    path: path.to_string(),
                }
            } else {
                e
            }
        })
    }

    /// Removes `path` when it is an empty directory; a file there is
    /// [`Error::PathInUse`], never deleted (the proxy's `Rmdir` removes a
    /// file as readily as a directory, csi-proxy pkg/os/filesystem). The
    /// API cannot ask what kind a path is: `Mkdir` of it answers, a no-op
    /// on a directory and a failure on a file.
    pub(super) async fn remove_empty_dir_only(&self, path: &str) -> Result<(), Error> {
        match self.fs()?.mkdir(path).await {
            Ok(()) => self.remove_empty_dir(path).await,
            Err(e) if outcome_unknown(&e) => Err(e),
            Err(e) => Err(Error::PathInUse {
                path: path.to_string(),
                holds: format!("something that is not a directory, a file it is not deleted ({e})"),
            }),
        }
    }

    pub(super) async fn ensure_parent(&self, path: &str) -> Result<(), Error> {
        match path::parent(path) {
            Some(parent) => self.fs()?.mkdir(parent).await,
            None => Ok(()),
        }
    }
}
