//! The SMB group of the simulated host: remote shares and global mappings.
//!
//! The *remote side* is configuration: SMB servers
//! ([`SmbServer`]) with accounts and shares; each share's contents live in a
//! real directory `<sandbox>/smb/<server>/<share>/` (names case-folded). The
//! *node side* is the table of global mappings ([`GlobalMapping`]) with their
//! status and `RequirePrivacy` flag.
//!
//! What SMB needs from the rest of the host (path validation and a link in
//! the sandbox namespace) is a returned effect, the `UncLink` that
//! `SmbState::new_smb_global_mapping` hands the node, which makes the link
//! (`HostState::new_smb_global_mapping`,
//! in `link.rs`); what it offers the namespace is `SmbState::share_root`:
//! the real directory behind `\\server\share` while a mapping with status
//! OK grants access.
//!
//! Modelling choices where upstream leaves the outcome to Windows (error
//! texts are Windows' messages, in the words of the configured csi-proxy
//! release: `create_failed`, `mapping_not_found`):
//! - calls are serialised by the state's lock, so two concurrent
//!   `NewSmbGlobalMapping` for one root both succeed (upstream: one may fail);
//! - UNC access without an OK mapping is `Access is denied.` (5), after the
//!   server (53) and share (67) checks;
//! - a duplicate mapping is 1219 when the account differs, else 85 (also
//!   over a mapping whose status is not OK: Windows keeps the object, and
//!   `NewSmbGlobalMapping` creates only when the status is not OK);
//! - mappings are held per server and account, as Windows Server 2025
//!   holds SMB connections: a mapping of another share of a server already
//!   mapped under another account (or without one) is 1219
//!   (azurefile-csi-driver#2974, csi-driver-smb#1007), whatever the
//!   other mapping's status;
//! - a share reports a space ([`ShareSpace`], what `GetDiskFreeSpaceExW`
//!   gives through a mapping with status OK): set per share
//!   ([`SmbState::set_share_space`]), else `DEFAULT_SHARE_CAPACITY` less
//!   the bytes of its files;
//! - [`SmbState::reboot`] leaves every mapping `Disconnected`, as Windows
//!   Server 2025 nodes come back from a restart (azurefile-csi-driver#3416,
//!   csi-driver-smb#1219);
//! - `\\.\` device paths never resolve as UNC.
//!
//! # Files
//! - `mod.rs`: remote paths and credentials, the remote side, the node side
//!   ([`SmbState`]) and its operations.
//! - `link.rs`: where SMB meets the namespace (the `local_path` link).
//! - `seed.rs`: the `[smb]` seed section and the default node's share.
//! - `tests.rs`: the model's tests and the SMB scenarios on a whole node.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::error::{HostError, HostResult};
use super::release::{ProxyRelease, go_quote, powershell_error};

mod link;
mod seed;
#[cfg(test)]
mod tests;

pub use seed::{
    DEFAULT_SMB_PASSWORD, DEFAULT_SMB_SERVER, DEFAULT_SMB_SHARE, DEFAULT_SMB_USER, SmbSeed,
    SmbShareSeed, default_smb_shares,
};

// ---------------------------------------------------------------------------
// Remote path and credential helpers
// ---------------------------------------------------------------------------

/// A parsed `remote_path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotePath {
    /// The request path with every `/` replaced by `\`, original case.
    pub normalized: String,
    /// The mapping root: lowercase `\\host\share`.
    pub root: String,
    /// First non-empty component (host), original case.
    pub host: String,
    /// Second non-empty component (share), original case.
    pub share: String,
}

impl RemotePath {
    /// The target of a `local_path` link: the normalized path with a
    /// trailing `\`.
    pub(crate) fn link_target(&self) -> String {
        if self.normalized.ends_with('\\') {
            self.normalized.clone()
        } else {
            format!("{}\\", self.normalized)
        }
    }
}

/// Validates `remote_path` and extracts the mapping root:
/// `/` becomes `\`; empty ⇒ `remote path is empty`; fewer than two
/// non-empty components ⇒ `remote path (<normalized>) is invalid`; the root
/// is the lowercased `\\` + first + `\` + second component. Nothing else is
/// checked.
pub(crate) fn parse_remote_path(remote_path: &str) -> HostResult<RemotePath> {
    let normalized = remote_path.replace('/', "\\");
    if normalized.is_empty() {
        return Err(HostError::unknown("remote path is empty"));
    }
    let mut parts = normalized.split('\\').filter(|p| !p.is_empty());
    match (parts.next(), parts.next()) {
        (Some(host), Some(share)) => Ok(RemotePath {
            root: format!("\\\\{host}\\{share}").to_lowercase(),
            host: host.to_owned(),
            share: share.to_owned(),
            normalized,
        }),
        _ => Err(HostError::unknown(format!(
            "remote path ({normalized}) is invalid"
        ))),
    }
}

/// The prefix of a failed `local_path` link (the cause follows): the RPC's
/// words around those of the link step, which names the target with its
/// trailing `\`.
pub(crate) fn link_failed(local_path: &str, normalized: &str, target: &str) -> String {
    format!(
        "creating link {local_path} to {normalized} failed with error: \
         error linking {target} to {local_path}. err: "
    )
}

/// The credential string the current upstream sends to WMI:
/// `escape(username) + ":" + password`, where `escape` doubles `\` and turns
/// `:` into `\:`. `None` when `username` is empty (no credential; the
/// password is ignored).
pub(crate) fn encode_credential(username: &str, password: &str) -> Option<String> {
    if username.is_empty() {
        return None;
    }
    Some(crate::host::credential::join(username, password))
}

/// Splits an encoded credential back into user and password, as the CIM
/// layer does: the first unescaped `:` separates them.
pub(crate) fn decode_credential(encoded: &str) -> (String, String) {
    let mut user = String::new();
    let mut chars = encoded.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, next)) => user.push(next),
                None => user.push('\\'),
            },
            ':' => return (user, encoded[i + 1..].to_owned()),
            c => user.push(c),
        }
    }
    (user, String::new())
}

/// The account part of a user name: `DOMAIN\user` and `user@domain` both
/// give `user` (the domain is not checked for simulated accounts), folded
/// to lowercase.
pub(crate) fn account_name(user: &str) -> String {
    let after_domain = user.rsplit('\\').next().unwrap_or(user);
    let before_at = after_domain.split('@').next().unwrap_or(after_domain);
    before_at.to_lowercase()
}

// ---------------------------------------------------------------------------
// Win32 errors of the simulated SMB client
// ---------------------------------------------------------------------------

/// `ERROR_ACCESS_DENIED`.
pub(crate) const ERROR_ACCESS_DENIED: u32 = 5;
/// `ERROR_BAD_NETPATH`.
pub(crate) const ERROR_BAD_NETPATH: u32 = 53;
/// `ERROR_BAD_NET_NAME`.
pub(crate) const ERROR_BAD_NET_NAME: u32 = 67;
/// `ERROR_ALREADY_ASSIGNED`.
pub(crate) const ERROR_ALREADY_ASSIGNED: u32 = 85;
/// `ERROR_SESSION_CREDENTIAL_CONFLICT`.
pub const ERROR_SESSION_CREDENTIAL_CONFLICT: u32 = 1219;
/// `ERROR_LOGON_FAILURE`.
pub(crate) const ERROR_LOGON_FAILURE: u32 = 1326;

/// A Windows error from the simulated SMB client (code and system text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmbError {
    /// Win32 error code.
    pub code: u32,
}

impl SmbError {
    /// The Windows message text of the code.
    pub fn message(self) -> &'static str {
        match self.code {
            ERROR_ACCESS_DENIED => "Access is denied.",
            ERROR_BAD_NETPATH => "The network path was not found.",
            ERROR_BAD_NET_NAME => "The network name cannot be found.",
            ERROR_ALREADY_ASSIGNED => "The local device name is already in use.",
            ERROR_SESSION_CREDENTIAL_CONFLICT => {
                "Multiple connections to a server or shared resource by the same user, using \
                 more than one user name, are not allowed. Disconnect all previous connections \
                 to the server or shared resource and try again."
            }
            ERROR_LOGON_FAILURE => "The user name or password is incorrect.",
            _ => "The request is not supported.",
        }
    }
}

impl fmt::Display for SmbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl From<SmbError> for HostError {
    fn from(e: SmbError) -> Self {
        HostError::unknown(e.message())
    }
}

/// `NewSmbGlobalMapping`'s text when Windows refused the mapping with `e`:
/// v1.3's WMI method raised an exception whose description is Windows'
/// message (go-ole: `Exception occurred. (<description>)`; the method never
/// returned, so `result: -1`); v1.1's cmdlet printed its CIM error record.
pub(crate) fn create_failed(release: ProxyRelease, e: SmbError) -> String {
    match release {
        ProxyRelease::V1_3 => format!(
            "NewSmbGlobalMapping failed. result: -1, err: Exception occurred. ({} )",
            e.message()
        ),
        _ => {
            let record = powershell_error(
                "New-SmbGlobalMapping",
                e.message(),
                "New-SmbGlobalMapping -RemotePath $Env:smbremotepath -Credential $Credential -RequirePrivacy $true",
                "NotSpecified: (MSFT_SmbGlobalMapping:ROOT/Microsoft/...mbGlobalMapping) [New-SmbGlobalMapping], CimException",
                &format!("Windows System Error {}", e.code),
            );
            format!(
                "NewSmbGlobalMapping failed. output: {}, err: exit status 1",
                go_quote(&record)
            )
        }
    }
}

/// `RemoveSmbGlobalMapping`'s text when no mapping of `root` exists: v1.3's
/// WMI query found no instance (the WMI library's `Not Found`); v1.1's
/// cmdlet found no object with that remote path.
pub(crate) fn mapping_not_found(release: ProxyRelease, root: &str) -> String {
    match release {
        ProxyRelease::V1_3 => format!("error remove smb mapping '{root}'. err: Not Found"),
        _ => {
            let record = powershell_error(
                "Remove-SmbGlobalMapping",
                &format!(
                    "No MSFT_SmbGlobalMapping objects found with property 'RemotePath' equal to \
                     '{root}'.  Verify the value of the property and retry."
                ),
                "Remove-SmbGlobalMapping -RemotePath $Env:smbremotepath -Force",
                &format!(
                    "ObjectNotFound: ({root}:String) [Remove-SmbGlobalMapping], CimJobException"
                ),
                "CmdletizationQuery_NotFound_RemotePath",
            );
            format!(
                "UnmountSmbShare failed. output: {}, err: exit status 1",
                go_quote(&record)
            )
        }
    }
}

fn err(code: u32) -> SmbError {
    SmbError { code }
}

// ---------------------------------------------------------------------------
// Remote side
// ---------------------------------------------------------------------------

/// Who may use a share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareAccess {
    /// Everyone, including the node's machine identity (subject to
    /// [`MachineIdentityPolicy`]).
    Everyone,
    /// These accounts (case-folded account names).
    Users(BTreeSet<String>),
}

/// A share on a simulated server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmbShare {
    /// Share name as configured.
    pub name: String,
    /// Access list.
    pub access: ShareAccess,
    /// Real directory holding the share's contents.
    pub content_dir: PathBuf,
    /// The space the share reports (`GetDiskFreeSpaceExW` on a path of
    /// it): [`SmbState::set_share_space`]; `None` is `DEFAULT_SHARE_CAPACITY`
    /// less the bytes of the files in `content_dir`.
    pub space: Option<ShareSpace>,
}

/// The space a share reports, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareSpace {
    /// The share's size (`TotalNumberOfBytes`).
    pub capacity: u64,
    /// Bytes free (`TotalNumberOfFreeBytes`, and free to the caller).
    pub free: u64,
}

/// The size of a share whose space was not set: 100 GiB.
pub const DEFAULT_SHARE_CAPACITY: u64 = 100 << 30;

/// Bytes of the files under `dir` (links not followed).
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() && !listed_as_link(&e) => bytes_under(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// Whether a directory listed in `read_dir` is a link: under Wine the
/// namespace's links to directories are Unix symlinks, which Wine lists as
/// directories marked `FILE_ATTRIBUTE_REPARSE_POINT` (not as links).
fn listed_as_link(e: &std::fs::DirEntry) -> bool {
    #[cfg(windows)]
    {
        use std::os::windows::fs::MetadataExt;
        e.metadata().is_ok_and(|m| m.file_attributes() & 0x400 != 0)
    }
    #[cfg(not(windows))]
    {
        let _ = e;
        false
    }
}

impl SmbShare {
    /// The space the share reports now.
    pub fn space(&self) -> ShareSpace {
        self.space.unwrap_or_else(|| ShareSpace {
            capacity: DEFAULT_SHARE_CAPACITY,
            free: DEFAULT_SHARE_CAPACITY.saturating_sub(bytes_under(&self.content_dir)),
        })
    }
}

/// A simulated SMB server.
#[derive(Clone, PartialEq, Eq)]
pub struct SmbServer {
    /// Host name or IP, matched case-insensitively.
    pub name: String,
    /// `false` ⇒ `The network path was not found.` (53).
    pub reachable: bool,
    /// `false` ⇒ mappings requiring privacy are refused (access denied).
    pub supports_encryption: bool,
    accounts: BTreeMap<String, String>,
    shares: BTreeMap<String, SmbShare>,
}

impl fmt::Debug for SmbServer {
    /// Lists account names, never passwords.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmbServer")
            .field("name", &self.name)
            .field("reachable", &self.reachable)
            .field("supports_encryption", &self.supports_encryption)
            .field("accounts", &self.accounts.keys().collect::<Vec<_>>())
            .field("shares", &self.shares)
            .finish()
    }
}

impl SmbServer {
    /// Whether an account exists (account part compared case-insensitively).
    pub fn has_account(&self, user: &str) -> bool {
        self.accounts.contains_key(&account_name(user))
    }

    /// The share with this name (case-insensitive).
    pub(crate) fn share(&self, name: &str) -> Option<&SmbShare> {
        self.shares.get(&name.to_lowercase())
    }
}

/// What an empty `username` (the proxy's own identity) may access.
/// In seed files: `"everyone_shares_only"`, `"all_shares"`, `"denied"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MachineIdentityPolicy {
    /// Only shares open to Everyone (default).
    #[default]
    EveryoneSharesOnly,
    /// Every share of a reachable server.
    AllShares,
    /// Nothing: every mapping without credentials is refused.
    Denied,
}

/// Node-wide SMB settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmbConfig {
    /// `--require-privacy` (default true): `RequirePrivacy` of new mappings.
    pub require_privacy: bool,
    /// What mappings without credentials may access.
    pub machine_identity: MachineIdentityPolicy,
    /// Whose failure texts the group speaks.
    pub release: ProxyRelease,
}

impl Default for SmbConfig {
    fn default() -> Self {
        Self {
            require_privacy: true,
            machine_identity: MachineIdentityPolicy::default(),
            release: ProxyRelease::default(),
        }
    }
}

// ---------------------------------------------------------------------------
// Node side
// ---------------------------------------------------------------------------

/// `MSFT_SmbGlobalMapping.Status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MappingStatus {
    /// 0: usable.
    Ok = 0,
    /// 1.
    Paused = 1,
    /// 2.
    Disconnected = 2,
    /// 3.
    NetworkError = 3,
    /// 4.
    Connecting = 4,
    /// 5.
    Reconnecting = 5,
    /// 6.
    Unavailable = 6,
}

impl MappingStatus {
    /// The WMI number.
    pub fn code(self) -> u32 {
        self as u32
    }
}

/// A global mapping, as `Get-SmbGlobalMapping` would show it.
#[derive(Clone, PartialEq, Eq)]
pub struct GlobalMapping {
    /// The lowercased root `\\server\share`.
    pub remote_path: String,
    /// Credential (user as given, password); `None` = machine identity.
    pub credential: Option<(String, String)>,
    /// `RequirePrivacy` of the mapping.
    pub require_privacy: bool,
    /// Status.
    pub status: MappingStatus,
}

impl fmt::Debug for GlobalMapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlobalMapping")
            .field("remote_path", &self.remote_path)
            .field("user", &self.credential.as_ref().map(|c| &c.0))
            .field("require_privacy", &self.require_privacy)
            .field("status", &self.status)
            .finish()
    }
}

/// Internal `NewSmbGlobalMapping` request (all versions convert to it).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct NewSmbGlobalMappingRequest {
    /// Share path, optionally with a sub-path.
    pub remote_path: String,
    /// Optional directory link to create, pointing at `remote_path`.
    pub local_path: String,
    /// Account (may be `DOMAIN\user`); empty = no credential.
    pub username: String,
    /// Password of `username`.
    pub password: String,
}

impl fmt::Debug for NewSmbGlobalMappingRequest {
    /// Never prints the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewSmbGlobalMappingRequest")
            .field("remote_path", &self.remote_path)
            .field("local_path", &self.local_path)
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// The link a `NewSmbGlobalMapping` with a `local_path` asks the node to
/// make once the mapping exists (the model's returned effect): a directory
/// link at `local_path` to the UNC path `target`, after the filesystem
/// group's working-dir validation of `local_path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UncLink {
    /// Where the link goes (as given).
    pub local_path: String,
    /// The UNC target (`\\server\share\sub\`, trailing `\`).
    pub target: String,
    /// The remote path as reported in errors.
    remote: String,
}

impl UncLink {
    /// The RPC's error when creating the link failed with `e` (a Windows
    /// text such as `Cannot create a file when that file already exists.`).
    pub(crate) fn failed(&self, e: HostError) -> HostError {
        e.context(link_failed(&self.local_path, &self.remote, &self.target))
    }
}

/// Splits a UNC path into server, share and the remaining components.
/// Accepts `\\server\share\rest`, `\\?\UNC\server\share\rest` and upstream's
/// `\\?\\\server\share\rest` spelling. `/` is treated as `\`.
pub(crate) fn split_unc(path: &str) -> Option<(String, String, Vec<String>)> {
    let p = path.replace('/', "\\");
    let rest = if let Some(r) = p.strip_prefix("\\\\?\\UNC\\") {
        r
    } else if let Some(r) = p.strip_prefix("\\\\?\\\\\\") {
        r
    } else if p.starts_with("\\\\?\\") || p.starts_with("\\\\.\\") {
        return None;
    } else {
        p.strip_prefix("\\\\")?
    };
    let mut parts = rest.split('\\');
    let server = parts.next().filter(|s| !s.is_empty())?;
    let share = parts.next().filter(|s| !s.is_empty())?;
    let tail = parts.filter(|c| !c.is_empty()).map(str::to_owned).collect();
    Some((server.to_owned(), share.to_owned(), tail))
}

fn check_component(field: &str, value: &str) -> HostResult<()> {
    let bad = value.is_empty()
        || value == "."
        || value == ".."
        || value.chars().any(|c| {
            matches!(
                c,
                '\\' | '/' | '\0' | ':' | '*' | '?' | '"' | '<' | '>' | '|'
            )
        });
    if bad {
        Err(HostError::invalid_argument(format!(
            "{field}: invalid name `{value}`"
        )))
    } else {
        Ok(())
    }
}

/// SMB state: remote servers and node mappings.
#[derive(Debug, Clone)]
pub struct SmbState {
    sandbox: PathBuf,
    config: SmbConfig,
    servers: BTreeMap<String, SmbServer>,
    mappings: BTreeMap<String, GlobalMapping>,
    /// Files held open through each mapping, by root (test control).
    open_files: BTreeMap<String, usize>,
    /// Mappings removed while files were open through them.
    closed: Vec<ClosedUnderUse>,
}

/// A global mapping removed while workloads held files open through it
/// (`Remove-SmbGlobalMapping -Force` closes them): what the node must
/// never do to a mapping that serves them
/// ([`SmbState::closed_under_use`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedUnderUse {
    /// The mapping's root.
    pub root: String,
    /// Its status when it was removed.
    pub status: MappingStatus,
    /// The files it closed.
    pub files: usize,
}

impl SmbState {
    /// No servers, no mappings; share contents go under
    /// `<sandbox>/smb/`.
    pub(crate) fn new(sandbox: impl Into<PathBuf>, config: SmbConfig) -> Self {
        Self {
            sandbox: sandbox.into(),
            config,
            servers: BTreeMap::new(),
            mappings: BTreeMap::new(),
            open_files: BTreeMap::new(),
            closed: Vec::new(),
        }
    }

    /// A workload opens a file through the mapping of `root` (test
    /// control): a pod on a staged volume of the share.
    pub fn open_file(&mut self, root: &str) {
        *self.open_files.entry(root.to_lowercase()).or_default() += 1;
    }

    /// A workload closes a file it opened through the mapping of `root`
    /// (test control; none open: nothing).
    pub fn close_file(&mut self, root: &str) {
        if let Some(open) = self.open_files.get_mut(&root.to_lowercase()) {
            *open = open.saturating_sub(1);
        }
    }

    /// The workloads are gone (test control: the node restarted).
    pub fn close_all_files(&mut self) {
        self.open_files.clear();
    }

    /// Every mapping removed while files were open through it, in order.
    pub fn closed_under_use(&self) -> &[ClosedUnderUse] {
        &self.closed
    }

    /// Node settings.
    pub fn config(&self) -> SmbConfig {
        self.config
    }

    /// Changes node settings (e.g. `--require-privacy=false`).
    pub fn set_config(&mut self, config: SmbConfig) {
        self.config = config;
    }

    fn server_entry(&mut self, server: &str) -> &mut SmbServer {
        self.servers
            .entry(server.to_lowercase())
            .or_insert_with(|| SmbServer {
                name: server.to_owned(),
                reachable: true,
                supports_encryption: true,
                accounts: BTreeMap::new(),
                shares: BTreeMap::new(),
            })
    }

    /// Adds (or updates the password of) an account on a server, creating
    /// the server if needed. The account part of `user` is used.
    pub fn add_account(&mut self, server: &str, user: &str, password: &str) -> HostResult<()> {
        check_component("server", server)?;
        self.server_entry(server)
            .accounts
            .insert(account_name(user), password.to_owned());
        Ok(())
    }

    /// Changes an existing account's password (test control: simulates a
    /// password change on the server).
    pub fn set_account_password(
        &mut self,
        server: &str,
        user: &str,
        password: &str,
    ) -> HostResult<()> {
        let account = self
            .servers
            .get_mut(&server.to_lowercase())
            .and_then(|s| s.accounts.get_mut(&account_name(user)))
            .ok_or_else(|| HostError::unknown(format!("no account {user} on server {server}")))?;
        *account = password.to_owned();
        Ok(())
    }

    /// Adds a share (creating the server if needed) and its content
    /// directory `<sandbox>/smb/<server>/<share>` (lowercase); returns that
    /// directory. Server and share names must be plain path components.
    pub fn add_share(
        &mut self,
        server: &str,
        share: &str,
        access: ShareAccess,
    ) -> HostResult<PathBuf> {
        check_component("server", server)?;
        check_component("share", share)?;
        let dir = self
            .sandbox
            .join("smb")
            .join(server.to_lowercase())
            .join(share.to_lowercase());
        std::fs::create_dir_all(&dir).map_err(|e| {
            HostError::unknown(format!("creating share directory {}: {e}", dir.display()))
        })?;
        let access = match access {
            ShareAccess::Users(users) => {
                ShareAccess::Users(users.iter().map(|u| account_name(u)).collect())
            }
            everyone => everyone,
        };
        self.server_entry(server).shares.insert(
            share.to_lowercase(),
            SmbShare {
                name: share.to_owned(),
                access,
                content_dir: dir.clone(),
                space: None,
            },
        );
        Ok(dir)
    }

    /// Sets the space a share reports (test control): a server's quota or
    /// its disk filling up.
    pub fn set_share_space(
        &mut self,
        server: &str,
        share: &str,
        space: ShareSpace,
    ) -> HostResult<()> {
        self.servers
            .get_mut(&server.to_lowercase())
            .and_then(|s| s.shares.get_mut(&share.to_lowercase()))
            .map(|s| s.space = Some(space))
            .ok_or_else(|| HostError::unknown(format!("no SMB share \\\\{server}\\{share}")))
    }

    /// `GetDiskFreeSpaceExW` on a path of the share: its space, when its
    /// mapping grants access now (else the Windows error, as for any
    /// access through the mapping).
    pub fn share_space(&self, host: &str, share: &str) -> Result<ShareSpace, SmbError> {
        self.share_root(host, share)?;
        let share = self.server(host).and_then(|s| s.share(share));
        Ok(share.ok_or(err(ERROR_BAD_NET_NAME))?.space())
    }

    /// Makes a server reachable or not (test control).
    pub fn set_server_reachable(&mut self, server: &str, reachable: bool) -> HostResult<()> {
        self.servers
            .get_mut(&server.to_lowercase())
            .map(|s| s.reachable = reachable)
            .ok_or_else(|| HostError::unknown(format!("no SMB server {server}")))
    }

    /// Sets whether a server supports SMB encryption (test control).
    pub fn set_server_encryption(&mut self, server: &str, supported: bool) -> HostResult<()> {
        self.servers
            .get_mut(&server.to_lowercase())
            .map(|s| s.supports_encryption = supported)
            .ok_or_else(|| HostError::unknown(format!("no SMB server {server}")))
    }

    /// The server with this name (case-insensitive).
    pub(crate) fn server(&self, name: &str) -> Option<&SmbServer> {
        self.servers.get(&name.to_lowercase())
    }

    /// The content directory of a share regardless of mappings (test
    /// control: read/write share files as the server would).
    pub fn share_dir(&self, server: &str, share: &str) -> Option<&Path> {
        self.server(server)?
            .share(share)
            .map(|s| s.content_dir.as_path())
    }

    /// All global mappings, ordered by remote path.
    pub fn mappings(&self) -> Vec<&GlobalMapping> {
        self.mappings.values().collect()
    }

    /// The mapping for a root (any case), if any.
    pub fn mapping(&self, root: &str) -> Option<&GlobalMapping> {
        self.mappings.get(&root.to_lowercase())
    }

    /// Sets a mapping's status (test control).
    pub fn set_mapping_status(&mut self, root: &str, status: MappingStatus) -> HostResult<()> {
        self.mappings
            .get_mut(&root.to_lowercase())
            .map(|m| m.status = status)
            .ok_or_else(|| HostError::unknown(format!("no SMB global mapping {root}")))
    }

    /// Every mapping with `status` (test control): what a node restart
    /// leaves is [`MappingStatus::Disconnected`] (azurefile-csi-driver#3416).
    pub(crate) fn set_all_mapping_status(&mut self, status: MappingStatus) {
        for mapping in self.mappings.values_mut() {
            mapping.status = status;
        }
    }

    /// The fault of a node restart (test control): the mappings survive,
    /// each `Disconnected`; links made to them stay, and reach nothing
    /// until the mapping is made again.
    pub fn reboot(&mut self) {
        self.close_all_files();
        self.set_all_mapping_status(MappingStatus::Disconnected);
    }

    /// Would the server let this credential use the share now?
    fn check_access(
        &self,
        host: &str,
        share: &str,
        credential: Option<&(String, String)>,
        require_privacy: bool,
    ) -> Result<&SmbShare, SmbError> {
        let server = self
            .server(host)
            .filter(|s| s.reachable)
            .ok_or(err(ERROR_BAD_NETPATH))?;
        let share = server.share(share).ok_or(err(ERROR_BAD_NET_NAME))?;
        match credential {
            Some((user, password)) => {
                let account = account_name(user);
                if server.accounts.get(&account) != Some(password) {
                    return Err(err(ERROR_LOGON_FAILURE));
                }
                let allowed = match &share.access {
                    ShareAccess::Everyone => true,
                    ShareAccess::Users(users) => users.contains(&account),
                };
                if !allowed {
                    return Err(err(ERROR_ACCESS_DENIED));
                }
            }
            None => {
                let allowed = match self.config.machine_identity {
                    MachineIdentityPolicy::AllShares => true,
                    MachineIdentityPolicy::EveryoneSharesOnly => {
                        share.access == ShareAccess::Everyone
                    }
                    MachineIdentityPolicy::Denied => false,
                };
                if !allowed {
                    return Err(err(ERROR_ACCESS_DENIED));
                }
            }
        }
        if require_privacy && !server.supports_encryption {
            return Err(err(ERROR_ACCESS_DENIED));
        }
        Ok(share)
    }

    /// `IsSmbMapped(root)`: a mapping exists and its status is OK.
    pub fn is_mapped(&self, root: &str) -> bool {
        self.mapping(root)
            .is_some_and(|m| m.status == MappingStatus::Ok)
    }

    /// Access to a share root through its mapping: the content directory,
    /// or why it is not accessible.
    pub(crate) fn share_root(&self, host: &str, share: &str) -> Result<&Path, SmbError> {
        let root = format!("\\\\{host}\\{share}");
        let mapping = self.mapping(&root);
        // Reachability and share existence are reported before the mapping.
        self.server(host)
            .filter(|s| s.reachable)
            .ok_or(err(ERROR_BAD_NETPATH))?
            .share(share)
            .ok_or(err(ERROR_BAD_NET_NAME))?;
        let mapping = mapping
            .filter(|m| m.status == MappingStatus::Ok)
            .ok_or(err(ERROR_ACCESS_DENIED))?;
        self.check_access(
            host,
            share,
            mapping.credential.as_ref(),
            mapping.require_privacy,
        )
        .map(|s| s.content_dir.as_path())
    }

    /// `PathValid(root)` (GetFileAttributes on the share root): the mapping
    /// is OK, the server reachable and the stored credential still valid.
    pub fn path_valid(&self, root: &str) -> bool {
        split_unc(root).is_some_and(|(host, share, _)| self.share_root(&host, &share).is_ok())
    }

    /// Resolves a UNC path (any spelling `split_unc` accepts) for the
    /// namespace: the share's content directory and the components below it
    /// (not normalised; the caller applies its own rules and must never
    /// climb above the returned directory). Fails with the Windows error
    /// when the share is not accessible.
    pub fn resolve_unc(&self, path: &str) -> Result<(PathBuf, Vec<String>), SmbError> {
        let (host, share, rest) = split_unc(path).ok_or(err(ERROR_BAD_NETPATH))?;
        let dir = self.share_root(&host, &share)?;
        Ok((dir.to_path_buf(), rest))
    }

    /// `MSFT_SmbGlobalMapping.Create`.
    pub(crate) fn create_mapping(
        &mut self,
        remote: &RemotePath,
        username: &str,
        password: &str,
    ) -> Result<(), SmbError> {
        let credential =
            encode_credential(username, password).map(|encoded| decode_credential(&encoded));
        let same_account = |m: &GlobalMapping| match (&m.credential, &credential) {
            (Some(a), Some(b)) => account_name(&a.0) == account_name(&b.0),
            (None, None) => true,
            _ => false,
        };
        if let Some(existing) = self.mappings.get(&remote.root) {
            return Err(err(if same_account(existing) {
                ERROR_ALREADY_ASSIGNED
            } else {
                ERROR_SESSION_CREDENTIAL_CONFLICT
            }));
        }
        let server = remote.host.to_lowercase();
        let other_account_on_server = self.mappings.values().any(|m| {
            split_unc(&m.remote_path).is_some_and(|(host, _, _)| host == server) && !same_account(m)
        });
        if other_account_on_server {
            return Err(err(ERROR_SESSION_CREDENTIAL_CONFLICT));
        }
        let privacy = self.config.require_privacy;
        self.check_access(&remote.host, &remote.share, credential.as_ref(), privacy)?;
        self.mappings.insert(
            remote.root.clone(),
            GlobalMapping {
                remote_path: remote.root.clone(),
                credential,
                require_privacy: privacy,
                status: MappingStatus::Ok,
            },
        );
        Ok(())
    }

    /// `RemoveSmbGlobalMapping` host primitive: forced removal of the
    /// mapping of `root`; not found is an error.
    fn remove_mapping(&mut self, root: &str) -> HostResult<()> {
        match self.mappings.remove(root) {
            Some(removed) => {
                let files = self.open_files.remove(root).unwrap_or(0);
                if files > 0 {
                    self.closed.push(ClosedUnderUse {
                        root: root.to_string(),
                        status: removed.status,
                        files,
                    });
                }
                Ok(())
            }
            None => Err(HostError::unknown(mapping_not_found(
                self.config.release,
                root,
            ))),
        }
    }

    /// `NewSmbGlobalMapping`: reuse a valid OK mapping of the
    /// root (ignoring the new credentials), replace an invalid one, create a
    /// missing one; then returns the link to make at `local_path`, if any
    /// (the node validates and makes it:
    /// [`HostState::new_smb_global_mapping`](super::HostState::new_smb_global_mapping)).
    /// A failure after the mapping step does not roll it back.
    pub(crate) fn new_smb_global_mapping(
        &mut self,
        req: &NewSmbGlobalMappingRequest,
    ) -> HostResult<Option<UncLink>> {
        let remote = parse_remote_path(&req.remote_path)?;
        tracing::debug!(remote_path = %remote.normalized, root = %remote.root, "NewSmbGlobalMapping");
        let mut mapped = self.is_mapped(&remote.root);
        if mapped && !self.path_valid(&remote.root) {
            tracing::debug!(root = %remote.root, "mapped root not valid; remapping");
            self.remove_mapping(&remote.root)?;
            mapped = false;
        }
        if !mapped {
            self.create_mapping(&remote, &req.username, &req.password)
                .map_err(|e| HostError::unknown(create_failed(self.config.release, e)))?;
        }
        if req.local_path.is_empty() {
            return Ok(None);
        }
        Ok(Some(UncLink {
            local_path: req.local_path.clone(),
            target: remote.link_target(),
            remote: remote.normalized,
        }))
    }

    /// Mappings that refer to no configured share (see
    /// [`Host::check_invariants`](crate::host::Host::check_invariants)).
    pub(crate) fn violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        for m in self.mappings() {
            let configured = split_unc(&m.remote_path).is_some_and(|(server, share, _)| {
                self.server(&server)
                    .is_some_and(|s| s.share(&share).is_some())
            });
            if !configured {
                out.push(format!(
                    "SMB global mapping {} refers to no configured share",
                    m.remote_path
                ));
            }
        }
        out
    }

    /// `RemoveSmbGlobalMapping`: removes the root mapping of
    /// any path on the share; not idempotent; links are left alone.
    pub(crate) fn remove_smb_global_mapping(&mut self, remote_path: &str) -> HostResult<()> {
        let remote = parse_remote_path(remote_path)?;
        tracing::debug!(root = %remote.root, "RemoveSmbGlobalMapping");
        self.remove_mapping(&remote.root)
    }
}
