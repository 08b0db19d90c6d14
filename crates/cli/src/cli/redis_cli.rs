//! `limitlab cli`: redis-cli syntax in, redis-cli output out, on the emulator.
//!
//! The goal is that `limitlab cli < file` prints exactly what `redis-cli -p PORT < file` prints when its
//! standard output is not a terminal (redis-cli's "raw" mode), so one case file can be checked against
//! both. Every rule below was taken from experiments with redis-cli 7.0.15:
//!
//! - input is read line by line; a last line without `\n` still counts; a NUL byte ends the line (redis-cli
//!   handles lines as C strings);
//! - lines are split like `sdssplitargs` ([`split_args`]); a line that does not split prints
//!   `Invalid argument(s)`, an empty or all-blank line prints nothing;
//! - a first word that is a whole number, followed by more words, repeats the command (`3 INCR n`); a
//!   number that is zero, negative or out of range prints `Invalid redis-cli repeat command option value.`;
//! - `quit`/`exit` end the input; `:set hints|nohints` are accepted silently and other `:` words print
//!   `unknown redis-cli internal command ...`; `clear` prints the terminal clear sequence; `restart` prints
//!   its "Lua debugging mode" notice;
//! - `help` prints redis-cli's general help text (per-command pages are not reproduced);
//! - replies are written by [`write_reply`], each followed by `\n`.
//!
//! [`run`] adds three commands of its own that move the emulator's virtual clock and never reach Redis:
//! `CLOCK.ADVANCE ms` (by a number of milliseconds, negative moves back, never before 0), `CLOCK.SET unix_ms` and
//! `CLOCK.GET` (the current time in unix milliseconds).
use std::io::{BufRead, Write};

use limitlab_emulator::clock_commands::clock_command;
use limitlab_emulator::keyspace::c_sign_and_digits;
use limitlab_emulator::split_args::split_args;
use limitlab_emulator::{Emulator, Reply};

/// Writes one reply as piped redis-cli prints it (its raw mode), including the final `\n`.
///
/// Status, bulk and integer replies are printed bare, nil as an empty line. Array elements are printed one
/// per line, nested arrays flattened into the same lines, so an empty array is an empty line. An error is
/// its text and a `\n`, to which the reply's own `\n` is added: a top-level error is followed by an empty
/// line. Replies are shown as a RESP2 client sees them (doubles as `%.17g` strings, maps flattened).
pub fn write_reply(reply: &Reply, out: &mut Vec<u8>) {
    let mut o = Out { buf: out, sink: None, err: None };
    write_raw(reply, &mut o);
    o.push(b'\n');
}

/// Where a reply is formatted: a buffer that, given a sink, is handed to it between elements once
/// it holds 64 KiB, so a reply of millions of elements is printed as it is formatted instead of
/// being held whole as text too.
struct Out<'a> {
    buf: &'a mut Vec<u8>,
    sink: Option<&'a mut dyn Write>,
    /// The sink's first error (formatting goes on into the buffer; the caller reports it).
    err: Option<std::io::Error>,
}

impl Out<'_> {
    /// Between two elements: hands the buffer on when it is large.
    fn boundary(&mut self) {
        if self.buf.len() < 1 << 16 {
            return;
        }
        if let Some(w) = self.sink.as_mut() {
            if self.err.is_none() {
                if let Err(e) = w.write_all(self.buf) {
                    self.err = Some(e);
                }
            }
            self.buf.clear();
        }
    }

    fn finish(self) -> std::io::Result<()> {
        self.err.map_or(Ok(()), Err)
    }
}

impl std::ops::Deref for Out<'_> {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        self.buf
    }
}

impl std::ops::DerefMut for Out<'_> {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        self.buf
    }
}

/// redis-cli's `cliFormatReplyRaw`, without the trailing command delimiter.
fn write_raw(reply: &Reply, out: &mut Out) {
    match reply {
        Reply::Status(s) => out.extend_from_slice(s.as_bytes()),
        Reply::Bulk(b) | Reply::Verbatim(b) => out.extend_from_slice(b),
        Reply::Error(s) => {
            out.extend_from_slice(s.as_bytes());
            out.push(b'\n');
        }
        Reply::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Reply::Nil | Reply::NilArray => {}
        Reply::Double(d) => out.extend_from_slice(limitlab_emulator::reply::format_double(*d).as_bytes()),
        Reply::HumanDouble(d) => out.extend_from_slice(limitlab_emulator::reply::format_human_double(*d).as_bytes()),
        Reply::Bool(b) => out.push(if *b { b'1' } else { b'0' }),
        Reply::Array(v) | Reply::Set(v) => {
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    out.push(b'\n');
                }
                write_raw(x, out);
                out.boundary();
            }
        }
        Reply::Map(kv) => {
            for (i, (k, x)) in kv.iter().enumerate() {
                if i > 0 {
                    out.push(b'\n');
                }
                write_raw(k, out);
                out.push(b'\n');
                write_raw(x, out);
                out.boundary();
            }
        }
    }
}

/// Writes one reply as redis-cli prints it at a terminal (`cliFormatReplyTTY`): `(integer) 1`,
/// `"a"` quoted with escapes, `(nil)`, `(error) ...`, `1) ...` with nested arrays indented under
/// their index. The reply is shown as a RESP2 client receives it.
pub fn write_human(reply: Reply, out: &mut Vec<u8>) {
    human(reply, &mut Out { buf: out, sink: None, err: None })
}

fn human(reply: Reply, out: &mut Out) {
    tty(&reply.into_resp2(), b"", out)
}

/// `cliFormatReplyTTY(r, prefix)`.
fn tty(reply: &Reply, prefix: &[u8], out: &mut Out) {
    match reply {
        Reply::Error(s) => {
            out.extend_from_slice(b"(error) ");
            out.extend_from_slice(s.as_bytes());
            out.push(b'\n');
        }
        Reply::Status(s) => {
            out.extend_from_slice(s.as_bytes());
            out.push(b'\n');
        }
        Reply::Int(i) => out.extend_from_slice(format!("(integer) {i}\n").as_bytes()),
        Reply::Double(d) => {
            out.extend_from_slice(format!("(double) {}\n", limitlab_emulator::reply::format_double(*d)).as_bytes())
        }
        Reply::HumanDouble(d) => out
            .extend_from_slice(format!("(double) {}\n", limitlab_emulator::reply::format_human_double(*d)).as_bytes()),
        Reply::Bool(b) => out.extend_from_slice(if *b { b"(true)\n" } else { b"(false)\n" }),
        Reply::Bulk(b) | Reply::Verbatim(b) => {
            repr(b, out);
            out.push(b'\n');
        }
        Reply::Nil | Reply::NilArray => out.extend_from_slice(b"(nil)\n"),
        Reply::Array(v) | Reply::Set(v) if v.is_empty() => {
            out.extend_from_slice(if matches!(reply, Reply::Set(_)) { b"(empty set)\n" } else { b"(empty array)\n" })
        }
        Reply::Map(kv) if kv.is_empty() => out.extend_from_slice(b"(empty hash)\n"),
        Reply::Array(v) | Reply::Set(v) => {
            let sep = if matches!(reply, Reply::Set(_)) { b'~' } else { b')' };
            let width = v.len().to_string().len();
            let inner = [prefix, &vec![b' '; width + 2][..]].concat();
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(prefix);
                }
                out.extend_from_slice(format!("{:>width$}{} ", i + 1, sep as char).as_bytes());
                tty(x, &inner, out);
                out.boundary();
            }
        }
        Reply::Map(kv) => {
            let width = kv.len().to_string().len();
            let inner = [prefix, &vec![b' '; width + 2][..]].concat();
            for (i, (k, x)) in kv.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(prefix);
                }
                out.extend_from_slice(format!("{:>width$}# ", i + 1).as_bytes());
                tty(k, &inner, out);
                out.pop();
                out.extend_from_slice(b" => ");
                tty(x, &inner, out);
                out.boundary();
            }
        }
    }
}

/// `sdscatrepr`: a quoted string with C escapes, bytes outside printable ASCII as `\xhh`.
fn repr(b: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in b {
        match c {
            b'\\' | b'"' => {
                out.push(b'\\');
                out.push(c);
            }
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(c),
            _ => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

/// How replies are printed: piped redis-cli's raw format, or its terminal format (`--no-raw`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Raw,
    Human,
}

/// Runs redis-cli input on the emulator. Besides Redis commands it understands `CLOCK.ADVANCE ms`,
/// `CLOCK.SET unix_ms` and `CLOCK.GET`, which act on the emulator's virtual clock and never reach Redis.
pub fn run<R: BufRead, W: Write>(input: R, out: W, emu: &mut Emulator) -> std::io::Result<()> {
    run_with(input, out, Format::Raw, emu)
}

/// [`run`] in either format.
pub fn run_with<R: BufRead, W: Write>(input: R, out: W, format: Format, emu: &mut Emulator) -> std::io::Result<()> {
    run_on_with(input, out, format, |args| match clock_command(args, emu) {
        Some(reply) => reply,
        None => emu.execute_owned(args),
    })
}

/// What redis-cli does with a line before sending anything.
enum LineAction {
    /// Nothing to send (blank line, `:set hints`).
    Skip,
    /// Stop reading input (`quit`, `exit`).
    Quit,
    /// Print this text as is.
    Print(&'static [u8]),
    /// Print this text as is (built from the line).
    PrintOwned(Vec<u8>),
    /// Send `args[skip..]` `repeat` times.
    Send { args: Vec<Vec<u8>>, skip: usize, repeat: u64 },
}

/// redis-cli's REPL decisions for one input line.
fn classify(line: &[u8]) -> LineAction {
    if line.is_empty() || line[0] == 0 {
        return LineAction::Skip;
    }
    let Some(args) = split_args(line) else {
        return LineAction::Print(b"Invalid argument(s)\n");
    };
    if args.is_empty() {
        return LineAction::Skip;
    }
    let (mut repeat, mut skip) = (1u64, 0usize);
    if args.len() > 1 {
        match strtol_whole(&args[0]) {
            Some(Ok(n)) if n > 0 => {
                repeat = n as u64;
                skip = 1;
            }
            Some(_) => return LineAction::Print(b"Invalid redis-cli repeat command option value.\n"),
            None => {}
        }
    }
    let first = &args[0];
    if first.eq_ignore_ascii_case(b"quit") || first.eq_ignore_ascii_case(b"exit") {
        return LineAction::Quit;
    }
    if first.first() == Some(&b':') {
        if first.eq_ignore_ascii_case(b":set") && args.len() >= 2 {
            let pref = &args[1];
            if pref.eq_ignore_ascii_case(b"hints") || pref.eq_ignore_ascii_case(b"nohints") {
                return LineAction::Skip;
            }
            let mut s = b"unknown redis-cli preference '".to_vec();
            s.extend_from_slice(pref);
            s.extend_from_slice(b"'\n");
            return LineAction::PrintOwned(s);
        }
        let mut s = b"unknown redis-cli internal command '".to_vec();
        s.extend_from_slice(first);
        s.extend_from_slice(b"'\n");
        return LineAction::PrintOwned(s);
    }
    if first.eq_ignore_ascii_case(b"restart") {
        return LineAction::Print(b"Use 'restart' only in Lua debugging mode.\n");
    }
    if args.len() == 3 && first.eq_ignore_ascii_case(b"connect") {
        // Reconnecting means nothing to an in-process emulator.
        return LineAction::Skip;
    }
    if args.len() == 1 && first.eq_ignore_ascii_case(b"clear") {
        return LineAction::Print(b"\x1b[H\x1b[2J");
    }
    LineAction::Send { args, skip, repeat }
}

/// C's `strtol(s, &end, 10)` where the whole string must be consumed (`*end == '\0'`):
/// `None` when it is not a whole number, `Some(Err)` when out of range, `Some(Ok(n))` otherwise.
/// Like C, it accepts leading blanks and a sign, and the empty string reads as 0.
fn strtol_whole(s: &[u8]) -> Option<Result<i64, ()>> {
    let (neg, digits) = c_sign_and_digits(s);
    if digits.is_empty() {
        // No conversion: strtol leaves `end` at the very start, so only "" reads as a whole number.
        return if s.is_empty() { Some(Ok(0)) } else { None };
    }
    if !digits.iter().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        let d = (d - b'0') as i64;
        v = match v.checked_mul(10).and_then(|v| if neg { v.checked_sub(d) } else { v.checked_add(d) }) {
            Some(v) => v,
            None => return Some(Err(())),
        };
    }
    Some(Ok(v))
}

/// What redis-cli 7.0 prints for `help`. redis-cli's per-command help pages (`help GET`) are not
/// reproduced: any `help` line prints this text.
const HELP: &str = "redis-cli 7.0.15\n\
To get help about Redis commands type:\n      \
\"help @<group>\" to get a list of commands in <group>\n      \
\"help <command>\" for help on <command>\n      \
\"help <tab>\" to get a list of possible help topics\n      \
\"quit\" to exit\n\
\n\
To set redis-cli preferences:\n      \
\":set hints\" enable online hints\n      \
\":set nohints\" disable online hints\n\
Set your preferences in ~/.redisclirc\n";

/// Commands whose replies redis-cli prints as they are, with no `\n` after them (`cliSendCommand`'s
/// `output_raw` list): their text ends with its own newline, and an error gets one `\n`, not two.
fn prints_raw_strings(cmd: &[Vec<u8>]) -> bool {
    let is = |i: usize, name: &str| cmd.get(i).is_some_and(|a| a.eq_ignore_ascii_case(name.as_bytes()));
    let argc = cmd.len();
    is(0, "info")
        || is(0, "lolwut")
        || (is(0, "debug") && (is(1, "htstats") || is(1, "htstats-key") || is(1, "client-eviction")))
        || (is(0, "memory") && (is(1, "malloc-stats") || is(1, "doctor")))
        || (argc == 2 && is(0, "cluster") && (is(1, "nodes") || is(1, "info")))
        || (is(0, "client") && (is(1, "list") || is(1, "info")))
        || (argc == 3 && is(0, "latency") && is(1, "graph"))
        || (argc == 2 && is(0, "latency") && is(1, "doctor"))
        || (is(0, "proxy") && is(1, "info"))
}

/// Runs redis-cli input through any executor (the emulator, or a connection to a real Redis), printing
/// each reply the way piped redis-cli does.
pub fn run_on<R, W, F>(input: R, out: W, exec: F) -> std::io::Result<()>
where
    R: BufRead,
    W: Write,
    F: FnMut(&[Vec<u8>]) -> Reply,
{
    run_on_with(input, out, Format::Raw, exec)
}

/// [`run_on`] in either format.
pub fn run_on_with<R, W, F>(mut input: R, mut out: W, format: Format, mut exec: F) -> std::io::Result<()>
where
    R: BufRead,
    W: Write,
    F: FnMut(&[Vec<u8>]) -> Reply,
{
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if !run_line(&line, &mut out, format, &mut exec)? {
            break;
        }
    }
    out.flush()
}

/// Runs one input line as redis-cli's prompt does (without its `\n`) and writes what it prints to
/// `out`. Returns `false` when the line ends the input (`quit`, `exit`).
pub fn run_line<W, F>(line: &[u8], mut out: W, format: Format, exec: &mut F) -> std::io::Result<bool>
where
    W: Write,
    F: FnMut(&[Vec<u8>]) -> Reply,
{
    let mut buf = Vec::new();
    match classify(line) {
        LineAction::Skip => {}
        LineAction::Quit => return Ok(false),
        LineAction::Print(s) => buf.extend_from_slice(s),
        LineAction::PrintOwned(s) => buf.extend_from_slice(&s),
        LineAction::Send { args, skip, repeat } => {
            let cmd = &args[skip..];
            // redis-cli answers `help` itself, once, whatever the repeat count.
            let help = cmd[0].eq_ignore_ascii_case(b"help") || cmd[0] == b"?";
            let repeat = if help { 1 } else { repeat };
            for _ in 0..repeat {
                if help {
                    buf.extend_from_slice(HELP.as_bytes());
                } else {
                    let reply = exec(cmd);
                    write_command_reply_to(cmd, reply, format, &mut buf, &mut out)?;
                }
                // Flush as we go so a long repeat does not hold everything in memory.
                if buf.len() > 1 << 16 {
                    out.write_all(&buf)?;
                    buf.clear();
                }
            }
        }
    }
    out.write_all(&buf)?;
    Ok(true)
}

/// Writes the reply to `cmd` as redis-cli prints it in `format` (with its final `\n`, except for
/// the commands whose text redis-cli prints as it is, such as INFO).
pub fn write_command_reply(cmd: &[Vec<u8>], reply: Reply, format: Format, buf: &mut Vec<u8>) {
    let mut o = Out { buf, sink: None, err: None };
    format_command_reply(cmd, reply, format, &mut o);
}

/// [`write_command_reply`] into `buf`, handing it to `out` as it grows.
fn write_command_reply_to(
    cmd: &[Vec<u8>],
    reply: Reply,
    format: Format,
    buf: &mut Vec<u8>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut o = Out { buf, sink: Some(out), err: None };
    format_command_reply(cmd, reply, format, &mut o);
    o.finish()
}

fn format_command_reply(cmd: &[Vec<u8>], reply: Reply, format: Format, o: &mut Out) {
    if prints_raw_strings(cmd) {
        write_raw(&reply, o);
    } else if format == Format::Human {
        human(reply, o);
    } else {
        write_raw(&reply, o);
        o.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use limitlab_emulator::clock::Clock;

    fn raw(r: &Reply) -> Vec<u8> {
        let mut v = Vec::new();
        write_reply(r, &mut v);
        v
    }

    /// A large reply reaches the output in pieces as it is formatted, in both formats, and the
    /// pieces are the whole reply's text.
    #[test]
    fn a_large_reply_is_printed_as_it_is_formatted() {
        struct Pieces(Vec<usize>, Vec<u8>);
        impl Write for Pieces {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.push(b.len());
                self.1.extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let big = || Reply::Array((0..100_000).map(|i| Reply::bulk(format!("element-{i}"))).collect());
        for format in [Format::Raw, Format::Human] {
            let mut whole = Vec::new();
            match format {
                Format::Raw => write_reply(&big(), &mut whole),
                Format::Human => write_human(big(), &mut whole),
            }
            let mut out = Pieces(Vec::new(), Vec::new());
            run_on_with(&b"LRANGE big 0 -1\n"[..], &mut out, format, |_| big()).unwrap();
            assert_eq!(out.1, whole, "{format:?}");
            assert!(out.0.len() > 10 && out.0.iter().all(|&n| n < 1 << 17), "{format:?}: {} pieces", out.0.len());
        }
    }

    #[test]
    fn replies_print_as_piped_redis_cli() {
        assert_eq!(raw(&Reply::ok()), b"OK\n");
        assert_eq!(raw(&Reply::Int(-3)), b"-3\n");
        assert_eq!(raw(&Reply::Nil), b"\n");
        assert_eq!(raw(&Reply::NilArray), b"\n");
        assert_eq!(raw(&Reply::bulk(vec![b'a', 0, 0xff])), b"a\0\xff\n");
        assert_eq!(raw(&Reply::err("ERR boom")), b"ERR boom\n\n");
        assert_eq!(raw(&Reply::Array(vec![])), b"\n");
        // eval "return {1,{2,3},{},'a'}" 0
        let nested = Reply::Array(vec![
            Reply::Int(1),
            Reply::Array(vec![Reply::Int(2), Reply::Int(3)]),
            Reply::Array(vec![]),
            Reply::bulk("a"),
        ]);
        assert_eq!(raw(&nested), b"1\n2\n3\n\na\n");
        // eval "return {{}}" 0 / "return {1,{}}" 0 / "return {{},1}" 0
        assert_eq!(raw(&Reply::Array(vec![Reply::Array(vec![])])), b"\n");
        assert_eq!(raw(&Reply::Array(vec![Reply::Int(1), Reply::Array(vec![])])), b"1\n\n");
        assert_eq!(raw(&Reply::Array(vec![Reply::Array(vec![]), Reply::Int(1)])), b"\n1\n");
        // eval "return {1,false,3}" 0 and eval "return {1,{err='boom'},3}" 0
        assert_eq!(raw(&Reply::Array(vec![Reply::Int(1), Reply::Nil, Reply::Int(3)])), b"1\n\n3\n");
        assert_eq!(raw(&Reply::Array(vec![Reply::Int(1), Reply::err("boom"), Reply::Int(3)])), b"1\nboom\n\n3\n");
        assert_eq!(raw(&Reply::Double(1.5)), b"1.5\n");
        assert_eq!(raw(&Reply::Map(vec![(Reply::bulk("k"), Reply::Int(1))])), b"k\n1\n");
    }

    fn run_str(input: &str, exec: impl FnMut(&[Vec<u8>]) -> Reply) -> String {
        let mut out = Vec::new();
        run_on(input.as_bytes(), &mut out, exec).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn echo_exec(args: &[Vec<u8>]) -> Reply {
        Reply::bulk(args.join(&b'|'))
    }

    #[test]
    fn repl_rules() {
        assert_eq!(run_str("a b\n\n   \nc", echo_exec), "a|b\nc\n");
        assert_eq!(run_str("set \"x\nping\n", echo_exec), "Invalid argument(s)\nping\n");
        assert_eq!(run_str("3 incr n\n+2 x y\n 2 z\n", echo_exec), "incr|n\nincr|n\nincr|n\nx|y\nx|y\nz\nz\n");
        let bad = "Invalid redis-cli repeat command option value.\n";
        assert_eq!(run_str("0 ping\n-1 ping\n\"\" ping\n99999999999999999999 ping\n", echo_exec), bad.repeat(4));
        assert_eq!(run_str("1 2\n\"\"\n", echo_exec), "2\n\n");
        assert_eq!(run_str("5\n", echo_exec), "5\n");
        assert_eq!(run_str("a\nQuit\nb\n", echo_exec), "a\n");
        assert_eq!(run_str("a\nexit now\nb\n", echo_exec), "a\n");
        assert_eq!(
            run_str(":set hints\n:set x\n:foo\nrestart\nclear\nconnect a b\nconnect\n", echo_exec),
            "unknown redis-cli preference 'x'\nunknown redis-cli internal command ':foo'\n\
             Use 'restart' only in Lua debugging mode.\n\x1b[H\x1b[2Jconnect\n"
        );
        assert_eq!(run_str("ping\r\n", echo_exec), "ping\n");
        let help = run_str("help\n", echo_exec);
        assert_eq!(help, HELP);
        assert_eq!(run_str("2 ?\n", echo_exec), HELP);
    }

    #[test]
    fn strtol_edges() {
        assert_eq!(strtol_whole(b""), Some(Ok(0)));
        assert_eq!(strtol_whole(b"12"), Some(Ok(12)));
        assert_eq!(strtol_whole(b"-12"), Some(Ok(-12)));
        assert_eq!(strtol_whole(b"1x"), None);
        assert_eq!(strtol_whole(b"-"), None);
        assert_eq!(strtol_whole(b"ping"), None);
        assert_eq!(strtol_whole(b"9223372036854775808"), Some(Err(())));
    }

    #[test]
    fn clock_commands() {
        let mut emu = Emulator::new();
        let start = emu.clock().now_millis().0;
        let input = "clock.get\nCLOCK.ADVANCE 1500\nClock.Get\nclock.set 1000\nclock.get\nclock.advance x\n\
             clock.advance\nclock.get 1\nclock.set -5\n2 clock.advance 10\nclock.get\n";
        let mut out = Vec::new();
        run(input.as_bytes(), &mut out, &mut emu).unwrap();
        let want = format!(
            "{start}\nOK\n{}\nOK\n1000\nERR value is not an integer or out of range\n\n\
             ERR wrong number of arguments for 'clock.advance' command\n\n\
             ERR wrong number of arguments for 'clock.get' command\n\n\
             ERR invalid unix time in milliseconds, must not be negative\n\nOK\nOK\n1020\n",
            start + 1500
        );
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn runs_commands_on_the_emulator() {
        let mut emu = Emulator::new();
        let mut out = Vec::new();
        run(&b"set a 1\nget a\nget nokey\nincr a\nfoo bar\n"[..], &mut out, &mut emu).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "OK\n1\n\n2\nERR unknown command 'foo', with args beginning with: 'bar' \n\n"
        );
    }
}
