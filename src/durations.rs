//! The range of the durations the crate's options and the server's limits
//! take: a duration past a year overflows the clock in places (a deadline
//! is `now + duration`), and a zero period makes a timer spin or fire at
//! once.

use std::time::Duration;

/// The longest timeout, interval, deadline or grace period the crate takes:
/// one year (365 days). The reference server's `ServerBuilder` and
/// `csi-proxy-server`'s flags refuse longer ones; `ConnectOptions`,
/// `RetryPolicy` and `NodeOptions` clamp them to it.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// The shortest period of a timer that repeats or waits for an answer (a
/// keepalive interval or timeout, an idle timeout, a handshake timeout, the
/// pause between two looks for a disk): 1 ms. The server refuses shorter
/// ones; `ConnectOptions` and `NodeOptions` clamp them to it.
pub const MIN_PERIOD: Duration = Duration::from_millis(1);

/// `value` within [`MIN_PERIOD`] ..= [`MAX_DURATION`].
#[cfg(feature = "client")]
pub(crate) fn clamp_period(value: Duration) -> Duration {
    value.clamp(MIN_PERIOD, MAX_DURATION)
}
