//! The decisions of the node's protocol for changing a disk's volume, as
//! pure functions of what is recorded and what the host shows: the code
//! that does the work (`host_work`, `volumes`) asks them, and the model
//! checker (`protocol_model`, a test module beside this one) explores every interleaving of
//! two processes, crashes, lost answers and late host effects over the
//! same functions.
//!
//! The protocol, per volume:
//!
//! | state | recorded | host | what moves it |
//! |---|---|---|---|
//! | blank, licensed | a `partition` licence (proxy mode: this node's `PartitionDisk` made it) | no file system | the format's claim, then `format sent` recorded, then `FormatVolume` |
//! | format sent | `format`: sent at T by epoch E | formatting, or not | the volume shows a file system: records removed (licence ended); none after the settle time: the host ended it, back to blank |
//! | formatted | nothing | NTFS | mount |
//! | may hold data | nothing | no file system, no licence (proxy mode) or a signature (HostProcess mode) | nothing: refused |
//!
//! Every step runs under the volume's claim (`NodeRecords::claim_exclusive`,
//! host-wide, released by the OS when its holder dies), so no two holders
//! decide at once, and a decision is made again from the record and the
//! host whenever a claim is taken: nothing is inferred from who wrote a
//! record.

use std::time::Duration;

/// A `format` record as the claim's holder reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormatRecord {
    /// No format recorded.
    None,
    /// A format was sent; `elapsed` since then by the wall clock (`None`:
    /// the clock went back, so no time is known to have passed).
    Sent { elapsed: Option<Duration> },
}

/// What the claim's holder does about a volume's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormatStep {
    /// The volume shows a file system: forget the format and the
    /// partition licence; nothing is sent.
    Formatted,
    /// Blank and nothing pending: format it if it may be formatted
    /// (`may_format`), recording `sent` first.
    Check,
    /// A format sent earlier may still be running at the host: never
    /// send another; wait, or fail with `FormatPending`.
    Pending,
}

/// The step for a volume whose record is `record` and which `formatted`
/// shows a file system or not; `settle` is how long a format sent is
/// given to end at the host ([`NodeOptions::format_settle`](super::NodeOptions::format_settle)).
pub(crate) fn format_step(record: FormatRecord, formatted: bool, settle: Duration) -> FormatStep {
    match (formatted, record) {
        (true, _) => FormatStep::Formatted,
        (false, FormatRecord::None) => FormatStep::Check,
        (false, FormatRecord::Sent { elapsed }) => match elapsed {
            // The host has had the settle time: a format it still had
            // would have ended with a file system.
            Some(elapsed) if elapsed >= settle => FormatStep::Check,
            _ => FormatStep::Pending,
        },
    }
}

/// Whether an unformatted volume may be formatted. HostProcess mode reads
/// its sectors (`signature_found`: `None` when the mode cannot read them).
/// Proxy mode, which cannot, formats only under a partition licence: the
/// record that this node's own `PartitionDisk` made the partition, which
/// ends when its format is known done.
pub(crate) fn may_format(signature_found: Option<bool>, licensed: bool) -> bool {
    match signature_found {
        Some(found) => !found,
        None => licensed,
    }
}

/// What an operation does to its path: makes something there (a stage,
/// a publish) or removes it (an unstage, an unpublish).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Make,
    Remove,
}

/// What an operation on a path does, its path's claim held, about the
/// `path` record an earlier operation left: the record is written before
/// an operation's first host call and goes when it ends with an answer,
/// so one that remains is an operation whose host calls may still land
/// (its caller dropped it, its answer was lost, its process died).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathStep {
    /// Nothing pending, or pending past the settle time: record this
    /// operation, and remove the record when it ends with an answer.
    Record,
    /// The same change again (kubelet's retry): it converges with the
    /// earlier one whatever lands, so it runs; the earlier one's record
    /// stays until it settles.
    Join,
    /// The opposite change while the earlier one may still land: an
    /// unstage that answered OK before a stage's link or mount landed
    /// would leave them for ever; refused, retry later.
    Pending,
}

/// The step for an operation making `now` on a path whose record says
/// `earlier` (its change, `None` when unreadable, and how long this
/// process has watched it pending), given the settle time.
pub(crate) fn path_step(
    earlier: Option<(Option<Change>, Duration)>,
    now: Change,
    settle: Duration,
) -> PathStep {
    match earlier {
        None => PathStep::Record,
        Some((_, watched)) if watched >= settle => PathStep::Record,
        Some((Some(change), _)) if change == now => PathStep::Join,
        Some(_) => PathStep::Pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_opposite_change_waits_for_an_earlier_one_to_settle() {
        use Change::*;
        let settle = Duration::from_secs(600);
        let seen = |s| Duration::from_secs(s);
        assert_eq!(path_step(None, Make, settle), PathStep::Record);
        assert_eq!(
            path_step(Some((Some(Make), seen(5))), Make, settle),
            PathStep::Join
        );
        assert_eq!(
            path_step(Some((Some(Make), seen(5))), Remove, settle),
            PathStep::Pending
        );
        assert_eq!(
            path_step(Some((Some(Remove), seen(5))), Make, settle),
            PathStep::Pending
        );
        assert_eq!(
            path_step(Some((None, seen(5))), Make, settle),
            PathStep::Pending
        );
        assert_eq!(
            path_step(Some((Some(Make), seen(600))), Remove, settle),
            PathStep::Record
        );
        assert_eq!(
            path_step(Some((None, seen(600))), Remove, settle),
            PathStep::Record
        );
    }

    #[test]
    fn a_format_sent_is_never_sent_again_before_it_settles() {
        let settle = Duration::from_secs(600);
        let sent = |s| FormatRecord::Sent {
            elapsed: Some(Duration::from_secs(s)),
        };
        assert_eq!(format_step(sent(5), false, settle), FormatStep::Pending);
        assert_eq!(
            format_step(FormatRecord::Sent { elapsed: None }, false, settle),
            FormatStep::Pending
        );
        assert_eq!(format_step(sent(600), false, settle), FormatStep::Check);
        assert_eq!(format_step(sent(5), true, settle), FormatStep::Formatted);
        assert_eq!(
            format_step(FormatRecord::None, false, settle),
            FormatStep::Check
        );
        assert_eq!(
            format_step(FormatRecord::None, true, settle),
            FormatStep::Formatted
        );
    }

    #[test]
    fn only_what_is_shown_blank_may_be_formatted() {
        assert!(may_format(Some(false), false));
        assert!(
            !may_format(Some(true), true),
            "a signature wins over a licence"
        );
        assert!(may_format(None, true));
        assert!(!may_format(None, false));
    }
}
