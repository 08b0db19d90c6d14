//! The test suite's one way to start a `redis-server` (`tests/common`): a server is ready when it
//! answers PING as itself, a port another server holds is passed over, and a server that cannot start
//! says why with its own output. Without `redis-server` these print why and pass, unless `CI` is set.
use crate::common;

use common::{require_binaries, unused_port, RedisServer};

/// The bug this guards against: readiness by TCP connect (or by any PONG) accepts a port where
/// another server answers while ours failed to bind, and the test then talks to someone else's server.
#[test]
fn a_port_held_by_another_server_is_passed_over() {
    let Some(other) = RedisServer::start_or_skip("port held by another server") else { return };
    let free = unused_port();
    let ours = RedisServer::try_start_on(&[other.port(), free]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ours.port(), free);
    assert_ne!(ours.pid(), other.pid());
    // Only the held port: the error says whose it is.
    let err = RedisServer::try_start_on(&[other.port()]).err().expect("no server on a held port");
    // Ours either exits at once (its bind failed) or is seen answering as the other server's pid.
    let held = format!("attempt 1: port {} is held by another redis-server (pid {})", other.port(), other.pid());
    assert!(err.contains(&held) || err.contains("attempt 1: redis-server exited"), "{err}");
    assert!(err.contains("attempt 2: no free port: no port left to try"), "{err}");
    // Both servers still answer, each on its own port.
    for s in [&other, &ours] {
        let mut c = redis::Client::open(s.url()).unwrap().get_connection().unwrap();
        let pid: String = redis::cmd("INFO").arg("server").query(&mut c).unwrap();
        assert!(pid.contains(&format!("process_id:{}\r\n", s.pid())), "{pid}");
    }
}

#[test]
fn a_server_that_cannot_start_shows_its_output() {
    if !require_binaries("server start-up failure", &["redis-server"]) {
        return;
    }
    let err = RedisServer::try_start_with(&["--no-such-directive", "x"]).err().expect("the server refuses the option");
    assert!(err.contains("attempt 1: redis-server exited"), "{err}");
    assert!(err.contains("attempt 5: redis-server exited"), "{err}");
    assert!(err.contains("its output:") && err.contains("no-such-directive"), "{err}");
}
