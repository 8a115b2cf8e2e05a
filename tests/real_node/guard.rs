//! What the real-node suite may change, decided from the workspace the
//! workflow made (`scripts/windows/new-test-node.ps1`), never from a disk
//! number or a path a test names on its own.
//!
//! The workspace is a directory named `csi-real-node...` (in
//! `CSI_REAL_NODE_DIR`) holding `manifest.json` (what was made) and
//! `csi-real-node.marker` (a random token, also in the manifest). A disk
//! may be changed only when it is a file-backed virtual disk whose
//! `MSFT_Disk.Location`, the VHDX file it is made of, lies directly in that
//! directory and is listed in the manifest, and when Windows does not mark
//! it system or boot. A path may be changed only below the kubelet
//! directories the manifest names, each named `csi-real-node...`.
//!
//! Everything here is plain string work on what the manifest and WMI say,
//! so it runs and is tested on Linux, under Wine and on Windows alike; the
//! live checks that feed it (WMI's disks, right before each changing call)
//! are in `guarded.rs`, the one file of the suite allowed to make a
//! changing call (`only_the_guarded_module_makes_changing_calls` below
//! enforces that on every platform).

// On Linux only the tests below use it; `guarded.rs` uses the rest on Windows.
#![cfg_attr(not(all(windows, feature = "host-process")), allow(dead_code))]

use serde_json::Value;

/// The environment variable naming the workspace directory.
pub const DIR_VAR: &str = "CSI_REAL_NODE_DIR";
/// The manifest's file name in the workspace.
pub const MANIFEST: &str = "manifest.json";
/// The marker's file name in the workspace.
pub const MARKER: &str = "csi-real-node.marker";
/// What every directory the suite may change is named after.
const PREFIX: &str = "csi-real-node";

/// A disk the workflow made, by its role in the suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskEntry {
    /// `blank`, `gpt-data`, `mbr-system-reserved`, `read-only`, `offline`, ...
    pub role: String,
    /// The VHDX file, as the script wrote it.
    pub vhdx: String,
}

/// The localhost SMB share the workflow made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmbEntry {
    /// `\\host\share`.
    pub share: String,
    /// The local account that may use it.
    pub user: String,
    /// A second share of the same server, `\\host\share2`.
    pub second_share: String,
    /// A second account, which only the second share grants.
    pub second_user: String,
    /// The directory the share exports (to check writes from this side).
    pub local_path: String,
}

/// The iSCSI target the workflow made, or why it could not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IscsiEntry {
    /// A target on this machine.
    Target {
        /// Portal address.
        portal: String,
        /// Target IQN.
        iqn: String,
    },
    /// Why the runner allows none.
    Skipped(String),
}

/// What the workflow made, as `manifest.json` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The workspace directory; holds the VHDX files and the marker.
    pub root: String,
    /// The marker's token.
    pub token: String,
    /// Kubelet-style directories the suite may stage and publish below
    /// (`C:\var\lib\kubelet\plugins\csi-real-node`, `...\pods\csi-real-node`:
    /// csi-proxy accepts paths under its kubelet directory only).
    pub kubelet: Vec<String>,
    /// The disks.
    pub disks: Vec<DiskEntry>,
    /// The share, when one was made.
    pub smb: Option<SmbEntry>,
    /// The iSCSI target, or why there is none.
    pub iscsi: IscsiEntry,
}

/// Why the guard said no. Its text names the rule broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "real-node guard refuses: {}", self.0)
    }
}

fn refuse<T>(why: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal(why.into()))
}

/// A Windows path in one spelling: `\` separators, lower case, no `\\?\`
/// prefix, no trailing separator (a drive root keeps its `\`). `None` for
/// what is not an absolute drive path or has a `.` or `..` component
/// (which could climb out of a directory the guard checked).
pub fn normalize(path: &str) -> Option<String> {
    let path = path.trim().replace('/', "\\");
    let path = path.strip_prefix(r"\\?\").unwrap_or(&path);
    let bytes = path.as_bytes();
    if bytes.len() < 3 || !bytes[0].is_ascii_alphabetic() || bytes[1] != b':' || bytes[2] != b'\\' {
        return None;
    }
    let mut parts = Vec::new();
    for part in path[3..].split('\\') {
        match part {
            "" => continue,
            "." | ".." => return None,
            p => parts.push(p.to_lowercase()),
        }
    }
    let drive = path[..2].to_lowercase();
    Some(if parts.is_empty() {
        format!(r"{drive}\")
    } else {
        format!(r"{drive}\{}", parts.join("\\"))
    })
}

/// Whether `path` lies strictly below `dir` (both normalized first).
pub fn is_below(dir: &str, path: &str) -> bool {
    match (normalize(dir), normalize(path)) {
        (Some(dir), Some(path)) => path
            .strip_prefix(&dir)
            .is_some_and(|rest| rest.starts_with('\\') && rest.len() > 1),
        _ => false,
    }
}

fn last_component(path: &str) -> &str {
    path.rsplit('\\').next().unwrap_or("")
}

/// A directory the suite may own: absolute, not a drive root, named
/// `csi-real-node...`, and not under the Windows directory.
pub fn check_owned_dir(dir: &str) -> Result<String, Refusal> {
    let Some(n) = normalize(dir) else {
        return refuse(format!("{dir:?} is not an absolute drive path"));
    };
    if !last_component(&n).starts_with(PREFIX) {
        return refuse(format!("{dir:?} is not named {PREFIX}..."));
    }
    if is_below(r"C:\Windows", &n) {
        return refuse(format!("{dir:?} lies under C:\\Windows"));
    }
    Ok(n)
}

fn text(v: &Value, key: &str) -> Result<String, Refusal> {
    match v.get(key).and_then(Value::as_str) {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => refuse(format!("manifest: {key} missing or not a string")),
    }
}

/// Reads `manifest.json`. Every directory in it must pass
/// [`check_owned_dir`], the token must be long enough to be random, and
/// every disk must be a `.vhdx` directly in `root`.
pub fn parse_manifest(json: &str) -> Result<Manifest, Refusal> {
    // PowerShell 5 may write a byte order mark.
    let json = json.trim_start_matches('\u{feff}');
    let v: Value = serde_json::from_str(json).map_err(|e| Refusal(format!("manifest: {e}")))?;
    let root = check_owned_dir(&text(&v, "root")?)?;
    let token = text(&v, "token")?;
    if token.len() < 16 {
        return refuse("manifest: token shorter than 16 characters");
    }
    let kubelet = match v.get("kubelet").and_then(Value::as_array) {
        Some(dirs) if !dirs.is_empty() => dirs
            .iter()
            .map(|d| check_owned_dir(d.as_str().unwrap_or("")))
            .collect::<Result<Vec<_>, _>>()?,
        _ => return refuse("manifest: kubelet missing or empty"),
    };
    let mut disks = Vec::new();
    for d in v
        .get("disks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let entry = DiskEntry {
            role: text(d, "role")?,
            vhdx: text(d, "vhdx")?,
        };
        vhdx_in_root(&root, &entry.vhdx)?;
        if disks.iter().any(|e: &DiskEntry| e.role == entry.role) {
            return refuse(format!("manifest: role {} listed twice", entry.role));
        }
        disks.push(entry);
    }
    let smb = match v.get("smb") {
        None | Some(Value::Null) => None,
        Some(s) => Some(SmbEntry {
            share: text(s, "share")?,
            user: text(s, "user")?,
            second_share: text(s, "second_share")?,
            second_user: text(s, "second_user")?,
            local_path: text(s, "local_path")?,
        }),
    };
    let iscsi = match v.get("iscsi") {
        Some(i) if i.get("skipped").is_some() => IscsiEntry::Skipped(text(i, "skipped")?),
        Some(i) => IscsiEntry::Target {
            portal: text(i, "portal")?,
            iqn: text(i, "iqn")?,
        },
        None => IscsiEntry::Skipped("the manifest names no iSCSI target".into()),
    };
    Ok(Manifest {
        root,
        token,
        kubelet,
        disks,
        smb,
        iscsi,
    })
}

fn vhdx_in_root(root: &str, vhdx: &str) -> Result<String, Refusal> {
    let Some(n) = normalize(vhdx) else {
        return refuse(format!("{vhdx:?} is not an absolute drive path"));
    };
    if !n.ends_with(".vhdx") {
        return refuse(format!("{vhdx:?} is not a VHDX file"));
    }
    match n.rsplit_once('\\') {
        Some((parent, _)) if normalize(parent).as_deref() == Some(root) => Ok(n),
        _ => refuse(format!("{vhdx:?} does not lie directly in {root}")),
    }
}

/// The marker file's content must be the manifest's token: a manifest
/// copied elsewhere, or a directory that merely has the right name, is
/// not the workspace.
pub fn check_marker(manifest: &Manifest, marker: &str) -> Result<(), Refusal> {
    let marker = marker.trim_start_matches('\u{feff}').trim();
    if marker != manifest.token {
        return refuse(format!(
            "the marker in {} does not hold the manifest's token",
            manifest.root
        ));
    }
    Ok(())
}

/// What WMI says of a disk, for [`check_disk`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskFacts {
    /// `MSFT_Disk.Number`.
    pub number: u32,
    /// `MSFT_Disk.Location`: the VHDX file of a file-backed virtual disk.
    pub location: String,
    /// `MSFT_Disk.IsSystem`.
    pub is_system: bool,
    /// `MSFT_Disk.IsBoot`.
    pub is_boot: bool,
}

/// The manifest's entry of a live disk, when the suite may change it: not
/// system or boot, made of a VHDX directly in the workspace that the
/// manifest lists.
pub fn check_disk<'m>(manifest: &'m Manifest, disk: &DiskFacts) -> Result<&'m DiskEntry, Refusal> {
    if disk.is_system || disk.is_boot {
        return refuse(format!("disk {} is a system or boot disk", disk.number));
    }
    let location = vhdx_in_root(&manifest.root, &disk.location)
        .map_err(|r| Refusal(format!("disk {}: {}", disk.number, r.0)))?;
    manifest
        .disks
        .iter()
        .find(|e| normalize(&e.vhdx).as_deref() == Some(location.as_str()))
        .ok_or_else(|| {
            Refusal(format!(
                "disk {} ({}) is not one the manifest lists",
                disk.number, disk.location
            ))
        })
}

/// The disk of `role` among `disks`: exactly one live disk must be made of
/// that role's VHDX, and it must pass [`check_disk`].
pub fn disk_of_role(manifest: &Manifest, disks: &[DiskFacts], role: &str) -> Result<u32, Refusal> {
    let Some(entry) = manifest.disks.iter().find(|e| e.role == role) else {
        return refuse(format!("the manifest has no {role} disk"));
    };
    let want = normalize(&entry.vhdx);
    let found: Vec<&DiskFacts> = disks
        .iter()
        .filter(|d| normalize(&d.location) == want)
        .collect();
    match found.as_slice() {
        [one] => {
            check_disk(manifest, one)?;
            Ok(one.number)
        }
        [] => refuse(format!("no attached disk is made of {}", entry.vhdx)),
        _ => refuse(format!("several disks claim {}", entry.vhdx)),
    }
}

/// A path the suite may change: strictly below one of the manifest's
/// kubelet directories.
pub fn check_path(manifest: &Manifest, path: &str) -> Result<(), Refusal> {
    if manifest.kubelet.iter().any(|dir| is_below(dir, path)) {
        Ok(())
    } else {
        refuse(format!(
            "{path:?} is not below the suite's kubelet directories {:?}",
            manifest.kubelet
        ))
    }
}

/// A share the suite may map: the manifest's, in any case.
pub fn check_share(manifest: &Manifest, share: &str) -> Result<(), Refusal> {
    let share = share.trim_end_matches('\\');
    match &manifest.smb {
        Some(s)
            if s.share.eq_ignore_ascii_case(share)
                || s.second_share.eq_ignore_ascii_case(share) =>
        {
            Ok(())
        }
        _ => refuse(format!("{share:?} is not the manifest's share")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = r"D:\a\_temp\csi-real-node-42";

    fn manifest_json(root: &str, token: &str) -> String {
        serde_json::json!({
            "root": root,
            "token": token,
            "kubelet": [
                r"C:\var\lib\kubelet\plugins\csi-real-node",
                r"C:\var\lib\kubelet\pods\csi-real-node"
            ],
            "disks": [
                {"role": "blank", "vhdx": format!(r"{root}\blank.vhdx")},
                {"role": "gpt-data", "vhdx": format!(r"{root}\gpt-data.vhdx")}
            ],
            "smb": {"share": r"\\localhost\csi-real-node", "user": "csirealnode",
                    "second_share": r"\\localhost\csi-real-node-2", "second_user": "csirealnode2",
                    "local_path": format!(r"{root}\share")},
            "iscsi": {"skipped": "FS-iSCSITarget-Server could not be installed"}
        })
        .to_string()
    }

    fn manifest() -> Manifest {
        parse_manifest(&manifest_json(ROOT, "0123456789abcdef0123")).unwrap()
    }

    fn disk(number: u32, location: &str) -> DiskFacts {
        DiskFacts {
            number,
            location: location.into(),
            is_system: false,
            is_boot: false,
        }
    }

    #[test]
    fn paths_are_spelled_one_way_and_climbing_is_refused() {
        assert_eq!(
            normalize(r"\\?\D:/A\_temp\\X\"),
            Some(r"d:\a\_temp\x".into())
        );
        assert_eq!(normalize(r"c:\"), Some(r"c:\".into()));
        assert_eq!(normalize(r"C:\a\..\Windows"), None);
        assert_eq!(normalize(r"C:\a\.\b"), None);
        assert_eq!(normalize(r"relative\path"), None);
        assert_eq!(normalize(r"\\server\share\x"), None);
        assert!(is_below(r"C:\a", r"c:\A\b"));
        assert!(!is_below(r"C:\a", r"C:\a"));
        assert!(!is_below(r"C:\a", r"C:\ab\c"), "a sibling sharing a prefix");
    }

    #[test]
    fn the_manifest_is_read_with_its_disks_share_and_iscsi() {
        let m = manifest();
        assert_eq!(m.root, r"d:\a\_temp\csi-real-node-42");
        assert_eq!(m.disks.len(), 2);
        assert_eq!(m.disks[1].role, "gpt-data");
        assert_eq!(m.smb.as_ref().unwrap().user, "csirealnode");
        assert_eq!(
            m.iscsi,
            IscsiEntry::Skipped("FS-iSCSITarget-Server could not be installed".into())
        );
        // A BOM, as PowerShell 5's Set-Content -Encoding UTF8 writes.
        let with_bom = format!("\u{feff}{}", manifest_json(ROOT, "0123456789abcdef0123"));
        assert_eq!(parse_manifest(&with_bom).unwrap(), m);
    }

    #[test]
    fn a_manifest_outside_an_owned_directory_is_refused() {
        for root in [
            r"C:\",
            r"C:\Windows\csi-real-node",
            r"D:\a\_temp",
            r"C:\x\..\csi-real-node",
        ] {
            let err = parse_manifest(&manifest_json(root, "0123456789abcdef0123")).unwrap_err();
            assert!(err.0.contains(&format!("{root:?}")), "{root}: {err}");
        }
        let short = parse_manifest(&manifest_json(ROOT, "short")).unwrap_err();
        assert!(short.0.contains("token"), "{short}");
    }

    #[test]
    fn a_manifest_disk_outside_the_workspace_is_refused() {
        let mut v: Value =
            serde_json::from_str(&manifest_json(ROOT, "0123456789abcdef0123")).unwrap();
        v["disks"][0]["vhdx"] = Value::from(r"D:\a\_temp\elsewhere\blank.vhdx");
        let err = parse_manifest(&v.to_string()).unwrap_err();
        assert!(err.0.contains("does not lie directly in"), "{err}");
        v["disks"][0]["vhdx"] = Value::from(format!(r"{ROOT}\blank.vhd"));
        let err = parse_manifest(&v.to_string()).unwrap_err();
        assert!(err.0.contains("not a VHDX"), "{err}");
    }

    #[test]
    fn the_marker_must_hold_the_token() {
        let m = manifest();
        check_marker(&m, "0123456789abcdef0123\r\n").unwrap();
        check_marker(&m, "\u{feff}0123456789abcdef0123").unwrap();
        assert!(check_marker(&m, "0123456789abcdef0124").is_err());
        assert!(check_marker(&m, "").is_err());
    }

    #[test]
    fn only_a_listed_vhdx_of_the_workspace_that_is_not_system_may_be_changed() {
        let m = manifest();
        let blank = format!(r"{ROOT}\BLANK.vhdx");
        assert_eq!(check_disk(&m, &disk(3, &blank)).unwrap().role, "blank");
        // A physical disk: Location is an adapter and LUN, not a file.
        let physical = disk(0, "PCI Slot 0 : Adapter 0 : Channel 0 : Device 0");
        assert!(check_disk(&m, &physical).is_err());
        // A VHDX of the workspace the manifest does not list.
        assert!(check_disk(&m, &disk(4, &format!(r"{ROOT}\other.vhdx"))).is_err());
        // A listed name elsewhere, or reached by climbing.
        assert!(check_disk(&m, &disk(4, r"C:\csi-real-node-42\blank.vhdx")).is_err());
        assert!(
            check_disk(
                &m,
                &disk(4, &format!(r"{ROOT}\..\csi-real-node-42\blank.vhdx"))
            )
            .is_err()
        );
        // System or boot, whatever its location says.
        let mut system = disk(3, &blank);
        system.is_system = true;
        assert!(
            check_disk(&m, &system)
                .unwrap_err()
                .0
                .contains("system or boot")
        );
        let mut boot = disk(3, &blank);
        boot.is_boot = true;
        assert!(check_disk(&m, &boot).is_err());
    }

    #[test]
    fn a_role_names_exactly_one_attached_disk() {
        let m = manifest();
        let blank = format!(r"{ROOT}\blank.vhdx");
        let disks = [
            disk(0, "PCI Slot 0"),
            disk(5, &blank),
            disk(6, &format!(r"{ROOT}\gpt-data.vhdx")),
        ];
        assert_eq!(disk_of_role(&m, &disks, "blank"), Ok(5));
        assert_eq!(disk_of_role(&m, &disks, "gpt-data"), Ok(6));
        assert!(
            disk_of_role(&m, &disks, "offline")
                .unwrap_err()
                .0
                .contains("no offline disk")
        );
        assert!(
            disk_of_role(&m, &disks[..1], "blank")
                .unwrap_err()
                .0
                .contains("no attached disk")
        );
        let twice = [disk(5, &blank), disk(7, &blank)];
        assert!(
            disk_of_role(&m, &twice, "blank")
                .unwrap_err()
                .0
                .contains("several")
        );
    }

    #[test]
    fn paths_and_shares_outside_the_manifest_are_refused() {
        let m = manifest();
        check_path(
            &m,
            r"C:\var\lib\kubelet\plugins\csi-real-node\pv\globalmount",
        )
        .unwrap();
        check_path(&m, r"c:/var/lib/kubelet/pods/csi-real-node/uid/mount").unwrap();
        for path in [
            r"C:\var\lib\kubelet\plugins\csi-real-node",
            r"C:\var\lib\kubelet\plugins\other\pv",
            r"C:\var\lib\kubelet\plugins\csi-real-node\..\other",
            r"C:\Windows\System32",
        ] {
            assert!(check_path(&m, path).is_err(), "{path}");
        }
        check_share(&m, r"\\LOCALHOST\csi-real-node\").unwrap();
        assert!(check_share(&m, r"\\localhost\c$").is_err());
    }

    /// The suite's files, other than `guarded.rs`, build no `Node` of
    /// their own and make no boundary call that changes a disk, a volume,
    /// a mapping or a session: they go through `guarded.rs`, whose node
    /// never leaves it (tests get its reads only) and which checks the
    /// disk, path or share against the manifest right before each call.
    /// This is what keeps a new test from bypassing the guard by accident.
    #[test]
    fn only_the_guarded_module_makes_changing_calls() {
        // A `Node` of its own would have every changing call; the
        // boundary's changing calls are named so nowhere else.
        const CHANGING: &[&str] = &[
            "Node::host_process(",
            "Node::connect(",
            "Node::from_host_process(",
            "host_process_with(",
            "Node::from_mock",
            "MockNode::",
            "windows::host(",
            "disk_set_online(",
            "disk_set_read_only(",
            "disk_initialize(",
            "disk_create_partition(",
            "disk_refresh(",
            "partition_set_online(",
            "partition_resize(",
            "volume_format_ntfs(",
            "smb_new_global_mapping(",
            "smb_remove_global_mapping(",
            "iscsi_connect(",
            "iscsi_disconnect(",
            "CSI_HP_TEST_DISK",
        ];
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real_node");
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if name == "guarded.rs" || name == "guard.rs" || !name.ends_with(".rs") {
                continue;
            }
            let source = std::fs::read_to_string(&path).unwrap();
            for (n, line) in source.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for call in CHANGING {
                    assert!(
                        !code.contains(call),
                        "{name}:{}: {call} outside guarded.rs: {line}",
                        n + 1
                    );
                }
            }
            checked += 1;
        }
        assert!(checked >= 2, "the suite's files were not found in {dir:?}");
    }
}
