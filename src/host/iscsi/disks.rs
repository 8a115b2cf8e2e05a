//! Where iSCSI meets the rest of the [`HostState`]: a session's LUNs become disks
//! of the node. An iSCSI RPC runs with [`NodeDisks`], the node's disk side
//! borrowed apart from its iSCSI state ([`HostState::iscsi`]): sessions attach
//! their LUNs (offline, RAW, sizes rounded up to whole sectors) and detach
//! them; every iSCSI call fails while `MSiSCSI` is not running.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::{DiskSpec, IscsiState, MSISCSI};
use crate::host::namespace::Namespace;
use crate::host::state::{HostState, detach_disk};
use crate::host::storage::{self, DiskHandle, Page83, Storage};
use crate::host::system::ServiceStatus;

/// The node's disk side, borrowed apart from its iSCSI state: where an
/// iSCSI session attaches and detaches the disks of its LUNs.
#[derive(Debug)]
pub struct NodeDisks<'a> {
    pub(super) storage: &'a mut Storage,
    pub(super) ns: &'a Namespace,
    pub(super) detached_volumes: &'a mut BTreeSet<String>,
    pub(super) iscsi_disks: &'a mut BTreeMap<u32, DiskHandle>,
    pub(super) msiscsi_running: bool,
}

impl NodeDisks<'_> {
    /// Adds a disk for a LUN (offline, raw, as Windows' SAN policy leaves
    /// shared-bus disks) and returns its disk number (the lowest free one).
    pub(super) fn attach(&mut self, disk: DiskSpec) -> u32 {
        // Disks are whole sectors; seeds already enforce it, test hooks may not.
        let size = disk.size.max(1).div_ceil(512) * 512;
        let spec = storage::DiskSpec {
            location: Some(disk.location),
            page83: Some(Page83::Binary(disk.page83)),
            serial_number: Some(disk.serial),
            offline: true,
            ..storage::DiskSpec::new(size)
        };
        let (number, handle) = self
            .storage
            .attach_disk(spec)
            .expect("a whole-sector disk with a free number always attaches");
        self.iscsi_disks.insert(number, handle);
        number
    }

    /// Removes the disk with this number (and its partitions and volumes)
    /// if it is the one a session attached.
    pub(super) fn detach(&mut self, number: u32) {
        // Only the disk the session attached: a disk that was detached behind
        // the session's back (test hook) and whose number was reused stays.
        let Some(handle) = self.iscsi_disks.remove(&number) else {
            return;
        };
        if self.storage.all_disks().any(|d| d.handle == handle)
            && let Err(e) = detach_disk(self.storage, self.ns, self.detached_volumes, handle)
        {
            tracing::warn!(disk = number, error = %e, "detaching iSCSI disk failed");
        }
    }

    /// Whether the `MSiSCSI` service runs; while it does not, every iSCSI
    /// operation fails.
    pub(super) fn initiator_service_running(&self) -> bool {
        self.msiscsi_running
    }
}

impl HostState {
    /// Runs an iSCSI RPC: the iSCSI model with the node's disks, borrowed
    /// apart from it (`MSiSCSI`'s state refreshed first).
    pub(crate) fn iscsi<R>(
        &mut self,
        op: impl FnOnce(&mut IscsiState, &mut NodeDisks<'_>) -> R,
    ) -> R {
        self.system.refresh(MSISCSI, Instant::now());
        let msiscsi_running = self
            .system
            .service(MSISCSI)
            .is_some_and(|s| s.status() == ServiceStatus::Running);
        let HostState {
            iscsi,
            storage,
            ns,
            detached_volumes,
            iscsi_disks,
            ..
        } = self;
        let mut disks = NodeDisks {
            storage,
            ns,
            detached_volumes,
            iscsi_disks,
            msiscsi_running,
        };
        op(iscsi, &mut disks)
    }

    /// Sessions whose disks are gone (see
    /// [`Host::check_invariants`](crate::host::Host::check_invariants)).
    pub(crate) fn iscsi_violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in self.iscsi.sessions() {
            for n in &s.disks {
                let present = self.storage.all_disks().any(|d| {
                    d.number == *n && self.iscsi_disks.get(n).is_none_or(|h| *h == d.handle)
                });
                if !present {
                    out.push(format!(
                        "iSCSI session {} ({}): disk {n} does not exist",
                        s.id, s.iqn
                    ));
                }
            }
        }
        out
    }
}
