//! What holds for every group version at once.

use std::convert::Infallible;

use tonic::Code;
use tower::ServiceExt;

use super::disk::tests::Fixture;
use crate::GroupVersion;

/// Sends an empty request message to every RPC of `rpcs` through `server`
/// and asserts that none answers `UNIMPLEMENTED`.
async fn assert_all_implemented<S>(server: S, service: &str, rpcs: &[&str])
where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = Infallible,
        > + Clone,
{
    let call = |rpc: String| {
        let server = server.clone();
        async move {
            // one gRPC frame: not compressed, length 0 (an all-default message)
            let body = tonic::body::Body::new(String::from("\0\0\0\0\0"));
            let request = http::Request::builder()
                .method("POST")
                .uri(format!("/{service}/{rpc}"))
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .body(body)
                .unwrap();
            let response = server.oneshot(request).await.unwrap();
            assert_eq!(response.status(), http::StatusCode::OK);
            // errors are trailers-only responses: the status is in the headers
            tonic::Status::from_header_map(response.headers()).map(|s| s.code())
        }
    };
    // the detector works: an unknown method is UNIMPLEMENTED
    assert_eq!(call("NoSuchMethod".into()).await, Some(Code::Unimplemented));
    for rpc in rpcs {
        let code = call(rpc.to_string()).await;
        assert_ne!(
            code,
            Some(Code::Unimplemented),
            "/{service}/{rpc} is not implemented"
        );
    }
}

/// Every RPC of every group version is routed and implemented: an empty
/// request through the server's routes (the route table codegen writes,
/// then the generated server) never answers `UNIMPLEMENTED`.
#[tokio::test]
async fn no_rpc_of_any_group_version_is_unimplemented() {
    let f = Fixture::new();
    for gv in GroupVersion::all() {
        assert_all_implemented(gv.routes(&f.svc), gv.service_name(), gv.rpcs()).await;
    }

    use crate::{disk, filesystem, iscsi, system, volume};
    assert_eq!(
        [
            disk::v1alpha1::RPCS.len(),
            disk::v1beta1::RPCS.len(),
            disk::v1beta2::RPCS.len(),
            disk::v1beta3::RPCS.len(),
            disk::v1::RPCS.len()
        ],
        [4, 5, 7, 7, 7]
    );
    assert_eq!(
        [
            volume::v1alpha1::RPCS.len(),
            volume::v1beta1::RPCS.len(),
            volume::v1beta2::RPCS.len(),
            volume::v1beta3::RPCS.len(),
            volume::v1::RPCS.len(),
            volume::v2alpha1::RPCS.len()
        ],
        [6, 9, 10, 10, 10, 11]
    );
    assert_eq!(filesystem::v2alpha1::RPCS.len(), 6);
    assert_eq!(system::v1alpha1::RPCS.len(), 4);
    assert!(iscsi::v1alpha2::RPCS.contains(&"SetMutualChapSecret"));
    assert!(!iscsi::v1alpha1::RPCS.contains(&"SetMutualChapSecret"));
}
