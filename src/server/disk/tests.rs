use std::collections::HashMap;

use tonic::{Code, Request, Status};

use super::*;
use crate::host::storage::{DiskSpec, Page83, PartitionStyle};
use crate::host::{Host, HostConfig};

pub(crate) const GIB: u64 = 1 << 30;
/// Bad string disk ids and the `strconv` error each gives.
pub(crate) const BAD_IDS: [(&str, &str); 4] = [
    ("", r#"strconv.ParseUint: parsing "": invalid syntax"#),
    ("abc", r#"strconv.ParseUint: parsing "abc": invalid syntax"#),
    ("-1", r#"strconv.ParseUint: parsing "-1": invalid syntax"#),
    (
        "99999999999999999999",
        r#"strconv.ParseUint: parsing "99999999999999999999": value out of range"#,
    ),
];

/// A service over the default node (disks 0 system, 1 32 GiB RAW,
/// 2 16 GiB RAW) in a fresh sandbox.
pub(crate) struct Fixture {
    pub(crate) svc: ProxyService,
    _dir: tempfile::TempDir,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::new(HostConfig::new(dir.path().join("sb"))).unwrap();
        Self {
            svc: ProxyService::new(host),
            _dir: dir,
        }
    }

    pub(crate) fn host(&self) -> &Host {
        self.svc.host()
    }
}

/// The status of a failed call: asserts `UNKNOWN` and returns the message.
pub(crate) fn unknown<T: std::fmt::Debug>(r: Result<tonic::Response<T>, Status>) -> String {
    let s = r.unwrap_err();
    assert_eq!(s.code(), Code::Unknown, "{s:?}");
    s.message().to_string()
}

pub(crate) fn ok<T>(r: Result<tonic::Response<T>, Status>) -> T {
    match r {
        Ok(r) => r.into_inner(),
        Err(s) => panic!("call failed: {s:?}"),
    }
}

fn partition_count(h: &Host, n: u32) -> usize {
    h.snapshot().disk(n).unwrap().partitions.len()
}

// ------------------------------------------------------------ v1 / v1beta3

macro_rules! numeric_version_tests {
        ($name:ident, $v:ident) => {
            #[tokio::test]
            async fn $name() {
                use crate::disk::$v::disk_server::Disk;
                use crate::disk::$v::*;
                let f = Fixture::new();
                let s = &f.svc;

                let locations =
                    ok(s.list_disk_locations(Request::new(ListDiskLocationsRequest {})).await)
                        .disk_locations;
                assert_eq!(locations.len(), 3);
                assert_eq!(
                    locations[&2],
                    DiskLocation {
                        adapter: "3".into(),
                        bus: "".into(),
                        target: "0".into(),
                        lunid: "2".into(),
                    }
                );

                let ids = ok(s.list_disk_i_ds(Request::new(ListDiskIDsRequest {})).await).disk_i_ds;
                let host_ids = f.host().run(|node| node.list_disk_ids()).unwrap();
                assert_eq!(ids.len(), 3);
                assert_eq!(ids[&1].page83, host_ids[&1].page83);
                assert_eq!(ids[&1].page83.len(), 48, "MSFT + GUID binary id as hex");
                assert_eq!(ids[&1].serial_number, "");

                // PartitionDisk, then the state: GPT, MSR + basic, one RAW volume
                ok(s.partition_disk(Request::new(PartitionDiskRequest { disk_number: 1 })).await);
                let snap = f.host().snapshot();
                let d1 = snap.disk(1).unwrap();
                assert_eq!(d1.partition_style, PartitionStyle::Gpt);
                assert_eq!(d1.partitions.len(), 2);
                assert!(d1.partitions[0].kind.is_msr());
                assert_eq!(d1.partitions[1].offset, 16 * 1024 * 1024);
                assert_eq!(f.host().run(|node| node.list_volumes_on_disk(1, 0)).unwrap().len(), 1);
                // idempotent
                ok(s.partition_disk(Request::new(PartitionDiskRequest { disk_number: 1 })).await);
                assert_eq!(partition_count(f.host(), 1), 2);
                assert_eq!(partition_count(f.host(), 2), 0);

                ok(s.rescan(Request::new(RescanRequest {})).await);

                let stats =
                    ok(s.get_disk_stats(Request::new(GetDiskStatsRequest { disk_number: 2 })).await);
                assert_eq!(stats.total_bytes, 16 * GIB as i64);

                // state round trip, observed on the host
                let state = |n| GetDiskStateRequest { disk_number: n };
                assert!(ok(s.get_disk_state(Request::new(state(1))).await).is_online);
                ok(s
                    .set_disk_state(Request::new(SetDiskStateRequest {
                        disk_number: 1,
                        is_online: false,
                    }))
                    .await);
                assert!(f.host().snapshot().disk(1).unwrap().is_offline);
                assert!(!ok(s.get_disk_state(Request::new(state(1))).await).is_online);
                assert!(f.host().run(|node| node.list_volumes_on_disk(1, 0)).unwrap().is_empty());
                ok(s
                    .set_disk_state(Request::new(SetDiskStateRequest {
                        disk_number: 1,
                        is_online: true,
                    }))
                    .await);
                assert!(!f.host().snapshot().disk(1).unwrap().is_offline);
                assert!(ok(s.get_disk_state(Request::new(state(1))).await).is_online);

                // errors: UNKNOWN with the host's text
                assert_eq!(
                    unknown(s.get_disk_stats(Request::new(GetDiskStatsRequest { disk_number: 9 })).await),
                    "failed to query disk 9. error: not found"
                );
                assert_eq!(
                    unknown(s.get_disk_state(Request::new(state(9))).await),
                    "failed to query disk 9. error: not found"
                );
                assert_eq!(
                    unknown(s.partition_disk(Request::new(PartitionDiskRequest { disk_number: 9 })).await),
                    "error checking initialized status of disk 9: failed to query disk 9. error: not found"
                );
            }
        };
    }

numeric_version_tests!(v1_success_paths_and_state, v1);
numeric_version_tests!(v1beta3_success_paths_and_state, v1beta3);

// ------------------------------------------------------------ v1beta2

#[tokio::test]
async fn v1beta2_text_ids_maps_and_attach_state() {
    use v1beta2::disk_server::Disk;
    use v1beta2::*;
    let f = Fixture::new();
    let s = &f.svc;

    let locations = ok(s
        .list_disk_locations(Request::new(ListDiskLocationsRequest {}))
        .await)
    .disk_locations;
    let mut keys: Vec<_> = locations.keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["0", "1", "2"]);
    assert_eq!(locations["1"].lunid, "1");
    assert_eq!(locations["1"].adapter, "3");

    let ids = ok(s.list_disk_i_ds(Request::new(ListDiskIDsRequest {})).await).disk_i_ds;
    let host_ids = f.host().run(|node| node.list_disk_ids()).unwrap();
    assert_eq!(ids.len(), 3);
    for (n, i) in &host_ids {
        let expected: HashMap<String, String> = [
            ("page83".to_string(), i.page83.clone()),
            ("serialNumber".to_string(), i.serial_number.clone()),
        ]
        .into_iter()
        .collect();
        assert_eq!(ids[&n.to_string()].identifiers, expected);
    }

    ok(s.partition_disk(Request::new(PartitionDiskRequest {
        disk_id: "2".into(),
    }))
    .await);
    assert_eq!(partition_count(f.host(), 2), 2);
    assert_eq!(
        f.host()
            .run(|node| node.list_volumes_on_disk(2, 0))
            .unwrap()
            .len(),
        1
    );

    // leading zeros are fine
    let size = ok(s
        .disk_stats(Request::new(DiskStatsRequest {
            disk_id: "001".into(),
        }))
        .await);
    assert_eq!(size.disk_size, 32 * GIB as i64);

    let get = |id: &str| GetAttachStateRequest { disk_id: id.into() };
    assert!(ok(s.get_attach_state(Request::new(get("2"))).await).is_online);
    ok(s.set_attach_state(Request::new(SetAttachStateRequest {
        disk_id: "2".into(),
        is_online: false,
    }))
    .await);
    assert!(f.host().snapshot().disk(2).unwrap().is_offline);
    assert!(!ok(s.get_attach_state(Request::new(get("2"))).await).is_online);
    // already offline: silent success
    ok(s.set_attach_state(Request::new(SetAttachStateRequest {
        disk_id: "2".into(),
        is_online: false,
    }))
    .await);
    ok(s.set_attach_state(Request::new(SetAttachStateRequest {
        disk_id: "2".into(),
        is_online: true,
    }))
    .await);
    assert!(!f.host().snapshot().disk(2).unwrap().is_offline);

    // forwarded errors are not wrapped in this group
    assert_eq!(
        unknown(
            s.partition_disk(Request::new(PartitionDiskRequest {
                disk_id: "7".into()
            }))
            .await
        ),
        "error checking initialized status of disk 7: failed to query disk 7. error: not found"
    );
    assert_eq!(
        unknown(s.get_attach_state(Request::new(get("7"))).await),
        "failed to query disk 7. error: not found"
    );
    assert_eq!(
        unknown(
            s.disk_stats(Request::new(DiskStatsRequest {
                disk_id: "7".into()
            }))
            .await
        ),
        "failed to query disk 7. error: not found"
    );
}

#[tokio::test]
async fn v1beta2_bad_ids_and_truncation() {
    use v1beta2::disk_server::Disk;
    use v1beta2::*;
    let f = Fixture::new();
    let s = &f.svc;
    for (id, parse) in BAD_IDS {
        assert_eq!(
            unknown(
                s.partition_disk(Request::new(PartitionDiskRequest { disk_id: id.into() }))
                    .await
            ),
            format!("Failed to convert v1beta2.PartitionDiskRequest.DiskID to uint32: {parse}")
        );
        assert_eq!(
            unknown(
                s.disk_stats(Request::new(DiskStatsRequest { disk_id: id.into() }))
                    .await
            ),
            format!("Failed to format DiskStatsRequest.DiskID with err: {parse}")
        );
        assert_eq!(
            unknown(
                s.set_attach_state(Request::new(SetAttachStateRequest {
                    disk_id: id.into(),
                    is_online: true,
                }))
                .await
            ),
            format!("Failed to format SetAttachStateRequest.DiskID with err: {parse}")
        );
        assert_eq!(
            unknown(
                s.get_attach_state(Request::new(GetAttachStateRequest { disk_id: id.into() }))
                    .await
            ),
            format!("Failed to format GetAttachStateRequest.DiskID with err: {parse}")
        );
    }
    // nothing changed on the host
    assert_eq!(partition_count(f.host(), 0), 3);
    assert_eq!(partition_count(f.host(), 1), 0);

    // 2^32 + 1 truncates to disk 1
    const TRUNCATED: &str = "4294967297";
    let stats = ok(s
        .disk_stats(Request::new(DiskStatsRequest {
            disk_id: TRUNCATED.into(),
        }))
        .await);
    assert_eq!(stats.disk_size, 32 * GIB as i64);
    ok(s.set_attach_state(Request::new(SetAttachStateRequest {
        disk_id: TRUNCATED.into(),
        is_online: false,
    }))
    .await);
    assert!(f.host().snapshot().disk(1).unwrap().is_offline);
    assert!(
        !ok(s
            .get_attach_state(Request::new(GetAttachStateRequest {
                disk_id: TRUNCATED.into()
            }))
            .await)
        .is_online
    );
    ok(s.set_attach_state(Request::new(SetAttachStateRequest {
        disk_id: TRUNCATED.into(),
        is_online: true,
    }))
    .await);
    assert!(!f.host().snapshot().disk(1).unwrap().is_offline);
    ok(s.partition_disk(Request::new(PartitionDiskRequest {
        disk_id: TRUNCATED.into(),
    }))
    .await);
    assert_eq!(partition_count(f.host(), 1), 2);
    assert_eq!(partition_count(f.host(), 2), 0);
    // "4294967296" is disk 0
    let stats = ok(s
        .disk_stats(Request::new(DiskStatsRequest {
            disk_id: "4294967296".into(),
        }))
        .await);
    assert_eq!(stats.disk_size, 128 * GIB as i64);
}

// ------------------------------------------------------------ v1beta1

#[tokio::test]
async fn v1beta1_ids_stats_partition_and_bad_ids() {
    use v1beta1::disk_server::Disk;
    use v1beta1::*;
    let f = Fixture::new();
    let s = &f.svc;
    let ids = ok(s.list_disk_i_ds(Request::new(ListDiskIDsRequest {})).await).disk_i_ds;
    let mut keys: Vec<_> = ids["0"].identifiers.keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["page83", "serialNumber"]);
    assert_eq!(ids["0"].identifiers["serialNumber"], "");

    let locations = ok(s
        .list_disk_locations(Request::new(ListDiskLocationsRequest {}))
        .await)
    .disk_locations;
    assert_eq!(locations["0"].lunid, "0");

    ok(s.partition_disk(Request::new(PartitionDiskRequest {
        disk_id: "4294967297".into(),
    }))
    .await);
    assert_eq!(partition_count(f.host(), 1), 2, "disk 1 was partitioned");
    assert_eq!(partition_count(f.host(), 2), 0);
    ok(s.rescan(Request::new(RescanRequest {})).await);

    assert_eq!(
        ok(s.disk_stats(Request::new(DiskStatsRequest {
            disk_id: "2".into()
        }))
        .await)
        .disk_size,
        16 * GIB as i64
    );
    for (id, parse) in BAD_IDS {
        assert_eq!(
            unknown(
                s.partition_disk(Request::new(PartitionDiskRequest { disk_id: id.into() }))
                    .await
            ),
            format!("Failed to convert v1beta1.PartitionDiskRequest.DiskID to uint32: {parse}")
        );
        assert_eq!(
            unknown(
                s.disk_stats(Request::new(DiskStatsRequest { disk_id: id.into() }))
                    .await
            ),
            format!("Failed to format DiskStatsRequest.DiskID with err: {parse}")
        );
    }
}

// ------------------------------------------------------------ v1alpha1

#[tokio::test]
async fn v1alpha1_lookup_by_name_partition_and_bad_ids() {
    use v1alpha1::disk_server::Disk;
    use v1alpha1::*;
    let f = Fixture::new();
    let s = &f.svc;
    let (n, _) = f
        .host()
        .attach_disk(DiskSpec {
            location: Some("PCI Slot 3 : Adapter 0 : Port 0 : Target 2 : LUN 0".into()),
            page83: Some(Page83::Ascii(b"Google  pvc-7d0c5a4e".to_vec())),
            serial_number: Some(" ".repeat(20)),
            ..DiskSpec::new(10 * GIB)
        })
        .unwrap();
    assert_eq!(n, 3);

    let found = ok(s
        .get_disk_number_by_name(Request::new(GetDiskNumberByNameRequest {
            disk_name: "Google  pvc-7d0c5a4e".into(),
        }))
        .await);
    assert_eq!(found.disk_number, "3");
    assert_eq!(
        unknown(
            s.get_disk_number_by_name(Request::new(GetDiskNumberByNameRequest {
                disk_name: "Google  pvc-nope".into(),
            }))
            .await
        ),
        "could not find disk with Page83 ID Google  pvc-nope: not found"
    );

    let locations = ok(s
        .list_disk_locations(Request::new(ListDiskLocationsRequest {}))
        .await)
    .disk_locations;
    assert_eq!(
        locations["3"],
        DiskLocation {
            adapter: "0".into(),
            bus: "".into(),
            target: "2".into(),
            lunid: "0".into(),
        }
    );

    ok(s.partition_disk(Request::new(PartitionDiskRequest {
        disk_id: "3".into(),
    }))
    .await);
    let snap = f.host().snapshot();
    let d = snap.disk(3).unwrap();
    assert_eq!(d.partition_style, PartitionStyle::Gpt);
    assert_eq!(d.partitions[1].size, 10720624128);
    ok(s.rescan(Request::new(RescanRequest {})).await);

    for (id, parse) in BAD_IDS {
        assert_eq!(
            unknown(
                s.partition_disk(Request::new(PartitionDiskRequest { disk_id: id.into() }))
                    .await
            ),
            format!("Failed to convert v1alpha1.PartitionDiskRequest.DiskID to uint32: {parse}")
        );
    }
    // "4294967298" is disk 2
    ok(s.partition_disk(Request::new(PartitionDiskRequest {
        disk_id: "4294967298".into(),
    }))
    .await);
    assert_eq!(partition_count(f.host(), 2), 2);
    assert_eq!(partition_count(f.host(), 1), 0);
}
