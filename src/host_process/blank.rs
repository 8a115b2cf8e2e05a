//! What a disk or volume holds where Windows shows nothing, read from its
//! sectors before HostProcess mode formats or initialises it: a volume
//! Windows shows as RAW may be BitLocker locked without its key, ext4 or
//! XFS in a basic-data partition, or NTFS Windows no longer mounts; a disk
//! Windows shows as RAW may hold a file system made on the whole device
//! (Linux's mount-utils formats the device itself). The signatures are
//! `crate::win::signatures`'.

use super::backend::{Ctx, HostProcess};
use super::boundary::DiskObject;
use super::disk::find_disk as disk;
use crate::Error;
use crate::win::signatures;

/// How much is read: one MiB, which holds every signature of the table
/// (the farthest, btrfs's, lies at 64 KiB) and is aligned for any sector
/// size.
const READ: u64 = 1 << 20;

/// The signature in the `len` bytes of `disk` from `offset`, or what kept
/// the bytes from being read whole (never taken as blank).
fn signature_at(
    ctx: &Ctx,
    disk: &DiskObject,
    offset: u64,
    len: u64,
) -> Result<Option<String>, String> {
    let want = usize::try_from(len).unwrap_or(usize::MAX);
    let bytes = ctx
        .host()
        .disk_read(&disk.path, offset, want)
        .map_err(|e| format!("failed to read disk {} at byte {offset}: {e}", disk.number))?;
    let needed = want.min(signatures::span());
    if bytes.len() < needed {
        return Err(format!(
            "read {} of the {needed} bytes of disk {} at byte {offset} needed to look for signatures",
            bytes.len(),
            disk.number
        ));
    }
    Ok(signatures::find(&bytes).map(|s| format!("a {} signature at byte {offset}", s.name)))
}

impl HostProcess {
    /// What disk `n` holds when Windows shows it with no partition table
    /// (`MSFT_Disk.PartitionStyle` RAW): a signature in its first MiB, or
    /// a backup GPT header in its last sectors. `None`: the disk has a
    /// partition table, or its first and last MiB hold no signature.
    pub(crate) async fn raw_disk_signature(&self, n: u32) -> Result<Option<String>, Error> {
        self.run("disk_read", move |ctx| {
            let disk = disk(ctx, n)?;
            if disk.partition_style != super::boundary::PARTITION_STYLE_RAW {
                return Ok(None);
            }
            if let Some(found) = signature_at(ctx, &disk, 0, READ.min(disk.size))? {
                return Ok(Some(found));
            }
            // A GPT's backup header is the disk's last logical sector.
            let start = disk.size.saturating_sub(READ);
            let bytes = ctx
                .host()
                .disk_read(
                    &disk.path,
                    start,
                    usize::try_from(disk.size - start).unwrap_or(0),
                )
                .map_err(|e| format!("failed to read disk {n} at byte {start}: {e}"))?;
            let backup = [512usize, 4096].into_iter().any(|sector| {
                bytes.len() >= sector && bytes[bytes.len() - sector..].starts_with(b"EFI PART")
            });
            Ok(backup.then(|| format!("a backup GPT header in the last sectors of disk {n}")))
        })
        .await
    }

    /// What volume `id` holds in its partition's first MiB, read from the
    /// disk at the partition's offset (a locked BitLocker volume cannot be
    /// read through the volume itself). `None`: no signature there.
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
            signature_at(ctx, &disk, part.offset, READ.min(part.size))
        })
        .await
    }
}
