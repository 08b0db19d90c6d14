//! The spec's small expression language: the `${...}` parts of key and argument templates
//! (`rl:{${subject}}:${window_index}`) and the decision's expressions (`hits <= limit`).
//!
//! Values are nil, booleans, integers, floats, byte strings and array replies. Numeric strings
//! compute and compare as numbers (a reply `"0.25"` times 1000 is 250), because scripts often
//! return numbers as strings. Arithmetic or ordering with nil gives nil, which counts as false, so
//! a skipped call's reply can be tested without guarding every use; `and`/`or` return an operand,
//! as in Lua. The policy's constants are folded when a limiter is built, so a template such as
//! `${limit}` costs nothing per call.
//!
//! Grammar, lowest precedence first: `or`; `and`; `not`; comparisons (`== ~= != < <= > >=`);
//! `+ -`; `* / // %`; unary `-`; postfix `[n]` (1-based index into an array reply); atoms:
//! numbers, `'strings'`, `nil`, `true`, `false`, names, `f(args)` for `floor ceil min max abs num`,
//! and parentheses.
use std::borrow::Cow;

use limitlab_emulator::Reply;

/// A value during evaluation. `Str` and `Arr` borrow from the replies or the expression itself.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    Num(f64),
    Str(Cow<'a, [u8]>),
    Arr(&'a [Reply]),
}

/// A constant a spec or the policy gives a name to (folded into the expressions that use it).
#[derive(Clone, Debug, PartialEq)]
pub enum Const {
    Int(i64),
    Num(f64),
    Str(String),
    Bool(bool),
}

impl Const {
    fn value(&self) -> Value<'_> {
        match self {
            Const::Int(i) => Value::Int(*i),
            Const::Num(x) => Value::Num(*x),
            Const::Str(s) => Value::Str(Cow::Borrowed(s.as_bytes())),
            Const::Bool(b) => Value::Bool(*b),
        }
    }
}

/// The per-request variables, read from a [`Request`] at evaluation time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Var {
    Subject,
    NowMs,
    NowUs,
    /// Fractional seconds, printed the way Python prints `time.time()`.
    NowS,
    /// Whole seconds (floor).
    NowSec,
    Cost,
    WindowIndex,
    PrevWindowIndex,
    WindowStartMs,
    /// The request's number in its run (0, 1, 2, ...): unique, for members of a log.
    Seq,
}

impl Var {
    /// Every per-request variable with its name.
    pub const ALL: [(&'static str, Var); 10] = [
        ("subject", Var::Subject),
        ("now_ms", Var::NowMs),
        ("now_us", Var::NowUs),
        ("now_s", Var::NowS),
        ("now_sec", Var::NowSec),
        ("cost", Var::Cost),
        ("window_index", Var::WindowIndex),
        ("prev_window_index", Var::PrevWindowIndex),
        ("window_start_ms", Var::WindowStartMs),
        ("seq", Var::Seq),
    ];
}

/// One request, as the variables see it.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub subject: &'a str,
    pub now_ms: i64,
    pub cost: u64,
    /// The window in ms, for `window_index` and its kin.
    pub window_ms: i64,
    /// The request's number in its run.
    pub seq: u64,
}

impl Request<'_> {
    fn var(&self, v: Var) -> Value<'_> {
        match v {
            Var::Subject => Value::Str(Cow::Borrowed(self.subject.as_bytes())),
            Var::NowS => Value::Num(self.now_ms as f64 / 1000.0),
            v => Value::Int(self.int_var(v)),
        }
    }

    /// [`Request::int_var`] out of line, for the variables a template uses less often than
    /// `now_ms` and `cost` (their divisions then stay out of the hot loop).
    #[inline(never)]
    fn other_int_var(&self, v: Var) -> i64 {
        self.int_var(v)
    }

    /// The value of an integer variable (every one but `subject` and `now_s`, which give 0 here).
    #[inline]
    fn int_var(&self, v: Var) -> i64 {
        let w = self.window_ms.max(1);
        match v {
            Var::NowMs => self.now_ms,
            Var::NowUs => self.now_ms.saturating_mul(1000),
            Var::NowSec => self.now_ms.div_euclid(1000),
            Var::Cost => self.cost.min(i64::MAX as u64) as i64,
            Var::WindowIndex => self.now_ms.div_euclid(w),
            Var::PrevWindowIndex => self.now_ms.div_euclid(w) - 1,
            Var::WindowStartMs => self.now_ms.div_euclid(w) * w,
            Var::Seq => self.seq.min(i64::MAX as u64) as i64,
            Var::Subject | Var::NowS => 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// A binary operator.
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// A function of the expression language.
pub enum Func {
    Floor,
    Ceil,
    Min,
    Max,
    Abs,
    Num,
    Round,
}

/// A compiled expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Const(Const),
    Nil,
    Var(Var),
    /// The reply of the call with this index (nil when it was skipped).
    Reply(usize),
    Index(Box<Expr>, usize),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
}

/// What names mean while compiling: constants (folded), per-request variables, call replies.
pub struct Scope<'s> {
    pub consts: &'s [(String, Const)],
    /// The names of the calls whose replies are available, by index (`reply` is the last one).
    pub calls: &'s [String],
    /// Named expressions (`[let]`), compiled where they are used.
    pub lets: &'s [(String, String)],
    /// How deep in `[let]` expansions this compilation is (a cycle stops at [`MAX_LET_DEPTH`]).
    pub depth: usize,
}

/// The deepest chain of `[let]` names using one another.
pub const MAX_LET_DEPTH: usize = 16;

impl Scope<'_> {
    fn lookup(&self, name: &str) -> Option<Result<Expr, String>> {
        if let Some(i) = self.calls.iter().position(|c| c == name) {
            return Some(Ok(Expr::Reply(i)));
        }
        if let Some((_, text)) = self.lets.iter().find(|(n, _)| n == name) {
            if self.depth >= MAX_LET_DEPTH {
                return Some(Err(format!("`{name}`: [let] names use one another in a cycle (or deeper than {MAX_LET_DEPTH})")));
            }
            let inner = Scope { depth: self.depth + 1, ..*self };
            return Some(compile(text, &inner).map_err(|e| format!("in [let] `{name}`: {e}")));
        }
        if name == "reply" && !self.calls.is_empty() {
            return Some(Ok(Expr::Reply(self.calls.len() - 1)));
        }
        if let Some((_, c)) = self.consts.iter().find(|(n, _)| n == name) {
            return Some(Ok(Expr::Const(c.clone())));
        }
        Var::ALL.iter().find(|(n, _)| *n == name).map(|(_, v)| Ok(Expr::Var(*v)))
    }

    /// Every name an expression may use here, for error messages.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = Var::ALL.iter().map(|(n, _)| n.to_string()).collect();
        v.extend(self.consts.iter().map(|(n, _)| n.clone()));
        v.extend(self.calls.iter().cloned());
        v.extend(self.lets.iter().map(|(n, _)| n.clone()));
        if !self.calls.is_empty() {
            v.push("reply".into());
        }
        v
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(f64, bool),
    Str(String),
    Name(String),
    Op(&'static str),
}

fn tokenize(src: &str) -> Result<Vec<Tok>, String> {
    const OPS: [&str; 19] = ["//", "==", "~=", "!=", "<=", ">=", "+", "-", "*", "/", "%", "<", ">", "(", ")", "[", "]", ",", "="];
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_') {
                if (b[i] == b'e' || b[i] == b'E') && matches!(b.get(i + 1), Some(b'+' | b'-')) {
                    i += 1;
                }
                i += 1;
            }
            let text = src[start..i].replace('_', "");
            let is_int = text.bytes().all(|d| d.is_ascii_digit());
            let x: f64 = text.parse().map_err(|_| format!("`{}` is not a number", &src[start..i]))?;
            out.push(Tok::Num(x, is_int));
        } else if c == b'\'' || c == b'"' {
            let end = src[i + 1..].find(c as char).ok_or_else(|| "a string is not closed".to_string())?;
            out.push(Tok::Str(src[i + 1..i + 1 + end].to_string()));
            i += end + 2;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Name(src[start..i].to_string()));
        } else if let Some(op) = OPS.iter().find(|op| src[i..].starts_with(**op)) {
            if *op == "=" {
                return Err("`=` is not an operator here; compare with `==`".into());
            }
            out.push(Tok::Op(op));
            i += op.len();
        } else {
            let ch = src[i..].chars().next().unwrap_or('?');
            return Err(format!("unexpected `{ch}`"));
        }
    }
    Ok(out)
}

struct Parser<'t, 's> {
    toks: &'t [Tok],
    pos: usize,
    scope: &'t Scope<'s>,
}

impl Parser<'_, '_> {
    fn peek_op(&self, op: &str) -> bool {
        matches!(self.toks.get(self.pos), Some(Tok::Op(o)) if *o == op)
    }
    fn peek_name(&self, name: &str) -> bool {
        matches!(self.toks.get(self.pos), Some(Tok::Name(n)) if n == name)
    }
    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.peek_op(op) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected `{op}`"))
        }
    }
    fn or(&mut self) -> Result<Expr, String> {
        let mut e = self.and()?;
        while self.peek_name("or") {
            self.pos += 1;
            e = Expr::Or(Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }
    fn and(&mut self) -> Result<Expr, String> {
        let mut e = self.not()?;
        while self.peek_name("and") {
            self.pos += 1;
            e = Expr::And(Box::new(e), Box::new(self.not()?));
        }
        Ok(e)
    }
    fn not(&mut self) -> Result<Expr, String> {
        if self.peek_name("not") {
            self.pos += 1;
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.cmp()
    }
    fn cmp(&mut self) -> Result<Expr, String> {
        let mut e = self.add()?;
        loop {
            let op = match self.toks.get(self.pos) {
                Some(Tok::Op("==")) => BinOp::Eq,
                Some(Tok::Op("~=" | "!=")) => BinOp::Ne,
                Some(Tok::Op("<")) => BinOp::Lt,
                Some(Tok::Op("<=")) => BinOp::Le,
                Some(Tok::Op(">")) => BinOp::Gt,
                Some(Tok::Op(">=")) => BinOp::Ge,
                _ => return Ok(e),
            };
            self.pos += 1;
            e = Expr::Bin(op, Box::new(e), Box::new(self.add()?));
        }
    }
    fn add(&mut self) -> Result<Expr, String> {
        let mut e = self.mul()?;
        loop {
            let op = match self.toks.get(self.pos) {
                Some(Tok::Op("+")) => BinOp::Add,
                Some(Tok::Op("-")) => BinOp::Sub,
                _ => return Ok(e),
            };
            self.pos += 1;
            e = Expr::Bin(op, Box::new(e), Box::new(self.mul()?));
        }
    }
    fn mul(&mut self) -> Result<Expr, String> {
        let mut e = self.unary()?;
        loop {
            let op = match self.toks.get(self.pos) {
                Some(Tok::Op("*")) => BinOp::Mul,
                Some(Tok::Op("/")) => BinOp::Div,
                Some(Tok::Op("//")) => BinOp::FloorDiv,
                Some(Tok::Op("%")) => BinOp::Mod,
                _ => return Ok(e),
            };
            self.pos += 1;
            e = Expr::Bin(op, Box::new(e), Box::new(self.unary()?));
        }
    }
    fn unary(&mut self) -> Result<Expr, String> {
        if self.peek_op("-") {
            self.pos += 1;
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        self.postfix()
    }
    fn postfix(&mut self) -> Result<Expr, String> {
        let mut e = self.atom()?;
        while self.peek_op("[") {
            self.pos += 1;
            let i = match self.toks.get(self.pos) {
                Some(Tok::Num(x, true)) if *x >= 1.0 && *x <= u32::MAX as f64 => *x as usize,
                _ => return Err("an index is a whole number from 1 (`reply[1]` is the first element)".into()),
            };
            self.pos += 1;
            self.expect("]")?;
            e = Expr::Index(Box::new(e), i);
        }
        Ok(e)
    }
    fn atom(&mut self) -> Result<Expr, String> {
        let tok = self.toks.get(self.pos).cloned().ok_or_else(|| "the expression ends too early".to_string())?;
        self.pos += 1;
        match tok {
            Tok::Num(x, true) if x <= i64::MAX as f64 => Ok(Expr::Const(Const::Int(x as i64))),
            Tok::Num(x, _) => Ok(Expr::Const(Const::Num(x))),
            Tok::Str(s) => Ok(Expr::Const(Const::Str(s))),
            Tok::Op("(") => {
                let e = self.or()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Op(o) => Err(format!("unexpected `{o}`")),
            Tok::Name(n) => match n.as_str() {
                "nil" => Ok(Expr::Nil),
                "true" => Ok(Expr::Const(Const::Bool(true))),
                "false" => Ok(Expr::Const(Const::Bool(false))),
                "and" | "or" | "not" => Err(format!("unexpected `{n}`")),
                _ if self.peek_op("(") => {
                    let f = match n.as_str() {
                        "floor" => Func::Floor,
                        "ceil" => Func::Ceil,
                        "min" => Func::Min,
                        "max" => Func::Max,
                        "abs" => Func::Abs,
                        "num" => Func::Num,
                        "round" => Func::Round,
                        _ => return Err(format!("unknown function `{n}`; functions: floor, ceil, round, min, max, abs, num")),
                    };
                    self.pos += 1;
                    let mut args = Vec::new();
                    if !self.peek_op(")") {
                        loop {
                            args.push(self.or()?);
                            if !self.peek_op(",") {
                                break;
                            }
                            self.pos += 1;
                        }
                    }
                    self.expect(")")?;
                    let arity_ok = match f {
                        Func::Min | Func::Max => !args.is_empty(),
                        _ => args.len() == 1,
                    };
                    if !arity_ok {
                        return Err(format!(
                            "`{n}` takes {}",
                            if matches!(f, Func::Min | Func::Max) { "one or more arguments" } else { "one argument" }
                        ));
                    }
                    Ok(Expr::Call(f, args))
                }
                _ => match self.scope.lookup(&n) {
                    Some(r) => r,
                    None => Err(format!("unknown variable `{n}`; known: {}", self.scope.names().join(", "))),
                },
            },
        }
    }
}

/// Compiles an expression; the error says what is wrong in it.
pub fn compile(src: &str, scope: &Scope<'_>) -> Result<Expr, String> {
    let toks = tokenize(src)?;
    if toks.is_empty() {
        return Err("the expression is empty".into());
    }
    let mut p = Parser { toks: &toks, pos: 0, scope };
    let e = p.or()?;
    if p.pos != toks.len() {
        return Err(format!("unexpected {:?} after a complete expression", toks[p.pos]));
    }
    Ok(fold(e))
}

/// Folds sub-expressions made only of constants into constants.
fn fold(e: Expr) -> Expr {
    fn is_const(e: &Expr) -> bool {
        matches!(e, Expr::Const(_) | Expr::Nil)
    }
    let e = match e {
        Expr::Neg(a) => Expr::Neg(Box::new(fold(*a))),
        Expr::Not(a) => Expr::Not(Box::new(fold(*a))),
        Expr::And(a, b) => Expr::And(Box::new(fold(*a)), Box::new(fold(*b))),
        Expr::Or(a, b) => Expr::Or(Box::new(fold(*a)), Box::new(fold(*b))),
        Expr::Bin(op, a, b) => Expr::Bin(op, Box::new(fold(*a)), Box::new(fold(*b))),
        Expr::Call(f, args) => Expr::Call(f, args.into_iter().map(fold).collect()),
        other => other,
    };
    let foldable = match &e {
        Expr::Neg(a) | Expr::Not(a) => is_const(a),
        Expr::And(a, b) | Expr::Or(a, b) | Expr::Bin(_, a, b) => is_const(a) && is_const(b),
        Expr::Call(_, args) => args.iter().all(is_const),
        _ => false,
    };
    if !foldable {
        return e;
    }
    let req = Request { subject: "", now_ms: 0, cost: 0, window_ms: 1, seq: 0 };
    match e.eval(&req, &[]) {
        Ok(Value::Nil) => Expr::Nil,
        Ok(Value::Bool(b)) => Expr::Const(Const::Bool(b)),
        Ok(Value::Int(i)) => Expr::Const(Const::Int(i)),
        Ok(Value::Num(x)) => Expr::Const(Const::Num(x)),
        Ok(Value::Str(s)) => Expr::Const(Const::Str(String::from_utf8_lossy(&s).into_owned())),
        _ => e,
    }
}

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
        Reply::Bulk(b) => Value::Str(Cow::Borrowed(b)),
        Reply::Status(s) => Value::Str(Cow::Borrowed(s.as_bytes())),
        Reply::Nil | Reply::NilArray => Value::Nil,
        Reply::Array(v) | Reply::Set(v) => Value::Arr(v),
        Reply::Double(x) => Value::Num(*x),
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
                (Some(a), Some(b)) => a.f() == b.f() && !matches!((&a, &b), (Numeric::Int(p), Numeric::Int(q)) if p != q),
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

/// A string with `${expr}` parts. `$$` is a literal `$`; braces alone are literal, so Redis hash
/// tags read naturally: `rl:{${subject}}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Lit(String),
    /// `${subject}`, written as it is.
    Subject,
    /// `${v}` for an integer variable `v`, written in decimal without building a value.
    Int(Var),
    Expr(Expr),
}

impl Template {
    /// Compiles a template; constant parts are rendered now.
    pub fn compile(src: &str, scope: &Scope<'_>) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut rest = src;
        while let Some(i) = rest.find('$') {
            lit.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            if let Some(r) = after.strip_prefix('$') {
                lit.push('$');
                rest = r;
            } else if let Some(body) = after.strip_prefix('{') {
                let end = body.find('}').ok_or_else(|| "`${` is not closed by `}`".to_string())?;
                let e = compile(&body[..end], scope).map_err(|e| format!("in `${{{}}}`: {e}", &body[..end]))?;
                match e {
                    Expr::Const(c) => Value::write_to(&c.value(), &mut lit).map_err(|e| format!("in `${{{}}}`: {e}", &body[..end]))?,
                    Expr::Nil => return Err(format!("in `${{{}}}`: the value is nil", &body[..end])),
                    e => {
                        if !lit.is_empty() {
                            parts.push(Part::Lit(std::mem::take(&mut lit)));
                        }
                        parts.push(match e {
                            Expr::Var(Var::Subject) => Part::Subject,
                            Expr::Var(Var::NowS) => Part::Expr(e),
                            Expr::Var(v) => Part::Int(v),
                            e => Part::Expr(e),
                        });
                    }
                }
                rest = &body[end + 1..];
            } else {
                return Err("a `$` starts `${expression}`; write `$$` for a literal `$`".into());
            }
        }
        lit.push_str(rest);
        if !lit.is_empty() || parts.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Ok(Template { parts })
    }

    /// Appends the template for one request to `out`.
    #[inline]
    pub fn render(&self, req: &Request<'_>, replies: &[Option<Reply>], out: &mut String) -> Result<(), String> {
        for p in &self.parts {
            match p {
                Part::Lit(s) => out.push_str(s),
                Part::Subject => out.push_str(req.subject),
                Part::Int(v) => out.push_str(itoa::Buffer::new().format(req.int_var(*v))),
                Part::Expr(e) => e.eval(req, replies)?.write_to(out)?,
            }
        }
        Ok(())
    }

    /// Whether the template reads the variable `v`.
    pub fn uses(&self, v: Var) -> bool {
        self.parts.iter().any(|p| match p {
            Part::Lit(_) => false,
            Part::Subject => v == Var::Subject,
            Part::Int(x) => *x == v,
            Part::Expr(e) => e.uses(v),
        })
    }

    /// The template's text when it has no per-request part.
    pub fn constant(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Lit(s)] => Some(s),
            _ => None,
        }
    }
}

/// A call's KEYS and ARGV templates laid out as one run of pieces, rendered into one buffer with
/// the offsets where each string ends: what a request renders on the hot path (a `String` per key
/// or argument costs more than the text itself). Literal text next to literal text is merged, also
/// across the end of one string and the start of the next (`}`, `100`, `1000` is one copy).
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pieces: Vec<Piece>,
    /// How many of the strings are keys (they come first, each behind the backend's prefix).
    keys: usize,
    /// How many strings there are.
    strings: usize,
}

#[derive(Clone, Debug, PartialEq)]
enum Piece {
    /// Literal text; a string ends at each offset in `ends` (relative to the text's start).
    Lit {
        text: String,
        ends: Vec<usize>,
    },
    /// The backend's key prefix.
    Prefix,
    Subject,
    Int(Var),
    /// An expression of the template with this index (keys, then args), for messages.
    Expr(Expr, usize),
}

impl Layout {
    /// The layout of `keys` (each behind the prefix) followed by `args`.
    pub fn new(keys: &[Template], args: &[Template]) -> Layout {
        Layout::with_raw(keys, args, &[])
    }

    /// [`Layout::new`], with the keys at the 0-based indices `raw` sent as written, without the
    /// backend's prefix (a key the client passes through as given, such as an empty string).
    pub fn with_raw(keys: &[Template], args: &[Template], raw: &[usize]) -> Layout {
        let mut pieces = Vec::new();
        // The literal being gathered: its text and the string ends inside it.
        let mut lit: Option<(String, Vec<usize>)> = None;
        let flush = |lit: &mut Option<(String, Vec<usize>)>, pieces: &mut Vec<Piece>| {
            if let Some((text, ends)) = lit.take() {
                pieces.push(Piece::Lit { text, ends });
            }
        };
        for (i, t) in keys.iter().chain(args).enumerate() {
            if i < keys.len() && !raw.contains(&i) {
                flush(&mut lit, &mut pieces);
                pieces.push(Piece::Prefix);
            }
            for p in &t.parts {
                match p {
                    Part::Lit(s) => lit.get_or_insert_with(Default::default).0.push_str(s),
                    other => {
                        flush(&mut lit, &mut pieces);
                        pieces.push(match other {
                            Part::Subject => Piece::Subject,
                            Part::Int(v) => Piece::Int(*v),
                            Part::Expr(e) => Piece::Expr(e.clone(), i),
                            Part::Lit(_) => unreachable!("matched above"),
                        });
                    }
                }
            }
            let (text, ends) = lit.get_or_insert_with(Default::default);
            ends.push(text.len());
        }
        flush(&mut lit, &mut pieces);
        Layout { pieces, keys: keys.len(), strings: keys.len() + args.len() }
    }

    /// How many of the strings are keys.
    pub fn keys(&self) -> usize {
        self.keys
    }

    /// Renders one request into `buf`, and into `ends` the offset in `buf` where each string ends
    /// (keys first). An expression that fails gives its template's index (keys, then args).
    #[inline]
    pub fn render(
        &self,
        req: &Request<'_>,
        replies: &[Option<Reply>],
        prefix: &str,
        buf: &mut String,
        ends: &mut Vec<usize>,
    ) -> Result<(), (usize, String)> {
        buf.clear();
        ends.clear();
        for p in &self.pieces {
            match p {
                Piece::Lit { text, ends: at } => {
                    let base = buf.len();
                    ends.extend(at.iter().map(|e| base + e));
                    buf.push_str(text);
                }
                Piece::Prefix => buf.push_str(prefix),
                Piece::Subject => buf.push_str(req.subject),
                Piece::Int(v) => {
                    let x = match v {
                        Var::NowMs => req.now_ms,
                        Var::Cost => req.cost.min(i64::MAX as u64) as i64,
                        v => req.other_int_var(*v),
                    };
                    buf.push_str(itoa::Buffer::new().format(x))
                }
                Piece::Expr(e, i) => e.eval(req, replies).and_then(|v| v.write_to(buf)).map_err(|r| (*i, r))?,
            }
        }
        debug_assert_eq!(ends.len(), self.strings);
        Ok(())
    }
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
    use super::*;

    fn scope_eval(src: &str, replies: &[Option<Reply>]) -> Result<String, String> {
        let consts = vec![("limit".to_string(), Const::Int(10)), ("window_ms".to_string(), Const::Int(1000))];
        let calls = vec!["hits".to_string()];
        let lets = vec![("used".to_string(), "limit - hits[1]".to_string()), ("loop".to_string(), "loop + 1".to_string())];
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
    fn a_layout_renders_what_its_templates_render() {
        let consts = vec![("limit".to_string(), Const::Int(10)), ("window_ms".to_string(), Const::Int(1000))];
        let calls = vec!["hits".to_string()];
        let scope = Scope { consts: &consts, calls: &calls, lets: &[], depth: 0 };
        let t = |src: &str| Template::compile(src, &scope).unwrap();
        let req = Request { subject: "u1", now_ms: 1_704_067_200_250, cost: 3, window_ms: 1000, seq: 7 };
        let replies = vec![Some(Reply::Array(vec![Reply::Int(4), Reply::bulk("x")]))];
        for (keys, args) in [
            (vec![t("rate:{${subject}}")], vec![t("${limit}"), t("${window_ms}"), t("${now_ms}"), t("${cost}")]),
            (
                vec![t("a:${window_index}"), t("${subject}"), t("")],
                vec![t("${prev_window_index}"), t("${now_s}"), t("x${hits[2]}y"), t("${seq}")],
            ),
            (vec![], vec![t("${limit}"), t("${limit * 2}")]),
            (vec![t("k")], vec![]),
        ] {
            for prefix in ["", "ll:9:"] {
                let mut want = Vec::new();
                for (tm, pre) in keys.iter().map(|k| (k, prefix)).chain(args.iter().map(|a| (a, ""))) {
                    let mut o = pre.to_string();
                    tm.render(&req, &replies, &mut o).unwrap();
                    want.push(o);
                }
                let layout = Layout::new(&keys, &args);
                let (mut buf, mut ends) = (String::from("stale"), vec![99]);
                layout.render(&req, &replies, prefix, &mut buf, &mut ends).unwrap();
                let mut start = 0;
                let got: Vec<String> = ends
                    .iter()
                    .map(|&e| {
                        let s = buf[start..e].to_string();
                        start = e;
                        s
                    })
                    .collect();
                assert_eq!(got, want, "{prefix:?}");
                assert_eq!(layout.keys(), keys.len());
            }
        }
        // An expression that fails names its template: keys first, then args.
        let layout = Layout::new(&[t("k")], &[t("${limit}"), t("${hits[5]}")]);
        let err = layout.render(&req, &replies, "", &mut String::new(), &mut Vec::new()).unwrap_err();
        assert_eq!(err.0, 2);
        assert!(err.1.contains("past the end"), "{}", err.1);
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

    #[test]
    fn templates_fold_constants_and_write_python_floats() {
        let consts = vec![("limit".to_string(), Const::Int(10)), ("prefix".to_string(), Const::Str("rl".into()))];
        let scope = Scope { consts: &consts, calls: &[], lets: &[], depth: 0 };
        let t = Template::compile("${prefix}:{${subject}}:${window_index}", &scope).unwrap();
        let req = Request { subject: "u1", now_ms: 1_704_067_200_250, cost: 1, window_ms: 1000, seq: 0 };
        let mut out = String::new();
        t.render(&req, &[], &mut out).unwrap();
        assert_eq!(out, "rl:{u1}:1704067200");
        out.clear();
        assert_eq!(Template::compile("${limit * 2}", &scope).unwrap().constant(), Some("20"));
        let t = Template::compile("${now_s}", &scope).unwrap();
        t.render(&req, &[], &mut out).unwrap();
        assert_eq!(out, "1704067200.25");
        out.clear();
        t.render(&Request { now_ms: 1_704_067_200_000, ..req }, &[], &mut out).unwrap();
        assert_eq!(out, "1704067200.0");
        assert_eq!(Template::compile("a$$b", &scope).unwrap().constant(), Some("a$b"));
        assert!(Template::compile("${nope}", &scope).unwrap_err().contains("unknown variable `nope`"));
        assert!(Template::compile("$x", &scope).is_err());
        assert_eq!(format_num(1e16), "1e+16");
        assert_eq!(format_num(1.5e-5), "1.5e-05");
        assert_eq!(format_num(0.1), "0.1");
    }
}
