//! The crate's side of the side-by-side bench with grpc-go
//! (`scripts/bench-grpc-go.sh`): the same protocol and output as the grpc-go
//! peer's client (`gobench-client`), so every pair prints one comparable line.
//!
//! ```text
//! grpc_go_peer client SOCKET N       disk v1 GetDiskStats through `Client`: 2000 warm-up
//!                                    calls, N sequential, then 64 tasks x 500 calls on
//!                                    one connection
//! grpc_go_peer echo-server SOCKET    the floor's server: echoes 64-byte messages
//! grpc_go_peer echo-client SOCKET N  the floor: 2000 warm-up, N sequential 64-byte round trips
//! ```
//!
//! Each client prints `RESULT client=... seq_us p50_us p99_us conc_cps
//! cli_cpu_seq_us srv_cpu_seq_us cli_cpu_conc_us srv_cpu_conc_us`, the CPU
//! figures read from `/proc` (this process, and `SERVER_PID` if set) in µs
//! per call. `PEER_KEEPALIVE=off` connects without keepalive PINGs, as
//! grpc-go's client does by default. `cargo bench` runs this target without arguments: it then only
//! says how to use it.

#[cfg(unix)]
fn main() {
    unix::main();
}

#[cfg(not(unix))]
fn main() {
    eprintln!("the grpc-go peer uses Unix sockets; run it on Linux");
}

#[cfg(unix)]
mod unix {
    use std::time::Instant;

    use csi_proxy_client::disk::v1::{self as disk, DiskApi};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{UnixListener, UnixStream};

    const WARM_UP: usize = 2000;
    const TASKS: usize = 64;
    const CALLS_PER_TASK: usize = 500;
    /// Clock ticks per second in `/proc/<pid>/stat` (USER_HZ).
    const TICK_US: f64 = 10_000.0;

    pub fn main() {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        // Each role runs as a task on the runtime's workers, as a driver's
        // calls do (they come from its gRPC server's handler tasks); not in
        // `block_on`'s own thread, which every wake-up would have to cross
        // to (a futex wake-up and a context switch each way per call).
        let socket = args.get(1).map(|s| s.to_string()).unwrap_or_default();
        let role = match args.as_slice() {
            ["client", _, n] => Role::Client(parse(n)),
            ["echo-server", _] => Role::EchoServer,
            ["echo-client", _, n] => Role::EchoClient(parse(n)),
            _ => {
                eprintln!(
                    "grpc_go_peer: run by scripts/bench-grpc-go.sh \
                     (client SOCKET N | echo-server SOCKET | echo-client SOCKET N)"
                );
                return;
            }
        };
        let task = runtime.spawn(async move {
            match role {
                Role::Client(n) => client(&socket, n).await,
                Role::EchoServer => echo_server(&socket).await,
                Role::EchoClient(n) => echo_client(&socket, n).await,
            }
        });
        runtime.block_on(task).expect("the bench task panicked");
    }

    enum Role {
        Client(usize),
        EchoServer,
        EchoClient(usize),
    }

    fn parse(n: &str) -> usize {
        n.parse().expect("N: a number of calls")
    }

    /// utime + stime of a process, in clock ticks; -1 if unreadable.
    fn cpu_ticks(pid: &str) -> i64 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return -1;
        };
        let after_name = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let field = |i: usize| fields.get(i).and_then(|f| f.parse::<i64>().ok());
        match (field(11), field(12)) {
            (Some(user), Some(system)) => user + system,
            _ => -1,
        }
    }

    /// CPU ticks of this process and of `SERVER_PID`.
    fn cpu() -> (i64, i64) {
        let server = std::env::var("SERVER_PID").unwrap_or_default();
        (cpu_ticks("self"), cpu_ticks(&server))
    }

    fn per_call(from: i64, to: i64, calls: usize) -> f64 {
        (to - from) as f64 * TICK_US / calls as f64
    }

    /// The sequential part: mean, and the latencies sorted (µs).
    struct Sequential {
        seq_us: f64,
        sorted_us: Vec<f64>,
        n: usize,
    }

    impl Sequential {
        /// The RESULT line, with the concurrent part's calls/s and the CPU
        /// ticks (this process, the server) at start, after the sequential
        /// part and after the concurrent one.
        fn print(&self, name: &str, cpu: [(i64, i64); 3], conc_cps: f64) {
            let [start, after_seq, after_conc] = cpu;
            let concurrent = TASKS * CALLS_PER_TASK;
            println!(
                "RESULT client={name} seq_us={:.2} p50_us={:.2} p99_us={:.2} conc_cps={conc_cps:.0} \
                 cli_cpu_seq_us={:.2} srv_cpu_seq_us={:.2} cli_cpu_conc_us={:.2} srv_cpu_conc_us={:.2}",
                self.seq_us,
                self.sorted_us[self.n / 2],
                self.sorted_us[self.n * 99 / 100],
                per_call(start.0, after_seq.0, self.n),
                per_call(start.1, after_seq.1, self.n),
                per_call(after_seq.0, after_conc.0, concurrent),
                per_call(after_seq.1, after_conc.1, concurrent),
            );
        }
    }

    /// Times `n` sequential calls after the warm-up.
    async fn sequential<F, Fut>(n: usize, mut call: F) -> Sequential
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        for _ in 0..WARM_UP {
            call().await;
        }
        let mut latencies = Vec::with_capacity(n);
        let start = Instant::now();
        for _ in 0..n {
            let t = Instant::now();
            call().await;
            latencies.push(t.elapsed().as_secs_f64() * 1e6);
        }
        let seq_us = start.elapsed().as_secs_f64() * 1e6 / n as f64;
        latencies.sort_by(f64::total_cmp);
        Sequential {
            seq_us,
            sorted_us: latencies,
            n,
        }
    }

    async fn client(socket: &str, n: usize) {
        // PEER_KEEPALIVE=off: no keepalive PINGs, like grpc-go's client by
        // default (ours sends them during calls unless told not to).
        let mut options = csi_proxy_client::ConnectOptions::default();
        if std::env::var("PEER_KEEPALIVE").as_deref() == Ok("off") {
            options = options.with_keepalive_interval(None);
        }
        let client = disk::Client::connect_with(&format!("unix://{socket}"), &options)
            .await
            .expect("connect");
        let call = |client: disk::Client| async move {
            let stats = client
                .get_disk_stats(disk::GetDiskStatsRequest { disk_number: 0 })
                .await
                .expect("GetDiskStats");
            assert!(stats.total_bytes > 0, "bad reply {stats:?}");
        };
        let start = cpu();
        let seq = sequential(n, || call(client.clone())).await;
        let after_seq = cpu();

        let began = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let client = client.clone();
                tokio::spawn(async move {
                    for _ in 0..CALLS_PER_TASK {
                        call(client.clone()).await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("a calling task panicked");
        }
        let conc_cps = (TASKS * CALLS_PER_TASK) as f64 / began.elapsed().as_secs_f64();
        seq.print("rust", [start, after_seq, cpu()], conc_cps);
    }

    async fn echo_server(socket: &str) {
        let _ = std::fs::remove_file(socket);
        let listener = UnixListener::bind(socket).expect("bind");
        eprintln!("echo server listening on {socket}");
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
    }

    async fn echo_client(socket: &str, n: usize) {
        let stream = UnixStream::connect(socket).await.expect("connect");
        // One caller at a time, so the lock is never contended; it only
        // lets the round trip be a closure like the gRPC call.
        let stream = tokio::sync::Mutex::new(stream);
        let round_trip = || async {
            let mut buf = [7u8; 64];
            let mut stream = stream.lock().await;
            stream.write_all(&buf).await.expect("write");
            stream.read_exact(&mut buf).await.expect("read");
        };
        let start = cpu();
        let seq = sequential(n, round_trip).await;
        let after_seq = cpu();
        // The floor has no concurrent part: a raw socket has no streams.
        seq.print("floor", [start, after_seq, after_seq], 0.0);
    }
}
