//! The expression language's types: values, named constants, the per-request variables and the
//! request they are read from, and the compiled expression tree.
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
    pub(super) fn value(&self) -> Value<'_> {
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
    pub(super) fn var(&self, v: Var) -> Value<'_> {
        match v {
            Var::Subject => Value::Str(Cow::Borrowed(self.subject.as_bytes())),
            Var::NowS => Value::Num(self.now_ms as f64 / 1000.0),
            v => Value::Int(self.int_var(v)),
        }
    }

    /// [`Request::int_var`] out of line, for the variables a template uses less often than
    /// `now_ms` and `cost` (their divisions then stay out of the hot loop).
    #[inline(never)]
    pub(super) fn other_int_var(&self, v: Var) -> i64 {
        self.int_var(v)
    }

    /// The value of an integer variable (every one but `subject` and `now_s`, which give 0 here).
    #[inline]
    pub(super) fn int_var(&self, v: Var) -> i64 {
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
