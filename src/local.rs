//! In-process calls of a service implementation, with no transport.
//!
//! [`Local`] wraps an implementation of a generated server trait (such as
//! `disk::v1::disk_server::Disk`) and implements the matching `<Group>Api`
//! trait by calling it directly: the request goes in as a `tonic::Request`,
//! and an error status comes back as [`Error::Rpc`] exactly as it would
//! through a `Client`. The mock host is built on it.

use std::sync::Arc;

use crate::Error;

/// The endpoint name in errors of in-process calls.
pub const IN_PROCESS: &str = "in-process";

/// Identifies one RPC of one group version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rpc {
    /// API group, e.g. `disk`.
    pub group: &'static str,
    /// API version, e.g. `v1`.
    pub version: &'static str,
    /// Fully qualified service, e.g. `v1.Disk`.
    pub service: &'static str,
    /// RPC name as on the wire, e.g. `GetDiskStats`.
    pub name: &'static str,
}

impl Rpc {
    /// The gRPC method path, `/v1.Disk/GetDiskStats`.
    pub fn path(&self) -> String {
        format!("/{}/{}", self.service, self.name)
    }
}

/// A service implementation called in process through its `<Group>Api` trait.
#[derive(Debug)]
pub struct Local<S> {
    service: Arc<S>,
}

impl<S> Clone for Local<S> {
    fn clone(&self) -> Self {
        Self {
            service: Arc::clone(&self.service),
        }
    }
}

impl<S> Local<S> {
    /// Wraps a service implementation.
    pub fn new(service: S) -> Self {
        Self {
            service: Arc::new(service),
        }
    }

    /// The wrapped implementation.
    pub fn service(&self) -> &S {
        &self.service
    }

    /// Runs before each call; returns the request to pass on.
    #[doc(hidden)]
    pub async fn before<R>(&self, _rpc: &Rpc, request: R) -> Result<R, Error> {
        Ok(request)
    }

    /// Turns the service's answer into what a `Client` would return.
    #[doc(hidden)]
    pub fn after<T>(
        &self,
        rpc: &Rpc,
        result: Result<tonic::Response<T>, tonic::Status>,
    ) -> Result<T, Error> {
        result
            .map(tonic::Response::into_inner)
            .map_err(|status| Error::rpc(IN_PROCESS, rpc.path(), status))
    }
}
