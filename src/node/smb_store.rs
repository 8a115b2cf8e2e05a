//! Where the node layer keeps which local paths are staged from which SMB
//! share root, so a global mapping is removed only with its last user.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

use super::store::Files;
use crate::Error;

/// The SMB reference store: one record per staged local path, naming the
/// share root (`\\server\share`) it uses, the account it was staged
/// with, and a keyed hash of the account and its password (HMAC-SHA256
/// under a random key of the store's own; never the password), so that a
/// mapping is reused only with the credentials it was made with.
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
    /// The key of the credential hashes, read or made when first needed.
    key: Arc<OnceLock<[u8; 32]>>,
    /// Whether no one chose this store ([`SmbStore::is_default`]).
    default: bool,
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

/// The records' kind, and key, of the store's credential-hash key.
const KEY: &str = "key";

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
    /// The keyed hash of the credentials (hex); `None` in records written
    /// before it was kept: unknown credentials.
    pub secret: Option<String>,
}

impl Reference {
    /// The record's file text: root, path and account, one a line.
    fn text(&self) -> String {
        format!(
            "{}\n{}\n{}\n{}\n",
            self.root,
            self.path,
            self.user.as_deref().unwrap_or_default(),
            self.secret.as_deref().unwrap_or_default()
        )
    }

    fn parse(text: &str) -> Option<Reference> {
        let mut lines = text.lines();
        Some(Reference {
            root: lines.next()?.to_string(),
            path: lines.next()?.to_string(),
            user: lines.next().map(str::to_string),
            secret: lines.next().filter(|s| !s.is_empty()).map(str::to_string),
        })
    }
}

impl Default for SmbStore {
    /// The store [`NodeOptions`](super::NodeOptions) takes when none is
    /// named: in memory, and [`SmbStore::is_default`].
    fn default() -> Self {
        Self {
            default: true,
            ..Self::memory()
        }
    }
}

impl SmbStore {
    /// A store in memory, lost when the process ends.
    pub fn memory() -> Self {
        Self {
            kind: Kind::Memory(Arc::default()),
            key: Arc::default(),
            default: false,
        }
    }

    /// A store in `dir` (created when first needed), kept across restarts.
    pub fn directory(dir: impl Into<PathBuf>) -> Self {
        Self {
            kind: Kind::Directory(Files::new(dir.into(), Self::io)),
            key: Arc::default(),
            default: false,
        }
    }

    /// Whether this is the default store, named by no one (in memory): a
    /// program serving the node may then keep the references somewhere
    /// durable ([`Node::with_state_dir`](super::Node::with_state_dir)).
    pub fn is_default(&self) -> bool {
        self.default
    }

    /// Whether the references outlive the process.
    pub fn is_durable(&self) -> bool {
        matches!(self.kind, Kind::Directory(_))
    }

    fn io(path: String, source: std::io::Error) -> Error {
        Error::SmbStore { path, source }
    }

    /// The key of the credential hashes: for a store in memory, one
    /// random key per process; for a directory, a random key written
    /// once, durably, in the directory (`key/`, a record as the references
    /// are, made in one step so that two processes agree on it).
    fn key(&self) -> Result<[u8; 32], Error> {
        if let Some(key) = self.key.get() {
            return Ok(*key);
        }
        let key = match &self.kind {
            Kind::Memory(_) => {
                static PROCESS: OnceLock<[u8; 32]> = OnceLock::new();
                match PROCESS.get() {
                    Some(key) => *key,
                    None => {
                        let made = random_key()
                            .map_err(|e| Self::io("the SMB store in memory".into(), e))?;
                        *PROCESS.get_or_init(|| made)
                    }
                }
            }
            Kind::Directory(files) => {
                let made =
                    random_key().map_err(|e| Self::io(files.dir().display().to_string(), e))?;
                files.create(KEY, KEY, &hex(&made))?;
                let text = files.read(KEY, KEY)?.unwrap_or_default();
                parse_key(&text).ok_or_else(|| {
                    Self::io(
                        files.file(KEY, KEY).display().to_string(),
                        std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            "the SMB store's key is not 64 hex digits",
                        ),
                    )
                })?
            }
        };
        Ok(*self.key.get_or_init(|| key))
    }

    /// The keyed hash (hex) of `user` and `password`, as references keep it.
    pub(crate) fn secret(&self, user: &str, password: &str) -> Result<String, Error> {
        let mut message = Vec::with_capacity(user.len() + password.len() + 1);
        message.extend_from_slice(user.to_lowercase().as_bytes());
        message.push(0);
        message.extend_from_slice(password.as_bytes());
        Ok(hex(&hmac_sha256(&self.key()?, &message)))
    }

    /// Records that `path` is staged from `root` with the account `user`
    /// and the credentials whose keyed hash is `secret`.
    pub(crate) fn add(
        &self,
        root: &str,
        path: &str,
        user: &str,
        secret: &str,
    ) -> Result<(), Error> {
        let reference = Reference {
            root: root.to_lowercase(),
            path: path.to_string(),
            user: Some(user.to_string()),
            secret: Some(secret.to_string()),
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
        Ok(self.holders_of(root)?.into_iter().map(|r| r.user).collect())
    }

    /// The reference of each staged path that uses `root`.
    pub(crate) fn holders_of(&self, root: &str) -> Result<Vec<Reference>, Error> {
        let root = root.to_lowercase();
        Ok(self
            .references_all()?
            .into_iter()
            .filter(|r| r.root == root)
            .collect())
    }
}

/// HMAC-SHA256 (RFC 2104, with SHA-256's 64-byte block).
fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// 32 bytes from the operating system's random source.
fn random_key() -> Result<[u8; 32], std::io::Error> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(std::io::Error::other)?;
    Ok(key)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_key(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(store: &SmbStore) {
        store.add(r"\\s\a", r"c:\x\1", "u", "h").unwrap();
        store.add(r"\\s\a", r"C:\X\2", "u", "h").unwrap();
        store.add(r"\\s\b", r"c:\x\3", "", "h").unwrap();
        store.add(r"\\s\a", r"c:\X\1", "u", "h").unwrap();
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
    fn hmac_sha256_matches_rfc_4231() {
        // RFC 4231 test case 2 has a 4-byte key; case 1's 20-byte key
        // padded with zeros to 32 bytes is the same HMAC key (RFC 2104
        // pads a short key with zeros to the block).
        let mut key = [0u8; 32];
        key[..20].copy_from_slice(&[0x0b; 20]);
        assert_eq!(
            hex(&hmac_sha256(&key, b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
    }

    #[test]
    fn credential_hashes_differ_by_password_and_keep_across_instances() {
        let dir = tempfile::tempdir().unwrap();
        let store = SmbStore::directory(dir.path());
        let a = store.secret("u", "p1").unwrap();
        assert_ne!(a, store.secret("u", "p2").unwrap());
        assert_eq!(a, store.secret("U", "p1").unwrap());
        assert_eq!(
            a,
            SmbStore::directory(dir.path()).secret("u", "p1").unwrap()
        );
        assert_ne!(a, SmbStore::memory().secret("u", "p1").unwrap());
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
        store.add(r"\\s\a", r"c:\x\1", "u", "h").unwrap();
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
