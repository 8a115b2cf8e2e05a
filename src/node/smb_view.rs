//! What the node reads of the host itself, with no proxy call: where a
//! link points, and which names a directory holds. csi-driver-smb reads
//! both so before it removes a share's mapping, in proxy mode
//! (`os.Readlink` of the staging path, pkg/mounter/safe_mounter_windows.go
//! SMBUnmount) and in HostProcess mode (its `CheckForDuplicateSMBMounts`
//! lists the driver's staging directories and reads each link,
//! pkg/os/smb/smb.go): the links on the host are the truth of which
//! volumes use a share, and they survive a restart of the plugin.
//!
//! Who can look: a plugin on Windows (it sees the kubelet directory at
//! the host's paths, as every Windows CSI node plugin does), HostProcess
//! mode (through its boundary), and a node over `MockHost` (the simulated
//! host, standing in for the first). A plugin reaching the proxy from
//! elsewhere (the reference server's tests on Linux) cannot: it has only
//! its [store](super::SmbStore).

use super::{Node, path};

/// How this node reads the host without the proxy.
#[derive(Clone, Default)]
pub(super) enum HostView {
    /// It cannot.
    #[default]
    Blind,
    /// The plugin's own view of the host's paths (Windows).
    #[cfg(windows)]
    Local,
    /// The simulated host behind a `MockHost`.
    #[cfg(feature = "mock")]
    Simulated(crate::host::Host),
}

/// The share root (`\\server\share`, lowercase) a link target names, in
/// any of the spellings Windows stores (`\\server\share\dir\`,
/// `\\?\UNC\server\share`, `\??\UNC\...`, `UNC\...`); `None` for a
/// local target.
fn share_root(target: &str) -> Option<String> {
    path::remote(&unc_of(target)?).ok().map(|(_, root)| root)
}

/// The UNC path (`\\server\share\...`) a link target names, in any of
/// the spellings Windows stores; `None` for a local target.
fn unc_of(target: &str) -> Option<String> {
    let unc = ["\\\\?\\UNC\\", "\\??\\UNC\\", "UNC\\"]
        .iter()
        .find_map(|prefix| target.strip_prefix(prefix))
        .map(|rest| format!("\\\\{rest}"));
    let unc = match unc {
        Some(unc) => unc,
        None if target.starts_with("\\\\")
            && !target.starts_with("\\\\?\\")
            && !target.starts_with("\\\\.\\") =>
        {
            target.to_string()
        }
        None => return None,
    };
    Some(unc)
}

impl Node {
    /// The target of the link at `path`: `Some(None)` when `path` is no
    /// symbolic link; `None` when this node cannot look.
    async fn seen_link(&self, path: &str) -> Option<Option<String>> {
        // Read only where a view exists (Windows, HostProcess, MockHost).
        let _ = path;
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            return backend.link_target(path.to_string()).await.ok();
        }
        match &self.inner.view {
            HostView::Blind => None,
            #[cfg(windows)]
            HostView::Local => Some(
                std::fs::read_link(path)
                    .ok()
                    .map(|t| t.to_string_lossy().into_owned()),
            ),
            #[cfg(feature = "mock")]
            HostView::Simulated(host) => Some(match host.entry(path) {
                Ok(Some(crate::host::namespace::Entry::Link(link)))
                    if link.kind != crate::host::namespace::LinkKind::Mount =>
                {
                    Some(link.target)
                }
                _ => None,
            }),
        }
    }

    /// The names in the directory `dir`; `None` when this node cannot look.
    async fn seen_names(&self, dir: &str) -> Option<Vec<String>> {
        let _ = dir;
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            return backend.names_in(dir.to_string()).await.ok();
        }
        match &self.inner.view {
            HostView::Blind => None,
            #[cfg(windows)]
            HostView::Local => Some(
                std::fs::read_dir(dir)
                    .map(|entries| {
                        entries
                            .filter_map(|e| e.ok())
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            #[cfg(feature = "mock")]
            HostView::Simulated(host) => Some(host.list_dir(dir).unwrap_or_default()),
        }
    }

    /// The share root the link at `path` reaches, read on the host:
    /// `Some(None)` when `path` is no link to a share (nothing there, a
    /// directory, a disk's mount point); `None` when this node cannot look.
    pub(super) async fn seen_share_of(&self, path: &str) -> Option<Option<String>> {
        Some(self.seen_link(path).await?.as_deref().and_then(share_root))
    }

    /// Whether the link at `path` reaches the share path `remote` (as
    /// `path::remote` spells it), read on the host: `Some(false)` for a
    /// link elsewhere (another directory of the share, its root) or no
    /// link; `None` when this node cannot look.
    pub(super) async fn seen_link_reaches(&self, path: &str, remote: &str) -> Option<bool> {
        let target = self.seen_link(path).await?;
        let same = |unc: String| {
            let unc = unc.trim_end_matches('\\');
            path::remote(unc)
                .is_ok_and(|(unc, _)| unc.eq_ignore_ascii_case(remote.trim_end_matches('\\')))
        };
        Some(target.and_then(|t| unc_of(&t)).is_some_and(same))
    }

    /// Whether the share root `root` answers now (`GetFileAttributes`, the
    /// validity check csi-proxy's `NewSmbGlobalMapping` makes on a mapped
    /// root, pkg/server/smb/server.go), read where this node reads the
    /// host; `None` when it cannot look.
    pub(super) async fn seen_share_reachable(&self, root: &str) -> Option<bool> {
        let _ = root;
        #[cfg(feature = "host-process")]
        if let Some(backend) = &self.inner.host_process {
            return backend.share_reachable(root.to_string()).await.ok();
        }
        match &self.inner.view {
            HostView::Blind => None,
            #[cfg(windows)]
            HostView::Local => Some(std::fs::metadata(root).is_ok()),
            #[cfg(feature = "mock")]
            HostView::Simulated(host) => Some(host.lock().smb.path_valid(root)),
        }
    }

    /// The other staged paths shaped as `path` that link to `root`, read
    /// on the host: for `<dir>\<volume>\<leaf>` (kubelet's
    /// `...\csi\<driver>\<volume>\globalmount`), each `<dir>\*\<leaf>`.
    /// Empty when this node cannot look. What it cannot see: a share
    /// staged elsewhere (another driver's directory, a pod's target for an
    /// inline volume), which only the store records.
    pub(super) async fn seen_links_into(&self, root: &str, path: &str) -> Vec<String> {
        let Some((volume_dir, leaf)) = path.rsplit_once('\\') else {
            return Vec::new();
        };
        let Some(dir) = path::parent(volume_dir) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for name in self.seen_names(dir).await.unwrap_or_default() {
            let other = format!("{dir}\\{name}\\{leaf}");
            if other.eq_ignore_ascii_case(path) {
                continue;
            }
            if self.seen_share_of(&other).await.flatten().as_deref() == Some(root) {
                found.push(other);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::share_root;

    #[test]
    fn share_roots_of_link_targets() {
        for target in [
            r"\\FileServer\Share\pv3\",
            r"\\?\UNC\fileserver\share\pv3",
            r"\??\UNC\fileserver\share",
            r"UNC\fileserver\Share\a\b",
        ] {
            assert_eq!(
                share_root(target).as_deref(),
                Some(r"\\fileserver\share"),
                "{target}"
            );
        }
        for target in [r"\\?\Volume{1}\", r"c:\x", r"\\.\pipe\x", r"\\server"] {
            assert_eq!(share_root(target), None, "{target}");
        }
    }
}
