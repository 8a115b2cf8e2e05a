//! The node's files on disk: one naming rule, one write rule, one read
//! rule, for the records ([`NodeRecords`](super::NodeRecords)) and the SMB
//! references ([`SmbStore`](super::SmbStore)).
//!
//! - **Names are fixed-length**: a file is named by a hash of its key (the
//!   key in lower case: Windows paths and volume ids compare so), 32 hex
//!   digits and an extension, whatever the key's length. kubelet's staging
//!   paths since Kubernetes 1.25 are about 140 characters
//!   (`...\plugins\kubernetes.io\csi\<driver>\<sha256>\globalmount`) and a
//!   pod's target path about 133; a name spelling the key out in hex is
//!   twice that, over the 255 bytes NTFS and ext4 allow in a name.
//! - **The key is kept inside**, with the kind and the value's length, so a
//!   file is checked to be the record asked for, whole.
//! - **Writes are durable**: the text goes to a temporary file that is
//!   flushed to the device, renamed over the record, and the directory is
//!   flushed (on Unix; NTFS journals a rename). A crash or a power loss
//!   leaves the old record or the new one, never an empty or half one.
//! - **What cannot be read is not guessed at**: an empty, cut short or
//!   foreign file is an [`Error`] naming the file, never taken for "no
//!   record". Whoever reads it fails closed (no format, no removal) until
//!   someone looks at the host and moves the file away.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::Error;

/// The first line of every record file this crate writes.
const HEADER: &str = "csi-proxy-client record 1";

/// A key as records compare it: lower case.
pub(crate) fn normal(key: &str) -> String {
    key.to_lowercase()
}

/// The file name of `key` (compared as [`normal`]): 32 hex digits of its
/// SHA-256 and `.rec`, 36 bytes whatever the key.
pub(crate) fn file_name(key: &str) -> String {
    let digest = Sha256::digest(normal(key).as_bytes());
    let mut name = String::with_capacity(36);
    for byte in &digest[..16] {
        name.push_str(&format!("{byte:02x}"));
    }
    name + ".rec"
}

/// Why a record file cannot be used, as the error its store reports.
fn unreadable(why: String) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "{why}; the node does not act on a record it cannot read: check the host, then move the file away"
        ),
    )
}

/// A directory of record files, one subdirectory per kind.
#[derive(Clone, Debug)]
pub(crate) struct Files {
    dir: PathBuf,
    /// The error of this store for a file and what the OS said.
    error: fn(String, std::io::Error) -> Error,
}

impl Files {
    pub(crate) fn new(dir: PathBuf, error: fn(String, std::io::Error) -> Error) -> Self {
        Files { dir, error }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn fail(&self, path: &Path, source: std::io::Error) -> Error {
        (self.error)(path.display().to_string(), source)
    }

    /// The file of `key` under `kind`.
    pub(crate) fn file(&self, kind: &str, key: &str) -> PathBuf {
        self.dir.join(kind).join(file_name(key))
    }

    fn encode(kind: &str, key: &str, value: &str) -> Result<String, std::io::Error> {
        if key.contains('\n') || kind.contains('\n') {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a record's key is one line",
            ));
        }
        Ok(format!(
            "{HEADER}\nkind {kind}\nkey {}\nlength {}\n{value}",
            normal(key),
            value.len()
        ))
    }

    /// The key and value of a record file's text, checked to be a whole
    /// record of `kind` (and of `key`, when given).
    fn decode(
        &self,
        file: &Path,
        kind: &str,
        key: Option<&str>,
        text: &str,
    ) -> Result<(String, String), Error> {
        let broken = |why: &str| self.fail(file, unreadable(why.to_string()));
        if text.is_empty() {
            return Err(broken(
                "the record is empty (written without a flush before a crash?)",
            ));
        }
        let mut rest = text;
        let mut line = || -> Option<&str> {
            let (line, after) = rest.split_once('\n')?;
            rest = after;
            Some(line)
        };
        if line() != Some(HEADER) {
            return Err(broken("not a record this crate writes"));
        }
        let field = |line: Option<&str>, name: &str| {
            line.and_then(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .map(str::to_string)
        };
        let (Some(found_kind), Some(found_key), Some(length)) = (
            field(line(), "kind"),
            field(line(), "key"),
            field(line(), "length"),
        ) else {
            return Err(broken("the record's head is cut short"));
        };
        if found_kind != kind {
            return Err(broken(&format!(
                "a record of kind {found_kind}, not {kind}"
            )));
        }
        let named = file.file_name().and_then(|n| n.to_str()) == Some(&file_name(&found_key));
        if !named || key.is_some_and(|key| found_key != normal(key)) {
            return Err(broken(&format!(
                "a record of {found_key}, which its file is not named after"
            )));
        }
        if length.parse::<usize>().ok() != Some(rest.len()) {
            return Err(broken(&format!(
                "the record's value is {} bytes, its head says {length}",
                rest.len()
            )));
        }
        Ok((found_key, rest.to_string()))
    }

    /// The value recorded under `kind` and `key`.
    pub(crate) fn read(&self, kind: &str, key: &str) -> Result<Option<String>, Error> {
        let file = self.file(kind, key);
        match std::fs::read(&file) {
            Ok(bytes) => {
                let text = String::from_utf8(bytes)
                    .map_err(|_| self.fail(&file, unreadable("not UTF-8".into())))?;
                self.decode(&file, kind, Some(key), &text)
                    .map(|(_, value)| Some(value))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.fail(&file, e)),
        }
    }

    /// A temporary file beside `file` holding `text`, flushed to the
    /// device; its name is this writer's alone.
    fn temporary(&self, file: &Path, text: &str) -> Result<PathBuf, Error> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = file.parent().expect("a record file has a directory");
        std::fs::create_dir_all(dir).map_err(|e| self.fail(dir, e))?;
        let temporary = file.with_extension(format!(
            "{}.{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            let mut out = std::fs::File::create(&temporary)?;
            out.write_all(text.as_bytes())?;
            out.sync_all()
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(self.fail(&temporary, e));
        }
        Ok(temporary)
    }

    /// Records `value` under `kind` and `key`, replacing what was there,
    /// durably (see the module docs).
    pub(crate) fn write(&self, kind: &str, key: &str, value: &str) -> Result<(), Error> {
        let file = self.file(kind, key);
        let text = Self::encode(kind, key, value).map_err(|e| self.fail(&file, e))?;
        let temporary = self.temporary(&file, &text)?;
        if let Err(e) = std::fs::rename(&temporary, &file) {
            let _ = std::fs::remove_file(&temporary);
            return Err(self.fail(&file, e));
        }
        self.sync_dir(&file)
    }

    /// Records `value` under `kind` and `key` only if no record is there,
    /// in one step no other writer (thread or process) can come between:
    /// a whole temporary file is linked to the record's name, which fails
    /// when the name exists. `false`: a record was there, unchanged.
    pub(crate) fn create(&self, kind: &str, key: &str, value: &str) -> Result<bool, Error> {
        let file = self.file(kind, key);
        let text = Self::encode(kind, key, value).map_err(|e| self.fail(&file, e))?;
        let temporary = self.temporary(&file, &text)?;
        let linked = std::fs::hard_link(&temporary, &file);
        let _ = std::fs::remove_file(&temporary);
        match linked {
            Ok(()) => self.sync_dir(&file).map(|()| true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(self.fail(&file, e)),
        }
    }

    /// Forgets the record under `kind` and `key`; none there: Ok.
    pub(crate) fn remove(&self, kind: &str, key: &str) -> Result<(), Error> {
        let file = self.file(kind, key);
        match std::fs::remove_file(&file) {
            Ok(()) => self.sync_dir(&file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.fail(&file, e)),
        }
    }

    /// Every record of `kind`, as (key in lower case, value), by key. A
    /// file that is not a whole record of `kind` is an error: a listing
    /// that skipped it would read as "nothing there".
    pub(crate) fn list(&self, kind: &str) -> Result<Vec<(String, String)>, Error> {
        let dir = self.dir.join(kind);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.fail(&dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| self.fail(&dir, e))?.path();
            // Temporary files are a writer's, unfinished or left by a crash.
            if path.extension().is_none_or(|e| e != "rec") {
                continue;
            }
            let bytes = std::fs::read(&path).map_err(|e| self.fail(&path, e))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| self.fail(&path, unreadable("not UTF-8".into())))?;
            out.push(self.decode(&path, kind, None, &text)?);
        }
        out.sort();
        Ok(out)
    }

    /// Flushes the directory of `file`, so that a rename or removal in it
    /// outlives a power loss (Unix; NTFS journals its metadata).
    fn sync_dir(&self, file: &Path) -> Result<(), Error> {
        #[cfg(unix)]
        {
            let dir = file.parent().expect("a record file has a directory");
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| self.fail(dir, e))?;
        }
        let _ = file;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(dir: &Path) -> Files {
        Files::new(dir.to_path_buf(), |path, source| Error::Store {
            path,
            source,
        })
    }

    /// kubelet's staging path for a CSI volume since Kubernetes 1.25: the
    /// driver's name (up to 63 characters) and the SHA-256 of the volume
    /// handle; and a pod's target path.
    fn kubelet_paths(driver: &str) -> [String; 2] {
        let hash = "4c5f2a9b1e0d8f7c6b5a493827161504f3e2d1c0b9a8978695a4b3c2d1e0f9a8";
        [
            format!(r"c:\var\lib\kubelet\plugins\kubernetes.io\csi\{driver}\{hash}\globalmount"),
            r"c:\var\lib\kubelet\pods\0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\volumes\kubernetes.io~csi\pvc-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\mount".to_string(),
        ]
    }

    #[test]
    fn names_are_fixed_length_on_kubelets_real_paths() {
        let dir = tempfile::tempdir().unwrap();
        let store = files(dir.path());
        let longest = "d".repeat(63);
        for driver in ["disk.csi.azure.com", "smb.csi.k8s.io", longest.as_str()] {
            for path in kubelet_paths(driver) {
                assert_eq!(file_name(&path).len(), 36);
                store.write("stage", &path, "disk=page83 x\n").unwrap();
                assert_eq!(
                    store
                        .read("stage", &path.to_uppercase())
                        .unwrap()
                        .as_deref(),
                    Some("disk=page83 x\n"),
                    "{path}"
                );
            }
        }
        assert_eq!(
            store.list("stage").unwrap().len(),
            4,
            "the pod path is shared"
        );
    }

    #[test]
    fn a_record_that_is_not_whole_is_an_error_naming_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = files(dir.path());
        store.write("format", "v1", "sent").unwrap();
        let file = store.file("format", "v1");
        let whole = std::fs::read_to_string(&file).unwrap();
        for broken in [
            String::new(),
            "\n".into(),
            whole[..whole.len() - 1].to_string(),
            whole.replace("key v1", "key v2"),
            whole.replace("kind format", "kind stage"),
            "sent\n".into(),
        ] {
            std::fs::write(&file, &broken).unwrap();
            let e = store.read("format", "v1").unwrap_err();
            assert!(
                e.to_string().contains(&file.display().to_string()),
                "{broken:?}: {e}"
            );
            assert!(store.list("format").is_err(), "{broken:?}");
        }
    }

    #[test]
    fn create_takes_a_name_once_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = files(dir.path());
        assert!(store.create("format", "v", "first").unwrap());
        assert!(!store.create("format", "V", "second").unwrap());
        assert_eq!(store.read("format", "v").unwrap().as_deref(), Some("first"));
        store.remove("format", "v").unwrap();
        store.remove("format", "v").unwrap();
        assert!(store.create("format", "v", "third").unwrap());
        let names: Vec<_> = std::fs::read_dir(dir.path().join("format"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn values_keep_their_lines_and_a_key_is_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let store = files(dir.path());
        store.write("k", "a", "one\ntwo\n\n").unwrap();
        assert_eq!(
            store.read("k", "a").unwrap().as_deref(),
            Some("one\ntwo\n\n")
        );
        assert!(store.write("k", "a\nb", "x").is_err());
    }
}
