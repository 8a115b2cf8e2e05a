//! `cargo run -p csi-proxy-codegen`: regenerates `src/generated/` from `proto/`.

fn main() {
    let root = csi_proxy_codegen::repo_root();
    match csi_proxy_codegen::generate(&root.join("proto"), &root.join("src/generated")) {
        Ok(files) => println!("wrote {} files to src/generated", files.len()),
        Err(e) => {
            eprintln!("codegen failed: {e}");
            std::process::exit(1);
        }
    }
}
