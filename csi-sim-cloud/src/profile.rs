//! The clouds the simulated cloud plays ([`Profile`]): how each names its
//! volumes, where it attaches a disk on the node and with which ids, and
//! what its `ControllerPublishVolume` returns. Each rule is the upstream
//! driver's, cited where it is written.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use csi_proxy_client::host::storage::Page83;
use csi_proxy_client::host::{HotAttach, Layout};

/// The publish context key of azuredisk-csi-driver's LUN
/// (pkg/azureconstants/azure_constants.go `LUN`, set in
/// pkg/azuredisk/controllerserver.go, read in pkg/azuredisk/nodeserver.go).
pub const AZURE_LUN: &str = "LUN";
/// The publish context key of aws-ebs-csi-driver's device path
/// (pkg/driver/constants.go `DevicePathKey`, set in pkg/driver/controller.go;
/// pkg/driver/node.go refuses a stage without it).
pub const AWS_DEVICE_PATH: &str = "devicePath";
/// The publish context key of vSphere's disk UUID
/// (pkg/csi/service/common/constants.go `AttributeFirstClassDiskUUID`, set
/// in pkg/csi/service/vanilla/controller.go, read in
/// pkg/csi/service/osutils/os_utils.go).
pub const VSPHERE_DISK_UUID: &str = "diskUUID";
/// The publish context key of vSphere's disk type (`AttributeDiskType`).
pub const VSPHERE_DISK_TYPE: &str = "type";
/// The value vSphere gives [`VSPHERE_DISK_TYPE`] for a block volume
/// (`DiskTypeBlockVolume`).
pub const VSPHERE_BLOCK_VOLUME: &str = "vSphere CNS Block Volume";
/// The publish context key of the generic profile's LUN.
pub const GENERIC_LUN: &str = "lun";

/// The SMB profile's share, the default simulated node's.
pub const SMB_SERVER: &str = "fileserver";
/// The SMB profile's share name.
pub const SMB_SHARE: &str = "share";

/// Which cloud the simulated cloud plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// Disks at the lowest free LUN of the default node's data adapter,
    /// `publish_context {"lun": N}`; ids `sim-disk-N`.
    #[default]
    Generic,
    /// Azure: the `azure` layout; a disk at the lowest free LUN of the data
    /// adapter (`Integrated : Adapter 3 : … : LUN N`), Hyper-V page 83 ids;
    /// `publish_context {"LUN": N}`; ids are Azure disk URIs.
    Azure,
    /// GCE: the `gce` layout; a persistent disk on the SCSI controller
    /// (`PCI Slot 3 : Adapter 0 : Port 0 : Target T : LUN 0`) with page 83
    /// `Google  <device name>`, the device name being the disk name; ids
    /// `projects/P/zones/Z/disks/NAME`; an empty publish context
    /// (gcp-compute-persistent-disk-csi-driver pkg/gce-pd-csi-driver/controller.go
    /// sets only data-cache and disk-size keys, off by default; the node
    /// finds the disk from the volume id).
    Gcp,
    /// AWS: the `aws` layout; an EBS volume on its own NVMe controller with
    /// serial `vol<id without dash>_00000001.`; ids `vol-` + 17 hex digits;
    /// `publish_context {"devicePath": "/dev/xvdXX"}`.
    Aws,
    /// vSphere: the `vsphere` layout; a disk on the second SCSI controller
    /// (`PCI Slot 224 : Adapter 1 : Port 0 : Target T : LUN 0`) whose page
    /// 83 id is the disk UUID; `publish_context {"diskUUID": UUID, "type":
    /// "vSphere CNS Block Volume"}`, the UUID in lowercase without dashes
    /// (vsphere-csi-driver pkg/csi/service/common/util.go `FormatDiskUUID`).
    Vsphere,
    /// SMB: no disks; a volume is a subdirectory of `\\fileserver\share`
    /// made at CreateVolume, as csi-driver-smb's controller makes it;
    /// no ControllerPublishVolume.
    Smb,
}

impl Profile {
    /// Every profile.
    pub const ALL: [Profile; 6] = [
        Profile::Generic,
        Profile::Azure,
        Profile::Gcp,
        Profile::Aws,
        Profile::Vsphere,
        Profile::Smb,
    ];

    /// The profile's name, as `--cloud` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Generic => "generic",
            Profile::Azure => "azure",
            Profile::Gcp => "gcp",
            Profile::Aws => "aws",
            Profile::Vsphere => "vsphere",
            Profile::Smb => "smb",
        }
    }

    /// The node layout the cloud's nodes have.
    pub fn layout(self) -> Layout {
        match self {
            Profile::Generic | Profile::Smb => Layout::Default,
            Profile::Azure => Layout::Azure,
            Profile::Gcp => Layout::Gce,
            Profile::Aws => Layout::Aws,
            Profile::Vsphere => Layout::Vsphere,
        }
    }

    /// The driver name Identity reports: the upstream driver's.
    pub fn driver_name(self) -> &'static str {
        match self {
            Profile::Generic => crate::DRIVER_NAME,
            Profile::Azure => "disk.csi.azure.com",
            Profile::Gcp => "pd.csi.storage.gke.io",
            Profile::Aws => "ebs.csi.aws.com",
            Profile::Vsphere => "csi.vsphere.vmware.com",
            Profile::Smb => "smb.csi.k8s.io",
        }
    }

    /// Whether volumes are disks the controller attaches (all but SMB).
    pub fn attaches(self) -> bool {
        self != Profile::Smb
    }

    /// The id of the cloud's `n`th volume (from 1).
    pub fn volume_id(self, n: u64) -> String {
        match self {
            Profile::Generic => format!("sim-disk-{n}"),
            Profile::Azure => format!(
                "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/sim/providers/Microsoft.Compute/disks/sim-disk-{n}"
            ),
            Profile::Gcp => format!(
                "projects/sim-project/zones/sim-zone-a/disks/{}",
                gce_name(n)
            ),
            Profile::Aws => format!("vol-{n:017x}"),
            Profile::Vsphere => format!("{n:08x}-0000-4000-8000-{n:012x}"),
            Profile::Smb => format!("{SMB_SERVER}/{SMB_SHARE}#{}#", smb_dir(n)),
        }
    }

    /// The slots a disk may take, in order of preference, with the
    /// location each gives (`None` for the generic profile, which leaves
    /// the LUN to the node).
    fn location(self, slot: u32) -> Option<String> {
        match self {
            Profile::Generic | Profile::Smb => None,
            Profile::Azure => Some(format!(
                "Integrated : Adapter 3 : Port 0 : Target 0 : LUN {slot}"
            )),
            Profile::Gcp => Some(format!(
                "PCI Slot 3 : Adapter 0 : Port 0 : Target {} : LUN 0",
                slot + 1
            )),
            Profile::Aws => Some(format!(
                "Integrated : Bus 0 : Device {} : Function 0 : Adapter {slot}",
                slot + 4
            )),
            Profile::Vsphere => Some(format!(
                "PCI Slot 224 : Adapter 1 : Port 0 : Target {slot} : LUN 0"
            )),
        }
    }

    /// How the `n`th volume attaches: its location is the first slot whose
    /// location no disk of the node has (`used`), and its ids the cloud's.
    /// `None` when every slot is taken.
    pub fn attach(self, n: u64, size: u64, used: &[String]) -> Option<(HotAttach, u32)> {
        let mut attach = HotAttach::new(size);
        let slot = match self {
            Profile::Generic | Profile::Smb => 0,
            _ => (0..crate::SLOTS).find(|s| {
                let l = self.location(*s).unwrap_or_default();
                !used.iter().any(|u| u == &l)
            })?,
        };
        attach.location = self.location(slot);
        match self {
            Profile::Generic | Profile::Azure | Profile::Smb => {}
            Profile::Gcp => {
                attach.page83 = Some(Page83::Ascii(
                    format!("Google  {}", gce_name(n)).into_bytes(),
                ));
            }
            Profile::Aws => {
                attach.serial_number = Some(format!("vol{n:017x}_00000001."));
                attach.page83 = Some(Page83::None);
                attach.device_path = Some(format!(
                    r"\\?\scsi#disk&ven_nvme&prod_amazon_elastic_b#6&{n:08x}&0&000001#{}",
                    csi_proxy_client::host::storage::DISK_INTERFACE_GUID
                ));
            }
            Profile::Vsphere => {
                let uuid = vsphere_uuid(n);
                let bytes = (0..16)
                    .map(|i| u8::from_str_radix(&uuid[2 * i..2 * i + 2], 16).unwrap_or(0))
                    .collect();
                attach.page83 = Some(Page83::Binary(bytes));
            }
        }
        Some((attach, slot))
    }

    /// What ControllerPublishVolume returns for the `n`th volume attached
    /// at `slot` (`lun`: the LUN the node gave, generic profile).
    pub fn publish_context(self, n: u64, slot: u32, lun: Option<u32>) -> HashMap<String, String> {
        let pairs: Vec<(&str, String)> = match self {
            Profile::Generic => vec![(GENERIC_LUN, lun.unwrap_or_default().to_string())],
            Profile::Azure => vec![(AZURE_LUN, slot.to_string())],
            Profile::Gcp | Profile::Smb => vec![],
            Profile::Aws => vec![(AWS_DEVICE_PATH, aws_device_name(slot))],
            Profile::Vsphere => vec![
                (VSPHERE_DISK_UUID, vsphere_uuid(n)),
                (VSPHERE_DISK_TYPE, VSPHERE_BLOCK_VOLUME.to_string()),
            ],
        };
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}

/// The GCE disk name (and device name) of the `n`th volume.
pub fn gce_name(n: u64) -> String {
    format!("sim-disk-{n}")
}

/// The subdirectory of the share that holds the SMB profile's `n`th volume.
pub fn smb_dir(n: u64) -> String {
    format!("sim-vol-{n}")
}

/// The vSphere disk UUID of the `n`th volume: 32 lowercase hex digits,
/// VMware's `6000c29` prefix.
pub fn vsphere_uuid(n: u64) -> String {
    format!("6000c29{n:025x}")
}

/// The device name EC2 gives the disk at `slot`: `/dev/xvdaa`, `/dev/xvdab`...
/// (the two-letter series of aws-ebs-csi-driver
/// pkg/cloud/devicemanager/device_names.go).
pub fn aws_device_name(slot: u32) -> String {
    let letter = |i: u32| char::from(b'a' + (i % 26) as u8);
    format!("/dev/xvd{}{}", letter(slot / 26), letter(slot))
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Profile {
    type Err = String;

    fn from_str(s: &str) -> Result<Profile, String> {
        Profile::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
                format!("unknown cloud {s:?} (known: {})", names.join(", "))
            })
    }
}
