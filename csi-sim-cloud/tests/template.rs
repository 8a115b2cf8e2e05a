//! `csi-sim-cloud new`'s template is the example node plugin: each of its
//! files is `examples/csi-node-plugin`'s, byte for byte, and its manifest
//! the example's with the crates by version. A change to the example that
//! is not copied into `csi-sim-cloud/template/` fails here, so that what a
//! driver author starts from is what this repository builds and tests.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use csi_sim_cloud::template::FILES;
use toml::{Table, Value};

fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/csi-node-plugin")
}

fn template(path: &str) -> &'static str {
    FILES
        .iter()
        .find(|(p, _)| *p == path)
        .unwrap_or_else(|| panic!("the template has no {path}"))
        .1
}

/// Every file under `dir`, relative to it.
fn files(dir: &Path, under: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, under, out);
        } else {
            let relative = path.strip_prefix(under).unwrap();
            out.insert(relative.to_str().unwrap().replace('\\', "/"));
        }
    }
}

#[test]
fn every_file_of_the_example_is_in_the_template_unchanged() {
    let example = example_dir();
    let mut in_example = BTreeSet::new();
    files(&example, &example, &mut in_example);
    // The manifest differs by the crates' source (below); .gitignore is
    // the new crate's own.
    let in_template: BTreeSet<String> = FILES
        .iter()
        .map(|(p, _)| p.to_string())
        .filter(|p| p != ".gitignore")
        .collect();
    assert_eq!(
        in_example, in_template,
        "the example's files and the template's (csi-sim-cloud/src/template.rs, FILES) differ"
    );
    for path in in_example.iter().filter(|p| *p != "Cargo.toml") {
        let text = std::fs::read_to_string(example.join(path)).unwrap();
        assert!(
            text == template(path),
            "csi-sim-cloud/template/{path} is not examples/csi-node-plugin/{path}: \
             cp examples/csi-node-plugin/{path} csi-sim-cloud/template/{path}"
        );
    }
}

/// A dependency as a table without where it comes from (workspace, path,
/// version): what remains (features, optional) must be the same.
fn without_source(spec: &Value) -> Table {
    let mut table = match spec {
        Value::Table(t) => t.clone(),
        _ => Table::new(),
    };
    for key in ["workspace", "path", "version"] {
        table.remove(key);
    }
    table
}

#[test]
fn the_template_manifest_is_the_examples_with_the_crates_by_version() {
    let example: Table = std::fs::read_to_string(example_dir().join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let template: Table = template("Cargo.toml").parse().unwrap();
    for key in ["features", "dev-dependencies", "lints", "bin"] {
        assert_eq!(example.get(key), template.get(key), "[{key}] differs");
    }
    for key in ["name", "description", "publish"] {
        assert_eq!(
            example["package"].get(key),
            template["package"].get(key),
            "package.{key} differs"
        );
    }
    let (ours, theirs) = (
        example["dependencies"].as_table().unwrap(),
        template["dependencies"].as_table().unwrap(),
    );
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (name, spec) in ours {
        assert_eq!(
            without_source(spec),
            without_source(&theirs[name]),
            "dependency {name}"
        );
        if name.starts_with("csi-") {
            // This release's crates, as a registry has them.
            let version = match &theirs[name] {
                Value::String(v) => v.as_str(),
                other => other["version"].as_str().unwrap(),
            };
            assert_eq!(version, env!("CARGO_PKG_VERSION"), "dependency {name}");
            assert!(theirs[name].get("path").is_none(), "{name} by path");
        } else {
            assert_eq!(spec, &theirs[name], "dependency {name}");
        }
    }
    // What the workspace gives the example, the template says itself.
    let workspace: Table = std::fs::read_to_string(example_dir().join("../../Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    for key in ["edition", "rust-version", "license"] {
        assert_eq!(
            workspace["workspace"]["package"].get(key),
            template["package"].get(key),
            "package.{key} differs from the workspace's"
        );
    }
}
