//! Refusals of `Expect: 100-continue` requests close their connection.
//!
//! A client that sent `Expect: 100-continue` and got a final status instead of `100
//! Continue` may withhold its body (botocore does, then reuses the connection). hyper
//! then still expects the announced body, and if the client's next request is already
//! in the buffer it reads that request's first bytes as the body: a 2-byte PutObject
//! refused with 412 turned the next `PUT` into method `T`, which failed its signature
//! (CI, stop 63; 1 in about 500 refused PUTs from boto3 by hand). RFC 9110 §10.1.1
//! leaves the server the choice to close, so a refusal says `Connection: close` and
//! hyper ends the connection after it.

use futures::FutureExt;
use futures::future::{Either, Map};
use hyper::header::{CONNECTION, EXPECT, HeaderMap, HeaderValue};
use hyper::{Request, Response};

/// A connection's service whose answers to `Expect: 100-continue` requests close the
/// connection unless they succeed.
pub struct CloseOnRefusal<S>(pub S);

type Answer<B, E> = Result<Response<B>, E>;

impl<S, B, In> hyper::service::Service<Request<In>> for CloseOnRefusal<S>
where
    S: hyper::service::Service<Request<In>, Response = Response<B>>,
{
    type Response = Response<B>;
    type Error = S::Error;
    type Future = Either<Map<S::Future, fn(Answer<B, S::Error>) -> Answer<B, S::Error>>, S::Future>;

    fn call(&self, req: Request<In>) -> Self::Future {
        if expects_continue(req.headers()) {
            Either::Left(self.0.call(req).map(close_unless_success as fn(_) -> _))
        } else {
            Either::Right(self.0.call(req))
        }
    }
}

fn expects_continue(headers: &HeaderMap) -> bool {
    headers
        .get_all(EXPECT)
        .iter()
        .any(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// A success read the body; anything else may have left it unsent.
fn close_unless_success<B, E>(answer: Answer<B, E>) -> Answer<B, E> {
    answer.map(|mut r| {
        if !r.status().is_success() {
            r.headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::StatusCode;

    fn answer(status: StatusCode) -> Answer<(), ()> {
        let mut r = Response::new(());
        *r.status_mut() = status;
        Ok(r)
    }

    fn closes(status: StatusCode) -> bool {
        close_unless_success(answer(status))
            .unwrap()
            .headers()
            .get(CONNECTION)
            .is_some_and(|v| v == "close")
    }

    #[test]
    fn refusals_close_and_successes_keep_the_connection() {
        assert!(closes(StatusCode::PRECONDITION_FAILED));
        assert!(closes(StatusCode::FORBIDDEN));
        assert!(closes(StatusCode::TEMPORARY_REDIRECT));
        assert!(!closes(StatusCode::OK));
        assert!(!closes(StatusCode::NO_CONTENT));
    }

    #[test]
    fn the_expectation_is_matched_without_case() {
        let mut h = HeaderMap::new();
        assert!(!expects_continue(&h));
        h.insert(EXPECT, HeaderValue::from_static("100-Continue"));
        assert!(expects_continue(&h));
    }
}
