//! Addresses and connections: named pipes on Windows, Unix sockets elsewhere.
//!
//! [`Address`] is always here (the server listens on one too); the
//! connection side is the `client` feature's. Every generated `Client` connects through [`Connection`], which dials the
//! pipe or socket once up front (so a missing proxy fails at connect time
//! with an error naming the endpoint, as upstream's Go client does), then
//! hands that stream to a lazily reconnecting tonic channel built with
//! `Endpoint::connect_with_connector_lazy`. Later reconnects dial the same
//! way. On Windows the dial retries while the pipe answers
//! `ERROR_PIPE_BUSY` (all instances taken) until the connect timeout.
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

pub use address::{Address, SOCKET_DIR_ENV};
#[cfg(feature = "client")]
pub use connection::{ConnectOptions, Connection, IN_PROCESS};
