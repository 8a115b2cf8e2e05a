use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::host::HostErrorKind;
use crate::host::namespace::Namespace;
use crate::host::storage::{self, DiskHandle, Page83, PartitionStyle, Storage};

/// The node's disk side on its own: a storage with disk 0 (so iSCSI disks
/// get 1, 2, ...), a namespace in a temporary sandbox, and whether
/// `MSiSCSI` runs.
#[derive(Debug)]
struct Parts {
    storage: Storage,
    ns: Namespace,
    detached_volumes: BTreeSet<String>,
    iscsi_disks: BTreeMap<u32, DiskHandle>,
    stopped: bool,
    _sandbox: tempfile::TempDir,
}

impl Parts {
    fn new() -> Self {
        let sandbox = tempfile::tempdir().unwrap();
        let mut storage = Storage::new(0);
        storage
            .attach_disk(storage::DiskSpec::new(1 << 30))
            .unwrap();
        Self {
            storage,
            ns: Namespace::new(sandbox.path().to_path_buf()),
            detached_volumes: BTreeSet::new(),
            iscsi_disks: BTreeMap::new(),
            stopped: false,
            _sandbox: sandbox,
        }
    }

    /// The disks of the sessions, as on a node.
    fn node_disks(&mut self) -> NodeDisks<'_> {
        NodeDisks {
            storage: &mut self.storage,
            ns: &self.ns,
            detached_volumes: &mut self.detached_volumes,
            iscsi_disks: &mut self.iscsi_disks,
            msiscsi_running: !self.stopped,
        }
    }
}

/// The iSCSI model and the node's disk side behind one lock, with the RPCs
/// as the node runs them.
struct TestIscsi {
    inner: std::sync::Mutex<(IscsiState, Parts)>,
}

impl TestIscsi {
    fn new(state: IscsiState) -> Self {
        Self {
            inner: std::sync::Mutex::new((state, Parts::new())),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut IscsiState, &mut Parts) -> R) -> R {
        let mut guard = self.inner.lock().unwrap();
        let (state, parts) = &mut *guard;
        f(state, parts)
    }

    fn rpc<R>(&self, f: impl FnOnce(&mut IscsiState, &mut NodeDisks<'_>) -> R) -> R {
        self.with(|s, parts| f(s, &mut parts.node_disks()))
    }

    fn add_target_portal(&self, portal: Option<&TargetPortal>) -> HostResult<()> {
        self.rpc(|s, disks| s.add_target_portal(disks, portal))
    }

    fn discover_target_portal(&self, portal: Option<&TargetPortal>) -> HostResult<Vec<String>> {
        self.rpc(|s, disks| s.discover_target_portal(disks, portal))
    }

    fn remove_target_portal(&self, portal: Option<&TargetPortal>) -> HostResult<()> {
        self.rpc(|s, disks| s.remove_target_portal(disks, portal))
    }

    fn list_target_portals(&self) -> HostResult<Vec<TargetPortal>> {
        self.rpc(|s, disks| s.list_target_portals(disks))
    }

    fn connect_target(&self, req: &ConnectTargetRequest) -> HostResult<()> {
        self.rpc(|s, disks| s.connect_target(disks, req))
    }

    fn disconnect_target(&self, req: &TargetRequest) -> HostResult<()> {
        self.rpc(|s, disks| s.disconnect_target(disks, req))
    }

    fn get_target_disks(&self, req: &TargetRequest) -> HostResult<Vec<String>> {
        self.rpc(|s, disks| s.get_target_disks(disks, req))
    }

    fn set_mutual_chap_secret(&self, secret: &str, version: IscsiApiVersion) -> HostResult<()> {
        self.rpc(|s, disks| s.set_mutual_chap_secret(disks, secret, version))
    }
}

const ADDR: &str = "10.0.0.20";
const LUN0: &str = "iqn.1991-05.com.microsoft:storage01-lun0-target";
const CHAP: &str = "iqn.1991-05.com.microsoft:storage01-chap-target";
const MUTUAL: &str = "iqn.1991-05.com.microsoft:storage01-mutual-target";

/// How many disks the sessions attached (every disk but disk 0).
fn lun_disks(parts: &Parts) -> usize {
    parts.storage.all_disks().filter(|d| d.number != 0).count()
}

fn host() -> TestIscsi {
    TestIscsi::new(IscsiState::default())
}

fn portal(port: u32) -> TargetPortal {
    TargetPortal::new(ADDR, port)
}

fn connect(iqn: &str, auth: i32, user: &str, secret: &str) -> ConnectTargetRequest {
    ConnectTargetRequest {
        target_portal: Some(portal(3260)),
        iqn: iqn.into(),
        auth_type: auth,
        chap_username: user.into(),
        chap_secret: secret.into(),
    }
}

fn target(iqn: &str) -> TargetRequest {
    TargetRequest {
        target_portal: Some(portal(0)),
        iqn: iqn.into(),
    }
}

#[test]
fn debug_output_never_shows_secrets() {
    let h = host();
    h.set_mutual_chap_secret("reversssssssse", IscsiApiVersion::V1alpha2)
        .unwrap();
    let text = format!(
        "{:?} {:?} {:?}",
        h.with(|s, _| format!("{s:?}")),
        default_iscsi_portals(),
        connect(CHAP, 1, "someuser", "verysecretpass")
    );
    for secret in ["verysecretpass", "averylongsecret", "reversssssssse"] {
        assert!(!text.contains(secret), "{secret} leaked");
    }
    assert!(text.contains("someuser"));
}

#[test]
fn concurrent_connects_make_one_session_per_target() {
    let host = std::sync::Arc::new(TestIscsi::new(IscsiSeed::default_node().build().unwrap()));
    host.add_target_portal(Some(&portal(0))).unwrap();
    let threads: Vec<_> = [LUN0, LUN0, CHAP, CHAP]
        .into_iter()
        .map(|iqn| {
            let host = host.clone();
            std::thread::spawn(move || {
                host.connect_target(&connect(
                    iqn,
                    i32::from(iqn == CHAP),
                    "someuser",
                    "verysecretpass",
                ))
                .unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // Concurrent connects to the same target make one session each.
    let mut disks: Vec<String> = [LUN0, CHAP]
        .into_iter()
        .flat_map(|iqn| host.get_target_disks(&target(iqn)).unwrap())
        .collect();
    disks.sort();
    assert_eq!(disks, ["1", "2"]);
}

#[test]
fn port_defaulting_and_truncation() {
    assert_eq!(effective_port(0), 3260);
    assert_eq!(effective_port(3260), 3260);
    assert_eq!(effective_port(68796), 3260);
    assert_eq!(effective_port(65536), 0);
    assert_eq!(effective_port(65535), 65535);
}

#[test]
fn auth_type_mapping() {
    let expected = [(0, "NONE"), (1, "ONEWAYCHAP"), (2, "MUTUALCHAP")];
    for (code, name) in expected {
        let t = AuthenticationType::from_code(code).unwrap();
        assert_eq!(t.host_name(), name);
        assert_eq!(t.code(), code);
    }
    for bad in [3, -1] {
        let err = AuthenticationType::from_code(bad).unwrap_err();
        assert_eq!(err.kind(), HostErrorKind::Unknown);
        assert_eq!(
            err.message(),
            format!("invalid authentication type authType={bad}")
        );
    }
}

#[test]
fn portal_add_list_remove_with_port_3260_and_0() {
    let h = host();
    for port in [3260, 0] {
        assert!(h.list_target_portals().unwrap().is_empty());
        h.add_target_portal(Some(&portal(port))).unwrap();
        // Idempotent, and the address matches case-insensitively.
        h.add_target_portal(Some(&TargetPortal::new("10.0.0.20", 3260)))
            .unwrap();
        assert_eq!(
            h.list_target_portals().unwrap(),
            [TargetPortal::new(ADDR, 3260)]
        );
        h.remove_target_portal(Some(&portal(port))).unwrap();
        assert!(h.list_target_portals().unwrap().is_empty());
        assert_eq!(
            h.remove_target_portal(Some(&portal(port)))
                .unwrap_err()
                .message(),
            "error query target portal at (10.0.0.20:3260). err: failed to query iSCSI target portal at (10.0.0.20:3260). error: not found"
        );
    }
}

#[test]
fn add_unreachable_or_unknown_portal_fails() {
    let h = host();
    let err = h
        .add_target_portal(Some(&TargetPortal::new("10.9.9.9", 0)))
        .unwrap_err();
    assert_eq!(
        err.message(),
        "error adding target portal at (10.9.9.9:3260). err: WMI MSFT_iSCSITargetPortal.New failed (target=<nil>): code=4026466307"
    );
    h.with(|s, _| s.server_mut(ADDR, 3260).unwrap().reachable = false);
    assert!(h.add_target_portal(Some(&portal(0))).is_err());
    assert!(h.list_target_portals().unwrap().is_empty());
}

#[test]
fn discover_lists_targets_and_requires_registration() {
    let h = host();
    assert_eq!(
        h.discover_target_portal(Some(&portal(0)))
            .unwrap_err()
            .message(),
        "error list targets by target portal at (10.0.0.20:3260). err: failed to query iSCSI target portal at (10.0.0.20:3260). error: not found"
    );
    // Targets restricted to other initiators are invisible.
    h.with(|s, _| {
        s.server_mut(ADDR, 3260).unwrap().targets[1].allowed_initiators =
            Some(vec!["iqn.other".into()]);
    });
    h.add_target_portal(Some(&portal(0))).unwrap();
    assert_eq!(
        h.discover_target_portal(Some(&portal(3260))).unwrap(),
        [LUN0, MUTUAL]
    );
    // Discovery lists the targets found when the portal was added; it
    // never asks the server again, so neither a change on the server
    // nor an unreachable server shows.
    h.with(|s, _| {
        let server = s.server_mut(ADDR, 3260).unwrap();
        server.targets[1].allowed_initiators = None;
        server.reachable = false;
    });
    assert_eq!(
        h.discover_target_portal(Some(&portal(0))).unwrap(),
        [LUN0, MUTUAL]
    );
}

#[test]
fn connect_without_chap_then_disks_then_disconnect() {
    let h = host();
    h.add_target_portal(Some(&portal(0))).unwrap();
    assert!(h.get_target_disks(&target(LUN0)).unwrap().is_empty());
    h.connect_target(&connect(LUN0, 0, "", "")).unwrap();
    assert_eq!(h.get_target_disks(&target(LUN0)).unwrap(), ["1"]);
    h.with(|s, parts| {
        assert_eq!(s.sessions().len(), 1);
        let disk = parts.storage.disk(1).unwrap();
        assert_eq!(disk.size, 1 << 30);
        let Page83::Binary(page83) = &disk.page83 else {
            panic!("binary page 0x83 id expected: {:?}", disk.page83);
        };
        assert_eq!(page83.len(), 16);
        assert_eq!(page83[0] >> 4, 6);
        // The LUN number (0) shows in the location.
        assert_eq!(
            disk.location,
            "Integrated : Adapter 1 : Port 0 : Target 0 : LUN 0"
        );
        assert!(disk.is_offline);
        assert_eq!(disk.partition_style, PartitionStyle::Raw);
    });
    // Repeat connect: no-op, even with other credentials.
    h.connect_target(&connect(LUN0, 1, "x", "yyyyyyyyyyyyy"))
        .unwrap();
    assert_eq!(h.with(|_, parts| lun_disks(parts)), 1);
    h.disconnect_target(&target(LUN0)).unwrap();
    assert!(h.get_target_disks(&target(LUN0)).unwrap().is_empty());
    assert!(h.with(|_, parts| lun_disks(parts) == 0));
    // Idempotent disconnect.
    h.disconnect_target(&target(LUN0)).unwrap();
}

#[test]
fn connect_unknown_target_or_unregistered_portal_fails() {
    let h = host();
    let expected =
        "error query target iqn.none from target portal at (10.0.0.20:3260). err: not found";
    h.add_target_portal(Some(&portal(0))).unwrap();
    assert_eq!(
        h.connect_target(&connect("iqn.none", 0, "", ""))
            .unwrap_err()
            .message(),
        expected
    );
    assert_eq!(
        h.disconnect_target(&target("iqn.none"))
            .unwrap_err()
            .message(),
        expected
    );
    assert_eq!(
        h.get_target_disks(&target("iqn.none"))
            .unwrap_err()
            .message(),
        expected
    );
    // IQNs compare exactly.
    assert!(
        h.connect_target(&connect(&LUN0.to_uppercase(), 0, "", ""))
            .is_err()
    );
    h.remove_target_portal(Some(&portal(0))).unwrap();
    let no_portal = "error query target iqn.none from target portal at (10.0.0.20:3260). \
                         err: failed to query iSCSI target portal at (10.0.0.20:3260). error: not found";
    assert_eq!(
        h.connect_target(&connect("iqn.none", 0, "", ""))
            .unwrap_err()
            .message(),
        no_portal
    );
    assert_eq!(
        h.disconnect_target(&target("iqn.none"))
            .unwrap_err()
            .message(),
        no_portal
    );
    assert_eq!(
        h.get_target_disks(&target("iqn.none"))
            .unwrap_err()
            .message(),
        no_portal
    );
}

#[test]
fn invalid_auth_type_checked_first() {
    let h = host();
    let mut req = connect("iqn.none", 7, "", "");
    req.target_portal = None;
    assert_eq!(
        h.connect_target(&req).unwrap_err().message(),
        "invalid authentication type authType=7"
    );
}

#[test]
fn one_way_chap() {
    let h = host();
    h.add_target_portal(Some(&portal(0))).unwrap();
    let auth_failure = "error connecting to target portal. err: WMI MSFT_iSCSITarget.Connect failed (target=<nil>): code=4026466313";
    assert_eq!(
        h.connect_target(&connect(CHAP, 0, "", ""))
            .unwrap_err()
            .message(),
        auth_failure
    );
    assert_eq!(
        h.connect_target(&connect(CHAP, 1, "someuser", "wrongsecret!!"))
            .unwrap_err()
            .message(),
        auth_failure
    );
    assert_eq!(
        h.connect_target(&connect(CHAP, 1, "other", "verysecretpass"))
            .unwrap_err()
            .message(),
        auth_failure
    );
    assert_eq!(
        h.connect_target(&connect(CHAP, 1, "someuser", "short"))
            .unwrap_err()
            .message(),
        "error connecting to target portal. err: WMI MSFT_iSCSITarget.Connect failed (target=<nil>): code=87"
    );
    // One-way CHAP against a target without CHAP is rejected.
    assert_eq!(
        h.connect_target(&connect(LUN0, 1, "someuser", "verysecretpass"))
            .unwrap_err()
            .message(),
        auth_failure
    );
    assert!(h.with(|s, _| s.sessions().is_empty()));
    h.connect_target(&connect(CHAP, 1, "someuser", "verysecretpass"))
        .unwrap();
    assert_eq!(h.get_target_disks(&target(CHAP)).unwrap(), ["1"]);
}

#[test]
fn mutual_chap_wrong_then_right_secret() {
    let h = host();
    h.add_target_portal(Some(&portal(0))).unwrap();
    let req = connect(MUTUAL, 2, "anotheruser", "averylongsecret");
    // No mutual secret set yet.
    assert!(h.connect_target(&req).is_err());
    h.set_mutual_chap_secret("made-up-pass", IscsiApiVersion::V1alpha2)
        .unwrap();
    assert_eq!(
        h.connect_target(&req).unwrap_err().message(),
        "error connecting to target portal. err: WMI MSFT_iSCSITarget.Connect failed (target=<nil>): code=4026466313"
    );
    h.set_mutual_chap_secret("reversssssssse", IscsiApiVersion::V1alpha2)
        .unwrap();
    // Wrong forward secret still fails.
    assert!(
        h.connect_target(&connect(MUTUAL, 2, "anotheruser", "averylongsecreX"))
            .is_err()
    );
    h.connect_target(&req).unwrap();
    assert_eq!(h.get_target_disks(&target(MUTUAL)).unwrap(), ["1"]);
    h.disconnect_target(&target(MUTUAL)).unwrap();
    assert!(h.with(|_, parts| lun_disks(parts) == 0));
}

#[test]
fn set_mutual_chap_secret_version_gate_and_length() {
    let h = host();
    let err = h
        .set_mutual_chap_secret("reversssssssse", IscsiApiVersion::V1alpha1)
        .unwrap_err();
    assert_eq!(err.kind(), HostErrorKind::Unknown);
    assert_eq!(
        err.message(),
        "SetMutualChapSecret requires CSI-Proxy API version v1alpha2 or greater"
    );
    assert_eq!(
        h.with(|s, _| s.mutual_chap_secret().map(str::to_owned)),
        None
    );
    for bad in ["elevenchars", "seventeen-chars!!"] {
        assert_eq!(
            h.set_mutual_chap_secret(bad, IscsiApiVersion::V1alpha2)
                .unwrap_err()
                .message(),
            "error setting mutual chap secret. err: WMI MSFT_iSCSISession.SetCHAPSecret failed (target=<nil>): code=87"
        );
    }
    for good in ["twelve-chars", "sixteen-chars-ok"] {
        h.set_mutual_chap_secret(good, IscsiApiVersion::V1alpha2)
            .unwrap();
        assert_eq!(
            h.with(|s, _| s.mutual_chap_secret().map(str::to_owned))
                .as_deref(),
            Some(good)
        );
    }
}

#[test]
fn missing_portal_is_invalid_argument() {
    let h = host();
    let errs = [
        h.add_target_portal(None).unwrap_err(),
        h.discover_target_portal(None).unwrap_err(),
        h.remove_target_portal(None).unwrap_err(),
        h.connect_target(&ConnectTargetRequest {
            target_portal: None,
            iqn: LUN0.into(),
            ..Default::default()
        })
        .unwrap_err(),
        h.disconnect_target(&TargetRequest::default()).unwrap_err(),
        h.get_target_disks(&TargetRequest::default()).unwrap_err(),
    ];
    for err in errs {
        assert_eq!(err.kind(), HostErrorKind::InvalidArgument);
        assert_eq!(err.message(), "target_portal is required");
    }
}

#[test]
fn disk_numbers_are_lowest_free_and_in_lun_order() {
    let mut state = IscsiState::new("iqn.init");
    state.add_server(IscsiServer {
        address: "Target.Example".into(),
        port: 3261,
        reachable: true,
        targets: vec![
            IscsiTarget::new("iqn.a", &[512 * 1024, 1024 * 1024]),
            IscsiTarget::new("iqn.b", &[4096]),
        ],
    });
    let h = TestIscsi::new(state);
    let p = TargetPortal::new("target.example", 3261);
    h.add_target_portal(Some(&p)).unwrap();
    let req = |iqn: &str| ConnectTargetRequest {
        target_portal: Some(p.clone()),
        iqn: iqn.into(),
        ..Default::default()
    };
    let t = |iqn: &str| TargetRequest {
        target_portal: Some(p.clone()),
        iqn: iqn.into(),
    };
    h.connect_target(&req("iqn.a")).unwrap();
    h.connect_target(&req("iqn.b")).unwrap();
    assert_eq!(h.get_target_disks(&t("iqn.a")).unwrap(), ["1", "2"]);
    assert_eq!(h.get_target_disks(&t("iqn.b")).unwrap(), ["3"]);
    h.disconnect_target(&t("iqn.a")).unwrap();
    h.connect_target(&req("iqn.a")).unwrap();
    assert_eq!(h.get_target_disks(&t("iqn.a")).unwrap(), ["1", "2"]);
    assert_eq!(
        h.list_target_portals().unwrap(),
        [TargetPortal::new("target.example", 3261)]
    );
}

#[test]
fn persistent_session_is_unregistered_on_disconnect() {
    let h = host();
    h.add_target_portal(Some(&portal(0))).unwrap();
    h.connect_target(&connect(LUN0, 0, "", "")).unwrap();
    assert_eq!(h.with(|s, _| s.make_persistent(LUN0)), 1);
    assert_eq!(h.with(|s, _| s.persistent_logins().len()), 1);
    h.disconnect_target(&target(LUN0)).unwrap();
    assert!(h.with(|s, _| s.persistent_logins().is_empty() && s.sessions().is_empty()));
}

#[test]
fn remove_portal_keeps_sessions() {
    let h = host();
    h.add_target_portal(Some(&portal(0))).unwrap();
    h.connect_target(&connect(LUN0, 0, "", "")).unwrap();
    h.remove_target_portal(Some(&portal(0))).unwrap();
    assert_eq!(
        h.with(|s, parts| (s.sessions().len(), lun_disks(parts))),
        (1, 1)
    );
}

#[test]
fn stopped_initiator_service_fails_everything() {
    let h = host();
    h.with(|_, parts| parts.stopped = true);
    assert_eq!(
        h.add_target_portal(Some(&portal(0))).unwrap_err().message(),
        "error adding target portal at (10.0.0.20:3260). err: the Microsoft iSCSI Initiator Service (MSiSCSI) is not running"
    );
    assert!(h.list_target_portals().is_err());
    h.with(|_, parts| parts.stopped = false);
    h.add_target_portal(Some(&portal(0))).unwrap();
}

type Seed = IscsiSeed;

#[test]
fn seed_from_toml_and_field_errors() {
    let seed: Seed = toml::from_str(
        r#"
[[portals]]
address = "san.local"
[[portals.targets]]
iqn = "iqn.2020-01.local.san:t1"
chap_username = "u"
chap_secret = "0123456789ab"
lun_sizes = [1073741824]
"#,
    )
    .unwrap();
    assert_eq!(seed.portals[0].port, 3260);
    assert_eq!(seed.initiator_iqn, DEFAULT_INITIATOR_IQN);
    let state = seed.build().unwrap();
    assert_eq!(state.initiator_iqn(), DEFAULT_INITIATOR_IQN);
    let h = TestIscsi::new(state);
    let p = TargetPortal::new("SAN.local", 0);
    h.add_target_portal(Some(&p)).unwrap();
    assert_eq!(
        h.discover_target_portal(Some(&p)).unwrap(),
        ["iqn.2020-01.local.san:t1"]
    );

    let err = toml::from_str::<Seed>("[[portals]]\naddress = \"a\"\nprot = 1\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `prot`"), "{err}");
    let err = toml::from_str::<Seed>("[[portals]]\nport = 1\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing field `address`"), "{err}");

    let bad = |t: IscsiTargetSeed| {
        IscsiState::from_seed(
            "iqn.init",
            &[IscsiPortalSeed {
                address: "a".into(),
                port: 3260,
                reachable: true,
                targets: vec![t],
            }],
        )
        .unwrap_err()
    };
    let base = IscsiTargetSeed {
        iqn: "iqn.t".into(),
        chap_username: None,
        chap_secret: None,
        mutual_chap_secret: None,
        lun_sizes: vec![],
        allowed_initiators: None,
    };
    let err = bad(IscsiTargetSeed {
        chap_username: Some("u".into()),
        ..base.clone()
    });
    assert_eq!(err.kind(), HostErrorKind::InvalidArgument);
    assert_eq!(
        err.message(),
        "portals[0].targets[0].chap_secret: required when chap_username is set"
    );
    let err = bad(IscsiTargetSeed {
        mutual_chap_secret: Some("0123456789ab".into()),
        ..base.clone()
    });
    assert_eq!(
        err.message(),
        "portals[0].targets[0].mutual_chap_secret: requires chap_username and chap_secret"
    );
    let err = bad(IscsiTargetSeed {
        lun_sizes: vec![512, 100],
        ..base.clone()
    });
    assert_eq!(
        err.message(),
        "portals[0].targets[0].lun_sizes[1]: must be a non-zero multiple of 512"
    );
    let err = bad(IscsiTargetSeed {
        chap_username: Some("u".into()),
        chap_secret: Some("short".into()),
        ..base
    });
    assert_eq!(
        err.message(),
        "portals[0].targets[0].chap_secret: must be 12 to 16 bytes long"
    );
}

/// iSCSI on a whole node: session disks among the node's disks.
mod on_a_node {
    use std::time::Duration;

    use super::*;
    use crate::host::Host;
    use crate::host::iscsi::MSISCSI;
    use crate::host::storage::DiskSpec;
    use crate::host::system::{ServiceStatus, ServiceTiming};
    use crate::host::tests::{host, ok_invariants};

    fn portal() -> Option<TargetPortal> {
        Some(TargetPortal::new("10.0.0.20", 0))
    }

    fn target(iqn: &str) -> TargetRequest {
        TargetRequest {
            target_portal: portal(),
            iqn: iqn.into(),
        }
    }

    fn fast(h: &Host) {
        h.lock().system.set_timing(ServiceTiming {
            poll_interval: Duration::from_millis(2),
            timeout: Duration::from_secs(2),
        });
    }

    #[test]
    fn iscsi_disks_join_the_node_and_work_with_the_disk_group() {
        let t = host();
        let h = &t.host;
        fast(h);
        h.start_service(MSISCSI).unwrap();
        h.run(|node| node.iscsi(|iscsi, disks| iscsi.add_target_portal(disks, portal().as_ref())))
            .unwrap();
        assert!(
            h.run(|node| node
                .iscsi(|iscsi, disks| iscsi.discover_target_portal(disks, portal().as_ref())))
                .unwrap()
                .contains(&LUN0.to_string())
        );
        h.run(|node| {
            node.iscsi(|iscsi, disks| {
                iscsi.connect_target(
                    disks,
                    &ConnectTargetRequest {
                        target_portal: portal(),
                        iqn: LUN0.into(),
                        ..Default::default()
                    },
                )
            })
        })
        .unwrap();
        let disks = h
            .run(|node| node.iscsi(|iscsi, disks| iscsi.get_target_disks(disks, &target(LUN0))))
            .unwrap();
        assert_eq!(disks, ["3"], "lowest free number after local disks 0-2");
        let n: u32 = disks[0].parse().unwrap();
        let d = h.snapshot().disk(n).cloned().unwrap();
        assert!(d.is_offline);
        assert_eq!(d.partition_style, PartitionStyle::Raw);
        assert_eq!(d.size, 1 << 30);
        assert!(
            h.run(|node| node.list_disk_locations())
                .unwrap()
                .contains_key(&n)
        );
        assert!(h.run(|node| node.list_disk_ids()).unwrap().contains_key(&n));
        assert!(!h.run(|node| node.get_disk_state(n)).unwrap());
        h.run(|node| node.set_disk_state(n, true)).unwrap();
        h.run(|node| node.partition_disk(n)).unwrap();
        let d = h.snapshot().disk(n).cloned().unwrap();
        assert_eq!(d.partition_style, PartitionStyle::Gpt);
        assert!(!d.partitions.is_empty());
        h.run(|node| node.set_disk_state(n, false)).unwrap();
        ok_invariants(h);

        h.run(|node| node.iscsi(|iscsi, disks| iscsi.disconnect_target(disks, &target(LUN0))))
            .unwrap();
        assert!(h.snapshot().disk(n).is_none());
        assert!(
            !h.run(|node| node.list_disk_locations())
                .unwrap()
                .contains_key(&n)
        );
        assert!(
            h.run(|node| node.iscsi(|iscsi, disks| iscsi.get_target_disks(disks, &target(LUN0))))
                .unwrap()
                .is_empty()
        );
        assert!(h.lock().iscsi_disks.is_empty());
        ok_invariants(h);
    }

    #[test]
    fn iscsi_session_disk_detached_behind_its_back_is_reported() {
        let t = host();
        let h = &t.host;
        h.lock()
            .system
            .set_status(MSISCSI, ServiceStatus::Running)
            .unwrap();
        h.run(|node| node.iscsi(|iscsi, disks| iscsi.add_target_portal(disks, portal().as_ref())))
            .unwrap();
        h.run(|node| {
            node.iscsi(|iscsi, disks| {
                iscsi.connect_target(
                    disks,
                    &ConnectTargetRequest {
                        target_portal: portal(),
                        iqn: LUN0.into(),
                        ..Default::default()
                    },
                )
            })
        })
        .unwrap();
        h.detach_disk(3).unwrap();
        let v = h.check_invariants().unwrap_err();
        assert!(
            v.iter().any(|m| m.contains("disk 3 does not exist")),
            "{v:?}"
        );
        // A new disk taking the number is not the session's: disconnect
        // leaves it alone.
        h.attach_disk(DiskSpec::new(1 << 30)).unwrap();
        h.run(|node| node.iscsi(|iscsi, disks| iscsi.disconnect_target(disks, &target(LUN0))))
            .unwrap();
        assert!(h.snapshot().disk(3).is_some());
        ok_invariants(h);
    }

    #[test]
    fn iscsi_fails_while_msiscsi_is_stopped() {
        let t = host();
        let h = &t.host;
        let e = h
            .run(|node| {
                node.iscsi(|iscsi, disks| iscsi.add_target_portal(disks, portal().as_ref()))
            })
            .unwrap_err();
        assert_eq!(e.kind(), HostErrorKind::Unknown);
        assert_eq!(
            e.message(),
            "error adding target portal at (10.0.0.20:3260). err: the Microsoft iSCSI \
             Initiator Service (MSiSCSI) is not running"
        );
        assert!(
            h.run(|node| node.iscsi(|iscsi, disks| iscsi.list_target_portals(disks)))
                .is_err()
        );
        fast(h);
        h.start_service(MSISCSI).unwrap();
        h.run(|node| node.iscsi(|iscsi, disks| iscsi.add_target_portal(disks, portal().as_ref())))
            .unwrap();
        assert_eq!(
            h.run(|node| node.iscsi(|iscsi, disks| iscsi.list_target_portals(disks)))
                .unwrap()
                .len(),
            1
        );
        h.stop_service(MSISCSI, false).unwrap();
        assert!(
            h.run(|node| node.iscsi(|iscsi, disks| iscsi.list_target_portals(disks)))
                .is_err()
        );
        // State survives the stop.
        h.start_service(MSISCSI).unwrap();
        assert_eq!(
            h.run(|node| node.iscsi(|iscsi, disks| iscsi.list_target_portals(disks)))
                .unwrap()
                .len(),
            1
        );
    }
}
