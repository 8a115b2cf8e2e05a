//! `unserved!`, shared by the tests and benches that write a fake tonic
//! server (a bench includes it with
//! `#[macro_use] #[path = "../tests/it/support/unserved.rs"] mod unserved;`).

/// The RPCs a fake does not serve (the server traits have no default
/// methods): each answers `UNIMPLEMENTED`.
macro_rules! unserved {
    ($($method:ident($request:ty) -> $response:ty;)*) => {$(
        fn $method<'life0, 'async_trait>(
            &'life0 self,
            _: tonic::Request<$request>,
        ) -> std::pin::Pin<Box<
            dyn std::future::Future<Output = Result<tonic::Response<$response>, tonic::Status>>
                + Send
                + 'async_trait,
        >>
        where
            'life0: 'async_trait,
            Self: 'async_trait,
        {
            Box::pin(async { Err(tonic::Status::unimplemented(stringify!($method))) })
        }
    )*};
}
