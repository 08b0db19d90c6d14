//! One client: read what it sent, run every whole request in it, write all their replies in one go
//! (a pipeline of N commands costs one read and one write), until it quits, breaks the protocol or
//! goes away. An aggregate reply is streamed: written in chunks as it is encoded, so a reply of
//! millions of elements is not held twice.
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]
use std::rc::Rc;

use bytes::{Buf, BytesMut};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::commands;
use super::conn::{connect, Conn};
use super::outbox::{self, Outbox};
use super::parse::{self, Frame};
use super::state::Server;

/// Bytes asked of the socket per read (Redis's `PROTO_IOBUF_LEN`).
const READ_CHUNK: usize = 16 * 1024;
/// A reply's bytes handed to the socket at a time when it is streamed (a chunk less than
/// [`KEEP_CAPACITY`], so streaming never makes the buffer one to give back).
const STREAM_CHUNK: usize = 128 * 1024;
/// Buffers grown past this are given back once empty, so a large request or reply does not pin memory.
const KEEP_CAPACITY: usize = 256 * 1024;

/// Answers a connection over `maxclients` with Redis's text, then closes it.
pub async fn refuse(mut stream: TcpStream) {
    let _ = stream.write_all(b"-ERR max number of clients reached\r\n").await;
}

/// Serves one connection to the end.
pub async fn handle(server: Rc<Server>, node: usize, mut stream: TcpStream) {
    // The node counted it when it was accepted (`Node::admit`).
    server.clients.set(server.clients.get() + 1);
    let addrs = match (stream.peer_addr(), stream.local_addr()) {
        (Ok(p), Ok(l)) => Some((p.to_string(), l.to_string())),
        _ => None,
    };
    let client = connect(&server, node, &addrs);
    let outbox = Rc::new(Outbox::default());
    outbox::register(&server, node, client, &outbox);
    let mut conn = Conn {
        node,
        client,
        addrs,
        resp3: false,
        authed: !server.nodes[node].emu.borrow().auth_required(client),
        close: false,
        grew: false,
        outbox,
        blocked: false,
        subscribed: false,
        mute: 0,
        replica_port: 0,
    };
    // Declared after the stream, so dropped before it: the socket stays open while registered.
    let busy = super::busy::Busy::register(&server, &stream, conn.authed);
    let _ = serve(&server, &mut conn, &mut stream, &busy.entry).await;
    drop(busy);
    outbox::unregister(&server, conn.node, conn.client);
    server.nodes[conn.node].emu.borrow_mut().disconnect(conn.client);
    server.clients.set(server.clients.get() - 1);
    server.nodes[conn.node].clients.set(server.nodes[conn.node].clients.get() - 1);
    give_back_memory(&server, conn.grew);
}

/// Returns the freed pages of this thread's heap to the system (mimalloc keeps them otherwise).
fn collect() {
    // SAFETY: mi_collect takes no pointers; it only walks this thread's own heap.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// After every few closed connections (and when the last one closes), asks the allocator to return
/// freed pages to the system: a burst of connections would otherwise leave the server's memory at
/// its peak for good.
fn give_back_memory(server: &Server, grew: bool) {
    let closed = server.closed_since_collect.get() + 1;
    if grew || closed >= 32 || server.clients.get() == 0 {
        server.closed_since_collect.set(0);
        collect();
    } else {
        server.closed_since_collect.set(closed);
    }
}

/// Writes an aggregate reply after what `out` holds, [`STREAM_CHUNK`] bytes at a time: only a
/// chunk of its bytes exists at once, and its elements are freed as they are written (and, for a
/// large one, given back to the system at the end).
async fn stream_reply(
    stream: &mut TcpStream,
    out: &mut Vec<u8>,
    r: limitlab_emulator::Reply,
    resp3: bool,
) -> std::io::Result<()> {
    let mut s = super::resp::Stream::new(r, resp3);
    let mut chunks = 0;
    while !s.fill(out, STREAM_CHUNK) {
        stream.write_all(out).await?;
        out.clear();
        chunks += 1;
    }
    // A reply of more than a few MB leaves its pages freed but kept: give them back.
    if chunks >= 32 {
        drop(s);
        collect();
    }
    Ok(())
}

async fn serve(
    server: &Server,
    conn: &mut Conn,
    stream: &mut TcpStream,
    busy: &super::busy::Entry,
) -> std::io::Result<()> {
    let mut inbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut out: Vec<u8> = Vec::new();
    let mut ranges = Vec::new();
    loop {
        outbox::drain(conn, &mut out);
        let mut used = 0;
        while used < inbuf.len() && !conn.close && !conn.blocked {
            let buf = &inbuf[used..];
            // A request's length, and its arguments when inline (multibulk ones are in `ranges`).
            // Read per request: a CONFIG SET in the same batch applies to the requests after it.
            let limits = server.nodes[conn.node].emu.borrow().request_limits();
            let (n, inline) = match parse::next(buf, conn.authed, limits.max_bulk, &mut ranges) {
                Frame::Incomplete => break,
                Frame::Skip(n) => {
                    used += n;
                    continue;
                }
                Frame::Multibulk(n)
                    if n as i64 > limits.query_buffer && parse::big_argument_over(&ranges, limits.query_buffer) =>
                {
                    // Closed without a reply, after the replies to the requests before it.
                    conn.close = true;
                    break;
                }
                Frame::Multibulk(n) => (n, None),
                Frame::Inline(n, owned) => (n, Some(owned)),
                Frame::Error(text) => {
                    super::resp::write_error(&mut out, &format!("ERR {text}"));
                    conn.close = true;
                    continue;
                }
            };
            let args: Vec<&[u8]> = match &inline {
                Some(owned) => owned.iter().map(Vec::as_slice).collect(),
                None => ranges.iter().map(|r| &buf[r.clone()]).collect(),
            };
            let large = commands::execute(server, conn, &args, &mut out);
            used += n;
            if let Some(r) = large {
                stream_reply(stream, &mut out, r, conn.resp3).await?;
            }
        }
        inbuf.advance(used);
        conn.grew |= inbuf.capacity() > KEEP_CAPACITY || out.capacity() > KEEP_CAPACITY;
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
            if out.capacity() > KEEP_CAPACITY {
                out = Vec::new();
                collect();
            }
        }
        if conn.close || server.stopping.get() {
            return Ok(());
        }
        // `client-query-buffer-limit`: a client whose unprocessed request outgrows it is closed,
        // without a reply (Redis's readQueryFromClient). The exact count is only needed near it.
        let limit = server.nodes[conn.node].emu.borrow().request_limits().query_buffer;
        if inbuf.len() as i64 > limit && parse::pending_query_bytes(&inbuf) as i64 > limit {
            return Ok(());
        }
        if inbuf.is_empty() && inbuf.capacity() > KEEP_CAPACITY {
            inbuf = BytesMut::with_capacity(READ_CHUNK);
            collect();
        }
        // Waits for more bytes or a delivery from another client; a script that runs long meanwhile
        // may answer some requests (busy.rs).
        if !super::busy::read(server, conn, busy, stream, &mut inbuf).await? {
            return Ok(());
        }
    }
}
