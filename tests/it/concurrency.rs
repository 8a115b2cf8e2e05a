//! 32 clients, each with its own connections, against one reference
//! server: staging and unstaging different disks, mkdir/rmdir, SMB
//! map/unmap and disk queries, all at once. Afterwards the host's
//! invariants hold and its state is exactly what the completed calls imply.
#![cfg(feature = "mock")]

use std::collections::BTreeSet;

use crate::scenarios::*;
use csi_proxy_client::host::smb::ShareAccess;
use csi_proxy_client::host::storage::FileSystem;
use csi_proxy_client::server::Server;
use csi_proxy_client::{ConnectOptions, disk, filesystem, smb, volume};
use std::time::Duration;
use tokio::task::JoinSet;

const WORKERS: usize = 32;
const PER_KIND: usize = WORKERS / 4;
const DIR_ROUNDS: usize = 12;
const SMB_ROUNDS: usize = 6;
const STAT_ROUNDS: usize = 20;

/// What a worker did, for the final checks.
#[derive(Debug)]
enum Done {
    /// Staged `disk` as volume `id`; `kept` = still staged and published.
    Staged {
        index: usize,
        id: String,
        kept: bool,
    },
    /// Made and removed directories under its own root.
    Dirs,
    /// Mapped and unmapped its own share; `mapped` = the last call mapped.
    Smb,
    /// Read disk data that never changed.
    Stats { calls: usize },
}

/// Connection options for 32 workers connecting at once: the handshake may
/// take longer than the default 5 s on a loaded machine (it did under Wine
/// on two busy cores), and this test is about what the calls do, not how
/// fast a connection comes up.
fn patient() -> ConnectOptions {
    ConnectOptions::default()
        .with_connect_timeout(Duration::from_secs(120))
        .with_handshake_timeout(Duration::from_secs(120))
}

fn address(server: &Server, group: &str, version: &str) -> String {
    server.address(group, version).expect("served").to_string()
}

fn dirs_root(i: usize) -> String {
    format!(r"{KUBELET}\plugins\worker-{i}")
}

fn smb_local(i: usize, round: usize) -> String {
    format!(r"{KUBELET}\pods\smb-{i}\volumes\kubernetes.io~smb\pv\mount-{round}")
}

/// Stages `disk` at its own staging path and publishes it; odd workers
/// then unpublish and unstage GCE style (unmount, rmdir, offline).
async fn stager(server_addrs: [String; 3], index: usize, disk_number: u32) -> Done {
    let d = disk::v1::Client::connect_with(&server_addrs[0], &patient())
        .await
        .unwrap();
    let v = volume::v1::Client::connect_with(&server_addrs[1], &patient())
        .await
        .unwrap();
    let f = filesystem::v1::Client::connect_with(&server_addrs[2], &patient())
        .await
        .unwrap();
    use disk::v1::DiskApi;
    use filesystem::v1::FilesystemApi;
    use volume::v1::VolumeApi;
    let staging = staging(&format!("c{index}"));
    let publish = publish(&format!("c{index}"));

    ok(
        d.partition_disk(disk::v1::PartitionDiskRequest { disk_number })
            .await,
    );
    let ids = ok(v
        .list_volumes_on_disk(volume::v1::ListVolumesOnDiskRequest {
            disk_number,
            partition_number: 0,
        })
        .await)
    .volume_ids;
    assert_eq!(ids.len(), 1);
    let id = ids[0].clone();
    let formatted = ok(v
        .is_volume_formatted(volume::v1::IsVolumeFormattedRequest {
            volume_id: id.clone(),
        })
        .await)
    .formatted;
    assert!(!formatted);
    ok(v.format_volume(volume::v1::FormatVolumeRequest {
        volume_id: id.clone(),
    })
    .await);
    ok(f.mkdir(filesystem::v1::MkdirRequest {
        path: staging.clone(),
    })
    .await);
    ok(v.mount_volume(volume::v1::MountVolumeRequest {
        volume_id: id.clone(),
        target_path: staging.clone(),
    })
    .await);
    ok(f.mkdir(filesystem::v1::MkdirRequest {
        path: parent(&publish).to_string(),
    })
    .await);
    ok(f.create_symlink(filesystem::v1::CreateSymlinkRequest {
        source_path: staging.clone(),
        target_path: publish.clone(),
    })
    .await);
    let found = ok(v
        .get_volume_id_from_target_path(volume::v1::GetVolumeIdFromTargetPathRequest {
            target_path: publish.clone(),
        })
        .await);
    assert_eq!(found.volume_id, id);

    let kept = index.is_multiple_of(2);
    if !kept {
        ok(f.rmdir(filesystem::v1::RmdirRequest {
            path: publish,
            force: false,
        })
        .await);
        ok(v.unmount_volume(volume::v1::UnmountVolumeRequest {
            volume_id: id.clone(),
            target_path: staging.clone(),
        })
        .await);
        ok(f.rmdir(filesystem::v1::RmdirRequest {
            path: staging,
            force: false,
        })
        .await);
        ok(d.set_disk_state(disk::v1::SetDiskStateRequest {
            disk_number,
            is_online: false,
        })
        .await);
    }
    Done::Staged { index, id, kept }
}

/// Makes `DIR_ROUNDS` trees under its own root and removes the even ones
/// (forced), checking each answer; the legacy v1beta1 endpoint for odd
/// workers.
async fn dirs(address_v1: String, address_v1beta1: String, i: usize) -> Done {
    use filesystem::v1::FilesystemApi as _;
    use filesystem::v1beta1::FilesystemApi as _;
    let v1 = filesystem::v1::Client::connect_with(&address_v1, &patient())
        .await
        .unwrap();
    let beta = filesystem::v1beta1::Client::connect_with(&address_v1beta1, &patient())
        .await
        .unwrap();
    let root = dirs_root(i);
    for j in 0..DIR_ROUNDS {
        let path = format!(r"{root}\d{j}\sub");
        if i.is_multiple_of(2) {
            ok(v1
                .mkdir(filesystem::v1::MkdirRequest { path: path.clone() })
                .await);
        } else {
            ok(beta
                .mkdir(filesystem::v1beta1::MkdirRequest {
                    path: path.clone(),
                    context: 0,
                })
                .await);
        }
        let exists = ok(v1
            .path_exists(filesystem::v1::PathExistsRequest { path: path.clone() })
            .await);
        assert!(exists.exists);
        if j.is_multiple_of(2) {
            // Not empty without force, removed with it.
            unknown(
                v1.rmdir(filesystem::v1::RmdirRequest {
                    path: format!(r"{root}\d{j}"),
                    force: false,
                })
                .await,
                "The directory is not empty.",
            );
            ok(v1
                .rmdir(filesystem::v1::RmdirRequest {
                    path: format!(r"{root}\d{j}"),
                    force: true,
                })
                .await);
        }
    }
    Done::Dirs
}

/// Maps and unmaps its own share `SMB_ROUNDS` times, each mapping with a new
/// local link; even workers end mapped, odd ones unmapped.
async fn smb_worker(address: String, fs_address: String, i: usize) -> Done {
    use filesystem::v1::FilesystemApi;
    use smb::v1::SmbApi;
    let client = smb::v1::Client::connect_with(&address, &patient())
        .await
        .unwrap();
    let fs = filesystem::v1::Client::connect_with(&fs_address, &patient())
        .await
        .unwrap();
    ok(fs
        .mkdir(filesystem::v1::MkdirRequest {
            path: parent(&smb_local(i, 0)).to_string(),
        })
        .await);
    for round in 0..SMB_ROUNDS {
        ok(client
            .new_smb_global_mapping(smb::v1::NewSmbGlobalMappingRequest {
                remote_path: format!(r"\\fileserver\share{i}\vol"),
                local_path: smb_local(i, round),
                username: "smbuser".into(),
                password: "Sm8-Passw0rd!".into(),
            })
            .await);
        let last = round == SMB_ROUNDS - 1;
        if !(last && i.is_multiple_of(2)) {
            ok(client
                .remove_smb_global_mapping(smb::v1::RemoveSmbGlobalMappingRequest {
                    remote_path: format!(r"\\FileServer\Share{i}"),
                })
                .await);
        }
    }
    Done::Smb
}

/// Reads what no other worker changes: the default disks' sizes, states,
/// locations and ids.
async fn stats_worker(address: String) -> Done {
    use disk::v1::DiskApi;
    let client = disk::v1::Client::connect_with(&address, &patient())
        .await
        .unwrap();
    let sizes = [(0u32, 128 * GIB), (1, 32 * GIB), (2, 16 * GIB)];
    let mut calls = 0;
    for round in 0..STAT_ROUNDS {
        let (n, size) = sizes[round % 3];
        let stats = ok(client
            .get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: n })
            .await);
        assert_eq!(stats.total_bytes, size as i64);
        let state = ok(client
            .get_disk_state(disk::v1::GetDiskStateRequest { disk_number: n })
            .await);
        assert!(state.is_online);
        let locations = ok(client
            .list_disk_locations(disk::v1::ListDiskLocationsRequest {})
            .await);
        assert_eq!(locations.disk_locations[&1].lunid, "1");
        let ids = ok(client.list_disk_ids(disk::v1::ListDiskIDsRequest {}).await);
        assert!(ids.disk_i_ds.contains_key(&2));
        calls += 4;
    }
    Done::Stats { calls }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_clients_with_mixed_calls() {
    let node = Node::server().await;
    let host = node.host.clone();
    let server = node.as_server().expect("server backend");
    let disks: Vec<u32> = (0..PER_KIND)
        .map(|_| attach_blank_disk(&host, GIB))
        .collect();
    for i in 0..PER_KIND {
        host.lock()
            .smb
            .add_share(
                "fileserver",
                &format!("share{i}"),
                ShareAccess::Users(BTreeSet::from(["smbuser".to_string()])),
            )
            .expect("add share");
    }

    let mut tasks = JoinSet::new();
    for w in 0..WORKERS {
        let i = w / 4;
        match w % 4 {
            0 => {
                let addrs = [
                    address(server, "disk", "v1"),
                    address(server, "volume", "v1"),
                    address(server, "filesystem", "v1"),
                ];
                tasks.spawn(stager(addrs, i, disks[i]));
            }
            1 => {
                tasks.spawn(dirs(
                    address(server, "filesystem", "v1"),
                    address(server, "filesystem", "v1beta1"),
                    i,
                ));
            }
            2 => {
                tasks.spawn(smb_worker(
                    address(server, "smb", "v1"),
                    address(server, "filesystem", "v1"),
                    i,
                ));
            }
            _ => {
                tasks.spawn(stats_worker(address(server, "disk", "v1")));
            }
        }
    }
    let done: Vec<Done> = tasks.join_all().await;
    assert_eq!(done.len(), WORKERS);

    // ---- the final state is what the completed calls imply ----
    assert_invariants(&host);
    let s = host.snapshot();
    let mut ids = BTreeSet::new();
    let mut stat_calls = 0;
    for d in &done {
        match d {
            Done::Staged { index, id, kept } => {
                assert!(ids.insert(id.clone()), "volume {id} staged twice");
                let n = disks[*index];
                let v = volume_of(&s, id);
                assert_eq!((v.disk, v.fs), (n, FileSystem::Ntfs));
                let staging = staging(&format!("c{index}"));
                let publish = publish(&format!("c{index}"));
                if *kept {
                    assert_eq!(mounted_at(&host, &staging), std::slice::from_ref(id));
                    assert!(is_link(&host, &publish, LinkKind::Dir, &staging));
                    assert!(!disk_of(&s, n).is_offline);
                } else {
                    assert_eq!(entry(&host, &staging), None);
                    assert_eq!(entry(&host, &publish), None);
                    assert!(disk_of(&s, n).is_offline);
                }
            }
            Done::Dirs | Done::Smb => {}
            Done::Stats { calls } => stat_calls += calls,
        }
    }
    assert_eq!(ids.len(), PER_KIND);
    assert_eq!(stat_calls, PER_KIND * STAT_ROUNDS * 4);
    let mounted: Vec<_> = s.mount_points.iter().map(|m| m.volume_id.clone()).collect();
    assert_eq!(mounted.len(), PER_KIND / 2, "{mounted:?}");

    for i in 0..PER_KIND {
        let root = dirs_root(i);
        for j in 0..DIR_ROUNDS {
            let there = host.exists(&format!(r"{root}\d{j}\sub"));
            assert_eq!(there, j % 2 == 1, "worker {i} dir {j}");
        }
        assert_eq!(host.list_dir(&root).expect("root").len(), DIR_ROUNDS / 2);
        for round in 0..SMB_ROUNDS {
            assert!(
                is_link(
                    &host,
                    &smb_local(i, round),
                    LinkKind::Dir,
                    &format!(r"\\fileserver\share{i}\vol\")
                ),
                "smb worker {i} link {round}"
            );
        }
    }
    let roots: BTreeSet<String> = smb_roots(&host).into_iter().collect();
    let expected: BTreeSet<String> = (0..PER_KIND)
        .filter(|i| i.is_multiple_of(2))
        .map(|i| format!(r"\\fileserver\share{i}"))
        .collect();
    assert_eq!(roots, expected);

    node.finish().await;
}
