//! A mixed rate-limit keyspace to audit: what the audit tests, the README's sample report
//! (`benches/audit_sample.sh`) and the million-key bench (`benches/audit.sh`) load into a private
//! server. Fixed-window counters with TTLs (some subjects with the previous window too), token
//! buckets, sliding logs of three sizes, keys without TTL, untagged two-window keys (a CROSSSLOT
//! risk), keys whose TTL is a day on one-second windows, and unrelated keys.
use redis::Cmd;

/// How many keys of each kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mix {
    /// `fw:{userN}:W` (W the current minute), a counter with a 2-minute TTL.
    pub fixed: u64,
    /// Of those subjects, how many also have the previous minute's key.
    pub fixed_previous: u64,
    /// `tb:{userN}`: a hash {tokens, ts} with a 2-minute TTL.
    pub buckets: u64,
    /// `sl:{userN}`: sorted sets of (count, members) with a 1-minute TTL.
    pub logs: Vec<(u64, u64)>,
    /// `rl:userN`: counters without a TTL.
    pub immortal: u64,
    /// `sw:userN:W` and `sw:userN:W-1` (no hash tag): subjects with two keys each, 2-minute TTL.
    pub two_window_subjects: u64,
    /// `day:{userN}:S` (S the current second) with a TTL of a day.
    pub long_ttl: u64,
    /// `session:<uuid>` with a 30-minute TTL.
    pub sessions: u64,
    /// `cache:page:home` and `config`, without TTL, always.
    pub constants: bool,
}

impl Mix {
    /// The tests' mix: 477 keys.
    pub fn small() -> Mix {
        Mix {
            fixed: 200,
            fixed_previous: 50,
            buckets: 100,
            logs: vec![(10, 5), (10, 50), (10, 200)],
            immortal: 40,
            two_window_subjects: 20,
            long_ttl: 10,
            sessions: 5,
            constants: true,
        }
    }

    /// About `keys` keys in the same proportions (sliding logs kept to 3,000 keys).
    pub fn scaled(keys: u64) -> Mix {
        let f = keys as f64 / 1_000_000.0;
        let n = |x: f64| (x * f).round() as u64;
        Mix {
            fixed: n(500_000.0),
            fixed_previous: n(100_000.0),
            buckets: n(200_000.0),
            logs: vec![(n(1000.0), 5), (n(1000.0), 50), (n(1000.0), 200)],
            immortal: n(100_000.0),
            two_window_subjects: n(45_000.0),
            long_ttl: n(5_000.0),
            sessions: n(2_000.0),
            constants: true,
        }
    }

    /// Keys in all.
    pub fn keys(&self) -> u64 {
        self.fixed
            + self.fixed_previous
            + self.buckets
            + self.logs.iter().map(|(n, _)| n).sum::<u64>()
            + self.immortal
            + 2 * self.two_window_subjects
            + self.long_ttl
            + self.sessions
            + if self.constants { 2 } else { 0 }
    }

    /// The commands that write the keys, given the server's time in ms, in batches for pipelines.
    pub fn commands(&self, now_ms: i64) -> Vec<Cmd> {
        let minute = now_ms / 60_000;
        let second = now_ms / 1000;
        let mut out = Vec::new();
        let set_px = |k: String, v: String, px: i64| {
            let mut c = redis::cmd("SET");
            c.arg(k).arg(v).arg("PX").arg(px);
            c
        };
        for i in 0..self.fixed {
            out.push(set_px(format!("fw:{{user{i}}}:{minute}"), (1 + i % 90).to_string(), 120_000));
            if i < self.fixed_previous {
                out.push(set_px(format!("fw:{{user{i}}}:{}", minute - 1), "100".into(), 60_000));
            }
        }
        for i in 0..self.buckets {
            let k = format!("tb:{{user{i}}}");
            let mut c = redis::cmd("HSET");
            c.arg(&k).arg("tokens").arg(format!("{}.5", i % 100)).arg("ts").arg(now_ms - (i as i64 % 1000));
            out.push(c);
            let mut c = redis::cmd("PEXPIRE");
            c.arg(&k).arg(120_000);
            out.push(c);
        }
        let mut j = 0u64;
        for &(count, members) in &self.logs {
            for _ in 0..count {
                let k = format!("sl:{{user{j}}}");
                j += 1;
                let mut c = redis::cmd("ZADD");
                c.arg(&k);
                for m in 0..members {
                    let t = now_ms - 59_000 + m as i64 * (59_000 / members as i64);
                    c.arg(t).arg(format!("{t}:{m}"));
                }
                out.push(c);
                let mut c = redis::cmd("PEXPIRE");
                c.arg(&k).arg(60_000);
                out.push(c);
            }
        }
        for i in 0..self.immortal {
            let mut c = redis::cmd("SET");
            c.arg(format!("rl:user{i}")).arg((1 + i % 50).to_string());
            out.push(c);
        }
        for i in 0..self.two_window_subjects {
            out.push(set_px(format!("sw:user{i}:{minute}"), "3".into(), 120_000));
            out.push(set_px(format!("sw:user{i}:{}", minute - 1), "7".into(), 60_000));
        }
        for i in 0..self.long_ttl {
            out.push(set_px(format!("day:{{user{i}}}:{second}"), "1".into(), 86_400_000));
        }
        for i in 0..self.sessions {
            out.push(set_px(
                format!("session:{:08x}-77aa-4b1c-9d2e-{:012x}", 0x3f2a_9c1e_u64 + i, i * 7919),
                "x".into(),
                1_800_000,
            ));
        }
        if self.constants {
            let mut c = redis::cmd("SET");
            c.arg("cache:page:home").arg("<html>home</html>");
            out.push(c);
            let mut c = redis::cmd("SET");
            c.arg("config").arg("{\"limit\":100}");
            out.push(c);
        }
        out
    }
}

/// Loads `mix` into the server or cluster at `conn` (pipelines of 10,000 commands), at the server
/// time `now_ms`.
pub fn load(conn: &mut dyn redis::ConnectionLike, mix: &Mix, now_ms: i64) -> redis::RedisResult<()> {
    for chunk in mix.commands(now_ms).chunks(10_000) {
        let mut pipe = redis::pipe();
        for c in chunk {
            pipe.add_command(c.clone()).ignore();
        }
        pipe.query::<()>(conn)?;
    }
    Ok(())
}

/// [`load`] one command at a time, for a connection without pipelines (a cluster's).
pub fn load_each(conn: &mut dyn redis::ConnectionLike, mix: &Mix, now_ms: i64) -> redis::RedisResult<()> {
    for c in mix.commands(now_ms) {
        conn.req_command(&c)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(Mix::small().keys(), 200 + 50 + 100 + 30 + 40 + 40 + 10 + 5 + 2);
        let m = Mix::scaled(1_000_000);
        assert!((990_000..1_010_000).contains(&m.keys()), "{}", m.keys());
        // One command per key, two for hashes and sorted sets (the PEXPIRE).
        assert_eq!(Mix::small().commands(1_764_620_000_000).len() as u64, Mix::small().keys() + 100 + 30);
    }
}
