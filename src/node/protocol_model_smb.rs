//! An exhaustive model check of the SMB protocol (issue 42, item 8): two
//! staging paths on one share, over the code's own decisions. Every step
//! in which a plugin process decides about a share asks the function of
//! [`protocol`] that `smb.rs` asks: [`protocol::smb_link_only`] (link
//! beside other stages, the server's claim shared), [`protocol::smb_reuse`]
//! (the credentials), [`protocol::smb_link_found`] (a link already at the
//! path), [`protocol::smb_mapping_in_use`] and [`protocol::smb_may_send_map`]
//! (whether a call the host may answer by removing the mapping is sent),
//! [`protocol::smb_may_unmap`] (unstage, a failed stage's cleanup,
//! `smb_reconcile`) and [`protocol::smb_reference_kept`] (`smb_reconcile`).
//!
//! The model is `smb.rs` as it runs. A stage takes the path's claim, then
//! the server's (shared when `smb_link_only` says the share is mapped for
//! staged volumes with its credentials, else exclusive); reads its path
//! (a link found: `smb_link_found`), compares credentials (`smb_reuse`),
//! records its reference, then maps: on a mapping in use HostProcess mode
//! links only where the mapping is there, the proxy sends
//! `NewSmbGlobalMapping` only once it has read the share reachable; then
//! it reads its link (an outage: UNAVAILABLE, the link removed if it made
//! it). A failed stage forgets the reference it recorded, and the mapping
//! when `smb_may_unmap` says so; a failure of the link-only stage goes on
//! with the server held alone. An unstage takes the path's claim (a path
//! with no reference and no link read: the disk unstage, which removes the
//! link), then the server's, removes the mapping when `smb_may_unmap` says
//! so, the link, then the reference. A restarted process runs
//! `smb_reconcile`: per reference, under the server's claim, the
//! reference goes (and the mapping when unused) unless
//! `smb_reference_kept`. The records that outlive a call: an operation's
//! `path` record, written as it takes the path's claim when
//! [`protocol::path_step`] says `Record` (a record whose calls have all
//! ended is asked as past the settle time), gone when it ends with an
//! answer; a `removing` record per removal sent (`RemoveSmbGlobalMapping`,
//! a path's `Rmdir`), gone when its answer is heard: while such a
//! removal may still land, the path's claim or the server's is refused
//! (`RemovalPending`).
//!
//! The host: one share root, its global mapping (made with one volume's
//! credentials, or none), the link at each path (to the volume's
//! directory, or to the share's root as a release before 0.x could leave
//! one). `NewSmbGlobalMapping` on a mapping that is there reuses it,
//! whatever the credentials, unless the share is in an outage: then its
//! validity check fails and it removes the mapping with force (csi-proxy
//! v0.2.2 to v1.3.0, the HostProcess backend). HostProcess mode reads
//! links on the host (an outage does not hide them) and the mapping's
//! presence; the proxy mode modelled is the one that reads nothing on the
//! host (the reference server from Linux): `IsSymlink` is false for a link
//! whose share cannot be reached.
//!
//! Around it: kubelet stages each path until a stage answers OK, then
//! unstages it until an unstage answers OK; it drops a call at any time
//! (its deadline; the operation goes on on its own task, holding its
//! claims) and then retries the stage or unstages first; a lost answer is
//! an error to it. Processes die at any step (their claims go with them,
//! kubelet's waiting calls fail) and restart. A host call whose request is
//! lost does nothing; one whose answer is lost lands. A share outage
//! starts and ends. One path may stage with a wrong password (same
//! account). A host call a dead process sent lands or not
//! (`Late::AtDeath`: before anything else happens; `Late::Any`: at any
//! later time).
//!
//! Found by it and fixed: in HostProcess mode two link-only stages that
//! both found no mapping both sent `NewSmbGlobalMapping`, and the second
//! removed the first's in an outage under the volume just staged
//! ([`protocol::smb_in_use_call`] now leaves mapping to a stage holding
//! the server alone); a dead process's `RemoveSmbGlobalMapping` landing
//! after a second volume linked over the mapping (`Late::Any`), now
//! waited for through its `removing` record. Open, and asserted found:
//! the proxy's window between its read of the share and
//! `NewSmbGlobalMapping` (docs/safety.md, "The window the proxy leaves
//! open"), so the proxy configurations run without outages.
//!
//! Sizes (debug build): the CI configurations reach 4,067 to 67,850
//! states each, about 10 s together; the largest on demand, one of each
//! fault in HostProcess mode, 6,119,901 states in about 6 minutes on a
//! shared machine (docs/safety.md states each with its time).
//!
//! Not modelled: the mapping's status beside the outage (`Disconnected`
//! after a reboot, `Reconnecting`), error 1219 (another account on the
//! server), `create_dir`, a second share or server, a path's stage
//! stopped at the node's deadline with a host call in flight (the same
//! as a dead process's call: it may land later), the store and records
//! in memory (both are durable here), publish, the settle time running
//! out before a call has ended (the code's assumption is that it does
//! not).
//!
//! Checked in every reachable state: (1) the mapping is never removed
//! while a volume whose stage answered OK (and whose unstage has not been
//! called) links through it; (2) such a volume's link reaches the
//! directory asked for, never the share's root; (3) such a volume's
//! mapping was made with its own credentials; (4) once every path's
//! unstage has answered OK (and kubelet calls no more), no link and no
//! mapping is left; (5) such a volume keeps its link. And liveness: from every reachable state, with faults
//! stopped (no death, drop, lost request or answer, new outage; outages
//! end, processes restart, late calls land or not), a state where every
//! path was staged and unstaged, each answered OK, can be reached.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use super::protocol::{
    self, Change, PathStep, SmbInUseCall, SmbKept, SmbLinkFound, SmbPathRead, SmbProxyShows,
    SmbReuse,
};

/// An exploration bigger than this is a model gone unbounded.
const MAX_STATES: usize = 30_000_000;
/// The account every volume names.
const USER: &str = "svc";
/// The settle time `path_step` is asked with: a record whose calls have
/// all ended is asked as this old, one with a call in flight as new.
const SETTLE: Duration = Duration::from_secs(600);

type LinkOnly = fn(&[SmbKept<'_>], &str, &str) -> bool;
type Reuse = fn(&[SmbKept<'_>], &str, &str) -> SmbReuse;
type LinkFound = fn(bool, Option<bool>) -> SmbLinkFound;
type InUse = fn(bool, usize) -> bool;
type MaySend = fn(bool, bool) -> bool;
type InUseCall = fn(bool, bool) -> SmbInUseCall;
type MayUnmap = fn(usize) -> bool;
type Kept = fn(SmbPathRead) -> bool;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Links and the mapping read on the host; links over a mapping that
    /// is there with no validity check.
    HostProcess,
    /// Through the proxy, reading nothing on the host.
    Proxy,
}

/// When a host call a dead process sent ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Late {
    /// Before any other step: the host ends it, or drops it, at once.
    AtDeath,
    /// At any later step, or never.
    Any,
}

/// A volume's credentials: the same account, and the right password or
/// another one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Cred {
    Good,
    Wrong,
}

impl Cred {
    /// The keyed hash its reference keeps.
    fn secret(self) -> &'static str {
        match self {
            Cred::Good => "hash of the right password",
            Cred::Wrong => "hash of another password",
        }
    }
}

/// What is at a staging path on the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Link {
    None,
    /// A link to the volume's directory on the share.
    Dir,
    /// A link to the share's root.
    Root,
}

/// What kubelet is doing with a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kube {
    /// About to call NodeStageVolume.
    ToStage,
    StageWait,
    /// The stage answered OK: a pod uses the volume.
    Staged,
    /// About to call NodeUnstageVolume; `restage`: the stage was
    /// uncertain (dropped), it is staged again after.
    ToUnstage {
        restage: bool,
    },
    UnstageWait {
        restage: bool,
    },
    /// Unstaged, answered OK (or, for a wrong password, given up).
    Done,
}

/// A changing host call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Call {
    /// `NewSmbGlobalMapping` with the path's credentials, linking the
    /// path with `link`.
    Map { path: u8, link: bool },
    /// HostProcess mode: a link over the mapping that is there.
    Link { path: u8 },
    /// `RemoveSmbGlobalMapping`.
    Unmap,
    /// `Rmdir` of the path's link.
    Rmdir { path: u8 },
}

/// What a task does with a host call's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum After {
    /// The stage's map or link.
    Mapped,
    /// A failed stage's removal of the mapping.
    Forgot,
    /// The unstage's removal of the mapping.
    Unmapped,
    /// The unstage's removal of the link.
    Unlinked,
    /// The disk unstage's removal of what is at a path with no share.
    PlainUnlinked,
    /// `smb_reconcile`'s removal of the mapping.
    Reconciled,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Op {
    Stage,
    Unstage,
    Reconcile,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Pc {
    /// Waits for the path's claim.
    PathClaim,
    /// Waits for the server's claim (a stage: shared or exclusive as
    /// `smb_link_only` says, unless `alone`).
    ServerClaim,
    /// Stage: reads the path, the link found, the credentials.
    Look,
    /// Stage: records its reference.
    Record,
    /// Stage: decides what to send for the mapping.
    MapDecide,
    /// A host call sent, its answer awaited.
    Await(Call, After),
    /// Stage: its map answered, reads its link.
    Check,
    /// Stage failed: forgets what it recorded.
    Forget,
    /// Unstage: whether the path is a share's.
    Root,
    /// Unstage: whether the mapping goes.
    UnstageDecide,
    /// Reconcile: looks at the reference of the path.
    ReconcileLook,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Hold {
    None,
    Shared,
    Exclusive,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Task {
    proc: u8,
    op: Op,
    /// The path (reconcile: the reference it looks at).
    path: u8,
    pc: Pc,
    path_claim: bool,
    server: Hold,
    /// kubelet waits for its answer.
    caller: bool,
    /// Stage: its path had a reference before it (a failure leaves it).
    recorded: bool,
    /// Stage: the path held its link (accepted) before it.
    own_link: bool,
    /// Stage: the server is held alone (a link-only attempt failed).
    alone: bool,
    /// It wrote its path's `path` record (`path_step` said `Record`).
    path_recorded: bool,
    /// One of its calls had its answer or its request lost: it ends with
    /// an outcome unknown, and its `path` record stays.
    unknown: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Budget {
    crashes: u8,
    drops: u8,
    lost: u8,
    outages: u8,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    /// The share's global mapping, and whose credentials made it.
    mapping: Option<Cred>,
    outage: bool,
    links: Vec<Link>,
    /// The durable references, with the credentials they keep.
    refs: Vec<Option<Cred>>,
    kube: Vec<Kube>,
    alive: Vec<bool>,
    /// Sorted: states that differ only in the order of tasks are one.
    tasks: Vec<Task>,
    /// Host calls of dead processes not yet ended, sorted.
    orphans: Vec<Call>,
    /// The durable `removing` records (`removal.rs`): a removal of the
    /// mapping, and of each path's link, sent and not yet answered.
    removing_share: bool,
    removing_path: Vec<bool>,
    /// The durable `path` records (`path_claim.rs`): an operation on the
    /// path that has not ended with an answer.
    path_records: Vec<Option<Change>>,
    budget: Budget,
    /// Invariant (1) broken at some step: the volume.
    pulled: Option<u8>,
}

#[derive(Clone)]
struct Config {
    name: &'static str,
    mode: Mode,
    late: Late,
    procs: u8,
    creds: Vec<Cred>,
    /// Links at the paths at the start.
    links: Vec<Link>,
    budget: Budget,
    /// Whether operations hold the path's claim (false: before finding 5's
    /// fix).
    path_claim: bool,
    /// Whether an operation records itself on its path and `path_step`
    /// decides on the record (false: before the `path` records).
    path_records: bool,
    /// Whether a removal is recorded until its answer and what it removes
    /// from waits while it may land (false: before `removal.rs`).
    removal_records: bool,
    /// Whether a restarted process runs `smb_reconcile`.
    reconcile: bool,
    /// Whether liveness is checked (not where a path's stage is refused
    /// for good by design).
    liveness: bool,
    link_only: LinkOnly,
    reuse: Reuse,
    link_found: LinkFound,
    in_use: InUse,
    may_send: MaySend,
    in_use_call: InUseCall,
    may_unmap: MayUnmap,
    kept: Kept,
}

impl Config {
    fn new(name: &'static str, mode: Mode, creds: Vec<Cred>, budget: Budget) -> Self {
        Config {
            name,
            mode,
            late: Late::AtDeath,
            procs: 2,
            links: vec![Link::None; creds.len()],
            creds,
            budget,
            path_claim: true,
            path_records: true,
            removal_records: true,
            reconcile: true,
            liveness: true,
            link_only: protocol::smb_link_only,
            reuse: protocol::smb_reuse,
            link_found: protocol::smb_link_found,
            in_use: protocol::smb_mapping_in_use,
            may_send: protocol::smb_may_send_map,
            in_use_call: protocol::smb_in_use_call,
            may_unmap: protocol::smb_may_unmap,
            kept: protocol::smb_reference_kept,
        }
    }
}

fn budget(crashes: u8, drops: u8, lost: u8, outages: u8) -> Budget {
    Budget {
        crashes,
        drops,
        lost,
        outages,
    }
}

#[derive(Clone, Copy, Debug)]
enum Actor {
    Proc(u8),
    Kubelet,
    Host,
}

/// A step of a trace.
#[derive(Clone, Copy, Debug)]
struct Step {
    actor: Actor,
    what: &'static str,
    path: u8,
}

struct Edge {
    next: State,
    step: Step,
    /// A fault: not taken once faults stop (liveness).
    fault: bool,
}

impl State {
    fn initial(cfg: &Config) -> Self {
        let n = cfg.creds.len();
        State {
            mapping: None,
            outage: false,
            links: cfg.links.clone(),
            refs: vec![None; n],
            kube: vec![Kube::ToStage; n],
            alive: vec![true; cfg.procs as usize],
            tasks: Vec::new(),
            orphans: Vec::new(),
            removing_share: false,
            removing_path: vec![false; n],
            path_records: vec![None; n],
            budget: cfg.budget,
            pulled: None,
        }
    }

    fn path_free(&self, v: u8) -> bool {
        !self.tasks.iter().any(|t| t.path_claim && t.path == v)
    }

    fn server_free(&self, exclusive: bool) -> bool {
        self.tasks.iter().all(|t| match t.server {
            Hold::None => true,
            Hold::Shared => !exclusive,
            Hold::Exclusive => false,
        })
    }

    /// The other staged volumes that use the share, as the code counts
    /// them for path `v`: their references, and the links it reads on
    /// the host (HostProcess mode).
    fn other_users(&self, cfg: &Config, v: usize) -> usize {
        (0..self.refs.len())
            .filter(|&w| {
                w != v
                    && (self.refs[w].is_some()
                        || (cfg.mode == Mode::HostProcess && self.links[w] != Link::None))
            })
            .count()
    }

    /// The mapping goes (invariant 1 is judged here).
    fn remove_mapping(&mut self) {
        if self.mapping.is_some() && self.pulled.is_none() {
            self.pulled = (0..self.kube.len())
                .find(|&w| self.kube[w] == Kube::Staged && self.links[w] != Link::None)
                .map(|w| w as u8);
        }
        self.mapping = None;
    }

    /// A call lands at the host; whether it succeeded.
    fn apply(&mut self, cfg: &Config, call: Call) -> bool {
        match call {
            Call::Map { path, link } => {
                // The validity check of a mapping that is there fails in an
                // outage, and the host removes it with force.
                if self.outage {
                    self.remove_mapping();
                    return false;
                }
                if self.mapping.is_none() {
                    self.mapping = Some(cfg.creds[path as usize]);
                }
                if link {
                    self.links[path as usize] = Link::Dir;
                }
                true
            }
            Call::Link { path } => match self.mapping {
                Some(_) => {
                    self.links[path as usize] = Link::Dir;
                    true
                }
                None => false,
            },
            Call::Unmap => {
                self.remove_mapping();
                true
            }
            Call::Rmdir { path } => {
                self.links[path as usize] = Link::None;
                true
            }
        }
    }

    /// Task `i` ends with `ok`: kubelet hears it if it waits.
    fn finish(&mut self, cfg: &Config, i: usize, ok: bool) {
        let t = self.tasks.remove(i);
        if t.path_recorded && !t.unknown {
            self.path_records[t.path as usize] = None;
        }
        if t.caller {
            self.answer(cfg, t.op, t.path, ok);
        }
    }

    /// kubelet's answer for its call on path `v`.
    fn answer(&mut self, cfg: &Config, op: Op, v: u8, ok: bool) {
        let v = v as usize;
        self.kube[v] = match (op, self.kube[v], ok) {
            (Op::Stage, _, true) => Kube::Staged,
            // A pod that names a wrong password fails; its volume is
            // unstaged in case the stage left anything.
            (Op::Stage, _, false) if cfg.creds[v] == Cred::Wrong => {
                Kube::ToUnstage { restage: false }
            }
            (Op::Stage, _, false) => Kube::ToStage,
            (Op::Unstage, Kube::UnstageWait { restage: true }, true) => Kube::ToStage,
            (Op::Unstage, _, true) => Kube::Done,
            (Op::Unstage, Kube::UnstageWait { restage }, false) => Kube::ToUnstage { restage },
            (_, kube, _) => kube,
        };
    }

    /// A task's host call sent: it awaits the answer. A removal is
    /// recorded first (`Node::removing`).
    fn send(&mut self, i: usize, call: Call, after: After) {
        self.record_removal(i, call, true);
        self.tasks[i].pc = Pc::Await(call, after);
    }

    /// Task `i` heard its call's answer: a removal's record goes.
    fn answered(&mut self, i: usize, call: Call) {
        self.record_removal(i, call, false);
    }

    /// Writes (`pending`) or removes the `removing` record of task `i`'s
    /// `call`, if it keeps one. The host answers a map by removing a
    /// mapping that fails its check (an outage), so a stage holding the
    /// server alone records its map as a removal (`Node::map_share`).
    fn record_removal(&mut self, i: usize, call: Call, pending: bool) {
        match call {
            Call::Unmap => self.removing_share = pending,
            Call::Map { .. } if self.tasks[i].server == Hold::Exclusive => {
                self.removing_share = pending
            }
            Call::Rmdir { path } => self.removing_path[path as usize] = pending,
            Call::Map { .. } | Call::Link { .. } => {}
        }
    }

    /// Whether `call` may still land: a task awaits it, or a dead
    /// process sent it. The code waits out the settle time instead (the
    /// host ends a call within it, the assumption of `format_settle`).
    fn in_flight(&self, call: Call) -> bool {
        self.sent(|c| *c == call)
    }

    /// Whether a call on path `v` may still land.
    fn path_in_flight(&self, v: u8) -> bool {
        self.sent(|c| match *c {
            Call::Map { path, .. } | Call::Link { path } | Call::Rmdir { path } => path == v,
            Call::Unmap => false,
        })
    }

    /// Whether an unmap or a map of the share may still land.
    fn share_call_in_flight(&self) -> bool {
        self.sent(|c| matches!(c, Call::Unmap | Call::Map { .. }))
    }

    /// Whether a call `on` says of may still land.
    fn sent(&self, on: impl Fn(&Call) -> bool) -> bool {
        self.orphans.iter().any(&on)
            || self
                .tasks
                .iter()
                .any(|t| matches!(&t.pc, Pc::Await(c, _) if on(c)))
    }

    /// The stage of task `i` failed after its reference was recorded or
    /// not; what the code does next.
    fn stage_failed(&mut self, cfg: &Config, i: usize) {
        let t = self.tasks[i];
        let v = t.path as usize;
        if t.server == Hold::Shared {
            // `smb_link`: its reference goes unless the path had one,
            // and the stage goes on with the server held alone.
            if !t.recorded {
                self.refs[v] = None;
            }
            let t = &mut self.tasks[i];
            (t.server, t.alone, t.pc) = (Hold::None, true, Pc::ServerClaim);
            return;
        }
        match t.recorded {
            false => self.tasks[i].pc = Pc::Forget,
            true => self.finish(cfg, i, false),
        }
    }

    /// What the node reads of the link at `v`: whether it sees one.
    fn link_seen(&self, cfg: &Config, v: usize) -> bool {
        self.links[v] != Link::None && (cfg.mode == Mode::HostProcess || !self.outage)
    }

    fn violation(&self, cfg: &Config) -> Option<String> {
        if let Some(w) = self.pulled {
            return Some(format!(
                "(1) the mapping was removed while volume {w}, staged, linked through it"
            ));
        }
        for v in 0..self.kube.len() {
            if self.kube[v] != Kube::Staged {
                continue;
            }
            if self.links[v] == Link::Root {
                return Some(format!(
                    "(2) volume {v} staged with a link to the share's root"
                ));
            }
            if self.links[v] == Link::None {
                return Some(format!("(5) volume {v} staged, its link gone"));
            }
            if self.mapping.is_some_and(|m| m != cfg.creds[v]) {
                return Some(format!(
                    "(3) volume {v} staged over a mapping made with other credentials"
                ));
            }
        }
        if self.kube.iter().all(|k| *k == Kube::Done)
            && (self.mapping.is_some() || self.links.iter().any(|l| *l != Link::None))
        {
            return Some("(4) a link or the mapping left after every unstage answered OK".into());
        }
        None
    }
}

/// Every step from `s`, in a fixed order (traces are reproducible).
fn successors(cfg: &Config, s: &State) -> Vec<Edge> {
    let mut out = Vec::new();
    let mut push = |mut next: State, actor: Actor, what: &'static str, path: u8, fault: bool| {
        next.tasks.sort();
        next.orphans.sort();
        out.push(Edge {
            next,
            step: Step { actor, what, path },
            fault,
        });
    };
    // The host ends the calls of dead processes.
    for (k, &call) in s.orphans.iter().enumerate() {
        let path = match call {
            Call::Map { path, .. } | Call::Link { path } | Call::Rmdir { path } => path,
            Call::Unmap => 0,
        };
        let mut next = s.clone();
        next.orphans.remove(k);
        push(
            next.clone(),
            Actor::Host,
            "a dead process's call never lands",
            path,
            false,
        );
        next.apply(cfg, call);
        push(
            next,
            Actor::Host,
            "a dead process's call lands",
            path,
            false,
        );
    }
    if cfg.late == Late::AtDeath && !s.orphans.is_empty() {
        return out;
    }
    if s.outage {
        let mut next = s.clone();
        next.outage = false;
        push(next, Actor::Host, "the share's outage ends", 0, false);
    } else if s.budget.outages > 0 {
        let mut next = s.clone();
        next.outage = true;
        next.budget.outages -= 1;
        push(next, Actor::Host, "the share goes off the network", 0, true);
    }
    for p in 0..s.alive.len() {
        let mut next = s.clone();
        if !s.alive[p] {
            next.alive[p] = true;
            if cfg.reconcile {
                next.tasks
                    .push(task(p as u8, Op::Reconcile, 0, Pc::ServerClaim, false));
            }
            push(next, Actor::Proc(p as u8), "restarts", 0, false);
            continue;
        }
        if s.budget.crashes == 0 {
            continue;
        }
        // It dies: its claims go with its tasks; kubelet's calls to it
        // fail; the calls it sent end at the host later, or never.
        next.alive[p] = false;
        next.budget.crashes -= 1;
        let (mine, others): (Vec<Task>, Vec<Task>) =
            s.tasks.iter().partition(|t| t.proc == p as u8);
        next.tasks = others;
        for t in mine {
            if let Pc::Await(call, _) = t.pc {
                next.orphans.push(call);
            }
            if t.caller {
                next.answer(cfg, t.op, t.path, false);
            }
        }
        push(next, Actor::Proc(p as u8), "dies", 0, true);
    }
    for v in 0..s.kube.len() {
        kubelet_steps(cfg, s, v as u8, &mut push);
    }
    for i in 0..s.tasks.len() {
        task_steps(cfg, s, i, &mut push);
    }
    out
}

fn task(proc: u8, op: Op, path: u8, pc: Pc, caller: bool) -> Task {
    Task {
        proc,
        op,
        path,
        pc,
        path_claim: false,
        server: Hold::None,
        caller,
        recorded: false,
        own_link: false,
        alone: false,
        path_recorded: false,
        unknown: false,
    }
}

type Push<'a> = dyn FnMut(State, Actor, &'static str, u8, bool) + 'a;

fn kubelet_steps(cfg: &Config, s: &State, v: u8, push: &mut Push<'_>) {
    let call = |op, kube, push: &mut Push<'_>, what| {
        for p in 0..s.alive.len() {
            if s.alive[p] {
                let mut next = s.clone();
                next.kube[v as usize] = kube;
                next.tasks.push(task(p as u8, op, v, Pc::PathClaim, true));
                push(next, Actor::Kubelet, what, v, false);
            }
        }
    };
    // Its deadline: it stops waiting; the operation goes on.
    let give_up = |kubes: &[Kube], push: &mut Push<'_>| {
        if s.budget.drops == 0 {
            return;
        }
        let Some(i) = s.tasks.iter().position(|t| t.caller && t.path == v) else {
            return;
        };
        for &kube in kubes {
            let mut next = s.clone();
            next.budget.drops -= 1;
            next.tasks[i].caller = false;
            // A call still waiting for its path's claim is dropped with its
            // caller (`on_path` spawns the work once it holds the claim).
            if cfg.path_claim && s.tasks[i].pc == Pc::PathClaim {
                next.tasks.remove(i);
            }
            next.kube[v as usize] = kube;
            let what = match kube {
                Kube::ToStage => "drops the call at its deadline, to retry it",
                _ => "drops the call at its deadline, to unstage",
            };
            push(next, Actor::Kubelet, what, v, true);
        }
    };
    match s.kube[v as usize] {
        Kube::ToStage => call(Op::Stage, Kube::StageWait, push, "calls NodeStageVolume"),
        Kube::StageWait => give_up(&[Kube::ToStage, Kube::ToUnstage { restage: true }], push),
        Kube::Staged => {
            let mut next = s.clone();
            next.kube[v as usize] = Kube::ToUnstage { restage: false };
            push(next, Actor::Kubelet, "the pod goes", v, false);
        }
        Kube::ToUnstage { restage } => call(
            Op::Unstage,
            Kube::UnstageWait { restage },
            push,
            "calls NodeUnstageVolume",
        ),
        Kube::UnstageWait { restage } => give_up(&[Kube::ToUnstage { restage }], push),
        Kube::Done => {}
    }
}

/// The credentials other references keep, as the decisions read them.
fn kept(refs: &[Option<Cred>], skip: Option<usize>) -> Vec<SmbKept<'static>> {
    refs.iter()
        .enumerate()
        .filter(|(w, _)| Some(*w) != skip)
        .filter_map(|(_, r)| *r)
        .map(|c| SmbKept {
            user: Some(USER),
            secret: Some(c.secret()),
        })
        .collect()
}

fn task_steps(cfg: &Config, s: &State, i: usize, push: &mut Push<'_>) {
    let t = s.tasks[i];
    let v = t.path as usize;
    let actor = Actor::Proc(t.proc);
    let go = |what, fault, push: &mut Push<'_>, change: &dyn Fn(&mut State)| {
        let mut next = s.clone();
        change(&mut next);
        push(next, actor, what, t.path, fault);
    };
    let cred = cfg.creds[v];
    match t.pc {
        Pc::PathClaim => {
            let first = match t.op {
                Op::Stage => Pc::ServerClaim,
                _ => Pc::Root,
            };
            if !cfg.path_claim {
                go("starts (no path claim)", false, push, &|n| {
                    n.tasks[i].pc = first
                });
            } else if s.path_free(t.path) {
                let rmdir = Call::Rmdir { path: t.path };
                if cfg.removal_records && s.removing_path[v] && s.in_flight(rmdir) {
                    go(
                        "finds a removal of its path pending: RemovalPending",
                        false,
                        push,
                        &|n| n.finish(cfg, i, false),
                    );
                } else {
                    let change = match t.op {
                        Op::Stage => Change::Make,
                        _ => Change::Remove,
                    };
                    let age = match s.path_in_flight(t.path) {
                        true => Duration::ZERO,
                        false => SETTLE,
                    };
                    let earlier = s.path_records[v].map(|c| (Some(c), age));
                    let step = match cfg.path_records {
                        true => protocol::path_step(earlier, change, SETTLE),
                        false => PathStep::Join,
                    };
                    let claim = |n: &mut State| {
                        n.removing_path[v] &= !cfg.removal_records;
                        (n.tasks[i].path_claim, n.tasks[i].pc) = (true, first)
                    };
                    match step {
                        PathStep::Record => go(
                            "takes the path's claim, records itself",
                            false,
                            push,
                            &|n| {
                                claim(n);
                                n.path_records[v] = Some(change);
                                n.tasks[i].path_recorded = true;
                            },
                        ),
                        PathStep::Join => go(
                            "takes the path's claim, joins the earlier one",
                            false,
                            push,
                            &claim,
                        ),
                        PathStep::Pending => go(
                            "finds the opposite change pending: PathPending",
                            false,
                            push,
                            &|n| n.finish(cfg, i, false),
                        ),
                    }
                }
            }
        }
        Pc::ServerClaim => {
            let shared = t.op == Op::Stage
                && !t.alone
                && (cfg.link_only)(&kept(&s.refs, None), USER, cred.secret());
            let next_pc = match t.op {
                Op::Stage => Pc::Look,
                Op::Unstage => Pc::UnstageDecide,
                Op::Reconcile => Pc::ReconcileLook,
            };
            if !s.server_free(!shared) {
                return;
            }
            if cfg.removal_records && s.removing_share && s.share_call_in_flight() {
                go(
                    "finds a removal of the mapping pending: RemovalPending",
                    false,
                    push,
                    &|n| n.finish(cfg, i, false),
                );
                return;
            }
            let (what, hold) = match shared {
                true => ("takes the server's claim, shared (link only)", Hold::Shared),
                false => ("takes the server's claim", Hold::Exclusive),
            };
            go(what, false, push, &|n| {
                n.removing_share &= !cfg.removal_records;
                (n.tasks[i].server, n.tasks[i].pc) = (hold, next_pc)
            });
        }
        Pc::Look => look(cfg, s, i, push),
        Pc::Record => go("records its reference", false, push, &|n| {
            n.tasks[i].recorded = n.refs[v].is_some();
            n.refs[v] = Some(cred);
            n.tasks[i].pc = Pc::MapDecide;
        }),
        Pc::MapDecide => {
            let in_use = match t.server {
                // `smb_map_in_use` directly: the share is in use.
                Hold::Shared => true,
                _ => {
                    let others = match t.own_link {
                        true => 0,
                        false => s.other_users(cfg, v),
                    };
                    (cfg.in_use)(t.own_link, others)
                }
            };
            let map = Call::Map {
                path: t.path,
                link: !t.own_link,
            };
            if !in_use {
                go("sends NewSmbGlobalMapping", false, push, &|n| {
                    n.send(i, map, After::Mapped)
                });
            } else if cfg.mode == Mode::HostProcess {
                let alone = t.server == Hold::Exclusive;
                match ((cfg.in_use_call)(s.mapping.is_some(), alone), t.own_link) {
                    (SmbInUseCall::Link, true) => {
                        go("finds the mapping there", false, push, &|n| {
                            n.tasks[i].pc = Pc::Check
                        })
                    }
                    (SmbInUseCall::Link, false) => {
                        go("links over the mapping", false, push, &|n| {
                            n.send(i, Call::Link { path: t.path }, After::Mapped)
                        })
                    }
                    (SmbInUseCall::Map, _) => go(
                        "sends NewSmbGlobalMapping (no mapping)",
                        false,
                        push,
                        &|n| n.send(i, map, After::Mapped),
                    ),
                    (SmbInUseCall::Alone, _) => go(
                        "finds no mapping: holds the server alone",
                        false,
                        push,
                        &|n| n.stage_failed(cfg, i),
                    ),
                }
            } else if (cfg.may_send)(true, !s.outage) {
                go(
                    "reads the share reachable, sends NewSmbGlobalMapping",
                    false,
                    push,
                    &|n| n.send(i, map, After::Mapped),
                );
            } else {
                go(
                    "reads the share unreachable: UNAVAILABLE",
                    false,
                    push,
                    &|n| n.stage_failed(cfg, i),
                );
            }
        }
        Pc::Await(call, after) => {
            go("its call lands and is answered", false, push, &|n| {
                let ok = n.apply(cfg, call);
                n.answered(i, call);
                resume(cfg, n, i, after, ok);
            });
            if s.budget.lost > 0 {
                go("its call lands, the answer is lost", true, push, &|n| {
                    n.budget.lost -= 1;
                    n.apply(cfg, call);
                    n.tasks[i].unknown = true;
                    resume(cfg, n, i, after, false);
                });
                go("its call is lost before the host", true, push, &|n| {
                    n.budget.lost -= 1;
                    n.tasks[i].unknown = true;
                    resume(cfg, n, i, after, false);
                });
            }
        }
        Pc::Check => {
            if s.outage {
                // `smb_unreached`: waits out `smb_settle`, fails
                // UNAVAILABLE, removes the link only if it made it.
                go(
                    "finds the share unreachable: UNAVAILABLE",
                    false,
                    push,
                    &|n| {
                        if !t.own_link {
                            n.links[v] = Link::None;
                        }
                        n.stage_failed(cfg, i);
                    },
                );
            } else if s.links[v] != Link::None {
                go("reads its link: staged", false, push, &|n| {
                    n.finish(cfg, i, true)
                });
            } else {
                go(
                    "reads no link: the directory is missing",
                    false,
                    push,
                    &|n| n.stage_failed(cfg, i),
                );
            }
        }
        Pc::Forget => {
            if s.link_seen(cfg, v) && !s.outage {
                go(
                    "keeps the reference of its linked path",
                    false,
                    push,
                    &|n| n.finish(cfg, i, false),
                );
            } else if (cfg.may_unmap)(s.other_users(cfg, v)) {
                go("forgets: sends RemoveSmbGlobalMapping", false, push, &|n| {
                    n.send(i, Call::Unmap, After::Forgot)
                });
            } else {
                go(
                    "forgets its reference (the mapping in use)",
                    false,
                    push,
                    &|n| {
                        n.refs[v] = None;
                        n.finish(cfg, i, false);
                    },
                );
            }
        }
        Pc::Root => {
            let smb =
                s.refs[v].is_some() || (cfg.mode == Mode::HostProcess && s.links[v] != Link::None);
            if smb {
                go("finds the path a share's", false, push, &|n| {
                    n.tasks[i].pc = Pc::ServerClaim
                });
            } else {
                go(
                    "finds no share: the disk unstage, Rmdir",
                    false,
                    push,
                    &|n| n.send(i, Call::Rmdir { path: t.path }, After::PlainUnlinked),
                );
            }
        }
        Pc::UnstageDecide => {
            if (cfg.may_unmap)(s.other_users(cfg, v)) {
                go(
                    "sends RemoveSmbGlobalMapping (last user)",
                    false,
                    push,
                    &|n| n.send(i, Call::Unmap, After::Unmapped),
                );
            } else {
                go(
                    "keeps the mapping (in use), sends Rmdir",
                    false,
                    push,
                    &|n| n.send(i, Call::Rmdir { path: t.path }, After::Unlinked),
                );
            }
        }
        Pc::ReconcileLook => {
            if s.refs[v].is_none() {
                go("reconcile: no reference", false, push, &|n| {
                    next_reference(n, i)
                });
                return;
            }
            let read = match cfg.mode {
                Mode::HostProcess => match s.links[v] {
                    Link::None => SmbPathRead::HostNoLink,
                    _ => SmbPathRead::HostLink { to_root: true },
                },
                Mode::Proxy => SmbPathRead::Proxy(match (s.links[v], s.outage) {
                    (Link::None, _) => SmbProxyShows::Nothing,
                    (_, false) => SmbProxyShows::Link,
                    (_, true) => SmbProxyShows::Other,
                }),
            };
            if (cfg.kept)(read) {
                go("reconcile: keeps the reference", false, push, &|n| {
                    next_reference(n, i)
                });
            } else if (cfg.may_unmap)(s.other_users(cfg, v)) {
                go(
                    "reconcile: sends RemoveSmbGlobalMapping",
                    false,
                    push,
                    &|n| n.send(i, Call::Unmap, After::Reconciled),
                );
            } else {
                go("reconcile: drops the reference", false, push, &|n| {
                    n.refs[v] = None;
                    next_reference(n, i);
                });
            }
        }
    }
}

/// A stage holding the server reads its path and the credentials.
fn look(cfg: &Config, s: &State, i: usize, push: &mut Push<'_>) {
    let t = s.tasks[i];
    let v = t.path as usize;
    let actor = Actor::Proc(t.proc);
    let go = |what, push: &mut Push<'_>, change: &dyn Fn(&mut State)| {
        let mut next = s.clone();
        change(&mut next);
        push(next, actor, what, t.path, false);
    };
    let seen = s.link_seen(cfg, v);
    // A link the proxy does not see through is the volume's where its
    // reference records the share (`smb_link_unseen`).
    let unseen = !seen && s.links[v] != Link::None && s.refs[v].is_some();
    if t.server == Hold::Shared {
        // `smb_link`: anything at the path is left to the stage that
        // holds the server alone.
        if seen || unseen {
            go("finds a link: holds the server alone", push, &|n| {
                let t = &mut n.tasks[i];
                (t.server, t.alone, t.pc) = (Hold::None, true, Pc::ServerClaim)
            });
        } else {
            go("finds the path free", push, &|n| {
                n.links[v] = Link::None;
                n.tasks[i].pc = Pc::Record;
            });
        }
        return;
    }
    let reaches = match cfg.mode {
        Mode::HostProcess => Some(s.links[v] == Link::Dir),
        Mode::Proxy => None,
    };
    if (seen || unseen) && (cfg.link_found)(false, reaches) != SmbLinkFound::Accept {
        go("finds a link elsewhere: PathInUse", push, &|n| {
            n.finish(cfg, i, false)
        });
        return;
    }
    let own_link = seen || unseen;
    let cred = cfg.creds[v];
    if (cfg.reuse)(&kept(&s.refs, Some(v)), USER, cred.secret()) != SmbReuse::Yes {
        go("finds other credentials: refused", push, &|n| {
            n.finish(cfg, i, false)
        });
        return;
    }
    let what = match own_link {
        true => "accepts the link at its path",
        false => "finds the path free",
    };
    go(what, push, &|n| {
        if !own_link {
            // A link no one sees is removed as an empty directory.
            n.links[v] = Link::None;
        }
        n.tasks[i].own_link = own_link;
        n.tasks[i].pc = Pc::Record;
    });
}

/// Reconcile's next reference, the server released between them.
fn next_reference(n: &mut State, i: usize) {
    let t = &mut n.tasks[i];
    t.server = Hold::None;
    t.path += 1;
    t.pc = Pc::ServerClaim;
    if t.path as usize == n.refs.len() {
        n.tasks.remove(i);
    }
}

/// Task `i` goes on after its host call's outcome.
fn resume(cfg: &Config, n: &mut State, i: usize, after: After, ok: bool) {
    let v = n.tasks[i].path as usize;
    match (after, ok) {
        (After::Mapped, true) => n.tasks[i].pc = Pc::Check,
        (After::Mapped, false) => n.stage_failed(cfg, i),
        (After::Forgot, ok) => {
            // The reference goes only once the mapping has.
            if ok {
                n.refs[v] = None;
            }
            n.finish(cfg, i, false);
        }
        (After::Unmapped, true) => n.send(i, Call::Rmdir { path: v as u8 }, After::Unlinked),
        (After::Unlinked, true) => {
            n.refs[v] = None;
            n.finish(cfg, i, true);
        }
        (After::PlainUnlinked, ok) => n.finish(cfg, i, ok),
        (After::Unmapped | After::Unlinked, false) => n.finish(cfg, i, false),
        (After::Reconciled, true) => {
            n.refs[v] = None;
            next_reference(n, i);
        }
        (After::Reconciled, false) => {
            n.tasks.remove(i);
        }
    }
}

/// What an exploration found.
struct Report {
    states: usize,
    edges: usize,
    elapsed: Duration,
    /// The first violation (a shortest trace to it: the search is
    /// breadth-first) and its steps.
    violation: Option<(String, Vec<String>)>,
}

/// Breadth-first over every state reachable from the initial one, each
/// once; then liveness over the graph it built.
fn explore(cfg: &Config) -> Report {
    let started = Instant::now();
    let mut index: HashMap<State, u32> = HashMap::new();
    let mut states: Vec<State> = Vec::new();
    let mut parent: Vec<Option<(u32, Step)>> = Vec::new();
    // Fault-free predecessors, for liveness.
    let mut back: Vec<Vec<u32>> = Vec::new();
    let mut queue = VecDeque::new();
    let mut edges = 0;
    let initial = State::initial(cfg);
    index.insert(initial.clone(), 0);
    states.push(initial);
    parent.push(None);
    back.push(Vec::new());
    queue.push_back(0u32);
    let report = |states: &[State], edges, violation| Report {
        states: states.len(),
        edges,
        elapsed: started.elapsed(),
        violation,
    };
    while let Some(i) = queue.pop_front() {
        let current = states[i as usize].clone();
        for edge in successors(cfg, &current) {
            edges += 1;
            let j = match index.get(&edge.next) {
                Some(&j) => j,
                None => {
                    let j = states.len() as u32;
                    assert!(states.len() < MAX_STATES, "{}: unbounded", cfg.name);
                    let why = edge.next.violation(cfg);
                    index.insert(edge.next.clone(), j);
                    states.push(edge.next);
                    parent.push(Some((i, edge.step)));
                    back.push(Vec::new());
                    if let Some(why) = why {
                        let trace = trace(&parent, &states, j);
                        return report(&states, edges, Some((why, trace)));
                    }
                    queue.push_back(j);
                    j
                }
            };
            if !edge.fault {
                back[j as usize].push(i);
            }
        }
    }
    if !cfg.liveness {
        return report(&states, edges, None);
    }
    // Liveness: the states from which fault-free steps reach one where
    // kubelet is done with every path, found backwards from those.
    let mut live: Vec<bool> = states
        .iter()
        .map(|s| s.kube.iter().all(|k| *k == Kube::Done))
        .collect();
    let mut work: Vec<u32> = (0..states.len() as u32)
        .filter(|&i| live[i as usize])
        .collect();
    while let Some(j) = work.pop() {
        for &i in &back[j as usize] {
            if !live[i as usize] {
                live[i as usize] = true;
                work.push(i);
            }
        }
    }
    // Numbered breadth-first: the first stuck state has a shortest trace.
    let violation = live.iter().position(|&l| !l).map(|i| {
        let why = "liveness: once faults stop, a stage or an unstage never answers OK";
        (why.to_string(), trace(&parent, &states, i as u32))
    });
    report(&states, edges, violation)
}

/// The steps from the initial state to state `i`, and the state reached.
fn trace(parent: &[Option<(u32, Step)>], states: &[State], i: u32) -> Vec<String> {
    let mut steps = Vec::new();
    let mut at = i;
    while let Some((from, step)) = parent[at as usize] {
        let who = match step.actor {
            Actor::Proc(p) => format!("P{p}"),
            Actor::Kubelet => "kubelet".into(),
            Actor::Host => "host".into(),
        };
        steps.push(format!("{who}: {} (path {})", step.what, step.path));
        at = from;
    }
    steps.reverse();
    let end = &states[i as usize];
    steps.push(format!(
        "  end: mapping {:?}, outage {}, links {:?}, references {:?}, kubelet {:?}, tasks {:?}, late calls {:?}",
        end.mapping, end.outage, end.links, end.refs, end.kube, end.tasks, end.orphans
    ));
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use Cred::*;
    use Mode::*;

    fn run(cfg: &Config) -> Report {
        let r = explore(cfg);
        println!(
            "{}: {} states, {} transitions, {:.2?}",
            cfg.name, r.states, r.edges, r.elapsed
        );
        r
    }

    fn assert_holds(cfg: &Config) -> usize {
        let r = run(cfg);
        if let Some((why, trace)) = r.violation {
            panic!("{}: {why}\n{}", cfg.name, trace.join("\n"));
        }
        r.states
    }

    /// Runs a variant and asserts the checker finds `expected` in a
    /// shortest trace of `steps` steps.
    fn assert_found(cfg: &Config, expected: &str, steps: usize) {
        let (why, trace) = run(cfg)
            .violation
            .unwrap_or_else(|| panic!("{}: no violation found", cfg.name));
        println!("  found {why} in {} steps:", trace.len() - 1);
        for step in &trace {
            println!("    {step}");
        }
        assert!(why.contains(expected), "{}: {why}", cfg.name);
        assert_eq!(trace.len() - 1, steps, "{}: trace length", cfg.name);
    }

    /// The configurations CI runs (well under 2 s together in a debug
    /// build): two processes, two volumes of one share, one fault kind or
    /// two at a time.
    fn small() -> Vec<Config> {
        vec![
            Config::new(
                "HostProcess: 1 death",
                HostProcess,
                vec![Good, Good],
                budget(1, 0, 0, 0),
            ),
            Config::new(
                "HostProcess: 1 lost call, 1 outage",
                HostProcess,
                vec![Good, Good],
                budget(0, 0, 1, 1),
            ),
            Config::new(
                "HostProcess: 1 drop, a wrong password",
                HostProcess,
                vec![Good, Wrong],
                budget(0, 1, 0, 0),
            ),
            Config::new(
                "proxy: 1 lost call",
                Proxy,
                vec![Good, Good],
                budget(0, 0, 1, 0),
            ),
        ]
    }

    #[test]
    fn small_configurations_hold_every_invariant() {
        for cfg in small() {
            assert_holds(&cfg);
        }
    }

    #[test]
    #[ignore = "larger configurations: run with --include-ignored"]
    fn larger_configurations_hold_every_invariant() {
        let configs = [
            Config::new(
                "proxy: 1 death, 1 lost call",
                Proxy,
                vec![Good, Good],
                budget(1, 0, 1, 0),
            ),
            Config::new(
                "HostProcess: 1 death, 1 outage",
                HostProcess,
                vec![Good, Good],
                budget(1, 0, 0, 1),
            ),
            Config::new(
                "HostProcess: 1 drop, 1 outage",
                HostProcess,
                vec![Good, Good],
                budget(0, 1, 0, 1),
            ),
            Config::new(
                "HostProcess: 1 death, 1 drop",
                HostProcess,
                vec![Good, Good],
                budget(1, 1, 0, 0),
            ),
            Config::new(
                "HostProcess: 1 death, a wrong password, 1 outage",
                HostProcess,
                vec![Good, Wrong],
                budget(1, 0, 0, 1),
            ),
            Config::new(
                "HostProcess: 1 of each fault",
                HostProcess,
                vec![Good, Good],
                budget(1, 1, 1, 1),
            ),
            Config::new(
                "proxy: 2 deaths, 1 drop, 1 lost call",
                Proxy,
                vec![Good, Good],
                budget(2, 1, 1, 0),
            ),
        ];
        // A dead process's calls landing at any later step.
        let late = [
            Config::new(
                "HostProcess: late calls, 1 death, 1 outage",
                HostProcess,
                vec![Good, Good],
                budget(1, 0, 0, 1),
            ),
            Config::new(
                "HostProcess: late calls, 1 death, 1 drop",
                HostProcess,
                vec![Good, Good],
                budget(1, 1, 0, 0),
            ),
            Config::new(
                "HostProcess: late calls, 2 deaths",
                HostProcess,
                vec![Good, Good],
                budget(2, 0, 0, 0),
            ),
            Config::new(
                "proxy: late calls, 1 death, 1 lost call",
                Proxy,
                vec![Good, Good],
                budget(1, 0, 1, 0),
            ),
        ]
        .map(|mut cfg| {
            cfg.late = Late::Any;
            cfg
        });
        for cfg in configs.into_iter().chain(late) {
            assert_holds(&cfg);
        }
    }

    /// Finding 5 (issue 42), fixed: without the path's claim a dropped
    /// stage lands after kubelet's unstage of its path answered OK, and
    /// leaves its link and the mapping; with it, it never does.
    #[test]
    fn finding_5_a_dropped_stage_never_lands_after_its_unstage() {
        let cfg = Config::new(
            "finding 5: 1 volume, 1 drop",
            HostProcess,
            vec![Good],
            budget(0, 1, 0, 0),
        );
        assert_holds(&cfg);
        let mut before = cfg.clone();
        before.name = "finding 5: no path claim";
        before.path_claim = false;
        assert_found(&before, "(4)", 24);
    }

    /// An unstage that removes the mapping whoever uses it.
    #[test]
    fn an_unmap_of_a_mapping_in_use_is_found() {
        let mut cfg = Config::new(
            "broken: unmap always",
            HostProcess,
            vec![Good, Good],
            budget(0, 0, 0, 0),
        );
        cfg.may_unmap = |_| true;
        assert_found(&cfg, "(1)", 23);
    }

    /// Finding 13's shape: `smb_reconcile` reading a link the proxy does
    /// not see through in an outage as no link.
    #[test]
    fn reconcile_reading_an_outage_as_no_link_is_found() {
        let cfg = Config::new(
            "proxy: 1 volume, 1 death, 1 outage",
            Proxy,
            vec![Good],
            budget(1, 0, 0, 1),
        );
        assert_holds(&cfg);
        let mut broken = cfg.clone();
        broken.name = "broken: outage read as no link";
        broken.kept = |read| match read {
            SmbPathRead::Proxy(SmbProxyShows::Other) => false,
            read => protocol::smb_reference_kept(read),
        };
        assert_found(&broken, "(1)", 14);
    }

    /// Finding 11's shape: account names compared, not credentials.
    #[test]
    fn a_wrong_password_riding_a_mapping_is_found() {
        let mut cfg = Config::new(
            "broken: passwords not compared",
            HostProcess,
            vec![Good, Wrong],
            budget(0, 0, 0, 0),
        );
        cfg.reuse = |_, _, _| SmbReuse::Yes;
        assert_found(&cfg, "(3)", 16);
    }

    /// Finding 10's shape: a link to the share's root left at the path by
    /// an old release is taken for the stage. With the real decision the
    /// path is refused for good (no liveness: by design, until an
    /// administrator removes the link).
    #[test]
    fn a_link_to_the_root_taken_for_the_stage_is_found() {
        let mut cfg = Config::new(
            "HostProcess: a link to the root left",
            HostProcess,
            vec![Good],
            budget(1, 1, 0, 0),
        );
        cfg.links = vec![Link::Root];
        cfg.liveness = false;
        assert_holds(&cfg);
        cfg.name = "broken: any link accepted";
        cfg.link_found = |_, _| SmbLinkFound::Accept;
        assert_found(&cfg, "(2)", 8);
    }

    /// Finding 12's shape: a second volume's stage sends
    /// `NewSmbGlobalMapping` on a mapping in use; in an outage the host
    /// removes it.
    #[test]
    fn a_map_sent_over_a_mapping_in_use_is_found() {
        let mut cfg = Config::new(
            "broken: in use only by its own link",
            HostProcess,
            vec![Good, Good],
            budget(0, 0, 0, 1),
        );
        cfg.in_use = |own_link, _| own_link;
        assert_found(&cfg, "(1)", 22);
    }

    /// Found by this model and fixed with it: two link-only stages (the
    /// server shared) that both found no mapping both sent
    /// `NewSmbGlobalMapping`; the second found the first's and removed it
    /// in an outage under the volume just staged.
    #[test]
    fn two_link_only_stages_mapping_at_once_are_found() {
        // One process that dies and restarts is enough, and small enough
        // for CI to check the fix holds.
        let mut cfg = Config::new(
            "HostProcess: 1 process, 1 death, 1 outage",
            HostProcess,
            vec![Good, Good],
            budget(1, 0, 0, 1),
        );
        cfg.procs = 1;
        assert_holds(&cfg);
        cfg.name = "broken: link-only stages map";
        cfg.in_use_call = |there, _| match there {
            true => SmbInUseCall::Link,
            false => SmbInUseCall::Map,
        };
        assert_found(&cfg, "(1)", 23);
    }

    /// OPEN (docs/safety.md, "The window the proxy leaves open"): the
    /// proxy reads the share reachable, then sends `NewSmbGlobalMapping`,
    /// whose own validity check removes the mapping in use when an outage
    /// starts between the two. The proxy has no call without the check.
    #[test]
    fn open_the_proxys_window_between_read_and_map_is_found() {
        let cfg = Config::new(
            "open: proxy, 1 outage",
            Proxy,
            vec![Good, Good],
            budget(0, 0, 0, 1),
        );
        assert_found(&cfg, "(1)", 16);
    }

    /// A host call a dead process sent that lands later than the next
    /// operation (csi-proxy ends no host work with its caller): an
    /// unstage's `RemoveSmbGlobalMapping` outlives its process, a second
    /// volume links over the mapping still there, the removal lands under
    /// it. Fixed by the `removing` records (`removal.rs`): while the
    /// removal may land, the share's server claim is refused.
    #[test]
    fn a_dead_process_removal_landing_late_is_waited_for() {
        let mut cfg = Config::new(
            "HostProcess: late calls, 1 death",
            HostProcess,
            vec![Good, Good],
            budget(1, 0, 0, 0),
        );
        cfg.late = Late::Any;
        assert_holds(&cfg);
        let mut proxy = cfg.clone();
        proxy.name = "proxy: late calls, 1 death";
        proxy.mode = Proxy;
        assert_holds(&proxy);
        let mut broken = cfg.clone();
        broken.name = "broken: no removal records";
        broken.removal_records = false;
        assert_found(&broken, "(1)", 24);
        // The `path` records guard the calls that make: without them a
        // dead process's late link lands after its path's unstage.
        cfg.name = "broken: no path records";
        cfg.path_records = false;
        assert_found(&cfg, "(4)", 38);
    }
}
