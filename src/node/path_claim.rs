//! One operation per path, and none landing after the next one answered.
//!
//! Every operation that changes what is at a path (a stage, an unstage, a
//! publish, an unpublish) runs under the path's claim (`path <path>`,
//! host-wide like every claim), on a task of its own that keeps it until
//! the work ends, whether or not its caller still waits. kubelet drops a
//! call at its deadline and may unstage an uncertain stage next: that
//! unstage, and a retry of the stage, wait for the claim instead of
//! racing the dropped call.
//!
//! The claim is not enough: a host call sent may land after its
//! operation has ended, with its answer lost (the request timeout, a
//! proxy restart), its operation stopped at the node's deadline, or its
//! process dead (csi-proxy ends no host work with its call). So before its
//! first host call an operation records itself (`path` record: what it
//! changes, when, which process), and the record goes only when the
//! operation ends with an answer. An operation that finds such a record
//! decides with [`protocol::path_step`](super::protocol::path_step): the
//! same change again (kubelet's retry) runs beside it and dates the
//! record anew; the opposite one waits until the last call the record
//! covers has had the settle time
//! ([`NodeOptions::format_settle`](super::NodeOptions::format_settle))
//! to end (the settle time after the writer's deadline: `settle_of`),
//! failing [`Error::PathPending`] until then. A removal the
//! earlier one sent that did not answer is not joined
//! ([`removal`](super::removal)): its late `Rmdir` would take away what
//! the retry makes.

use std::future::Future;
use std::time::Duration;

use tracing::Instrument;

use super::protocol::{Change, PathStep, path_step};
use super::removal::path_subject;
use super::{Node, operation_span, outcome_unknown};
use crate::Error;

/// The records' kind of an operation on a path that has not ended with an
/// answer (keyed by the local path).
const PATH: &str = "path";

impl Change {
    fn word(self) -> &'static str {
        match self {
            Change::Make => "make",
            Change::Remove => "remove",
        }
    }

    fn read(word: &str) -> Option<Change> {
        match word {
            "make" => Some(Change::Make),
            "remove" => Some(Change::Remove),
            _ => None,
        }
    }

    fn operations(self) -> &'static str {
        match self {
            Change::Make => "stage or publish",
            Change::Remove => "unstage or unpublish",
        }
    }
}

/// Whether an operation that failed with `e` may have host calls that
/// still land: one whose answer was lost or that was stopped. The node's
/// own refusals to go on, retryable as they are (a format still pending,
/// a share that cannot be reached, a path still pending), are answers.
pub(super) fn may_still_land(e: &Error) -> bool {
    outcome_unknown(e)
        && !matches!(
            e,
            Error::FormatPending { .. }
                | Error::PathPending { .. }
                | Error::RemovalPending { .. }
                | Error::VolumesPending { .. }
                | Error::SmbShareUnavailable { .. }
        )
}

/// The settle time after the deadline of record `text`'s writer (named
/// `within N`), or after `own` if that is longer or the record names none.
fn settle_after(text: &str, own: Duration, settle: Duration) -> Duration {
    let theirs = text
        .rsplit_once(" within ")
        .and_then(|(_, secs)| secs.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let deadline = theirs.map_or(own, |theirs| theirs.max(own));
    settle.saturating_add(deadline)
}

impl Node {
    /// A record of `what` sent now by this process: when, by whom, and
    /// the deadline within which its operation sends its host calls.
    pub(super) fn sent_text(&self, what: &str) -> Result<String, Error> {
        let secs = super::host_work::now_secs();
        let deadline = self.inner.options.deadline;
        let within = deadline.as_secs() + u64::from(deadline.subsec_nanos() > 0);
        let owner = self.inner.options.records.owner()?;
        Ok(format!("{what} sent {secs} by {owner} within {within}\n"))
    }

    /// How long after a record `text` was first seen a host call sent
    /// under it may still land: its operation sends calls until its
    /// deadline (the writer's, or this node's if longer or unnamed), and
    /// each is given the settle time
    /// ([`NodeOptions::format_settle`](super::NodeOptions::format_settle))
    /// from then.
    pub(super) fn settle_of(&self, text: &str) -> Duration {
        let options = &self.inner.options;
        settle_after(text, options.deadline, options.format_settle)
    }

    /// Runs `work`, an operation making `change` at `path`, as described
    /// in the module docs. The work ends within the operation deadline,
    /// counted from the call: stopped there, its caller gets
    /// [`Error::DeadlineExceeded`], and its record stays.
    pub(super) async fn on_path<T, F>(
        &self,
        operation: &'static str,
        change: Change,
        path: &str,
        work: impl FnOnce(Node) -> F,
    ) -> Result<T, Error>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, Error>> + Send + 'static,
    {
        let after = self.inner.options.deadline;
        let deadline = tokio::time::Instant::now() + after;
        let exceeded = move || Error::DeadlineExceeded { operation, after };
        let span = operation_span(operation);
        let name = format!("path {path}");
        let claim = self.inner.options.records.claim_exclusive(&name);
        let claim = match tokio::time::timeout_at(deadline, claim.instrument(span.clone())).await {
            Ok(claim) => claim?,
            Err(_) => return Err(exceeded()),
        };
        let work = crate::transport::retry::within(deadline, work(self.clone()));
        let (node, path) = (self.clone(), path.to_string());
        let task = self.spawn(
            async move {
                let result = async {
                    let recorded = node.record_change(&path, change)?;
                    let result = match tokio::time::timeout_at(deadline, work).await {
                        Ok(result) => result,
                        Err(_) => Err(exceeded()),
                    };
                    let answered = !matches!(&result, Err(e) if may_still_land(e));
                    if recorded && answered {
                        node.inner.options.records.remove(PATH, &path)?;
                    }
                    result
                }
                .await;
                drop(claim);
                result
            }
            .instrument(span),
        );
        match tokio::time::timeout_at(deadline, task).await {
            Ok(joined) => self.joined(joined),
            Err(_) => Err(exceeded()),
        }
    }

    /// Records an operation making `change` at `path` before its first
    /// host call, unless an earlier one's record says otherwise; whether
    /// this operation wrote the record (and so removes it when it ends
    /// with an answer).
    fn record_change(&self, path: &str, change: Change) -> Result<bool, Error> {
        // A removal an earlier operation sent from this path that did not
        // answer: not joined, whatever either changes (its `Rmdir` would
        // take away the retry's mount or link).
        self.removal_settled(&path_subject(path))?;
        let records = &self.inner.options.records;
        let text = records.get(PATH, path)?;
        let earlier = text.as_deref().map(|text| {
            let word = text.split_whitespace().next().unwrap_or_default();
            (Change::read(word), records.watched(PATH, path, text))
        });
        let settle = text
            .as_deref()
            .map_or(self.inner.options.format_settle, |t| self.settle_of(t));
        match path_step(earlier, change, settle) {
            // A join keeps the earlier operation's record (its calls may
            // still land), dated anew: this one's calls may land as late.
            step @ (PathStep::Record | PathStep::Join) => {
                let text = self.sent_text(change.word())?;
                records.put(PATH, path, &text)?;
                records.watch_anew(PATH, path, &text);
                Ok(step == PathStep::Record)
            }
            PathStep::Pending => {
                let text = text.unwrap_or_default();
                let earlier = text
                    .split_whitespace()
                    .next()
                    .and_then(Change::read)
                    .map_or("operation", Change::operations);
                Err(Error::PathPending {
                    path: path.to_string(),
                    earlier: earlier.to_string(),
                    since: text.trim().to_string(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTLE: Duration = Duration::from_secs(600);

    /// A call may be sent until the writer's deadline: a plugin that
    /// stopped its operation at 300 s is waited for that long plus the
    /// settle time, whatever this node's own deadline.
    #[test]
    fn a_record_is_pending_until_the_settle_time_after_the_longer_deadline() {
        let secs = Duration::from_secs;
        let record = "make sent 1796191323 by epoch 3 within 300\n";
        assert_eq!(settle_after(record, secs(30), SETTLE), secs(900));
        assert_eq!(settle_after(record, secs(400), SETTLE), secs(1000));
        // Written before records named a deadline, or cut: this node's.
        let old = "make sent 1796191323 by epoch 3\n";
        assert_eq!(settle_after(old, secs(120), SETTLE), secs(720));
        let cut = "make sent 1796191323 by epoch 3 within x\n";
        assert_eq!(settle_after(cut, secs(120), SETTLE), secs(720));
        assert_eq!(settle_after(record, Duration::MAX, SETTLE), Duration::MAX);
    }
}
