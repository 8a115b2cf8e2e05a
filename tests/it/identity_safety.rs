//! The right disk (issue 37, found cases 2, 4, 5, 7 and 9): the OS disk
//! is never changed, also where it cannot be known; a staging path is
//! never given another disk's volume, a volume is staged at one path and
//! its disk never taken offline under another; selectors never choose
//! among several disks, never a local NVMe or file-backed disk; a file at
//! a staging path is never deleted; HostProcess mode never makes a disk
//! attached read-only on purpose writable. Each is judged from the host:
//! what is mounted where, each disk's state, the files a pod wrote.
#![cfg(feature = "mock")]

use std::future::IntoFuture;

use csi_proxy_client::host::{Host, HotAttach, Snapshot};
use csi_proxy_client::node::MockNode;
use csi_proxy_client::node::{DiskSelector, MountState, NodeOptions, NodeRecords};
use csi_proxy_client::{Error, ErrorKind};

use crate::node_support::*;

/// A second staging path, as the host spells it.
const OTHER_STAGING_C: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv2\globalmount";

fn online(host: &Host, n: u32) -> bool {
    !host.snapshot().disk(n).expect("the disk").is_offline
}

/// Where the host has `volume` mounted (paths in lower case).
fn mounts_of(snapshot: &Snapshot, volume: &str) -> Vec<String> {
    snapshot
        .mount_points
        .iter()
        .filter(|m| m.volume_id.eq_ignore_ascii_case(volume))
        .map(|m| m.path.to_lowercase())
        .collect()
}

fn volumes_of(snapshot: &Snapshot, disk: u32) -> Vec<String> {
    snapshot
        .volumes
        .iter()
        .filter(|v| v.disk == disk)
        .map(|v| v.id.clone())
        .collect()
}

/// The OS disk as the host holds it: the disk, its volumes and where any
/// of them is mounted.
fn os_disk_state(snapshot: &Snapshot) -> String {
    let volumes = volumes_of(snapshot, 0);
    let mounts: Vec<Vec<String>> = volumes.iter().map(|v| mounts_of(snapshot, v)).collect();
    format!("{:?}\n{volumes:?}\n{mounts:?}", snapshot.disk(0))
}

/// Whether this fixture's node can know the OS disk: HostProcess mode, or a
/// proxy serving volume v2alpha1 (v1.1 on, the v1 family).
fn knows_os_disk(f: &Fixture) -> bool {
    f.family == Family::V1
}

// ------------------------------------------------------------ case 2

/// Found case 2: on a proxy without volume v2alpha1 (v0.2, v1.0) `Lun(0)`
/// finds disk 0, and the stage mounted `C:`'s volume at the staging path;
/// an unstage with offline sent `SetDiskState(0, offline)`. Refused now,
/// known or not, and nothing on disk 0 changes.
async fn the_os_disk_is_never_changed_even_when_it_cannot_be_known(f: &Fixture) {
    let before = os_disk_state(&f.host.snapshot());
    let refused = |e: Error| {
        assert_eq!(e.kind(), ErrorKind::FailedPrecondition, "{e}");
        match knows_os_disk(f) {
            true => assert!(matches!(e, Error::OsDisk { disk: 0, .. }), "{e}"),
            false => assert!(matches!(e, Error::OsDiskUnknown { disk: 0, .. }), "{e}"),
        }
    };
    // Where it cannot be known, `Number(0)` and `Lun(0)` find disk 0.
    let disks = f.node.disks().await.unwrap();
    let expected = knows_os_disk(f).then_some(true);
    assert_eq!(disks[0].os_disk, expected, "{:?}", disks[0]);
    refused(f.node.stage_disk(0u32, STAGING).await.unwrap_err());
    assert_eq!(
        os_disk_state(&f.host.snapshot()),
        before,
        "disk 0 unchanged"
    );
    // `C:`'s volume at a kubelet path, as the stage used to leave it.
    let c = f
        .host
        .snapshot()
        .volumes
        .iter()
        .find(|v| v.disk == 0 && v.is_system)
        .expect("C:")
        .id
        .clone();
    f.node.ensure_dir(OTHER_STAGING).await.unwrap();
    f.host
        .run(|s| s.mount_volume(&c, OTHER_STAGING_C))
        .expect("mounted behind the node's back");
    let before = os_disk_state(&f.host.snapshot());
    refused(
        f.node
            .unstage(OTHER_STAGING)
            .offline(true)
            .await
            .unwrap_err(),
    );
    refused(f.node.expand(OTHER_STAGING).await.unwrap_err());
    assert_eq!(
        os_disk_state(&f.host.snapshot()),
        before,
        "disk 0 unchanged"
    );
    assert!(online(&f.host, 0));
    f.host
        .run(|s| s.unmount_volume(&c, OTHER_STAGING_C))
        .expect("unmounted");
    // A blank data disk is never the OS disk: staged wherever the OS disk
    // is known or not.
    let id = f.node.stage_disk(1u32, STAGING).await.unwrap();
    assert_eq!(f.host.snapshot().volume(&id).unwrap().disk, 1);
    f.node.unstage(STAGING).offline(true).await.unwrap();
    // disk v1beta1 (v0.2) cannot take a disk offline.
    assert_eq!(online(&f.host, 1), f.family == Family::V0_2);
}

/// The caller may accept the risk where the OS disk cannot be known;
/// where it is known, a data disk is never refused.
async fn the_risk_of_an_unknown_os_disk_is_taken_only_when_asked(f: &Fixture) {
    let disk = f.node.find_disk(DiskSelector::Number(1)).await.unwrap();
    f.node.stage_disk(&disk, STAGING).await.unwrap();
    f.node.unstage(STAGING).await.unwrap();
    // A formatted disk this node no longer knows (a new process, records
    // in memory): its volumes may be Windows'.
    let fresh = f.another_node().await;
    if knows_os_disk(f) {
        fresh.stage_disk(1u32, STAGING).await.unwrap();
        fresh.unstage(STAGING).await.unwrap();
        return;
    }
    let err = fresh.stage_disk(1u32, STAGING).await.unwrap_err();
    assert!(matches!(err, Error::OsDiskUnknown { disk: 1, .. }), "{err}");
    assert_eq!(
        fresh.mount_state(STAGING).await.unwrap(),
        MountState::Missing
    );
    let bold = f
        .another_node_with(NodeOptions::default().allow_unknown_os_disk(true))
        .await;
    bold.stage_disk(1u32, STAGING).await.unwrap();
    bold.unstage(STAGING).await.unwrap();
}

// ------------------------------------------------------------ cases 4, 5

/// Found case 4: PV-A staged from a LUN, unstaged and detached; PV-B
/// attached at the same LUN gets the same disk number; a stale NodeStage
/// of A (the attachment still names that LUN) found B's disk by location
/// and mounted B's volume at A's path, and A's unstage with offline took
/// B's disk offline under pod B.
async fn a_reused_lun_never_stages_or_offlines_another_pods_disk(f: &Fixture) {
    let a = f.host.hot_attach(HotAttach::new(4 * GIB)).unwrap();
    let lun = a.lun.expect("a SCSI LUN");
    let disk_a = f.node.find_disk(DiskSelector::Lun(lun)).await.unwrap();
    f.node.stage_disk(&disk_a, STAGING).await.unwrap();
    f.node.unstage(STAGING).await.unwrap();
    f.host.hot_detach(a.handle).unwrap();
    let b = f.host.hot_attach(HotAttach::new(4 * GIB)).unwrap();
    assert_eq!((b.lun, b.number), (Some(lun), a.number), "the slot reused");
    let disk_b = f.node.find_disk(DiskSelector::Lun(lun)).await.unwrap();
    let volume_b = f.node.stage_disk(&disk_b, OTHER_STAGING).await.unwrap();
    f.host
        .write_file(&format!(r"{OTHER_STAGING_C}\b.txt"), b"pod B's data")
        .unwrap();
    // The stale NodeStage of A.
    let stale = f.node.find_disk(DiskSelector::Lun(lun)).await.unwrap();
    let err = f.node.stage_disk(&stale, STAGING).await.unwrap_err();
    assert!(
        matches!(&err, Error::StagedElsewhere { other, .. } if other.ends_with(r"pv2\globalmount")),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
    // A's unstage with offline: nothing of A is there, B's disk stays.
    f.node.unstage(STAGING).offline(true).await.unwrap();
    let snapshot = f.host.snapshot();
    assert_eq!(
        mounts_of(&snapshot, &volume_b),
        vec![OTHER_STAGING_C.to_lowercase()]
    );
    assert!(online(&f.host, b.number), "B's disk online");
    assert_eq!(
        f.host
            .read_file(&format!(r"{OTHER_STAGING_C}\b.txt"))
            .unwrap(),
        b"pod B's data"
    );
    f.node.unstage(OTHER_STAGING).await.unwrap();
}

/// A staging path that holds another volume than it was staged with (a
/// LUN reused under a dangling mount, or changed behind the node's back):
/// neither grown nor its disk taken offline.
async fn a_path_holding_another_disk_is_never_expanded_or_offlined(f: &Fixture) {
    let volume_1 = f.node.stage_disk(1u32, STAGING).await.unwrap();
    let volume_2 = f.node.stage_disk(2u32, OTHER_STAGING).await.unwrap();
    f.node.unstage(OTHER_STAGING).await.unwrap();
    f.host
        .run(|s| {
            s.unmount_volume(&volume_1, STAGING_C)?;
            s.mount_volume(&volume_2, STAGING_C)
        })
        .expect("swapped behind the node's back");
    let size = f.host.run(|s| s.storage.volume_size(&volume_2));
    let different = |e: Error| {
        assert!(matches!(e, Error::DifferentDisk { .. }), "{e}");
        assert_eq!(e.kind(), ErrorKind::FailedPrecondition);
        let text = e.to_string();
        assert!(
            text.contains(&volume_1) && text.contains(&volume_2),
            "{text}"
        );
    };
    f.host.hot_grow(handle(&f.host, 2), 20 * GIB).unwrap();
    different(f.node.expand(STAGING).await.unwrap_err());
    different(f.node.unstage(STAGING).offline(true).await.unwrap_err());
    assert!(online(&f.host, 2), "disk 2 online");
    assert_eq!(f.host.run(|s| s.storage.volume_size(&volume_2)), size);
    assert_eq!(
        mounts_of(&f.host.snapshot(), &volume_2),
        vec![STAGING_C.to_lowercase()]
    );
    f.host
        .run(|s| s.unmount_volume(&volume_2, STAGING_C))
        .expect("unmounted");
    f.node.unstage(STAGING).await.unwrap();
}

fn handle(host: &Host, n: u32) -> csi_proxy_client::host::storage::DiskHandle {
    host.snapshot().disk(n).expect("the disk").handle
}

/// Found case 5: one volume staged at two paths was accepted, and the
/// unstage of one with offline took the disk from under the other.
async fn one_volume_is_never_staged_at_two_paths(f: &Fixture) {
    let volume = f.node.stage_disk(1u32, STAGING).await.unwrap();
    let err = f.node.stage_disk(1u32, OTHER_STAGING).await.unwrap_err();
    assert!(
        matches!(&err, Error::StagedElsewhere { disk: 1, other, .. } if other.ends_with(r"pv1\globalmount")),
        "{err}"
    );
    assert_eq!(
        mounts_of(&f.host.snapshot(), &volume),
        vec![STAGING_C.to_lowercase()]
    );
    f.node.unstage(STAGING).await.unwrap();
}

/// A disk found earlier is staged only where it was found: found at LUN
/// 1, then detached, and its number given to a disk attached at LUN 5 (as
/// after a listing that still showed a removed disk: `find_disk` takes
/// its answer from the listing made while it rescans). The stage is
/// refused as not found (kubelet retries and looks again); before, it
/// partitioned and formatted the disk at LUN 5.
async fn a_disk_found_earlier_is_staged_only_where_it_was_found(f: &Fixture) {
    let found = f.node.find_disk(DiskSelector::Lun(1)).await.unwrap();
    f.host.hot_detach(handle(&f.host, found.number)).unwrap();
    let other = HotAttach {
        location: Some("Integrated : Adapter 3 : Port 0 : Target 0 : LUN 5".into()),
        ..HotAttach::new(4 * GIB)
    };
    let other = f.host.hot_attach(other).unwrap();
    assert_eq!(other.number, found.number, "the number given again");
    f.node.find_disk(DiskSelector::Lun(5)).await.unwrap();
    let err = f.node.stage_disk(&found, STAGING).await.unwrap_err();
    assert!(
        matches!(&err, Error::DiskNotFound { seen, .. } if seen.contains("LUN 5")),
        "{err}"
    );
    assert!(volumes_of(&f.host.snapshot(), other.number).is_empty());
    // By number alone, the caller names the disk: staged.
    f.node.stage_disk(other.number, STAGING).await.unwrap();
    f.node.unstage(STAGING).await.unwrap();
}

/// Case 5 with both stages at once (kubelet stages two PVs naming one
/// disk in parallel): one stage wins, the other is refused, and the
/// volume is mounted at one path.
async fn one_volume_is_never_staged_at_two_paths_at_once(f: &Fixture) {
    let (first, second) = tokio::join!(
        f.node.stage_disk(1u32, STAGING).into_future(),
        f.node.stage_disk(1u32, OTHER_STAGING).into_future()
    );
    let (volume, refused) = match (first, second) {
        (Ok(v), Err(e)) | (Err(e), Ok(v)) => (v, e),
        other => panic!("one stage must win and one be refused: {other:?}"),
    };
    assert!(
        matches!(&refused, Error::StagedElsewhere { disk: 1, .. }),
        "{refused}"
    );
    assert_eq!(mounts_of(&f.host.snapshot(), &volume).len(), 1);
    assert_eq!(volumes_of(&f.host.snapshot(), 1).len(), 1);
}

/// The disk stays online while another staging path this node recorded
/// still holds its volume: a driver whose records are durable stages at
/// one path; a process with records in memory (it cannot know) stages the
/// same disk at another; the durable one's unstage with offline leaves the
/// disk online under the first path.
async fn a_disk_is_never_taken_offline_under_another_staging_path(f: &Fixture) {
    let dir = tempfile::tempdir().unwrap();
    let durable = f
        .another_node_with(NodeOptions::default().records(NodeRecords::directory(dir.path())))
        .await;
    let volume = durable.stage_disk(1u32, OTHER_STAGING).await.unwrap();
    f.host
        .write_file(&format!(r"{OTHER_STAGING_C}\data.txt"), b"the pod's data")
        .unwrap();
    let forgetful = f
        .another_node_with(NodeOptions::default().allow_unknown_os_disk(true))
        .await;
    forgetful.stage_disk(1u32, STAGING).await.unwrap();
    durable.unstage(STAGING).offline(true).await.unwrap();
    assert!(online(&f.host, 1), "disk 1 online under pv2");
    assert_eq!(
        mounts_of(&f.host.snapshot(), &volume),
        vec![OTHER_STAGING_C.to_lowercase()]
    );
    assert_eq!(
        f.host
            .read_file(&format!(r"{OTHER_STAGING_C}\data.txt"))
            .unwrap(),
        b"the pod's data"
    );
    durable.unstage(OTHER_STAGING).offline(true).await.unwrap();
    // disk v1beta1 (v0.2) cannot take a disk offline.
    assert_eq!(
        online(&f.host, 1),
        f.family == Family::V0_2,
        "the last path gone, offline"
    );
}

// ------------------------------------------------------------ case 9

/// Found case 9: a regular file at the staging path was deleted by the
/// stage. Refused now, by the stage and the unstage alike, the file kept.
async fn a_file_at_the_staging_path_is_refused_never_deleted(f: &Fixture) {
    f.node
        .ensure_dir(r"\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv1")
        .await
        .unwrap();
    f.host.write_file(STAGING_C, b"not a directory").unwrap();
    let in_use = |e: Error| {
        assert!(
            matches!(&e, Error::PathInUse { path, .. } if path.ends_with("globalmount")),
            "{e}"
        );
    };
    in_use(f.node.stage_disk(1u32, STAGING).await.unwrap_err());
    in_use(f.node.unstage(STAGING).await.unwrap_err());
    assert_eq!(f.host.read_file(STAGING_C).unwrap(), b"not a directory");
    assert!(
        volumes_of(&f.host.snapshot(), 1).is_empty(),
        "disk 1 untouched"
    );
}

// ------------------------------------------------------------ issue 42, case 15

/// Issue 42, found case 15: a clone of disk A (a PVC clone, a snapshot
/// restore) keeps A's partition GUIDs, so its volume carries A's volume
/// id, under another page 83 id. Here A is staged, its mount removed
/// behind the node's back (its record kept) and A detached, and its clone
/// attached at A's LUN (A's contents, another page 83 id). A stale
/// NodeStage of A finds the clone by LUN: before, the matching volume id
/// passed the identity check and the clone was mounted at A's path. Then the clone's volume is mounted at A's path behind the node's
/// back (a mount point names a volume by its GUID, so a dangling one of A
/// resolves to the clone): the stage, an expand and an unstage with
/// offline of A's path are refused as another disk, nothing changed.
async fn a_clone_never_passes_for_its_source(f: &Fixture) {
    use csi_proxy_client::host::storage::Page83;
    let a = f.host.hot_attach(HotAttach::new(4 * GIB)).unwrap();
    let lun = a.lun.expect("a SCSI LUN");
    let disk_a = f.node.find_disk(DiskSelector::Lun(lun)).await.unwrap();
    let volume = f.node.stage_disk(&disk_a, STAGING).await.unwrap();
    f.host
        .write_file(&format!(r"{STAGING_C}\a.txt"), b"pod A's data")
        .unwrap();
    f.host
        .run(|s| s.unmount_volume(&volume, STAGING_C))
        .expect("unmounted behind the node's back");
    let source = f.host.hot_detach(a.handle).unwrap();
    let mut clone_id = b"MSFT    ".to_vec();
    clone_id.extend_from_slice(&[0xc1; 16]);
    let clone = HotAttach {
        page83: Some(Page83::Binary(clone_id)),
        ..HotAttach::new(4 * GIB)
    };
    let b = f.host.hot_reattach(source, clone).unwrap();
    assert_eq!(b.lun, Some(lun), "the clone at A's LUN");
    assert_eq!(
        volumes_of(&f.host.snapshot(), b.number),
        vec![volume.clone()]
    );
    let different = |e: Error| {
        assert!(matches!(e, Error::DifferentDisk { .. }), "{e}");
        assert_eq!(e.kind(), ErrorKind::FailedPrecondition);
        let text = e.to_string();
        assert!(text.contains("c1c1c1c1"), "names the clone's id: {text}");
    };
    // The stale NodeStage of A.
    let stale = f.node.find_disk(DiskSelector::Lun(lun)).await.unwrap();
    different(f.node.stage_disk(&stale, STAGING).await.unwrap_err());
    assert!(
        mounts_of(&f.host.snapshot(), &volume).is_empty(),
        "the clone mounted at A's path"
    );
    // A's mount point, dangling, now resolving to the clone.
    f.host
        .run(|s| s.mount_volume(&volume, STAGING_C))
        .expect("mounted behind the node's back");
    let size = f.host.run(|s| s.storage.volume_size(&volume));
    f.host.hot_grow(b.handle, 20 * GIB).unwrap();
    different(f.node.stage_disk(b.number, STAGING).await.unwrap_err());
    different(f.node.expand(STAGING).await.unwrap_err());
    different(f.node.unstage(STAGING).offline(true).await.unwrap_err());
    assert!(online(&f.host, b.number), "the clone online");
    assert_eq!(f.host.run(|s| s.storage.volume_size(&volume)), size);
    assert_eq!(
        mounts_of(&f.host.snapshot(), &volume),
        vec![STAGING_C.to_lowercase()]
    );
    assert_eq!(
        f.host.read_file(&format!(r"{STAGING_C}\a.txt")).unwrap(),
        b"pod A's data"
    );
    f.host
        .run(|s| s.unmount_volume(&volume, STAGING_C))
        .expect("unmounted");
    f.node.unstage(STAGING).await.unwrap();
}

/// Issue 42, case 15, the related case: a clone attached beside its
/// source (kubernetes-csi/csi-proxy#287) stays offline, and Windows
/// refuses to bring it online while the source's volumes, whose ids it
/// carries, are present. Its stage at another path fails; nothing of the
/// source changes (its mount, its pod's file, its volume staged at one
/// path), and the clone is neither partitioned nor formatted. The error
/// is still the online's own (`SetDiskState ... result 4`; on v0.2 "has no
/// data volume"): the node cannot read an offline disk's volume ids to
/// name the collision.
async fn a_clone_beside_its_source_never_touches_the_source(f: &Fixture) {
    let a = f.host.hot_attach(HotAttach::new(4 * GIB)).unwrap();
    let disk_a = f
        .node
        .find_disk(DiskSelector::Lun(a.lun.unwrap()))
        .await
        .unwrap();
    let volume = f.node.stage_disk(&disk_a, STAGING).await.unwrap();
    f.host
        .write_file(&format!(r"{STAGING_C}\a.txt"), b"pod A's data")
        .unwrap();
    let b = f
        .host
        .hot_attach_clone(a.handle, HotAttach::new(4 * GIB))
        .unwrap();
    let disk_b = f
        .node
        .find_disk(DiskSelector::Lun(b.lun.unwrap()))
        .await
        .unwrap();
    let clone_before = f.host.snapshot().disk(b.number).cloned();
    let err = f.node.stage_disk(&disk_b, OTHER_STAGING).await.unwrap_err();
    assert!(
        !matches!(err.kind(), ErrorKind::Unavailable | ErrorKind::TimedOut),
        "not a retry's matter: {err}"
    );
    let snapshot = f.host.snapshot();
    assert_eq!(
        mounts_of(&snapshot, &volume),
        vec![STAGING_C.to_lowercase()]
    );
    assert_eq!(volumes_of(&snapshot, a.number), vec![volume.clone()]);
    assert_eq!(
        snapshot.disk(b.number).cloned(),
        clone_before,
        "the clone unchanged"
    );
    assert!(!f.host.exists(&format!(r"{OTHER_STAGING_C}\a.txt")));
    assert_eq!(
        f.host.read_file(&format!(r"{STAGING_C}\a.txt")).unwrap(),
        b"pod A's data"
    );
    f.node.unstage(STAGING).await.unwrap();
}

node_tests!(
    the_os_disk_is_never_changed_even_when_it_cannot_be_known,
    the_risk_of_an_unknown_os_disk_is_taken_only_when_asked,
    a_reused_lun_never_stages_or_offlines_another_pods_disk,
    a_path_holding_another_disk_is_never_expanded_or_offlined,
    one_volume_is_never_staged_at_two_paths,
    one_volume_is_never_staged_at_two_paths_at_once,
    a_disk_found_earlier_is_staged_only_where_it_was_found,
    a_disk_is_never_taken_offline_under_another_staging_path,
    a_file_at_the_staging_path_is_refused_never_deleted,
    a_clone_never_passes_for_its_source,
    a_clone_beside_its_source_never_touches_the_source,
);

/// An unstage with offline and a stage of the same disk at another path
/// at once: the unstage had found no other user of the disk, the stage
/// (its mount point gone) had found the volume staged nowhere and mounted
/// it, then the offline landed and took the disk from under the new stage.
#[tokio::test(start_paused = true)]
async fn an_offline_never_lands_under_a_stage_made_meanwhile() {
    use csi_proxy_client::mock::MockHost;
    use std::time::Duration;
    let mock = MockHost::new();
    let node = MockNode::new(&mock).options(options()).build().unwrap();
    node.stage_disk(1u32, STAGING).await.unwrap();
    mock.add_latency("SetDiskState", Duration::from_secs(5));
    let unstage = tokio::spawn({
        let node = node.clone();
        async move { node.unstage(STAGING).offline(true).await }
    });
    // The unstage has removed its mount point and sent the offline.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let volume = node.stage_disk(1u32, OTHER_STAGING).await.unwrap();
    unstage.await.unwrap().unwrap();
    let snapshot = mock.host().snapshot();
    assert!(
        online(mock.host(), 1),
        "disk 1 went offline under the stage"
    );
    assert_eq!(
        mounts_of(&snapshot, &volume),
        vec![OTHER_STAGING_C.to_lowercase()]
    );
}

// ------------------------------------------------------------ case 7, seeded

/// The seeds' OS disk (`C:`, 64 GiB, GPT), at the place `$place` says
/// (its `location` line, and a `device_path` line where it has one).
macro_rules! os_disk {
    ($place:literal) => {
        concat!(
            "[[disks]]\nnumber = 0\n",
            $place,
            "\nsize = 68719476736\npartition_style = \"gpt\"\nsystem = true\n\n",
            "[[volumes]]\ndisk = 0\nfs = \"ntfs\"\ndrive_letter = \"C\"\nsystem = true\n",
        )
    };
}

/// An OS disk, a formatted data disk at LUN 1, another disk at LUN 1 of a
/// second data controller, and a file-backed virtual disk (containerd's
/// `sandbox.vhdx`) at LUN 5.
const SELECTORS: &str = concat!(
    os_disk!(r#"location = "Integrated : Adapter 0 : Port 0 : Target 0 : LUN 0""#),
    r#"
[[disks]]
number = 1
location = "Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1"
size = 8589934592
partition_style = "gpt"

[[volumes]]
disk = 1
fs = "ntfs"

[[disks]]
number = 2
location = "Integrated : Adapter 4 : Port 0 : Target 0 : LUN 1"
size = 8589934592

[[disks]]
number = 3
location = "Integrated : Adapter 5 : Port 0 : Target 0 : LUN 5"
bus_type = 15
size = 21474836480
"#
);

/// Found case 7: `find_disk` returned the first of several matches.
async fn an_ambiguous_selector_names_the_candidates(f: &Fixture) {
    let err = f.node.find_disk(DiskSelector::Lun(1)).await.unwrap_err();
    let Error::AmbiguousDisk { candidates, .. } = &err else {
        panic!("{err}");
    };
    assert!(
        candidates.contains("disk 1 (") && candidates.contains("disk 2 ("),
        "{candidates}"
    );
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
}

macro_rules! seeded {
    ($seed:ident; $($name:ident),+) => {
        mod seeded_mock {
            $(
                #[tokio::test]
                async fn $name() {
                    let f = Fixture::mock_seeded(Family::V1, options(), Some(super::$seed)).await;
                    super::$name(&f).await;
                    f.finish().await;
                }
            )+
            use crate::node_support::*;
            use super::options;
        }
        #[cfg(unix)]
        mod seeded_server_v0_2 {
            $(
                #[tokio::test]
                async fn $name() {
                    let f = Fixture::server_seeded(Family::V0_2, options(), Some(super::$seed)).await;
                    super::$name(&f).await;
                    f.finish().await;
                }
            )+
            use crate::node_support::*;
            use super::options;
        }
        #[cfg(feature = "host-process")]
        mod seeded_host_process {
            $(
                #[tokio::test]
                async fn $name() {
                    let f = Fixture::host_process_seeded(Family::V1, options(), Some(super::$seed)).await;
                    super::$name(&f).await;
                    f.finish().await;
                }
            )+
            use crate::node_support::*;
            use super::options;
        }
    };
}

fn options() -> NodeOptions {
    NodeOptions::default().find_disk_timeout(std::time::Duration::ZERO)
}

seeded!(SELECTORS; an_ambiguous_selector_names_the_candidates);

#[cfg(feature = "host-process")]
mod host_process_only {
    use super::*;

    async fn fixture(seed: &str) -> Fixture {
        Fixture::host_process_seeded(Family::V1, options(), Some(seed)).await
    }

    /// A file-backed virtual disk (bus type 15) is never selected; the
    /// bus type shows in the listing.
    #[tokio::test]
    async fn a_file_backed_virtual_disk_is_never_selected() {
        let f = fixture(SELECTORS).await;
        let err = f.node.find_disk(DiskSelector::Lun(5)).await.unwrap_err();
        let Error::DiskNotFound { seen, .. } = &err else {
            panic!("{err}");
        };
        assert!(
            seen.contains("FileBackedVirtual disk, never selected"),
            "{seen}"
        );
        let disks = f.node.disks().await.unwrap();
        assert_eq!(
            disks[3].bus_type,
            Some(csi_proxy_client::node::BusType::FileBackedVirtual)
        );
        assert!(!disks[3].selectable());
        f.finish().await;
    }

    /// Azure NVMe: two remote data disks (namespaces 1, 2: LUN 0, 1) and a
    /// local NVMe temporary disk, namespace 1 of its own controller.
    const AZURE_NVME: &str = concat!(
        os_disk!(
            r#"location = "Integrated : Bus 0 : Device 30 : Function 0 : Adapter 1"
device_path = '\\?\scsi#disk&ven_nvme&prod_msft_nvme_accele#6&4a1b2c3d&0&000001#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}'"#
        ),
        r#"
[[disks]]
number = 1
location = "Integrated : Bus 0 : Device 29 : Function 0 : Adapter 3"
device_path = '\\?\scsi#disk&ven_nvme&prod_microsoft_nvme_d#6&1f2e3d4c&0&000001#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}'
size = 412316860416

[[disks]]
number = 2
location = "Integrated : Bus 0 : Device 31 : Function 0 : Adapter 2"
device_path = '\\?\scsi#disk&ven_nvme&prod_msft_nvme_accele#6&5e6f7a8b&0&000001#{53f56307-b6bf-11d0-94f2-00a0c91efb8b}'
size = 34359738368
"#
    );

    /// Found case 7: `AzureLun` on NVMe took any NVMe namespace, a local
    /// NVMe temporary disk's included.
    #[tokio::test]
    async fn azure_lun_on_nvme_never_takes_a_local_nvme_disk() {
        let f = fixture(AZURE_NVME).await;
        let disk = f.node.find_disk(DiskSelector::AzureLun(0)).await.unwrap();
        assert_eq!(disk.number, 2, "the remote data disk");
        let id = f.node.stage_disk(&disk, STAGING).await.unwrap();
        assert_eq!(f.host.snapshot().volume(&id).unwrap().disk, 2);
        assert!(
            volumes_of(&f.host.snapshot(), 1).is_empty(),
            "temp disk untouched"
        );
        f.node.unstage(STAGING).await.unwrap();
        f.finish().await;
    }

    /// Found case 9: only the first `IsSystem`/`IsBoot` disk was refused.
    #[tokio::test]
    async fn every_system_or_boot_disk_is_refused() {
        let seed = format!(
            "{SELECTORS}\n[[disks]]\nnumber = 4\nlocation = \"Integrated : Adapter 3 : Port 0 : Target 0 : LUN 4\"\nsize = 8589934592\npartition_style = \"gpt\"\nsystem = true\n\n[[volumes]]\ndisk = 4\nfs = \"ntfs\"\n"
        );
        let f = fixture(&seed).await;
        let before = volumes_of(&f.host.snapshot(), 4);
        let err = f.node.stage_disk(4u32, STAGING).await.unwrap_err();
        assert!(matches!(err, Error::OsDisk { disk: 4, .. }), "{err}");
        let snapshot = f.host.snapshot();
        assert!(before.iter().all(|v| mounts_of(&snapshot, v).is_empty()));
        f.finish().await;
    }

    /// Found case 9: a Null `IsSystem`/`IsBoot` read as false. Now the
    /// disk cannot be told, and a disk with volumes this node did not
    /// stage is refused.
    #[tokio::test]
    async fn a_null_system_flag_is_never_false() {
        let f = fixture(SELECTORS).await;
        f.fake().expect("the fake").null_system_flags(0);
        let err = f.node.stage_disk(0u32, STAGING).await.unwrap_err();
        assert!(matches!(err, Error::OsDiskUnknown { disk: 0, .. }), "{err}");
        assert!(err.to_string().contains("Null"), "{err}");
        let c = volumes_of(&f.host.snapshot(), 0);
        assert!(
            c.iter()
                .all(|v| mounts_of(&f.host.snapshot(), v).is_empty())
        );
        f.finish().await;
    }

    /// Found case 9: HostProcess mode cleared `IsReadOnly` of every disk it
    /// staged. A disk online and read-only was made so on purpose: a
    /// read-only stage mounts it as it is, a read-write stage is refused;
    /// neither clears the flag.
    #[tokio::test]
    async fn a_disk_attached_read_only_is_never_made_writable() {
        let f = fixture(SELECTORS).await;
        f.host.set_disk_read_only(1, true).unwrap();
        let err = f.node.stage_disk(1u32, STAGING).await.unwrap_err();
        assert!(matches!(err, Error::ReadOnlyDisk { disk: 1, .. }), "{err}");
        assert!(f.host.snapshot().disk(1).unwrap().is_read_only);
        let id = f
            .node
            .stage_disk(1u32, STAGING)
            .read_only(true)
            .await
            .unwrap();
        let snapshot = f.host.snapshot();
        assert!(snapshot.disk(1).unwrap().is_read_only, "still read-only");
        assert_eq!(mounts_of(&snapshot, &id), vec![STAGING_C.to_lowercase()]);
        f.node.unstage(STAGING).await.unwrap();
        f.finish().await;
    }
}
