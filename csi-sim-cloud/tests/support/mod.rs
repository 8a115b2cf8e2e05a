//! What the cloud's test suites share: a cloud with its one node, a
//! simulated host on a temporary sandbox laid out as the cloud's profile
//! says, and the capability of a mounted volume.
// Each suite is its own crate and uses a part of this.
#![allow(dead_code)]

use csi::volume_capability::{AccessMode, AccessType, MountVolume, access_mode::Mode};
use csi_node_server::csi::v1 as csi;
use csi_proxy_client::host::{Host, HostConfig};
use csi_sim_cloud::{Cloud, Profile};

/// The id of the cloud's node.
pub const NODE: &str = "node-1";

/// A cloud and the host of its node.
pub struct Fixture {
    pub cloud: Cloud,
    pub host: Host,
    /// Holds the host's files (under `node`), removed on drop.
    pub sandbox: tempfile::TempDir,
}

/// A cloud playing `profile` over a fresh node laid out for it.
pub fn fixture(profile: Profile) -> Fixture {
    let sandbox = tempfile::tempdir().unwrap();
    let mut config = HostConfig::new(sandbox.path().join("node"));
    config.seed = profile.layout().seed();
    let host = Host::new(config).unwrap();
    Fixture {
        cloud: Cloud::with_profile(host.clone(), NODE, profile),
        host,
        sandbox,
    }
}

/// The capability of a volume mounted with a filesystem, in `mode`.
pub fn capability(mode: Mode) -> csi::VolumeCapability {
    csi::VolumeCapability {
        access_mode: Some(AccessMode { mode: mode.into() }),
        access_type: Some(AccessType::Mount(MountVolume::default())),
    }
}
