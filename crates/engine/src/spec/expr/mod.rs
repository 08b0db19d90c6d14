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
mod eval;
mod parse;
mod template;
mod types;

pub use eval::{format_num, parse_number};
pub use parse::{compile, Scope, MAX_LET_DEPTH};
pub use template::{Layout, Template};
pub use types::{BinOp, Const, Expr, Func, Request, Value, Var};
