//! Disk discovery on nodes laid out as the clouds lay them out
//! (`host::Layout`): each cloud's selector finds and stages its disk, no
//! selector returns the OS disk or the temporary disk, no node-layer call
//! changes the OS disk, `Node::disks` lists what the node shows, and
//! read-only and multi-partition disks. Each scenario runs over
//! `MockHost` (`mock::`), the reference server serving every version
//! (`server::`) and HostProcess mode over the fake (`host_process::`).
#![cfg(all(feature = "mock", feature = "host-process"))]

use std::sync::Arc;
use std::time::Duration;

use csi_proxy_client::host::{Host, HostConfig, Layout, NodeSeed, Snapshot};
use csi_proxy_client::host_process::FakeWindows;
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::MockNode;
use csi_proxy_client::node::{DiskSelector, Node, NodeOptions};
use csi_proxy_client::server::Server;
use csi_proxy_client::{Error, ErrorKind};
use tempfile::TempDir;

const STAGING: &str =
    r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\disk.csi.example.com\pv1\globalmount";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Mock,
    // The server scenarios listen on a Unix socket: not built on Windows.
    #[cfg_attr(windows, allow(dead_code))]
    Server,
    HostProcess,
}

struct Fixture {
    node: Node,
    host: Host,
    backend: Backend,
    mock: Option<MockHost>,
    _keep: Vec<TempDir>,
    server: Option<Server>,
}

fn options() -> NodeOptions {
    NodeOptions::default().find_disk_timeout(Duration::ZERO)
}

impl Fixture {
    async fn new(backend: Backend, seed: Option<NodeSeed>) -> Fixture {
        match backend {
            Backend::Mock => {
                let mut builder = MockHost::builder();
                if let Some(seed) = seed {
                    builder = builder.seed(seed);
                }
                let mock = builder.build().expect("mock host");
                let node = MockNode::new(&mock).options(options()).build().unwrap();
                Fixture {
                    node,
                    host: mock.host().clone(),
                    backend,
                    mock: Some(mock),
                    _keep: Vec::new(),
                    server: None,
                }
            }
            Backend::Server => {
                let sandbox = tempfile::tempdir().unwrap();
                let sockets = tempfile::tempdir().unwrap();
                let mut config = HostConfig::new(sandbox.path());
                config.seed = seed;
                let host = Host::new(config).unwrap();
                let server = Server::builder()
                    .socket_dir(sockets.path())
                    .host(host.clone())
                    .start()
                    .await
                    .expect("server starts");
                let node = Node::connect(options().socket_dir(sockets.path()))
                    .await
                    .unwrap();
                Fixture {
                    node,
                    host,
                    backend,
                    mock: None,
                    _keep: vec![sandbox, sockets],
                    server: Some(server),
                }
            }
            Backend::HostProcess => {
                let sandbox = tempfile::tempdir().unwrap();
                let mut config = HostConfig::new(sandbox.path());
                config.seed = seed;
                let host = Host::new(config).unwrap();
                let fake = Arc::new(FakeWindows::new(host.clone()));
                let node = Node::host_process_with(fake, options());
                Fixture {
                    node,
                    host,
                    backend,
                    mock: None,
                    _keep: vec![sandbox],
                    server: None,
                }
            }
        }
    }

    async fn layout(backend: Backend, layout: Layout) -> Fixture {
        Self::new(backend, layout.seed()).await
    }

    async fn finish(self) {
        if let Err(violations) = self.host.check_invariants() {
            panic!("invariants broken: {violations:#?}");
        }
        drop(self.node);
        if let Some(server) = self.server {
            server.shutdown().await.expect("clean shutdown");
        }
    }
}

macro_rules! on_every_backend {
    ($($name:ident),+ $(,)?) => {
        on_every_backend!(@one mock, Mock; $($name),+);
        #[cfg(unix)]
        on_every_backend!(@one server, Server; $($name),+);
        on_every_backend!(@one host_process, HostProcess; $($name),+);
    };
    (@one $module:ident, $backend:ident; $($name:ident),+) => {
        mod $module {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::Backend::$backend).await;
                }
            )+
        }
    };
}

on_every_backend![
    azure_lun_0_stages_the_data_disk_never_the_os_disk,
    no_node_call_changes_the_os_disk,
    each_cloud_finds_and_stages_its_disk,
    disks_lists_every_disk_with_its_facts,
    a_read_only_blank_disk_is_refused_or_made_writable,
    an_mbr_image_stages_its_data_partition_not_system_reserved,
    an_unformatted_gpt_layout_stages_its_data_partition_not_efi,
    a_read_only_partitioned_disk_is_refused_or_made_writable,
];

// Mock and server are proxy mode: no partition type is visible there
// (`Node::stage_disk`), so this one runs over the HostProcess fake only.
#[tokio::test]
async fn host_process_finds_a_data_partition_smaller_than_system_ones_by_type() {
    a_small_data_partition_is_found_by_type(Backend::HostProcess).await;
}

/// The OS disk as the host holds it: the disk, its volumes, and every
/// mount point of those volumes.
fn os_disk_state(snapshot: &Snapshot) -> String {
    let disk = snapshot.disk(0).expect("the OS disk");
    let volumes: Vec<_> = snapshot.volumes.iter().filter(|v| v.disk == 0).collect();
    let mounts: Vec<_> = snapshot
        .mount_points
        .iter()
        .filter(|m| volumes.iter().any(|v| format!("{m:?}").contains(&v.id)))
        .collect();
    format!("{disk:?}\n{volumes:?}\n{mounts:?}")
}

/// The calls the mock recorded that change a disk or volume, naming disk
/// 0 or one of its volumes.
fn changing_calls_on_os_disk(f: &Fixture, os_volumes: &[String]) -> Vec<String> {
    use csi_proxy_client::{disk::v1 as d, volume::v1 as v};
    let Some(mock) = &f.mock else {
        return Vec::new();
    };
    let on_os = |id: &str| os_volumes.iter().any(|o| o.eq_ignore_ascii_case(id));
    mock.calls()
        .iter()
        .filter(|c| match c.rpc.name {
            "PartitionDisk" => c
                .request::<d::PartitionDiskRequest>()
                .is_some_and(|r| r.disk_number == 0),
            "SetDiskState" => c
                .request::<d::SetDiskStateRequest>()
                .is_some_and(|r| r.disk_number == 0),
            "FormatVolume" => c
                .request::<v::FormatVolumeRequest>()
                .is_some_and(|r| on_os(&r.volume_id)),
            "MountVolume" => c
                .request::<v::MountVolumeRequest>()
                .is_some_and(|r| on_os(&r.volume_id)),
            "UnmountVolume" => c
                .request::<v::UnmountVolumeRequest>()
                .is_some_and(|r| on_os(&r.volume_id)),
            "ResizeVolume" => c
                .request::<v::ResizeVolumeRequest>()
                .is_some_and(|r| on_os(&r.volume_id)),
            _ => false,
        })
        .map(|c| c.rpc.path())
        .collect()
}

fn os_volumes(f: &Fixture) -> Vec<String> {
    f.host
        .snapshot()
        .volumes
        .iter()
        .filter(|v| v.disk == 0)
        .map(|v| v.id.clone())
        .collect()
}

async fn azure_lun_0_stages_the_data_disk_never_the_os_disk(backend: Backend) {
    let f = Fixture::layout(backend, Layout::Azure).await;
    let before = os_disk_state(&f.host.snapshot());
    for selector in [DiskSelector::Lun(0), DiskSelector::AzureLun(0)] {
        let disk = f.node.find_disk(selector.clone()).await.unwrap();
        assert_eq!(
            disk.number, 2,
            "{selector}: the data disk at adapter 3, LUN 0"
        );
    }
    // LUN 1 is the resource disk at adapter 0 and the data disk at adapter 3.
    let disk = f.node.find_disk(DiskSelector::Lun(1)).await.unwrap();
    assert_eq!(disk.number, 3, "never the temporary disk");
    let disk = f.node.find_disk(DiskSelector::AzureLun(0)).await.unwrap();
    let id = f.node.stage_disk(&disk, STAGING).await.unwrap();
    let snapshot = f.host.snapshot();
    assert_eq!(snapshot.volume(&id).unwrap().disk, 2);
    assert_eq!(os_disk_state(&snapshot), before);
    assert_eq!(
        changing_calls_on_os_disk(&f, &os_volumes(&f)),
        Vec::<String>::new()
    );
    f.finish().await;
}

async fn no_node_call_changes_the_os_disk(backend: Backend) {
    let f = Fixture::layout(backend, Layout::Default).await;
    let volumes = os_volumes(&f);
    // A path someone mounted the OS disk's EFI volume at.
    let efi = volumes[0].clone();
    let elsewhere = r"C:\var\lib\kubelet\plugins\efi";
    f.node.ensure_dir(elsewhere).await.unwrap();
    f.host
        .run(|s| s.mount_volume(&efi, elsewhere))
        .expect("mounted behind the node's back");
    let before = os_disk_state(&f.host.snapshot());
    if let Some(mock) = &f.mock {
        mock.clear_calls();
    }
    for selector in [DiskSelector::Lun(0), DiskSelector::Number(0)] {
        let err = f.node.find_disk(selector).await.unwrap_err();
        let Error::DiskNotFound { seen, .. } = &err else {
            panic!("{err}");
        };
        assert!(
            seen.contains("disk 0 (") && seen.contains("OS disk"),
            "{seen}"
        );
    }
    let refused = |e: Error| {
        assert!(matches!(e, Error::OsDisk { disk: 0, .. }), "{e}");
        assert_eq!(e.kind(), ErrorKind::FailedPrecondition);
        assert!(e.to_string().contains("disk 0"), "{e}");
    };
    refused(f.node.stage_disk(0u32, STAGING).await.unwrap_err());
    refused(f.node.unstage(elsewhere).await.unwrap_err());
    refused(f.node.unstage(elsewhere).offline(true).await.unwrap_err());
    refused(f.node.expand(elsewhere).await.unwrap_err());
    assert_eq!(os_disk_state(&f.host.snapshot()), before);
    assert_eq!(
        changing_calls_on_os_disk(&f, &volumes),
        Vec::<String>::new()
    );
    f.host
        .run(|s| s.unmount_volume(&efi, elsewhere))
        .expect("unmounted");
    f.finish().await;
}

async fn each_cloud_finds_and_stages_its_disk(backend: Backend) {
    let cases: Vec<(Layout, DiskSelector, Option<u32>)> = vec![
        (Layout::Azure, DiskSelector::AzureLun(1), Some(3)),
        // The NVMe namespace is in the device path, which only HostProcess
        // mode reads: through the proxy an Azure NVMe disk has no LUN.
        (
            Layout::AzureNvme,
            DiskSelector::AzureLun(0),
            (backend == Backend::HostProcess).then_some(1),
        ),
        (
            Layout::AzureNvme,
            DiskSelector::AzureLun(1),
            (backend == Backend::HostProcess).then_some(2),
        ),
        (
            Layout::Gce,
            DiskSelector::GceDeviceName("data-disk-1".into()),
            Some(1),
        ),
        (
            Layout::Gce,
            DiskSelector::GceNvmeNamespace(0x10CC_9636_B6E3_CE3B),
            Some(2),
        ),
        (
            Layout::Aws,
            DiskSelector::EbsVolumeId("vol-0123456789abcdef0".into()),
            Some(1),
        ),
        (
            Layout::Aws,
            DiskSelector::EbsVolumeId("vol0123456789abcdef0".into()),
            Some(1),
        ),
        (
            Layout::Vsphere,
            DiskSelector::VsphereUuid("6000C29A-98D0-5E38-4A43-F0EF189AAF5A".into()),
            Some(1),
        ),
        (
            Layout::Gce,
            DiskSelector::matching("64 GiB", |d| d.size == Some(64 << 30)),
            Some(2),
        ),
    ];
    for (layout, selector, expected) in cases {
        let f = Fixture::layout(backend, layout).await;
        let found = f.node.find_disk(selector.clone()).await;
        match expected {
            Some(n) => {
                let disk = found.unwrap_or_else(|e| panic!("{layout} {selector}: {e}"));
                assert_eq!(disk.number, n, "{layout} {selector}");
                let id = f.node.stage_disk(&disk, STAGING).await.unwrap();
                assert_eq!(f.host.snapshot().volume(&id).unwrap().disk, n);
                f.node.unstage(STAGING).await.unwrap();
            }
            None => assert!(
                matches!(found, Err(Error::DiskNotFound { .. })),
                "{layout} {selector}: {found:?}"
            ),
        }
        if layout == Layout::Vsphere && f.backend == Backend::Mock {
            let serial = f.host.run(|s| s.system.bios_serial_number());
            assert!(serial.unwrap().starts_with("VMware-42 02 e9 7e"));
        }
        f.finish().await;
    }
}

async fn disks_lists_every_disk_with_its_facts(backend: Backend) {
    let f = Fixture::layout(backend, Layout::Azure).await;
    let disks = f.node.disks().await.unwrap();
    let numbers: Vec<u32> = disks.iter().map(|d| d.number).collect();
    assert_eq!(numbers, [0, 1, 2, 3]);
    let hp = backend == Backend::HostProcess;
    let os = &disks[0];
    assert_eq!(os.os_disk, Some(true));
    assert_eq!((os.adapter, os.target, os.lun), (Some(0), Some(0), Some(0)));
    assert_eq!(os.size, Some(128 << 30));
    assert_eq!(os.online, Some(true));
    assert!(!os.selectable());
    let temporary = &disks[1];
    assert!(temporary.temporary);
    assert_eq!(temporary.os_disk, Some(false));
    let data = &disks[2];
    assert_eq!((data.adapter, data.lun), (Some(3), Some(0)));
    assert!(!data.temporary && data.selectable());
    assert!(data.page83.as_deref().is_some_and(|p| !p.is_empty()));
    assert_eq!(
        data.read_only,
        hp.then_some(false),
        "only HostProcess mode can tell"
    );
    assert_eq!(
        data.partition_style,
        hp.then_some(csi_proxy_client::node::PartitionStyle::Raw)
    );
    assert_eq!(data.nvme_namespace, None);
    f.finish().await;

    let f = Fixture::layout(backend, Layout::AzureNvme).await;
    let disks = f.node.disks().await.unwrap();
    assert_eq!(disks[2].lun, None);
    assert_eq!(disks[2].adapter, Some(2));
    assert_eq!(disks[2].nvme_namespace, hp.then_some(2));
    f.finish().await;
}

async fn a_read_only_blank_disk_is_refused_or_made_writable(backend: Backend) {
    let f = Fixture::layout(backend, Layout::Default).await;
    f.host.set_disk_read_only(1, true).unwrap();
    if backend == Backend::HostProcess {
        // Online and read-only: made so on purpose (a SAN policy leaves a
        // disk offline too), never made writable.
        let err = f.node.stage_disk(1u32, STAGING).await.unwrap_err();
        assert!(matches!(err, Error::ReadOnlyDisk { disk: 1, .. }), "{err}");
        assert!(f.host.snapshot().disk(1).unwrap().is_read_only);
        // Offline and read-only, as the SAN policy leaves a new disk.
        f.host.set_disk_offline(1, true).unwrap();
    }
    let staged = f.node.stage_disk(1u32, STAGING).await;
    if backend == Backend::HostProcess {
        let id = staged.unwrap();
        let snapshot = f.host.snapshot();
        assert!(!snapshot.disk(1).unwrap().is_read_only);
        assert_eq!(snapshot.volume(&id).unwrap().disk, 1);
    } else {
        let err = staged.unwrap_err();
        assert!(matches!(err, Error::ReadOnlyDisk { disk: 1, .. }), "{err}");
        assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
        assert!(err.to_string().contains("SAN policy"), "{err}");
        assert!(f.host.snapshot().disk(1).unwrap().is_read_only);
    }
    f.finish().await;
}

/// The OS disk at adapter 0 LUN 0 (`C:`) of the seeds below.
const OS_DISK: &str = r#"
[[disks]]
number = 0
location = "Integrated : Adapter 0 : Port 0 : Target 0 : LUN 0"
size = 68719476736
partition_style = "gpt"
system = true

[[volumes]]
disk = 0
fs = "ntfs"
drive_letter = "C"
system = true
"#;

/// A node with the OS disk, then `data_disks`.
fn with_os_disk(data_disks: &str) -> NodeSeed {
    NodeSeed::from_toml_str(&format!("{OS_DISK}{data_disks}")).unwrap()
}

const MBR_IMAGE: &str = r#"
[[disks]]
number = 1
location = "Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1"
size = 8589934592
partition_style = "mbr"

[[volumes]]
disk = 1
kind = "system_reserved"
size = 524288000
fs = "ntfs"

[[volumes]]
disk = 1
fs = "ntfs"
"#;

async fn an_mbr_image_stages_its_data_partition_not_system_reserved(backend: Backend) {
    let seed = with_os_disk(MBR_IMAGE);
    let f = Fixture::new(backend, Some(seed)).await;
    let snapshot = f.host.snapshot();
    let mut volumes: Vec<_> = snapshot.volumes.iter().filter(|v| v.disk == 1).collect();
    volumes.sort_by_key(|v| v.partition);
    let data = volumes[1].id.clone();
    let disk = f.node.find_disk(DiskSelector::Lun(1)).await.unwrap();
    let id = f.node.stage_disk(&disk, STAGING).await.unwrap();
    assert_eq!(
        id, data,
        "the data partition, not the 500 MiB System Reserved one"
    );
    if let Some(mock) = &f.mock {
        assert!(mock.calls_of("FormatVolume").is_empty());
    }
    f.finish().await;
}

/// Disk 1 laid out as Windows lays out a GPT system disk (EFI, MSR, basic
/// data, recovery), nothing formatted yet: the EFI partition comes first.
const UNFORMATTED_GPT: &str = r#"
[[disks]]
number = 1
location = "Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1"
size = 8589934592
partition_style = "gpt"
auto_msr = false

[[volumes]]
disk = 1
kind = "efi"
size = 104857600

[[volumes]]
disk = 1
kind = "msr"
size = 16777216

[[volumes]]
disk = 1
kind = "basic"
size = 6442450944

[[volumes]]
disk = 1
kind = "recovery"
size = 1073741824
"#;

async fn an_unformatted_gpt_layout_stages_its_data_partition_not_efi(backend: Backend) {
    let seed = with_os_disk(UNFORMATTED_GPT);
    let f = Fixture::new(backend, Some(seed)).await;
    let snapshot = f.host.snapshot();
    let mut volumes: Vec<_> = snapshot.volumes.iter().filter(|v| v.disk == 1).collect();
    volumes.sort_by_key(|v| v.partition);
    // EFI (1), MSR (2, no volume), basic data (3), recovery (4).
    assert_eq!(volumes.len(), 3);
    let (efi, data) = (volumes[0].id.clone(), volumes[1].id.clone());
    let disk = f.node.find_disk(DiskSelector::Lun(1)).await.unwrap();
    let staged = f.node.stage_disk(&disk, STAGING).await;
    if backend == Backend::HostProcess {
        // Its sectors read blank: the data partition is formatted.
        assert_eq!(
            staged.unwrap(),
            data,
            "the basic data partition, not the EFI one"
        );
    } else {
        // Through the proxy a partition this node did not create may hold
        // data (docs/safety.md): refused, naming the data partition.
        let err = staged.unwrap_err();
        assert!(
            matches!(&err, Error::MayHoldData { disk: 1, volume, .. } if *volume == data),
            "{err}"
        );
    }
    let after = f.host.snapshot();
    assert!(
        !after.volume(&efi).unwrap().fs.is_formatted(),
        "the EFI partition was formatted"
    );
    f.finish().await;
}

/// An MBR image whose data partition is smaller than its System Reserved
/// and hidden recovery (0x27) partitions beside it.
const SMALL_MBR_DATA: &str = r#"
[[disks]]
number = 1
location = "Integrated : Adapter 3 : Port 0 : Target 0 : LUN 1"
size = 8589934592
partition_style = "mbr"

[[volumes]]
disk = 1
kind = "system_reserved"
size = 524288000
fs = "ntfs"

[[volumes]]
disk = 1
size = 314572800
fs = "ntfs"

[[volumes]]
disk = 1
kind = "recovery"
size = 629145600
fs = "ntfs"
"#;

async fn a_small_data_partition_is_found_by_type(backend: Backend) {
    let seed = with_os_disk(SMALL_MBR_DATA);
    let f = Fixture::new(backend, Some(seed)).await;
    let snapshot = f.host.snapshot();
    let mut volumes: Vec<_> = snapshot.volumes.iter().filter(|v| v.disk == 1).collect();
    volumes.sort_by_key(|v| v.partition);
    let data = volumes[1].id.clone();
    let disk = f.node.find_disk(DiskSelector::Lun(1)).await.unwrap();
    let id = f.node.stage_disk(&disk, STAGING).await.unwrap();
    assert_eq!(
        id, data,
        "the 300 MiB data partition, not System Reserved (active) or recovery (0x27)"
    );
    f.finish().await;
}

/// A read-only disk that already has its (unformatted) data partition:
/// the first write is the format, which `MSFT_Volume.Format` refuses with
/// 43006 (not the disk methods' 41002). Through the proxy that is
/// `Error::ReadOnlyDisk` too, not INTERNAL; HostProcess mode makes the
/// disk writable first.
///
/// Through the proxy only a partition the node created is formatted, so
/// on MockHost the node partitions a blank disk itself (its first format
/// failing), and the disk turns read-only before the stage is retried; on
/// the server a partition it did not create is refused before any write.
async fn a_read_only_partitioned_disk_is_refused_or_made_writable(backend: Backend) {
    let seed = match backend {
        Backend::Mock => None,
        _ => Some(with_os_disk(UNFORMATTED_GPT)),
    };
    let f = Fixture::new(backend, seed).await;
    if let Some(mock) = &f.mock {
        mock.fail_next("FormatVolume", tonic::Code::Internal, "interrupted");
        f.node.stage_disk(1u32, STAGING).await.unwrap_err();
    }
    f.host.set_disk_read_only(1, true).unwrap();
    if backend == Backend::HostProcess {
        // As the SAN policy leaves a new disk: offline too.
        f.host.set_disk_offline(1, true).unwrap();
    }
    let disk = f.node.find_disk(DiskSelector::Lun(1)).await.unwrap();
    let staged = f.node.stage_disk(&disk, STAGING).await;
    match backend {
        Backend::HostProcess => {
            staged.unwrap();
            assert!(!f.host.snapshot().disk(1).unwrap().is_read_only);
        }
        Backend::Mock => {
            let err = staged.unwrap_err();
            assert!(matches!(err, Error::ReadOnlyDisk { disk: 1, .. }), "{err}");
            assert!(err.to_string().contains("43006"), "{err}");
        }
        Backend::Server => {
            let err = staged.unwrap_err();
            assert!(matches!(err, Error::MayHoldData { disk: 1, .. }), "{err}");
        }
    }
    f.finish().await;
}
