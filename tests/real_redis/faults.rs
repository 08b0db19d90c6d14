//! Faults on a real server during `run --redis`, `compare --redis`, `verify` and `memory --redis`,
//! each on a private redis-server (or cluster) started through `tests/common`, most behind its
//! fault-injecting proxy ([`common::FaultProxy`]), which puts a fault on an exact command and
//! counts what reached the server: a restart (the script cache lost), a reply lost after the call
//! ran, a reply cut in the middle, a connection closed before the call was sent, a server that
//! stops answering, OOM from maxmemory, BUSY from another client's script, LOADING (injected: a
//! real one cannot be had on cue), READONLY from a replica, a cluster failover and a slot migration.
//!
//! Every case ends in a correct continuation (decisions identical to the emulator's) or a message
//! saying how far the run got, whose call is unknown, and what became of the keys. "No double
//! counting" is shown with the server's own counters: EVALSHA calls that ran (`calls` minus
//! `failed_calls` in INFO commandstats, NOSCRIPT being a failed call) equal the decisions reported,
//! plus one for a call whose reply was lost after it ran. Nothing waits on time: tests wait on
//! states the proxy or the server reports, with generous bounds.
use crate::common;

use std::process::Command;
use std::time::Duration;

use common::{arrivals, wait_for, ClusterNode, Fault, FaultProxy, RedisCluster, RedisServer, Rule, TempDir};
use limitlab::sim::{self, Progress, Trace};
use limitlab::Error;
use limitlab_cli::verify::against_redis::{check_script, first_divergence};
use limitlab_emulator::clock::DEFAULT_START;
use limitlab_emulator::cluster::key_slot;
use limitlab_emulator::Reply;
use limitlab_engine::backend::real::{RealOptions, RealRedis};
use limitlab_engine::backend::{Backend, Script};
use limitlab_engine::limiter::{Limiter, Params, Variant};
use limitlab_engine::traffic::Arrival;

const LOADING: &str = "LOADING Redis is loading the dataset in memory";

/// A fixed window of 35 per minute: keys live a minute on the server's clock, so no key expires
/// during a test (a restart or a failover takes wall-clock time) and every decision is the
/// emulator's. With 10 subjects, the first 350 calls are admitted (each writes), later ones are
/// refused.
fn limiter() -> Limiter {
    Limiter::new(Variant::FIXED_WINDOW, Params::new(35, 60_000)).unwrap()
}

fn emulated(l: &Limiter, arr: &[Arrival]) -> Trace {
    sim::run_emulated(l, arr, DEFAULT_START.0, Progress::Off).unwrap().0
}

fn raw(port: u16) -> redis::Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap().get_connection().unwrap()
}

/// A field of `cmdstat_NAME` in INFO commandstats (0 when the command never ran).
fn cmdstat(port: u16, name: &str, field: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(&mut raw(port)).unwrap();
    let tag = format!("cmdstat_{name}:");
    info.lines()
        .find_map(|l| l.strip_prefix(&tag))
        .and_then(|rest| rest.split(',').find_map(|kv| kv.strip_prefix(field)?.strip_prefix('=')?.parse().ok()))
        .unwrap_or(0)
}

/// EVALSHA calls that ran a script on the server at `port`: calls, less those that failed (NOSCRIPT).
fn evalsha_ran(port: u16) -> u64 {
    cmdstat(port, "evalsha", "calls") - cmdstat(port, "evalsha", "failed_calls")
}

fn dbsize(port: u16) -> i64 {
    redis::cmd("DBSIZE").query(&mut raw(port)).unwrap()
}

fn connect(url: &str) -> RealRedis {
    RealRedis::connect(url, RealOptions { timeout: Duration::from_secs(30) }).expect("connects")
}

/// Runs `check_script` on a thread (the test drives the fault meanwhile).
fn spawn_check(
    url: String,
    n: usize,
) -> std::thread::JoinHandle<(limitlab::Result<limitlab_cli::verify::against_redis::ScriptCheck>, u64)> {
    std::thread::spawn(move || {
        let (l, arr) = (limiter(), arrivals(n, 10));
        let emu = emulated(&l, &arr);
        let mut real = connect(&url);
        let r = check_script("fault", &l, &arr, &emu, &mut real, Progress::Off);
        (r, real.refused())
    })
}

#[test]
fn a_restart_behind_a_proxy_loses_the_script_cache_and_the_run_goes_on() {
    let Some(mut server) = RedisServer::start_or_skip("restart") else { return };
    let proxy = FaultProxy::start(server.port());
    // EVALSHA #1 is answered NOSCRIPT; #151 is call 150, held while the server restarts.
    proxy.rule(Rule::new("EVALSHA", 150, 1, Fault::Pause));
    let run = spawn_check(proxy.url(), 400);
    proxy.wait_until("call 150 held in the proxy", |s| s.paused == 1);
    let ran_before = evalsha_ran(server.port());
    assert_eq!(ran_before, 149);
    let keys_before = dbsize(server.port());
    server.restart();
    assert_eq!(dbsize(server.port()), keys_before, "the keys came back from dump.rdb");
    proxy.reconnect(server.port());
    proxy.resume();
    let (check, _) = run.join().unwrap();
    let check = check.unwrap();
    assert!(check.divergence.is_none(), "{:?}", check.divergence);
    assert_eq!(check.attempts, 1);
    // The restarted server did not know the script: one NOSCRIPT, one load, and on.
    assert_eq!(cmdstat(server.port(), "script|load", "calls"), 1);
    assert_eq!(cmdstat(server.port(), "evalsha", "failed_calls"), 1, "one NOSCRIPT after the restart");
    assert_eq!(ran_before + evalsha_ran(server.port()), 400, "every call ran once");
    assert_eq!(dbsize(server.port()), 0, "the run's keys removed");
}

#[test]
fn a_lost_reply_is_unknown_never_sent_again_and_the_run_stops_saying_how_far() {
    let Some(server) = RedisServer::start_or_skip("lost reply") else { return };
    // (fault, whether call 100 ran on the server)
    for (fault, ran) in [(Fault::CloseAfterSend, 1), (Fault::CutReply(4), 1), (Fault::CloseBeforeSend, 0)] {
        let mut c = raw(server.port());
        redis::cmd("CONFIG").arg("RESETSTAT").query::<()>(&mut c).unwrap();
        redis::cmd("SCRIPT").arg("FLUSH").query::<()>(&mut c).unwrap();
        let proxy = FaultProxy::start(server.port());
        proxy.rule(Rule::new("EVALSHA", 100, 1, fault.clone()));
        let (res, _) = spawn_check(proxy.url(), 300).join().unwrap();
        let err = res.unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::Connection(_)), "{fault:?}: {msg}");
        assert!(
            msg.contains("stopped after 99 of 300 calls (call #100 was subject `u9` at now_ms ")
                && msg.contains("that call was in flight, so its outcome on the server is unknown"),
            "{fault:?}: {msg}"
        );
        assert!(msg.contains("it was not sent again"), "{fault:?}: {msg}");
        assert!(msg.contains("keys of the run were removed"), "{fault:?}: {msg}");
        // Never re-sent: 1 NOSCRIPT + 100 calls reached the proxy, and the server ran 99 + the
        // lost one when it got there.
        assert_eq!(proxy.lock().received("EVALSHA"), 101, "{fault:?}");
        assert_eq!(evalsha_ran(server.port()), 99 + ran, "{fault:?}");
        assert_eq!(dbsize(server.port()), 0, "{fault:?}");
    }
}

#[test]
fn loading_is_waited_out_and_the_call_sent_once_it_can_run() {
    let Some(server) = RedisServer::start_or_skip("loading") else { return };
    let proxy = FaultProxy::start(server.port());
    proxy.rule(Rule::new("EVALSHA", 50, 3, Fault::Error(LOADING.into())));
    let (res, refused) = spawn_check(proxy.url(), 300).join().unwrap();
    let check = res.unwrap();
    assert!(check.divergence.is_none(), "{:?}", check.divergence);
    assert_eq!(refused, 3);
    assert_eq!(proxy.lock().received("EVALSHA"), 1 + 300 + 3);
    assert_eq!(evalsha_ran(server.port()), 300, "each call ran once");
    assert_eq!(dbsize(server.port()), 0);
}

#[test]
fn busy_from_another_clients_script_is_waited_out() {
    let Some(server) = RedisServer::start_or_skip("busy") else { return };
    let mut c = raw(server.port());
    redis::cmd("CONFIG").arg("SET").arg("busy-reply-threshold").arg("20").query::<()>(&mut c).unwrap();
    let proxy = FaultProxy::start(server.port());
    proxy.rule(Rule::new("EVALSHA", 100, 1, Fault::Pause));
    let run = spawn_check(proxy.url(), 300);
    proxy.wait_until("call 100 held", |s| s.paused == 1);
    let port = server.port();
    let long = std::thread::spawn(move || {
        redis::cmd("EVAL")
            .arg("while true do end")
            .arg(0)
            .query::<redis::Value>(&mut raw(port))
            .unwrap_err()
            .to_string()
    });
    wait_for(
        "the server to answer BUSY",
        || matches!(redis::cmd("PING").query::<String>(&mut raw(port)), Err(e) if e.code() == Some("BUSY")),
    );
    proxy.resume();
    proxy.wait_until("a BUSY reply to the run", |s| s.server_errors.iter().any(|e| e.starts_with("BUSY ")));
    redis::cmd("SCRIPT").arg("KILL").query::<()>(&mut raw(port)).unwrap();
    assert!(long.join().unwrap().contains("Script killed by user"));
    let (res, refused) = run.join().unwrap();
    let check = res.unwrap();
    assert!(check.divergence.is_none(), "{:?}", check.divergence);
    assert!(refused >= 1);
    assert!(cmdstat(port, "evalsha", "rejected_calls") >= 1);
    assert_eq!(evalsha_ran(port), 300, "each call ran once");
    assert_eq!(dbsize(port), 0);
}

#[test]
fn oom_from_maxmemory_stops_the_run_and_its_keys_are_removed() {
    let Some(server) = RedisServer::start_or_skip("oom") else { return };
    let port = server.port();
    let mut c = raw(port);
    redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg("4mb").query::<()>(&mut c).unwrap();
    let proxy = FaultProxy::start(port);
    proxy.rule(Rule::new("EVALSHA", 100, 1, Fault::Pause));
    let run = spawn_check(proxy.url(), 300);
    proxy.wait_until("call 100 held", |s| s.paused == 1);
    // Someone else fills the server up to maxmemory.
    let fill = "for i = 1, 1000 do redis.call('SET', 'fill:' .. ARGV[1] .. ':' .. i, string.rep('x', 200)) end";
    let mut round = 0;
    wait_for("the server to refuse writes with OOM", || {
        round += 1;
        matches!(redis::cmd("EVAL").arg(fill).arg(0).arg(round).query::<()>(&mut c), Err(e) if e.code() == Some("OOM"))
    });
    // Well over the limit, so that no buffer freed meanwhile brings the server back under it.
    redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg("3mb").query::<()>(&mut c).unwrap();
    let fill_keys = dbsize(port);
    proxy.resume();
    let (res, _) = run.join().unwrap();
    let err = res.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Redis(_)), "{msg}");
    assert!(msg.contains("stopped after 99 of 300 calls (call #100"), "{msg}");
    assert!(msg.contains("OOM command not allowed when used memory > 'maxmemory'"), "{msg}");
    assert!(msg.contains("keys of the run were removed"), "{msg}");
    let left: Vec<String> = redis::cmd("KEYS").arg("ll:*").query(&mut c).unwrap();
    assert!(left.is_empty(), "{left:?}");
    assert!(dbsize(port) < fill_keys, "only the other client's keys are left");
    assert_eq!(evalsha_ran(port), 99);
}

#[test]
fn a_replica_is_refused_before_anything_is_sent_and_readonly_mid_run_stops_it() {
    let Some(master) = RedisServer::start_or_skip("readonly") else { return };
    let replica = master.start_replica();
    let root = env!("CARGO_MANIFEST_DIR");
    let out = limitlab()
        .args(["run", &format!("{root}/simulations/boundary_burst.toml"), "--redis", &replica.url()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("is a read-only replica of 127.0.0.1:{}", master.port())), "{err}");
    assert_eq!(cmdstat(replica.port(), "evalsha", "calls"), 0, "nothing sent");
    // A master demoted mid-run (REPLICAOF another server): READONLY at the next call.
    let other = RedisServer::start();
    let proxy = FaultProxy::start(master.port());
    proxy.rule(Rule::new("EVALSHA", 100, 1, Fault::Pause));
    let run = spawn_check(proxy.url(), 300);
    proxy.wait_until("call 100 held", |s| s.paused == 1);
    let mut c = raw(master.port());
    redis::cmd("REPLICAOF").arg("127.0.0.1").arg(other.port()).query::<()>(&mut c).unwrap();
    wait_for("the demoted master to sync", || {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut c).unwrap();
        info.contains("master_link_status:up")
    });
    proxy.resume();
    let (res, _) = run.join().unwrap();
    let msg = res.unwrap_err().to_string();
    assert!(msg.contains("stopped after 99 of 300 calls (call #100"), "{msg}");
    assert!(msg.contains("READONLY You can't write against a read only replica"), "{msg}");
    assert!(msg.contains("point --redis at its master"), "{msg}");
}

fn limitlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_limitlab"))
}

/// A scenario file of `n` requests from 10 users on the fixed window, 5 per minute.
fn scenario(dir: &TempDir, n: usize) -> String {
    let path = format!("{}/faults.toml", dir.path());
    std::fs::write(
        &path,
        format!(
            "name = \"faults\"\nlimit = 5\nwindow_ms = 60000\nalgorithms = [\"fixed_window\"]\nseed = 1\n\n[traffic]\n\
             kind = \"uniform\"\nrate = 300.0\nduration_ms = {}\nkey = \"user\"\nkeys = 10\n",
            n * 1000 / 300
        ),
    )
    .unwrap();
    path
}

#[test]
fn a_server_that_stops_answering_ends_the_run_with_how_far_and_what_was_left() {
    let Some(server) = RedisServer::start_or_skip("no answer") else { return };
    let dir = TempDir::new("faults-timeout");
    let file = scenario(&dir, 300);
    // 1. The proxy holds a reply: the call ran, its reply never comes; cleanup still works.
    let proxy = FaultProxy::start(server.port());
    proxy.rule(Rule::new("EVALSHA", 100, 1, Fault::Hold));
    let out = limitlab().args(["run", &file, "--redis", &proxy.url(), "--redis-timeout-ms", "500"]).output().unwrap();
    proxy.release();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("no reply within 500 ms"), "{err}");
    assert!(err.contains("stopped after 99 of "), "{err}");
    assert!(err.contains("that call was in flight, so its outcome on the server is unknown"), "{err}");
    assert!(err.contains("keys of the run were removed"), "{err}");
    assert_eq!(evalsha_ran(server.port()), 100, "99 decided + the one whose reply was held, once");
    assert_eq!(dbsize(server.port()), 0);
    // 2. The server itself stops (SIGSTOP) with call 100 on its way: nothing answers, not even the
    // cleanup, and the message names the prefix left behind.
    let proxy = FaultProxy::start(server.port());
    proxy.rule(Rule::new("EVALSHA", 100, 1, Fault::Pause));
    let child = limitlab()
        .args(["run", &file, "--redis", &proxy.url(), "--redis-timeout-ms", "500"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    proxy.wait_until("call 100 held", |s| s.paused == 1);
    server.signal("STOP");
    proxy.resume();
    let out = child.wait_with_output().unwrap();
    server.signal("CONT");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(3), "{err}");
    // The script is in the server's cache since the first run: no NOSCRIPT, call 101 is held.
    assert!(err.contains("no reply within 500 ms") && err.contains("stopped after 100 of "), "{err}");
    let prefix =
        err.split("Its keys under `").nth(1).and_then(|r| r.split('`').next()).unwrap_or_else(|| panic!("{err}"));
    assert!(prefix.starts_with("ll:") && prefix.len() == 16, "{prefix}");
    let mut c = raw(server.port());
    let left: Vec<String> = redis::cmd("KEYS").arg(format!("{prefix}*")).query(&mut c).unwrap();
    assert!(!left.is_empty(), "the message says keys were left under {prefix}");
    assert_eq!(left.len() as i64, dbsize(server.port()), "and only those");
}

#[test]
fn verify_and_memory_under_faults() {
    let Some(server) = RedisServer::start_or_skip("verify faults") else { return };
    // LOADING on some commands: waited out, every reply identical.
    let proxy = FaultProxy::start(server.port());
    proxy.rule(Rule::new("*", 300, 5, Fault::Error(LOADING.into())));
    let out = limitlab().args(["verify", "--cases", "100", "--redis", &proxy.url()]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("every reply identical"), "{text}");
    assert_eq!(proxy.lock().faults(), 5);
    assert_eq!(dbsize(server.port()), 0);
    // A reply lost: verify stops, says in which case, removes its keys.
    let proxy = FaultProxy::start(server.port());
    proxy.rule(Rule::new("*", 500, 1, Fault::CloseAfterSend));
    let out = limitlab().args(["verify", "--cases", "200", "--redis", &proxy.url()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("verify stopped in case ")
            && err.contains(" of 200 (")
            && err.contains("cases done, every reply identical until then"),
        "{err}"
    );
    assert!(err.contains("it was not sent again") && err.contains("keys of the run were removed"), "{err}");
    assert_eq!(dbsize(server.port()), 0);
    // memory --redis: a reply lost while filling a user's keys.
    let proxy = FaultProxy::start(server.port());
    proxy.rule(Rule::new("EVALSHA", 10, 1, Fault::CloseAfterSend));
    let out = limitlab().args(["memory", "--limit", "100/min", "--redis", &proxy.url()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("script `fixed_window`: stopped while filling one user's keys"), "{err}");
    assert!(err.contains("keys of the run were removed"), "{err}");
    assert_eq!(dbsize(server.port()), 0);
}

/// A backend that runs `hook` once, before call number `at` (1-based) reaches the server: the
/// fault happens at an exact point of the run.
struct Hooked<'a> {
    inner: &'a mut RealRedis,
    calls: usize,
    hooks: Vec<(usize, Box<dyn FnMut() + 'a>)>,
}

impl Hooked<'_> {
    fn before_call(&mut self) {
        self.calls += 1;
        let n = self.calls;
        for (at, h) in self.hooks.iter_mut() {
            if *at == n {
                h();
            }
        }
    }
}

impl Backend for Hooked<'_> {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn key_prefix(&self) -> &str {
        self.inner.key_prefix()
    }
    fn eval(&mut self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> limitlab::Result<Reply> {
        self.before_call();
        self.inner.eval(script, keys, args)
    }
    fn command(&mut self, args: &[&[u8]]) -> limitlab::Result<Reply> {
        self.inner.command(args)
    }
    fn set_time_ms(&mut self, t: i64) {
        self.inner.set_time_ms(t)
    }
    fn cleanup(&mut self) -> limitlab::Result<u64> {
        self.inner.cleanup()
    }
}

fn cluster_cmd(port: u16, args: &[&str]) -> redis::Value {
    let mut c = raw(port);
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(&mut c).unwrap_or_else(|e| panic!("{args:?} on {port}: {e}"))
}

/// The run on the cluster with `hooks`, compared call for call with the emulator; the server's
/// EVALSHA that ran, summed over every node, must be the number of calls.
fn cluster_run(c: &RedisCluster, n: usize, hooks: Vec<(usize, Box<dyn FnMut() + '_>)>) -> RealRedis {
    let (l, arr) = (limiter(), arrivals(n, 10));
    let emu = emulated(&l, &arr);
    let mut real = connect(&c.url());
    let trace = {
        let mut b = Hooked { inner: &mut real, calls: 0, hooks };
        sim::run(&l, &mut b, &arr, Progress::Off).unwrap()
    };
    assert_eq!(first_divergence(&emu, &trace), None);
    let ran: u64 = c.ports().iter().map(|&p| evalsha_ran(p)).sum();
    assert_eq!(ran, n as u64, "every call ran once, summed over the nodes");
    real.cleanup().unwrap();
    for &p in c.ports() {
        assert_eq!(dbsize(p), 0, "node {p}");
    }
    real
}

/// The master serving `slot`, and its replica.
fn owner(c: &RedisCluster, slot: u16) -> (ClusterNode, Option<ClusterNode>) {
    let nodes = c.topology(c.ports()[0]);
    let m = nodes
        .iter()
        .find(|n| n.master && n.serves(slot))
        .unwrap_or_else(|| panic!("no owner of {slot}: {nodes:?}"))
        .clone();
    let r = nodes.iter().find(|n| n.master_id.as_deref() == Some(m.id.as_str())).cloned();
    (m, r)
}

#[test]
fn a_cluster_failover_during_a_run_is_followed() {
    let Some(c) = RedisCluster::start_with_replicas_or_skip("failover", 1) else { return };
    // The subject u0's key: the spec puts the subject in a hash tag.
    let slot = key_slot(b"{u0}");
    let (old, replica) = owner(&c, slot);
    let replica = replica.expect("a replica");
    let failover = || {
        cluster_cmd(replica.port, &["CLUSTER", "FAILOVER"]);
        wait_for("the replica to take over the slot everywhere", || {
            c.ports().iter().all(|&p| {
                let t = c.topology(p);
                t.iter().any(|n| n.id == replica.id && n.master && n.serves(slot))
                    && t.iter().any(|n| n.id == old.id && n.master_id.as_deref() == Some(replica.id.as_str()))
            })
        });
    };
    let real = cluster_run(&c, 400, vec![(150, Box::new(failover))]);
    assert!(real.refused() >= 1, "MOVED followed after the failover");
}

#[test]
fn a_slot_migration_during_a_run_is_followed_through_ask_and_moved() {
    let Some(c) = RedisCluster::start_or_skip("migration") else { return };
    let slot = key_slot(b"{u0}");
    let (src, _) = owner(&c, slot);
    let dst = c.topology(c.ports()[0]).into_iter().find(|n| n.master && n.id != src.id).unwrap();
    let s = slot.to_string();
    let begin = || {
        cluster_cmd(dst.port, &["CLUSTER", "SETSLOT", &s, "IMPORTING", &src.id]);
        cluster_cmd(src.port, &["CLUSTER", "SETSLOT", &s, "MIGRATING", &dst.id]);
    };
    // Every key of the slot moves: calls for u0 now get ASK from the source.
    let migrate = || {
        let keys: Vec<String> =
            redis::cmd("CLUSTER").arg("GETKEYSINSLOT").arg(slot).arg(1000).query(&mut raw(src.port)).unwrap();
        assert!(!keys.is_empty());
        let mut m = redis::cmd("MIGRATE");
        m.arg("127.0.0.1").arg(dst.port).arg("").arg(0).arg(10_000).arg("KEYS").arg(&keys);
        m.query::<()>(&mut raw(src.port)).unwrap();
    };
    // The slot is the destination's: MOVED from the source.
    let finish = || {
        for &p in c.ports() {
            cluster_cmd(p, &["CLUSTER", "SETSLOT", &s, "NODE", &dst.id]);
        }
    };
    let real = cluster_run(&c, 400, vec![(100, Box::new(begin)), (150, Box::new(migrate)), (250, Box::new(finish))]);
    assert!(real.refused() >= 2, "ASK and MOVED followed: {}", real.refused());
    assert!(cmdstat(dst.port, "asking", "calls") >= 1, "ASKING was sent to the destination");
}

#[test]
fn a_connection_closed_in_the_middle_of_a_pipelined_batch() {
    let Some(server) = RedisServer::start_or_skip("pipelined batch") else { return };
    let proxy = FaultProxy::start(server.port());
    // bench --quick on one script: 200 + 1,000 calls one by one, then 200 + 5,000 pipelined 50 per
    // round trip. EVALSHA #1526 is call 326 of the pipelined run, the 26th of its batch: the proxy
    // lets it run and closes the connection.
    proxy.rule(Rule::new("EVALSHA", 1525, 1, Fault::CloseAfterSend));
    let out = limitlab()
        .args([
            "bench",
            "--quick",
            "--only",
            "fixed_window",
            "--pipeline",
            "50",
            "--log-sizes",
            "10",
            "--redis",
            &proxy.url(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("fixed_window, 50 per round trip: "), "{err}");
    assert!(
        err.contains(
            "a pipelined batch of 50 EVALSHA (calls 301 to 350 of this run) failed after 300 calls had been decided"
        ),
        "{err}"
    );
    assert!(err.contains("none was sent again") && err.contains("keys of the run were removed"), "{err}");
    // 1,200 + 300 decided, and of the batch the 26 calls the server got before the connection closed.
    assert_eq!(proxy.lock().received("EVALSHA"), 1526, "nothing sent again");
    assert_eq!(evalsha_ran(server.port()), 1526);
    assert_eq!(dbsize(server.port()), 0);
}

#[test]
fn compare_with_a_lost_reply_stops_and_removes_its_keys() {
    let Some(server) = RedisServer::start_or_skip("compare lost reply") else { return };
    let proxy = FaultProxy::start(server.port());
    proxy.rule(Rule::new("EVALSHA", 1000, 1, Fault::CloseAfterSend));
    let out = limitlab().args(["compare", "--redis", &proxy.url()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("that call was in flight, so its outcome on the server is unknown"), "{err}");
    assert!(err.contains("it was not sent again") && err.contains("keys of the run were removed"), "{err}");
    let done: u64 = err
        .split("stopped after ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(done > 0, "{err}");
    assert_eq!(proxy.lock().received("EVALSHA"), 1001);
    assert_eq!(dbsize(server.port()), 0);
}

#[test]
fn a_restart_under_the_runs_own_connection_stops_it_and_its_keys_are_removed() {
    let Some(mut server) = RedisServer::start_or_skip("restart, own connection") else { return };
    let port = server.port();
    let (l, arr) = (limiter(), arrivals(300, 10));
    let mut real = connect(&server.url());
    let mut ran_before = 0;
    let result = {
        let restart = || {
            ran_before = evalsha_ran(port);
            server.restart();
        };
        let mut b = Hooked { inner: &mut real, calls: 0, hooks: vec![(100, Box::new(restart))] };
        sim::run_partial(&l, &mut b, &arr, Progress::Off)
    };
    let (done, err) = result.unwrap_err();
    let msg = err.to_string();
    // The connection died with the old process: call 100 went out on it and its reply could not
    // come; the run cannot know whether it ran, so it stops there.
    assert_eq!(done, 99, "{msg}");
    assert!(matches!(err, Error::Connection(_)), "{msg}");
    assert!(msg.contains("EVALSHA failed after") && msg.contains("it was not sent again"), "{msg}");
    assert_eq!(ran_before, 99);
    assert_eq!(evalsha_ran(port), 0, "it did not run on the restarted server, and nothing was resent");
    // The server is back with the keys of the first 99 calls: the cleanup finds and removes them.
    assert!(dbsize(port) > 0);
    assert_eq!(real.cleanup().unwrap() as i64, 10);
    assert_eq!(dbsize(port), 0);
}

#[test]
fn cli_redis_prints_busy_and_loading_at_once_as_redis_cli_does() {
    let Some(server) = RedisServer::start_or_skip_needing("cli loading", &["redis-cli"]) else { return };
    let input = b"set a 1\nget a\nget a\nincr a\n";
    let run = |cmd: &mut Command| {
        use std::io::Write as _;
        let mut child = cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        String::from_utf8_lossy(&child.wait_with_output().unwrap().stdout).to_string()
    };
    let (ours, theirs) = (FaultProxy::start(server.port()), FaultProxy::start(server.port()));
    for p in [&ours, &theirs] {
        p.rule(Rule::new("GET", 1, 1, Fault::Error(LOADING.into())));
    }
    let a = run(limitlab().args(["cli", "--redis", &ours.url()]));
    let b = run(Command::new("redis-cli").args(["-p", &theirs.port().to_string()]));
    assert_eq!(a, b);
    assert!(a.contains("LOADING Redis is loading the dataset in memory"), "{a}");
    assert_eq!(ours.lock().received("GET"), 2, "not sent again");
}
