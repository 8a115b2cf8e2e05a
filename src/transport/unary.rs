//! One unary gRPC exchange, framed by hand: the request is one complete
//! body (the message behind its 5-byte prefix) and fixed headers, the
//! response is read to its end and checked for `grpc-status`.
//!
//! tonic's general client (`tonic::client::Grpc::unary`) streams the request
//! body through an encoder and ends the stream with an empty DATA frame; a
//! unary call needs none of that. Here the body is whole from the start: a
//! pipe or socket connection hands it to h2 with END_STREAM right behind the
//! HEADERS (see `connection.rs`), a service in memory gets it as a one-chunk
//! [`Body`] ([`in_body`]). Both read the response with [`response`].

use std::convert::Infallible;
use std::error::Error as StdError;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::header::{CONTENT_TYPE, HeaderValue, TE};
use http_body::Frame;
use http_body_util::BodyExt;
use tonic::body::Body;
use tonic::{Code, Status};

/// The gRPC message prefix: a compression flag and a 4-byte length.
const PREFIX: usize = 5;

/// The largest response message accepted, as tonic's default limit (4 MiB)
/// before this path existed; a larger one fails with `OUT_OF_RANGE`.
const MAX_RESPONSE: usize = 4 * 1024 * 1024;

/// The HTTP request of a call of `uri` carrying `message`, with the deadline
/// as `grpc-timeout` when there is one; the body is the whole prefixed
/// message.
pub(super) fn request(
    uri: http::Uri,
    message: &impl prost::Message,
    timeout: Option<Duration>,
) -> http::Request<Bytes> {
    let len = message.encoded_len();
    let mut buf = BytesMut::with_capacity(PREFIX + len);
    buf.put_u8(0);
    // A message too large for the prefix's u32 would be far larger than
    // any server accepts; saturating makes the server refuse it.
    buf.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    message
        .encode(&mut buf)
        .expect("a BytesMut grows to fit the message");
    let mut request = http::Request::new(buf.freeze());
    *request.method_mut() = http::Method::POST;
    *request.uri_mut() = uri;
    *request.version_mut() = http::Version::HTTP_2;
    let headers = request.headers_mut();
    headers.insert(TE, HeaderValue::from_static("trailers"));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    if let Some(timeout) = timeout {
        // tonic's own formatting of the header (unit and digits).
        let mut carrier = tonic::Request::new(());
        carrier.set_timeout(timeout);
        headers.extend(carrier.into_parts().0.into_headers());
    }
    request
}

/// A request made by [`request`], for a service in memory: its message as a
/// body of one chunk.
pub(super) fn in_body(request: http::Request<Bytes>) -> http::Request<Body> {
    request.map(|message| Body::new(Whole(Some(message))))
}

/// The message of a call's response, or its status: one the server sent
/// (no source), one made here for a malformed response (no source), or one
/// from a failure to read the response (with the failure as its source, as
/// tonic makes it from an h2 error).
pub(super) async fn response<M, B>(response: http::Response<B>) -> Result<M, Status>
where
    M: prost::Message + Default,
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let (head, mut body) = response.into_parts();
    // A status in the headers is a "trailers-only" response: no message.
    if let Some(status) = Status::from_header_map(&head.headers) {
        return Err(if status.code() == Code::Ok {
            no_message()
        } else {
            status
        });
    }
    let mut data: Option<Bytes> = None;
    let mut more = BytesMut::new();
    let mut trailers = None;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Status::from_error(e.into()))?;
        match frame.into_data() {
            Ok(chunk) if data.is_none() => data = Some(chunk),
            Ok(chunk) => {
                if more.is_empty() {
                    more.extend_from_slice(data.as_deref().unwrap_or_default());
                }
                more.extend_from_slice(&chunk);
                if more.len() > PREFIX + MAX_RESPONSE {
                    return Err(too_large(more.len() - PREFIX));
                }
            }
            Err(frame) => trailers = frame.into_trailers().ok(),
        }
    }
    let status = trailers
        .as_ref()
        .and_then(Status::from_header_map)
        .unwrap_or_else(|| missing_status(head.status));
    if status.code() != Code::Ok {
        return Err(status);
    }
    let data = if more.is_empty() {
        data.unwrap_or_default()
    } else {
        more.freeze()
    };
    decode(data)
}

/// The one message of a response body.
fn decode<M: prost::Message + Default>(mut data: Bytes) -> Result<M, Status> {
    if data.is_empty() {
        return Err(no_message());
    }
    if data.len() < PREFIX {
        return Err(Status::internal("gRPC response: truncated message prefix"));
    }
    if data.get_u8() != 0 {
        return Err(Status::internal(
            "gRPC response: a compressed message, but no compression was offered",
        ));
    }
    let len = data.get_u32() as usize;
    if len > MAX_RESPONSE {
        return Err(too_large(len));
    }
    if data.len() != len {
        return Err(Status::internal(format!(
            "gRPC response: a message of {len} bytes announced, {} received",
            data.len()
        )));
    }
    M::decode(data).map_err(|e| Status::internal(format!("gRPC response: {e}")))
}

fn no_message() -> Status {
    Status::internal("gRPC response: no message in a successful response")
}

fn too_large(len: usize) -> Status {
    Status::out_of_range(format!(
        "gRPC response: a message of {len} bytes, over the limit of {MAX_RESPONSE}"
    ))
}

/// The status of a response that ended without `grpc-status`: the HTTP
/// status's gRPC code, as the gRPC HTTP/2 protocol maps them.
fn missing_status(http: http::StatusCode) -> Status {
    use http::StatusCode as H;
    let code = match http {
        H::OK => return Status::internal("gRPC response: no grpc-status in the trailers"),
        H::BAD_REQUEST => Code::Internal,
        H::UNAUTHORIZED => Code::Unauthenticated,
        H::FORBIDDEN => Code::PermissionDenied,
        H::NOT_FOUND => Code::Unimplemented,
        H::TOO_MANY_REQUESTS | H::BAD_GATEWAY | H::SERVICE_UNAVAILABLE | H::GATEWAY_TIMEOUT => {
            Code::Unavailable
        }
        _ => Code::Unknown,
    };
    Status::new(code, format!("gRPC response: HTTP status {http}"))
}

/// A request body that is whole from the start: one chunk, then its end.
/// No exact size is announced, so no `content-length` header is added.
struct Whole(Option<Bytes>);

impl http_body::Body for Whole {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.take().map(|data| Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_one_prefixed_message_with_the_grpc_headers() {
        let message = sample::Sample { value: 300 };
        let request = request(
            http::Uri::from_static("/v1.Disk/GetDiskStats"),
            &message,
            Some(Duration::from_millis(100)),
        );
        assert_eq!(request.method(), http::Method::POST);
        assert_eq!(request.headers()["te"], "trailers");
        assert_eq!(request.headers()["content-type"], "application/grpc");
        assert_eq!(request.headers()["grpc-timeout"], "100000u");
        assert!(request.headers().get("content-length").is_none());
        assert_eq!(&request.body()[..], &[0, 0, 0, 0, 3, 0x08, 0xac, 0x02]);
        let mut body = std::pin::pin!(in_body(request).into_body());
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let Poll::Ready(Some(Ok(frame))) = http_body::Body::poll_frame(body.as_mut(), &mut cx)
        else {
            panic!("the body is not ready at once");
        };
        assert_eq!(
            &frame.into_data().unwrap()[..],
            &[0, 0, 0, 0, 3, 0x08, 0xac, 0x02]
        );
        // Ended with its one chunk: no empty DATA frame follows it.
        assert!(http_body::Body::is_end_stream(&*body));
    }

    #[test]
    fn a_malformed_response_is_an_internal_status() {
        type M = sample::Sample;
        assert_eq!(
            decode::<M>(Bytes::new()).unwrap_err().code(),
            Code::Internal
        );
        assert_eq!(
            decode::<M>(Bytes::from_static(&[1, 0, 0, 0, 0]))
                .unwrap_err()
                .code(),
            Code::Internal
        );
        assert_eq!(
            decode::<M>(Bytes::from_static(&[0, 0, 0, 0, 2, 0x08]))
                .unwrap_err()
                .code(),
            Code::Internal
        );
        assert_eq!(
            decode::<M>(Bytes::from_static(&[0, 0xff, 0, 0, 0]))
                .unwrap_err()
                .code(),
            Code::OutOfRange
        );
        assert_eq!(
            decode::<M>(Bytes::from_static(&[0, 0, 0, 0, 2, 0x08, 7])).unwrap(),
            M { value: 7 }
        );
    }

    #[test]
    fn a_response_without_grpc_status_takes_its_code_from_http() {
        assert_eq!(
            missing_status(http::StatusCode::NOT_FOUND).code(),
            Code::Unimplemented
        );
        assert_eq!(
            missing_status(http::StatusCode::SERVICE_UNAVAILABLE).code(),
            Code::Unavailable
        );
        assert_eq!(missing_status(http::StatusCode::OK).code(), Code::Internal);
    }

    mod sample {
        /// A one-field message for the tests.
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct Sample {
            #[prost(int64, tag = "1")]
            pub value: i64,
        }
    }
}
