//! Behaviour tests of the simulated host on whole nodes, one file per part
//! of the model; the helpers here are shared with the groups' own tests
//! (`smb/tests.rs`, `iscsi/tests.rs`, `system/tests.rs`).

use super::namespace::{Entry, LinkKind};
use super::storage::{DiskSpec, FileSystem, GPT_MSR, PartitionStyle, PartitionType};
use super::*;

mod concurrency;
mod default_node;
mod disk;
mod filesystem;
mod flows;
mod hotplug;
mod namespace;
mod seed;
mod volume;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const K: &str = r"C:\var\lib\kubelet";

/// A host on a temporary sandbox (removed on drop).
pub(super) struct T {
    pub(super) host: Host,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for T {
    type Target = Host;
    fn deref(&self) -> &Host {
        &self.host
    }
}

/// The default node.
pub(super) fn host() -> T {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(HostConfig::new(dir.path().join("sb"))).unwrap();
    T { host, _dir: dir }
}

fn msg<T: std::fmt::Debug>(r: HostResult<T>) -> String {
    r.unwrap_err().message().to_string()
}

pub(super) fn ok_invariants(h: &Host) {
    if let Err(v) = h.check_invariants() {
        panic!("invariants violated: {v:#?}");
    }
}

fn c_volume(h: &Host) -> String {
    let snap = h.snapshot();
    let d0 = snap.disk(0).unwrap();
    d0.partitions
        .iter()
        .find(|p| p.drive_letter == Some('C'))
        .and_then(|p| p.volume.clone())
        .unwrap()
}

/// Attaches a RAW disk, partitions and formats it; returns (disk, volume id).
fn staged_disk(h: &Host, size: u64) -> (u32, String) {
    let (n, _) = h.attach_disk(DiskSpec::new(size)).unwrap();
    h.run(|node| node.partition_disk(n)).unwrap();
    let id = h
        .run(|node| node.list_volumes_on_disk(n, 0))
        .unwrap()
        .remove(0);
    h.run(|node| node.format_volume(&id)).unwrap();
    (n, id)
}
