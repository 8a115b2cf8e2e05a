//! What a disk or volume holds where Windows shows nothing, read from its
//! sectors before HostProcess mode formats or initialises it: a volume
//! Windows shows as RAW may be BitLocker locked without its key, ext4 or
//! XFS in a basic-data partition, or NTFS Windows no longer mounts; a disk
//! Windows shows as RAW may hold a file system made on the whole device
//! (Linux's mount-utils formats the device itself), and either may end
//! in an md RAID superblock, DRBD meta-data or an LDM database. Each is
//! read at its first and last MiB; the signatures and where they lie are
//! `crate::win::signatures`'.

use super::backend::{Ctx, HostProcess};
use super::boundary::DiskObject;
use super::disk::find_disk as disk;
use crate::Error;
use crate::win::signatures;

/// The signature in the region of `disk` of `size` bytes from byte
/// `start` (a partition, or the whole disk), read from its first and its
/// last MiB (`signatures::reads`), or what kept the bytes from being read
/// whole (never taken as blank).
fn signature_in(
    ctx: &Ctx,
    disk: &DiskObject,
    start: u64,
    size: u64,
) -> Result<Option<String>, String> {
    let mut read = Vec::new();
    for (from, len) in signatures::reads(size) {
        let at = start + from;
        let want = usize::try_from(len)
            .map_err(|_| format!("cannot read {len} bytes of disk {} at once", disk.number))?;
        let bytes = ctx
            .host()
            .disk_read(&disk.path, at, want)
            .map_err(|e| format!("failed to read disk {} at byte {at}: {e}", disk.number))?;
        if bytes.len() < want {
            return Err(format!(
                "read {} of the {want} bytes of disk {} at byte {at} needed to look for signatures",
                bytes.len(),
                disk.number
            ));
        }
        read.push((from, bytes));
    }
    let views: Vec<(u64, &[u8])> = read.iter().map(|(from, b)| (*from, &b[..])).collect();
    Ok(signatures::find(size, &views)
        .map(|(s, at)| format!("a {} signature at byte {}", s.name, start + at)))
}

impl HostProcess {
    /// What disk `n` holds when Windows shows it with no partition table
    /// (`MSFT_Disk.PartitionStyle` RAW): a signature in its first or last
    /// MiB (a file system made on the whole device, an md RAID 0.90 or 1.0
    /// member, DRBD's internal meta-data, an LDM database, a backup GPT
    /// header, ...). `None`: the disk has a partition table, or its first
    /// and last MiB hold no signature.
    pub(crate) async fn raw_disk_signature(&self, n: u32) -> Result<Option<String>, Error> {
        self.run("disk_read", move |ctx| {
            let disk = disk(ctx, n)?;
            if disk.partition_style != super::boundary::PARTITION_STYLE_RAW {
                return Ok(None);
            }
            signature_in(ctx, &disk, 0, disk.size)
        })
        .await
    }

    /// What volume `id` holds in its partition's first or last MiB, read
    /// from the disk at the partition's offset (a locked BitLocker volume
    /// cannot be read through the volume itself). `None`: no signature
    /// there.
    pub(crate) async fn volume_signature(&self, id: &str) -> Result<Option<String>, Error> {
        let id = id.to_string();
        self.run("disk_read", move |ctx| {
            let part = ctx
                .host()
                .volume_partitions(&id)
                .map_err(|e| format!("failed to find the partition of volume {id}: {e}"))?
                .into_iter()
                .next()
                .ok_or_else(|| format!("volume {id} has no partition"))?;
            let disk = disk(ctx, part.disk_number)?;
            signature_in(ctx, &disk, part.offset, part.size)
        })
        .await
    }
}
