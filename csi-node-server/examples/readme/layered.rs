use csi_node_server::{Driver, Plugin, Step, VolumeRequest, VolumeSource, async_trait, serve, state_dir, stop_signal};
use csi_proxy_client::node::{DiskSelector, Node, NodeOptions};
use tonic::{Status, transport::Server};
use tower::limit::ConcurrencyLimitLayer;

struct CloudDisks;

#[async_trait]
impl Driver for CloudDisks {
    fn name(&self) -> &str { "disk.csi.example.com" }
    fn version(&self) -> &str { env!("CARGO_PKG_VERSION") }
    fn node_id(&self) -> &str { "node-1" }
    // Async, with the request's contexts and secrets: no LUN in the publish
    // context, so read the attachment record the cloud's agent writes.
    async fn volume(&self, r: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
        let lun = match r.publish_context.get("lun") {
            Some(lun) => lun.clone(),
            None => tokio::fs::read_to_string(format!(r"C:\k\attached\{}", r.volume_id)).await
                .map_err(|e| Status::not_found(format!("{} is not attached: {e}", r.volume_id)))?,
        };
        let lun = lun.trim().parse().map_err(|_| Status::invalid_argument("bad LUN"))?;
        Ok(VolumeSource::Disk(DiskSelector::Lun(lun)))
    }
    // Before each stage, with the volume's lock held; an error ends the call.
    async fn before(&self, _node: &Node, step: Step<'_>) -> Result<(), Status> {
        if let Step::Stage { request, volume } = step {
            tracing::info!(volume_id = request.volume_id, ?volume, "staging");
        }
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let socket = std::path::Path::new("/csi/csi.sock");
    let plugin = Plugin::new(Node::connect(NodeOptions::default()).await?, CloudDisks)
        .with_state_dir(state_dir(socket))?;    // what serve does for a plugin alone
    let router = Server::builder()
        .layer(ConcurrencyLimitLayer::new(4))   // any tower layer, around every call
        .add_routes(plugin.routes());           // .add_service(..) for more beside
    serve(router, socket, stop_signal()).await?;
    Ok(())
}
