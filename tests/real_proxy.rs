//! The crate against the real CSI Proxy (csi-proxy v1.3.0 or v1.1.3, built
//! from source and run under Wine by `scripts/real-proxy.sh`, which names
//! the release in `CSI_REAL_PROXY`).
//!
//! Every test is ignored by a plain `cargo test`: each needs a proxy that
//! serves its default pipes. The script starts a fresh proxy and runs
//! `first_operation_after_the_proxy_starts` alone first, since it must be
//! the proxy's first client, then the upstream Go client, then the rest.
//!
//! Under Wine only the filesystem group really works; the other groups fail
//! fast (WMI on v1.3.0, PowerShell on v1.1.3), which shows how the crate
//! reads the real proxy's failures. Operations have a 5 s deadline (calls
//! take milliseconds): a test fails if anything waits it out.
#![cfg(windows)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use csi_proxy_client::node::{MountState, Node, NodeOptions, NodeVersions};
use csi_proxy_client::{ConnectOptions, Error, ErrorKind};

/// The proxy's working directory (the script creates it in the prefix).
const KUBELET: &str = r"C:\var\lib\kubelet";

/// The release under test, from `CSI_REAL_PROXY` (`v1.3.0` or `v1.1.3`).
fn release() -> String {
    std::env::var("CSI_REAL_PROXY").expect("CSI_REAL_PROXY names the release (v1.3.0 or v1.1.3)")
}

fn connect_options() -> ConnectOptions {
    ConnectOptions::default()
        .with_connect_timeout(Duration::from_secs(2))
        .with_request_timeout(Duration::from_secs(5))
}

fn options() -> NodeOptions {
    NodeOptions::default()
        .iscsi(true)
        .system(true)
        .connect_options(connect_options())
        .deadline(Duration::from_secs(5))
}

/// A directory of this test alone under the working directory.
fn scratch(test: &str) -> String {
    format!(r"{KUBELET}\real-proxy-{test}-{}", std::process::id())
}

async fn node() -> Node {
    let node = Node::connect(options()).await.unwrap();
    assert!(
        node.versions().filesystem.is_some(),
        "no filesystem group: is the proxy running? {}",
        node.versions()
    );
    node
}

#[tokio::test]
#[ignore = "needs the real csi-proxy: scripts/real-proxy.sh"]
async fn first_operation_after_the_proxy_starts() {
    // Started with the proxy: until its pipes exist every dial fails at
    // once with "file not found", which takes no pipe instance.
    let started = Instant::now();
    let (node, connect) = loop {
        let attempt = Instant::now();
        let node = Node::connect(options()).await.unwrap();
        if node.versions().filesystem.is_some() && node.versions().smb.is_some() {
            break (node, attempt.elapsed());
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the proxy's pipes did not appear within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let connected = started.elapsed();
    let before = Instant::now();
    let exists = node.exists(KUBELET).await;
    let first = before.elapsed();
    assert!(exists.unwrap(), "{KUBELET} exists");
    let before = Instant::now();
    assert!(node.exists(KUBELET).await.unwrap());
    let second = before.elapsed();
    println!(
        "real-proxy: {} first operation: pipes found and Node::connect done {connected:.2?} after \
         the test started (that connect {connect:.2?}), first exists {first:.2?}, second {second:.2?}",
        release()
    );
}

#[tokio::test]
#[ignore = "needs the real csi-proxy: scripts/real-proxy.sh"]
async fn negotiates_the_versions_the_release_serves() {
    let node = node().await;
    // Both releases serve the same group versions; the node layer takes the
    // newest it may (no alpha except where a group has nothing else).
    let expected: NodeVersions =
        "disk=v1 volume=v1 filesystem=v1 smb=v1 iscsi=v1alpha2 system=v1alpha1"
            .parse()
            .unwrap();
    assert_eq!(node.versions().to_string(), expected.to_string());
    println!("real-proxy: {} negotiated {}", release(), node.versions());

    let with_alpha = Node::connect(options().allow_alpha(true)).await.unwrap();
    assert_eq!(
        with_alpha.versions().to_string(),
        "disk=v1 volume=v2alpha1 filesystem=v2alpha1 smb=v1 iscsi=v1alpha2 system=v1alpha1"
            .parse::<NodeVersions>()
            .unwrap()
            .to_string()
    );
}

#[tokio::test]
#[ignore = "needs the real csi-proxy: scripts/real-proxy.sh"]
async fn filesystem_operations_are_idempotent() {
    let node = node().await;
    let base = scratch("fs");
    let staging = format!(r"{base}\staging");
    let target = format!(r"{base}\pods\target");

    assert_eq!(
        node.mount_state(&staging).await.unwrap(),
        MountState::Missing
    );
    for _ in 0..2 {
        node.ensure_dir(&staging).await.unwrap();
    }
    assert!(node.exists(&staging).await.unwrap());
    assert_eq!(
        node.mount_state(&staging).await.unwrap(),
        MountState::NotMounted
    );

    // A staging path that is a plain directory holds no volume: a pod
    // linked there would write to the node's own disk. Refused each time,
    // nothing made at the target.
    for _ in 0..2 {
        let err = node.publish(&staging, &target).await.unwrap_err();
        assert!(matches!(err, Error::NotStaged { .. }), "{err}");
    }
    assert_eq!(
        node.mount_state(&target).await.unwrap(),
        MountState::Missing
    );

    for _ in 0..2 {
        node.unpublish(&target).await.unwrap();
    }
    assert!(!node.exists(&target).await.unwrap());
    // Unpublishing a target that holds nothing is Ok, and the staging
    // path stays.
    assert!(node.exists(&staging).await.unwrap());

    let absent = format!(r"{base}\never-staged");
    for _ in 0..2 {
        node.unstage(&absent).await.unwrap();
    }
    // A plain directory at a staging path is removed by unstage.
    node.unstage(&staging).await.unwrap();
    assert!(!node.exists(&staging).await.unwrap());

    // Directories one level at a time: the proxies built with Go >= 1.24
    // remove a tree through a call Wine 8 lacks ("unlinkat ...: Invalid
    // function"), so removing a tree at once is shown on Windows only.
    let pods = format!(r"{base}\pods");
    for dir in [&pods, &base] {
        for _ in 0..2 {
            node.remove(dir).await.unwrap();
        }
        assert_eq!(node.mount_state(dir).await.unwrap(), MountState::Missing);
    }
}

#[tokio::test]
#[ignore = "needs the real csi-proxy: scripts/real-proxy.sh"]
async fn raw_clients_of_every_filesystem_version() {
    use csi_proxy_client::filesystem::{v1, v1beta1, v1beta2, v2alpha1};
    let options = connect_options();
    let base = scratch("raw");

    macro_rules! round_trip {
        ($v:ident, $($context:tt)*) => {{
            use $v::FilesystemApi as _;
            let dir = format!(r"{base}\{}", stringify!($v));
            let client = $v::Client::connect_default_with(&options).await.unwrap();
            client
                .mkdir($v::MkdirRequest { path: dir.clone(), $($context)* })
                .await
                .unwrap();
            let exists = client
                .path_exists($v::PathExistsRequest { path: dir.clone(), $($context)* })
                .await
                .unwrap();
            assert!(exists.exists, "{}: {dir} after mkdir", stringify!($v));
            client
                .rmdir($v::RmdirRequest { path: dir.clone(), force: true, $($context)* })
                .await
                .unwrap();
            let exists = client
                .path_exists($v::PathExistsRequest { path: dir.clone(), $($context)* })
                .await
                .unwrap();
            assert!(!exists.exists, "{}: {dir} after rmdir", stringify!($v));
        }};
    }
    let pod = v1beta1::PathContext::Pod as i32;
    round_trip!(v1beta1, context: pod);
    round_trip!(v1beta2,);
    round_trip!(v1,);
    round_trip!(v2alpha1,);
    node().await.remove(&base).await.unwrap();
}

/// What a call the proxy cannot carry out under Wine came back with; a
/// failure is printed with its kind and codes.
fn outcome<T: std::fmt::Debug>(
    what: &str,
    started: Instant,
    result: Result<T, Error>,
) -> Result<T, Error> {
    let took = started.elapsed();
    match &result {
        Ok(ok) => println!(
            "real-proxy: {} {what}: succeeded in {took:.2?}: {ok:?}",
            release()
        ),
        Err(err) => println!(
            "real-proxy: {} {what}: {:?} (code {:?}, windows code {:?}) in {took:.2?}: {err}",
            release(),
            err.kind(),
            err.code(),
            err.windows_code()
        ),
    }
    result
}

#[tokio::test]
#[ignore = "needs the real csi-proxy: scripts/real-proxy.sh"]
async fn failures_wine_provokes_are_classified() {
    use csi_proxy_client::disk::v1::{self as disk, DiskApi};
    use csi_proxy_client::smb::v1::{self as smb, SmbApi};
    use csi_proxy_client::volume::v1::{self as volume, VolumeApi};
    let options = connect_options();
    let disks = disk::Client::connect_default_with(&options).await.unwrap();
    let volumes = volume::Client::connect_default_with(&options)
        .await
        .unwrap();
    let shares = smb::Client::connect_default_with(&options).await.unwrap();
    let node = node().await;

    // Every check is made (and printed) before the test fails.
    let mut wrong = Vec::new();
    // WMI (v1.3.0) or PowerShell (v1.1.3) does not work under Wine: these
    // fail, and nothing in their failures says that something is missing.
    // (v1.1.3's rescan succeeds under Wine: it is checked when it fails.)
    let started = Instant::now();
    let rescan = outcome(
        "disk rescan",
        started,
        disks.rescan(disk::RescanRequest {}).await,
    );
    let started = Instant::now();
    let ids = outcome(
        "disk list",
        started,
        disks.list_disk_ids(disk::ListDiskIDsRequest {}).await,
    );
    let started = Instant::now();
    let on_disk = outcome(
        "volumes on disk 0",
        started,
        volumes
            .list_volumes_on_disk(volume::ListVolumesOnDiskRequest {
                disk_number: 0,
                partition_number: 0,
            })
            .await,
    );
    let started = Instant::now();
    let mapping = shares
        .new_smb_global_mapping(smb::NewSmbGlobalMappingRequest {
            remote_path: r"\\server\share".into(),
            local_path: String::new(),
            username: "user".into(),
            password: "secret".into(),
        })
        .await;
    let mapping = outcome("smb mapping", started, mapping);
    // What fails under Wine: WMI's calls on v1.3.0; on v1.1.3 PowerShell's
    // output is empty, which the proxy reads as success for some calls (a
    // volume list of one empty id, an SMB mapping) and fails to parse for
    // others. A call that fails is checked whether or not it must.
    let v13 = release() == "v1.3.0";
    let checks = [
        ("disk rescan", rescan.err(), v13),
        ("disk list", ids.err(), !v13),
        ("volumes on disk 0", on_disk.err(), false),
        ("smb mapping", mapping.err(), v13),
    ];
    for (what, err, must_fail) in checks {
        match err {
            None if must_fail => wrong.push(format!("{what}: succeeded under Wine")),
            None => {}
            Some(err) if err.code().is_none() => {
                wrong.push(format!("{what}: not an answer of the proxy: {err:?}"))
            }
            Some(err) if err.kind() == ErrorKind::NotFound => {
                wrong.push(format!("{what}: reads as NotFound: {err}"))
            }
            Some(_) => {}
        }
    }

    // A path outside the proxy's working directories is refused.
    let started = Instant::now();
    match outcome(
        "path outside the working directories",
        started,
        node.ensure_dir(r"C:\Windows\evil").await,
    ) {
        Ok(()) => wrong.push("a path outside the working directories was accepted".into()),
        Err(err) => {
            if !matches!(
                err.kind(),
                ErrorKind::InvalidArgument | ErrorKind::PermissionDenied
            ) {
                wrong.push(format!(
                    "outside the working directories: {:?}, not InvalidArgument or PermissionDenied: {err}",
                    err.kind()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real csi-proxy: scripts/real-proxy.sh"]
async fn sixty_four_concurrent_callers_on_one_connection() {
    const CALLERS: usize = 64;
    const CALLS: usize = 20;
    let node = Arc::new(node().await);
    let started = Instant::now();
    let callers: Vec<_> = (0..CALLERS)
        .map(|_| {
            let node = Arc::clone(&node);
            tokio::spawn(async move {
                for _ in 0..CALLS {
                    assert!(node.exists(KUBELET).await?);
                }
                Ok::<_, Error>(())
            })
        })
        .collect();
    for caller in callers {
        caller.await.unwrap().unwrap();
    }
    let took = started.elapsed();
    println!(
        "real-proxy: {} {CALLERS} callers x {CALLS} exists on one connection: {} calls in {took:.2?}, {:.0} calls/s",
        release(),
        CALLERS * CALLS,
        (CALLERS * CALLS) as f64 / took.as_secs_f64()
    );
}
