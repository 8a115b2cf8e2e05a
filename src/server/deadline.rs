//! The caller's deadline: gRPC sends it as the `grpc-timeout` header, and
//! the server (like grpc-go) stops working on a call once it has passed.

use std::future::Future;
use std::time::Duration;

/// The `grpc-timeout` header: digits and a unit (`H`, `M`, `S`, `m`, `u`, `n`).
pub(crate) fn grpc_timeout(headers: &http::HeaderMap) -> Option<Duration> {
    let text = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    let n: u64 = digits.parse().ok()?;
    match unit {
        "H" => Some(Duration::from_secs(n.saturating_mul(3600))),
        "M" => Some(Duration::from_secs(n.saturating_mul(60))),
        "S" => Some(Duration::from_secs(n)),
        "m" => Some(Duration::from_millis(n)),
        "u" => Some(Duration::from_micros(n)),
        "n" => Some(Duration::from_nanos(n)),
        _ => None,
    }
}

/// Runs `answer` within `deadline` (none: unbounded); once it passes, the
/// work is dropped and the caller gets `DEADLINE_EXCEEDED`.
pub(crate) async fn within<B: Default, E>(
    deadline: Option<Duration>,
    answer: impl Future<Output = Result<http::Response<B>, E>>,
) -> Result<http::Response<B>, E> {
    let Some(deadline) = deadline else {
        return answer.await;
    };
    tokio::time::timeout(deadline, answer)
        .await
        .unwrap_or_else(|_| {
            let message = format!("deadline of {deadline:?} exceeded");
            Ok(tonic::Status::deadline_exceeded(message).into_http())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeout_headers_parse_in_every_unit() {
        let parse = |text: &str| {
            let mut headers = http::HeaderMap::new();
            headers.insert("grpc-timeout", text.parse().unwrap());
            grpc_timeout(&headers)
        };
        assert_eq!(parse("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parse("3M"), Some(Duration::from_secs(180)));
        assert_eq!(parse("4S"), Some(Duration::from_secs(4)));
        assert_eq!(parse("100000u"), Some(Duration::from_millis(100)));
        assert_eq!(parse("5m"), Some(Duration::from_millis(5)));
        assert_eq!(parse("6u"), Some(Duration::from_micros(6)));
        assert_eq!(parse("7n"), Some(Duration::from_nanos(7)));
        assert_eq!(parse("7x"), None);
        assert_eq!(parse("7"), None);
        assert_eq!(parse("m"), None);
        assert_eq!(grpc_timeout(&http::HeaderMap::new()), None);
    }
}
