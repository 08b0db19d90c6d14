//! A small blocking RESP client: send a command, read its reply as a [`Reply`]. `limitlab cli -h HOST
//! -p PORT` talks to any server with it (a `limitlab serve` or a Redis), without the handshake a
//! client library adds.
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

use limitlab_emulator::Reply;

/// A connection to a Redis server.
pub struct Client {
    reader: BufReader<TcpStream>,
    buf: Vec<u8>,
}

impl Client {
    /// Connects to `host:port`.
    pub fn connect(host: &str, port: u16) -> std::io::Result<Client> {
        let s = TcpStream::connect((host, port))?;
        let _ = s.set_nodelay(true);
        Ok(Client { reader: BufReader::new(s), buf: Vec::new() })
    }

    /// Sends one command and reads its reply.
    pub fn command(&mut self, args: &[Vec<u8>]) -> std::io::Result<Reply> {
        self.buf.clear();
        self.buf.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for a in args {
            self.buf.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            self.buf.extend_from_slice(a);
            self.buf.extend_from_slice(b"\r\n");
        }
        self.reader.get_mut().write_all(&self.buf)?;
        read_reply(&mut self.reader)
    }
}

fn bad(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("bad reply from the server: {what}"))
}

fn line(r: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut l = Vec::new();
    if r.read_until(b'\n', &mut l)? == 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the server closed the connection"));
    }
    if !l.ends_with(b"\r\n") {
        return Err(bad("a line without CRLF"));
    }
    l.truncate(l.len() - 2);
    Ok(l)
}

fn int(b: &[u8]) -> std::io::Result<i64> {
    std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()).ok_or_else(|| bad("a length that is not a number"))
}

/// Reads one RESP2 or RESP3 reply.
pub fn read_reply(r: &mut impl BufRead) -> std::io::Result<Reply> {
    let l = line(r)?;
    let (&t, rest) = l.split_first().ok_or_else(|| bad("an empty line"))?;
    let text = || String::from_utf8_lossy(rest).into_owned();
    Ok(match t {
        b'+' => Reply::Status(text()),
        b'-' | b'!' => Reply::Error(text()),
        b':' => Reply::Int(int(rest)?),
        b'$' | b'=' => {
            let n = int(rest)?;
            if n < 0 {
                return Ok(Reply::Nil);
            }
            let mut body = vec![0; n as usize + 2];
            r.read_exact(&mut body)?;
            body.truncate(n as usize);
            if t == b'=' && body.len() >= 4 {
                body.drain(..4);
            }
            Reply::Bulk(body)
        }
        b'(' => Reply::Bulk(rest.to_vec()),
        b'_' => Reply::Nil,
        b'#' => Reply::Bool(rest == b"t"),
        b',' => Reply::Double(String::from_utf8_lossy(rest).parse().map_err(|_| bad("a double"))?),
        b'*' | b'~' | b'>' => {
            let n = int(rest)?;
            if n < 0 {
                return Ok(Reply::NilArray);
            }
            let v = (0..n).map(|_| read_reply(r)).collect::<std::io::Result<Vec<_>>>()?;
            if t == b'~' {
                Reply::Set(v)
            } else {
                Reply::Array(v)
            }
        }
        b'%' => {
            let n = int(rest)?;
            let mut kv = Vec::with_capacity(n.max(0) as usize);
            for _ in 0..n {
                kv.push((read_reply(r)?, read_reply(r)?));
            }
            Reply::Map(kv)
        }
        _ => return Err(bad("an unknown type byte")),
    })
}
