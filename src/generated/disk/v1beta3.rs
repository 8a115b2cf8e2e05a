//! CSI Proxy disk API, version v1beta3.
//! Disk group: enumerates the node's disks, reports their identifiers, size and online state, and initialises a blank disk with one data partition.
//! Served on the named pipe \\.\pipe\csi-proxy-disk-v1beta3.
/// Identifiers of a disk.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct DiskIDs {
    /// Page 83 (device identification) identifier.
    #[prost(string, tag = "1")]
    pub page83: ::prost::alloc::string::String,
    /// Serial number reported by the disk.
    #[prost(string, tag = "2")]
    pub serial_number: ::prost::alloc::string::String,
}
/// Where a disk is attached, as the storage adapter reports it.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct DiskLocation {
    /// Adapter number, as text.
    #[prost(string, tag = "1")]
    pub adapter: ::prost::alloc::string::String,
    /// Bus (port) number, as text; may be empty.
    #[prost(string, tag = "2")]
    pub bus: ::prost::alloc::string::String,
    /// Target number, as text.
    #[prost(string, tag = "3")]
    pub target: ::prost::alloc::string::String,
    /// Logical unit number, as text.
    #[prost(string, tag = "4")]
    pub lunid: ::prost::alloc::string::String,
}
/// Request of GetDiskState.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct GetDiskStateRequest {
    /// Disk number as Windows numbers disks (0 is usually the OS disk).
    #[prost(uint32, tag = "1")]
    pub disk_number: u32,
}
/// Response of GetDiskState.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct GetDiskStateResponse {
    /// Whether the disk is online.
    #[prost(bool, tag = "1")]
    pub is_online: bool,
}
/// Request of GetDiskStats.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct GetDiskStatsRequest {
    /// Disk number as Windows numbers disks (0 is usually the OS disk).
    #[prost(uint32, tag = "1")]
    pub disk_number: u32,
}
/// Response of GetDiskStats.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct GetDiskStatsResponse {
    /// Size in bytes.
    #[prost(int64, tag = "1")]
    pub total_bytes: i64,
}
/// Request of ListDiskIDs.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct ListDiskIDsRequest {}
/// Response of ListDiskIDs.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ListDiskIDsResponse {
    /// Identifiers of every disk, keyed by disk number as text.
    #[prost(map = "uint32, message", tag = "1")]
    pub disk_i_ds: ::std::collections::HashMap<u32, DiskIDs>,
}
/// Request of ListDiskLocations.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct ListDiskLocationsRequest {}
/// Response of ListDiskLocations.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ListDiskLocationsResponse {
    /// Locations of every disk, keyed by disk number.
    #[prost(map = "uint32, message", tag = "1")]
    pub disk_locations: ::std::collections::HashMap<u32, DiskLocation>,
}
/// Request of PartitionDisk.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct PartitionDiskRequest {
    /// Disk number as Windows numbers disks (0 is usually the OS disk).
    #[prost(uint32, tag = "1")]
    pub disk_number: u32,
}
/// Response of PartitionDisk.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct PartitionDiskResponse {}
/// Request of Rescan.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct RescanRequest {}
/// Response of Rescan.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct RescanResponse {}
/// Request of SetDiskState.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct SetDiskStateRequest {
    /// Disk number as Windows numbers disks (0 is usually the OS disk).
    #[prost(uint32, tag = "1")]
    pub disk_number: u32,
    /// Whether the disk is online.
    #[prost(bool, tag = "2")]
    pub is_online: bool,
}
/// Response of SetDiskState.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct SetDiskStateResponse {}
/// Generated server implementations.
pub mod disk_server {
    #![allow(
        unused_variables,
        dead_code,
        missing_docs,
        clippy::wildcard_imports,
        clippy::let_unit_value,
    )]
    use tonic::codegen::*;
    /// Generated trait containing gRPC methods that should be implemented for use with DiskServer.
    #[async_trait]
    pub trait Disk: std::marker::Send + std::marker::Sync + 'static {
        /// Tells whether a disk is online.
        async fn get_disk_state(
            &self,
            request: tonic::Request<super::GetDiskStateRequest>,
        ) -> std::result::Result<
            tonic::Response<super::GetDiskStateResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Returns the size of a disk in bytes.
        async fn get_disk_stats(
            &self,
            request: tonic::Request<super::GetDiskStatsRequest>,
        ) -> std::result::Result<
            tonic::Response<super::GetDiskStatsResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Lists the identifiers (page83, serial number) of every disk, keyed by disk number.
        async fn list_disk_i_ds(
            &self,
            request: tonic::Request<super::ListDiskIDsRequest>,
        ) -> std::result::Result<
            tonic::Response<super::ListDiskIDsResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Lists every disk with its adapter, bus, target and LUN, keyed by disk number.
        async fn list_disk_locations(
            &self,
            request: tonic::Request<super::ListDiskLocationsRequest>,
        ) -> std::result::Result<
            tonic::Response<super::ListDiskLocationsResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Initialises a disk as GPT and creates one data partition over its free space; does nothing if the disk is already partitioned.
        async fn partition_disk(
            &self,
            request: tonic::Request<super::PartitionDiskRequest>,
        ) -> std::result::Result<
            tonic::Response<super::PartitionDiskResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Asks the storage stack to look for newly attached or resized disks.
        async fn rescan(
            &self,
            request: tonic::Request<super::RescanRequest>,
        ) -> std::result::Result<tonic::Response<super::RescanResponse>, tonic::Status> {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Brings a disk online or takes it offline.
        async fn set_disk_state(
            &self,
            request: tonic::Request<super::SetDiskStateRequest>,
        ) -> std::result::Result<
            tonic::Response<super::SetDiskStateResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
    }
    /// The disk service of this version.
    #[derive(Debug)]
    pub struct DiskServer<T> {
        inner: Arc<T>,
        accept_compression_encodings: EnabledCompressionEncodings,
        send_compression_encodings: EnabledCompressionEncodings,
        max_decoding_message_size: Option<usize>,
        max_encoding_message_size: Option<usize>,
    }
    impl<T> DiskServer<T> {
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
    impl<T, B> tonic::codegen::Service<http::Request<B>> for DiskServer<T>
    where
        T: Disk,
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
                "/v1beta3.Disk/GetDiskState" => {
                    #[allow(non_camel_case_types)]
                    struct GetDiskStateSvc<T: Disk>(pub Arc<T>);
                    impl<T: Disk> tonic::server::UnaryService<super::GetDiskStateRequest>
                    for GetDiskStateSvc<T> {
                        type Response = super::GetDiskStateResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::GetDiskStateRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Disk>::get_disk_state(&inner, request).await
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
                        let method = GetDiskStateSvc(inner);
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
                "/v1beta3.Disk/GetDiskStats" => {
                    #[allow(non_camel_case_types)]
                    struct GetDiskStatsSvc<T: Disk>(pub Arc<T>);
                    impl<T: Disk> tonic::server::UnaryService<super::GetDiskStatsRequest>
                    for GetDiskStatsSvc<T> {
                        type Response = super::GetDiskStatsResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::GetDiskStatsRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Disk>::get_disk_stats(&inner, request).await
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
                        let method = GetDiskStatsSvc(inner);
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
                "/v1beta3.Disk/ListDiskIDs" => {
                    #[allow(non_camel_case_types)]
                    struct ListDiskIDsSvc<T: Disk>(pub Arc<T>);
                    impl<T: Disk> tonic::server::UnaryService<super::ListDiskIDsRequest>
                    for ListDiskIDsSvc<T> {
                        type Response = super::ListDiskIDsResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::ListDiskIDsRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Disk>::list_disk_i_ds(&inner, request).await
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
                        let method = ListDiskIDsSvc(inner);
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
                "/v1beta3.Disk/ListDiskLocations" => {
                    #[allow(non_camel_case_types)]
                    struct ListDiskLocationsSvc<T: Disk>(pub Arc<T>);
                    impl<
                        T: Disk,
                    > tonic::server::UnaryService<super::ListDiskLocationsRequest>
                    for ListDiskLocationsSvc<T> {
                        type Response = super::ListDiskLocationsResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::ListDiskLocationsRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Disk>::list_disk_locations(&inner, request).await
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
                        let method = ListDiskLocationsSvc(inner);
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
                "/v1beta3.Disk/PartitionDisk" => {
                    #[allow(non_camel_case_types)]
                    struct PartitionDiskSvc<T: Disk>(pub Arc<T>);
                    impl<
                        T: Disk,
                    > tonic::server::UnaryService<super::PartitionDiskRequest>
                    for PartitionDiskSvc<T> {
                        type Response = super::PartitionDiskResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::PartitionDiskRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Disk>::partition_disk(&inner, request).await
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
                        let method = PartitionDiskSvc(inner);
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
                "/v1beta3.Disk/Rescan" => {
                    #[allow(non_camel_case_types)]
                    struct RescanSvc<T: Disk>(pub Arc<T>);
                    impl<T: Disk> tonic::server::UnaryService<super::RescanRequest>
                    for RescanSvc<T> {
                        type Response = super::RescanResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::RescanRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Disk>::rescan(&inner, request).await
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
                        let method = RescanSvc(inner);
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
                "/v1beta3.Disk/SetDiskState" => {
                    #[allow(non_camel_case_types)]
                    struct SetDiskStateSvc<T: Disk>(pub Arc<T>);
                    impl<T: Disk> tonic::server::UnaryService<super::SetDiskStateRequest>
                    for SetDiskStateSvc<T> {
                        type Response = super::SetDiskStateResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::SetDiskStateRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Disk>::set_disk_state(&inner, request).await
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
                        let method = SetDiskStateSvc(inner);
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
    impl<T> Clone for DiskServer<T> {
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
    pub const SERVICE_NAME: &str = "v1beta3.Disk";
    impl<T> tonic::server::NamedService for DiskServer<T> {
        const NAME: &'static str = SERVICE_NAME;
    }
}
/// Name of the API group of this module.
pub const GROUP: &str = "disk";
/// Version of this module.
pub const VERSION: &str = "v1beta3";
/// Fully qualified gRPC service name, as it appears on the wire.
pub const SERVICE_NAME: &str = "v1beta3.Disk";
/// The RPCs of this version, as named on the wire.
pub const RPCS: &[&str] = &[
    "GetDiskState",
    "GetDiskStats",
    "ListDiskIDs",
    "ListDiskLocations",
    "PartitionDisk",
    "Rescan",
    "SetDiskState",
];
/**The `v1beta3.Disk` service as a trait: one method per RPC of `disk` v1beta3.

The disk service of this version.

Implemented by [`Client`] (a connection to the proxy) and, with the `mock` feature, by the in-process mock host, so driver code written against `&dyn DiskApi` runs against either. Object safe, `Send + Sync`.*/
#[cfg_attr(feature = "mockall", ::mockall::automock)]
#[::async_trait::async_trait]
pub trait DiskApi: Send + Sync {
    ///Tells whether a disk is online.
    ///
    ///`/v1beta3.Disk/GetDiskState`
    async fn get_disk_state(
        &self,
        request: GetDiskStateRequest,
    ) -> ::core::result::Result<GetDiskStateResponse, crate::Error>;
    ///Returns the size of a disk in bytes.
    ///
    ///`/v1beta3.Disk/GetDiskStats`
    async fn get_disk_stats(
        &self,
        request: GetDiskStatsRequest,
    ) -> ::core::result::Result<GetDiskStatsResponse, crate::Error>;
    ///Lists the identifiers (page83, serial number) of every disk, keyed by disk number.
    ///
    ///`/v1beta3.Disk/ListDiskIDs`
    async fn list_disk_ids(
        &self,
        request: ListDiskIDsRequest,
    ) -> ::core::result::Result<ListDiskIDsResponse, crate::Error>;
    ///Lists every disk with its adapter, bus, target and LUN, keyed by disk number.
    ///
    ///`/v1beta3.Disk/ListDiskLocations`
    async fn list_disk_locations(
        &self,
        request: ListDiskLocationsRequest,
    ) -> ::core::result::Result<ListDiskLocationsResponse, crate::Error>;
    ///Initialises a disk as GPT and creates one data partition over its free space; does nothing if the disk is already partitioned.
    ///
    ///`/v1beta3.Disk/PartitionDisk`
    async fn partition_disk(
        &self,
        request: PartitionDiskRequest,
    ) -> ::core::result::Result<PartitionDiskResponse, crate::Error>;
    ///Asks the storage stack to look for newly attached or resized disks.
    ///
    ///`/v1beta3.Disk/Rescan`
    async fn rescan(
        &self,
        request: RescanRequest,
    ) -> ::core::result::Result<RescanResponse, crate::Error>;
    ///Brings a disk online or takes it offline.
    ///
    ///`/v1beta3.Disk/SetDiskState`
    async fn set_disk_state(
        &self,
        request: SetDiskStateRequest,
    ) -> ::core::result::Result<SetDiskStateResponse, crate::Error>;
}
/**Client of `v1beta3.Disk`, the `disk` API v1beta3.

Cheap to clone; clones share one HTTP/2 connection and calls from many tasks are multiplexed on it. The RPCs are the methods of [`DiskApi`].*/
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
    ///Connects to the default endpoint of `disk` v1beta3: the named pipe `\\.\pipe\csi-proxy-disk-v1beta3` on Windows, elsewhere the socket `csi-proxy-disk-v1beta3.sock` in the directory named by `CSI_PROXY_SOCKET_DIR`.
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
impl DiskApi for Client {
    async fn get_disk_state(
        &self,
        request: GetDiskStateRequest,
    ) -> ::core::result::Result<GetDiskStateResponse, crate::Error> {
        self.connection.unary("/v1beta3.Disk/GetDiskState", request).await
    }
    async fn get_disk_stats(
        &self,
        request: GetDiskStatsRequest,
    ) -> ::core::result::Result<GetDiskStatsResponse, crate::Error> {
        self.connection.unary("/v1beta3.Disk/GetDiskStats", request).await
    }
    async fn list_disk_ids(
        &self,
        request: ListDiskIDsRequest,
    ) -> ::core::result::Result<ListDiskIDsResponse, crate::Error> {
        self.connection.unary("/v1beta3.Disk/ListDiskIDs", request).await
    }
    async fn list_disk_locations(
        &self,
        request: ListDiskLocationsRequest,
    ) -> ::core::result::Result<ListDiskLocationsResponse, crate::Error> {
        self.connection.unary("/v1beta3.Disk/ListDiskLocations", request).await
    }
    async fn partition_disk(
        &self,
        request: PartitionDiskRequest,
    ) -> ::core::result::Result<PartitionDiskResponse, crate::Error> {
        self.connection.unary("/v1beta3.Disk/PartitionDisk", request).await
    }
    async fn rescan(
        &self,
        request: RescanRequest,
    ) -> ::core::result::Result<RescanResponse, crate::Error> {
        self.connection.unary("/v1beta3.Disk/Rescan", request).await
    }
    async fn set_disk_state(
        &self,
        request: SetDiskStateRequest,
    ) -> ::core::result::Result<SetDiskStateResponse, crate::Error> {
        self.connection.unary("/v1beta3.Disk/SetDiskState", request).await
    }
}
#[cfg(feature = "mock")]
#[::async_trait::async_trait]
impl DiskApi for crate::mock::MockHost {
    async fn get_disk_state(
        &self,
        request: GetDiskStateRequest,
    ) -> ::core::result::Result<GetDiskStateResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "GetDiskState",
        };
        self.before(&RPC, &request).await?;
        let result = disk_server::Disk::get_disk_state(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn get_disk_stats(
        &self,
        request: GetDiskStatsRequest,
    ) -> ::core::result::Result<GetDiskStatsResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "GetDiskStats",
        };
        self.before(&RPC, &request).await?;
        let result = disk_server::Disk::get_disk_stats(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn list_disk_ids(
        &self,
        request: ListDiskIDsRequest,
    ) -> ::core::result::Result<ListDiskIDsResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "ListDiskIDs",
        };
        self.before(&RPC, &request).await?;
        let result = disk_server::Disk::list_disk_i_ds(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn list_disk_locations(
        &self,
        request: ListDiskLocationsRequest,
    ) -> ::core::result::Result<ListDiskLocationsResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "ListDiskLocations",
        };
        self.before(&RPC, &request).await?;
        let result = disk_server::Disk::list_disk_locations(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn partition_disk(
        &self,
        request: PartitionDiskRequest,
    ) -> ::core::result::Result<PartitionDiskResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "PartitionDisk",
        };
        self.before(&RPC, &request).await?;
        let result = disk_server::Disk::partition_disk(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn rescan(
        &self,
        request: RescanRequest,
    ) -> ::core::result::Result<RescanResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "Rescan",
        };
        self.before(&RPC, &request).await?;
        let result = disk_server::Disk::rescan(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn set_disk_state(
        &self,
        request: SetDiskStateRequest,
    ) -> ::core::result::Result<SetDiskStateResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "SetDiskState",
        };
        self.before(&RPC, &request).await?;
        let result = disk_server::Disk::set_disk_state(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
}
