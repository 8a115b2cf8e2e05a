//! The upstream Windows drivers' node sides, ported: how each names its
//! volumes (volume id, volume context and publish context keys, the disk
//! selector) and its policies (file system types, access modes, mount
//! flags, capabilities, grow after stage, offline at unstage). One
//! [`Flavor`] per driver, chosen with `--driver`; docs/ports.md compares
//! each with its upstream driver call by call.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use csi_node_server::csi::v1::node_service_capability::rpc;
use csi_node_server::csi::v1::volume_capability::access_mode::Mode;
use csi_node_server::driver::CAPABILITIES;
use csi_node_server::{
    LockScope, VolumeSource, default_access_mode, default_fs_type, default_smb_credentials,
};
use csi_proxy_client::node::{DiskSelector, SmbCredentials};
use tonic::Status;

/// Which driver the plugin plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flavor {
    /// The example's own rules: `publish_context["lun"]` names a disk,
    /// `volume_context["source"]` an SMB share.
    #[default]
    Example,
    /// azuredisk-csi-driver (`disk.csi.azure.com`).
    Azuredisk,
    /// gcp-compute-persistent-disk-csi-driver (`pd.csi.storage.gke.io`).
    GcpPd,
    /// aws-ebs-csi-driver (`ebs.csi.aws.com`).
    AwsEbs,
    /// vsphere-csi-driver (`csi.vsphere.vmware.com`).
    Vsphere,
    /// csi-driver-smb (`smb.csi.k8s.io`).
    Smb,
    /// azurefile-csi-driver (`file.csi.azure.com`), its SMB shares.
    Azurefile,
}

impl Flavor {
    /// Every flavor.
    pub const ALL: [Flavor; 7] = [
        Flavor::Example,
        Flavor::Azuredisk,
        Flavor::GcpPd,
        Flavor::AwsEbs,
        Flavor::Vsphere,
        Flavor::Smb,
        Flavor::Azurefile,
    ];

    /// The name `--driver` takes.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Example => "example",
            Flavor::Azuredisk => "azuredisk",
            Flavor::GcpPd => "gcp-pd",
            Flavor::AwsEbs => "aws-ebs",
            Flavor::Vsphere => "vsphere",
            Flavor::Smb => "smb",
            Flavor::Azurefile => "azurefile",
        }
    }

    /// The name the upstream driver registers under (the example's own
    /// for [`Flavor::Example`]).
    pub fn driver_name(self) -> &'static str {
        match self {
            Flavor::Example => crate::DEFAULT_DRIVER_NAME,
            Flavor::Azuredisk => "disk.csi.azure.com",
            Flavor::GcpPd => "pd.csi.storage.gke.io",
            Flavor::AwsEbs => "ebs.csi.aws.com",
            Flavor::Vsphere => "csi.vsphere.vmware.com",
            Flavor::Smb => "smb.csi.k8s.io",
            Flavor::Azurefile => "file.csi.azure.com",
        }
    }

    /// The volume a stage or publish names, as the upstream driver reads
    /// it, with a share's account from `secrets`.
    pub fn resolve(
        self,
        volume_id: &str,
        volume_context: &HashMap<String, String>,
        publish_context: &HashMap<String, String>,
        secrets: &HashMap<String, String>,
    ) -> Result<VolumeSource, Status> {
        let share = |share| {
            Ok(VolumeSource::Smb {
                share,
                credentials: self.smb_credentials(secrets)?,
            })
        };
        match self {
            Flavor::Example => match example(volume_context, publish_context)? {
                Named::Share(source) => share(source),
                Named::Disk(disk) => Ok(VolumeSource::Disk(disk)),
            },
            Flavor::Azuredisk => azure_lun(publish_context),
            Flavor::GcpPd => gce_disk(volume_id, publish_context),
            Flavor::AwsEbs => ebs(volume_id, publish_context),
            Flavor::Vsphere => vsphere(publish_context),
            Flavor::Smb => share(smb_source(volume_context)?),
            Flavor::Azurefile => share(azurefile_source(volume_id, volume_context)?),
        }
    }

    /// The file system types served. azuredisk: any, formatted NTFS (its
    /// Windows `FormatAndMount` drops the type). GCE: `""` and `ntfs` only
    /// (pkg/mount-manager/safe-mounter-v1_windows.go refuses others).
    /// vSphere: `""`, `ext4`, `ntfs` (pkg/csi/service/osutils/windows_os_utils.go
    /// `GetVolumeCapabilityFsType`; others FAILED_PRECONDITION). aws-ebs
    /// (`ext3`, `ext4`, `xfs`, `ntfs`, pkg/driver/node.go), SMB and the
    /// example: the library's default, which is the same.
    pub fn fs_type(self, volume: &VolumeSource, fs_type: &str) -> Result<(), Status> {
        let lower = fs_type.to_ascii_lowercase();
        match self {
            Flavor::Azuredisk => Ok(()),
            Flavor::GcpPd if matches!(lower.as_str(), "" | "ntfs") => Ok(()),
            Flavor::GcpPd => Err(Status::invalid_argument(format!(
                "file system type {fs_type:?}: GCE disks on Windows are NTFS (\"\" or ntfs)"
            ))),
            Flavor::Vsphere if matches!(lower.as_str(), "" | "ext4" | "ntfs") => Ok(()),
            Flavor::Vsphere => Err(Status::failed_precondition(format!(
                "file system type {fs_type:?}: vSphere disks on Windows are NTFS (\"\", ext4 or ntfs)"
            ))),
            _ => default_fs_type(volume, fs_type),
        }
    }

    /// The access modes served for a mounted volume. azuredisk and vSphere:
    /// the single-node modes (azuredisk's multi-node modes are for block
    /// volumes with `maxShares`; vSphere's are file volumes, not served on
    /// Windows). aws-ebs: SINGLE_NODE_WRITER (pkg/driver/node.go
    /// `isValidVolumeCapabilities`; the multi-node writer mode is for block
    /// volumes). GCE, SMB and the example: the library's default (GCE serves
    /// MULTI_NODE_READER_ONLY; a share serves every mode).
    pub fn access_mode(self, volume: &VolumeSource, mode: Mode) -> Result<(), Status> {
        let single_node = matches!(
            mode,
            Mode::SingleNodeWriter
                | Mode::SingleNodeReaderOnly
                | Mode::SingleNodeSingleWriter
                | Mode::SingleNodeMultiWriter
        );
        let refused = || {
            Status::invalid_argument(format!(
                "access mode {} is not served by {} on Windows",
                mode.as_str_name(),
                self.driver_name()
            ))
        };
        match self {
            Flavor::Azuredisk | Flavor::Vsphere if mode != Mode::Unknown && !single_node => {
                Err(refused())
            }
            Flavor::AwsEbs if !matches!(mode, Mode::SingleNodeWriter | Mode::Unknown) => {
                Err(refused())
            }
            _ => default_access_mode(volume, mode),
        }
    }

    /// The mount flags served. GCE parses `read_ahead_kb=N` (a bad number is
    /// INVALID_ARGUMENT; the value itself is a no-op on Windows,
    /// pkg/gce-pd-csi-driver/node.go `extractReadAheadKBMountFlag`); the
    /// others ignore every flag on Windows.
    pub fn mount_flags(self, flags: &[String]) -> Result<(), Status> {
        if self != Flavor::GcpPd {
            return Ok(());
        }
        for flag in flags {
            if let Some(value) = flag.strip_prefix("read_ahead_kb=")
                && value.parse::<u64>().is_err()
            {
                return Err(Status::invalid_argument(format!(
                    "mount flag {flag:?}: read_ahead_kb takes a number of KiB, not negative"
                )));
            }
        }
        Ok(())
    }

    /// The Node capabilities reported: the upstream driver's, plus
    /// VOLUME_CONDITION where the plugin reports conditions (every
    /// flavor; the upstream drivers report none).
    pub fn node_capabilities(self) -> Vec<rpc::Type> {
        use rpc::Type as T;
        match self {
            Flavor::Example | Flavor::GcpPd | Flavor::Vsphere | Flavor::AwsEbs => {
                CAPABILITIES.to_vec()
            }
            Flavor::Azuredisk => {
                let mut caps = CAPABILITIES.to_vec();
                caps.push(T::SingleNodeMultiWriter);
                caps
            }
            // csi-driver-smb pkg/smb/smb.go: no EXPAND_VOLUME, and
            // GET_VOLUME_STATS: the share's size and free space, read on the
            // path as the node layer's local read does. azurefile-csi-driver
            // pkg/azurefile/azurefile.go NewDriver: the same (stats on by
            // default); its NodeExpandVolume answers UNIMPLEMENTED.
            Flavor::Smb | Flavor::Azurefile => vec![
                T::StageUnstageVolume,
                T::GetVolumeStats,
                T::SingleNodeMultiWriter,
                T::VolumeMountGroup,
            ],
        }
    }

    /// Whether a disk's volume is grown right after staging: azuredisk
    /// (always on Windows), GCE (unless read-only) and aws-ebs (meant to,
    /// through `NeedResize`) do; vSphere does not.
    pub fn grow_after_stage(self) -> bool {
        self != Flavor::Vsphere
    }

    /// Whether the disk is taken offline after unstage: GCE, aws-ebs and
    /// vSphere do; azuredisk does not.
    pub fn offline_at_unstage(self) -> bool {
        matches!(self, Flavor::GcpPd | Flavor::AwsEbs | Flavor::Vsphere)
    }

    /// How calls on one volume are kept apart: csi-driver-smb locks its
    /// stage and unstage per volume id and staging path and takes no lock
    /// at publish (pkg/smb/nodeserver.go), so two pods publish one share
    /// at once; the disk drivers, per volume id.
    pub fn lock_scope(self) -> LockScope {
        match self {
            Flavor::Smb => LockScope::VolumeAndPath,
            _ => LockScope::Volume,
        }
    }

    /// SMB credentials from the secrets: the library's default, except that
    /// csi-driver-smb on Windows puts a user without a domain in `AZURE`
    /// (pkg/smb/smb.go `defaultDomainName`, pkg/smb/nodeserver.go).
    pub fn smb_credentials(
        self,
        secrets: &HashMap<String, String>,
    ) -> Result<SmbCredentials, Status> {
        if self == Flavor::Azurefile {
            return azurefile_credentials(secrets);
        }
        if self != Flavor::Smb {
            return default_smb_credentials(secrets);
        }
        let has = |key: &str| {
            secrets
                .iter()
                .any(|(k, v)| k.eq_ignore_ascii_case(key) && !v.trim().is_empty())
        };
        if has("username") && !has("domain") {
            let mut with_domain = secrets.clone();
            with_domain.insert("domain".into(), "AZURE".into());
            return default_smb_credentials(&with_domain);
        }
        default_smb_credentials(secrets)
    }
}

/// What the example's rule names: a share's path or a disk.
enum Named {
    Share(String),
    Disk(DiskSelector),
}

/// The example's rule: an SMB share by `volume_context["source"]`, else a
/// disk by `publish_context["lun"]`.
fn example(
    volume_context: &HashMap<String, String>,
    publish_context: &HashMap<String, String>,
) -> Result<Named, Status> {
    if let Some(source) = volume_context.get("source").filter(|s| !s.is_empty()) {
        return Ok(Named::Share(source.clone()));
    }
    match publish_context.get("lun") {
        Some(lun) => lun
            .trim()
            .parse()
            .map(|n| Named::Disk(DiskSelector::Lun(n)))
            .map_err(|_| {
                Status::invalid_argument(format!("publish_context lun {lun:?} is not a LUN number"))
            }),
        None => Err(Status::invalid_argument(
            "neither volume_context source (an SMB share) nor publish_context lun (a disk) is given",
        )),
    }
}

/// azuredisk: `publish_context["LUN"]`, a number or a device path ending in
/// `lunN` (pkg/azuredisk/nodeserver.go, pkg/azureutils/azure_disk_utils.go
/// `GetDiskLUN`), matched as Azure matches LUNs ([`DiskSelector::AzureLun`]).
fn azure_lun(publish_context: &HashMap<String, String>) -> Result<VolumeSource, Status> {
    let Some(value) = publish_context.get("LUN") else {
        return Err(Status::invalid_argument("publish_context LUN is missing"));
    };
    let digits = match value.rfind("lun") {
        Some(i) if value.len() > 2 => &value[i + 3..],
        _ => value.as_str(),
    };
    digits
        .trim()
        .parse()
        .map(|lun| VolumeSource::Disk(DiskSelector::AzureLun(lun)))
        .map_err(|_| {
            Status::invalid_argument(format!("publish_context LUN {value:?} is not a LUN"))
        })
}

/// GCE: the device name from the volume id, `projects/P/zones/Z/disks/NAME`
/// (the name) or `projects/P/regions/R/disks/NAME` (the name +
/// `_regional`) (pkg/common/utils.go `VolumeIDToKey`, `GetDeviceName`).
pub fn gce_device_name(volume_id: &str) -> Result<String, Status> {
    let parts: Vec<&str> = volume_id.split('/').collect();
    match parts.as_slice() {
        ["projects", _, "zones", _, "disks", name] if !name.is_empty() => Ok(name.to_string()),
        ["projects", _, "regions", _, "disks", name] if !name.is_empty() => {
            Ok(format!("{name}_regional"))
        }
        _ => Err(Status::invalid_argument(format!(
            "volume id {volume_id:?} is not projects/P/zones/Z/disks/NAME or projects/P/regions/R/disks/NAME"
        ))),
    }
}

/// GCE: a Hyperdisk on NVMe by its namespace identifier when the publish
/// context carries one (`nvmeNamespaceIdentifier`, the key csi-sim-cloud's
/// gcp-nvme profile sets in place of GCE's metadata server, which the
/// upstream node asks by device name: pkg/mount-manager/safe-mounter-v1_windows.go
/// `GetDiskNumber`), else a persistent disk by its device name.
fn gce_disk(
    volume_id: &str,
    publish_context: &HashMap<String, String>,
) -> Result<VolumeSource, Status> {
    let name = gce_device_name(volume_id)?;
    match publish_context.get("nvmeNamespaceIdentifier") {
        Some(id) => id
            .trim()
            .parse()
            .map(|id| VolumeSource::Disk(DiskSelector::GceNvmeNamespace(id)))
            .map_err(|_| {
                Status::invalid_argument(format!(
                    "nvmeNamespaceIdentifier {id:?} of disk {name} is not a number"
                ))
            }),
        None => Ok(VolumeSource::Disk(DiskSelector::GceDeviceName(name))),
    }
}

/// aws-ebs: `publish_context["devicePath"]` must be there (pkg/driver/node.go,
/// unused on Windows); the disk is the one whose NVMe serial holds the
/// volume id ([`DiskSelector::EbsVolumeId`]), for a node-local volume
/// (`local-ebs://`) the id in `publish_context["volumeID"]`.
fn ebs(volume_id: &str, publish_context: &HashMap<String, String>) -> Result<VolumeSource, Status> {
    if !publish_context.contains_key("devicePath") {
        return Err(Status::invalid_argument(
            "publish_context devicePath is missing",
        ));
    }
    let id = match publish_context.get("volumeID") {
        Some(real) if volume_id.starts_with("local-ebs://") && !real.is_empty() => real,
        _ => volume_id,
    };
    Ok(VolumeSource::Disk(DiskSelector::EbsVolumeId(
        id.to_string(),
    )))
}

/// vSphere: `publish_context["diskUUID"]` (pkg/csi/service/osutils/os_utils.go
/// `GetDiskID`), the disk whose page 83 id it is.
fn vsphere(publish_context: &HashMap<String, String>) -> Result<VolumeSource, Status> {
    match publish_context
        .get("diskUUID")
        .filter(|u| !u.trim().is_empty())
    {
        Some(uuid) => Ok(VolumeSource::Disk(DiskSelector::VsphereUuid(uuid.clone()))),
        None => Err(Status::invalid_argument(
            "publish_context diskUUID is missing",
        )),
    }
}

/// csi-driver-smb: `source` plus `subDir` (context keys in any case), the
/// subdirectory's `${pvc.metadata.name}`, `${pvc.metadata.namespace}` and
/// `${pv.metadata.name}` filled from the `csi.storage.k8s.io/pvc/name`,
/// `.../pvc/namespace` and `.../pv/name` keys (pkg/smb/nodeserver.go);
/// `/` written `\`; a `..` component refused.
pub fn smb_source(volume_context: &HashMap<String, String>) -> Result<String, Status> {
    let get = |key: &str| context_value(volume_context, key);
    let Some(source) = get("source").filter(|s| !s.is_empty()) else {
        return Err(Status::invalid_argument("volume_context source is missing"));
    };
    let mut path = source.trim_end_matches(['/', '\\']).to_string();
    if let Some(sub) = get("subDir").filter(|s| !s.is_empty()) {
        path = format!("{path}/{}", fill_templates(sub, volume_context));
    }
    let path = path.replace('/', "\\");
    if path.split('\\').any(|c| c == "..") {
        return Err(Status::invalid_argument(format!(
            "source {path:?} holds a .. component"
        )));
    }
    Ok(path)
}

/// The volume context's value of `key`, the key in any case (as
/// csi-driver-smb and azurefile-csi-driver read their keys).
fn context_value<'a>(volume_context: &'a HashMap<String, String>, key: &str) -> Option<&'a str> {
    volume_context
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v.as_str())
}

/// `s` with `${pvc.metadata.name}`, `${pvc.metadata.namespace}` and
/// `${pv.metadata.name}` filled from the volume context's
/// `csi.storage.k8s.io/pvc/name`, `.../pvc/namespace` and `.../pv/name`
/// (csi-driver-smb pkg/smb/nodeserver.go, azurefile-csi-driver
/// pkg/azurefile/nodeserver.go `replaceWithMap`).
fn fill_templates(s: &str, volume_context: &HashMap<String, String>) -> String {
    let mut s = s.to_string();
    for (template, key) in [
        ("${pvc.metadata.name}", "csi.storage.k8s.io/pvc/name"),
        (
            "${pvc.metadata.namespace}",
            "csi.storage.k8s.io/pvc/namespace",
        ),
        ("${pv.metadata.name}", "csi.storage.k8s.io/pv/name"),
    ] {
        if let Some(value) = context_value(volume_context, key) {
            s = s.replace(template, value);
        }
    }
    s
}

/// azurefile: `\\server\share[\folder]` from the volume context keys
/// `server`, `shareName` and `folderName` (any case), the share and the
/// storage account otherwise from the volume id
/// `rg#account#share#diskName#uuid#secretNamespace`, the server otherwise
/// `<account>.file.<storageEndpointSuffix>` (`core.windows.net` by
/// default); `${pvc.metadata.name}`, `${pvc.metadata.namespace}` and
/// `${pv.metadata.name}` filled in the share and folder names
/// (pkg/azurefile/nodeserver.go NodeStageVolume,
/// pkg/azurefile/azurefile.go `GetFileShareInfo`, `GetAccountInfo`); a `..`
/// component refused.
pub fn azurefile_source(
    volume_id: &str,
    volume_context: &HashMap<String, String>,
) -> Result<String, Status> {
    let get = |key: &str| {
        context_value(volume_context, key)
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let segments: Vec<&str> = volume_id.split('#').collect();
    let from_id = |i: usize| segments.get(i).copied().filter(|s| !s.is_empty());
    let account = get("storageAccount").or(from_id(1));
    let Some(share) = get("shareName").or(from_id(2)) else {
        return Err(Status::invalid_argument(format!(
            "no share name in the volume context or the volume id {volume_id:?}"
        )));
    };
    let server = match (get("server"), account) {
        (Some(server), _) => server.to_string(),
        (None, Some(account)) => format!(
            "{account}.file.{}",
            get("storageEndpointSuffix").unwrap_or("core.windows.net")
        ),
        (None, None) => {
            return Err(Status::invalid_argument(format!(
                "no server and no storage account in the volume context or the volume id {volume_id:?}"
            )));
        }
    };
    let fill = |s: &str| fill_templates(s, volume_context);
    let mut path = format!(r"\\{server}\{}", fill(share));
    if let Some(folder) = get("folderName").map(|f| fill(f.trim_matches('/')))
        && !folder.is_empty()
    {
        path = format!(r"{path}\{folder}");
    }
    let path = path.replace('/', "\\");
    if path.split('\\').any(|c| c == "..") {
        return Err(Status::invalid_argument(format!(
            "share path {path:?} holds a .. component"
        )));
    }
    Ok(path)
}

/// azurefile on Windows: the storage account name and key from the
/// secrets (`azurestorageaccountname`/`accountname`,
/// `azurestorageaccountkey`/`accountkey`, any case; pkg/azurefile/azurefile.go
/// `getStorageAccount`), the account as user `AZURE\<account>`
/// (pkg/azurefile/nodeserver.go NodeStageVolume on Windows).
fn azurefile_credentials(secrets: &HashMap<String, String>) -> Result<SmbCredentials, Status> {
    let get = |keys: [&str; 2]| {
        secrets
            .iter()
            .find(|(k, v)| {
                keys.iter().any(|key| k.eq_ignore_ascii_case(key)) && !v.trim().is_empty()
            })
            .map(|(_, v)| v.trim().to_string())
    };
    // Neither: the node's own identity, as the library's default reads
    // secrets without a user (a publish of a staged volume carries no
    // stage secrets, and only the kind of volume is used there).
    match (
        get(["azurestorageaccountname", "accountname"]),
        get(["azurestorageaccountkey", "accountkey"]),
    ) {
        (Some(account), Some(key)) => Ok(SmbCredentials::new(format!(r"AZURE\{account}"), key)),
        (None, None) => Ok(SmbCredentials::none()),
        _ => Err(Status::invalid_argument(
            "secrets must hold both azurestorageaccountname and azurestorageaccountkey \
             (or accountname and accountkey), or neither",
        )),
    }
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Flavor {
    type Err = String;

    fn from_str(s: &str) -> Result<Flavor, String> {
        Flavor::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                let names: Vec<&str> = Flavor::ALL.iter().map(|f| f.name()).collect();
                format!("unknown driver {s:?} (known: {})", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn disk(flavor: Flavor, id: &str, publish: &[(&str, &str)]) -> Result<DiskSelector, Code> {
        match flavor.resolve(id, &map(&[]), &map(publish), &map(&[])) {
            Ok(VolumeSource::Disk(s)) => Ok(s),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e.code()),
        }
    }

    use tonic::Code;

    #[test]
    fn azuredisk_reads_the_lun_number_or_device_path() {
        let lun = |v| match disk(Flavor::Azuredisk, "any", &[("LUN", v)]) {
            Ok(DiskSelector::AzureLun(n)) => Ok(n),
            other => Err(format!("{other:?}")),
        };
        assert_eq!(lun("3"), Ok(3));
        assert_eq!(lun("/dev/disk/azure/scsi1/lun12"), Ok(12));
        assert!(lun("x").is_err());
        assert_eq!(
            disk(Flavor::Azuredisk, "any", &[("lun", "3")]),
            Err(Code::InvalidArgument)
        );
    }

    #[test]
    fn gcp_pd_takes_the_device_name_from_the_volume_id() {
        let name = |id| match disk(Flavor::GcpPd, id, &[]) {
            Ok(DiskSelector::GceDeviceName(n)) => Ok(n),
            other => Err(format!("{other:?}")),
        };
        assert_eq!(name("projects/p/zones/z/disks/pd-1"), Ok("pd-1".into()));
        assert_eq!(
            name("projects/p/regions/r/disks/pd-1"),
            Ok("pd-1_regional".into())
        );
        assert!(name("pd-1").is_err());
        assert!(name("projects/p/zones/z/snapshots/pd-1").is_err());
    }

    #[test]
    fn aws_ebs_needs_the_device_path_and_matches_the_volume_id() {
        assert_eq!(
            disk(Flavor::AwsEbs, "vol-0123", &[("devicePath", "/dev/xvdaa")]),
            Ok(DiskSelector::EbsVolumeId("vol-0123".into()))
        );
        assert_eq!(
            disk(Flavor::AwsEbs, "vol-0123", &[]),
            Err(Code::InvalidArgument)
        );
        assert_eq!(
            disk(
                Flavor::AwsEbs,
                "local-ebs://dev/xvdba",
                &[("devicePath", "/dev/xvdba"), ("volumeID", "vol-9")]
            ),
            Ok(DiskSelector::EbsVolumeId("vol-9".into()))
        );
    }

    #[test]
    fn vsphere_reads_the_disk_uuid() {
        assert_eq!(
            disk(Flavor::Vsphere, "fcd", &[("diskUUID", "6000c29a")]),
            Ok(DiskSelector::VsphereUuid("6000c29a".into()))
        );
        assert_eq!(
            disk(Flavor::Vsphere, "fcd", &[]),
            Err(Code::InvalidArgument)
        );
    }

    #[test]
    fn smb_joins_source_and_a_templated_sub_dir() {
        let context = map(&[
            ("Source", "//fileserver/share/"),
            (
                "subdir",
                "${pvc.metadata.namespace}/${pvc.metadata.name}-${pv.metadata.name}",
            ),
            ("csi.storage.k8s.io/pvc/name", "data"),
            ("csi.storage.k8s.io/pvc/namespace", "ns"),
            ("csi.storage.k8s.io/pv/name", "pv-1"),
        ]);
        let secrets = map(&[("username", "smbuser"), ("password", "pw")]);
        match Flavor::Smb.resolve("v", &context, &map(&[]), &secrets) {
            Ok(VolumeSource::Smb { share, credentials }) => {
                assert_eq!(share, r"\\fileserver\share\ns\data-pv-1");
                assert_eq!(credentials.username(), r"AZURE\smbuser");
            }
            other => panic!("{other:?}"),
        }
        let plain = map(&[("source", r"\\fileserver\share")]);
        assert_eq!(smb_source(&plain).unwrap(), r"\\fileserver\share");
        let escape = map(&[("source", "//fileserver/share"), ("subDir", "../other")]);
        assert_eq!(
            smb_source(&escape).unwrap_err().code(),
            Code::InvalidArgument
        );
        assert_eq!(
            smb_source(&map(&[])).unwrap_err().code(),
            Code::InvalidArgument
        );
    }

    #[test]
    fn azurefile_reads_server_share_and_folder_or_the_volume_id() {
        let context = map(&[
            ("Server", "fileserver"),
            ("shareName", "share"),
            ("foldername", "/${pvc.metadata.namespace}/sim-vol-1/"),
            ("csi.storage.k8s.io/pvc/namespace", "ns"),
        ]);
        let id = "sim-rg#smbuser#share##sim-vol-1#default";
        let secrets = map(&[
            ("azurestorageaccountname", "smbuser"),
            ("azurestorageaccountkey", "key"),
        ]);
        match Flavor::Azurefile.resolve(id, &context, &map(&[]), &secrets) {
            Ok(VolumeSource::Smb { share, credentials }) => {
                assert_eq!(share, r"\\fileserver\share\ns\sim-vol-1");
                assert_eq!(credentials.username(), r"AZURE\smbuser");
            }
            other => panic!("{other:?}"),
        }
        // no context: the account's server and the share of the id
        assert_eq!(
            azurefile_source(id, &map(&[])).unwrap(),
            r"\\smbuser.file.core.windows.net\share"
        );
        let escape = map(&[("server", "s"), ("shareName", "a"), ("folderName", "../b")]);
        assert_eq!(
            azurefile_source("", &escape).unwrap_err().code(),
            Code::InvalidArgument
        );
        assert_eq!(
            azurefile_source("rg", &map(&[])).unwrap_err().code(),
            Code::InvalidArgument
        );
    }

    #[test]
    fn azurefile_logs_on_as_the_storage_account() {
        let secrets = map(&[
            ("azurestorageaccountname", "acct"),
            ("azurestorageaccountkey", "key=="),
        ]);
        let c = Flavor::Azurefile.smb_credentials(&secrets).unwrap();
        assert_eq!(c.username(), r"AZURE\acct");
        let plain = map(&[("accountname", "acct"), ("accountkey", "k")]);
        assert_eq!(
            Flavor::Azurefile
                .smb_credentials(&plain)
                .unwrap()
                .username(),
            r"AZURE\acct"
        );
        let name_only = map(&[("azurestorageaccountname", "acct")]);
        assert_eq!(
            Flavor::Azurefile
                .smb_credentials(&name_only)
                .unwrap_err()
                .code(),
            Code::InvalidArgument
        );
        let none = Flavor::Azurefile.smb_credentials(&map(&[])).unwrap();
        assert_eq!(none.username(), SmbCredentials::none().username());
    }

    #[test]
    fn gcp_pd_takes_an_nvme_namespace_identifier_when_published_with_one() {
        assert_eq!(
            disk(
                Flavor::GcpPd,
                "projects/p/zones/z/disks/hd-1",
                &[("nvmeNamespaceIdentifier", "7950104167470284801")]
            ),
            Ok(DiskSelector::GceNvmeNamespace(7950104167470284801))
        );
        assert_eq!(
            disk(
                Flavor::GcpPd,
                "projects/p/zones/z/disks/hd-1",
                &[("nvmeNamespaceIdentifier", "x")]
            ),
            Err(Code::InvalidArgument)
        );
    }

    #[test]
    fn smb_puts_a_user_without_domain_in_azure() {
        let secrets = map(&[("username", "smbuser"), ("password", "pw")]);
        let with = Flavor::Smb.smb_credentials(&secrets).unwrap();
        let without = Flavor::Example.smb_credentials(&secrets).unwrap();
        assert_eq!(with.username(), r"AZURE\smbuser");
        assert_eq!(without.username(), "smbuser");
        let domain = map(&[("username", "u"), ("password", "p"), ("domain", "CORP")]);
        assert_eq!(
            Flavor::Smb.smb_credentials(&domain).unwrap().username(),
            r"CORP\u"
        );
    }

    #[test]
    fn policies_follow_the_upstream_drivers() {
        let d = VolumeSource::Disk(DiskSelector::Number(1));
        assert!(Flavor::Azuredisk.fs_type(&d, "btrfs").is_ok());
        assert!(Flavor::GcpPd.fs_type(&d, "ext4").is_err());
        assert!(Flavor::Vsphere.fs_type(&d, "ext4").is_ok());
        assert_eq!(
            Flavor::Vsphere.fs_type(&d, "xfs").unwrap_err().code(),
            Code::FailedPrecondition
        );
        assert!(Flavor::AwsEbs.fs_type(&d, "xfs").is_ok());
        assert!(
            Flavor::AwsEbs
                .access_mode(&d, Mode::SingleNodeReaderOnly)
                .is_err()
        );
        assert!(
            Flavor::GcpPd
                .access_mode(&d, Mode::MultiNodeReaderOnly)
                .is_ok()
        );
        assert!(
            Flavor::Azuredisk
                .access_mode(&d, Mode::MultiNodeReaderOnly)
                .is_err()
        );
        assert!(
            Flavor::GcpPd
                .mount_flags(&["read_ahead_kb=-1".into()])
                .is_err()
        );
        assert!(
            Flavor::GcpPd
                .mount_flags(&["read_ahead_kb=4096".into()])
                .is_ok()
        );
        let offline: Vec<Flavor> = Flavor::ALL
            .into_iter()
            .filter(|f| f.offline_at_unstage())
            .collect();
        assert_eq!(offline, [Flavor::GcpPd, Flavor::AwsEbs, Flavor::Vsphere]);
        assert!(!Flavor::Vsphere.grow_after_stage());
        let per_path: Vec<Flavor> = Flavor::ALL
            .into_iter()
            .filter(|f| f.lock_scope() == LockScope::VolumeAndPath)
            .collect();
        assert_eq!(per_path, [Flavor::Smb]);
        assert!(
            !Flavor::Smb
                .node_capabilities()
                .contains(&rpc::Type::ExpandVolume)
        );
    }
}
