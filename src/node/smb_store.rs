//! Where the node layer keeps which local paths are staged from which SMB
//! share root, so a global mapping is removed only with its last user.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::Error;

/// The SMB reference store: one record per staged local path, naming the
/// share root (`\\server\share`) it uses.
///
/// [`SmbStore::memory`] is for tests and for drivers that never restart
/// with volumes staged; [`SmbStore::directory`] keeps one small file per
/// staged path in a directory the driver owns, so the counts survive a
/// restart of the driver. Clones share the store.
#[derive(Clone, Debug)]
pub struct SmbStore {
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Memory(Arc<Mutex<BTreeMap<String, String>>>),
    Directory(PathBuf),
}

impl Default for SmbStore {
    fn default() -> Self {
        Self::memory()
    }
}

/// A file name for a local path: paths compare case-insensitively on Windows.
fn file_name(path: &str) -> String {
    path.to_lowercase()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        + ".ref"
}

impl SmbStore {
    /// A store in memory, lost when the process ends.
    pub fn memory() -> Self {
        Self {
            kind: Kind::Memory(Arc::default()),
        }
    }

    /// A store in `dir` (created when first needed), kept across restarts.
    pub fn directory(dir: impl Into<PathBuf>) -> Self {
        Self {
            kind: Kind::Directory(dir.into()),
        }
    }

    fn io(dir: &Path, source: std::io::Error) -> Error {
        Error::SmbStore {
            path: dir.display().to_string(),
            source,
        }
    }

    /// Records that `path` is staged from `root`.
    pub(crate) fn add(&self, root: &str, path: &str) -> Result<(), Error> {
        match &self.kind {
            Kind::Memory(map) => {
                lock(map).insert(path.to_lowercase(), root.to_string());
                Ok(())
            }
            Kind::Directory(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| Self::io(dir, e))?;
                let file = dir.join(file_name(path));
                std::fs::write(&file, format!("{root}\n{path}\n")).map_err(|e| Self::io(&file, e))
            }
        }
    }

    /// The share root `path` is staged from, if recorded.
    pub(crate) fn root_of(&self, path: &str) -> Result<Option<String>, Error> {
        match &self.kind {
            Kind::Memory(map) => Ok(lock(map).get(&path.to_lowercase()).cloned()),
            Kind::Directory(dir) => {
                let file = dir.join(file_name(path));
                match std::fs::read_to_string(&file) {
                    Ok(text) => Ok(text.lines().next().map(str::to_string)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(Self::io(&file, e)),
                }
            }
        }
    }

    /// Forgets `path`.
    pub(crate) fn remove(&self, path: &str) -> Result<(), Error> {
        match &self.kind {
            Kind::Memory(map) => {
                lock(map).remove(&path.to_lowercase());
                Ok(())
            }
            Kind::Directory(dir) => {
                let file = dir.join(file_name(path));
                match std::fs::remove_file(&file) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Self::io(&file, e)),
                    _ => Ok(()),
                }
            }
        }
    }

    /// How many staged paths use `root`.
    pub fn references(&self, root: &str) -> Result<usize, Error> {
        let root = root.to_lowercase();
        match &self.kind {
            Kind::Memory(map) => Ok(lock(map).values().filter(|r| **r == root).count()),
            Kind::Directory(dir) => {
                let entries = match std::fs::read_dir(dir) {
                    Ok(entries) => entries,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
                    Err(e) => return Err(Self::io(dir, e)),
                };
                let mut count = 0;
                for entry in entries {
                    let entry = entry.map_err(|e| Self::io(dir, e))?;
                    if entry.path().extension().is_none_or(|x| x != "ref") {
                        continue;
                    }
                    let text =
                        std::fs::read_to_string(entry.path()).map_err(|e| Self::io(dir, e))?;
                    if text.lines().next() == Some(root.as_str()) {
                        count += 1;
                    }
                }
                Ok(count)
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

    fn counts(store: &SmbStore) {
        store.add(r"\\s\a", r"c:\x\1").unwrap();
        store.add(r"\\s\a", r"C:\X\2").unwrap();
        store.add(r"\\s\b", r"c:\x\3").unwrap();
        store.add(r"\\s\a", r"c:\X\1").unwrap();
        assert_eq!(store.references(r"\\s\a").unwrap(), 2);
        assert_eq!(store.root_of(r"C:\x\2").unwrap().as_deref(), Some(r"\\s\a"));
        store.remove(r"c:\x\2").unwrap();
        store.remove(r"c:\x\2").unwrap();
        assert_eq!(store.references(r"\\s\a").unwrap(), 1);
        assert_eq!(store.root_of(r"c:\x\2").unwrap(), None);
    }

    #[test]
    fn memory_store_counts_paths_per_root() {
        counts(&SmbStore::memory());
    }

    #[test]
    fn directory_store_counts_and_survives_a_new_instance() {
        let dir = tempfile::tempdir().unwrap();
        counts(&SmbStore::directory(dir.path().join("refs")));
        let again = SmbStore::directory(dir.path().join("refs"));
        assert_eq!(again.references(r"\\s\a").unwrap(), 1);
        assert_eq!(again.references(r"\\s\b").unwrap(), 1);
    }
}
