//! Endpoints: a Unix socket per group version, or on Windows a named pipe.

use std::future::Future;
use std::path::{Path, PathBuf};

use tonic::transport::server::Router;

use super::run::{GroupVersion, ServerError};
use crate::transport::Address;

/// A bound endpoint, not yet serving.
pub(super) enum Listener {
    #[cfg(unix)]
    Unix {
        listener: tokio::net::UnixListener,
        path: PathBuf,
    },
    #[cfg(windows)]
    Pipe {
        listener: super::pipe::PipeListener,
        name: String,
    },
}

/// What to undo when the server stops: the socket file, if any.
#[derive(Debug)]
pub(super) struct Cleanup(Option<PathBuf>);

impl Cleanup {
    pub(super) fn run(self) {
        if let Some(path) = self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Listener {
    /// Creates the endpoint of `endpoint`: the socket in `socket_dir`, or
    /// on Windows the pipe `\\.\pipe\csi-proxy-<group>-<version>`.
    pub(super) fn bind(
        socket_dir: Option<&Path>,
        endpoint: GroupVersion,
    ) -> Result<Self, ServerError> {
        #[cfg(unix)]
        {
            let dir = socket_dir.ok_or(ServerError::NoSocketDir)?;
            let path = super::run::socket_path(dir, endpoint);
            let listen_error = |source| ServerError::Listen {
                address: path.display().to_string(),
                source,
            };
            remove_stale_socket(&path).map_err(listen_error)?;
            let listener = tokio::net::UnixListener::bind(&path).map_err(listen_error)?;
            Ok(Listener::Unix { listener, path })
        }
        #[cfg(windows)]
        {
            let _ = socket_dir;
            let address =
                Address::named_pipe(&Address::endpoint_name(endpoint.group, endpoint.version));
            let name = address.to_string();
            let listener =
                super::pipe::PipeListener::bind(&name).map_err(|source| ServerError::Listen {
                    address: name.clone(),
                    source,
                })?;
            Ok(Listener::Pipe { listener, name })
        }
    }

    pub(super) fn address(&self) -> Address {
        match self {
            #[cfg(unix)]
            Listener::Unix { path, .. } => Address::Unix(path.clone()),
            #[cfg(windows)]
            Listener::Pipe { name, .. } => Address::NamedPipe(name.clone()),
        }
    }

    pub(super) fn cleanup(&self) -> Cleanup {
        match self {
            #[cfg(unix)]
            Listener::Unix { path, .. } => Cleanup(Some(path.clone())),
            #[cfg(windows)]
            Listener::Pipe { .. } => Cleanup(None),
        }
    }

    /// Closes the endpoint without serving.
    pub(super) fn remove(self) {
        let cleanup = self.cleanup();
        drop(self);
        cleanup.run();
    }

    /// Serves `router` until `signal` completes; in-flight calls finish first.
    pub(super) async fn serve(
        self,
        router: Router,
        signal: impl Future<Output = ()> + Send,
    ) -> Result<(), tonic::transport::Error> {
        match self {
            #[cfg(unix)]
            Listener::Unix { listener, .. } => {
                let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
                router.serve_with_incoming_shutdown(incoming, signal).await
            }
            #[cfg(windows)]
            Listener::Pipe { listener, .. } => {
                router.serve_with_incoming_shutdown(listener, signal).await
            }
        }
    }
}

/// A socket file left by a server that is gone is removed; one that still
/// answers belongs to a live server and makes the bind fail ("in use").
#[cfg(unix)]
fn remove_stale_socket(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    "address in use: another server is listening on this socket",
                ));
            }
            std::fs::remove_file(path)
        }
        _ => Ok(()),
    }
}
