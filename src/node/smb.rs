//! SMB shares: staged as links over a global mapping that staged volumes
//! share, references counted in the [`SmbStore`](super::SmbStore).

use std::fmt;
use std::future::IntoFuture;

use super::protocol::{self, Change, SmbKept, SmbLinkFound, SmbPathRead, SmbProxyShows, SmbReuse};
use super::removal::share_subject;
use super::{MountState, Node, Operation, VolumeUsage, outcome_unknown, path};
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
    ///
    /// Held, it fails [`Error::RemovalPending`] while a removal of
    /// `root`'s mapping that did not answer may still land: it would land
    /// under what the holder does with the mapping.
    pub(super) async fn smb_lock(&self, root: &str) -> Result<super::records::Claim, Error> {
        let claim = self
            .inner
            .options
            .records
            .claim_exclusive(&smb_server_claim(root))
            .await?;
        self.removal_settled(&share_subject(root))?;
        Ok(claim)
    }

    /// Shares the server with other stages that only link to a share
    /// already mapped for staged volumes (under the same account); none
    /// of them maps or unmaps, so they run together.
    async fn smb_lock_shared(&self, root: &str) -> Result<super::records::Claim, Error> {
        let claim = self
            .inner
            .options
            .records
            .claim_shared(&smb_server_claim(root))
            .await?;
        self.removal_settled(&share_subject(root))?;
        Ok(claim)
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
        let task = self.spawn(work(self.clone()));
        self.bounded(operation, async { self.joined(task.await) })
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
        self.on_path(
            "smb_stage",
            Change::Make,
            &path.clone(),
            move |node| async move {
                node.smb_stage_at(&remote, &root, &path, &credentials, create_dir)
                    .await
            },
        )
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
        let secret = store.secret(user, &credentials.password)?;
        let recorded = store.root_of(path)?;
        let mut state = self.state(path).await?;
        // A link to the share the proxy does not see through (its target
        // cannot be reached now) is a link, not a directory to remove.
        if state == MountState::NotMounted && self.smb_link_unseen(root, path).await? {
            state = MountState::Linked;
        }
        let link_at = match state {
            MountState::Linked => {
                let other = recorded.as_ref().filter(|r| *r != root);
                // A link is this stage only where it reaches the directory
                // asked for: a link to the share's root (what a failed
                // `create_dir` left before 0.x) or to another directory
                // would give the pod what it was not given.
                let reaches = match other {
                    Some(_) => None,
                    None => self.seen_link_reaches(path, remote).await,
                };
                match protocol::smb_link_found(other.is_some(), reaches) {
                    SmbLinkFound::OtherShare => {
                        return Err(Error::PathInUse {
                            path: path.to_string(),
                            holds: format!(
                                "a link to another share ({})",
                                other.map_or("", |o| o.as_str())
                            ),
                        });
                    }
                    SmbLinkFound::Elsewhere => {
                        return Err(Error::PathInUse {
                            path: path.to_string(),
                            holds: format!(
                                "a link that does not reach {remote} (to {})",
                                self.seen_link_target(path).await
                            ),
                        });
                    }
                    // The link is there; the mapping behind it may not be.
                    SmbLinkFound::Accept => "",
                }
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
        self.check_smb_account(root, path, user, &secret)?;
        // Recorded before the host work that needs it: a mapping the host
        // makes is always one a reference records, whatever ends the call.
        store.add(root, path, user, &secret)?;
        let staged = async {
            self.smb_map(remote, root, path, link_at, credentials)
                .await?;
            // The proxy's IsSymlink is false for a link whose target is
            // missing: the directory below the share is not there, or
            // the share cannot be reached (then the stage fails
            // UNAVAILABLE, its link removed).
            if !self.fs()?.is_link(path).await?
                && !self.smb_unreached(root, path, !link_at.is_empty()).await?
            {
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

    /// Whether staged volumes hold `root` mapped, all under `user` with
    /// the credentials whose keyed hash is `secret`.
    fn smb_mapped_for(&self, root: &str, user: &str, secret: &str) -> Result<bool, Error> {
        let holders = self.inner.options.smb_store.holders_of(root)?;
        let kept: Vec<SmbKept<'_>> = holders.iter().map(kept_of).collect();
        Ok(protocol::smb_link_only(&kept, user, secret))
    }

    /// After a link at `path` that `IsSymlink` does not see through:
    /// while the node can show the share cannot be reached now (an outage,
    /// a mapping reconnecting), it waits for it up to
    /// [`NodeOptions::smb_settle`](super::NodeOptions::smb_settle), then
    /// fails UNAVAILABLE: an outage is not a missing directory. The link
    /// goes first only when this stage made it (`made`): a link the stage
    /// found is the volume's, staged before the outage, and stays.
    /// `Ok(true)`: the link reaches its directory now; `Ok(false)`: the
    /// directory is taken as missing.
    async fn smb_unreached(&self, root: &str, path: &str, made: bool) -> Result<bool, Error> {
        let settled = tokio::time::Instant::now() + self.inner.options.smb_settle;
        let mut pause = std::time::Duration::from_millis(250);
        while self.seen_share_reachable(root).await == Some(false) {
            if tokio::time::Instant::now() >= settled {
                if made {
                    self.rmdir(path, false).await?;
                }
                return Err(Error::SmbShareUnavailable {
                    share: root.to_string(),
                    why: "the share cannot be reached now (an outage, or its mapping not OK); \
                          the stage made no change to its mapping"
                        .to_string(),
                });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(std::time::Duration::from_secs(2));
        }
        self.fs()?.is_link(path).await
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
        let secret = &self
            .inner
            .options
            .smb_store
            .secret(user, &credentials.password)?;
        if !self.smb_mapped_for(root, user, secret)? {
            let serial = self.smb_lock(root).await?;
            if !self.smb_mapped_for(root, user, secret)? {
                return Ok(Some(serial));
            }
        }
        {
            let _shared = self.smb_lock_shared(root).await?;
            if self.smb_mapped_for(root, user, secret)?
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
            // A link to the share the proxy does not see through (the
            // mapping Disconnected by a restart, an outage) is this
            // volume's link, kept for the stage that holds the server
            // alone: removing it would leave the mapping no staged user,
            // and that stage would make it again under the pod's files.
            MountState::NotMounted if self.smb_link_unseen(root, path).await? => {
                return Ok(false);
            }
            MountState::NotMounted => self.remove_empty_dir(path).await?,
            MountState::Linked | MountState::Mounted { .. } => return Ok(false),
        }
        let store = &self.inner.options.smb_store;
        let user = &credentials.username;
        let secret = store.secret(user, &credentials.password)?;
        let recorded = store.root_of(path)?.is_some();
        // Recorded before the link, as in the stage that maps.
        store.add(root, path, user, &secret)?;
        let linked = async {
            if self
                .smb_map_in_use(remote, root, path, path, credentials, false)
                .await
                .is_err()
            {
                return Ok(false);
            }
            // The proxy's IsSymlink is false for a link whose target is
            // missing: the directory below the share is not there.
            if !self.fs()?.is_link(path).await? {
                self.rmdir(path, false).await?;
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
        self.rmdir(path, false).await?;
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
    /// to the share's root at a path beside `path` (never `path` itself:
    /// a link to the root left there by a failed removal would be taken
    /// for the stage), removed after, then links `path` to it. Whether
    /// `path` then reaches it (if not, nothing is left at `path`).
    async fn smb_create_dir(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        credentials: &SmbCredentials,
    ) -> Result<bool, Error> {
        let fs = self.fs()?;
        let below: Vec<&str> = remote.split('\\').filter(|c| !c.is_empty()).collect();
        if below.len() <= 2 {
            return Ok(false);
        }
        let through = format!("{path}{CREATE_DIR_LINK}");
        let dir = format!("{through}\\{}", below[2..].join("\\"));
        tracing::info!(remote, "creating the directory on the share");
        // A link left there by a stage that failed to remove it: this
        // stage's own, removed first (`Rmdir` of a link leaves its target).
        if fs.exists(&through).await? {
            self.rmdir(&through, false).await?;
        }
        self.smb_map(root, root, path, &through, credentials)
            .await?;
        let made = fs.mkdir(&dir).await;
        self.rmdir(&through, false).await?;
        made?;
        self.smb_map(remote, root, path, path, credentials).await?;
        if fs.is_link(path).await? {
            return Ok(true);
        }
        self.rmdir(path, false).await?;
        Ok(false)
    }

    /// A share whose mapping serves staged volumes under another account
    /// is not mapped again for this one: the proxy would reuse the mapping
    /// whatever the credentials, and the volume would run on the other
    /// account.
    ///
    /// Under the same account, a mapping is reused only with the
    /// credentials it was made with (the keyed hash its references keep):
    /// another password is [`Error::SmbCredentialsDiffer`], as is a
    /// reference that kept no hash (unknown credentials). csi-proxy and
    /// csi-driver-smb compare nothing (pkg/os/smb: a mapping that is OK is
    /// reused whatever the credentials); issue 42, finding 11.
    fn check_smb_account(
        &self,
        root: &str,
        path: &str,
        user: &str,
        secret: &str,
    ) -> Result<(), Error> {
        let store = &self.inner.options.smb_store;
        let holders: Vec<_> = store
            .references_all()?
            .into_iter()
            .filter(|r| r.root == root && !r.path.eq_ignore_ascii_case(path))
            .collect();
        let kept: Vec<SmbKept<'_>> = holders.iter().map(kept_of).collect();
        match protocol::smb_reuse(&kept, user, secret) {
            SmbReuse::Yes => Ok(()),
            SmbReuse::OtherPassword(i) => {
                let holder = &holders[i];
                Err(Error::SmbCredentialsDiffer {
                    share: root.to_string(),
                    user: user.to_string(),
                    why: match holder.secret {
                        Some(_) => format!(
                            "the volume staged at {} was staged with another password",
                            holder.path
                        ),
                        None => format!(
                            "the volume staged at {} was recorded without its credentials' hash",
                            holder.path
                        ),
                    },
                })
            }
            SmbReuse::OtherAccount { first, count } => Err(Error::SmbCredentialsConflict {
                share: root.to_string(),
                user: user.to_string(),
                held_by: format!(
                    "it is mapped as {:?} for {count} staged volume(s) on this node",
                    holders[first].user.as_deref().unwrap_or_default()
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
        // `path` holds its link already (a stage made again), or other
        // volumes staged here use the mapping: nothing is sent that the
        // host would answer by removing it.
        let own_link = link_at.is_empty();
        // Without a link of its own, the other users decide.
        let others = match own_link {
            true => 0,
            false => self.smb_users(root, path).await?.len(),
        };
        if protocol::smb_mapping_in_use(own_link, others) {
            return self
                .smb_map_in_use(remote, root, path, link_at, credentials, true)
                .await;
        }
        let (user, password) = (&credentials.username, &credentials.password);
        let Err(e) = self
            .map_share(root, remote, link_at, user, password, true)
            .await
        else {
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
        // A holder whose path the node can show holds no link any more (a
        // crash between removing the link and the mapping) is released,
        // and its mapping with its last reference; holders still linked,
        // or whose link cannot be read (an outage: the proxy's
        // `IsSymlink` is false for a link whose share is unreachable), are
        // in use; as `smb_reconcile` decides.
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
            if self.smb_still_linked(&r.root, &r.path).await? {
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
        if protocol::smb_may_unmap(self.smb_users(root, path).await?.len()) {
            tracing::info!(share = %root, "replacing an unused mapping of the share made with other credentials");
            self.smb_unmap(root).await?;
        }
        match self
            .map_share(root, remote, link_at, user, password, true)
            .await
        {
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
    /// status OK, pkg/os/smb/api.go). No volume staged here uses it (else
    /// [`Node::smb_map_in_use`]), so none of this node's files are open
    /// through it: it is removed and made again when it is stale,
    /// `Disconnected` or `Unavailable` (after a restart:
    /// azurefile-csi-driver#3416, csi-driver-smb#1219), or when its status
    /// cannot be read (the proxy); `Connecting`, `Reconnecting`, `Paused`
    /// and `NetworkError` are waited for (csi-proxy pkg/wmi/smb.go names
    /// the statuses), within the operation's deadline.
    async fn smb_map_over(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        link_at: &str,
        credentials: &SmbCredentials,
    ) -> Result<(), Error> {
        let (user, password) = (&credentials.username, &credentials.password);
        let mut pause = std::time::Duration::from_millis(250);
        loop {
            let stale = match self.smb_mapping_status(root).await? {
                MappingSeen::Status(DISCONNECTED | UNAVAILABLE) | MappingSeen::Unread => true,
                MappingSeen::Status(_) | MappingSeen::Gone => false,
            };
            if stale && protocol::smb_may_unmap(self.smb_users(root, path).await?.len()) {
                tracing::info!(share = %root, "stale SMB mapping no staged volume uses: removing it and mapping again");
                self.smb_unmap(root).await?;
                return self
                    .map_share(root, remote, link_at, user, password, true)
                    .await;
            }
            tracing::info!(share = %root, "SMB mapping not OK: waiting for it");
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(std::time::Duration::from_secs(2));
            match self
                .map_share(root, remote, link_at, user, password, true)
                .await
            {
                Err(e) if e.windows_code() == Some(85) => continue,
                other => return other,
            }
        }
    }

    /// Maps `root` for a stage of `path` (and links `link_at` to `remote`
    /// unless empty) when volumes staged here use the mapping, or `path`
    /// holds its link: never a call the host answers by removing the
    /// mapping. csi-proxy (v0.2.2 to v1.3.0, pkg/server/smb/server.go
    /// NewSmbGlobalMapping) and the HostProcess backend check the root of
    /// a mapping that is OK and remove it with force when the check fails
    /// (an outage), closing every file open through it (issue 42,
    /// findings 1 and 12); no wait makes that safe.
    ///
    /// HostProcess mode links without the check while the mapping exists,
    /// whatever its status; with none, only a stage that holds the server
    /// alone (`alone`) maps: two link-only stages would both find none,
    /// and the second's call, finding the first's mapping, would remove it
    /// in an outage ([`protocol::smb_in_use_call`]). Through the proxy, `NewSmbGlobalMapping` is
    /// sent only once the node has seen the root answer (its own read of
    /// the host, or a staged link the proxy sees through), and asked
    /// again while the mapping is not OK, for
    /// [`NodeOptions::smb_settle`](super::NodeOptions::smb_settle); then
    /// the stage fails [`Error::SmbShareUnavailable`], and kubelet retries.
    async fn smb_map_in_use(
        &self,
        remote: &str,
        root: &str,
        path: &str,
        link_at: &str,
        credentials: &SmbCredentials,
        alone: bool,
    ) -> Result<(), Error> {
        let (user, password) = (&credentials.username, &credentials.password);
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            let there = backend.mapping_status(root.to_string()).await?.is_some();
            return match protocol::smb_in_use_call(there, alone) {
                protocol::SmbInUseCall::Link => {
                    backend
                        .smb_link(remote.to_string(), link_at.to_string())
                        .await
                }
                // No mapping: nothing to remove; the call makes one.
                protocol::SmbInUseCall::Map => {
                    self.map_share(root, remote, link_at, user, password, alone)
                        .await
                }
                // A link-only stage fails over to the stage that holds
                // the server alone (`smb_link`).
                protocol::SmbInUseCall::Alone => Err(Error::SmbShareUnavailable {
                    share: root.to_string(),
                    why: "no mapping: made by a stage that holds the server alone".to_string(),
                }),
            };
        }
        let settled = tokio::time::Instant::now() + self.inner.options.smb_settle;
        let mut pause = std::time::Duration::from_millis(250);
        loop {
            // The mapping is in use here (that is why this runs).
            let why = if !protocol::smb_may_send_map(true, self.smb_reachable(root, path).await?) {
                "its mapping serves volumes staged on this node and the share cannot be \
                 reached now: the proxy would remove the mapping (csi-proxy's validity \
                 check), so nothing was sent"
                    .to_string()
            } else {
                match self
                    .map_share(root, remote, link_at, user, password, alone)
                    .await
                {
                    Err(e) if e.windows_code() == Some(85) => format!(
                        "its mapping serves volumes staged on this node and is not OK ({e}); \
                         it is never removed while in use"
                    ),
                    other => return other,
                }
            };
            if tokio::time::Instant::now() >= settled {
                return Err(Error::SmbShareUnavailable {
                    share: root.to_string(),
                    why,
                });
            }
            tracing::info!(share = %root, "SMB share in use not reachable: waiting for it");
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(std::time::Duration::from_secs(2));
        }
    }

    /// Whether the share root answers now: read on the host where the node
    /// can; else whether a link of a volume staged here (`path` included)
    /// reaches the share through the proxy's `IsSymlink`.
    async fn smb_reachable(&self, root: &str, path: &str) -> Result<bool, Error> {
        if let Some(reachable) = self.seen_share_reachable(root).await {
            return Ok(reachable);
        }
        let fs = self.fs()?;
        Ok(self.smb_reached_by_others(root, path).await?
            || (fs.exists(path).await? && fs.is_link(path).await?))
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
        match self.unmap(root).await {
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
    /// `root`, its path held ([`Node::on_path`]): removes the link and its
    /// reference, and the share's global mapping when no other volume
    /// uses it. Returns what was at `path`.
    pub(super) async fn smb_unstage_at(&self, path: &str, root: &str) -> Result<MountState, Error> {
        let _serial = self.smb_lock(root).await?;
        let seen = self.seen_share_of(path).await;
        let last = protocol::smb_may_unmap(self.smb_users(root, path).await?.len());
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
                Err(e) if outcome_unknown(&e) => Err(e),
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
        let last = protocol::smb_may_unmap(self.smb_users(root, path).await?.len());
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
            if self
                .smb_still_linked(&reference.root, &reference.path)
                .await?
            {
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

impl Node {
    /// Whether `path` may still hold its link to `root`, for
    /// [`Node::smb_reconcile`]: a link the node reads on the host (its
    /// target reachable or not: an outage is not "no link"; issue 42,
    /// finding 13), or, where it reads nothing, anything at the path the
    /// proxy does not show as a plain directory or nothing (the proxy's
    /// `IsSymlink` is false for a link whose target cannot be reached,
    /// csi-proxy v1.1.3 and v1.3.0).
    async fn smb_still_linked(&self, root: &str, path: &str) -> Result<bool, Error> {
        let read = match self.seen_share_of(path).await {
            Some(Some(seen)) => SmbPathRead::HostLink {
                to_root: seen == root,
            },
            Some(None) => SmbPathRead::HostNoLink,
            None => SmbPathRead::Proxy(match self.state(path).await? {
                MountState::Linked => SmbProxyShows::Link,
                MountState::Missing => SmbProxyShows::Nothing,
                // A directory, or a link the proxy does not see through.
                MountState::NotMounted | MountState::Mounted { .. } => {
                    tracing::warn!(share = %root, path, "SMB reference kept: its path may be a link whose share cannot be reached now");
                    SmbProxyShows::Other
                }
            }),
        };
        let kept = protocol::smb_reference_kept(read);
        if kept && self.seen_share_reachable(root).await == Some(false) {
            tracing::warn!(share = %root, path, "SMB reference kept: its share cannot be reached now");
        }
        Ok(kept)
    }
}

impl Node {
    /// Whether `path`, which the proxy shows as no link, may be this
    /// volume's link to `root` that the proxy does not see through (its
    /// mapping `Disconnected` by a restart, an outage): a link to `root`
    /// read on the host, or, where the node reads nothing, a path whose
    /// reference records `root`. Such a path is kept, and its mapping
    /// counted in use (removing it would leave the mapping no staged user
    /// and the stage would make it again under the pod's files).
    async fn smb_link_unseen(&self, root: &str, path: &str) -> Result<bool, Error> {
        Ok(match self.seen_share_of(path).await {
            Some(seen) => seen.as_deref() == Some(root),
            None => self.inner.options.smb_store.root_of(path)?.as_deref() == Some(root),
        })
    }
}

/// The text of a link for errors: where the link at `path` points.
impl Node {
    async fn seen_link_target(&self, path: &str) -> String {
        match self.seen_share_of(path).await {
            Some(Some(root)) => format!("a path of {root}"),
            _ => "somewhere else".to_string(),
        }
    }
}

/// The credentials a reference kept, as the protocol's decisions read them.
fn kept_of(r: &super::smb_store::Reference) -> SmbKept<'_> {
    SmbKept {
        user: r.user.as_deref(),
        secret: r.secret.as_deref(),
    }
}

/// What beside a staging path `smb_create_dir` links to the share's root.
const CREATE_DIR_LINK: &str = ".smb-create-dir";

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
