//! The decisions of the node's protocol for changing a disk's volume, as
//! pure functions of what is recorded and what the host shows: the code
//! that does the work (`host_work`, `volumes`) asks them, and the model
//! checker (`protocol_model`, a test module beside this one) explores every interleaving of
//! two processes, crashes, lost answers and late host effects over the
//! same functions. The SMB decisions below are explored the same way by
//! `protocol_model_smb`.
//!
//! The protocol, per volume:
//!
//! | state | recorded | host | what moves it |
//! |---|---|---|---|
//! | offline disk | nothing | lists no volume, whatever it holds | `onlined` recorded, then `SetDiskState(online)`, its answer recorded |
//! | onlined disk (proxy mode) | `onlined`: sent or answered at T | its volumes arriving | a volume listed: checked as any listed volume; none by T + `NodeOptions::volume_arrival` (sent: + the settle time too): no volume |
//! | no volume (proxy mode) | `partitioning` intent | an online disk listing none, past its arrival time | `PartitionDisk`; the volume listed after it licensed |
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

/// A disk's `onlined` record as a stage reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnlinedRecord {
    /// This node did not bring the disk online (or long enough ago that
    /// the record is gone).
    None,
    /// Brought online by this node, the answer heard.
    Answered,
    /// Sent, its answer not heard: it may still land.
    Unanswered,
}

/// What a stage does with an online disk's empty listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArrivalStep {
    /// Take it as a disk with no volume (`PartitionDisk` may be sent).
    Trust,
    /// List it again after this long: its volumes may still arrive.
    Wait(Duration),
    /// Fail `VolumesPending`: the wait is longer than the arrival time.
    Pending,
}

/// The step for an online disk listing no volume whose `onlined` record
/// is `record`, watched for `seen`. A disk's volumes are listed within
/// `arrival` of its online's answer; an unanswered online is first given
/// `call_settle`, the time a call that may still land has.
pub(crate) fn arrival_step(
    record: OnlinedRecord,
    seen: Duration,
    arrival: Duration,
    call_settle: Duration,
) -> ArrivalStep {
    let window = match record {
        OnlinedRecord::None => return ArrivalStep::Trust,
        OnlinedRecord::Answered => arrival,
        OnlinedRecord::Unanswered => call_settle.saturating_add(arrival),
    };
    match window.checked_sub(seen).filter(|left| !left.is_zero()) {
        None => ArrivalStep::Trust,
        Some(left) if left > arrival => ArrivalStep::Pending,
        Some(left) => ArrivalStep::Wait(left),
    }
}

/// What an operation does to its path: makes something there (a stage,
/// a publish) or removes it (an unstage, an unpublish).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

// ------------------------------------------------------------ SMB
//
// The protocol, per share root and staging path (`smb.rs` runs it; the
// model checker `protocol_model_smb` explores it over these functions):
// a stage records its reference (root, path, account, keyed hash of the
// credentials) before the mapping; the mapping is reused only with the
// credentials its references were made with; a call the host may answer
// by removing the mapping is sent only when no staged volume uses it or
// the share was seen answering; the mapping is removed only when no other
// staged volume uses it (its references and the links the node reads on
// the host); what cannot be read is kept. Every step runs under the path's
// claim and the server's (exclusive to map or unmap, shared to link).

/// The credentials a reference to a share kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SmbKept<'a> {
    /// The account; `None` in references written before accounts were
    /// kept.
    pub user: Option<&'a str>,
    /// The keyed hash of account and password; `None` in references
    /// written before it was kept (unknown credentials).
    pub secret: Option<&'a str>,
}

/// Whether a stage may use a share's mapping, given what the references
/// of the other volumes staged on it kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SmbReuse {
    /// No other volume holds it, or all with these credentials.
    Yes,
    /// The same account with another password, or unknown credentials:
    /// the reference at this index of `others`.
    OtherPassword(usize),
    /// Another account holds it: the first such reference's index, and
    /// how many there are.
    OtherAccount { first: usize, count: usize },
}

fn same_account(kept: Option<&str>, user: &str) -> bool {
    kept.is_some_and(|k| k.eq_ignore_ascii_case(user))
}

/// Whether the stage of a volume with `user` and `secret` (the keyed hash
/// of its credentials) may use the mapping that `others` (the references
/// of the other volumes staged on the share) use. Windows reuses a mapping
/// that is OK whatever the credentials, so the node compares them: the
/// account, then the hash (issue 42, finding 11).
pub(crate) fn smb_reuse(others: &[SmbKept<'_>], user: &str, secret: &str) -> SmbReuse {
    // A reference that kept no account says nothing of one.
    let other_accounts: Vec<usize> = (0..others.len())
        .filter(|&i| others[i].user.is_some() && !same_account(others[i].user, user))
        .collect();
    if let Some(&first) = other_accounts.first() {
        return SmbReuse::OtherAccount {
            first,
            count: other_accounts.len(),
        };
    }
    match others.iter().position(|o| o.secret != Some(secret)) {
        Some(i) => SmbReuse::OtherPassword(i),
        None => SmbReuse::Yes,
    }
}

/// Whether a stage needs only a link, beside other such stages (the
/// server's claim shared): the share is mapped for staged volumes
/// (`holders`, this path's own reference included), every one of them
/// with these credentials. Anything else maps or may unmap, alone.
pub(crate) fn smb_link_only(holders: &[SmbKept<'_>], user: &str, secret: &str) -> bool {
    !holders.is_empty()
        && holders
            .iter()
            .all(|h| same_account(h.user, user) && h.secret == Some(secret))
}

/// What a stage does with a link it finds at its staging path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SmbLinkFound {
    /// The stage's own: it is kept, and the mapping behind it made sure.
    Accept,
    /// The path's reference records another share: `PathInUse`.
    OtherShare,
    /// The node read the link's target and it is not the directory asked
    /// for (the share's root, another directory): `PathInUse`.
    Elsewhere,
}

/// What a stage does with a link at its path, given whether the path's
/// reference records another share, and whether the link reaches the
/// directory asked for (`None`: the target cannot be read, through the
/// proxy from elsewhere than the host). A link is accepted only where it
/// is not known to reach anything else (issue 42, finding 10).
pub(crate) fn smb_link_found(recorded_other_share: bool, reaches: Option<bool>) -> SmbLinkFound {
    if recorded_other_share {
        SmbLinkFound::OtherShare
    } else if reaches == Some(false) {
        SmbLinkFound::Elsewhere
    } else {
        SmbLinkFound::Accept
    }
}

/// Whether a stage's mapping is in use, so that no call the host may
/// answer by removing it is sent blindly: the path holds its link
/// already (a stage made again), or `other_users` other staged volumes
/// use it (their references, their links read on the host).
pub(crate) fn smb_mapping_in_use(own_link: bool, other_users: usize) -> bool {
    own_link || other_users > 0
}

/// Whether `NewSmbGlobalMapping` may be sent: csi-proxy (v0.2.2 to
/// v1.3.0) and the HostProcess backend check the root of a mapping that
/// is there and remove it with force when the check fails (an outage).
/// On a mapping in use it is sent only once the share root was seen
/// answering (`reachable`); otherwise the stage waits, or fails
/// UNAVAILABLE (issue 42, findings 1 and 12).
pub(crate) fn smb_may_send_map(in_use: bool, reachable: bool) -> bool {
    !in_use || reachable
}

/// What HostProcess mode, which reads whether the mapping is there, sends
/// for a mapping in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "host-process"), allow(dead_code))]
pub(crate) enum SmbInUseCall {
    /// A link over the mapping, with no validity check: nothing removes it.
    Link,
    /// `NewSmbGlobalMapping`: there is no mapping to remove.
    Map,
    /// Nothing: the stage goes on with the server held alone.
    Alone,
}

/// What HostProcess mode sends for a mapping in use, given whether the
/// mapping is there and whether the stage holds the server alone. With no
/// mapping only a stage that holds the server alone maps: two link-only
/// stages beside each other would both find none and both send
/// `NewSmbGlobalMapping`, and the second, finding the first's mapping,
/// would remove it in an outage (its validity check) under the volume the
/// first had staged (found by `protocol_model_smb`).
#[cfg_attr(not(feature = "host-process"), allow(dead_code))]
pub(crate) fn smb_in_use_call(mapping_there: bool, alone: bool) -> SmbInUseCall {
    match (mapping_there, alone) {
        (true, _) => SmbInUseCall::Link,
        (false, true) => SmbInUseCall::Map,
        (false, false) => SmbInUseCall::Alone,
    }
}

/// Whether an unstage, a failed stage's cleanup or `smb_reconcile` may
/// remove a share's mapping: only when `other_users` is 0, the other
/// staged volumes counted from their references and from the links the
/// node reads on the host, whatever the mapping's status or the share's
/// reachability say.
pub(crate) fn smb_may_unmap(other_users: usize) -> bool {
    other_users == 0
}

/// What the node read of a staging path a reference names, for
/// `smb_reconcile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SmbPathRead {
    /// A link read on the host (its target need not answer); `to_root`:
    /// it reaches the reference's share.
    HostLink { to_root: bool },
    /// The node read the host: no link there.
    HostNoLink,
    /// The node reads nothing on the host; the proxy shows this.
    Proxy(SmbProxyShows),
}

/// What the proxy shows at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SmbProxyShows {
    /// A link it sees through.
    Link,
    /// Nothing.
    Nothing,
    /// Something else: a directory, or a link whose target cannot be
    /// reached now (csi-proxy v1.1.3 and v1.3.0 answer `IsSymlink` false
    /// for it).
    Other,
}

/// Whether `smb_reconcile` keeps a reference (and so the mapping it holds):
/// unless the node can show the path holds no link to the share. An
/// outage is not "no link" (issue 42, finding 13).
pub(crate) fn smb_reference_kept(read: SmbPathRead) -> bool {
    match read {
        SmbPathRead::HostLink { to_root } => to_root,
        SmbPathRead::HostNoLink => false,
        SmbPathRead::Proxy(SmbProxyShows::Nothing) => false,
        SmbPathRead::Proxy(SmbProxyShows::Link | SmbProxyShows::Other) => true,
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
    fn an_empty_listing_is_trusted_only_after_the_volumes_had_their_time() {
        use ArrivalStep::*;
        use OnlinedRecord as R;
        let (arrival, settle) = (Duration::from_secs(5), Duration::from_secs(720));
        let at = Duration::from_secs;
        assert_eq!(arrival_step(R::None, at(0), arrival, settle), Trust);
        assert_eq!(
            arrival_step(R::Answered, at(0), arrival, settle),
            Wait(at(5))
        );
        assert_eq!(
            arrival_step(R::Answered, at(4), arrival, settle),
            Wait(at(1))
        );
        assert_eq!(arrival_step(R::Answered, at(5), arrival, settle), Trust);
        assert_eq!(arrival_step(R::Unanswered, at(5), arrival, settle), Pending);
        assert_eq!(
            arrival_step(R::Unanswered, at(721), arrival, settle),
            Wait(at(4))
        );
        assert_eq!(arrival_step(R::Unanswered, at(725), arrival, settle), Trust);
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

    fn kept<'a>(user: &'a str, secret: &'a str) -> SmbKept<'a> {
        SmbKept {
            user: Some(user),
            secret: Some(secret),
        }
    }

    #[test]
    fn a_mapping_is_reused_only_with_its_credentials() {
        assert_eq!(smb_reuse(&[], "u", "h"), SmbReuse::Yes);
        assert_eq!(smb_reuse(&[kept("U", "h")], "u", "h"), SmbReuse::Yes);
        assert_eq!(
            smb_reuse(&[kept("u", "h"), kept("u", "x")], "u", "h"),
            SmbReuse::OtherPassword(1)
        );
        let unknown = SmbKept {
            user: None,
            secret: None,
        };
        assert_eq!(smb_reuse(&[unknown], "u", "h"), SmbReuse::OtherPassword(0));
        assert_eq!(
            smb_reuse(&[kept("u", "h"), kept("v", "h"), kept("w", "x")], "u", "h"),
            SmbReuse::OtherAccount { first: 1, count: 2 }
        );
        assert!(smb_link_only(&[kept("u", "h")], "U", "h"));
        assert!(!smb_link_only(&[], "u", "h"));
        assert!(!smb_link_only(&[kept("u", "h"), kept("u", "x")], "u", "h"));
    }

    #[test]
    fn a_mapping_in_use_is_never_removed_nor_checked_blindly() {
        assert!(smb_may_unmap(0));
        assert!(!smb_may_unmap(1));
        assert!(smb_mapping_in_use(true, 0));
        assert!(smb_mapping_in_use(false, 1));
        assert!(!smb_mapping_in_use(false, 0));
        assert!(smb_may_send_map(false, false));
        assert!(!smb_may_send_map(true, false));
        assert!(smb_may_send_map(true, true));
        assert_eq!(smb_in_use_call(true, false), SmbInUseCall::Link);
        assert_eq!(smb_in_use_call(false, true), SmbInUseCall::Map);
        assert_eq!(smb_in_use_call(false, false), SmbInUseCall::Alone);
    }

    #[test]
    fn what_cannot_be_read_keeps_the_reference_and_no_other_link_is_taken() {
        use SmbPathRead::*;
        assert!(smb_reference_kept(HostLink { to_root: true }));
        assert!(!smb_reference_kept(HostLink { to_root: false }));
        assert!(!smb_reference_kept(HostNoLink));
        assert!(smb_reference_kept(Proxy(SmbProxyShows::Other)));
        assert!(smb_reference_kept(Proxy(SmbProxyShows::Link)));
        assert!(!smb_reference_kept(Proxy(SmbProxyShows::Nothing)));
        assert_eq!(smb_link_found(false, None), SmbLinkFound::Accept);
        assert_eq!(smb_link_found(false, Some(true)), SmbLinkFound::Accept);
        assert_eq!(smb_link_found(false, Some(false)), SmbLinkFound::Elsewhere);
        assert_eq!(smb_link_found(true, Some(true)), SmbLinkFound::OtherShare);
    }
}
