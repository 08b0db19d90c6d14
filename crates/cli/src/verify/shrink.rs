//! Shrinking a mismatching case: remove commands while the case still mismatches, keeping only
//! candidates [`super::model::Model`] accepts (so a smaller case never owes its mismatch to timing).
//!
//! Delta debugging over the command list: try removing chunks of half the case, then quarters, down
//! to single commands; the last command (the one that mismatched) is never removed, and a candidate
//! that mismatches earlier is cut after its first mismatch. Each try runs the candidate on a fresh
//! emulator and a clean keyspace on the server.
use super::model::Model;
use super::Command;
use limitlab_emulator::Result;

/// How a candidate did: `Some(i)` when command `i` was the first to mismatch.
pub type Outcome = Option<usize>;

/// Shrinks `cmds` (whose last command mismatches) within `budget` runs of `test`. Returns the
/// smallest case found and the number of runs used.
pub fn shrink(
    cmds: Vec<Command>,
    private: bool,
    budget: usize,
    mut test: impl FnMut(&[Command]) -> Result<Outcome>,
) -> Result<(Vec<Command>, usize)> {
    let mut cur = cmds;
    let mut runs = 0;
    let mut chunk = (cur.len() / 2).max(1);
    loop {
        let mut progress = false;
        let mut i = 0;
        while i + 1 < cur.len() && runs < budget {
            let end = (i + chunk).min(cur.len() - 1);
            let candidate: Vec<Command> = cur[..i].iter().chain(&cur[end..]).cloned().collect();
            if Model::check(private, candidate.iter().map(|c| c.fx.as_slice())) {
                runs += 1;
                if let Some(m) = test(&candidate)? {
                    cur = candidate;
                    cur.truncate(m + 1);
                    progress = true;
                    continue;
                }
            }
            i += chunk;
        }
        if runs >= budget || cur.len() <= 1 {
            break;
        }
        if !progress {
            if chunk == 1 {
                break;
            }
            chunk = (chunk / 2).max(1);
        }
    }
    Ok((cur, runs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::model::{Fx, TtlKind, TtlRead};
    use crate::verify::Arg;

    fn cmd(name: &str, fx: Vec<Fx>) -> Command {
        Command { args: vec![Arg::Lit(name.as_bytes().to_vec())], fx }
    }

    #[test]
    fn keeps_only_what_the_mismatch_needs() {
        // The "bug": the last command mismatches whenever b and d ran before it.
        let cmds: Vec<Command> = ["a", "b", "c", "d", "e", "f", "bug"].iter().map(|n| cmd(n, vec![])).collect();
        let (out, runs) = shrink(cmds, false, 100, |c| {
            let has = |n: &str| c.iter().any(|x| x.args[0] == Arg::Lit(n.as_bytes().to_vec()));
            Ok((has("b") && has("d")).then(|| c.len() - 1))
        })
        .unwrap();
        let names: Vec<&Arg> = out.iter().map(|c| &c.args[0]).collect();
        assert_eq!(names, [&Arg::Lit(b"b".to_vec()), &Arg::Lit(b"d".to_vec()), &Arg::Lit(b"bug".to_vec())]);
        assert!(runs <= 100);
    }

    #[test]
    fn never_produces_a_timing_dependent_case() {
        // Removing the PERSIST-like first command would leave a PTTL on a key with a TTL.
        let cmds = vec![
            cmd("expire", vec![Fx::Ttl("k".into(), TtlKind::Ms)]),
            cmd("pttl", vec![Fx::ReadTtl("k".into(), TtlRead::Ms)]),
        ];
        // The model already rejects the full case, and no removal makes it acceptable except
        // dropping the EXPIRE, which the test says no longer mismatches.
        let (out, _) = shrink(cmds.clone(), false, 10, |c| Ok((c.len() == 2).then_some(1))).unwrap();
        assert_eq!(out, cmds);
    }
}
