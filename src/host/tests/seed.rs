//! Building nodes from seeds.

use super::*;

#[test]
fn seed_from_toml() {
    let toml = r#"
        [[disks]]
        number = 0
        location = "PCI Slot 3 : Adapter 0 : Port 0 : Target 1 : LUN 0"
        page83 = "ascii:Google  persistent-disk-0"
        serial = "                    "
        size = 107374182400
        partition_style = "gpt"
        auto_msr = false
        system = true

        [[disks]]
        number = 1
        location = "PCI Slot 3 : Adapter 0 : Port 0 : Target 2 : LUN 0"
        page83 = "Google  pvc-7d0c5a4e-1b2f-4a6e-9d3c-2e8f6b1a0c55"
        size = 10737418240

        [[disks]]
        number = 4
        page83 = "hex:4d534654202020208956a91dadfe3d48865f9b9bcbdb8d3e"
        size = 1073741824
        online = false

        [[volumes]]
        disk = 0
        kind = "efi"
        size = 104857600
        fs = "fat32"
        system = true

        [[volumes]]
        disk = 0
        kind = "msr"
        size = 16777216

        [[volumes]]
        disk = 0
        fs = "ntfs"
        drive_letter = "C"
        id = '\\?\Volume{5A9D0000-1111-4222-8333-444455556666}\'
        system = true
    "#;
    let seed = NodeSeed::from_toml_str(toml).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let h = Host::new(HostConfig {
        seed: Some(seed),
        ..HostConfig::new(dir.path())
    })
    .unwrap();
    let c = r"\\?\Volume{5a9d0000-1111-4222-8333-444455556666}\";
    assert_eq!(
        h.run(|node| node.get_closest_volume_id_from_target_path(K))
            .unwrap(),
        c
    );
    let ids = h.run(|node| node.list_disk_ids()).unwrap();
    assert_eq!(ids[&0].page83, "Google  persistent-disk-0");
    assert_eq!(ids[&0].serial_number.len(), 20);
    assert_eq!(
        ids[&4].page83,
        "4d534654202020208956a91dadfe3d48865f9b9bcbdb8d3e"
    );
    assert!(!h.run(|node| node.get_disk_state(4)).unwrap());
    assert_eq!(h.list_locations_lun(1), "0");
    let d0 = h.snapshot().disk(0).unwrap().clone();
    assert_eq!(d0.partitions.len(), 3);
    assert_eq!(
        (d0.partitions[0].offset, d0.partitions[0].size),
        (MIB, 100 * MIB)
    );
    assert_eq!(h.snapshot().volume(c).unwrap().fs, FileSystem::Ntfs);
    h.run(|node| node.partition_disk(1)).unwrap();
    assert_eq!(
        h.snapshot().disk(1).unwrap().partitions[1].size,
        10720624128
    );
    ok_invariants(&h);
}

impl Host {
    fn list_locations_lun(&self, n: u32) -> String {
        self.run(|node| node.list_disk_locations()).unwrap()[&n]
            .lun_id
            .clone()
    }
}

#[test]
fn seed_errors_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let build = |toml: &str| -> String {
        let r = NodeSeed::from_toml_str(toml).and_then(|s| {
            Host::new(HostConfig {
                seed: Some(s),
                ..HostConfig::new(dir.path())
            })
        });
        r.unwrap_err().message().to_string()
    };
    assert!(
        build("[[disks]]\nsize = 1000\n")
            .starts_with("disks[0].size: must be a positive multiple of 512")
    );
    assert!(
        build("[[disks]]\nsize = 1024\npartition_style = \"zfs\"\n")
            .starts_with("disks[0].partition_style:")
    );
    assert!(
        build("[[disks]]\nsize = 1024\npage83 = \"hex:abc\"\n").starts_with("disks[0].page83:")
    );
    let e = build("[[disks]]\nsize = 1073741824\n[[volumes]]\ndisk = 3\n");
    assert!(
        e.starts_with("volumes[0].disk: disk 3 is not defined"),
        "{e}"
    );
    let e = build(
        "[[disks]]\nsize = 1073741824\npartition_style = \"gpt\"\n[[volumes]]\ndisk = 0\nfs = \"zfs\"\n",
    );
    assert!(e.starts_with("volumes[0].fs:"), "{e}");
    let e = build(
        "[[disks]]\nsize = 1073741824\npartition_style = \"gpt\"\n[[volumes]]\ndisk = 0\ndrive_letter = \"CD\"\n",
    );
    assert!(e.starts_with("volumes[0].drive_letter:"), "{e}");
    let e = build(
        "[[disks]]\nsize = 1073741824\npartition_style = \"gpt\"\n[[volumes]]\ndisk = 0\nsize = 4294967296\n",
    );
    assert!(
        e.starts_with("volumes[0].size:") && e.ends_with("result 40000"),
        "{e}"
    );
    let e = build("[[disks]]\nsizee = 1\n");
    assert!(e.contains("sizee"), "{e}");
    let e = build("[[disks]]\nnumber = 1\n");
    assert!(e.contains("size"), "{e}");
}

/// The SMB, iSCSI and System sections of a seed.
mod groups {
    use std::time::Instant;

    use super::*;
    use crate::host::iscsi::MSISCSI;
    use crate::host::iscsi::{ConnectTargetRequest, TargetPortal, TargetRequest};
    use crate::host::system::ServiceStatus;

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
    fn a_seed_of_shares_only_has_the_system_volume() {
        // Issue 38 item 8: a seed with only `[smb]` used to build a node
        // with no disk at all, where every stage failed with
        // "mkdir C:\var: The system cannot find the path specified".
        let dir = tempfile::tempdir().unwrap();
        let seed = NodeSeed::from_toml_str(
            "[[smb.shares]]\nserver = \"files\"\nshare = \"data\"\nusername = \"u\"\npassword = \"p\"\n",
        )
        .unwrap();
        let h = Host::new(HostConfig {
            seed: Some(seed),
            ..HostConfig::new(dir.path())
        })
        .unwrap();
        let staging = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\smb\pv\globalmount";
        h.run(|node| node.mkdir(staging)).unwrap();
        assert!(h.run(|node| node.path_exists(staging)).unwrap());
        let system: Vec<u32> = h.run(|s| {
            s.storage
                .disks()
                .filter(|d| d.is_system)
                .map(|d| d.number)
                .collect()
        });
        assert_eq!(system, [0]);
        assert!(h.lock().smb.server("files").is_some());
        assert!(h.lock().smb.server("fileserver").is_none());
    }

    #[test]
    fn group_seed_errors_name_the_field() {
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
