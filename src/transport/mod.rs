//! Addresses and connections: named pipes on Windows, Unix sockets elsewhere.
//!
//! Every generated `Client` connects through [`Connection`], which dials the
//! pipe or socket once up front (so a missing proxy fails at connect time
//! with an error naming the endpoint, as upstream's Go client does), then
//! hands that stream to a lazily reconnecting tonic channel built with
//! `Endpoint::connect_with_connector_lazy`. Later reconnects dial the same
//! way. On Windows the dial retries while the pipe answers
//! `ERROR_PIPE_BUSY` (all instances taken) until the connect timeout.

mod address;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::uri::PathAndQuery;
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};

pub use address::{Address, SOCKET_DIR_ENV};

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
    /// included (default 5 s).
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

/// One HTTP/2 channel to one endpoint; the shared core of every `Client`.
#[derive(Clone, Debug)]
pub struct Connection {
    grpc: tonic::client::Grpc<Channel>,
    endpoint: Arc<str>,
    request_timeout: Option<Duration>,
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

    fn new(channel: Channel, endpoint: String) -> Self {
        Self {
            grpc: tonic::client::Grpc::new(channel),
            endpoint: endpoint.into(),
            request_timeout: None,
        }
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
        let request = tonic::Request::new(message);
        let call = async {
            grpc.ready()
                .await
                .map_err(|source| self.transport_error(Box::new(source)))?;
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
                .unwrap_or_else(|_| {
                    Err(Error::Timeout {
                        endpoint: self.endpoint.to_string(),
                        method: path.to_string(),
                        after: timeout,
                    })
                }),
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
        if std::error::Error::source(&status).is_some() {
            self.transport_error(Box::new(status))
        } else {
            Error::rpc(self.endpoint.as_ref(), path, status)
        }
    }
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

    /// Opens the pipe, retrying while it is busy until `timeout`; any other
    /// failure (a missing pipe above all) is returned at once.
    pub(super) async fn dial(path: &str, timeout: Duration) -> Result<NamedPipeClient, Error> {
        let start = Instant::now();
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
                Err(source) => {
                    return Err(Error::Connect {
                        endpoint: path.to_string(),
                        source,
                    });
                }
            }
        }
    }
}
