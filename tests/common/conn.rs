//! The one raw RESP connection of the tests that talk to a server byte by byte (`limitlab serve`
//! and a private redis-server alike): requests are written as RESP arrays, replies read with the
//! server crate's own reader, and a read that waits longer than the timeout fails the test instead
//! of hanging it.
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use limitlab_emulator::Reply;

/// How long a read may wait before the test fails.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection that sends requests and reads replies one at a time.
pub struct Conn {
    r: BufReader<TcpStream>,
}

impl Conn {
    pub fn open(port: u16) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        Conn { r: BufReader::new(s) }
    }

    /// Sends the requests in one write (a pipeline).
    pub fn send_all(&mut self, requests: &[&[&str]]) {
        let mut b = Vec::new();
        for args in requests {
            b.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
            for a in *args {
                b.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
            }
        }
        self.write_raw(&b);
    }

    pub fn send(&mut self, args: &[&str]) {
        self.send_all(&[args]);
    }

    /// [`Conn::send`] of arguments that need not be text.
    pub fn send_bytes(&mut self, args: &[&[u8]]) {
        let mut b = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            b.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            b.extend_from_slice(a);
            b.extend_from_slice(b"\r\n");
        }
        self.write_raw(&b);
    }

    /// [`Conn::call`] of arguments that need not be text.
    pub fn call_bytes(&mut self, args: &[&[u8]]) -> Reply {
        self.send_bytes(args);
        self.read()
    }

    /// Writes bytes as they are (inline commands, malformed requests).
    pub fn write_raw(&mut self, bytes: &[u8]) {
        self.r.get_mut().write_all(bytes).expect("send");
    }

    pub fn read(&mut self) -> Reply {
        limitlab_server::client::read_reply(&mut self.r).expect("a reply")
    }

    pub fn call(&mut self, args: &[&str]) -> Reply {
        self.send(args);
        self.read()
    }

    /// [`Conn::call`] with the arguments of a line split at spaces.
    pub fn line(&mut self, line: &str) -> Reply {
        let args: Vec<&str> = line.split(' ').collect();
        self.call(&args)
    }

    /// A line whose reply must be a bulk string, as text.
    pub fn text(&mut self, line: &str) -> String {
        match self.line(line) {
            Reply::Bulk(b) => String::from_utf8(b).unwrap(),
            other => panic!("{line}: {other:?}"),
        }
    }

    /// The raw bytes the server sends until they end with `end`.
    pub fn bytes_until(&mut self, end: &[u8]) -> Vec<u8> {
        let mut got = Vec::new();
        let mut b = [0u8; 1];
        while !got.ends_with(end) {
            self.r.read_exact(&mut b).unwrap_or_else(|e| panic!("{e} after {:?}", String::from_utf8_lossy(&got)));
            got.push(b[0]);
        }
        got
    }

    /// Whether the server closed the connection (reads until then).
    pub fn closed(&mut self) -> bool {
        limitlab_server::client::read_reply(&mut self.r).is_err()
    }
}
