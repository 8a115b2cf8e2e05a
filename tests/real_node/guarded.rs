//! The real-node suite's one door to changing calls. A test gets a disk
//! only as an [`OwnedDisk`] (by its role in the workspace manifest, found
//! by its VHDX file), and changes it only through [`GuardedNode`] or
//! [`OwnedHost`], which ask WMI again right before each changing call
//! whether that disk number is still the workspace's VHDX and not a system
//! or boot disk (disk numbers move when disks come and go), and check each
//! path and share against the manifest. The rules themselves are in
//! `guard.rs`; `guard::tests::only_the_guarded_module_makes_changing_calls`
//! keeps every other file of the suite from calling around this one.

use std::path::Path;

use csi_proxy_client::Error;
use csi_proxy_client::host_process::boundary::DiskObject;
use csi_proxy_client::host_process::windows::LocalHost;
use csi_proxy_client::host_process::{Failure, MethodResult, WindowsHost};
use csi_proxy_client::node::{
    Disk, DiskInfo, DiskSelector, IscsiTarget, MountState, Node, NodeOptions, ShareStats,
    SmbCredentials, VolumeUsage,
};

use super::guard::{self, DiskFacts, IscsiEntry, Manifest};

/// How the suite reaches the node (`CSI_REAL_NODE_MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `host-process` (the default): the crate's own WMI and Win32 calls.
    HostProcess,
    /// `proxy`: a csi-proxy service on this machine, over its pipes.
    Proxy,
}

impl Mode {
    fn from_env() -> Mode {
        match std::env::var("CSI_REAL_NODE_MODE").as_deref() {
            Ok("proxy") => Mode::Proxy,
            Ok("host-process") | Err(_) => Mode::HostProcess,
            Ok(other) => panic!("CSI_REAL_NODE_MODE={other}: expected host-process or proxy"),
        }
    }
}

/// The workspace the workflow made, its manifest checked against its
/// marker.
pub struct Workspace {
    manifest: Manifest,
}

fn facts(d: &DiskObject) -> DiskFacts {
    DiskFacts {
        number: d.number,
        location: d.location.clone(),
        // A flag WMI answered Null for counts as set: the guard never
        // takes an unknown for "not the system disk".
        is_system: d.is_system.unwrap_or(true),
        is_boot: d.is_boot.unwrap_or(true),
    }
}

fn live_disks() -> Vec<DiskFacts> {
    LocalHost
        .disks()
        .expect("MSFT_Disk")
        .iter()
        .map(facts)
        .collect()
}

impl Workspace {
    /// Opens `$CSI_REAL_NODE_DIR`; panics, changing nothing, unless its
    /// manifest and marker agree and name that very directory.
    pub fn open() -> Workspace {
        let dir = std::env::var(guard::DIR_VAR).unwrap_or_else(|_| {
            panic!(
                "set {} to the directory scripts/windows/new-test-node.ps1 made",
                guard::DIR_VAR
            )
        });
        Workspace::open_at(&dir)
    }

    /// Opens the workspace at `dir`, as [`Workspace::open`].
    pub fn open_at(dir: &str) -> Workspace {
        let read = |name: &str| {
            std::fs::read_to_string(Path::new(dir).join(name))
                .unwrap_or_else(|e| panic!("{dir}\\{name}: {e}"))
        };
        let manifest =
            guard::parse_manifest(&read(guard::MANIFEST)).unwrap_or_else(|r| panic!("{r}"));
        assert_eq!(
            guard::normalize(dir).as_deref(),
            Some(manifest.root.as_str()),
            "the manifest in {dir} names another directory"
        );
        guard::check_marker(&manifest, &read(guard::MARKER)).unwrap_or_else(|r| panic!("{r}"));
        Workspace { manifest }
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The disk made for `role`, found by its VHDX file.
    pub fn disk(&self, role: &str) -> OwnedDisk {
        let number = guard::disk_of_role(&self.manifest, &live_disks(), role)
            .unwrap_or_else(|r| panic!("{r}"));
        OwnedDisk {
            number,
            role: role.to_string(),
        }
    }

    /// Disk `disk` is still the workspace's disk of its role, now.
    fn recheck(&self, disk: &OwnedDisk) {
        let now = guard::disk_of_role(&self.manifest, &live_disks(), &disk.role)
            .unwrap_or_else(|r| panic!("{r}"));
        assert_eq!(
            now, disk.number,
            "the {} disk moved from number {} to {now}",
            disk.role, disk.number
        );
    }

    /// A disk the node layer reports for an iSCSI login to the manifest's
    /// target: it must be one of that target's disks (the target was made
    /// over a VHDX in the workspace) and not a system or boot disk.
    fn check_iscsi_disk(&self, number: u32) {
        let IscsiEntry::Target { iqn, .. } = &self.manifest.iscsi else {
            panic!("no iSCSI target in the manifest");
        };
        let of_target = LocalHost
            .iscsi_target_disks(iqn)
            .expect("the target's disks");
        assert!(
            of_target.contains(&number),
            "disk {number} is not a disk of {iqn}: {of_target:?}"
        );
        let disk = LocalHost
            .disks()
            .unwrap()
            .into_iter()
            .find(|d| d.number == number)
            .unwrap_or_else(|| panic!("no disk {number}"));
        assert!(
            disk.is_system == Some(false) && disk.is_boot == Some(false),
            "disk {number} is a system or boot disk"
        );
    }

    /// The volume mounted at `path`, if any, lies on a disk of the
    /// workspace (a VHDX of the manifest, or a disk of its iSCSI target).
    fn check_volume_at(&self, path: &str) {
        let Ok(volume) = LocalHost.volume_name_for_mount_point(path) else {
            return; // nothing mounted: no disk to harm
        };
        for p in LocalHost
            .volume_partitions(&volume)
            .expect("the volume's partitions")
        {
            let disks = live_disks();
            let disk = disks
                .iter()
                .find(|d| d.number == p.disk_number)
                .expect("its disk");
            if guard::check_disk(&self.manifest, disk).is_err() {
                self.check_iscsi_disk(p.disk_number);
            }
        }
    }

    /// `name` below the suite's plugin directory (a staging path).
    pub fn staging(&self, name: &str) -> String {
        self.below("plugins", name)
    }

    /// `name` below the suite's pod directory (a publish target).
    pub fn target(&self, name: &str) -> String {
        self.below("pods", name)
    }

    fn below(&self, kind: &str, name: &str) -> String {
        let dir = self
            .manifest
            .kubelet
            .iter()
            .find(|d| d.contains(&format!(r"\{kind}\")))
            .unwrap_or_else(|| panic!("no kubelet {kind} directory in the manifest"));
        let path = format!(r"{dir}\{name}");
        self.path(&path);
        path
    }

    fn path(&self, path: &str) {
        guard::check_path(&self.manifest, path).unwrap_or_else(|r| panic!("{r}"));
    }

    /// The share's first account.
    pub fn smb_credentials(&self) -> SmbCredentials {
        let smb = self
            .manifest
            .smb
            .as_ref()
            .expect("no SMB share in the manifest");
        SmbCredentials::new(smb.user.clone(), smb_password())
    }
}

/// The password of both share accounts (`CSI_REAL_NODE_SMB_PASSWORD`;
/// the workflow masks it in the log).
pub fn smb_password() -> String {
    std::env::var("CSI_REAL_NODE_SMB_PASSWORD")
        .expect("set CSI_REAL_NODE_SMB_PASSWORD to the share accounts' password")
}

/// A disk of the workspace, as its role found it.
#[derive(Debug)]
pub struct OwnedDisk {
    number: u32,
    role: String,
}

impl OwnedDisk {
    /// Its number when it was found (for reads and assertions).
    pub fn number(&self) -> u32 {
        self.number
    }
}

/// The node under test, in the mode `CSI_REAL_NODE_MODE` says.
pub struct GuardedNode<'w> {
    node: Node,
    ws: &'w Workspace,
    mode: Mode,
}

impl<'w> GuardedNode<'w> {
    /// Connects (iSCSI asked for too).
    pub async fn open(ws: &'w Workspace) -> GuardedNode<'w> {
        let mode = Mode::from_env();
        let options = NodeOptions::default().iscsi(true);
        let node = match mode {
            Mode::HostProcess => Node::host_process(options).expect("HostProcess mode"),
            Mode::Proxy => Node::connect(options)
                .await
                .expect("the csi-proxy service's pipes"),
        };
        GuardedNode { node, ws, mode }
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The node's reads (the node itself never leaves this module).
    pub fn node(&self) -> Reads<'_> {
        Reads(&self.node)
    }

    /// `find_disk` by the owned disk's number.
    pub async fn find_disk(&self, disk: &OwnedDisk) -> Result<Disk, Error> {
        self.node.find_disk(DiskSelector::Number(disk.number)).await
    }

    /// `stage_disk` of an owned disk at a path of the suite.
    pub async fn stage_disk(&self, disk: &OwnedDisk, path: &str) -> Result<String, Error> {
        self.ws.path(path);
        self.ws.recheck(disk);
        self.node.stage_disk(disk.number, path).await
    }

    /// `stage_disk` of a disk an iSCSI login of the manifest's target gave.
    pub async fn stage_iscsi_disk(&self, number: u32, path: &str) -> Result<String, Error> {
        self.ws.path(path);
        self.ws.check_iscsi_disk(number);
        self.node.stage_disk(number, path).await
    }

    /// `publish` between paths of the suite.
    pub async fn publish(&self, staging: &str, target: &str) -> Result<(), Error> {
        self.ws.path(staging);
        self.ws.path(target);
        self.node.publish(staging, target).await
    }

    /// `unpublish` of a path of the suite.
    pub async fn unpublish(&self, target: &str) -> Result<(), Error> {
        self.ws.path(target);
        self.node.unpublish(target).await
    }

    /// `unstage` of a path of the suite (a disk's volume, whose disk must
    /// be the workspace's, or a share's link); with `offline`, a disk is
    /// taken offline too. The state found there, as `Node::unstage` says.
    pub async fn unstage(&self, path: &str, offline: bool) -> Result<MountState, Error> {
        self.ws.path(path);
        self.ws.check_volume_at(path);
        self.node.unstage(path).offline(offline).await
    }

    /// `expand` of a path of the suite whose volume is the workspace's.
    pub async fn expand(&self, path: &str) -> Result<u64, Error> {
        self.ws.path(path);
        self.ws.check_volume_at(path);
        self.node.expand(path).await
    }

    /// `smb_stage` of the manifest's share (or a directory below it).
    pub async fn smb_stage(
        &self,
        remote: &str,
        path: &str,
        credentials: &SmbCredentials,
    ) -> Result<(), Error> {
        let smb = self
            .ws
            .manifest
            .smb
            .as_ref()
            .expect("no SMB share in the manifest");
        let remote_lower = remote.to_lowercase();
        assert!(
            [&smb.share, &smb.second_share]
                .iter()
                .any(|s| remote_lower.starts_with(&s.to_lowercase())),
            "{remote} is not on the manifest's shares"
        );
        self.ws.path(path);
        self.node.smb_stage(remote, path, credentials).await
    }

    /// The manifest's iSCSI target, or why the runner has none.
    pub fn iscsi_target(&self) -> Result<IscsiTarget, String> {
        match &self.ws.manifest.iscsi {
            IscsiEntry::Target { portal, iqn } => Ok(IscsiTarget::new(portal.clone(), iqn.clone())),
            IscsiEntry::Skipped(why) => Err(why.clone()),
        }
    }

    /// `iscsi_attach` of the manifest's target.
    pub async fn iscsi_attach(&self) -> Result<Vec<u32>, Error> {
        let target = self
            .iscsi_target()
            .expect("no iSCSI target in the manifest");
        self.node.iscsi_attach(&target).await
    }

    /// `iscsi_detach` of the manifest's target.
    pub async fn iscsi_detach(&self) -> Result<(), Error> {
        let target = self
            .iscsi_target()
            .expect("no iSCSI target in the manifest");
        self.node.iscsi_detach(&target).await
    }
}

/// What a test may ask the node without changing anything.
pub struct Reads<'n>(&'n Node);

impl Reads<'_> {
    /// `Node::disks`.
    pub async fn disks(&self) -> Result<Vec<DiskInfo>, Error> {
        self.0.disks().await
    }

    /// `Node::find_disk` (a rescan at most).
    pub async fn find_disk(&self, selector: DiskSelector) -> Result<Disk, Error> {
        self.0.find_disk(selector).await
    }

    /// `Node::usage`.
    pub async fn usage(&self, path: &str) -> Result<VolumeUsage, Error> {
        self.0.usage(path).await
    }

    /// `Node::mount_state`.
    pub async fn mount_state(&self, path: &str) -> Result<MountState, Error> {
        self.0.mount_state(path).await
    }

    /// `Node::smb_share_stats`.
    pub async fn smb_share_stats(&self, path: &str) -> Result<ShareStats, Error> {
        self.0.smb_share_stats(path).await
    }
}

/// The Windows boundary (`LocalHost`) bound to one owned disk: its
/// changing methods take no disk number, and each rechecks the disk first.
pub struct OwnedHost<'w> {
    ws: &'w Workspace,
    disk: OwnedDisk,
}

impl<'w> OwnedHost<'w> {
    /// Over the disk of `role`.
    pub fn new(ws: &'w Workspace, role: &str) -> OwnedHost<'w> {
        OwnedHost {
            disk: ws.disk(role),
            ws,
        }
    }

    /// The disk's number.
    pub fn number(&self) -> u32 {
        self.disk.number
    }

    fn checked(&self) -> u32 {
        self.ws.recheck(&self.disk);
        self.disk.number
    }

    /// `MSFT_Disk.Online` / `Offline`.
    pub fn set_online(&self, online: bool) -> Result<MethodResult, Failure> {
        LocalHost.disk_set_online(self.checked(), online)
    }

    /// `MSFT_Disk.SetAttributes(IsReadOnly)`.
    pub fn set_read_only(&self, read_only: bool) -> Result<MethodResult, Failure> {
        LocalHost.disk_set_read_only(self.checked(), read_only)
    }

    /// `MSFT_Disk.Initialize`.
    pub fn initialize(&self, partition_style: u16) -> Result<MethodResult, Failure> {
        LocalHost.disk_initialize(self.checked(), partition_style)
    }

    /// `MSFT_Disk.CreatePartition`, the whole disk.
    pub fn create_partition(&self, gpt_type: &str) -> Result<MethodResult, Failure> {
        LocalHost.disk_create_partition(self.checked(), gpt_type)
    }

    /// `MSFT_Disk.Refresh`.
    pub fn refresh(&self) -> Result<MethodResult, Failure> {
        LocalHost.disk_refresh(self.checked())
    }

    /// `MSFT_Partition.Resize`.
    pub fn resize(&self, partition: u32, size: u64) -> Result<MethodResult, Failure> {
        LocalHost.partition_resize(self.checked(), partition, size)
    }

    /// `MSFT_Volume.Format` (NTFS) of a volume on this disk.
    pub fn format(&self, volume: &str) -> Result<MethodResult, Failure> {
        let number = self.checked();
        let parts = LocalHost
            .volume_partitions(volume)
            .expect("the volume's partitions");
        assert!(
            !parts.is_empty() && parts.iter().all(|p| p.disk_number == number),
            "volume {volume} is not on disk {number}: {parts:?}"
        );
        LocalHost.volume_format_ntfs(volume)
    }

    /// Mounts a volume of this disk at a scratch directory (any path: a
    /// mount point changes no data).
    pub fn mount(&self, mount_point: &str, volume: &str) -> Result<(), Failure> {
        LocalHost.set_volume_mount_point(mount_point, volume)
    }
}

/// The boundary's SMB global mapping calls, for the manifest's share only.
/// Maps the manifest's share as its first account.
pub fn smb_map(ws: &Workspace) -> Result<MethodResult, Failure> {
    let smb = ws.manifest.smb.as_ref().expect("no SMB share");
    guard::check_share(&ws.manifest, &smb.share).unwrap_or_else(|r| panic!("{r}"));
    LocalHost.smb_new_global_mapping(&smb.share, &smb.user, &smb_password(), true)
}

/// Removes the manifest share's global mapping.
pub fn smb_unmap(ws: &Workspace) -> Result<MethodResult, Failure> {
    let share = &ws.manifest.smb.as_ref().expect("no SMB share").share;
    LocalHost.smb_remove_global_mapping(share)
}
