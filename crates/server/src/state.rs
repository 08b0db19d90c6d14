//! What every connection of `limitlab serve` shares: the nodes (one emulator each), the virtual
//! clock and the server's settings and counters.
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;

use limitlab_emulator::clock::{Clock, SystemClock, VirtualClock};
use limitlab_emulator::{ClientId, Emulator};

use super::outbox::Outbox;

/// One listening port: in a cluster, one master with its own emulator (keyspace, scripts).
pub struct Node {
    pub emu: RefCell<Emulator>,
    pub addr: SocketAddr,
    /// Its 40-hex-digit node id (cluster mode).
    pub id: String,
    /// The hash slots it serves, first and last (cluster mode).
    pub slots: (u16, u16),
    /// Every open connection's outbox, by its client in this node's emulator.
    pub outboxes: RefCell<HashMap<ClientId, Rc<Outbox>>>,
    /// Its `maxclients` (`--maxclients`, then CONFIG SET): connections beyond are refused.
    pub max_clients: Cell<usize>,
    /// Its open connections (counted from the accept: [`Node::admit`]).
    pub clients: Cell<usize>,
}

impl Node {
    /// Counts a connection just accepted, or returns false when it must be refused ("max number of
    /// clients reached"). Counted at the accept, not when its task starts: a burst accepted in one
    /// go must not pass the limit.
    pub fn admit(&self) -> bool {
        if self.clients.get() >= self.max_clients.get() {
            return false;
        }
        self.clients.set(self.clients.get() + 1);
        true
    }
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
    /// `--enable-debug-command`.
    pub debug: super::Protected,
    /// Open connections.
    pub clients: Cell<usize>,
    /// Connections closed since the allocator last gave memory back.
    pub closed_since_collect: Cell<usize>,
    /// Set by SHUTDOWN.
    pub stopping: Cell<bool>,
    pub stop: tokio::sync::Notify,
    /// The connections a script that runs long serves meanwhile.
    pub busy: super::busy::Busy,
    /// Wakes the `--clock wall` timer (a client blocked: its deadline may be the next one).
    pub timer_kick: tokio::sync::Notify,
}

impl Server {
    /// Whether DEBUG may run from a connection (`local`: its peer is 127.0.0.1 or ::1), as
    /// Redis's `allowProtectedAction` decides.
    pub fn debug_allowed(&self, local: bool) -> bool {
        match self.debug {
            super::Protected::Yes => true,
            super::Protected::No => false,
            super::Protected::Local => local,
        }
    }

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

    /// Time passed: on every node, blocked clients past their deadline get their timeout reply and
    /// keys past theirs expire (with their notifications); the deliveries go to their connections.
    pub fn tick(&self) {
        for (i, node) in self.nodes.iter().enumerate() {
            let mut dels = Vec::new();
            node.emu.borrow_mut().tick(&mut dels);
            if !dels.is_empty() {
                super::outbox::route(self, i, None, dels, &mut Vec::new());
            }
        }
    }

    /// How long the `--clock wall` timer may sleep: until the earliest deadline of a blocked client,
    /// and at most 100 ms (Redis's active expire cycle runs ten times a second, and a change of
    /// `notify-keyspace-events` is seen that soon).
    pub fn next_wake_ms(&self) -> u64 {
        let now = self.clock.now_millis().0;
        let mut wait = 100;
        for node in &self.nodes {
            let (deadline, _) = node.emu.borrow().next_wake();
            if let Some(d) = deadline {
                wait = wait.min((d - now + 1).max(0) as u64);
            }
        }
        wait
    }
}
