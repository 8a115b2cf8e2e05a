//! `Front`: a fake server's front door for the liveness tests, over any
//! stream (Unix sockets, named pipes). It numbers the connections it
//! accepts; the first `silent` of them are held open and never answered (a
//! server that accepts and never speaks), every later one is relayed byte
//! for byte to a real server, until [`Front::wedge`] stops the relays so far
//! (a server that stops answering mid-connection, its streams still open).

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

/// See the module docs.
#[derive(Clone)]
pub struct Front {
    inner: Arc<Inner>,
}

struct Inner {
    accepted: AtomicUsize,
    silent: usize,
    /// Connections numbered below this value are wedged.
    wedged_below: watch::Sender<usize>,
}

impl Front {
    /// A front whose first `silent` connections are never answered.
    pub fn new(silent: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                accepted: AtomicUsize::new(0),
                silent,
                wedged_below: watch::Sender::new(0),
            }),
        }
    }

    /// How many connections were accepted.
    pub fn accepted(&self) -> usize {
        self.inner.accepted.load(Ordering::SeqCst)
    }

    /// Stops every relay so far: no byte passes either way any more, and
    /// both streams stay open. Later connections are relayed as before.
    pub fn wedge(&self) {
        self.inner.wedged_below.send_replace(self.accepted());
    }

    /// Serves one accepted stream (spawn it): silent, or relayed to the
    /// stream `backend` opens.
    pub async fn serve<A, B>(&self, mut stream: A, backend: impl Future<Output = io::Result<B>>)
    where
        A: AsyncRead + AsyncWrite + Unpin,
        B: AsyncRead + AsyncWrite + Unpin,
    {
        let id = self.inner.accepted.fetch_add(1, Ordering::SeqCst);
        if id < self.inner.silent {
            // Accepted, never read from nor written to, never closed.
            std::future::pending::<()>().await;
        }
        let mut backend = backend.await.expect("the backend server is up");
        let mut wedged_below = self.inner.wedged_below.subscribe();
        let wedged = async move {
            let _ = wedged_below.wait_for(|&below| below > id).await;
        };
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut stream, &mut backend) => {}
            () = wedged => {
                // Both streams stay open, and nothing moves.
                std::future::pending::<()>().await;
            }
        }
    }
}
