//! What a stage resolved, kept in the node's records: the [`VolumeSource`]
//! [`Driver::volume`](crate::Driver::volume) named, keyed by the volume id
//! and the staging path, so that the publish and expand of the staged
//! volume (where kubelet sends no stage secrets) are answered from it
//! instead of asking the driver again. (Stats need no answer of the
//! driver: the node reads what backs the path.)
//!
//! A share is kept without its account: a password is never written to
//! the node's disk, and only a stage maps the share.

use csi_proxy_client::Error;
use csi_proxy_client::node::{DiskSelector, NodeRecords, SmbCredentials};

use crate::driver::VolumeSource;

/// The program records' kind of a stage's volume.
const KIND: &str = "stage-source";

/// The record's key: the volume id and the staging path, which kubelet
/// gives together at every call on a staged volume. A NUL is in neither.
fn key(volume_id: &str, staging_path: &str) -> String {
    format!("{volume_id}\0{staging_path}")
}

/// Keeps what the stage of `volume_id` at `staging_path` resolved. A disk
/// named by a driver's own rule ([`DiskSelector::Matching`], code) cannot
/// be written down: nothing is kept, and the driver is asked again at
/// publish.
pub(crate) fn keep(
    records: &NodeRecords,
    volume_id: &str,
    staging_path: &str,
    volume: &VolumeSource,
) -> Result<(), Error> {
    let key = key(volume_id, staging_path);
    match encode(volume_id, staging_path, volume) {
        Some(text) => records.put_program(KIND, &key, &text),
        // A record of an earlier stage would be read in place of this one.
        None => records.remove_program(KIND, &key),
    }
}

/// What the stage of `volume_id` at `staging_path` resolved; `None` when
/// nothing was kept (a volume staged before records were kept, or whose
/// disk rule is code).
pub(crate) fn kept(
    records: &NodeRecords,
    volume_id: &str,
    staging_path: &str,
) -> Result<Option<VolumeSource>, Error> {
    let found = records.get_program(KIND, &key(volume_id, staging_path), |text| {
        decode(text).ok_or_else(|| "not a stage's volume this plugin writes".to_string())
    })?;
    // Keys compare case-insensitively: a record of a volume whose id or
    // path differs only in case is another volume's.
    Ok(found
        .and_then(|(id, path, volume)| (id == volume_id && path == staging_path).then_some(volume)))
}

/// Forgets what the stage of `volume_id` at `staging_path` resolved.
pub(crate) fn forget(
    records: &NodeRecords,
    volume_id: &str,
    staging_path: &str,
) -> Result<(), Error> {
    records.remove_program(KIND, &key(volume_id, staging_path))
}

/// The record's text: the volume id, the staging path, then the volume
/// (`smb <share>`, or `disk <selector> <value>`), one a line.
fn encode(volume_id: &str, staging_path: &str, volume: &VolumeSource) -> Option<String> {
    let source = match volume {
        VolumeSource::Smb { share, .. } => format!("smb {share}"),
        VolumeSource::Disk(selector) => {
            let (name, value) = match selector {
                DiskSelector::Lun(n) => ("lun", n.to_string()),
                DiskSelector::AzureLun(n) => ("azure-lun", n.to_string()),
                DiskSelector::GceDeviceName(s) => ("gce-device-name", s.clone()),
                DiskSelector::GceNvmeNamespace(n) => ("gce-nvme-namespace", n.to_string()),
                DiskSelector::EbsVolumeId(s) => ("ebs-volume-id", s.clone()),
                DiskSelector::VsphereUuid(s) => ("vsphere-uuid", s.clone()),
                DiskSelector::Page83(s) => ("page83", s.clone()),
                DiskSelector::SerialNumber(s) => ("serial-number", s.clone()),
                DiskSelector::Number(n) => ("number", n.to_string()),
                _ => return None,
            };
            format!("disk {name} {value}")
        }
    };
    let lines = [volume_id, staging_path, source.as_str()];
    if lines.iter().any(|l| l.contains('\n')) {
        return None;
    }
    Some(format!("{volume_id}\n{staging_path}\n{source}\n"))
}

fn decode(text: &str) -> Option<(String, String, VolumeSource)> {
    let mut lines = text.strip_suffix('\n')?.split('\n');
    let (id, path, source) = (lines.next()?, lines.next()?, lines.next()?);
    if lines.next().is_some() {
        return None;
    }
    let volume = match source.split_once(' ')? {
        ("smb", share) => VolumeSource::Smb {
            share: share.to_string(),
            credentials: SmbCredentials::none(),
        },
        ("disk", selector) => {
            let (name, value) = selector.split_once(' ')?;
            let text = || value.to_string();
            VolumeSource::Disk(match name {
                "lun" => DiskSelector::Lun(value.parse().ok()?),
                "azure-lun" => DiskSelector::AzureLun(value.parse().ok()?),
                "gce-device-name" => DiskSelector::GceDeviceName(text()),
                "gce-nvme-namespace" => DiskSelector::GceNvmeNamespace(value.parse().ok()?),
                "ebs-volume-id" => DiskSelector::EbsVolumeId(text()),
                "vsphere-uuid" => DiskSelector::VsphereUuid(text()),
                "page83" => DiskSelector::Page83(text()),
                "serial-number" => DiskSelector::SerialNumber(text()),
                "number" => DiskSelector::Number(value.parse().ok()?),
                _ => return None,
            })
        }
        _ => return None,
    };
    Some((id.to_string(), path.to_string(), volume))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAGING: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv\globalmount";

    #[test]
    fn every_written_selector_reads_back() {
        let records = NodeRecords::memory();
        let selectors = [
            DiskSelector::Lun(3),
            DiskSelector::AzureLun(0),
            DiskSelector::GceDeviceName("pd-1".into()),
            DiskSelector::GceNvmeNamespace(u64::MAX),
            DiskSelector::EbsVolumeId("vol-0123".into()),
            DiskSelector::VsphereUuid("6000C29a-b".into()),
            DiskSelector::Page83("Google  pd 1".into()),
            DiskSelector::SerialNumber(" 42 ".into()),
            DiskSelector::Number(7),
        ];
        for selector in selectors {
            keep(
                &records,
                "pv",
                STAGING,
                &VolumeSource::Disk(selector.clone()),
            )
            .unwrap();
            match kept(&records, "pv", STAGING).unwrap() {
                Some(VolumeSource::Disk(read)) => assert_eq!(read, selector),
                other => panic!("{selector:?}: {other:?}"),
            }
        }
        let share = VolumeSource::Smb {
            share: r"\\srv\share\dir".into(),
            credentials: SmbCredentials::new("user", "secret"),
        };
        keep(&records, "pv", STAGING, &share).unwrap();
        match kept(&records, "pv", STAGING).unwrap() {
            Some(VolumeSource::Smb { share, credentials }) => {
                assert_eq!(share, r"\\srv\share\dir");
                assert_eq!(credentials.username(), "", "no account is kept");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            kept(&records, "PV", STAGING).unwrap().is_none(),
            "another volume id"
        );
        forget(&records, "pv", STAGING).unwrap();
        assert!(kept(&records, "pv", STAGING).unwrap().is_none());
    }

    #[test]
    fn a_rule_in_code_is_not_kept_and_drops_an_earlier_record() {
        let records = NodeRecords::memory();
        keep(
            &records,
            "pv",
            STAGING,
            &VolumeSource::Disk(DiskSelector::Lun(1)),
        )
        .unwrap();
        let rule = VolumeSource::Disk(DiskSelector::matching("any", |_| true));
        keep(&records, "pv", STAGING, &rule).unwrap();
        assert!(kept(&records, "pv", STAGING).unwrap().is_none());
    }

    #[test]
    fn a_record_this_plugin_cannot_read_is_an_error_naming_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let records = NodeRecords::directory(dir.path());
        records
            .put_program(KIND, &key("pv", STAGING), "pv\nsomewhere\ntape 3\n")
            .unwrap();
        let e = kept(&records, "pv", STAGING).unwrap_err();
        let text = format!("{e}: {}", std::error::Error::source(&e).unwrap());
        assert!(text.contains(&dir.path().display().to_string()), "{text}");
        assert!(text.contains("program-stage-source"), "{text}");
    }
}
