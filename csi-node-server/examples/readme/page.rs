use csi_node_server::{Driver, Plugin, VolumeRequest, VolumeSource, async_trait, serve, stop_signal};
use csi_proxy_client::node::{DiskSelector, Node, NodeOptions};
use tonic::Status;

struct MyDriver;

#[async_trait]
impl Driver for MyDriver {
    fn name(&self) -> &str { "disk.csi.example.com" }
    fn version(&self) -> &str { env!("CARGO_PKG_VERSION") }
    fn node_id(&self) -> &str { "node-1" }
    async fn volume(&self, r: &VolumeRequest<'_>) -> Result<VolumeSource, Status> {
        match r.volume_context.get("source") {
            Some(share) => r.smb(share.as_str()),   // account: secrets username/password[/domain]
            None => r.publish_context.get("lun").and_then(|l| l.parse().ok())
                .map(|lun| VolumeSource::Disk(DiskSelector::Lun(lun)))
                .ok_or_else(|| Status::invalid_argument("publish_context lun missing")),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let node = Node::connect(NodeOptions::default()).await?;   // the proxy's named pipes
    serve(Plugin::new(node, MyDriver), "/csi/csi.sock".as_ref(), stop_signal()).await?;
    Ok(())
}
