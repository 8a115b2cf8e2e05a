//! SMB shares: staged as links over a global mapping that staged volumes
//! share, references counted in the [`SmbStore`](super::SmbStore).

use std::fmt;
use std::future::IntoFuture;

use super::{MountState, Node, Operation, VolumeUsage, path};
use crate::{Error, ErrorKind};

/// What the node can tell of the SMB share behind a staged path
/// ([`Node::smb_share_stats`]). Which mode tells what:
///
/// | mode | space | mapping's status |
/// |---|---|---|
/// | HostProcess | `GetDiskFreeSpaceExW` on the path | `MSFT_SmbGlobalMapping.Status` |
/// | proxy, plugin on Windows | the plugin's own `GetDiskFreeSpaceExW` on the path | not readable (no proxy call) |
/// | proxy, elsewhere with a [local root](super::NodeOptions::local_root) (the simulated node) | the plugin's own `statvfs` of the mapped path | not readable |
/// | proxy, elsewhere without one | none | not readable |
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShareStats {
    /// The share's capacity and free space as its server reports them;
    /// `None` when they could not be read ([`ShareStats::unread`] says why).
    pub usage: Option<VolumeUsage>,
    /// What is known to be wrong: the share's global mapping is not OK
    /// (its status named, `Disconnected` after a restart), has gone, or
    /// is OK and the share cannot be read. Only HostProcess mode reads
    /// the mapping; through the proxy this is always `None`.
    pub trouble: Option<String>,
    /// Why [`ShareStats::usage`] is `None`.
    pub unread: Option<String>,
    /// Whether the mapping's status was read (HostProcess mode).
    pub mapping_checked: bool,
}

/// The name of an `MSFT_SmbGlobalMapping.Status` value.
#[cfg(feature = "host-process")]
fn mapping_status_name(status: u32) -> String {
    let name = match status {
        0 => "OK",
        1 => "Paused",
        2 => "Disconnected",
        3 => "NetworkError",
        4 => "Connecting",
        5 => "Reconnecting",
        6 => "Unavailable",
        _ => return format!("status {status}"),
    };
    name.to_string()
}

/// The account an SMB share is mapped with. The password never appears in
/// `Debug` output, logs or errors.
#[derive(Clone)]
pub struct SmbCredentials {
    username: String,
    password: String,
}

impl SmbCredentials {
    /// `username` (`user`, `DOMAIN\user` or `user@domain`) and its password.
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Self {
        Self {
            username: username.into(),
            password: password.into(),
        }
    }

    /// No credentials: the node's own identity.
    pub fn none() -> Self {
        Self::new("", "")
    }

    /// The user name.
    pub fn username(&self) -> &str {
        &self.username
    }
}

impl fmt::Debug for SmbCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmbCredentials")
            .field("username", &self.username)
            .field("password", &"<hidden>")
            .finish()
    }
}

impl Node {
    /// The space of the SMB share behind `path` (a staging path, or a
    /// target linked to one) and, in HostProcess mode, the status of its
    /// global mapping: what csi-driver-smb and azurefile-csi-driver report
    /// as an SMB volume's stats (pkg/smb/nodeserver.go NodeGetVolumeStats;
    /// pkg/azurefile/azure_common_windows.go). See [`ShareStats`] for which
    /// mode tells what. Fails only when the host cannot be asked.
    pub async fn smb_share_stats(&self, path: &str) -> Result<ShareStats, Error> {
        let path = path::local(path)?;
        self.bounded("smb_share_stats", async {
            #[cfg(feature = "host-process")]
            if let Some(backend) = &self.inner.host_process {
                return Ok(host_process_share_stats(
                    backend.share_view(path.clone()).await?,
                    &path,
                ));
            }
            Ok(local_share_stats(self.local_usage(&path)))
        })
        .await
    }

    // ------------------------------------------------------------ SMB

    /// Serialises the SMB work on one server that maps, unmaps or releases:
    /// Windows keeps one account per server (error 1219), so recovering a
    /// mapping of one share may touch another share of the same server.
    /// The claim is the records' (`NodeRecords::claim_exclusive`): shared
    /// by every `Node` of the process on the host, and with a directory
    /// store by every process on the host, released by the OS when its
    /// holder dies.
    pub(super) async fn smb_lock(&self, root: &str) -> Result<super::records::Claim, Error> {
        self.inner
            .options
            .records
            .claim_exclusive(&smb_server_claim(root))
            .await
    }

    /// Shares the server with other stages that only link to a share
    /// already mapped for staged volumes (under the same account); none
    /// of them maps or unmaps, so they run together.
    async fn smb_lock_shared(&self, root: &str) -> Result<super::records::Claim, Error> {
        self.inner
            .options
            .records
            .claim_shared(&smb_server_claim(root))
            .await
    }

    /// Runs `work` on a task of its own to its end, whether or not its
    /// caller still waits (the caller gets its answer within the
    /// operation's deadline, or [`Error::DeadlineExceeded`]; each host call
    /// is bounded by the client's request timeout). kubelet's deadline
    /// drops a call at any await, while the host goes on with what it was
    /// sent (csi-proxy ends no host work with the call); a task that holds
    /// the server's lock until the host has answered and its records are
    /// written leaves records and host in agreement, and the retry that
    /// waits for the lock finds the work done.
    async fn to_the_end<T, F>(
        &self,
        operation: &'static str,
        work: impl FnOnce(Node) -> F,
    ) -> Result<T, Error>
    where
        T: Send + 'static,
        F: std::future::Future<Output = Result<T, Error>> + Send + 'static,
    {
        let task = tokio::spawn(work(self.clone()));
        self.bounded(operation, async {
            match task.await {
                Ok(result) => result,
                Err(e) => match e.try_into_panic() {
                    Ok(panic) => std::panic::resume_unwind(panic),
                    Err(_) => Err(Error::DeadlineExceeded {
                        operation,
                        after: self.inner.options.deadline,
                    }),
                },
            }
        })
        .await
    }

    /// NodeStageVolume of a share: stages the SMB share path `remote` (`\\server\share\dir`, `/` accepted)
    /// at `path`: maps the share root with `credentials` and links `path`
    /// to `remote`, recording one reference for the share root in the
    /// [store](super::NodeOptions::smb_store). Already staged: Ok, once the
    /// mapping is checked (a stale one, `Disconnected` after a restart, is
    /// made again).
    ///
    /// A mapping that is not OK is removed only when it is stale
    /// (`Disconnected` or `Unavailable`) and no other volume staged on this
    /// node reaches the share through it; a `Connecting` or `Reconnecting`
    /// one is waited for, within the deadline. Through the proxy, which
    /// cannot read a mapping's status, a mapping still refused after
    /// [`NodeOptions::smb_settle`](super::NodeOptions::smb_settle) is taken as stale.
    ///
    /// A share already mapped for staged volumes under another account is
    /// [`Error::SmbCredentialsConflict`]: Windows would reuse the mapping
    /// whatever the credentials, or refuse with error 1219.
    ///
    /// A directory below the share (`\\server\share\dir`) that does not
    /// exist is [`Error::SmbDirectoryMissing`], the path left as it was:
    /// csi-driver-smb creates it in its controller (pkg/smb/controllerserver.go
    /// CreateVolume); to create it at stage, [`SmbStage::create_dir`].
    ///
    /// A stage its caller drops (kubelet's deadline) runs to its end on its
    /// own task, so that what it sent the host is recorded.
    pub fn smb_stage<'a>(
        &'a self,
        remote: &'a str,
        path: &'a str,
        credentials: &'a SmbCredentials,
    ) -> SmbStage<'a> {
        SmbStage {
            node: self,
            remote,
            path,
            credentials,
            create_dir: false,
        }
    }

    async fn smb_stage_with(
        &self,
        remote: &str,
        path: &str,
        credentials: &SmbCredentials,
        create_dir: bool,
    ) -> Result<(), Error> {
        let path = path::local(path)?;
        let (remote, root) = path::remote(remote)?;
        let credentials = credentials.clone();
        self.to_the_end("smb_stage", move |node| async move {
            node.smb_stage_at(&remote, &root, &path, &credentials, create_dir)
                .await
        })
        .await
    }

    async fn smb_stage_at(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        credentials: &SmbCredentials,
        create_dir: bool,
    ) -> Result<(), Error> {
        let Some(_serial) = self
            .smb_link_or_lock(remote, root, path, credentials)
            .await?
        else {
            return Ok(());
        };
        let store = &self.inner.options.smb_store;
        let user = &credentials.username;
        let recorded = store.root_of(path)?;
        let link_at = match self.state(path).await? {
            MountState::Linked => {
                if let Some(other) = recorded.as_ref().filter(|r| *r != root) {
                    return Err(Error::PathInUse {
                        path: path.to_string(),
                        holds: format!("a link to another share ({other})"),
                    });
                }
                // The link is there; the mapping behind it may not be.
                ""
            }
            MountState::Mounted { volume_id } => {
                return Err(Error::PathInUse {
                    path: path.to_string(),
                    holds: format!("volume {volume_id}"),
                });
            }
            MountState::NotMounted => {
                self.remove_empty_dir(path).await?;
                path
            }
            MountState::Missing => {
                self.ensure_parent(path).await?;
                path
            }
        };
        self.check_smb_account(root, path, user)?;
        // Recorded before the host work that needs it: a mapping the host
        // makes is always one a reference records, whatever ends the call.
        store.add(root, path, user)?;
        let staged = async {
            self.smb_map(remote, root, path, link_at, credentials)
                .await?;
            // The proxy's IsSymlink is false for a link whose target is
            // missing: the directory below the share is not there.
            if !self.fs()?.is_link(path).await? {
                self.smb_missing_dir(remote, root, path, credentials, create_dir)
                    .await?;
            }
            Ok(())
        }
        .await;
        if staged.is_err() && recorded.is_none() {
            self.smb_forget(root, path).await;
        }
        staged?;
        tracing::info!(share = %root, path, "SMB share staged");
        Ok(())
    }

    /// What a stage that failed recorded goes: its reference, and the
    /// mapping with it when no other volume uses it; unless `path` holds
    /// the link (then the volume is staged, and its unstage releases it).
    async fn smb_forget(&self, root: &str, path: &str) {
        let forgotten = async {
            if self.state(path).await? != MountState::Linked {
                self.smb_release(root, path).await?;
            }
            Ok::<_, Error>(())
        }
        .await;
        if let Err(e) = forgotten {
            tracing::warn!(share = %root, path, error = %e, "the reference of a failed SMB stage stays");
        }
    }

    /// Whether staged volumes hold `root` mapped, all under `user`.
    fn smb_mapped_for(&self, root: &str, user: &str) -> Result<bool, Error> {
        let users = self.inner.options.smb_store.users_of(root)?;
        Ok(!users.is_empty()
            && users
                .iter()
                .all(|u| u.as_deref().is_some_and(|u| u.eq_ignore_ascii_case(user))))
    }

    /// A share its staged volumes already hold mapped under this account
    /// needs only a link: such stages share the server (a boot storm of
    /// many volumes on a few shares runs them at once), and `None` says
    /// `path` is staged. Anything else, or a link that needs more, gets the
    /// server held alone for the whole stage. A stage that finds no
    /// mapping waits for the server first: the stage ahead of it may be
    /// mapping the share, and then it links beside the others.
    async fn smb_link_or_lock(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        credentials: &SmbCredentials,
    ) -> Result<Option<super::records::Claim>, Error> {
        let user = &credentials.username;
        if !self.smb_mapped_for(root, user)? {
            let serial = self.smb_lock(root).await?;
            if !self.smb_mapped_for(root, user)? {
                return Ok(Some(serial));
            }
        }
        {
            let _shared = self.smb_lock_shared(root).await?;
            if self.smb_mapped_for(root, user)?
                && self.smb_link(remote, root, path, credentials).await?
            {
                return Ok(None);
            }
        }
        Ok(Some(self.smb_lock(root).await?))
    }

    /// Stages `path` as a link to `remote` on a share its staged volumes
    /// hold mapped, with the server shared: `Ok(false)` when the stage
    /// needs more than a link (the path holds a link or a volume, the
    /// mapping is stale, the directory is missing), left to the stage
    /// that holds the server alone. The link made when the directory
    /// below the share is missing is removed first.
    async fn smb_link(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        credentials: &SmbCredentials,
    ) -> Result<bool, Error> {
        match self.state(path).await? {
            MountState::Missing => self.ensure_parent(path).await?,
            MountState::NotMounted => self.remove_empty_dir(path).await?,
            MountState::Linked | MountState::Mounted { .. } => return Ok(false),
        }
        let (smb, store) = (self.smb()?, &self.inner.options.smb_store);
        let (user, password) = (&credentials.username, &credentials.password);
        let recorded = store.root_of(path)?.is_some();
        // Recorded before the link, as in the stage that maps.
        store.add(root, path, user)?;
        let linked = async {
            if smb.map(remote, path, user, password).await.is_err() {
                return Ok(false);
            }
            // The proxy's IsSymlink is false for a link whose target is
            // missing: the directory below the share is not there.
            if !self.fs()?.is_link(path).await? {
                self.fs()?.rmdir(path, false).await?;
                return Ok(false);
            }
            Ok(true)
        }
        .await;
        if !matches!(linked, Ok(true)) && !recorded {
            store.remove(path)?;
        }
        if matches!(linked, Ok(true)) {
            tracing::info!(share = %root, path, "SMB share staged");
        }
        linked
    }

    /// The link at `path` to `remote` reaches nothing: with `create`, the
    /// directory is made through a link to the share's root and `path`
    /// linked again; otherwise (or if it is still missing) the link is
    /// removed and the stage fails with [`Error::SmbDirectoryMissing`]
    /// (the stage's reference goes, and the mapping with it when no other
    /// volume uses it).
    async fn smb_missing_dir(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        credentials: &SmbCredentials,
        create: bool,
    ) -> Result<(), Error> {
        self.fs()?.rmdir(path, false).await?;
        let made = match create {
            true => self.smb_create_dir(remote, root, path, credentials).await?,
            false => false,
        };
        match made {
            true => Ok(()),
            false => Err(Error::SmbDirectoryMissing {
                remote: remote.to_string(),
                path: path.to_string(),
            }),
        }
    }

    /// Makes the directory `remote` names below its share through a link
    /// at `path` to the share's root, then links `path` to it. Whether
    /// `path` then reaches it (if not, nothing is left at `path`).
    async fn smb_create_dir(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        credentials: &SmbCredentials,
    ) -> Result<bool, Error> {
        let (fs, smb) = (self.fs()?, self.smb()?);
        let (user, password) = (&credentials.username, &credentials.password);
        let below: Vec<&str> = remote.split('\\').filter(|c| !c.is_empty()).collect();
        if below.len() <= 2 {
            return Ok(false);
        }
        let dir = format!("{path}\\{}", below[2..].join("\\"));
        tracing::info!(remote, "creating the directory on the share");
        smb.map(root, path, user, password).await?;
        let made = fs.mkdir(&dir).await;
        fs.rmdir(path, false).await?;
        made?;
        smb.map(remote, path, user, password).await?;
        if fs.is_link(path).await? {
            return Ok(true);
        }
        fs.rmdir(path, false).await?;
        Ok(false)
    }

    /// A share whose mapping serves staged volumes under another account
    /// is not mapped again for this one: the proxy would reuse the mapping
    /// whatever the credentials, and the volume would run on the other
    /// account.
    fn check_smb_account(&self, root: &str, path: &str, user: &str) -> Result<(), Error> {
        let store = &self.inner.options.smb_store;
        let others: Vec<String> = store
            .references_all()?
            .into_iter()
            .filter(|r| r.root == root && !r.path.eq_ignore_ascii_case(path))
            .filter_map(|r| r.user)
            .filter(|u| !u.eq_ignore_ascii_case(user))
            .collect();
        match others.first() {
            None => Ok(()),
            Some(other) => Err(Error::SmbCredentialsConflict {
                share: root.to_string(),
                user: user.to_string(),
                held_by: format!(
                    "it is mapped as {other:?} for {} staged volume(s) on this node",
                    others.len()
                ),
            }),
        }
    }

    /// The other volumes staged on this node that use `root` (the paths),
    /// `path` left out: those the store records, and those the node sees
    /// linked to the share on the host (see `smb_view`), which a store in
    /// memory forgets with a restart and the host does not.
    async fn smb_users(&self, root: &str, path: &str) -> Result<Vec<String>, Error> {
        let mut users: Vec<String> = self
            .inner
            .options
            .smb_store
            .references_all()?
            .into_iter()
            .filter(|r| r.root == root && !r.path.eq_ignore_ascii_case(path))
            .map(|r| r.path)
            .collect();
        for seen in self.seen_links_into(root, path).await {
            if !users.iter().any(|u| u.eq_ignore_ascii_case(&seen)) {
                users.push(seen);
            }
        }
        Ok(users)
    }

    /// Maps `root` (and links `link_at` to `remote` unless empty) for the
    /// stage of `path`, making a stale mapping again and recovering error
    /// 1219 where no staged volume needs the mapping in the way.
    async fn smb_map(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        link_at: &str,
        credentials: &SmbCredentials,
    ) -> Result<(), Error> {
        let smb = self.smb()?;
        let (user, password) = (&credentials.username, &credentials.password);
        let Err(e) = smb.map(remote, link_at, user, password).await else {
            return Ok(());
        };
        if e.windows_code() == Some(85) {
            return self
                .smb_map_over(remote, root, path, link_at, credentials)
                .await;
        }
        if e.kind() != ErrorKind::CredentialsConflict {
            return Err(e);
        }
        // 1219: the server is mapped under another account, by this share
        // (a mapping no staged volume uses) or by another share of the
        // server (Windows Server 2025 holds one connection per server and
        // account: azurefile-csi-driver#2974, csi-driver-smb#1007).
        // A holder whose path holds no link any more (a crash between
        // removing the link and the mapping) is released, and its mapping
        // with its last reference; holders still linked are in use.
        let store = &self.inner.options.smb_store;
        let server = smb_server(root);
        let mut holders = Vec::new();
        for r in store.references_all()? {
            if smb_server(&r.root) != server
                || r.user.as_deref() == Some(user.as_str())
                || r.path.eq_ignore_ascii_case(path)
            {
                continue;
            }
            if self.state(&r.path).await? == MountState::Linked {
                holders.push(r);
            } else {
                tracing::info!(share = %r.root, path = %r.path, "releasing the reference of a path that holds no link");
                self.smb_release(&r.root, &r.path).await?;
            }
        }
        if let Some(holder) = holders.first() {
            return Err(Error::SmbCredentialsConflict {
                share: root.to_string(),
                user: user.to_string(),
                held_by: format!(
                    "{} is mapped as {:?} for {} staged volume(s) on this node, and Windows \
                     keeps one account per SMB server (error 1219)",
                    holder.root,
                    holder.user.as_deref().unwrap_or("an unrecorded account"),
                    holders.len()
                ),
            });
        }
        if self.smb_users(root, path).await?.is_empty() {
            tracing::info!(share = %root, "replacing an unused mapping of the share made with other credentials");
            self.smb_unmap(root).await?;
        }
        match smb.map(remote, link_at, user, password).await {
            Err(e) if e.kind() == ErrorKind::CredentialsConflict => {
                Err(Error::SmbCredentialsConflict {
                    share: root.to_string(),
                    user: user.to_string(),
                    held_by: format!(
                        "a mapping of server {server} under another account, which no volume \
                         staged by this node records, holds the server (error 1219: {e})"
                    ),
                })
            }
            other => other,
        }
    }

    /// Windows refused a new mapping of `root` with 85: a mapping is there
    /// and its status is not OK (the proxy makes one only then, csi-proxy
    /// pkg/server/smb/server.go NewSmbGlobalMapping, `IsSmbMapped` being
    /// status OK, pkg/os/smb/api.go). Removing it closes every file open
    /// through it, so it goes only when it is stale, `Disconnected` or
    /// `Unavailable` (after a restart: azurefile-csi-driver#3416,
    /// csi-driver-smb#1219), and no other volume staged here reaches the
    /// share through it; `Connecting`, `Reconnecting`, `Paused` and
    /// `NetworkError` are waited for (csi-proxy pkg/wmi/smb.go names the
    /// statuses), the mapping asked for again until it is OK and reused,
    /// within the operation's deadline. Through the proxy the status
    /// cannot be read: the mapping is taken as stale at once when no
    /// volume staged here uses it, else once [`NodeOptions::smb_settle`](super::NodeOptions::smb_settle)
    /// has passed.
    async fn smb_map_over(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        link_at: &str,
        credentials: &SmbCredentials,
    ) -> Result<(), Error> {
        let smb = self.smb()?;
        let (user, password) = (&credentials.username, &credentials.password);
        let settled = tokio::time::Instant::now() + self.inner.options.smb_settle;
        // `path` holds its link already (a stage made again): its own
        // volume may have files open through the mapping.
        let linked_here = link_at.is_empty();
        let mut pause = std::time::Duration::from_millis(250);
        loop {
            let stale = match self.smb_mapping_status(root).await? {
                MappingSeen::Status(DISCONNECTED | UNAVAILABLE) => true,
                MappingSeen::Status(_) | MappingSeen::Gone => false,
                // No volume of this node uses it: none of its files can be
                // open through it, whatever its status.
                MappingSeen::Unread => {
                    tokio::time::Instant::now() >= settled
                        || (!linked_here && self.smb_users(root, path).await?.is_empty())
                }
            };
            if stale && !self.smb_reached_by_others(root, path).await? {
                tracing::info!(share = %root, "stale SMB mapping: removing it and mapping again");
                self.smb_unmap(root).await?;
                return smb.map(remote, link_at, user, password).await;
            }
            tracing::info!(share = %root, "SMB mapping not OK: waiting for it");
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(std::time::Duration::from_secs(2));
            match smb.map(remote, link_at, user, password).await {
                Err(e) if e.windows_code() == Some(85) => continue,
                other => return other,
            }
        }
    }

    /// Whether another volume staged here reaches `root` now (its link
    /// resolves): then the mapping serves it, whatever its status said.
    async fn smb_reached_by_others(&self, root: &str, path: &str) -> Result<bool, Error> {
        for other in self.smb_users(root, path).await? {
            if self.fs()?.is_link(&other).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The status of `root`'s mapping, where this mode can read it.
    async fn smb_mapping_status(&self, root: &str) -> Result<MappingSeen, Error> {
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            return Ok(match backend.mapping_status(root.to_string()).await? {
                Some(status) => MappingSeen::Status(status),
                None => MappingSeen::Gone,
            });
        }
        let _ = root;
        Ok(MappingSeen::Unread)
    }

    /// Removes the mapping of `root`; one already gone counts as removed.
    async fn smb_unmap(&self, root: &str) -> Result<(), Error> {
        match self.smb()?.unmap(root).await {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// The share root of the SMB volume staged at `path`, if it is one:
    /// as the store records it, or as the host shows its link (a restarted
    /// node whose store was in memory).
    pub(super) async fn smb_root_of(&self, path: &str) -> Result<Option<String>, Error> {
        if let Some(root) = self.inner.options.smb_store.root_of(path)? {
            return Ok(Some(root));
        }
        Ok(self.seen_share_of(path).await.flatten())
    }

    /// The SMB half of [`Node::unstage`] at `path` (local), staged from
    /// `root`: removes the link and its reference, and the share's global
    /// mapping when no other volume uses it. Runs to its end when its
    /// caller drops it. Returns what was at `path`.
    pub(super) async fn smb_unstage(
        &self,
        operation: &'static str,
        path: &str,
        root: String,
    ) -> Result<MountState, Error> {
        let path = path.to_string();
        self.to_the_end(operation, move |node| async move {
            node.smb_unstage_at(&path, &root).await
        })
        .await
    }

    async fn smb_unstage_at(&self, path: &str, root: &str) -> Result<MountState, Error> {
        let _serial = self.smb_lock(root).await?;
        let seen = self.seen_share_of(path).await;
        let last = self.smb_users(root, path).await?.is_empty();
        // The proof that `path` holds no disk's volume, which must never go
        // without a flush: a link the node read on the host that names the
        // share (a volume's mount point never does). Where the node cannot
        // read it, the proxy's lookup of the volume behind the path, made
        // while the mapping goes: the mapping has no other user either way.
        let proven = matches!(&seen, Some(Some(r)) if r == root);
        let volume = async {
            if proven {
                return Ok(None);
            }
            match self.volume()?.volume_at(path).await {
                Ok(volume_id) if !volume_id.is_empty() => Ok(Some(volume_id)),
                Err(e) if matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::TimedOut) => {
                    Err(e)
                }
                _ => Ok(None),
            }
        };
        let unmap = async {
            match last {
                true => self.smb_unmap(root).await,
                false => Ok(()),
            }
        };
        let (volume, unmapped) = tokio::join!(volume, unmap);
        if let Some(volume_id) = volume? {
            return Err(Error::PathInUse {
                path: path.to_string(),
                holds: format!("volume {volume_id}, not an SMB link"),
            });
        }
        unmapped?;
        if last {
            tracing::info!(share = %root, "no volume uses the share: mapping removed");
        }
        let state = match self.remove_empty_dir(path).await {
            Ok(()) if seen == Some(None) => MountState::NotMounted,
            Ok(()) => MountState::Linked,
            Err(e) => {
                if self.fs()?.exists(path).await? {
                    return Err(e);
                }
                // Nothing there: an earlier call removed the link (its
                // caller gone before it answered); the reference goes all
                // the same.
                MountState::Missing
            }
        };
        self.inner.options.smb_store.remove(path)?;
        Ok(state)
    }

    /// Drops the reference of `path` to `root`, and the mapping when no
    /// other volume uses it; whether the mapping went. The reference goes
    /// only once the mapping has: a removal that failed (WMI down, access
    /// denied) leaves the reference, so that the retry removes the mapping.
    pub(super) async fn smb_release(&self, root: &str, path: &str) -> Result<bool, Error> {
        let last = self.smb_users(root, path).await?.is_empty();
        if last {
            self.smb_unmap(root).await?;
            tracing::info!(share = %root, "no volume uses the share: mapping removed");
        }
        self.inner.options.smb_store.remove(path)?;
        Ok(last)
    }

    /// Removes the SMB mappings no staged volume uses, for a driver to call
    /// when it starts: a reference whose path no longer holds a link (a
    /// crash between removing the link and the mapping, or a volume
    /// unstaged while the references were lost) is dropped, and the
    /// mapping goes when no other volume uses it. A mapping a linked path
    /// still uses is never removed. Only mappings the
    /// [store](super::NodeOptions::smb_store) records are known: with a store in
    /// memory there is nothing to do. Each reference is looked at again
    /// with its server held, so that a stage or unstage running beside it
    /// is never undone from a list read before. Returns the share roots
    /// whose mappings were removed.
    pub async fn smb_reconcile(&self) -> Result<Vec<String>, Error> {
        self.to_the_end("smb_reconcile", |node| async move {
            node.smb_reconcile_all().await
        })
        .await
    }

    async fn smb_reconcile_all(&self) -> Result<Vec<String>, Error> {
        let store = &self.inner.options.smb_store;
        let mut removed = Vec::new();
        for reference in store.references_all()? {
            let _serial = self.smb_lock(&reference.root).await?;
            if store.root_of(&reference.path)?.as_deref() != Some(reference.root.as_str()) {
                continue;
            }
            if self.state(&reference.path).await? == MountState::Linked {
                continue;
            }
            let unmapped = self.smb_release(&reference.root, &reference.path).await?;
            tracing::info!(share = %reference.root, path = %reference.path, "SMB reference of a path that holds no link dropped");
            if unmapped {
                removed.push(reference.root);
            }
        }
        Ok(removed)
    }
}

/// What the node read of a mapping's status.
#[cfg_attr(not(feature = "host-process"), allow(dead_code))]
enum MappingSeen {
    /// `MSFT_SmbGlobalMapping.Status`.
    Status(u32),
    /// No mapping.
    Gone,
    /// This mode cannot read it (the proxy).
    Unread,
}

/// `MSFT_SmbGlobalMapping.Status` values of a stale mapping (csi-proxy
/// pkg/wmi/smb.go numbers them from OK = 0).
const DISCONNECTED: u32 = 2;
const UNAVAILABLE: u32 = 6;

/// The claim that serialises the work on the SMB server of `root`.
fn smb_server_claim(root: &str) -> String {
    format!("smb server {}", smb_server(root))
}

/// An SMB volume's stats from what HostProcess mode read.
#[cfg(feature = "host-process")]
pub(super) fn host_process_share_stats(
    view: crate::host_process::smb::ShareView,
    path: &str,
) -> ShareStats {
    let usage = view.space.as_ref().ok().map(|space| VolumeUsage {
        total_bytes: space.total,
        used_bytes: space.total.saturating_sub(space.free),
        available_bytes: space.available,
    });
    let unread = view.space.as_ref().err().cloned();
    let trouble = match (&view.root, view.status) {
        (None, _) => Some(format!("{path} reaches no SMB share")),
        (Some(root), None) => Some(format!(
            "the SMB global mapping of {root} is gone: the volume reaches nothing until it is staged again"
        )),
        (Some(root), Some(status)) if status != 0 => Some(format!(
            "the SMB global mapping of {root} is {}: the volume reaches nothing until it is staged again",
            mapping_status_name(status)
        )),
        (Some(root), Some(_)) => unread.as_ref().map(|e| {
            format!("the SMB global mapping of {root} is OK, but the share cannot be read: {e}")
        }),
    };
    ShareStats {
        usage,
        trouble,
        unread,
        mapping_checked: true,
    }
}

/// An SMB volume's stats as the plugin sees the path itself (proxy mode):
/// its own read of the space behind the link ([`Node::usage`]'s local
/// read), which reaches the share through its global mapping.
fn local_share_stats(read: Result<VolumeUsage, String>) -> ShareStats {
    let (usage, unread) = match read {
        Ok(usage) => (Some(usage), None),
        Err(why) => (
            None,
            Some(format!("the plugin cannot read the share's space: {why}")),
        ),
    };
    ShareStats {
        usage,
        trouble: None,
        unread,
        mapping_checked: false,
    }
}

/// The server of a share root `\\server\share`, lowercase.
fn smb_server(root: &str) -> &str {
    let rest = root.trim_start_matches('\\');
    rest.split('\\').next().unwrap_or(rest)
}

/// [`Node::smb_stage`], its options set before `.await`.
#[must_use = "nothing is staged until it is awaited"]
#[derive(Debug)]
pub struct SmbStage<'a> {
    node: &'a Node,
    remote: &'a str,
    path: &'a str,
    credentials: &'a SmbCredentials,
    create_dir: bool,
}

impl SmbStage<'_> {
    /// With `true`, the directory `remote` names below its share is
    /// created (with its parents) when it does not exist, as
    /// azurefile-csi-driver does before mounting with
    /// `createFolderIfNotExist` (pkg/azurefile/nodeserver.go). It is made
    /// through a link from the staging path to the share's root: the
    /// proxy takes local paths only.
    pub fn create_dir(mut self, create: bool) -> Self {
        self.create_dir = create;
        self
    }
}

impl<'a> IntoFuture for SmbStage<'a> {
    type Output = Result<(), Error>;
    type IntoFuture = Operation<'a, ()>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            self.node
                .smb_stage_with(self.remote, self.path, self.credentials, self.create_dir)
                .await
        })
    }
}
