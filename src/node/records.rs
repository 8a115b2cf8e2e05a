//! What the node layer must remember past one call: across retries, across
//! clones of a `Node` and, with a directory, across restarts of the driver.
//!
//! A record is a small text value under a kind (what it is about: a
//! format under way, a partition this node made, the disk staged at a
//! path) and a key (a volume id, a disk id, a local path). Keys compare
//! case-insensitively, as Windows paths and volume ids do. A directory
//! store writes one file per record, through a temporary file renamed over
//! the old one, so a crash leaves the old value or the new, never half.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::Error;

/// Where the node layer keeps its records ([`NodeOptions::records`](super::NodeOptions::records)).
///
/// [`NodeRecords::memory`] lasts as long as the process: enough for tests
/// and for what retries need. [`NodeRecords::directory`] keeps the records
/// in a directory the driver owns (on the node, outside any pod's volume),
/// so that a restarted driver still knows what the one before it did.
/// Clones share the records.
#[derive(Clone, Debug)]
pub struct NodeRecords {
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Memory(Arc<Mutex<BTreeMap<(String, String), String>>>),
    Directory(PathBuf),
}

impl Default for NodeRecords {
    fn default() -> Self {
        Self::memory()
    }
}

/// A key as stored: lower case, and for a file name hex of that.
fn normal(key: &str) -> String {
    key.to_lowercase()
}

fn file_name(key: &str) -> String {
    normal(key)
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        + ".rec"
}

impl NodeRecords {
    /// Records in this process's memory.
    pub fn memory() -> Self {
        NodeRecords {
            kind: Kind::Memory(Arc::default()),
        }
    }

    /// Records in `dir` (created when first written), one file each.
    pub fn directory(dir: impl Into<PathBuf>) -> Self {
        NodeRecords {
            kind: Kind::Directory(dir.into()),
        }
    }

    /// Whether the records outlive the process.
    pub fn is_durable(&self) -> bool {
        matches!(self.kind, Kind::Directory(_))
    }

    fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Store {
            path: path.display().to_string(),
            source,
        }
    }

    /// The value recorded under `kind` and `key`.
    pub(crate) fn get(&self, kind: &str, key: &str) -> Result<Option<String>, Error> {
        match &self.kind {
            Kind::Memory(map) => Ok(lock(map).get(&(kind.to_string(), normal(key))).cloned()),
            Kind::Directory(dir) => {
                let file = dir.join(kind).join(file_name(key));
                match std::fs::read_to_string(&file) {
                    Ok(text) => Ok(text.split_once('\n').map(|(_, value)| value.to_string())),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(Self::io(&file, e)),
                }
            }
        }
    }

    /// Records `value` under `kind` and `key`, replacing what was there.
    pub(crate) fn put(&self, kind: &str, key: &str, value: &str) -> Result<(), Error> {
        match &self.kind {
            Kind::Memory(map) => {
                lock(map).insert((kind.to_string(), normal(key)), value.to_string());
                Ok(())
            }
            Kind::Directory(dir) => {
                let dir = dir.join(kind);
                std::fs::create_dir_all(&dir).map_err(|e| Self::io(&dir, e))?;
                let file = dir.join(file_name(key));
                let temporary = dir.join(format!("{}.tmp", file_name(key)));
                let text = format!("{}\n{value}", normal(key));
                std::fs::write(&temporary, text).map_err(|e| Self::io(&temporary, e))?;
                std::fs::rename(&temporary, &file).map_err(|e| Self::io(&file, e))
            }
        }
    }

    /// Records `value` under `kind` and `key` only if nothing is recorded
    /// there, in one step no other caller (another `Node` over the same
    /// records) can come between; `false`: a record was there, unchanged.
    /// A directory store links a whole temporary file to the record's
    /// name, which fails when the name exists.
    pub(crate) fn claim(&self, kind: &str, key: &str, value: &str) -> Result<bool, Error> {
        match &self.kind {
            Kind::Memory(map) => {
                let mut map = lock(map);
                let entry = map.entry((kind.to_string(), normal(key)));
                match entry {
                    std::collections::btree_map::Entry::Occupied(_) => Ok(false),
                    std::collections::btree_map::Entry::Vacant(v) => {
                        v.insert(value.to_string());
                        Ok(true)
                    }
                }
            }
            Kind::Directory(dir) => {
                let dir = dir.join(kind);
                std::fs::create_dir_all(&dir).map_err(|e| Self::io(&dir, e))?;
                let file = dir.join(file_name(key));
                let temporary =
                    dir.join(format!("{}.{}.claim", file_name(key), std::process::id()));
                let text = format!("{}\n{value}", normal(key));
                std::fs::write(&temporary, text).map_err(|e| Self::io(&temporary, e))?;
                let linked = std::fs::hard_link(&temporary, &file);
                let _ = std::fs::remove_file(&temporary);
                match linked {
                    Ok(()) => Ok(true),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
                    Err(e) => Err(Self::io(&file, e)),
                }
            }
        }
    }

    /// Forgets the record under `kind` and `key`; none there: Ok.
    pub(crate) fn remove(&self, kind: &str, key: &str) -> Result<(), Error> {
        match &self.kind {
            Kind::Memory(map) => {
                lock(map).remove(&(kind.to_string(), normal(key)));
                Ok(())
            }
            Kind::Directory(dir) => {
                let file = dir.join(kind).join(file_name(key));
                match std::fs::remove_file(&file) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Self::io(&file, e)),
                    _ => Ok(()),
                }
            }
        }
    }

    /// Every record of `kind`, as (key in lower case, value), by key.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn all(&self, kind: &str) -> Result<Vec<(String, String)>, Error> {
        match &self.kind {
            Kind::Memory(map) => Ok(lock(map)
                .iter()
                .filter(|((k, _), _)| k == kind)
                .map(|((_, key), value)| (key.clone(), value.clone()))
                .collect()),
            Kind::Directory(dir) => {
                let dir = dir.join(kind);
                let entries = match std::fs::read_dir(&dir) {
                    Ok(entries) => entries,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                    Err(e) => return Err(Self::io(&dir, e)),
                };
                let mut out = Vec::new();
                for entry in entries {
                    let path = entry.map_err(|e| Self::io(&dir, e))?.path();
                    if path.extension().is_none_or(|e| e != "rec") {
                        continue;
                    }
                    let text = std::fs::read_to_string(&path).map_err(|e| Self::io(&path, e))?;
                    if let Some((key, value)) = text.split_once('\n') {
                        out.push((key.to_string(), value.to_string()));
                    }
                }
                out.sort();
                Ok(out)
            }
        }
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

    fn claim_once(records: &NodeRecords) {
        assert!(records.claim("format", r"\\?\Volume{C}\", "first").unwrap());
        assert!(
            !records
                .claim("format", r"\\?\volume{c}\", "second")
                .unwrap()
        );
        assert_eq!(
            records.get("format", r"\\?\Volume{C}\").unwrap().as_deref(),
            Some("first")
        );
        records.remove("format", r"\\?\Volume{C}\").unwrap();
        assert!(records.claim("format", r"\\?\Volume{C}\", "third").unwrap());
    }

    #[test]
    fn a_claim_is_taken_once_until_removed() {
        claim_once(&NodeRecords::memory());
        let dir = tempfile::tempdir().unwrap();
        claim_once(&NodeRecords::directory(dir.path()));
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
}
