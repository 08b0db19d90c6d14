//! Lua 5.1 scripting as Redis 7.0 does it.
use std::cell::RefCell;
use std::rc::Rc;

use super::cmd::CommandSpec;
use super::core::Core;
use super::reply::Reply;

/// Default instruction budget for one script call.
pub const DEFAULT_BUDGET: u64 = 100_000_000;

pub mod libs;

pub struct Scripting {
    #[allow(dead_code)]
    core: Rc<RefCell<Core>>,
    budget: u64,
}

impl Scripting {
    pub fn new(core: Rc<RefCell<Core>>) -> mlua::Result<Self> {
        Ok(Scripting { core, budget: DEFAULT_BUDGET })
    }
    pub fn set_budget(&mut self, b: u64) {
        self.budget = b;
    }
    pub fn command(&mut self, _spec: &CommandSpec, _args: &[&[u8]]) -> Reply {
        Reply::err("ERR scripting is being built")
    }
    pub fn eval(&mut self, _body: &[u8], _keys: &[&[u8]], _argv: &[&[u8]], _ro: bool) -> Reply {
        Reply::err("ERR scripting is being built")
    }
    pub fn evalsha(&mut self, _sha: &[u8], _keys: &[&[u8]], _argv: &[&[u8]], _ro: bool) -> Reply {
        Reply::err("ERR scripting is being built")
    }
    pub fn load(&mut self, _body: &[u8]) -> Result<String, Reply> {
        Err(Reply::err("ERR scripting is being built"))
    }
}
