//! Transactions and databases between several clients: what one redis-cli session cannot show.
//! Each scenario is a list of (client, command) steps, run on the emulator (clients from
//! `Emulator::connect`) and on a private Redis 7.0 (one connection per client); every reply must be
//! the same. Without `redis-server` only the emulator's replies are checked against the expected ones
//! written here (read from Redis 7.0.15).
use crate::common;

use common::RedisServer;
use limitlab_cli::verify::normalise;
use limitlab_emulator::split_args::split_args;
use limitlab_emulator::{ClientId, Emulator, Reply};
use limitlab_engine::backend::real::to_reply;

/// (client index, redis-cli line, expected reply as [`show`] prints it).
type Step = (usize, &'static str, &'static str);

/// A reply on one line: `nil`, `(error) ...`, `[a, b]`.
fn show(r: &Reply) -> String {
    match r {
        Reply::Nil | Reply::NilArray => "nil".into(),
        Reply::Status(s) => s.clone(),
        Reply::Error(e) => format!("(error) {e}"),
        Reply::Int(i) => i.to_string(),
        Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Reply::Array(v) => format!("[{}]", v.iter().map(show).collect::<Vec<_>>().join(", ")),
        other => format!("{other:?}"),
    }
}

fn args(line: &str) -> Vec<Vec<u8>> {
    split_args(line.as_bytes()).expect("a well-formed line")
}

fn name(line: &str) -> String {
    String::from_utf8_lossy(&args(line)[0]).to_ascii_lowercase()
}

fn on_emulator(steps: &[Step]) -> Vec<Reply> {
    let mut emu = Emulator::new();
    let clients = [ClientId::DEFAULT, emu.connect(), emu.connect()];
    steps
        .iter()
        .map(|(c, line, _)| {
            let a = args(line);
            let refs: Vec<&[u8]> = a.iter().map(Vec::as_slice).collect();
            normalise(&name(line), emu.execute_as(clients[*c], &refs))
        })
        .collect()
}

fn on_redis(url: &str, steps: &[Step]) -> Vec<Reply> {
    let client = redis::Client::open(url).unwrap();
    let mut conns: Vec<redis::Connection> = (0..3).map(|_| client.get_connection().unwrap()).collect();
    redis::cmd("FLUSHALL").query::<()>(&mut conns[0]).unwrap();
    redis::cmd("SCRIPT").arg("FLUSH").query::<()>(&mut conns[0]).unwrap();
    steps
        .iter()
        .map(|(c, line, _)| {
            let mut cmd = redis::Cmd::new();
            for a in args(line) {
                cmd.arg(a);
            }
            let r = match redis::ConnectionLike::req_command(&mut conns[*c], &cmd) {
                Ok(v) => to_reply(v),
                Err(e) => Reply::Error(format!(
                    "{}{}",
                    e.code().map(|c| format!("{c} ")).unwrap_or_default(),
                    e.detail().unwrap_or("")
                )),
            };
            normalise(&name(line), r)
        })
        .collect()
}

fn check(title: &str, steps: &[Step], server: Option<&RedisServer>) {
    let emu = on_emulator(steps);
    for ((c, line, want), got) in steps.iter().zip(&emu) {
        assert_eq!(show(got), *want, "{title}: client {c}: {line}");
    }
    if let Some(s) = server {
        let real = on_redis(&s.url(), steps);
        for ((c, line, _), (e, r)) in steps.iter().zip(emu.iter().zip(&real)) {
            assert_eq!(show(e), show(r), "{title}: client {c}: {line}: emulator vs Redis");
        }
    }
}

const SCENARIOS: &[(&str, &[Step])] = &[
    (
        "another client's write aborts EXEC",
        &[
            (0, "SET k 1", "OK"),
            (0, "WATCH k", "OK"),
            (1, "SET k 2", "OK"),
            (0, "MULTI", "OK"),
            (0, "INCR k", "QUEUED"),
            (0, "EXEC", "nil"),
            (0, "GET k", "2"),
        ],
    ),
    (
        "another client's read does not",
        &[
            (0, "SET k 1", "OK"),
            (0, "WATCH k", "OK"),
            (1, "GET k", "1"),
            (1, "EXISTS k", "1"),
            (0, "MULTI", "OK"),
            (0, "INCR k", "QUEUED"),
            (0, "EXEC", "[2]"),
        ],
    ),
    (
        "another client's write of the same name in another database does not",
        &[
            (0, "SET k 1", "OK"),
            (0, "WATCH k", "OK"),
            (1, "SELECT 1", "OK"),
            (1, "SET k x", "OK"),
            (0, "MULTI", "OK"),
            (0, "INCR k", "QUEUED"),
            (0, "EXEC", "[2]"),
            (1, "GET k", "x"),
        ],
    ),
    (
        "queued commands run at EXEC, on what other clients left",
        &[(0, "MULTI", "OK"), (0, "INCR k", "QUEUED"), (1, "SET k 10", "OK"), (1, "GET k", "10"), (0, "EXEC", "[11]")],
    ),
    (
        "another client's script touches",
        &[
            (0, "WATCH k", "OK"),
            (1, "EVAL \"return redis.call('SET', KEYS[1], 'x')\" 1 k", "OK"),
            (0, "MULTI", "OK"),
            (0, "PING", "QUEUED"),
            (0, "EXEC", "nil"),
        ],
    ),
    (
        "another client's script that only reads does not",
        &[
            (0, "SET k 1", "OK"),
            (0, "WATCH k", "OK"),
            (1, "EVAL \"return redis.call('GET', KEYS[1])\" 1 k", "1"),
            (0, "MULTI", "OK"),
            (0, "PING", "QUEUED"),
            (0, "EXEC", "[PONG]"),
        ],
    ),
    (
        "another client's transaction touches when it runs",
        &[
            (0, "SET k 1", "OK"),
            (0, "WATCH k", "OK"),
            (1, "MULTI", "OK"),
            (1, "SET k 2", "QUEUED"),
            (0, "MULTI", "OK"),
            (0, "PING", "QUEUED"),
            (1, "EXEC", "[OK]"),
            (0, "EXEC", "nil"),
        ],
    ),
    (
        "a transaction's writes abort the next one of another client",
        &[
            (0, "WATCH k", "OK"),
            (1, "WATCH k", "OK"),
            (0, "MULTI", "OK"),
            (0, "SET k mine", "QUEUED"),
            (0, "EXEC", "[OK]"),
            (1, "MULTI", "OK"),
            (1, "SET k theirs", "QUEUED"),
            (1, "EXEC", "nil"),
            (1, "GET k", "mine"),
        ],
    ),
    (
        "a discarded transaction touches nothing",
        &[
            (0, "SET k 1", "OK"),
            (0, "WATCH k", "OK"),
            (1, "MULTI", "OK"),
            (1, "SET k 2", "QUEUED"),
            (1, "DISCARD", "OK"),
            (0, "MULTI", "OK"),
            (0, "PING", "QUEUED"),
            (0, "EXEC", "[PONG]"),
        ],
    ),
    (
        "an aborted transaction touches nothing",
        &[
            (0, "SET k 1", "OK"),
            (1, "WATCH k", "OK"),
            (0, "WATCH k", "OK"),
            (1, "SET k 1", "OK"),
            (1, "MULTI", "OK"),
            (1, "SET k 2", "QUEUED"),
            (1, "EXEC", "nil"),
            (1, "GET k", "1"),
            (0, "MULTI", "OK"),
            (0, "PING", "QUEUED"),
            (0, "EXEC", "nil"),
        ],
    ),
    (
        "a no-op write of another client does not touch",
        &[
            (0, "WATCH k", "OK"),
            (1, "DEL k", "0"),
            (1, "PERSIST k", "0"),
            (1, "SADD k2 x", "1"),
            (0, "MULTI", "OK"),
            (0, "PING", "QUEUED"),
            (0, "EXEC", "[PONG]"),
        ],
    ),
    (
        "another client's FLUSHALL touches a key of this client's database",
        &[
            (0, "SELECT 2", "OK"),
            (0, "SET k 1", "OK"),
            (0, "WATCH k", "OK"),
            (1, "FLUSHALL", "OK"),
            (0, "MULTI", "OK"),
            (0, "PING", "QUEUED"),
            (0, "EXEC", "nil"),
        ],
    ),
    (
        "another client's FLUSHDB of another database does not",
        &[
            (0, "SELECT 2", "OK"),
            (0, "SET k 1", "OK"),
            (0, "WATCH k", "OK"),
            (1, "FLUSHDB", "OK"),
            (0, "MULTI", "OK"),
            (0, "PING", "QUEUED"),
            (0, "EXEC", "[PONG]"),
        ],
    ),
    (
        "SWAPDB moves keys under every client",
        &[
            (0, "SET k zero", "OK"),
            (1, "SELECT 1", "OK"),
            (1, "SET k one", "OK"),
            (0, "WATCH k", "OK"),
            (2, "SWAPDB 0 1", "OK"),
            (0, "GET k", "one"),
            (1, "GET k", "zero"),
            (0, "MULTI", "OK"),
            (0, "PING", "QUEUED"),
            (0, "EXEC", "nil"),
        ],
    ),
    (
        "MOVE into a watched key of another database",
        &[
            (0, "SELECT 3", "OK"),
            (0, "WATCH k", "OK"),
            (1, "SET k v", "OK"),
            (1, "MOVE k 3", "1"),
            (0, "GET k", "v"),
            (0, "MULTI", "OK"),
            (0, "PING", "QUEUED"),
            (0, "EXEC", "nil"),
        ],
    ),
    (
        "each client has its own database, transaction and WATCHes",
        &[
            (0, "SELECT 5", "OK"),
            (1, "SET x in0", "OK"),
            (0, "GET x", "nil"),
            (0, "SET x in5", "OK"),
            (1, "GET x", "in0"),
            (0, "MULTI", "OK"),
            (1, "MULTI", "OK"),
            (0, "GET x", "QUEUED"),
            (1, "GET x", "QUEUED"),
            (2, "GET x", "in0"),
            (1, "EXEC", "[in0]"),
            (0, "EXEC", "[in5]"),
            (2, "EXEC", "(error) ERR EXEC without MULTI"),
            (0, "EVAL \"return redis.call('GET', 'x')\" 0", "in5"),
            (1, "EVAL \"return redis.call('GET', 'x')\" 0", "in0"),
        ],
    ),
    (
        "a script's SELECT is its own, for every client",
        &[
            (0, "SELECT 1", "OK"),
            (1, "EVAL \"redis.call('SELECT', 1) return redis.call('SET', 'y', 'by script')\" 0", "OK"),
            (1, "GET y", "nil"),
            (0, "GET y", "by script"),
            (0, "EVAL \"redis.call('SELECT', 0) return redis.call('SET', 'y', 'back')\" 0", "OK"),
            (0, "GET y", "by script"),
            (1, "GET y", "back"),
        ],
    ),
    (
        "a touch seen before UNWATCH is forgotten, one after WATCH again is not",
        &[
            (0, "WATCH k", "OK"),
            (1, "SET k 1", "OK"),
            (0, "UNWATCH", "OK"),
            (0, "WATCH k", "OK"),
            (0, "MULTI", "OK"),
            (0, "PING", "QUEUED"),
            (0, "EXEC", "[PONG]"),
            (0, "WATCH k", "OK"),
            (1, "INCR k", "2"),
            (0, "WATCH k", "OK"),
            (0, "MULTI", "OK"),
            (0, "PING", "QUEUED"),
            (0, "EXEC", "nil"),
        ],
    ),
];

#[test]
fn clients_see_each_others_writes_as_redis_does() {
    let server = RedisServer::start_or_skip("clients_see_each_others_writes_as_redis_does");
    for (title, steps) in SCENARIOS {
        check(title, steps, server.as_ref());
    }
}

/// A closed connection's WATCHes and transaction go; its id is reused by the next connection.
#[test]
fn disconnecting_drops_the_transaction_and_the_watches() {
    let mut emu = Emulator::new();
    let a = emu.connect();
    assert_eq!(emu.execute_as(a, &[b"WATCH", b"k"]), Reply::ok());
    assert_eq!(emu.execute_as(a, &[b"MULTI"]), Reply::ok());
    assert_eq!(emu.core().watches.keys.len(), 1);
    emu.disconnect(a);
    assert!(emu.core().watches.is_empty());
    assert!(emu.execute_as(a, &[b"PING"]).is_error(), "a closed client");
    let b = emu.connect();
    assert_eq!(a, b, "the id is reused");
    assert_eq!(emu.execute_as(b, &[b"EXEC"]), Reply::err("ERR EXEC without MULTI"));
    // Client 0 is reset, not closed.
    assert_eq!(emu.execute(&[b"SELECT", b"3"]), Reply::ok());
    assert_eq!(emu.execute(&[b"MULTI"]), Reply::ok());
    emu.disconnect(ClientId::DEFAULT);
    assert_eq!(emu.execute(&[b"SET", b"z", b"1"]), Reply::ok());
    assert_eq!(emu.execute(&[b"DBSIZE"]), Reply::Int(1));
    assert_eq!(emu.execute(&[b"SELECT", b"3"]), Reply::ok());
    assert_eq!(emu.execute(&[b"DBSIZE"]), Reply::Int(0), "client 0 was back on database 0");
}

/// Cluster mode: one database, and a transaction keeps to one slot (texts from Redis 7.0.15).
#[test]
fn cluster_mode_refuses_other_databases_and_cross_slot_transactions() {
    let mut emu = Emulator::new();
    emu.set_cluster(true);
    let run = |emu: &mut Emulator, line: &str| {
        let a = args(line);
        let refs: Vec<&[u8]> = a.iter().map(Vec::as_slice).collect();
        show(&emu.execute(&refs))
    };
    assert_eq!(run(&mut emu, "SELECT 0"), "OK");
    assert_eq!(run(&mut emu, "SELECT 1"), "(error) ERR SELECT is not allowed in cluster mode");
    assert_eq!(run(&mut emu, "SELECT 16"), "(error) ERR SELECT is not allowed in cluster mode");
    assert_eq!(run(&mut emu, "SWAPDB 0 1"), "(error) ERR SWAPDB is not allowed in cluster mode");
    assert_eq!(run(&mut emu, "MOVE k 1"), "(error) ERR MOVE is not allowed in cluster mode");
    assert_eq!(
        run(&mut emu, "COPY a{t} b{t} DB 1"),
        "(error) ERR Copying to another database is not allowed in cluster mode"
    );
    assert_eq!(run(&mut emu, "WATCH a b"), "(error) CROSSSLOT Keys in request don't hash to the same slot");
    assert_eq!(run(&mut emu, "MULTI"), "OK");
    assert_eq!(run(&mut emu, "MSET a 1 b 2"), "(error) CROSSSLOT Keys in request don't hash to the same slot");
    assert_eq!(run(&mut emu, "EXEC"), "(error) EXECABORT Transaction discarded because of previous errors.");
    assert_eq!(run(&mut emu, "MULTI"), "OK");
    assert_eq!(run(&mut emu, "SET a 1"), "QUEUED");
    assert_eq!(run(&mut emu, "SET b 1"), "QUEUED");
    assert_eq!(run(&mut emu, "EXEC"), "(error) CROSSSLOT Keys in request don't hash to the same slot");
    assert_eq!(run(&mut emu, "EXISTS a"), "0");
    assert_eq!(run(&mut emu, "MULTI"), "OK");
    assert_eq!(run(&mut emu, "SET a{t} 1"), "QUEUED");
    assert_eq!(run(&mut emu, "SET b{t} 1"), "QUEUED");
    assert_eq!(run(&mut emu, "EXEC"), "[OK, OK]");
}
