//! Connecting: the versions each group negotiates, and the constructors
//! over the proxy, a `MockHost` and HostProcess mode.

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
            }),
        }
    }

    /// The node layer over an in-process [`MockHost`](crate::mock::MockHost),
    /// every group at its newest non-alpha version ([`NodeVersions::newest`]).
    #[cfg(feature = "mock")]
    pub fn from_mock(host: &crate::mock::MockHost) -> Node {
        Self::from_mock_with(host, NodeVersions::newest())
            .expect("the node layer speaks every newest version")
    }

    /// The node layer over a [`MockHost`](crate::mock::MockHost) at the
    /// given versions (a group set to `None` is absent).
    #[cfg(feature = "mock")]
    pub fn from_mock_with(
        host: &crate::mock::MockHost,
        versions: NodeVersions,
    ) -> Result<Node, Error> {
        Self::from_mock_with_options(host, versions, NodeOptions::default())
    }

    /// [`Node::from_mock_with`] with options (deadlines, SMB store, ...).
    #[cfg(feature = "mock")]
    pub fn from_mock_with_options(
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

    /// HostProcess mode over any implementation of the Windows boundary
    /// (the fake over the simulated host in tests,
    /// [`FakeWindows`](crate::host_process::FakeWindows)).
    #[cfg(feature = "host-process")]
    pub fn host_process_with(
        host: Arc<dyn crate::host_process::WindowsHost>,
        options: NodeOptions,
    ) -> Node {
        Self::from_host_process(crate::host_process::HostProcess::new(host), options)
    }

    /// HostProcess mode over a configured backend (working directories,
    /// SMB privacy). Disk, volume, filesystem and smb are at v1; iscsi at
    /// v1alpha2 and system at v1alpha1 when asked for
    /// ([`NodeOptions::iscsi`], [`NodeOptions::system`]).
    #[cfg(feature = "host-process")]
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
