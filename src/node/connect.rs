//! Connecting: the versions each group negotiates, and the constructors,
//! one per situation of the README's "Which mode" table: `connect` (the
//! proxy), `host_process` (HostProcess mode), `from_mock` (unit tests;
//! `MockNode` for versions and options) and `host_process_with`
//! (HostProcess mode over a fake or a configured backend). The others are
//! deprecated names of these.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::groups::{DiskGroup, FilesystemGroup, IscsiGroup, SmbGroup, SystemGroup, VolumeGroup};
use super::{Inner, Node, NodeOptions, NodeVersions, smb_view};
use crate::{ApiVersion, Error, Stage};

/// The versions to try for a group, newest first.
fn candidates(
    group: &'static str,
    speaks: &[&str],
    options: &NodeOptions,
    alpha_only: bool,
) -> Result<Vec<String>, Error> {
    if let Some(&pinned) = options.pinned.get(group) {
        if !speaks.contains(&pinned) {
            return Err(Error::UnsupportedVersion {
                group,
                version: pinned.to_string(),
            });
        }
        return Ok(vec![pinned.to_string()]);
    }
    let mut versions: Vec<ApiVersion> = speaks
        .iter()
        .filter_map(|v| v.parse().ok())
        .filter(|v: &ApiVersion| {
            alpha_only || options.allow_alpha || !matches!(v.stage(), Stage::Alpha(_))
        })
        .collect();
    versions.sort_by(|a, b| b.cmp(a));
    Ok(versions.iter().map(ToString::to_string).collect())
}

impl Node {
    /// Connects to the node's proxy: for each group (disk, volume,
    /// filesystem, smb, and iscsi and system when asked for), dials the
    /// versions newest first and keeps the first that answers. A group
    /// with none is absent, and operations needing it fail with
    /// [`Error::GroupUnavailable`]. Fails only on invalid options.
    pub async fn connect(options: NodeOptions) -> Result<Node, Error> {
        let mut tried = HashMap::new();
        macro_rules! negotiate {
            ($Group:ident, $alpha_only:expr, $wanted:expr) => {{
                let mut chosen = None;
                let mut attempts = Vec::new();
                if $wanted {
                    for version in
                        candidates($Group::GROUP, $Group::VERSIONS, &options, $alpha_only)?
                    {
                        let address = match &options.socket_dir {
                            Some(dir) => crate::transport::Address::socket_in(
                                dir,
                                $Group::GROUP,
                                &version,
                            ),
                            None => {
                                match crate::transport::Address::default_for(
                                    $Group::GROUP,
                                    &version,
                                ) {
                                    Ok(address) => address,
                                    Err(e) => {
                                        tracing::debug!(group = $Group::GROUP, %version, error = %e, "no endpoint");
                                        attempts.push(version);
                                        continue;
                                    }
                                }
                            }
                        };
                        match $Group::dial(&version, &address.to_string(), &options.connect).await {
                            Ok(group) => {
                                chosen = Some(group);
                                break;
                            }
                            Err(e) => {
                                tracing::debug!(group = $Group::GROUP, %version, error = %e, "not served");
                                attempts.push(version);
                            }
                        }
                    }
                }
                if chosen.is_none() {
                    let text = if attempts.is_empty() {
                        "none; the group was not asked for".to_string()
                    } else {
                        attempts.join(", ")
                    };
                    tried.insert($Group::GROUP, text);
                }
                chosen
            }};
        }
        let disk = negotiate!(DiskGroup, false, true);
        let volume = negotiate!(VolumeGroup, false, true);
        let filesystem = negotiate!(FilesystemGroup, false, true);
        let smb = negotiate!(SmbGroup, false, true);
        let iscsi = negotiate!(IscsiGroup, true, options.iscsi);
        let system = negotiate!(SystemGroup, true, options.system);
        let os_volume = match &volume {
            Some(v) if v.finds_closest_volume() => Some(v.clone()),
            Some(_) => Self::dial_os_volume(&options).await,
            None => None,
        };
        if os_volume.is_none() {
            tracing::warn!(
                "csi-proxy serves no volume v2alpha1 (before v1.1), or it did not answer: the OS disk cannot be known; \
                 a call that changes a disk showing volumes this node did not stage is refused \
                 (NodeOptions::allow_unknown_os_disk accepts the risk); asked again when next needed"
            );
        }
        let host_key = match &options.socket_dir {
            Some(dir) => format!("proxy at {}", dir.display()),
            None => "proxy".to_string(),
        };
        let mut node = Self::assemble(
            disk, volume, filesystem, smb, iscsi, system, tried, options, host_key,
        );
        node.inner_mut().os_volume = Mutex::new(os_volume);
        node.inner_mut().dials_os_volume = true;
        // A plugin on Windows sees the host's kubelet directory itself.
        #[cfg(windows)]
        {
            node.inner_mut().view = smb_view::HostView::Local;
        }
        tracing::info!(versions = %node.versions(), "connected to csi-proxy");
        Ok(node)
    }

    /// This node with what it keeps in its default stores kept in `dir`
    /// instead: its records, when [`NodeRecords::is_default`](super::NodeRecords::is_default)
    /// (in `dir/records`), and its SMB references, when
    /// [`SmbStore::is_default`](super::SmbStore::is_default) (in `dir`). A
    /// store the program chose, and HostProcess mode's records on the
    /// host, are kept as they are; with none default this is the node
    /// itself. What a plugin serving the node calls before its first
    /// operation, so that a restarted plugin knows what the one before it
    /// did (a format sent, the disk staged at a path, the shares in use).
    ///
    /// The directory is created and its stores read and written once
    /// here: a directory that cannot be is an error now, never records in
    /// memory. The node returned shares this one's connections and, in
    /// this process, its claims; records written through this one are not
    /// in the new stores, so use the new node from then on.
    pub fn with_state_dir(&self, dir: impl AsRef<std::path::Path>) -> Result<Node, Error> {
        let dir = dir.as_ref();
        let current = &self.inner.options;
        if !current.records.is_default() && !current.smb_store.is_default() {
            return Ok(self.clone());
        }
        let mut options = current.clone();
        if current.smb_store.is_default() {
            let store = super::SmbStore::directory(dir);
            std::fs::create_dir_all(dir).map_err(|e| Error::SmbStore {
                path: dir.display().to_string(),
                source: e,
            })?;
            store.references_all()?;
            options.smb_store = store;
        }
        if current.records.is_default() {
            let records = super::NodeRecords::directory(dir.join("records"));
            // The lease writes the directory's epoch counter and owner file:
            // what cannot be created, written or read fails here.
            records.owner()?;
            options.records = records;
        }
        let host_key = current
            .records
            .host()
            .expect("a node's records are resolved for its host")
            .to_string();
        let inner = &self.inner;
        let mut node = Self::assemble(
            inner.disk.clone(),
            inner.volume.clone(),
            inner.filesystem.clone(),
            inner.smb.clone(),
            inner.iscsi.clone(),
            inner.system.clone(),
            inner.tried.clone(),
            options,
            host_key,
        );
        let os_volume = inner
            .os_volume
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let data_volumes = inner
            .data_volumes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let fresh = node.inner_mut();
        fresh.view = inner.view.clone();
        fresh.os_volume = Mutex::new(os_volume);
        fresh.dials_os_volume = inner.dials_os_volume;
        fresh.os_disk = inner.os_disk.clone();
        fresh.data_volumes = Mutex::new(data_volumes);
        #[cfg(feature = "host-process")]
        {
            fresh.host_process = inner.host_process.clone();
        }
        Ok(node)
    }

    /// Volume v2alpha1 for the OS disk lookup alone, whatever version the
    /// volume group speaks otherwise; `None` when the proxy does not serve it.
    pub(super) async fn dial_os_volume(options: &NodeOptions) -> Option<VolumeGroup> {
        let version = "v2alpha1";
        let address = match &options.socket_dir {
            Some(dir) => crate::transport::Address::socket_in(dir, VolumeGroup::GROUP, version),
            None => crate::transport::Address::default_for(VolumeGroup::GROUP, version).ok()?,
        };
        match VolumeGroup::dial(version, &address.to_string(), &options.connect).await {
            Ok(group) => Some(group),
            Err(e) => {
                tracing::debug!(error = %e, "no volume v2alpha1: the OS disk cannot be found through the proxy");
                None
            }
        }
    }

    /// The fields set after [`Node::assemble`], before the node is shared.
    fn inner_mut(&mut self) -> &mut Inner {
        Arc::get_mut(&mut self.inner).expect("a node being built is not shared")
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        disk: Option<DiskGroup>,
        volume: Option<VolumeGroup>,
        filesystem: Option<FilesystemGroup>,
        smb: Option<SmbGroup>,
        iscsi: Option<IscsiGroup>,
        system: Option<SystemGroup>,
        tried: HashMap<&'static str, String>,
        mut options: NodeOptions,
        host_key: String,
    ) -> Node {
        // The default records: this process's of the host, shared by its
        // `Node`s (a driver that rebuilds its `Node` keeps them).
        options.records = options.records.for_host(&host_key);
        let version = |v: Option<&'static str>| v.and_then(|v| v.parse().ok());
        let versions = NodeVersions {
            disk: version(disk.as_ref().map(DiskGroup::version)),
            volume: version(volume.as_ref().map(VolumeGroup::version)),
            filesystem: version(filesystem.as_ref().map(FilesystemGroup::version)),
            smb: version(smb.as_ref().map(SmbGroup::version)),
            iscsi: version(iscsi.as_ref().map(IscsiGroup::version)),
            system: version(system.as_ref().map(SystemGroup::version)),
        };
        let formats_at_once = options.max_concurrent_formats;
        Node {
            inner: Arc::new(Inner {
                disk,
                volume,
                filesystem,
                smb,
                iscsi,
                system,
                tried,
                versions,
                options,
                view: smb_view::HostView::default(),
                os_volume: Mutex::new(None),
                dials_os_volume: false,
                os_disk: tokio::sync::OnceCell::new(),
                data_volumes: Mutex::default(),
                #[cfg(feature = "host-process")]
                host_process: None,
                format_permits: tokio::sync::Semaphore::new(formats_at_once),
                tasks: Arc::default(),
            }),
        }
    }

    /// Unit tests over an in-process [`MockHost`](crate::mock::MockHost):
    /// every group at its newest non-alpha version
    /// ([`NodeVersions::newest`]), default options. Other versions or
    /// options: [`MockNode`].
    #[cfg(feature = "mock")]
    pub fn from_mock(host: &crate::mock::MockHost) -> Node {
        MockNode::new(host)
            .build()
            .expect("the node layer speaks every newest version")
    }

    /// The node layer over a [`MockHost`](crate::mock::MockHost) at the
    /// given versions (a group set to `None` is absent).
    #[cfg(feature = "mock")]
    #[deprecated(
        since = "0.2.0",
        note = "use `MockNode::new(host).versions(versions).build()`"
    )]
    pub fn from_mock_with(
        host: &crate::mock::MockHost,
        versions: NodeVersions,
    ) -> Result<Node, Error> {
        MockNode::new(host).versions(versions).build()
    }

    /// [`MockNode`] with versions and options.
    #[cfg(feature = "mock")]
    #[deprecated(
        since = "0.2.0",
        note = "use `MockNode::new(host).versions(versions).options(options).build()`"
    )]
    pub fn from_mock_with_options(
        host: &crate::mock::MockHost,
        versions: NodeVersions,
        options: NodeOptions,
    ) -> Result<Node, Error> {
        MockNode::new(host)
            .versions(versions)
            .options(options)
            .build()
    }

    /// The node over `host` at `versions` with `options` ([`MockNode::build`]).
    #[cfg(feature = "mock")]
    fn mock_node(
        host: &crate::mock::MockHost,
        versions: NodeVersions,
        options: NodeOptions,
    ) -> Result<Node, Error> {
        let mut tried = HashMap::new();
        macro_rules! wrap {
            ($Group:ident, $field:ident) => {
                match versions.$field {
                    Some(v) => Some($Group::mock(&v.to_string(), host)?),
                    None => {
                        tried.insert(
                            $Group::GROUP,
                            "none; absent from the mock's versions".to_string(),
                        );
                        None
                    }
                }
            };
        }
        let disk = wrap!(DiskGroup, disk);
        let volume = wrap!(VolumeGroup, volume);
        let filesystem = wrap!(FilesystemGroup, filesystem);
        let smb = wrap!(SmbGroup, smb);
        let iscsi = wrap!(IscsiGroup, iscsi);
        let system = wrap!(SystemGroup, system);
        // csi-proxy serves volume v2alpha1 from v1.1 on, beside volume v1:
        // a mock at an older volume version plays a proxy without it
        // (v0.2's v1beta1, v1.0's betas), whose OS disk cannot be known.
        let os_volume = match versions.volume {
            Some(v) if v.to_string() == "v1" => Some(VolumeGroup::mock("v2alpha1", host)?),
            _ => None,
        };
        let host_key = format!("simulated host {}", host.host().identity());
        let mut node = Self::assemble(
            disk, volume, filesystem, smb, iscsi, system, tried, options, host_key,
        );
        node.inner_mut().os_volume = Mutex::new(os_volume);
        node.inner_mut().view = smb_view::HostView::Simulated(host.host().clone());
        Ok(node)
    }

    /// HostProcess mode: the node layer doing its work on this Windows host
    /// directly (WMI and Win32; no CSI Proxy), every group at the newest
    /// version the backend implements. Fails when this build has no
    /// Windows implementation of the boundary.
    #[cfg(all(feature = "host-process", windows))]
    pub fn host_process(options: NodeOptions) -> Result<Node, Error> {
        let host = crate::host_process::windows::host()?;
        Ok(Self::host_process_with(host, options))
    }

    /// HostProcess mode over another implementation of the Windows
    /// boundary or a configured backend: the fake over the simulated host
    /// in unit tests ([`FakeWindows`](crate::host_process::FakeWindows), as
    /// is or in an `Arc`), any `Arc<dyn WindowsHost>`, or a
    /// [`HostProcess`](crate::host_process::HostProcess) with its working
    /// directories and SMB privacy set. Disk, volume, filesystem and smb
    /// are at v1; iscsi at v1alpha2 and system at v1alpha1 when asked for
    /// ([`NodeOptions::iscsi`], [`NodeOptions::system`]).
    #[cfg(feature = "host-process")]
    pub fn host_process_with(
        host: impl Into<crate::host_process::HostProcess>,
        options: NodeOptions,
    ) -> Node {
        #[allow(deprecated)]
        Self::from_host_process(host.into(), options)
    }

    /// HostProcess mode over a configured backend (working directories,
    /// SMB privacy). Disk, volume, filesystem and smb are at v1; iscsi at
    /// v1alpha2 and system at v1alpha1 when asked for
    /// ([`NodeOptions::iscsi`], [`NodeOptions::system`]).
    #[cfg(feature = "host-process")]
    #[deprecated(
        since = "0.2.0",
        note = "use `Node::host_process_with(backend, options)`"
    )]
    pub fn from_host_process(
        backend: crate::host_process::HostProcess,
        mut options: NodeOptions,
    ) -> Node {
        let backend = Arc::new(backend);
        // A driver that names no records keeps them on the host itself
        // (`WindowsHost::state_dir`): a restarted plugin then still knows
        // a format its predecessor sent, which the storage service goes on
        // with after the process that asked has died.
        if options.records.is_default()
            && let Some(dir) = backend.state_dir()
        {
            options.records = super::NodeRecords::directory(dir.join("records"));
        }
        let mut tried = HashMap::new();
        let iscsi = if options.iscsi {
            Some(IscsiGroup::V1alpha2(backend.clone()))
        } else {
            tried.insert(
                IscsiGroup::GROUP,
                "none; the group was not asked for".to_string(),
            );
            None
        };
        let system = if options.system {
            Some(SystemGroup::V1alpha1(backend.clone()))
        } else {
            tried.insert(
                SystemGroup::GROUP,
                "none; the group was not asked for".to_string(),
            );
            None
        };
        let mut node = Self::assemble(
            Some(DiskGroup::V1(backend.clone())),
            Some(VolumeGroup::V1(backend.clone())),
            Some(FilesystemGroup::V1(backend.clone())),
            Some(SmbGroup::V1(backend.clone())),
            iscsi,
            system,
            tried,
            options,
            backend.host_name(),
        );
        node.inner_mut().host_process = Some(backend);
        tracing::info!(versions = %node.versions(), "host-process mode");
        node
    }
}

/// The node layer over a [`MockHost`](crate::mock::MockHost) with other
/// versions or options than [`Node::from_mock`]'s: a proxy of an older
/// release, a group absent, deadlines, stores, a local root.
///
/// ```
/// use csi_proxy_client::mock::MockHost;
/// use csi_proxy_client::node::{MockNode, NodeOptions, NodeVersions};
///
/// let host = MockHost::new();
/// // A proxy serving no iSCSI or system group, with a shorter deadline.
/// let versions: NodeVersions = "disk=v1 volume=v1 filesystem=v1 smb=v1".parse()?;
/// let node = MockNode::new(&host)
///     .versions(versions)
///     .options(NodeOptions::default().deadline(std::time::Duration::from_secs(30)))
///     .build()?;
/// assert!(node.versions().iscsi.is_none());
/// # Ok::<(), csi_proxy_client::Error>(())
/// ```
#[cfg(feature = "mock")]
#[derive(Debug)]
#[must_use = "no node is made until `build`"]
pub struct MockNode<'a> {
    host: &'a crate::mock::MockHost,
    versions: NodeVersions,
    options: NodeOptions,
}

#[cfg(feature = "mock")]
impl<'a> MockNode<'a> {
    /// Every group at its newest non-alpha version, default options.
    pub fn new(host: &'a crate::mock::MockHost) -> Self {
        MockNode {
            host,
            versions: NodeVersions::newest(),
            options: NodeOptions::default(),
        }
    }

    /// The versions the mock serves (a group set to `None` is absent).
    pub fn versions(mut self, versions: NodeVersions) -> Self {
        self.versions = versions;
        self
    }

    /// The node's options.
    pub fn options(mut self, options: NodeOptions) -> Self {
        self.options = options;
        self
    }

    /// The node; fails on a version the node layer does not speak.
    pub fn build(self) -> Result<Node, Error> {
        Node::mock_node(self.host, self.versions, self.options)
    }
}
