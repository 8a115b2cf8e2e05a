//! The node layer's cost: one stage, publish, unpublish, unstage cycle of
//! a disk volume through `Node` against the reference server, beside the
//! same 23 RPCs made in the same order with raw v1 clients. The difference
//! is what the node layer adds (path checks, adapters, deadlines).
//!
//! `cargo bench --bench node`.

#[cfg(unix)]
criterion::criterion_main!(unix::benches);

#[cfg(not(unix))]
fn main() {
    eprintln!("the node benches use Unix sockets; run them on Linux or macOS");
}

#[cfg(unix)]
mod unix {
    use std::time::Duration;

    use criterion::{Criterion, criterion_group};
    use csi_proxy_client::disk::v1::{self as disk, DiskApi};
    use csi_proxy_client::filesystem::v1::{self as fs, FilesystemApi};
    use csi_proxy_client::node::{Node, NodeOptions};
    use csi_proxy_client::server::{GroupVersion, Server};
    use csi_proxy_client::volume::v1::{self as volume, VolumeApi};

    const STAGING: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv\globalmount";
    const TARGET: &str = r"C:\var\lib\kubelet\pods\uid\volumes\kubernetes.io~csi\pv\mount";
    const TARGET_PARENT: &str = r"C:\var\lib\kubelet\pods\uid\volumes\kubernetes.io~csi\pv";

    struct Raw {
        disk: disk::Client,
        volume: volume::Client,
        fs: fs::Client,
    }

    impl Raw {
        async fn exists(&self, path: &str) -> bool {
            let request = fs::PathExistsRequest { path: path.into() };
            self.fs.path_exists(request).await.unwrap().exists
        }

        async fn is_link(&self, path: &str) -> bool {
            let request = fs::IsSymlinkRequest { path: path.into() };
            self.fs.is_symlink(request).await.unwrap().is_symlink
        }

        async fn volume_at(&self, path: &str) -> String {
            let request = volume::GetVolumeIdFromTargetPathRequest {
                target_path: path.into(),
            };
            let id = self.volume.get_volume_id_from_target_path(request).await;
            id.unwrap().volume_id
        }

        async fn mkdir(&self, path: &str) {
            let request = fs::MkdirRequest { path: path.into() };
            self.fs.mkdir(request).await.unwrap();
        }

        async fn rmdir(&self, path: &str) {
            let request = fs::RmdirRequest {
                path: path.into(),
                force: false,
            };
            self.fs.rmdir(request).await.unwrap();
        }

        /// The RPCs `Node` makes for the same cycle, in its order.
        async fn cycle(&self) {
            // stage_disk
            assert!(!self.exists(STAGING).await);
            let state = disk::GetDiskStateRequest { disk_number: 1 };
            assert!(self.disk.get_disk_state(state).await.unwrap().is_online);
            let partition = disk::PartitionDiskRequest { disk_number: 1 };
            self.disk.partition_disk(partition).await.unwrap();
            let list = volume::ListVolumesOnDiskRequest {
                disk_number: 1,
                partition_number: 0,
            };
            let id = self
                .volume
                .list_volumes_on_disk(list)
                .await
                .unwrap()
                .volume_ids[0]
                .clone();
            let formatted = volume::IsVolumeFormattedRequest {
                volume_id: id.clone(),
            };
            assert!(
                self.volume
                    .is_volume_formatted(formatted)
                    .await
                    .unwrap()
                    .formatted
            );
            self.mkdir(STAGING).await;
            let mount = volume::MountVolumeRequest {
                volume_id: id.clone(),
                target_path: STAGING.into(),
            };
            self.volume.mount_volume(mount).await.unwrap();
            // publish
            assert!(self.exists(STAGING).await && self.is_link(STAGING).await);
            self.volume_at(STAGING).await;
            assert!(!self.exists(TARGET).await);
            self.mkdir(TARGET_PARENT).await;
            let link = fs::CreateSymlinkRequest {
                source_path: STAGING.into(),
                target_path: TARGET.into(),
            };
            self.fs.create_symlink(link).await.unwrap();
            // unpublish
            assert!(self.exists(TARGET).await && self.is_link(TARGET).await);
            self.volume_at(TARGET).await;
            self.rmdir(TARGET).await;
            // unstage
            assert!(self.exists(STAGING).await && self.is_link(STAGING).await);
            let id = self.volume_at(STAGING).await;
            let flush = volume::WriteVolumeCacheRequest {
                volume_id: id.clone(),
            };
            self.volume.write_volume_cache(flush).await.unwrap();
            let unmount = volume::UnmountVolumeRequest {
                volume_id: id,
                target_path: STAGING.into(),
            };
            self.volume.unmount_volume(unmount).await.unwrap();
            self.rmdir(STAGING).await;
        }
    }

    async fn node_cycle(node: &Node) {
        node.stage_disk(1u32, STAGING).await.unwrap();
        node.publish(STAGING, TARGET).await.unwrap();
        node.unpublish(TARGET).await.unwrap();
        node.unstage(STAGING).await.unwrap();
    }

    fn cycle(c: &mut Criterion) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let endpoints = ["disk/v1", "volume/v1", "filesystem/v1"]
            .map(|e| GroupVersion::parse(e).expect("served"));
        let (server, node, raw) = runtime.block_on(async {
            let server = Server::builder()
                .socket_dir(dir.path())
                .serve(endpoints)
                .start()
                .await
                .unwrap();
            let node = Node::connect(NodeOptions::default().socket_dir(dir.path()))
                .await
                .unwrap();
            let address = |g: &str| server.address(g, "v1").unwrap().to_string();
            let raw = Raw {
                disk: disk::Client::connect(address("disk")).await.unwrap(),
                volume: volume::Client::connect(address("volume")).await.unwrap(),
                fs: fs::Client::connect(address("filesystem")).await.unwrap(),
            };
            // Partition and format once: every measured cycle then finds a
            // formatted volume, as a restaged volume does.
            node_cycle(&node).await;
            (server, node, raw)
        });
        let mut group = c.benchmark_group("stage_publish_unpublish_unstage");
        group
            .sample_size(30)
            .measurement_time(Duration::from_secs(8));
        group.bench_function("node", |b| b.to_async(&runtime).iter(|| node_cycle(&node)));
        group.bench_function("raw_v1_clients", |b| {
            b.to_async(&runtime).iter(|| raw.cycle())
        });
        group.finish();
        drop((node, raw));
        runtime.block_on(server.shutdown()).unwrap();
    }

    criterion_group!(benches, cycle);
}
