//! Named node layouts: the disks of a node laid out as a cloud lays them
//! out, so that disk discovery meets what it meets on real nodes.
//!
//! Pick one with [`MockHostBuilder::layout`](crate::mock::MockHostBuilder::layout),
//! `csi-proxy-server --layout <name>` or `csi-sim-cloud --layout <name>`;
//! [`Layout::seed`] gives the [`NodeSeed`] to change further.
//!
//! | name | disks |
//! |---|---|
//! | `default` | the default node ([`super::seed`] module docs): the OS disk at `Adapter 0 … LUN 0`, data disks at `Adapter 3` LUN 1 and 2 |
//! | `azure` | 0: OS disk `Integrated : Adapter 0 : Port 0 : Target 0 : LUN 0` (GPT: EFI, MSR, `C:`); 1: resource disk `D:` at `Adapter 0 … LUN 1` (MBR, NTFS); 2, 3: data disks `Integrated : Adapter 3 : Port 0 : Target 0 : LUN 0` and `LUN 1` (blank) |
//! | `azure-nvme` | 0: OS disk on NVMe adapter 1, namespace 1; 1, 2: data disks on NVMe adapter 2, namespaces 1 and 2 (LUN 0 and 1); no LUN in any location (`Integrated : Bus 0 : Device 31 : Function 0 : Adapter 2`), the namespace in the device path (`…&0&000002#…`) |
//! | `gce` | 0: boot disk `PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0`, page 83 `Google  persistent-disk-0`; 1: data disk at `Target 2`, page 83 `Google  data-disk-1`; 2: NVMe Hyperdisk, page 83 `eui.10CC9636B6E3CE3B0000000000000000` (namespace identifier `0x10CC9636B6E3CE3B`) |
//! | `aws` | 0: root EBS volume on NVMe, serial `vol0aaaaaaaaaaaaaaaa_00000001.`; 1: data EBS volume `vol-0123456789abcdef0`, serial `vol0123456789abcdef0_00000001.` |
//! | `vsphere` | 0: OS disk `PCI Slot 160 : Adapter 0 : Port 0 : Target 0 : LUN 0`; 1: data disk at `PCI Slot 224 : Adapter 1 … LUN 0`, page 83 the disk UUID `6000c29a98d05e384a43f0ef189aaf5a`; BIOS serial `VMware-42 02 e9 7e 3d ad 2a 49-22 86 7f f9 89 c6 64 ef` |
//!
//! Every OS disk is a system disk holding a system `C:` volume (EFI, MSR
//! and `C:` on GPT). The ids follow what each cloud's driver matches
//! (see `docs/clouds.md`).

use std::fmt;
use std::str::FromStr;

use super::error::{HostError, HostResult};
use super::seed::{DiskSeed, NodeSeed, VolumeSeed};
use super::storage::DISK_INTERFACE_GUID;
use super::system::SystemSeed;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// A named node layout (see the [module](self) docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// The default node.
    #[default]
    Default,
    /// An Azure node (SCSI): OS disk and resource disk on adapter 0.
    Azure,
    /// An Azure node of an NVMe VM size.
    AzureNvme,
    /// A Google Compute Engine node with a persistent disk and an NVMe Hyperdisk.
    Gce,
    /// An AWS Nitro node with NVMe EBS volumes.
    Aws,
    /// A vSphere VM.
    Vsphere,
}

impl Layout {
    /// Every layout, in the order of the module docs.
    pub const ALL: [Layout; 6] = [
        Layout::Default,
        Layout::Azure,
        Layout::AzureNvme,
        Layout::Gce,
        Layout::Aws,
        Layout::Vsphere,
    ];

    /// The layout's name (`azure`, `azure-nvme`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Layout::Default => "default",
            Layout::Azure => "azure",
            Layout::AzureNvme => "azure-nvme",
            Layout::Gce => "gce",
            Layout::Aws => "aws",
            Layout::Vsphere => "vsphere",
        }
    }

    /// The seed that builds the node; `None` for the default node.
    pub fn seed(self) -> Option<NodeSeed> {
        let mut seed = NodeSeed::default();
        match self {
            Layout::Default => return None,
            Layout::Azure => {
                os_disk(
                    &mut seed,
                    "Integrated : Adapter 0 : Port 0 : Target 0 : LUN 0",
                );
                seed.disks.push(DiskSeed {
                    number: Some(1),
                    location: Some("Integrated : Adapter 0 : Port 0 : Target 0 : LUN 1".into()),
                    size: 16 * GIB,
                    partition_style: Some("mbr".into()),
                    ..DiskSeed::default()
                });
                seed.volumes.push(VolumeSeed {
                    disk: 1,
                    fs: Some("ntfs".into()),
                    drive_letter: Some("D".into()),
                    ..VolumeSeed::default()
                });
                for (number, lun, size) in [(2, 0, 32 * GIB), (3, 1, 16 * GIB)] {
                    seed.disks.push(DiskSeed {
                        number: Some(number),
                        location: Some(format!(
                            "Integrated : Adapter 3 : Port 0 : Target 0 : LUN {lun}"
                        )),
                        size,
                        ..DiskSeed::default()
                    });
                }
            }
            Layout::AzureNvme => {
                os_disk(
                    &mut seed,
                    "Integrated : Bus 0 : Device 30 : Function 0 : Adapter 1",
                );
                seed.disks[0].device_path = Some(azure_nvme_path("4a1b2c3d", 1));
                for (number, namespace, size) in [(1, 1, 32 * GIB), (2, 2, 16 * GIB)] {
                    seed.disks.push(DiskSeed {
                        number: Some(number),
                        location: Some(
                            "Integrated : Bus 0 : Device 31 : Function 0 : Adapter 2".into(),
                        ),
                        device_path: Some(azure_nvme_path("5e6f7a8b", namespace)),
                        size,
                        ..DiskSeed::default()
                    });
                }
            }
            Layout::Gce => {
                os_disk(
                    &mut seed,
                    "PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0",
                );
                seed.disks[0].page83 = Some("ascii:Google  persistent-disk-0".into());
                seed.disks.push(DiskSeed {
                    number: Some(1),
                    location: Some("PCI Slot 3 : Adapter 0 : Port 0 : Target 2 : LUN 0".into()),
                    page83: Some("ascii:Google  data-disk-1".into()),
                    size: 32 * GIB,
                    ..DiskSeed::default()
                });
                seed.disks.push(DiskSeed {
                    number: Some(2),
                    location: Some("PCI Slot 4 : Bus 0 : Device 0 : Function 0 : Adapter 1".into()),
                    page83: Some("ascii:eui.10CC9636B6E3CE3B0000000000000000".into()),
                    serial: Some("10CC_9636_B6E3_CE3B_0000_0000_0000_0000.".into()),
                    device_path: Some(nvme_path("google", "7c8d9e0f", 1)),
                    size: 64 * GIB,
                    ..DiskSeed::default()
                });
            }
            Layout::Aws => {
                os_disk(
                    &mut seed,
                    "Integrated : Bus 0 : Device 4 : Function 0 : Adapter 0",
                );
                seed.disks[0].serial = Some("vol0aaaaaaaaaaaaaaaa_00000001.".into());
                seed.disks[0].page83 = Some(String::new());
                seed.disks[0].device_path = Some(nvme_path("amazon", "1d2e3f40", 1));
                seed.disks.push(DiskSeed {
                    number: Some(1),
                    location: Some("Integrated : Bus 0 : Device 5 : Function 0 : Adapter 1".into()),
                    serial: Some("vol0123456789abcdef0_00000001.".into()),
                    page83: Some(String::new()),
                    device_path: Some(nvme_path("amazon", "5a6b7c8d", 1)),
                    size: 32 * GIB,
                    ..DiskSeed::default()
                });
            }
            Layout::Vsphere => {
                os_disk(
                    &mut seed,
                    "PCI Slot 160 : Adapter 0 : Port 0 : Target 0 : LUN 0",
                );
                seed.disks[0].page83 = Some("hex:6000c2912345678990abcdef01234567".into());
                seed.disks.push(DiskSeed {
                    number: Some(1),
                    location: Some("PCI Slot 224 : Adapter 1 : Port 0 : Target 0 : LUN 0".into()),
                    page83: Some("hex:6000c29a98d05e384a43f0ef189aaf5a".into()),
                    size: 32 * GIB,
                    ..DiskSeed::default()
                });
                let mut system = SystemSeed::default_node();
                system.bios_serial =
                    Some("VMware-42 02 e9 7e 3d ad 2a 49-22 86 7f f9 89 c6 64 ef".into());
                seed.system = Some(system);
            }
        }
        Some(seed)
    }
}

/// Disk 0: a 128 GiB system disk at `location` with EFI, MSR and a system `C:`.
fn os_disk(seed: &mut NodeSeed, location: &str) {
    seed.disks.push(DiskSeed {
        number: Some(0),
        location: Some(location.into()),
        size: 128 * GIB,
        partition_style: Some("gpt".into()),
        auto_msr: Some(false),
        system: Some(true),
        ..DiskSeed::default()
    });
    seed.volumes.push(VolumeSeed {
        disk: 0,
        kind: Some("efi".into()),
        size: Some(100 * MIB),
        fs: Some("fat32".into()),
        used: Some(30 * MIB),
        system: Some(true),
        ..VolumeSeed::default()
    });
    seed.volumes.push(VolumeSeed {
        disk: 0,
        kind: Some("msr".into()),
        size: Some(16 * MIB),
        ..VolumeSeed::default()
    });
    seed.volumes.push(VolumeSeed {
        disk: 0,
        fs: Some("ntfs".into()),
        drive_letter: Some("C".into()),
        used: Some(20 * GIB),
        system: Some(true),
        ..VolumeSeed::default()
    });
}

/// The device path of an Azure NVMe namespace: `ven_nvme`, the namespace
/// id after `&0&` (the form azuredisk-csi-driver pkg/os/disk/disk.go reads).
fn azure_nvme_path(instance: &str, namespace: u32) -> String {
    format!(
        r"\\?\scsi#disk&ven_nvme&prod_msft_nvme_accele#6&{instance}&0&{namespace:06}#{DISK_INTERFACE_GUID}"
    )
}

/// The device path of another vendor's NVMe namespace.
fn nvme_path(vendor: &str, instance: &str, namespace: u32) -> String {
    format!(
        r"\\?\scsi#disk&ven_nvme&prod_{vendor}_nvme#6&{instance}&0&{namespace:06}#{DISK_INTERFACE_GUID}"
    )
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Layout {
    type Err = HostError;

    fn from_str(s: &str) -> HostResult<Layout> {
        Layout::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                let names: Vec<&str> = Layout::ALL.iter().map(|l| l.name()).collect();
                HostError::invalid_argument(format!(
                    "unknown layout {s:?} (known: {})",
                    names.join(", ")
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Host, HostConfig};

    #[test]
    fn every_layout_builds_with_a_system_os_disk() {
        for layout in Layout::ALL {
            let dir = tempfile::tempdir().unwrap();
            let mut config = HostConfig::new(dir.path());
            config.seed = layout.seed();
            let host = Host::new(config).unwrap_or_else(|e| panic!("{layout}: {e}"));
            let system: Vec<u32> = host.run(|s| {
                s.storage
                    .disks()
                    .filter(|d| d.is_system)
                    .map(|d| d.number)
                    .collect()
            });
            assert_eq!(system, vec![0], "{layout}");
            assert_eq!(layout.name().parse::<Layout>().unwrap(), layout);
        }
        assert!("nope".parse::<Layout>().is_err());
    }
}
