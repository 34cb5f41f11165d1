//! Two futures raced: the output of whichever finishes first (the first wins a tie). Shared
//! by the HTTP server's accept loop and the HTTP client's waits.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;

/// Which of two futures finished first.
pub enum Either<A, B> {
    First(A),
    Second(B),
}

/// Polls both futures; the output of the first to finish (`a` wins a tie).
pub async fn race<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = pin!(a);
    let mut b = pin!(b);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::First(out));
        }
        if let Poll::Ready(out) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Second(out));
        }
        Poll::Pending
    })
    .await
}
