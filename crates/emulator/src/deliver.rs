//! What a command leaves for connections other than (or besides) the caller's reply: Pub/Sub
//! messages, the replies of blocked clients served or timed out, connections to close. A command
//! queues them in [`crate::Core::outbox`]; the server in front of the emulator drains them after the
//! command ([`crate::Emulator::after_command`]) and routes each to its connection.
use crate::clients::ClientId;
use crate::reply::Reply;

/// One thing for one connection.
#[derive(Clone, Debug, PartialEq)]
pub enum Deliver {
    /// A push (a Pub/Sub message, a subscription's confirmation): RESP3's `>` frame, an array under
    /// RESP2. Written whatever CLIENT REPLY says, as Redis does.
    Push(Vec<Reply>),
    /// The reply of a blocking command the client was waiting on: it is unblocked, and the server
    /// goes on with the requests it sent after it.
    Unblock(Reply),
    /// CLIENT KILL: close the connection (after what was queued for it before).
    Close,
    /// A push that, for the client whose command made it, follows that command's reply (a tracking
    /// invalidation of a key the client itself changed); for others, a [`Deliver::Push`].
    Late(Vec<Reply>),
    /// Bytes written as they are, whatever the protocol: a MONITOR line (`+...\r\n`), or the
    /// replication stream for a replica's connection.
    Raw(Vec<u8>),
}

/// A delivery's address and content.
pub type Delivery = (ClientId, Deliver);
