use super::*;
use crate::host::HostErrorKind;

/// Node side with a simplified validator (working dir prefix only) and
/// a link table.
#[derive(Debug, Default)]
struct FakeNode {
    links: BTreeMap<String, String>,
}

impl FakeNode {
    /// Makes the model's returned link as the node would.
    fn make(&mut self, link: UncLink) -> HostResult<()> {
        let p = &link.local_path;
        if !p.to_lowercase().starts_with("c:\\var\\lib\\kubelet") {
            return Err(HostError::unknown(format!(
                "path: {p} is not within the working directories: [C:\\var\\lib\\kubelet]"
            )));
        }
        if self.links.contains_key(&p.to_lowercase()) {
            return Err(link.failed(HostError::unknown(
                "Cannot create a file when that file already exists.",
            )));
        }
        self.links.insert(p.to_lowercase(), link.target);
        Ok(())
    }
}

/// The SMB model and a fake node side behind one lock.
struct TestSmb(std::sync::Mutex<(SmbState, FakeNode)>);

impl TestSmb {
    fn with<R>(&self, f: impl FnOnce(&mut SmbState, &mut FakeNode) -> R) -> R {
        let mut guard = self.0.lock().unwrap();
        let (state, node) = &mut *guard;
        f(state, node)
    }

    fn new_smb_global_mapping(&self, req: &NewSmbGlobalMappingRequest) -> HostResult<()> {
        self.with(|s, n| match s.new_smb_global_mapping(req)? {
            Some(link) => n.make(link),
            None => Ok(()),
        })
    }

    fn remove_smb_global_mapping(&self, remote_path: &str) -> HostResult<()> {
        self.with(|s, _| s.remove_smb_global_mapping(remote_path))
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    host: TestSmb,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut shares = default_smb_shares();
    shares.push(SmbShareSeed {
        server: "Public".into(),
        share: "Open".into(),
        username: None,
        password: None,
        everyone: true,
        reachable: true,
        supports_encryption: true,
    });
    let state = SmbState::from_seed(dir.path(), SmbConfig::default(), &shares).unwrap();
    Fixture {
        _dir: dir,
        host: TestSmb(std::sync::Mutex::new((state, FakeNode::default()))),
    }
}

fn req(remote: &str, local: &str, user: &str, password: &str) -> NewSmbGlobalMappingRequest {
    NewSmbGlobalMappingRequest {
        remote_path: remote.into(),
        local_path: local.into(),
        username: user.into(),
        password: password.into(),
    }
}

fn good(remote: &str, local: &str) -> NewSmbGlobalMappingRequest {
    req(remote, local, "smbuser", DEFAULT_SMB_PASSWORD)
}

const ROOT: &str = r"\\fileserver\share";

#[test]
fn concurrent_mappings_of_one_root_make_one() {
    let dir = tempfile::tempdir().unwrap();
    let state = SmbSeed::default_node().build(dir.path(), true).unwrap();
    let host = std::sync::Arc::new(TestSmb(std::sync::Mutex::new((state, FakeNode::default()))));
    // Concurrent mappings of one root: all succeed, one mapping results.
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let host = host.clone();
            std::thread::spawn(move || {
                host.new_smb_global_mapping(&good(&format!(r"\\fileserver\share\pv{i}"), ""))
                    .unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    host.remove_smb_global_mapping(ROOT).unwrap();
    assert!(host.remove_smb_global_mapping(ROOT).is_err());
}

#[test]
fn remote_path_root_extraction_table() {
    let ok = [
        (r"\\hostname\path", r"\\hostname\path"),
        (r"\\hostname\path\", r"\\hostname\path"),
        (r"\\HostName\Path\sub\dir", r"\\hostname\path"),
        ("//srv/share/x", r"\\srv\share"),
        (r"server\share", r"\\server\share"),
        ("a/b/c", r"\\a\b"),
        (r"\\?\C:\x", r"\\?\c:"),
    ];
    for (input, root) in ok {
        assert_eq!(parse_remote_path(input).unwrap().root, root, "{input}");
    }
    let err = parse_remote_path("").unwrap_err();
    assert_eq!(err.kind(), HostErrorKind::Unknown);
    assert_eq!(err.message(), "remote path is empty");
    assert_eq!(
        parse_remote_path("hostname").unwrap_err().message(),
        "remote path (hostname) is invalid"
    );
    assert_eq!(
        parse_remote_path("//host/").unwrap_err().message(),
        r"remote path (\\host\) is invalid"
    );
    let p = parse_remote_path("//Srv/Share/Sub").unwrap();
    assert_eq!(p.normalized, r"\\Srv\Share\Sub");
    assert_eq!(p.link_target(), r"\\Srv\Share\Sub\");
    assert_eq!(
        parse_remote_path(r"\\a\b\").unwrap().link_target(),
        r"\\a\b\"
    );
}

#[test]
fn credential_encoding() {
    assert_eq!(encode_credential("", "pw"), None);
    assert_eq!(encode_credential("user", "pw").unwrap(), "user:pw");
    assert_eq!(
        encode_credential(r"DOM\us:er", "p:w\\").unwrap(),
        r"DOM\\us\:er:p:w\"
    );
    assert_eq!(
        decode_credential(r"DOM\\us\:er:p:w\"),
        (r"DOM\us:er".to_owned(), r"p:w\".to_owned())
    );
    assert_eq!(account_name(r"DOMAIN\User"), "user");
    assert_eq!(account_name("User@corp.example"), "user");
    assert_eq!(account_name("user"), "user");
}

#[test]
fn credentials_rules() {
    let f = fixture();
    let h = &f.host;
    // Domain prefix and case of the account part do not matter.
    h.new_smb_global_mapping(&req(ROOT, "", r"somedomain\SMBUSER", DEFAULT_SMB_PASSWORD))
        .unwrap();
    h.remove_smb_global_mapping(ROOT).unwrap();
    h.new_smb_global_mapping(&req(ROOT, "", "smbuser@corp", DEFAULT_SMB_PASSWORD))
        .unwrap();
    h.remove_smb_global_mapping(ROOT).unwrap();
    assert_eq!(
        h.new_smb_global_mapping(&req(ROOT, "", "smbuser", "wrong"))
            .unwrap_err()
            .message(),
        "NewSmbGlobalMapping failed. result: -1, err: Exception occurred. (The user name or password is incorrect. )"
    );
    // Empty username: machine identity, only Everyone shares.
    assert_eq!(
        h.new_smb_global_mapping(&req(ROOT, "", "", "ignored"))
            .unwrap_err()
            .message(),
        "NewSmbGlobalMapping failed. result: -1, err: Exception occurred. (Access is denied. )"
    );
    h.new_smb_global_mapping(&req(r"\\public\open", "", "", "ignored"))
        .unwrap();
    let m = h.with(|s, _| s.mapping(r"\\public\open").cloned()).unwrap();
    assert_eq!(m.credential, None);
    // Unknown server / share.
    assert_eq!(
        h.new_smb_global_mapping(&good(r"\\nosuch\share", ""))
            .unwrap_err()
            .message(),
        "NewSmbGlobalMapping failed. result: -1, err: Exception occurred. (The network path was not found. )"
    );
    assert_eq!(
        h.new_smb_global_mapping(&good(r"\\fileserver\nosuch", ""))
            .unwrap_err()
            .message(),
        "NewSmbGlobalMapping failed. result: -1, err: Exception occurred. (The network name cannot be found. )"
    );
    assert!(h.with(|s, _| s.mappings().len()) == 1);
}

#[test]
fn mapping_is_made_on_lowercase_root_and_reused() {
    let f = fixture();
    let h = &f.host;
    h.new_smb_global_mapping(&good(r"\\FileServer\Share\pvc-1", ""))
        .unwrap();
    // Same call again: idempotent. Another sub-path reuses the root.
    h.new_smb_global_mapping(&good(r"\\FileServer\Share\pvc-1", ""))
        .unwrap();
    h.new_smb_global_mapping(&good("//fileserver/share/pvc-2", ""))
        .unwrap();
    // Valid mapping kept even with other (wrong) credentials.
    h.new_smb_global_mapping(&req(ROOT, "", "other", "bad"))
        .unwrap();
    let mappings = h.with(|s, _| s.mappings().into_iter().cloned().collect::<Vec<_>>());
    assert_eq!(mappings.len(), 1);
    assert_eq!(mappings[0].remote_path, ROOT);
    assert_eq!(mappings[0].status, MappingStatus::Ok);
    assert_eq!(mappings[0].credential.as_ref().unwrap().0, "smbuser");
}

#[test]
fn mapping_with_bad_status_conflicts() {
    let f = fixture();
    let h = &f.host;
    h.new_smb_global_mapping(&good(ROOT, "")).unwrap();
    h.with(|s, _| s.set_mapping_status(ROOT, MappingStatus::Disconnected))
        .unwrap();
    assert_eq!(
        h.new_smb_global_mapping(&good(ROOT, ""))
            .unwrap_err()
            .message(),
        "NewSmbGlobalMapping failed. result: -1, err: Exception occurred. (The local device name is already in use. )"
    );
    assert!(
        h.new_smb_global_mapping(&req(ROOT, "", "", ""))
            .unwrap_err()
            .message()
            .ends_with("shared resource and try again. )")
    );
}

#[test]
fn one_account_per_server_across_shares() {
    let f = fixture();
    let h = &f.host;
    h.with(|s, _| {
        s.add_share("fileserver", "other", ShareAccess::Everyone)?;
        s.add_account("fileserver", "otheruser", "0ther-Passw0rd!")
    })
    .unwrap();
    h.new_smb_global_mapping(&good(ROOT, "")).unwrap();
    // Another share of the same server under another account: 1219, as
    // Windows Server 2025 holds one connection per server and account.
    let other = req(r"\fileserver\other", "", "otheruser", "0ther-Passw0rd!");
    let e = h.new_smb_global_mapping(&other).unwrap_err();
    assert!(e.message().contains("Multiple connections"), "{e:?}");
    // Even when the first mapping is stale: Windows keeps the object.
    h.with(|s, _| s.reboot());
    assert!(h.new_smb_global_mapping(&other).is_err());
    // The same account maps another share of the server.
    h.new_smb_global_mapping(&good(r"\fileserver\other", ""))
        .unwrap();
    h.remove_smb_global_mapping(ROOT).unwrap();
    h.remove_smb_global_mapping(r"\fileserver\other").unwrap();
    h.new_smb_global_mapping(&other).unwrap();
}

#[test]
fn a_reboot_leaves_every_mapping_disconnected() {
    let f = fixture();
    let h = &f.host;
    h.new_smb_global_mapping(&good(ROOT, "")).unwrap();
    h.new_smb_global_mapping(&req(r"\public\open", "", "", ""))
        .unwrap();
    h.with(|s, _| s.reboot());
    h.with(|s, _| {
        assert!(
            s.mappings()
                .iter()
                .all(|m| m.status == MappingStatus::Disconnected)
        );
        assert!(!s.path_valid(ROOT));
    });
}

#[test]
fn password_change_is_detected_and_remapped() {
    let f = fixture();
    let h = &f.host;
    h.new_smb_global_mapping(&good(ROOT, "")).unwrap();
    h.with(|s, _| s.set_account_password(DEFAULT_SMB_SERVER, "smbuser", "NewPassw0rd!"))
        .unwrap();
    assert!(!h.with(|s, _| s.path_valid(ROOT)));
    // Old credentials: the invalid mapping is removed, re-creation fails.
    assert!(h.new_smb_global_mapping(&good(ROOT, "")).is_err());
    assert!(h.with(|s, _| s.mappings().is_empty()));
    h.new_smb_global_mapping(&req(ROOT, "", "smbuser", "NewPassw0rd!"))
        .unwrap();
    assert!(h.with(|s, _| s.path_valid(ROOT)));
}

#[test]
fn remove_semantics() {
    let f = fixture();
    let h = &f.host;
    h.new_smb_global_mapping(&good(ROOT, r"C:\var\lib\kubelet\pods\p1\vol"))
        .unwrap();
    // Any path on the share removes the root mapping; links stay.
    h.remove_smb_global_mapping(r"\\FILESERVER\share\other\sub")
        .unwrap();
    assert!(h.with(|s, _| s.mappings().is_empty()));
    assert_eq!(h.with(|_, n| n.links.len()), 1);
    let err = h.remove_smb_global_mapping(ROOT).unwrap_err();
    assert_eq!(err.kind(), HostErrorKind::Unknown);
    assert_eq!(
        err.message(),
        r"error remove smb mapping '\\fileserver\share'. err: Not Found"
    );
    assert_eq!(
        h.remove_smb_global_mapping("").unwrap_err().message(),
        "remote path is empty"
    );
    assert_eq!(
        h.remove_smb_global_mapping("x").unwrap_err().message(),
        "remote path (x) is invalid"
    );
}

#[test]
fn local_path_link_and_failures() {
    let f = fixture();
    let h = &f.host;
    let local = r"C:\var\lib\kubelet\pods\p1\volumes\v";
    h.new_smb_global_mapping(&good(r"\\FileServer\Share\Sub", local))
        .unwrap();
    assert_eq!(
        h.with(|_, n| n.links.get(&local.to_lowercase()).cloned())
            .unwrap(),
        r"\\FileServer\Share\Sub\"
    );
    // Repeat with the same local path: the link step fails.
    assert_eq!(
        h.new_smb_global_mapping(&good(r"\\FileServer\Share\Sub", local))
            .unwrap_err()
            .message(),
        r"creating link C:\var\lib\kubelet\pods\p1\volumes\v to \\FileServer\Share\Sub failed with error: error linking \\FileServer\Share\Sub\ to C:\var\lib\kubelet\pods\p1\volumes\v. err: Cannot create a file when that file already exists."
    );
    // Invalid local path: validator's error, mapping not rolled back.
    h.remove_smb_global_mapping(ROOT).unwrap();
    assert_eq!(
        h.new_smb_global_mapping(&good(ROOT, r"C:\Windows\x"))
            .unwrap_err()
            .message(),
        r"path: C:\Windows\x is not within the working directories: [C:\var\lib\kubelet]"
    );
    assert!(h.with(|s, _| s.is_mapped(ROOT)));
}

#[test]
fn require_privacy_flag() {
    let f = fixture();
    let h = &f.host;
    h.new_smb_global_mapping(&good(ROOT, "")).unwrap();
    assert!(h.with(|s, _| s.mapping(ROOT).unwrap().require_privacy));
    h.remove_smb_global_mapping(ROOT).unwrap();
    // A server without encryption refuses privacy-requiring mappings.
    h.with(|s, _| s.set_server_encryption(DEFAULT_SMB_SERVER, false))
        .unwrap();
    assert!(
        h.new_smb_global_mapping(&good(ROOT, ""))
            .unwrap_err()
            .message()
            .ends_with("Exception occurred. (Access is denied. )")
    );
    h.with(|s, _| {
        s.set_config(SmbConfig {
            require_privacy: false,
            ..s.config()
        })
    });
    h.new_smb_global_mapping(&good(ROOT, "")).unwrap();
    assert!(!h.with(|s, _| s.mapping(ROOT).unwrap().require_privacy));
}

#[test]
fn unc_resolution_needs_ok_mapping() {
    let f = fixture();
    let h = &f.host;
    let dir = h
        .with(|s, _| s.share_dir("FILESERVER", "Share").map(Path::to_path_buf))
        .unwrap();
    assert!(dir.ends_with("smb/fileserver/share"));
    assert!(dir.is_dir());
    let unc = r"\\FileServer\Share\a\b";
    assert_eq!(
        h.with(|s, _| s.resolve_unc(unc)).unwrap_err().code,
        ERROR_ACCESS_DENIED
    );
    h.new_smb_global_mapping(&good(ROOT, "")).unwrap();
    for spelling in [
        unc,
        r"\\?\UNC\fileserver\share\a\b",
        r"\\?\\\fileserver\share\a\b",
    ] {
        let (root, rest) = h.with(|s, _| s.resolve_unc(spelling)).unwrap();
        assert_eq!(root, dir);
        assert_eq!(rest, ["a", "b"]);
    }
    std::fs::write(dir.join("hello.txt"), "hi").unwrap();
    h.with(|s, _| s.set_mapping_status(ROOT, MappingStatus::Paused))
        .unwrap();
    assert!(h.with(|s, _| s.resolve_unc(unc)).is_err());
    h.with(|s, _| s.set_mapping_status(ROOT, MappingStatus::Ok))
        .unwrap();
    h.with(|s, _| s.set_server_reachable("fileserver", false))
        .unwrap();
    let e = h.with(|s, _| s.resolve_unc(unc)).unwrap_err();
    assert_eq!(e.code, ERROR_BAD_NETPATH);
    assert_eq!(
        HostError::from(e).message(),
        "The network path was not found."
    );
    assert_eq!(
        h.with(|s, _| s.resolve_unc(r"\\.\pipe\x"))
            .unwrap_err()
            .code,
        ERROR_BAD_NETPATH
    );
}

type Seed = SmbSeed;

#[test]
fn seed_from_toml_and_field_errors() {
    let dir = tempfile::tempdir().unwrap();
    let seed: Seed = toml::from_str(
        r#"
[[shares]]
server = "nas"
share = "vols"
username = 'CORP\alice'
password = "pw"
"#,
    )
    .unwrap();
    let state = seed.build(dir.path(), true).unwrap();
    assert_eq!(state.config(), SmbConfig::default());
    let all: Seed = toml::from_str("machine_identity = \"all_shares\"\n").unwrap();
    assert_eq!(all.machine_identity, MachineIdentityPolicy::AllShares);
    assert!(state.server("NAS").unwrap().has_account("alice"));
    assert!(dir.path().join("smb/nas/vols").is_dir());

    let err = toml::from_str::<Seed>("[[shares]]\nserver = \"a\"\nshare = \"b\"\nuser = \"x\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `user`"), "{err}");
    let err = toml::from_str::<Seed>("[[shares]]\nserver = \"a\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing field `share`"), "{err}");

    let base = default_smb_shares().remove(0);
    let bad =
        |s: SmbShareSeed| SmbState::from_seed(dir.path(), SmbConfig::default(), &[s]).unwrap_err();
    let e = bad(SmbShareSeed {
        password: None,
        ..base.clone()
    });
    assert_eq!(e.kind(), HostErrorKind::InvalidArgument);
    assert_eq!(
        e.message(),
        "shares[0].password: required when username is set"
    );
    let e = bad(SmbShareSeed {
        share: "../etc".into(),
        ..base.clone()
    });
    assert_eq!(e.message(), "shares[0].share: invalid name `../etc`");
    let e =
        SmbState::from_seed(dir.path(), SmbConfig::default(), &[base.clone(), base]).unwrap_err();
    assert_eq!(
        e.message(),
        r"shares[1].share: duplicate share \\fileserver\share"
    );
    assert!(!format!("{:?}", default_smb_shares()).contains(DEFAULT_SMB_PASSWORD));
    let state =
        SmbState::from_seed(dir.path(), SmbConfig::default(), &default_smb_shares()).unwrap();
    let text = format!("{state:?}");
    assert!(text.contains("smbuser") && !text.contains(DEFAULT_SMB_PASSWORD));
}

/// SMB on a whole node: the `local_path` link in the namespace.
mod on_a_node {
    use super::*;
    use crate::host::namespace::{Entry, LinkKind};
    use crate::host::tests::{host, ok_invariants};

    fn mapping(remote: &str, local: &str) -> NewSmbGlobalMappingRequest {
        NewSmbGlobalMappingRequest {
            remote_path: remote.into(),
            local_path: local.into(),
            username: r"DOMAIN\smbuser".into(),
            password: DEFAULT_SMB_PASSWORD.into(),
        }
    }

    #[test]
    fn smb_local_path_link_reaches_the_share_until_the_mapping_is_removed() {
        let t = host();
        let h = &t.host;
        let link = r"C:\var\lib\kubelet\pods\p1\volumes\smb";
        h.run(|node| node.mkdir(r"C:\var\lib\kubelet\pods\p1\volumes"))
            .unwrap();
        h.run(|node| node.new_smb_global_mapping(&mapping(r"\\FileServer\Share\vol1", link)))
            .unwrap();
        assert_eq!(
            h.entry(link).unwrap(),
            Some(Entry::Link(crate::host::namespace::Link {
                kind: LinkKind::Dir,
                target: r"\\FileServer\Share\vol1\".into(),
            }))
        );
        // The sub-directory is created through the UNC path, then a file is
        // written through the link: it lands in the share's directory.
        h.create_dir(r"\\fileserver\share\vol1").unwrap();
        h.write_file(&format!(r"{link}\hello.txt"), b"hello")
            .unwrap();
        let share_dir = h
            .lock()
            .smb
            .share_dir("fileserver", "share")
            .unwrap()
            .to_path_buf();
        assert_eq!(
            std::fs::read(share_dir.join("vol1").join("hello.txt")).unwrap(),
            b"hello"
        );
        assert_eq!(
            h.read_file(&format!(r"{link}\HELLO.TXT")).unwrap(),
            b"hello"
        );
        assert!(h.run(|node| node.is_symlink(link)).unwrap());
        ok_invariants(h);

        h.run(|node| node.smb.remove_smb_global_mapping(r"\\fileserver\share"))
            .unwrap();
        assert!(h.lock().smb.mappings().is_empty());
        let e = h.read_file(&format!(r"{link}\hello.txt")).unwrap_err();
        assert_eq!(e.message(), "Access is denied.");
        assert!(
            h.write_file(&format!(r"{link}\again.txt"), b"x").is_err(),
            "writing through a link of a removed mapping must fail"
        );
        // The link itself stays (RemoveSmbGlobalMapping leaves it) and is now
        // dangling; Rmdir removes only the link, never the share's content.
        assert!(h.run(|node| node.path_exists(link)).unwrap());
        assert!(!h.run(|node| node.is_symlink(link)).unwrap());
        h.run(|node| node.rmdir(link, false)).unwrap();
        assert!(share_dir.join("vol1").join("hello.txt").is_file());
        ok_invariants(h);
    }

    #[test]
    fn smb_link_errors_keep_the_mapping() {
        let t = host();
        let h = &t.host;
        let e = h
            .run(|node| {
                node.new_smb_global_mapping(&mapping(
                    r"\\fileserver\share",
                    r"C:\var\lib\kubelet-evil\x",
                ))
            })
            .unwrap_err();
        assert_eq!(
            e.message(),
            r"path: C:\var\lib\kubelet-evil\x is not within the working directories: [C:\var\lib\kubelet]"
        );
        assert_eq!(h.lock().smb.mappings().len(), 1);
        // Parent missing: the namespace's error with the RPC's prefix.
        let e = h
            .run(|node| {
                node.new_smb_global_mapping(&mapping(
                    "//fileserver/share/sub",
                    r"C:\var\lib\kubelet\missing\x",
                ))
            })
            .unwrap_err();
        assert_eq!(
            e.message(),
            "creating link C:\\var\\lib\\kubelet\\missing\\x to \\\\fileserver\\share\\sub failed \
             with error: error linking \\\\fileserver\\share\\sub\\ to C:\\var\\lib\\kubelet\\missing\\x. \
             err: The system cannot find the path specified."
        );
        let link = r"C:\var\lib\kubelet\l";
        h.run(|node| node.new_smb_global_mapping(&mapping(r"\\fileserver\share", link)))
            .unwrap();
        let e = h
            .run(|node| node.new_smb_global_mapping(&mapping(r"\\fileserver\share", link)))
            .unwrap_err();
        assert_eq!(
            e.message(),
            r"creating link C:\var\lib\kubelet\l to \\fileserver\share failed with error: error linking \\fileserver\share\ to C:\var\lib\kubelet\l. err: Cannot create a file when that file already exists."
        );
        // A paused mapping makes the share unreachable through the link.
        h.lock()
            .smb
            .set_mapping_status(r"\\fileserver\share", MappingStatus::Paused)
            .unwrap();
        assert!(!h.run(|node| node.is_symlink(link)).unwrap());
        ok_invariants(h);
    }
}

/// A share's space through its mapping: 100 GiB less its files unless
/// set; through a mapping that is not OK, the access error.
#[test]
fn a_share_reports_its_space_through_an_ok_mapping() {
    let f = fixture();
    f.host.new_smb_global_mapping(&good(ROOT, "")).unwrap();
    f.host.with(|s, _| {
        let dir = s.share_dir("fileserver", "share").unwrap().to_path_buf();
        std::fs::create_dir_all(dir.join("pv")).unwrap();
        std::fs::write(dir.join("pv").join("data"), [0u8; 1000]).unwrap();
        let space = s.share_space("FileServer", "Share").unwrap();
        assert_eq!(space.capacity, DEFAULT_SHARE_CAPACITY);
        assert_eq!(space.free, DEFAULT_SHARE_CAPACITY - 1000);

        let set = ShareSpace {
            capacity: 10 << 30,
            free: 1 << 30,
        };
        s.set_share_space("fileserver", "share", set).unwrap();
        assert_eq!(s.share_space("fileserver", "share"), Ok(set));
        assert!(s.set_share_space("fileserver", "nope", set).is_err());

        s.reboot();
        assert_eq!(
            s.share_space("fileserver", "share"),
            Err(err(ERROR_ACCESS_DENIED))
        );
    });
}
