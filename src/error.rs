//! The crate's error type.

use std::time::Duration;

/// Everything that can go wrong talking to the CSI Proxy.
///
/// Each variant names the endpoint (pipe, socket path or address text)
/// involved, and keeps the underlying error as its [`source`](std::error::Error::source).
/// An RPC the proxy answered with an error is [`Error::Rpc`]: use
/// [`Error::code`] and [`Error::status`] to react to it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The address text is not one this crate understands.
    #[error("invalid CSI Proxy address {input:?}: {reason}")]
    InvalidAddress {
        /// The text as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },

    /// There is no default endpoint on this platform (on Unix,
    /// `CSI_PROXY_SOCKET_DIR` is not set).
    #[error("no default endpoint for csi-proxy-{group}-{version}: {reason}")]
    NoDefaultEndpoint {
        /// API group.
        group: String,
        /// API version.
        version: String,
        /// Why there is none.
        reason: String,
    },

    /// Opening the pipe or socket failed (missing, refused, not permitted, timed out).
    #[error("cannot connect to {endpoint}")]
    Connect {
        /// The pipe or socket.
        endpoint: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },

    /// Every instance of the named pipe stayed busy until the connect timeout.
    #[error("named pipe {endpoint} stayed busy for {waited:?} (every instance in use)")]
    PipeBusy {
        /// The pipe.
        endpoint: String,
        /// How long the client retried.
        waited: Duration,
    },

    /// The HTTP/2 connection failed or could not be set up.
    #[error("transport error on {endpoint}")]
    Transport {
        /// The pipe or socket.
        endpoint: String,
        /// What failed underneath.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A call took longer than the request timeout.
    #[error("{method} on {endpoint} timed out after {after:?}")]
    Timeout {
        /// The pipe or socket.
        endpoint: String,
        /// The gRPC method path.
        method: String,
        /// The request timeout.
        after: Duration,
    },

    /// The proxy answered an RPC with an error status.
    #[error(transparent)]
    Rpc(Box<RpcError>),

    /// A text is not an API version (`v1`, `v1beta2`, ...).
    #[error(
        "invalid API version {input:?}: expected v<major>, v<major>alpha<n> or v<major>beta<n> with numbers from 1 and no leading zeros"
    )]
    InvalidVersion {
        /// The text as given.
        input: String,
    },
}

/// An RPC that the proxy (or the mock host) answered with an error status.
#[derive(Debug, thiserror::Error)]
#[error("{method} on {endpoint} failed with {code:?}: {message}", code = status.code(), message = status.message())]
pub struct RpcError {
    /// The pipe, socket or `in-process` for the mock host.
    pub endpoint: String,
    /// The gRPC method path, e.g. `/v1.Disk/PartitionDisk`.
    pub method: String,
    /// The status as received: code, message and any details (already
    /// part of this error's message, so not repeated as its source).
    pub status: tonic::Status,
}

impl Error {
    /// An RPC error status received from `endpoint` for `method`.
    pub fn rpc(
        endpoint: impl Into<String>,
        method: impl Into<String>,
        status: tonic::Status,
    ) -> Self {
        Error::Rpc(Box::new(RpcError {
            endpoint: endpoint.into(),
            method: method.into(),
            status,
        }))
    }

    /// The gRPC code of an RPC error; `None` for every other kind of error.
    pub fn code(&self) -> Option<tonic::Code> {
        self.status().map(tonic::Status::code)
    }

    /// The status of an RPC error; `None` for every other kind of error.
    pub fn status(&self) -> Option<&tonic::Status> {
        match self {
            Error::Rpc(rpc) => Some(&rpc.status),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_stays_small() {
        assert!(
            std::mem::size_of::<Result<(), Error>>() <= 80,
            "{}",
            std::mem::size_of::<Error>()
        );
    }

    #[test]
    fn rpc_error_keeps_code_message_and_endpoint() {
        let e = Error::rpc(
            "/tmp/x.sock",
            "/v1.Disk/PartitionDisk",
            tonic::Status::unknown("disk 9 not found"),
        );
        assert_eq!(e.code(), Some(tonic::Code::Unknown));
        assert_eq!(e.status().unwrap().message(), "disk 9 not found");
        let text = e.to_string();
        assert!(
            text.contains("/tmp/x.sock")
                && text.contains("PartitionDisk")
                && text.contains("disk 9 not found"),
            "{text}"
        );
    }

    #[test]
    fn connect_error_names_endpoint_and_keeps_source() {
        let e = Error::Connect {
            endpoint: "/run/x.sock".into(),
            source: std::io::ErrorKind::NotFound.into(),
        };
        assert!(e.to_string().contains("/run/x.sock"));
        assert!(std::error::Error::source(&e).is_some());
        assert_eq!(e.code(), None);
    }
}
