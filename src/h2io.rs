//! What the client and the server share over h2: a byte stream that counts
//! its reads, the keepalive watch built on that count, and a body read from
//! an h2 stream.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;

/// A byte stream that counts the reads that brought bytes, so that a
/// keepalive timer can tell whether the peer has sent anything since it
/// last looked, without a lock or a wake-up per frame. It can also report
/// when the first bytes arrive ([`Watched::on_first_read`]): a client uses
/// that to know the server has spoken (its SETTINGS).
pub(crate) struct Watched<S> {
    stream: S,
    reads: Arc<AtomicU64>,
    first_read: Option<oneshot::Sender<()>>,
}

impl<S> Watched<S> {
    /// Wraps `stream`, counting its reads into `reads`.
    pub(crate) fn new(stream: S, reads: Arc<AtomicU64>) -> Self {
        Self {
            stream,
            reads,
            first_read: None,
        }
    }

    /// Sends on `first_read` once the first bytes have been read.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn on_first_read(mut self, first_read: oneshot::Sender<()>) -> Self {
        self.first_read = Some(first_read);
        self
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.reads.fetch_add(1, Ordering::Relaxed);
            if let Some(first_read) = self.first_read.take() {
                let _ = first_read.send(());
            }
        }
        result
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The body of an h2 stream: its DATA frames, their flow-control capacity
/// given back as they are read (without that the peer stalls once the
/// windows are spent), then its trailers. `G` is held as long as the body
/// (the client counts a call in flight until its response is dropped).
pub(crate) struct RecvBody<G = ()> {
    body: h2::RecvStream,
    data_done: bool,
    _guard: G,
}

impl<G> RecvBody<G> {
    pub(crate) fn new(body: h2::RecvStream, guard: G) -> Self {
        Self {
            body,
            data_done: false,
            _guard: guard,
        }
    }
}

impl<G: Unpin> http_body::Body for RecvBody<G> {
    type Data = Bytes;
    type Error = h2::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, h2::Error>>> {
        let this = &mut *self;
        if !this.data_done {
            match std::task::ready!(this.body.poll_data(cx)) {
                Some(Ok(data)) => {
                    // Cannot fail: exactly what was received is released.
                    let _ = this.body.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(http_body::Frame::data(data))));
                }
                Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                None => this.data_done = true,
            }
        }
        this.body.poll_trailers(cx).map(|trailers| {
            trailers
                .transpose()
                .map(|t| t.map(http_body::Frame::trailers))
        })
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }
}

/// How a [`watch_silence`] ended.
pub(crate) enum Silence {
    /// A PING had no answer within the timeout: the peer is taken as gone.
    Unanswered,
    /// The connection has ended (its PING failed with this error), or the
    /// caller said so.
    Ended(Option<h2::Error>),
}

/// Watches a connection for a peer gone silent: every `interval`, unless
/// `ended` says the connection is gone, if nothing was read since the last
/// look and `wanted` says so, sends a PING; returns when one has no answer
/// within `timeout`, or when the connection has ended.
pub(crate) async fn watch_silence(
    ping: &mut h2::PingPong,
    reads: &AtomicU64,
    interval: Duration,
    timeout: Duration,
    ended: impl Fn() -> bool,
    wanted: impl Fn() -> bool,
) -> Silence {
    let first = tokio::time::Instant::now() + interval;
    let mut ticks = tokio::time::interval_at(first, interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seen = reads.load(Ordering::Relaxed);
    loop {
        ticks.tick().await;
        if ended() {
            return Silence::Ended(None);
        }
        let now = reads.load(Ordering::Relaxed);
        if now != seen {
            seen = now;
            continue;
        }
        if !wanted() {
            continue;
        }
        match tokio::time::timeout(timeout, ping.ping(h2::Ping::opaque())).await {
            // The PONG was read too.
            Ok(Ok(_)) => seen = reads.load(Ordering::Relaxed),
            Ok(Err(error)) => return Silence::Ended(Some(error)),
            Err(_) => return Silence::Unanswered,
        }
    }
}
