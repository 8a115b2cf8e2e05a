//! One version-independent adapter per API group: an enum over the trait
//! objects of the versions the node layer speaks, each operation mapped to
//! that version's RPC names and fields.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::removal::Recorded;
use crate::{Error, filesystem};

/// Dispatches on an adapter enum; arms listed together share one body,
/// with `$m` naming the version's module. Operations call it through
/// their group's `on_<group>!` (from `versions!`), which reads
/// `newest` as that group's newest versions.
macro_rules! on {
    ($value:expr, $Enum:ident :: $group:ident; $( [$($Var:ident : $ver:ident),+ $(,)?] |$api:ident, $m:ident| $body:block )+) => {
        match $value {
            $($(
                $Enum::$Var($api) => {
                    #[allow(unused_imports)]
                    use crate::$group::$ver as $m;
                    $body
                }
            )+)+
        }
    };
}

/// Per group: the adapter enum, one variant per version the node layer
/// speaks (newest first), dialling one, wrapping a mock host at one, and
/// the group's dispatch macro `$on`.
///
/// The versions come in two lists. `newest`: the newest version and the
/// ones whose messages are the same as its, for every operation the node
/// layer makes. `older`: the rest. An operation writes its body for the
/// newest versions once, as `newest |api, m| { .. }` (or `newest +
/// [V: v, ..]` when older versions share it), and one arm per older shape.
///
/// So a new version with the newest's messages is one entry in `newest`,
/// and nothing else changes. A new version that changes a message moves
/// the versions before it to `older`; the compiler then names each
/// operation (its match is exhaustive) that must give them their body.
///
/// `$d` is `$`, for the metavariables of the macro this one defines.
macro_rules! versions {
    (
        $d:tt
        $(#[$doc:meta])* $Group:ident, $group:ident, $Api:ident, $on:ident,
        newest: [$($NVar:ident $nver:ident),+],
        older: [$($OVar:ident $over:ident),*] $(,)?
    ) => {
        /// Dispatches on the group: `newest` stands for its newest versions.
        macro_rules! $on {
            ($d value:expr; newest $d(+ [$d($d Var:ident : $d ver:ident),+])? |$d api:ident, $d m:ident| $d body:block $d($d rest:tt)*) => {
                on!($d value, $Group::$group;
                    [$($NVar: $nver),+ $d($d(, $d Var: $d ver)+)?] |$d api, $d m| $d body
                    $d($d rest)*
                )
            };
        }

        versions!(@group $(#[$doc])* $Group, $group, $Api, [$($NVar $nver),+ $(, $OVar $over)*]);
    };
    (@group $(#[$doc:meta])* $Group:ident, $group:ident, $Api:ident, [$($Var:ident $ver:ident),+]) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub(crate) enum $Group {
            $($Var(Arc<dyn crate::$group::$ver::$Api>),)+
        }

        impl $Group {
            pub const GROUP: &'static str = stringify!($group);
            pub const VERSIONS: &'static [&'static str] = &[$(stringify!($ver)),+];

            pub async fn dial(
                version: &str,
                address: &str,
                options: &crate::ConnectOptions,
            ) -> Result<Self, Error> {
                match version {
                    $(stringify!($ver) => {
                        let client = crate::$group::$ver::Client::connect_with(address, options).await?;
                        Ok($Group::$Var(Arc::new(client)))
                    })+
                    _ => Err(Error::UnsupportedVersion {
                        group: Self::GROUP,
                        version: version.to_string(),
                    }),
                }
            }

            #[cfg(feature = "mock")]
            pub fn mock(version: &str, host: &crate::mock::MockHost) -> Result<Self, Error> {
                match version {
                    $(stringify!($ver) => Ok($Group::$Var(Arc::new(host.clone()))),)+
                    _ => Err(Error::UnsupportedVersion {
                        group: Self::GROUP,
                        version: version.to_string(),
                    }),
                }
            }

            pub fn version(&self) -> &'static str {
                match self {
                    $($Group::$Var(_) => stringify!($ver),)+
                }
            }
        }
    };
}

versions!($
    /// The disk group at the negotiated version.
    DiskGroup, disk, DiskApi, on_disk,
    newest: [V1 v1, V1beta3 v1beta3],
    older: [V1beta2 v1beta2, V1beta1 v1beta1]);
versions!($
    /// The volume group at the negotiated version. v1 and v1beta3 send
    /// what v2alpha1 sends but have no `GetClosestVolumeIDFromTargetPath`,
    /// so they are older versions that share most of its bodies.
    VolumeGroup, volume, VolumeApi, on_volume,
    newest: [V2alpha1 v2alpha1],
    older: [V1 v1, V1beta3 v1beta3, V1beta2 v1beta2, V1beta1 v1beta1]);
versions!($
    /// The filesystem group at the negotiated version.
    FilesystemGroup, filesystem, FilesystemApi, on_filesystem,
    newest: [V2alpha1 v2alpha1, V1 v1, V1beta2 v1beta2],
    older: [V1beta1 v1beta1]);
versions!($
    /// The smb group at the negotiated version.
    SmbGroup, smb, SmbApi, on_smb,
    newest: [V1 v1, V1beta2 v1beta2],
    older: [V1beta1 v1beta1]);
versions!($
    /// The iscsi group at the negotiated version (alpha only: there is no other).
    IscsiGroup, iscsi, IscsiApi, on_iscsi,
    newest: [V1alpha2 v1alpha2, V1alpha1 v1alpha1],
    older: []);
versions!($
    /// The system group (v1alpha1 is its only version).
    SystemGroup, system, SystemApi, on_system,
    newest: [V1alpha1 v1alpha1],
    older: []);

/// What the node reports about one disk, whatever the version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DiskFacts {
    pub adapter: Option<String>,
    pub bus: Option<String>,
    pub target: Option<String>,
    pub lun: Option<String>,
    pub page83: Option<String>,
    pub serial_number: Option<String>,
}

/// Where a disk sits, as numbers: adapter, bus, target, LUN (each `None`
/// when not reported).
pub(crate) type Place = (Option<u32>, Option<u32>, Option<u32>, Option<u32>);

impl DiskFacts {
    /// The location's parts as numbers.
    pub fn place(&self) -> Place {
        let n = |s: &Option<String>| s.as_deref().and_then(parse_number);
        (
            n(&self.adapter),
            n(&self.bus),
            n(&self.target),
            n(&self.lun),
        )
    }
}

fn parse_number(text: &str) -> Option<u32> {
    text.trim().parse().ok()
}

fn some_text(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

impl DiskGroup {
    pub async fn rescan(&self) -> Result<(), Error> {
        on_disk!(self;
            newest + [V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                api.rescan(m::RescanRequest {}).await.map(drop)
            }
        )
    }

    /// Every disk the node lists, by number, with its LUN, and with its
    /// identifiers when `ids` (one more listing).
    pub async fn disks(&self, ids: bool) -> Result<BTreeMap<u32, DiskFacts>, Error> {
        if !ids {
            return self.locations().await;
        }
        // Two listings, neither waiting for the other.
        let (mut out, ids) = tokio::try_join!(self.locations(), self.ids())?;
        for (n, i) in ids {
            let facts = out.entry(n).or_default();
            facts.page83 = i.page83;
            facts.serial_number = i.serial_number;
        }
        Ok(out)
    }

    /// Every disk's location (`ListDiskLocations`); no ids.
    pub async fn locations(&self) -> Result<BTreeMap<u32, DiskFacts>, Error> {
        let mut out: BTreeMap<u32, DiskFacts> = BTreeMap::new();
        let mut put = |n: u32, adapter, bus, target, lun| {
            let facts = out.entry(n).or_default();
            facts.adapter = some_text(adapter);
            facts.bus = some_text(bus);
            facts.target = some_text(target);
            facts.lun = some_text(lun);
        };
        on_disk!(self;
            newest |api, m| {
                let locations = api.list_disk_locations(m::ListDiskLocationsRequest {}).await?;
                for (n, l) in locations.disk_locations {
                    put(n, l.adapter, l.bus, l.target, l.lunid);
                }
            }
            [V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                let locations = api.list_disk_locations(m::ListDiskLocationsRequest {}).await?;
                for (n, l) in locations.disk_locations {
                    if let Some(n) = parse_number(&n) {
                        put(n, l.adapter, l.bus, l.target, l.lunid);
                    }
                }
            }
        );
        Ok(out)
    }

    /// Every disk's page 83 id and serial number (`ListDiskIDs`); only
    /// those fields are set.
    pub async fn ids(&self) -> Result<BTreeMap<u32, DiskFacts>, Error> {
        let mut out: BTreeMap<u32, DiskFacts> = BTreeMap::new();
        on_disk!(self;
            newest |api, m| {
                let ids = api.list_disk_ids(m::ListDiskIDsRequest {}).await?;
                for (n, i) in ids.disk_i_ds {
                    let facts = out.entry(n).or_default();
                    facts.page83 = some_text(i.page83);
                    facts.serial_number = some_text(i.serial_number);
                }
            }
            [V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                let ids = api.list_disk_ids(m::ListDiskIDsRequest {}).await?;
                for (n, mut i) in ids.disk_i_ds {
                    if let Some(n) = parse_number(&n) {
                        let facts = out.entry(n).or_default();
                        facts.page83 = i.identifiers.remove("page83").and_then(some_text);
                        facts.serial_number =
                            i.identifiers.remove("serialNumber").and_then(some_text);
                    }
                }
            }
        );
        Ok(out)
    }

    /// The disk's size in bytes (`GetDiskStats`, `DiskStats` before v1beta3).
    pub async fn size(&self, n: u32) -> Result<u64, Error> {
        let bytes = on_disk!(self;
            newest |api, m| {
                api.get_disk_stats(m::GetDiskStatsRequest { disk_number: n }).await?.total_bytes
            }
            [V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                api.disk_stats(m::DiskStatsRequest { disk_id: n.to_string() }).await?.disk_size
            }
        );
        Ok(u64::try_from(bytes).unwrap_or(0))
    }

    /// Whether the disk is online; `None` where the version cannot tell (v1beta1).
    pub async fn is_online(&self, n: u32) -> Result<Option<bool>, Error> {
        on_disk!(self;
            newest |api, m| {
                let r = api.get_disk_state(m::GetDiskStateRequest { disk_number: n }).await?;
                Ok(Some(r.is_online))
            }
            [V1beta2: v1beta2] |api, m| {
                let request = m::GetAttachStateRequest { disk_id: n.to_string() };
                Ok(Some(api.get_attach_state(request).await?.is_online))
            }
            [V1beta1: v1beta1] |_api, m| { Ok(None) }
        )
    }

    /// Brings the disk online; a no-op on v1beta1, which cannot.
    pub async fn set_online(&self, n: u32) -> Result<(), Error> {
        self.set_state(n, true).await
    }

    /// Takes the disk offline, the call recorded ([`Recorded`]); a no-op
    /// on v1beta1, which cannot.
    pub async fn offline(&self, n: u32, _: Recorded) -> Result<(), Error> {
        self.set_state(n, false).await
    }

    async fn set_state(&self, n: u32, online: bool) -> Result<(), Error> {
        on_disk!(self;
            newest |api, m| {
                let request = m::SetDiskStateRequest { disk_number: n, is_online: online };
                api.set_disk_state(request).await.map(drop)
            }
            [V1beta2: v1beta2] |api, m| {
                let request = m::SetAttachStateRequest { disk_id: n.to_string(), is_online: online };
                api.set_attach_state(request).await.map(drop)
            }
            [V1beta1: v1beta1] |_api, m| { Ok(()) }
        )
    }

    pub async fn partition(&self, n: u32) -> Result<(), Error> {
        on_disk!(self;
            newest |api, m| {
                api.partition_disk(m::PartitionDiskRequest { disk_number: n }).await.map(drop)
            }
            [V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                api.partition_disk(m::PartitionDiskRequest { disk_id: n.to_string() }).await.map(drop)
            }
        )
    }
}

impl VolumeGroup {
    pub async fn volumes_on_disk(&self, n: u32) -> Result<Vec<String>, Error> {
        on_volume!(self;
            newest + [V1: v1, V1beta3: v1beta3] |api, m| {
                let request = m::ListVolumesOnDiskRequest { disk_number: n, partition_number: 0 };
                Ok(api.list_volumes_on_disk(request).await?.volume_ids)
            }
            [V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                let request = m::ListVolumesOnDiskRequest { disk_id: n.to_string() };
                Ok(api.list_volumes_on_disk(request).await?.volume_ids)
            }
        )
    }

    pub async fn is_formatted(&self, id: &str) -> Result<bool, Error> {
        on_volume!(self;
            newest + [V1: v1, V1beta3: v1beta3, V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                let request = m::IsVolumeFormattedRequest { volume_id: id.to_string() };
                Ok(api.is_volume_formatted(request).await?.formatted)
            }
        )
    }

    pub async fn format(&self, id: &str) -> Result<(), Error> {
        on_volume!(self;
            newest + [V1: v1, V1beta3: v1beta3, V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                let request = m::FormatVolumeRequest { volume_id: id.to_string() };
                api.format_volume(request).await.map(drop)
            }
        )
    }

    pub async fn mount(&self, id: &str, path: &str) -> Result<(), Error> {
        on_volume!(self;
            newest + [V1: v1, V1beta3: v1beta3] |api, m| {
                let request = m::MountVolumeRequest { volume_id: id.to_string(), target_path: path.to_string() };
                api.mount_volume(request).await.map(drop)
            }
            [V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                let request = m::MountVolumeRequest { volume_id: id.to_string(), path: path.to_string() };
                api.mount_volume(request).await.map(drop)
            }
        )
    }

    /// Removes the mount point, the call recorded ([`Recorded`]).
    pub async fn unmount(&self, id: &str, path: &str, _: Recorded) -> Result<(), Error> {
        on_volume!(self;
            newest + [V1: v1, V1beta3: v1beta3] |api, m| {
                let request = m::UnmountVolumeRequest { volume_id: id.to_string(), target_path: path.to_string() };
                api.unmount_volume(request).await.map(drop)
            }
            [V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                let request = m::DismountVolumeRequest { volume_id: id.to_string(), path: path.to_string() };
                api.dismount_volume(request).await.map(drop)
            }
        )
    }

    /// Whether [`VolumeGroup::flush`] asks the host (v1beta1 cannot).
    pub fn can_flush(&self) -> bool {
        !matches!(self, VolumeGroup::V1beta1(_))
    }

    /// Flushes the volume's cache; v1beta1 has no such call (its dismount flushes).
    pub async fn flush(&self, id: &str) -> Result<(), Error> {
        on_volume!(self;
            newest + [V1: v1, V1beta3: v1beta3, V1beta2: v1beta2] |api, m| {
                let request = m::WriteVolumeCacheRequest { volume_id: id.to_string() };
                api.write_volume_cache(request).await.map(drop)
            }
            [V1beta1: v1beta1] |_api, m| { Ok(()) }
        )
    }

    pub async fn volume_at(&self, path: &str) -> Result<String, Error> {
        on_volume!(self;
            newest + [V1: v1, V1beta3: v1beta3] |api, m| {
                let request = m::GetVolumeIdFromTargetPathRequest { target_path: path.to_string() };
                Ok(api.get_volume_id_from_target_path(request).await?.volume_id)
            }
            [V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                let request = m::VolumeIdFromMountRequest { mount: path.to_string() };
                Ok(api.get_volume_id_from_mount(request).await?.volume_id)
            }
        )
    }

    /// Whether [`VolumeGroup::closest_volume`] asks the host.
    pub fn finds_closest_volume(&self) -> bool {
        on_volume!(self;
            newest |_api, m| { true }
            [V1: v1, V1beta3: v1beta3, V1beta2: v1beta2, V1beta1: v1beta1] |_api, m| { false }
        )
    }

    /// The volume holding `path`, walking up to its drive
    /// (`GetClosestVolumeIDFromTargetPath`, from v2alpha1); `None` on the
    /// versions without it.
    pub async fn closest_volume(&self, path: &str) -> Result<Option<String>, Error> {
        on_volume!(self;
            newest |api, m| {
                let request = m::GetClosestVolumeIdFromTargetPathRequest { target_path: path.to_string() };
                Ok(Some(api.get_closest_volume_id_from_target_path(request).await?.volume_id))
            }
            [V1: v1, V1beta3: v1beta3, V1beta2: v1beta2, V1beta1: v1beta1] |_api, m| { Ok(None) }
        )
    }

    pub async fn disk_of(&self, id: &str) -> Result<u32, Error> {
        on_volume!(self;
            newest + [V1: v1, V1beta3: v1beta3] |api, m| {
                let request = m::GetDiskNumberFromVolumeIdRequest { volume_id: id.to_string() };
                Ok(api.get_disk_number_from_volume_id(request).await?.disk_number)
            }
            [V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                let request = m::VolumeDiskNumberRequest { volume_id: id.to_string() };
                let n = api.get_volume_disk_number(request).await?.disk_number;
                Ok(u32::try_from(n).unwrap_or(u32::MAX))
            }
        )
    }

    /// Resizes to `size` bytes (0 = the largest size the partition allows).
    pub async fn resize(&self, id: &str, size: i64) -> Result<(), Error> {
        on_volume!(self;
            newest + [V1: v1, V1beta3: v1beta3] |api, m| {
                let request = m::ResizeVolumeRequest { volume_id: id.to_string(), size_bytes: size };
                api.resize_volume(request).await.map(drop)
            }
            [V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                let request = m::ResizeVolumeRequest { volume_id: id.to_string(), size };
                api.resize_volume(request).await.map(drop)
            }
        )
    }

    /// (total, used) bytes.
    pub async fn stats(&self, id: &str) -> Result<(i64, i64), Error> {
        on_volume!(self;
            newest + [V1: v1, V1beta3: v1beta3] |api, m| {
                let request = m::GetVolumeStatsRequest { volume_id: id.to_string() };
                let r = api.get_volume_stats(request).await?;
                Ok((r.total_bytes, r.used_bytes))
            }
            [V1beta2: v1beta2, V1beta1: v1beta1] |api, m| {
                let request = m::VolumeStatsRequest { volume_id: id.to_string() };
                let r = api.volume_stats(request).await?;
                Ok((r.volume_size, r.volume_used_size))
            }
        )
    }
}

/// An old version's `error` field turned into an error of the call.
fn field_error(method: &str, error: String) -> Result<(), Error> {
    if error.is_empty() {
        Ok(())
    } else {
        Err(Error::rpc(
            "response",
            method,
            tonic::Status::unknown(error),
        ))
    }
}

/// Paths of the node layer are the plugin's own (kubelet's plugin directory).
const PLUGIN: i32 = filesystem::v1beta1::PathContext::Plugin as i32;

impl FilesystemGroup {
    pub async fn exists(&self, path: &str) -> Result<bool, Error> {
        on_filesystem!(self;
            newest |api, m| {
                let request = m::PathExistsRequest { path: path.to_string() };
                Ok(api.path_exists(request).await?.exists)
            }
            [V1beta1: v1beta1] |api, m| {
                let request = m::PathExistsRequest { path: path.to_string(), context: PLUGIN };
                let r = api.path_exists(request).await?;
                field_error("/v1beta1.Filesystem/PathExists", r.error)?;
                Ok(r.exists)
            }
        )
    }

    pub async fn mkdir(&self, path: &str) -> Result<(), Error> {
        on_filesystem!(self;
            newest |api, m| {
                api.mkdir(m::MkdirRequest { path: path.to_string() }).await.map(drop)
            }
            [V1beta1: v1beta1] |api, m| {
                let r = api.mkdir(m::MkdirRequest { path: path.to_string(), context: PLUGIN }).await?;
                field_error("/v1beta1.Filesystem/Mkdir", r.error)
            }
        )
    }

    /// Removes a directory or link, the call recorded ([`Recorded`]).
    pub async fn rmdir(&self, path: &str, force: bool, _: Recorded) -> Result<(), Error> {
        on_filesystem!(self;
            newest |api, m| {
                api.rmdir(m::RmdirRequest { path: path.to_string(), force }).await.map(drop)
            }
            [V1beta1: v1beta1] |api, m| {
                let request = m::RmdirRequest { path: path.to_string(), context: PLUGIN, force };
                let r = api.rmdir(request).await?;
                field_error("/v1beta1.Filesystem/Rmdir", r.error)
            }
        )
    }

    /// Makes `link` a link to `to`.
    pub async fn link(&self, to: &str, link: &str) -> Result<(), Error> {
        on_filesystem!(self;
            newest |api, m| {
                let request = m::CreateSymlinkRequest { source_path: to.to_string(), target_path: link.to_string() };
                api.create_symlink(request).await.map(drop)
            }
            [V1beta1: v1beta1] |api, m| {
                let request = m::LinkPathRequest { source_path: to.to_string(), target_path: link.to_string() };
                let r = api.link_path(request).await?;
                field_error("/v1beta1.Filesystem/LinkPath", r.error)
            }
        )
    }

    /// Whether `path` is a link or mount point whose target is there.
    pub async fn is_link(&self, path: &str) -> Result<bool, Error> {
        on_filesystem!(self;
            newest |api, m| {
                let request = m::IsSymlinkRequest { path: path.to_string() };
                Ok(api.is_symlink(request).await?.is_symlink)
            }
            [V1beta1: v1beta1] |api, m| {
                let request = m::IsMountPointRequest { path: path.to_string() };
                let r = api.is_mount_point(request).await?;
                field_error("/v1beta1.Filesystem/IsMountPoint", r.error)?;
                Ok(r.is_mount_point)
            }
        )
    }
}

impl SmbGroup {
    pub async fn map(
        &self,
        remote: &str,
        local: &str,
        user: &str,
        password: &str,
        _: Recorded,
    ) -> Result<(), Error> {
        on_smb!(self;
            newest |api, m| {
                let request = m::NewSmbGlobalMappingRequest {
                    remote_path: remote.to_string(),
                    local_path: local.to_string(),
                    username: user.to_string(),
                    password: password.to_string(),
                };
                api.new_smb_global_mapping(request).await.map(drop)
            }
            [V1beta1: v1beta1] |api, m| {
                let request = m::NewSmbGlobalMappingRequest {
                    remote_path: remote.to_string(),
                    local_path: local.to_string(),
                    username: user.to_string(),
                    password: password.to_string(),
                };
                let r = api.new_smb_global_mapping(request).await?;
                field_error("/v1beta1.Smb/NewSmbGlobalMapping", r.error)
            }
        )
    }

    /// Removes the global mapping, the call recorded ([`Recorded`]).
    pub async fn unmap(&self, remote: &str, _: Recorded) -> Result<(), Error> {
        on_smb!(self;
            newest |api, m| {
                let request = m::RemoveSmbGlobalMappingRequest { remote_path: remote.to_string() };
                api.remove_smb_global_mapping(request).await.map(drop)
            }
            [V1beta1: v1beta1] |api, m| {
                let request = m::RemoveSmbGlobalMappingRequest { remote_path: remote.to_string() };
                let r = api.remove_smb_global_mapping(request).await?;
                field_error("/v1beta1.Smb/RemoveSmbGlobalMapping", r.error)
            }
        )
    }
}

/// CHAP credentials of an iSCSI login, as the adapter passes them.
pub(crate) struct IscsiLogin<'a> {
    pub auth_type: i32,
    pub user: &'a str,
    pub secret: &'a str,
}

impl IscsiGroup {
    pub async fn add_portal(&self, address: &str, port: u32) -> Result<(), Error> {
        on_iscsi!(self;
            newest |api, m| {
                let target_portal = Some(m::TargetPortal { target_address: address.to_string(), target_port: port });
                api.add_target_portal(m::AddTargetPortalRequest { target_portal }).await.map(drop)
            }
        )
    }

    pub async fn discover(&self, address: &str, port: u32) -> Result<Vec<String>, Error> {
        on_iscsi!(self;
            newest |api, m| {
                let target_portal = Some(m::TargetPortal { target_address: address.to_string(), target_port: port });
                Ok(api.discover_target_portal(m::DiscoverTargetPortalRequest { target_portal }).await?.iqns)
            }
        )
    }

    pub async fn connect(
        &self,
        address: &str,
        port: u32,
        iqn: &str,
        login: IscsiLogin<'_>,
    ) -> Result<(), Error> {
        on_iscsi!(self;
            newest |api, m| {
                let request = m::ConnectTargetRequest {
                    target_portal: Some(m::TargetPortal { target_address: address.to_string(), target_port: port }),
                    iqn: iqn.to_string(),
                    auth_type: login.auth_type,
                    chap_username: login.user.to_string(),
                    chap_secret: login.secret.to_string(),
                };
                api.connect_target(request).await.map(drop)
            }
        )
    }

    pub async fn disconnect(&self, address: &str, port: u32, iqn: &str) -> Result<(), Error> {
        on_iscsi!(self;
            newest |api, m| {
                let request = m::DisconnectTargetRequest {
                    target_portal: Some(m::TargetPortal { target_address: address.to_string(), target_port: port }),
                    iqn: iqn.to_string(),
                };
                api.disconnect_target(request).await.map(drop)
            }
        )
    }

    pub async fn disks(&self, address: &str, port: u32, iqn: &str) -> Result<Vec<u32>, Error> {
        on_iscsi!(self;
            newest |api, m| {
                let request = m::GetTargetDisksRequest {
                    target_portal: Some(m::TargetPortal { target_address: address.to_string(), target_port: port }),
                    iqn: iqn.to_string(),
                };
                let ids = api.get_target_disks(request).await?.disk_i_ds;
                Ok(ids.iter().filter_map(|d| parse_number(d)).collect())
            }
        )
    }

    pub async fn portals(&self) -> Result<Vec<(String, u32)>, Error> {
        on_iscsi!(self;
            newest |api, m| {
                let r = api.list_target_portals(m::ListTargetPortalsRequest {}).await?;
                Ok(r.target_portals.into_iter().map(|p| (p.target_address, p.target_port)).collect())
            }
        )
    }

    pub async fn remove_portal(&self, address: &str, port: u32) -> Result<(), Error> {
        on_iscsi!(self;
            newest |api, m| {
                let target_portal = Some(m::TargetPortal { target_address: address.to_string(), target_port: port });
                api.remove_target_portal(m::RemoveTargetPortalRequest { target_portal }).await.map(drop)
            }
        )
    }
}

impl SystemGroup {
    pub async fn bios_serial_number(&self) -> Result<String, Error> {
        on_system!(self;
            newest |api, m| {
                let r = api.get_bios_serial_number(m::GetBiosSerialNumberRequest {}).await?;
                Ok(r.serial_number)
            }
        )
    }
}
