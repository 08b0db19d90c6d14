//! The generator's state for one case, the key families it draws from, and the builder of one
//! [`Command`].
use rand::RngCore;

use crate::verify::model::{Fx, Model};
use crate::verify::{Arg, Command};

/// What a key leans towards holding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Family {
    String,
    Hash,
    Zset,
    List,
    Set,
    /// A limiter's subject key (`rate:{u1}`), for the shipped scripts.
    Limiter,
    /// A HyperLogLog (a string in Redis's HLL representation).
    Hll,
    Stream,
}

pub(super) const FAMILIES: [Family; 7] =
    [Family::String, Family::Hash, Family::Zset, Family::List, Family::Set, Family::Hll, Family::Stream];

/// Builds one [`Command`].
pub(super) struct B {
    pub(super) args: Vec<Arg>,
    pub(super) fx: Vec<Fx>,
}

impl B {
    pub(super) fn new(name: &str) -> B {
        B { args: vec![Arg::Lit(name.as_bytes().to_vec())], fx: Vec::new() }
    }
    pub(super) fn lit(mut self, s: impl AsRef<[u8]>) -> B {
        self.args.push(Arg::Lit(s.as_ref().to_vec()));
        self
    }
    pub(super) fn key(mut self, k: &str) -> B {
        self.args.push(Arg::Key(k.to_string()));
        self
    }
    pub(super) fn fx(mut self, f: Fx) -> B {
        self.fx.push(f);
        self
    }
    pub(super) fn build(self) -> Command {
        Command { args: self.args, fx: self.fx }
    }
}

/// The generator's state for one case.
pub(super) struct Gen<'a, R: RngCore> {
    pub(super) rng: &'a mut R,
    pub(super) private: bool,
    pub(super) keys: Vec<(String, Family)>,
    pub(super) model: Model,
    /// Digests loaded in this case, for EVALSHA.
    pub(super) loaded: Vec<String>,
    /// The limiter scripts' `now`: moves mostly forward, sometimes back (clock skew).
    pub(super) now: u64,
    /// A MULTI was sent and no EXEC or DISCARD since (the next commands are queued).
    pub(super) in_multi: bool,
    /// The last key WATCHed (with its family), until the next EXEC or DISCARD: commands pick it more
    /// often, so that watched keys do get touched (or left alone) before EXEC.
    pub(super) watched: Option<(String, Family)>,
    /// The next command is one of the watched key's family, on the watched key.
    pub(super) touch_next: bool,
    /// [`Gen::key`] answers the watched key (for the command after a WATCH).
    pub(super) force_watched: bool,
}
