//! `limitlab serve --cluster 3`: three ports answering as a three-master Redis Cluster. The redis
//! crate's cluster client finds the slots, follows MOVED and runs scripts on the right node; `redis-cli
//! -c` follows redirects; each node keeps its own keys.
use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::LimitlabServe;
use redis::cluster::ClusterClient;

fn exchange(port: u16, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(bytes).unwrap();
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn redis_crate_cluster_client_against_three_nodes() {
    let serve = LimitlabServe::start(&["--cluster", "3", "--at", "1700000000000"]);
    let ports = serve.ports().to_vec();
    assert_eq!(ports.len(), 3);
    let urls: Vec<String> = ports.iter().map(|p| format!("redis://127.0.0.1:{p}/")).collect();
    let client = ClusterClient::new(urls.clone()).unwrap();
    let mut c = client.get_connection().unwrap();
    // Keys spread over every node.
    for i in 0..60 {
        let _: () = redis::cmd("SET").arg(format!("key:{i}")).arg(i).query(&mut c).unwrap();
    }
    for i in 0..60 {
        let v: i64 = redis::cmd("GET").arg(format!("key:{i}")).query(&mut c).unwrap();
        assert_eq!(v, i);
    }
    // Each node holds exactly the keys of its slots.
    let mut total = 0;
    for (n, p) in ports.iter().enumerate() {
        let mut node = redis::Client::open(format!("redis://127.0.0.1:{p}/")).unwrap().get_connection().unwrap();
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut node).unwrap();
        let slots: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER").arg("SLOTS").query(&mut node).unwrap();
        assert_eq!(slots.len(), 3);
        let (lo, hi) = [(0, 5460), (5461, 10922), (10923, 16383)][n];
        for k in &keys {
            let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(k).query(&mut node).unwrap();
            assert!((lo..=hi).contains(&slot), "node {n} holds {k} of slot {slot}");
        }
        assert!(!keys.is_empty(), "node {n} got some of the 60 keys");
        total += keys.len();
    }
    assert_eq!(total, 60);
    // A limiter script on hash-tagged keys, through EVALSHA (loaded on the node on NOSCRIPT).
    let script = redis::Script::new(
        "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end \
         redis.call('SET', KEYS[2], n) return n",
    );
    for user in ["alice", "bob", "carol", "dave"] {
        let k1 = format!("rl:{{{user}}}:count");
        let k2 = format!("rl:{{{user}}}:last");
        for want in 1..=3 {
            let n: i64 = script.key(&k1).key(&k2).arg(1000).invoke(&mut c).unwrap();
            assert_eq!(n, want);
        }
    }
    // CLOCK.ADVANCE on one node moves the one clock every node reads.
    let mut n0 = redis::Client::open(urls[0].as_str()).unwrap().get_connection().unwrap();
    let _: () = redis::cmd("CLOCK.ADVANCE").arg(1001).query(&mut n0).unwrap();
    let n: i64 = script.key("rl:{alice}:count").key("rl:{alice}:last").arg(1000).invoke(&mut c).unwrap();
    assert_eq!(n, 1, "the window's counter expired on its node");
    // Keys of two nodes in one MGET: the crate splits it by slot and asks each node.
    let v: Vec<Option<i64>> = redis::cmd("MGET").arg("rl:{alice}:count").arg("rl:{bob}:count").query(&mut c).unwrap();
    assert_eq!(v, vec![Some(1), None], "bob's counter expired too");
}

#[test]
fn redirects_and_cluster_commands() {
    let serve = LimitlabServe::start(&["--cluster", "3"]);
    let p = serve.ports().to_vec();
    // "foo" is in slot 12182, on the third node.
    assert_eq!(exchange(p[0], b"GET foo\r\n"), format!("-MOVED 12182 127.0.0.1:{}\r\n", p[2]));
    assert_eq!(exchange(p[2], b"SET foo 1\r\nGET foo\r\n"), "+OK\r\n$1\r\n1\r\n");
    assert_eq!(exchange(p[0], b"EVAL \"return 1\" 1 foo\r\n"), format!("-MOVED 12182 127.0.0.1:{}\r\n", p[2]));
    assert_eq!(
        exchange(p[0], b"EVAL \"return 1\" 2 a b\r\n"),
        "-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    );
    assert_eq!(exchange(p[0], b"MGET a b\r\n"), "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
    assert_eq!(
        exchange(p[0], b"MULTI\r\nSET foo 1\r\nSET a 1\r\nEXEC\r\n"),
        format!("+OK\r\n-MOVED 12182 127.0.0.1:{0}\r\n-MOVED 15495 127.0.0.1:{0}\r\n-EXECABORT Transaction discarded because of previous errors.\r\n", p[2])
    );
    assert_eq!(exchange(p[0], b"SELECT 1\r\n"), "-ERR SELECT is not allowed in cluster mode\r\n");
    assert_eq!(
        exchange(p[0], b"ASKING\r\nREADONLY\r\nREADWRITE\r\nCLUSTER KEYSLOT foo\r\n"),
        "+OK\r\n+OK\r\n+OK\r\n:12182\r\n"
    );
    let slots = exchange(p[1], b"CLUSTER SLOTS\r\n");
    let want_first = format!("*3\r\n*3\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:{}\r\n$40\r\n", p[0]);
    assert!(slots.starts_with(&want_first), "{slots}");
    let nodes = exchange(p[1], b"CLUSTER NODES\r\n");
    assert_eq!(nodes.matches("myself,master").count(), 1);
    assert!(
        nodes.contains(&format!(
            "127.0.0.1:{}@{} myself,master - 0 0 2 connected 5461-10922\n",
            p[1],
            p[1] as u32 + 10000
        )),
        "{nodes}"
    );
    let myid = exchange(p[1], b"CLUSTER MYID\r\n");
    assert!(nodes.contains(&myid[5..45]), "{myid} in {nodes}");
    let info = exchange(p[0], b"CLUSTER INFO\r\n");
    assert!(info.contains("cluster_state:ok\r\n") && info.contains("cluster_known_nodes:3\r\n"), "{info}");
    let shards = exchange(p[0], b"HELLO 3\r\nCLUSTER SHARDS\r\n");
    assert!(
        shards.contains("%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:5460\r\n$5\r\nnodes\r\n*1\r\n%7\r\n$2\r\nid\r\n"),
        "{shards}"
    );
    assert_eq!(exchange(p[0], b"CLUSTER FOO\r\n"), "-ERR unknown subcommand 'FOO'. Try CLUSTER HELP.\r\n");
    assert_eq!(exchange(p[0], b"CLUSTER COUNTKEYSINSLOT 12182\r\n"), ":0\r\n");
    assert_eq!(
        exchange(p[2], b"CLUSTER COUNTKEYSINSLOT 12182\r\nCLUSTER GETKEYSINSLOT 12182 5\r\n"),
        ":1\r\n*1\r\n$3\r\nfoo\r\n"
    );
    // redis-cli -c follows the redirect.
    if common::require_binaries("redirects_and_cluster_commands", &["redis-cli"]) {
        let out = std::process::Command::new("redis-cli")
            .args(["-c", "-p", &p[0].to_string(), "GET", "foo"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "1\n");
    }
}
