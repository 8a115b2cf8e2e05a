//! Latency profiles: how long the real csi-proxy takes for each RPC, per
//! release, so that a driver can be run against the simulator at the
//! speed of a real Windows node (off by default: the simulator answers at
//! once).
//!
//! A profile is a host time per RPC method name (the same for every API
//! version that has the method), applied where injected latency is
//! (`MockHostBuilder::latency_profile`, `ServerBuilder::latency_profile`,
//! `csi-proxy-server --latency-profile`): the call's work is done at the
//! host once its host time has passed, and goes on if the caller gives up
//! first, as csi-proxy's does.
//!
//! Each figure's source is in `docs/latency-profiles.md`. In short: the
//! RPCs csi-proxy's pull request #360 timed on real nodes carry its
//! figures (v1.1: the low end of its PowerShell range, v1.3: the high end
//! of its WMI range, as that table's own summary columns take them); the
//! others are built from those figures by counting the host calls each
//! RPC makes in the v1.1.3 and v1.3.0 sources: 2.9 s per PowerShell
//! command (v1.1), 0.29 s per WMI query or method and 0.585 s per
//! enumeration (v1.3), 9 ms for an RPC made of Win32 calls only (v1.3),
//! and 1 ms for the filesystem group, which is Go's `os` package in both
//! releases (no published figure: an assumption).
//!
//! Not modelled: work that depends on the request or the host's state (a
//! blank disk's PartitionDisk initializes and partitions, two more
//! commands in v1.1; a format's time grows with the volume's size, 83 s
//! for 30 TB in azuredisk-csi-driver#2673's log; GetSupportedSize can take
//! minutes, AgentBaker#3804). Tests inject those with the latency and
//! fault hooks (`Storage::slow_supported_size` for the last).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The real csi-proxy's host time per RPC, per release (see the module
/// docs and `docs/latency-profiles.md` for the figures and their sources).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LatencyProfile {
    /// csi-proxy v1.1 (v1.0–v1.2): a PowerShell process per host command.
    /// Named `csi-proxy-1.1`.
    CsiProxy1_1,
    /// csi-proxy v1.3: WMI and Win32 calls. Named `csi-proxy-1.3`.
    CsiProxy1_3,
}

/// Host time in microseconds: `(rpc names, v1.3, v1.1)`. Names that one
/// version renamed share a row (`VolumeStats` is v1beta1's `GetVolumeStats`).
const TABLE: &[(&[&str], u64, u64)] = &[
    // disk: measured (csi-proxy#360)
    (&["ListDiskIDs"], 585_000, 2_900_000),
    // disk: counted
    (
        &["ListDiskLocations", "GetDiskNumberByName"],
        585_000,
        2_900_000,
    ),
    (&["PartitionDisk"], 580_000, 5_800_000),
    (
        &[
            "Rescan",
            "DiskStats",
            "GetDiskStats",
            "GetAttachState",
            "GetDiskState",
        ],
        290_000,
        2_900_000,
    ),
    (&["SetAttachState", "SetDiskState"], 580_000, 2_900_000),
    // volume: measured (csi-proxy#360)
    (&["FormatVolume"], 2_900_000, 5_850_000),
    (&["GetVolumeStats", "VolumeStats"], 290_000, 2_900_000),
    (&["IsVolumeFormatted"], 95_500, 2_900_000),
    (&["ListVolumesOnDisk"], 585_000, 2_900_000),
    (
        &["GetDiskNumberFromVolumeID", "GetVolumeDiskNumber"],
        580_000,
        2_900_000,
    ),
    (
        &[
            "GetVolumeIDFromTargetPath",
            "GetVolumeIDFromMount",
            "GetClosestVolumeIDFromTargetPath",
        ],
        9_000,
        580_000,
    ),
    // volume: counted
    (&["MountVolume"], 9_000, 2_900_000),
    (&["UnmountVolume", "DismountVolume"], 589_000, 5_800_000),
    (&["WriteVolumeCache"], 580_000, 2_900_000),
    (&["ResizeVolume"], 1_450_000, 8_700_000),
    // filesystem: assumed
    (
        &[
            "PathExists",
            "Mkdir",
            "Rmdir",
            "RmdirContents",
            "CreateSymlink",
            "LinkPath",
            "IsMountPoint",
            "IsSymlink",
        ],
        1_000,
        1_000,
    ),
    // smb: counted
    (&["NewSmbGlobalMapping"], 589_000, 8_700_000),
    (&["RemoveSmbGlobalMapping"], 290_000, 2_900_000),
    // system: counted
    (&["GetBIOSSerialNumber", "GetService"], 290_000, 2_900_000),
    (&["StartService", "StopService"], 580_000, 2_900_000),
    // iscsi: counted
    (
        &[
            "AddTargetPortal",
            "DiscoverTargetPortal",
            "RemoveTargetPortal",
            "ListTargetPortals",
            "ConnectTarget",
            "DisconnectTarget",
            "GetTargetDisks",
            "SetMutualChapSecret",
        ],
        290_000,
        2_900_000,
    ),
];

impl LatencyProfile {
    /// Both profiles, oldest release first.
    pub const ALL: [LatencyProfile; 2] = [LatencyProfile::CsiProxy1_1, LatencyProfile::CsiProxy1_3];

    /// The profile's name: `csi-proxy-1.1` or `csi-proxy-1.3`.
    pub fn name(self) -> &'static str {
        match self {
            LatencyProfile::CsiProxy1_1 => "csi-proxy-1.1",
            LatencyProfile::CsiProxy1_3 => "csi-proxy-1.3",
        }
    }

    /// The host time of a call of the RPC method `rpc` (its name, e.g.
    /// `FormatVolume`); zero for a name the profile does not know.
    pub fn latency(self, rpc: &str) -> Duration {
        TABLE
            .iter()
            .find(|(names, _, _)| names.contains(&rpc))
            .map_or(Duration::ZERO, |&(_, v1_3, v1_1)| {
                Duration::from_micros(match self {
                    LatencyProfile::CsiProxy1_1 => v1_1,
                    LatencyProfile::CsiProxy1_3 => v1_3,
                })
            })
    }

    /// Every RPC method name the profile gives a host time, with it.
    pub fn latencies(self) -> impl Iterator<Item = (&'static str, Duration)> {
        TABLE
            .iter()
            .flat_map(|(names, _, _)| names.iter().copied())
            .map(move |name| (name, self.latency(name)))
    }
}

impl fmt::Display for LatencyProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LatencyProfile {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == text)
            .ok_or_else(|| {
                format!("unknown latency profile {text:?}; known: csi-proxy-1.3, csi-proxy-1.1")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_by_name_and_give_the_measured_figures() {
        let v1_3: LatencyProfile = "csi-proxy-1.3".parse().unwrap();
        let v1_1: LatencyProfile = "csi-proxy-1.1".parse().unwrap();
        assert_eq!(
            v1_3.latency("IsVolumeFormatted"),
            Duration::from_micros(95_500)
        );
        assert_eq!(
            v1_1.latency("IsVolumeFormatted"),
            Duration::from_millis(2900)
        );
        assert_eq!(v1_1.latency("VolumeStats"), v1_1.latency("GetVolumeStats"));
        assert_eq!(v1_3.latency("NoSuchRpc"), Duration::ZERO);
        assert!("csi-proxy-2".parse::<LatencyProfile>().is_err());
    }

    /// Every RPC of every API version has a figure, and only RPCs have one.
    #[cfg(feature = "server")]
    #[test]
    fn every_rpc_has_a_host_time_in_both_profiles() {
        for profile in LatencyProfile::ALL {
            for (name, _) in profile.latencies() {
                assert!(crate::server::is_rpc(name), "{name} is no RPC");
            }
        }
        for endpoint in crate::GroupVersion::all() {
            for rpc in endpoint.rpcs() {
                for profile in LatencyProfile::ALL {
                    assert!(
                        !profile.latency(rpc).is_zero(),
                        "{profile}: no figure for {rpc}"
                    );
                }
            }
        }
    }
}
