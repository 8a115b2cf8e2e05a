//! [`Connection`]: one gRPC connection to a pipe, a socket or a service in
//! memory, and the options of connecting to it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::uri::{Authority, PathAndQuery, Scheme};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;
use tonic::body::Body;
use tonic::transport::Channel;
use tower::BoxError;
use tower::util::BoxCloneSyncService;
use tracing::Instrument;

use super::retry::{self, NotSent, RetryPolicy};
use super::{Address, unary};
use crate::Error;
use crate::h2io::{RecvBody, Silence, Watched, watch_silence};

#[cfg(unix)]
type Stream = tokio::net::UnixStream;
#[cfg(windows)]
type Stream = tokio::net::windows::named_pipe::NamedPipeClient;

/// Timeouts for connecting and for each call, how a connection is kept
/// alive, and which failed calls are tried again ([`RetryPolicy`]).
///
/// ```
/// use std::time::Duration;
/// use csi_proxy_client::ConnectOptions;
/// let options = ConnectOptions::default()
///     .with_connect_timeout(Duration::from_secs(2))
///     .with_request_timeout(Duration::from_secs(30))
///     .with_keepalive_interval(Some(Duration::from_secs(10 * 60)));
/// assert_eq!(options.connect_timeout(), Duration::from_secs(2));
/// assert_eq!(options.request_timeout(), Some(Duration::from_secs(30)));
/// assert_eq!(options.keepalive_interval(), Some(Duration::from_secs(600)));
/// ```
///
/// # Liveness
///
/// Connecting includes the HTTP/2 handshake: the server must send its first
/// frame (its SETTINGS) within the [handshake
/// timeout](Self::with_handshake_timeout), or that connection is dropped and
/// the endpoint dialed again, with twice the wait each time, until the
/// [connect timeout](Self::with_connect_timeout) is spent. A proxy that
/// accepts a connection but never serves it (as a freshly started csi-proxy
/// may do to its first client) costs a redial, not a call's whole deadline.
///
/// Once connected, HTTP/2 PING frames check that the server still answers:
/// once every [keepalive interval](Self::with_keepalive_interval), if
/// nothing has been received since the last look, a PING is sent, and a
/// server that does not answer it within the [keepalive
/// timeout](Self::with_keepalive_timeout) is taken as gone: the connection is
/// closed, the calls on it fail with [`Error::Transport`], and the next call
/// dials again. A server that falls silent is so noticed between one and two
/// intervals after its last frame, plus the timeout.
///
/// # The default keepalive and csi-proxy
///
/// csi-proxy's grpc-go server enforces grpc-go's default keepalive policy
/// (grpc/grpc-go `keepalive/keepalive.go`, `handlePing` in
/// `internal/transport/http2_server.go`): a PING that comes less than 5
/// minutes after the client's previous one (less than 2 hours while no
/// call is in flight) is a strike, a response the server sends forgives
/// them, and the third strike gets GOAWAY `ENHANCE_YOUR_CALM`
/// `too_many_pings` and the connection closed, with the calls on it. So
/// the defaults PING only while a call is in flight and only after
/// [`DEFAULT_KEEPALIVE_INTERVAL`] (6 minutes: the 5 of the policy and a
/// minute of margin) of silence, with 20 s to answer; two PINGs are never
/// closer than the interval. However long a call runs at the proxy (a
/// `FormatVolume` of a large disk, a host under load), its connection
/// stays open and it is sent once. (With PINGs every 60 s, this crate's
/// default before, a call the proxy held for 5 minutes lost its connection
/// at the fourth PING: a read was sent again, a change lost its outcome.)
///
/// The price: a proxy that hangs without closing its pipe is noticed 6 to
/// 12 minutes (plus the 20 s) into a call. A caller that needs to know
/// sooner sets a [request timeout](Self::with_request_timeout), which
/// bounds every call whatever the peer does (the node layer gives each of
/// its operations a deadline); a proxy that exits is noticed at once, as
/// its pipe or socket closes. A shorter interval is for servers whose
/// policy allows it: against csi-proxy, an interval under 5 minutes gets a
/// call cut off once it has been silent for about four intervals.
///
/// Idle PINGs ([`with_keepalive_while_idle`](Self::with_keepalive_while_idle))
/// suit servers that allow them; csi-proxy closes (harmlessly, the next
/// call dials again) the connection of an idle client that PINGs more
/// often than every 2 hours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    connect_timeout: Duration,
    handshake_timeout: Duration,
    request_timeout: Option<Duration>,
    keepalive_interval: Option<Duration>,
    keepalive_timeout: Duration,
    keepalive_while_idle: bool,
    retry: RetryPolicy,
}

/// The default [keepalive interval](ConnectOptions::with_keepalive_interval):
/// 6 minutes, more than the 5 minutes csi-proxy's grpc-go server requires
/// between a client's PINGs.
pub const DEFAULT_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(6 * 60);

impl Default for ConnectOptions {
    /// A 5 s connect timeout, 1 s for the first handshake, no request
    /// timeout, keepalive PINGs after [`DEFAULT_KEEPALIVE_INTERVAL`] of
    /// silence during a call with 20 s to answer, and
    /// [`RetryPolicy::default`]'s safe retries.
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            handshake_timeout: Duration::from_secs(1),
            request_timeout: None,
            keepalive_interval: Some(DEFAULT_KEEPALIVE_INTERVAL),
            keepalive_timeout: Duration::from_secs(20),
            keepalive_while_idle: false,
            retry: RetryPolicy::default(),
        }
    }
}

impl ConnectOptions {
    /// How long connecting may take: opening the pipe or socket (busy-pipe
    /// retries and, on a pipe, the wait for the server's first bytes
    /// included) and the HTTP/2 handshake, redials included (default 5 s;
    /// at most [`MAX_DURATION`](crate::MAX_DURATION), longer is clamped).
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout.min(crate::MAX_DURATION);
        self
    }

    /// How long the first attempt waits for the server's first HTTP/2 frame
    /// before dropping the connection and dialing again; each later attempt
    /// waits twice as long as the one before, all within the connect timeout
    /// (default 1 s; clamped to [`MIN_PERIOD`](crate::MIN_PERIOD) ..=
    /// [`MAX_DURATION`](crate::MAX_DURATION)).
    #[must_use]
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = crate::durations::clamp_period(timeout);
        self
    }

    /// How long each call may take, waiting for a connection and retries
    /// included; a call that takes longer fails with [`Error::Timeout`]
    /// (default: none; at most [`MAX_DURATION`](crate::MAX_DURATION),
    /// longer is clamped).
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout.min(crate::MAX_DURATION));
        self
    }

    /// After how long without a frame from the server a PING is sent (none:
    /// no keepalive PINGs; default [`DEFAULT_KEEPALIVE_INTERVAL`], see
    /// [the default keepalive and csi-proxy](Self#the-default-keepalive-and-csi-proxy); clamped to
    /// [`MIN_PERIOD`](crate::MIN_PERIOD) ..= [`MAX_DURATION`](crate::MAX_DURATION)).
    #[must_use]
    pub fn with_keepalive_interval(mut self, interval: Option<Duration>) -> Self {
        self.keepalive_interval = interval.map(crate::durations::clamp_period);
        self
    }

    /// How long the server has to answer a keepalive PING before the
    /// connection is closed (default 20 s; clamped to
    /// [`MIN_PERIOD`](crate::MIN_PERIOD) ..= [`MAX_DURATION`](crate::MAX_DURATION)).
    #[must_use]
    pub fn with_keepalive_timeout(mut self, timeout: Duration) -> Self {
        self.keepalive_timeout = crate::durations::clamp_period(timeout);
        self
    }

    /// Whether keepalive PINGs are sent while no call is in flight too
    /// (default: no; see [Liveness](Self#liveness)).
    #[must_use]
    pub fn with_keepalive_while_idle(mut self, enabled: bool) -> Self {
        self.keepalive_while_idle = enabled;
        self
    }

    /// Which failed calls are tried again, and how often (default
    /// [`RetryPolicy::default`]; [`RetryPolicy::none`] for one attempt).
    #[must_use]
    pub fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The retry policy.
    pub fn retry(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The connect timeout.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The handshake timeout of the first attempt.
    pub fn handshake_timeout(&self) -> Duration {
        self.handshake_timeout
    }

    /// The request timeout, if any.
    pub fn request_timeout(&self) -> Option<Duration> {
        self.request_timeout
    }

    /// The keepalive interval, if PINGs are sent.
    pub fn keepalive_interval(&self) -> Option<Duration> {
        self.keepalive_interval
    }

    /// The keepalive timeout.
    pub fn keepalive_timeout(&self) -> Duration {
        self.keepalive_timeout
    }

    /// Whether keepalive PINGs are sent while no call is in flight.
    pub fn keepalive_while_idle(&self) -> bool {
        self.keepalive_while_idle
    }

    /// h2's client settings: the windows and limits hyper's HTTP/2 client
    /// used (this crate's client before it drove h2 directly), so that
    /// servers see the same SETTINGS as before.
    fn http2(&self) -> h2::client::Builder {
        const MIB: u32 = 1024 * 1024;
        let mut builder = h2::client::Builder::new();
        builder
            .initial_max_send_streams(100)
            .initial_window_size(2 * MIB)
            .initial_connection_window_size(5 * MIB)
            .max_frame_size(16 * 1024)
            .max_header_list_size(16 * 1024)
            .max_send_buffer_size(MIB as usize)
            .max_local_error_reset_streams(Some(1024))
            .enable_push(false);
        builder
    }
}

/// A service in memory, or a tonic channel, behind a connection.
type BoxService = BoxCloneSyncService<http::Request<Body>, http::Response<Body>, BoxError>;

/// What a connection sends its calls to: an HTTP/2 connection of its own
/// to a pipe or socket, or a service.
#[derive(Clone)]
enum Backend {
    Http2(Arc<Dialer>),
    Service(BoxService),
}

/// The HTTP/2 connection of a [`Connection`] to a pipe or socket, driven
/// with h2 directly: each call clones its `SendRequest`, and a new
/// connection is dialed once that one has closed (the server went away, or
/// stopped answering keepalive PINGs).
struct Dialer {
    address: Address,
    options: ConnectOptions,
    http2: h2::client::Builder,
    /// Where the connection stands; it changes only in [`Dialer::live`],
    /// [`Dialer::reconnect`] and `Drop`.
    link: Mutex<Link>,
    /// Held while dialing, so that the calls that find the connection
    /// closed at once make one new connection, not one each.
    redial: tokio::sync::Mutex<()>,
}

/// The liveness of a [`Dialer`]'s connection.
///
/// `Ready` from [`Connection::open`]'s dial; `Ready` becomes `Closed`
/// when a call finds its driver task ended (the server closed the
/// connection, or the keepalive task found it silent and aborted the
/// driver: PINGs go only while a call is in flight, unless idle PINGs are
/// on); the next call dials again (`Ready`), one dial at a time (`redial`).
/// Dropping the dialer aborts a `Ready` connection's driver.
enum Link {
    /// Open: calls go on it.
    Ready(Live),
    /// Ended; the next call dials again.
    Closed,
}

/// One open HTTP/2 connection.
#[derive(Clone)]
struct Live {
    sender: h2::client::SendRequest<Bytes>,
    shared: Arc<Shared>,
}

/// What a connection's calls and its keepalive task share.
struct Shared {
    /// Calls whose response has not been read to its end.
    calls: AtomicUsize,
    /// The task driving the connection: finished once the connection has
    /// closed; aborting it closes the connection (h2 then fails the calls
    /// on it).
    driver: AbortHandle,
}

impl Dialer {
    /// Sends one call's request (its body whole) and returns the response
    /// once its headers have come; errors before the request was queued
    /// are [`NotSent`].
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Incoming>, BoxError> {
        let live = match self.live() {
            Some(live) => live,
            None => self.reconnect().await.map_err(|e| NotSent(e.into()))?,
        };
        let call = InFlight::new(live.shared);
        let (head, message) = request.into_parts();
        let mut sender = live.sender.ready().await.map_err(|e| NotSent(e.into()))?;
        let (response, mut stream) = sender
            .send_request(http::Request::from_parts(head, ()), false)
            .map_err(|e| NotSent(e.into()))?;
        // Queued right behind the HEADERS, before the connection task next
        // writes: both frames go to the server in one write.
        stream.send_data(message, true)?;
        let response = response.await?;
        Ok(response.map(|body| RecvBody::new(body, call)))
    }

    /// The current connection, unless it has closed (then the link is
    /// `Closed`).
    fn live(&self) -> Option<Live> {
        let mut link = self.link.lock().unwrap_or_else(PoisonError::into_inner);
        match &*link {
            Link::Ready(live) if !live.shared.driver.is_finished() => Some(live.clone()),
            Link::Ready(_) => {
                *link = Link::Closed;
                None
            }
            Link::Closed => None,
        }
    }

    async fn reconnect(&self) -> Result<Live, Error> {
        let _dialing = self.redial.lock().await;
        if let Some(live) = self.live() {
            return Ok(live);
        }
        let live = handshake(&self.address, &self.options, &self.http2).await?;
        *self.link.lock().unwrap_or_else(PoisonError::into_inner) = Link::Ready(live.clone());
        Ok(live)
    }
}

impl Drop for Dialer {
    /// Closes the connection: h2 does not end it when its last
    /// `SendRequest` goes while the connection task waits for the server.
    fn drop(&mut self) {
        let link = self.link.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Link::Ready(live) = std::mem::replace(link, Link::Closed) {
            live.shared.driver.abort();
        }
    }
}

/// A call in flight on a connection, from sending to the end of its
/// response (or its failure).
struct InFlight(Arc<Shared>);

impl InFlight {
    fn new(shared: Arc<Shared>) -> Self {
        shared.calls.fetch_add(1, Ordering::Relaxed);
        Self(shared)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body from h2, counted as a call in flight until dropped.
type Incoming = RecvBody<InFlight>;

/// Dials `address` and starts HTTP/2 on the stream, redialing while the
/// server stays silent (see [`ConnectOptions`]'s liveness), within the
/// connect timeout; the connection is driven by a task of its own, and
/// watched by a keepalive task when PINGs are on.
async fn handshake(
    address: &Address,
    options: &ConnectOptions,
    builder: &h2::client::Builder,
) -> Result<Live, Error> {
    let endpoint = address.to_string();
    let fail = |kind, message: String| Error::Connect {
        endpoint: endpoint.clone(),
        source: std::io::Error::new(kind, message),
    };
    let start = tokio::time::Instant::now();
    let budget = options.connect_timeout;
    let mut wait = options.handshake_timeout;
    for attempt in 1.. {
        let stream = dial(address, budget.saturating_sub(start.elapsed())).await?;
        let (spoke, first_frame) = oneshot::channel();
        let reads = Arc::new(AtomicU64::new(0));
        let io = Watched::new(stream, reads.clone()).on_first_read(spoke);
        let deadline =
            tokio::time::Instant::now() + wait.min(budget.saturating_sub(start.elapsed()));
        let (sender, mut connection) =
            match tokio::time::timeout_at(deadline, builder.handshake::<_, Bytes>(io)).await {
                Ok(Ok(pair)) => pair,
                Ok(Err(e)) => return Err(fail(std::io::ErrorKind::Other, e.to_string())),
                Err(_) => return Err(silent(&endpoint, budget, attempt)),
            };
        let ping = connection.ping_pong();
        let driver = tokio::spawn({
            let endpoint = endpoint.clone();
            async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%endpoint, %error, "HTTP/2 connection ended");
                }
            }
        });
        match tokio::time::timeout_at(deadline, first_frame).await {
            Ok(Ok(())) => {
                let shared = Arc::new(Shared {
                    calls: AtomicUsize::new(0),
                    driver: driver.abort_handle(),
                });
                if let (Some(interval), Some(ping)) = (options.keepalive_interval, ping) {
                    tokio::spawn(keepalive(
                        Keepalive {
                            interval,
                            timeout: options.keepalive_timeout,
                            while_idle: options.keepalive_while_idle,
                        },
                        ping,
                        reads,
                        shared.clone(),
                        endpoint.clone(),
                    ));
                }
                return Ok(Live { sender, shared });
            }
            Ok(Err(_)) => {
                return Err(fail(
                    std::io::ErrorKind::ConnectionAborted,
                    "the server closed the connection before its first HTTP/2 frame".into(),
                ));
            }
            Err(_) => driver.abort(),
        }
        if start.elapsed() >= budget {
            return Err(silent(&endpoint, budget, attempt));
        }
        tracing::warn!(
            %endpoint,
            attempt,
            waited = ?wait,
            "the server sent no HTTP/2 SETTINGS: dropping the connection and dialing again"
        );
        wait = wait.saturating_mul(2);
    }
    unreachable!("the attempts end within the connect timeout")
}

/// The keepalive settings of one connection.
struct Keepalive {
    interval: Duration,
    timeout: Duration,
    while_idle: bool,
}

/// Checks that the server still answers (see [`ConnectOptions`]'s
/// liveness): every `interval`, if nothing was read from the connection
/// since the last look and a call is in flight (or idle PINGs are on), sends
/// a PING, and closes the connection when its answer does not come within
/// the timeout. Ends when the connection has closed.
async fn keepalive(
    settings: Keepalive,
    mut ping: h2::PingPong,
    reads: Arc<AtomicU64>,
    shared: Arc<Shared>,
    endpoint: String,
) {
    let silence = watch_silence(
        &mut ping,
        &reads,
        settings.interval,
        settings.timeout,
        || shared.driver.is_finished(),
        || settings.while_idle || shared.calls.load(Ordering::Relaxed) > 0,
    );
    match silence.await {
        Silence::Ended(Some(error)) => {
            tracing::debug!(%endpoint, %error, "keepalive PING failed: the connection ended");
        }
        Silence::Ended(None) => {}
        Silence::Unanswered => {
            tracing::warn!(
                %endpoint,
                timeout = ?settings.timeout,
                "no answer to a keepalive PING: closing the connection"
            );
            shared.driver.abort();
        }
    }
}

/// The connect error of a server that never spoke.
fn silent(endpoint: &str, budget: Duration, attempts: u32) -> Error {
    Error::Connect {
        endpoint: endpoint.to_string(),
        source: std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "no HTTP/2 SETTINGS from the server within {budget:?} ({attempts} connections tried)"
            ),
        ),
    }
}

/// The endpoint named in the errors of an in-process connection.
pub const IN_PROCESS: &str = "in-process";

/// The authority of every request to a pipe or socket (with the `http`
/// scheme); it only fills the `:authority` and `:scheme` headers.
const AUTHORITY: &str = "csi-proxy";

/// One gRPC connection to one endpoint; the shared core of every `Client`.
///
/// Backed by an HTTP/2 connection to a pipe or socket ([`Connection::open`]),
/// or by a gRPC service in memory ([`Connection::in_process`]).
///
/// Every call is a `tracing` span named `rpc` with OpenTelemetry's RPC
/// attributes: `rpc.system` (`grpc`), `rpc.service` (`v1.Disk`),
/// `rpc.method` (`GetDiskStats`), `rpc.grpc.status_code` (0 on success;
/// 4, `DEADLINE_EXCEEDED`, for [`Error::Timeout`]; 14, `UNAVAILABLE`, for
/// a failed connection), `otel.name`, `otel.kind`, and `endpoint`,
/// `duration_us` and `rpc.retries` (how many times the call was tried
/// again; each retry is an event in the span, with the attempt number, the
/// backoff and the error: see [`RetryPolicy`]).
#[derive(Clone)]
pub struct Connection {
    backend: Backend,
    endpoint: Arc<str>,
    request_timeout: Option<Duration>,
    retry: RetryPolicy,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("endpoint", &self.endpoint)
            .field("request_timeout", &self.request_timeout)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Connects to `address` (failing fast if nothing listens there, and
    /// redialing a server that does not speak HTTP/2 within the handshake
    /// timeout); later calls dial again once that connection has closed.
    pub async fn open(address: &Address, options: &ConnectOptions) -> Result<Self, Error> {
        let http2 = options.http2();
        let first = handshake(address, options, &http2).await?;
        let dialer = Dialer {
            address: address.clone(),
            options: options.clone(),
            http2,
            link: Mutex::new(Link::Ready(first)),
            redial: tokio::sync::Mutex::new(()),
        };
        Ok(Self {
            backend: Backend::Http2(Arc::new(dialer)),
            endpoint: address.to_string().into(),
            request_timeout: options.request_timeout,
            retry: options.retry,
        })
    }

    /// Wraps a channel made elsewhere.
    pub fn from_channel(channel: Channel) -> Self {
        Self::service(channel, "channel".to_string())
    }

    /// A connection to a gRPC service in memory (for instance tonic
    /// `Routes`): calls are encoded and decoded as over a pipe, but go to
    /// `service` directly. Errors name the endpoint [`IN_PROCESS`].
    pub fn in_process<S>(service: S) -> Self
    where
        S: tower::Service<http::Request<Body>, Response = http::Response<Body>>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Error: Into<BoxError>,
        S::Future: Send + 'static,
    {
        Self::service(service, IN_PROCESS.to_string())
    }

    fn service<S>(service: S, endpoint: String) -> Self
    where
        S: tower::Service<http::Request<Body>, Response = http::Response<Body>>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Error: Into<BoxError>,
        S::Future: Send + 'static,
    {
        use tower::ServiceExt;
        let service = BoxCloneSyncService::new(service.map_err(Into::into));
        Self {
            backend: Backend::Service(service),
            endpoint: endpoint.into(),
            request_timeout: None,
            retry: RetryPolicy::none(),
        }
    }

    /// The same connection with calls bounded by `timeout` (none: unbounded).
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The request timeout, if any.
    pub fn request_timeout(&self) -> Option<Duration> {
        self.request_timeout
    }

    /// The same connection with `policy` for retries (those of
    /// [`Connection::open`] follow its options; in-process connections and
    /// wrapped channels make one attempt unless given a policy here).
    #[must_use]
    pub fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The retry policy.
    pub fn retry(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The endpoint, as shown in errors.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// One unary call of `path` (`/v1.Disk/GetDiskStats`), in its own span,
    /// tried again as the [retry policy](RetryPolicy) allows.
    pub async fn unary<Req, Resp>(&self, path: &'static str, message: Req) -> Result<Resp, Error>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let span = rpc_span(path, &self.endpoint);
        let attempts = retry::run(&self.retry, path, self.request_timeout, |budget| {
            self.call(path, &message, budget)
        });
        if span.is_disabled() {
            return attempts.await.0;
        }
        let start = std::time::Instant::now();
        let (result, retries) = attempts.instrument(span.clone()).await;
        span.record("rpc.grpc.status_code", status_code(&result));
        span.record("duration_us", start.elapsed().as_micros() as u64);
        span.record("rpc.retries", retries);
        result
    }

    /// One attempt, within `budget` (what is left of the request timeout).
    async fn call<Req, Resp>(
        &self,
        path: &'static str,
        message: &Req,
        budget: Option<Duration>,
    ) -> Result<Resp, Error>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        // `grpc-timeout`: the server may stop working on the call when the
        // client has stopped waiting for it.
        let request = unary::request(self.uri(path), message, budget);
        let call = async {
            let response = match &self.backend {
                Backend::Http2(dialer) => {
                    let response = dialer
                        .send(request)
                        .await
                        .map_err(|source| self.transport_error(source))?;
                    unary::response(response).await
                }
                Backend::Service(service) => {
                    use tower::{Service, ServiceExt};
                    let mut service = service.clone();
                    let ready = service
                        .ready()
                        .await
                        .map_err(|source| self.transport_error(source))?;
                    let response = ready
                        .call(unary::in_body(request))
                        .await
                        .map_err(|source| self.transport_error(source))?;
                    unary::response(response).await
                }
            };
            response.map_err(|status| self.status_error(path, status))
        };
        match (budget, self.request_timeout) {
            (Some(budget), Some(timeout)) => tokio::time::timeout(budget, call)
                .await
                .unwrap_or_else(|_| Err(self.timeout_error(path, timeout))),
            _ => call.await,
        }
    }

    /// The URI of a call of `path`: with the scheme and authority HTTP/2
    /// needs on a pipe or socket, the path alone for a service.
    fn uri(&self, path: &'static str) -> http::Uri {
        let mut parts = http::uri::Parts::default();
        if let Backend::Http2(_) = self.backend {
            parts.scheme = Some(Scheme::HTTP);
            parts.authority = Some(Authority::from_static(AUTHORITY));
        }
        parts.path_and_query = Some(PathAndQuery::from_static(path));
        http::Uri::from_parts(parts).expect("a static path makes a valid URI")
    }

    fn timeout_error(&self, path: &str, after: Duration) -> Error {
        Error::Timeout {
            endpoint: self.endpoint.to_string(),
            method: path.to_string(),
            after,
        }
    }

    fn transport_error(&self, source: Box<dyn std::error::Error + Send + Sync>) -> Error {
        Error::Transport {
            endpoint: self.endpoint.to_string(),
            source,
        }
    }

    /// A status the server sent is an RPC error; one made locally from a
    /// failed connection (it carries the failure as its source) is a
    /// transport error.
    fn status_error(&self, path: &str, status: tonic::Status) -> Error {
        if let Some(after) = self.request_timeout
            && deadline_passed(&status)
        {
            return self.timeout_error(path, after);
        }
        if std::error::Error::source(&status).is_some() {
            self.transport_error(Box::new(status))
        } else {
            Error::rpc(self.endpoint.as_ref(), path, status)
        }
    }
}

/// The span of one call of `path` (`/v1.Disk/GetDiskStats`).
fn rpc_span(path: &'static str, endpoint: &str) -> tracing::Span {
    let name = path.strip_prefix('/').unwrap_or(path);
    let (service, method) = name.split_once('/').unwrap_or(("", name));
    tracing::info_span!(
        "rpc",
        otel.name = name,
        otel.kind = "client",
        rpc.system = "grpc",
        rpc.service = service,
        rpc.method = method,
        rpc.grpc.status_code = tracing::field::Empty,
        endpoint,
        duration_us = tracing::field::Empty,
        rpc.retries = tracing::field::Empty,
    )
}

/// The gRPC status code of a call's outcome, as OpenTelemetry records it.
fn status_code<T>(result: &Result<T, Error>) -> i32 {
    let code = match result {
        Ok(_) => tonic::Code::Ok,
        Err(Error::Timeout { .. }) => tonic::Code::DeadlineExceeded,
        Err(error) => error.code().unwrap_or(tonic::Code::Unavailable),
    };
    code as i32
}

/// Whether `status` says that the call's `grpc-timeout` passed:
/// `DEADLINE_EXCEEDED` (grpc-go, the in-process transport) or tonic's
/// `CANCELLED` "Timeout expired" (its server, and its channel, which
/// enforces the header on the client side too).
fn deadline_passed(status: &tonic::Status) -> bool {
    status.code() == tonic::Code::DeadlineExceeded
        || (status.code() == tonic::Code::Cancelled
            && status.message() == tonic::TimeoutExpired(()).to_string())
}

/// Opens one stream to `address` within `timeout`.
async fn dial(address: &Address, timeout: Duration) -> Result<Stream, Error> {
    let endpoint = address.to_string();
    let fail = |source: std::io::Error| Error::Connect {
        endpoint: endpoint.clone(),
        source,
    };
    match address {
        #[cfg(unix)]
        Address::Unix(path) => {
            match tokio::time::timeout(timeout, tokio::net::UnixStream::connect(path)).await {
                Ok(result) => result.map_err(fail),
                Err(_) => Err(fail(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer within {timeout:?}"),
                ))),
            }
        }
        #[cfg(windows)]
        Address::NamedPipe(path) => pipe::dial(path, timeout).await,
        _ => Err(fail(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            if cfg!(windows) {
                "Unix sockets are not supported on Windows"
            } else {
                "named pipes exist only on Windows"
            },
        ))),
    }
}

#[cfg(windows)]
mod pipe {
    use std::time::Duration;

    use tokio::net::windows::named_pipe::{ClientOptions, NamedPipeClient};
    use tokio::time::Instant;

    use crate::Error;

    /// `ERROR_PIPE_BUSY`: every instance of the pipe is connected.
    const ERROR_PIPE_BUSY: i32 = 231;
    /// Pause between attempts while the pipe is busy.
    const BUSY_RETRY: Duration = Duration::from_millis(5);
    /// How long a new connection may stay silent before it is given up for
    /// another instance of the pipe; doubled after each silent one.
    const FIRST_SILENCE: Duration = Duration::from_millis(100);

    /// Opens the pipe and waits until the server has sent its first bytes
    /// (an HTTP/2 server speaks first: its SETTINGS frame), all within
    /// `timeout`.
    ///
    /// An instance that stays silent is closed and the pipe opened again.
    /// The real CSI Proxy needs this under Wine: its listener (go-winio)
    /// first creates an instance without read or write access that only
    /// holds the pipe's name; Windows keeps clients off it, but Wine 8
    /// connects the first client to it, and nothing ever reads that
    /// instance. Closed, it takes no further client. (Shown under Wine with
    /// csi-proxy v1.1.3 and v1.3.0, `scripts/real-proxy.sh`; on Windows the
    /// server's SETTINGS come at once and the wait costs nothing more.)
    pub(super) async fn dial(path: &str, timeout: Duration) -> Result<NamedPipeClient, Error> {
        let start = Instant::now();
        let mut silence = FIRST_SILENCE;
        loop {
            let client = open(path, start, timeout).await?;
            let left = timeout.saturating_sub(start.elapsed());
            match tokio::time::timeout(silence.min(left), client.readable()).await {
                Ok(Ok(())) => return Ok(client),
                Ok(Err(source)) => return Err(connect_error(path, source)),
                Err(_) if start.elapsed() >= timeout => {
                    return Err(connect_error(
                        path,
                        std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("the server sent nothing within {timeout:?}"),
                        ),
                    ));
                }
                Err(_) => {
                    tracing::debug!(
                        pipe = path,
                        ?silence,
                        "the pipe instance stayed silent; opening another"
                    );
                    silence *= 2;
                }
            }
        }
    }

    /// Opens the pipe, retrying while it is busy until `timeout` after
    /// `start`; any other failure (a missing pipe above all) is returned at
    /// once.
    async fn open(path: &str, start: Instant, timeout: Duration) -> Result<NamedPipeClient, Error> {
        loop {
            match ClientOptions::new().open(path) {
                Ok(client) => return Ok(client),
                Err(e) if e.raw_os_error() == Some(ERROR_PIPE_BUSY) => {
                    let waited = start.elapsed();
                    if waited >= timeout {
                        return Err(Error::PipeBusy {
                            endpoint: path.to_string(),
                            waited,
                        });
                    }
                    tokio::time::sleep(BUSY_RETRY.min(timeout - waited)).await;
                }
                Err(source) => return Err(connect_error(path, source)),
            }
        }
    }

    fn connect_error(path: &str, source: std::io::Error) -> Error {
        Error::Connect {
            endpoint: path.to_string(),
            source,
        }
    }
}
