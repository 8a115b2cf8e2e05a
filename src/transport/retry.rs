//! Safe retries: [`RetryPolicy`], which RPCs only read ([`rpc_effect`]),
//! and the loop [`Connection::unary`](super::Connection::unary) runs each
//! call in.
//!
//! What is retried and why: see [`RetryPolicy`].

use std::error::Error as StdError;
use std::future::Future;
use std::hash::BuildHasher;
use std::time::Duration;

use tokio::time::Instant;

use crate::Error;

/// How a call is tried again after a failure that retrying cannot make
/// worse.
///
/// A failed attempt is tried again only when doing so cannot make the host
/// do something twice:
///
/// - the request cannot have reached the server: dialing failed (nothing
///   listening, pipe busy, a silent server), h2 would not take the request
///   because the connection had closed, the server refused the
///   stream (HTTP/2 `REFUSED_STREAM`), or its GOAWAY did not cover the
///   stream. This holds for every RPC;
/// - or the RPC only reads ([`RpcEffect::Reads`]) and the attempt failed
///   with `UNAVAILABLE` from the server or a transport failure after the
///   request went out.
///
/// An RPC that changes the node is never tried again once it may have been
/// sent: the host may have done the work and only the answer been lost.
///
/// Between attempts the call sleeps a random time between zero and a cap
/// that doubles with each retry ("full jitter", so that the clients of a
/// restarted proxy do not come back in step), but never past the call's
/// deadline (its request timeout, or the deadline of the
/// [`Node`](crate::node::Node) operation it is part of): when the next
/// attempt could not start before the deadline, the call ends with the
/// last attempt's error (an attempt that runs out of time itself ends as
/// [`Error::Timeout`], and is not retried).
///
/// Each retry is an event, `retrying the call` at INFO, in the call's `rpc`
/// span, with `attempt` (2 for the first retry), `backoff_ms` and `error`;
/// the span records `rpc.retries`, the number of retries made.
///
/// ```
/// use std::time::Duration;
/// use csi_proxy_client::transport::RetryPolicy;
/// let policy = RetryPolicy::default()
///     .with_max_attempts(6)
///     .with_initial_backoff(Duration::from_millis(20))
///     .with_max_backoff(Duration::from_secs(1));
/// assert_eq!(policy.max_attempts(), 6);
/// assert_eq!(RetryPolicy::none().max_attempts(), 1);
/// ```
///
/// # Default
///
/// On: 4 attempts, the first retry after up to 100 ms, the cap doubling up
/// to 2 s (at most 700 ms of sleep in all). Retries are on by default
/// because only what is safe is retried: a request that never left the
/// client (gRPC's own clients retry those transparently too), and calls
/// that only read. A proxy that restarts, or a pipe whose instances are
/// all taken for a moment, then costs a driver a short wait instead of a
/// failed CSI request that kubelet would retry only seconds later.
///
/// Each failed connection attempt costs up to the connect timeout, so
/// without a request timeout a call to a proxy that never answers can take
/// `max_attempts` times the connect timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    max_attempts: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// One attempt per call: no retries.
    #[must_use]
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// Attempts per call, the first included (at least 1; default 4).
    #[must_use]
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The cap of the first retry's random sleep; each later retry's cap is
    /// twice the one before (default 100 ms; at most
    /// [`MAX_DURATION`](crate::MAX_DURATION), longer is clamped).
    #[must_use]
    pub fn with_initial_backoff(mut self, backoff: Duration) -> Self {
        self.initial_backoff = backoff.min(crate::MAX_DURATION);
        self
    }

    /// The largest cap of a sleep between attempts (default 2 s; at most
    /// [`MAX_DURATION`](crate::MAX_DURATION), longer is clamped).
    #[must_use]
    pub fn with_max_backoff(mut self, backoff: Duration) -> Self {
        self.max_backoff = backoff.min(crate::MAX_DURATION);
        self
    }

    /// Attempts per call, the first included.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The cap of the first retry's sleep.
    pub fn initial_backoff(&self) -> Duration {
        self.initial_backoff
    }

    /// The largest cap of a sleep.
    pub fn max_backoff(&self) -> Duration {
        self.max_backoff
    }

    /// The sleep before retry `retry` (1 = the first): random, up to
    /// `initial_backoff * 2^(retry - 1)`, capped at `max_backoff`.
    fn backoff(&self, retry: u32) -> Duration {
        let doubling = 2u32.saturating_pow(retry.saturating_sub(1));
        let cap = self
            .initial_backoff
            .saturating_mul(doubling)
            .min(self.max_backoff);
        // A fresh random key per call: std's hasher keys are random, which
        // is all the jitter needs (no generator of our own, no dependency).
        let random = std::collections::hash_map::RandomState::new().hash_one(retry);
        cap.mul_f64(random as f64 / u64::MAX as f64)
    }
}

/// What an RPC does on the host, for deciding whether it may be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RpcEffect {
    /// Only looks: running it twice leaves the node as running it once.
    Reads,
    /// Changes the node (creates, removes, mounts, formats, logs in, ...),
    /// or makes the host do work (a rescan, a cache flush): never sent twice.
    Changes,
}

/// What the RPC named `name` (`GetDiskStats`, as on the wire, in any group
/// version) does on the host; `None` for a name no API version has, which
/// the retries treat as [`RpcEffect::Changes`].
///
/// Decided per RPC from what the proxy does on the host (the names alone
/// mislead: `DiscoverTargetPortal` only lists, `Rescan` and
/// `WriteVolumeCache` are idempotent but make the host act, and count as
/// changes). Every RPC of every API version is in the table, and a test
/// keeps it so.
///
/// ```
/// use csi_proxy_client::transport::{RpcEffect, rpc_effect};
/// assert_eq!(rpc_effect("ListDiskLocations"), Some(RpcEffect::Reads));
/// assert_eq!(rpc_effect("MountVolume"), Some(RpcEffect::Changes));
/// assert_eq!(rpc_effect("NoSuchRpc"), None);
/// ```
pub fn rpc_effect(name: &str) -> Option<RpcEffect> {
    use RpcEffect::{Changes, Reads};
    Some(match name {
        // disk
        "ListDiskLocations"
        | "ListDiskIDs"
        | "GetDiskNumberByName"
        | "GetDiskStats"
        | "DiskStats"
        | "GetDiskState"
        | "GetAttachState" => Reads,
        "PartitionDisk" | "Rescan" | "SetDiskState" | "SetAttachState" => Changes,
        // filesystem
        "PathExists" | "IsSymlink" | "IsMountPoint" => Reads,
        "Mkdir" | "Rmdir" | "RmdirContents" | "CreateSymlink" | "LinkPath" => Changes,
        // iscsi: discovery lists the targets of a registered portal
        "ListTargetPortals" | "DiscoverTargetPortal" | "GetTargetDisks" => Reads,
        "AddTargetPortal"
        | "RemoveTargetPortal"
        | "ConnectTarget"
        | "DisconnectTarget"
        | "SetMutualChapSecret" => Changes,
        // smb
        "NewSmbGlobalMapping" | "RemoveSmbGlobalMapping" => Changes,
        // system
        "GetBIOSSerialNumber" | "GetService" => Reads,
        "StartService" | "StopService" => Changes,
        // volume
        "ListVolumesOnDisk"
        | "IsVolumeFormatted"
        | "GetVolumeStats"
        | "VolumeStats"
        | "GetDiskNumberFromVolumeID"
        | "GetVolumeDiskNumber"
        | "GetVolumeIDFromTargetPath"
        | "GetVolumeIDFromMount"
        | "GetClosestVolumeIDFromTargetPath" => Reads,
        "MountVolume" | "UnmountVolume" | "DismountVolume" | "FormatVolume" | "ResizeVolume"
        | "WriteVolumeCache" => Changes,
        _ => return None,
    })
}

/// Whether the method at `path` (`/v1.Disk/GetDiskStats`) only reads.
fn reads_only(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or_default();
    rpc_effect(name) == Some(RpcEffect::Reads)
}

/// A failure of a request that certainly did not leave the client: the
/// connection could not be made, or h2 refused the request before queueing
/// it.
#[derive(Debug)]
pub(super) struct NotSent(pub(super) Box<dyn StdError + Send + Sync>);

impl std::fmt::Display for NotSent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the request was not sent: {}", self.0)
    }
}

impl StdError for NotSent {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.0)
    }
}

/// Whether `error` shows that the request cannot have reached the server.
fn never_sent(error: &Error) -> bool {
    let mut next: Option<&(dyn StdError + 'static)> = Some(error);
    while let Some(cause) = next {
        if cause.is::<NotSent>() {
            return true;
        }
        if let Some(h2) = cause.downcast_ref::<h2::Error>() {
            // REFUSED_STREAM: the server did not process the stream (RFC
            // 9113, 8.7). A GOAWAY from the server fails only the streams
            // above its last stream id with a GOAWAY error; h2 ends the
            // streams it covers with a reset or an I/O error instead.
            return h2.reason() == Some(h2::Reason::REFUSED_STREAM)
                || (h2.is_go_away() && h2.is_remote());
        }
        next = cause.source();
    }
    false
}

/// Whether another attempt may follow an attempt of `path` that failed
/// with `error`.
fn retryable(path: &str, error: &Error) -> bool {
    if never_sent(error) {
        return true;
    }
    let may_have_run = match error {
        Error::Transport { .. } => true,
        Error::Rpc(rpc) => rpc.status.code() == tonic::Code::Unavailable,
        _ => false,
    };
    may_have_run && reads_only(path)
}

tokio::task_local! {
    /// The deadline of the [`Node`](crate::node::Node) operation running in
    /// this task, if any.
    static OPERATION_DEADLINE: Instant;
}

/// Runs `work` with `deadline` as the latest moment any call in it may
/// still retry.
pub(crate) async fn within<F: Future>(deadline: Instant, work: F) -> F::Output {
    OPERATION_DEADLINE.scope(deadline, work).await
}

/// Runs the attempts of one call of `path`: `attempt(budget)` makes one,
/// bounded by `budget` (what is left of the request timeout, if any).
/// Returns the outcome and how many retries were made.
pub(super) async fn run<Resp, F, Fut>(
    policy: &RetryPolicy,
    path: &str,
    request_timeout: Option<Duration>,
    mut attempt: F,
) -> (Result<Resp, Error>, u32)
where
    F: FnMut(Option<Duration>) -> Fut,
    Fut: Future<Output = Result<Resp, Error>>,
{
    if policy.max_attempts <= 1 {
        return (attempt(request_timeout).await, 0);
    }
    let timeout_at = request_timeout.map(|timeout| Instant::now() + timeout);
    let mut retries = 0;
    loop {
        let last = retries + 1 >= policy.max_attempts;
        // The first attempt has the whole request timeout (sent as is in
        // `grpc-timeout`), later ones what is left of it.
        let budget = match retries {
            0 => request_timeout,
            _ => timeout_at.map(|at| at.saturating_duration_since(Instant::now())),
        };
        let error = match attempt(budget).await {
            Ok(response) => return (Ok(response), retries),
            Err(error) if last || !retryable(path, &error) => return (Err(error), retries),
            Err(error) => error,
        };
        let backoff = policy.backoff(retries + 1);
        let deadline = match (timeout_at, OPERATION_DEADLINE.try_with(|d| *d).ok()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if deadline.is_some_and(|deadline| Instant::now() + backoff >= deadline) {
            tracing::debug!(
                backoff_ms = backoff.as_millis() as u64,
                error = %Chain(&error),
                "not retrying: the deadline would pass first"
            );
            return (Err(error), retries);
        }
        retries += 1;
        tracing::info!(
            attempt = retries + 1,
            backoff_ms = backoff.as_millis() as u64,
            error = %Chain(&error),
            "retrying the call"
        );
        tokio::time::sleep(backoff).await;
    }
}

/// An error with its causes, `a: b: c`, for the retry events.
struct Chain<'a>(&'a Error);

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = StdError::source(self.0);
        while let Some(cause) = next {
            write!(f, ": {cause}")?;
            next = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rpc_of_every_api_version_is_classified() {
        let mut count = 0;
        for endpoint in crate::GroupVersion::all() {
            for name in endpoint.rpcs() {
                assert!(
                    rpc_effect(name).is_some(),
                    "{}/{} {name} is not in rpc_effect's table",
                    endpoint.group,
                    endpoint.version
                );
                count += 1;
            }
        }
        // The crate's 139 RPCs of 23 group versions (README).
        assert_eq!(count, 139);
    }

    #[test]
    fn the_backoff_stays_under_its_doubling_cap() {
        let policy = RetryPolicy::default()
            .with_initial_backoff(Duration::from_millis(10))
            .with_max_backoff(Duration::from_millis(50));
        for _ in 0..200 {
            assert!(policy.backoff(1) <= Duration::from_millis(10));
            assert!(policy.backoff(2) <= Duration::from_millis(20));
            assert!(policy.backoff(3) <= Duration::from_millis(40));
            assert!(policy.backoff(9) <= Duration::from_millis(50));
        }
        // Jitter: not always the same sleep.
        let sleeps: std::collections::HashSet<_> = (0..20).map(|_| policy.backoff(3)).collect();
        assert!(sleeps.len() > 1);
    }

    fn transport(source: impl StdError + Send + Sync + 'static) -> Error {
        Error::Transport {
            endpoint: "e".into(),
            source: Box::new(source),
        }
    }

    #[test]
    fn a_request_not_sent_is_retried_whatever_the_rpc() {
        let not_sent = transport(NotSent("connect".into()));
        assert!(retryable("/v1.Volume/FormatVolume", &not_sent));
        let refused = transport(h2::Error::from(h2::Reason::REFUSED_STREAM));
        assert!(retryable("/v1.Volume/FormatVolume", &refused));
        let reset = transport(h2::Error::from(h2::Reason::CANCEL));
        assert!(!retryable("/v1.Volume/FormatVolume", &reset));
        assert!(retryable("/v1.Volume/GetVolumeStats", &reset));
    }

    #[test]
    fn unavailable_is_retried_only_for_reads() {
        let unavailable = Error::rpc("e", "m", tonic::Status::unavailable("x"));
        assert!(retryable("/v1.Disk/ListDiskLocations", &unavailable));
        assert!(!retryable("/v1.Disk/PartitionDisk", &unavailable));
        assert!(!retryable("/v1.Disk/NoSuchRpc", &unavailable));
        let not_found = Error::rpc("e", "m", tonic::Status::not_found("x"));
        assert!(!retryable("/v1.Disk/ListDiskLocations", &not_found));
    }
}
