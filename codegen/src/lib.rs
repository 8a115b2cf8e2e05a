//! Code generation for `csi-proxy-client`.
//!
//! Reads every `proto/<group>/<version>/api.proto`, compiles each file on its
//! own with protox (the files share bare package names such as `v1`, which
//! prost would otherwise merge), runs tonic-prost-build for the messages and
//! the server trait, and adds the crate's own layer for the version: the
//! `<Group>Api` trait, the `Client` wrapper (both behind the `client`
//! feature, as the server modules are behind `server`) and the constants.
//! The output is `src/generated/<group>/<version>.rs` plus one `mod.rs` per
//! group, written with prettyplease so that it does not depend on the
//! rustfmt in use.
//!
//! Run `cargo run -p csi-proxy-codegen` after changing a proto file; the test
//! `tests/fresh.rs` fails while the committed code differs from the output.

use std::collections::BTreeMap;
use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use prost_types::{FileDescriptorProto, ServiceDescriptorProto};
use quote::{format_ident, quote};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The repository root (the parent of this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("codegen lives in the repo")
        .to_path_buf()
}

/// Generates the code for every proto file under `proto_root` into `out_dir`
/// (replacing what is there) and returns the files written, relative to `out_dir`.
pub fn generate(proto_root: &Path, out_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut groups: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut services = Vec::new();
    let mut written = Vec::new();
    if out_dir.exists() {
        fs::remove_dir_all(out_dir)?;
    }
    fs::create_dir_all(out_dir)?;

    for (group, version) in api_files(proto_root)? {
        let rel = format!("{group}/{version}/api.proto");
        let fds = protox::Compiler::new([proto_root])?
            .include_source_info(true)
            .open_file(&rel)?
            .file_descriptor_set();
        let file = fds.file.last().ok_or("protox returned no file")?.clone();
        let prost_code = run_tonic_prost_build(fds, file.package())?;
        let layer = version_layer(&group, &version, &file)?;
        let module_doc = file_comment(&file);
        let code = format!("{}\n{prost_code}\n{layer}", inner_doc(&module_doc));
        let rel_out = PathBuf::from(&group).join(format!("{version}.rs"));
        let header = format!("// {MARKER} from proto/{rel}. Do not edit.");
        write_formatted(&out_dir.join(&rel_out), &header, &code)?;
        written.push(rel_out);
        services.push(ServiceEntry {
            group: group.clone(),
            version: version.clone(),
            server_mod: format!("{}_server", prost_snake(file.service[0].name())),
            server: format!("{}Server", file.service[0].name()),
        });
        groups.entry(group).or_default().push((version, module_doc));
    }

    for (group, versions) in &mut groups {
        versions.sort_by_key(|(v, _)| version_key(v));
        let doc = group_doc(group, versions);
        let mods: Vec<TokenStream> = versions
            .iter()
            .map(|(v, _)| {
                let ident = format_ident!("{v}");
                quote! { pub mod #ident; }
            })
            .collect();
        let names: Vec<&str> = versions.iter().map(|(v, _)| v.as_str()).collect();
        let idents = names.iter().map(|v| format_ident!("{v}"));
        let code = format!(
            "{}\n{}",
            inner_doc(&doc),
            quote! {
                /// Name of the API group.
                pub const GROUP: &str = #group;
                /// The versions of this group, oldest first.
                pub const VERSIONS: &[&str] = &[#(#names),*];
                /// The service name and RPC names of `version`, if this group has it.
                pub(crate) fn service(version: &str) -> Option<(&'static str, &'static [&'static str])> {
                    match version {
                        #(#names => Some((#idents::SERVICE_NAME, #idents::RPCS)),)*
                        _ => None,
                    }
                }
                #(#mods)*
            }
        );
        let rel_out = PathBuf::from(group).join("mod.rs");
        let header = format!("// {MARKER}. Do not edit.");
        write_formatted(&out_dir.join(&rel_out), &header, &code)?;
        written.push(rel_out);
    }

    let rel_out = PathBuf::from("routes.rs");
    let header = format!("// {MARKER}. Do not edit.");
    write_formatted(&out_dir.join(&rel_out), &header, &routes_table(&services))?;
    written.push(rel_out);

    let rel_out = PathBuf::from("versions.md");
    fs::write(out_dir.join(&rel_out), version_table(&groups))?;
    written.push(rel_out);
    Ok(written)
}

/// The marker that tells tools and readers a file is generated; it opens
/// every file written here.
pub const MARKER: &str = "@generated by csi-proxy-codegen";

/// What the route table needs to know of one group version's service.
struct ServiceEntry {
    group: String,
    version: String,
    /// `disk_server`, the module tonic generates.
    server_mod: String,
    /// `DiskServer`, the service tonic generates.
    server: String,
}

/// `routes.rs`: the gRPC routes of each group version over the reference
/// server's services (server feature only, like the server modules).
fn routes_table(services: &[ServiceEntry]) -> String {
    let arms = services.iter().map(|s| {
        let (group, version) = (s.group.as_str(), s.version.as_str());
        let path = [group, version, &s.server_mod, &s.server].map(|p| format_ident!("{p}"));
        let [g, v, m, server] = path;
        quote! {
            (#group, #version) => Routes::new(crate::#g::#v::#m::#server::new(service.clone())),
        }
    });
    let code = quote! {
        //! The gRPC routes of every group version, one service each.

        use tonic::service::Routes;

        use crate::server::ProxyService;

        /// The routes of the service of `group` `version` over `service`,
        /// or `None` if there is no such group version.
        pub fn routes(group: &str, version: &str, service: &ProxyService) -> Option<Routes> {
            let routes = match (group, version) {
                #(#arms)*
                _ => return None,
            };
            Some(routes)
        }
    };
    code.to_string()
}

/// `versions.md`: the version table of the crate root's documentation.
fn version_table(groups: &BTreeMap<String, Vec<(String, String)>>) -> String {
    let mut out = format!("<!-- {MARKER} from proto/. Do not edit. -->\n\n");
    out.push_str("| group | versions, oldest first |\n|---|---|\n");
    for (group, versions) in groups {
        let names: Vec<&str> = versions.iter().map(|(v, _)| v.as_str()).collect();
        out.push_str(&format!("| [`{group}`] | {} |\n", names.join(", ")));
    }
    out
}

/// Every `(group, version)` with a `proto/<group>/<version>/api.proto`, sorted.
fn api_files(proto_root: &Path) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for group in fs::read_dir(proto_root)? {
        let group = group?;
        if !group.file_type()?.is_dir() {
            continue;
        }
        for version in fs::read_dir(group.path())? {
            let version = version?;
            if version.path().join("api.proto").is_file() {
                out.push((name_of(&group.path()), name_of(&version.path())));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Sort key of a version name: major, then alpha < beta < GA, then number.
fn version_key(version: &str) -> (u32, u8, u32) {
    let rest = version.trim_start_matches('v');
    let split = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (major, qualifier) = rest.split_at(split);
    let number = |q: &str| q.parse().unwrap_or(0);
    let major = major.parse().unwrap_or(0);
    match qualifier {
        "" => (major, 2, 0),
        q if q.starts_with("alpha") => (major, 0, number(&q[5..])),
        q => (major, 1, number(q.trim_start_matches("beta"))),
    }
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// Runs tonic-prost-build on one file's descriptor set: messages, enums and
/// the server module (the client side is our own layer).
fn run_tonic_prost_build(fds: prost_types::FileDescriptorSet, package: &str) -> Result<String> {
    let tmp = std::env::temp_dir().join(format!("csi-proxy-codegen-{}", std::process::id()));
    fs::create_dir_all(&tmp)?;
    let result = tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .build_transport(false)
        .generate_default_stubs(false)
        .out_dir(&tmp)
        .compile_fds(fds);
    let code = result.and_then(|()| fs::read_to_string(tmp.join(format!("{package}.rs"))));
    fs::remove_dir_all(&tmp)?;
    gate_server_modules(&code?)
}

/// Puts tonic's server modules (`disk_server`, ...) behind the `server`
/// feature, so that a client-only build compiles none of them.
fn gate_server_modules(code: &str) -> Result<String> {
    let mut file = syn::parse_file(code)?;
    for item in &mut file.items {
        if let syn::Item::Mod(module) = item
            && module.ident.to_string().ends_with("_server")
        {
            module
                .attrs
                .push(syn::parse_quote!(#[cfg(feature = "server")]));
        }
    }
    Ok(quote!(#file).to_string())
}

/// Writes `code` formatted by prettyplease under the comment line `header`
/// (prettyplease drops plain comments, so the header is added after it).
fn write_formatted(path: &Path, header: &str, code: &str) -> Result<()> {
    let parsed = syn::parse_file(code).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    fs::write(
        path,
        format!("{header}\n{}", prettyplease::unparse(&parsed)),
    )?;
    Ok(())
}

fn inner_doc(text: &str) -> String {
    text.lines()
        .map(|l| format!("//!{}{l}\n", if l.is_empty() { "" } else { " " }))
        .collect()
}

/// The leading comment of the `package` statement: the file's description.
fn file_comment(file: &FileDescriptorProto) -> String {
    comment_at(file, &[2]).unwrap_or_default()
}

fn comment_at(file: &FileDescriptorProto, path: &[i32]) -> Option<String> {
    let info = file.source_code_info.as_ref()?;
    let loc = info.location.iter().find(|l| l.path == path)?;
    let text = loc.leading_comments.as_deref()?;
    Some(
        text.lines()
            .map(str::trim)
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_string(),
    )
}

fn group_doc(group: &str, versions: &[(String, String)]) -> String {
    let summary = versions
        .last()
        .and_then(|(_, doc)| doc.lines().nth(1))
        .unwrap_or_default();
    let list: Vec<String> = versions.iter().map(|(v, _)| format!("[`{v}`]")).collect();
    format!(
        "The `{group}` API group.\n\n{summary}\n\nVersions, oldest first: {}. Each module holds the \
         messages of its version, its `Client`, and its `{}Api` trait.",
        list.join(", "),
        pascal(group)
    )
}

fn pascal(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

/// The snake_case method name of an RPC, with every acronym kept as one word:
/// `ListDiskIDs` -> `list_disk_ids`, `GetBIOSSerialNumber` -> `get_bios_serial_number`,
/// `GetVolumeIDFromTargetPath` -> `get_volume_id_from_target_path`.
pub fn method_name(rpc: &str) -> String {
    let chars: Vec<char> = rpc.chars().collect();
    let mut words: Vec<String> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let start = i;
        if chars[i].is_ascii_uppercase() {
            // A run of capitals: an acronym, unless its last capital starts a word.
            let mut j = i;
            while j < chars.len() && chars[j].is_ascii_uppercase() {
                j += 1;
            }
            let run = j - i;
            if run > 1 {
                // "IDs" (acronym plural): keep the trailing 's' with the acronym.
                let plural = j < chars.len()
                    && chars[j] == 's'
                    && (j + 1 == chars.len() || chars[j + 1].is_ascii_uppercase());
                if plural {
                    i = j + 1;
                } else if j < chars.len() && chars[j].is_ascii_lowercase() {
                    i = j - 1; // "IDFrom": "ID" then "From"
                } else {
                    i = j;
                }
                words.push(
                    chars[start..i]
                        .iter()
                        .collect::<String>()
                        .to_ascii_lowercase(),
                );
                continue;
            }
            i += 1;
        }
        while i < chars.len() && !chars[i].is_ascii_uppercase() {
            i += 1;
        }
        words.push(
            chars[start..i]
                .iter()
                .collect::<String>()
                .to_ascii_lowercase(),
        );
    }
    words.join("_")
}

/// The name prost and tonic give a method (`list_disk_i_ds`) or a module.
fn prost_snake(name: &str) -> String {
    heck::ToSnakeCase::to_snake_case(name)
}

/// The name prost gives a message type (`GetBiosSerialNumberRequest`).
fn prost_type(name: &str) -> String {
    heck::ToUpperCamelCase::to_upper_camel_case(name)
}

fn version_layer(group: &str, version: &str, file: &FileDescriptorProto) -> Result<String> {
    let [service] = file.service.as_slice() else {
        return Err(format!("{group}/{version}: expected exactly one service").into());
    };
    let package = file.package();
    let service_name = service.name();
    let full_service = format!("{package}.{service_name}");
    let trait_ident = format_ident!("{}Api", pascal(group));
    let service_doc = comment_at(file, &[6, 0]).unwrap_or_default();
    let rpcs = rpcs_of(file, service);
    let rpc_names: Vec<&str> = rpcs.iter().map(|r| r.name.as_str()).collect();

    let trait_methods = rpcs.iter().map(|r| {
        let (m, req, resp, doc) = (&r.method, &r.input, &r.output, &r.doc);
        let wire = format!("`/{full_service}/{}`", r.name);
        quote! {
            #[doc = #doc]
            #[doc = ""]
            #[doc = #wire]
            async fn #m(&self, request: #req) -> ::core::result::Result<#resp, crate::Error>;
        }
    });
    // The client and the mock host make the same call, each over its own connection.
    let methods_over = |connection: TokenStream| -> Vec<TokenStream> {
        rpcs.iter()
            .map(|r| {
                let (m, req, resp) = (&r.method, &r.input, &r.output);
                let path = format!("/{full_service}/{}", r.name);
                quote! {
                    async fn #m(&self, request: #req) -> ::core::result::Result<#resp, crate::Error> {
                        #connection.unary(#path, request).await
                    }
                }
            })
            .collect()
    };
    let client_methods = methods_over(quote!(self.connection));
    let mock_methods = methods_over(quote!(self.connection(GROUP, VERSION)));

    let trait_doc = format!(
        "The `{full_service}` service as a trait: one method per RPC of `{group}` {version}.\n\n\
         {service_doc}\n\nImplemented by [`Client`] (a connection to the proxy) and, with the `mock` \
         feature, by the in-process mock host, so driver code written against `&dyn {trait_ident}` \
         runs against either. Object safe, `Send + Sync`."
    );
    let client_doc = format!(
        "Client of `{full_service}`, the `{group}` API {version}.\n\n\
         Cheap to clone; clones share one HTTP/2 connection and calls from many tasks are \
         multiplexed on it. The RPCs are the methods of [`{trait_ident}`]."
    );
    let default_doc = format!(
        "Connects to the default endpoint of `{group}` {version}: the named pipe \
         `\\\\.\\pipe\\csi-proxy-{group}-{version}` on Windows, elsewhere the socket \
         `csi-proxy-{group}-{version}.sock` in the directory named by `CSI_PROXY_SOCKET_DIR`."
    );
    let group_lit = group;
    let layer = quote! {
        /// Name of the API group of this module.
        pub const GROUP: &str = #group_lit;
        /// Version of this module.
        pub const VERSION: &str = #version;
        /// Fully qualified gRPC service name, as it appears on the wire.
        pub const SERVICE_NAME: &str = #full_service;
        /// The RPCs of this version, as named on the wire.
        pub const RPCS: &[&str] = &[#(#rpc_names),*];

        #[doc = #trait_doc]
        #[cfg(feature = "client")]
        #[cfg_attr(feature = "mockall", ::mockall::automock)]
        #[::async_trait::async_trait]
        pub trait #trait_ident: Send + Sync {
            #(#trait_methods)*
        }

        #[doc = #client_doc]
        #[cfg(feature = "client")]
        #[derive(Clone, Debug)]
        pub struct Client {
            connection: crate::transport::Connection,
        }

        #[cfg(feature = "client")]
        impl Client {
            /// Connects to `address` (`npipe:////./pipe/NAME`, `\\.\pipe\NAME`,
            /// `unix:///path` or, on Unix, an absolute path) with default options.
            pub async fn connect(address: impl AsRef<str>) -> ::core::result::Result<Self, crate::Error> {
                Self::connect_with(address, &crate::ConnectOptions::default()).await
            }

            /// Connects to `address` with the given timeouts.
            pub async fn connect_with(
                address: impl AsRef<str>,
                options: &crate::ConnectOptions,
            ) -> ::core::result::Result<Self, crate::Error> {
                let address: crate::transport::Address = address.as_ref().parse()?;
                let connection = crate::transport::Connection::open(&address, options).await?;
                Ok(Self { connection })
            }

            #[doc = #default_doc]
            pub async fn connect_default() -> ::core::result::Result<Self, crate::Error> {
                Self::connect_default_with(&crate::ConnectOptions::default()).await
            }

            /// Connects to the default endpoint (see [`Client::connect_default`]) with the given timeouts.
            pub async fn connect_default_with(
                options: &crate::ConnectOptions,
            ) -> ::core::result::Result<Self, crate::Error> {
                let address = crate::transport::Address::default_for(GROUP, VERSION)?;
                let connection = crate::transport::Connection::open(&address, options).await?;
                Ok(Self { connection })
            }

            /// Wraps a channel made elsewhere (a custom connector, a test transport).
            pub fn from_channel(channel: ::tonic::transport::Channel) -> Self {
                Self { connection: crate::transport::Connection::from_channel(channel) }
            }

            /// Wraps a connection made elsewhere, e.g. an in-process one.
            pub fn from_connection(connection: crate::transport::Connection) -> Self {
                Self { connection }
            }

            /// The endpoint this client talks to, as used in error messages.
            pub fn endpoint(&self) -> &str {
                self.connection.endpoint()
            }
        }

        #[cfg(feature = "client")]
        #[::async_trait::async_trait]
        impl #trait_ident for Client {
            #(#client_methods)*
        }

        #[cfg(feature = "mock")]
        #[::async_trait::async_trait]
        impl #trait_ident for crate::mock::MockHost {
            #(#mock_methods)*
        }
    };
    Ok(layer.to_string())
}

struct Rpc {
    name: String,
    method: proc_macro2::Ident,
    input: proc_macro2::Ident,
    output: proc_macro2::Ident,
    doc: String,
}

fn rpcs_of(file: &FileDescriptorProto, service: &ServiceDescriptorProto) -> Vec<Rpc> {
    let local = |t: &str| format_ident!("{}", prost_type(t.rsplit('.').next().unwrap_or(t)));
    service
        .method
        .iter()
        .enumerate()
        .map(|(i, m)| Rpc {
            name: m.name().to_string(),
            method: format_ident!("{}", method_name(m.name())),
            input: local(m.input_type()),
            output: local(m.output_type()),
            doc: comment_at(file, &[6, 0, 2, i as i32])
                .unwrap_or_else(|| format!("Calls `{}`.", m.name())),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_keep_acronyms_whole() {
        for (rpc, want) in [
            ("ListDiskIDs", "list_disk_ids"),
            (
                "GetVolumeIDFromTargetPath",
                "get_volume_id_from_target_path",
            ),
            (
                "GetClosestVolumeIDFromTargetPath",
                "get_closest_volume_id_from_target_path",
            ),
            ("GetBIOSSerialNumber", "get_bios_serial_number"),
            (
                "GetDiskNumberFromVolumeID",
                "get_disk_number_from_volume_id",
            ),
            ("NewSmbGlobalMapping", "new_smb_global_mapping"),
            ("Mkdir", "mkdir"),
            ("IsVolumeFormatted", "is_volume_formatted"),
        ] {
            assert_eq!(method_name(rpc), want, "{rpc}");
        }
    }
}
