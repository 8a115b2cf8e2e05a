//! grpc-go's keepalive enforcement, which csi-proxy's server has because
//! it builds its server with `grpc.NewServer()` and no keepalive options
//! (kubernetes-csi/csi-proxy `pkg/server/server.go`, v1.1.3 and v1.3.0).
//!
//! As grpc-go does it (grpc/grpc-go v1.33.3, `handlePing` in
//! `internal/transport/http2_server.go`; the defaults in
//! `keepalive/keepalive.go` and `internal/transport/defaults.go`): each PING
//! from the client (not an ACK) that comes sooner than the policy's minimum
//! time after the client's previous PING is a strike; while no call is in
//! flight and the policy does not permit that, the minimum is two hours.
//! Sending a response's headers, data or trailers forgives the strikes:
//! the next PING only starts counting again. A PING that makes the strikes
//! more than two is answered with GOAWAY `ENHANCE_YOUR_CALM`, debug data
//! `too_many_pings`, naming the highest stream the client opened, and the
//! connection is closed.
//!
//! h2 answers PINGs inside its connection and shows a server none of them,
//! and its GOAWAY API carries no debug data, so this is done on the bytes:
//! [`Enforced`] wraps the connection's stream, finds the client's PING and
//! HEADERS frames in what is read, and writes the GOAWAY itself at the next
//! boundary between the frames h2 writes, then fails h2's writes so that
//! the connection ends.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use super::connection::Activity;

/// grpc-go's `EnforcementPolicy` (`keepalive/keepalive.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct KeepalivePolicy {
    /// The shortest time between two PINGs of a client with calls in
    /// flight (grpc-go's `MinTime`; default 5 minutes).
    pub min_time: Duration,
    /// Whether PINGs are allowed as often while no call is in flight
    /// (grpc-go's `PermitWithoutStream`; default false: then the minimum is
    /// two hours).
    pub permit_without_stream: bool,
}

/// Default of [`KeepalivePolicy::min_time`] (grpc-go's
/// `defaultKeepalivePolicyMinTime`).
pub(super) const MIN_TIME: Duration = Duration::from_secs(5 * 60);
/// The shortest time between PINGs while no call is in flight, unless the
/// policy permits them (grpc-go's `defaultPingTimeout`).
const MIN_TIME_WITHOUT_CALLS: Duration = Duration::from_secs(2 * 60 * 60);
/// Strikes allowed; one more closes the connection (grpc-go's `maxPingStrikes`).
const MAX_STRIKES: u32 = 2;

impl Default for KeepalivePolicy {
    fn default() -> Self {
        Self {
            min_time: MIN_TIME,
            permit_without_stream: false,
        }
    }
}

/// The strikes of one connection's client.
pub(super) struct Strikes {
    policy: KeepalivePolicy,
    activity: Arc<Activity>,
    last_ping: Option<Instant>,
    strikes: u32,
}

impl Strikes {
    pub(super) fn new(policy: KeepalivePolicy, activity: Arc<Activity>) -> Self {
        Self {
            policy,
            activity,
            last_ping: None,
            strikes: 0,
        }
    }

    /// A PING from the client: whether it has now pinged too often.
    fn ping(&mut self) -> bool {
        let now = Instant::now();
        let last = self.last_ping.replace(now);
        if self.activity.take_answered() {
            self.strikes = 0;
            return false;
        }
        let min_time = if self.activity.calls() == 0 && !self.policy.permit_without_stream {
            MIN_TIME_WITHOUT_CALLS
        } else {
            self.policy.min_time
        };
        if last.is_some_and(|last| now < last + min_time) {
            self.strikes += 1;
        }
        self.strikes > MAX_STRIKES
    }
}

/// HTTP/2 frame types and flags this module reads (RFC 9113, 6).
const HEADERS: u8 = 0x1;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const ACK: u8 = 0x1;
/// `ENHANCE_YOUR_CALM` (RFC 9113, 7).
const ENHANCE_YOUR_CALM: u32 = 0xb;
/// What grpc-go says in its GOAWAY's debug data.
const TOO_MANY_PINGS: &[u8] = b"too_many_pings";
/// The client's connection preface, before its first frame (RFC 9113, 3.4).
const PREFACE: usize = 24;

/// Where a byte stream of HTTP/2 frames stands: each frame is a 9-byte
/// header (a 24-bit payload length, the type, the flags, a 31-bit stream
/// id) and its payload (RFC 9113, 4.1).
struct Frames {
    /// Bytes to pass over: the rest of the preface or of a payload.
    skip: usize,
    header: [u8; 9],
    /// How much of `header` has been seen.
    filled: usize,
}

impl Frames {
    /// A stream whose frames start after `skip` bytes.
    fn new(skip: usize) -> Self {
        Self {
            skip,
            header: [0; 9],
            filled: 0,
        }
    }

    /// Goes over `bytes`, calling `frame` with each frame header completed;
    /// returns how many bytes it went over: all of them, or, once `frame`
    /// has returned true, those up to the end of that frame.
    fn feed(&mut self, bytes: &[u8], mut frame: impl FnMut(&[u8; 9]) -> bool) -> usize {
        let mut at = 0;
        while at < bytes.len() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len() - at);
                self.skip -= n;
                at += n;
                continue;
            }
            let n = (self.header.len() - self.filled).min(bytes.len() - at);
            self.header[self.filled..self.filled + n].copy_from_slice(&bytes[at..at + n]);
            self.filled += n;
            at += n;
            if self.filled == self.header.len() {
                self.filled = 0;
                let [a, b, c, ..] = self.header;
                self.skip = usize::from(a) << 16 | usize::from(b) << 8 | usize::from(c);
                if frame(&self.header) {
                    let n = self.skip.min(bytes.len() - at);
                    self.skip -= n;
                    return at + n;
                }
            }
        }
        at
    }

    /// How many bytes are left before the next frame starts (0: none, the
    /// stream is between two frames).
    fn to_boundary(&self) -> usize {
        if self.filled > 0 {
            self.header.len() - self.filled
        } else {
            self.skip
        }
    }
}

/// A server connection's stream under [`KeepalivePolicy`]: once the client
/// has pinged too often, the next frame the server writes is a GOAWAY
/// `ENHANCE_YOUR_CALM` `too_many_pings`, and every write after it fails.
pub(super) struct Enforced<S> {
    stream: S,
    strikes: Strikes,
    /// The client's frames, as read.
    incoming: Frames,
    /// The server's frames, as written.
    outgoing: Frames,
    /// The highest stream the client has opened (grpc-go's `maxStreamID`).
    last_stream: u32,
    /// The GOAWAY to write once the client has pinged too often, and how
    /// much of it has been written.
    go_away: Option<(Vec<u8>, usize)>,
}

impl<S> Enforced<S> {
    pub(super) fn new(stream: S, strikes: Strikes) -> Self {
        Self {
            stream,
            strikes,
            incoming: Frames::new(PREFACE),
            outgoing: Frames::new(0),
            last_stream: 0,
            go_away: None,
        }
    }

    /// Counts the PINGs and streams in frames just read; returns how many
    /// of the bytes h2 may see: all of them, or, when a PING is one too
    /// many, those up to its end. What the client sent after that PING is
    /// hidden from h2, so that no stream the GOAWAY does not cover (which
    /// the client may send again) is processed.
    fn read(&mut self, bytes: &[u8]) -> usize {
        let (strikes, last_stream) = (&mut self.strikes, &mut self.last_stream);
        let mut too_many = false;
        let seen = self.incoming.feed(bytes, |header| {
            let [.., kind, flags, a, b, c, d] = *header;
            match kind {
                HEADERS => {
                    *last_stream = (*last_stream).max(u32::from_be_bytes([a & 0x7f, b, c, d]))
                }
                PING if flags & ACK == 0 => too_many = strikes.ping(),
                _ => {}
            }
            too_many
        });
        if too_many {
            tracing::warn!(
                min_time = ?self.strikes.policy.min_time,
                permit_without_stream = self.strikes.policy.permit_without_stream,
                last_stream = self.last_stream,
                "the client sends keepalive PINGs more often than the policy allows: \
                 GOAWAY ENHANCE_YOUR_CALM too_many_pings, connection closed"
            );
            self.go_away = Some((go_away_frame(self.last_stream), 0));
        }
        seen
    }
}

/// GOAWAY `ENHANCE_YOUR_CALM` with `too_many_pings`, covering the streams
/// up to `last_stream`.
fn go_away_frame(last_stream: u32) -> Vec<u8> {
    let length = 8 + TOO_MANY_PINGS.len();
    let mut frame = Vec::with_capacity(9 + length);
    frame.extend_from_slice(&u32::try_from(length).unwrap_or(0).to_be_bytes()[1..]);
    frame.extend_from_slice(&[GOAWAY, 0, 0, 0, 0, 0]);
    frame.extend_from_slice(&last_stream.to_be_bytes());
    frame.extend_from_slice(&ENHANCE_YOUR_CALM.to_be_bytes());
    frame.extend_from_slice(TOO_MANY_PINGS);
    frame
}

impl<S: AsyncWrite + Unpin> Enforced<S> {
    /// Between two frames, with a GOAWAY due: writes it, then fails.
    fn poll_go_away(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let Some((frame, written)) = &mut self.go_away else {
            unreachable!("called with a GOAWAY due");
        };
        while *written < frame.len() {
            match ready!(Pin::new(&mut self.stream).poll_write(cx, &frame[*written..])) {
                Ok(0) => return Poll::Ready(io::ErrorKind::WriteZero.into()),
                Ok(n) => *written += n,
                Err(error) => return Poll::Ready(error),
            }
        }
        if let Err(error) = ready!(Pin::new(&mut self.stream).poll_flush(cx)) {
            return Poll::Ready(error);
        }
        Poll::Ready(io::Error::new(
            io::ErrorKind::BrokenPipe,
            "connection closed after GOAWAY too_many_pings",
        ))
    }

    /// How much of `len` bytes may be written now: all of them, or, with a
    /// GOAWAY due, those up to the end of the frame being written.
    fn writable(&self, len: usize) -> usize {
        match self.go_away {
            Some(_) => self.outgoing.to_boundary().min(len),
            None => len,
        }
    }
}

impl<S: AsyncRead + Unpin> Enforced<S> {
    /// With a GOAWAY due: the rest of the PING that was one too many (h2
    /// answers it, and so writes, and so reaches the GOAWAY), then nothing.
    fn poll_read_rest(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut rest = [0; 64];
        let wanted = self
            .incoming
            .to_boundary()
            .min(rest.len())
            .min(buf.remaining());
        if wanted == 0 {
            return Poll::Pending;
        }
        let mut rest = ReadBuf::new(&mut rest[..wanted]);
        ready!(Pin::new(&mut self.stream).poll_read(cx, &mut rest))?;
        self.incoming.feed(rest.filled(), |_| false);
        buf.put_slice(rest.filled());
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Enforced<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.go_away.is_some() {
            return this.poll_read_rest(cx, buf);
        }
        let before = buf.filled().len();
        let result = ready!(Pin::new(&mut this.stream).poll_read(cx, buf));
        let seen = this.read(&buf.filled()[before..]);
        buf.set_filled(before + seen);
        Poll::Ready(result)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Enforced<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.writable(buf.len()) == 0 && !buf.is_empty() {
            return Poll::Ready(Err(ready!(this.poll_go_away(cx))));
        }
        let buf = &buf[..this.writable(buf.len())];
        let n = ready!(Pin::new(&mut this.stream).poll_write(cx, buf))?;
        this.outgoing.feed(&buf[..n], |_| false);
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.go_away.is_some() {
            // Rare (once per connection at most): one slice at a time, so
            // that no write passes the frame boundary.
            let first = bufs.iter().find(|buf| !buf.is_empty());
            return self.poll_write(cx, first.map_or(&[][..], |buf| &buf[..]));
        }
        let this = &mut *self;
        let mut n = ready!(Pin::new(&mut this.stream).poll_write_vectored(cx, bufs))?;
        let written = n;
        for buf in bufs {
            let part = n.min(buf.len());
            this.outgoing.feed(&buf[..part], |_| false);
            n -= part;
        }
        Poll::Ready(Ok(written))
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    /// With a GOAWAY due and h2 between frames, the GOAWAY goes first.
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.go_away.is_some() && this.outgoing.to_boundary() == 0 {
            let _ = ready!(this.poll_go_away(cx));
        }
        Pin::new(&mut this.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(length: usize, kind: u8, flags: u8, stream: u32) -> Vec<u8> {
        let mut header = u32::try_from(length).unwrap().to_be_bytes()[1..].to_vec();
        header.extend_from_slice(&[kind, flags]);
        header.extend_from_slice(&stream.to_be_bytes());
        header
    }

    #[test]
    fn frames_are_found_whatever_the_reads_cut_them_into() {
        let mut bytes = vec![b'P'; PREFACE];
        bytes.extend(header(3, HEADERS, 0x4, 1));
        bytes.extend([1, 2, 3]);
        bytes.extend(header(8, PING, 0, 0));
        bytes.extend([9; 8]);
        bytes.extend(header(8, PING, ACK, 0));
        bytes.extend([9; 8]);
        bytes.extend(header(0, HEADERS, 0x5, 3));
        for cut in 1..=bytes.len() {
            let mut frames = Frames::new(PREFACE);
            let mut seen = Vec::new();
            for piece in bytes.chunks(cut) {
                frames.feed(piece, |h| {
                    seen.push((h[3], h[4], h[8]));
                    false
                });
            }
            assert_eq!(
                seen,
                [
                    (HEADERS, 0x4, 1),
                    (PING, 0, 0),
                    (PING, ACK, 0),
                    (HEADERS, 0x5, 3)
                ],
                "cut every {cut} bytes"
            );
            assert_eq!(frames.to_boundary(), 0);
        }
    }

    #[test]
    fn going_over_frames_stops_at_the_end_of_the_frame_asked_for() {
        let mut bytes = header(8, PING, 0, 0);
        bytes.extend([9; 8]);
        bytes.extend(header(0, HEADERS, 0x5, 1));
        let mut frames = Frames::new(0);
        assert_eq!(frames.feed(&bytes, |h| h[3] == PING), 17);
        let mut frames = Frames::new(0);
        assert_eq!(frames.feed(&bytes[..12], |h| h[3] == PING), 12);
        assert_eq!(frames.to_boundary(), 5);
    }

    #[test]
    fn the_boundary_is_the_end_of_the_header_or_the_payload_being_written() {
        let mut frames = Frames::new(0);
        frames.feed(&header(8, PING, ACK, 0)[..4], |_| false);
        assert_eq!(frames.to_boundary(), 5);
        frames.feed(&header(8, PING, ACK, 0)[4..], |_| false);
        assert_eq!(frames.to_boundary(), 8);
        frames.feed(&[0; 3], |_| false);
        assert_eq!(frames.to_boundary(), 5);
    }

    #[test]
    fn the_go_away_names_the_last_stream_enhance_your_calm_and_too_many_pings() {
        let frame = go_away_frame(7);
        assert_eq!(frame[..9], header(22, GOAWAY, 0, 0)[..]);
        assert_eq!(frame[9..13], [0, 0, 0, 7]);
        assert_eq!(frame[13..17], [0, 0, 0, 0xb]);
        assert_eq!(&frame[17..], b"too_many_pings");
    }
}
