//! ZRANDMEMBER, apart from the other sorted-set commands (as the STORE forms are) since it shares
//! its draws and argument rules with SRANDMEMBER and HRANDFIELD (see `sets.rs`).
use crate::command_spec::flags::*;
use crate::command_spec::{CommandSpec, KeySpec};
use crate::core::Core;
use crate::keyspace::{Value, WRONGTYPE};
use crate::reply::Reply;
use crate::tri;

use super::sets::{rand_positions, rand_with_args, with_rng};

pub static COMMANDS: &[CommandSpec] =
    &[CommandSpec { name: "zrandmember", arity: -2, flags: READONLY, keys: KeySpec::ONE, handler: zrandmember }];

/// ZRANDMEMBER key [count [WITHSCORES]] (`zrandmemberCommand`): the arguments are checked before the
/// key; a negative count may repeat members; a positive count covering the whole set answers it in
/// descending rank order (as Redis does); WITHSCORES nests `[member, score]` pairs under RESP3.
fn zrandmember(core: &mut Core, a: &[&[u8]]) -> Reply {
    let args = tri!(rand_with_args(a, "withscores"));
    let resp3 = core.resp3;
    with_rng(core, |core, rng| {
        let now = core.now_ms();
        let z = match core.db.get(a[1], now).map(|e| &e.value) {
            None if args.is_none() => return Reply::Nil,
            None => return Reply::Array(Vec::new()),
            Some(Value::ZSet(z)) => z,
            Some(_) => return Reply::err(WRONGTYPE),
        };
        let len = z.len();
        let Some((count, with)) = args else {
            return z.by_rank(rng.below(len)).map_or(Reply::Nil, |r| Reply::Bulk(z.member_at(r).to_vec()));
        };
        if count == 0 {
            return Reply::Array(Vec::new());
        }
        let picks: Vec<usize> = if count > 0 && count as u64 >= len as u64 {
            (0..len).rev().collect()
        } else {
            rand_positions(rng, len, count)
        };
        let mut out = Vec::with_capacity(picks.len() * (1 + with as usize));
        for i in picks {
            let Some(r) = z.by_rank(i) else { continue };
            let m = Reply::Bulk(z.member_at(r).to_vec());
            let score = Reply::Double(z.score_at(r));
            match (with, resp3) {
                (false, _) => out.push(m),
                (true, false) => out.extend([m, score]),
                (true, true) => out.push(Reply::Array(vec![m, score])),
            }
        }
        Reply::Array(out)
    })
}
