//! Prometheus metrics of a [`Plugin`](crate::Plugin): a counter and a
//! latency histogram per CSI method and result code, and per node-layer
//! operation and result, served as text by [`serve_metrics`].

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use csi_proxy_client::Error;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// A CSI call: its method and the gRPC code it ended with.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    method: &'static str,
    code: String,
}

/// A node-layer operation and its result (`ok`, or the error's kind).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
    result: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Latency buckets from 1 ms to about 65 s, doubling: a CSI call is a few
/// milliseconds on a warm node, and finding a disk can take a minute.
fn histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

struct Inner {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    call_seconds: Histograms<CallLabels>,
    operations: Family<OperationLabels, Counter>,
    operation_seconds: Histograms<OperationLabels>,
}

/// The plugin's metrics; cheap to clone (clones share the figures).
#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

impl Default for Metrics {
    fn default() -> Self {
        let calls = Family::<CallLabels, Counter>::default();
        let call_seconds = Histograms::<CallLabels>::new_with_constructor(histogram);
        let operations = Family::<OperationLabels, Counter>::default();
        let operation_seconds = Histograms::<OperationLabels>::new_with_constructor(histogram);
        let mut registry = Registry::default();
        registry.register("csi_calls", "CSI calls by method and code", calls.clone());
        registry.register(
            "csi_call_duration_seconds",
            "Time to answer a CSI call, by method and code",
            call_seconds.clone(),
        );
        registry.register(
            "csi_node_operations",
            "Node-layer operations by operation and result",
            operations.clone(),
        );
        registry.register(
            "csi_node_operation_duration_seconds",
            "Time of a node-layer operation, by operation and result",
            operation_seconds.clone(),
        );
        Metrics(Arc::new(Inner {
            registry,
            calls,
            call_seconds,
            operations,
            operation_seconds,
        }))
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Counts a CSI call of `method` that ended with `code` after `took`.
    pub fn record_call(&self, method: &'static str, code: tonic::Code, took: Duration) {
        let labels = CallLabels {
            method,
            code: format!("{code:?}"),
        };
        self.0.calls.get_or_create(&labels).inc();
        self.0
            .call_seconds
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// Counts a node-layer `operation` that ended with `result` after `took`.
    pub fn record_operation(
        &self,
        operation: &'static str,
        result: Result<(), &Error>,
        took: Duration,
    ) {
        let labels = OperationLabels {
            operation,
            result: match result {
                Ok(()) => "ok".to_string(),
                Err(e) => format!("{:?}", e.kind()),
            },
        };
        self.0.operations.get_or_create(&labels).inc();
        self.0
            .operation_seconds
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// The figures in the OpenMetrics text format, which Prometheus reads.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.0.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serves `metrics` over HTTP/1 on `listener` (`GET /metrics`; any other
/// path is 404) until `shutdown` completes. The program binds the listener,
/// so that an address in use fails its start.
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    metrics: Metrics,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    tracing::info!(address = %listener.local_addr()?, "serving metrics");
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => accepted?,
            () = &mut shutdown => return Ok(()),
        };
        let metrics = metrics.clone();
        let service = hyper::service::service_fn(move |request: Request<_>| {
            let answer = if request.uri().path() == "/metrics" {
                Response::builder()
                    .header(hyper::header::CONTENT_TYPE, CONTENT_TYPE)
                    .body(Full::new(Bytes::from(metrics.encode())))
            } else {
                Response::builder()
                    .status(StatusCode::NOT_FOUND)
                    .body(Full::new(Bytes::from_static(b"not found; try /metrics\n")))
            };
            std::future::ready(answer)
        });
        tokio::spawn(async move {
            let served = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                tracing::debug!(error = %e, "metrics connection");
            }
        });
    }
}
