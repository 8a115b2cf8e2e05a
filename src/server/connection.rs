//! One client connection: HTTP/2 with h2 directly, the connection and all
//! its calls driven by one task.
//!
//! Why one task: with a task per call (as hyper's server spawns them), the
//! calls of a busy connection run on every worker thread at once and take
//! turns at h2's connection-wide lock with the task that reads and writes
//! the socket, and every response frame wakes that task on another thread.
//! Here a call's frames are queued by the task that then writes them, so a
//! call's HEADERS, DATA and trailers leave in one write, and the lock is
//! never contended. Calls still run concurrently: a call that waits (on the
//! blocking pool, an injected latency) does not hold up the others.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use http_body::Body as _;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::time::Instant;
use tonic::service::Routes;

use super::deadline;
use super::host_time::{self, Whole};
use super::listen::Limits;
use super::ping_strikes::{Enforced, Strikes};
use crate::h2io::{RecvBody, Silence, Watched, watch_silence};

/// hyper's server defaults, kept when the server moved onto h2 directly:
/// 1 MiB flow-control windows for a stream and for the connection ...
const WINDOW: u32 = 1024 * 1024;
/// ... frames of at most 16 KiB ...
const MAX_FRAME: u32 = 16 * 1024;
/// ... header blocks of at most 16 KiB ...
const MAX_HEADER_LIST: u32 = 16 * 1024;
/// ... at most 400 KiB queued per stream ...
const MAX_SEND_BUFFER: usize = 400 * 1024;
/// ... and a connection closed after this many streams it had to reset for
/// protocol errors (a peer abusing resets).
const MAX_LOCAL_ERROR_RESETS: usize = 1024;

/// Serves HTTP/2 on one connection until the client leaves, it has been
/// idle for the idle timeout, it does not answer a keepalive PING, or the
/// server stops (then its calls get the grace period).
pub(super) async fn serve<T>(io: T, routes: Routes, limits: &Limits, stop: watch::Receiver<bool>)
where
    T: AsyncRead + AsyncWrite + Send + Unpin,
{
    Coalesced::new(Box::pin(drive(io, routes, limits, stop))).await;
}

/// The work of [`serve`], polled through [`Coalesced`].
async fn drive<T>(io: T, routes: Routes, limits: &Limits, mut stop: watch::Receiver<bool>)
where
    T: AsyncRead + AsyncWrite + Unpin,
{
    let reads = Arc::new(AtomicU64::new(0));
    let activity = Arc::new(Activity::new());
    let stopped = stopped(&mut stop);
    let idle = activity.idle(limits.idle_timeout);
    tokio::pin!(stopped, idle);

    let mut connection = {
        let handshake = h2::server::Builder::new()
            .initial_window_size(WINDOW)
            .initial_connection_window_size(WINDOW)
            .max_frame_size(MAX_FRAME)
            .max_header_list_size(MAX_HEADER_LIST)
            .max_send_buffer_size(MAX_SEND_BUFFER)
            .max_local_error_reset_streams(Some(MAX_LOCAL_ERROR_RESETS))
            .max_concurrent_streams(limits.max_concurrent_streams)
            .handshake::<_, Bytes>(Watched::new(
                Enforced::new(io, Strikes::new(limits.keepalive_policy, activity.clone())),
                reads.clone(),
            ));
        tokio::select! {
            handshake = handshake => match handshake {
                Ok(connection) => connection,
                Err(error) => {
                    tracing::debug!(%error, "HTTP/2 handshake failed");
                    return;
                }
            },
            () = &mut stopped => return,
            () = &mut idle => {
                tracing::debug!("no HTTP/2 preface within the idle timeout; connection closed");
                return;
            }
        }
    };
    let ping = connection
        .ping_pong()
        .expect("the PING handle is taken once, here");
    let keepalive = keepalive(
        ping,
        &reads,
        limits.keepalive_interval,
        limits.keepalive_timeout,
    );
    tokio::pin!(keepalive);

    let mut calls: FuturesUnordered<Call<'_>> = FuturesUnordered::new();
    // Set once the connection is closing: until when its calls may run.
    let mut closing: Option<Pin<Box<tokio::time::Sleep>>> = None;
    loop {
        tokio::select! {
            biased;
            accepted = connection.accept() => match accepted {
                Some(Ok((request, respond))) => {
                    let call = call(request, respond, routes.clone(), limits, &activity);
                    calls.push(Box::pin(isolated(call)));
                }
                Some(Err(error)) => {
                    tracing::debug!(%error, "connection ended with an error");
                    return;
                }
                None => return,
            },
            () = std::future::poll_fn(|cx| finish_ready(&mut calls, cx)) => {}
            () = &mut keepalive => {
                tracing::info!(
                    timeout = ?limits.keepalive_timeout,
                    "no answer to a keepalive PING; connection closed"
                );
                return;
            }
            () = &mut stopped, if closing.is_none() => {
                tracing::debug!(stopping = true, "closing connection");
                connection.graceful_shutdown();
                closing = Some(Box::pin(tokio::time::sleep(limits.shutdown_grace)));
            }
            () = &mut idle, if closing.is_none() => {
                tracing::debug!(stopping = false, "closing idle connection");
                connection.graceful_shutdown();
                closing = Some(Box::pin(tokio::time::sleep(limits.shutdown_grace)));
            }
            () = async { closing.as_mut().expect("guarded").await }, if closing.is_some() => {
                tracing::info!("connection still busy after the grace period; closed");
                return;
            }
        }
    }
}

/// A call's future, boxed: the calls of a connection differ only by their
/// state, and one type lets them share a `FuturesUnordered`.
type Call<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Polls every call that can make progress and is ready once at least one
/// has ended. Calls that end in the same round have their responses
/// written together: the connection flushes its queued frames when it is
/// polled next, not after each call.
fn finish_ready(
    calls: &mut FuturesUnordered<Call<'_>>,
    cx: &mut std::task::Context<'_>,
) -> std::task::Poll<()> {
    let mut ended = false;
    while let std::task::Poll::Ready(Some(())) = calls.poll_next_unpin(cx) {
        ended = true;
    }
    if ended {
        std::task::Poll::Ready(())
    } else {
        std::task::Poll::Pending
    }
}

/// Runs a call so that a panic in it ends that call alone, as when each
/// call was a task of its own: its stream is reset (h2 resets a stream
/// whose response is dropped unsent) and the connection's other calls go
/// on.
async fn isolated(call: impl Future<Output = ()>) {
    use futures_util::FutureExt as _;
    if let Err(panic) = std::panic::AssertUnwindSafe(call).catch_unwind().await {
        let text = panic
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("a non-text payload");
        tracing::error!(panic = text, "a call panicked; its stream was reset");
    }
}

/// Serves one call: runs `routes` on the request, within the caller's
/// `grpc-timeout` and with the injected latency and failure of its method,
/// and sends the response; dropped when the client resets the stream.
async fn call(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    routes: Routes,
    limits: &Limits,
    activity: &Arc<Activity>,
) {
    let _call = InFlight::enter(activity);
    let deadline = deadline::grpc_timeout(request.headers());
    let latency = limits.latency_of(request.uri().path());
    let failure = limits.failure_of(request.uri().path());
    let request = request.map(|body| RecvBody::new(body, ()));
    let answer = async move {
        if latency.is_zero() {
            return match failure {
                Some(status) => Ok(status.into_http()),
                None => tower::ServiceExt::oneshot(routes, request).await,
            };
        }
        // Host time: the work goes on when the caller leaves (host_time).
        let (parts, body) = request.into_parts();
        let whole = match host_time::read_whole(body).await {
            Ok(whole) => whole,
            Err(e) => return Ok(tonic::Status::internal(e.to_string()).into_http()),
        };
        let request = http::Request::from_parts(parts, tonic::body::Body::new(Whole(Some(whole))));
        host_time::after(latency, async move {
            match failure {
                Some(status) => Ok(status.into_http()),
                None => tower::ServiceExt::oneshot(routes, request).await,
            }
        })
        .await
    };
    let response = tokio::select! {
        biased;
        response = deadline::within(deadline, answer) => response,
        reset = std::future::poll_fn(|cx| respond.poll_reset(cx)) => {
            tracing::debug!(?reset, "call cancelled by the client");
            return;
        }
    };
    let Ok(response) = response;
    // Headers, data and trailers each forgive the client's PING strikes,
    // as in grpc-go (its `setResetPingStrikes`).
    activity.answer();
    let (head, mut body) = response.into_parts();
    let head = http::Response::from_parts(head, ());
    if body.is_end_stream() {
        // A trailers-only answer: the status is in the headers.
        let _ = respond.send_response(head, true);
        return;
    }
    let Ok(mut send) = respond.send_response(head, false) else {
        return;
    };
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        activity.answer();
        let sent = match frame {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => send.send_data(data, false),
                Err(frame) => match frame.into_trailers() {
                    Ok(trailers) => {
                        let _ = send.send_trailers(trailers);
                        return;
                    }
                    Err(_) => Ok(()),
                },
            },
            Some(Err(error)) => {
                tracing::debug!(%error, "response body failed; stream reset");
                send.send_reset(h2::Reason::INTERNAL_ERROR);
                return;
            }
            None => {
                let _ = send.send_data(Bytes::new(), true);
                return;
            }
        };
        if sent.is_err() {
            return;
        }
    }
}

/// Completes when a keepalive PING has had no answer within `timeout`:
/// every `interval`, if nothing was read since the last look, a PING is
/// sent (also while no call is in flight, as hyper's server did). Never
/// completes once the connection has ended (the accept loop notices that).
async fn keepalive(
    mut ping: h2::PingPong,
    reads: &AtomicU64,
    interval: Duration,
    timeout: Duration,
) {
    match watch_silence(&mut ping, reads, interval, timeout, || false, || true).await {
        Silence::Unanswered => {}
        Silence::Ended(error) => {
            tracing::debug!(?error, "keepalive PING failed: the connection ended");
            std::future::pending().await
        }
    }
}

/// Polls a connection's future (h2's connection state and every call on
/// it) so that what the future does to itself does not reschedule its task.
///
/// A call that queues a response frame wakes h2's connection, and h2's
/// connection that reads a call's DATA wakes the call: both are this one
/// task. Woken while it runs, a tokio task is put back at the end of the run
/// queue as if it had yielded, and another worker thread is woken to take
/// it: a thread switch and often a move to the other core for every call.
/// Here the future sees a waker of its own: a wake while it is being polled
/// only asks for another round of the same poll, and only a wake from
/// elsewhere (the socket, a timer, the blocking pool) wakes the task.
struct Coalesced<F> {
    future: Pin<Box<F>>,
    shared: Arc<Rounds>,
    waker: std::task::Waker,
}

/// The state [`Coalesced`] shares with its waker.
struct Rounds {
    /// `IDLE`, `POLLING`, or `AGAIN` (woken while polling).
    state: AtomicU8,
    /// The task's own waker, for wakes while it is not polling.
    task: futures_util::task::AtomicWaker,
}

const IDLE: u8 = 0;
const POLLING: u8 = 1;
const AGAIN: u8 = 2;

/// Rounds of one poll before the task yields to others anyway.
const MAX_ROUNDS: usize = 32;

impl<F> Coalesced<F> {
    fn new(future: Pin<Box<F>>) -> Self {
        let shared = Arc::new(Rounds {
            state: AtomicU8::new(IDLE),
            task: futures_util::task::AtomicWaker::new(),
        });
        let waker = std::task::Waker::from(shared.clone());
        Self {
            future,
            shared,
            waker,
        }
    }
}

impl std::task::Wake for Rounds {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        match self
            .state
            .compare_exchange(POLLING, AGAIN, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) | Err(AGAIN) => {}
            Err(_) => self.task.wake(),
        }
    }
}

impl<F: Future<Output = ()>> Future for Coalesced<F> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        let this = &mut *self;
        this.shared.task.register(cx.waker());
        let mut inner = std::task::Context::from_waker(&this.waker);
        for _ in 0..MAX_ROUNDS {
            this.shared.state.store(POLLING, Ordering::Release);
            if this.future.as_mut().poll(&mut inner).is_ready() {
                this.shared.state.store(IDLE, Ordering::Release);
                return std::task::Poll::Ready(());
            }
            let rest = this.shared.state.compare_exchange(
                POLLING,
                IDLE,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            // Not woken during the round: wait for the socket or a timer.
            // Out of tokio's budget: let other tasks run first.
            if rest.is_ok() || !tokio::task::coop::has_budget_remaining() {
                break;
            }
        }
        if this.shared.state.swap(IDLE, Ordering::AcqRel) == AGAIN {
            cx.waker().wake_by_ref();
        }
        std::task::Poll::Pending
    }
}

/// Completes once the server stops.
pub(super) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// The calls in flight on one connection and when the last one ended.
///
/// A call only counts itself and stamps its end; nothing wakes the
/// connection's task. (A `watch` channel did: its receiver, polled in the
/// same task as the connection, woke that task twice a call, and every time
/// the count fell to zero a new idle timer was armed.) The idle timer
/// instead sleeps until the earliest moment the connection could be idle
/// and looks again.
pub(super) struct Activity {
    in_flight: AtomicUsize,
    /// Set when a call sends its response's headers, data or trailers:
    /// grpc-go then forgives the client's PING strikes (`ping_strikes`).
    answered: AtomicBool,
    /// When the connection was opened: `last_end` counts from it.
    opened: Instant,
    /// Nanoseconds from `opened` to the end of the latest call.
    last_end: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            answered: AtomicBool::new(false),
            opened: Instant::now(),
            last_end: AtomicU64::new(0),
        }
    }

    /// How many calls are in flight.
    pub(super) fn calls(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Whether a response frame was sent since the last look.
    pub(super) fn take_answered(&self) -> bool {
        self.answered.swap(false, Ordering::Relaxed)
    }

    /// Notes that a call sent a frame of its response.
    fn answer(&self) {
        self.answered.store(true, Ordering::Relaxed);
    }

    /// Completes once no call has been in flight for `timeout`.
    async fn idle(&self, timeout: Duration) {
        loop {
            let now = Instant::now();
            let idle_from = if self.in_flight.load(Ordering::SeqCst) == 0 {
                self.opened + Duration::from_nanos(self.last_end.load(Ordering::SeqCst))
            } else {
                now
            };
            let due = idle_from + timeout;
            if due <= now {
                return;
            }
            tokio::time::sleep_until(due).await;
        }
    }
}

/// One call in flight on a connection, counted while it lives.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn enter(activity: &Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::SeqCst);
        Self(activity.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let activity = &self.0;
        // The end is stamped before the count falls, so whoever sees no
        // call in flight also sees when the last one ended.
        let since_open = activity.opened.elapsed().as_nanos();
        activity.last_end.store(
            u64::try_from(since_open).unwrap_or(u64::MAX),
            Ordering::SeqCst,
        );
        activity.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::{Context, Poll, Wake, Waker};

    /// Counts the wakes of the task that polls a [`Coalesced`].
    #[derive(Default)]
    struct Task(AtomicUsize);

    impl Wake for Task {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A future that wakes itself during its first `wakes` polls, then
    /// hands out its waker and waits; ready once `done` is set.
    struct Inner {
        polls: Arc<AtomicUsize>,
        wakes: usize,
        waker: Arc<std::sync::Mutex<Option<Waker>>>,
        done: Arc<std::sync::atomic::AtomicBool>,
    }

    impl Future for Inner {
        type Output = ();

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            let polls = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
            if self.done.load(Ordering::SeqCst) {
                return Poll::Ready(());
            }
            if polls <= self.wakes {
                cx.waker().wake_by_ref();
            } else {
                *self.waker.lock().unwrap() = Some(cx.waker().clone());
            }
            Poll::Pending
        }
    }

    /// What a test sees of its [`Inner`].
    struct Probe {
        polls: Arc<AtomicUsize>,
        waker: Arc<std::sync::Mutex<Option<Waker>>>,
        done: Arc<std::sync::atomic::AtomicBool>,
    }

    fn setup(wakes: usize) -> (Coalesced<Inner>, Probe) {
        let probe = Probe {
            polls: Arc::default(),
            waker: Arc::default(),
            done: Arc::default(),
        };
        let inner = Inner {
            polls: probe.polls.clone(),
            wakes,
            waker: probe.waker.clone(),
            done: probe.done.clone(),
        };
        (Coalesced::new(Box::pin(inner)), probe)
    }

    /// Polls `future` once as the task `task`.
    fn poll_as(future: &mut Coalesced<Inner>, task: &Arc<Task>) -> Poll<()> {
        let waker = Waker::from(task.clone());
        Pin::new(future).poll(&mut Context::from_waker(&waker))
    }

    #[test]
    fn a_wake_during_the_poll_is_another_round_not_a_wake_of_the_task() {
        let (mut future, Probe { polls, .. }) = setup(3);
        let task = Arc::new(Task::default());
        assert!(poll_as(&mut future, &task).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 4, "three rounds more");
        assert_eq!(task.0.load(Ordering::SeqCst), 0, "the task was woken");
    }

    #[test]
    fn a_wake_from_elsewhere_wakes_the_task_once_and_is_polled() {
        let (mut future, probe) = setup(0);
        let Probe {
            polls,
            waker: inner_waker,
            done,
        } = probe;
        let task = Arc::new(Task::default());
        assert!(poll_as(&mut future, &task).is_pending());
        let inner_waker = inner_waker.lock().unwrap().take().unwrap();
        let other = std::thread::spawn({
            let inner_waker = inner_waker.clone();
            move || inner_waker.wake_by_ref()
        });
        other.join().unwrap();
        inner_waker.wake_by_ref();
        assert_eq!(
            task.0.load(Ordering::SeqCst),
            1,
            "woken once for both wakes"
        );
        done.store(true, Ordering::SeqCst);
        assert!(poll_as(&mut future, &task).is_ready());
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_future_that_keeps_waking_itself_yields_after_its_rounds() {
        let (mut future, Probe { polls, .. }) = setup(usize::MAX);
        let task = Arc::new(Task::default());
        assert!(poll_as(&mut future, &task).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), MAX_ROUNDS);
        assert_eq!(
            task.0.load(Ordering::SeqCst),
            1,
            "woken to be polled again after other tasks"
        );
    }

    /// A service whose first call panics; later calls answer `OK`.
    #[derive(Clone, Default)]
    struct PanicsFirst(Arc<AtomicUsize>);

    impl tonic::server::NamedService for PanicsFirst {
        const NAME: &'static str = "test.PanicsFirst";
    }

    impl tower::Service<http::Request<tonic::body::Body>> for PanicsFirst {
        type Response = http::Response<tonic::body::Body>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: http::Request<tonic::body::Body>) -> Self::Future {
            assert_ne!(
                self.0.fetch_add(1, Ordering::SeqCst),
                0,
                "the first call panics"
            );
            let ok = http::Response::builder()
                .header("content-type", "application/grpc")
                .header("grpc-status", "0")
                .body(tonic::body::Body::empty())
                .unwrap();
            std::future::ready(Ok(ok))
        }
    }

    #[tokio::test]
    async fn a_call_that_panics_resets_its_stream_and_the_connection_goes_on() {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let routes = Routes::new(PanicsFirst::default());
        let (_stop, stop) = watch::channel(false);
        let served = tokio::spawn(async move {
            serve(server, routes, &Limits::default(), stop).await;
        });
        let (mut sender, connection) = h2::client::handshake(client).await.unwrap();
        tokio::spawn(connection);
        let mut call = || {
            let request = http::Request::post("http://localhost/test.PanicsFirst/Call")
                .header("content-type", "application/grpc")
                .body(())
                .unwrap();
            sender.send_request(request, true).unwrap().0
        };
        let panicked = call().await.expect_err("the panicking call was answered");
        assert_eq!(panicked.reason(), Some(h2::Reason::CANCEL), "{panicked}");
        let answered = call().await.expect("the connection did not go on");
        assert_eq!(answered.headers()["grpc-status"], "0");
        assert!(!served.is_finished());
    }
}
