//! The clouds csi-sim-cloud plays: per profile, where a published disk
//! shows on the node and with which ids (found by the node layer with the
//! cloud's own selector, through the reference CSI Proxy), what
//! ControllerPublishVolume returns; a detached disk's contents, readonly
//! publishes, ListVolumes, GetCapacity and the SMB profile's volumes.

mod support;

use std::collections::HashMap;

use csi::controller_server::Controller;
use csi::volume_capability::{AccessMode, access_mode::Mode};
use csi_node_server::csi::v1 as csi;
use csi_proxy_client::node::{DiskSelector, Node, NodeOptions};
use csi_proxy_client::server::Server;
use csi_sim_cloud::{GIB, POOL_SIZE, Profile};
use support::{Fixture, NODE, capability, fixture};
use tonic::{Code, Request};

impl Fixture {
    async fn create(&self, name: &str) -> csi::Volume {
        let request = csi::CreateVolumeRequest {
            name: name.into(),
            volume_capabilities: vec![capability(Mode::SingleNodeWriter)],
            ..Default::default()
        };
        let response = self.cloud.create_volume(Request::new(request)).await;
        response.unwrap().into_inner().volume.unwrap()
    }

    async fn publish(
        &self,
        id: &str,
        readonly: bool,
    ) -> Result<HashMap<String, String>, tonic::Status> {
        let request = csi::ControllerPublishVolumeRequest {
            volume_id: id.into(),
            node_id: NODE.into(),
            volume_capability: Some(capability(Mode::SingleNodeWriter)),
            readonly,
            ..Default::default()
        };
        let response = self
            .cloud
            .controller_publish_volume(Request::new(request))
            .await?;
        Ok(response.into_inner().publish_context)
    }

    async fn unpublish(&self, id: &str) {
        let request = csi::ControllerUnpublishVolumeRequest {
            volume_id: id.into(),
            node_id: NODE.into(),
            ..Default::default()
        };
        self.cloud
            .controller_unpublish_volume(Request::new(request))
            .await
            .unwrap();
    }

    async fn list(&self, max: i32, token: &str) -> Result<csi::ListVolumesResponse, tonic::Status> {
        let request = csi::ListVolumesRequest {
            max_entries: max,
            starting_token: token.into(),
        };
        Ok(self
            .cloud
            .list_volumes(Request::new(request))
            .await?
            .into_inner())
    }

    /// The node layer over the reference proxy on this node.
    async fn node(&self) -> (Node, Server) {
        let dir = self.sandbox.path().join("proxy");
        std::fs::create_dir_all(&dir).unwrap();
        let server = Server::builder()
            .socket_dir(&dir)
            .host(self.host.clone())
            .start()
            .await
            .unwrap();
        let node = Node::connect(NodeOptions::default().socket_dir(&dir))
            .await
            .unwrap();
        (node, server)
    }
}

/// Publishes a volume in `profile` and checks its publish context and that
/// the node layer finds the disk with the cloud's selector (made from the
/// volume id and publish context as the upstream node plugin reads them).
async fn published_disk_is_found_by_the_clouds_selector(
    profile: Profile,
    expect: fn(&str, &HashMap<String, String>) -> DiskSelector,
) {
    let f = fixture(profile);
    let before: Vec<u32> = f.host.snapshot().disks.iter().map(|d| d.number).collect();
    let id = f.create("pv-1").await.volume_id;
    let context = f.publish(&id, false).await.unwrap();
    let (node, server) = f.node().await;
    let disk = node
        .find_disk(expect(&id, &context))
        .await
        .unwrap_or_else(|e| panic!("{profile}: {e}"));
    assert!(!before.contains(&disk.number), "{profile}: a new disk");
    let n = disk.number;
    assert_eq!(
        f.host.run(|s| s.get_disk_stats(n)).unwrap(),
        GIB as i64,
        "{profile}"
    );
    // a second volume gets its own slot and ids
    let second = f.create("pv-2").await.volume_id;
    let context2 = f.publish(&second, false).await.unwrap();
    let other = node.find_disk(expect(&second, &context2)).await.unwrap();
    assert_ne!(other.number, disk.number, "{profile}");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn azure_publishes_the_lun_of_the_data_adapter() {
    published_disk_is_found_by_the_clouds_selector(Profile::Azure, |id, context| {
        assert!(id.starts_with("/subscriptions/"), "{id}");
        assert_eq!(context.keys().collect::<Vec<_>>(), ["LUN"]);
        // the azure layout's data adapter has LUN 0 and 1 taken already
        assert!(
            context["LUN"] == "2" || context["LUN"] == "3",
            "{context:?}"
        );
        DiskSelector::AzureLun(context["LUN"].parse().unwrap())
    })
    .await;
}

#[tokio::test]
async fn gcp_publishes_nothing_and_the_device_name_is_the_disk_name() {
    published_disk_is_found_by_the_clouds_selector(Profile::Gcp, |id, context| {
        assert!(context.is_empty(), "{context:?}");
        let name = id.strip_prefix("projects/sim-project/zones/sim-zone-a/disks/");
        DiskSelector::GceDeviceName(name.unwrap().into())
    })
    .await;
}

#[tokio::test]
async fn aws_publishes_a_device_path_and_the_serial_carries_the_volume_id() {
    published_disk_is_found_by_the_clouds_selector(Profile::Aws, |id, context| {
        assert!(id.starts_with("vol-") && id.len() == 21, "{id}");
        assert_eq!(context.keys().collect::<Vec<_>>(), ["devicePath"]);
        assert!(
            context["devicePath"].starts_with("/dev/xvda"),
            "{context:?}"
        );
        DiskSelector::EbsVolumeId(id.into())
    })
    .await;
    let f = fixture(Profile::Aws);
    let id = f.create("pv").await.volume_id;
    f.publish(&id, false).await.unwrap();
    let serial = format!("{}_00000001.", id.replace('-', ""));
    assert!(
        f.host
            .snapshot()
            .disks
            .iter()
            .any(|d| d.serial_number == serial),
        "{serial}"
    );
}

#[tokio::test]
async fn vsphere_publishes_the_disk_uuid_of_page_83() {
    published_disk_is_found_by_the_clouds_selector(Profile::Vsphere, |_, context| {
        let uuid = &context["diskUUID"];
        assert_eq!(context["type"], "vSphere CNS Block Volume");
        assert!(uuid.len() == 32 && uuid.starts_with("6000c29"), "{uuid}");
        DiskSelector::VsphereUuid(uuid.clone())
    })
    .await;
}

#[tokio::test]
async fn a_detached_disk_keeps_its_contents() {
    let f = fixture(Profile::Azure);
    let id = f.create("pv").await.volume_id;
    let lun: u32 = f.publish(&id, false).await.unwrap()["LUN"].parse().unwrap();
    let (node, server) = f.node().await;
    let disk = node.find_disk(DiskSelector::AzureLun(lun)).await.unwrap();
    let n = disk.number;
    f.host.run(|s| s.partition_disk(n)).unwrap();
    let volume = f
        .host
        .run(|s| s.list_volumes_on_disk(n, 0))
        .unwrap()
        .remove(0);
    f.host.run(|s| s.format_volume(&volume)).unwrap();
    let staging = r"C:\var\lib\kubelet\plugins\sim\globalmount";
    f.host.run(|s| s.mkdir(staging)).unwrap();
    f.host.run(|s| s.mount_volume(&volume, staging)).unwrap();
    f.host
        .run(|s| s.mkdir(&format!(r"{staging}\data")))
        .unwrap();
    f.host.run(|s| s.unmount_volume(&volume, staging)).unwrap();
    f.unpublish(&id).await;
    assert!(f.host.snapshot().volume(&volume).is_none(), "detached");

    let lun: u32 = f.publish(&id, false).await.unwrap()["LUN"].parse().unwrap();
    let again = node.find_disk(DiskSelector::AzureLun(lun)).await.unwrap();
    assert_eq!(
        f.host
            .run(|s| s.list_volumes_on_disk(again.number, 0))
            .unwrap(),
        vec![volume.clone()],
        "the same volume"
    );
    f.host.run(|s| s.mount_volume(&volume, staging)).unwrap();
    assert!(
        f.host
            .run(|s| s.path_exists(&format!(r"{staging}\data")))
            .unwrap(),
        "the directory written before the detach"
    );
    server.shutdown().await.unwrap();
    if let Err(v) = f.host.check_invariants() {
        panic!("{v:#?}");
    }
}

#[tokio::test]
async fn a_readonly_publish_attaches_read_only_and_the_other_mode_is_already_exists() {
    let f = fixture(Profile::Gcp);
    let id = f.create("pv").await.volume_id;
    f.publish(&id, true).await.unwrap();
    f.host.run(|s| s.rescan()).unwrap();
    let name = id.rsplit('/').next().unwrap().to_string();
    let read_only = |f: &Fixture| {
        f.host
            .snapshot()
            .disks
            .iter()
            .find(|d| d.page83.reported().ends_with(&name))
            .map(|d| d.is_read_only)
    };
    assert_eq!(read_only(&f), Some(true));
    f.publish(&id, true).await.unwrap();
    let refused = f.publish(&id, false).await.unwrap_err();
    assert_eq!(refused.code(), Code::AlreadyExists, "{refused:?}");
    f.unpublish(&id).await;
    f.publish(&id, false).await.unwrap();
    f.host.run(|s| s.rescan()).unwrap();
    assert_eq!(read_only(&f), Some(false));
}

#[tokio::test]
async fn list_volumes_pages_in_creation_order_with_the_published_node() {
    let f = fixture(Profile::Generic);
    let mut ids = Vec::new();
    for name in ["a", "b", "c"] {
        ids.push(f.create(name).await.volume_id);
    }
    f.publish(&ids[1], false).await.unwrap();
    let page = f.list(2, "").await.unwrap();
    let listed: Vec<&str> = page
        .entries
        .iter()
        .map(|e| e.volume.as_ref().unwrap().volume_id.as_str())
        .collect();
    assert_eq!(listed, [ids[0].as_str(), ids[1].as_str()]);
    let published: Vec<&[String]> = page
        .entries
        .iter()
        .map(|e| e.status.as_ref().unwrap().published_node_ids.as_slice())
        .collect();
    assert_eq!(published, [&[][..], &[NODE.to_string()][..]]);
    assert_eq!(
        page.entries[0].volume.as_ref().unwrap().capacity_bytes,
        GIB as i64
    );
    // the last volume of the next page deleted, one added: the token holds
    let delete = csi::DeleteVolumeRequest {
        volume_id: ids[2].clone(),
        ..Default::default()
    };
    f.cloud.delete_volume(Request::new(delete)).await.unwrap();
    let d = f.create("d").await.volume_id;
    let rest = f.list(2, &page.next_token).await.unwrap();
    let listed: Vec<&str> = rest
        .entries
        .iter()
        .map(|e| e.volume.as_ref().unwrap().volume_id.as_str())
        .collect();
    assert_eq!(listed, [d.as_str()]);
    assert_eq!(rest.next_token, "");
    assert_eq!(f.list(0, "").await.unwrap().entries.len(), 3);
    let bad = f.list(0, "invalid-token").await.unwrap_err();
    assert_eq!(bad.code(), Code::Aborted);
}

#[tokio::test]
async fn get_capacity_is_what_is_left_of_the_pool() {
    let f = fixture(Profile::Aws);
    let capacity = |f: &Fixture, caps: Vec<csi::VolumeCapability>| {
        let cloud = f.cloud.clone();
        async move {
            let request = csi::GetCapacityRequest {
                volume_capabilities: caps,
                ..Default::default()
            };
            cloud
                .get_capacity(Request::new(request))
                .await
                .unwrap()
                .into_inner()
                .available_capacity
        }
    };
    assert_eq!(capacity(&f, vec![]).await, POOL_SIZE as i64);
    f.create("a").await;
    assert_eq!(
        capacity(&f, vec![capability(Mode::SingleNodeWriter)]).await,
        (POOL_SIZE - GIB) as i64
    );
    let mut many = capability(Mode::SingleNodeWriter);
    many.access_mode = Some(AccessMode {
        mode: Mode::MultiNodeMultiWriter.into(),
    });
    assert_eq!(capacity(&f, vec![many]).await, 0, "a disk serves one node");
}

/// A share profile's volume: its directory `dir` on the node's share,
/// made at CreateVolume and removed at DeleteVolume; never published.
async fn a_share_volume_is_its_directory_until_deleted(f: &Fixture, id: &str, dir: &str) {
    let dir = f
        .host
        .run(|s| s.smb.share_dir("fileserver", "share").unwrap().join(dir));
    assert!(dir.is_dir());
    let refused = f.publish(id, false).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unimplemented);
    let delete = csi::DeleteVolumeRequest {
        volume_id: id.into(),
        ..Default::default()
    };
    f.cloud.delete_volume(Request::new(delete)).await.unwrap();
    assert!(!dir.exists());
}

#[tokio::test]
async fn smb_volumes_are_subdirectories_of_the_share_and_are_not_published() {
    let f = fixture(Profile::Smb);
    let volume = f.create("pv").await;
    assert_eq!(volume.volume_id, "fileserver/share#sim-vol-1#");
    assert_eq!(volume.volume_context["source"], "//fileserver/share");
    assert_eq!(volume.volume_context["subDir"], "${pv.metadata.name}");
    assert_eq!(
        volume.volume_context["csi.storage.k8s.io/pv/name"],
        "sim-vol-1"
    );
    a_share_volume_is_its_directory_until_deleted(&f, &volume.volume_id, "sim-vol-1").await;
}

#[tokio::test]
async fn azurefile_volumes_have_azurefiles_ids_and_context_keys() {
    let f = fixture(Profile::Azurefile);
    let volume = f.create("pv").await;
    // rg#account#share#diskName#uuid#secretNamespace, as azurefile's
    // GetFileShareInfo splits it
    let fields: Vec<&str> = volume.volume_id.split('#').collect();
    assert_eq!(
        fields,
        ["sim-rg", "smbuser", "share", "", "sim-vol-1", "default"]
    );
    let context = &volume.volume_context;
    assert_eq!(context["server"], "fileserver");
    assert_eq!(context["shareName"], "share");
    assert_eq!(context["folderName"], "sim-vol-1");
    a_share_volume_is_its_directory_until_deleted(&f, &volume.volume_id, "sim-vol-1").await;
}

#[tokio::test]
async fn create_volume_parameters_reach_the_volume_context_under_the_profiles_keys() {
    for profile in [Profile::Generic, Profile::Smb, Profile::Azurefile] {
        let f = fixture(profile);
        let request = csi::CreateVolumeRequest {
            name: "pv".into(),
            volume_capabilities: vec![capability(Mode::SingleNodeWriter)],
            parameters: HashMap::from([
                ("mountPermissions".to_string(), "0777".to_string()),
                ("folderName".to_string(), "elsewhere".to_string()),
                ("subDir".to_string(), "elsewhere".to_string()),
            ]),
            ..Default::default()
        };
        let created = f.cloud.create_volume(Request::new(request)).await;
        let context = created.unwrap().into_inner().volume.unwrap().volume_context;
        assert_eq!(context["mountPermissions"], "0777", "{profile}");
        let own = match profile {
            Profile::Smb => ("subDir", "${pv.metadata.name}"),
            Profile::Azurefile => ("folderName", "sim-vol-1"),
            _ => ("folderName", "elsewhere"),
        };
        assert_eq!(
            context[own.0], own.1,
            "{profile}: the volume's place is the cloud's"
        );
    }
}

#[tokio::test]
async fn gcp_nvme_disks_are_found_by_their_namespace_identifier_only() {
    published_disk_is_found_by_the_clouds_selector(Profile::GcpNvme, |id, context| {
        assert!(
            id.starts_with("projects/sim-project/zones/sim-zone-a/disks/"),
            "{id}"
        );
        assert_eq!(
            context.keys().collect::<Vec<_>>(),
            ["nvmeNamespaceIdentifier"]
        );
        DiskSelector::GceNvmeNamespace(context["nvmeNamespaceIdentifier"].parse().unwrap())
    })
    .await;
    let f = fixture(Profile::GcpNvme);
    let id = f.create("pv").await.volume_id;
    f.publish(&id, false).await.unwrap();
    let (node, server) = f.node().await;
    let name = id.rsplit('/').next().unwrap().to_string();
    let namespace = csi_sim_cloud::gce_nvme_namespace_id(1);
    let disk = &node
        .find_disk(DiskSelector::GceNvmeNamespace(namespace))
        .await
        .unwrap();
    assert_eq!(disk.eui64(), Some(namespace));
    assert!(disk.lun.is_none(), "NVMe: no LUN");
    assert!(
        !DiskSelector::GceDeviceName(name).matches(disk),
        "no device name in an NVMe page 83"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn azure_nvme_disks_are_namespaces_lun_plus_one_of_the_data_controller() {
    let f = fixture(Profile::AzureNvme);
    let mut luns = Vec::new();
    for name in ["pv-1", "pv-2"] {
        let id = f.create(name).await.volume_id;
        assert!(id.starts_with("/subscriptions/"), "{id}");
        let context = f.publish(&id, false).await.unwrap();
        assert_eq!(context.keys().collect::<Vec<_>>(), ["LUN"]);
        luns.push(context["LUN"].parse::<u32>().unwrap());
    }
    // the azure-nvme layout's data controller holds namespaces 1 and 2
    assert_eq!(luns, [2, 3]);
    f.host.run(|s| s.rescan()).unwrap();
    let snapshot = f.host.snapshot();
    for lun in luns {
        let namespace = format!("&0&{:06}#", lun + 1);
        let disk = snapshot
            .disks
            .iter()
            .find(|d| d.device_path.contains(&namespace) && d.device_path.contains("ven_nvme"))
            .unwrap_or_else(|| panic!("no namespace {} for LUN {lun}", lun + 1));
        assert_eq!(
            disk.location,
            "Integrated : Bus 0 : Device 31 : Function 0 : Adapter 2"
        );
    }
}
