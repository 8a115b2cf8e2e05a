//! Placeholder impls (UNIMPLEMENTED for every RPC) so the server builds
//! until the group services land; removed by the merge that adds them.
#[tonic::async_trait]
impl crate::iscsi::v1alpha1::iscsi_server::Iscsi for super::ProxyService {}
#[tonic::async_trait]
impl crate::iscsi::v1alpha2::iscsi_server::Iscsi for super::ProxyService {}
#[tonic::async_trait]
impl crate::system::v1alpha1::system_server::System for super::ProxyService {}
