//! Normalises the HTTP/2 `:authority` of requests on local connections.
//!
//! gRPC clients built on gRPC core (Python's grpcio, C++, C#, Ruby),
//! grpc-java, grpc-swift and grpcurl send the path of a Unix socket,
//! percent-encoded, as the `:authority` of every request (for example
//! `tmp%2Fdir%2Fcsi-proxy-disk-v1.sock`). The `h2` crate under hyper and
//! tonic parses `:authority` with `http::uri::Authority` and resets the
//! stream with `PROTOCOL_ERROR` when that fails, so such a client cannot
//! call a tonic server at all. On a local socket or pipe the authority
//! means nothing, so [`LocalAuthority`] rewrites a value that would be
//! refused to `localhost` before h2 reads it.
//!
//! How: [`LocalAuthority`] wraps the byte stream a server reads from a
//! client. It passes the connection preface and every frame through
//! unchanged, except the header blocks (HEADERS with their CONTINUATION
//! frames). Those it decodes with an HPACK decoder that follows the client's
//! dynamic table, and re-encodes as literals that never touch the dynamic
//! table, which is valid for any HPACK decoder (h2's table simply stays
//! empty). Padding is dropped; stream id, `END_STREAM` and the priority
//! fields are kept; the block is split into frames of at most 16 KiB, the
//! size every HTTP/2 peer accepts. What the server writes is not touched.
//!
//! A client keeps one authority for all the requests of a connection. When
//! the first header block needs no change (grpc-go, tonic), it goes on with
//! its HPACK bytes as they were, and the rest of the connection passes
//! through without being decoded: such clients pay for one decoded block.
//!
//! A block is held until it is complete, so what a client may make it hold
//! is bounded as h2 bounds its own: a header frame over 16 KiB (the
//! `SETTINGS_MAX_FRAME_SIZE` h2's and hyper's servers keep), a block over
//! 64 KiB (compressed or decoded), or more than 5 CONTINUATION frames in a
//! block (empty ones too) ends the connection: h2 is handed a CONTINUATION
//! frame that belongs to no block, answers it with GOAWAY
//! (`PROTOCOL_ERROR`) and closes the connection. A connection so holds at
//! most about 100 KiB here, whatever the client sends.
//!
//! Use it on any tonic or hyper server that listens on a local socket:
//!
//! ```no_run
//! # async fn run(routes: tonic::service::Routes) -> Result<(), Box<dyn std::error::Error>> {
//! use csi_proxy_client::authority::LocalAuthority;
//! use tokio_stream::StreamExt;
//!
//! let listener = tokio::net::UnixListener::bind("/tmp/plugin.sock")?;
//! let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener)
//!     .map(|stream| stream.map(LocalAuthority::new));
//! tonic::transport::Server::builder()
//!     .add_routes(routes)
//!     .serve_with_incoming(incoming)
//!     .await?;
//! # Ok(()) }
//! ```

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The value a refused `:authority` is replaced with.
const REPLACEMENT: &[u8] = b"localhost";
/// The client connection preface (RFC 9113, section 3.4).
const PREFACE_LEN: usize = 24;
const FRAME_HEADER_LEN: usize = 9;
/// The initial `SETTINGS_MAX_FRAME_SIZE`, which h2's and hyper's servers
/// keep: frames written here carry at most this much payload, and a HEADERS
/// or CONTINUATION frame from the client declared larger ends the
/// connection before any of its payload is held (h2 would refuse it too).
const MAX_FRAME_PAYLOAD: usize = 16_384;
/// A header block (compressed, or decoded in HPACK's size accounting)
/// larger than this ends the connection. h2 behind the wrapper answers
/// header lists over its own limit (16 KiB in hyper's server and in this
/// crate's) by refusing the request, so whatever h2 would serve passes,
/// and a connection never holds more than this of a block.
const MAX_BLOCK: usize = 64 * 1024;
/// CONTINUATION frames without `END_HEADERS` allowed in one block, empty
/// ones included: h2's own count for 16 KiB frames and a 64 KiB header
/// list (`max(5, n + n / 4)` with `n` = 64 KiB / 16 KiB), so that a client
/// cannot keep a block open with frames that add nothing.
const MAX_CONTINUATIONS: usize = 5;
/// What h2 is handed in place of a refused header block: a CONTINUATION
/// frame that follows no HEADERS, which h2 answers with GOAWAY
/// (`PROTOCOL_ERROR`) before it closes the connection. The refused block
/// never reached h2 (blocks are passed on whole), so h2 is between frames.
const STRAY_CONTINUATION: [u8; FRAME_HEADER_LEN] = [0, 0, 0, CONTINUATION, END_HEADERS, 0, 0, 0, 1];
/// The dynamic table size the server side advertises (h2's default).
const HEADER_TABLE_SIZE: usize = 4_096;

const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;

/// Why a client's byte stream could not be rewritten; the connection ends.
#[derive(Debug)]
struct RewriteError(String);

impl fmt::Display for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP/2 header block refused: {}", self.0)
    }
}

impl std::error::Error for RewriteError {}

fn refuse(reason: impl Into<String>) -> RewriteError {
    RewriteError(reason.into())
}

/// Header fields as names and values.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// A header block being collected: HEADERS seen, `END_HEADERS` not yet.
struct Block {
    stream_id: [u8; 4],
    end_stream: bool,
    priority: Option<[u8; 5]>,
    fragment: Vec<u8>,
    /// CONTINUATION frames so far, the last (with `END_HEADERS`) aside.
    continuations: usize,
}

/// Where the rewriter is in the client's byte stream.
enum State {
    /// This many bytes of the connection preface still pass through.
    Preface(usize),
    /// At a frame boundary.
    FrameHeader,
    /// This many bytes of a frame that is not a header block still pass
    /// through.
    Passthrough(usize),
    /// A HEADERS or CONTINUATION frame whose payload is being collected.
    HeaderPayload { header: [u8; FRAME_HEADER_LEN] },
}

/// The rewriting itself, without I/O: bytes from the client in, bytes for
/// the server out.
struct Rewriter {
    state: State,
    input: Vec<u8>,
    decoder: loona_hpack::Decoder<'static>,
    block: Option<Block>,
    mode: Mode,
}

/// What the rewriter does with the connection's header blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// No header block yet: the first one decides.
    First,
    /// The first block needed a new `:authority`: every block is decoded
    /// and re-encoded.
    Rewrite,
    /// The first block needed no change, so it went on with its HPACK
    /// bytes as they were (the server's table follows the client's), and so
    /// does everything after it: a client keeps one authority per
    /// connection, and grpc-go or tonic clients then cost nothing more.
    Passthrough,
}

impl Rewriter {
    fn new() -> Self {
        let mut decoder = loona_hpack::Decoder::new();
        decoder.set_max_allowed_table_size(HEADER_TABLE_SIZE);
        Self {
            state: State::Preface(PREFACE_LEN),
            input: Vec::new(),
            decoder,
            block: None,
            mode: Mode::First,
        }
    }

    /// Bytes of the client's held back: a partial frame and a header block
    /// being collected.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.input.len() + self.block.as_ref().map_or(0, |b| b.fragment.len())
    }

    /// Whether everything from now on passes unchanged and nothing is held
    /// back: reads may then bypass the rewriter.
    fn passes_everything(&self) -> bool {
        self.mode == Mode::Passthrough && self.input.is_empty()
    }

    /// Takes `bytes` read from the client and appends to `out` everything
    /// that can be passed on so far.
    fn push(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), RewriteError> {
        self.input.extend_from_slice(bytes);
        let mut at = 0;
        loop {
            let available = &self.input[at..];
            if self.mode == Mode::Passthrough {
                out.extend_from_slice(available);
                at += available.len();
                break;
            }
            match self.state {
                State::Preface(left) | State::Passthrough(left) => {
                    let n = left.min(available.len());
                    out.extend_from_slice(&available[..n]);
                    at += n;
                    if n < left {
                        self.state = match self.state {
                            State::Preface(_) => State::Preface(left - n),
                            _ => State::Passthrough(left - n),
                        };
                        break;
                    }
                    self.state = State::FrameHeader;
                }
                State::FrameHeader => {
                    let Some(header) = available.first_chunk::<FRAME_HEADER_LEN>() else {
                        break;
                    };
                    let header = *header;
                    at += FRAME_HEADER_LEN;
                    let kind = header[3];
                    if kind == HEADERS || kind == CONTINUATION {
                        let len = payload_len(&header);
                        if len > MAX_FRAME_PAYLOAD {
                            return Err(refuse(format!(
                                "a header frame of {len} bytes, over the {MAX_FRAME_PAYLOAD} allowed"
                            )));
                        }
                        self.state = State::HeaderPayload { header };
                    } else {
                        if self.block.is_some() {
                            return Err(refuse("header block interrupted by another frame"));
                        }
                        out.extend_from_slice(&header);
                        self.state = State::Passthrough(payload_len(&header));
                    }
                }
                State::HeaderPayload { header } => {
                    let len = payload_len(&header);
                    if available.len() < len {
                        break;
                    }
                    let payload = available[..len].to_vec();
                    at += len;
                    self.state = State::FrameHeader;
                    self.header_frame(&header, &payload, out)?;
                }
            }
        }
        self.input.drain(..at);
        Ok(())
    }

    /// A HEADERS or CONTINUATION frame: adds its fragment to the block and
    /// writes the block once it is complete.
    fn header_frame(
        &mut self,
        header: &[u8; FRAME_HEADER_LEN],
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), RewriteError> {
        let (kind, flags) = (header[3], header[4]);
        let stream_id: [u8; 4] = header[5..9].try_into().expect("4 bytes");
        if kind == CONTINUATION {
            let Some(block) = self.block.as_mut() else {
                // Not part of a block: h2 reports the protocol error.
                out.extend_from_slice(header);
                out.extend_from_slice(payload);
                return Ok(());
            };
            if block.stream_id != stream_id {
                return Err(refuse("CONTINUATION on another stream"));
            }
            if flags & END_HEADERS == 0 {
                block.continuations += 1;
                if block.continuations > MAX_CONTINUATIONS {
                    return Err(refuse(format!(
                        "more than {MAX_CONTINUATIONS} CONTINUATION frames in a header block"
                    )));
                }
            }
            if block.fragment.len() + payload.len() > MAX_BLOCK {
                return Err(refuse(format!("a header block over {MAX_BLOCK} bytes")));
            }
            block.fragment.extend_from_slice(payload);
        } else {
            if self.block.is_some() {
                return Err(refuse("HEADERS inside a header block"));
            }
            let mut rest = payload;
            let mut pad = 0;
            if flags & PADDED != 0 {
                let (&len, tail) = rest.split_first().ok_or_else(|| refuse("no pad length"))?;
                pad = usize::from(len);
                rest = tail;
            }
            let mut priority = None;
            if flags & PRIORITY != 0 {
                let (fields, tail) = rest
                    .split_first_chunk::<5>()
                    .ok_or_else(|| refuse("short priority fields"))?;
                priority = Some(*fields);
                rest = tail;
            }
            let fragment = rest
                .get(..rest.len().wrapping_sub(pad))
                .filter(|_| pad <= rest.len())
                .ok_or_else(|| refuse("padding longer than the frame"))?;
            self.block = Some(Block {
                stream_id,
                end_stream: flags & END_STREAM != 0,
                priority,
                fragment: fragment.to_vec(),
                continuations: 0,
            });
        }
        if flags & END_HEADERS != 0 {
            let block = self.block.take().expect("a block is being collected");
            let (fields, replaced) = self.decode(&block.fragment)?;
            if self.mode == Mode::First && !replaced {
                write_block(&block, &block.fragment, out);
                self.mode = Mode::Passthrough;
            } else {
                write_block(&block, &encode(&fields), out);
                self.mode = Mode::Rewrite;
            }
        }
        Ok(())
    }

    /// Decodes a complete block with the client's dynamic table and
    /// replaces an `:authority` h2 would refuse; says whether it did.
    fn decode(&mut self, fragment: &[u8]) -> Result<(Fields, bool), RewriteError> {
        let mut fields = Vec::new();
        let mut size = 0usize;
        self.decoder
            .decode_with_cb(fragment, |name, value| {
                // HPACK's accounting: name, value and 32 bytes per field.
                size += name.len() + value.len() + 32;
                if size <= MAX_BLOCK {
                    fields.push((name.into_owned(), value.into_owned()));
                }
            })
            .map_err(|e| refuse(format!("HPACK: {e:?}")))?;
        if size > MAX_BLOCK {
            return Err(refuse(format!(
                "a header list of {size} bytes decoded, over {MAX_BLOCK}"
            )));
        }
        let mut replaced = false;
        for (name, value) in &mut fields {
            if name == b":authority" && http::uri::Authority::try_from(value.as_slice()).is_err() {
                tracing::trace!(authority = %String::from_utf8_lossy(value), "authority replaced");
                *value = REPLACEMENT.to_vec();
                replaced = true;
            }
        }
        Ok((fields, replaced))
    }
}

fn payload_len(header: &[u8; FRAME_HEADER_LEN]) -> usize {
    usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2])
}

/// Encodes `fields` as literals without indexing, with literal names and no
/// Huffman coding: valid whatever the decoder's table holds.
fn encode(fields: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0x00);
        for text in [name, value] {
            // The string's length with a 7-bit prefix, Huffman bit clear.
            loona_hpack::encoder::encode_integer_into(text.len(), 7, 0, &mut out)
                .expect("writing to a Vec cannot fail");
            out.extend_from_slice(text);
        }
    }
    out
}

/// Writes `encoded` as a HEADERS frame followed by as many CONTINUATION
/// frames as needed.
fn write_block(block: &Block, encoded: &[u8], out: &mut Vec<u8>) {
    let priority: &[u8] = block.priority.as_ref().map_or(&[], |p| &p[..]);
    let first = encoded.len().min(MAX_FRAME_PAYLOAD - priority.len());
    let mut flags = 0;
    if block.end_stream {
        flags |= END_STREAM;
    }
    if block.priority.is_some() {
        flags |= PRIORITY;
    }
    let mut chunks = std::iter::once(&encoded[..first])
        .chain(encoded[first..].chunks(MAX_FRAME_PAYLOAD))
        .peekable();
    let mut kind = HEADERS;
    let mut lead = priority;
    while let Some(chunk) = chunks.next() {
        if chunks.peek().is_none() {
            flags |= END_HEADERS;
        }
        let len = lead.len() + chunk.len();
        out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
        out.extend_from_slice(&block.stream_id);
        out.extend_from_slice(lead);
        out.extend_from_slice(chunk);
        (kind, flags, lead) = (CONTINUATION, 0, &[]);
    }
}

/// A client connection whose request headers are rewritten so that h2
/// accepts any `:authority`: header blocks are decoded with the client's
/// HPACK table and re-encoded as plain literals, a `:authority` h2 would
/// refuse (such as a percent-encoded socket path) becoming `localhost`;
/// every other frame passes unchanged.
///
/// Reads go through the rewriting; writes go to the wrapped stream as they
/// are. It implements tonic's `Connected` with the wrapped stream's
/// connection info, so it fits `serve_with_incoming`.
pub struct LocalAuthority<IO> {
    io: IO,
    rewriter: Rewriter,
    /// Rewritten bytes not yet read, from `at` on.
    ready: Vec<u8>,
    at: usize,
    scratch: Box<[u8]>,
    /// Why the client's bytes were refused: once h2 has read
    /// [`STRAY_CONTINUATION`], reads fail with it.
    refused: Option<RewriteError>,
}

impl<IO> LocalAuthority<IO> {
    /// Wraps a fresh client connection (nothing read from it yet).
    pub fn new(io: IO) -> Self {
        Self {
            io,
            rewriter: Rewriter::new(),
            ready: Vec::new(),
            at: 0,
            scratch: vec![0; 16 * 1024].into_boxed_slice(),
            refused: None,
        }
    }

    /// The wrapped connection.
    pub fn get_ref(&self) -> &IO {
        &self.io
    }
}

impl<IO> fmt::Debug for LocalAuthority<IO> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalAuthority")
            .field("pending", &(self.ready.len() - self.at))
            .finish_non_exhaustive()
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for LocalAuthority<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.at < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.at);
                buf.put_slice(&this.ready[this.at..this.at + n]);
                this.at += n;
                if this.at == this.ready.len() {
                    this.ready.clear();
                    this.at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if let Some(error) = &this.refused {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    error.to_string(),
                )));
            }
            if this.rewriter.passes_everything() {
                // Straight into the caller's buffer, without the two copies
                // through `scratch` and `ready`.
                return Pin::new(&mut this.io).poll_read(cx, buf);
            }
            let mut scratch = ReadBuf::new(&mut this.scratch);
            ready!(Pin::new(&mut this.io).poll_read(cx, &mut scratch))?;
            if scratch.filled().is_empty() {
                return Poll::Ready(Ok(())); // end of stream
            }
            if let Err(error) = this.rewriter.push(scratch.filled(), &mut this.ready) {
                tracing::debug!(%error, "client connection closed with GOAWAY");
                this.ready.extend_from_slice(&STRAY_CONTINUATION);
                this.refused = Some(error);
            }
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for LocalAuthority<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<IO: tonic::transport::server::Connected> tonic::transport::server::Connected
    for LocalAuthority<IO>
{
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFACE: &[u8; PREFACE_LEN] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// Splits server-bound bytes (after the preface) into frames.
    fn frames(mut bytes: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let header: [u8; 9] = bytes[..9].try_into().unwrap();
            let len = payload_len(&header);
            let stream = u32::from_be_bytes(header[5..9].try_into().unwrap());
            out.push((header[3], header[4], stream, bytes[9..9 + len].to_vec()));
            bytes = &bytes[9 + len..];
        }
        out
    }

    /// What h2 would decode from the rewritten blocks, with a table of its own.
    fn server_view(out: &[u8]) -> Vec<Vec<(String, String)>> {
        assert_eq!(&out[..PREFACE_LEN], PREFACE);
        let mut decoder = loona_hpack::Decoder::new();
        let mut blocks = Vec::new();
        let mut block = Vec::new();
        for (kind, flags, _, payload) in frames(&out[PREFACE_LEN..]) {
            if kind == HEADERS || kind == CONTINUATION {
                assert_eq!(flags & PADDED, 0);
                let skip = if flags & PRIORITY != 0 { 5 } else { 0 };
                block.extend_from_slice(&payload[skip..]);
                if flags & END_HEADERS != 0 {
                    let fields = decoder.decode(&block).unwrap();
                    blocks.push(
                        fields
                            .into_iter()
                            .map(|(n, v)| {
                                (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap())
                            })
                            .collect(),
                    );
                    block.clear();
                }
            }
        }
        blocks
    }

    fn rewrite(input: &[u8]) -> Vec<u8> {
        let mut rewriter = Rewriter::new();
        let mut out = Vec::new();
        rewriter.push(input, &mut out).unwrap();
        out
    }

    fn request(authority: &str) -> Vec<(&'static [u8], Vec<u8>)> {
        vec![
            (b":method", b"POST".to_vec()),
            (b":scheme", b"http".to_vec()),
            (b":path", b"/v1.Disk/ListDiskLocations".to_vec()),
            (b":authority", authority.as_bytes().to_vec()),
            (b"te", b"trailers".to_vec()),
        ]
    }

    fn encoded(encoder: &mut loona_hpack::Encoder, authority: &str) -> Vec<u8> {
        let fields = request(authority);
        encoder.encode(fields.iter().map(|(n, v)| (*n, v.as_slice())))
    }

    fn authority_of(block: &[(String, String)]) -> &str {
        &block.iter().find(|(n, _)| n == ":authority").unwrap().1
    }

    #[test]
    fn a_socket_path_authority_becomes_localhost_and_a_valid_one_stays() {
        let mut encoder = loona_hpack::Encoder::new();
        let mut input = PREFACE.to_vec();
        input.extend(frame(0x4, 0, 0, &[])); // SETTINGS
        let bad = encoded(&mut encoder, "tmp%2Fdir%2Fcsi-proxy-disk-v1.sock");
        input.extend(frame(HEADERS, END_HEADERS, 1, &bad));
        input.extend(frame(0x0, END_STREAM, 1, b"\0\0\0\0\0")); // DATA
        let good = encoded(&mut encoder, "csi-proxy");
        input.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &good));

        let out = rewrite(&input);
        let blocks = server_view(&out);
        assert_eq!(blocks.len(), 2);
        assert_eq!(authority_of(&blocks[0]), "localhost");
        assert_eq!(authority_of(&blocks[1]), "csi-proxy");
        assert_eq!(
            blocks[0][2],
            (":path".into(), "/v1.Disk/ListDiskLocations".into())
        );
        let kinds: Vec<_> = frames(&out[PREFACE_LEN..])
            .iter()
            .map(|(kind, flags, stream, _)| (*kind, *flags, *stream))
            .collect();
        assert_eq!(
            kinds,
            [
                (0x4, 0, 0),
                (HEADERS, END_HEADERS, 1),
                (0x0, END_STREAM, 1),
                (HEADERS, END_HEADERS | END_STREAM, 3)
            ]
        );
    }

    #[test]
    fn a_connection_whose_first_authority_is_valid_passes_unchanged() {
        let mut encoder = loona_hpack::Encoder::new();
        let mut input = PREFACE.to_vec();
        input.extend(frame(0x4, 0, 0, &[])); // SETTINGS
        let first = encoded(&mut encoder, "localhost");
        input.extend(frame(HEADERS, END_HEADERS, 1, &first));
        input.extend(frame(0x0, END_STREAM, 1, b"\0\0\0\0\0")); // DATA
        let second = encoded(&mut encoder, "localhost");
        assert!(second.len() < first.len(), "the second refers to the table");
        input.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &second));
        // A later authority is no longer looked at: h2 judges it, as it
        // would without the wrapper.
        let later = encoded(&mut encoder, "late%2Fchange.sock");
        input.extend(frame(HEADERS, END_HEADERS | END_STREAM, 5, &later));

        let out = rewrite(&input);
        assert_eq!(out, input);
        let blocks = server_view(&out);
        assert_eq!(authority_of(&blocks[1]), "localhost");
        assert_eq!(authority_of(&blocks[2]), "late%2Fchange.sock");
    }

    #[test]
    fn dynamic_table_references_of_the_client_are_resolved() {
        // :method POST, :scheme http, :path (literal), and :authority as a
        // literal with incremental indexing (dynamic entry 62) ...
        let path = b"/v1.Disk/ListDiskLocations";
        let authority = b"a%2Fb.sock";
        let mut first = vec![0x83, 0x86, 0x04, path.len() as u8];
        first.extend_from_slice(path);
        first.extend_from_slice(&[0x41, authority.len() as u8]);
        first.extend_from_slice(authority);
        // ... which the second request refers to by index only.
        let mut second = vec![0x83, 0x86, 0x04, path.len() as u8];
        second.extend_from_slice(path);
        second.push(0x80 | 62);
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, END_HEADERS | END_STREAM, 1, &first));
        input.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &second));
        let blocks = server_view(&rewrite(&input));
        assert_eq!(blocks[0], blocks[1]);
        assert_eq!(authority_of(&blocks[1]), "localhost");
    }

    #[test]
    fn huffman_coded_strings_are_decoded() {
        // RFC 7541, C.4.1 and C.4.2: requests with Huffman-coded literals,
        // the second referring to the first's entries in the dynamic table.
        let c41 = [
            0x82, 0x86, 0x84, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab,
            0x90, 0xf4, 0xff,
        ];
        let c42 = [
            0x82, 0x86, 0x84, 0xbe, 0x58, 0x86, 0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf,
        ];
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, END_HEADERS | END_STREAM, 1, &c41));
        input.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &c42));
        let blocks = server_view(&rewrite(&input));
        assert_eq!(authority_of(&blocks[0]), "www.example.com");
        assert_eq!(authority_of(&blocks[1]), "www.example.com");
        assert!(blocks[1].contains(&("cache-control".into(), "no-cache".into())));
    }

    #[test]
    fn continuation_padding_and_priority_are_handled() {
        let mut encoder = loona_hpack::Encoder::new();
        let block = encoded(&mut encoder, "x%2Fy.sock");
        let (head, tail) = block.split_at(7);
        let (middle, last) = tail.split_at(5);
        // HEADERS: pad length 3, priority fields, first fragment, padding.
        let mut payload = vec![3];
        payload.extend_from_slice(&[0x80, 0, 0, 0, 15]);
        payload.extend_from_slice(head);
        payload.extend_from_slice(&[0, 0, 0]);
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, PADDED | PRIORITY | END_STREAM, 5, &payload));
        input.extend(frame(CONTINUATION, 0, 5, middle));
        input.extend(frame(CONTINUATION, END_HEADERS, 5, last));

        let out = rewrite(&input);
        let written = frames(&out[PREFACE_LEN..]);
        assert_eq!(written.len(), 1, "the block fits one frame");
        let (kind, flags, stream, payload) = &written[0];
        assert_eq!(
            (*kind, *flags, *stream),
            (HEADERS, PRIORITY | END_STREAM | END_HEADERS, 5)
        );
        assert_eq!(&payload[..5], &[0x80, 0, 0, 0, 15], "priority kept");
        let blocks = server_view(&out);
        assert_eq!(authority_of(&blocks[0]), "localhost");
        assert_eq!(blocks[0].len(), 5);
    }

    #[test]
    fn input_split_at_every_byte_gives_the_same_output() {
        let mut encoder = loona_hpack::Encoder::new();
        let mut input = PREFACE.to_vec();
        input.extend(frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100]));
        let block = encoded(&mut encoder, "p%2Fq.sock");
        input.extend(frame(HEADERS, 0, 1, &block[..4]));
        input.extend(frame(CONTINUATION, END_HEADERS, 1, &block[4..]));
        input.extend(frame(0x0, END_STREAM, 1, b"\0\0\0\0\0"));
        let whole = rewrite(&input);

        let mut rewriter = Rewriter::new();
        let mut out = Vec::new();
        for byte in &input {
            rewriter.push(std::slice::from_ref(byte), &mut out).unwrap();
        }
        assert_eq!(out, whole);
    }

    #[test]
    fn a_large_block_is_split_into_continuation_frames() {
        let mut fields = request("big%2Fsock");
        fields.push((b"x-big", vec![b'a'; 40_000]));
        let mut encoder = loona_hpack::Encoder::new();
        let block = encoder.encode(fields.iter().map(|(n, v)| (*n, v.as_slice())));
        let mut input = PREFACE.to_vec();
        for (i, chunk) in block.chunks(16_000).enumerate() {
            let kind = if i == 0 { HEADERS } else { CONTINUATION };
            let last = (i + 1) * 16_000 >= block.len();
            input.extend(frame(kind, if last { END_HEADERS } else { 0 }, 1, chunk));
        }
        let out = rewrite(&input);
        let written = frames(&out[PREFACE_LEN..]);
        assert!(written.len() >= 3);
        assert!(
            written
                .iter()
                .all(|(_, _, _, p)| p.len() <= MAX_FRAME_PAYLOAD)
        );
        assert_eq!(written[0].0, HEADERS);
        assert!(written[1..].iter().all(|(kind, ..)| *kind == CONTINUATION));
        let blocks = server_view(&out);
        assert_eq!(blocks[0][5].1.len(), 40_000);
        assert_eq!(authority_of(&blocks[0]), "localhost");
    }

    /// What a server reads through the wrapper when the client's bytes
    /// arrive in pieces of `chunk` and are read `read` bytes at a time.
    async fn read_through(input: &[u8], chunk: usize, read: usize) -> Vec<u8> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut client, server) = tokio::io::duplex(64);
        let pieces: Vec<Vec<u8>> = input.chunks(chunk).map(<[u8]>::to_vec).collect();
        let writer = tokio::spawn(async move {
            for piece in pieces {
                client.write_all(&piece).await.unwrap();
            }
        });
        let mut wrapped = LocalAuthority::new(server);
        let (mut out, mut buf) = (Vec::new(), vec![0; read]);
        loop {
            let n = wrapped.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        writer.await.unwrap();
        out
    }

    #[tokio::test]
    async fn reads_give_what_the_rewriter_gives_in_any_pieces() {
        for authority in ["localhost", "tmp%2Fdir%2Fcsi-proxy-disk-v1.sock"] {
            let mut encoder = loona_hpack::Encoder::new();
            let mut input = PREFACE.to_vec();
            input.extend(frame(0x4, 0, 0, &[]));
            for stream in [1, 3, 5] {
                let block = encoded(&mut encoder, authority);
                input.extend(frame(HEADERS, END_HEADERS, stream, &block));
                input.extend(frame(0x0, END_STREAM, stream, &[stream as u8; 300]));
            }
            let expected = rewrite(&input);
            for (chunk, read) in [(1, 7), (5, 3), (13, 64), (4096, 10), (4096, 4096)] {
                assert_eq!(
                    read_through(&input, chunk, read).await,
                    expected,
                    "{authority}, pieces of {chunk}, reads of {read}"
                );
            }
        }
    }

    /// A header block that never ends: HEADERS, CONTINUATION frames of
    /// 16 KiB up to about 1 MiB, then one declared 1 MiB and sent one byte
    /// short.
    fn never_ending_block() -> Vec<u8> {
        let mut input = PREFACE.to_vec();
        input.extend(frame(0x4, 0, 0, &[]));
        input.extend(frame(HEADERS, 0, 1, &[0x82, 0x86]));
        for _ in 0..63 {
            input.extend(frame(CONTINUATION, 0, 1, &[0; MAX_FRAME_PAYLOAD]));
        }
        let mut last = frame(CONTINUATION, 0, 1, &vec![0; 1 << 20]);
        last.pop();
        input.extend(last);
        input
    }

    /// Pushes `input` in pieces of 4 KiB until the rewriter refuses it;
    /// returns whether it did, and the most it held before.
    fn push_until_refused(input: &[u8]) -> (bool, usize) {
        let mut rewriter = Rewriter::new();
        let mut most = 0;
        for piece in input.chunks(4096) {
            if rewriter.push(piece, &mut Vec::new()).is_err() {
                return (true, most);
            }
            most = most.max(rewriter.held());
        }
        (false, most)
    }

    #[test]
    fn a_header_block_that_never_ends_is_refused_with_little_held() {
        let (refused, most) = push_until_refused(&never_ending_block());
        assert!(refused, "held {most} bytes and waited for more");
        assert!(most <= MAX_BLOCK + MAX_FRAME_PAYLOAD, "held {most} bytes");
    }

    #[test]
    fn a_header_frame_over_the_frame_size_is_refused_before_its_payload() {
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, END_HEADERS, 1, &[0; MAX_FRAME_PAYLOAD + 1]));
        let (refused, most) = push_until_refused(&input[..PREFACE_LEN + FRAME_HEADER_LEN]);
        assert!(refused);
        assert_eq!(most, 0);
    }

    #[test]
    fn empty_continuation_frames_are_counted() {
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, 0, 1, &[0x82]));
        for _ in 0..MAX_CONTINUATIONS {
            input.extend(frame(CONTINUATION, 0, 1, &[]));
        }
        // As many as h2 allows, then the block ends: accepted.
        let mut ended = input.clone();
        ended.extend(frame(CONTINUATION, END_HEADERS, 1, &[0x86]));
        assert!(!push_until_refused(&ended).0);
        // One more that does not end it: refused.
        input.extend(frame(CONTINUATION, 0, 1, &[]));
        assert!(push_until_refused(&input).0);
    }

    #[tokio::test]
    async fn a_refused_block_reaches_the_server_as_a_stray_continuation_then_reads_fail() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let writer = tokio::spawn(async move {
            // The reader stops at the refusal: later writes may fail.
            let _ = client.write_all(&never_ending_block()).await;
            client
        });
        let mut wrapped = LocalAuthority::new(server);
        let mut out = Vec::new();
        let mut buf = vec![0; 4096];
        let reads = async {
            loop {
                match wrapped.read(&mut buf).await {
                    Ok(0) => panic!("end of stream, no refusal"),
                    Ok(n) => out.extend_from_slice(&buf[..n]),
                    Err(error) => break error,
                }
            }
        };
        // Bounded: without the refusal, the reads wait for the block's end.
        let error = tokio::time::timeout(std::time::Duration::from_secs(20), reads)
            .await
            .expect("refused");
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        let settings = frame(0x4, 0, 0, &[]);
        assert_eq!(out[..PREFACE_LEN], PREFACE[..]);
        assert_eq!(
            out[PREFACE_LEN..],
            [&settings[..], &STRAY_CONTINUATION].concat()
        );
        drop(wrapped);
        writer.await.unwrap();
    }

    #[test]
    fn malformed_input_is_refused() {
        let mut input = PREFACE.to_vec();
        input.extend(frame(
            HEADERS,
            END_HEADERS,
            1,
            &[0xff, 0xff, 0xff, 0xff, 0x0f],
        ));
        assert!(Rewriter::new().push(&input, &mut Vec::new()).is_err());

        // A frame between HEADERS and its CONTINUATION.
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, 0, 1, &[0x82]));
        input.extend(frame(0x0, 0, 1, b"x"));
        assert!(Rewriter::new().push(&input, &mut Vec::new()).is_err());

        // Padding longer than the payload.
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, END_HEADERS | PADDED, 1, &[9, 0x82]));
        assert!(Rewriter::new().push(&input, &mut Vec::new()).is_err());
    }
}
