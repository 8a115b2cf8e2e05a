//! The cost of a call, from the floor up:
//! - `unix_pingpong_64b`: a raw 64-byte round trip on a Unix socket (the floor);
//! - `bare_tonic`: disk v1 GetDiskStats through `Client` against a bare
//!   tonic service answering a constant (gRPC + HTTP/2 cost);
//! - `bare_tonic_no_retries`: the same with `RetryPolicy::none()` (the
//!   cost of the default retry policy on calls that succeed);
//! - `bare_tonic_traced`: the same with a `tracing` subscriber installed
//!   (the cost of the span of each call);
//! - `reference_server`: the same call against the reference server (adds
//!   the conversions and the simulated host);
//! - `concurrent_64`: 64 tasks sharing one `Client`, 64 calls a batch;
//! - `connect`: `Client::connect` to a socket, first dial included;
//! - `mock_host`: the same call on `MockHost`, in process.
//!
//! `cargo bench --bench calls`.

#[cfg(unix)]
criterion::criterion_main!(unix::benches);

#[cfg(not(unix))]
fn main() {
    eprintln!("the call benches use Unix sockets; run them on Linux or macOS");
}

#[cfg(unix)]
#[macro_use]
#[path = "../tests/it/support/unserved.rs"]
mod unserved;

#[cfg(unix)]
mod unix {
    use std::hint::black_box;
    use std::time::Duration;

    use criterion::{Criterion, Throughput, criterion_group};
    use csi_proxy_client::disk::v1::{self as disk, DiskApi};
    use csi_proxy_client::mock::MockHost;
    use csi_proxy_client::server::{GroupVersion, Server};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{UnixListener, UnixStream};
    use tokio::runtime::Runtime;
    use tokio_stream::wrappers::UnixListenerStream;
    use tonic::{Request, Response, Status};

    struct Constant;

    #[tonic::async_trait]
    impl disk::disk_server::Disk for Constant {
        async fn get_disk_stats(
            &self,
            _: Request<disk::GetDiskStatsRequest>,
        ) -> Result<Response<disk::GetDiskStatsResponse>, Status> {
            Ok(Response::new(disk::GetDiskStatsResponse {
                total_bytes: 34_359_738_368,
            }))
        }

        unserved! {
            get_disk_state(disk::GetDiskStateRequest) -> disk::GetDiskStateResponse;
            list_disk_i_ds(disk::ListDiskIDsRequest) -> disk::ListDiskIDsResponse;
            list_disk_locations(disk::ListDiskLocationsRequest) -> disk::ListDiskLocationsResponse;
            partition_disk(disk::PartitionDiskRequest) -> disk::PartitionDiskResponse;
            rescan(disk::RescanRequest) -> disk::RescanResponse;
            set_disk_state(disk::SetDiskStateRequest) -> disk::SetDiskStateResponse;
        }
    }

    fn runtime() -> Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    fn request() -> disk::GetDiskStatsRequest {
        disk::GetDiskStatsRequest { disk_number: 1 }
    }

    fn bench_calls(c: &mut Criterion) {
        let rt = runtime();
        let dir = tempfile::tempdir().unwrap();

        // The floor: an echo server on a Unix socket, 64 bytes each way.
        let echo_path = dir.path().join("echo.sock");
        let listener = rt
            .block_on(async { UnixListener::bind(&echo_path) })
            .unwrap();
        rt.spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 64];
                    while stream.read_exact(&mut buf).await.is_ok() {
                        if stream.write_all(&buf).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        c.bench_function("unix_pingpong_64b", |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let path = echo_path.clone();
                async move {
                    let mut echo = UnixStream::connect(&path).await.unwrap();
                    let mut buf = [7u8; 64];
                    let start = std::time::Instant::now();
                    for _ in 0..iters {
                        echo.write_all(&buf).await.unwrap();
                        echo.read_exact(&mut buf).await.unwrap();
                    }
                    black_box(buf);
                    start.elapsed()
                }
            })
        });

        // A bare tonic service answering a constant.
        let bare_path = dir.path().join("bare.sock");
        let bare_listener = rt
            .block_on(async { UnixListener::bind(&bare_path) })
            .unwrap();
        rt.spawn(
            tonic::transport::Server::builder()
                .add_service(disk::disk_server::DiskServer::new(Constant))
                .serve_with_incoming(UnixListenerStream::new(bare_listener)),
        );
        let bare_address = format!("unix://{}", bare_path.display());
        let bare = rt.block_on(disk::Client::connect(&bare_address)).unwrap();
        c.bench_function("bare_tonic", |b| {
            b.to_async(&rt)
                .iter(|| async { black_box(bare.get_disk_stats(request()).await.unwrap()) })
        });

        // The same with one attempt per call (no retry policy): the cost
        // of the default policy on a call that succeeds is the difference.
        let once = csi_proxy_client::ConnectOptions::default()
            .with_retry(csi_proxy_client::RetryPolicy::none());
        let bare_once = rt
            .block_on(disk::Client::connect_with(&bare_address, &once))
            .unwrap();
        c.bench_function("bare_tonic_no_retries", |b| {
            b.to_async(&rt)
                .iter(|| async { black_box(bare_once.get_disk_stats(request()).await.unwrap()) })
        });

        // The same with a subscriber that keeps every span (a registry, as
        // under tracing-opentelemetry or fmt, with no output): the cost of
        // the span of each call when someone listens.
        c.bench_function("bare_tonic_traced", |b| {
            let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry());
            b.to_async(&rt)
                .iter(|| async { black_box(bare.get_disk_stats(request()).await.unwrap()) })
        });

        // The reference server with its default node.
        let socket_dir = dir.path().join("server");
        std::fs::create_dir(&socket_dir).unwrap();
        let disk_v1 = GroupVersion::parse("disk/v1").unwrap();
        let server = rt
            .block_on(
                Server::builder()
                    .socket_dir(&socket_dir)
                    .serve([disk_v1])
                    .start(),
            )
            .unwrap();
        let address = server.address("disk", "v1").unwrap().to_string();
        let client = rt.block_on(disk::Client::connect(&address)).unwrap();
        c.bench_function("reference_server", |b| {
            b.to_async(&rt)
                .iter(|| async { black_box(client.get_disk_stats(request()).await.unwrap()) })
        });

        let mut group = c.benchmark_group("concurrent_64");
        group.throughput(Throughput::Elements(64));
        group.bench_function("reference_server", |b| {
            b.to_async(&rt).iter(|| async {
                let calls: Vec<_> = (0..64)
                    .map(|_| {
                        let client = client.clone();
                        tokio::spawn(async move { client.get_disk_stats(request()).await.unwrap() })
                    })
                    .collect();
                for call in calls {
                    black_box(call.await.unwrap());
                }
            })
        });
        group.finish();

        c.bench_function("connect", |b| {
            b.to_async(&rt)
                .iter(|| async { black_box(disk::Client::connect(&address).await.unwrap()) })
        });

        let mock = MockHost::new();
        c.bench_function("mock_host", |b| {
            b.to_async(&rt)
                .iter(|| async { black_box(mock.get_disk_stats(request()).await.unwrap()) })
        });
        mock.clear_calls();

        rt.block_on(server.shutdown()).unwrap();
    }

    criterion_group! {
        name = benches;
        config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
        targets = bench_calls
    }
}
