//! Host time: how long a call's work takes at the host, and that the work
//! goes on when the caller gives up.
//!
//! csi-proxy runs a call's host work (a PowerShell command in v1.1, WMI
//! methods in v1.3) without the call's context: when the caller's deadline
//! passes or it cancels, the gRPC call ends but the format, the mapping or
//! the supported-size query carries on to its end (csi-proxy v1.1.3
//! `pkg/utils/utils.go` starts `powershell.exe` with `exec.Command`, not
//! `exec.CommandContext`; v1.3.0 `pkg/cim` calls WMI methods that take no
//! context). The simulator does the same: a call with host time (an
//! injected latency or a latency profile's) waits that long and then does
//! its work in a task of its own, so the host changes at the end of the
//! delay whether or not anyone still waits for the answer. The reference
//! server ([`super::connection`]) and `MockHost`'s layer both go through
//! [`after`].

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body::Body;

/// Runs `work` once `delay` has passed. With a delay, the wait and the work
/// run in a task of their own, which goes on when the returned future is
/// dropped (the caller gave up); without one, `work` runs in the caller's
/// task as any instant call does. A panic in `work` is the caller's.
///
/// Needs a tokio runtime when `delay` is not zero.
pub(crate) async fn after<T: Send + 'static>(
    delay: Duration,
    work: impl Future<Output = T> + Send + 'static,
) -> T {
    if delay.is_zero() {
        return work.await;
    }
    let task = tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        work.await
    });
    match task.await {
        Ok(value) => value,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Reads `body` whole: the request is in hand before its host time starts,
/// so a caller that leaves during the delay cannot take the request away
/// from work that goes on.
pub(crate) async fn read_whole<B>(body: B) -> Result<Bytes, B::Error>
where
    B: Body<Data = Bytes> + Unpin,
{
    let mut body = body;
    let mut whole = BytesMut::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        if let Ok(data) = frame?.into_data() {
            whole.extend_from_slice(&data);
        }
    }
    Ok(whole.freeze())
}

/// A request body already read whole ([`read_whole`]).
#[derive(Debug)]
pub(crate) struct Whole(pub Option<Bytes>);

impl Body for Whole {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.0.take().map(|data| Ok(http_body::Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_none()
    }
}
