//! `csi-node-server`'s listener (each connection read through
//! `LocalAuthority`, then tonic) against a hostile local client: a rapid
//! reset, CONTINUATION floods and a zero window, each followed by a call on
//! another connection that must be served.
//!
//! Unix only: the attacks need a raw AF_UNIX client, which tokio does not
//! have on Windows (the listener there is `uds_windows`'); the same attacks
//! run against the reference server's named pipes under Wine.
#![cfg(unix)]

#[path = "../../tests/it/support/attacks.rs"]
mod attacks;

use std::path::Path;

use attacks::{Answer, ENHANCE_YOUR_CALM, PROTOCOL_ERROR};
use csi_node_server::{Driver, Plugin, VolumeRequest, VolumeSource};
use csi_proxy_client::mock::MockHost;
use csi_proxy_client::node::Node;
use tokio::net::UnixStream;
use tonic::Status;

/// A call with a response body.
const PATH: &str = "/csi.v1.Identity/GetPluginInfo";

struct TestDriver;

#[csi_node_server::async_trait]
impl Driver for TestDriver {
    fn name(&self) -> &str {
        "adversarial.test"
    }
    fn version(&self) -> &str {
        "0.0.1"
    }
    fn node_id(&self) -> &str {
        "node-1"
    }
    async fn volume(&self, _: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
        Err(Status::unimplemented("no volumes"))
    }
}

/// Runs `attack` on a connection to a plugin served on a socket of its own,
/// then checks that a call on another connection is served.
async fn attacked<F, Fut>(attack: F) -> Answer
where
    F: FnOnce(UnixStream) -> Fut,
    Fut: std::future::Future<Output = Answer>,
{
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("csi.sock");
    let mock = MockHost::new();
    let plugin = Plugin::new(Node::from_mock(&mock), TestDriver);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = {
        let socket = socket.clone();
        tokio::spawn(async move {
            csi_node_server::serve::serve(plugin, &socket, async {
                let _ = stopped.await;
            })
            .await
        })
    };
    let answer = attack(connect(&socket).await).await;
    assert_eq!(
        attacks::call(connect(&socket).await, PATH).await,
        Answer::Data
    );
    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
    answer
}

/// Connects once the server has bound its socket.
async fn connect(socket: &Path) -> UnixStream {
    for _ in 0..500 {
        if let Ok(stream) = UnixStream::connect(socket).await {
            return stream;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{} never served", socket.display());
}

#[tokio::test]
async fn a_header_block_that_never_ends_is_closed_with_goaway() {
    let answer = attacked(|c| attacks::continuation_flood(c, PATH)).await;
    assert_eq!(answer, Answer::GoAway(PROTOCOL_ERROR));
}

#[tokio::test]
async fn empty_continuation_frames_are_closed_with_goaway() {
    let answer = attacked(|c| attacks::empty_continuations(c, PATH)).await;
    assert_eq!(answer, Answer::GoAway(PROTOCOL_ERROR));
}

#[tokio::test]
async fn a_rapid_reset_is_served_or_calmed() {
    let answer = attacked(|c| attacks::rapid_reset(c, PATH)).await;
    assert!(
        matches!(
            answer,
            Answer::PingAck { .. } | Answer::GoAway(ENHANCE_YOUR_CALM)
        ),
        "{answer:?}"
    );
}

#[tokio::test]
async fn a_zero_window_stalls_the_calls_not_the_connection() {
    let answer = attacked(|c| attacks::zero_window(c, PATH)).await;
    assert_eq!(answer, Answer::PingAck { data_frames: 0 });
}
