//! Known on-disk signatures: the magic bytes a file system, an encrypted
//! or swap area, a RAID member, replicated-block metadata, a dynamic-disk
//! database or a partition table leaves at a fixed place in a region (a
//! partition, or a whole device), from its start or from its end.
//! HostProcess mode reads a region's first and last MiB and formats or
//! initialises only when none of these is there; the simulated host writes
//! the same magic where its model says a volume or disk holds such data,
//! so that both read one table.
//!
//! The standard is Linux's `mount-utils` (`mount_linux.go`,
//! `formatAndMountSensitive` and `getDiskFormat`): it formats only when
//! `blkid -p` finds no file system and no partition table (exit status 2),
//! and refuses when blkid cannot tell. Here, too, any signature is a
//! refusal, and bytes that could not be read are never taken as blank.
//!
//! Offsets and magic are those of each format's published layout (the
//! boot sectors of NTFS, ReFS, FAT and exFAT, BitLocker's `-FVE-FS-`
//! OEM id, the ext2/3/4 superblock's `s_magic` at 1024 + 0x38, XFS's
//! `XFSB`, LUKS's header, LVM2's label, btrfs's superblock at 64 KiB,
//! swap's last bytes of its first page, the ISO 9660 volume descriptor,
//! and the GPT header and MBR boot signature). The ones placed from a
//! region's end, and the RAID, DRBD and LDM ones, were looked up in:
//!
//! - Linux md RAID. v0.90: the superblock is the last 64 KiB-aligned
//!   64 KiB block, `MD_NEW_SIZE_SECTORS(x) = (x & ~(MD_RESERVED_SECTORS -
//!   1)) - MD_RESERVED_SECTORS` with 64 KiB reserved (the kernel's
//!   `include/uapi/linux/raid/md_p.h`), `md_magic` 0xa92b4efc its first
//!   word, in the byte order of the host that wrote it (util-linux
//!   `libblkid/src/superblocks/linux_raid.c`, `probe_raid0`, tries both).
//!   v1.x (mdadm `super1.c`, `store_super1`; the kernel's `md.c`,
//!   `super_1_load`): v1.0 at `(sectors - 16) & ~7` (8 to 12 KiB before the
//!   end, 4 KiB aligned), v1.1 at 0, v1.2 at 4 KiB; `magic` 0xa92b4efc
//!   little-endian, the first field of `struct mdp_superblock_1`.
//! - DRBD meta-data (LINBIT drbd-utils `user/shared/drbdmeta.c`,
//!   `DRBD_MD_MAGIC_08` = `DRBD_MAGIC` + 4 = 0x8374026b, `_84_UNCLEAN` + 5,
//!   `_09` + 6; `struct md_on_disk_08` and drbd-headers' `drbd_meta_data.h`
//!   `struct meta_data_on_disk_9`: `magic` big-endian at byte 60, "at the
//!   same position as in v07, and v08"). Internal meta-data's superblock is
//!   the last 4 KiB-aligned 4 KiB block (LINBIT drbd `drbd_int.h`,
//!   `drbd_md_ss__`: `(capacity & ~7) - MD_AL_OFFSET` sectors, "last 4k
//!   aligned block of 4k size"); external flexible meta-data's is the
//!   meta-data device's first 4 KiB (`DRBD_MD_INDEX_FLEX_EXT`: 0).
//! - Windows LDM (dynamic disks; the kernel's `block/partitions/ldm.h` and
//!   `ldm.c`): `PRIVHEAD`, `TOCBLOCK` and `VMDB` at the start of their
//!   512-byte sectors. The first PRIVHEAD is sector 6 of an MBR dynamic
//!   disk (`OFF_PRIV1`); the database (`LDM_DB_SIZE`, 2048 sectors = 1 MiB)
//!   fills the disk's last MiB there, with PRIVHEAD copies at its sectors
//!   1856 and 2047 (the device's last sector), TOCBLOCKs at 1, 2, 2045 and
//!   2046, and the VMDB at 17. On a GPT dynamic disk the PRIVHEAD is the
//!   last sector of the LDM metadata partition (libldm `src/ldm.c`,
//!   `_read_privhead_gpt`): that region's end.

/// Where a signature's structure starts in a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// At the region's start.
    Start,
    /// At `size - back` rounded down to a multiple of `align`: `back`
    /// bytes before the end for a structure in the last sector, and the
    /// rounding of md's and DRBD's superblocks at the end.
    End {
        /// Bytes back from the region's end.
        back: u64,
        /// The structure's alignment (a power of two).
        align: u64,
    },
}

/// One signature: `magic` at byte `offset` of a structure placed in a
/// region as `anchor` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signature {
    /// What it shows (`ntfs`, `ext4`, `bitlocker`, ...).
    pub name: &'static str,
    /// Where the structure holding the magic starts.
    pub anchor: Anchor,
    /// Byte offset of the magic in that structure.
    pub offset: usize,
    /// The magic bytes.
    pub magic: &'static [u8],
}

impl Signature {
    /// Where the structure holding the magic starts in a region of `size`
    /// bytes; `None` when the region cannot hold it.
    pub fn base(&self, size: u64) -> Option<u64> {
        match self.anchor {
            Anchor::Start => Some(0),
            Anchor::End { back, align } => Some(size.checked_sub(back)? & !(align - 1)),
        }
    }

    /// The byte of the magic in a region of `size` bytes; `None` when the
    /// region cannot hold it.
    pub fn position(&self, size: u64) -> Option<u64> {
        let at = self.base(size)? + self.offset as u64;
        (at + self.magic.len() as u64 <= size).then_some(at)
    }
}

const fn sig(name: &'static str, offset: usize, magic: &'static [u8]) -> Signature {
    Signature {
        name,
        anchor: Anchor::Start,
        offset,
        magic,
    }
}

/// A signature whose structure starts at `size - back` rounded down to
/// `align`.
const fn end(
    name: &'static str,
    back: u64,
    align: u64,
    offset: usize,
    magic: &'static [u8],
) -> Signature {
    Signature {
        name,
        anchor: Anchor::End { back, align },
        offset,
        magic,
    }
}

/// md's superblock magic, 0xa92b4efc, little-endian.
const MD_MAGIC_LE: &[u8] = &[0xFC, 0x4E, 0x2B, 0xA9];
/// The same, big-endian (a v0.90 superblock written by a big-endian host).
const MD_MAGIC_BE: &[u8] = &[0xA9, 0x2B, 0x4E, 0xFC];
/// DRBD's meta-data magics, big-endian, at byte 60 of its superblock.
const DRBD_08: &[u8] = &[0x83, 0x74, 0x02, 0x6B];
const DRBD_84_UNCLEAN: &[u8] = &[0x83, 0x74, 0x02, 0x6C];
const DRBD_09: &[u8] = &[0x83, 0x74, 0x02, 0x6D];
const DRBD_MAGIC_AT: usize = 60;
const KIB: u64 = 1024;
const SECTOR: u64 = 512;

/// The signatures looked for, most specific first (a boot sector's
/// `55 AA` comes last: NTFS and FAT carry it too).
pub const SIGNATURES: &[Signature] = &[
    sig("ntfs", 3, b"NTFS    "),
    sig("refs", 3, b"ReFS\0\0\0\0"),
    sig("exfat", 3, b"EXFAT   "),
    sig("bitlocker", 3, b"-FVE-FS-"),
    sig("fat32", 0x52, b"FAT32   "),
    sig("fat", 0x36, b"FAT1"),
    sig("ext4", 0x438, &[0x53, 0xEF]),
    sig("xfs", 0, b"XFSB"),
    sig("luks", 0, b"LUKS\xBA\xBE"),
    sig("lvm2", 0x200, b"LABELONE"),
    // md v1.2 (4 KiB from the start) and v1.1 (at the start).
    sig("linux_raid", 0x1000, MD_MAGIC_LE),
    sig("linux_raid_1.1", 0, MD_MAGIC_LE),
    sig("btrfs", 0x1_0040, b"_BHRfS_M"),
    sig("swap", 0xFF6, b"SWAPSPACE2"),
    sig("swap", 0xFF6, b"SWAP-SPACE"),
    sig("iso9660", 0x8001, b"CD001"),
    // DRBD external flexible meta-data: its device's first 4 KiB.
    sig("drbd_external_08", DRBD_MAGIC_AT, DRBD_08),
    sig("drbd_external_84_unclean", DRBD_MAGIC_AT, DRBD_84_UNCLEAN),
    sig("drbd_external_09", DRBD_MAGIC_AT, DRBD_09),
    // LDM's first PRIVHEAD, sector 6 of an MBR dynamic disk.
    sig("ldm_privhead", 6 * SECTOR as usize, b"PRIVHEAD"),
    // md v0.90: the last 64 KiB-aligned 64 KiB block.
    end("linux_raid_0.90", 64 * KIB, 64 * KIB, 0, MD_MAGIC_LE),
    end("linux_raid_0.90_be", 64 * KIB, 64 * KIB, 0, MD_MAGIC_BE),
    // md v1.0: 8 KiB before the end, rounded down to 4 KiB.
    end("linux_raid_1.0", 8 * KIB, 4 * KIB, 0, MD_MAGIC_LE),
    // DRBD internal meta-data: the last 4 KiB-aligned 4 KiB block.
    end("drbd_08", 4 * KIB, 4 * KIB, DRBD_MAGIC_AT, DRBD_08),
    end(
        "drbd_84_unclean",
        4 * KIB,
        4 * KIB,
        DRBD_MAGIC_AT,
        DRBD_84_UNCLEAN,
    ),
    end("drbd_09", 4 * KIB, 4 * KIB, DRBD_MAGIC_AT, DRBD_09),
    // LDM's database in the last MiB (sectors counted back from the end:
    // the database's sector n is 2048 - n sectors before it).
    end("ldm_privhead_2047", SECTOR, SECTOR, 0, b"PRIVHEAD"),
    end(
        "ldm_privhead_1856",
        (2048 - 1856) * SECTOR,
        SECTOR,
        0,
        b"PRIVHEAD",
    ),
    end(
        "ldm_tocblock_2046",
        (2048 - 2046) * SECTOR,
        SECTOR,
        0,
        b"TOCBLOCK",
    ),
    end(
        "ldm_tocblock_2045",
        (2048 - 2045) * SECTOR,
        SECTOR,
        0,
        b"TOCBLOCK",
    ),
    end(
        "ldm_tocblock_2",
        (2048 - 2) * SECTOR,
        SECTOR,
        0,
        b"TOCBLOCK",
    ),
    end(
        "ldm_tocblock_1",
        (2048 - 1) * SECTOR,
        SECTOR,
        0,
        b"TOCBLOCK",
    ),
    end("ldm_vmdb", (2048 - 17) * SECTOR, SECTOR, 0, b"VMDB"),
    sig("gpt", 0x200, b"EFI PART"),
    sig("gpt", 0x1000, b"EFI PART"),
    // The backup GPT header: the last logical sector (512 or 4096 bytes).
    end("gpt_backup_512", 512, 512, 0, b"EFI PART"),
    end("gpt_backup_4096", 4096, 4096, 0, b"EFI PART"),
    sig("mbr", 0x1FE, &[0x55, 0xAA]),
];

/// How much of a region's start and of its end a reader reads: one MiB
/// each, which holds every signature of the table (the farthest from the
/// start, btrfs's, lies at 64 KiB; from the end, LDM's database fills the
/// last MiB) and is aligned for any sector size.
#[cfg_attr(not(feature = "host-process"), allow(dead_code))]
pub const READ: u64 = 1 << 20;

/// The byte ranges (offset, length) of a region of `size` bytes a reader
/// reads to look for every signature: its first and its last
/// [`READ`] bytes, one range when they meet.
#[cfg_attr(not(feature = "host-process"), allow(dead_code))]
pub fn reads(size: u64) -> Vec<(u64, u64)> {
    let head = READ.min(size);
    let tail = size.saturating_sub(READ).max(head);
    let mut ranges = vec![(0, head)];
    if tail < size {
        ranges.push((tail, size - tail));
    }
    ranges
}

/// The signature of `name` (the first of that name).
pub fn named(name: &str) -> Option<&'static Signature> {
    SIGNATURES.iter().find(|s| s.name == name)
}

/// The first signature found in a region of `size` bytes, and the byte of
/// its magic, from `reads`: pairs of (offset in the region, bytes read
/// there). A signature no read reaches is not found: read what
/// [`reads`] names.
#[cfg_attr(not(feature = "host-process"), allow(dead_code))]
pub fn find(size: u64, reads: &[(u64, &[u8])]) -> Option<(&'static Signature, u64)> {
    SIGNATURES.iter().find_map(|s| {
        let at = s.position(size)?;
        let found = reads.iter().any(|(from, bytes)| {
            at.checked_sub(*from)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| bytes.get(i..i.checked_add(s.magic.len())?))
                == Some(s.magic)
        });
        found.then_some((s, at))
    })
}

/// Where a simulated region holds a signature: the structure at its own
/// place, or moved to a byte from the region's start or end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Where the format puts it ([`Signature::base`]).
    Own,
    /// The structure starting this many bytes from the region's start.
    FromStart(u64),
    /// The structure starting this many bytes before the region's end.
    BeforeEnd(u64),
}

/// A signature and its place, from the simulator's `holds` text: a name
/// of the table (`ext4`, `linux_raid_0.90`, ...: at its own place),
/// `name@<bytes>` (from the region's start) or `name@end-<bytes>` (before
/// its end). `None`: not a name of the table, or not such a place.
pub fn placed(holds: &str) -> Option<(&'static Signature, Place)> {
    let (name, place) = match holds.split_once('@') {
        None => (holds, Place::Own),
        Some((name, at)) => match at.strip_prefix("end-") {
            Some(back) => (name, Place::BeforeEnd(back.parse().ok()?)),
            None => (name, Place::FromStart(at.parse().ok()?)),
        },
    };
    Some((named(name)?, place))
}

/// The byte of `signature`'s magic placed at `place` in a region of
/// `size` bytes; `None` when the region cannot hold it there.
pub fn position_at(signature: &Signature, place: Place, size: u64) -> Option<u64> {
    let base = match place {
        Place::Own => signature.base(size)?,
        Place::FromStart(at) => at,
        Place::BeforeEnd(back) => size.checked_sub(back)?,
    };
    let at = base.checked_add(signature.offset as u64)?;
    (at.checked_add(signature.magic.len() as u64)? <= size).then_some(at)
}

/// Writes `signature`'s magic at byte `at` (from wherever `read_start`
/// counts) into `bytes`, the bytes read from `read_start` (the simulated
/// host's sector contents); the part outside `bytes` is left out.
pub fn write(signature: &Signature, at: u64, read_start: u64, bytes: &mut [u8]) {
    for (i, b) in signature.magic.iter().enumerate() {
        let pos = at + i as u64;
        if pos >= read_start && pos < read_start + bytes.len() as u64 {
            bytes[(pos - read_start) as usize] = *b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;
    /// A 32 GiB disk, and one whose size is no multiple of 4 KiB or 64 KiB
    /// (an odd number of sectors).
    const SIZES: [u64; 2] = [32 << 30, (32 << 30) + 37 * 512];

    /// What `find` sees in a region of `size` bytes holding only `magic`
    /// at byte `at`, read as a reader does (its first and last MiB).
    fn found_with(size: u64, at: u64, magic: &[u8]) -> Option<(&'static str, u64)> {
        let bufs: Vec<(u64, Vec<u8>)> = reads(size)
            .into_iter()
            .map(|(from, len)| {
                let mut bytes = vec![0u8; len as usize];
                for (i, b) in magic.iter().enumerate() {
                    let pos = at + i as u64;
                    if pos >= from && pos < from + len {
                        bytes[(pos - from) as usize] = *b;
                    }
                }
                (from, bytes)
            })
            .collect();
        let views: Vec<(u64, &[u8])> = bufs.iter().map(|(f, b)| (*f, &b[..])).collect();
        find(size, &views).map(|(s, at)| (s.name, at))
    }

    #[test]
    fn each_format_is_found_at_its_offset_from_the_start() {
        let size = 4 * MIB;
        let cases: &[(&str, u64, &[u8])] = &[
            ("ntfs", 3, b"NTFS    "),
            ("refs", 3, b"ReFS\0\0\0\0"),
            ("exfat", 3, b"EXFAT   "),
            ("bitlocker", 3, b"-FVE-FS-"),
            ("fat32", 82, b"FAT32   "),
            ("fat", 54, b"FAT16   "),
            // ext2/3/4: the superblock at 1024, s_magic 0xEF53 at 0x38 in it.
            ("ext4", 1024 + 0x38, &0xEF53u16.to_le_bytes()),
            ("xfs", 0, b"XFSB"),
            ("luks", 0, &[b'L', b'U', b'K', b'S', 0xBA, 0xBE]),
            ("lvm2", 512, b"LABELONE"),
            // md v1.2 at 4 KiB, v1.1 at 0: magic 0xa92b4efc little-endian.
            ("linux_raid", 4096, &0xA92B_4EFCu32.to_le_bytes()),
            ("linux_raid_1.1", 0, &0xA92B_4EFCu32.to_le_bytes()),
            ("btrfs", 65536 + 0x40, b"_BHRfS_M"),
            ("swap", 4096 - 10, b"SWAPSPACE2"),
            ("iso9660", 32768 + 1, b"CD001"),
            // DRBD external meta-data: magic big-endian at byte 60.
            ("drbd_external_08", 60, &0x8374_026Bu32.to_be_bytes()),
            (
                "drbd_external_84_unclean",
                60,
                &0x8374_026Cu32.to_be_bytes(),
            ),
            ("drbd_external_09", 60, &0x8374_026Du32.to_be_bytes()),
            // LDM: the first PRIVHEAD in sector 6.
            ("ldm_privhead", 6 * 512, b"PRIVHEAD"),
            ("gpt", 512, b"EFI PART"),
            ("gpt", 4096, b"EFI PART"),
            ("mbr", 510, &[0x55, 0xAA]),
        ];
        for (name, at, magic) in cases {
            assert_eq!(
                found_with(size, *at, magic),
                Some((*name, *at)),
                "{name} at {at}"
            );
        }
    }

    #[test]
    fn each_format_is_found_at_its_place_from_the_end() {
        let md = 0xA92B_4EFCu32;
        for size in SIZES {
            let sectors = size / 512;
            let cases: &[(&str, u64, &[u8])] = &[
                // md_p.h: MD_NEW_SIZE_SECTORS(x) = (x & ~127) - 128 sectors.
                (
                    "linux_raid_0.90",
                    ((sectors & !127) - 128) * 512,
                    &md.to_le_bytes(),
                ),
                (
                    "linux_raid_0.90_be",
                    ((sectors & !127) - 128) * 512,
                    &md.to_be_bytes(),
                ),
                // super1.c: ((sectors - 16) & ~7) sectors.
                (
                    "linux_raid_1.0",
                    ((sectors - 16) & !7) * 512,
                    &md.to_le_bytes(),
                ),
                // drbd_md_ss__: (sectors & ~7) - 8, magic at 60.
                (
                    "drbd_08",
                    ((sectors & !7) - 8) * 512 + 60,
                    &0x8374_026Bu32.to_be_bytes(),
                ),
                (
                    "drbd_84_unclean",
                    ((sectors & !7) - 8) * 512 + 60,
                    &0x8374_026Cu32.to_be_bytes(),
                ),
                (
                    "drbd_09",
                    ((sectors & !7) - 8) * 512 + 60,
                    &0x8374_026Du32.to_be_bytes(),
                ),
                // LDM: the database is the last 2048 sectors.
                (
                    "ldm_privhead_2047",
                    (sectors - 2048 + 2047) * 512,
                    b"PRIVHEAD",
                ),
                (
                    "ldm_privhead_1856",
                    (sectors - 2048 + 1856) * 512,
                    b"PRIVHEAD",
                ),
                ("ldm_tocblock_1", (sectors - 2048 + 1) * 512, b"TOCBLOCK"),
                ("ldm_tocblock_2", (sectors - 2048 + 2) * 512, b"TOCBLOCK"),
                (
                    "ldm_tocblock_2045",
                    (sectors - 2048 + 2045) * 512,
                    b"TOCBLOCK",
                ),
                ("ldm_vmdb", (sectors - 2048 + 17) * 512, b"VMDB"),
                // The backup GPT header: the last logical sector.
                ("gpt_backup_512", size - 512, b"EFI PART"),
            ];
            for (name, at, magic) in cases {
                assert_eq!(
                    found_with(size, *at, magic),
                    Some((*name, *at)),
                    "{name} at {at} of {size}"
                );
            }
        }
        // On a 4 KiB-sector disk (its size a multiple of 4 KiB), the last
        // sector's header; TOCBLOCK 2046 is the sector before PRIVHEAD 2047.
        let size = SIZES[0];
        assert_eq!(
            found_with(size, size - 4096, b"EFI PART"),
            Some(("gpt_backup_4096", size - 4096))
        );
        assert_eq!(
            found_with(size, size - 1024, b"TOCBLOCK"),
            Some(("ldm_tocblock_2046", size - 1024))
        );
    }

    #[test]
    fn zeros_and_near_misses_hold_no_signature() {
        for size in [4 * MIB, SIZES[0], SIZES[1]] {
            assert_eq!(found_with(size, 0, &[]), None);
        }
        assert_eq!(found_with(4 * MIB, 4, b"NTFS    "), None);
        assert_eq!(found_with(4 * MIB, 1024 + 0x39, &[0x53, 0xEF]), None);
        let size = SIZES[1];
        let md = 0xA92B_4EFCu32.to_le_bytes();
        // md 0.90 one 64 KiB block early, and unaligned; md 1.0 4 KiB late.
        let md090 = (size & !0xFFFF) - 0x10000;
        assert_eq!(found_with(size, md090 - 0x10000, &md), None);
        assert_eq!(found_with(size, md090 + 512, &md), None);
        let md10 = (size - 8192) & !4095;
        assert_eq!(found_with(size, md10 + 4096, &md), None);
        // DRBD's magic at its block's start rather than at byte 60.
        let drbd = (size & !4095) - 4096;
        assert_eq!(found_with(size, drbd, &0x8374_026Bu32.to_be_bytes()), None);
        // The magic of a signature at another place: LDM's PRIVHEAD in
        // the middle of the disk, md's in its first MiB's middle.
        assert_eq!(found_with(size, (size / 2) & !511, b"PRIVHEAD"), None);
        assert_eq!(found_with(size, 512 * 1024, &md), None);
    }

    #[test]
    fn the_reads_reach_every_signature_for_any_size() {
        let sizes = [
            4096,
            64 * 1024,
            MIB - 512,
            MIB,
            MIB + 512,
            2 * MIB - 512,
            2 * MIB + 4096 + 512,
            SIZES[0],
            SIZES[1],
        ];
        for size in sizes {
            let ranges = reads(size);
            let covered: u64 = ranges.iter().map(|(_, len)| len).sum();
            assert_eq!(covered, size.min(2 * READ), "{size}");
            for s in SIGNATURES {
                let Some(at) = s.position(size) else { continue };
                let end = at + s.magic.len() as u64;
                assert!(
                    ranges
                        .iter()
                        .any(|(from, len)| at >= *from && end <= from + len),
                    "{} at {at} of {size}: not read by {ranges:?}",
                    s.name
                );
            }
        }
    }

    #[test]
    fn a_written_signature_is_found_where_it_is_placed() {
        for size in [4 * MIB, SIZES[1]] {
            for s in SIGNATURES {
                let at = position_at(s, Place::Own, size).expect(s.name);
                assert_eq!(Some(at), s.position(size));
                let mut bytes = vec![0u8; s.magic.len()];
                write(s, at, at, &mut bytes);
                assert_eq!(
                    found_with(size, at, &bytes).map(|f| f.1),
                    Some(at),
                    "{}",
                    s.name
                );
            }
        }
        // Moved: ext4 at 1 MiB is out of its place; xfs 1 MiB before the end.
        let (ext4, place) = placed("ext4@1048576").unwrap();
        assert_eq!(position_at(ext4, place, 4 * MIB), Some(MIB + 0x438));
        let (xfs, place) = placed("xfs@end-1048576").unwrap();
        assert_eq!(position_at(xfs, place, 4 * MIB), Some(3 * MIB));
        let (raid, place) = placed("linux_raid_1.0").unwrap();
        assert_eq!(place, Place::Own);
        assert_eq!(position_at(raid, place, 4 * MIB), Some(4 * MIB - 8192));
        assert_eq!(placed("nothing"), None);
        assert_eq!(placed("ext4@"), None);
        assert_eq!(placed("ext4@end-x"), None);
        // A place the region cannot hold.
        let (xfs, place) = placed("xfs@end-2").unwrap();
        assert_eq!(position_at(xfs, place, 4 * MIB), None);
        // Only the part of a write inside the bytes read is written.
        let mut before = vec![0u8; 16];
        write(xfs, 16, 0, &mut before);
        assert!(before.iter().all(|b| *b == 0));
    }
}
