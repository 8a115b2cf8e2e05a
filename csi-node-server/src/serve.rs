//! Serving the plugin on the AF_UNIX socket kubelet dials, on Linux and on
//! Windows (which has AF_UNIX sockets since Windows 10 1803, but tokio has
//! no listener for them there: on Windows builds only, this module has a
//! `windows` submodule that accepts them with `uds_windows` and drives
//! each connection with `async-io`).

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};

use csi_proxy_client::authority::LocalAuthority;
use tokio_stream::StreamExt;
use tonic::body::Body;
use tonic::service::Routes;
use tonic::transport::Server;
use tonic::transport::server::Router;
use tower::layer::util::Identity;
use tower::{Layer, Service};

use crate::plugin::Plugin;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The socket path of an endpoint given as `unix://PATH` (`unix:///tmp/csi.sock`
/// and `unix://C:\csi\csi.sock` alike) or as a bare path.
pub fn socket_path(endpoint: &str) -> Result<PathBuf, String> {
    let path = match endpoint.split_once("://") {
        Some(("unix", path)) => path,
        Some((scheme, _)) => {
            return Err(format!("endpoint {endpoint}: scheme {scheme} is not unix"));
        }
        None => endpoint,
    };
    if path.is_empty() {
        return Err(format!("endpoint {endpoint} has no path"));
    }
    Ok(PathBuf::from(path))
}

/// The directory a plugin served at `socket` keeps its state in by
/// default: `state` beside the socket. The socket lies in the driver's
/// kubelet plugin directory (`/var/lib/kubelet/plugins/<driver>/` on the
/// host, `C:\var\lib\kubelet\plugins\<driver>\` on Windows), which every
/// deployment mounts into the plugin's container and which outlives it.
pub fn state_dir(socket: &Path) -> PathBuf {
    match socket.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join("state"),
        _ => PathBuf::from("state"),
    }
}

/// What [`serve()`] serves: a [`Plugin`], or a tonic [`Router`].
pub trait Services<L> {
    /// The router to serve on the socket at `socket`. A plugin first keeps
    /// what its node keeps in default stores in [`state_dir`] of the
    /// socket ([`Plugin::with_state_dir`]); a router is served as it is.
    fn at_socket(self, socket: &Path) -> io::Result<Router<L>>;
}

impl Services<Identity> for Plugin {
    fn at_socket(self, socket: &Path) -> io::Result<Router> {
        let dir = state_dir(socket);
        let plugin = self.with_state_dir(&dir).map_err(|e| {
            let cause = std::error::Error::source(&e)
                .map(|s| format!(": {s}"))
                .unwrap_or_default();
            io::Error::other(format!(
                "the plugin's state directory {}: {e}{cause}",
                dir.display()
            ))
        })?;
        Ok(plugin.into())
    }
}

impl<L> Services<L> for Router<L> {
    fn at_socket(self, _: &Path) -> io::Result<Router<L>> {
        Ok(self)
    }
}

/// Serves `services` on a socket at `path` until `shutdown` completes,
/// then removes the socket file. `services` is a [`Plugin`] (its Identity
/// and Node services), or a tonic [`Router`] the driver composed: the
/// plugin's [routes](Plugin::routes) with services beside them, in tower
/// layers (`Server::builder().layer(..).add_routes(plugin.routes())`).
/// A file left at `path` by an earlier run is replaced.
///
/// A plugin's node keeps what it must remember across a restart (its
/// records, its SMB references), where the program chose no store for it,
/// in [`state_dir`] of `path`, which is created first: a directory that
/// cannot be created, read or written fails here, before serving. A
/// router is served as it is: call [`Plugin::with_state_dir`] before
/// taking its routes. Every connection
/// goes through [`LocalAuthority`], so that clients sending the socket
/// path as `:authority` (gRPC core's Python, C++ and C#, grpc-java,
/// grpcurl) are answered, not reset by h2.
pub async fn serve<L, ResBody>(
    services: impl Services<L>,
    path: &Path,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()>
where
    L: Layer<Routes>,
    L::Service:
        Service<http::Request<Body>, Response = http::Response<ResBody>> + Clone + Send + 'static,
    <L::Service as Service<http::Request<Body>>>::Future: Send,
    <L::Service as Service<http::Request<Body>>>::Error: Into<BoxError> + Send,
    ResBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    let router = services.at_socket(path)?;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let incoming = listen(path)?.map(|connection| connection.map(LocalAuthority::new));
    tracing::info!(socket = %path.display(), "serving CSI");
    let served = router
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await;
    let removed = std::fs::remove_file(path);
    tracing::info!(socket = %path.display(), "stopped; socket removed");
    served.map_err(io::Error::other)?;
    removed
}

/// A plugin alone: its Identity and Node services, no layers.
impl From<Plugin> for Router {
    fn from(plugin: Plugin) -> Router {
        Server::builder().add_routes(plugin.routes())
    }
}

#[cfg(unix)]
fn listen(
    path: &Path,
) -> io::Result<impl tokio_stream::Stream<Item = io::Result<tokio::net::UnixStream>>> {
    let listener = tokio::net::UnixListener::bind(path)?;
    Ok(tokio_stream::wrappers::UnixListenerStream::new(listener))
}

#[cfg(windows)]
fn listen(
    path: &Path,
) -> io::Result<impl tokio_stream::Stream<Item = io::Result<windows::Stream>>> {
    windows::listen(path)
}

/// Resolves when the process is asked to stop: Ctrl-C, or SIGTERM on Unix
/// (what kubelet sends a container). On Windows, Ctrl-C and Ctrl-Break
/// (what a container runtime sends there).
pub async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(windows)]
    {
        let mut brk = tokio::signal::windows::ctrl_break().expect("Ctrl-Break handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = brk.recv() => {}
        }
    }
    tracing::info!("stop requested");
}

/// AF_UNIX on Windows: `uds_windows` (maintained, used by zbus) makes and
/// accepts the sockets; each connection is driven by `async-io`'s reactor
/// and adapted to tokio's I/O traits here. `uds_windows`' listener does not
/// implement `AsSocket`, which `async-io` requires, so accepting runs on a
/// thread of its own (a blocking `accept`), handing connections over a
/// channel.
#[cfg(windows)]
pub mod windows {
    use std::io;
    use std::path::Path;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll};

    use async_io::Async;
    use futures_io::{AsyncRead, AsyncWrite};
    use tokio::io::ReadBuf;
    use tokio_stream::wrappers::ReceiverStream;

    /// One accepted connection.
    pub struct Stream(Arc<Async<uds_windows::UnixStream>>);

    /// Binds `path` and accepts on a thread until the receiving side is gone.
    pub fn listen(path: &Path) -> io::Result<ReceiverStream<io::Result<Stream>>> {
        let listener = uds_windows::UnixListener::bind(path)?;
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        std::thread::spawn(move || {
            loop {
                let accepted = listener.accept().and_then(|(s, _)| {
                    s.set_nonblocking(true)?;
                    Ok(Stream(Arc::new(Async::new(s)?)))
                });
                if tx.blocking_send(accepted).is_err() {
                    break;
                }
            }
        });
        Ok(ReceiverStream::new(rx))
    }

    impl tonic::transport::server::Connected for Stream {
        type ConnectInfo = ();
        fn connect_info(&self) {}
    }

    impl tokio::io::AsyncRead for Stream {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let mut inner = &*self.0;
            let n =
                std::task::ready!(Pin::new(&mut inner).poll_read(cx, buf.initialize_unfilled()))?;
            buf.advance(n);
            Poll::Ready(Ok(()))
        }
    }

    impl tokio::io::AsyncWrite for Stream {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let mut inner = &*self.0;
            Pin::new(&mut inner).poll_write(cx, buf)
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            let mut inner = &*self.0;
            Pin::new(&mut inner).poll_flush(cx)
        }

        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            let mut inner = &*self.0;
            Pin::new(&mut inner).poll_close(cx)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::socket_path;
    use std::path::PathBuf;

    #[test]
    fn endpoints_name_socket_paths() {
        assert_eq!(
            socket_path("unix:///tmp/csi.sock"),
            Ok(PathBuf::from("/tmp/csi.sock"))
        );
        assert_eq!(
            socket_path(r"unix://C:\var\lib\kubelet\plugins\x\csi.sock"),
            Ok(PathBuf::from(r"C:\var\lib\kubelet\plugins\x\csi.sock"))
        );
        assert_eq!(
            socket_path("/tmp/csi.sock"),
            Ok(PathBuf::from("/tmp/csi.sock"))
        );
        assert!(socket_path("tcp://127.0.0.1:10000").is_err());
        assert!(socket_path("unix://").is_err());
    }

    #[test]
    fn the_state_lies_beside_the_socket() {
        use super::state_dir;
        use std::path::Path;
        assert_eq!(
            state_dir(Path::new("/csi/csi.sock")),
            PathBuf::from("/csi/state")
        );
        assert_eq!(state_dir(Path::new("csi.sock")), PathBuf::from("state"));
    }
}
