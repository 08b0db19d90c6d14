//! Delivering to a connection from outside its own loop: what another client's command left for
//! it (a Pub/Sub message, the reply that ends its wait in BLPOP, CLIENT KILL). Every connection has
//! an [`Outbox`] in its node's registry; a command's deliveries are queued there, and the
//! connection's loop, which waits on its socket and its outbox at once, writes them.
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use limitlab_emulator::{ClientId, Deliver, Delivery};

use super::conn::Conn;
use super::resp;
use super::state::Server;

/// A wake-up for one connection's task from elsewhere on the thread: a flag and the task's waker,
/// kept between waits (one thread, no locks), so waiting on it costs nothing, unlike a `Notify`
/// whose every wait takes a lock. The connection's loop waits on its socket and on these at once.
#[derive(Default)]
pub struct Signal {
    signaled: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Signal {
    /// Wake the connection (or let its next wait end at once).
    pub fn signal(&self) {
        self.signaled.set(true);
        if let Some(w) = self.waker.borrow().as_ref() {
            w.wake_by_ref();
        }
    }

    /// Ready once signaled since the last time it was ready.
    pub fn poll_signal(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.signaled.replace(false) {
            return Poll::Ready(());
        }
        let mut w = self.waker.borrow_mut();
        if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            *w = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// What was delivered to one connection and not yet written, and the signal that something was.
#[derive(Default)]
pub struct Outbox {
    pub queue: RefCell<VecDeque<Deliver>>,
    pub signal: Signal,
}

/// Writes a push: RESP3's `>` frame, or an array under RESP2.
pub fn write_push(out: &mut Vec<u8>, items: &[limitlab_emulator::Reply], resp3: bool) {
    out.push(if resp3 { b'>' } else { b'*' });
    resp::push_int(out, items.len() as i64);
    out.extend_from_slice(b"\r\n");
    for x in items {
        resp::write(x, resp3, out);
    }
}

/// Writes one delivery for `conn` into `out`: a push, or the reply that ends its wait (it then
/// takes requests again); a kill closes it once `out` is written.
pub fn write_delivery(conn: &mut Conn, d: Deliver, out: &mut Vec<u8>) {
    match d {
        Deliver::Push(items) | Deliver::Late(items) => write_push(out, &items, conn.resp3),
        Deliver::Unblock(r) => {
            conn.blocked = false;
            resp::write(&r, conn.resp3, out);
        }
        Deliver::Close => conn.close = true,
        Deliver::Raw(bytes) => out.extend_from_slice(&bytes),
    }
}

/// Moves what other clients delivered to `conn` into `out`.
#[inline]
pub fn drain(conn: &mut Conn, out: &mut Vec<u8>) {
    if conn.outbox.queue.borrow().is_empty() {
        return;
    }
    let outbox = conn.outbox.clone();
    loop {
        let Some(d) = outbox.queue.borrow_mut().pop_front() else { break };
        write_delivery(conn, d, out);
    }
}

/// Routes a node's deliveries: those for `me` (the connection whose command made them) into `out`
/// now, the others to their connections' outboxes.
pub fn route(server: &Server, node: usize, me: Option<&mut Conn>, dels: Vec<Delivery>, out: &mut Vec<u8>) {
    let mut me = me;
    let boxes = server.nodes[node].outboxes.borrow();
    for (to, d) in dels {
        if let Some(c) = me.as_deref_mut().filter(|c| c.client == to) {
            write_delivery(c, d, out);
            continue;
        }
        if let Some(b) = boxes.get(&to) {
            b.queue.borrow_mut().push_back(d);
            b.signal.signal();
        }
    }
}

/// A connection's outbox, registered under its client.
pub fn register(server: &Server, node: usize, client: ClientId, outbox: &Rc<Outbox>) {
    server.nodes[node].outboxes.borrow_mut().insert(client, outbox.clone());
}

/// Forgets a connection's outbox.
pub fn unregister(server: &Server, node: usize, client: ClientId) {
    server.nodes[node].outboxes.borrow_mut().remove(&client);
}
