//! Evaluation: numbers read from values, what values mean as truth and as text, and what an
//! [`Expr`] gives for one request and its calls' replies (in full, or by the quick readers of the
//! hot path).
use std::borrow::Cow;

use limitlab_emulator::Reply;

use super::types::{BinOp, Const, Expr, Func, Request, Value, Var};

/// A number read from a value: integers stay integers, numeric strings are parsed.
enum Numeric {
    Int(i64),
    Num(f64),
}

impl Numeric {
    fn f(&self) -> f64 {
        match *self {
            Numeric::Int(i) => i as f64,
            Numeric::Num(x) => x,
        }
    }
}

/// Parses a numeric string as Lua's `tonumber` would (decimal, with optional exponent).
pub fn parse_number(s: &[u8]) -> Option<Value<'static>> {
    let t = std::str::from_utf8(s).ok()?.trim();
    if t.is_empty() {
        return None;
    }
    if let Ok(i) = t.parse::<i64>() {
        return Some(Value::Int(i));
    }
    let lower = t.to_ascii_lowercase();
    if lower.contains("inf") || lower.contains("nan") || lower.starts_with("0x") {
        return None;
    }
    t.parse::<f64>().ok().map(Value::Num)
}

impl Value<'_> {
    /// Lua's truth, as in the scripts the expressions sit beside: only `nil` and `false` are false
    /// (`0` and `""` are true). `and`, `or`, `not` and `when` use it.
    pub fn truthy(&self) -> bool {
        !matches!(self, Value::Nil | Value::Bool(false))
    }

    /// The value of `decision.allowed` as an admission: Lua's truth, except that a number (or a
    /// numeric string) admits when it is not zero and an empty string refuses, so that a script's
    /// `0`/`1` flag reads as it means (`allowed = "r[1]"`).
    pub fn admits(&self) -> bool {
        match self {
            Value::Int(i) => *i != 0,
            Value::Num(x) => *x != 0.0,
            Value::Str(s) => match parse_number(s) {
                Some(v) => v.admits(),
                None => !s.is_empty(),
            },
            other => other.truthy(),
        }
    }

    fn numeric(&self) -> Option<Numeric> {
        match self {
            Value::Int(i) => Some(Numeric::Int(*i)),
            Value::Num(x) => Some(Numeric::Num(*x)),
            Value::Str(s) => match parse_number(s)? {
                Value::Int(i) => Some(Numeric::Int(i)),
                Value::Num(x) => Some(Numeric::Num(x)),
                _ => None,
            },
            _ => None,
        }
    }

    /// The value as a number (integers exactly), or `None` when it is not numeric.
    pub fn as_f64(&self) -> Option<f64> {
        self.numeric().map(|n| n.f())
    }

    /// A short description for messages.
    pub fn describe(&self) -> String {
        match self {
            Value::Nil => "nil".into(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Num(x) => format_num(*x),
            Value::Str(s) => format!("'{}'", String::from_utf8_lossy(s)),
            Value::Arr(a) => format!("an array of {} elements", a.len()),
        }
    }

    /// Appends the value as a template writes it: integers in decimal, floats as Python's `repr`
    /// writes them, strings as they are, booleans as `1`/`0`. Nil and arrays cannot be written.
    pub fn write_to(&self, out: &mut String) -> Result<(), String> {
        match self {
            Value::Int(i) => out.push_str(itoa::Buffer::new().format(*i)),
            Value::Num(x) => out.push_str(&format_num(*x)),
            Value::Str(s) => out.push_str(&String::from_utf8_lossy(s)),
            Value::Bool(b) => out.push(if *b { '1' } else { '0' }),
            Value::Nil => return Err("the value is nil".into()),
            Value::Arr(a) => return Err(format!("the value is an array of {} elements", a.len())),
        }
        Ok(())
    }
}

/// A float as Python's `repr` writes it: the shortest text that reads back the same, with `.0` on
/// whole numbers and an exponent from 1e16 up and below 1e-4 (`1704067200.5`, `1704067200.0`,
/// `1e+16`).
pub fn format_num(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let a = x.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        // Rust's shortest form `1e16` / `1.5e-5`, in Python's spelling `1e+16` / `1.5e-05`.
        let s = format!("{x:e}");
        let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = exp.strip_prefix('-').map_or(("+", exp), |d| ("-", d));
        return format!("{mant}e{sign}{digits:0>2}");
    }
    let mut s = format!("{x}");
    if !s.contains('.') {
        s.push_str(".0");
    }
    s
}

fn reply_value(r: &Reply) -> Result<Value<'_>, String> {
    Ok(match r {
        Reply::Int(i) => Value::Int(*i),
        Reply::Bulk(b) | Reply::Verbatim(b) => Value::Str(Cow::Borrowed(b)),
        Reply::Status(s) => Value::Str(Cow::Borrowed(s.as_bytes())),
        Reply::Nil | Reply::NilArray => Value::Nil,
        Reply::Array(v) | Reply::Set(v) => Value::Arr(v),
        Reply::Double(x) | Reply::HumanDouble(x) => Value::Num(*x),
        Reply::Bool(b) => Value::Bool(*b),
        Reply::Error(e) => return Err(format!("the reply is an error: {e}")),
        Reply::Map(_) => return Err("the reply is a map (RESP3), which expressions cannot read".into()),
    })
}

fn arith(op: BinOp, a: Numeric, b: Numeric) -> Result<Value<'static>, String> {
    if let (Numeric::Int(x), Numeric::Int(y)) = (&a, &b) {
        let (x, y) = (*x, *y);
        let r = match op {
            BinOp::Add => x.checked_add(y),
            BinOp::Sub => x.checked_sub(y),
            BinOp::Mul => x.checked_mul(y),
            BinOp::FloorDiv | BinOp::Mod if y == 0 => return Err("division by zero".into()),
            BinOp::FloorDiv => x.checked_div_euclid(y).map(|q| if y < 0 && x.rem_euclid(y) != 0 { q + 1 } else { q }),
            BinOp::Mod => Some(x - (x as f64 / y as f64).floor() as i64 * y),
            _ => None,
        };
        if let Some(r) = r {
            return Ok(Value::Int(r));
        }
    }
    let (x, y) = (a.f(), b.f());
    Ok(Value::Num(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::FloorDiv => (x / y).floor(),
        BinOp::Mod => x - (x / y).floor() * y,
        _ => unreachable!("arith is called with arithmetic operators only"),
    }))
}

impl Expr {
    /// Evaluates against one request and the replies of its calls so far (`None`: skipped).
    pub fn eval<'a>(&'a self, req: &'a Request<'a>, replies: &'a [Option<Reply>]) -> Result<Value<'a>, String> {
        Ok(match self {
            Expr::Const(c) => c.value(),
            Expr::Nil => Value::Nil,
            Expr::Var(v) => req.var(*v),
            Expr::Reply(i) => match replies.get(*i) {
                Some(Some(r)) => reply_value(r)?,
                _ => Value::Nil,
            },
            Expr::Index(e, i) => match e.eval(req, replies)? {
                Value::Nil => Value::Nil,
                Value::Arr(a) => match a.get(*i - 1) {
                    Some(r) => reply_value(r)?,
                    None => {
                        return Err(format!(
                            "index {i} is past the end of the reply, which has {} element{}",
                            a.len(),
                            if a.len() == 1 { "" } else { "s" }
                        ))
                    }
                },
                other => return Err(format!("index {i} of {}, which is not an array", other.describe())),
            },
            Expr::Neg(e) => match e.eval(req, replies)? {
                Value::Nil => Value::Nil,
                v => match v.numeric() {
                    Some(Numeric::Int(i)) if i != i64::MIN => Value::Int(-i),
                    Some(n) => Value::Num(-n.f()),
                    None => return Err(format!("cannot negate {}", v.describe())),
                },
            },
            Expr::Not(e) => Value::Bool(!e.eval(req, replies)?.truthy()),
            Expr::And(a, b) => {
                let x = a.eval(req, replies)?;
                if x.truthy() {
                    b.eval(req, replies)?
                } else {
                    x
                }
            }
            Expr::Or(a, b) => {
                let x = a.eval(req, replies)?;
                if x.truthy() {
                    x
                } else {
                    b.eval(req, replies)?
                }
            }
            Expr::Bin(op, a, b) => {
                let (x, y) = (a.eval(req, replies)?, b.eval(req, replies)?);
                binary(*op, &x, &y)?
            }
            Expr::Call(f, args) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(a.eval(req, replies)?);
                }
                call(*f, &vals)?
            }
        })
    }
}

fn binary(op: BinOp, x: &Value<'_>, y: &Value<'_>) -> Result<Value<'static>, String> {
    if matches!(op, BinOp::Eq | BinOp::Ne) {
        let eq = match (x, y) {
            (Value::Nil, Value::Nil) => true,
            (Value::Nil, _) | (_, Value::Nil) => false,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => a == b,
            _ => match (x.numeric(), y.numeric()) {
                (Some(a), Some(b)) => {
                    a.f() == b.f() && !matches!((&a, &b), (Numeric::Int(p), Numeric::Int(q)) if p != q)
                }
                _ => false,
            },
        };
        return Ok(Value::Bool(eq == (op == BinOp::Eq)));
    }
    if matches!(x, Value::Nil) || matches!(y, Value::Nil) {
        return Ok(Value::Nil);
    }
    let sym = match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::FloorDiv => "//",
        BinOp::Mod => "%",
        BinOp::Lt => "<",
        BinOp::Le => "<=",
        BinOp::Gt => ">",
        BinOp::Ge => ">=",
        BinOp::Eq | BinOp::Ne => unreachable!("handled above"),
    };
    let (Some(a), Some(b)) = (x.numeric(), y.numeric()) else {
        return Err(format!("`{sym}` needs numbers, got {} and {}", x.describe(), y.describe()));
    };
    Ok(match op {
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            let ord = match (&a, &b) {
                (Numeric::Int(p), Numeric::Int(q)) => p.partial_cmp(q),
                _ => a.f().partial_cmp(&b.f()),
            };
            let Some(ord) = ord else { return Ok(Value::Bool(false)) };
            Value::Bool(match op {
                BinOp::Lt => ord.is_lt(),
                BinOp::Le => ord.is_le(),
                BinOp::Gt => ord.is_gt(),
                _ => ord.is_ge(),
            })
        }
        _ => arith(op, a, b)?,
    })
}

fn call(f: Func, args: &[Value<'_>]) -> Result<Value<'static>, String> {
    let name = match f {
        Func::Floor => "floor",
        Func::Ceil => "ceil",
        Func::Min => "min",
        Func::Max => "max",
        Func::Abs => "abs",
        Func::Num => "num",
        Func::Round => "round",
    };
    if args.iter().any(|a| matches!(a, Value::Nil)) {
        return Ok(Value::Nil);
    }
    let mut nums = Vec::with_capacity(args.len());
    for a in args {
        match a.numeric() {
            Some(n) => nums.push(n),
            None if f == Func::Num => return Ok(Value::Nil),
            None => return Err(format!("`{name}` needs numbers, got {}", a.describe())),
        }
    }
    let whole = |x: f64| if x.abs() < 9.0e15 { Value::Int(x as i64) } else { Value::Num(x) };
    Ok(match f {
        Func::Floor => match nums[0] {
            Numeric::Int(i) => Value::Int(i),
            Numeric::Num(x) => whole(x.floor()),
        },
        Func::Ceil => match nums[0] {
            Numeric::Int(i) => Value::Int(i),
            Numeric::Num(x) => whole(x.ceil()),
        },
        Func::Round => match nums[0] {
            Numeric::Int(i) => Value::Int(i),
            Numeric::Num(x) => whole(x.round()),
        },
        Func::Abs => match nums[0] {
            Numeric::Int(i) => Value::Int(i.saturating_abs()),
            Numeric::Num(x) => Value::Num(x.abs()),
        },
        Func::Num => match nums[0] {
            Numeric::Int(i) => Value::Int(i),
            Numeric::Num(x) => Value::Num(x),
        },
        Func::Min | Func::Max => {
            let mut best = 0;
            for i in 1..nums.len() {
                let better = if f == Func::Min { nums[i].f() < nums[best].f() } else { nums[i].f() > nums[best].f() };
                if better {
                    best = i;
                }
            }
            match nums[best] {
                Numeric::Int(i) => Value::Int(i),
                Numeric::Num(x) => Value::Num(x),
            }
        }
    })
}

impl Expr {
    /// Whether the expression reads the variable `v`.
    pub fn uses(&self, v: Var) -> bool {
        match self {
            Expr::Var(x) => *x == v,
            Expr::Index(e, _) | Expr::Neg(e) | Expr::Not(e) => e.uses(v),
            Expr::And(a, b) | Expr::Or(a, b) | Expr::Bin(_, a, b) => a.uses(v) || b.uses(v),
            Expr::Call(_, args) => args.iter().any(|a| a.uses(v)),
            _ => false,
        }
    }

    /// The integer this expression reads straight from a reply, when it is `<call>` or `<call>[n]`
    /// and that reply (element) is an integer reply: what [`Expr::eval`] gives then, without
    /// building values. `None` means "evaluate it": anything else, or a reply of another shape.
    #[inline]
    pub fn reply_int(&self, replies: &[Option<Reply>]) -> Option<i64> {
        let r = match self {
            Expr::Reply(c) => replies.get(*c)?.as_ref()?,
            Expr::Index(e, n) => match replies.get(e.reply_call()?) {
                Some(Some(Reply::Array(v))) => v.get(n.checked_sub(1)?)?,
                _ => return None,
            },
            _ => return None,
        };
        match r {
            Reply::Int(i) => Some(*i),
            _ => None,
        }
    }

    fn reply_call(&self) -> Option<usize> {
        match self {
            Expr::Reply(c) => Some(*c),
            _ => None,
        }
    }

    /// The truth of this expression when it is a reply's integer (see [`Expr::reply_int`]), or a
    /// comparison of one with an integer constant (`reply[1] == 1`, `hits <= 10`): what
    /// `eval(..).admits()` gives then, without building values. `None` means "evaluate it".
    #[inline]
    pub fn quick_truth(&self, replies: &[Option<Reply>]) -> Option<bool> {
        match self {
            Expr::Bin(op, a, b) => {
                let (x, y, op) = match (&**a, &**b) {
                    (a, Expr::Const(Const::Int(k))) => (a.reply_int(replies)?, *k, *op),
                    (Expr::Const(Const::Int(k)), b) => (*k, b.reply_int(replies)?, *op),
                    _ => return None,
                };
                match op {
                    BinOp::Eq => Some(x == y),
                    BinOp::Ne => Some(x != y),
                    BinOp::Lt => Some(x < y),
                    BinOp::Le => Some(x <= y),
                    BinOp::Gt => Some(x > y),
                    BinOp::Ge => Some(x >= y),
                    _ => None,
                }
            }
            e => e.reply_int(replies).map(|i| i != 0),
        }
    }

    /// The reply index `n` when the expression is exactly `<call>[n]` of the given call.
    pub fn reply_index(&self) -> Option<(usize, usize)> {
        match self {
            Expr::Index(e, n) => match **e {
                Expr::Reply(c) => Some((c, *n)),
                _ => None,
            },
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::{compile, Scope};
    use super::*;

    fn scope_eval(src: &str, replies: &[Option<Reply>]) -> Result<String, String> {
        let consts = vec![("limit".to_string(), Const::Int(10)), ("window_ms".to_string(), Const::Int(1000))];
        let calls = vec!["hits".to_string()];
        let lets =
            vec![("used".to_string(), "limit - hits[1]".to_string()), ("loop".to_string(), "loop + 1".to_string())];
        let scope = Scope { consts: &consts, calls: &calls, lets: &lets, depth: 0 };
        let e = compile(src, &scope)?;
        let req = Request { subject: "u1", now_ms: 1_704_067_200_250, cost: 2, window_ms: 1000, seq: 0 };
        let v = e.eval(&req, replies)?;
        Ok(v.describe())
    }

    #[test]
    fn arithmetic_comparison_and_replies() {
        let r = vec![Some(Reply::Array(vec![Reply::Int(7), Reply::bulk("0.25"), Reply::Nil]))];
        assert_eq!(scope_eval("hits[1] <= limit", &r).unwrap(), "true");
        assert_eq!(scope_eval("limit - reply[1]", &r).unwrap(), "3");
        assert_eq!(scope_eval("hits[2] * 1000", &r).unwrap(), "250.0");
        assert_eq!(scope_eval("ceil(hits[2] * 1000)", &r).unwrap(), "250");
        assert_eq!(scope_eval("hits[3] == nil", &r).unwrap(), "true");
        assert_eq!(scope_eval("hits[3] + 1", &r).unwrap(), "nil");
        assert_eq!(scope_eval("now_ms // window_ms", &r).unwrap(), "1704067200");
        assert_eq!(scope_eval("-7 // 2", &r).unwrap(), "-4");
        assert_eq!(scope_eval("7 / 2", &r).unwrap(), "3.5");
        assert_eq!(scope_eval("hits[3] or 5", &r).unwrap(), "5");
        assert_eq!(scope_eval("max(1, cost, 0.5)", &r).unwrap(), "2");
        assert_eq!(scope_eval("not hits[3]", &r).unwrap(), "true");
        assert_eq!(scope_eval("subject == 'u1'", &r).unwrap(), "true");
        assert_eq!(scope_eval("hits[2] == '0.25'", &r).unwrap(), "true");
        assert_eq!(scope_eval("round(hits[2] * 10)", &r).unwrap(), "3");
        assert_eq!(scope_eval("used * 2", &r).unwrap(), "6");
    }

    #[test]
    fn truth_is_luas_and_allowed_reads_a_flag() {
        let r = vec![Some(Reply::Array(vec![Reply::Int(0), Reply::bulk("0"), Reply::bulk(""), Reply::Nil]))];
        // As in Lua: 0, "0" and "" are true; only nil and false are false.
        assert_eq!(scope_eval("hits[1] and 'yes' or 'no'", &r).unwrap(), "'yes'");
        assert_eq!(scope_eval("not hits[1]", &r).unwrap(), "false");
        assert_eq!(scope_eval("not hits[2]", &r).unwrap(), "false");
        assert_eq!(scope_eval("hits[3] or 'empty'", &r).unwrap(), "''");
        assert_eq!(scope_eval("hits[4] or 'nil'", &r).unwrap(), "'nil'");
        assert_eq!(scope_eval("not false", &r).unwrap(), "true");
        // `decision.allowed` alone reads a number (or a numeric string) as a 0/1 flag.
        assert!(!Value::Int(0).admits() && Value::Int(0).truthy());
        assert!(!Value::Str(Cow::Borrowed(b"0")).admits() && Value::Str(Cow::Borrowed(b"0")).truthy());
        assert!(!Value::Str(Cow::Borrowed(b"")).admits());
        assert!(Value::Int(1).admits() && Value::Str(Cow::Borrowed(b"yes")).admits());
        assert!(!Value::Nil.admits() && !Value::Bool(false).admits() && Value::Bool(true).admits());
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let r = vec![Some(Reply::Array(vec![Reply::Int(7)]))];
        assert!(scope_eval("hits[4]", &r).unwrap_err().contains("past the end of the reply, which has 1 element"));
        assert!(scope_eval("limt", &r).unwrap_err().starts_with("unknown variable `limt`"));
        assert!(scope_eval("limit = 1", &r).unwrap_err().contains("`==`"));
        assert!(scope_eval("(1", &r).unwrap_err().contains("expected `)`"));
        assert!(scope_eval("sqrt(1)", &r).unwrap_err().contains("unknown function"));
        assert!(scope_eval("subject < 1", &r).unwrap_err().contains("needs numbers"));
        assert!(scope_eval("loop", &r).unwrap_err().contains("in a cycle"), "{:?}", scope_eval("loop", &r));
    }

    #[test]
    fn the_quick_readers_agree_with_evaluation() {
        let consts = vec![("limit".to_string(), Const::Int(10))];
        let calls = vec!["a".to_string(), "b".to_string()];
        let scope = Scope { consts: &consts, calls: &calls, lets: &[], depth: 0 };
        let req = Request { subject: "u1", now_ms: 5, cost: 1, window_ms: 1000, seq: 0 };
        let replies_of = [
            vec![Some(Reply::Array(vec![Reply::Int(1), Reply::Int(10), Reply::Int(-1)])), Some(Reply::Int(0))],
            vec![Some(Reply::Array(vec![Reply::Int(0), Reply::bulk("10"), Reply::Nil])), Some(Reply::Int(11))],
            vec![Some(Reply::Array(vec![Reply::bulk("1"), Reply::Int(9)])), None],
            vec![Some(Reply::Int(1)), Some(Reply::Array(vec![]))],
            vec![None, Some(Reply::bulk("0.5"))],
        ];
        let exprs = [
            "a[1] == 1",
            "a[1] ~= 1",
            "1 == a[1]",
            "a[2] <= limit",
            "a[2] < 10",
            "a[2] > 9",
            "a[2] >= 11",
            "b == 0",
            "b",
            "a[1]",
            "a[3]",
            "b <= limit",
            "a[1] + 1",
            "a[2] == 10",
            "limit",
            "a[2] - 1 == 9",
        ];
        for replies in &replies_of {
            for src in exprs {
                let e = compile(src, &scope).unwrap();
                let full = e.eval(&req, replies);
                if let Some(t) = e.quick_truth(replies) {
                    assert_eq!(Ok(t), full.as_ref().map(|v| v.admits()).map_err(|e| e.clone()), "{src} on {replies:?}");
                }
                if let Some(i) = e.reply_int(replies) {
                    assert_eq!(full, Ok(Value::Int(i)), "{src} on {replies:?}");
                }
            }
        }
        let e = compile("a[1] == 1", &scope).unwrap();
        assert_eq!(e.quick_truth(&replies_of[0]), Some(true));
        assert_eq!(e.quick_truth(&replies_of[2]), None, "a string reply is evaluated");
        assert_eq!(compile("a[2]", &scope).unwrap().reply_int(&replies_of[0]), Some(10));
    }
}
