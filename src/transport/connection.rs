//! [`Connection`]: one gRPC connection to a pipe, a socket or a service in
//! memory, and the options of connecting to it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::uri::PathAndQuery;
use hyper_util::rt::TokioIo;
use tonic::body::Body;
use tonic::transport::{Channel, Endpoint, Uri};
use tower::util::BoxCloneSyncService;
use tower::{BoxError, ServiceExt};

use super::Address;
use crate::Error;

#[cfg(unix)]
type Stream = tokio::net::UnixStream;
#[cfg(windows)]
type Stream = tokio::net::windows::named_pipe::NamedPipeClient;

/// Timeouts for connecting and for each call.
///
/// ```
/// use std::time::Duration;
/// use csi_proxy_client::ConnectOptions;
/// let options = ConnectOptions::default()
///     .with_connect_timeout(Duration::from_secs(2))
///     .with_request_timeout(Duration::from_secs(30));
/// assert_eq!(options.connect_timeout(), Duration::from_secs(2));
/// assert_eq!(options.request_timeout(), Some(Duration::from_secs(30)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    connect_timeout: Duration,
    request_timeout: Option<Duration>,
}

impl Default for ConnectOptions {
    /// A 5 s connect timeout and no request timeout.
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            request_timeout: None,
        }
    }
}

impl ConnectOptions {
    /// How long opening the pipe or socket may take, busy-pipe retries
    /// and, on a pipe, the server's first bytes included (default 5 s).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long each call may take, waiting for a connection included;
    /// a call that takes longer fails with [`Error::Timeout`] (default: none).
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// The connect timeout.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The request timeout, if any.
    pub fn request_timeout(&self) -> Option<Duration> {
        self.request_timeout
    }
}

/// What a connection sends its HTTP requests to: a tonic channel, or a
/// service in memory.
type Backend = BoxCloneSyncService<http::Request<Body>, http::Response<Body>, BackendError>;

/// A backend's failure, wrapping it as its source so that tonic still finds
/// a status or connect error in the chain. (A named error type, not
/// `BoxError` itself, which trips the compiler's lifetime inference in the
/// async trait methods that call through it.)
#[derive(Debug)]
struct BackendError(BoxError);

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the connection failed")
    }
}

impl std::error::Error for BackendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// The endpoint named in the errors of an in-process connection.
pub const IN_PROCESS: &str = "in-process";

/// One gRPC connection to one endpoint; the shared core of every `Client`.
///
/// Backed by an HTTP/2 channel to a pipe or socket ([`Connection::open`]),
/// or by a gRPC service in memory ([`Connection::in_process`]).
#[derive(Clone)]
pub struct Connection {
    grpc: tonic::client::Grpc<Backend>,
    endpoint: Arc<str>,
    request_timeout: Option<Duration>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("endpoint", &self.endpoint)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Dials `address` once (failing fast if nothing listens there) and
    /// builds the channel on that stream.
    pub async fn open(address: &Address, options: &ConnectOptions) -> Result<Self, Error> {
        let first = dial(address, options.connect_timeout).await?;
        let first = Arc::new(Mutex::new(Some(first)));
        let (target, timeout) = (address.clone(), options.connect_timeout);
        let connector = tower::service_fn(move |_: Uri| {
            let first = first.lock().map(|mut f| f.take()).unwrap_or(None);
            let target = target.clone();
            async move {
                let stream = match first {
                    Some(stream) => stream,
                    None => dial(&target, timeout).await?,
                };
                Ok::<_, Error>(TokioIo::new(stream))
            }
        });
        // The URI only fills the :authority header; the connector decides where to go.
        let channel =
            Endpoint::from_static("http://csi-proxy").connect_with_connector_lazy(connector);
        Ok(Self {
            request_timeout: options.request_timeout,
            ..Self::new(channel, address.to_string())
        })
    }

    /// Wraps a channel made elsewhere.
    pub fn from_channel(channel: Channel) -> Self {
        Self::new(channel, "channel".to_string())
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
        Self::new(service, IN_PROCESS.to_string())
    }

    fn new<S>(service: S, endpoint: String) -> Self
    where
        S: tower::Service<http::Request<Body>, Response = http::Response<Body>>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Error: Into<BoxError>,
        S::Future: Send + 'static,
    {
        let backend = BoxCloneSyncService::new(service.map_err(|e| BackendError(e.into())));
        Self {
            grpc: tonic::client::Grpc::new(backend),
            endpoint: endpoint.into(),
            request_timeout: None,
        }
    }

    /// The same connection with calls bounded by `timeout` (none: unbounded).
    pub fn with_request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The request timeout, if any.
    pub fn request_timeout(&self) -> Option<Duration> {
        self.request_timeout
    }

    /// The endpoint, as shown in errors.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// One unary call of `path` (`/v1.Disk/GetDiskStats`).
    pub async fn unary<Req, Resp>(&self, path: &'static str, message: Req) -> Result<Resp, Error>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let mut grpc = self.grpc.clone();
        let mut request = tonic::Request::new(message);
        if let Some(timeout) = self.request_timeout {
            // `grpc-timeout`: the server may stop working on the call when
            // the client has stopped waiting for it.
            request.set_timeout(timeout);
        }
        let call = async {
            grpc.ready()
                .await
                .map_err(|source| self.transport_error(source.0))?;
            let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
            grpc.unary(request, PathAndQuery::from_static(path), codec)
                .await
                .map(tonic::Response::into_inner)
                .map_err(|status| self.status_error(path, status))
        };
        match self.request_timeout {
            None => call.await,
            Some(timeout) => tokio::time::timeout(timeout, call)
                .await
                .unwrap_or_else(|_| Err(self.timeout_error(path, timeout))),
        }
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
