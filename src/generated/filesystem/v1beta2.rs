//! CSI Proxy filesystem API, version v1beta2.
//! Filesystem group: directory and link operations on paths below the kubelet working directories.
//! Served on the named pipe \\.\pipe\csi-proxy-filesystem-v1beta2.
/// Request of CreateSymlink.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct CreateSymlinkRequest {
    /// Existing path the link points to.
    #[prost(string, tag = "1")]
    pub source_path: ::prost::alloc::string::String,
    /// Path of the link to create, or to examine.
    #[prost(string, tag = "2")]
    pub target_path: ::prost::alloc::string::String,
}
/// Response of CreateSymlink.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct CreateSymlinkResponse {}
/// Request of IsSymlink.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct IsSymlinkRequest {
    /// Absolute Windows path.
    #[prost(string, tag = "1")]
    pub path: ::prost::alloc::string::String,
}
/// Response of IsSymlink.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct IsSymlinkResponse {
    /// Whether the path is a symbolic link or a mount point.
    #[prost(bool, tag = "1")]
    pub is_symlink: bool,
}
/// Request of Mkdir.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct MkdirRequest {
    /// Absolute Windows path.
    #[prost(string, tag = "1")]
    pub path: ::prost::alloc::string::String,
}
/// Response of Mkdir.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct MkdirResponse {}
/// Request of PathExists.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct PathExistsRequest {
    /// Absolute Windows path.
    #[prost(string, tag = "1")]
    pub path: ::prost::alloc::string::String,
}
/// Response of PathExists.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct PathExistsResponse {
    /// Whether the path exists.
    #[prost(bool, tag = "1")]
    pub exists: bool,
}
/// Request of Rmdir.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct RmdirRequest {
    /// Absolute Windows path.
    #[prost(string, tag = "1")]
    pub path: ::prost::alloc::string::String,
    /// Remove the whole tree, not only an empty directory.
    #[prost(bool, tag = "2")]
    pub force: bool,
}
/// Response of Rmdir.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct RmdirResponse {}
/// Generated server implementations.
pub mod filesystem_server {
    #![allow(
        unused_variables,
        dead_code,
        missing_docs,
        clippy::wildcard_imports,
        clippy::let_unit_value,
    )]
    use tonic::codegen::*;
    /// Generated trait containing gRPC methods that should be implemented for use with FilesystemServer.
    #[async_trait]
    pub trait Filesystem: std::marker::Send + std::marker::Sync + 'static {
        /// Creates a symbolic link at the target path pointing to the source path.
        async fn create_symlink(
            &self,
            request: tonic::Request<super::CreateSymlinkRequest>,
        ) -> std::result::Result<
            tonic::Response<super::CreateSymlinkResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Tells whether a path is a symbolic link or a mount point.
        async fn is_symlink(
            &self,
            request: tonic::Request<super::IsSymlinkRequest>,
        ) -> std::result::Result<
            tonic::Response<super::IsSymlinkResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Creates a directory and any missing parents; succeeds if it already exists.
        async fn mkdir(
            &self,
            request: tonic::Request<super::MkdirRequest>,
        ) -> std::result::Result<tonic::Response<super::MkdirResponse>, tonic::Status> {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Tells whether a path exists (links are not followed).
        async fn path_exists(
            &self,
            request: tonic::Request<super::PathExistsRequest>,
        ) -> std::result::Result<
            tonic::Response<super::PathExistsResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Removes a directory, or with force the whole tree below it.
        async fn rmdir(
            &self,
            request: tonic::Request<super::RmdirRequest>,
        ) -> std::result::Result<tonic::Response<super::RmdirResponse>, tonic::Status> {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
    }
    /// The filesystem service of this version.
    #[derive(Debug)]
    pub struct FilesystemServer<T> {
        inner: Arc<T>,
        accept_compression_encodings: EnabledCompressionEncodings,
        send_compression_encodings: EnabledCompressionEncodings,
        max_decoding_message_size: Option<usize>,
        max_encoding_message_size: Option<usize>,
    }
    impl<T> FilesystemServer<T> {
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
    impl<T, B> tonic::codegen::Service<http::Request<B>> for FilesystemServer<T>
    where
        T: Filesystem,
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
                "/v1beta2.Filesystem/CreateSymlink" => {
                    #[allow(non_camel_case_types)]
                    struct CreateSymlinkSvc<T: Filesystem>(pub Arc<T>);
                    impl<
                        T: Filesystem,
                    > tonic::server::UnaryService<super::CreateSymlinkRequest>
                    for CreateSymlinkSvc<T> {
                        type Response = super::CreateSymlinkResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::CreateSymlinkRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Filesystem>::create_symlink(&inner, request).await
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
                        let method = CreateSymlinkSvc(inner);
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
                "/v1beta2.Filesystem/IsSymlink" => {
                    #[allow(non_camel_case_types)]
                    struct IsSymlinkSvc<T: Filesystem>(pub Arc<T>);
                    impl<
                        T: Filesystem,
                    > tonic::server::UnaryService<super::IsSymlinkRequest>
                    for IsSymlinkSvc<T> {
                        type Response = super::IsSymlinkResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::IsSymlinkRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Filesystem>::is_symlink(&inner, request).await
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
                        let method = IsSymlinkSvc(inner);
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
                "/v1beta2.Filesystem/Mkdir" => {
                    #[allow(non_camel_case_types)]
                    struct MkdirSvc<T: Filesystem>(pub Arc<T>);
                    impl<T: Filesystem> tonic::server::UnaryService<super::MkdirRequest>
                    for MkdirSvc<T> {
                        type Response = super::MkdirResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::MkdirRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Filesystem>::mkdir(&inner, request).await
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
                        let method = MkdirSvc(inner);
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
                "/v1beta2.Filesystem/PathExists" => {
                    #[allow(non_camel_case_types)]
                    struct PathExistsSvc<T: Filesystem>(pub Arc<T>);
                    impl<
                        T: Filesystem,
                    > tonic::server::UnaryService<super::PathExistsRequest>
                    for PathExistsSvc<T> {
                        type Response = super::PathExistsResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::PathExistsRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Filesystem>::path_exists(&inner, request).await
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
                        let method = PathExistsSvc(inner);
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
                "/v1beta2.Filesystem/Rmdir" => {
                    #[allow(non_camel_case_types)]
                    struct RmdirSvc<T: Filesystem>(pub Arc<T>);
                    impl<T: Filesystem> tonic::server::UnaryService<super::RmdirRequest>
                    for RmdirSvc<T> {
                        type Response = super::RmdirResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::RmdirRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Filesystem>::rmdir(&inner, request).await
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
                        let method = RmdirSvc(inner);
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
    impl<T> Clone for FilesystemServer<T> {
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
    pub const SERVICE_NAME: &str = "v1beta2.Filesystem";
    impl<T> tonic::server::NamedService for FilesystemServer<T> {
        const NAME: &'static str = SERVICE_NAME;
    }
}
/// Name of the API group of this module.
pub const GROUP: &str = "filesystem";
/// Version of this module.
pub const VERSION: &str = "v1beta2";
/// Fully qualified gRPC service name, as it appears on the wire.
pub const SERVICE_NAME: &str = "v1beta2.Filesystem";
/// The RPCs of this version, as named on the wire.
pub const RPCS: &[&str] = &[
    "CreateSymlink",
    "IsSymlink",
    "Mkdir",
    "PathExists",
    "Rmdir",
];
/**The `v1beta2.Filesystem` service as a trait: one method per RPC of `filesystem` v1beta2.

The filesystem service of this version.

Implemented by [`Client`] (a connection to the proxy) and, with the `mock` feature, by the in-process mock host, so driver code written against `&dyn FilesystemApi` runs against either. Object safe, `Send + Sync`.*/
#[cfg_attr(feature = "mockall", ::mockall::automock)]
#[::async_trait::async_trait]
pub trait FilesystemApi: Send + Sync {
    ///Creates a symbolic link at the target path pointing to the source path.
    ///
    ///`/v1beta2.Filesystem/CreateSymlink`
    async fn create_symlink(
        &self,
        request: CreateSymlinkRequest,
    ) -> ::core::result::Result<CreateSymlinkResponse, crate::Error>;
    ///Tells whether a path is a symbolic link or a mount point.
    ///
    ///`/v1beta2.Filesystem/IsSymlink`
    async fn is_symlink(
        &self,
        request: IsSymlinkRequest,
    ) -> ::core::result::Result<IsSymlinkResponse, crate::Error>;
    ///Creates a directory and any missing parents; succeeds if it already exists.
    ///
    ///`/v1beta2.Filesystem/Mkdir`
    async fn mkdir(
        &self,
        request: MkdirRequest,
    ) -> ::core::result::Result<MkdirResponse, crate::Error>;
    ///Tells whether a path exists (links are not followed).
    ///
    ///`/v1beta2.Filesystem/PathExists`
    async fn path_exists(
        &self,
        request: PathExistsRequest,
    ) -> ::core::result::Result<PathExistsResponse, crate::Error>;
    ///Removes a directory, or with force the whole tree below it.
    ///
    ///`/v1beta2.Filesystem/Rmdir`
    async fn rmdir(
        &self,
        request: RmdirRequest,
    ) -> ::core::result::Result<RmdirResponse, crate::Error>;
}
/**Client of `v1beta2.Filesystem`, the `filesystem` API v1beta2.

Cheap to clone; clones share one HTTP/2 connection and calls from many tasks are multiplexed on it. The RPCs are the methods of [`FilesystemApi`].*/
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
    ///Connects to the default endpoint of `filesystem` v1beta2: the named pipe `\\.\pipe\csi-proxy-filesystem-v1beta2` on Windows, elsewhere the socket `csi-proxy-filesystem-v1beta2.sock` in the directory named by `CSI_PROXY_SOCKET_DIR`.
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
impl FilesystemApi for Client {
    async fn create_symlink(
        &self,
        request: CreateSymlinkRequest,
    ) -> ::core::result::Result<CreateSymlinkResponse, crate::Error> {
        self.connection.unary("/v1beta2.Filesystem/CreateSymlink", request).await
    }
    async fn is_symlink(
        &self,
        request: IsSymlinkRequest,
    ) -> ::core::result::Result<IsSymlinkResponse, crate::Error> {
        self.connection.unary("/v1beta2.Filesystem/IsSymlink", request).await
    }
    async fn mkdir(
        &self,
        request: MkdirRequest,
    ) -> ::core::result::Result<MkdirResponse, crate::Error> {
        self.connection.unary("/v1beta2.Filesystem/Mkdir", request).await
    }
    async fn path_exists(
        &self,
        request: PathExistsRequest,
    ) -> ::core::result::Result<PathExistsResponse, crate::Error> {
        self.connection.unary("/v1beta2.Filesystem/PathExists", request).await
    }
    async fn rmdir(
        &self,
        request: RmdirRequest,
    ) -> ::core::result::Result<RmdirResponse, crate::Error> {
        self.connection.unary("/v1beta2.Filesystem/Rmdir", request).await
    }
}
#[cfg(feature = "mock")]
#[::async_trait::async_trait]
impl FilesystemApi for crate::mock::MockHost {
    async fn create_symlink(
        &self,
        request: CreateSymlinkRequest,
    ) -> ::core::result::Result<CreateSymlinkResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "CreateSymlink",
        };
        self.before(&RPC, &request).await?;
        let result = filesystem_server::Filesystem::create_symlink(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn is_symlink(
        &self,
        request: IsSymlinkRequest,
    ) -> ::core::result::Result<IsSymlinkResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "IsSymlink",
        };
        self.before(&RPC, &request).await?;
        let result = filesystem_server::Filesystem::is_symlink(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn mkdir(
        &self,
        request: MkdirRequest,
    ) -> ::core::result::Result<MkdirResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "Mkdir",
        };
        self.before(&RPC, &request).await?;
        let result = filesystem_server::Filesystem::mkdir(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn path_exists(
        &self,
        request: PathExistsRequest,
    ) -> ::core::result::Result<PathExistsResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "PathExists",
        };
        self.before(&RPC, &request).await?;
        let result = filesystem_server::Filesystem::path_exists(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn rmdir(
        &self,
        request: RmdirRequest,
    ) -> ::core::result::Result<RmdirResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "Rmdir",
        };
        self.before(&RPC, &request).await?;
        let result = filesystem_server::Filesystem::rmdir(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
}
