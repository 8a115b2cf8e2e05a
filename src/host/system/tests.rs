use super::seed::service_seed;
use super::*;
use crate::host::Host;

fn fast() -> ServiceTiming {
    ServiceTiming {
        poll_interval: Duration::from_millis(1),
        timeout: Duration::from_millis(60),
    }
}

fn running(name: &str, deps: &[&str]) -> Service {
    Service::new(
        name,
        format!("{name} service"),
        StartMode::Auto,
        ServiceStatus::Running,
    )
    .with_dependencies(deps.iter().copied())
}

/// A node in its own sandbox (dropped with it).
struct Node1 {
    host: Host,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for Node1 {
    type Target = Host;
    fn deref(&self) -> &Host {
        &self.host
    }
}

/// A node whose System state is exactly `state`.
fn node_with(state: SystemState) -> Node1 {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(crate::host::HostConfig::new(dir.path())).unwrap();
    host.lock().system = state;
    Node1 { host, _dir: dir }
}

fn adapter(services: Vec<Service>) -> Node1 {
    let mut state = SystemState::new(Some("SER-1".into()));
    state.set_timing(fast());
    for s in services {
        state.insert_service(s);
    }
    node_with(state)
}

fn status(a: &Host, name: &str) -> ServiceStatus {
    get_service(a, name).unwrap().status
}

fn get_service(h: &Host, name: &str) -> HostResult<ServiceInfo> {
    h.run(|node| node.system.get_service(name, Instant::now()))
}

#[test]
fn default_node_has_the_default_system_seed() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(crate::host::HostConfig::new(dir.path())).unwrap();
    assert_eq!(
        SystemSeed::default_node()
            .build()
            .unwrap()
            .bios_serial_number()
            .unwrap(),
        host.with_system(|s| s.bios_serial_number()).unwrap()
    );
}

#[test]
fn concurrent_start_stop_stays_consistent() {
    let a = std::sync::Arc::new(adapter(vec![running("A", &[]), running("B", &["A"])]));
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let a = a.clone();
            std::thread::spawn(move || {
                for _ in 0..5 {
                    if i % 2 == 0 {
                        let _ = a.start_service("B");
                    } else {
                        let _ = a.stop_service("A", true);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // Whatever interleaving happened, B never runs without A.
    if status(&a, "B") == ServiceStatus::Running {
        assert_eq!(status(&a, "A"), ServiceStatus::Running);
    }
    a.start_service("B").unwrap();
    a.stop_service("A", true).unwrap();
    assert_eq!(status(&a, "B"), ServiceStatus::Stopped);
}

#[test]
fn bios_serial_and_missing_bios() {
    let a = node_with(SystemState::default());
    assert_eq!(
        a.with_system(|s| s.bios_serial_number()).unwrap(),
        DEFAULT_BIOS_SERIAL
    );
    a.with_system(|s| s.set_bios_serial(None));
    let err = a.with_system(|s| s.bios_serial_number()).unwrap_err();
    assert_eq!(err.kind(), crate::host::HostErrorKind::Unknown);
    assert_eq!(
        err.message(),
        "failed to get BIOS element: failed to query BIOS element: not found"
    );
}

#[test]
fn get_service_fields_of_default_msiscsi() {
    let a = node_with(SystemState::default());
    let info = get_service(&a, "msiscsi").unwrap();
    assert_eq!(
        info,
        ServiceInfo {
            display_name: "Microsoft iSCSI Initiator Service".into(),
            start_type: StartType::Manual,
            status: ServiceStatus::Stopped,
        }
    );
    assert_eq!(info.start_type.code(), 3);
    assert_eq!(info.status.code(), 1);
}

#[test]
fn unknown_service_errors() {
    let a = adapter(vec![]);
    assert_eq!(
        get_service(&a, "").unwrap_err().message(),
        "failed to get service . error: failed to query service : not found"
    );
    assert_eq!(
        a.start_service("nope").unwrap_err().message(),
        "failed to get service nope. error: failed to query service nope: not found"
    );
    assert_eq!(
        a.stop_service("nope", true).unwrap_err().message(),
        "failed to stop service nope. error: failed to get service nope. error: failed to query service nope: not found"
    );
}

#[test]
fn state_text_and_start_mode_mappings() {
    let table = [
        ("Stopped", 1),
        ("Start Pending", 2),
        ("Stop Pending", 3),
        ("Running", 4),
        ("Continue Pending", 5),
        ("Pause Pending", 6),
        ("Paused", 7),
        ("Unknown", 0),
        ("running", 0),
        ("Bogus", 0),
    ];
    for (text, code) in table {
        assert_eq!(ServiceStatus::from_state_text(text).code(), code, "{text}");
    }
    let modes = [
        ("Boot", 0),
        ("System", 1),
        ("Auto", 2),
        ("Manual", 3),
        ("Disabled", 4),
        ("Delayed", 0),
        ("", 0),
    ];
    for (text, code) in modes {
        assert_eq!(StartType::from_start_mode_text(text).code(), code, "{text}");
        assert_eq!(StartMode::from_wmi_text(text).start_type().code(), code);
    }
    assert_eq!(ServiceStatus::from_code(7), Some(ServiceStatus::Paused));
    assert_eq!(ServiceStatus::from_code(8), None);
    assert_eq!(StartType::from_code(4), Some(StartType::Disabled));
    assert_eq!(StartType::from_code(5), None);
}

#[test]
fn start_then_stop_state_machine() {
    let a = node_with(SystemState::default());
    a.with_system(|s| s.set_timing(fast()));
    assert_eq!(status(&a, "MSiSCSI"), ServiceStatus::Stopped);
    a.start_service("MSiSCSI").unwrap();
    assert_eq!(status(&a, "MSiSCSI"), ServiceStatus::Running);
    // Idempotent start of a running service.
    a.start_service("msiscsi").unwrap();
    a.stop_service("MSiSCSI", false).unwrap();
    assert_eq!(status(&a, "MSiSCSI"), ServiceStatus::Stopped);
    // Idempotent stop.
    a.stop_service("MSiSCSI", false).unwrap();
}

#[test]
fn start_with_delay_passes_through_start_pending() {
    let mut svc = Service::new("Slow", "Slow", StartMode::Manual, ServiceStatus::Stopped);
    svc.start_delay = Duration::from_millis(10);
    svc.stop_delay = Duration::from_millis(10);
    let a = adapter(vec![svc]);
    let now = Instant::now();
    assert_eq!(a.with_system(|s| s.invoke_start("Slow", now)), Some(0));
    assert_eq!(
        a.with_system(|s| s.refresh("Slow", now)),
        Some(ServiceStatus::StartPending)
    );
    a.start_service("Slow").unwrap();
    assert_eq!(status(&a, "Slow"), ServiceStatus::Running);
    a.stop_service("Slow", false).unwrap();
    assert_eq!(status(&a, "Slow"), ServiceStatus::Stopped);
}

#[test]
fn start_failures_and_timeout() {
    let disabled = Service::new("Off", "Off", StartMode::Disabled, ServiceStatus::Stopped);
    let mut denied = Service::new(
        "Denied",
        "Denied",
        StartMode::Manual,
        ServiceStatus::Stopped,
    );
    denied.start_result = Some(2);
    let mut hung = Service::new("Hung", "Hung", StartMode::Manual, ServiceStatus::Stopped);
    hung.hang = true;
    let a = adapter(vec![disabled, denied, hung]);
    assert_eq!(
        a.start_service("Off").unwrap_err().message(),
        "failed to wait for service Off state change. error: error starting service name Off. return value: 14"
    );
    assert_eq!(
        a.start_service("Denied").unwrap_err().message(),
        "failed to wait for service Denied state change. error: error starting service name Denied. return value: 2"
    );
    assert_eq!(
        a.start_service("Hung").unwrap_err().message(),
        "timed out waiting for service Hung to become running"
    );
    assert_eq!(status(&a, "Hung"), ServiceStatus::StartPending);
}

#[test]
fn start_starts_antecedents_and_fails_on_disabled_antecedent() {
    let a = adapter(vec![
        Service::new("A", "A", StartMode::Manual, ServiceStatus::Stopped),
        Service::new("B", "B", StartMode::Manual, ServiceStatus::Stopped).with_dependencies(["A"]),
        Service::new("X", "X", StartMode::Disabled, ServiceStatus::Stopped),
        Service::new("Y", "Y", StartMode::Manual, ServiceStatus::Stopped).with_dependencies(["X"]),
    ]);
    a.start_service("B").unwrap();
    assert_eq!(status(&a, "A"), ServiceStatus::Running);
    assert_eq!(status(&a, "B"), ServiceStatus::Running);
    assert_eq!(
        a.start_service("Y").unwrap_err().message(),
        "failed to wait for service Y state change. error: error starting service name Y. return value: 13"
    );
    assert_eq!(status(&a, "Y"), ServiceStatus::Stopped);
}

#[test]
fn force_stop_order_is_c_b_a() {
    let a = adapter(vec![
        running("A", &[]),
        running("B", &["A"]),
        running("C", &["B"]),
    ]);
    let order = a.with_system(|s| s.force_stop_order("a", Instant::now()));
    assert_eq!(order, ["C", "B", "A"]);
}

#[test]
fn force_stop_order_skips_stopped_dependent() {
    let a = adapter(vec![
        running("A", &[]),
        running("B", &["A"]),
        Service::new("C", "C", StartMode::Manual, ServiceStatus::Stopped).with_dependencies(["A"]),
        running("D", &["C"]),
    ]);
    // C is stopped: it and what hangs below it are not explored.
    let order = a.with_system(|s| s.force_stop_order("A", Instant::now()));
    assert_eq!(order, ["B", "A"]);
}

#[test]
fn stop_without_force_refuses_running_dependents() {
    let a = adapter(vec![
        running("A", &[]),
        running("B", &["A"]),
        running("C", &["B"]),
    ]);
    assert_eq!(
        a.stop_service("A", false).unwrap_err().message(),
        "failed to stop service A. error: error stopping service name A. current state: Running"
    );
    for name in ["A", "B", "C"] {
        assert_eq!(status(&a, name), ServiceStatus::Running);
    }
}

#[test]
fn stop_with_force_stops_dependents_first() {
    let a = adapter(vec![
        running("A", &[]),
        running("B", &["A"]),
        running("C", &["B"]),
        Service::new("S", "S", StartMode::Manual, ServiceStatus::Stopped).with_dependencies(["A"]),
    ]);
    a.stop_service("A", true).unwrap();
    for name in ["A", "B", "C", "S"] {
        assert_eq!(status(&a, name), ServiceStatus::Stopped, "{name}");
    }
}

#[test]
fn force_stop_failure_names_requested_service() {
    let mut b = running("B", &["A"]);
    b.stop_result = Some(2);
    let a = adapter(vec![running("A", &[]), b]);
    assert_eq!(
        a.stop_service("A", true).unwrap_err().message(),
        "failed to stop service A. error: error stopping service name B. current state: Running"
    );
    assert_eq!(status(&a, "A"), ServiceStatus::Running);
}

#[test]
fn stop_timeout_when_hung() {
    let mut h = running("H", &[]);
    h.hang = true;
    let a = adapter(vec![h]);
    assert_eq!(
        a.stop_service("H", false).unwrap_err().message(),
        "failed to stop service H. error: timed out waiting for service H to stop"
    );
    assert_eq!(status(&a, "H"), ServiceStatus::StopPending);
}

#[test]
fn default_node_force_stop_of_samss() {
    let a = node_with(SystemState::default());
    a.with_system(|s| s.set_timing(fast()));
    let order = a.with_system(|s| s.force_stop_order("SamSS", Instant::now()));
    assert_eq!(order, ["Browser", "LanmanServer", "SamSS"]);
    a.stop_service("SamSS", true).unwrap();
    assert_eq!(status(&a, "Netlogon"), ServiceStatus::Stopped);
    assert_eq!(status(&a, "LanmanWorkstation"), ServiceStatus::Running);
}

type Seed = SystemSeed;

#[test]
fn seed_from_toml() {
    let seed: Seed = toml::from_str(
        r#"
bios_serial = "0000-0000"
[[services]]
name = "A"
display_name = "Service A"
status = "running"
start_type = "Auto"
[[services]]
name = "B"
depends_on = ["a"]
start_type = "Weird"
"#,
    )
    .unwrap();
    let mut state = seed.build().unwrap();
    assert_eq!(state.bios_serial_number().unwrap(), "0000-0000");
    let b = state.get_service("b", Instant::now()).unwrap();
    assert_eq!(b.display_name, "B");
    assert_eq!(b.status, ServiceStatus::Stopped);
    assert_eq!(b.start_type, StartType::Boot);
    assert_eq!(state.dependents("A"), ["B"]);
}

#[test]
fn seed_errors_name_the_field() {
    let err = toml::from_str::<Seed>("[[services]]\nname = \"A\"\nstate = \"Running\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `state`"), "{err}");
    let err = toml::from_str::<Seed>("[[services]]\nname = \"A\"\nstatus = \"Up\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown service status `Up`"), "{err}");
    let err = toml::from_str::<Seed>("[[services]]\ndisplay_name = \"A\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing field `name`"), "{err}");

    let dep = ServiceSeed {
        depends_on: vec!["Ghost".into()],
        ..service_seed("A", "A", StartMode::Manual, ServiceStatus::Stopped, &[])
    };
    let err = SystemState::from_seed(None, &[dep]).unwrap_err();
    assert_eq!(err.kind(), crate::host::HostErrorKind::InvalidArgument);
    assert_eq!(
        err.message(),
        "services[0].depends_on: unknown service `Ghost`"
    );
    let cyc = [
        service_seed("A", "A", StartMode::Manual, ServiceStatus::Stopped, &["B"]),
        service_seed("B", "B", StartMode::Manual, ServiceStatus::Stopped, &["A"]),
    ];
    assert_eq!(
        SystemState::from_seed(None, &cyc).unwrap_err().message(),
        "services[0].depends_on: dependency cycle through `A`"
    );
    let dup = [
        service_seed("A", "A", StartMode::Manual, ServiceStatus::Stopped, &[]),
        service_seed("a", "A", StartMode::Manual, ServiceStatus::Stopped, &[]),
    ];
    assert_eq!(
        SystemState::from_seed(None, &dup).unwrap_err().message(),
        "services[1].name: duplicate service `a`"
    );
}

/// The waits on a whole node.
mod on_a_node {
    use super::*;
    use crate::host::Host;
    use crate::host::tests::host;

    fn fast(h: &Host) {
        h.lock().system.set_timing(ServiceTiming {
            poll_interval: Duration::from_millis(2),
            timeout: Duration::from_secs(2),
        });
    }

    #[test]
    fn system_waits_do_not_hold_the_host_lock() {
        let t = host();
        let h = t.host.clone();
        fast(&h);
        h.lock().system.service_mut("W32Time").unwrap().start_delay = Duration::from_millis(400);
        h.lock()
            .system
            .set_status("W32Time", ServiceStatus::Stopped)
            .unwrap();
        let h2 = h.clone();
        let start = std::thread::spawn(move || h2.start_service("W32Time"));
        std::thread::sleep(Duration::from_millis(100));
        let before = Instant::now();
        let info = h
            .run(|node| node.system.get_service("W32Time", Instant::now()))
            .unwrap();
        assert!(before.elapsed() < Duration::from_millis(200));
        assert_eq!(info.status, ServiceStatus::StartPending);
        assert!(!start.is_finished());
        h.run(|node| node.mkdir(r"C:\var\lib\kubelet\during-start"))
            .unwrap();
        start.join().unwrap().unwrap();
        assert_eq!(
            h.run(|node| node.system.get_service("W32Time", Instant::now()))
                .unwrap()
                .status,
            ServiceStatus::Running
        );
        assert_eq!(
            h.run(|node| node.system.bios_serial_number()).unwrap(),
            crate::host::system::DEFAULT_BIOS_SERIAL
        );
    }
}
