//! The node layer's cost: one stage, publish, unpublish, unstage cycle of
//! a disk volume through `Node` against the reference server, beside the
//! same 23 RPCs made in the same order with raw v1 clients. The difference
//! is what the node layer adds (path checks, adapters, deadlines).
//!
//! The two sides are measured interleaved: every criterion iteration runs
//! one cycle of each, alternating which goes first, and each bench keeps
//! its own side's time. Whatever else the machine does then weighs on both
//! sides alike; measured one after the other, the raw side alone moved
//! ±20% between runs. At the end the bench times 400 more pairs and prints
//! node's total over raw's and the median of node / raw per pair: the
//! cycles' times are heavy-tailed (a stall of a millisecond lands on
//! whichever side runs), so criterion's means of either side still move a
//! few percent between runs, while these two figures hold.
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
    use std::str::FromStr;
    use std::time::{Duration, Instant};

    use tokio::runtime::Runtime;

    use criterion::{Criterion, criterion_group};
    use csi_proxy_client::ApiVersion;
    use csi_proxy_client::disk::v1::{self as disk, DiskApi};
    use csi_proxy_client::filesystem::v1::{self as fs, FilesystemApi};
    use csi_proxy_client::mock::MockHost;
    use csi_proxy_client::node::{MockNode, Node, NodeOptions, NodeVersions};
    use csi_proxy_client::server::{GroupVersion, Server};
    use csi_proxy_client::volume::v1::{self as volume, VolumeApi};

    const STAGING: &str = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\d\pv\globalmount";
    const TARGET: &str = r"C:\var\lib\kubelet\pods\uid\volumes\kubernetes.io~csi\pv\mount";
    const TARGET_PARENT: &str = r"C:\var\lib\kubelet\pods\uid\volumes\kubernetes.io~csi\pv";

    /// The raw v1 clients of one backend: the generated clients over the
    /// server's sockets, or `MockHost` in process.
    struct Raw<D, V, F> {
        disk: D,
        volume: V,
        fs: F,
    }

    impl<D: DiskApi, V: VolumeApi, F: FilesystemApi> Raw<D, V, F> {
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

    /// The cycle of either side.
    trait Cycle {
        async fn cycle(&self);
    }

    impl Cycle for Node {
        async fn cycle(&self) {
            node_cycle(self).await
        }
    }

    impl<D: DiskApi, V: VolumeApi, F: FilesystemApi> Cycle for Raw<D, V, F> {
        async fn cycle(&self) {
            Raw::cycle(self).await
        }
    }

    /// One cycle of each side, `node_first` or not: (node, raw).
    async fn pair(node: &Node, raw: &impl Cycle, node_first: bool) -> (Duration, Duration) {
        if node_first {
            let n = timed(node_cycle(node)).await;
            (n, timed(raw.cycle()).await)
        } else {
            let r = timed(raw.cycle()).await;
            (timed(node_cycle(node)).await, r)
        }
    }

    /// `pairs` pairs, alternating which side goes first: (node, raw) totals.
    /// One untimed pair comes first: the first cycle after criterion's pause
    /// between samples pays for waking threads and caches, and it would
    /// always be the node's.
    async fn paired(node: &Node, raw: &impl Cycle, pairs: u64) -> (Duration, Duration) {
        pair(node, raw, true).await;
        let (mut node_time, mut raw_time) = (Duration::ZERO, Duration::ZERO);
        for i in 0..pairs {
            let (n, r) = pair(node, raw, i % 2 == 0).await;
            node_time += n;
            raw_time += r;
        }
        (node_time, raw_time)
    }

    async fn timed(work: impl Future<Output = ()>) -> Duration {
        let start = Instant::now();
        work.await;
        start.elapsed()
    }

    /// Over `pairs` single pairs, as percentages of the raw time: node's
    /// total over raw's, and the median of node / raw per pair with its
    /// quartiles.
    async fn ratio_summary(node: &Node, raw: &impl Cycle, pairs: u64) -> [f64; 4] {
        let mut ratios = Vec::new();
        let (mut node_total, mut raw_total) = (Duration::ZERO, Duration::ZERO);
        for i in 0..pairs {
            let (n, r) = pair(node, raw, i % 2 == 0).await;
            ratios.push(100.0 * n.as_secs_f64() / r.as_secs_f64());
            node_total += n;
            raw_total += r;
        }
        ratios.sort_by(f64::total_cmp);
        let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
        let total = 100.0 * node_total.as_secs_f64() / raw_total.as_secs_f64();
        [total, at(0.25), at(0.5), at(0.75)]
    }

    /// Benches `node` against `raw`, interleaved, as the group `name`, and
    /// prints the per-pair ratio.
    fn compare(c: &mut Criterion, runtime: &Runtime, name: &str, node: &Node, raw: &impl Cycle) {
        // Partition and format once: every measured cycle then finds a
        // formatted volume, as a restaged volume does.
        runtime.block_on(node_cycle(node));
        let mut group = c.benchmark_group(name);
        group
            .sample_size(50)
            .measurement_time(Duration::from_secs(10));
        group.bench_function("node", |b| {
            b.to_async(runtime)
                .iter_custom(|pairs| async move { paired(node, raw, pairs).await.0 })
        });
        group.bench_function("raw_v1_clients", |b| {
            b.to_async(runtime)
                .iter_custom(|pairs| async move { paired(node, raw, pairs).await.1 })
        });
        group.finish();
        let [total, low, median, high] = runtime.block_on(ratio_summary(node, raw, 400));
        println!(
            "{name}: node / raw over 400 more pairs: total {total:.1}%, per pair median \
             {median:.1}% (quartiles {low:.1}% .. {high:.1}%)"
        );
    }

    /// Against the reference server over Unix sockets.
    fn server(c: &mut Criterion) {
        // The server runs on its own threads, as the proxy is its own
        // process; the driver's side runs on one thread.
        let server_runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let endpoints = ["disk/v1", "volume/v1", "filesystem/v1"]
            .map(|e| GroupVersion::parse(e).expect("served"));
        let server = Server::builder()
            .socket_dir(dir.path())
            .serve(endpoints)
            .start();
        let server = server_runtime.block_on(server).unwrap();
        let (node, raw) = runtime.block_on(async {
            let node = Node::connect(NodeOptions::default().socket_dir(dir.path()));
            let address = |g: &str| server.address(g, "v1").unwrap().to_string();
            let raw = Raw {
                disk: disk::Client::connect(address("disk")).await.unwrap(),
                volume: volume::Client::connect(address("volume")).await.unwrap(),
                fs: fs::Client::connect(address("filesystem")).await.unwrap(),
            };
            (node.await.unwrap(), raw)
        });
        compare(c, &runtime, "stage_publish_unpublish_unstage", &node, &raw);
        server_runtime.block_on(server.shutdown()).unwrap();
    }

    /// Against `MockHost` in process: no sockets, no other threads, so the
    /// node layer's own work weighs more.
    fn mock(c: &mut Criterion) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let host = MockHost::new();
        let v1 = Some(ApiVersion::from_str("v1").unwrap());
        let versions = NodeVersions {
            disk: v1,
            volume: v1,
            filesystem: v1,
            smb: None,
            iscsi: None,
            system: None,
        };
        let node = MockNode::new(&host).versions(versions).build().unwrap();
        let raw = Raw {
            disk: host.clone(),
            volume: host.clone(),
            fs: host.clone(),
        };
        compare(
            c,
            &runtime,
            "stage_publish_unpublish_unstage_mock",
            &node,
            &raw,
        );
    }

    criterion_group!(benches, server, mock);
}
