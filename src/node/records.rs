//! What the node layer must remember past one call (across retries,
//! clones of a `Node`, other `Node`s on the host and, with a directory,
//! restarts of the driver), and who may change what.
//!
//! A record is a small text value under a kind (what it is about: a
//! format sent, a partition this node made, the disk staged at a path) and
//! a key (a volume id, a disk id, a local path). Keys compare
//! case-insensitively, as Windows paths and volume ids do. A directory
//! store keeps one file per record, written durably and checked when read
//! (`store`): what it cannot read is an error, never "no record".
//!
//! **Claims** (`NodeRecords::claim_exclusive`, `claim_shared`) are held
//! host-wide by a live holder: in this process a lock per name shared by
//! every `Node` over the same records, and for a directory store an OS
//! file lock as well (`flock` on Unix, `LockFileEx` on Windows, through
//! `std::fs::File::try_lock`), which the OS releases when the holding
//! process dies. Two plugin processes over one state directory (a rolling
//! update) therefore never hold one claim at once, and a dead one's claim
//! is free at once, without inferring from a record who is alive.
//!
//! **Owners**: each process writing to a directory store takes an epoch
//! (a counter in the store, one more per process) and holds the file
//! `owners/<epoch>.owner` locked for its lifetime. A record names its
//! writer's epoch; `NodeRecords::is_alive` asks the OS whether that
//! writer's lock is still held, so a live process's record is never taken
//! for a dead one's.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

use super::store::{Files, file_name, normal};
use crate::Error;

/// Where the node layer keeps its records ([`NodeOptions::records`](super::NodeOptions::records)).
///
/// The default keeps them in this process's memory, shared by every
/// [`Node`](super::Node) of the process that works on the same host (a
/// driver that rebuilds its `Node` keeps them): enough for retries and for
/// every promise within a process. [`NodeRecords::directory`] keeps them in
/// a directory the driver owns (on the node, outside any pod's volume), so
/// that a restarted driver, or a second plugin process during a rolling
/// update, knows what the other did; with it, claims are held host-wide
/// through OS file locks. [`NodeRecords::memory`] is a store of its own,
/// shared only by clones (for tests). Clones share the records.
#[derive(Clone, Debug, Default)]
pub struct NodeRecords {
    kind: Kind,
    /// The host of the `Node`s using these records, which names their
    /// claims in this process ([`NodeRecords::for_host`]).
    host: Option<Arc<str>>,
    /// Whether these are the default records resolved for a host: still
    /// "named by no one" once resolved, so that a program serving the node
    /// can tell them from records it chose ([`NodeRecords::is_default`]).
    resolved_default: bool,
}

#[derive(Clone, Debug, Default)]
enum Kind {
    /// This process's records of the node's host, found when a `Node` is
    /// made ([`NodeRecords::for_host`]).
    #[default]
    PerHost,
    Memory(Arc<Memory>),
    Directory(Arc<Directory>),
}

#[derive(Debug, Default)]
struct Memory {
    map: Mutex<BTreeMap<(String, String), String>>,
}

#[derive(Debug)]
struct Directory {
    files: Files,
    /// This process's lease on the directory, taken when first needed.
    lease: OnceLock<Arc<Lease>>,
}

/// A resolved store ([`NodeRecords::store`]).
enum Store<'a> {
    Memory(&'a Memory),
    Directory(&'a Directory),
}

/// The in-process locks of a store's claims, by name.
type Claims = Mutex<HashMap<String, Arc<RwLock<()>>>>;

/// How often a claim held by another process is tried again.
const CLAIM_POLL: Duration = Duration::from_millis(20);

/// A claim held: released when dropped (and by the OS, for its file
/// lock, when the process dies).
#[must_use = "a claim is released when dropped"]
pub(crate) struct Claim {
    _held: Held,
    _file: Option<std::fs::File>,
}

enum Held {
    Shared(#[allow(dead_code)] OwnedRwLockReadGuard<()>),
    Exclusive(#[allow(dead_code)] OwnedRwLockWriteGuard<()>),
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Claim")
    }
}

fn store_error(path: String, source: std::io::Error) -> Error {
    Error::Store { path, source }
}

impl NodeRecords {
    /// Records in memory of their own, shared by clones only.
    pub fn memory() -> Self {
        NodeRecords {
            kind: Kind::Memory(Arc::default()),
            host: None,
            resolved_default: false,
        }
    }

    /// Records in `dir` (created when first written), one file each, and
    /// claims held host-wide through file locks in it.
    pub fn directory(dir: impl Into<PathBuf>) -> Self {
        NodeRecords {
            kind: Kind::Directory(Arc::new(Directory {
                files: Files::new(dir.into(), store_error),
                lease: OnceLock::new(),
            })),
            host: None,
            resolved_default: false,
        }
    }

    /// Whether these are the default records: named by no one, so in this
    /// process's memory (in HostProcess mode the default is a directory on
    /// the host, and these answer `false`). A program that serves the node
    /// may then keep them somewhere durable
    /// ([`Node::with_state_dir`](super::Node::with_state_dir)).
    pub fn is_default(&self) -> bool {
        matches!(self.kind, Kind::PerHost) || self.resolved_default
    }

    /// Whether the records outlive the process.
    pub fn is_durable(&self) -> bool {
        matches!(self.kind, Kind::Directory(_))
    }

    /// These records for a node of the host named `host`: the default
    /// (per host) resolved to this process's records of that host; any
    /// other store as it is. Either way, their claims in this process are
    /// the host's, whatever store another `Node` of the host uses.
    pub(crate) fn for_host(self, host: &str) -> Self {
        static HOSTS: OnceLock<Mutex<HashMap<String, NodeRecords>>> = OnceLock::new();
        let resolved_default = self.is_default();
        let kind = match self.kind {
            Kind::PerHost => lock(HOSTS.get_or_init(Mutex::default))
                .entry(host.to_string())
                .or_insert_with(NodeRecords::memory)
                .kind
                .clone(),
            kind => kind,
        };
        NodeRecords {
            kind,
            host: Some(host.into()),
            resolved_default,
        }
    }

    /// The host these records were resolved for ([`NodeRecords::for_host`]).
    pub(crate) fn host(&self) -> Option<&str> {
        self.host.as_deref()
    }

    /// The store behind these records: a `Node`'s records are resolved
    /// for its host when it is made ([`NodeRecords::for_host`]), and only
    /// a `Node` reads or writes them.
    fn store(&self) -> Store<'_> {
        match &self.kind {
            Kind::Memory(m) => Store::Memory(m),
            Kind::Directory(d) => Store::Directory(d),
            Kind::PerHost => {
                unreachable!("records are resolved for their host when a Node is made")
            }
        }
    }

    /// The value recorded under `kind` and `key`.
    pub(crate) fn get(&self, kind: &str, key: &str) -> Result<Option<String>, Error> {
        match self.store() {
            Store::Memory(m) => Ok(lock(&m.map).get(&(kind.to_string(), normal(key))).cloned()),
            Store::Directory(d) => d.files.read(kind, key),
        }
    }

    /// Records `value` under `kind` and `key`, replacing what was there.
    pub(crate) fn put(&self, kind: &str, key: &str, value: &str) -> Result<(), Error> {
        match self.store() {
            Store::Memory(m) => {
                lock(&m.map).insert((kind.to_string(), normal(key)), value.to_string());
                Ok(())
            }
            Store::Directory(d) => d.files.write(kind, key, value),
        }
    }

    /// Forgets the record under `kind` and `key`; none there: Ok.
    pub(crate) fn remove(&self, kind: &str, key: &str) -> Result<(), Error> {
        match self.store() {
            Store::Memory(m) => {
                lock(&m.map).remove(&(kind.to_string(), normal(key)));
                Ok(())
            }
            Store::Directory(d) => d.files.remove(kind, key),
        }
    }

    /// Every record of `kind`, as (key in lower case, value), by key.
    pub(crate) fn all(&self, kind: &str) -> Result<Vec<(String, String)>, Error> {
        match self.store() {
            Store::Memory(m) => Ok(lock(&m.map)
                .iter()
                .filter(|((k, _), _)| k == kind)
                .map(|((_, key), value)| (key.clone(), value.clone()))
                .collect()),
            Store::Directory(d) => d.files.list(kind),
        }
    }

    /// The record a program keeps beside the node's own (a plugin's:
    /// what a stage resolved) under `kind` and `key`, read with `parse`.
    /// Kept as the node's records are (in a directory: one file each,
    /// written durably, checked when read) under kinds of their own
    /// (`program-<kind>`), which the node never reads, so a program
    /// cannot change what the node relies on. `kind` is lower-case ASCII
    /// letters, digits and `-`; keys compare case-insensitively. A record
    /// that cannot be read, or that `parse` refuses (its reason in
    /// `Err`), is an error naming the file, never "no record".
    pub fn get_program<T>(
        &self,
        kind: &str,
        key: &str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<Option<T>, Error> {
        let kind = program_kind(kind)?;
        let Some(text) = self.resolved()?.get(&kind, key)? else {
            return Ok(None);
        };
        parse(&text).map(Some).map_err(|why| {
            let place = match &self.kind {
                Kind::Directory(d) => d.files.file(&kind, key).display().to_string(),
                _ => format!("{kind} record of {key} (in memory)"),
            };
            let why = format!("{why}; the record is not used: check the host, then move it away");
            store_error(
                place,
                std::io::Error::new(std::io::ErrorKind::InvalidData, why),
            )
        })
    }

    /// Keeps `value` under the program's `kind` and `key`, replacing what
    /// was there ([`NodeRecords::get_program`]).
    pub fn put_program(&self, kind: &str, key: &str, value: &str) -> Result<(), Error> {
        self.resolved()?.put(&program_kind(kind)?, key, value)
    }

    /// Forgets the program's record under `kind` and `key`; none there: Ok.
    pub fn remove_program(&self, kind: &str, key: &str) -> Result<(), Error> {
        self.resolved()?.remove(&program_kind(kind)?, key)
    }

    /// These records, once a `Node` has resolved them: the default ones
    /// are only known for a host (a `Node`'s, [`Node::records`](super::Node::records)).
    fn resolved(&self) -> Result<&Self, Error> {
        match self.kind {
            Kind::PerHost => Err(store_error(
                "(default records)".into(),
                std::io::Error::other(
                    "the default records are a host's: use the records of a Node (Node::records)",
                ),
            )),
            _ => Ok(self),
        }
    }

    /// This process as the records name a writer: `epoch N` in a
    /// directory store (see the module docs), `this process` in memory.
    pub(crate) fn owner(&self) -> Result<String, Error> {
        match self.store() {
            Store::Directory(d) => Ok(format!("epoch {}", d.lease()?.epoch)),
            Store::Memory(_) => Ok("this process".into()),
        }
    }

    /// Whether the writer `owner` ([`NodeRecords::owner`]) still runs: its
    /// owner file is locked by a live process. Memory records are this
    /// process's own. An owner this store cannot name is taken as alive:
    /// what is unknown is never taken over.
    pub(crate) fn is_alive(&self, owner: &str) -> Result<bool, Error> {
        let Store::Directory(d) = self.store() else {
            return Ok(true);
        };
        let Some(epoch) = owner
            .strip_prefix("epoch ")
            .and_then(|e| e.parse::<u64>().ok())
        else {
            return Ok(true);
        };
        if epoch == d.lease()?.epoch {
            return Ok(true);
        }
        let path = d.files.dir().join("owners").join(format!("{epoch}.owner"));
        let file = match std::fs::OpenOptions::new().write(true).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(store_error(path.display().to_string(), e)),
        };
        match file.try_lock() {
            Ok(()) => {
                // Its process is gone: the file goes too (an epoch is
                // never given again).
                drop(file);
                let _ = std::fs::remove_file(&path);
                Ok(false)
            }
            Err(std::fs::TryLockError::WouldBlock) => Ok(true),
            Err(std::fs::TryLockError::Error(e)) => Err(store_error(path.display().to_string(), e)),
        }
    }

    /// Holds `name` (a volume's format, a disk's stages, an SMB server's
    /// mappings) against every other holder on the host, waiting for it;
    /// see the module docs. Cancel-safe: a dropped wait holds nothing.
    pub(crate) async fn claim_exclusive(&self, name: &str) -> Result<Claim, Error> {
        self.claim(name, false).await
    }

    /// Holds `name` together with other shared holders, against any
    /// exclusive one.
    pub(crate) async fn claim_shared(&self, name: &str) -> Result<Claim, Error> {
        self.claim(name, true).await
    }

    /// What names these records' claims and watches in this process: the
    /// host, or for records used outside a `Node` (tests) the store.
    fn scope(&self) -> String {
        match (&self.host, &self.kind) {
            (Some(host), _) => host.to_string(),
            (None, Kind::Directory(d)) => d.files.dir().display().to_string(),
            (None, Kind::Memory(m)) => format!("memory {:p}", Arc::as_ptr(m)),
            (None, Kind::PerHost) => {
                unreachable!("records are resolved for their host when a Node is made")
            }
        }
    }

    /// How long this process has watched record `kind`/`key` read as
    /// `text`, on tokio's monotonic clock, from when it first read or
    /// wrote that text: a record of another process, or of one before a
    /// restart, is as old as this process has seen it, never older than
    /// it is. A new text starts a new watch.
    pub(crate) fn watched(&self, kind: &str, key: &str, text: &str) -> Duration {
        self.watch(kind, key, text, false)
    }

    /// Starts this process's watch of record `kind`/`key` now, as `text`,
    /// whatever it watched before (a record just written, though its text
    /// may be the same as an earlier one's).
    pub(crate) fn watch_anew(&self, kind: &str, key: &str, text: &str) {
        self.watch(kind, key, text, true);
    }

    fn watch(&self, kind: &str, key: &str, text: &str, anew: bool) -> Duration {
        type Seen = HashMap<String, (String, tokio::time::Instant)>;
        static SEEN: OnceLock<Mutex<Seen>> = OnceLock::new();
        let now = tokio::time::Instant::now();
        let mut seen = lock(SEEN.get_or_init(Mutex::default));
        if seen.len() > 4096 {
            // Watches of a day and more; one still pending is seen anew
            // (younger than it is: it waits longer, never shorter).
            seen.retain(|_, (_, at)| {
                now.saturating_duration_since(*at) < Duration::from_secs(86_400)
            });
        }
        let entry = seen
            .entry(format!("{}|{kind}|{}", self.scope(), normal(key)))
            .or_insert_with(|| (text.to_string(), now));
        // A watch from another runtime's clock (tests run paused clocks
        // side by side) reads as in the future: begun now.
        if anew || entry.0 != text || entry.1 > now {
            *entry = (text.to_string(), now);
        }
        now - entry.1
    }

    async fn claim(&self, name: &str, shared: bool) -> Result<Claim, Error> {
        static CLAIMS: OnceLock<Claims> = OnceLock::new();
        let key = format!("{}|{}", self.scope(), normal(name));
        let lock = {
            let mut claims = lock(CLAIMS.get_or_init(Claims::default));
            // A plugin claims every volume it ever formats: names no one
            // holds or waits for are dropped once they are many.
            if claims.len() > 1024 {
                claims.retain(|_, held| Arc::strong_count(held) > 1);
            }
            claims.entry(key).or_default().clone()
        };
        let held = match shared {
            true => Held::Shared(lock.read_owned().await),
            false => Held::Exclusive(lock.write_owned().await),
        };
        let file = match self.store() {
            Store::Directory(d) => Some(d.file_lock(name, shared).await?),
            Store::Memory(_) => None,
        };
        Ok(Claim {
            _held: held,
            _file: file,
        })
    }
}

impl Directory {
    /// This process's lease, taken when first asked for.
    fn lease(&self) -> Result<Arc<Lease>, Error> {
        static LEASES: OnceLock<Mutex<HashMap<PathBuf, Arc<Lease>>>> = OnceLock::new();
        if let Some(lease) = self.lease.get() {
            return Ok(lease.clone());
        }
        let dir = self.files.dir();
        let lease = {
            let mut leases = lock(LEASES.get_or_init(Mutex::default));
            match leases.get(dir) {
                Some(lease) => lease.clone(),
                None => {
                    let lease = Arc::new(Lease::take(dir)?);
                    leases.insert(dir.to_path_buf(), lease.clone());
                    lease
                }
            }
        };
        Ok(self.lease.get_or_init(|| lease).clone())
    }

    /// The OS lock of claim `name`, waited for.
    async fn file_lock(&self, name: &str, shared: bool) -> Result<std::fs::File, Error> {
        let dir = self.files.dir().join("claims");
        std::fs::create_dir_all(&dir).map_err(|e| store_error(dir.display().to_string(), e))?;
        let path = dir.join(file_name(name)).with_extension("lock");
        let fail = |e| store_error(path.display().to_string(), e);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(fail)?;
        loop {
            let tried = match shared {
                true => file.try_lock_shared(),
                false => file.try_lock(),
            };
            match tried {
                Ok(()) => return Ok(file),
                Err(std::fs::TryLockError::WouldBlock) => tokio::time::sleep(CLAIM_POLL).await,
                Err(std::fs::TryLockError::Error(e)) => return Err(fail(e)),
            }
        }
    }
}

/// A process's hold on a directory store: its epoch, and the owner file
/// it keeps locked while it runs.
#[derive(Debug)]
struct Lease {
    epoch: u64,
    _owner: std::fs::File,
}

impl Lease {
    /// The next epoch of `dir` (its counter raised under a lock) and its
    /// owner file, locked.
    fn take(dir: &Path) -> Result<Lease, Error> {
        let owners = dir.join("owners");
        let fail = |path: &Path, e| store_error(path.display().to_string(), e);
        std::fs::create_dir_all(&owners).map_err(|e| fail(&owners, e))?;
        let counter = Files::new(owners.clone(), store_error);
        let guard_path = owners.join("epoch.lock");
        let guard = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&guard_path)
            .map_err(|e| fail(&guard_path, e))?;
        guard.lock().map_err(|e| fail(&guard_path, e))?;
        let last = match counter.read("epoch", "last")? {
            None => 0,
            Some(text) => text.trim().parse::<u64>().map_err(|_| {
                fail(
                    &counter.file("epoch", "last"),
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("the epoch counter holds {text:?}, not a number"),
                    ),
                )
            })?,
        };
        let epoch = last + 1;
        counter.write("epoch", "last", &epoch.to_string())?;
        let path = owners.join(format!("{epoch}.owner"));
        let owner = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| fail(&path, e))?;
        owner.try_lock().map_err(|e| {
            fail(
                &path,
                std::io::Error::other(format!("a fresh epoch's owner file is held: {e}")),
            )
        })?;
        drop(guard);
        Ok(Lease {
            epoch,
            _owner: owner,
        })
    }
}

/// The records' kind of a program's `kind`, checked to be a plain name
/// (it names a directory).
fn program_kind(kind: &str) -> Result<String, Error> {
    let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    if kind.is_empty() || !kind.chars().all(plain) {
        return Err(store_error(
            kind.to_string(),
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a program's record kind is lower-case ASCII letters, digits and '-'",
            ),
        ));
    }
    Ok(format!("program-{kind}"))
}

impl super::Node {
    /// The records this node keeps ([`NodeOptions::records`](super::NodeOptions::records),
    /// resolved for its host): where a program serving the node keeps its
    /// own ([`NodeRecords::get_program`]), and whether they were chosen
    /// ([`NodeRecords::is_default`]) and outlive the process
    /// ([`NodeRecords::is_durable`]).
    pub fn records(&self) -> &NodeRecords {
        &self.inner.options.records
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(records: &NodeRecords) {
        assert_eq!(records.get("format", r"\\?\Volume{A}\").unwrap(), None);
        records
            .put("format", r"\\?\Volume{A}\", "running\nsince 1")
            .unwrap();
        records.put("format", r"\\?\Volume{B}\", "done").unwrap();
        records.put("stage", r"C:\x", "disk 1").unwrap();
        assert_eq!(
            records.get("format", r"\\?\volume{a}\").unwrap().as_deref(),
            Some("running\nsince 1"),
            "keys are not case-sensitive; values keep their lines"
        );
        let all = records.all("format").unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[1], (r"\\?\volume{b}\".to_string(), "done".to_string()));
        records.remove("format", r"\\?\Volume{A}\").unwrap();
        records.remove("format", r"\\?\Volume{A}\").unwrap();
        assert_eq!(records.get("format", r"\\?\Volume{A}\").unwrap(), None);
        assert_eq!(records.all("stage").unwrap().len(), 1);
    }

    #[test]
    fn memory_records_round_trip() {
        round_trip(&NodeRecords::memory());
    }

    #[test]
    fn directory_records_round_trip_and_survive_a_new_instance() {
        let dir = tempfile::tempdir().unwrap();
        round_trip(&NodeRecords::directory(dir.path()));
        let again = NodeRecords::directory(dir.path());
        assert_eq!(
            again.get("stage", r"c:\X").unwrap().as_deref(),
            Some("disk 1")
        );
        assert!(again.is_durable() && !NodeRecords::memory().is_durable());
    }

    #[test]
    fn the_default_is_this_processs_records_of_the_host() {
        let a = NodeRecords::default().for_host("records-test host a");
        let again = NodeRecords::default().for_host("records-test host a");
        let b = NodeRecords::default().for_host("records-test host b");
        a.put("format", "v", "sent").unwrap();
        assert_eq!(again.get("format", "v").unwrap().as_deref(), Some("sent"));
        assert_eq!(b.get("format", "v").unwrap(), None);
        let own = NodeRecords::memory().for_host("records-test host a");
        assert_eq!(
            own.get("format", "v").unwrap(),
            None,
            "an explicit store stays its own"
        );
    }

    #[test]
    fn the_default_says_so_once_resolved_and_a_chosen_store_does_not() {
        assert!(NodeRecords::default().is_default());
        assert!(
            NodeRecords::default()
                .for_host("records-test host c")
                .is_default()
        );
        assert!(
            !NodeRecords::memory()
                .for_host("records-test host c")
                .is_default()
        );
        let dir = tempfile::tempdir().unwrap();
        assert!(!NodeRecords::directory(dir.path()).is_default());
    }

    #[test]
    fn a_programs_records_are_apart_from_the_nodes() {
        let records = NodeRecords::memory();
        records.put("stage", "k", "node").unwrap();
        records.put_program("stage", "k", "program").unwrap();
        assert_eq!(records.get("stage", "k").unwrap().as_deref(), Some("node"));
        let read = records.get_program("stage", "K", |t| Ok(t.to_string()));
        assert_eq!(read.unwrap().as_deref(), Some("program"));
        records.remove_program("stage", "k").unwrap();
        assert_eq!(records.get("stage", "k").unwrap().as_deref(), Some("node"));
        assert!(records.put_program("../stage", "k", "x").is_err());
        assert!(records.put_program("", "k", "x").is_err());
        assert!(
            NodeRecords::default().put_program("x", "k", "v").is_err(),
            "the default records are a host's"
        );
        records.put_program("x", "k", "v").unwrap();
        let refused = records.get_program("x", "k", |_| Err::<(), _>("garbled".to_string()));
        assert!(refused.unwrap_err().to_string().contains("program-x"));
    }

    /// A node's default stores move to the state directory; stores the
    /// program chose, and HostProcess mode's records on the host, stay.
    #[cfg(feature = "mock")]
    #[test]
    fn a_state_directory_takes_only_the_default_stores() {
        use crate::node::{MockNode, NodeOptions, SmbStore};
        let host = crate::mock::MockHost::new();
        let dir = tempfile::tempdir().unwrap();
        let node = MockNode::new(&host).build().unwrap();
        assert!(node.records().is_default() && !node.records().is_durable());
        let kept = node.with_state_dir(dir.path()).unwrap();
        assert!(!kept.records().is_default() && kept.records().is_durable());
        assert!(kept.inner.options.smb_store.is_durable());
        assert!(dir.path().join("records").join("owners").is_dir());

        let chosen = NodeOptions::default()
            .records(NodeRecords::memory())
            .smb_store(SmbStore::memory());
        let node = MockNode::new(&host).options(chosen).build().unwrap();
        let other = tempfile::tempdir().unwrap();
        let same = node.with_state_dir(other.path().join("state")).unwrap();
        assert!(!same.records().is_durable());
        assert!(!same.inner.options.smb_store.is_durable());
        assert!(!other.path().join("state").exists(), "nothing made");

        // A file where the directory goes: an error, never memory records.
        let file = other.path().join("file");
        std::fs::write(&file, "").unwrap();
        let node = MockNode::new(&host).build().unwrap();
        assert!(node.with_state_dir(&file).is_err());
    }

    #[cfg(all(feature = "host-process", feature = "mock"))]
    #[test]
    fn host_process_records_stay_on_the_host() {
        let host = crate::mock::MockHost::new();
        let fake = crate::host_process::FakeWindows::new(host.host().clone());
        let node = crate::node::Node::host_process_with(fake, Default::default());
        let on_host = node.records().clone();
        assert!(on_host.is_durable() && !on_host.is_default());
        let dir = tempfile::tempdir().unwrap();
        let kept = node.with_state_dir(dir.path()).unwrap();
        assert!(
            !dir.path().join("records").exists(),
            "the records stay where HostProcess mode keeps them"
        );
        assert!(kept.inner.options.smb_store.is_durable());
    }

    #[tokio::test]
    async fn a_claim_excludes_every_other_holder_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        for records in [NodeRecords::memory(), NodeRecords::directory(dir.path())] {
            let other = records.clone();
            let held = records.claim_exclusive("disk 3").await.unwrap();
            let wait = std::time::Duration::from_millis(100);
            assert!(
                tokio::time::timeout(wait, other.claim_exclusive("Disk 3"))
                    .await
                    .is_err()
            );
            assert!(
                tokio::time::timeout(wait, other.claim_shared("disk 3"))
                    .await
                    .is_err()
            );
            let _unrelated = other.claim_exclusive("disk 4").await.unwrap();
            drop(held);
            let a = other.claim_shared("disk 3").await.unwrap();
            let _b = records.claim_shared("disk 3").await.unwrap();
            assert!(
                tokio::time::timeout(wait, other.claim_exclusive("disk 3"))
                    .await
                    .is_err()
            );
            drop(a);
        }
    }

    #[tokio::test]
    async fn a_claim_waits_for_another_process_holding_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let records = NodeRecords::directory(dir.path());
        drop(records.claim_exclusive("volume v").await.unwrap());
        // Another process's lock: an open file description of its own,
        // which flock and LockFileEx tell apart from this one's.
        let path = dir
            .path()
            .join("claims")
            .join(file_name("volume v"))
            .with_extension("lock");
        let theirs = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        theirs.try_lock().unwrap();
        let wait = std::time::Duration::from_millis(150);
        assert!(
            tokio::time::timeout(wait, records.claim_exclusive("volume v"))
                .await
                .is_err()
        );
        drop(theirs); // the process died: the OS releases its lock
        let _mine = tokio::time::timeout(wait, records.claim_exclusive("volume v"))
            .await
            .expect("a dead holder's claim is free")
            .unwrap();
    }

    #[test]
    fn an_owner_is_alive_while_its_lease_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let records = NodeRecords::directory(dir.path());
        let me = records.owner().unwrap();
        assert!(records.is_alive(&me).unwrap());
        assert_eq!(
            NodeRecords::directory(dir.path()).owner().unwrap(),
            me,
            "one lease a process"
        );
        // A second process's lease, then its death.
        let other = Lease::take(dir.path()).unwrap();
        let theirs = format!("epoch {}", other.epoch);
        assert_ne!(theirs, me);
        assert!(records.is_alive(&theirs).unwrap());
        drop(other);
        assert!(!records.is_alive(&theirs).unwrap());
        assert!(
            !records.is_alive("epoch 999").unwrap(),
            "never given: no live owner"
        );
        assert!(
            records.is_alive("process 12").unwrap(),
            "unknown: never taken over"
        );
        let third = Lease::take(dir.path()).unwrap();
        assert!(third.epoch > other_epoch(&theirs), "epochs only grow");
    }

    fn other_epoch(owner: &str) -> u64 {
        owner.trim_start_matches("epoch ").parse().unwrap()
    }

    /// The claim and lease a child process holds in
    /// `a_claim_held_by_another_process_is_free_when_it_dies`; a no-op
    /// when run as an ordinary test.
    #[test]
    fn child_process_holding_a_claim() {
        let Some(dir) = std::env::var_os("CSI_PROXY_CLIENT_CLAIM_CHILD") else {
            return;
        };
        let dir = PathBuf::from(dir);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let records = NodeRecords::directory(&dir);
            let _claim = records.claim_exclusive("format v").await.unwrap();
            let owner = records.owner().unwrap();
            std::fs::write(dir.join("child-ready"), owner).unwrap();
            tokio::time::sleep(Duration::from_secs(120)).await;
        });
    }

    /// Another OS process holds a volume's claim: this one waits, sees its
    /// owner alive, and when it is killed (no chance to release anything)
    /// the OS has released its claim and its lease.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_claim_held_by_another_process_is_free_when_it_dies() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "node::records::tests::child_process_holding_a_claim",
                "--nocapture",
            ])
            .env("CSI_PROXY_CLIENT_CLAIM_CHILD", dir.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let ready = dir.path().join("child-ready");
        let mut waited = 0;
        while !ready.exists() {
            assert!(waited < 600, "the child never took its claim");
            tokio::time::sleep(Duration::from_millis(50)).await;
            waited += 1;
        }
        let theirs = std::fs::read_to_string(&ready).unwrap();
        let records = NodeRecords::directory(dir.path());
        assert!(records.is_alive(&theirs).unwrap(), "{theirs} runs");
        assert_ne!(records.owner().unwrap(), theirs);
        let wait = Duration::from_millis(300);
        assert!(
            tokio::time::timeout(wait, records.claim_exclusive("format v"))
                .await
                .is_err(),
            "held by the child"
        );
        child.kill().unwrap();
        child.wait().unwrap();
        let _mine =
            tokio::time::timeout(Duration::from_secs(5), records.claim_exclusive("format v"))
                .await
                .expect("a dead process's claim is free")
                .unwrap();
        assert!(!records.is_alive(&theirs).unwrap(), "{theirs} is gone");
    }
}
