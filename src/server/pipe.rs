//! Windows named-pipe listener for the tonic servers.
//!
//! A Windows named pipe is not a listening socket. `\\.\pipe\NAME` exists
//! only while at least one *instance* of it exists, and each instance serves
//! exactly one client: the server creates an instance
//! (`CreateNamedPipe`), waits for a client on it (`ConnectNamedPipe`), and
//! from then on that instance is the connection. A client that opens the
//! pipe while no instance is free gets `ERROR_PIPE_BUSY` (231); one that
//! opens it while no instance exists at all gets `ERROR_FILE_NOT_FOUND` (2),
//! exactly as if no server were running.
//!
//! [`PipeListener`] turns that into a stream of connections for
//! [`tonic::transport::Server::serve_with_incoming_shutdown`]:
//!
//! - [`PipeListener::bind`] creates the first instance with
//!   `FILE_FLAG_FIRST_PIPE_INSTANCE`, so if another process (a second CSI
//!   proxy) already serves that pipe, binding fails at once with
//!   [`io::ErrorKind::AddrInUse`] instead of silently sharing the name.
//! - When a client connects to the waiting instance, the listener creates
//!   the **next** instance *before* it hands the connected one to tonic (the
//!   order tokio's `named_pipe` documentation prescribes). There is therefore
//!   always an instance for the next client to find: a client racing the
//!   hand-off sees at worst `ERROR_PIPE_BUSY` (and retries, as the crate's
//!   connector does), never `ERROR_FILE_NOT_FOUND`.
//! - Dropping the listener (tonic drops the stream when the shutdown signal
//!   fires) closes the waiting instance; connections already handed out live
//!   on until tonic has drained them, and the pipe name disappears with the
//!   last instance.
//!
//! Under Wine (8.0), `FILE_FLAG_FIRST_PIPE_INSTANCE` is ignored: a second
//! bind of a pipe that already exists succeeds there, and the two servers
//! share the name. On Windows it fails as described above.
//!
//! Tested in `tests/it/windows_pipes.rs` (on Linux under Wine, with
//! `scripts/test-windows.sh`).
//!
//! Instances are created with the defaults the upstream proxy uses: byte
//! mode, default buffer sizes, the default security descriptor, remote
//! (network) clients rejected.
//!
//! ```text
//! let incoming = PipeListener::bind(r"\\.\pipe\csi-proxy-disk-v1")?;
//! tonic::transport::Server::builder()
//!     .add_service(service)
//!     .serve_with_incoming_shutdown(incoming, shutdown)
//!     .await?;
//! ```

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::windows::named_pipe::{NamedPipeServer, ServerOptions};
use tokio_stream::Stream;
use tonic::transport::server::Connected;

/// `ERROR_ACCESS_DENIED`: what `CreateNamedPipe` returns with
/// `FILE_FLAG_FIRST_PIPE_INSTANCE` when the pipe already exists.
const ERROR_ACCESS_DENIED: i32 = 5;

/// How long the listener waits before it tries again to create an instance
/// after creating one failed (so a persistent failure does not spin).
const RETRY_DELAY: Duration = Duration::from_millis(100);

/// A future that waits for a client on one pipe instance and gives the
/// instance back with the outcome.
type Accept = Pin<Box<dyn Future<Output = (NamedPipeServer, io::Result<()>)> + Send>>;

/// Listens on one Windows named pipe and yields a [`PipeConnection`] per
/// client, as a [`Stream`] for tonic's `serve_with_incoming*`.
///
/// See the [module documentation](self) for how pipe instances are managed.
pub struct PipeListener {
    path: Arc<OsStr>,
    state: State,
}

enum State {
    /// An instance exists and waits for a client.
    Accepting(Accept),
    /// No instance exists because creating one failed; try again after the
    /// delay.
    Retrying(Pin<Box<tokio::time::Sleep>>),
}

impl PipeListener {
    /// Creates the first instance of the named pipe `path` (the full name,
    /// such as `\\.\pipe\csi-proxy-disk-v1`) and starts listening on it.
    ///
    /// Must be called within a tokio runtime (the instance is registered
    /// with its I/O driver).
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::AddrInUse`] if the pipe already exists (another
    /// process, such as a second CSI proxy, serves it); any other error of
    /// `CreateNamedPipe` (an invalid name, for instance) as it is.
    pub fn bind(path: impl AsRef<OsStr>) -> io::Result<Self> {
        let path: Arc<OsStr> = Arc::from(path.as_ref());
        let first = ServerOptions::new()
            .first_pipe_instance(true)
            .create(&*path)
            .map_err(|err| first_instance_error(&path, err))?;
        tracing::debug!(pipe = %path.display(), "listening on named pipe");
        Ok(Self {
            state: State::Accepting(accept(first)),
            path,
        })
    }

    /// Creates one more instance of the pipe (not the first).
    fn create_instance(&self) -> io::Result<NamedPipeServer> {
        ServerOptions::new().create(&*self.path)
    }

    /// Replaces the instance that was just consumed: either a new one
    /// waiting for a client, or, if it cannot be created, a retry later.
    fn replace_instance(&mut self) {
        self.state = match self.create_instance() {
            Ok(next) => State::Accepting(accept(next)),
            Err(err) => {
                tracing::warn!(
                    pipe = %self.path.display(),
                    error = %err,
                    "cannot create the next named pipe instance; retrying",
                );
                State::Retrying(Box::pin(tokio::time::sleep(RETRY_DELAY)))
            }
        };
    }
}

/// Starts waiting for a client on `server`.
fn accept(server: NamedPipeServer) -> Accept {
    Box::pin(async move {
        let result = server.connect().await;
        (server, result)
    })
}

/// Turns the error of creating the first instance into a clear one.
fn first_instance_error(path: &OsStr, err: io::Error) -> io::Error {
    if err.raw_os_error() == Some(ERROR_ACCESS_DENIED) {
        io::Error::new(
            io::ErrorKind::AddrInUse,
            format!(
                "named pipe {} is already in use (is another CSI proxy running?): {err}",
                path.display()
            ),
        )
    } else {
        io::Error::new(
            err.kind(),
            format!("cannot create named pipe {}: {err}", path.display()),
        )
    }
}

impl Stream for PipeListener {
    type Item = io::Result<PipeConnection>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            match &mut this.state {
                State::Retrying(delay) => {
                    ready!(delay.as_mut().poll(cx));
                    match this.create_instance() {
                        Ok(server) => this.state = State::Accepting(accept(server)),
                        Err(err) => {
                            this.state = State::Retrying(Box::pin(tokio::time::sleep(RETRY_DELAY)));
                            return Poll::Ready(Some(Err(err)));
                        }
                    }
                }
                State::Accepting(pending) => {
                    let (server, result) = ready!(pending.as_mut().poll(cx));
                    // Next instance first, then hand off: a client must never
                    // find the pipe without an instance.
                    this.replace_instance();
                    return Poll::Ready(Some(match result {
                        Ok(()) => Ok(PipeConnection {
                            inner: server,
                            path: Arc::clone(&this.path),
                        }),
                        Err(err) => {
                            tracing::debug!(
                                pipe = %this.path.display(),
                                error = %err,
                                "named pipe client failed to connect",
                            );
                            Err(err)
                        }
                    }));
                }
            }
        }
    }
}

impl fmt::Debug for PipeListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipeListener")
            .field("path", &self.path)
            .field(
                "state",
                &match self.state {
                    State::Accepting(_) => "accepting",
                    State::Retrying(_) => "retrying",
                },
            )
            .finish()
    }
}

/// One client's connection: a connected instance of the pipe.
///
/// Dropping it closes the instance, which the client sees as the end of the
/// connection.
#[derive(Debug)]
pub struct PipeConnection {
    inner: NamedPipeServer,
    path: Arc<OsStr>,
}

/// What tonic records about a [`PipeConnection`] (available to services
/// through the request's extensions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipeConnectInfo {
    /// The full name of the pipe the client connected to.
    pub path: OsString,
}

impl Connected for PipeConnection {
    type ConnectInfo = PipeConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        PipeConnectInfo {
            path: self.path.to_os_string(),
        }
    }
}

impl AsyncRead for PipeConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for PipeConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
