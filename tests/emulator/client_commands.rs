//! CLIENT between several connections: names, ids, flags, databases, transactions and the last
//! command, as CLIENT LIST and CLIENT INFO show them. Run on the emulator (clients from
//! `Emulator::connect`) and on a private Redis 7.0 (one connection per client); the replies must
//! agree once what differs by nature is left out (the ids' base, addresses, ages, buffer sizes).
//! Without `redis-server` only the emulator's replies are checked against those written here (read
//! from Redis 7.0.15).
use crate::common;

use common::RedisServer;
use limitlab_emulator::split_args::split_args;
use limitlab_emulator::{ClientId, Emulator, Reply};
use limitlab_engine::backend::real::to_reply;

/// (client index, redis-cli line, expected reply after [`masked`]).
type Step = (usize, &'static str, &'static str);

/// A CLIENT LIST / CLIENT INFO line with the fields that describe the connection's state: the id
/// counted from the first client's, name, flags, db, multi, cmd, user and resp.
fn masked_line(line: &str, first_id: i64) -> String {
    let mut out = Vec::new();
    for field in line.split(' ') {
        let Some((k, v)) = field.split_once('=') else { continue };
        match k {
            "id" => out.push(format!("id+{}", v.parse::<i64>().unwrap_or(0) - first_id)),
            "name" | "flags" | "db" | "multi" | "cmd" | "user" | "resp" => out.push(format!("{k}={v}")),
            _ => {}
        }
    }
    out.join(" ")
}

/// A reply on one line; CLIENT LIST/INFO text masked line by line, CLIENT ID counted from the first.
fn masked(r: &Reply, first_id: i64) -> String {
    match r {
        Reply::Nil | Reply::NilArray => "nil".into(),
        Reply::Status(s) => s.clone(),
        Reply::Error(e) => format!("(error) {e}"),
        Reply::Int(i) => i.to_string(),
        Reply::Bulk(b) | Reply::Verbatim(b) => {
            let text = String::from_utf8_lossy(b).into_owned();
            if text.starts_with("id=") {
                text.lines().map(|l| masked_line(l, first_id)).collect::<Vec<_>>().join(" | ")
            } else {
                text
            }
        }
        Reply::Array(v) => format!("[{}]", v.iter().map(|x| masked(x, first_id)).collect::<Vec<_>>().join(", ")),
        other => format!("{other:?}"),
    }
}

fn args(line: &str) -> Vec<Vec<u8>> {
    split_args(line.as_bytes()).expect("a well-formed line")
}

/// Each client's id first (CLIENT ID), then the steps' replies.
fn on_emulator(steps: &[Step]) -> (Vec<i64>, Vec<Reply>) {
    let mut emu = Emulator::new();
    let clients = [ClientId::DEFAULT, emu.connect(), emu.connect()];
    let run = |emu: &mut Emulator, c: usize, line: &str| {
        let a = args(line);
        let refs: Vec<&[u8]> = a.iter().map(Vec::as_slice).collect();
        emu.execute_as(clients[c], &refs)
    };
    let ids = (0..3)
        .map(|c| match run(&mut emu, c, "CLIENT ID") {
            Reply::Int(i) => i,
            other => panic!("CLIENT ID: {other:?}"),
        })
        .collect();
    (ids, steps.iter().map(|(c, line, _)| run(&mut emu, *c, line)).collect())
}

fn on_redis(url: &str, steps: &[Step]) -> (Vec<i64>, Vec<Reply>) {
    let client = redis::Client::open(url).unwrap();
    let mut conns: Vec<redis::Connection> = (0..3).map(|_| client.get_connection().unwrap()).collect();
    let run = |conn: &mut redis::Connection, line: &str| {
        let mut cmd = redis::Cmd::new();
        for a in args(line) {
            cmd.arg(a);
        }
        match redis::ConnectionLike::req_command(conn, &cmd) {
            Ok(v) => to_reply(v),
            Err(e) => Reply::Error(format!(
                "{}{}",
                e.code().map(|c| format!("{c} ")).unwrap_or_default(),
                e.detail().unwrap_or("")
            )),
        }
    };
    let ids = conns
        .iter_mut()
        .map(|c| match run(c, "CLIENT ID") {
            Reply::Int(i) => i,
            other => panic!("CLIENT ID: {other:?}"),
        })
        .collect();
    (ids, steps.iter().map(|(c, line, _)| run(&mut conns[*c], line)).collect())
}

fn check(title: &str, steps: &[Step], server: Option<&RedisServer>) {
    let (ids, emu) = on_emulator(steps);
    assert!(ids[0] < ids[1] && ids[1] < ids[2], "{title}: ids grow with each connection: {ids:?}");
    let emu: Vec<String> = emu.iter().map(|r| masked(r, ids[0])).collect();
    for ((c, line, want), got) in steps.iter().zip(&emu) {
        assert_eq!(got, want, "{title}: client {c}: {line}");
    }
    if let Some(s) = server {
        let (rids, real) = on_redis(&s.url(), steps);

        assert_eq!(rids[1] - rids[0], ids[1] - ids[0], "{title}: ids of consecutive connections");
        for ((c, line, _), (e, r)) in steps.iter().zip(emu.iter().zip(real.iter().map(|r| masked(r, rids[0])))) {
            assert_eq!(*e, r, "{title}: client {c}: {line}: emulator vs Redis");
        }
    }
}

#[test]
fn client_state_is_per_connection() {
    let server = RedisServer::start_or_skip("client_state_is_per_connection");
    let steps: &[Step] = &[
        (0, "CLIENT SETNAME first", "OK"),
        (1, "CLIENT GETNAME", "nil"),
        (1, "CLIENT SETNAME second", "OK"),
        (0, "CLIENT GETNAME", "first"),
        (2, "SELECT 3", "OK"),
        (2, "CLIENT NO-EVICT on", "OK"),
        (1, "MULTI", "OK"),
        (1, "SET k v", "QUEUED"),
        (0, "CLIENT INFO", "id+0 name=first flags=N db=0 multi=-1 cmd=client|info user=default resp=2"),
        (
            0,
            "CLIENT LIST",
            "id+0 name=first flags=N db=0 multi=-1 cmd=client|list user=default resp=2 | \
             id+1 name=second flags=x db=0 multi=1 cmd=set user=default resp=2 | \
             id+2 name= flags=e db=3 multi=-1 cmd=client|no-evict user=default resp=2",
        ),
        (2, "CLIENT LIST TYPE normal", "id+0 name=first flags=N db=0 multi=-1 cmd=client|list user=default resp=2 | id+1 name=second flags=x db=0 multi=1 cmd=set user=default resp=2 | id+2 name= flags=e db=3 multi=-1 cmd=client|list user=default resp=2"),
        (1, "CLIENT INFO", "QUEUED"),
        (1, "EXEC", "[OK, id+1 name=second flags=x db=0 multi=2 cmd=exec user=default resp=2]"),
        (2, "CLIENT NO-EVICT off", "OK"),
        (0, "WATCH w", "OK"),
        (2, "SET w 1", "OK"),
        (2, "SELECT 0", "OK"),
        (2, "SET w 2", "OK"),
        (0, "CLIENT INFO", "id+0 name=first flags=d db=0 multi=-1 cmd=client|info user=default resp=2"),
        (0, "UNWATCH", "OK"),
        (0, "CLIENT INFO", "id+0 name=first flags=N db=0 multi=-1 cmd=client|info user=default resp=2"),
        (2, "CLIENT SETNAME \"\"", "OK"),
        (2, "CLIENT INFO", "id+2 name= flags=N db=0 multi=-1 cmd=client|info user=default resp=2"),
        (1, "CLIENT SETNAME \"bad name\"", "(error) ERR Client names cannot contain spaces, newlines or special characters."),
        (1, "CLIENT GETNAME", "second"),
        (0, "CLIENT NO-EVICT maybe", "(error) ERR syntax error"),
        (0, "CLIENT SETINFO lib-name x", "(error) ERR unknown subcommand 'SETINFO'. Try CLIENT HELP."),
        (0, "CLIENT NO-EVICT", "(error) ERR wrong number of arguments for 'client|no-evict' command"),
        (0, "CLIENT LIST TYPE pubsub", ""),
        (0, "CLIENT LIST ID x", "(error) ERR Invalid client ID"),
        (0, "CLIENT LIST TYPE nope", "(error) ERR Unknown client type 'nope'"),
        (0, "INFO nosuchsection", ""),
    ];
    check("CLIENT", steps, server.as_ref());
}
