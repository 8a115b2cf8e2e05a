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
    wmi_result: Option<u32>,
}

impl HostError {
    /// An error reported the way upstream reports it (gRPC `UNKNOWN`).
    pub fn unknown(message: impl Into<String>) -> Self {
        Self {
            kind: HostErrorKind::Unknown,
            message: message.into(),
            wmi_result: None,
        }
    }

    /// A WMI method that ran and returned `code` (not 0): the callers that
    /// know the operation and the release put the code in its text
    /// (the `texts` module); `message` is for those that do not.
    pub fn wmi_method(message: impl Into<String>, code: u32) -> Self {
        Self {
            kind: HostErrorKind::Unknown,
            message: message.into(),
            wmi_result: Some(code),
        }
    }

    /// An input the reference server rejects where upstream would crash.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self {
            kind: HostErrorKind::InvalidArgument,
            message: message.into(),
            wmi_result: None,
        }
    }

    /// The class of the failure.
    pub fn kind(&self) -> HostErrorKind {
        self.kind
    }

    /// The return value of the failed WMI method, if this is one.
    pub fn wmi_result(&self) -> Option<u32> {
        self.wmi_result
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
