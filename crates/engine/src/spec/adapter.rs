//! Client-side adapters: a small Lua file for wrappers the declarative form cannot say. It runs in
//! its own plain Lua 5.1 state (tables, strings and math only: no I/O, no `os`, no `require`),
//! outside the Redis sandbox, on the thread that drives the backend.
//!
//! The file defines `request(req)`. `req` carries the request's variables (`req.subject`,
//! `req.now_ms`, `req.now_s`, `req.cost`, `req.limit`, `req.window_ms`, `req.burst`, the `[vars]`
//! constants, ...). Two functions reach the backend:
//! - `eval(script, keys, args)`: runs the spec's script named `script` with EVALSHA;
//! - `command(name, keys, args)`: runs a Redis command whose arguments are the keys then the args.
//!
//! Keys get the run's prefix added; numbers are written as Lua's `tostring` writes them. Replies come
//! back as Lua values (integers and doubles as numbers, strings as strings, nil as `nil`, a nil
//! inside an array as `false`, arrays as tables); an error reply stops the run with its text.
//! `request` returns `{allowed = true|false|1|0, remaining = n, retry_after_ms = n, reset_ms = n}`,
//! every field but `allowed` optional.
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value as LuaValue};

use super::call_record::{describe_request, script_error, CallRecord};
use super::expr::{Const, Request};
use super::{Reports, Spec};
use crate::backend::Backend;
use crate::shipped::{Decision, Params};
use limitlab_emulator::Reply;
use limitlab_emulator::{Error, Result};

/// What an adapter's functions are run under: the spec, its policy and the fields it reports
/// (a limiter's, handed down when it runs a request).
pub struct Policy<'a> {
    pub spec: &'a Spec,
    pub params: Params,
    pub reports: Reports,
}

/// One adapter's Lua state and its `request` function.
pub struct AdapterState {
    lua: Lua,
    path: PathBuf,
    /// The metatable every `req` gets, whose `__index` holds the policy's and the spec's constants,
    /// made once for the policy it was made for (a request sets only its own variables).
    consts: RefCell<Option<(Params, Table)>>,
    /// Loop iterations and calls left to the function running now (see [`OVER_BUDGET`]).
    budget_left: Rc<Cell<i64>>,
}

/// The words of the error an adapter gets when one of its functions runs past the script budget
/// (`--script-budget`, the same count of loop iterations and calls every script runs under): an
/// adapter that loops forever ends with this error instead of hanging the command.
pub const OVER_BUDGET: &str = "adapter stopped: it ran past its budget of loop iterations and calls";

/// How often (in loop iterations and calls) the adapter's budget hook runs.
const ADAPTER_HOOK_EVERY: u32 = 10_000;

/// Defines the deep copy that [`SAVE`] and [`RESTORE`] use (tables within copied too, a table
/// met twice copied once), run once when the adapter loads.
const DEEP_COPY: &str = r#"
function __limitlab_deepcopy(v)
  local seen = {}
  local function copy(x)
    if type(x) ~= 'table' then return x end
    if seen[x] then return seen[x] end
    local c = {}
    seen[x] = c
    for k, y in pairs(x) do c[copy(k)] = copy(y) end
    return setmetatable(c, getmetatable(x))
  end
  return copy(v)
end
"#;

/// Keeps a deep copy of `client`.
const SAVE: &str = "__limitlab_saved = __limitlab_deepcopy(client)";

/// Puts a copy of what [`SAVE`] kept back as `client` (a copy, so that the same saved state can
/// be put back after each of several "what if"s).
const RESTORE: &str = "client = __limitlab_deepcopy(__limitlab_saved)";

fn lua_err(path: &Path, e: mlua::Error) -> Error {
    Error::Lua(format!("adapter {}: {e}", path.display()))
}

impl AdapterState {
    /// Loads the adapter; a syntax error or a missing `request` names the file.
    pub fn new(path: &Path, source: &str) -> Result<AdapterState> {
        let lua = Lua::new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH, LuaOptions::default())
            .map_err(|e| lua_err(path, e))?;
        let chunk_name = format!("@{}", path.display());
        let budget_left = Rc::new(Cell::new(limitlab_emulator::lua::default_budget().min(i64::MAX as u64) as i64));
        let left = budget_left.clone();
        lua.set_hook(mlua::HookTriggers::new().every_nth_instruction(ADAPTER_HOOK_EVERY), move |_, _| {
            let l = left.get() - ADAPTER_HOOK_EVERY as i64;
            left.set(l);
            if l <= 0 {
                Err(mlua::Error::runtime(format!(
                    "{OVER_BUDGET} ({}; --script-budget sets it)",
                    limitlab_emulator::lua::default_budget()
                )))
            } else {
                Ok(mlua::VmState::Continue)
            }
        })
        .map_err(|e| lua_err(path, e))?;
        lua.load(DEEP_COPY).set_name("=limitlab").exec().map_err(|e| lua_err(path, e))?;
        lua.load(source).set_name(chunk_name).exec().map_err(|e| lua_err(path, e))?;
        let f: LuaValue = lua.globals().get("request").map_err(|e| lua_err(path, e))?;
        if !matches!(f, LuaValue::Function(_)) {
            return Err(Error::Invalid {
                context: path.display().to_string(),
                field: "request".into(),
                reason: "an adapter defines `function request(req)`".into(),
            });
        }
        Ok(AdapterState { lua, path: path.to_path_buf(), consts: RefCell::new(None), budget_left })
    }

    /// Whether the adapter defines a global function `name` (`refund`, `reset`, `clear`).
    pub fn defines(&self, name: &str) -> bool {
        matches!(self.lua.globals().get::<LuaValue>(name), Ok(LuaValue::Function(_)))
    }

    /// Keeps a deep copy of the global `client` table (the adapter's client-side state), for
    /// [`AdapterState::restore`] after a "what if".
    pub fn save(&self) -> Result<()> {
        self.budget_left.set(limitlab_emulator::lua::default_budget().min(i64::MAX as u64) as i64);
        self.lua.load(SAVE).set_name("=limitlab").exec().map_err(|e| lua_err(&self.path, e))
    }

    /// Puts back the `client` table kept by [`AdapterState::save`].
    pub fn restore(&self) -> Result<()> {
        self.budget_left.set(limitlab_emulator::lua::default_budget().min(i64::MAX as u64) as i64);
        self.lua.load(RESTORE).set_name("=limitlab").exec().map_err(|e| lua_err(&self.path, e))
    }

    /// Runs one lifecycle operation through the adapter's function `name(req)` (its return value
    /// is not read).
    pub(crate) fn op(
        &self,
        name: &str,
        ctx: &Policy<'_>,
        backend: &mut dyn Backend,
        req: &Request<'_>,
        record: &mut Option<Vec<CallRecord>>,
    ) -> Result<()> {
        self.invoke(name, ctx, backend, req, record).map(|_| ())
    }

    /// Runs one request through `request(req)`.
    pub(crate) fn request(
        &self,
        ctx: &Policy<'_>,
        backend: &mut dyn Backend,
        req: &Request<'_>,
        record: &mut Option<Vec<CallRecord>>,
    ) -> Result<Decision> {
        let path = &self.path;
        let describe = || describe_request(req.subject, req.now_ms, req.cost);
        let out = match self.invoke("request", ctx, backend, req, record)? {
            LuaValue::Table(t) => t,
            other => {
                return Err(Error::Lua(format!(
                    "adapter {}: request(req) must return a table with `allowed`, got a {}\n  during the {}",
                    path.display(),
                    other.type_name(),
                    describe()
                )))
            }
        };
        let wrap = |e: mlua::Error| Error::Lua(format!("adapter {}: {e}\n  during the {}", path.display(), describe()));
        // A returned field as a number (`None`: nil, not returned), rounded `up` or down.
        let field = |k: &str, up: bool| -> Result<Option<i64>> {
            match out.get::<LuaValue>(k).map_err(wrap)? {
                LuaValue::Nil => Ok(None),
                LuaValue::Integer(i) => Ok(Some(i)),
                LuaValue::Number(x) if x.is_finite() => Ok(Some(if up { x.ceil() } else { x.floor() } as i64)),
                LuaValue::String(s) => match s.to_str().ok().and_then(|x| x.trim().parse::<f64>().ok()) {
                    Some(x) if x.is_finite() => Ok(Some(if up { x.ceil() } else { x.floor() } as i64)),
                    _ => Err(bad(path, k, "a number", &describe())),
                },
                _ => Err(bad(path, k, "a number", &describe())),
            }
        };
        let num = |k: &str, up: bool| -> Result<i64> { Ok(field(k, up)?.unwrap_or(Decision::NOT_REPORTED)) };
        let allowed = match out.get::<LuaValue>("allowed").map_err(wrap)? {
            LuaValue::Boolean(b) => b,
            LuaValue::Integer(i) => i != 0,
            LuaValue::Number(x) => x != 0.0,
            _ => return Err(bad(path, "allowed", "true, false, 1 or 0", &describe())),
        };
        // A refusal told a negative wait: the caller would retry at once (nil says "never fits").
        let retry_after_ms = match field("retry_after_ms", true)? {
            Some(x) if !allowed && x < 0 => Decision::TOLD_NEGATIVE,
            Some(x) => x,
            None => Decision::NOT_REPORTED,
        };
        Ok(Decision {
            allowed,
            remaining: num("remaining", false)?,
            retry_after_ms,
            reset_after_ms: num("reset_ms", true)?,
            granted: if ctx.reports.granted { num("granted", false)? } else { Decision::NOT_REPORTED },
        })
    }

    /// Calls the adapter's global function `func` with the request's table, `eval` and `command`
    /// reaching `backend` meanwhile.
    fn invoke(
        &self,
        func: &str,
        ctx: &Policy<'_>,
        backend: &mut dyn Backend,
        req: &Request<'_>,
        record: &mut Option<Vec<CallRecord>>,
    ) -> Result<LuaValue> {
        let spec = ctx.spec;
        let lua = &self.lua;
        let path = &self.path;
        // Each function run gets the whole budget.
        self.budget_left.set(limitlab_emulator::lua::default_budget().min(i64::MAX as u64) as i64);
        let describe = || describe_request(req.subject, req.now_ms, req.cost);
        let wrap = |e: mlua::Error| -> Error {
            // A script error raised through eval() comes back as our own Error inside mlua's.
            if let mlua::Error::CallbackError { cause, .. } = &e {
                if let mlua::Error::ExternalError(inner) = cause.as_ref() {
                    if let Some(err) = inner.downcast_ref::<ErrBox>() {
                        return err
                            .0
                            .lock()
                            .map(|mut g| g.take())
                            .ok()
                            .flatten()
                            .unwrap_or_else(|| lua_err(path, e.clone()));
                    }
                }
            }
            Error::Lua(format!("adapter {}: {e}\n  during the {}", path.display(), describe()))
        };
        let t = self.req_table(ctx, req, &wrap)?;
        let prefix = backend.key_prefix().to_string();
        let backend = RefCell::new(backend);
        let record = RefCell::new(record);
        let out: LuaValue = lua
            .scope(|scope| {
                let run = |kind: &'static str| {
                    let backend = &backend;
                    let record = &record;
                    let prefix = &prefix;
                    scope.create_function_mut(
                        move |lua, (name, keys, args): (mlua::LuaString, Option<Table>, Option<Table>)| {
                            let name_s = name.to_str()?.to_string();
                            let kv = strings_of(lua, kind, keys.as_ref(), prefix)?;
                            let av = strings_of(lua, kind, args.as_ref(), "")?;
                            let kb: Vec<&[u8]> = kv.iter().map(|s| s.as_bytes()).collect();
                            let ab: Vec<&[u8]> = av.iter().map(|s| s.as_bytes()).collect();
                            let mut b = backend.borrow_mut();
                            let reply = if kind == "eval" {
                                let Some(sc) = spec.scripts.iter().find(|s| s.name == name_s) else {
                                    let known: Vec<&str> = spec.scripts.iter().map(|s| s.name.as_str()).collect();
                                    return Err(mlua::Error::runtime(format!(
                                        "eval: no script named `{name_s}` in the spec's [scripts] (known: {})",
                                        known.join(", ")
                                    )));
                                };
                                let r = b.eval(&sc.script, &kb, &ab).map_err(external)?;
                                if let Reply::Error(e) = &r {
                                    return Err(external(script_error(&sc.path, &sc.script.body, e, describe())));
                                }
                                r
                            } else {
                                let mut argv: Vec<&[u8]> = vec![name_s.as_bytes()];
                                argv.extend(kb.iter().copied());
                                argv.extend(ab.iter().copied());
                                let r = b.command(&argv).map_err(external)?;
                                if let Reply::Error(e) = &r {
                                    return Err(external(Error::Script {
                                        reply: e.clone(),
                                        at: format!("{} (command {name_s})", path.display()),
                                        request: describe(),
                                    }));
                                }
                                r
                            };
                            if let Some(rec) = record.borrow_mut().as_mut() {
                                rec.push(CallRecord {
                                    name: name_s.clone(),
                                    target: name_s.clone(),
                                    keys: kv.clone(),
                                    args: av.clone(),
                                    reply: reply.clone(),
                                });
                            }
                            to_lua(lua, &reply, true)
                        },
                    )
                };
                lua.globals().set("eval", run("eval")?)?;
                lua.globals().set("command", run("command")?)?;
                let f: Function = lua.globals().get(func)?;
                let r: LuaValue = f.call(t.clone())?;
                lua.globals().set("eval", LuaValue::Nil)?;
                lua.globals().set("command", LuaValue::Nil)?;
                Ok(r)
            })
            .map_err(wrap)?;
        Ok(out)
    }

    /// The request's table for the adapter: its own variables (`subject`, the times, `cost`, the
    /// window's index, `seq`), and the constants through a metatable shared by every request of
    /// the same policy (`req.limit` reads them).
    fn req_table(&self, ctx: &Policy<'_>, req: &Request<'_>, wrap: &dyn Fn(mlua::Error) -> Error) -> Result<Table> {
        let lua = &self.lua;
        let t = lua.create_table().map_err(wrap)?;
        let set = |k: &str, v: LuaValue| t.set(k, v).map_err(wrap);
        set("subject", LuaValue::String(lua.create_string(req.subject).map_err(wrap)?))?;
        set("now_ms", LuaValue::Number(req.now_ms as f64))?;
        set("now_us", LuaValue::Number(req.now_ms as f64 * 1000.0))?;
        set("now_s", LuaValue::Number(req.now_ms as f64 / 1000.0))?;
        set("now_sec", LuaValue::Number(req.now_ms.div_euclid(1000) as f64))?;
        set("cost", LuaValue::Number(req.cost as f64))?;
        let w = req.window_ms.max(1);
        set("window_index", LuaValue::Number(req.now_ms.div_euclid(w) as f64))?;
        set("prev_window_index", LuaValue::Number((req.now_ms.div_euclid(w) - 1) as f64))?;
        set("window_start_ms", LuaValue::Number((req.now_ms.div_euclid(w) * w) as f64))?;
        set("seq", LuaValue::Number(req.seq as f64))?;
        let params = ctx.params;
        let meta = {
            let mut cached = self.consts.borrow_mut();
            match cached.as_ref() {
                Some((p, m)) if *p == params => m.clone(),
                _ => {
                    let values = lua.create_table().map_err(wrap)?;
                    for (name, c) in ctx.spec.consts(&params) {
                        let v = match c {
                            Const::Int(i) => LuaValue::Number(i as f64),
                            Const::Num(x) => LuaValue::Number(x),
                            Const::Str(s) => LuaValue::String(lua.create_string(&s).map_err(wrap)?),
                            Const::Bool(b) => LuaValue::Boolean(b),
                        };
                        values.set(name, v).map_err(wrap)?;
                    }
                    let m = lua.create_table().map_err(wrap)?;
                    m.set("__index", values).map_err(wrap)?;
                    *cached = Some((params, m.clone()));
                    m
                }
            }
        };
        t.set_metatable(Some(meta)).map_err(wrap)?;
        Ok(t)
    }
}

fn bad(path: &Path, field: &str, what: &str, request: &str) -> Error {
    Error::Invalid {
        context: path.display().to_string(),
        field: format!("request(req).{field}"),
        reason: format!("must be {what}, during the {request}"),
    }
}

/// Carries a limitlab [`Error`] through mlua's error type (taken out once, on the way back).
#[derive(Debug)]
struct ErrBox(std::sync::Mutex<Option<Error>>);

impl std::fmt::Display for ErrBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.lock().ok().as_ref().and_then(|g| g.as_ref().map(|e| e.to_string())) {
            Some(s) => f.write_str(&s),
            None => f.write_str("error"),
        }
    }
}

impl std::error::Error for ErrBox {}

fn external(e: Error) -> mlua::Error {
    mlua::Error::external(ErrBox(std::sync::Mutex::new(Some(e))))
}

/// A reply as the adapter sees it.
fn to_lua(lua: &Lua, r: &Reply, top: bool) -> mlua::Result<LuaValue> {
    Ok(match r {
        Reply::Int(i) => LuaValue::Number(*i as f64),
        Reply::Double(x) | Reply::HumanDouble(x) => LuaValue::Number(*x),
        Reply::Bulk(b) | Reply::Verbatim(b) => LuaValue::String(lua.create_string(b)?),
        Reply::Status(s) | Reply::Error(s) => LuaValue::String(lua.create_string(s)?),
        Reply::Nil | Reply::NilArray => {
            if top {
                LuaValue::Nil
            } else {
                LuaValue::Boolean(false)
            }
        }
        Reply::Bool(b) => LuaValue::Boolean(*b),
        Reply::Array(v) | Reply::Set(v) => {
            let t = lua.create_table_with_capacity(v.len(), 0)?;
            for (i, x) in v.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, x, false)?)?;
            }
            LuaValue::Table(t)
        }
        Reply::Map(kv) => {
            let t = lua.create_table()?;
            for (k, v) in kv {
                t.raw_set(to_lua(lua, k, false)?, to_lua(lua, v, false)?)?;
            }
            LuaValue::Table(t)
        }
    })
}

/// The keys (or args) an adapter passed to `eval` or `command` (`kind`), as the strings sent, each
/// after `prefix`: strings as they are, numbers as Lua's `tostring` writes them.
fn strings_of(lua: &Lua, kind: &str, list: Option<&Table>, prefix: &str) -> mlua::Result<Vec<String>> {
    let mut out = Vec::new();
    let Some(tb) = list else { return Ok(out) };
    for v in tb.clone().sequence_values::<LuaValue>() {
        let v = v?;
        let s = match &v {
            LuaValue::String(s) => s.to_str()?.to_string(),
            LuaValue::Integer(i) => i.to_string(),
            LuaValue::Number(_) => lua
                .coerce_string(v.clone())?
                .map(|s| s.to_str().map(|x| x.to_string()))
                .transpose()?
                .unwrap_or_default(),
            other => {
                return Err(mlua::Error::runtime(format!(
                    "{kind}: keys and args are strings or numbers, got a {}",
                    other.type_name()
                )))
            }
        };
        out.push(format!("{prefix}{s}"));
    }
    Ok(out)
}
