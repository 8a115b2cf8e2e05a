//! The main example: a volume's life through the v1 disk, volume and
//! filesystem clients, as a node plugin drives it.
//!
//! The embedded reference server it runs against is not built yet, so for
//! now this prints what it will do and which endpoints it would use.

fn main() {
    let groups = [("disk", "v1"), ("volume", "v1"), ("filesystem", "v1")];
    println!("node_stage: the walk-through needs the reference server, which is not built yet.");
    println!(
        "It will: find the disk by LUN, partition it, find its volume, format it, mount it at"
    );
    println!(
        "the staging path, publish it into the pod, read stats, expand, unpublish and unstage."
    );
    for (group, version) in groups {
        match csi_proxy_client::transport::Address::default_for(group, version) {
            Ok(address) => println!("  {group} {version}: {address}"),
            Err(e) => println!("  {group} {version}: {e}"),
        }
    }
}
