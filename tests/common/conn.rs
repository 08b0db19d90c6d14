//! The one raw RESP connection of the tests that talk to a server byte by byte (`limitlab serve`
//! and a private redis-server alike): requests are written as RESP arrays, replies read with the
//! server crate's own reader or as the raw bytes that carry them, and a read that waits longer than
//! the timeout fails the test instead of hanging it.
use std::io::{BufRead, BufReader, Read, Write};
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

    /// One RESP2/RESP3 value, as the exact bytes that carry it (for replies compared byte for byte).
    pub fn read_raw(&mut self) -> Vec<u8> {
        let mut out = self.raw_line();
        let n = || std::str::from_utf8(&out[1..out.len() - 2]).unwrap().parse::<i64>().unwrap();
        match out[0] {
            b'$' | b'=' | b'!' => {
                let len = n();
                if len >= 0 {
                    let mut body = vec![0u8; len as usize + 2];
                    self.r.read_exact(&mut body).expect("a bulk body");
                    out.extend_from_slice(&body);
                }
            }
            b'*' | b'~' | b'>' | b'%' => {
                let items = if out[0] == b'%' { n() * 2 } else { n() };
                for _ in 0..items.max(0) {
                    let item = self.read_raw();
                    out.extend_from_slice(&item);
                }
            }
            _ => {}
        }
        out
    }

    /// [`Conn::call`] whose reply is [`Conn::read_raw`]'s bytes.
    pub fn call_raw(&mut self, args: &[&str]) -> Vec<u8> {
        self.send(args);
        self.read_raw()
    }

    /// Attaches as a replica: writes `first` (SYNC or PSYNC) as it is and reads the lines before the
    /// snapshot (without their CRLF) and the snapshot itself; the command stream follows.
    pub fn attach(&mut self, first: &[u8]) -> (Vec<Vec<u8>>, Vec<u8>) {
        self.write_raw(first);
        let mut headers = Vec::new();
        loop {
            let mut l = self.raw_line();
            l.truncate(l.len() - 2);
            if let Some(n) = l.strip_prefix(b"$") {
                let n: usize = std::str::from_utf8(n).unwrap().parse().expect("a length");
                let mut rdb = vec![0u8; n];
                self.r.read_exact(&mut rdb).expect("the snapshot");
                return (headers, rdb);
            }
            headers.push(l);
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

    /// Waits until INFO says `n` clients are blocked (a blocking command sent on another
    /// connection has reached the server), polling every 5 ms for up to 10 s.
    pub fn wait_blocked(&mut self, n: usize) {
        let want = format!("blocked_clients:{n}\r\n");
        for _ in 0..2000 {
            if let Reply::Bulk(b) = self.call(&["INFO", "clients"]) {
                if String::from_utf8_lossy(&b).contains(&want) {
                    return;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("never {n} blocked clients");
    }

    /// Whether the server closed the connection (reads until then).
    pub fn closed(&mut self) -> bool {
        limitlab_server::client::read_reply(&mut self.r).is_err()
    }

    /// One line as sent, with its CRLF (a line cut short fails the test).
    fn raw_line(&mut self) -> Vec<u8> {
        let mut l = Vec::new();
        self.r.read_until(b'\n', &mut l).expect("a line");
        assert!(l.ends_with(b"\r\n"), "cut line {:?}", String::from_utf8_lossy(&l));
        l
    }
}
