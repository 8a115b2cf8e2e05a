//! Known on-disk signatures: the magic bytes a file system, an encrypted
//! or swap area, or a partition table leaves at a fixed offset from its
//! start. HostProcess mode reads a volume's first sectors (and a RAW
//! disk's first and last MiB) and formats or initialises only when none of
//! these is there; the simulated host writes the same magic where its
//! model says a volume or disk holds such data, so that both read one
//! table.
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
//! `XFSB`, LUKS's header, LVM2's label, Linux RAID's 1.x superblock,
//! btrfs's superblock at 64 KiB, swap's last bytes of its first page, the
//! ISO 9660 volume descriptor, and the GPT header and MBR boot signature).

/// One signature: `magic` at byte `offset` from the start of a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signature {
    /// What it shows (`ntfs`, `ext4`, `bitlocker`, ...).
    pub name: &'static str,
    /// Byte offset of the magic from the region's start.
    pub offset: usize,
    /// The magic bytes.
    pub magic: &'static [u8],
}

const fn sig(name: &'static str, offset: usize, magic: &'static [u8]) -> Signature {
    Signature {
        name,
        offset,
        magic,
    }
}

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
    sig("linux_raid", 0x1000, &[0xFC, 0x4E, 0x2B, 0xA9]),
    sig("btrfs", 0x1_0040, b"_BHRfS_M"),
    sig("swap", 0xFF6, b"SWAPSPACE2"),
    sig("swap", 0xFF6, b"SWAP-SPACE"),
    sig("iso9660", 0x8001, b"CD001"),
    sig("gpt", 0x200, b"EFI PART"),
    sig("gpt", 0x1000, b"EFI PART"),
    sig("mbr", 0x1FE, &[0x55, 0xAA]),
];

/// The signature of `name` (the first of that name).
pub fn named(name: &str) -> Option<&'static Signature> {
    SIGNATURES.iter().find(|s| s.name == name)
}

/// How many bytes from a region's start hold every signature: what a
/// reader must read to look for all of them. (The HostProcess backend
/// reads; the simulator only writes signatures.)
#[cfg_attr(not(feature = "host-process"), allow(dead_code))]
pub fn span() -> usize {
    SIGNATURES
        .iter()
        .map(|s| s.offset + s.magic.len())
        .max()
        .unwrap_or(0)
}

/// The first signature found in `bytes`, read from a region's start.
#[cfg_attr(not(feature = "host-process"), allow(dead_code))]
pub fn find(bytes: &[u8]) -> Option<&'static Signature> {
    SIGNATURES
        .iter()
        .find(|s| bytes.get(s.offset..s.offset + s.magic.len()) == Some(s.magic))
}

/// Writes `signature`'s magic into `bytes`, a region starting at `start`
/// bytes from where the signature's area starts (the simulated host's
/// sector contents); the part outside `bytes` is left out.
pub fn write(signature: &Signature, area_start: u64, read_start: u64, bytes: &mut [u8]) {
    let at = area_start + signature.offset as u64;
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

    /// A region of `len` zero bytes with `magic` at `offset`: each case is
    /// written from the format's own layout, not from the table.
    fn with(len: usize, offset: usize, magic: &[u8]) -> Vec<u8> {
        let mut bytes = vec![0u8; len];
        bytes[offset..offset + magic.len()].copy_from_slice(magic);
        bytes
    }

    #[test]
    fn each_format_is_found_at_its_offset() {
        let len = span();
        let cases: &[(&str, usize, &[u8])] = &[
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
            ("linux_raid", 4096, &0xA92B_4EFCu32.to_le_bytes()),
            ("btrfs", 65536 + 0x40, b"_BHRfS_M"),
            ("swap", 4096 - 10, b"SWAPSPACE2"),
            ("iso9660", 32768 + 1, b"CD001"),
            ("gpt", 512, b"EFI PART"),
            ("gpt", 4096, b"EFI PART"),
            ("mbr", 510, &[0x55, 0xAA]),
        ];
        for (name, offset, magic) in cases {
            let found = find(&with(len, *offset, magic));
            assert_eq!(found.map(|s| s.name), Some(*name), "{name} at {offset}");
        }
    }

    #[test]
    fn zeros_and_near_misses_hold_no_signature() {
        assert_eq!(find(&vec![0u8; span()]), None);
        // The magic one byte off its place is not the signature.
        assert_eq!(find(&with(span(), 4, b"NTFS    ")), None);
        assert_eq!(find(&with(span(), 1024 + 0x39, &[0x53, 0xEF])), None);
        // A read too short to reach a signature finds none there.
        assert_eq!(find(&with(2048, 1024 + 0x38, &[0x53, 0xEF])[..1000]), None);
    }

    #[test]
    fn a_written_signature_is_found_and_only_where_the_read_reaches() {
        for s in SIGNATURES {
            let mut bytes = vec![0u8; span()];
            write(s, 0, 0, &mut bytes);
            assert!(find(&bytes).is_some(), "{}", s.name);
        }
        // An area starting 1 MiB in, read from 1 MiB: found; read from 0
        // with 1 MiB of bytes: not reached.
        let ext4 = named("ext4").unwrap();
        let mut later = vec![0u8; span()];
        write(ext4, 1 << 20, 1 << 20, &mut later);
        assert_eq!(find(&later), Some(ext4));
        let mut before = vec![0u8; 1 << 20];
        write(ext4, 1 << 20, 0, &mut before);
        assert!(before.iter().all(|b| *b == 0));
    }
}
