//! Redis 7.0.15's command table and configuration, as the emulator carries them
//! (`src/emulator/cmd/redis_commands.resp`, `redis_docs.resp`, `redis_config.resp`): each file is a
//! real server's reply in RESP3, entries (and the subcommands inside them) sorted by name. This test asks a private `redis-server` again
//! and requires the same bytes; with `LIMITLAB_RECORD=1` it rewrites the files instead.
//!
//! CONFIG GET's values are a private server's, with its port written as 6379 and its directory as `/`.
use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;

use common::RedisServer;

/// Reads one RESP value, returning its raw bytes.
fn read_raw(r: &mut impl BufRead) -> Vec<u8> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).expect("reading a reply");
    assert!(line.ends_with(b"\r\n"), "a RESP line: {line:?}");
    let head = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
    let mut out = line.clone();
    match line[0] {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => {}
        b'$' | b'=' | b'!' => {
            let n: i64 = head.parse().expect("a length");
            if n >= 0 {
                let mut data = vec![0u8; n as usize + 2];
                std::io::Read::read_exact(r, &mut data).expect("reading a bulk string");
                out.extend_from_slice(&data);
            }
        }
        b'*' | b'~' | b'%' | b'>' | b'|' => {
            let n: i64 = head.parse().expect("a count");
            let n = if matches!(line[0], b'%' | b'|') { 2 * n } else { n };
            for _ in 0..n.max(0) {
                out.extend(read_raw(r));
            }
        }
        other => panic!("unexpected RESP type {:?}", other as char),
    }
    out
}

/// Splits an aggregate's raw bytes into its header count and its elements' raw bytes.
fn elements(raw: &[u8]) -> (u8, Vec<Vec<u8>>) {
    let mut r = BufReader::new(raw);
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).unwrap();
    let n: usize = String::from_utf8_lossy(&line[1..line.len() - 2]).parse().unwrap();
    let n = if line[0] == b'%' { 2 * n } else { n };
    (line[0], (0..n).map(|_| read_raw(&mut r)).collect())
}

/// The name inside an element: a bulk string's text, or an array's first element's.
fn name_of(raw: &[u8]) -> Vec<u8> {
    let mut r = BufReader::new(raw);
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).unwrap();
    if line[0] == b'$' {
        let n: usize = String::from_utf8_lossy(&line[1..line.len() - 2]).parse().unwrap();
        let mut data = vec![0u8; n];
        std::io::Read::read_exact(&mut r, &mut data).unwrap();
        return data;
    }
    name_of(&read_raw(&mut r))
}

fn bulk(s: &[u8]) -> Vec<u8> {
    let mut v = format!("${}\r\n", s.len()).into_bytes();
    v.extend_from_slice(s);
    v.extend_from_slice(b"\r\n");
    v
}

/// An array (`*` or `~`) with its elements sorted by name, or a map with its pairs sorted by key.
fn sorted(raw: &[u8]) -> Vec<u8> {
    let (kind, items) = elements(raw);
    if kind == b'%' {
        let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = items.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect();
        pairs.sort_by_key(|(k, _)| name_of(k));
        let mut out = format!("%{}\r\n", pairs.len()).into_bytes();
        for (k, v) in pairs {
            out.extend(k);
            out.extend(v);
        }
        out
    } else {
        let mut items = items;
        items.sort_by_key(|e| name_of(e));
        let mut out = format!("{}{}\r\n", kind as char, items.len()).into_bytes();
        for e in items {
            out.extend(e);
        }
        out
    }
}

/// Reassembles an aggregate from its kind and elements (pairs flattened for a map).
fn assemble(kind: u8, items: Vec<Vec<u8>>) -> Vec<u8> {
    let n = if kind == b'%' { items.len() / 2 } else { items.len() };
    let mut out = format!("{}{}\r\n", kind as char, n).into_bytes();
    for e in items {
        out.extend(e);
    }
    out
}

/// A COMMAND entry with its subcommands (element 10, in the server's hash order) sorted by name.
fn normalize_command(raw: &[u8]) -> Vec<u8> {
    let (kind, mut items) = elements(raw);
    if items.len() >= 10 {
        let (sk, subs) = elements(&items[9]);
        let subs: Vec<Vec<u8>> = subs.iter().map(|e| normalize_command(e)).collect();
        items[9] = sorted(&assemble(sk, subs));
    }
    assemble(kind, items)
}

/// A COMMAND DOCS entry (a map) with its `subcommands` map sorted by name, recursively.
fn normalize_docs(raw: &[u8]) -> Vec<u8> {
    let (kind, mut items) = elements(raw);
    if kind != b'%' {
        return raw.to_vec();
    }
    for i in (0..items.len()).step_by(2) {
        if name_of(&items[i]) == b"subcommands" {
            let (sk, subs) = elements(&items[i + 1]);
            let subs: Vec<Vec<u8>> = subs.chunks(2).flat_map(|p| [p[0].clone(), normalize_docs(&p[1])]).collect();
            items[i + 1] = sorted(&assemble(sk, subs));
        }
    }
    assemble(kind, items)
}

fn send(conn: &mut TcpStream, reader: &mut impl BufRead, args: &[&[u8]]) -> Vec<u8> {
    let mut req = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        req.extend(bulk(a));
    }
    conn.write_all(&req).expect("sending a command");
    read_raw(reader)
}

fn data_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/emulator/src/cmd").join(name)
}

#[test]
fn the_recorded_command_table_and_config_are_redis_7_0_15s() {
    let Some(server) = RedisServer::start_or_skip("the_recorded_command_table_and_config_are_redis_7_0_15s") else {
        return;
    };
    let mut conn = TcpStream::connect(("127.0.0.1", server.port())).expect("connecting");
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    send(&mut conn, &mut reader, &[b"HELLO", b"3"]);
    let version = send(&mut conn, &mut reader, &[b"INFO", b"server"]);
    let version = String::from_utf8_lossy(&version).into_owned();
    assert!(version.contains("redis_version:7.0."), "these files are Redis 7.0's; this server is another version");

    // Entries, and the subcommands inside them, come in the server's hash order: sorted by name.
    let (kind, entries) = elements(&send(&mut conn, &mut reader, &[b"COMMAND"]));
    let commands = sorted(&assemble(kind, entries.iter().map(|e| normalize_command(e)).collect()));
    let (kind, docs) = elements(&send(&mut conn, &mut reader, &[b"COMMAND", b"DOCS"]));
    let docs: Vec<Vec<u8>> = docs.chunks(2).flat_map(|p| [p[0].clone(), normalize_docs(&p[1])]).collect();
    let docs = sorted(&assemble(kind, docs));
    // CONFIG GET * with the values that name this server's port and directory made neutral.
    let (_, items) = elements(&send(&mut conn, &mut reader, &[b"CONFIG", b"GET", b"*"]));
    let mut config = format!("%{}\r\n", items.len() / 2).into_bytes();
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = items.chunks(2).map(|p| (name_of(&p[0]), name_of(&p[1]))).collect();
    pairs.sort();
    for (k, v) in pairs {
        let v = match k.as_slice() {
            b"port" => b"6379".to_vec(),
            b"dir" => b"/".to_vec(),
            _ => v,
        };
        config.extend(bulk(&k));
        config.extend(bulk(&v));
    }

    let record = std::env::var("LIMITLAB_RECORD").is_ok_and(|v| v == "1");
    for (file, got) in [("redis_commands.resp", commands), ("redis_docs.resp", docs), ("redis_config.resp", config)] {
        let path = data_file(file);
        if record {
            std::fs::write(&path, &got).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
            println!("recorded {} ({} bytes)", path.display(), got.len());
            continue;
        }
        let want = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        assert!(got == want, "{} differs from this server's reply (re-record with LIMITLAB_RECORD=1)", path.display());
    }
}
