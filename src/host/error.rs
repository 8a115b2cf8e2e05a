use std::fmt;

/// What class of failure a [`HostError`] is; the server maps it to a gRPC code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HostErrorKind {
    /// A failure as the real proxy reports it: gRPC `UNKNOWN` with the text.
    Unknown,
    /// A request the real proxy would crash on (a required field missing):
    /// the reference server answers `INVALID_ARGUMENT` instead.
    InvalidArgument,
}

/// A failed host operation: the kind and the message the caller sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    kind: HostErrorKind,
    message: String,
}

impl HostError {
    /// An error reported the way upstream reports it (gRPC `UNKNOWN`).
    pub fn unknown(message: impl Into<String>) -> Self {
        Self {
            kind: HostErrorKind::Unknown,
            message: message.into(),
        }
    }

    /// An input the reference server rejects where upstream would crash.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self {
            kind: HostErrorKind::InvalidArgument,
            message: message.into(),
        }
    }

    /// The class of the failure.
    pub fn kind(&self) -> HostErrorKind {
        self.kind
    }

    /// The message, as sent to the client.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Prefixes the message, as upstream does when it forwards an error
    /// (`Forward to UnmountVolume failed, err=...`).
    pub fn context(mut self, prefix: impl fmt::Display) -> Self {
        self.message = format!("{prefix}{}", self.message);
        self
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HostError {}

/// Result of a host operation.
pub type HostResult<T> = Result<T, HostError>;
