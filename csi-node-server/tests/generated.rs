//! The committed `src/csi/v1.rs` must be exactly what the generator makes from
//! `proto/`; regenerate it with `cargo run -p csi-node-server --example codegen`.

#[path = "../codegen.rs"]
mod codegen;

#[test]
fn committed_generated_code_is_fresh() {
    let dir = codegen::crate_dir();
    let fresh = codegen::generate(&dir.join("proto")).unwrap();
    let committed = std::fs::read_to_string(dir.join(codegen::GENERATED)).unwrap();
    assert!(
        committed == fresh,
        "src/csi/v1.rs is stale; run `cargo run -p csi-node-server --example codegen` and commit it"
    );
}
