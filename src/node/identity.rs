//! Identity before change: each staging path records the disk it was
//! staged from (its page 83 id or serial number) and the volume mounted
//! there, in the node's records (kind `stage`). A stage, an expand and an
//! offline check the record first, and a disk's volume is staged at one
//! path only. A location (a LUN) names a slot, not a disk: after a detach
//! the next disk attached gets the same LUN and often the same number, so
//! a stale attachment or a kubelet restart otherwise reaches another pod's
//! disk (azuredisk-csi-driver and aws-ebs-csi-driver match by location or
//! serial alone, pkg/azuredisk/nodeserver.go, pkg/driver/node.go).

use std::collections::BTreeMap;

use super::groups::{DiskFacts, Place};
use super::{DiskInfo, Node, NodeRecords, outcome_unknown};
use crate::Error;

/// The records' kind for staging paths.
const KIND: &str = "stage";

/// What a staging path was staged from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Staged {
    /// The disk's id (`page83 <id>` or `serial <number>`); `None` when
    /// the disk shows neither.
    pub disk: Option<String>,
    /// The volume mounted at the path.
    pub volume: String,
}

impl Staged {
    fn encode(&self) -> String {
        format!(
            "disk={}\nvolume={}\n",
            self.disk.as_deref().unwrap_or(""),
            self.volume
        )
    }

    fn decode(text: &str) -> Staged {
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
                .unwrap_or("")
                .to_string()
        };
        let disk = field("disk");
        Staged {
            disk: (!disk.is_empty()).then_some(disk),
            volume: field("volume"),
        }
    }

    fn describe(&self) -> String {
        format!(
            "disk {} (volume {})",
            self.disk.as_deref().unwrap_or("with no id"),
            self.volume
        )
    }

    /// What the disk ids say: `Some(same)` when the record and `now` both
    /// show one of the same kind (both page 83 ids, or both serial
    /// numbers), which then decide; `None` when either has none, or a page
    /// 83 id stands against a serial number (an id that appeared later
    /// cannot be told from another disk's).
    fn ids_decide(&self, now: &DiskNow) -> Option<bool> {
        let kind = |id: &str| id.split_once(' ').map(|(kind, _)| kind.to_string());
        match (&self.disk, &now.id) {
            (Some(recorded), Some(id)) if kind(recorded) == kind(id) => Some(recorded == id),
            _ => None,
        }
    }

    /// Whether this record is of the disk `now` shows. The disk ids decide
    /// when both sides show one: a clone (a PVC clone, a snapshot restore)
    /// keeps its source's partition GUIDs, so its volume can carry the
    /// source's volume id under another page 83 id (issue 42, case 15).
    /// The volume id decides only when a side shows no disk id.
    fn on(&self, now: &DiskNow) -> bool {
        self.ids_decide(now)
            .unwrap_or_else(|| self.shows_volume(now))
    }

    /// Whether `now` lists the recorded volume.
    fn shows_volume(&self, now: &DiskNow) -> bool {
        now.volumes
            .iter()
            .any(|v| v.eq_ignore_ascii_case(&self.volume))
    }

    /// Whether the path this record is of may share a volume with the disk
    /// `now` shows: the same disk id, or its volume listed there. Broader
    /// than [`Staged::on`], for refusals only (one volume at one path): a
    /// mount point names its volume by id, so a path recorded from a
    /// clone's source that still holds that id holds the clone's volume.
    fn may_share(&self, now: &DiskNow) -> bool {
        self.ids_decide(now) == Some(true) || self.shows_volume(now)
    }
}

/// A disk's id as the records keep it: `page83 <id>`, else `serial
/// <number>`, else `None`.
pub(super) fn disk_id(ids: &BTreeMap<u32, DiskFacts>, n: u32) -> Option<String> {
    ids.get(&n).and_then(|f| {
        let page83 = f.page83.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let serial = f
            .serial_number
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        match (page83, serial) {
            (Some(p), _) => Some(format!("page83 {p}")),
            (None, Some(s)) => Some(format!("serial {s}")),
            (None, None) => None,
        }
    })
}

/// What a disk shows now: its id and its volumes.
#[derive(Debug)]
pub(super) struct DiskNow {
    number: u32,
    id: Option<String>,
    volumes: Vec<String>,
}

impl DiskNow {
    /// Whether anything shows which disk this is.
    fn tells(&self) -> bool {
        self.id.is_some() || !self.volumes.is_empty()
    }

    fn describe(&self) -> String {
        format!(
            "disk {} ({}{})",
            self.number,
            self.id.as_deref().unwrap_or("no id"),
            match self.volumes.as_slice() {
                [] => String::new(),
                v => format!(", volumes {}", v.join(", ")),
            }
        )
    }
}

/// The disk a stage is given is still where it was found: `places` is the
/// node's location listing, made after the rescan of the look that found
/// it. [`Node::find_disk`] takes a disk from the listing made while it
/// rescans; a listing that old can still show a disk Windows has removed,
/// its number since given to a disk attached elsewhere. Then the disk is
/// looked for again ([`Error::DiskNotFound`], a retry), never staged.
fn check_place(given: &DiskInfo, places: &BTreeMap<u32, DiskFacts>) -> Result<(), Error> {
    let now = places.get(&given.number).map(DiskFacts::place);
    let then = given.place();
    if now == Some(then) {
        return Ok(());
    }
    let describe = |(a, b, t, l): Place| {
        let part = |name: &str, v: Option<u32>| v.map(|v| format!("{name} {v}"));
        [
            part("adapter", a),
            part("bus", b),
            part("target", t),
            part("LUN", l),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ")
    };
    Err(Error::DiskNotFound {
        selector: format!("disk {} at {}", given.number, describe(then)),
        waited: std::time::Duration::ZERO,
        seen: match now {
            Some(now) => format!("disk {} is at {} now", given.number, describe(now)),
            None => format!("disk {} is no longer listed", given.number),
        },
    })
}

fn records_of(node: &Node) -> &NodeRecords {
    &node.inner.options.records
}

impl Node {
    /// Every staging path's record (paths in lower case).
    pub(super) fn stage_records(&self) -> Result<Vec<(String, Staged)>, Error> {
        Ok(records_of(self)
            .all(KIND)?
            .into_iter()
            .map(|(path, text)| (path, Staged::decode(&text)))
            .collect())
    }

    fn stage_record(&self, path: &str) -> Result<Option<Staged>, Error> {
        Ok(records_of(self)
            .get(KIND, path)?
            .map(|t| Staged::decode(&t)))
    }

    /// Whether `path`, which holds neither a directory, a link nor a
    /// volume the proxy sees, is the mount point this node made there for
    /// a disk now detached (the cloud detached it, or the VM lost it):
    /// the path's stage record names the disk by its id, and the host
    /// lists no disk with that id. Only then may the proxy's `Rmdir`,
    /// which deletes a file as readily, remove it. A path with no record
    /// (records in memory, the plugin restarted) or a record with no disk
    /// id stays refused: nothing else proves what the path holds.
    pub(super) async fn dangling_mount(&self, path: &str) -> Result<bool, Error> {
        let Some(Staged { disk: Some(id), .. }) = self.stage_record(path)? else {
            return Ok(false);
        };
        let ids = self.disk()?.ids().await?;
        let listed = ids
            .keys()
            .any(|&n| disk_id(&ids, n).as_deref() == Some(id.as_str()));
        if !listed {
            tracing::warn!(path, disk = %id, "the disk staged here is no longer attached: removing its mount point");
        }
        Ok(!listed)
    }

    /// Forgets what was staged at `path` (unstaged).
    pub(super) fn forget_stage(&self, path: &str) -> Result<(), Error> {
        records_of(self).remove(KIND, path)
    }

    /// What disk `given` shows now: its id (through the proxy one
    /// `ListDiskIDs`) and its volumes, asked at once; and, for a disk given
    /// with its place (a [`Disk`](super::Disk) found earlier), that it is
    /// still there (`check_place`), asked at the same time.
    async fn disk_now(&self, given: &DiskInfo) -> Result<DiskNow, Error> {
        let n = given.number;
        let (disk, volume) = (self.disk()?, self.volume()?);
        // Only a disk given with its place (a `Disk` found earlier).
        let place = async {
            match given.place() != (None, None, None, None) {
                true => disk.locations().await.map(Some),
                false => Ok(None),
            }
        };
        let (ids, volumes, places) =
            tokio::try_join!(disk.ids(), volume.volumes_on_disk(n), place)?;
        if let Some(places) = places {
            check_place(given, &places)?;
        }
        let id = disk_id(&ids, n);
        let volumes = volumes
            .into_iter()
            .filter(|v| !v.trim().is_empty())
            .collect();
        Ok(DiskNow {
            number: n,
            id,
            volumes,
        })
    }

    /// Whether `path` still holds `volume` (a record may outlive its mount
    /// when the path was cleaned behind the node's back).
    async fn still_holds(&self, path: &str, volume: &str) -> Result<bool, Error> {
        match self.volume()?.volume_at(path).await {
            Ok(id) => Ok(id.eq_ignore_ascii_case(volume)),
            Err(e) if outcome_unknown(&e) => Err(e),
            Err(_) => Ok(false),
        }
    }

    /// A stage of disk `n` at `path`, its identity checked first and
    /// recorded after: [`Error::DifferentDisk`] when `path` was staged
    /// from another disk, [`Error::StagedElsewhere`] when the disk's volume
    /// is staged at another path still holding it. Stages of one disk run
    /// one at a time in this `Node` (and its clones), so that two at once
    /// cannot both find it staged nowhere.
    pub(super) async fn stage_identified(
        &self,
        given: &DiskInfo,
        path: &str,
        read_only: bool,
    ) -> Result<super::volumes::StagedVolume, Error> {
        let n = given.number;
        let _staging = self.disk_stage_claim(n).await?;
        let now = self.disk_now(given).await?;
        // A path still holding its recorded volume is the stage's own
        // case: Ok from that disk, else PathInUse. Not when the disk ids
        // differ and the disk given shows the recorded volume id: a clone's
        // volume carries its source's id, and a mount point of the source
        // resolves to it, so the stage's own check would take it for the
        // disk staged there.
        if let Some(recorded) = self.stage_record(path)?
            && match recorded.ids_decide(&now) {
                Some(same) => {
                    !same
                        && (recorded.shows_volume(&now)
                            || !self.still_holds(path, &recorded.volume).await?)
                }
                None => {
                    !recorded.on(&now)
                        && now.tells()
                        && !self.still_holds(path, &recorded.volume).await?
                }
            }
        {
            return Err(Error::DifferentDisk {
                path: path.to_string(),
                operation: "stage",
                recorded: recorded.describe().into(),
                found: now.describe().into(),
            });
        }
        let here = path.to_lowercase();
        for (other, recorded) in self.stage_records()? {
            if other != here
                && recorded.may_share(&now)
                && self.still_holds(&other, &recorded.volume).await?
            {
                return Err(Error::StagedElsewhere {
                    disk: n,
                    path: path.to_string(),
                    other,
                });
            }
        }
        let staged = self
            .stage_disk_at(n, now.id.as_deref(), path, read_only, &now.volumes)
            .await?;
        let record = Staged {
            disk: now.id,
            volume: staged.id.clone(),
        };
        records_of(self).put(KIND, path, &record.encode())?;
        Ok(staged)
    }

    /// The claim of disk `n`'s stages, also held by an unstage from its
    /// check for other users of the disk to its offline.
    /// A claim of the records: held host-wide (every `Node` of the
    /// process, and every process over a directory store).
    pub(super) async fn disk_stage_claim(&self, n: u32) -> Result<super::records::Claim, Error> {
        self.inner
            .options
            .records
            .claim_exclusive(&format!("disk {n}"))
            .await
    }

    /// Before a change through the volume at `path` (expand, offline):
    /// [`Error::DifferentDisk`] when the path was staged with another
    /// volume than `volume`, the one it holds now, or from a disk whose id
    /// differs from the id of `volume`'s disk now (a clone carries its
    /// source's volume id: issue 42, case 15). The disk's id is read only
    /// when the record has one, its number and the ids asked at once; the
    /// number read is returned.
    pub(super) async fn check_staged_volume(
        &self,
        path: &str,
        volume: &str,
        operation: &'static str,
    ) -> Result<Option<u32>, Error> {
        let Some(recorded) = self.stage_record(path)? else {
            return Ok(None);
        };
        let different = |found: String| Error::DifferentDisk {
            path: path.to_string(),
            operation,
            recorded: recorded.describe().into(),
            found: found.into(),
        };
        if !recorded.volume.eq_ignore_ascii_case(volume) {
            return Err(different(format!("volume {volume}")));
        }
        if recorded.disk.is_none() {
            return Ok(None);
        }
        let (disk, volumes) = (self.disk()?, self.volume()?);
        let (n, ids) = tokio::try_join!(volumes.disk_of(volume), disk.ids())?;
        let now = DiskNow {
            number: n,
            id: disk_id(&ids, n),
            volumes: vec![volume.to_string()],
        };
        match recorded.ids_decide(&now) {
            Some(false) => Err(different(now.describe())),
            _ => Ok(Some(n)),
        }
    }

    /// Another staging path (not `path`) that still holds a volume of disk
    /// `n`, whose volumes are `volumes`: the disk must stay online for it.
    pub(super) async fn other_user(
        &self,
        path: &str,
        volumes: &[String],
    ) -> Result<Option<String>, Error> {
        let here = path.to_lowercase();
        for (other, recorded) in self.stage_records()? {
            if other != here
                && volumes
                    .iter()
                    .any(|v| v.eq_ignore_ascii_case(&recorded.volume))
                && self.still_holds(&other, &recorded.volume).await?
            {
                return Ok(Some(other));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_knows_its_disk() {
        let s = Staged {
            disk: Some("page83 MSFT    0123".into()),
            volume: r"\\?\Volume{a}\".into(),
        };
        assert_eq!(Staged::decode(&s.encode()), s);
        let same = DiskNow {
            number: 1,
            id: s.disk.clone(),
            volumes: vec![],
        };
        let other = DiskNow {
            number: 1,
            id: Some("page83 MSFT    4567".into()),
            volumes: vec![r"\\?\Volume{b}\".into()],
        };
        assert!(s.on(&same));
        assert!(!s.on(&other));
        // A clone: the source's volume id under another page 83 id.
        let clone = DiskNow {
            number: 2,
            id: Some("page83 MSFT    89ab".into()),
            volumes: vec![s.volume.clone()],
        };
        assert!(!s.on(&clone), "the ids decide");
        assert!(s.may_share(&clone), "its volume may be at the path");
        // Without an id on one side the volume id decides.
        let no_id_now = DiskNow { id: None, ..clone };
        assert!(s.on(&no_id_now));
        // Nor when one shows a serial number and the other a page 83 id.
        let serial_now = DiskNow {
            id: Some("serial 4567".into()),
            ..no_id_now
        };
        assert!(s.on(&serial_now));
        let no_id = Staged::decode("disk=\nvolume=v\n");
        assert_eq!(no_id.disk, None);
    }
}
