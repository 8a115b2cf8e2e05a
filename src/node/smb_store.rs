//! Where the node layer keeps which local paths are staged from which SMB
//! share root, so a global mapping is removed only with its last user.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::store::Files;
use crate::Error;

/// The SMB reference store: one record per staged local path, naming the
/// share root (`\\server\share`) it uses and the account it was staged
/// with (never the password).
///
/// [`SmbStore::memory`] is for tests and for drivers that never restart
/// with volumes staged; [`SmbStore::directory`] keeps one small file per
/// staged path in a directory the driver owns, so the counts survive a
/// restart of the driver (as csi-driver-smb keeps its references in files,
/// `pkg/mounter/refcounter_windows.go`): without them a restarted driver
/// leaks the mapping of every share it had staged (csi-driver-smb#1039,
/// #1035). Clones share the store.
#[derive(Clone, Debug)]
pub struct SmbStore {
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Memory(Arc<Mutex<BTreeMap<String, Reference>>>),
    /// One record file per staged path, kind `references`, written and
    /// read as the node's records are (`store`).
    Directory(Files),
}

/// The records' kind of a staged path's reference.
const REFERENCES: &str = "references";

/// One staged path, as the store records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reference {
    /// The share root, lowercase `\\server\share`.
    pub root: String,
    /// The staged local path, as given.
    pub path: String,
    /// The account the share was mapped with (empty: none); `None` in
    /// records written before accounts were kept.
    pub user: Option<String>,
}

impl Reference {
    /// The record's file text: root, path and account, one a line.
    fn text(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.root,
            self.path,
            self.user.as_deref().unwrap_or_default()
        )
    }

    fn parse(text: &str) -> Option<Reference> {
        let mut lines = text.lines();
        Some(Reference {
            root: lines.next()?.to_string(),
            path: lines.next()?.to_string(),
            user: lines.next().map(str::to_string),
        })
    }
}

impl Default for SmbStore {
    fn default() -> Self {
        Self::memory()
    }
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
            kind: Kind::Directory(Files::new(dir.into(), Self::io)),
        }
    }

    fn io(path: String, source: std::io::Error) -> Error {
        Error::SmbStore { path, source }
    }

    /// Records that `path` is staged from `root` with the account `user`.
    pub(crate) fn add(&self, root: &str, path: &str, user: &str) -> Result<(), Error> {
        let reference = Reference {
            root: root.to_lowercase(),
            path: path.to_string(),
            user: Some(user.to_string()),
        };
        match &self.kind {
            Kind::Memory(map) => {
                lock(map).insert(path.to_lowercase(), reference);
                Ok(())
            }
            Kind::Directory(files) => files.write(REFERENCES, path, &reference.text()),
        }
    }

    /// The share root `path` is staged from, if recorded.
    pub(crate) fn root_of(&self, path: &str) -> Result<Option<String>, Error> {
        match &self.kind {
            Kind::Memory(map) => Ok(lock(map).get(&path.to_lowercase()).map(|r| r.root.clone())),
            Kind::Directory(files) => Ok(files
                .read(REFERENCES, path)?
                .and_then(|text| text.lines().next().map(str::to_string))),
        }
    }

    /// Forgets `path`.
    pub(crate) fn remove(&self, path: &str) -> Result<(), Error> {
        match &self.kind {
            Kind::Memory(map) => {
                lock(map).remove(&path.to_lowercase());
                Ok(())
            }
            Kind::Directory(files) => files.remove(REFERENCES, path),
        }
    }

    /// Every recorded staged path, ordered by path.
    pub(crate) fn references_all(&self) -> Result<Vec<Reference>, Error> {
        let mut all = match &self.kind {
            Kind::Memory(map) => lock(map).values().cloned().collect(),
            Kind::Directory(files) => {
                let mut all = Vec::new();
                for (path, text) in files.list(REFERENCES)? {
                    // A whole record that names no root and path is not
                    // this crate's: unknown, so nothing is removed for it.
                    let reference = Reference::parse(&text).ok_or_else(|| {
                        Self::io(
                            files.file(REFERENCES, &path).display().to_string(),
                            std::io::Error::new(
                                std::io::ErrorKind::InvalidData,
                                "an SMB reference without its share and path",
                            ),
                        )
                    })?;
                    all.push(reference);
                }
                all
            }
        };
        all.sort_by_key(|r: &Reference| r.path.to_lowercase());
        Ok(all)
    }

    /// How many staged paths use `root`.
    pub fn references(&self, root: &str) -> Result<usize, Error> {
        Ok(self.users_of(root)?.len())
    }

    /// The account of each staged path that uses `root` (`None` for
    /// records that do not say).
    pub(crate) fn users_of(&self, root: &str) -> Result<Vec<Option<String>>, Error> {
        let root = root.to_lowercase();
        Ok(self
            .references_all()?
            .into_iter()
            .filter(|r| r.root == root)
            .map(|r| r.user)
            .collect())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(store: &SmbStore) {
        store.add(r"\\s\a", r"c:\x\1", "u").unwrap();
        store.add(r"\\s\a", r"C:\X\2", "u").unwrap();
        store.add(r"\\s\b", r"c:\x\3", "").unwrap();
        store.add(r"\\s\a", r"c:\X\1", "u").unwrap();
        assert_eq!(
            store.users_of(r"\\S\A").unwrap(),
            [Some("u".to_string()), Some("u".to_string())]
        );
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
        let all = again.references_all().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].path, r"c:\x\3");
        assert_eq!(all[1].user.as_deref(), Some(""));
    }

    #[test]
    fn a_reference_that_cannot_be_read_is_an_error_not_a_missing_user() {
        let dir = tempfile::tempdir().unwrap();
        let store = SmbStore::directory(dir.path());
        store.add(r"\\s\a", r"c:\x\1", "u").unwrap();
        let file = std::fs::read_dir(dir.path().join(REFERENCES))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        std::fs::write(&file, "").unwrap();
        let e = store.references(r"\\s\a").unwrap_err();
        assert!(e.to_string().contains(&file.display().to_string()), "{e}");
        assert!(store.root_of(r"c:\x\1").is_err());
    }
}
