//! CSI Proxy iscsi API, version v1alpha1.
//! iSCSI group: the node's iSCSI initiator: target portals, discovery, sessions and the disks they expose.
//! Served on the named pipe \\.\pipe\csi-proxy-iscsi-v1alpha1.
/// Request of AddTargetPortal.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct AddTargetPortalRequest {
    /// Portal to use.
    #[prost(message, optional, tag = "1")]
    pub target_portal: ::core::option::Option<TargetPortal>,
}
/// Response of AddTargetPortal.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct AddTargetPortalResponse {}
/// Request of ConnectTarget.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct ConnectTargetRequest {
    /// Portal to use.
    #[prost(message, optional, tag = "1")]
    pub target_portal: ::core::option::Option<TargetPortal>,
    /// iSCSI qualified name of the target.
    #[prost(string, tag = "2")]
    pub iqn: ::prost::alloc::string::String,
    /// Authentication to use when logging in.
    #[prost(enumeration = "AuthenticationType", tag = "3")]
    pub auth_type: i32,
    /// CHAP user name, when CHAP is used.
    #[prost(string, tag = "4")]
    pub chap_username: ::prost::alloc::string::String,
    /// CHAP secret, when CHAP is used.
    #[prost(string, tag = "5")]
    pub chap_secret: ::prost::alloc::string::String,
}
/// Response of ConnectTarget.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct ConnectTargetResponse {}
/// Request of DisconnectTarget.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct DisconnectTargetRequest {
    /// Portal to use.
    #[prost(message, optional, tag = "1")]
    pub target_portal: ::core::option::Option<TargetPortal>,
    /// iSCSI qualified name of the target.
    #[prost(string, tag = "2")]
    pub iqn: ::prost::alloc::string::String,
}
/// Response of DisconnectTarget.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct DisconnectTargetResponse {}
/// Request of DiscoverTargetPortal.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct DiscoverTargetPortalRequest {
    /// Portal to use.
    #[prost(message, optional, tag = "1")]
    pub target_portal: ::core::option::Option<TargetPortal>,
}
/// Response of DiscoverTargetPortal.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct DiscoverTargetPortalResponse {
    /// IQNs of the targets the portal offers.
    #[prost(string, repeated, tag = "1")]
    pub iqns: ::prost::alloc::vec::Vec<::prost::alloc::string::String>,
}
/// Request of GetTargetDisks.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct GetTargetDisksRequest {
    /// Portal to use.
    #[prost(message, optional, tag = "1")]
    pub target_portal: ::core::option::Option<TargetPortal>,
    /// iSCSI qualified name of the target.
    #[prost(string, tag = "2")]
    pub iqn: ::prost::alloc::string::String,
}
/// Response of GetTargetDisks.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct GetTargetDisksResponse {
    /// Identifiers of every disk, keyed by disk number as text.
    #[prost(string, repeated, tag = "1")]
    pub disk_i_ds: ::prost::alloc::vec::Vec<::prost::alloc::string::String>,
}
/// Request of ListTargetPortals.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct ListTargetPortalsRequest {}
/// Response of ListTargetPortals.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ListTargetPortalsResponse {
    /// The registered target portals.
    #[prost(message, repeated, tag = "1")]
    pub target_portals: ::prost::alloc::vec::Vec<TargetPortal>,
}
/// Request of RemoveTargetPortal.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct RemoveTargetPortalRequest {
    /// Portal to use.
    #[prost(message, optional, tag = "1")]
    pub target_portal: ::core::option::Option<TargetPortal>,
}
/// Response of RemoveTargetPortal.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct RemoveTargetPortalResponse {}
/// An iSCSI target portal: address and TCP port.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct TargetPortal {
    /// Host name or IP address of the portal.
    #[prost(string, tag = "1")]
    pub target_address: ::prost::alloc::string::String,
    /// TCP port of the portal; 0 means 3260.
    #[prost(uint32, tag = "2")]
    pub target_port: u32,
}
/// How the initiator authenticates when logging in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum AuthenticationType {
    /// No authentication.
    None = 0,
    /// The target authenticates the initiator.
    OneWayChap = 1,
    /// Both sides authenticate each other.
    MutualChap = 2,
}
impl AuthenticationType {
    /// String value of the enum field names used in the ProtoBuf definition.
    ///
    /// The values are not transformed in any way and thus are considered stable
    /// (if the ProtoBuf definition does not change) and safe for programmatic use.
    pub fn as_str_name(&self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::OneWayChap => "ONE_WAY_CHAP",
            Self::MutualChap => "MUTUAL_CHAP",
        }
    }
    /// Creates an enum from field names used in the ProtoBuf definition.
    pub fn from_str_name(value: &str) -> ::core::option::Option<Self> {
        match value {
            "NONE" => Some(Self::None),
            "ONE_WAY_CHAP" => Some(Self::OneWayChap),
            "MUTUAL_CHAP" => Some(Self::MutualChap),
            _ => None,
        }
    }
}
/// Generated server implementations.
pub mod iscsi_server {
    #![allow(
        unused_variables,
        dead_code,
        missing_docs,
        clippy::wildcard_imports,
        clippy::let_unit_value,
    )]
    use tonic::codegen::*;
    /// Generated trait containing gRPC methods that should be implemented for use with IscsiServer.
    #[async_trait]
    pub trait Iscsi: std::marker::Send + std::marker::Sync + 'static {
        /// Registers an iSCSI target portal with the initiator.
        async fn add_target_portal(
            &self,
            request: tonic::Request<super::AddTargetPortalRequest>,
        ) -> std::result::Result<
            tonic::Response<super::AddTargetPortalResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Logs in to a target through a portal, with optional CHAP authentication.
        async fn connect_target(
            &self,
            request: tonic::Request<super::ConnectTargetRequest>,
        ) -> std::result::Result<
            tonic::Response<super::ConnectTargetResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Logs out of a target.
        async fn disconnect_target(
            &self,
            request: tonic::Request<super::DisconnectTargetRequest>,
        ) -> std::result::Result<
            tonic::Response<super::DisconnectTargetResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Lists the IQNs of the targets a portal offers.
        async fn discover_target_portal(
            &self,
            request: tonic::Request<super::DiscoverTargetPortalRequest>,
        ) -> std::result::Result<
            tonic::Response<super::DiscoverTargetPortalResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Lists the disk numbers a connected target exposes on this node.
        async fn get_target_disks(
            &self,
            request: tonic::Request<super::GetTargetDisksRequest>,
        ) -> std::result::Result<
            tonic::Response<super::GetTargetDisksResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Lists the registered target portals.
        async fn list_target_portals(
            &self,
            request: tonic::Request<super::ListTargetPortalsRequest>,
        ) -> std::result::Result<
            tonic::Response<super::ListTargetPortalsResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Unregisters an iSCSI target portal.
        async fn remove_target_portal(
            &self,
            request: tonic::Request<super::RemoveTargetPortalRequest>,
        ) -> std::result::Result<
            tonic::Response<super::RemoveTargetPortalResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
    }
    /// The iscsi service of this version.
    #[derive(Debug)]
    pub struct IscsiServer<T> {
        inner: Arc<T>,
        accept_compression_encodings: EnabledCompressionEncodings,
        send_compression_encodings: EnabledCompressionEncodings,
        max_decoding_message_size: Option<usize>,
        max_encoding_message_size: Option<usize>,
    }
    impl<T> IscsiServer<T> {
        pub fn new(inner: T) -> Self {
            Self::from_arc(Arc::new(inner))
        }
        pub fn from_arc(inner: Arc<T>) -> Self {
            Self {
                inner,
                accept_compression_encodings: Default::default(),
                send_compression_encodings: Default::default(),
                max_decoding_message_size: None,
                max_encoding_message_size: None,
            }
        }
        pub fn with_interceptor<F>(
            inner: T,
            interceptor: F,
        ) -> InterceptedService<Self, F>
        where
            F: tonic::service::Interceptor,
        {
            InterceptedService::new(Self::new(inner), interceptor)
        }
        /// Enable decompressing requests with the given encoding.
        #[must_use]
        pub fn accept_compressed(mut self, encoding: CompressionEncoding) -> Self {
            self.accept_compression_encodings.enable(encoding);
            self
        }
        /// Compress responses with the given encoding, if the client supports it.
        #[must_use]
        pub fn send_compressed(mut self, encoding: CompressionEncoding) -> Self {
            self.send_compression_encodings.enable(encoding);
            self
        }
        /// Limits the maximum size of a decoded message.
        ///
        /// Default: `4MB`
        #[must_use]
        pub fn max_decoding_message_size(mut self, limit: usize) -> Self {
            self.max_decoding_message_size = Some(limit);
            self
        }
        /// Limits the maximum size of an encoded message.
        ///
        /// Default: `usize::MAX`
        #[must_use]
        pub fn max_encoding_message_size(mut self, limit: usize) -> Self {
            self.max_encoding_message_size = Some(limit);
            self
        }
    }
    impl<T, B> tonic::codegen::Service<http::Request<B>> for IscsiServer<T>
    where
        T: Iscsi,
        B: Body + std::marker::Send + 'static,
        B::Error: Into<StdError> + std::marker::Send + 'static,
    {
        type Response = http::Response<tonic::body::Body>;
        type Error = std::convert::Infallible;
        type Future = BoxFuture<Self::Response, Self::Error>;
        fn poll_ready(
            &mut self,
            _cx: &mut Context<'_>,
        ) -> Poll<std::result::Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, req: http::Request<B>) -> Self::Future {
            match req.uri().path() {
                "/v1alpha1.Iscsi/AddTargetPortal" => {
                    #[allow(non_camel_case_types)]
                    struct AddTargetPortalSvc<T: Iscsi>(pub Arc<T>);
                    impl<
                        T: Iscsi,
                    > tonic::server::UnaryService<super::AddTargetPortalRequest>
                    for AddTargetPortalSvc<T> {
                        type Response = super::AddTargetPortalResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::AddTargetPortalRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Iscsi>::add_target_portal(&inner, request).await
                            };
                            Box::pin(fut)
                        }
                    }
                    let accept_compression_encodings = self.accept_compression_encodings;
                    let send_compression_encodings = self.send_compression_encodings;
                    let max_decoding_message_size = self.max_decoding_message_size;
                    let max_encoding_message_size = self.max_encoding_message_size;
                    let inner = self.inner.clone();
                    let fut = async move {
                        let method = AddTargetPortalSvc(inner);
                        let codec = tonic_prost::ProstCodec::default();
                        let mut grpc = tonic::server::Grpc::new(codec)
                            .apply_compression_config(
                                accept_compression_encodings,
                                send_compression_encodings,
                            )
                            .apply_max_message_size_config(
                                max_decoding_message_size,
                                max_encoding_message_size,
                            );
                        let res = grpc.unary(method, req).await;
                        Ok(res)
                    };
                    Box::pin(fut)
                }
                "/v1alpha1.Iscsi/ConnectTarget" => {
                    #[allow(non_camel_case_types)]
                    struct ConnectTargetSvc<T: Iscsi>(pub Arc<T>);
                    impl<
                        T: Iscsi,
                    > tonic::server::UnaryService<super::ConnectTargetRequest>
                    for ConnectTargetSvc<T> {
                        type Response = super::ConnectTargetResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::ConnectTargetRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Iscsi>::connect_target(&inner, request).await
                            };
                            Box::pin(fut)
                        }
                    }
                    let accept_compression_encodings = self.accept_compression_encodings;
                    let send_compression_encodings = self.send_compression_encodings;
                    let max_decoding_message_size = self.max_decoding_message_size;
                    let max_encoding_message_size = self.max_encoding_message_size;
                    let inner = self.inner.clone();
                    let fut = async move {
                        let method = ConnectTargetSvc(inner);
                        let codec = tonic_prost::ProstCodec::default();
                        let mut grpc = tonic::server::Grpc::new(codec)
                            .apply_compression_config(
                                accept_compression_encodings,
                                send_compression_encodings,
                            )
                            .apply_max_message_size_config(
                                max_decoding_message_size,
                                max_encoding_message_size,
                            );
                        let res = grpc.unary(method, req).await;
                        Ok(res)
                    };
                    Box::pin(fut)
                }
                "/v1alpha1.Iscsi/DisconnectTarget" => {
                    #[allow(non_camel_case_types)]
                    struct DisconnectTargetSvc<T: Iscsi>(pub Arc<T>);
                    impl<
                        T: Iscsi,
                    > tonic::server::UnaryService<super::DisconnectTargetRequest>
                    for DisconnectTargetSvc<T> {
                        type Response = super::DisconnectTargetResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::DisconnectTargetRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Iscsi>::disconnect_target(&inner, request).await
                            };
                            Box::pin(fut)
                        }
                    }
                    let accept_compression_encodings = self.accept_compression_encodings;
                    let send_compression_encodings = self.send_compression_encodings;
                    let max_decoding_message_size = self.max_decoding_message_size;
                    let max_encoding_message_size = self.max_encoding_message_size;
                    let inner = self.inner.clone();
                    let fut = async move {
                        let method = DisconnectTargetSvc(inner);
                        let codec = tonic_prost::ProstCodec::default();
                        let mut grpc = tonic::server::Grpc::new(codec)
                            .apply_compression_config(
                                accept_compression_encodings,
                                send_compression_encodings,
                            )
                            .apply_max_message_size_config(
                                max_decoding_message_size,
                                max_encoding_message_size,
                            );
                        let res = grpc.unary(method, req).await;
                        Ok(res)
                    };
                    Box::pin(fut)
                }
                "/v1alpha1.Iscsi/DiscoverTargetPortal" => {
                    #[allow(non_camel_case_types)]
                    struct DiscoverTargetPortalSvc<T: Iscsi>(pub Arc<T>);
                    impl<
                        T: Iscsi,
                    > tonic::server::UnaryService<super::DiscoverTargetPortalRequest>
                    for DiscoverTargetPortalSvc<T> {
                        type Response = super::DiscoverTargetPortalResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::DiscoverTargetPortalRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Iscsi>::discover_target_portal(&inner, request).await
                            };
                            Box::pin(fut)
                        }
                    }
                    let accept_compression_encodings = self.accept_compression_encodings;
                    let send_compression_encodings = self.send_compression_encodings;
                    let max_decoding_message_size = self.max_decoding_message_size;
                    let max_encoding_message_size = self.max_encoding_message_size;
                    let inner = self.inner.clone();
                    let fut = async move {
                        let method = DiscoverTargetPortalSvc(inner);
                        let codec = tonic_prost::ProstCodec::default();
                        let mut grpc = tonic::server::Grpc::new(codec)
                            .apply_compression_config(
                                accept_compression_encodings,
                                send_compression_encodings,
                            )
                            .apply_max_message_size_config(
                                max_decoding_message_size,
                                max_encoding_message_size,
                            );
                        let res = grpc.unary(method, req).await;
                        Ok(res)
                    };
                    Box::pin(fut)
                }
                "/v1alpha1.Iscsi/GetTargetDisks" => {
                    #[allow(non_camel_case_types)]
                    struct GetTargetDisksSvc<T: Iscsi>(pub Arc<T>);
                    impl<
                        T: Iscsi,
                    > tonic::server::UnaryService<super::GetTargetDisksRequest>
                    for GetTargetDisksSvc<T> {
                        type Response = super::GetTargetDisksResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::GetTargetDisksRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Iscsi>::get_target_disks(&inner, request).await
                            };
                            Box::pin(fut)
                        }
                    }
                    let accept_compression_encodings = self.accept_compression_encodings;
                    let send_compression_encodings = self.send_compression_encodings;
                    let max_decoding_message_size = self.max_decoding_message_size;
                    let max_encoding_message_size = self.max_encoding_message_size;
                    let inner = self.inner.clone();
                    let fut = async move {
                        let method = GetTargetDisksSvc(inner);
                        let codec = tonic_prost::ProstCodec::default();
                        let mut grpc = tonic::server::Grpc::new(codec)
                            .apply_compression_config(
                                accept_compression_encodings,
                                send_compression_encodings,
                            )
                            .apply_max_message_size_config(
                                max_decoding_message_size,
                                max_encoding_message_size,
                            );
                        let res = grpc.unary(method, req).await;
                        Ok(res)
                    };
                    Box::pin(fut)
                }
                "/v1alpha1.Iscsi/ListTargetPortals" => {
                    #[allow(non_camel_case_types)]
                    struct ListTargetPortalsSvc<T: Iscsi>(pub Arc<T>);
                    impl<
                        T: Iscsi,
                    > tonic::server::UnaryService<super::ListTargetPortalsRequest>
                    for ListTargetPortalsSvc<T> {
                        type Response = super::ListTargetPortalsResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::ListTargetPortalsRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Iscsi>::list_target_portals(&inner, request).await
                            };
                            Box::pin(fut)
                        }
                    }
                    let accept_compression_encodings = self.accept_compression_encodings;
                    let send_compression_encodings = self.send_compression_encodings;
                    let max_decoding_message_size = self.max_decoding_message_size;
                    let max_encoding_message_size = self.max_encoding_message_size;
                    let inner = self.inner.clone();
                    let fut = async move {
                        let method = ListTargetPortalsSvc(inner);
                        let codec = tonic_prost::ProstCodec::default();
                        let mut grpc = tonic::server::Grpc::new(codec)
                            .apply_compression_config(
                                accept_compression_encodings,
                                send_compression_encodings,
                            )
                            .apply_max_message_size_config(
                                max_decoding_message_size,
                                max_encoding_message_size,
                            );
                        let res = grpc.unary(method, req).await;
                        Ok(res)
                    };
                    Box::pin(fut)
                }
                "/v1alpha1.Iscsi/RemoveTargetPortal" => {
                    #[allow(non_camel_case_types)]
                    struct RemoveTargetPortalSvc<T: Iscsi>(pub Arc<T>);
                    impl<
                        T: Iscsi,
                    > tonic::server::UnaryService<super::RemoveTargetPortalRequest>
                    for RemoveTargetPortalSvc<T> {
                        type Response = super::RemoveTargetPortalResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::RemoveTargetPortalRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Iscsi>::remove_target_portal(&inner, request).await
                            };
                            Box::pin(fut)
                        }
                    }
                    let accept_compression_encodings = self.accept_compression_encodings;
                    let send_compression_encodings = self.send_compression_encodings;
                    let max_decoding_message_size = self.max_decoding_message_size;
                    let max_encoding_message_size = self.max_encoding_message_size;
                    let inner = self.inner.clone();
                    let fut = async move {
                        let method = RemoveTargetPortalSvc(inner);
                        let codec = tonic_prost::ProstCodec::default();
                        let mut grpc = tonic::server::Grpc::new(codec)
                            .apply_compression_config(
                                accept_compression_encodings,
                                send_compression_encodings,
                            )
                            .apply_max_message_size_config(
                                max_decoding_message_size,
                                max_encoding_message_size,
                            );
                        let res = grpc.unary(method, req).await;
                        Ok(res)
                    };
                    Box::pin(fut)
                }
                _ => {
                    Box::pin(async move {
                        let mut response = http::Response::new(
                            tonic::body::Body::default(),
                        );
                        let headers = response.headers_mut();
                        headers
                            .insert(
                                tonic::Status::GRPC_STATUS,
                                (tonic::Code::Unimplemented as i32).into(),
                            );
                        headers
                            .insert(
                                http::header::CONTENT_TYPE,
                                tonic::metadata::GRPC_CONTENT_TYPE,
                            );
                        Ok(response)
                    })
                }
            }
        }
    }
    impl<T> Clone for IscsiServer<T> {
        fn clone(&self) -> Self {
            let inner = self.inner.clone();
            Self {
                inner,
                accept_compression_encodings: self.accept_compression_encodings,
                send_compression_encodings: self.send_compression_encodings,
                max_decoding_message_size: self.max_decoding_message_size,
                max_encoding_message_size: self.max_encoding_message_size,
            }
        }
    }
    /// Generated gRPC service name
    pub const SERVICE_NAME: &str = "v1alpha1.Iscsi";
    impl<T> tonic::server::NamedService for IscsiServer<T> {
        const NAME: &'static str = SERVICE_NAME;
    }
}
/// Name of the API group of this module.
pub const GROUP: &str = "iscsi";
/// Version of this module.
pub const VERSION: &str = "v1alpha1";
/// Fully qualified gRPC service name, as it appears on the wire.
pub const SERVICE_NAME: &str = "v1alpha1.Iscsi";
/// The RPCs of this version, as named on the wire.
pub const RPCS: &[&str] = &[
    "AddTargetPortal",
    "ConnectTarget",
    "DisconnectTarget",
    "DiscoverTargetPortal",
    "GetTargetDisks",
    "ListTargetPortals",
    "RemoveTargetPortal",
];
/**The `v1alpha1.Iscsi` service as a trait: one method per RPC of `iscsi` v1alpha1.

The iscsi service of this version.

Implemented by [`Client`] (a connection to the proxy) and, with the `mock` feature, by the in-process mock host, so driver code written against `&dyn IscsiApi` runs against either. Object safe, `Send + Sync`.*/
#[cfg_attr(feature = "mockall", ::mockall::automock)]
#[::async_trait::async_trait]
pub trait IscsiApi: Send + Sync {
    ///Registers an iSCSI target portal with the initiator.
    ///
    ///`/v1alpha1.Iscsi/AddTargetPortal`
    async fn add_target_portal(
        &self,
        request: AddTargetPortalRequest,
    ) -> ::core::result::Result<AddTargetPortalResponse, crate::Error>;
    ///Logs in to a target through a portal, with optional CHAP authentication.
    ///
    ///`/v1alpha1.Iscsi/ConnectTarget`
    async fn connect_target(
        &self,
        request: ConnectTargetRequest,
    ) -> ::core::result::Result<ConnectTargetResponse, crate::Error>;
    ///Logs out of a target.
    ///
    ///`/v1alpha1.Iscsi/DisconnectTarget`
    async fn disconnect_target(
        &self,
        request: DisconnectTargetRequest,
    ) -> ::core::result::Result<DisconnectTargetResponse, crate::Error>;
    ///Lists the IQNs of the targets a portal offers.
    ///
    ///`/v1alpha1.Iscsi/DiscoverTargetPortal`
    async fn discover_target_portal(
        &self,
        request: DiscoverTargetPortalRequest,
    ) -> ::core::result::Result<DiscoverTargetPortalResponse, crate::Error>;
    ///Lists the disk numbers a connected target exposes on this node.
    ///
    ///`/v1alpha1.Iscsi/GetTargetDisks`
    async fn get_target_disks(
        &self,
        request: GetTargetDisksRequest,
    ) -> ::core::result::Result<GetTargetDisksResponse, crate::Error>;
    ///Lists the registered target portals.
    ///
    ///`/v1alpha1.Iscsi/ListTargetPortals`
    async fn list_target_portals(
        &self,
        request: ListTargetPortalsRequest,
    ) -> ::core::result::Result<ListTargetPortalsResponse, crate::Error>;
    ///Unregisters an iSCSI target portal.
    ///
    ///`/v1alpha1.Iscsi/RemoveTargetPortal`
    async fn remove_target_portal(
        &self,
        request: RemoveTargetPortalRequest,
    ) -> ::core::result::Result<RemoveTargetPortalResponse, crate::Error>;
}
/**Client of `v1alpha1.Iscsi`, the `iscsi` API v1alpha1.

Cheap to clone; clones share one HTTP/2 connection and calls from many tasks are multiplexed on it. The RPCs are the methods of [`IscsiApi`].*/
#[derive(Clone, Debug)]
pub struct Client {
    connection: crate::transport::Connection,
}
impl Client {
    /// Connects to `address` (`npipe:////./pipe/NAME`, `\\.\pipe\NAME`,
    /// `unix:///path` or, on Unix, an absolute path) with default options.
    pub async fn connect(
        address: impl AsRef<str>,
    ) -> ::core::result::Result<Self, crate::Error> {
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
    ///Connects to the default endpoint of `iscsi` v1alpha1: the named pipe `\\.\pipe\csi-proxy-iscsi-v1alpha1` on Windows, elsewhere the socket `csi-proxy-iscsi-v1alpha1.sock` in the directory named by `CSI_PROXY_SOCKET_DIR`.
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
        Self {
            connection: crate::transport::Connection::from_channel(channel),
        }
    }
    /// The endpoint this client talks to, as used in error messages.
    pub fn endpoint(&self) -> &str {
        self.connection.endpoint()
    }
}
#[::async_trait::async_trait]
impl IscsiApi for Client {
    async fn add_target_portal(
        &self,
        request: AddTargetPortalRequest,
    ) -> ::core::result::Result<AddTargetPortalResponse, crate::Error> {
        self.connection.unary("/v1alpha1.Iscsi/AddTargetPortal", request).await
    }
    async fn connect_target(
        &self,
        request: ConnectTargetRequest,
    ) -> ::core::result::Result<ConnectTargetResponse, crate::Error> {
        self.connection.unary("/v1alpha1.Iscsi/ConnectTarget", request).await
    }
    async fn disconnect_target(
        &self,
        request: DisconnectTargetRequest,
    ) -> ::core::result::Result<DisconnectTargetResponse, crate::Error> {
        self.connection.unary("/v1alpha1.Iscsi/DisconnectTarget", request).await
    }
    async fn discover_target_portal(
        &self,
        request: DiscoverTargetPortalRequest,
    ) -> ::core::result::Result<DiscoverTargetPortalResponse, crate::Error> {
        self.connection.unary("/v1alpha1.Iscsi/DiscoverTargetPortal", request).await
    }
    async fn get_target_disks(
        &self,
        request: GetTargetDisksRequest,
    ) -> ::core::result::Result<GetTargetDisksResponse, crate::Error> {
        self.connection.unary("/v1alpha1.Iscsi/GetTargetDisks", request).await
    }
    async fn list_target_portals(
        &self,
        request: ListTargetPortalsRequest,
    ) -> ::core::result::Result<ListTargetPortalsResponse, crate::Error> {
        self.connection.unary("/v1alpha1.Iscsi/ListTargetPortals", request).await
    }
    async fn remove_target_portal(
        &self,
        request: RemoveTargetPortalRequest,
    ) -> ::core::result::Result<RemoveTargetPortalResponse, crate::Error> {
        self.connection.unary("/v1alpha1.Iscsi/RemoveTargetPortal", request).await
    }
}
#[cfg(feature = "mock")]
#[::async_trait::async_trait]
impl IscsiApi for crate::mock::MockHost {
    async fn add_target_portal(
        &self,
        request: AddTargetPortalRequest,
    ) -> ::core::result::Result<AddTargetPortalResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "AddTargetPortal",
        };
        self.before(&RPC, &request).await?;
        let result = iscsi_server::Iscsi::add_target_portal(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn connect_target(
        &self,
        request: ConnectTargetRequest,
    ) -> ::core::result::Result<ConnectTargetResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "ConnectTarget",
        };
        self.before(&RPC, &request).await?;
        let result = iscsi_server::Iscsi::connect_target(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn disconnect_target(
        &self,
        request: DisconnectTargetRequest,
    ) -> ::core::result::Result<DisconnectTargetResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "DisconnectTarget",
        };
        self.before(&RPC, &request).await?;
        let result = iscsi_server::Iscsi::disconnect_target(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn discover_target_portal(
        &self,
        request: DiscoverTargetPortalRequest,
    ) -> ::core::result::Result<DiscoverTargetPortalResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "DiscoverTargetPortal",
        };
        self.before(&RPC, &request).await?;
        let result = iscsi_server::Iscsi::discover_target_portal(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn get_target_disks(
        &self,
        request: GetTargetDisksRequest,
    ) -> ::core::result::Result<GetTargetDisksResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "GetTargetDisks",
        };
        self.before(&RPC, &request).await?;
        let result = iscsi_server::Iscsi::get_target_disks(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn list_target_portals(
        &self,
        request: ListTargetPortalsRequest,
    ) -> ::core::result::Result<ListTargetPortalsResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "ListTargetPortals",
        };
        self.before(&RPC, &request).await?;
        let result = iscsi_server::Iscsi::list_target_portals(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn remove_target_portal(
        &self,
        request: RemoveTargetPortalRequest,
    ) -> ::core::result::Result<RemoveTargetPortalResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "RemoveTargetPortal",
        };
        self.before(&RPC, &request).await?;
        let result = iscsi_server::Iscsi::remove_target_portal(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
}
