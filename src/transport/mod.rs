//! Addresses and connections: named pipes on Windows, Unix sockets elsewhere.
//!
//! [`Address`] is always here (the server listens on one too); the
//! connection side is the `client` feature's. Every generated `Client` connects through [`Connection`], which dials the
//! pipe or socket and completes the HTTP/2 handshake up front (so a missing
//! proxy fails at connect time with an error naming the endpoint, as
//! upstream's Go client does, and a proxy that accepts but never speaks is
//! dialed again), then hands each call to h2's HTTP/2 client directly (no
//! tower `Buffer` worker in between, as a tonic `Channel` has, and the
//! request's HEADERS and DATA frames queued together so that they leave in
//! one write), framed by the crate (the whole message in one DATA frame with
//! END_STREAM, the response read to its `grpc-status`), not by tonic's
//! streaming client. When that
//! connection has closed (the server went away, or stopped answering
//! keepalive PINGs), the next call dials again. On Windows the dial retries
//! while the pipe answers `ERROR_PIPE_BUSY` (all instances taken) until the
//! connect timeout.
//!
//! A [`Connection`] can also be backed by any HTTP service in memory
//! ([`Connection::in_process`]): the mock host sends its calls to the
//! reference server's routes that way, through the same gRPC encoding.
//!
//! A request timeout ([`ConnectOptions::with_request_timeout`]) bounds each
//! call on the client and travels to the server as the `grpc-timeout`
//! header, so the server can give up at the same deadline.

mod address;
#[cfg(feature = "client")]
mod connection;
#[cfg(feature = "client")]
pub(crate) mod retry;
#[cfg(feature = "client")]
mod unary;

pub use address::{Address, SOCKET_DIR_ENV};
#[cfg(feature = "client")]
pub use connection::{ConnectOptions, Connection, DEFAULT_KEEPALIVE_INTERVAL, IN_PROCESS};
#[cfg(feature = "client")]
pub use retry::{RetryPolicy, RpcEffect, rpc_effect};
