//! `csi-sim-cloud new DIR --name DRIVER`: a new driver's crate, started
//! from the example node plugin of csi-proxy-client's repository.
//!
//! A driver author has the crates from a registry, not a clone of the
//! repository, and installs `csi-sim-cloud` anyway to run csi-sanity; so
//! the example plugin's files ship in this package (`template/`) and this
//! command writes them out as a crate of its own: its manifest depends on
//! `csi-node-server` and `csi-proxy-client` by version, its unit tests run
//! with `cargo test`, and its README says how to run csi-sanity against it.
//!
//! The files are the example's, byte for byte (a test of the repository
//! compares them), with two names replaced: the crate's
//! ([`TEMPLATE_CRATE`]) and the driver's ([`TEMPLATE_DRIVER`]).

use std::path::Path;

/// The example plugin's crate and program name in the template's files;
/// the new crate's name (its directory's) replaces it.
pub const TEMPLATE_CRATE: &str = "csi-node-plugin";
/// The example plugin's driver name in the template's files; `--name`
/// replaces it.
pub const TEMPLATE_DRIVER: &str = "windows.csi-node-plugin.example";
/// Where the example lives in the repository; its files name that path
/// (`docker build -f examples/csi-node-plugin/Dockerfile`), which in a new
/// crate is the crate's own directory.
const TEMPLATE_DIR: &str = "examples/csi-node-plugin/";

/// Each file of the template: its path in the new crate and its text. All
/// but `Cargo.toml` are copies of `examples/csi-node-plugin`'s; the
/// manifest is the example's with its dependencies on the workspace
/// replaced by versions.
pub const FILES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../template/Cargo.toml.in")),
    ("README.md", include_str!("../template/README.md")),
    ("Dockerfile", include_str!("../template/Dockerfile")),
    (
        "deploy/windows-daemonset.yaml",
        include_str!("../template/deploy/windows-daemonset.yaml"),
    ),
    (
        "deploy/windows-hostprocess-daemonset.yaml",
        include_str!("../template/deploy/windows-hostprocess-daemonset.yaml"),
    ),
    ("src/main.rs", include_str!("../template/src/main.rs")),
    ("src/drivers.rs", include_str!("../template/src/drivers.rs")),
    (
        "src/simulated.rs",
        include_str!("../template/src/simulated.rs"),
    ),
    (
        "tests/deploy.rs",
        include_str!("../template/tests/deploy.rs"),
    ),
    // cargo new's: the build's output is not source.
    (".gitignore", "/target\n"),
];

/// `text` with the example's names replaced by the new crate's and
/// driver's (the driver's first: it contains the crate's).
pub fn render(text: &str, crate_name: &str, driver: &str) -> String {
    text.replace(TEMPLATE_DIR, "")
        .replace(TEMPLATE_DRIVER, driver)
        .replace(TEMPLATE_CRATE, crate_name)
}

/// Writes the template into `dir` (which must not exist, or be empty) as
/// the crate named after `dir`'s last component, registering as `driver`;
/// returns the crate's name.
pub fn write(dir: &Path, driver: &str) -> Result<String, String> {
    let crate_name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{}: no directory name to name the crate", dir.display()))?;
    check_crate_name(crate_name)?;
    check_driver_name(driver)?;
    if let Ok(mut entries) = std::fs::read_dir(dir)
        && entries.next().is_some()
    {
        return Err(format!(
            "{} is not empty: give a new directory, nothing is overwritten",
            dir.display()
        ));
    }
    for (path, text) in FILES {
        let to = dir.join(path);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&to, render(text, crate_name, driver))
            .map_err(|e| format!("{}: {e}", to.display()))?;
    }
    Ok(crate_name.to_string())
}

/// A package name cargo takes that is also a fine program name (lower
/// case, so the images and manifests can use it as it is).
fn check_crate_name(name: &str) -> Result<(), String> {
    let ok = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} cannot name the crate: use lower-case letters, digits, - and _, starting with a letter"
        ))
    }
}

/// The CSI spec's rule for a driver name: at most 63 characters,
/// alphanumeric at both ends, `-`, `_` and `.` between. Lower case too,
/// since Kubernetes names the CSIDriver object after it.
fn check_driver_name(name: &str) -> Result<(), String> {
    let end = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let ok = name.len() <= 63
        && end(name.chars().next())
        && end(name.chars().last())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a CSI driver name: at most 63 lower-case letters, digits, '-', '_' and '.', a letter or digit at each end (for instance disk.csi.example.com)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_replaced_driver_first() {
        let text = "csi-node-plugin registers as windows.csi-node-plugin.example; \
                    docker build -f examples/csi-node-plugin/Dockerfile";
        assert_eq!(
            render(text, "my-driver", "disk.csi.example.com"),
            "my-driver registers as disk.csi.example.com; docker build -f Dockerfile"
        );
    }

    #[test]
    fn bad_names_are_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let err = write(&dir.path().join("My Driver"), "disk.csi.example.com").unwrap_err();
        assert!(err.contains("cannot name the crate"), "{err}");
        for driver in ["Disk.csi", "-disk", "disk.", "", &"d".repeat(64)] {
            let err = write(&dir.path().join("ok"), driver).unwrap_err();
            assert!(err.contains("not a CSI driver name"), "{driver:?}: {err}");
        }
        assert!(!dir.path().join("ok").exists());
    }

    #[test]
    fn a_directory_with_files_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("my-driver");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep"), "mine").unwrap();
        let err = write(&target, "disk.csi.example.com").unwrap_err();
        assert!(err.contains("not empty"), "{err}");
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 1);
    }

    #[test]
    fn the_new_crate_has_every_file_with_its_own_names() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("my-driver");
        assert_eq!(write(&target, "disk.csi.example.com").unwrap(), "my-driver");
        for (path, _) in FILES {
            assert!(target.join(path).is_file(), "{path} not written");
        }
        let read = |path: &str| std::fs::read_to_string(target.join(path)).unwrap();
        assert!(read("Cargo.toml").contains("name = \"my-driver\""));
        assert!(read("src/main.rs").contains("\"disk.csi.example.com\""));
        let dockerfile = read("Dockerfile");
        assert!(dockerfile.contains("COPY ${PLUGIN_EXE} /my-driver.exe"));
        assert!(
            !dockerfile.contains("examples/"),
            "a path of the repository"
        );
        assert!(read("deploy/windows-daemonset.yaml").contains("name: disk.csi.example.com"));
    }
}
