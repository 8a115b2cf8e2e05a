//! An exhaustive model check of the volume format protocol (issue 42,
//! item 8), over the code's own decisions: every step in which a plugin
//! process decides about a format asks [`protocol::format_step`] and
//! [`protocol::may_format`], the functions `host_work` asks, and every
//! step deciding about an online disk's empty listing asks
//! [`protocol::arrival_step`], as `volumes` does.
//!
//! The model is the protocol as `host_work` runs it. A process staging a
//! volume lists its disk (an offline disk: it records the online, then
//! sends `SetDiskState(online)`; proxy mode: a disk that lists no volume
//! is sent `PartitionDisk`, once its volumes' arrival time has passed if
//! this node brought it online, and a volume listed after it gets a
//! partition licence),
//! takes the volume's claim (host-wide, exclusive, released by the OS when
//! its holder dies), reads the `format` record and asks the host whether
//! the volume is formatted, and does what `format_step` says: `Formatted`,
//! forget the record and the licence and mount; `Pending`, give up
//! (`FormatPending`, kubelet retries); `Check`, ask `may_format` (a
//! signature read in HostProcess mode, the licence in proxy mode), record
//! the format as sent, send `FormatVolume`; on an answer the record goes
//! (the licence too on success), an unknown outcome leaves it.
//!
//! Around it: processes die at any step (the claim is released, memory is
//! lost, records stay, a format at the host still lands or does not), dead
//! ones restart and retry; requests are lost before the host, answers
//! after it; a caller gives up on a format still running (a timeout, a
//! proxy restart: both are a request whose outcome is unknown); formats at
//! the host land late; pods write to mounted volumes; a disk's volumes
//! arrive some time after it comes online. Time is two assumptions: a
//! format sent ends (lands or is dropped) within the settle time, and a
//! disk's volumes are listed within the arrival time of its online's
//! answer. So "settle passes for volume V" is a step of its own, enabled
//! only when no format of V can still land; before it a `Sent` record reads
//! as elapsed 0, after it as elapsed `SETTLE`. Likewise "the volumes'
//! arrival time passes", enabled only when nothing is left to arrive and
//! no online is on its way to the host.
//!
//! Not modelled: the disk's stage claim around the whole stage (it only
//! removes interleavings, so what holds here holds with it), the format
//! permits, the clock going back (`elapsed: None`, always `Pending`),
//! unreadable records (they fail closed before any decision).
//!
//! Checked in every reachable state: (1) no format lands on a volume that
//! holds data (its own or a pod's); (2) at most one format lands per
//! volume; (3) a mounted volume is formatted. And liveness: from every
//! reachable state, with faults stopped (no crash, no lost request or
//! answer, no caller giving up, no failed format; processes still restart),
//! a state where every stageable volume is mounted can be reached.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use super::protocol::{self, ArrivalStep, FormatRecord, FormatStep, OnlinedRecord};

/// The settle time given to the decisions: only elapsed times below it
/// (0) and at it are ever passed.
const SETTLE: Duration = Duration::from_secs(600);
/// The arrival time given to the decisions, likewise.
const ARRIVAL: Duration = Duration::from_secs(5);
/// An exploration bigger than this is a model gone unbounded.
const MAX_STATES: usize = 20_000_000;

type Decide = fn(FormatRecord, bool, Duration) -> FormatStep;
type MayFormat = fn(Option<bool>, bool) -> bool;
type Arrival = fn(OnlinedRecord, Duration, Duration, Duration) -> ArrivalStep;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Through csi-proxy: no sectors read, formats only under a licence.
    Proxy,
    /// HostProcess: the volume's first sectors are read for a signature.
    HostProcess,
}

/// What is on a volume, as the host holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Content {
    Blank,
    /// A file system Windows does not show (ext4, locked BitLocker): it
    /// reads unformatted; HostProcess mode finds a signature.
    HoldsData,
    Formatted,
    /// Formatted, mounted, and a pod wrote to it.
    PodData,
}

/// The durable `format` record of a volume.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Record {
    None,
    /// `settled`: the settle time has passed since it was written.
    Sent {
        settled: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Volume {
    content: Content,
    /// `ListVolumesOnDisk` shows it (false: a disk with no partition, an
    /// offline disk, or an online one whose volume has not arrived yet).
    listed: bool,
    /// Its disk is offline (Windows' SAN policy): it lists no volume,
    /// whatever it holds.
    offline: bool,
    /// The durable `onlined` record of its disk: `Some(passed)`, this
    /// node brought it online, and `passed` once the volumes' arrival
    /// time has.
    onlined: Option<bool>,
    /// The durable `partition` record (proxy mode's licence to format).
    licence: bool,
    /// The durable `partitioning` intent of its disk: a `PartitionDisk`
    /// about to be sent or sent with its outcome unknown.
    intent: bool,
    record: Record,
    /// The process holding the volume's claim.
    claim: Option<u8>,
    /// Formats at the host that no live caller waits for.
    orphans: u8,
    /// Formats that landed, over the run (saturating at 2).
    landings: u8,
    /// A format landed on data (invariant 1, kept once it happened).
    wiped: bool,
    mounted: bool,
}

/// Where a plugin process is in staging volume `.0` (volumes are staged
/// in order; a refused one is left to kubelet, the next is staged).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Pc {
    /// Reads the staging path and lists the disk's volumes.
    Stage(u8),
    /// The disk is offline: records the online (`onlined`).
    Online(u8),
    /// Sends `SetDiskState(online)`.
    OnlineSend(u8),
    /// Proxy mode, the disk listed no volume: `PartitionDisk`.
    Partition(u8),
    /// Lists the volumes again; one listed now is licensed as this node's.
    Relist(u8),
    /// Waits for the volume's claim.
    Claim(u8),
    /// Claim held: reads the record and the host, asks `format_step`.
    Decide(u8),
    /// `may_format` said yes: records the format as sent.
    Record(u8),
    /// Sends `FormatVolume`.
    Send(u8),
    /// The format is at the host; the caller waits for its answer.
    Awaiting(u8),
    /// The host answered: landed (true) or failed with no effect.
    Answered(u8, bool),
    /// Its claim released, mounts the volume.
    Mount(u8),
    Done,
    Dead,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    vols: Vec<Volume>,
    procs: Vec<Pc>,
    crashes_left: u8,
}

#[derive(Clone)]
struct Config {
    name: &'static str,
    mode: Mode,
    procs: u8,
    volumes: Vec<Volume>,
    /// Process deaths allowed in a run (a dead process may restart).
    crashes: u8,
    /// Whether the claim is taken (false: a broken variant).
    claims: bool,
    /// Whether proxy mode records its `partitioning` intent (false: the
    /// code before finding 4's fix).
    intents: bool,
    /// What a stage does with an online disk's empty listing: the code's
    /// [`protocol::arrival_step`] (a broken variant: always trust it, the
    /// code before finding 7's fix).
    arrival: Arrival,
    /// Whether someone other than the node's processes (an
    /// administrator) may bring an offline disk online, leaving no record.
    someone_onlines: bool,
    decide: Decide,
    may: MayFormat,
}

fn volume(content: Content, listed: bool, licence: bool) -> Volume {
    Volume {
        content,
        listed,
        offline: false,
        onlined: None,
        licence,
        intent: false,
        record: Record::None,
        claim: None,
        orphans: 0,
        landings: 0,
        wiped: false,
        mounted: false,
    }
}

/// A blank volume; `licensed`: proxy mode's partition record is there.
fn blank(licensed: bool) -> Volume {
    volume(Content::Blank, true, licensed)
}
fn holds_data() -> Volume {
    volume(Content::HoldsData, true, false)
}
fn formatted() -> Volume {
    volume(Content::Formatted, true, false)
}
/// A new disk: no partition, so no volume listed (proxy mode partitions).
fn new_disk() -> Volume {
    volume(Content::Blank, false, false)
}
/// An offline disk holding data: its volume is listed only once it has
/// arrived, some time after the disk comes online (this node's online,
/// its answer lost or not; with `someone_onlines`, an administrator's).
fn offline_data() -> Volume {
    Volume {
        offline: true,
        ..volume(Content::HoldsData, false, false)
    }
}
/// A new disk Windows' SAN policy left offline.
fn offline_new_disk() -> Volume {
    Volume {
        offline: true,
        ..new_disk()
    }
}

impl Config {
    fn new(name: &'static str, mode: Mode, procs: u8, volumes: Vec<Volume>, crashes: u8) -> Self {
        Config {
            name,
            mode,
            procs,
            volumes,
            crashes,
            claims: true,
            intents: true,
            arrival: protocol::arrival_step,
            someone_onlines: false,
            decide: protocol::format_step,
            may: protocol::may_format,
        }
    }

    /// Volumes every fault-free continuation must stage: blank ones the
    /// node may format (proxy mode: licensed, or a new disk it partitions).
    fn stageable(&self) -> Vec<bool> {
        self.volumes
            .iter()
            .map(|v| {
                v.content == Content::Blank
                    && (self.mode == Mode::HostProcess || v.licence || !v.listed)
            })
            .collect()
    }
}

/// A step of a trace.
#[derive(Clone, Copy, Debug)]
struct Step {
    /// The process taking it; `None`: the host or the world.
    actor: Option<u8>,
    what: &'static str,
    vol: u8,
}

struct Edge {
    next: State,
    step: Step,
    /// A fault: not taken once faults stop (liveness).
    fault: bool,
}

impl State {
    fn initial(cfg: &Config) -> Self {
        State {
            vols: cfg.volumes.clone(),
            procs: vec![Pc::Stage(0); cfg.procs as usize],
            crashes_left: cfg.crashes,
        }
    }

    fn release(&mut self, p: usize) {
        for v in &mut self.vols {
            if v.claim == Some(p as u8) {
                v.claim = None;
            }
        }
    }

    /// A format ends at the host with an NTFS file system.
    fn land(&mut self, v: usize) {
        let vol = &mut self.vols[v];
        if matches!(vol.content, Content::HoldsData | Content::PodData) {
            vol.wiped = true;
        }
        vol.content = Content::Formatted;
        vol.landings = (vol.landings + 1).min(2);
    }

    /// The stage after volume `v`'s.
    fn after(&self, v: u8) -> Pc {
        match (v as usize) + 1 < self.vols.len() {
            true => Pc::Stage(v + 1),
            false => Pc::Done,
        }
    }

    /// Whether a format of `v` may still land: the settle time cannot
    /// pass before it has ended.
    fn format_live(&self, v: usize) -> bool {
        self.vols[v].orphans > 0
            || self
                .procs
                .iter()
                .any(|pc| matches!(pc, Pc::Send(w) | Pc::Awaiting(w) if *w as usize == v))
    }

    fn violation(&self) -> Option<String> {
        for (v, vol) in self.vols.iter().enumerate() {
            if vol.wiped {
                return Some(format!("(1) a format landed on volume {v} holding data"));
            }
            if vol.landings > 1 {
                return Some(format!("(2) volume {v} formatted twice"));
            }
            if vol.mounted && !matches!(vol.content, Content::Formatted | Content::PodData) {
                return Some(format!("(3) volume {v} mounted unformatted"));
            }
        }
        None
    }
}

/// Every step from `s`, in a fixed order (traces are reproducible).
fn successors(cfg: &Config, s: &State) -> Vec<Edge> {
    let mut out = Vec::new();
    for p in 0..s.procs.len() {
        process_steps(cfg, s, p, &mut out);
    }
    for v in 0..s.vols.len() {
        let world = |what, change: &dyn Fn(&mut Volume)| {
            let mut next = s.clone();
            change(&mut next.vols[v]);
            let step = Step {
                actor: None,
                what,
                vol: v as u8,
            };
            Edge {
                next,
                step,
                fault: false,
            }
        };
        let vol = &s.vols[v];
        if vol.orphans > 0 {
            let mut edge = world("a format sent earlier ends without effect", &|vol| {
                vol.orphans -= 1
            });
            out.push(edge);
            edge = world("a format sent earlier lands", &|vol| vol.orphans -= 1);
            edge.next.land(v);
            out.push(edge);
        }
        if vol.record == (Record::Sent { settled: false }) && !s.format_live(v) {
            out.push(world("the settle time passes", &|vol| {
                vol.record = Record::Sent { settled: true }
            }));
        }
        if vol.mounted && vol.content == Content::Formatted {
            out.push(world("a pod writes to it", &|vol| {
                vol.content = Content::PodData
            }));
        }
        // Volumes arrive some time after their disk comes online; the
        // arrival time passes only once nothing is left to arrive (the
        // time is the assumption: an arrival ends within it).
        let arriving = vol.content == Content::HoldsData && !vol.listed && !vol.offline;
        if arriving {
            out.push(world("its volume arrives (listed)", &|vol| {
                vol.listed = true
            }));
        }
        // Nor while an online is on its way to the host: its time is
        // counted from the answer (an unanswered one is given the settle
        // time of a call that may still land first).
        let online_live = s
            .procs
            .iter()
            .any(|pc| matches!(pc, Pc::OnlineSend(w) if *w as usize == v));
        if vol.onlined == Some(false) && !arriving && !online_live {
            out.push(world("the volumes' arrival time passes", &|vol| {
                vol.onlined = Some(true)
            }));
        }
        if cfg.someone_onlines && vol.offline {
            out.push(world("an administrator brings the disk online", &|vol| {
                vol.offline = false
            }));
        }
    }
    out
}

/// The steps of process `p`.
fn process_steps(cfg: &Config, s: &State, p: usize, out: &mut Vec<Edge>) {
    let pc = s.procs[p];
    let mut go = |what: &'static str, fault: bool, v: u8, change: &dyn Fn(&mut State)| {
        let mut next = s.clone();
        change(&mut next);
        let step = Step {
            actor: Some(p as u8),
            what,
            vol: v,
        };
        out.push(Edge { next, step, fault });
    };
    // A process dies at any step: its claim goes with it (the OS), its
    // memory too; a format it waited for stays at the host.
    if pc != Pc::Dead && s.crashes_left > 0 {
        go("dies", true, 0, &|n| {
            n.release(p);
            if let Pc::Awaiting(v) = pc {
                n.vols[v as usize].orphans += 1;
            }
            n.procs[p] = Pc::Dead;
            n.crashes_left -= 1;
        });
    }
    let set = |n: &mut State, pc: Pc| n.procs[p] = pc;
    // A failed stage: the claim released, kubelet retries it.
    let retry = |n: &mut State, v: u8| {
        n.release(p);
        n.procs[p] = Pc::Stage(v);
    };
    match pc {
        Pc::Dead => go("restarts and retries the stages", false, 0, &|n| {
            set(n, Pc::Stage(0))
        }),
        Pc::Done => {}
        Pc::Stage(v) => {
            let vol = &s.vols[v as usize];
            if vol.mounted {
                go("finds the volume staged", false, v, &|n| set(n, n.after(v)));
            } else if vol.listed && vol.intent && !vol.licence {
                // The intent licenses what its PartitionDisk may have made.
                go("lists a volume, its intent licenses it", false, v, &|n| {
                    let vol = &mut n.vols[v as usize];
                    (vol.licence, vol.intent) = (true, false);
                    set(n, Pc::Claim(v))
                });
            } else if vol.listed {
                go("lists the volume", false, v, &|n| set(n, Pc::Claim(v)));
            } else if vol.offline {
                go("lists no volume, the disk offline", false, v, &|n| {
                    set(n, Pc::Online(v))
                });
            } else {
                // The online is answered in the model (its send lands or
                // not in one step): the arrival time alone is waited.
                let step = match vol.onlined {
                    None => (cfg.arrival)(OnlinedRecord::None, Duration::ZERO, ARRIVAL, SETTLE),
                    Some(passed) => {
                        let seen = if passed { ARRIVAL } else { Duration::ZERO };
                        (cfg.arrival)(OnlinedRecord::Answered, seen, ARRIVAL, SETTLE)
                    }
                };
                if step == ArrivalStep::Trust {
                    go("lists no volume, takes it as none", false, v, &|n| {
                        n.vols[v as usize].onlined = None;
                        set(n, Pc::Partition(v))
                    });
                }
                // Otherwise it waits for the volumes or their arrival
                // time (Wait, VolumesPending): no step.
            }
        }
        Pc::Online(v) => go("records the online", false, v, &|n| {
            n.vols[v as usize].onlined = Some(false);
            set(n, Pc::OnlineSend(v))
        }),
        Pc::OnlineSend(v) => {
            // Answered or not, it lists the disk again.
            go(
                "sends SetDiskState(online), records its answer",
                false,
                v,
                &|n| {
                    let vol = &mut n.vols[v as usize];
                    (vol.offline, vol.onlined) = (false, Some(false));
                    set(n, Pc::Stage(v))
                },
            );
            go("SetDiskState(online) lost before the host", true, v, &|n| {
                set(n, Pc::Stage(v))
            });
        }
        Pc::Partition(v) => {
            // PartitionDisk makes a partition on a disk with none, and
            // does nothing on a partitioned one.
            let partition = |n: &mut State| {
                let vol = &mut n.vols[v as usize];
                vol.intent = cfg.intents;
                if vol.content == Content::Blank && !vol.listed {
                    vol.listed = true;
                }
            };
            go("sends PartitionDisk", false, v, &|n| {
                partition(n);
                set(n, Pc::Relist(v))
            });
            go("PartitionDisk lands, its answer lost", true, v, &|n| {
                partition(n);
                set(n, Pc::Stage(v))
            });
            go("PartitionDisk lost before the host", true, v, &|n| {
                n.vols[v as usize].intent = cfg.intents;
                set(n, Pc::Stage(v))
            });
        }
        Pc::Relist(v) => match s.vols[v as usize].listed {
            // The licence: "this node's PartitionDisk made it".
            true => go("lists a volume, records its licence", false, v, &|n| {
                let vol = &mut n.vols[v as usize];
                (vol.licence, vol.intent) = (true, false);
                set(n, Pc::Claim(v))
            }),
            // PartitionDisk answered: its intent stays until a volume
            // gets the licence (Windows may show the volume late).
            false => go("still lists no volume (NoVolume)", false, v, &|n| {
                set(n, Pc::Stage(v))
            }),
        },
        Pc::Claim(v) => {
            if !cfg.claims || s.vols[v as usize].claim.is_none() {
                go("takes the claim", false, v, &|n| {
                    if cfg.claims {
                        n.vols[v as usize].claim = Some(p as u8);
                    }
                    set(n, Pc::Decide(v))
                });
            }
        }
        Pc::Decide(v) => {
            let (what, decision) = decide(cfg, &s.vols[v as usize]);
            go(what, false, v, &|n| match decision {
                Decision::Mount => {
                    let vol = &mut n.vols[v as usize];
                    (vol.record, vol.licence) = (Record::None, false);
                    n.release(p);
                    set(n, Pc::Mount(v))
                }
                Decision::Retry => retry(n, v),
                Decision::Format => set(n, Pc::Record(v)),
                Decision::Refuse => {
                    n.release(p);
                    set(n, n.after(v))
                }
            });
            go("IsVolumeFormatted fails (Unavailable)", true, v, &|n| {
                retry(n, v)
            });
        }
        Pc::Record(v) => go("records the format as sent", false, v, &|n| {
            n.vols[v as usize].record = Record::Sent { settled: false };
            set(n, Pc::Send(v))
        }),
        Pc::Send(v) => {
            go("sends FormatVolume", false, v, &|n| set(n, Pc::Awaiting(v)));
            go("FormatVolume lost (Unavailable)", true, v, &|n| retry(n, v));
        }
        Pc::Awaiting(v) => {
            go("its format lands and is answered", false, v, &|n| {
                n.land(v as usize);
                set(n, Pc::Answered(v, true))
            });
            go("its format lands, answer lost", true, v, &|n| {
                n.land(v as usize);
                retry(n, v)
            });
            go("its format fails at the host", true, v, &|n| {
                set(n, Pc::Answered(v, false))
            });
            go("gives up waiting (timeout, proxy restart)", true, v, &|n| {
                n.vols[v as usize].orphans += 1;
                retry(n, v)
            });
        }
        Pc::Answered(v, landed) => match landed {
            true => go("removes the record and the licence", false, v, &|n| {
                let vol = &mut n.vols[v as usize];
                (vol.record, vol.licence) = (Record::None, false);
                n.release(p);
                set(n, Pc::Mount(v))
            }),
            false => go("removes the record (a known failure)", false, v, &|n| {
                n.vols[v as usize].record = Record::None;
                retry(n, v)
            }),
        },
        Pc::Mount(v) => go("mounts the volume", false, v, &|n| {
            n.vols[v as usize].mounted = true;
            set(n, n.after(v))
        }),
    }
}

/// What the claim holder's decision leads to.
#[derive(Clone, Copy)]
enum Decision {
    /// `Formatted`: forget the record and the licence, mount.
    Mount,
    /// `Pending`: `FormatPending`, kubelet retries.
    Retry,
    /// `Check`, and `may_format` says yes.
    Format,
    /// `Check`, and `may_format` says no: `MayHoldData`.
    Refuse,
}

/// The claim holder's decision about volume `vol`, from its record and
/// the host alone, by the code's own functions (`cfg.decide`, `cfg.may`).
fn decide(cfg: &Config, vol: &Volume) -> (&'static str, Decision) {
    let record = match vol.record {
        Record::None => FormatRecord::None,
        Record::Sent { settled } => FormatRecord::Sent {
            elapsed: Some(if settled { SETTLE } else { Duration::ZERO }),
        },
    };
    let shows_fs = matches!(vol.content, Content::Formatted | Content::PodData);
    match (cfg.decide)(record, shows_fs, SETTLE) {
        FormatStep::Formatted => (
            "decides Formatted: forgets record and licence",
            Decision::Mount,
        ),
        FormatStep::Pending => ("decides Pending (FormatPending)", Decision::Retry),
        FormatStep::Check => {
            let signature = match cfg.mode {
                Mode::HostProcess => Some(vol.content == Content::HoldsData),
                Mode::Proxy => None,
            };
            match (cfg.may)(signature, vol.licence) {
                true => ("decides Check: may format", Decision::Format),
                false => ("decides Check: refused, may hold data", Decision::Refuse),
            }
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

/// Breadth-first over every state reachable from the configuration's
/// initial one, each state once; then liveness over the graph it built.
fn explore(cfg: &Config) -> Report {
    let started = Instant::now();
    let mut index: HashMap<State, u32> = HashMap::new();
    let mut states: Vec<State> = Vec::new();
    // For traces: the state each was first reached from, and how.
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
                    let why = edge.next.violation();
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
    // Liveness: the states from which fault-free steps reach one where
    // every stageable volume is mounted, found backwards from those.
    // Fault-free steps of a reachable state lead to reachable states, so
    // every reachable state among them means: whatever faults happened,
    // once they stop the stages can still all end.
    let stageable = cfg.stageable();
    let goal = |s: &State| {
        s.vols
            .iter()
            .zip(&stageable)
            .all(|(v, &must)| !must || v.mounted)
    };
    let mut live = vec![false; states.len()];
    let mut work: Vec<u32> = Vec::new();
    for (i, s) in states.iter().enumerate() {
        if goal(s) {
            live[i] = true;
            work.push(i as u32);
        }
    }
    while let Some(j) = work.pop() {
        for &i in &back[j as usize] {
            if !live[i as usize] {
                live[i as usize] = true;
                work.push(i);
            }
        }
    }
    // States are numbered in breadth-first order: the first stuck one
    // has a shortest trace.
    let violation = live.iter().position(|&l| !l).map(|i| {
        let why = "liveness: once faults stop, a blank volume is never staged".to_string();
        (why, trace(&parent, &states, i as u32))
    });
    report(&states, edges, violation)
}

/// The steps from the initial state to state `i`, and the state reached.
fn trace(parent: &[Option<(u32, Step)>], states: &[State], i: u32) -> Vec<String> {
    let mut steps = Vec::new();
    let mut at = i;
    while let Some((from, step)) = parent[at as usize] {
        let who = match step.actor {
            Some(p) => format!("P{p}"),
            None => "host".into(),
        };
        steps.push(format!("{who}: {} (v{})", step.what, step.vol));
        at = from;
    }
    steps.reverse();
    let end = &states[i as usize];
    for (v, vol) in end.vols.iter().enumerate() {
        steps.push(format!(
            "  end v{v}: {:?}, listed {}, offline {}, onlined {:?}, record {:?}, licence {}, landings {}, mounted {}",
            vol.content, vol.listed, vol.offline, vol.onlined, vol.record, vol.licence, vol.landings, vol.mounted
        ));
    }
    steps.push(format!("  end processes: {:?}", end.procs));
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cfg: &Config) -> Report {
        let r = explore(cfg);
        println!(
            "{}: {} states, {} transitions, {:.2?}",
            cfg.name, r.states, r.edges, r.elapsed
        );
        r
    }

    fn assert_holds(cfg: &Config) {
        if let Some((why, trace)) = run(cfg).violation {
            panic!("{}: {why}\n{}", cfg.name, trace.join("\n"));
        }
    }

    /// Runs a broken variant and asserts the checker finds `expected`.
    fn assert_found(cfg: &Config, expected: &str) {
        let (why, trace) = run(cfg)
            .violation
            .unwrap_or_else(|| panic!("{}: no violation found", cfg.name));
        println!(
            "  found {why} in {} steps:",
            trace.len() - 1 - cfg.volumes.len()
        );
        for step in &trace {
            println!("    {step}");
        }
        assert!(why.contains(expected), "{}: {why}", cfg.name);
    }

    /// The configurations CI runs: two processes (one may die and
    /// restart), a blank volume and one holding data, both modes.
    fn small() -> Vec<Config> {
        use Mode::*;
        vec![
            Config::new(
                "proxy: 2 processes, blank+data, 2 crashes",
                Proxy,
                2,
                vec![blank(true), holds_data()],
                2,
            ),
            Config::new(
                "HostProcess: 2 processes, blank+data, 2 crashes",
                HostProcess,
                2,
                vec![blank(false), holds_data()],
                2,
            ),
            Config::new(
                "proxy: 2 processes, 2 blank, 2 crashes",
                Proxy,
                2,
                vec![blank(true), blank(true)],
                2,
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
    #[ignore = "larger configurations: run with --ignored"]
    fn larger_configurations_hold_every_invariant() {
        use Mode::*;
        let configs = [
            Config::new(
                "proxy: 3 processes, blank+data, 3 crashes",
                Proxy,
                3,
                vec![blank(true), holds_data()],
                3,
            ),
            Config::new(
                "HostProcess: 3 processes, blank+data, 3 crashes",
                HostProcess,
                3,
                vec![blank(false), holds_data()],
                3,
            ),
            Config::new(
                "proxy: 3 processes, 2 blank, 3 crashes",
                Proxy,
                3,
                vec![blank(true), blank(true)],
                3,
            ),
            Config::new(
                "HostProcess: 2 processes, 3 blank, 4 crashes",
                HostProcess,
                2,
                vec![blank(false), blank(false), blank(false)],
                4,
            ),
            Config::new(
                "proxy: 2 processes, unlicensed+formatted+blank, 3 crashes",
                Proxy,
                2,
                vec![blank(false), formatted(), blank(true)],
                3,
            ),
            Config::new(
                "proxy: 3 processes, 2 blank+data, 4 crashes",
                Proxy,
                3,
                vec![blank(true), blank(true), holds_data()],
                4,
            ),
            Config::new(
                "proxy: 3 processes, offline data+offline new, 3 crashes",
                Proxy,
                3,
                vec![offline_data(), offline_new_disk()],
                3,
            ),
        ];
        for cfg in configs {
            assert_holds(&cfg);
        }
    }

    /// A step function that does not wait out the settle time: a format
    /// left at the host by a caller that gave up lands after a second one.
    #[test]
    fn a_format_sent_again_before_it_settles_is_found() {
        let mut cfg = Config::new(
            "broken: settle not awaited",
            Mode::Proxy,
            2,
            vec![blank(true)],
            1,
        );
        cfg.decide = |record, formatted, settle| match (formatted, record) {
            (false, FormatRecord::Sent { .. }) => FormatStep::Check,
            _ => protocol::format_step(record, formatted, settle),
        };
        assert_found(&cfg, "(2)");
    }

    /// Proxy mode formatting without a licence, HostProcess mode past a
    /// signature: the data volume is formatted.
    #[test]
    fn a_format_of_a_volume_that_may_hold_data_is_found() {
        let mut cfg = Config::new(
            "broken: proxy formats unlicensed",
            Mode::Proxy,
            2,
            vec![blank(true), holds_data()],
            1,
        );
        cfg.may = |signature, _licensed| signature != Some(true);
        assert_found(&cfg, "(1)");
        let mut cfg = Config::new(
            "broken: signature ignored",
            Mode::HostProcess,
            2,
            vec![holds_data()],
            1,
        );
        cfg.may = |_signature, _licensed| true;
        assert_found(&cfg, "(1)");
    }

    /// Finding 8's shape: two processes deciding without the claim both
    /// read no record and both format.
    #[test]
    fn deciding_without_the_claim_is_found() {
        let mut cfg = Config::new(
            "broken: no claim",
            Mode::HostProcess,
            2,
            vec![blank(false)],
            0,
        );
        cfg.claims = false;
        assert_found(&cfg, "(2)");
    }

    /// Finding 7 (issue 42), fixed: proxy mode took a volume listed after
    /// `PartitionDisk` for one this node made. An offline disk's data
    /// volume arrives some time after the stage brings it online (its
    /// answer lost or not): between the stage's listing (none) and its
    /// listing after `PartitionDisk` (a no-op on a partitioned disk), it
    /// was licensed and formatted. The `onlined` record holds
    /// `PartitionDisk` back until the arrival time has passed; without it
    /// (an arrival step that always trusts) the checker finds the format. A blank
    /// offline disk still stages.
    #[test]
    fn finding_7_a_volume_arriving_after_online_is_never_formatted() {
        let volumes = vec![offline_data(), offline_new_disk()];
        let cfg = Config::new(
            "finding 7: proxy, offline disks",
            Mode::Proxy,
            2,
            volumes,
            1,
        );
        assert_holds(&cfg);
        let mut before = Config::new(
            "finding 7 before: proxy, offline data disk",
            Mode::Proxy,
            1,
            vec![offline_data()],
            0,
        );
        before.arrival = |_, _, _, _| ArrivalStep::Trust;
        assert_found(&before, "(1)");
    }

    /// OPEN (finding 7's rest): a disk someone else brings online (an
    /// administrator; no record of this node's) lists no volume until its
    /// volumes arrive, and a stage in that time is taken in: its volume is
    /// licensed and formatted. The proxy shows no partitions, so nothing
    /// but this node's own record tells a disk just onlined from a blank
    /// one (docs/safety.md). When that changes, this test fails: turn it
    /// into `assert_holds`.
    #[test]
    fn open_a_disk_onlined_by_someone_else_is_formatted() {
        let mut cfg = Config::new(
            "open: proxy, an administrator onlines the data disk",
            Mode::Proxy,
            1,
            vec![offline_data()],
            0,
        );
        cfg.someone_onlines = true;
        assert_found(&cfg, "(1)");
    }

    /// Finding 4 (issue 42), fixed: a stage interrupted between
    /// `PartitionDisk` and the licence's record (its answer lost, or the
    /// process dying) left a blank disk unstageable for good: every retry
    /// listed an unlicensed volume and refused it. The `partitioning`
    /// intent, recorded before `PartitionDisk`, licenses it on the retry.
    /// Without the intent (`cfg.intent = false`) the checker finds the
    /// liveness failure.
    #[test]
    fn finding_4_a_partition_whose_answer_was_lost_is_still_staged() {
        let volumes = vec![new_disk(), blank(true)];
        let cfg = Config::new("finding 4: proxy, new disk", Mode::Proxy, 2, volumes, 1);
        assert_holds(&cfg);
        let mut before = cfg.clone();
        before.intents = false;
        assert_found(&before, "liveness");
    }
}
