//! What a session writes to: the transport's side of a session (the stdio writer, an HTTP
//! session's router), kept apart so that the session's parts that send need nothing else of it.

/// Where a session's outgoing messages go. `message` is one JSON-RPC message, no newline.
pub trait Outbox: Send + Sync + 'static {
    fn send(&self, message: String);

    /// Sends a notification about request `request` (its id as JSON text), for transports
    /// that carry each request's notifications on its own stream.
    fn send_for(&self, request: &str, message: String) {
        let _ = request;
        self.send(message);
    }
}
