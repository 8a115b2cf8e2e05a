//! `deploy/windows-daemonset.yaml` holds valid Kubernetes objects: each one
//! deserialises into its `k8s-openapi` type and serialises back to the same
//! document (so a misspelt or misplaced field fails too), and the DaemonSet
//! wires the registrar, the plugin and the CSI Proxy pipes together.

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::storage::v1::CSIDriver;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_yaml_ng::Value;

const MANIFEST: &str = include_str!("../deploy/windows-daemonset.yaml");

fn documents() -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(MANIFEST)
        .map(|doc| Value::deserialize(doc).expect("a YAML document"))
        .collect()
}

/// `doc` as a `T`, checked to lose nothing on the way.
fn typed<T: DeserializeOwned + serde::Serialize>(doc: &Value) -> T {
    let object: T = serde_yaml_ng::from_value(doc.clone()).expect("a valid object");
    let back = serde_yaml_ng::to_value(&object).unwrap();
    assert_eq!(
        &back, doc,
        "fields the type does not know, or of the wrong shape"
    );
    object
}

fn daemonset() -> DaemonSet {
    let docs = documents();
    let doc = docs
        .iter()
        .find(|d| d["kind"] == "DaemonSet")
        .expect("a DaemonSet");
    typed(doc)
}

#[test]
fn every_object_is_a_valid_kubernetes_object() {
    let mut kinds = Vec::new();
    for doc in documents() {
        let kind = doc["kind"].as_str().expect("a kind").to_string();
        match kind.as_str() {
            "CSIDriver" => drop(typed::<CSIDriver>(&doc)),
            "ServiceAccount" => drop(typed::<ServiceAccount>(&doc)),
            "DaemonSet" => drop(typed::<DaemonSet>(&doc)),
            other => panic!("unexpected kind {other}"),
        }
        kinds.push(kind);
    }
    assert_eq!(kinds, ["CSIDriver", "ServiceAccount", "DaemonSet"]);
}

#[test]
fn the_daemonset_runs_registrar_and_plugin_on_windows_nodes() {
    let spec = daemonset().spec.unwrap().template.spec.unwrap();
    assert_eq!(spec.node_selector.unwrap()["kubernetes.io/os"], "windows");
    let names: Vec<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["node-driver-registrar", "csi-node-plugin", "liveness-probe"]
    );

    let env = |container: usize, name: &str| {
        spec.containers[container]
            .env
            .as_ref()
            .and_then(|env| env.iter().find(|e| e.name == name))
            .and_then(|e| e.value.clone())
            .unwrap_or_else(|| panic!("{name} in container {container}"))
    };
    // Both containers talk over the same socket, in the shared plugin dir.
    assert_eq!(env(0, "CSI_ENDPOINT"), env(1, "CSI_ENDPOINT"));
    let endpoint = env(1, "CSI_ENDPOINT");
    let socket = csi_node_server::socket_path(&endpoint).unwrap();
    assert!(
        socket.to_string_lossy().starts_with(r"C:\csi\"),
        "{endpoint}"
    );

    let volumes = spec.volumes.unwrap();
    let host_path = |name: &str| {
        volumes
            .iter()
            .find(|v| v.name == name)
            .and_then(|v| v.host_path.as_ref())
            .map(|h| h.path.clone())
            .unwrap_or_else(|| panic!("hostPath volume {name}"))
    };
    // The plugin dir is where the registrar tells kubelet the socket is.
    let registration = env(0, "DRIVER_REG_SOCK_PATH");
    assert_eq!(format!("{}csi.sock", host_path("plugin-dir")), registration);
    assert!(host_path("registration-dir").ends_with(r"\plugins_registry\"));

    // Every group the plugin uses: its pipe, from the host, at the same path.
    let mounts = spec.containers[1].volume_mounts.as_ref().unwrap();
    for group in ["disk", "volume", "filesystem", "smb"] {
        let pipe = format!(r"\\.\pipe\csi-proxy-{group}-v1");
        let mount = mounts
            .iter()
            .find(|m| m.mount_path == pipe)
            .unwrap_or_else(|| panic!("{pipe} is not mounted"));
        assert_eq!(host_path(&mount.name), pipe);
    }
    let args = spec.containers[1].args.as_ref().unwrap();
    assert!(args.contains(&"--endpoint=$(CSI_ENDPOINT)".to_string()));
}

/// The plugin keeps its SMB references in a directory of the host, under
/// a hostPath mount, so that they outlive the pod (an upgrade restarts it).
#[test]
fn the_plugin_state_lies_on_the_host() {
    let spec = daemonset().spec.unwrap().template.spec.unwrap();
    let plugin = &spec.containers[1];
    let state = plugin
        .args
        .iter()
        .flatten()
        .find_map(|a| a.strip_prefix("--state-dir="))
        .expect("--state-dir");
    let mounts = plugin.volume_mounts.as_ref().unwrap();
    let mount = mounts
        .iter()
        .filter(|m| {
            state
                .to_lowercase()
                .starts_with(&format!("{}\\", m.mount_path.to_lowercase()))
        })
        .max_by_key(|m| m.mount_path.len())
        .unwrap_or_else(|| panic!("{state} is on no mount"));
    assert!(mount.read_only != Some(true), "{state} must be writable");
    let volume = spec
        .volumes
        .as_ref()
        .unwrap()
        .iter()
        .find(|v| v.name == mount.name)
        .unwrap();
    assert!(
        volume.host_path.is_some(),
        "{} is not on the host",
        mount.name
    );
}

/// `deploy/windows-hostprocess-daemonset.yaml`: the same objects, valid in
/// the same way, with a DaemonSet that runs both containers as HostProcess
/// containers (SYSTEM, the host's network), mounts nothing (so no proxy
/// pipe), starts the plugin with `--host-process`, and points the
/// registrar, kubelet and the plugin at one socket under kubelet's plugin
/// directory on the host.
#[test]
fn the_host_process_daemonset_needs_no_proxy_and_no_mounts() {
    const HOST_PROCESS: &str = include_str!("../deploy/windows-hostprocess-daemonset.yaml");
    let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(HOST_PROCESS)
        .map(|doc| Value::deserialize(doc).expect("a YAML document"))
        .collect();
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["CSIDriver", "ServiceAccount", "DaemonSet"]);
    let driver: CSIDriver = typed(&docs[0]);
    let _: ServiceAccount = typed(&docs[1]);
    let daemonset: DaemonSet = typed(&docs[2]);
    // The same driver as the proxy-mode manifest, so a cluster runs one.
    let proxy_mode = documents();
    assert_eq!(docs[0], proxy_mode[0]);

    let spec = daemonset.spec.unwrap().template.spec.unwrap();
    assert_eq!(spec.host_network, Some(true));
    let windows = spec
        .security_context
        .and_then(|s| s.windows_options)
        .expect("pod windowsOptions");
    assert_eq!(windows.host_process, Some(true));
    assert_eq!(
        windows.run_as_user_name.as_deref(),
        Some(r"NT AUTHORITY\SYSTEM")
    );
    assert_eq!(spec.node_selector.unwrap()["kubernetes.io/os"], "windows");
    assert!(spec.volumes.is_none(), "a HostProcess pod mounts nothing");

    let names: Vec<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["node-driver-registrar", "csi-node-plugin", "liveness-probe"]
    );
    for container in &spec.containers {
        assert!(container.volume_mounts.is_none(), "{}", container.name);
        // Each container's own settings may only agree with the pod's.
        if let Some(context) = &container.security_context {
            let options = context.windows_options.as_ref();
            assert_ne!(options.and_then(|o| o.host_process), Some(false));
        }
    }
    let env = |container: usize, name: &str| {
        spec.containers[container]
            .env
            .as_ref()
            .and_then(|env| env.iter().find(|e| e.name == name))
            .and_then(|e| e.value.clone())
            .unwrap_or_else(|| panic!("{name} in container {container}"))
    };
    let args = |container: usize| spec.containers[container].args.clone().unwrap();

    // One socket, at a host path: where the plugin listens, where the
    // registrar dials, and where it tells kubelet to dial.
    let endpoint = env(1, "CSI_ENDPOINT");
    assert_eq!(env(0, "CSI_ENDPOINT"), endpoint);
    let socket = csi_node_server::socket_path(&endpoint).unwrap();
    assert_eq!(
        socket.to_string_lossy(),
        env(0, "DRIVER_REG_SOCK_PATH"),
        "kubelet must find the socket where the plugin listens"
    );
    let plugin_dir = format!(
        r"C:\var\lib\kubelet\plugins\{}\",
        driver.metadata.name.unwrap()
    );
    assert!(
        socket.to_string_lossy().starts_with(&plugin_dir),
        "{endpoint}"
    );
    assert!(args(0).contains(&"--plugin-registration-path=$(PLUGIN_REG_DIR)".to_string()));
    assert_eq!(
        env(0, "PLUGIN_REG_DIR"),
        r"C:\var\lib\kubelet\plugins_registry\"
    );

    let plugin = args(1);
    assert_eq!(plugin[0], "--host-process");
    assert!(plugin.contains(&"--endpoint=$(CSI_ENDPOINT)".to_string()));
    assert!(
        !plugin.iter().any(|a| a.starts_with("--csi-proxy")),
        "no proxy in HostProcess mode: {plugin:?}"
    );
    assert!(!HOST_PROCESS.contains(r"\\.\pipe"), "no pipe anywhere");
}

const HOST_PROCESS_MANIFEST: &str = include_str!("../deploy/windows-hostprocess-daemonset.yaml");

/// Both manifests' DaemonSets, proxy mode first.
fn both_daemonsets() -> [DaemonSet; 2] {
    let host_process = serde_yaml_ng::Deserializer::from_str(HOST_PROCESS_MANIFEST)
        .map(|doc| Value::deserialize(doc).unwrap())
        .find(|d| d["kind"] == "DaemonSet")
        .expect("a DaemonSet");
    [daemonset(), typed(&host_process)]
}

fn container<'a>(
    spec: &'a k8s_openapi::api::core::v1::PodSpec,
    name: &str,
) -> &'a k8s_openapi::api::core::v1::Container {
    spec.containers
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("container {name}"))
}

fn env_of(container: &k8s_openapi::api::core::v1::Container, name: &str) -> String {
    container
        .env
        .iter()
        .flatten()
        .find(|e| e.name == name)
        .and_then(|e| e.value.clone())
        .unwrap_or_else(|| panic!("{name} in {}", container.name))
}

/// The port a container declares under `name`.
fn port(container: &k8s_openapi::api::core::v1::Container, name: &str) -> i32 {
    container
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("port {name} of {}", container.name))
        .container_port
}

/// The path and port name of a container's HTTP liveness probe.
fn http_liveness(container: &k8s_openapi::api::core::v1::Container) -> (String, String) {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let get = container
        .liveness_probe
        .as_ref()
        .and_then(|p| p.http_get.as_ref())
        .unwrap_or_else(|| panic!("no HTTP livenessProbe on {}", container.name));
    let IntOrString::String(port) = &get.port else {
        panic!("{}: probe port by name", container.name)
    };
    (get.path.clone().unwrap_or_default(), port.clone())
}

/// In both modes, as azuredisk's, csi-driver-smb's and aws-ebs's Windows
/// manifests do: the livenessprobe sidecar asks the plugin's Probe on the
/// plugin's socket and serves /healthz on the port the plugin's
/// livenessProbe checks; the registrar serves its own /healthz
/// (`--http-endpoint`, as aws-ebs does) instead of the
/// kubelet-registration-probe mode.
#[test]
fn both_modes_check_the_health_of_the_plugin_and_the_registrar() {
    for (daemonset, text) in both_daemonsets()
        .iter()
        .zip([MANIFEST, HOST_PROCESS_MANIFEST])
    {
        let spec = daemonset.spec.clone().unwrap().template.spec.unwrap();
        let (plugin, probe, registrar) = (
            container(&spec, "csi-node-plugin"),
            container(&spec, "liveness-probe"),
            container(&spec, "node-driver-registrar"),
        );
        assert!(
            probe
                .image
                .as_deref()
                .unwrap()
                .contains("/livenessprobe:v2."),
            "{:?}",
            probe.image
        );
        assert_eq!(
            env_of(probe, "CSI_ENDPOINT"),
            env_of(plugin, "CSI_ENDPOINT")
        );
        let probe_args = probe.args.clone().unwrap();
        assert!(probe_args.contains(&"--csi-address=$(CSI_ENDPOINT)".to_string()));
        let health_port = probe_args
            .iter()
            .find_map(|a| a.strip_prefix("--health-port="))
            .expect("--health-port")
            .parse::<i32>()
            .unwrap();
        let (path, name) = http_liveness(plugin);
        assert_eq!(path, "/healthz");
        assert_eq!(port(plugin, &name), health_port);

        let endpoint = registrar
            .args
            .iter()
            .flatten()
            .find_map(|a| a.strip_prefix("--http-endpoint="))
            .expect("registrar --http-endpoint");
        let (path, name) = http_liveness(registrar);
        assert_eq!(path, "/healthz");
        assert_eq!(
            endpoint,
            format!("0.0.0.0:{}", port(registrar, &name)),
            "the probe must reach the registrar's endpoint"
        );
        assert_ne!(port(registrar, &name), health_port);
        assert!(!text.contains("--mode=kubelet-registration-probe"));
    }
}

/// One DaemonSet name for both modes (as azuredisk's two Windows
/// manifests): switching modes replaces the pods instead of running both
/// on one socket.
#[test]
fn both_modes_are_one_daemonset() {
    let [proxy, host_process] = both_daemonsets();
    assert_eq!(proxy.metadata.name, host_process.metadata.name);
    assert_eq!(proxy.metadata.namespace, host_process.metadata.namespace);
    assert_eq!(
        proxy.spec.as_ref().unwrap().selector,
        host_process.spec.as_ref().unwrap().selector
    );
}

/// Proxy mode does not leave the plugin's user to the image (nanoserver's
/// default user, ContainerUser, is not an administrator); as aws-ebs's
/// manifest, ContainerAdministrator.
#[test]
fn proxy_mode_runs_the_plugin_as_container_administrator() {
    let spec = daemonset().spec.unwrap().template.spec.unwrap();
    let plugin = container(&spec, "csi-node-plugin");
    let user = plugin
        .security_context
        .as_ref()
        .and_then(|s| s.windows_options.as_ref())
        .and_then(|w| w.run_as_user_name.as_deref());
    assert_eq!(user, Some("ContainerAdministrator"));
}

/// The images documented beside the manifests, both targets of one
/// Dockerfile: nanoserver of the node's version in proxy mode, run as
/// ContainerAdministrator; Microsoft's HostProcess base image otherwise.
#[test]
fn the_images_are_built_on_the_documented_bases() {
    let dockerfile = include_str!("../Dockerfile");
    let stage = |name: &str| {
        let start = dockerfile
            .find(&format!(" AS {name}\n"))
            .unwrap_or_else(|| panic!("no {name} stage"));
        let from = dockerfile[..start].rfind("FROM ").unwrap();
        let end = dockerfile[start..]
            .find("\nFROM ")
            .map_or(dockerfile.len(), |e| start + e);
        &dockerfile[from..end]
    };
    let proxy = stage("nanoserver");
    assert!(proxy.starts_with("FROM mcr.microsoft.com/windows/nanoserver:${OSVERSION}"));
    assert!(proxy.contains("USER ContainerAdministrator"));
    let host_process = stage("hostprocess");
    assert!(host_process.starts_with(
        "FROM mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:"
    ));
    assert!(!host_process.contains("USER "));
    let readme = include_str!("../README.md");
    for base in [
        "nanoserver:1809",
        "nanoserver:ltsc2022",
        "nanoserver:ltsc2025",
    ] {
        assert!(readme.contains(base), "{base} is not documented");
    }
}
