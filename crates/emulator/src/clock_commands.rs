//! The virtual clock's own commands, `CLOCK.ADVANCE ms`, `CLOCK.SET unix_ms` and `CLOCK.GET`,
//! which `limitlab cli` and `limitlab serve` answer before anything reaches the emulator's table.
use crate::clock::{Clock, Millis};
use crate::emulator::Emulator;
use crate::reply::Reply;

/// The refusal of a move before the epoch (CLOCK.SET -1, CLOCK.ADVANCE past 0).
pub const NEGATIVE: &str = "ERR invalid unix time in milliseconds, must not be negative";

/// The CLOCK.* commands, or `None` when `args` is not one of them (also `limitlab serve`'s).
pub fn clock_command(args: &[Vec<u8>], emu: &Emulator) -> Option<Reply> {
    let name = args.first()?;
    let which =
        ["clock.advance", "clock.set", "clock.get"].into_iter().find(|n| name.eq_ignore_ascii_case(n.as_bytes()))?;
    let clock = emu.clock();
    let arity_err = || crate::command_spec::arity_error(which);
    Some(match which {
        "clock.get" => {
            if args.len() != 1 {
                return Some(arity_err());
            }
            Reply::Int(clock.now_millis().0)
        }
        _ => {
            if args.len() != 2 {
                return Some(arity_err());
            }
            let Some(ms) = parse_i64(&args[1]) else {
                return Some(Reply::err("ERR value is not an integer or out of range"));
            };
            // Both refuse a time before the epoch, with one text: CLOCK.SET -1 and a CLOCK.ADVANCE
            // that would land before 0 (the clock stays where it was).
            let to = if which == "clock.advance" { clock.now_millis().0.saturating_add(ms) } else { ms };
            if to < 0 {
                return Some(Reply::err(NEGATIVE));
            }
            if which == "clock.advance" {
                clock.advance_millis(ms);
            } else {
                clock.set_millis(Millis(ms));
            }
            Reply::ok()
        }
    })
}

/// A strict decimal i64, as Redis's `string2ll` reads integers (no spaces, no `+`, no leading zeros).
fn parse_i64(b: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(b).ok()?;
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    if s == "-0" {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(emu: &Emulator, args: &[&str]) -> Reply {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        clock_command(&args, emu).expect("a CLOCK command")
    }

    #[test]
    fn no_move_before_the_epoch() {
        let emu = Emulator::with_clock(crate::clock::VirtualClock::starting_at(Millis(1000)));
        assert_eq!(run(&emu, &["CLOCK.ADVANCE", "-1001"]), Reply::err(NEGATIVE));
        assert_eq!(run(&emu, &["CLOCK.ADVANCE", "-99999999999"]), Reply::err(NEGATIVE));
        assert_eq!(run(&emu, &["CLOCK.SET", "-1"]), Reply::err(NEGATIVE));
        assert_eq!(run(&emu, &["CLOCK.GET"]), Reply::Int(1000), "a refused move leaves the clock");
        assert_eq!(run(&emu, &["CLOCK.ADVANCE", "-1000"]), Reply::ok());
        assert_eq!(run(&emu, &["CLOCK.GET"]), Reply::Int(0));
        assert_eq!(run(&emu, &["CLOCK.ADVANCE", "-1"]), Reply::err(NEGATIVE));
        assert_eq!(run(&emu, &["CLOCK.SET", "0"]), Reply::ok());
    }
}
