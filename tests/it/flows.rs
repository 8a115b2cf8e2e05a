//! The CSI node flows (NodeStage, NodePublish,
//! NodeGetVolumeStats, NodeExpand, NodeUnpublish, NodeUnstage), Azure Disk
//! style and GCE PD style, written once over a [`Driver`] and run through
//! two API sets — disk v1 + volume v1 + filesystem v1, and the beta set
//! disk v1beta2 + volume v1beta2 + filesystem v1beta1 — on both backends.
//! Each step asserts the host state it leaves.
// On Windows the server halves use named pipes and take turns.
#![cfg(feature = "mock")]

use std::sync::Arc;

use crate::scenarios::*;
use csi_proxy_client::host::storage::{DiskSpec, FileSystem, Page83};
use csi_proxy_client::{Error, disk, filesystem, volume};

on_both_backends![
    azure_disk_v1,
    azure_disk_beta,
    gce_pd_v1,
    gce_pd_beta,
    volume_stats_and_expand_v1,
    volume_stats_and_expand_beta,
];

async fn azure_disk_v1(node: &Node) {
    azure_disk_lifecycle(node, &V1::of(node)).await;
}
async fn azure_disk_beta(node: &Node) {
    azure_disk_lifecycle(node, &Beta::of(node)).await;
}
async fn gce_pd_v1(node: &Node) {
    gce_pd_lifecycle(node, &V1::of(node)).await;
}
async fn gce_pd_beta(node: &Node) {
    gce_pd_lifecycle(node, &Beta::of(node)).await;
}
async fn volume_stats_and_expand_v1(node: &Node) {
    stats_and_expand(node, &V1::of(node)).await;
}
async fn volume_stats_and_expand_beta(node: &Node) {
    stats_and_expand(node, &Beta::of(node)).await;
}

// ------------------------------------------------------------ the driver

/// The proxy calls a CSI node plugin makes, whatever API versions it uses.
trait Driver {
    /// Disk numbers and LUNs (ListDiskLocations).
    async fn luns(&self) -> Result<Vec<(u32, String)>, Error>;
    /// Disk numbers and page83 ids (ListDiskIDs).
    async fn page83s(&self) -> Result<Vec<(u32, String)>, Error>;
    async fn rescan(&self) -> Result<(), Error>;
    async fn partition(&self, disk: u32) -> Result<(), Error>;
    async fn set_online(&self, disk: u32, online: bool) -> Result<(), Error>;
    async fn volumes(&self, disk: u32) -> Result<Vec<String>, Error>;
    async fn is_formatted(&self, id: &str) -> Result<bool, Error>;
    async fn format(&self, id: &str) -> Result<(), Error>;
    async fn mount(&self, id: &str, path: &str) -> Result<(), Error>;
    async fn unmount(&self, id: &str, path: &str) -> Result<(), Error>;
    /// GetVolumeIDFromTargetPath (GetVolumeIDFromMount).
    async fn volume_at(&self, path: &str) -> Result<String, Error>;
    /// (total, used) bytes.
    async fn stats(&self, id: &str) -> Result<(i64, i64), Error>;
    async fn resize(&self, id: &str, size: i64) -> Result<(), Error>;
    async fn flush(&self, id: &str) -> Result<(), Error>;
    async fn disk_of(&self, id: &str) -> Result<u32, Error>;
    async fn path_exists(&self, path: &str) -> Result<bool, Error>;
    async fn mkdir(&self, path: &str) -> Result<(), Error>;
    async fn rmdir(&self, path: &str, force: bool) -> Result<(), Error>;
    /// A directory symlink `target` → `source`.
    async fn symlink(&self, source: &str, target: &str) -> Result<(), Error>;
}

/// disk v1 + volume v1 + filesystem v1.
struct V1 {
    disk: Arc<dyn disk::v1::DiskApi>,
    volume: Arc<dyn volume::v1::VolumeApi>,
    fs: Arc<dyn filesystem::v1::FilesystemApi>,
}

impl V1 {
    fn of(node: &Node) -> Self {
        Self {
            disk: node.disk_v1.clone(),
            volume: node.volume_v1.clone(),
            fs: node.filesystem_v1.clone(),
        }
    }
}

impl Driver for V1 {
    async fn luns(&self) -> Result<Vec<(u32, String)>, Error> {
        use disk::v1 as d;
        let r = self
            .disk
            .list_disk_locations(d::ListDiskLocationsRequest {})
            .await?;
        Ok(r.disk_locations
            .into_iter()
            .map(|(n, l)| (n, l.lunid))
            .collect())
    }
    async fn page83s(&self) -> Result<Vec<(u32, String)>, Error> {
        use disk::v1 as d;
        let r = self.disk.list_disk_ids(d::ListDiskIDsRequest {}).await?;
        Ok(r.disk_i_ds
            .into_iter()
            .map(|(n, i)| (n, i.page83))
            .collect())
    }
    async fn rescan(&self) -> Result<(), Error> {
        self.disk.rescan(disk::v1::RescanRequest {}).await.map(drop)
    }
    async fn partition(&self, disk_number: u32) -> Result<(), Error> {
        self.disk
            .partition_disk(disk::v1::PartitionDiskRequest { disk_number })
            .await
            .map(drop)
    }
    async fn set_online(&self, disk_number: u32, is_online: bool) -> Result<(), Error> {
        self.disk
            .set_disk_state(disk::v1::SetDiskStateRequest {
                disk_number,
                is_online,
            })
            .await
            .map(drop)
    }
    async fn volumes(&self, disk_number: u32) -> Result<Vec<String>, Error> {
        let r = self
            .volume
            .list_volumes_on_disk(volume::v1::ListVolumesOnDiskRequest {
                disk_number,
                partition_number: 0,
            })
            .await?;
        Ok(r.volume_ids)
    }
    async fn is_formatted(&self, id: &str) -> Result<bool, Error> {
        let r = self
            .volume
            .is_volume_formatted(volume::v1::IsVolumeFormattedRequest {
                volume_id: id.into(),
            })
            .await?;
        Ok(r.formatted)
    }
    async fn format(&self, id: &str) -> Result<(), Error> {
        self.volume
            .format_volume(volume::v1::FormatVolumeRequest {
                volume_id: id.into(),
            })
            .await
            .map(drop)
    }
    async fn mount(&self, id: &str, path: &str) -> Result<(), Error> {
        self.volume
            .mount_volume(volume::v1::MountVolumeRequest {
                volume_id: id.into(),
                target_path: path.into(),
            })
            .await
            .map(drop)
    }
    async fn unmount(&self, id: &str, path: &str) -> Result<(), Error> {
        self.volume
            .unmount_volume(volume::v1::UnmountVolumeRequest {
                volume_id: id.into(),
                target_path: path.into(),
            })
            .await
            .map(drop)
    }
    async fn volume_at(&self, path: &str) -> Result<String, Error> {
        let r = self
            .volume
            .get_volume_id_from_target_path(volume::v1::GetVolumeIdFromTargetPathRequest {
                target_path: path.into(),
            })
            .await?;
        Ok(r.volume_id)
    }
    async fn stats(&self, id: &str) -> Result<(i64, i64), Error> {
        let r = self
            .volume
            .get_volume_stats(volume::v1::GetVolumeStatsRequest {
                volume_id: id.into(),
            })
            .await?;
        Ok((r.total_bytes, r.used_bytes))
    }
    async fn resize(&self, id: &str, size_bytes: i64) -> Result<(), Error> {
        self.volume
            .resize_volume(volume::v1::ResizeVolumeRequest {
                volume_id: id.into(),
                size_bytes,
            })
            .await
            .map(drop)
    }
    async fn flush(&self, id: &str) -> Result<(), Error> {
        self.volume
            .write_volume_cache(volume::v1::WriteVolumeCacheRequest {
                volume_id: id.into(),
            })
            .await
            .map(drop)
    }
    async fn disk_of(&self, id: &str) -> Result<u32, Error> {
        let r = self
            .volume
            .get_disk_number_from_volume_id(volume::v1::GetDiskNumberFromVolumeIdRequest {
                volume_id: id.into(),
            })
            .await?;
        Ok(r.disk_number)
    }
    async fn path_exists(&self, path: &str) -> Result<bool, Error> {
        let r = self
            .fs
            .path_exists(filesystem::v1::PathExistsRequest { path: path.into() })
            .await?;
        Ok(r.exists)
    }
    async fn mkdir(&self, path: &str) -> Result<(), Error> {
        self.fs
            .mkdir(filesystem::v1::MkdirRequest { path: path.into() })
            .await
            .map(drop)
    }
    async fn rmdir(&self, path: &str, force: bool) -> Result<(), Error> {
        self.fs
            .rmdir(filesystem::v1::RmdirRequest {
                path: path.into(),
                force,
            })
            .await
            .map(drop)
    }
    async fn symlink(&self, source: &str, target: &str) -> Result<(), Error> {
        self.fs
            .create_symlink(filesystem::v1::CreateSymlinkRequest {
                source_path: source.into(),
                target_path: target.into(),
            })
            .await
            .map(drop)
    }
}

/// disk v1beta2 + volume v1beta2 + filesystem v1beta1: text disk ids,
/// `SetAttachState`, `DismountVolume`, `VolumeStats`,
/// `GetVolumeIDFromMount`, `LinkPath`, path contexts.
struct Beta {
    disk: Arc<dyn disk::v1beta2::DiskApi>,
    volume: Arc<dyn volume::v1beta2::VolumeApi>,
    fs: Arc<dyn filesystem::v1beta1::FilesystemApi>,
}

impl Beta {
    fn of(node: &Node) -> Self {
        Self {
            disk: node.disk_v1beta2.clone(),
            volume: node.volume_v1beta2.clone(),
            fs: node.filesystem_v1beta1.clone(),
        }
    }

    /// The context the old drivers pass: POD for pod paths, else PLUGIN.
    fn context(path: &str) -> i32 {
        let pod = path.to_lowercase().contains(r"\pods\");
        (if pod {
            filesystem::v1beta1::PathContext::Pod
        } else {
            filesystem::v1beta1::PathContext::Plugin
        }) as i32
    }
}

fn number(text: &str) -> u32 {
    text.parse().expect("disk numbers travel as decimal text")
}

impl Driver for Beta {
    async fn luns(&self) -> Result<Vec<(u32, String)>, Error> {
        use disk::v1beta2 as d;
        let r = self
            .disk
            .list_disk_locations(d::ListDiskLocationsRequest {})
            .await?;
        Ok(r.disk_locations
            .into_iter()
            .map(|(n, l)| (number(&n), l.lunid))
            .collect())
    }
    async fn page83s(&self) -> Result<Vec<(u32, String)>, Error> {
        use disk::v1beta2 as d;
        let r = self.disk.list_disk_ids(d::ListDiskIDsRequest {}).await?;
        Ok(r.disk_i_ds
            .into_iter()
            .map(|(n, i)| (number(&n), i.identifiers["page83"].clone()))
            .collect())
    }
    async fn rescan(&self) -> Result<(), Error> {
        self.disk
            .rescan(disk::v1beta2::RescanRequest {})
            .await
            .map(drop)
    }
    async fn partition(&self, disk: u32) -> Result<(), Error> {
        self.disk
            .partition_disk(disk::v1beta2::PartitionDiskRequest {
                disk_id: disk.to_string(),
            })
            .await
            .map(drop)
    }
    async fn set_online(&self, disk: u32, is_online: bool) -> Result<(), Error> {
        self.disk
            .set_attach_state(disk::v1beta2::SetAttachStateRequest {
                disk_id: disk.to_string(),
                is_online,
            })
            .await
            .map(drop)
    }
    async fn volumes(&self, disk: u32) -> Result<Vec<String>, Error> {
        let r = self
            .volume
            .list_volumes_on_disk(volume::v1beta2::ListVolumesOnDiskRequest {
                disk_id: disk.to_string(),
            })
            .await?;
        Ok(r.volume_ids)
    }
    async fn is_formatted(&self, id: &str) -> Result<bool, Error> {
        let r = self
            .volume
            .is_volume_formatted(volume::v1beta2::IsVolumeFormattedRequest {
                volume_id: id.into(),
            })
            .await?;
        Ok(r.formatted)
    }
    async fn format(&self, id: &str) -> Result<(), Error> {
        self.volume
            .format_volume(volume::v1beta2::FormatVolumeRequest {
                volume_id: id.into(),
            })
            .await
            .map(drop)
    }
    async fn mount(&self, id: &str, path: &str) -> Result<(), Error> {
        self.volume
            .mount_volume(volume::v1beta2::MountVolumeRequest {
                volume_id: id.into(),
                path: path.into(),
            })
            .await
            .map(drop)
    }
    async fn unmount(&self, id: &str, path: &str) -> Result<(), Error> {
        self.volume
            .dismount_volume(volume::v1beta2::DismountVolumeRequest {
                volume_id: id.into(),
                path: path.into(),
            })
            .await
            .map(drop)
    }
    async fn volume_at(&self, path: &str) -> Result<String, Error> {
        let r = self
            .volume
            .get_volume_id_from_mount(volume::v1beta2::VolumeIdFromMountRequest {
                mount: path.into(),
            })
            .await?;
        Ok(r.volume_id)
    }
    async fn stats(&self, id: &str) -> Result<(i64, i64), Error> {
        let r = self
            .volume
            .volume_stats(volume::v1beta2::VolumeStatsRequest {
                volume_id: id.into(),
            })
            .await?;
        Ok((r.volume_size, r.volume_used_size))
    }
    async fn resize(&self, id: &str, size: i64) -> Result<(), Error> {
        self.volume
            .resize_volume(volume::v1beta2::ResizeVolumeRequest {
                volume_id: id.into(),
                size,
            })
            .await
            .map(drop)
    }
    async fn flush(&self, id: &str) -> Result<(), Error> {
        self.volume
            .write_volume_cache(volume::v1beta2::WriteVolumeCacheRequest {
                volume_id: id.into(),
            })
            .await
            .map(drop)
    }
    async fn disk_of(&self, id: &str) -> Result<u32, Error> {
        let r = self
            .volume
            .get_volume_disk_number(volume::v1beta2::VolumeDiskNumberRequest {
                volume_id: id.into(),
            })
            .await?;
        Ok(u32::try_from(r.disk_number).expect("a disk number"))
    }
    async fn path_exists(&self, path: &str) -> Result<bool, Error> {
        let r = self
            .fs
            .path_exists(filesystem::v1beta1::PathExistsRequest {
                path: path.into(),
                context: Self::context(path),
            })
            .await?;
        assert_eq!(r.error, "");
        Ok(r.exists)
    }
    async fn mkdir(&self, path: &str) -> Result<(), Error> {
        let r = self
            .fs
            .mkdir(filesystem::v1beta1::MkdirRequest {
                path: path.into(),
                context: Self::context(path),
            })
            .await?;
        assert_eq!(r.error, "");
        Ok(())
    }
    async fn rmdir(&self, path: &str, force: bool) -> Result<(), Error> {
        let r = self
            .fs
            .rmdir(filesystem::v1beta1::RmdirRequest {
                path: path.into(),
                context: Self::context(path),
                force,
            })
            .await?;
        assert_eq!(r.error, "");
        Ok(())
    }
    async fn symlink(&self, source: &str, target: &str) -> Result<(), Error> {
        let r = self
            .fs
            .link_path(filesystem::v1beta1::LinkPathRequest {
                source_path: source.into(),
                target_path: target.into(),
            })
            .await?;
        assert_eq!(r.error, "");
        Ok(())
    }
}

// ------------------------------------------------- the CSI node calls

/// NodeStageVolume, Azure Disk style: the disk by LUN (rescanning once if
/// it is not listed yet), partition, first volume, format if needed, mount.
/// Returns the volume id.
async fn node_stage_azure(d: &impl Driver, lun: &str, staging: &str) -> Result<String, Error> {
    let find = |luns: Vec<(u32, String)>| {
        luns.into_iter()
            .find(|(_, l)| l.eq_ignore_ascii_case(lun))
            .map(|(n, _)| n)
    };
    let number = match find(d.luns().await?) {
        Some(n) => n,
        None => {
            d.rescan().await?;
            find(d.luns().await?).expect("the LUN appears after a rescan")
        }
    };
    // Already staged: done.
    if d.path_exists(staging).await?
        && let Ok(id) = d.volume_at(staging).await
    {
        return Ok(id);
    }
    d.partition(number).await?;
    let id = d.volumes(number).await?.first().cloned().expect("a volume");
    if !d.is_formatted(&id).await? {
        d.format(&id).await?;
    }
    d.mkdir(staging).await?;
    d.mount(&id, staging).await?;
    Ok(id)
}

/// NodeStageVolume, GCE PD style: the disk whose page83 ends with the
/// device name, partition, online, first volume, format if needed, mount.
async fn node_stage_gce(d: &impl Driver, device: &str, staging: &str) -> Result<String, Error> {
    let number = d
        .page83s()
        .await?
        .into_iter()
        .find(|(_, p)| p.split_whitespace().last() == Some(device))
        .map(|(n, _)| n)
        .expect("a disk with that device name");
    d.partition(number).await?;
    d.set_online(number, true).await?;
    let id = d.volumes(number).await?.first().cloned().expect("a volume");
    if !d.is_formatted(&id).await? {
        d.format(&id).await?;
    }
    d.mkdir(staging).await?;
    d.mount(&id, staging).await?;
    Ok(id)
}

/// NodePublishVolume: the pre-created publish dir goes, the publish path
/// becomes a directory symlink to the staging mount point.
async fn node_publish(d: &impl Driver, staging: &str, publish: &str) -> Result<(), Error> {
    d.mkdir(publish).await?;
    if d.path_exists(publish).await? {
        d.rmdir(publish, false).await?;
    }
    d.symlink(staging, publish).await
}

/// NodeUnpublishVolume, Azure style: flush (best effort), remove the link.
async fn node_unpublish_azure(d: &impl Driver, publish: &str) -> Result<(), Error> {
    if let Ok(id) = d.volume_at(publish).await {
        let _ = d.flush(&id).await;
    }
    d.rmdir(publish, true).await
}

/// NodeUnstageVolume, Azure style: flush, then removing the mount-point
/// directory unmounts (no UnmountVolume).
async fn node_unstage_azure(d: &impl Driver, staging: &str) -> Result<(), Error> {
    let id = d.volume_at(staging).await?;
    let _ = d.flush(&id).await;
    d.rmdir(staging, true).await
}

/// NodeUnstageVolume, GCE style: unmount, remove the directory, take the
/// disk offline.
async fn node_unstage_gce(d: &impl Driver, staging: &str) -> Result<(), Error> {
    if !d.path_exists(staging).await? {
        return Ok(());
    }
    let id = d.volume_at(staging).await?;
    d.unmount(&id, staging).await?;
    d.rmdir(staging, false).await?;
    let number = d.disk_of(&id).await?;
    d.set_online(number, false).await
}

/// NodeGetVolumeStats: (capacity, used, available).
async fn node_get_volume_stats(d: &impl Driver, path: &str) -> Result<(i64, i64, i64), Error> {
    let id = d.volume_at(path).await?;
    let (total, used) = d.stats(&id).await?;
    Ok((total, used, total - used))
}

/// NodeExpandVolume, Azure style: grow to the maximum, then check the
/// capacity reached `required`. Returns the new capacity.
async fn node_expand(d: &impl Driver, path: &str, required: i64) -> Result<i64, Error> {
    let id = d.volume_at(path).await?;
    d.resize(&id, 0).await?;
    let (total, _) = d.stats(&id).await?;
    assert!(total >= required, "capacity {total} < requested {required}");
    Ok(total)
}

// ------------------------------------------------------------ scenarios

/// Azure Disk: stage by LUN (after a rescan), stage again, publish, data
/// through the publish path, unpublish, unstage without UnmountVolume,
/// restage with the data intact.
async fn azure_disk_lifecycle(node: &Node, d: &impl Driver) {
    let host = &node.host;
    let staging = staging("azure");
    let publish = publish("azure");
    let n = host
        .attach_disk(DiskSpec {
            location: Some("Integrated : Adapter 3 : Port 0 : Target 0 : LUN 9".into()),
            needs_rescan: true,
            ..DiskSpec::new(GIB)
        })
        .expect("attach")
        .0;

    let id = node_stage_azure(d, "9", &staging).await.expect("stage");
    let s = host.snapshot();
    assert!(disk_of(&s, n).is_listed(), "rescanned");
    assert_eq!(volume_of(&s, &id).disk, n);
    assert_eq!(volume_of(&s, &id).fs, FileSystem::Ntfs);
    assert_eq!(mounted_at(host, &staging), std::slice::from_ref(&id));
    host.write_file(&format!(r"{staging}\data.txt"), b"azure data")
        .expect("write on the volume");
    let used = volume_of(&host.snapshot(), &id).used;

    // Staging again finds the mount point and changes nothing.
    let before = host.snapshot();
    let again = node_stage_azure(d, "9", &staging).await.expect("restage");
    assert_eq!(again, id);
    assert_eq!(host.snapshot(), before);

    node_publish(d, &staging, &publish).await.expect("publish");
    assert!(is_link(host, &publish, LinkKind::Dir, &staging));
    assert_eq!(
        host.read_file(&format!(r"{publish}\data.txt"))
            .expect("read"),
        b"azure data"
    );
    assert_eq!(d.volume_at(&publish).await.expect("lookup"), id);

    let flushes = volume_of(&host.snapshot(), &id).flushes;
    node_unpublish_azure(d, &publish).await.expect("unpublish");
    assert_eq!(entry(host, &publish), None);
    assert_eq!(mounted_at(host, &staging), std::slice::from_ref(&id));
    assert_eq!(volume_of(&host.snapshot(), &id).flushes, flushes + 1);

    node_unstage_azure(d, &staging).await.expect("unstage");
    assert_eq!(entry(host, &staging), None);
    assert!(
        host.snapshot()
            .mount_points
            .iter()
            .all(|m| m.volume_id != id)
    );
    let v = volume_of(&host.snapshot(), &id).clone();
    assert_eq!(
        (v.fs, v.used),
        (FileSystem::Ntfs, used),
        "the volume is untouched"
    );

    // Restage: same volume, not reformatted, data still there.
    let restaged = node_stage_azure(d, "9", &staging).await.expect("restage");
    assert_eq!(restaged, id);
    assert_eq!(
        host.read_file(&format!(r"{staging}\data.txt"))
            .expect("read"),
        b"azure data"
    );
}

/// GCE PD: stage by device name, publish, unpublish, unstage (unmount,
/// rmdir, offline), restage (online again, same data), unstage.
async fn gce_pd_lifecycle(node: &Node, d: &impl Driver) {
    let host = &node.host;
    let device = "pvc-7d0c5a4e-1b2f-4a6e-9d3c-2e8f6b1a0c55";
    let staging = staging("gce");
    let publish = publish("gce");
    let n = host
        .attach_disk(DiskSpec {
            page83: Some(Page83::Ascii(format!("Google  {device}").into_bytes())),
            serial_number: Some(" ".repeat(20)),
            ..DiskSpec::new(10 * GIB)
        })
        .expect("attach")
        .0;

    let id = node_stage_gce(d, device, &staging).await.expect("stage");
    let s = host.snapshot();
    assert_eq!(volume_of(&s, &id).disk, n);
    assert_eq!(partition_of(&s, &id).size, 10_720_624_128);
    assert_eq!(volume_of(&s, &id).fs, FileSystem::Ntfs);
    assert_eq!(mounted_at(host, &staging), std::slice::from_ref(&id));

    node_publish(d, &staging, &publish).await.expect("publish");
    host.write_file(&format!(r"{publish}\data.txt"), b"gce data")
        .expect("write through the publish link");
    assert_eq!(
        host.read_file(&format!(r"{staging}\data.txt"))
            .expect("read"),
        b"gce data"
    );

    // Unpublish: remove the link only.
    d.rmdir(&publish, false).await.expect("unpublish");
    assert_eq!(entry(host, &publish), None);

    node_unstage_gce(d, &staging).await.expect("unstage");
    let s = host.snapshot();
    assert_eq!(entry(host, &staging), None);
    assert!(s.mount_points.iter().all(|m| m.volume_id != id));
    assert!(disk_of(&s, n).is_offline);
    assert!(
        d.volumes(n).await.expect("list").is_empty(),
        "offline: hidden"
    );
    unknown(d.stats(&id).await, "not found");
    // Unstaging again is a no-op.
    node_unstage_gce(d, &staging).await.expect("unstage again");

    // Restage: the disk comes back online with the same, formatted volume.
    let restaged = node_stage_gce(d, device, &staging).await.expect("restage");
    assert_eq!(restaged, id);
    assert!(!disk_of(&host.snapshot(), n).is_offline);
    assert_eq!(
        host.read_file(&format!(r"{staging}\data.txt"))
            .expect("read"),
        b"gce data"
    );
    node_unstage_gce(d, &staging).await.expect("unstage");
    assert!(disk_of(&host.snapshot(), n).is_offline);
}

/// NodeGetVolumeStats through the publish symlink, data changing the used
/// bytes, NodeExpand after the disk grew (and a no-op expand).
async fn stats_and_expand(node: &Node, d: &impl Driver) {
    let host = &node.host;
    let staging = staging("expand");
    let publish = publish("expand");
    let n = attach_blank_disk(host, GIB);
    let lun = n.to_string();
    let id = node_stage_azure(d, &lun, &staging).await.expect("stage");
    node_publish(d, &staging, &publish).await.expect("publish");

    let (total, used, available) = node_get_volume_stats(d, &publish).await.expect("stats");
    let v = volume_of(&host.snapshot(), &id).clone();
    assert_eq!(total, gpt_basic_size(GIB) as i64);
    assert_eq!(used, v.used as i64);
    assert_eq!(available, total - used);

    host.write_file(&format!(r"{publish}\blob"), &vec![7u8; 3 << 20])
        .expect("write 3 MiB");
    let (_, used_after, _) = node_get_volume_stats(d, &publish).await.expect("stats");
    assert_eq!(used_after, used + (3 << 20));

    // The controller grew the disk; the host sees it after a rescan.
    host.grow_disk(n, 2 * GIB).expect("grow");
    d.rescan().await.expect("rescan");
    let grown = node_expand(d, &publish, (2 * GIB - 32 * MIB) as i64)
        .await
        .expect("expand");
    assert_eq!(grown, 2_130_689_536);
    assert_eq!(partition_of(&host.snapshot(), &id).size, 2_130_689_536);
    let (total, used, _) = node_get_volume_stats(d, &publish).await.expect("stats");
    assert_eq!(
        (total, used),
        (grown, used_after),
        "used bytes survive the resize"
    );

    // Nothing left to grow: a no-op.
    let before = host.snapshot();
    assert_eq!(
        node_expand(d, &staging, grown).await.expect("expand"),
        grown
    );
    assert_eq!(host.snapshot(), before);
}
