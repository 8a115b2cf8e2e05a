//! Support of the node-layer suites: a [`Fixture`] is a simulated node
//! behind `MockHost`, behind the reference server, or behind the
//! host-process backend over the fake Windows boundary, and a `Node` over
//! it at one version family; [`node_tests!`] runs each scenario on every
//! backend and family, and at v1 in the words of csi-proxy v1.1 as well as
//! v1.3 (the default); host-process: v1 only, the versions it implements.

use csi_proxy_client::host::smb::SmbConfig;
use csi_proxy_client::host::{Host, HostConfig, NodeSeed, ProxyRelease};
#[cfg(feature = "host-process")]
use csi_proxy_client::host_process::FakeWindows;
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::MockNode;
use csi_proxy_client::node::{Node, NodeOptions, NodeVersions, SmbCredentials};
use csi_proxy_client::server::{GroupVersion, Server, ServerBuilder};
use tempfile::TempDir;

pub const GIB: u64 = 1 << 30;

/// A staging path as kubelet spells it, and as the host spells it.
pub const STAGING: &str = "/var/lib/kubelet/plugins/kubernetes.io/csi/d/pv1/globalmount";
pub const STAGING_C: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv1\globalmount";
pub const OTHER_STAGING: &str = r"\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv2\globalmount";
pub const TARGET: &str = r"\var\lib\kubelet\pods\uid\volumes\kubernetes.io~csi\pv1\mount";
pub const TARGET_C: &str = r"C:\var\lib\kubelet\pods\uid\volumes\kubernetes.io~csi\pv1\mount";
pub const SMB_STAGING: &str = r"c:\var\lib\kubelet\plugins\kubernetes.io\csi\smb\pv3\globalmount";
pub const SMB_OTHER_STAGING: &str =
    r"c:\var\lib\kubelet\plugins\kubernetes.io\csi\smb\pv4\globalmount";
pub const SHARE_DIR: &str = r"\\fileserver\share\pv3";
pub const SHARE_OTHER_DIR: &str = r"\\fileserver\share\pv4";
pub const SHARE_ROOT: &str = r"\\fileserver\share";

pub fn smb_user() -> SmbCredentials {
    SmbCredentials::new("smbuser", "Sm8-Passw0rd!")
}

/// Creates the volume directories `pv3`, `pv4`, `a` and `b` on the default
/// share (a controller makes them before a volume is staged).
pub fn make_share_dirs(host: &Host) {
    let node = host.lock();
    let dir = node
        .smb
        .share_dir("fileserver", "share")
        .expect("the default share");
    for pv in ["pv3", "pv4", "a", "b"] {
        std::fs::create_dir_all(dir.join(pv)).expect("share dir");
    }
}

/// Whether the default share is globally mapped.
pub fn mapped(host: &Host) -> bool {
    host.lock().smb.mapping(SHARE_ROOT).is_some()
}

/// A set of versions a node may serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Every group at v1.
    V1,
    /// The newest betas: disk and volume v1beta3, filesystem and smb v1beta2.
    Beta,
    /// A csi-proxy v0.2 node: every group at v1beta1.
    V0_2,
}

impl Family {
    pub fn versions(self) -> NodeVersions {
        match self {
            Family::V1 => "disk=v1 volume=v1 filesystem=v1 smb=v1",
            Family::Beta => "disk=v1beta3 volume=v1beta3 filesystem=v1beta2 smb=v1beta2",
            Family::V0_2 => "disk=v1beta1 volume=v1beta1 filesystem=v1beta1 smb=v1beta1",
        }
        .parse()
        .expect("valid versions")
    }

    /// The endpoints a server of this family serves.
    pub fn endpoints(self) -> Vec<GroupVersion> {
        let v = self.versions();
        [
            ("disk", v.disk),
            ("volume", v.volume),
            ("filesystem", v.filesystem),
            ("smb", v.smb),
        ]
        .into_iter()
        .filter_map(|(g, v)| GroupVersion::parse(&format!("{g}/{}", v?)))
        // csi-proxy serves volume v2alpha1 beside v1 from v1.1 on (the
        // v1 family's releases); the betas' and v0.2's nodes have none.
        .chain(
            (self == Family::V1)
                .then(|| GroupVersion::parse("volume/v2alpha1"))
                .flatten(),
        )
        .collect()
    }
}

/// A simulated node and a `Node` over it.
pub struct Fixture {
    pub node: Node,
    pub host: Host,
    pub family: Family,
    /// The mock, on the mock backend.
    pub mock: Option<MockHost>,
    server: Option<(Server, TempDir, TempDir)>,
    /// The fake Windows boundary and its sandbox, on the host-process backend.
    #[cfg(feature = "host-process")]
    fake: Option<(std::sync::Arc<FakeWindows>, TempDir)>,
}

impl Fixture {
    /// Whether the node reads the host's links itself, as a plugin on
    /// Windows does (MockHost, HostProcess); a node reaching the reference
    /// server from Linux cannot.
    pub fn sees_the_host(&self) -> bool {
        self.server.is_none()
    }

    /// Over `MockHost`.
    pub async fn mock(family: Family, options: NodeOptions) -> Fixture {
        Self::mock_seeded(family, options, None).await
    }

    /// Over `MockHost` built from `seed` (TOML, the server's seed format).
    pub async fn mock_seeded(family: Family, options: NodeOptions, seed: Option<&str>) -> Fixture {
        let mut builder = MockHost::builder();
        if let Some(seed) = seed {
            builder = builder.seed(NodeSeed::from_toml_str(seed).expect("valid seed"));
        }
        let mock = builder.build().expect("mock host");
        make_share_dirs(mock.host());
        let node = MockNode::new(&mock)
            .versions(family.versions())
            .options(options)
            .build()
            .expect("supported versions");
        Fixture {
            node,
            host: mock.host().clone(),
            family,
            mock: Some(mock),
            server: None,
            #[cfg(feature = "host-process")]
            fake: None,
        }
    }

    /// Over the reference server serving only `family`'s endpoints, the
    /// `Node` negotiating (not pinned): it must find exactly those.
    pub async fn server(family: Family, options: NodeOptions) -> Fixture {
        Self::server_seeded(family, options, None).await
    }

    /// Over the reference server whose host is built from `seed`.
    pub async fn server_seeded(
        family: Family,
        options: NodeOptions,
        seed: Option<&str>,
    ) -> Fixture {
        Self::server_configured(family, options, seed, |builder| builder).await
    }

    /// Over the reference server built with `configure` (latency, faults).
    pub async fn server_configured(
        family: Family,
        options: NodeOptions,
        seed: Option<&str>,
        configure: impl FnOnce(ServerBuilder) -> ServerBuilder,
    ) -> Fixture {
        let sandbox = tempfile::tempdir().expect("sandbox");
        let sockets = tempfile::tempdir().expect("sockets");
        let mut config = HostConfig::new(sandbox.path());
        config.seed = seed.map(|s| NodeSeed::from_toml_str(s).expect("valid seed"));
        let host = Host::new(config).expect("host");
        make_share_dirs(&host);
        let builder = Server::builder()
            .socket_dir(sockets.path())
            .serve(family.endpoints())
            .host(host.clone());
        let server = configure(builder).start().await.expect("server starts");
        let node = Node::connect(options.socket_dir(sockets.path()))
            .await
            .expect("connect");
        assert_eq!(
            node.versions().to_string(),
            family.versions().to_string(),
            "negotiated versions"
        );
        Fixture {
            node,
            host,
            family,
            mock: None,
            server: Some((server, sockets, sandbox)),
            #[cfg(feature = "host-process")]
            fake: None,
        }
    }

    /// Over the host-process backend, its Windows boundary the fake over a
    /// simulated host (HostProcess mode implements v1 only).
    #[cfg(feature = "host-process")]
    pub async fn host_process(family: Family, options: NodeOptions) -> Fixture {
        Self::host_process_seeded(family, options, None).await
    }

    /// Over the host-process backend, the host built from `seed`.
    #[cfg(feature = "host-process")]
    pub async fn host_process_seeded(
        family: Family,
        options: NodeOptions,
        seed: Option<&str>,
    ) -> Fixture {
        assert_eq!(family, Family::V1, "host-process mode speaks v1 only");
        let sandbox = tempfile::tempdir().expect("sandbox");
        let mut config = HostConfig::new(sandbox.path());
        config.seed = seed.map(|s| NodeSeed::from_toml_str(s).expect("valid seed"));
        let host = Host::new(config).expect("host");
        make_share_dirs(&host);
        let fake = std::sync::Arc::new(FakeWindows::new(host.clone()));
        let node = Node::host_process_with(fake.clone(), options);
        assert_eq!(node.versions().to_string(), family.versions().to_string());
        Fixture {
            node,
            host,
            family,
            mock: None,
            server: None,
            fake: Some((fake, sandbox)),
        }
    }

    /// The fake Windows boundary, on the host-process backend.
    #[cfg(feature = "host-process")]
    pub fn fake(&self) -> Option<&FakeWindows> {
        self.fake.as_ref().map(|(fake, _)| &**fake)
    }

    /// A second `Node` over the same backend with default options (its own
    /// SMB store): another driver process, or the same driver restarted.
    pub async fn another_node(&self) -> Node {
        self.another_node_with(NodeOptions::default()).await
    }

    /// A second `Node` over the same backend with `options`.
    pub async fn another_node_with(&self, options: NodeOptions) -> Node {
        match (&self.mock, &self.server) {
            (Some(mock), _) => MockNode::new(mock)
                .versions(self.family.versions())
                .options(options)
                .build()
                .expect("supported versions"),
            (None, Some((_, sockets, _))) => Node::connect(options.socket_dir(sockets.path()))
                .await
                .expect("connect"),
            #[cfg(feature = "host-process")]
            (None, None) if self.fake.is_some() => {
                let (fake, _) = self.fake.as_ref().expect("checked");
                Node::host_process_with(fake.clone(), options)
            }
            (None, None) => unreachable!("a fixture has a backend"),
        }
    }

    /// The same fixture, its host answering failures in `release`'s words.
    pub fn speaking(self, release: ProxyRelease) -> Fixture {
        {
            let mut node = self.host.lock();
            let config = node.smb.config();
            node.smb.set_config(SmbConfig { release, ..config });
        }
        self
    }

    /// Checks the node's invariants and stops the server.
    pub async fn finish(self) {
        if let Err(violations) = self.host.check_invariants() {
            panic!("invariants broken: {violations:#?}");
        }
        drop(self.node);
        if let Some((server, _sockets, _sandbox)) = self.server {
            server.shutdown().await.expect("clean shutdown");
        }
    }
}

/// Runs each scenario (`async fn(&Fixture)` in scope) on both backends and
/// the three version families (the v0.2 family answering as csi-proxy v0.2
/// does: `ProxyRelease::V0_2`), and at v1 on csi-proxy v1.1's texts:
/// `mock_v1::name`, `server_v0_2::name`, `mock_v1_on_1_1::name`, ...
#[macro_export]
macro_rules! node_tests {
    ($($name:ident),+ $(,)?) => {
        $crate::node_tests!(@one mock_v1, mock, V1, V1_3; $($name),+);
        $crate::node_tests!(@one mock_beta, mock, Beta, V1_3; $($name),+);
        $crate::node_tests!(@one mock_v0_2, mock, V0_2, V0_2; $($name),+);
        $crate::node_tests!(@one mock_v1_on_1_1, mock, V1, V1_1; $($name),+);
        #[cfg(unix)]
        $crate::node_tests!(@one server_v1, server, V1, V1_3; $($name),+);
        #[cfg(unix)]
        $crate::node_tests!(@one server_beta, server, Beta, V1_3; $($name),+);
        #[cfg(unix)]
        $crate::node_tests!(@one server_v0_2, server, V0_2, V0_2; $($name),+);
        #[cfg(unix)]
        $crate::node_tests!(@one server_v1_on_1_1, server, V1, V1_1; $($name),+);
        #[cfg(feature = "host-process")]
        $crate::node_tests!(@one host_process_v1, host_process, V1, V1_3; $($name),+);
    };
    (@one $module:ident, $backend:ident, $family:ident, $release:ident; $($name:ident),+) => {
        mod $module {
            $(
                #[tokio::test]
                async fn $name() {
                    let f = $crate::node_support::Fixture::$backend(
                        $crate::node_support::Family::$family,
                        csi_proxy_client::node::NodeOptions::default(),
                    )
                    .await
                    .speaking(csi_proxy_client::host::ProxyRelease::$release);
                    super::$name(&f).await;
                    f.finish().await;
                }
            )+
        }
    };
}

/// The OS disk of a seeded node (disk 0: EFI and the `C:` volume), for
/// seeds that add their own data disks.
pub const OS_DISK: &str = r#"
[[disks]]
number = 0
location = "Integrated : Adapter 0 : Port 0 : Target 0 : LUN 0"
size = 137438953472
partition_style = "gpt"
system = true
[[volumes]]
disk = 0
kind = "efi"
size = 104857600
fs = "fat32"
system = true
[[volumes]]
disk = 0
fs = "ntfs"
drive_letter = "C"
system = true
"#;

/// splitmix64: a small, seeded source of choices.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize]
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// What the first bytes of a partition hold: ext4's magic at 0x438,
/// BitLocker's or NTFS's OEM id at 3.
pub fn shows(bytes: &[u8]) -> &'static str {
    if bytes[0x438..0x43A] == [0x53, 0xEF] {
        "ext4"
    } else if &bytes[3..11] == b"-FVE-FS-" {
        "bitlocker"
    } else if &bytes[3..11] == b"NTFS    " {
        "ntfs"
    } else {
        "nothing"
    }
}

/// The bytes of disk `n` at its first partition with a volume.
pub fn first_partition_bytes(host: &Host, n: u32) -> Vec<u8> {
    let node = host.lock();
    let disk = node.storage.disk(n).expect("disk");
    let offset = disk
        .partitions
        .iter()
        .filter(|p| p.volume.is_some())
        .map(|p| p.offset)
        .min()
        .unwrap_or(0);
    node.storage.read(n, offset, 4096).expect("read")
}

/// Stages disk 1 at `path` as kubelet does: retrying what is retryable
/// (UNAVAILABLE, no volume yet) once a second, for up to a minute; the
/// last answer.
pub async fn kubelet_stage(node: &Node, path: &str) -> Result<(), csi_proxy_client::Error> {
    use csi_proxy_client::{Error, ErrorKind};
    let mut last = Ok(());
    for _ in 0..60 {
        last = node.stage_disk(1u32, path).await.map(|_| ());
        match &last {
            Err(Error::NoVolume { .. }) => {}
            Err(e) if e.kind() == ErrorKind::Unavailable => {}
            _ => break,
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    last
}

/// Asserts that disk 1 still holds its ext4 partition and that no
/// `FormatVolume` was sent; `why` tells what the stage answered.
pub fn assert_ext4_not_formatted(f: &Fixture, mock: &MockHost, why: &str) {
    assert_eq!(shows(&first_partition_bytes(&f.host, 1)), "ext4", "{why}");
    assert_eq!(mock.calls_of("FormatVolume").len(), 0, "{why}");
}

/// As [`assert_ext4_not_formatted`], and no `PartitionDisk` was sent.
pub fn assert_ext4_untouched(f: &Fixture, mock: &MockHost, why: &str) {
    assert_ext4_not_formatted(f, mock, why);
    assert_eq!(mock.calls_of("PartitionDisk").len(), 0, "{why}");
}

/// A seed: the OS disk and a blank disk 1, offline, whose volumes (once it
/// has some) are listed `arrive_ms` after each online.
pub fn blank_offline_disk_arriving(arrive_ms: u64) -> String {
    format!(
        "{OS_DISK}
[[disks]]
number = 1
location = \"Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1\"
size = 34359738368
online = false
volumes_arrive_ms = {arrive_ms}
"
    )
}

/// The pod's file `data` in host directory `dir`, if it is there.
pub fn file_at(f: &Fixture, dir: &str) -> Option<Vec<u8>> {
    f.host.read_file(&format!(r"{dir}\data")).ok()
}

/// Stages disk 1 at [`STAGING`] (formatted once) and writes the pod's
/// file `data` on it; the mock's call log is cleared afterwards.
pub async fn staged_with_pod_file(f: &Fixture) {
    f.node.stage_disk(1u32, STAGING).await.expect("first stage");
    f.host
        .write_file(&format!(r"{STAGING_C}\data"), b"pod data")
        .expect("pod writes");
    let mock = f.mock.as_ref().unwrap();
    assert_eq!(mock.calls_of("FormatVolume").len(), 1);
    mock.clear_calls();
}
