//! One client connection's state (its node, its emulator client, protocol and auth) and how a
//! connection becomes a client of a node's emulator. The loop that serves it is [`crate::connection`].
use super::state::Server;
use limitlab_emulator::ClientId;

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
