//! The committed `src/generated/` must be exactly what the generator makes
//! from `proto/`: regenerate into a temporary directory and compare.

use std::fs;
use std::path::Path;

fn files_under(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(
                    path.strip_prefix(root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    out.sort();
    out
}

#[test]
fn committed_generated_code_is_fresh() {
    let repo = csi_proxy_codegen::repo_root();
    let committed = repo.join("src/generated");
    let tmp = tempfile::tempdir().unwrap();
    let fresh = tmp.path().join("generated");
    csi_proxy_codegen::generate(&repo.join("proto"), &fresh).unwrap();

    let (have, want) = (files_under(&committed), files_under(&fresh));
    assert_eq!(
        have, want,
        "src/generated has other files than the generator writes; run `cargo run -p csi-proxy-codegen`"
    );
    let stale: Vec<&String> = want
        .iter()
        .filter(|f| fs::read(committed.join(f)).unwrap() != fs::read(fresh.join(f)).unwrap())
        .collect();
    assert!(
        stale.is_empty(),
        "stale generated files {stale:?}; run `cargo run -p csi-proxy-codegen` and commit the result"
    );
}

#[test]
fn every_group_version_of_the_contract_is_generated() {
    let repo = csi_proxy_codegen::repo_root();
    let files = files_under(&repo.join("src/generated"));
    let versions = files
        .iter()
        .filter(|f| f.contains('/') && !f.ends_with("mod.rs"))
        .count();
    assert_eq!(versions, 23, "{files:?}");
}

#[test]
fn every_generated_file_opens_with_the_marker() {
    let generated = csi_proxy_codegen::repo_root().join("src/generated");
    let files = files_under(&generated);
    let unmarked: Vec<&String> = files
        .iter()
        .filter(|f| {
            let text = fs::read_to_string(generated.join(f)).unwrap();
            let first = text.lines().next().unwrap_or_default();
            !first.contains(csi_proxy_codegen::MARKER)
        })
        .collect();
    assert!(
        unmarked.is_empty(),
        "files without the marker: {unmarked:?}"
    );
    assert_eq!(files.len(), 31, "{files:?}");
}
