//! API versions and group versions: parsing, ordering, the list served.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use crate::Error;

/// A CSI Proxy API version such as `v1alpha2`, `v1beta3` or `v1`.
///
/// Versions order by major number, then alpha before beta before GA, then
/// by the qualifier's number: `v1alpha1 < v1alpha2 < v1beta1 < v1 < v2alpha1`.
/// The text form round-trips through [`FromStr`] and [`fmt::Display`].
///
/// ```
/// use csi_proxy_client::ApiVersion;
/// let a: ApiVersion = "v1beta3".parse()?;
/// let b: ApiVersion = "v1".parse()?;
/// assert!(a < b);
/// assert_eq!(a.to_string(), "v1beta3");
/// assert!("v1beta".parse::<ApiVersion>().is_err());
/// # Ok::<(), csi_proxy_client::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ApiVersion {
    major: u32,
    stage: Stage,
}

/// The maturity of an [`ApiVersion`]; variants are in ascending order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// `alpha<n>`.
    Alpha(u32),
    /// `beta<n>`.
    Beta(u32),
    /// No qualifier: generally available.
    Ga,
}

impl ApiVersion {
    /// A version from its parts; `None` if a number is 0 (no such version).
    pub fn new(major: u32, stage: Stage) -> Option<Self> {
        let ok = major > 0 && !matches!(stage, Stage::Alpha(0) | Stage::Beta(0));
        ok.then_some(Self { major, stage })
    }

    /// The major number (`2` in `v2alpha1`).
    pub fn major(&self) -> u32 {
        self.major
    }

    /// Alpha, beta or GA, with the qualifier's number.
    pub fn stage(&self) -> Stage {
        self.stage
    }
}

impl Ord for ApiVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.stage).cmp(&(other.major, other.stage))
    }
}

impl PartialOrd for ApiVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A positive decimal number without leading zeros.
fn positive(digits: &str) -> Option<u32> {
    let ok = !digits.is_empty()
        && !digits.starts_with('0')
        && digits.bytes().all(|b| b.is_ascii_digit());
    if ok { digits.parse().ok() } else { None }
}

impl FromStr for ApiVersion {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let invalid = || Error::InvalidVersion {
            input: s.to_string(),
        };
        let rest = s.strip_prefix('v').ok_or_else(invalid)?;
        let split = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (major, qualifier) = rest.split_at(split);
        let major = positive(major).ok_or_else(invalid)?;
        let stage = if qualifier.is_empty() {
            Stage::Ga
        } else if let Some(n) = qualifier.strip_prefix("alpha") {
            Stage::Alpha(positive(n).ok_or_else(invalid)?)
        } else if let Some(n) = qualifier.strip_prefix("beta") {
            Stage::Beta(positive(n).ok_or_else(invalid)?)
        } else {
            return Err(invalid());
        };
        Ok(Self { major, stage })
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.stage {
            Stage::Alpha(n) => write!(f, "v{}alpha{n}", self.major),
            Stage::Beta(n) => write!(f, "v{}beta{n}", self.major),
            Stage::Ga => write!(f, "v{}", self.major),
        }
    }
}

/// One group version, e.g. `disk/v1`: one gRPC service, one pipe.
///
/// ```
/// use csi_proxy_client::GroupVersion;
/// let disk_v1 = GroupVersion::parse("disk/v1").unwrap();
/// assert_eq!(disk_v1.service_name(), "v1.Disk");
/// assert!(disk_v1.rpcs().contains(&"PartitionDisk"));
/// assert_eq!(GroupVersion::all().len(), 23);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersion {
    /// API group.
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
}

impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.group, self.version)
    }
}

/// One module's constants: group, versions, service names and RPC names.
type GroupTable = (
    &'static str,
    &'static [&'static str],
    fn(&str) -> Option<(&'static str, &'static [&'static str])>,
);

/// The generated modules of each group, in upstream's pipe creation order.
const GROUPS: [GroupTable; 6] = [
    (
        crate::filesystem::GROUP,
        crate::filesystem::VERSIONS,
        crate::filesystem::service,
    ),
    (
        crate::disk::GROUP,
        crate::disk::VERSIONS,
        crate::disk::service,
    ),
    (
        crate::volume::GROUP,
        crate::volume::VERSIONS,
        crate::volume::service,
    ),
    (crate::smb::GROUP, crate::smb::VERSIONS, crate::smb::service),
    (
        crate::system::GROUP,
        crate::system::VERSIONS,
        crate::system::service,
    ),
    (
        crate::iscsi::GROUP,
        crate::iscsi::VERSIONS,
        crate::iscsi::service,
    ),
];

impl GroupVersion {
    /// Every group version the proxy serves, groups in upstream's pipe
    /// creation order, versions oldest first.
    pub fn all() -> Vec<GroupVersion> {
        GROUPS
            .into_iter()
            .flat_map(|(group, versions, _)| {
                versions
                    .iter()
                    .map(move |version| GroupVersion { group, version })
            })
            .collect()
    }

    /// Parses `group/version`, accepting only served group versions.
    pub fn parse(text: &str) -> Option<GroupVersion> {
        let (group, version) = text.trim().split_once('/')?;
        Self::all()
            .into_iter()
            .find(|gv| gv.group == group && gv.version == version)
    }

    fn table(&self) -> (&'static str, &'static [&'static str]) {
        GROUPS
            .iter()
            .find(|(group, ..)| *group == self.group)
            .and_then(|(_, _, service)| service(self.version))
            .expect("GroupVersion values name served group versions")
    }

    /// The fully qualified gRPC service, e.g. `v1.Disk`.
    ///
    /// # Panics
    /// If this is not a served group version (one not from [`GroupVersion::all`]
    /// or [`GroupVersion::parse`]).
    pub fn service_name(&self) -> &'static str {
        self.table().0
    }

    /// The RPCs of the service, as named on the wire.
    ///
    /// # Panics
    /// If this is not a served group version.
    pub fn rpcs(&self) -> &'static [&'static str] {
        self.table().1
    }

    /// The gRPC routes of this group version's service over `service`.
    ///
    /// # Panics
    /// If this is not a served group version.
    #[cfg(feature = "server")]
    pub fn routes(&self, service: &crate::server::ProxyService) -> tonic::service::Routes {
        crate::routes::routes(self.group, self.version, service)
            .expect("GroupVersion values name served group versions")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_malformed_versions() {
        for bad in [
            "",
            "v",
            "v0",
            "V1",
            "1",
            "v1beta",
            "v01",
            "v1gamma1",
            "v1alpha0",
            "v1beta01",
            "v2alpha",
            "v1 ",
            " v1",
            "v1alpha1x",
            "v-1",
            "v1alpha-1",
            "v99999999999",
        ] {
            let err = bad.parse::<ApiVersion>().unwrap_err();
            assert!(
                matches!(&err, Error::InvalidVersion { input } if input == bad),
                "{bad:?} gave {err}"
            );
        }
    }

    #[test]
    fn new_refuses_zero() {
        assert!(ApiVersion::new(0, Stage::Ga).is_none());
        assert!(ApiVersion::new(1, Stage::Beta(0)).is_none());
        assert_eq!(
            ApiVersion::new(2, Stage::Alpha(1)).unwrap().to_string(),
            "v2alpha1"
        );
    }

    #[test]
    fn orders_within_and_across_majors() {
        let texts = [
            "v1alpha1",
            "v1alpha2",
            "v1alpha10",
            "v1beta1",
            "v1beta3",
            "v1",
            "v2alpha1",
            "v2beta3",
            "v2",
            "v10",
        ];
        let parsed: Vec<ApiVersion> = texts.iter().map(|t| t.parse().unwrap()).collect();
        assert!(parsed.windows(2).all(|w| w[0] < w[1]), "{parsed:?}");
    }
}
