//! Host calls that remove, recorded until their answer.
//!
//! A removal sent to the host can land after the operation that sent it
//! has ended: its answer lost to the request timeout or a proxy restart,
//! its operation stopped at the node's deadline, its process dead
//! (csi-proxy ends no host work with its call). Landing then, it removes
//! what a later operation made: kubelet's retry of a stage joins the
//! stopped attempt and mounts, and the attempt's `Rmdir` of the empty
//! staging directory then takes the mount point away; an unstage's
//! offline or unmap lands under the next stage of the disk or share at
//! another path.
//!
//! So every removal the node sends (`Rmdir`, `UnmountVolume`, an
//! offline, `RemoveSmbGlobalMapping`, and `NewSmbGlobalMapping`, which
//! the host answers by removing a mapping that fails its check) is
//! recorded before it is sent
//! (`removing` records: the call, when, which process), keyed by what it
//! removes from: the path, the disk (by number, as the call names it), the
//! share's root. The record goes when the call answers, whatever the
//! answer; one whose outcome is unknown stays, and no second removal of
//! that subject is sent while it may still land (its answer would take
//! the first one's record away). Until such a record has had
//! the settle time ([`NodeOptions::format_settle`]) after its writer's
//! deadline (the transport may send the call again until then; see
//! `Node::settle_of`), counted on this process's monotonic clock from
//! when it first saw it, the next
//! operation on that path, stage of that disk, or work on that share's
//! mapping fails [`Error::RemovalPending`] (UNAVAILABLE: kubelet retries)
//! before it changes anything.
//!
//! By construction: the group methods that send a removal take a
//! [`Recorded`], which only [`Node::removing`] makes.
//!
//! [`NodeOptions::format_settle`]: super::NodeOptions::format_settle

use std::future::Future;

use super::Node;
use super::path_claim::may_still_land;
use crate::Error;

/// The records' kind of a removal sent and not yet answered.
const REMOVING: &str = "removing";

/// Proof that a removal is recorded: the group methods that send one
/// take it, and only [`Node::removing`] makes it.
pub(super) struct Recorded(());

/// What a removal at `path` removes from.
pub(super) fn path_subject(path: &str) -> String {
    format!("path {path}")
}

/// What an offline of disk `n` removes from.
pub(super) fn disk_subject(n: u32) -> String {
    format!("disk {n}")
}

/// What the removal of `root`'s mapping removes from.
pub(super) fn share_subject(root: &str) -> String {
    format!("share {root}")
}

impl Node {
    /// Removes the directory or link at `path` (`force`: with its
    /// contents).
    pub(super) async fn rmdir(&self, path: &str, force: bool) -> Result<(), Error> {
        let fs = self.fs()?;
        self.removing(&[path_subject(path)], "Rmdir", |r| fs.rmdir(path, force, r))
            .await
    }

    /// Removes volume `id`'s mount point at `path` (volume v1beta1: its
    /// dismount).
    pub(super) async fn unmount(&self, id: &str, path: &str) -> Result<(), Error> {
        let volume = self.volume()?;
        self.removing(&[path_subject(path)], "UnmountVolume", |r| {
            volume.unmount(id, path, r)
        })
        .await
    }

    /// Takes disk `n` offline.
    pub(super) async fn take_offline(&self, n: u32) -> Result<(), Error> {
        let disk = self.disk()?;
        self.removing(&[disk_subject(n)], "SetDiskState(offline)", |r| {
            disk.offline(n, r)
        })
        .await
    }

    /// Removes the global mapping of `root` (the host's answer as it is).
    pub(super) async fn unmap(&self, root: &str) -> Result<(), Error> {
        let smb = self.smb()?;
        self.removing(&[share_subject(root)], "RemoveSmbGlobalMapping", |r| {
            smb.unmap(root, r)
        })
        .await
    }

    /// Maps `remote` (linking `link_at` to it unless empty). Sent by a
    /// stage holding the share's server `alone`, it is recorded as a
    /// removal of `root`'s mapping: on a mapping that is there, csi-proxy
    /// (v0.2.2 to v1.3.0, `pkg/server/smb/server.go`) and the HostProcess
    /// backend check the share and remove the mapping with force when the
    /// check fails, so a `NewSmbGlobalMapping` landing late in an outage
    /// removes the mapping another volume was staged on meanwhile (found
    /// by `protocol_model_smb`). Through the proxy a link-only stage (the
    /// server shared with others like it, each sending its own
    /// `NewSmbGlobalMapping`, the proxy's only way to link) records
    /// nothing: one record shared by stages running at once cannot say
    /// which of them stopped, and each would make the others wait.
    pub(super) async fn map_share(
        &self,
        root: &str,
        remote: &str,
        link_at: &str,
        user: &str,
        password: &str,
        alone: bool,
    ) -> Result<(), Error> {
        let smb = self.smb()?;
        let subjects = match alone {
            true => vec![share_subject(root)],
            false => Vec::new(),
        };
        self.removing(&subjects, "NewSmbGlobalMapping", |r| {
            smb.map(remote, link_at, user, password, r)
        })
        .await
    }

    /// Sends the removal `send` makes, recorded for each of `subjects`
    /// from before it is sent until it answers (see the module docs).
    async fn removing<T, F>(
        &self,
        subjects: &[String],
        call: &str,
        send: impl FnOnce(Recorded) -> F,
    ) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>>,
    {
        // One removal of a subject at a time: a second one answering
        // would take away the record of a first still at the host.
        for subject in subjects {
            self.removal_settled(subject)?;
        }
        let records = &self.inner.options.records;
        let text = self.sent_text(call)?;
        for subject in subjects {
            records.put(REMOVING, subject, &text)?;
            records.watch_anew(REMOVING, subject, &text);
        }
        let result = send(Recorded(())).await;
        if !matches!(&result, Err(e) if may_still_land(e)) {
            for subject in subjects {
                records.remove(REMOVING, subject)?;
            }
        }
        result
    }

    /// Fails [`Error::RemovalPending`] while a removal from `subject` that
    /// did not answer may still land (its record younger than the settle
    /// time); a record past it is dropped.
    pub(super) fn removal_settled(&self, subject: &str) -> Result<(), Error> {
        let records = &self.inner.options.records;
        let Some(text) = records.get(REMOVING, subject)? else {
            return Ok(());
        };
        if records.watched(REMOVING, subject, &text) < self.settle_of(&text) {
            return Err(Error::RemovalPending {
                what: subject.to_string(),
                since: text.trim().to_string(),
            });
        }
        records.remove(REMOVING, subject)
    }
}
