//! No request panics the server.
//!
//! Every RPC of every group version is called in process through the
//! server's gRPC routes ([`GroupVersion::routes`]) with a gRPC-framed body:
//! empty, arbitrary bytes, and valid protobuf whose fields carry arbitrary
//! values (built from the field lists of `shared/wire/reference.json` when
//! that file is beside the repository). Every call must answer with a
//! `grpc-status`, no panic may happen anywhere in the process, and afterwards
//! a normal call succeeds and the node's invariants hold.
#![cfg(feature = "server")]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

use csi_proxy_client::host::{Host, HostConfig};
use csi_proxy_client::server::{GroupVersion, ProxyService};
use http_body_util::{BodyExt, Full};
use proptest::prelude::*;
use prost::bytes::Bytes;
use tower::ServiceExt;

/// Panics seen anywhere in this test process.
static PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            default(info);
        }));
    });
}

/// Cases per property: `PROPTEST_CASES`, else a small number for CI.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

/// The methods of one group version's service (`package.Service`).
macro_rules! services {
    ($($group:ident [$($version:ident)*])*) => {
        fn services() -> Vec<(GroupVersion, &'static str, &'static [&'static str])> {
            let mut out = Vec::new();
            $($(
                let gv = GroupVersion::parse(concat!(stringify!($group), "/", stringify!($version)))
                    .expect("a served group version");
                out.push((
                    gv,
                    csi_proxy_client::$group::$version::SERVICE_NAME,
                    csi_proxy_client::$group::$version::RPCS,
                ));
            )*)*
            out
        }
    };
}

services! {
    disk [v1alpha1 v1beta1 v1beta2 v1beta3 v1]
    filesystem [v1alpha1 v1beta1 v1beta2 v1 v2alpha1]
    iscsi [v1alpha1 v1alpha2]
    smb [v1alpha1 v1beta1 v1beta2 v1]
    system [v1alpha1]
    volume [v1alpha1 v1beta1 v1beta2 v1beta3 v1 v2alpha1]
}

/// One field of a message: number, type (`string`, `uint32`, `message`...)
/// and, for messages, the type's name.
#[derive(Debug, Clone)]
struct Field {
    number: u32,
    kind: String,
    repeated: bool,
    type_name: Option<String>,
}

/// Messages by full name, and each `/<service>/<method>`'s input type.
#[derive(Debug, Default)]
struct Schema {
    messages: BTreeMap<String, Vec<Field>>,
    inputs: BTreeMap<String, String>,
}

/// The wire reference, when the repository sits beside `shared/`.
fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/wire/reference.json");
        let Ok(text) = std::fs::read_to_string(path) else {
            eprintln!("{path} not found: field values only from arbitrary bytes");
            return Schema::default();
        };
        let json: serde_json::Value = serde_json::from_str(&text).expect("reference.json");
        let mut schema = Schema::default();
        for gv in json.as_object().expect("group versions").values() {
            for (name, message) in gv["messages"].as_object().expect("messages") {
                let fields = message["fields"]
                    .as_array()
                    .expect("fields")
                    .iter()
                    .map(|f| Field {
                        number: f["number"].as_u64().expect("number") as u32,
                        kind: f["type"].as_str().expect("type").to_string(),
                        repeated: f["label"] == "repeated",
                        type_name: f["type_name"].as_str().map(str::to_string),
                    })
                    .collect();
                schema.messages.insert(name.clone(), fields);
            }
            for (service, methods) in gv["services"].as_object().expect("services") {
                for (method, m) in methods.as_object().expect("methods") {
                    let input = m["input"].as_str().expect("input").to_string();
                    schema.inputs.insert(format!("/{service}/{method}"), input);
                }
            }
        }
        schema
    })
}

/// Arbitrary values that field encoding draws from in turn.
#[derive(Debug, Clone)]
struct Pool {
    numbers: Vec<u64>,
    strings: Vec<String>,
    next: usize,
}

impl Pool {
    fn number(&mut self) -> u64 {
        self.next += 1;
        self.numbers[self.next % self.numbers.len()]
    }

    fn string(&mut self) -> String {
        self.next += 1;
        self.strings[self.next % self.strings.len()].clone()
    }
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Valid protobuf of message `name` with values from `pool`.
fn encode(schema: &Schema, name: &str, pool: &mut Pool, depth: u32, out: &mut Vec<u8>) {
    let Some(fields) = schema.messages.get(name) else {
        return;
    };
    for f in fields {
        let count = if f.repeated { pool.number() % 4 } else { 1 };
        for _ in 0..count {
            match f.kind.as_str() {
                "string" | "bytes" => {
                    let s = pool.string();
                    varint(u64::from(f.number) << 3 | 2, out);
                    varint(s.len() as u64, out);
                    out.extend_from_slice(s.as_bytes());
                }
                "message" if depth < 4 => {
                    let mut inner = Vec::new();
                    let type_name = f.type_name.as_deref().unwrap_or_default();
                    encode(schema, type_name, pool, depth + 1, &mut inner);
                    varint(u64::from(f.number) << 3 | 2, out);
                    varint(inner.len() as u64, out);
                    out.extend(inner);
                }
                "message" => {}
                _ => {
                    // bool, enum and every integer type are varints; an
                    // out-of-range value is what a hostile client sends.
                    varint(u64::from(f.number) << 3, out);
                    varint(pool.number(), out);
                }
            }
        }
    }
}

/// The body of one call.
#[derive(Debug, Clone)]
enum Body {
    /// These bytes as the message.
    Bytes(Vec<u8>),
    /// Valid protobuf of the method's input type, values from the pool.
    Fields(Pool),
    /// A gRPC frame whose header lies about compression or length.
    BadFrame(u8, u32, Vec<u8>),
}

fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// Calls `/<service>/<method>` through `gv`'s routes; returns the
/// `grpc-status` and message.
async fn call(svc: &ProxyService, gv: GroupVersion, path: &str, body: Vec<u8>) -> (i32, String) {
    let request = http::Request::builder()
        .method("POST")
        .uri(format!("http://localhost{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(Full::new(Bytes::from(body)))
        .expect("request");
    let response = gv
        .routes(svc)
        .oneshot(request)
        .await
        .expect("routes are infallible");
    let (parts, body) = response.into_parts();
    let trailers = body
        .collect()
        .await
        .ok()
        .and_then(|c| c.trailers().cloned());
    let status = parts
        .headers
        .get("grpc-status")
        .or_else(|| trailers.as_ref().and_then(|t| t.get("grpc-status")))
        .unwrap_or_else(|| panic!("{path}: no grpc-status"));
    let code = status.to_str().ok().and_then(|s| s.parse().ok());
    let message = parts
        .headers
        .get("grpc-message")
        .or_else(|| trailers.as_ref().and_then(|t| t.get("grpc-message")))
        .and_then(|m| m.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (
        code.unwrap_or_else(|| panic!("{path}: bad grpc-status")),
        message,
    )
}

async fn send(svc: &ProxyService, target: usize, rpc: usize, body: Body) -> (i32, String) {
    let services = services();
    let (gv, service, rpcs) = services[target % services.len()];
    let path = format!("/{service}/{}", rpcs[rpc % rpcs.len()]);
    let bytes = match body {
        Body::Bytes(b) => frame(&b),
        Body::Fields(mut pool) => {
            let schema = schema();
            let mut message = Vec::new();
            if let Some(input) = schema.inputs.get(&path) {
                encode(schema, input, &mut pool, 0, &mut message);
            }
            frame(&message)
        }
        Body::BadFrame(flag, len, rest) => {
            let mut out = vec![flag];
            out.extend_from_slice(&len.to_be_bytes());
            out.extend(rest);
            out
        }
    };
    let (code, message) = call(svc, gv, &path, bytes).await;
    assert!(!message.contains("panicked"), "{path}: {message}");
    (code, message)
}

/// The node answers a normal call and its invariants hold.
async fn assert_usable(svc: &ProxyService) {
    let gv = GroupVersion::parse("disk/v1").expect("disk/v1");
    let (code, message) = call(svc, gv, "/v1.Disk/ListDiskLocations", frame(&[])).await;
    assert_eq!(code, 0, "a normal call failed: {message}");
    assert_eq!(svc.host().check_invariants(), Ok(()));
}

fn node() -> (tempfile::TempDir, ProxyService) {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = Host::new(HostConfig::new(dir.path().join("sandbox"))).expect("host");
    (dir, ProxyService::new(host))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Every RPC of every version, once with an empty message and once with
/// bytes that are no valid protobuf, on one node.
#[test]
fn every_rpc_answers_empty_and_garbage_requests() {
    count_panics();
    let rt = runtime();
    let (_dir, svc) = node();
    let mut calls = 0;
    rt.block_on(async {
        for (target, (_, _, rpcs)) in services().iter().enumerate() {
            for rpc in 0..rpcs.len() {
                for body in [Body::Bytes(Vec::new()), Body::Bytes(vec![0xff; 11])] {
                    send(&svc, target, rpc, body).await;
                    calls += 1;
                }
            }
        }
        assert_usable(&svc).await;
    });
    assert_eq!(calls, 139 * 2);
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a call panicked");
}

fn pool() -> impl Strategy<Value = Pool> {
    let number = prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::from(u32::MAX)),
        Just(u64::MAX),
        Just(i64::MIN as u64),
        0u64..8,
        any::<u64>(),
    ];
    let string = prop_oneof![
        Just(String::new()),
        Just(r"C:\var\lib\kubelet\x".to_string()),
        Just(r"\\?\Volume{00000000-0000-0000-0000-000000000000}\".to_string()),
        Just(r"\\fileserver\share".to_string()),
        Just("..\\..\\..".to_string()),
        Just("x".repeat(70_000)),
        "\\PC{0,40}",
    ];
    (
        prop::collection::vec(number, 1..8),
        prop::collection::vec(string, 1..8),
    )
        .prop_map(|(numbers, strings)| Pool {
            numbers,
            strings,
            next: 0,
        })
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        4 => pool().prop_map(Body::Fields),
        2 => prop::collection::vec(any::<u8>(), 0..64).prop_map(Body::Bytes),
        1 => (any::<u8>(), any::<u32>(), prop::collection::vec(any::<u8>(), 0..16))
            .prop_map(|(f, l, r)| Body::BadFrame(f, l, r)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Sequences of calls with arbitrary field values and bytes: every call
    /// answers with a status, nothing panics, the node stays usable.
    #[test]
    fn arbitrary_requests_never_panic(
        calls in prop::collection::vec((any::<usize>(), any::<usize>(), body()), 1..12)
    ) {
        count_panics();
        let rt = runtime();
        let (_dir, svc) = node();
        rt.block_on(async {
            for (target, rpc, body) in calls {
                send(&svc, target, rpc, body).await;
            }
            assert_usable(&svc).await;
        });
        prop_assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a call panicked");
    }
}
