//! What a hostile local client can do to an HTTP/2 server, as raw frames:
//! a rapid reset, CONTINUATION floods and a zero flow-control window. Used
//! by the tests of the reference server and of `csi-node-server`'s
//! listener (both read their clients through `LocalAuthority`). Each attack
//! is bounded in frames sent, and in time through [`ANSWER_WITHIN`].

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// How long the server has to answer an attack (GOAWAY, a PING ACK or
/// closing); a bound that keeps a failing test from hanging, not a
/// measurement.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(30);

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
/// `SETTINGS_INITIAL_WINDOW_SIZE`.
const INITIAL_WINDOW_SIZE: u16 = 0x4;

/// HTTP/2 error codes a server may close an attacker's connection with.
pub const PROTOCOL_ERROR: u32 = 0x1;
/// See [`PROTOCOL_ERROR`].
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// How the server answered an attack.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// GOAWAY with this error code.
    GoAway(u32),
    /// The attack's closing PING was answered: the connection still serves.
    PingAck {
        /// DATA frames received before the ACK.
        data_frames: usize,
    },
    /// Closed without GOAWAY.
    Closed,
    /// A call's response brought DATA (only looked for by [`call`]).
    Data,
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A gRPC request's header block for `path`: HPACK literals, never indexed.
fn request_block(path: &str) -> Vec<u8> {
    let fields = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "localhost"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ];
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0x00);
        for text in [name, value] {
            assert!(text.len() < 127);
            out.push(text.len() as u8);
            out.extend_from_slice(text.as_bytes());
        }
    }
    out
}

/// A PING the attacks end with, to see whether the connection still serves.
fn ping() -> Vec<u8> {
    frame(PING, 0, 0, b"attacked")
}

/// Sends the preface, `settings` and `attack` from a task of its own (the
/// server may close the connection before it is all written), and reads
/// what the server answers.
async fn run<S>(stream: S, settings: &[u8], attack: Vec<u8>) -> Answer
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    run_until(stream, settings, attack, false).await
}

/// [`run`], ending at the first DATA frame if `until_data`.
async fn run_until<S>(stream: S, settings: &[u8], attack: Vec<u8>, until_data: bool) -> Answer
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut reader, mut writer) = tokio::io::split(stream);
    let mut bytes = PREFACE.to_vec();
    bytes.extend(frame(SETTINGS, 0, 0, settings));
    bytes.extend(attack);
    let sending = tokio::spawn(async move {
        let _ = writer.write_all(&bytes).await;
        // Kept open: silence after the attack, not the end of the stream.
        std::future::pending::<()>().await;
    });
    let answer = tokio::time::timeout(ANSWER_WITHIN, answer(&mut reader, until_data)).await;
    sending.abort();
    answer.expect("the server answers the attack")
}

/// Reads frames until GOAWAY, the ACK of [`ping`], the first DATA frame if
/// `until_data`, or the end.
async fn answer(reader: &mut (impl AsyncRead + Unpin), until_data: bool) -> Answer {
    let mut data_frames = 0;
    loop {
        let mut header = [0u8; 9];
        if reader.read_exact(&mut header).await.is_err() {
            return Answer::Closed;
        }
        let len =
            usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
        let mut payload = vec![0; len];
        if reader.read_exact(&mut payload).await.is_err() {
            return Answer::Closed;
        }
        match (header[3], header[4]) {
            (GOAWAY, _) => {
                let code = u32::from_be_bytes(payload[4..8].try_into().unwrap());
                return Answer::GoAway(code);
            }
            (PING, ACK) if payload == b"attacked" => return Answer::PingAck { data_frames },
            (DATA, _) if until_data => return Answer::Data,
            (DATA, _) => data_frames += 1,
            _ => {}
        }
    }
}

/// A header block that never ends: HEADERS, about 1 MiB of CONTINUATION
/// frames of 16 KiB, then one declared 1 MiB and sent one byte short, then
/// silence.
pub async fn continuation_flood<S>(stream: S, path: &str) -> Answer
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let mut attack = frame(HEADERS, 0, 1, &request_block(path));
    for _ in 0..63 {
        attack.extend(frame(CONTINUATION, 0, 1, &[0; 16_384]));
    }
    let mut last = frame(CONTINUATION, 0, 1, &vec![0; 1 << 20]);
    last.pop();
    attack.extend(last);
    run(stream, &[], attack).await
}

/// HEADERS, then 10,000 empty CONTINUATION frames (90 KB on the wire) that
/// never end the block.
pub async fn empty_continuations<S>(stream: S, path: &str) -> Answer
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let mut attack = frame(HEADERS, 0, 1, &request_block(path));
    for _ in 0..10_000 {
        attack.extend(frame(CONTINUATION, 0, 1, &[]));
    }
    run(stream, &[], attack).await
}

/// 1,000 requests, each cancelled (RST_STREAM) right after its HEADERS,
/// then a PING.
pub async fn rapid_reset<S>(stream: S, path: &str) -> Answer
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let block = request_block(path);
    let mut attack = Vec::new();
    for n in 0..1_000u32 {
        let id = 2 * n + 1;
        attack.extend(frame(HEADERS, END_HEADERS, id, &block));
        attack.extend(frame(RST_STREAM, 0, id, &8u32.to_be_bytes())); // CANCEL
    }
    attack.extend(ping());
    run(stream, &[], attack).await
}

/// A client that grants no flow-control window (`SETTINGS_INITIAL_WINDOW_SIZE`
/// 0) makes 50 calls with an empty message, then a PING, and never reads a
/// response body.
pub async fn zero_window<S>(stream: S, path: &str) -> Answer
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let mut settings = INITIAL_WINDOW_SIZE.to_be_bytes().to_vec();
    settings.extend(0u32.to_be_bytes());
    let block = request_block(path);
    let mut attack = Vec::new();
    for n in 0..50u32 {
        let id = 2 * n + 1;
        attack.extend(frame(HEADERS, END_HEADERS, id, &block));
        attack.extend(frame(DATA, END_STREAM, id, &[0; 5]));
    }
    attack.extend(ping());
    run(stream, &settings, attack).await
}

/// Not an attack: one call with an empty message, answered with
/// [`Answer::Data`] by a server that still serves.
pub async fn call<S>(stream: S, path: &str) -> Answer
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let mut request = frame(HEADERS, END_HEADERS, 1, &request_block(path));
    request.extend(frame(DATA, END_STREAM, 1, &[0; 5]));
    run_until(stream, &[], request, true).await
}
