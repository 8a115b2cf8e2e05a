//! Paths as kubelet gives them, made into paths the proxy accepts.

use crate::Error;

fn refuse(path: &str, reason: &str) -> Error {
    Error::InvalidPath {
        path: path.to_string(),
        reason: reason.to_string(),
    }
}

/// A local path for the proxy: `/` becomes `\`, a rooted path without a
/// drive gets `c:`; relative paths, `..` segments, UNC and device paths are
/// refused, naming the path.
pub(crate) fn local(path: &str) -> Result<String, Error> {
    if path.is_empty() {
        return Err(refuse(path, "the path is empty"));
    }
    let p = path.replace('/', "\\");
    if p.starts_with("\\\\") {
        return Err(refuse(
            path,
            "UNC and device paths are not local paths (a remote share goes to smb_stage)",
        ));
    }
    let bytes = p.as_bytes();
    let with_drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    let p = if with_drive {
        if bytes.get(2) != Some(&b'\\') {
            return Err(refuse(
                path,
                "a drive without a root (`c:dir`) is relative to that drive's current directory",
            ));
        }
        p
    } else if p.starts_with('\\') {
        format!("c:{p}")
    } else {
        return Err(refuse(path, "the path is relative; give an absolute path"));
    };
    if p.split('\\').any(|segment| segment == "..") {
        return Err(refuse(path, "`..` segments are not allowed"));
    }
    // Spelled as Windows resolves it (Win32's rules, as `win::path`
    // follows them): empty and `.` components dropped, trailing dots and
    // spaces stripped from each. So one directory is one key for the
    // claims and records whatever its spelling, and the proxy's own
    // trailing-separator dislike is met.
    let (drive, rest) = p.split_at(2);
    let components: Vec<&str> = rest
        .split('\\')
        .map(|c| c.trim_end_matches([' ', '.']))
        .filter(|c| !c.is_empty())
        .collect();
    Ok(format!("{drive}\\{}", components.join("\\")))
}

/// An SMB remote path: `/` becomes `\`; it must name at least `\\server\share`.
/// Returns the path and its share root in lower case (`\\server\share`).
pub(crate) fn remote(path: &str) -> Result<(String, String), Error> {
    let p = path.replace('/', "\\");
    let p = p.trim_end_matches('\\').to_string();
    let rest = p.strip_prefix("\\\\").ok_or_else(|| {
        refuse(
            path,
            "an SMB source is a UNC path, \\\\server\\share[\\dir]",
        )
    })?;
    let mut parts = rest.split('\\');
    let (Some(server), Some(share)) = (parts.next(), parts.next()) else {
        return Err(refuse(path, "the UNC path names no share"));
    };
    if server.is_empty() || share.is_empty() || server == "." || server == "?" {
        return Err(refuse(path, "the UNC path names no server and share"));
    }
    if parts.any(|segment| segment == ".." || segment.is_empty()) {
        return Err(refuse(path, "empty or `..` segments are not allowed"));
    }
    let root = format!("\\\\{server}\\{share}").to_lowercase();
    Ok((p, root))
}

/// The parent of a normalised local path, if it has one beyond the root.
pub(crate) fn parent(path: &str) -> Option<&str> {
    let (parent, _) = path.rsplit_once('\\')?;
    (parent.len() > 2).then_some(parent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_paths_become_proxy_paths() {
        for (given, want) in [
            (r"\var\lib\kubelet\x", r"c:\var\lib\kubelet\x"),
            ("/var/lib/kubelet/x", r"c:\var\lib\kubelet\x"),
            ("c:/var/lib/kubelet/x/", r"c:\var\lib\kubelet\x"),
            (r"C:\var\lib\kubelet", r"C:\var\lib\kubelet"),
            (r"D:\data\.\x", r"D:\data\x"),
            (r"C:\", r"C:\"),
            ("/", r"c:\"),
        ] {
            assert_eq!(local(given).unwrap(), want, "{given}");
        }
    }

    /// One directory is one key for the path claims and records whatever
    /// its spelling: Win32 drops `.` and empty components and strips
    /// trailing dots and spaces (as `win::path` does for the simulator).
    #[test]
    fn a_directory_spelled_as_windows_reads_it_is_one_path() {
        let want = r"c:\var\lib\kubelet\pods\p\volumes\mount";
        for given in [
            r"c:\var\lib\kubelet\pods\p\volumes\mount",
            r"c:\var\lib\kubelet\pods\p\.\volumes\mount",
            r"c:\var\lib\kubelet\pods\p\\volumes\mount",
            r"c:\var\lib\kubelet\pods\p\volumes\mount.",
            r"c:\var\lib\kubelet\pods\p\volumes\mount ",
            r"c:\var\lib\kubelet\pods\p. \volumes\mount\",
        ] {
            assert_eq!(local(given).unwrap(), want, "{given}");
        }
    }

    #[test]
    fn relative_dotdot_unc_and_device_paths_are_refused_naming_the_path() {
        for bad in [
            "",
            "var/lib/kubelet",
            r"var\lib",
            r"c:var\lib",
            r"c:\var\lib\kubelet\..\..\windows",
            "/var/lib/kubelet/../x",
            r"\\server\share\x",
            "//server/share",
            r"\\.\pipe\x",
            r"\\?\C:\x",
        ] {
            let err = local(bad).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidPath { path, .. } if path == bad),
                "{bad:?}: {err}"
            );
            assert!(err.to_string().contains(bad), "{err}");
        }
    }

    #[test]
    fn remote_paths_give_their_share_root() {
        let (p, root) = remote("//FileServer/Share/dir/").unwrap();
        assert_eq!(p, r"\\FileServer\Share\dir");
        assert_eq!(root, r"\\fileserver\share");
        for bad in [r"c:\x", r"\\server", r"\\server\", r"\\s\share\..\x"] {
            assert!(remote(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn parents() {
        assert_eq!(parent(r"c:\a\b"), Some(r"c:\a"));
        assert_eq!(parent(r"c:\a"), None);
    }
}
