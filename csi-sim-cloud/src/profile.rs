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
/// The account of the default simulated node's share: csi-sanity's stage
/// secrets give it (`username` for smb, the storage account name for
/// azurefile).
pub const SMB_USER: &str = "smbuser";
/// The password of [`SMB_USER`] (the storage account key for azurefile).
pub const SMB_PASSWORD: &str = "Sm8-Passw0rd!";

/// azurefile-csi-driver's volume context key of the SMB server
/// (pkg/azurefile/azurefile.go `serverNameField`; the node builds the
/// source `\\server\share[\folder]` from it in pkg/azurefile/nodeserver.go
/// NodeStageVolume, `<account>.file.<suffix>` without it). The node reads
/// the keys of the volume context in any case.
pub const AZUREFILE_SERVER: &str = "server";
/// azurefile-csi-driver's volume context key of the share name
/// (`shareNameField`, read in `GetAccountInfo`; the volume id's third
/// field otherwise).
pub const AZUREFILE_SHARE_NAME: &str = "shareName";
/// azurefile-csi-driver's volume context key of the directory in the share
/// the volume is (`folderNameField`).
pub const AZUREFILE_FOLDER_NAME: &str = "folderName";
/// The azurefile profile's resource group, the first field of its ids.
pub const AZUREFILE_RESOURCE_GROUP: &str = "sim-rg";

/// The publish context key under which the gcp-nvme profile hands over a
/// Hyperdisk's NVMe namespace identifier (decimal). On GCE the node reads
/// it from the metadata server (`instance/disks/?recursive=true`, field
/// `nvmeNamespaceIdentifier`, by device name:
/// gcp-compute-persistent-disk-csi-driver
/// pkg/mount-manager/safe-mounter-v1_windows.go `GetDiskNumber`); the
/// simulated cloud has no metadata server, so it puts the same value here,
/// and a plugin under test reads it in place of the metadata query.
pub const GCE_NVME_NAMESPACE_ID: &str = "nvmeNamespaceIdentifier";

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
    /// Azure Files (azurefile-csi-driver, `file.csi.azure.com`): no disks;
    /// a volume is a subdirectory of the same share, with azurefile's ids
    /// `rg#account#share#diskName#uuid#secretNamespace` (an empty disk
    /// name: not a VHD; pkg/azurefile/azurefile.go `volumeIDTemplate`,
    /// made in pkg/azurefile/controllerserver.go CreateVolume) and the
    /// volume context keys its node reads: `server`, `shareName`,
    /// `folderName`. The account is [`SMB_USER`], its key [`SMB_PASSWORD`].
    Azurefile,
    /// Azure on an NVMe VM size: the `azure-nvme` layout; a data disk is an
    /// NVMe namespace of the data controller whose id is LUN + 1
    /// (azuredisk-csi-driver pkg/os/disk/disk.go `getNVMeLunFromPath`), its
    /// location without a LUN; `publish_context {"LUN": N}` as for Azure.
    /// The namespace shows only in the device path, which the CSI Proxy
    /// does not report: a node plugin finds these disks in HostProcess mode
    /// only, as azuredisk-csi-driver does.
    AzureNvme,
    /// GCE Hyperdisk on NVMe: the `gce` layout; a disk is an NVMe namespace
    /// whose page 83 id is `eui.` + its 64-bit namespace identifier + 16
    /// zeros (gcp-compute-persistent-disk-csi-driver#2114); the publish
    /// context carries that identifier under [`GCE_NVME_NAMESPACE_ID`], in
    /// place of GCE's metadata server.
    GcpNvme,
}

impl Profile {
    /// Every profile.
    pub const ALL: [Profile; 9] = [
        Profile::Generic,
        Profile::Azure,
        Profile::Gcp,
        Profile::Aws,
        Profile::Vsphere,
        Profile::Smb,
        Profile::Azurefile,
        Profile::AzureNvme,
        Profile::GcpNvme,
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
            Profile::Azurefile => "azurefile",
            Profile::AzureNvme => "azure-nvme",
            Profile::GcpNvme => "gcp-nvme",
        }
    }

    /// The node layout the cloud's nodes have.
    pub fn layout(self) -> Layout {
        match self {
            Profile::Generic | Profile::Smb | Profile::Azurefile => Layout::Default,
            Profile::Azure => Layout::Azure,
            Profile::AzureNvme => Layout::AzureNvme,
            Profile::Gcp | Profile::GcpNvme => Layout::Gce,
            Profile::Aws => Layout::Aws,
            Profile::Vsphere => Layout::Vsphere,
        }
    }

    /// The driver name Identity reports: the upstream driver's.
    pub fn driver_name(self) -> &'static str {
        match self {
            Profile::Generic => crate::DRIVER_NAME,
            Profile::Azure | Profile::AzureNvme => "disk.csi.azure.com",
            Profile::Gcp | Profile::GcpNvme => "pd.csi.storage.gke.io",
            Profile::Aws => "ebs.csi.aws.com",
            Profile::Vsphere => "csi.vsphere.vmware.com",
            Profile::Smb => "smb.csi.k8s.io",
            Profile::Azurefile => "file.csi.azure.com",
        }
    }

    /// Whether volumes are disks the controller attaches (all but the
    /// share profiles).
    pub fn attaches(self) -> bool {
        !self.shares()
    }

    /// Whether volumes are directories of the node's SMB share (smb,
    /// azurefile).
    pub fn shares(self) -> bool {
        matches!(self, Profile::Smb | Profile::Azurefile)
    }

    /// Whether disks attach as NVMe namespaces of one controller, told
    /// apart by the device path (azure-nvme, gcp-nvme).
    fn nvme(self) -> bool {
        matches!(self, Profile::AzureNvme | Profile::GcpNvme)
    }

    /// The id of the cloud's `n`th volume (from 1).
    pub fn volume_id(self, n: u64) -> String {
        match self {
            Profile::Generic => format!("sim-disk-{n}"),
            Profile::Azure | Profile::AzureNvme => format!(
                "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/sim/providers/Microsoft.Compute/disks/sim-disk-{n}"
            ),
            Profile::Gcp | Profile::GcpNvme => format!(
                "projects/sim-project/zones/sim-zone-a/disks/{}",
                gce_name(n)
            ),
            Profile::Aws => format!("vol-{n:017x}"),
            Profile::Vsphere => format!("{n:08x}-0000-4000-8000-{n:012x}"),
            Profile::Smb => format!("{SMB_SERVER}/{SMB_SHARE}#{}#", smb_dir(n)),
            // The uuid field is the volume's name in azurefile when the
            // share is given (its CreateVolume), here the directory.
            Profile::Azurefile => format!(
                "{AZUREFILE_RESOURCE_GROUP}#{SMB_USER}#{SMB_SHARE}##{}#default",
                smb_dir(n)
            ),
        }
    }

    /// The slots a disk may take, in order of preference, with the
    /// location each gives (`None` for the generic profile, which leaves
    /// the LUN to the node).
    fn location(self, slot: u32) -> Option<String> {
        match self {
            Profile::Generic | Profile::Smb | Profile::Azurefile => None,
            // One NVMe controller for every data disk, as the layouts have.
            Profile::AzureNvme => {
                Some("Integrated : Bus 0 : Device 31 : Function 0 : Adapter 2".into())
            }
            Profile::GcpNvme => {
                Some("PCI Slot 4 : Bus 0 : Device 0 : Function 0 : Adapter 1".into())
            }
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

    /// The NVMe device path of the disk at `slot` (NVMe profiles): the
    /// namespace id after `&0&`, LUN + 1 on Azure (azuredisk-csi-driver
    /// pkg/os/disk/disk.go), after the layout's own Hyperdisk (namespace 1)
    /// on GCE.
    fn device_path(self, slot: u32) -> Option<String> {
        let (product, instance, namespace) = match self {
            Profile::AzureNvme => ("msft_nvme_accele", "5e6f7a8b", slot + 1),
            Profile::GcpNvme => ("google_nvme", "7c8d9e0f", slot + 2),
            _ => return None,
        };
        Some(format!(
            r"\\?\scsi#disk&ven_nvme&prod_{product}#6&{instance}&0&{namespace:06}#{}",
            csi_proxy_client::host::storage::DISK_INTERFACE_GUID
        ))
    }

    /// How the `n`th volume attaches: its slot is the first whose location
    /// (NVMe profiles: device path) no disk of the node has (`used`: every
    /// disk's location and device path), and its ids the cloud's. `None`
    /// when every slot is taken.
    pub fn attach(self, n: u64, size: u64, used: &[String]) -> Option<(HotAttach, u32)> {
        let mut attach = HotAttach::new(size);
        let taken = |key: Option<String>| used.iter().any(|u| Some(u) == key.as_ref());
        let slot = match self {
            Profile::Generic | Profile::Smb | Profile::Azurefile => 0,
            _ if self.nvme() => (0..crate::SLOTS).find(|s| !taken(self.device_path(*s)))?,
            _ => (0..crate::SLOTS).find(|s| !taken(self.location(*s)))?,
        };
        attach.location = self.location(slot);
        attach.device_path = self.device_path(slot);
        match self {
            Profile::Generic | Profile::Azure | Profile::Smb | Profile::Azurefile => {}
            Profile::AzureNvme => {}
            // Both forms the layout's Hyperdisk shows: the EUI-64 in page 83
            // and the serial number in groups of four hex digits.
            Profile::GcpNvme => {
                let hex = format!("{:016X}{:016X}", gce_nvme_namespace_id(n), 0);
                attach.page83 = Some(Page83::Ascii(format!("eui.{hex}").into_bytes()));
                let groups: Vec<&str> = (0..8).map(|i| &hex[4 * i..4 * i + 4]).collect();
                attach.serial_number = Some(format!("{}.", groups.join("_")));
            }
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
            Profile::Azure | Profile::AzureNvme => vec![(AZURE_LUN, slot.to_string())],
            Profile::Gcp | Profile::Smb | Profile::Azurefile => vec![],
            Profile::GcpNvme => vec![(GCE_NVME_NAMESPACE_ID, gce_nvme_namespace_id(n).to_string())],
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

/// The NVMe namespace identifier of the gcp-nvme profile's `n`th volume
/// (the first 16 hex digits of its `eui.` page 83 id).
pub fn gce_nvme_namespace_id(n: u64) -> u64 {
    0x6E56_0000_0000_0000 | n
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
