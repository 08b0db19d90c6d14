//! From text to [`Expr`]: the scope of names, the tokenizer, the recursive-descent parser, and the
//! folding of constant sub-expressions.
use super::types::{BinOp, Const, Expr, Func, Request, Value, Var};

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
                return Some(Err(format!(
                    "`{name}`: [let] names use one another in a cycle (or deeper than {MAX_LET_DEPTH})"
                )));
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
    const OPS: [&str; 19] =
        ["//", "==", "~=", "!=", "<=", ">=", "+", "-", "*", "/", "%", "<", ">", "(", ")", "[", "]", ",", "="];
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
                        _ => {
                            return Err(format!(
                                "unknown function `{n}`; functions: floor, ceil, round, min, max, abs, num"
                            ))
                        }
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
