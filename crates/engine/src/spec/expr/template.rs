//! Templates (`rl:{${subject}}`) and a call's KEYS and ARGV laid out as one run of pieces for the
//! hot path.
use limitlab_emulator::Reply;

use super::parse::{compile, Scope};
use super::types::{Expr, Request, Value, Var};

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
                    Expr::Const(c) => {
                        Value::write_to(&c.value(), &mut lit).map_err(|e| format!("in `${{{}}}`: {e}", &body[..end]))?
                    }
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

#[cfg(test)]
mod tests {
    use super::super::eval::format_num;
    use super::super::types::Const;
    use super::*;

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
