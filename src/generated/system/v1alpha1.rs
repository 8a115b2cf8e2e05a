//! CSI Proxy system API, version v1alpha1.
//! System group: BIOS data and Windows services of the node.
//! Served on the named pipe \\.\pipe\csi-proxy-system-v1alpha1.
/// Request of GetBIOSSerialNumber.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct GetBiosSerialNumberRequest {}
/// Response of GetBIOSSerialNumber.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct GetBiosSerialNumberResponse {
    /// BIOS serial number.
    #[prost(string, tag = "1")]
    pub serial_number: ::prost::alloc::string::String,
}
/// Request of GetService.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct GetServiceRequest {
    /// Service name (its registry key name).
    #[prost(string, tag = "1")]
    pub name: ::prost::alloc::string::String,
}
/// Response of GetService.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct GetServiceResponse {
    /// Display name of the service.
    #[prost(string, tag = "1")]
    pub display_name: ::prost::alloc::string::String,
    /// How the service is started.
    #[prost(enumeration = "StartType", tag = "2")]
    pub start_type: i32,
    /// Current state of the service.
    #[prost(enumeration = "ServiceStatus", tag = "3")]
    pub status: i32,
}
/// Request of StartService.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct StartServiceRequest {
    /// Service name (its registry key name).
    #[prost(string, tag = "1")]
    pub name: ::prost::alloc::string::String,
}
/// Response of StartService.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct StartServiceResponse {}
/// Request of StopService.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct StopServiceRequest {
    /// Service name (its registry key name).
    #[prost(string, tag = "1")]
    pub name: ::prost::alloc::string::String,
    /// Also stop the running services that depend on it.
    #[prost(bool, tag = "2")]
    pub force: bool,
}
/// Response of StopService.
#[derive(Clone, Copy, PartialEq, Eq, Hash, ::prost::Message)]
pub struct StopServiceResponse {}
/// State of a Windows service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum ServiceStatus {
    /// State not known.
    Unknown = 0,
    /// Not running.
    Stopped = 1,
    /// Starting.
    StartPending = 2,
    /// Stopping.
    StopPending = 3,
    /// Running.
    Running = 4,
    /// Resuming.
    ContinuePending = 5,
    /// Pausing.
    PausePending = 6,
    /// Paused.
    Paused = 7,
}
impl ServiceStatus {
    /// String value of the enum field names used in the ProtoBuf definition.
    ///
    /// The values are not transformed in any way and thus are considered stable
    /// (if the ProtoBuf definition does not change) and safe for programmatic use.
    pub fn as_str_name(&self) -> &'static str {
        match self {
            Self::Unknown => "UNKNOWN",
            Self::Stopped => "STOPPED",
            Self::StartPending => "START_PENDING",
            Self::StopPending => "STOP_PENDING",
            Self::Running => "RUNNING",
            Self::ContinuePending => "CONTINUE_PENDING",
            Self::PausePending => "PAUSE_PENDING",
            Self::Paused => "PAUSED",
        }
    }
    /// Creates an enum from field names used in the ProtoBuf definition.
    pub fn from_str_name(value: &str) -> ::core::option::Option<Self> {
        match value {
            "UNKNOWN" => Some(Self::Unknown),
            "STOPPED" => Some(Self::Stopped),
            "START_PENDING" => Some(Self::StartPending),
            "STOP_PENDING" => Some(Self::StopPending),
            "RUNNING" => Some(Self::Running),
            "CONTINUE_PENDING" => Some(Self::ContinuePending),
            "PAUSE_PENDING" => Some(Self::PausePending),
            "PAUSED" => Some(Self::Paused),
            _ => None,
        }
    }
}
/// How a Windows service is started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum StartType {
    /// By the boot loader.
    Boot = 0,
    /// During kernel initialisation.
    System = 1,
    /// At system start.
    Automatic = 2,
    /// On demand.
    Manual = 3,
    /// Never.
    Disabled = 4,
}
impl StartType {
    /// String value of the enum field names used in the ProtoBuf definition.
    ///
    /// The values are not transformed in any way and thus are considered stable
    /// (if the ProtoBuf definition does not change) and safe for programmatic use.
    pub fn as_str_name(&self) -> &'static str {
        match self {
            Self::Boot => "BOOT",
            Self::System => "SYSTEM",
            Self::Automatic => "AUTOMATIC",
            Self::Manual => "MANUAL",
            Self::Disabled => "DISABLED",
        }
    }
    /// Creates an enum from field names used in the ProtoBuf definition.
    pub fn from_str_name(value: &str) -> ::core::option::Option<Self> {
        match value {
            "BOOT" => Some(Self::Boot),
            "SYSTEM" => Some(Self::System),
            "AUTOMATIC" => Some(Self::Automatic),
            "MANUAL" => Some(Self::Manual),
            "DISABLED" => Some(Self::Disabled),
            _ => None,
        }
    }
}
/// Generated server implementations.
pub mod system_server {
    #![allow(
        unused_variables,
        dead_code,
        missing_docs,
        clippy::wildcard_imports,
        clippy::let_unit_value,
    )]
    use tonic::codegen::*;
    /// Generated trait containing gRPC methods that should be implemented for use with SystemServer.
    #[async_trait]
    pub trait System: std::marker::Send + std::marker::Sync + 'static {
        /// Returns the serial number from the BIOS.
        async fn get_bios_serial_number(
            &self,
            request: tonic::Request<super::GetBiosSerialNumberRequest>,
        ) -> std::result::Result<
            tonic::Response<super::GetBiosSerialNumberResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Returns the display name, start type and status of a service.
        async fn get_service(
            &self,
            request: tonic::Request<super::GetServiceRequest>,
        ) -> std::result::Result<
            tonic::Response<super::GetServiceResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Starts a service.
        async fn start_service(
            &self,
            request: tonic::Request<super::StartServiceRequest>,
        ) -> std::result::Result<
            tonic::Response<super::StartServiceResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
        /// Stops a service, with force also the running services that depend on it.
        async fn stop_service(
            &self,
            request: tonic::Request<super::StopServiceRequest>,
        ) -> std::result::Result<
            tonic::Response<super::StopServiceResponse>,
            tonic::Status,
        > {
            Err(tonic::Status::unimplemented("Not yet implemented"))
        }
    }
    /// The system service of this version.
    #[derive(Debug)]
    pub struct SystemServer<T> {
        inner: Arc<T>,
        accept_compression_encodings: EnabledCompressionEncodings,
        send_compression_encodings: EnabledCompressionEncodings,
        max_decoding_message_size: Option<usize>,
        max_encoding_message_size: Option<usize>,
    }
    impl<T> SystemServer<T> {
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
    impl<T, B> tonic::codegen::Service<http::Request<B>> for SystemServer<T>
    where
        T: System,
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
                "/v1alpha1.System/GetBIOSSerialNumber" => {
                    #[allow(non_camel_case_types)]
                    struct GetBIOSSerialNumberSvc<T: System>(pub Arc<T>);
                    impl<
                        T: System,
                    > tonic::server::UnaryService<super::GetBiosSerialNumberRequest>
                    for GetBIOSSerialNumberSvc<T> {
                        type Response = super::GetBiosSerialNumberResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::GetBiosSerialNumberRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as System>::get_bios_serial_number(&inner, request).await
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
                        let method = GetBIOSSerialNumberSvc(inner);
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
                "/v1alpha1.System/GetService" => {
                    #[allow(non_camel_case_types)]
                    struct GetServiceSvc<T: System>(pub Arc<T>);
                    impl<T: System> tonic::server::UnaryService<super::GetServiceRequest>
                    for GetServiceSvc<T> {
                        type Response = super::GetServiceResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::GetServiceRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as System>::get_service(&inner, request).await
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
                        let method = GetServiceSvc(inner);
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
                "/v1alpha1.System/StartService" => {
                    #[allow(non_camel_case_types)]
                    struct StartServiceSvc<T: System>(pub Arc<T>);
                    impl<
                        T: System,
                    > tonic::server::UnaryService<super::StartServiceRequest>
                    for StartServiceSvc<T> {
                        type Response = super::StartServiceResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::StartServiceRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as System>::start_service(&inner, request).await
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
                        let method = StartServiceSvc(inner);
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
                "/v1alpha1.System/StopService" => {
                    #[allow(non_camel_case_types)]
                    struct StopServiceSvc<T: System>(pub Arc<T>);
                    impl<
                        T: System,
                    > tonic::server::UnaryService<super::StopServiceRequest>
                    for StopServiceSvc<T> {
                        type Response = super::StopServiceResponse;
                        type Future = BoxFuture<
                            tonic::Response<Self::Response>,
                            tonic::Status,
                        >;
                        fn call(
                            &mut self,
                            request: tonic::Request<super::StopServiceRequest>,
                        ) -> Self::Future {
                            let inner = Arc::clone(&self.0);
                            let fut = async move {
                                <T as System>::stop_service(&inner, request).await
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
                        let method = StopServiceSvc(inner);
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
    impl<T> Clone for SystemServer<T> {
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
    pub const SERVICE_NAME: &str = "v1alpha1.System";
    impl<T> tonic::server::NamedService for SystemServer<T> {
        const NAME: &'static str = SERVICE_NAME;
    }
}
/// Name of the API group of this module.
pub const GROUP: &str = "system";
/// Version of this module.
pub const VERSION: &str = "v1alpha1";
/// Fully qualified gRPC service name, as it appears on the wire.
pub const SERVICE_NAME: &str = "v1alpha1.System";
/// The RPCs of this version, as named on the wire.
pub const RPCS: &[&str] = &[
    "GetBIOSSerialNumber",
    "GetService",
    "StartService",
    "StopService",
];
/**The `v1alpha1.System` service as a trait: one method per RPC of `system` v1alpha1.

The system service of this version.

Implemented by [`Client`] (a connection to the proxy) and, with the `mock` feature, by the in-process mock host, so driver code written against `&dyn SystemApi` runs against either. Object safe, `Send + Sync`.*/
#[cfg_attr(feature = "mockall", ::mockall::automock)]
#[::async_trait::async_trait]
pub trait SystemApi: Send + Sync {
    ///Returns the serial number from the BIOS.
    ///
    ///`/v1alpha1.System/GetBIOSSerialNumber`
    async fn get_bios_serial_number(
        &self,
        request: GetBiosSerialNumberRequest,
    ) -> ::core::result::Result<GetBiosSerialNumberResponse, crate::Error>;
    ///Returns the display name, start type and status of a service.
    ///
    ///`/v1alpha1.System/GetService`
    async fn get_service(
        &self,
        request: GetServiceRequest,
    ) -> ::core::result::Result<GetServiceResponse, crate::Error>;
    ///Starts a service.
    ///
    ///`/v1alpha1.System/StartService`
    async fn start_service(
        &self,
        request: StartServiceRequest,
    ) -> ::core::result::Result<StartServiceResponse, crate::Error>;
    ///Stops a service, with force also the running services that depend on it.
    ///
    ///`/v1alpha1.System/StopService`
    async fn stop_service(
        &self,
        request: StopServiceRequest,
    ) -> ::core::result::Result<StopServiceResponse, crate::Error>;
}
/**Client of `v1alpha1.System`, the `system` API v1alpha1.

Cheap to clone; clones share one HTTP/2 connection and calls from many tasks are multiplexed on it. The RPCs are the methods of [`SystemApi`].*/
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
    ///Connects to the default endpoint of `system` v1alpha1: the named pipe `\\.\pipe\csi-proxy-system-v1alpha1` on Windows, elsewhere the socket `csi-proxy-system-v1alpha1.sock` in the directory named by `CSI_PROXY_SOCKET_DIR`.
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
impl SystemApi for Client {
    async fn get_bios_serial_number(
        &self,
        request: GetBiosSerialNumberRequest,
    ) -> ::core::result::Result<GetBiosSerialNumberResponse, crate::Error> {
        self.connection.unary("/v1alpha1.System/GetBIOSSerialNumber", request).await
    }
    async fn get_service(
        &self,
        request: GetServiceRequest,
    ) -> ::core::result::Result<GetServiceResponse, crate::Error> {
        self.connection.unary("/v1alpha1.System/GetService", request).await
    }
    async fn start_service(
        &self,
        request: StartServiceRequest,
    ) -> ::core::result::Result<StartServiceResponse, crate::Error> {
        self.connection.unary("/v1alpha1.System/StartService", request).await
    }
    async fn stop_service(
        &self,
        request: StopServiceRequest,
    ) -> ::core::result::Result<StopServiceResponse, crate::Error> {
        self.connection.unary("/v1alpha1.System/StopService", request).await
    }
}
#[cfg(feature = "mock")]
#[::async_trait::async_trait]
impl SystemApi for crate::mock::MockHost {
    async fn get_bios_serial_number(
        &self,
        request: GetBiosSerialNumberRequest,
    ) -> ::core::result::Result<GetBiosSerialNumberResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "GetBIOSSerialNumber",
        };
        self.before(&RPC, &request).await?;
        let result = system_server::System::get_bios_serial_number(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn get_service(
        &self,
        request: GetServiceRequest,
    ) -> ::core::result::Result<GetServiceResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "GetService",
        };
        self.before(&RPC, &request).await?;
        let result = system_server::System::get_service(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn start_service(
        &self,
        request: StartServiceRequest,
    ) -> ::core::result::Result<StartServiceResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "StartService",
        };
        self.before(&RPC, &request).await?;
        let result = system_server::System::start_service(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
    async fn stop_service(
        &self,
        request: StopServiceRequest,
    ) -> ::core::result::Result<StopServiceResponse, crate::Error> {
        const RPC: crate::mock::Rpc = crate::mock::Rpc {
            group: GROUP,
            version: VERSION,
            service: SERVICE_NAME,
            name: "StopService",
        };
        self.before(&RPC, &request).await?;
        let result = system_server::System::stop_service(
                self.service(),
                ::tonic::Request::new(request),
            )
            .await;
        self.after(&RPC, result)
    }
}
