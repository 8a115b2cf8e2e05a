//! Running the services: one endpoint per group version, graceful shutdown.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use super::ProxyService;
use super::listen::{Cleanup, Limits, Listener};
use super::sandbox_lock::SandboxLock;
use crate::host::{Host, HostConfig, LatencyProfile, temporary_sandbox};
use crate::transport::Address;

/// Re-exported from the crate root, where it now lives beside `ApiVersion`.
pub use crate::GroupVersion;

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The simulated host could not be built (sandbox, seed).
    #[error("cannot build the simulated host: {0}")]
    Host(#[source] crate::host::HostError),
    /// Another server holds the sandbox (its lock file names it).
    #[error("sandbox {sandbox} is in use by another csi-proxy-server ({holder}); not touched")]
    SandboxInUse {
        /// The sandbox directory.
        sandbox: String,
        /// Who holds it, as its lock file says (e.g. `pid 4242`).
        holder: String,
    },
    /// An endpoint could not be created: in use, no permission, missing directory.
    #[error("cannot listen on {address}")]
    Listen {
        /// The socket or pipe.
        address: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// No socket directory was given (required off Windows).
    #[error("no socket directory given: the server needs one to create its Unix sockets")]
    NoSocketDir,
    /// A duration given to the builder is outside the range it allows.
    #[error("{setting} of {value:?} is out of range: from {min:?} to {max:?} allowed")]
    DurationOutOfRange {
        /// Which one (`keepalive interval`, `idle timeout`, ...).
        setting: &'static str,
        /// The value given.
        value: Duration,
        /// The shortest allowed: [`MIN_PERIOD`](crate::MIN_PERIOD) for the
        /// timers of a connection, zero for the others.
        min: Duration,
        /// The longest allowed: [`MAX_DURATION`](crate::MAX_DURATION).
        max: Duration,
    },
}

/// Whether some group version has a method named `name`.
pub fn is_rpc(name: &str) -> bool {
    GroupVersion::all()
        .iter()
        .any(|gv| gv.rpcs().contains(&name))
}

/// Builds a [`Server`]: what to serve, where, over which host, and how
/// connections are limited and ended.
#[derive(Debug, Default)]
pub struct ServerBuilder {
    socket_dir: Option<PathBuf>,
    serve: Option<Vec<GroupVersion>>,
    host: Option<Host>,
    host_config: Option<HostConfig>,
    limits: Limits,
}

impl ServerBuilder {
    /// The directory for the Unix sockets, `csi-proxy-<group>-<version>.sock`
    /// (required on Unix; on Windows the server listens on named pipes).
    #[must_use]
    pub fn socket_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.socket_dir = Some(dir.into());
        self
    }

    /// Serves only these group versions (all by default).
    #[must_use]
    pub fn serve(mut self, endpoints: impl IntoIterator<Item = GroupVersion>) -> Self {
        self.serve = Some(endpoints.into_iter().collect());
        self
    }

    /// Serves an existing host (shared with the caller, e.g. for assertions).
    #[must_use]
    pub fn host(mut self, host: Host) -> Self {
        self.host = Some(host);
        self
    }

    /// Builds the host from this configuration (ignored when [`ServerBuilder::host`] is set).
    /// The server locks the sandbox for its lifetime: a second server given
    /// the same sandbox refuses to start before it touches anything.
    #[must_use]
    pub fn host_config(mut self, config: HostConfig) -> Self {
        self.host_config = Some(config);
        self
    }

    /// Closes a connection that has had no call in flight for this long
    /// (default 5 minutes; gRPC clients reconnect on their next call; from
    /// [`MIN_PERIOD`](crate::MIN_PERIOD) to [`MAX_DURATION`](crate::MAX_DURATION),
    /// or [`start`](Self::start) fails).
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle_timeout = timeout;
        self
    }

    /// HTTP/2 keepalive: every `interval`, if nothing has come from the
    /// client since the last look, a PING (also while no call is in
    /// flight), and the connection closed if the answer takes longer than
    /// `timeout` (defaults 2 hours and 20 s, grpc-go's server defaults,
    /// which csi-proxy keeps). A client that has gone silent is noticed one
    /// to two intervals after its last frame, plus the timeout. Both from
    /// [`MIN_PERIOD`](crate::MIN_PERIOD) to
    /// [`MAX_DURATION`](crate::MAX_DURATION), or [`start`](Self::start) fails.
    #[must_use]
    pub fn keepalive(mut self, interval: Duration, timeout: Duration) -> Self {
        self.limits.keepalive_interval = interval;
        self.limits.keepalive_timeout = timeout;
        self
    }

    /// How often a client may PING, enforced as grpc-go's server enforces
    /// its default keepalive policy, which csi-proxy has: a PING sooner
    /// than `min_time` after the client's previous one is a strike (while
    /// no call is in flight, sooner than two hours, unless
    /// `permit_without_stream`); a response sent forgives the strikes; at
    /// the third strike the server answers GOAWAY `ENHANCE_YOUR_CALM` with
    /// debug data `too_many_pings` and closes the connection, failing its
    /// calls in flight. Defaults: 5 minutes, false (grpc-go's). `min_time`
    /// at most [`MAX_DURATION`](crate::MAX_DURATION), or
    /// [`start`](Self::start) fails; tests shrink it to see the policy in
    /// seconds.
    #[must_use]
    pub fn keepalive_enforcement(
        mut self,
        min_time: Duration,
        permit_without_stream: bool,
    ) -> Self {
        self.limits.keepalive_policy = super::ping_strikes::KeepalivePolicy {
            min_time,
            permit_without_stream,
        };
        self
    }

    /// Concurrent calls per connection (default 256); further streams are
    /// refused by HTTP/2 until one ends.
    #[must_use]
    pub fn max_concurrent_streams(mut self, streams: u32) -> Self {
        self.limits.max_concurrent_streams = streams;
        self
    }

    /// Open connections over all endpoints together (default 512); a
    /// connection beyond the limit is closed as soon as it is accepted.
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.limits.connections = std::sync::Arc::new(tokio::sync::Semaphore::new(connections));
        self
    }

    /// On shutdown, how long calls in flight may still run before their
    /// connections are closed (default 5 s; at most
    /// [`MAX_DURATION`](crate::MAX_DURATION), or [`start`](Self::start) fails).
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.limits.shutdown_grace = grace;
        self
    }

    /// Injected latency, for testing clients against a slow proxy: every
    /// call of the method `rpc` (its name, e.g. `MountVolume`, in every
    /// group version that has it) waits `delay` before it is served, within
    /// the call's `grpc-timeout`. Repeated for several methods; the delays
    /// of one method add up. Each at most [`MAX_DURATION`](crate::MAX_DURATION),
    /// or [`start`](Self::start) fails.
    ///
    /// # Panics
    /// If no API version has a method named `rpc` (a misspelt name would
    /// otherwise inject nothing).
    #[must_use]
    pub fn latency(mut self, rpc: impl Into<String>, delay: Duration) -> Self {
        let rpc = rpc.into();
        assert!(
            is_rpc(&rpc),
            "{rpc:?} is the name of no RPC of any API version"
        );
        let mut latency = self.limits.latency.to_vec();
        latency.push((rpc, delay));
        self.limits.latency = latency.into();
        self
    }

    /// The host time of the real csi-proxy `profile` for every RPC (see
    /// [`LatencyProfile`]), added to the latencies given with
    /// [`ServerBuilder::latency`]. Off by default. A call's work is done
    /// at the host once its host time has passed, also when the caller
    /// has given up by then, as at the proxy.
    #[must_use]
    pub fn latency_profile(mut self, profile: LatencyProfile) -> Self {
        let mut latency = self.limits.latency.to_vec();
        latency.extend(
            profile
                .latencies()
                .map(|(rpc, delay)| (rpc.to_string(), delay)),
        );
        self.limits.latency = latency.into();
        self
    }

    /// Injected failures, for testing clients against a failing proxy: the
    /// next `calls` calls of the method `rpc` (its name, in every group
    /// version that has it, counted together) are answered with `code`
    /// without reaching the host. Repeated for several methods.
    ///
    /// # Panics
    /// If no API version has a method named `rpc`.
    #[must_use]
    pub fn fail_next(mut self, rpc: impl Into<String>, calls: usize, code: tonic::Code) -> Self {
        let rpc = rpc.into();
        assert!(
            is_rpc(&rpc),
            "{rpc:?} is the name of no RPC of any API version"
        );
        // The builder holds the only reference until the server starts.
        let failures = std::sync::Arc::get_mut(&mut self.limits.failures)
            .expect("the failures are shared only once the server starts");
        failures.push(super::listen::Failure {
            rpc,
            code,
            remaining: calls.into(),
        });
        self
    }

    /// Creates every endpoint, then builds the host and starts serving. If
    /// any endpoint cannot be created, the ones already created are closed
    /// and removed, and the sandbox is left as it was.
    ///
    /// A duration given to the builder outside its range (zero for a
    /// timer of the connections, or over [`MAX_DURATION`](crate::MAX_DURATION))
    /// is refused with [`ServerError::DurationOutOfRange`] before anything
    /// is created.
    pub async fn start(self) -> Result<Server, ServerError> {
        self.limits.check()?;
        let lock = match &self.host_config {
            Some(config) if self.host.is_none() => Some(SandboxLock::acquire(&config.sandbox)?),
            _ => None,
        };
        let endpoints = self.serve.unwrap_or_else(GroupVersion::all);
        let mut listeners = Vec::new();
        let mut cleanup = Vec::new();
        for endpoint in &endpoints {
            let bound =
                endpoint_address(self.socket_dir.as_deref(), *endpoint).and_then(|address| {
                    let shown = address.to_string();
                    Listener::bind(address).map_err(|source| ServerError::Listen {
                        address: shown,
                        source,
                    })
                });
            match bound {
                Ok((listener, undo)) => {
                    listeners.push((*endpoint, listener));
                    cleanup.push(undo);
                }
                Err(e) => {
                    drop(listeners);
                    cleanup.into_iter().for_each(Cleanup::run);
                    return Err(e);
                }
            }
        }

        let mut sandbox = None;
        let host = match (self.host, self.host_config) {
            (Some(host), _) => Ok(host),
            (None, Some(config)) => Host::new(config).map_err(ServerError::Host),
            (None, None) => {
                // A sandbox of this server's own, removed with it: a fixed
                // per-process path would be shared (and wiped) by a second
                // server in the same process.
                temporary_sandbox()
                    .and_then(|dir| {
                        let host = Host::new(HostConfig::new(dir.path()))?;
                        sandbox = Some(dir);
                        Ok(host)
                    })
                    .map_err(ServerError::Host)
            }
        };
        let host = match host {
            Ok(host) => host,
            Err(e) => {
                drop(listeners);
                cleanup.into_iter().for_each(Cleanup::run);
                return Err(e);
            }
        };

        let service = ProxyService::new(host.clone());
        let (stop, stopped) = watch::channel(false);
        let mut tasks = JoinSet::new();
        let mut addresses = Vec::new();
        for (endpoint, listener) in listeners {
            addresses.push((endpoint, listener.address().clone()));
            let routes = endpoint.routes(&service);
            tasks.spawn(listener.serve(routes, self.limits.clone(), stopped.clone()));
        }
        tracing::info!(endpoints = addresses.len(), "csi-proxy-server ready");
        Ok(Server {
            host,
            addresses,
            stop,
            tasks,
            cleanup,
            _sandbox: sandbox,
            _lock: lock,
        })
    }
}

/// A running reference server.
///
/// Any client may call it, including those built on gRPC core (Python's
/// grpcio and others) that send the socket path as the HTTP/2
/// `:authority`: see [`LocalAuthority`](crate::authority::LocalAuthority).
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use csi_proxy_client::disk::v1::{self as disk, DiskApi};
/// use csi_proxy_client::server::Server;
///
/// let dir = tempfile::tempdir()?;
/// let server = Server::builder().socket_dir(dir.path()).start().await?;
/// let address = server.address("disk", "v1").unwrap().to_string();
/// let client = disk::Client::connect(&address).await?;
/// let disks = client.list_disk_locations(disk::ListDiskLocationsRequest {}).await?;
/// assert!(disks.disk_locations.len() >= 3);
/// server.shutdown().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Server {
    host: Host,
    addresses: Vec<(GroupVersion, Address)>,
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
    cleanup: Vec<Cleanup>,
    /// The temporary sandbox of a server built without a host, removed on drop.
    _sandbox: Option<tempfile::TempDir>,
    /// The sandbox lock, released on drop.
    _lock: Option<SandboxLock>,
}

impl Server {
    /// A builder with defaults: every group version, the default node in a
    /// temporary sandbox.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// The endpoints served, in creation order.
    pub fn addresses(&self) -> &[(GroupVersion, Address)] {
        &self.addresses
    }

    /// The address of one group version, if served.
    pub fn address(&self, group: &str, version: &str) -> Option<&Address> {
        self.addresses
            .iter()
            .find(|(gv, _)| gv.group == group && gv.version == version)
            .map(|(_, a)| a)
    }

    /// The simulated host, for seeding and assertions.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Waits until any endpoint stops on its own (which only a panic does),
    /// or returns at once if none is running.
    pub async fn wait_for_failure(&mut self) -> Result<(), ServerError> {
        if let Some(Err(e)) = self.tasks.join_next().await {
            std::panic::resume_unwind(e.into_panic());
        }
        Ok(())
    }

    /// Stops accepting connections, lets calls in flight finish within the
    /// grace period, closes every connection, and removes the socket files
    /// this server created (not those another server has put in their place).
    pub async fn shutdown(mut self) -> Result<(), ServerError> {
        let _ = self.stop.send(true);
        while let Some(joined) = self.tasks.join_next().await {
            if let Err(e) = joined {
                std::panic::resume_unwind(e.into_panic());
            }
        }
        for cleanup in self.cleanup.drain(..) {
            cleanup.run();
        }
        Ok(())
    }
}

impl Drop for Server {
    /// A server dropped without [`Server::shutdown`] stops its endpoints
    /// and removes its sockets at once.
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.tasks.abort_all();
        for cleanup in self.cleanup.drain(..) {
            cleanup.run();
        }
    }
}

/// Where `endpoint` listens: its socket in `socket_dir`, or on Windows its
/// named pipe.
fn endpoint_address(
    socket_dir: Option<&std::path::Path>,
    endpoint: GroupVersion,
) -> Result<Address, ServerError> {
    #[cfg(unix)]
    {
        let dir = socket_dir.ok_or(ServerError::NoSocketDir)?;
        Ok(Address::socket_in(dir, endpoint.group, endpoint.version))
    }
    #[cfg(windows)]
    {
        let _ = socket_dir;
        Ok(Address::named_pipe(&Address::endpoint_name(
            endpoint.group,
            endpoint.version,
        )))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::UnixStream;

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    const SETTINGS: u8 = 0x4;
    const PING: u8 = 0x6;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// The header block of a `ListDiskLocations` call to `authority`, each
    /// field a literal without indexing (RFC 7541, 6.2.2).
    fn list_disk_locations(authority: &str) -> Vec<u8> {
        let mut block = Vec::new();
        for (name, value) in [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/v1.Disk/ListDiskLocations"),
            (":authority", authority),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ] {
            block.extend_from_slice(&[0x00, name.len() as u8]);
            block.extend_from_slice(name.as_bytes());
            block.push(value.len() as u8);
            block.extend_from_slice(value.as_bytes());
        }
        block
    }

    /// A raw HTTP/2 client: connects, sends the preface and `SETTINGS`.
    async fn raw_client(server: &Server) -> UnixStream {
        let Address::Unix(path) = server.address("disk", "v1").unwrap() else {
            unreachable!()
        };
        let mut stream = UnixStream::connect(path).await.unwrap();
        // A server at its connection limit may have closed it already.
        let _ = stream.write_all(PREFACE).await;
        let _ = stream.write_all(&frame(SETTINGS, 0, 0, &[])).await;
        stream
    }

    /// The next frame from the server (kind, flags, stream, payload), or
    /// `None` once the server has closed the connection.
    async fn next_frame(stream: &mut UnixStream) -> Option<(u8, u8, u32, Vec<u8>)> {
        let mut header = [0u8; 9];
        if stream.read_exact(&mut header).await.is_err() {
            return None;
        }
        let len =
            usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
        let mut payload = vec![0; len];
        stream.read_exact(&mut payload).await.ok()?;
        let id = u32::from_be_bytes(header[5..9].try_into().unwrap());
        Some((header[3], header[4], id, payload))
    }

    /// Reads frames until the server closes; `true` if it does before `limit`.
    async fn closed_within(stream: &mut UnixStream, limit: Duration) -> bool {
        tokio::time::timeout(limit, async { while next_frame(stream).await.is_some() {} })
            .await
            .is_ok()
    }

    async fn disk_server(builder: ServerBuilder) -> (tempfile::TempDir, Server) {
        let dir = tempfile::tempdir().unwrap();
        let disk_v1 = GroupVersion::parse("disk/v1").unwrap();
        let server = builder
            .socket_dir(dir.path())
            .serve([disk_v1])
            .start()
            .await
            .unwrap();
        (dir, server)
    }

    #[tokio::test]
    async fn durations_out_of_range_are_refused_before_anything_is_created() {
        let over = crate::MAX_DURATION + Duration::from_nanos(1);
        let minute = Duration::from_secs(60);
        let builders = [
            (
                "idle timeout",
                Server::builder().idle_timeout(Duration::ZERO),
            ),
            (
                "idle timeout",
                Server::builder().idle_timeout(Duration::MAX),
            ),
            (
                "keepalive interval",
                Server::builder().keepalive(Duration::ZERO, minute),
            ),
            (
                "keepalive interval",
                Server::builder().keepalive(over, minute),
            ),
            (
                "keepalive timeout",
                Server::builder().keepalive(minute, Duration::ZERO),
            ),
            (
                "keepalive timeout",
                Server::builder().keepalive(minute, over),
            ),
            ("shutdown grace", Server::builder().shutdown_grace(over)),
            (
                "keepalive minimum time",
                Server::builder().keepalive_enforcement(over, false),
            ),
            (
                "injected latency",
                Server::builder().latency("MountVolume", over),
            ),
        ];
        for (setting, builder) in builders {
            let dir = tempfile::tempdir().unwrap();
            let error = builder.socket_dir(dir.path()).start().await.err();
            let Some(ServerError::DurationOutOfRange { setting: named, .. }) = &error else {
                panic!("{setting}: {error:?}");
            };
            assert_eq!(*named, setting);
            assert_eq!(
                std::fs::read_dir(dir.path()).unwrap().count(),
                0,
                "{setting}"
            );
        }
    }

    #[tokio::test]
    async fn a_connection_is_served_with_durations_at_their_bounds() {
        let builder = Server::builder()
            .idle_timeout(crate::MAX_DURATION)
            .keepalive(crate::MIN_PERIOD, crate::MAX_DURATION)
            .shutdown_grace(Duration::ZERO);
        let (_dir, server) = disk_server(builder).await;
        let mut client = raw_client(&server).await;
        client.write_all(&frame(PING, 0, 0, &[7; 8])).await.unwrap();
        loop {
            let (kind, flags, _, payload) = next_frame(&mut client).await.expect("a PING ACK");
            if kind == PING && flags == 1 && payload == [7; 8] {
                break;
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_sends_only_the_preface_is_closed_when_idle() {
        let (_dir, server) =
            disk_server(Server::builder().idle_timeout(Duration::from_secs(30))).await;
        let mut client = raw_client(&server).await;
        let start = tokio::time::Instant::now();
        assert!(closed_within(&mut client, Duration::from_secs(3600)).await);
        assert!(
            start.elapsed() >= Duration::from_secs(30),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_does_not_answer_keepalive_pings_is_closed() {
        let builder = Server::builder()
            .idle_timeout(Duration::from_secs(86_400))
            .keepalive(Duration::from_secs(10), Duration::from_secs(5));
        let (_dir, server) = disk_server(builder).await;
        let mut client = raw_client(&server).await;
        let mut pinged = false;
        let closed = tokio::time::timeout(Duration::from_secs(3600), async {
            while let Some((kind, flags, ..)) = next_frame(&mut client).await {
                pinged |= kind == PING && flags & 0x1 == 0;
            }
        })
        .await;
        assert!(
            closed.is_ok() && pinged,
            "closed {closed:?}, pinged {pinged}"
        );
    }

    /// Sends `pings` PINGs, `apart` from each other, and reads what the
    /// server sends until it closes (or an hour has passed).
    async fn ping(server: &Server, pings: u8, apart: Duration) -> Vec<(u8, u8, u32, Vec<u8>)> {
        let mut client = raw_client(server).await;
        for n in 0..pings {
            if n > 0 {
                tokio::time::sleep(apart).await;
            }
            client.write_all(&frame(PING, 0, 0, &[n; 8])).await.unwrap();
        }
        let mut frames = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(3600), async {
            while let Some(frame) = next_frame(&mut client).await {
                frames.push(frame);
            }
        })
        .await;
        frames
    }

    const GOAWAY: u8 = 0x7;

    /// grpc-go's default policy (`handlePing`, grpc/grpc-go
    /// internal/transport/http2_server.go): with no call in flight, PINGs
    /// must come 2 hours apart; the first is free, three strikes are
    /// allowed, the fourth PING in a row gets GOAWAY ENHANCE_YOUR_CALM
    /// `too_many_pings` and the connection closed.
    #[tokio::test(start_paused = true)]
    async fn the_fourth_ping_too_soon_gets_goaway_too_many_pings_and_the_connection_closed() {
        let (_dir, server) = disk_server(Server::builder()).await;
        let frames = ping(&server, 4, Duration::from_secs(60)).await;
        let last = frames.last().expect("frames from the server");
        assert_eq!(last.0, GOAWAY, "{frames:?}");
        let (_, _, stream, payload) = last;
        assert_eq!(*stream, 0);
        assert_eq!(payload[..4], [0, 0, 0, 0], "no stream was opened");
        assert_eq!(payload[4..8], [0, 0, 0, 0xb], "ENHANCE_YOUR_CALM");
        assert_eq!(&payload[8..], b"too_many_pings");
        let acks = frames.iter().filter(|f| f.0 == PING && f.1 == 1).count();
        assert!(acks >= 3, "{frames:?}");
    }

    /// How many PINGs `frames` acknowledge, and whether they include a
    /// GOAWAY `ENHANCE_YOUR_CALM`.
    fn answered(frames: &[(u8, u8, u32, Vec<u8>)]) -> (usize, bool) {
        let acks = frames.iter().filter(|f| f.0 == PING && f.1 == 1).count();
        let calm = frames
            .iter()
            .any(|f| f.0 == GOAWAY && f.3[4..8] == [0, 0, 0, 0xb]);
        (acks, calm)
    }

    /// A call the client sent right behind the PING that was one too many
    /// is not processed, and the GOAWAY does not cover it: the client may
    /// send it again, and it is done once.
    #[tokio::test(start_paused = true)]
    async fn a_call_behind_the_ping_one_too_many_is_not_processed_nor_covered() {
        let (_dir, server) = disk_server(Server::builder()).await;
        let mut client = raw_client(&server).await;
        for n in 0..3 {
            client.write_all(&frame(PING, 0, 0, &[n; 8])).await.unwrap();
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        let mut burst = frame(PING, 0, 0, &[3; 8]);
        burst.extend(frame(0x1, 0x4, 1, &list_disk_locations("csi-proxy")));
        burst.extend(frame(0x0, 0x1, 1, &[0; 5]));
        client.write_all(&burst).await.unwrap();
        let mut frames = Vec::new();
        while let Some(frame) = next_frame(&mut client).await {
            frames.push(frame);
        }
        let (kind, _, _, payload) = frames.last().expect("frames from the server");
        assert_eq!(*kind, GOAWAY, "{frames:?}");
        assert_eq!(payload[..4], [0, 0, 0, 0], "the GOAWAY covers stream 1");
        assert!(
            frames.iter().all(|f| f.2 != 1),
            "stream 1 was answered: {frames:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn three_pings_too_soon_are_tolerated() {
        let builder = Server::builder().idle_timeout(Duration::from_secs(600));
        let (_dir, server) = disk_server(builder).await;
        let frames = ping(&server, 3, Duration::from_secs(60)).await;
        // Closed by the idle timeout, not by the policy.
        assert_eq!(answered(&frames), (3, false), "{frames:?}");
    }

    /// The policy's minimum shrunk, and PINGs without calls permitted:
    /// PINGs that far apart are never strikes.
    #[tokio::test(start_paused = true)]
    async fn pings_at_the_minimum_time_are_no_strikes_where_permitted() {
        let builder = Server::builder()
            .idle_timeout(Duration::from_secs(3600))
            .keepalive_enforcement(Duration::from_secs(10), true);
        let (_dir, server) = disk_server(builder).await;
        let frames = ping(&server, 8, Duration::from_secs(10)).await;
        assert_eq!(answered(&frames), (8, false), "{frames:?}");
    }

    #[tokio::test]
    async fn the_stream_limit_is_announced_in_the_servers_settings() {
        let (_dir, server) = disk_server(Server::builder().max_concurrent_streams(3)).await;
        let mut client = raw_client(&server).await;
        let (kind, _, _, payload) = next_frame(&mut client).await.unwrap();
        assert_eq!(kind, SETTINGS);
        let settings: Vec<(u16, u32)> = payload
            .chunks(6)
            .map(|s| {
                (
                    u16::from_be_bytes([s[0], s[1]]),
                    u32::from_be_bytes([s[2], s[3], s[4], s[5]]),
                )
            })
            .collect();
        // SETTINGS_MAX_CONCURRENT_STREAMS is 0x3.
        assert!(settings.contains(&(0x3, 3)), "{settings:?}");
    }

    #[tokio::test]
    async fn connections_beyond_the_limit_are_closed_at_once() {
        let (_dir, server) = disk_server(Server::builder().max_connections(2)).await;
        let mut first = raw_client(&server).await;
        let mut second = raw_client(&server).await;
        for held in [&mut first, &mut second] {
            assert_eq!(next_frame(held).await.unwrap().0, SETTINGS);
        }
        let mut third = raw_client(&server).await;
        assert!(
            next_frame(&mut third).await.is_none(),
            "third connection served"
        );

        drop(first);
        // The server notices the closed connection and frees its place.
        let mut served = false;
        for _ in 0..100 {
            let mut next = raw_client(&server).await;
            if next_frame(&mut next).await.is_some() {
                served = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(served, "no connection served after one closed");
    }

    #[tokio::test]
    async fn a_socket_path_as_authority_is_accepted() {
        let (_dir, server) = disk_server(Server::builder()).await;
        let mut client = raw_client(&server).await;
        let block = list_disk_locations("tmp%2Fdir%2Fcsi-proxy-disk-v1.sock");
        client.write_all(&frame(0x1, 0x4, 1, &block)).await.unwrap();
        client
            .write_all(&frame(0x0, 0x1, 1, &[0; 5]))
            .await
            .unwrap();
        loop {
            let (kind, _, stream, payload) =
                next_frame(&mut client).await.expect("connection closed");
            if stream == 1 {
                // HEADERS with the response, not RST_STREAM (0x3).
                assert_eq!(
                    kind, 0x1,
                    "stream 1 answered with frame type {kind}: {payload:?}"
                );
                break;
            }
        }
    }

    #[tokio::test]
    async fn a_huge_path_in_an_error_comes_back_cut_with_its_length() {
        use crate::filesystem::v1::{self as fs, FilesystemApi};
        let dir = tempfile::tempdir().unwrap();
        let fs_v1 = GroupVersion::parse("filesystem/v1").unwrap();
        let server = Server::builder()
            .socket_dir(dir.path())
            .serve([fs_v1])
            .start()
            .await
            .unwrap();
        let client = fs::Client::connect(&server.address("filesystem", "v1").unwrap().to_string())
            .await
            .unwrap();
        let path = format!(r"C:\var\lib\kubelet\{}", "x".repeat(3 << 20));
        let error = client
            .is_symlink(fs::IsSymlinkRequest { path: path.clone() })
            .await
            .unwrap_err();
        let status = error.status().unwrap_or_else(|| panic!("{error}"));
        assert_eq!(status.code(), tonic::Code::Unknown, "{status:?}");
        assert!(status.message().len() < 1024, "{}", status.message().len());
        let text = status.message();
        assert!(
            text.contains(r"C:\var\lib\kubelet\xxxx") && text.contains(" bytes)"),
            "{text}"
        );
        server.shutdown().await.unwrap();
    }

    /// A call past its `grpc-timeout` is ended by the server itself, as
    /// grpc-go does: the raw client here has no timer of its own. The host
    /// gives up waiting for the service after 1 s (30 s by default), so
    /// without the server's guard the answer is the host's `UNKNOWN`
    /// timeout, and the test's blocking thread ends soon after.
    #[tokio::test]
    async fn the_server_ends_a_call_when_its_grpc_timeout_passes() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = HostConfig::new(dir.path().join("node"));
        let slow = "[system]\n[[system.services]]\nname = \"Slow\"\nstart_delay_ms = 600000\n";
        config.seed = Some(crate::host::NodeSeed::from_toml_str(slow).unwrap());
        let system = GroupVersion::parse("system/v1alpha1").unwrap();
        let server = Server::builder()
            .socket_dir(dir.path())
            .serve([system])
            .host_config(config)
            .start()
            .await
            .unwrap();
        server
            .host()
            .lock()
            .system
            .set_timing(crate::host::system::ServiceTiming {
                poll_interval: Duration::from_millis(10),
                timeout: Duration::from_secs(1),
            });
        let Address::Unix(path) = server.address("system", "v1alpha1").unwrap() else {
            unreachable!("Unix sockets off Windows")
        };
        let mut client = UnixStream::connect(path).await.unwrap();
        client.write_all(PREFACE).await.unwrap();
        client.write_all(&frame(SETTINGS, 0, 0, &[])).await.unwrap();
        let mut block = Vec::new();
        for (name, value) in [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/v1alpha1.System/StartService"),
            (":authority", "localhost"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("grpc-timeout", "100m"),
        ] {
            block.extend_from_slice(&[0x00, name.len() as u8]);
            block.extend_from_slice(name.as_bytes());
            block.push(value.len() as u8);
            block.extend_from_slice(value.as_bytes());
        }
        client.write_all(&frame(0x1, 0x4, 1, &block)).await.unwrap();
        // StartServiceRequest { name: "Slow" }, gRPC-framed.
        let message = [0x0a, 4, b'S', b'l', b'o', b'w'];
        let mut body = vec![0, 0, 0, 0, message.len() as u8];
        body.extend_from_slice(&message);
        client.write_all(&frame(0x0, 0x1, 1, &body)).await.unwrap();

        let mut decoder = loona_hpack::Decoder::new();
        let status = tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                let (kind, _, stream, payload) =
                    next_frame(&mut client).await.expect("connection closed");
                if stream != 1 || kind != 0x1 {
                    continue;
                }
                let headers = decoder.decode(&payload).expect("HPACK");
                let status = headers.iter().find(|(n, _)| n.as_slice() == b"grpc-status");
                if let Some((_, value)) = status {
                    return String::from_utf8(value.clone()).unwrap();
                }
            }
        })
        .await
        .expect("no answer within a minute");
        assert_eq!(status, "4", "DEADLINE_EXCEEDED");
        // Closed first, so that the shutdown does not wait out its grace.
        drop(client);
        server.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn servers_without_a_host_get_sandboxes_of_their_own_removed_with_them() {
        let sockets = tempfile::tempdir().unwrap();
        let disk_v1 = GroupVersion::parse("disk/v1").unwrap();
        let start = |dir: &str| {
            let dir = sockets.path().join(dir);
            std::fs::create_dir(&dir).unwrap();
            Server::builder().socket_dir(dir).serve([disk_v1]).start()
        };
        let (a, b) = (start("a").await.unwrap(), start("b").await.unwrap());
        let path = r"C:\var\lib\kubelet\only-in-a";
        a.host().create_dir(path).unwrap();
        assert!(a.host().exists(path));
        assert!(!b.host().exists(path), "the two servers share a sandbox");

        let sandbox_of_a = a.host().host_path(path).unwrap();
        assert!(sandbox_of_a.exists());
        a.shutdown().await.unwrap();
        assert!(
            !sandbox_of_a.exists(),
            "{} outlived its server",
            sandbox_of_a.display()
        );
        assert!(b.host().exists(r"C:\var\lib\kubelet"));
        b.shutdown().await.unwrap();
    }
}
