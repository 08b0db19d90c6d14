//! What every connection of `limitlab serve` shares: the nodes (one emulator each), the virtual
//! clock and the server's settings and counters.
use std::cell::{Cell, RefCell};
use std::net::SocketAddr;

use limitlab_emulator::clock::{Clock, SystemClock, VirtualClock};
use limitlab_emulator::Emulator;

/// One listening port: in a cluster, one master with its own emulator (keyspace, scripts).
pub struct Node {
    pub emu: RefCell<Emulator>,
    pub addr: SocketAddr,
    /// Its 40-hex-digit node id (cluster mode).
    pub id: String,
    /// The hash slots it serves, first and last (cluster mode).
    pub slots: (u16, u16),
}

/// What every connection shares.
pub struct Server {
    pub nodes: Vec<Node>,
    pub cluster: bool,
    pub clock: VirtualClock,
    /// `--clock wall`: the clock is set to the machine's time plus this many microseconds before every
    /// command (CLOCK.ADVANCE and CLOCK.SET change the offset).
    pub wall_offset: Option<Cell<i64>>,
    pub requirepass: Option<Vec<u8>>,
    pub max_clients: usize,
    /// Open connections.
    pub clients: Cell<usize>,
    /// Connections closed since the allocator last gave memory back.
    pub closed_since_collect: Cell<usize>,
    /// Set by SHUTDOWN.
    pub stopping: Cell<bool>,
    pub stop: tokio::sync::Notify,
    /// The connections a script that runs long serves meanwhile.
    pub busy: super::busy::Busy,
}

impl Server {
    /// Brings the virtual clock to the machine's time in `--clock wall` mode.
    #[inline]
    pub fn sync_clock(&self) {
        if let Some(off) = &self.wall_offset {
            self.clock.set_micros(limitlab_emulator::clock::Micros(SystemClock.now_micros().0 + off.get()));
        }
    }

    /// After CLOCK.ADVANCE/SET in wall mode: keep the new distance from the machine's time.
    pub fn clock_moved(&self) {
        if let Some(off) = &self.wall_offset {
            off.set(self.clock.now_micros().0 - SystemClock.now_micros().0);
            for node in &self.nodes {
                node.emu.borrow_mut().set_wall_offset(Some(off.get()));
            }
        }
    }
}
