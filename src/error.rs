//! What every layer's errors share. The store, the index and the stream consumer each wrap
//! their client's errors for logs; the type lives here, so none of them imports another.

/// A boxed error from a backend's client, kept for logs.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
