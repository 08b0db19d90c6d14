//! One client connection's state (its node, its emulator client, protocol and auth) and how a
//! connection becomes a client of a node's emulator. The loop that serves it is [`crate::connection`].
use std::rc::Rc;

use super::outbox::Outbox;
use super::state::Server;
use limitlab_emulator::ClientId;

/// [`Conn::mute`] bits: CLIENT REPLY OFF...
pub const MUTE_OFF: u8 = 1;
/// ...CLIENT REPLY SKIP (the next command's reply is not sent)...
pub const MUTE_SKIP_NEXT: u8 = 2;
/// ...and the command whose reply is being skipped runs.
pub const MUTE_SKIPPING: u8 = 4;

/// A connection's state.
pub struct Conn {
    /// The node (port) it connected to.
    pub node: usize,
    /// Its client in the node's emulator (database, transaction, WATCHes, name).
    pub client: ClientId,
    /// The peer's and our own address, for CLIENT LIST/INFO.
    pub addrs: Option<(String, String)>,
    /// Spoke `HELLO 3`.
    pub resp3: bool,
    /// Authenticated, or no password is set.
    pub authed: bool,
    /// Close once the replies so far are written (QUIT, a protocol error).
    pub close: bool,
    /// Its buffers grew past the size kept between requests at some point.
    pub grew: bool,
    /// What other clients' commands deliver to it (see [`crate::outbox`]).
    pub outbox: Rc<Outbox>,
    /// Waits in a blocking command: its further requests wait too.
    pub blocked: bool,
    /// Subscribed to a channel or pattern (RESP2 then allows only the Pub/Sub commands).
    pub subscribed: bool,
    /// CLIENT REPLY: `MUTE_*` bits, 0 when replies are sent.
    pub mute: u8,
    /// The port the peer said it listens on (REPLCONF listening-port), shown once it is a replica.
    pub replica_port: u16,
}

/// A new client of node `node`'s emulator, with the connection's addresses.
pub fn connect(server: &Server, node: usize, addrs: &Option<(String, String)>) -> ClientId {
    // The client's creation time (CLIENT LIST's `age`) is now, not the last command's time.
    server.sync_clock();
    let mut emu = server.nodes[node].emu.borrow_mut();
    let client = emu.connect();
    if let Some((peer, local)) = addrs {
        emu.set_client_addr(client, peer, local);
    }
    client
}
