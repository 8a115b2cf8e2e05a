//! Where the SMB, iSCSI and System models meet the rest of the [`Node`]:
//!
//! - The namespace resolves UNC roots through [`SmbState`] (its
//!   [`UncResolver`]): a share is reachable while a global mapping with
//!   status OK grants access to it.
//! - `NewSmbGlobalMapping`: the SMB model maps and returns the link to make
//!   (an [`UncLink`](super::smb::UncLink)); the node validates `local_path`
//!   with the filesystem group's working-dir validation and creates the
//!   link ([`LinkKind::Dir`] to the UNC path) right after, so that it
//!   resolves through the mapping the same call just made.
//! - iSCSI runs with [`NodeDisks`], the node's disks borrowed apart from its
//!   iSCSI state ([`Node::iscsi`]): sessions attach their LUNs (offline,
//!   RAW, sizes rounded up to whole sectors) and detach them; every iSCSI
//!   call fails while `MSiSCSI` is not running.
//! - `StartService`/`StopService` run their waiting loops over the [`Host`](super::Host)
//!   and hold its lock only for each poll, never while sleeping.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::error::HostResult;
use super::iscsi::{self, IscsiDiskSink, IscsiState};
use super::namespace::Namespace;
use super::namespace::{LinkKind, UncResolver};
use super::node::{Node, detach_disk, win_err};
use super::path::{Win32Error, WinPath, validate_working_path};
use super::smb::{NewSmbGlobalMappingRequest, SmbState, split_unc};
use super::storage::{DiskHandle, DiskSpec, Page83, Storage};
use super::system::ServiceStatus;

/// Key name of the Microsoft iSCSI Initiator Service.
pub(crate) const MSISCSI: &str = "MSiSCSI";

impl UncResolver for SmbState {
    fn share_root(&self, server: &str, share: &str) -> Result<PathBuf, Win32Error> {
        SmbState::share_root(self, server, share)
            .map(Path::to_path_buf)
            .map_err(|e| Win32Error::new(e.code))
    }
}

impl Node {
    /// Creates the directory link `local_path` → `unc_target` (SMB
    /// `local_path`); Windows texts on failure.
    pub fn create_unc_link(&self, local_path: &str, unc_target: &str) -> HostResult<()> {
        let at = WinPath::parse(local_path).map_err(win_err)?;
        self.ns
            .create_link(self.ctx(), &at, LinkKind::Dir, unc_target)
            .map_err(win_err)
    }

    /// `NewSmbGlobalMapping` on this node (smb.md §4.1): the SMB model maps,
    /// then the link it asks for is validated and made in the namespace
    /// (after the mapping, so the link resolves through it).
    pub fn new_smb_global_mapping(&mut self, req: &NewSmbGlobalMappingRequest) -> HostResult<()> {
        let Some(link) = self.smb.new_smb_global_mapping(req)? else {
            return Ok(());
        };
        validate_working_path(&link.local_path, &self.working_dirs)?;
        self.create_unc_link(&link.local_path, &link.target)
            .map_err(|e| link.failed(e))
    }

    /// Runs an iSCSI RPC: the iSCSI model with the node's disks as its
    /// sink, borrowed apart from it (`MSiSCSI`'s state refreshed first).
    pub fn iscsi<R>(&mut self, op: impl FnOnce(&mut IscsiState, &mut NodeDisks<'_>) -> R) -> R {
        self.system.refresh(MSISCSI, Instant::now());
        let msiscsi_running = self
            .system
            .service(MSISCSI)
            .is_some_and(|s| s.status() == ServiceStatus::Running);
        let Node {
            iscsi,
            storage,
            ns,
            detached_volumes,
            iscsi_disks,
            ..
        } = self;
        let mut disks = NodeDisks {
            storage,
            ns,
            detached_volumes,
            iscsi_disks,
            msiscsi_running,
        };
        op(iscsi, &mut disks)
    }

    /// Violations of the cross-group invariants (see
    /// [`Host::check_invariants`]).
    pub(crate) fn group_violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        for m in self.smb.mappings() {
            let configured = split_unc(&m.remote_path).is_some_and(|(server, share, _)| {
                self.smb
                    .server(&server)
                    .is_some_and(|s| s.share(&share).is_some())
            });
            if !configured {
                out.push(format!(
                    "SMB global mapping {} refers to no configured share",
                    m.remote_path
                ));
            }
        }
        for s in self.iscsi.sessions() {
            for n in &s.disks {
                let present = self.storage.all_disks().any(|d| {
                    d.number == *n && self.iscsi_disks.get(n).is_none_or(|h| *h == d.handle)
                });
                if !present {
                    out.push(format!(
                        "iSCSI session {} ({}): disk {n} does not exist",
                        s.id, s.iqn
                    ));
                }
            }
        }
        out
    }
}

/// The node's disk side, borrowed apart from its iSCSI state: where an
/// iSCSI session attaches and detaches the disks of its LUNs.
#[derive(Debug)]
pub struct NodeDisks<'a> {
    storage: &'a mut Storage,
    ns: &'a Namespace,
    detached_volumes: &'a mut BTreeSet<String>,
    iscsi_disks: &'a mut BTreeMap<u32, DiskHandle>,
    msiscsi_running: bool,
}

impl IscsiDiskSink for NodeDisks<'_> {
    fn attach(&mut self, disk: iscsi::DiskSpec) -> u32 {
        // Disks are whole sectors; seeds already enforce it, test hooks may not.
        let size = disk.size.max(1).div_ceil(512) * 512;
        let spec = DiskSpec {
            location: Some(disk.location),
            page83: Some(Page83::Binary(disk.page83)),
            serial_number: Some(disk.serial),
            offline: true,
            ..DiskSpec::new(size)
        };
        let (number, handle) = self
            .storage
            .attach_disk(spec)
            .expect("a whole-sector disk with a free number always attaches");
        self.iscsi_disks.insert(number, handle);
        number
    }

    fn detach(&mut self, number: u32) {
        // Only the disk the session attached: a disk that was detached behind
        // the session's back (test hook) and whose number was reused stays.
        let Some(handle) = self.iscsi_disks.remove(&number) else {
            return;
        };
        if self.storage.all_disks().any(|d| d.handle == handle)
            && let Err(e) = detach_disk(self.storage, self.ns, self.detached_volumes, handle)
        {
            tracing::warn!(disk = number, error = %e, "detaching iSCSI disk failed");
        }
    }

    fn initiator_service_running(&self) -> bool {
        self.msiscsi_running
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::host::iscsi::{ConnectTargetRequest, TargetPortal, TargetRequest};
    use crate::host::namespace::Entry;
    use crate::host::seed::NodeSeed;
    use crate::host::smb::{DEFAULT_SMB_PASSWORD, MappingStatus};
    use crate::host::storage::PartitionStyle;
    use crate::host::system::ServiceTiming;
    use crate::host::{Host, HostConfig, HostErrorKind};

    const LUN0: &str = "iqn.1991-05.com.microsoft:storage01-lun0-target";

    struct T {
        host: Host,
        _dir: tempfile::TempDir,
    }

    fn host() -> T {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::new(HostConfig::new(dir.path().join("sb"))).unwrap();
        T { host, _dir: dir }
    }

    fn ok_invariants(h: &Host) {
        if let Err(v) = h.check_invariants() {
            panic!("invariants violated: {v:#?}");
        }
    }

    fn mapping(remote: &str, local: &str) -> NewSmbGlobalMappingRequest {
        NewSmbGlobalMappingRequest {
            remote_path: remote.into(),
            local_path: local.into(),
            username: r"DOMAIN\smbuser".into(),
            password: DEFAULT_SMB_PASSWORD.into(),
        }
    }

    fn portal() -> Option<TargetPortal> {
        Some(TargetPortal::new("10.0.0.20", 0))
    }

    fn target(iqn: &str) -> TargetRequest {
        TargetRequest {
            target_portal: portal(),
            iqn: iqn.into(),
        }
    }

    fn fast(h: &Host) {
        h.lock().system.set_timing(ServiceTiming {
            poll_interval: Duration::from_millis(2),
            timeout: Duration::from_secs(2),
        });
    }

    #[test]
    fn smb_local_path_link_reaches_the_share_until_the_mapping_is_removed() {
        let t = host();
        let h = &t.host;
        let link = r"C:\var\lib\kubelet\pods\p1\volumes\smb";
        h.run(|node| node.mkdir(r"C:\var\lib\kubelet\pods\p1\volumes"))
            .unwrap();
        h.run(|node| node.new_smb_global_mapping(&mapping(r"\\FileServer\Share\vol1", link)))
            .unwrap();
        assert_eq!(
            h.entry(link).unwrap(),
            Some(Entry::Link(crate::host::namespace::Link {
                kind: LinkKind::Dir,
                target: r"\\FileServer\Share\vol1\".into(),
            }))
        );
        // The sub-directory is created through the UNC path, then a file is
        // written through the link: it lands in the share's directory.
        h.create_dir(r"\\fileserver\share\vol1").unwrap();
        h.write_file(&format!(r"{link}\hello.txt"), b"hello")
            .unwrap();
        let share_dir = h
            .lock()
            .smb
            .share_dir("fileserver", "share")
            .unwrap()
            .to_path_buf();
        assert_eq!(
            std::fs::read(share_dir.join("vol1").join("hello.txt")).unwrap(),
            b"hello"
        );
        assert_eq!(
            h.read_file(&format!(r"{link}\HELLO.TXT")).unwrap(),
            b"hello"
        );
        assert!(h.run(|node| node.is_symlink(link)).unwrap());
        ok_invariants(h);

        h.run(|node| node.smb.remove_smb_global_mapping(r"\\fileserver\share"))
            .unwrap();
        assert!(h.lock().smb.mappings().is_empty());
        let e = h.read_file(&format!(r"{link}\hello.txt")).unwrap_err();
        assert_eq!(e.message(), "Access is denied.");
        assert!(
            h.write_file(&format!(r"{link}\again.txt"), b"x").is_err(),
            "writing through a link of a removed mapping must fail"
        );
        // The link itself stays (RemoveSmbGlobalMapping leaves it) and is now
        // dangling; Rmdir removes only the link, never the share's content.
        assert!(h.run(|node| node.path_exists(link)).unwrap());
        assert!(!h.run(|node| node.is_symlink(link)).unwrap());
        h.run(|node| node.rmdir(link, false)).unwrap();
        assert!(share_dir.join("vol1").join("hello.txt").is_file());
        ok_invariants(h);
    }

    #[test]
    fn smb_link_errors_keep_the_mapping() {
        let t = host();
        let h = &t.host;
        let e = h
            .run(|node| {
                node.new_smb_global_mapping(&mapping(
                    r"\\fileserver\share",
                    r"C:\var\lib\kubelet-evil\x",
                ))
            })
            .unwrap_err();
        assert_eq!(
            e.message(),
            r"path: C:\var\lib\kubelet-evil\x is not within the working directories: [C:\var\lib\kubelet]"
        );
        assert_eq!(h.lock().smb.mappings().len(), 1);
        // Parent missing: the namespace's error with the RPC's prefix.
        let e = h
            .run(|node| {
                node.new_smb_global_mapping(&mapping(
                    "//fileserver/share/sub",
                    r"C:\var\lib\kubelet\missing\x",
                ))
            })
            .unwrap_err();
        assert_eq!(
            e.message(),
            "creating link C:\\var\\lib\\kubelet\\missing\\x to \\\\fileserver\\share\\sub failed \
             with error: error linking \\\\fileserver\\share\\sub\\ to C:\\var\\lib\\kubelet\\missing\\x. \
             err: The system cannot find the path specified."
        );
        let link = r"C:\var\lib\kubelet\l";
        h.run(|node| node.new_smb_global_mapping(&mapping(r"\\fileserver\share", link)))
            .unwrap();
        let e = h
            .run(|node| node.new_smb_global_mapping(&mapping(r"\\fileserver\share", link)))
            .unwrap_err();
        assert_eq!(
            e.message(),
            r"creating link C:\var\lib\kubelet\l to \\fileserver\share failed with error: error linking \\fileserver\share\ to C:\var\lib\kubelet\l. err: Cannot create a file when that file already exists."
        );
        // A paused mapping makes the share unreachable through the link.
        h.lock()
            .smb
            .set_mapping_status(r"\\fileserver\share", MappingStatus::Paused)
            .unwrap();
        assert!(!h.run(|node| node.is_symlink(link)).unwrap());
        ok_invariants(h);
    }

    #[test]
    fn iscsi_disks_join_the_node_and_work_with_the_disk_group() {
        let t = host();
        let h = &t.host;
        fast(h);
        h.start_service(MSISCSI).unwrap();
        h.run(|node| node.iscsi(|iscsi, disks| iscsi.add_target_portal(disks, portal().as_ref())))
            .unwrap();
        assert!(
            h.run(|node| node
                .iscsi(|iscsi, disks| iscsi.discover_target_portal(disks, portal().as_ref())))
                .unwrap()
                .contains(&LUN0.to_string())
        );
        h.run(|node| {
            node.iscsi(|iscsi, disks| {
                iscsi.connect_target(
                    disks,
                    &ConnectTargetRequest {
                        target_portal: portal(),
                        iqn: LUN0.into(),
                        ..Default::default()
                    },
                )
            })
        })
        .unwrap();
        let disks = h
            .run(|node| node.iscsi(|iscsi, disks| iscsi.get_target_disks(disks, &target(LUN0))))
            .unwrap();
        assert_eq!(disks, ["3"], "lowest free number after local disks 0-2");
        let n: u32 = disks[0].parse().unwrap();
        let d = h.snapshot().disk(n).cloned().unwrap();
        assert!(d.is_offline);
        assert_eq!(d.partition_style, PartitionStyle::Raw);
        assert_eq!(d.size, 1 << 30);
        assert!(
            h.run(|node| node.list_disk_locations())
                .unwrap()
                .contains_key(&n)
        );
        assert!(h.run(|node| node.list_disk_ids()).unwrap().contains_key(&n));
        assert!(!h.run(|node| node.get_disk_state(n)).unwrap());
        h.run(|node| node.set_disk_state(n, true)).unwrap();
        h.run(|node| node.partition_disk(n)).unwrap();
        let d = h.snapshot().disk(n).cloned().unwrap();
        assert_eq!(d.partition_style, PartitionStyle::Gpt);
        assert!(!d.partitions.is_empty());
        h.run(|node| node.set_disk_state(n, false)).unwrap();
        ok_invariants(h);

        h.run(|node| node.iscsi(|iscsi, disks| iscsi.disconnect_target(disks, &target(LUN0))))
            .unwrap();
        assert!(h.snapshot().disk(n).is_none());
        assert!(
            !h.run(|node| node.list_disk_locations())
                .unwrap()
                .contains_key(&n)
        );
        assert!(
            h.run(|node| node.iscsi(|iscsi, disks| iscsi.get_target_disks(disks, &target(LUN0))))
                .unwrap()
                .is_empty()
        );
        assert!(h.lock().iscsi_disks.is_empty());
        ok_invariants(h);
    }

    #[test]
    fn iscsi_session_disk_detached_behind_its_back_is_reported() {
        let t = host();
        let h = &t.host;
        h.lock()
            .system
            .set_status(MSISCSI, ServiceStatus::Running)
            .unwrap();
        h.run(|node| node.iscsi(|iscsi, disks| iscsi.add_target_portal(disks, portal().as_ref())))
            .unwrap();
        h.run(|node| {
            node.iscsi(|iscsi, disks| {
                iscsi.connect_target(
                    disks,
                    &ConnectTargetRequest {
                        target_portal: portal(),
                        iqn: LUN0.into(),
                        ..Default::default()
                    },
                )
            })
        })
        .unwrap();
        h.detach_disk(3).unwrap();
        let v = h.check_invariants().unwrap_err();
        assert!(
            v.iter().any(|m| m.contains("disk 3 does not exist")),
            "{v:?}"
        );
        // A new disk taking the number is not the session's: disconnect
        // leaves it alone.
        h.attach_disk(DiskSpec::new(1 << 30)).unwrap();
        h.run(|node| node.iscsi(|iscsi, disks| iscsi.disconnect_target(disks, &target(LUN0))))
            .unwrap();
        assert!(h.snapshot().disk(3).is_some());
        ok_invariants(h);
    }

    #[test]
    fn iscsi_fails_while_msiscsi_is_stopped() {
        let t = host();
        let h = &t.host;
        let e = h
            .run(|node| {
                node.iscsi(|iscsi, disks| iscsi.add_target_portal(disks, portal().as_ref()))
            })
            .unwrap_err();
        assert_eq!(e.kind(), HostErrorKind::Unknown);
        assert_eq!(
            e.message(),
            "error adding target portal at (10.0.0.20:3260). err: the Microsoft iSCSI \
             Initiator Service (MSiSCSI) is not running"
        );
        assert!(
            h.run(|node| node.iscsi(|iscsi, disks| iscsi.list_target_portals(disks)))
                .is_err()
        );
        fast(h);
        h.start_service(MSISCSI).unwrap();
        h.run(|node| node.iscsi(|iscsi, disks| iscsi.add_target_portal(disks, portal().as_ref())))
            .unwrap();
        assert_eq!(
            h.run(|node| node.iscsi(|iscsi, disks| iscsi.list_target_portals(disks)))
                .unwrap()
                .len(),
            1
        );
        h.stop_service(MSISCSI, false).unwrap();
        assert!(
            h.run(|node| node.iscsi(|iscsi, disks| iscsi.list_target_portals(disks)))
                .is_err()
        );
        // State survives the stop.
        h.start_service(MSISCSI).unwrap();
        assert_eq!(
            h.run(|node| node.iscsi(|iscsi, disks| iscsi.list_target_portals(disks)))
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn system_waits_do_not_hold_the_host_lock() {
        let t = host();
        let h = t.host.clone();
        fast(&h);
        h.lock().system.service_mut("W32Time").unwrap().start_delay = Duration::from_millis(400);
        h.lock()
            .system
            .set_status("W32Time", ServiceStatus::Stopped)
            .unwrap();
        let h2 = h.clone();
        let start = std::thread::spawn(move || h2.start_service("W32Time"));
        std::thread::sleep(Duration::from_millis(100));
        let before = Instant::now();
        let info = h
            .run(|node| node.system.get_service("W32Time", Instant::now()))
            .unwrap();
        assert!(before.elapsed() < Duration::from_millis(200));
        assert_eq!(info.status, ServiceStatus::StartPending);
        assert!(!start.is_finished());
        h.run(|node| node.mkdir(r"C:\var\lib\kubelet\during-start"))
            .unwrap();
        start.join().unwrap().unwrap();
        assert_eq!(
            h.run(|node| node.system.get_service("W32Time", Instant::now()))
                .unwrap()
                .status,
            ServiceStatus::Running
        );
        assert_eq!(
            h.run(|node| node.system.bios_serial_number()).unwrap(),
            crate::host::system::DEFAULT_BIOS_SERIAL
        );
    }

    const FULL_SEED: &str = r#"
[[disks]]
number = 0
size = 1073741824
partition_style = "gpt"

[[volumes]]
disk = 0
fs = "ntfs"
drive_letter = "C"

[smb]
machine_identity = "all_shares"
[[smb.shares]]
server = "nas"
share = "vols"
username = 'CORP\alice'
password = "alice-pw"

[iscsi]
initiator_iqn = "iqn.1991-05.com.microsoft:node7"
[[iscsi.portals]]
address = "192.168.1.5"
port = 3261
[[iscsi.portals.targets]]
iqn = "iqn.2000-01.com.example:t1"
lun_sizes = [536870912, 1073741824]

[system]
bios_serial = "SER-42"
[[system.services]]
name = "MSiSCSI"
status = "Running"
"#;

    #[test]
    fn seed_with_all_sections_builds_every_group() {
        let dir = tempfile::tempdir().unwrap();
        let seed = NodeSeed::from_toml_str(FULL_SEED).unwrap();
        let h = Host::new(HostConfig {
            seed: Some(seed),
            ..HostConfig::new(dir.path())
        })
        .unwrap();
        assert_eq!(
            h.run(|node| node.system.bios_serial_number()).unwrap(),
            "SER-42"
        );
        assert_eq!(
            h.run(|node| node.system.get_service("msiscsi", Instant::now()))
                .unwrap()
                .display_name,
            "MSiSCSI"
        );
        assert!(
            h.run(|node| node.system.get_service("W32Time", Instant::now()))
                .is_err(),
            "only seeded services"
        );
        assert!(h.lock().smb.server("NAS").unwrap().has_account("alice"));
        assert!(h.lock().smb.server("fileserver").is_none());
        assert_eq!(
            h.lock().iscsi.initiator_iqn(),
            "iqn.1991-05.com.microsoft:node7"
        );
        let p = Some(TargetPortal::new("192.168.1.5", 3261));
        h.run(|node| node.iscsi(|iscsi, disks| iscsi.add_target_portal(disks, p.as_ref())))
            .unwrap();
        h.run(|node| {
            node.iscsi(|iscsi, disks| {
                iscsi.connect_target(
                    disks,
                    &ConnectTargetRequest {
                        target_portal: p.clone(),
                        iqn: "iqn.2000-01.com.example:t1".into(),
                        ..Default::default()
                    },
                )
            })
        })
        .unwrap();
        let disks = h
            .run(|node| {
                node.iscsi(|iscsi, disks| {
                    iscsi.get_target_disks(
                        disks,
                        &TargetRequest {
                            target_portal: p,
                            iqn: "iqn.2000-01.com.example:t1".into(),
                        },
                    )
                })
            })
            .unwrap();
        assert_eq!(disks, ["1", "2"]);
        assert_eq!(h.snapshot().disk(1).unwrap().size, 536870912);
        ok_invariants(&h);

        // Absent sections give the default node's data.
        let dir = tempfile::tempdir().unwrap();
        let seed = NodeSeed::from_toml_str("[[disks]]\nsize = 1073741824\n").unwrap();
        let h = Host::new(HostConfig {
            seed: Some(seed),
            ..HostConfig::new(dir.path())
        })
        .unwrap();
        assert_eq!(
            h.run(|node| node.system.bios_serial_number()).unwrap(),
            crate::host::system::DEFAULT_BIOS_SERIAL
        );
        assert!(h.lock().smb.server("fileserver").is_some());
        assert_eq!(
            h.run(|node| node.system.get_service(MSISCSI, Instant::now()))
                .unwrap()
                .status,
            ServiceStatus::Stopped
        );
        // An empty section is taken as written.
        let dir = tempfile::tempdir().unwrap();
        let seed = NodeSeed::from_toml_str("[system]\n").unwrap();
        let h = Host::new(HostConfig {
            seed: Some(seed),
            ..HostConfig::new(dir.path())
        })
        .unwrap();
        assert!(h.run(|node| node.system.bios_serial_number()).is_err());
        assert!(
            h.run(|node| node.iscsi(|iscsi, disks| iscsi.list_target_portals(disks)))
                .is_err()
        );
    }

    #[test]
    fn seed_errors_name_the_field() {
        let parse = |s: &str| {
            NodeSeed::from_toml_str(s)
                .unwrap_err()
                .message()
                .to_string()
        };
        let e = parse("[smb]\n[[smb.shares]]\nserver = \"a\"\nshare = \"b\"\nuser = \"x\"\n");
        assert!(e.contains("unknown field `user`"), "{e}");
        let e = parse("[iscsi]\nportals = [{ address = \"a\", bogus = 1 }]\n");
        assert!(e.contains("unknown field `bogus`"), "{e}");
        let e = parse("[system]\nbios = \"x\"\n");
        assert!(e.contains("unknown field `bios`"), "{e}");
        let e = parse("[network]\n");
        assert!(e.contains("unknown field `network`"), "{e}");

        let build = |s: &str| {
            let dir = tempfile::tempdir().unwrap();
            let seed = NodeSeed::from_toml_str(s).unwrap();
            let e = Host::new(HostConfig {
                seed: Some(seed),
                ..HostConfig::new(dir.path())
            })
            .unwrap_err();
            assert_eq!(e.kind(), HostErrorKind::InvalidArgument);
            e.message().to_string()
        };
        assert_eq!(
            build("[[smb.shares]]\nserver = \"a\"\nshare = \"b\"\nusername = \"u\"\n"),
            "smb.shares[0].password: required when username is set"
        );
        assert_eq!(
            build(
                "[[iscsi.portals]]\naddress = \"a\"\n[[iscsi.portals.targets]]\niqn = \"t\"\nlun_sizes = [100]\n"
            ),
            "iscsi.portals[0].targets[0].lun_sizes[0]: must be a non-zero multiple of 512"
        );
        assert_eq!(
            build("[[system.services]]\nname = \"A\"\ndepends_on = [\"B\"]\n"),
            "system.services[0].depends_on: unknown service `B`"
        );
    }
}
