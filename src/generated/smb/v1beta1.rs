//! CSI Proxy smb API, version v1beta1.
//! SMB group: global SMB mappings of remote shares, optionally linked into a local path.
//! Served on the named pipe \\.\pipe\csi-proxy-smb-v1beta1.
/// Request of NewSmbGlobalMapping.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct NewSmbGlobalMappingRequest {
    /// Remote share, `\\server\share\[\path\]`.
    #[prost(string, tag = "1")]
    pub remote_path: ::prost::alloc::string::String,
    /// Local path to link to the share; optional.
    #[prost(string, tag = "2")]
    pub local_path: ::prost::alloc::string::String,
    /// User name for the share.
    #[prost(string, tag = "3")]
    pub username: ::prost::alloc::string::String,
    /// Password for the share.
    #[prost(string, tag = "4")]
    pub password: ::prost::alloc::string::String,
}
/// Response of NewSmbGlobalMapping.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct NewSmbGlobalMappingResponse {
    /// Legacy error text; always empty.
    #[prost(string, tag = "1")]
    pub error: ::prost::alloc::string::String,
}
/// Request of RemoveSmbGlobalMapping.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct RemoveSmbGlobalMappingRequest {
    /// Remote share, `\\server\share\[\path\]`.
    #[prost(string, tag = "1")]
    pub remote_path: ::prost::alloc::string::String,
}
/// Response of RemoveSmbGlobalMapping.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct RemoveSmbGlobalMappingResponse {
    /// Legacy error text; always empty.
    #[prost(string, tag = "1")]
    pub error: ::prost::alloc::string::String,
}
/// Generated server implementations.
pub mod smb_server {
    #![allow(
        unused_variables,
        dead_code,
        missing_docs,
        clippy::wildcard_imports,
        clippy::let_unit_value,
    )]
    use tonic::codegen::*;
    /// Generated trait containing gRPC methods that should be implemented for use with SmbServer.
    #[async_trait]
    pub trait Smb: std::marker::Send + std::marker::Sync + 'static {
        /// Maps a remote SMB share for the whole node, and links a local path to it when one is given.
        async fn new_smb_global_mapping(
            &self,
            request: tonic::Request<super::NewSmbGlobalMappingRequest>,
        ) -> std::result::Result<
            tonic::Response<super::NewSmbGlobalMappingResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Removes the global mapping of a remote SMB share.
        async fn remove_smb_global_mapping(
            &self,
            request: tonic::Request<super::RemoveSmbGlobalMappingRequest>,
        ) -> std::result::Result<
            tonic::Response<super::RemoveSmbGlobalMappingResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
    }
    /// The smb service of this version.
    #[derive(Debug)]
    pub struct SmbServer<T> {
        inner: Arc<T>,
        accept_compression_encodings: EnabledCompressionEncodings,
        send_compression_encodings: EnabledCompressionEncodings,
        max_decoding_message_size: Option<usize>,
        max_encoding_message_size: Option<usize>,
    }
    impl<T> SmbServer<T> {
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
    impl<T, B> tonic::codegen::Service<http::Request<B>> for SmbServer<T>
    where
        T: Smb,
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
                "/v1beta1.Smb/NewSmbGlobalMapping" => {
                    #[allow(non_camel_case_types)]
                    struct NewSmbGlobalMappingSvc<T: Smb>(pub Arc<T>);
                    impl<
                        T: Smb,
                    > tonic::server::UnaryService<super::NewSmbGlobalMappingRequest>
                    for NewSmbGlobalMappingSvc<T> {
                        type Response = super::NewSmbGlobalMappingResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::NewSmbGlobalMappingRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Smb>::new_smb_global_mapping(&inner, request).await
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
                        let method = NewSmbGlobalMappingSvc(inner);
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
                "/v1beta1.Smb/RemoveSmbGlobalMapping" => {
                    #[allow(non_camel_case_types)]
                    struct RemoveSmbGlobalMappingSvc<T: Smb>(pub Arc<T>);
                    impl<
                        T: Smb,
                    > tonic::server::UnaryService<super::RemoveSmbGlobalMappingRequest>
                    for RemoveSmbGlobalMappingSvc<T> {
                        type Response = super::RemoveSmbGlobalMappingResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::RemoveSmbGlobalMappingRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as Smb>::remove_smb_global_mapping(&inner, request).await
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
                        let method = RemoveSmbGlobalMappingSvc(inner);
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
    impl<T> Clone for SmbServer<T> {
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
    pub const SERVICE_NAME: &str = "v1beta1.Smb";
    impl<T> tonic::server::NamedService for SmbServer<T> {
        const NAME: &'static str = SERVICE_NAME;
    }
}
/// Name of the API group of this module.
pub const GROUP: &str = "smb";
/// Version of this module.
pub const VERSION: &str = "v1beta1";
/// Fully qualified gRPC service name, as it appears on the wire.
pub const SERVICE_NAME: &str = "v1beta1.Smb";
/// The RPCs of this version, as named on the wire.
pub const RPCS: &[&str] = &["NewSmbGlobalMapping", "RemoveSmbGlobalMapping"];
/**The `v1beta1.Smb` service as a trait: one method per RPC of `smb` v1beta1.

The smb service of this version.

Implemented by [`Client`] (a connection to the proxy) and, with the `mock` feature, by the in-process mock host, so driver code written against `&dyn SmbApi` runs against either. Object safe, `Send + Sync`.*/
#[cfg_attr(feature = "mockall", ::mockall::automock)]
#[::async_trait::async_trait]
pub trait SmbApi: Send + Sync {
    ///Maps a remote SMB share for the whole node, and links a local path to it when one is given.
    ///
    ///`/v1beta1.Smb/NewSmbGlobalMapping`
    async fn new_smb_global_mapping(
        &self,
        request: NewSmbGlobalMappingRequest,
    ) -> ::core::result::Result<NewSmbGlobalMappingResponse, crate::Error>;
    ///Removes the global mapping of a remote SMB share.
    ///
    ///`/v1beta1.Smb/RemoveSmbGlobalMapping`
    async fn remove_smb_global_mapping(
        &self,
        request: RemoveSmbGlobalMappingRequest,
    ) -> ::core::result::Result<RemoveSmbGlobalMappingResponse, crate::Error>;
}
/**Client of `v1beta1.Smb`, the `smb` API v1beta1.

Cheap to clone; clones share one HTTP/2 connection and calls from many tasks are multiplexed on it. The RPCs are the methods of [`SmbApi`].*/
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
    ///Connects to the default endpoint of `smb` v1beta1: the named pipe `\\.\pipe\csi-proxy-smb-v1beta1` on Windows, elsewhere the socket `csi-proxy-smb-v1beta1.sock` in the directory named by `CSI_PROXY_SOCKET_DIR`.
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
impl SmbApi for Client {
    async fn new_smb_global_mapping(
        &self,
        request: NewSmbGlobalMappingRequest,
    ) -> ::core::result::Result<NewSmbGlobalMappingResponse, crate::Error> {
        self.connection.unary("/v1beta1.Smb/NewSmbGlobalMapping", request).await
    }
    async fn remove_smb_global_mapping(
        &self,
        request: RemoveSmbGlobalMappingRequest,
    ) -> ::core::result::Result<RemoveSmbGlobalMappingResponse, crate::Error> {
        self.connection.unary("/v1beta1.Smb/RemoveSmbGlobalMapping", request).await
    }
}
#[cfg(feature = "mock")]
#[::async_trait::async_trait]
impl SmbApi for crate::mock::MockHost {
    async fn new_smb_global_mapping(
        &self,
        request: NewSmbGlobalMappingRequest,
    ) -> ::core::result::Result<NewSmbGlobalMappingResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "NewSmbGlobalMapping",
        };
        self.before(&RPC, &request).await?;
        let result = smb_server::Smb::new_smb_global_mapping(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn remove_smb_global_mapping(
        &self,
        request: RemoveSmbGlobalMappingRequest,
    ) -> ::core::result::Result<RemoveSmbGlobalMappingResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "RemoveSmbGlobalMapping",
        };
        self.before(&RPC, &request).await?;
        let result = smb_server::Smb::remove_smb_global_mapping(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
}
