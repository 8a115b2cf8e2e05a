//! The README shows the `csi-node-server` examples exactly as
//! `examples/readme` compiles them.

const README: &str = include_str!("../../README.md");

#[test]
fn the_readme_shows_the_compiled_examples() {
    for (name, code) in [
        ("page.rs", include_str!("../examples/readme/page.rs")),
        ("layered.rs", include_str!("../examples/readme/layered.rs")),
    ] {
        let block = format!("```rust,ignore\n{code}```\n");
        assert!(
            README.contains(&block),
            "README.md does not show examples/readme/{name} as it is"
        );
    }
}
