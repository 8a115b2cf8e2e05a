//! The committed `src/csi.rs` must be exactly what the generator makes from
//! `proto/`; regenerate it with `cargo run -p csi-node-plugin --example codegen`.

#[path = "../codegen.rs"]
mod codegen;

#[test]
fn committed_generated_code_is_fresh() {
    let dir = codegen::crate_dir();
    let fresh = codegen::generate(&dir.join("proto")).unwrap();
    let committed = std::fs::read_to_string(dir.join("src/csi.rs")).unwrap();
    assert!(
        committed == fresh,
        "src/csi.rs is stale; run `cargo run -p csi-node-plugin --example codegen` and commit it"
    );
}
