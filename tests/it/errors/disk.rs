//! Disk group errors: unknown disks, bad ids, the OS disk.

use csi_proxy_client::disk;

use crate::scenarios::*;

on_both_backends![disk_unknown_disks_and_bad_ids];

async fn disk_unknown_disks_and_bad_ids(node: &Node) {
    let before = node.host.snapshot();
    let v1 = &node.disk_v1;
    unknown(
        v1.get_disk_stats(disk::v1::GetDiskStatsRequest { disk_number: 99 })
            .await,
        "failed to query disk 99. error: not found",
    );
    unknown(
        v1.get_disk_state(disk::v1::GetDiskStateRequest { disk_number: 99 })
            .await,
        "failed to query disk 99. error: not found",
    );
    unknown(
        v1.set_disk_state(disk::v1::SetDiskStateRequest {
            disk_number: 99,
            is_online: true,
        })
        .await,
        "failed to query disk 99. error: not found",
    );
    unknown(
        v1.partition_disk(disk::v1::PartitionDiskRequest { disk_number: 99 })
            .await,
        "error checking initialized status of disk 99: failed to query disk 99. error: not found",
    );
    // The OS disk cannot be taken offline.
    unknown(
        v1.set_disk_state(disk::v1::SetDiskStateRequest {
            disk_number: 0,
            is_online: false,
        })
        .await,
        "setting disk 0 attach state (isOnline: false): result 41009, error: %!w(<nil>)",
    );
    unknown(
        node.disk_v1alpha1
            .get_disk_number_by_name(disk::v1alpha1::GetDiskNumberByNameRequest {
                disk_name: "Google  no-such-disk".into(),
            })
            .await,
        "could not find disk with Page83 ID Google  no-such-disk: not found",
    );

    // Text disk ids: Go's strconv texts.
    unknown(
        node.disk_v1beta2
            .partition_disk(disk::v1beta2::PartitionDiskRequest {
                disk_id: "abc".into(),
            })
            .await,
        r#"Failed to convert v1beta2.PartitionDiskRequest.DiskID to uint32: strconv.ParseUint: parsing "abc": invalid syntax"#,
    );
    unknown(
        node.disk_v1alpha1
            .partition_disk(disk::v1alpha1::PartitionDiskRequest {
                disk_id: " 1".into(),
            })
            .await,
        r#"Failed to convert v1alpha1.PartitionDiskRequest.DiskID to uint32: strconv.ParseUint: parsing " 1": invalid syntax"#,
    );
    unknown(
        node.disk_v1beta1
            .disk_stats(disk::v1beta1::DiskStatsRequest {
                disk_id: "-1".into(),
            })
            .await,
        r#"Failed to format DiskStatsRequest.DiskID with err: strconv.ParseUint: parsing "-1": invalid syntax"#,
    );
    unknown(
        node.disk_v1beta2
            .get_attach_state(disk::v1beta2::GetAttachStateRequest {
                disk_id: String::new(),
            })
            .await,
        r#"Failed to format GetAttachStateRequest.DiskID with err: strconv.ParseUint: parsing "": invalid syntax"#,
    );
    unknown(
        node.disk_v1beta2
            .set_attach_state(disk::v1beta2::SetAttachStateRequest {
                disk_id: "99999999999999999999".into(),
                is_online: false,
            })
            .await,
        r#"Failed to format SetAttachStateRequest.DiskID with err: strconv.ParseUint: parsing "99999999999999999999": value out of range"#,
    );
    // Forwarded errors are not wrapped in the disk group.
    let message = unknown(
        node.disk_v1beta1
            .disk_stats(disk::v1beta1::DiskStatsRequest {
                disk_id: "99".into(),
            })
            .await,
        "failed to query disk 99. error: not found",
    );
    assert!(!message.contains("Forward"), "{message}");

    // A probe failure fails the whole listing.
    node.host
        .set_probe_error(
            1,
            Some("IOCTL_STORAGE_QUERY_PROPERTY failed: Incorrect function.".into()),
        )
        .expect("hook");
    unknown(
        node.disk_v1
            .list_disk_ids(disk::v1::ListDiskIDsRequest {})
            .await,
        "Incorrect function.",
    );
    node.host.set_probe_error(1, None).expect("hook");

    assert_eq!(node.host.snapshot(), before, "failed calls changed nothing");

    // Windows refuses to initialise a RAW disk that is read-only or offline,
    // and the GPT-only partition type on an empty MBR disk.
    let read_only = attach_blank_disk(&node.host, GIB);
    node.host.set_disk_read_only(read_only, true).expect("hook");
    let offline = attach_blank_disk(&node.host, GIB);
    node.host.set_disk_offline(offline, true).expect("hook");
    let mbr = node
        .host
        .attach_disk(csi_proxy_client::host::storage::DiskSpec {
            partition_style: csi_proxy_client::host::storage::PartitionStyle::Mbr,
            ..csi_proxy_client::host::storage::DiskSpec::new(GIB)
        })
        .expect("attach")
        .0;
    let before = node.host.snapshot();
    for n in [read_only, offline] {
        unknown(
            v1.partition_disk(disk::v1::PartitionDiskRequest { disk_number: n })
                .await,
            &format!("failed to initializing disk {n}: result "),
        );
    }
    unknown(
        v1.partition_disk(disk::v1::PartitionDiskRequest { disk_number: mbr })
            .await,
        &format!("error creating partition on disk {mbr}. result: 5, err: <nil>"),
    );
    assert_eq!(node.host.snapshot(), before, "failed calls changed nothing");
}
