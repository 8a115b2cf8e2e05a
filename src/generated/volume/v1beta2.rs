//! CSI Proxy volume API, version v1beta2.
//! Volume group: volumes on disk partitions: format, mount into a directory, resize, statistics and path lookups.
//! Served on the named pipe \\.\pipe\csi-proxy-volume-v1beta2.
/// Request of DismountVolume.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct DismountVolumeRequest {
    /// Volume ID, `\\?\Volume{GUID}\`.
    #[prost(string, tag = "1")]
    pub volume_id: ::prost::alloc::string::String,
    /// Directory to mount at or unmount from.
    #[prost(string, tag = "2")]
    pub path: ::prost::alloc::string::String,
}
/// Response of DismountVolume.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct DismountVolumeResponse {}
/// Request of FormatVolume.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct FormatVolumeRequest {
    /// Volume ID, `\\?\Volume{GUID}\`.
    #[prost(string, tag = "1")]
    pub volume_id: ::prost::alloc::string::String,
}
/// Response of FormatVolume.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct FormatVolumeResponse {}
/// Request of IsVolumeFormatted.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct IsVolumeFormattedRequest {
    /// Volume ID, `\\?\Volume{GUID}\`.
    #[prost(string, tag = "1")]
    pub volume_id: ::prost::alloc::string::String,
}
/// Response of IsVolumeFormatted.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct IsVolumeFormattedResponse {
    /// Whether the volume has a file system.
    #[prost(bool, tag = "1")]
    pub formatted: bool,
}
/// Request of ListVolumesOnDisk.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct ListVolumesOnDiskRequest {
    /// Disk number, as decimal text.
    #[prost(string, tag = "1")]
    pub disk_id: ::prost::alloc::string::String,
}
/// Response of ListVolumesOnDisk.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct ListVolumesOnDiskResponse {
    /// Volume IDs, `\\?\Volume{GUID}\`.
    #[prost(string, repeated, tag = "1")]
    pub volume_ids: ::prost::alloc::vec::Vec<::prost::alloc::string::String>,
}
/// Request of MountVolume.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct MountVolumeRequest {
    /// Volume ID, `\\?\Volume{GUID}\`.
    #[prost(string, tag = "1")]
    pub volume_id: ::prost::alloc::string::String,
    /// Directory to mount at or unmount from.
    #[prost(string, tag = "2")]
    pub path: ::prost::alloc::string::String,
}
/// Response of MountVolume.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct MountVolumeResponse {}
/// Request of ResizeVolume.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct ResizeVolumeRequest {
    /// Volume ID, `\\?\Volume{GUID}\`.
    #[prost(string, tag = "1")]
    pub volume_id: ::prost::alloc::string::String,
    /// New size in bytes; 0 means all the space available.
    #[prost(int64, tag = "2")]
    pub size: i64,
}
/// Response of ResizeVolume.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct ResizeVolumeResponse {}
/// Request of GetVolumeDiskNumber.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct VolumeDiskNumberRequest {
    /// Volume ID, `\\?\Volume{GUID}\`.
    #[prost(string, tag = "1")]
    pub volume_id: ::prost::alloc::string::String,
}
/// Response of GetVolumeDiskNumber.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct VolumeDiskNumberResponse {
    /// Disk number.
    #[prost(int64, tag = "1")]
    pub disk_number: i64,
}
/// Request of GetVolumeIDFromMount.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct VolumeIdFromMountRequest {
    /// Path to look up.
    #[prost(string, tag = "1")]
    pub mount: ::prost::alloc::string::String,
}
/// Response of GetVolumeIDFromMount.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct VolumeIdFromMountResponse {
    /// The volume found, `\\?\Volume{GUID}\`.
    #[prost(string, tag = "1")]
    pub volume_id: ::prost::alloc::string::String,
}
/// Request of VolumeStats.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct VolumeStatsRequest {
    /// Volume ID, `\\?\Volume{GUID}\`.
    #[prost(string, tag = "1")]
    pub volume_id: ::prost::alloc::string::String,
}
/// Response of VolumeStats.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct VolumeStatsResponse {
    /// Size in bytes.
    #[prost(int64, tag = "1")]
    pub volume_size: i64,
    /// Bytes in use.
    #[prost(int64, tag = "2")]
    pub volume_used_size: i64,
}
/// Request of WriteVolumeCache.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct WriteVolumeCacheRequest {
    /// Volume ID, `\\?\Volume{GUID}\`.
    #[prost(string, tag = "1")]
    pub volume_id: ::prost::alloc::string::String,
}
/// Response of WriteVolumeCache.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct WriteVolumeCacheResponse {}
/// Generated server implementations.
pub mod volume_server {
    #![allow(
        unused_variables,
        dead_code,
        missing_docs,
        clippy::wildcard_imports,
        clippy::let_unit_value,
    )]
    use tonic::codegen::*;
    /// Generated trait containing gRPC methods that should be implemented for use with VolumeServer.
    #[async_trait]
    pub trait Volume: std::marker::Send + std::marker::Sync + 'static {
        /// Flushes a volume and removes its mount point at a directory.
        async fn dismount_volume(
            &self,
            request: tonic::Request<super::DismountVolumeRequest>,
        ) -> std::result::Result<
            tonic::Response<super::DismountVolumeResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Formats a volume with NTFS.
        async fn format_volume(
            &self,
            request: tonic::Request<super::FormatVolumeRequest>,
        ) -> std::result::Result<
            tonic::Response<super::FormatVolumeResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Returns the number of the disk a volume lives on.
        async fn get_volume_disk_number(
            &self,
            request: tonic::Request<super::VolumeDiskNumberRequest>,
        ) -> std::result::Result<
            tonic::Response<super::VolumeDiskNumberResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Finds the volume mounted at, or reached through, a path.
        async fn get_volume_id_from_mount(
            &self,
            request: tonic::Request<super::VolumeIdFromMountRequest>,
        ) -> std::result::Result<
            tonic::Response<super::VolumeIdFromMountResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Tells whether a volume carries a file system.
        async fn is_volume_formatted(
            &self,
            request: tonic::Request<super::IsVolumeFormattedRequest>,
        ) -> std::result::Result<
            tonic::Response<super::IsVolumeFormattedResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Lists the volume IDs on a disk.
        async fn list_volumes_on_disk(
            &self,
            request: tonic::Request<super::ListVolumesOnDiskRequest>,
        ) -> std::result::Result<
            tonic::Response<super::ListVolumesOnDiskResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Mounts a volume at a directory (the directory becomes a mount point).
        async fn mount_volume(
            &self,
            request: tonic::Request<super::MountVolumeRequest>,
        ) -> std::result::Result<
            tonic::Response<super::MountVolumeResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Grows or shrinks a volume's partition; a size of 0 means all the space available.
        async fn resize_volume(
            &self,
            request: tonic::Request<super::ResizeVolumeRequest>,
        ) -> std::result::Result<
            tonic::Response<super::ResizeVolumeResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Returns a volume's total and used bytes.
        async fn volume_stats(
            &self,
            request: tonic::Request<super::VolumeStatsRequest>,
        ) -> std::result::Result<
            tonic::Response<super::VolumeStatsResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Flushes a volume's write cache to disk.
        async fn write_volume_cache(
            &self,
            request: tonic::Request<super::WriteVolumeCacheRequest>,
        ) -> std::result::Result<
            tonic::Response<super::WriteVolumeCacheResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
    }
    /// The volume service of this version.
    #[derive(Debug)]
    pub struct VolumeServer<T> {
        inner: Arc<T>,
        accept_compression_encodings: EnabledCompressionEncodings,
        send_compression_encodings: EnabledCompressionEncodings,
        max_decoding_message_size: Option<usize>,
        max_encoding_message_size: Option<usize>,
    }
    impl<T> VolumeServer<T> {
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
    impl<T, B> tonic::codegen::Service<http::Request<B>> for VolumeServer<T>
    where
        T: Volume,
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
                "/v1beta2.Volume/DismountVolume" => {
                    #[allow(non_camel_case_types)]
                    struct DismountVolumeSvc<T: Volume>(pub Arc<T>);
                    impl<
                        T: Volume,
                    > tonic::server::UnaryService<super::DismountVolumeRequest>
                    for DismountVolumeSvc<T> {
                        type Response = super::DismountVolumeResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::DismountVolumeRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Volume>::dismount_volume(&inner, request).await
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
                        let method = DismountVolumeSvc(inner);
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
                "/v1beta2.Volume/FormatVolume" => {
                    #[allow(non_camel_case_types)]
                    struct FormatVolumeSvc<T: Volume>(pub Arc<T>);
                    impl<
                        T: Volume,
                    > tonic::server::UnaryService<super::FormatVolumeRequest>
                    for FormatVolumeSvc<T> {
                        type Response = super::FormatVolumeResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::FormatVolumeRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Volume>::format_volume(&inner, request).await
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
                        let method = FormatVolumeSvc(inner);
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
                "/v1beta2.Volume/GetVolumeDiskNumber" => {
                    #[allow(non_camel_case_types)]
                    struct GetVolumeDiskNumberSvc<T: Volume>(pub Arc<T>);
                    impl<
                        T: Volume,
                    > tonic::server::UnaryService<super::VolumeDiskNumberRequest>
                    for GetVolumeDiskNumberSvc<T> {
                        type Response = super::VolumeDiskNumberResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::VolumeDiskNumberRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Volume>::get_volume_disk_number(&inner, request).await
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
                        let method = GetVolumeDiskNumberSvc(inner);
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
                "/v1beta2.Volume/GetVolumeIDFromMount" => {
                    #[allow(non_camel_case_types)]
                    struct GetVolumeIDFromMountSvc<T: Volume>(pub Arc<T>);
                    impl<
                        T: Volume,
                    > tonic::server::UnaryService<super::VolumeIdFromMountRequest>
                    for GetVolumeIDFromMountSvc<T> {
                        type Response = super::VolumeIdFromMountResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::VolumeIdFromMountRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Volume>::get_volume_id_from_mount(&inner, request)
                                    .await
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
                        let method = GetVolumeIDFromMountSvc(inner);
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
                "/v1beta2.Volume/IsVolumeFormatted" => {
                    #[allow(non_camel_case_types)]
                    struct IsVolumeFormattedSvc<T: Volume>(pub Arc<T>);
                    impl<
                        T: Volume,
                    > tonic::server::UnaryService<super::IsVolumeFormattedRequest>
                    for IsVolumeFormattedSvc<T> {
                        type Response = super::IsVolumeFormattedResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::IsVolumeFormattedRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Volume>::is_volume_formatted(&inner, request).await
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
                        let method = IsVolumeFormattedSvc(inner);
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
                "/v1beta2.Volume/ListVolumesOnDisk" => {
                    #[allow(non_camel_case_types)]
                    struct ListVolumesOnDiskSvc<T: Volume>(pub Arc<T>);
                    impl<
                        T: Volume,
                    > tonic::server::UnaryService<super::ListVolumesOnDiskRequest>
                    for ListVolumesOnDiskSvc<T> {
                        type Response = super::ListVolumesOnDiskResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::ListVolumesOnDiskRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Volume>::list_volumes_on_disk(&inner, request).await
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
                        let method = ListVolumesOnDiskSvc(inner);
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
                "/v1beta2.Volume/MountVolume" => {
                    #[allow(non_camel_case_types)]
                    struct MountVolumeSvc<T: Volume>(pub Arc<T>);
                    impl<
                        T: Volume,
                    > tonic::server::UnaryService<super::MountVolumeRequest>
                    for MountVolumeSvc<T> {
                        type Response = super::MountVolumeResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::MountVolumeRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Volume>::mount_volume(&inner, request).await
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
                        let method = MountVolumeSvc(inner);
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
                "/v1beta2.Volume/ResizeVolume" => {
                    #[allow(non_camel_case_types)]
                    struct ResizeVolumeSvc<T: Volume>(pub Arc<T>);
                    impl<
                        T: Volume,
                    > tonic::server::UnaryService<super::ResizeVolumeRequest>
                    for ResizeVolumeSvc<T> {
                        type Response = super::ResizeVolumeResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::ResizeVolumeRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Volume>::resize_volume(&inner, request).await
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
                        let method = ResizeVolumeSvc(inner);
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
                "/v1beta2.Volume/VolumeStats" => {
                    #[allow(non_camel_case_types)]
                    struct VolumeStatsSvc<T: Volume>(pub Arc<T>);
                    impl<
                        T: Volume,
                    > tonic::server::UnaryService<super::VolumeStatsRequest>
                    for VolumeStatsSvc<T> {
                        type Response = super::VolumeStatsResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::VolumeStatsRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Volume>::volume_stats(&inner, request).await
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
                        let method = VolumeStatsSvc(inner);
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
                "/v1beta2.Volume/WriteVolumeCache" => {
                    #[allow(non_camel_case_types)]
                    struct WriteVolumeCacheSvc<T: Volume>(pub Arc<T>);
                    impl<
                        T: Volume,
                    > tonic::server::UnaryService<super::WriteVolumeCacheRequest>
                    for WriteVolumeCacheSvc<T> {
                        type Response = super::WriteVolumeCacheResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::WriteVolumeCacheRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Volume>::write_volume_cache(&inner, request).await
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
                        let method = WriteVolumeCacheSvc(inner);
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
    impl<T> Clone for VolumeServer<T> {
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
    pub const SERVICE_NAME: &str = "v1beta2.Volume";
    impl<T> tonic::server::NamedService for VolumeServer<T> {
        const NAME: &'static str = SERVICE_NAME;
    }
}
/// Name of the API group of this module.
pub const GROUP: &str = "volume";
/// Version of this module.
pub const VERSION: &str = "v1beta2";
/// Fully qualified gRPC service name, as it appears on the wire.
pub const SERVICE_NAME: &str = "v1beta2.Volume";
/// The RPCs of this version, as named on the wire.
pub const RPCS: &[&str] = &[
    "DismountVolume",
    "FormatVolume",
    "GetVolumeDiskNumber",
    "GetVolumeIDFromMount",
    "IsVolumeFormatted",
    "ListVolumesOnDisk",
    "MountVolume",
    "ResizeVolume",
    "VolumeStats",
    "WriteVolumeCache",
];
/**The `v1beta2.Volume` service as a trait: one method per RPC of `volume` v1beta2.

The volume service of this version.

Implemented by [`Client`] (a connection to the proxy) and, with the `mock` feature, by the in-process mock host, so driver code written against `&dyn VolumeApi` runs against either. Object safe, `Send + Sync`.*/
#[cfg_attr(feature = "mockall", ::mockall::automock)]
#[::async_trait::async_trait]
pub trait VolumeApi: Send + Sync {
    ///Flushes a volume and removes its mount point at a directory.
    ///
    ///`/v1beta2.Volume/DismountVolume`
    async fn dismount_volume(
        &self,
        request: DismountVolumeRequest,
    ) -> ::core::result::Result<DismountVolumeResponse, crate::Error>;
    ///Formats a volume with NTFS.
    ///
    ///`/v1beta2.Volume/FormatVolume`
    async fn format_volume(
        &self,
        request: FormatVolumeRequest,
    ) -> ::core::result::Result<FormatVolumeResponse, crate::Error>;
    ///Returns the number of the disk a volume lives on.
    ///
    ///`/v1beta2.Volume/GetVolumeDiskNumber`
    async fn get_volume_disk_number(
        &self,
        request: VolumeDiskNumberRequest,
    ) -> ::core::result::Result<VolumeDiskNumberResponse, crate::Error>;
    ///Finds the volume mounted at, or reached through, a path.
    ///
    ///`/v1beta2.Volume/GetVolumeIDFromMount`
    async fn get_volume_id_from_mount(
        &self,
        request: VolumeIdFromMountRequest,
    ) -> ::core::result::Result<VolumeIdFromMountResponse, crate::Error>;
    ///Tells whether a volume carries a file system.
    ///
    ///`/v1beta2.Volume/IsVolumeFormatted`
    async fn is_volume_formatted(
        &self,
        request: IsVolumeFormattedRequest,
    ) -> ::core::result::Result<IsVolumeFormattedResponse, crate::Error>;
    ///Lists the volume IDs on a disk.
    ///
    ///`/v1beta2.Volume/ListVolumesOnDisk`
    async fn list_volumes_on_disk(
        &self,
        request: ListVolumesOnDiskRequest,
    ) -> ::core::result::Result<ListVolumesOnDiskResponse, crate::Error>;
    ///Mounts a volume at a directory (the directory becomes a mount point).
    ///
    ///`/v1beta2.Volume/MountVolume`
    async fn mount_volume(
        &self,
        request: MountVolumeRequest,
    ) -> ::core::result::Result<MountVolumeResponse, crate::Error>;
    ///Grows or shrinks a volume's partition; a size of 0 means all the space available.
    ///
    ///`/v1beta2.Volume/ResizeVolume`
    async fn resize_volume(
        &self,
        request: ResizeVolumeRequest,
    ) -> ::core::result::Result<ResizeVolumeResponse, crate::Error>;
    ///Returns a volume's total and used bytes.
    ///
    ///`/v1beta2.Volume/VolumeStats`
    async fn volume_stats(
        &self,
        request: VolumeStatsRequest,
    ) -> ::core::result::Result<VolumeStatsResponse, crate::Error>;
    ///Flushes a volume's write cache to disk.
    ///
    ///`/v1beta2.Volume/WriteVolumeCache`
    async fn write_volume_cache(
        &self,
        request: WriteVolumeCacheRequest,
    ) -> ::core::result::Result<WriteVolumeCacheResponse, crate::Error>;
}
/**Client of `v1beta2.Volume`, the `volume` API v1beta2.

Cheap to clone; clones share one HTTP/2 connection and calls from many tasks are multiplexed on it. The RPCs are the methods of [`VolumeApi`].*/
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
    ///Connects to the default endpoint of `volume` v1beta2: the named pipe `\\.\pipe\csi-proxy-volume-v1beta2` on Windows, elsewhere the socket `csi-proxy-volume-v1beta2.sock` in the directory named by `CSI_PROXY_SOCKET_DIR`.
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
impl VolumeApi for Client {
    async fn dismount_volume(
        &self,
        request: DismountVolumeRequest,
    ) -> ::core::result::Result<DismountVolumeResponse, crate::Error> {
        self.connection.unary("/v1beta2.Volume/DismountVolume", request).await
    }
    async fn format_volume(
        &self,
        request: FormatVolumeRequest,
    ) -> ::core::result::Result<FormatVolumeResponse, crate::Error> {
        self.connection.unary("/v1beta2.Volume/FormatVolume", request).await
    }
    async fn get_volume_disk_number(
        &self,
        request: VolumeDiskNumberRequest,
    ) -> ::core::result::Result<VolumeDiskNumberResponse, crate::Error> {
        self.connection.unary("/v1beta2.Volume/GetVolumeDiskNumber", request).await
    }
    async fn get_volume_id_from_mount(
        &self,
        request: VolumeIdFromMountRequest,
    ) -> ::core::result::Result<VolumeIdFromMountResponse, crate::Error> {
        self.connection.unary("/v1beta2.Volume/GetVolumeIDFromMount", request).await
    }
    async fn is_volume_formatted(
        &self,
        request: IsVolumeFormattedRequest,
    ) -> ::core::result::Result<IsVolumeFormattedResponse, crate::Error> {
        self.connection.unary("/v1beta2.Volume/IsVolumeFormatted", request).await
    }
    async fn list_volumes_on_disk(
        &self,
        request: ListVolumesOnDiskRequest,
    ) -> ::core::result::Result<ListVolumesOnDiskResponse, crate::Error> {
        self.connection.unary("/v1beta2.Volume/ListVolumesOnDisk", request).await
    }
    async fn mount_volume(
        &self,
        request: MountVolumeRequest,
    ) -> ::core::result::Result<MountVolumeResponse, crate::Error> {
        self.connection.unary("/v1beta2.Volume/MountVolume", request).await
    }
    async fn resize_volume(
        &self,
        request: ResizeVolumeRequest,
    ) -> ::core::result::Result<ResizeVolumeResponse, crate::Error> {
        self.connection.unary("/v1beta2.Volume/ResizeVolume", request).await
    }
    async fn volume_stats(
        &self,
        request: VolumeStatsRequest,
    ) -> ::core::result::Result<VolumeStatsResponse, crate::Error> {
        self.connection.unary("/v1beta2.Volume/VolumeStats", request).await
    }
    async fn write_volume_cache(
        &self,
        request: WriteVolumeCacheRequest,
    ) -> ::core::result::Result<WriteVolumeCacheResponse, crate::Error> {
        self.connection.unary("/v1beta2.Volume/WriteVolumeCache", request).await
    }
}
#[cfg(feature = "mock")]
#[::async_trait::async_trait]
impl VolumeApi for crate::mock::MockHost {
    async fn dismount_volume(
        &self,
        request: DismountVolumeRequest,
    ) -> ::core::result::Result<DismountVolumeResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "DismountVolume",
        };
        self.before(&RPC, &request).await?;
        let result = volume_server::Volume::dismount_volume(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn format_volume(
        &self,
        request: FormatVolumeRequest,
    ) -> ::core::result::Result<FormatVolumeResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "FormatVolume",
        };
        self.before(&RPC, &request).await?;
        let result = volume_server::Volume::format_volume(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn get_volume_disk_number(
        &self,
        request: VolumeDiskNumberRequest,
    ) -> ::core::result::Result<VolumeDiskNumberResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "GetVolumeDiskNumber",
        };
        self.before(&RPC, &request).await?;
        let result = volume_server::Volume::get_volume_disk_number(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn get_volume_id_from_mount(
        &self,
        request: VolumeIdFromMountRequest,
    ) -> ::core::result::Result<VolumeIdFromMountResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "GetVolumeIDFromMount",
        };
        self.before(&RPC, &request).await?;
        let result = volume_server::Volume::get_volume_id_from_mount(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn is_volume_formatted(
        &self,
        request: IsVolumeFormattedRequest,
    ) -> ::core::result::Result<IsVolumeFormattedResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "IsVolumeFormatted",
        };
        self.before(&RPC, &request).await?;
        let result = volume_server::Volume::is_volume_formatted(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn list_volumes_on_disk(
        &self,
        request: ListVolumesOnDiskRequest,
    ) -> ::core::result::Result<ListVolumesOnDiskResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "ListVolumesOnDisk",
        };
        self.before(&RPC, &request).await?;
        let result = volume_server::Volume::list_volumes_on_disk(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn mount_volume(
        &self,
        request: MountVolumeRequest,
    ) -> ::core::result::Result<MountVolumeResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "MountVolume",
        };
        self.before(&RPC, &request).await?;
        let result = volume_server::Volume::mount_volume(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn resize_volume(
        &self,
        request: ResizeVolumeRequest,
    ) -> ::core::result::Result<ResizeVolumeResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "ResizeVolume",
        };
        self.before(&RPC, &request).await?;
        let result = volume_server::Volume::resize_volume(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn volume_stats(
        &self,
        request: VolumeStatsRequest,
    ) -> ::core::result::Result<VolumeStatsResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "VolumeStats",
        };
        self.before(&RPC, &request).await?;
        let result = volume_server::Volume::volume_stats(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn write_volume_cache(
        &self,
        request: WriteVolumeCacheRequest,
    ) -> ::core::result::Result<WriteVolumeCacheResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "WriteVolumeCache",
        };
        self.before(&RPC, &request).await?;
        let result = volume_server::Volume::write_volume_cache(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
}
