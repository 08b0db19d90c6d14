//! Redis 7.0's access control lists: users (passwords, on/off), their selectors (the commands,
//! keys and Pub/Sub channels each may use), the check every command goes through, and the ACL log.
//!
//! The model follows Redis 7.0.15's `acl.c`: a selector holds one bit per command and subcommand
//! (plus a reserved bit that `+@all` sets and only `-@all` clears: "may run commands added later"),
//! first arguments allowed for a command otherwise denied (`+select|0`), key patterns with read
//! and write permissions, and channel patterns. A user has a root selector and any number of
//! further ones (`(...)`); a command is allowed when one selector allows it. The rules are
//! described back (ACL LIST, GETUSER) the way Redis rebuilds them from the bits: `+@all` or
//! `-@all`, the categories that fit best, then single commands. Redis emits those single commands
//! in its command dictionary's order, which depends on a hash seed drawn at start-up (so it differs
//! between two runs of Redis); here they come in name order.
use std::collections::BTreeMap;
use std::sync::OnceLock;

use rustc_hash::FxHashMap;
use sha2::Digest as _;

use crate::keyspace::glob_match;
use crate::reply::Reply;

/// Redis 7.0's ACL categories, in Redis's order (ACL CAT).
pub const CATEGORIES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// A category's bit, by name (case-insensitive).
pub fn category_bit(name: &[u8]) -> Option<u32> {
    CATEGORIES.iter().position(|c| name.eq_ignore_ascii_case(c.as_bytes())).map(|i| 1 << i)
}

/// One command or subcommand that ACL rules can name.
pub struct AclCommand {
    /// `get`, or `config|get` for a subcommand.
    pub full: String,
    /// Its categories, as bits of [`CATEGORIES`].
    pub cats: u32,
    pub parent: Option<usize>,
    pub subs: Vec<usize>,
    /// `no_auth` (AUTH, HELLO, QUIT, RESET): never refused.
    pub no_auth: bool,
}

/// Every command the rules may name, with ids (indexes): Redis 7.0.15's table and limitlab's own.
pub struct Universe {
    pub cmds: Vec<AclCommand>,
    /// The top-level commands, in name order.
    pub tops: Vec<usize>,
    by_name: FxHashMap<String, usize>,
}

impl Universe {
    /// A command by its full name (`get`, `config|get`), case-insensitively.
    pub fn find(&self, name: &[u8]) -> Option<usize> {
        let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
        self.by_name.get(&lower).copied()
    }

    /// The command a call runs: the subcommand of a container when one is given and known, else
    /// the command; None for an unknown command.
    pub fn of_call(&self, args: &[&[u8]]) -> Option<usize> {
        let top = self.find(args[0])?;
        if self.cmds[top].subs.is_empty() || args.len() < 2 {
            return Some(top);
        }
        let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
        self.by_name.get(&format!("{}|{sub}", self.cmds[top].full)).copied().or(Some(top))
    }
}

fn categories_of(info: &Reply) -> (u32, bool) {
    let Reply::Array(f) = info else { return (0, false) };
    let set = |i: usize| match f.get(i) {
        Some(Reply::Set(v)) | Some(Reply::Array(v)) => v.clone(),
        _ => Vec::new(),
    };
    let mut cats = 0;
    for c in set(6) {
        if let Reply::Status(s) = c {
            if let Some(b) = s.strip_prefix('@').and_then(|n| category_bit(n.as_bytes())) {
                cats |= b;
            }
        }
    }
    let no_auth = set(2).iter().any(|x| matches!(x, Reply::Status(s) if s == "no_auth"));
    (cats, no_auth)
}

/// The command universe (built once).
pub fn universe() -> &'static Universe {
    static U: OnceLock<Universe> = OnceLock::new();
    U.get_or_init(|| {
        let table = crate::cmd::command::redis_table();
        type Entry = (String, Reply, Vec<(String, Reply)>);
        let mut entries: Vec<Entry> = table
            .values()
            .map(|c| {
                let mut subs: Vec<(String, Reply)> =
                    c.subcommands.iter().map(|s| (s.name.clone(), s.info.clone())).collect();
                subs.sort_by(|a, b| a.0.cmp(&b.0));
                (c.name.clone(), c.info.clone(), subs)
            })
            .collect();
        for (name, info) in crate::cmd::command::limitlab_entries() {
            entries.push((name, info, Vec::new()));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut u = Universe { cmds: Vec::new(), tops: Vec::new(), by_name: FxHashMap::default() };
        for (name, info, subs) in entries {
            let (cats, no_auth) = categories_of(&info);
            let top = u.cmds.len();
            u.tops.push(top);
            u.by_name.insert(name.clone(), top);
            u.cmds.push(AclCommand { full: name, cats, parent: None, subs: Vec::new(), no_auth });
            for (sname, sinfo) in subs {
                let (cats, no_auth) = categories_of(&sinfo);
                let id = u.cmds.len();
                u.by_name.insert(sname.clone(), id);
                u.cmds.push(AclCommand { full: sname, cats, parent: Some(top), subs: Vec::new(), no_auth });
                u.cmds[top].subs.push(id);
            }
        }
        u
    })
}

/// Why a modifier of ACL SETUSER was refused (Redis's `ACLSetUserStringError`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RuleError {
    Unknown,
    Syntax,
    KeysAfterAll,
    ChannelsAfterAll,
    NoSuchPassword,
    BadHash,
    FirstArgOfSub,
}

impl RuleError {
    pub fn text(self) -> &'static str {
        match self {
            RuleError::Unknown => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeysAfterAll => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            RuleError::ChannelsAfterAll => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
            }
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
            }
            RuleError::FirstArgOfSub => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// A key pattern with the access it grants.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyPattern {
    pub pattern: Vec<u8>,
    pub read: bool,
    pub write: bool,
}

impl KeyPattern {
    fn describe(&self, out: &mut Vec<u8>) {
        match (self.read, self.write) {
            (true, false) => out.extend_from_slice(b"%R~"),
            (false, true) => out.extend_from_slice(b"%W~"),
            _ => out.push(b'~'),
        }
        out.extend_from_slice(&self.pattern);
    }
}

/// One selector: the commands, keys and channels it allows.
#[derive(Clone, Debug)]
pub struct Selector {
    bits: Vec<bool>,
    /// The reserved bit: set by `+@all`/`allcommands`, cleared only by `-@all`/`nocommands`.
    future: bool,
    /// Every command allowed, now and later (Redis's `SELECTOR_FLAG_ALLCOMMANDS`): cleared by
    /// any rule that denies something.
    all_commands: bool,
    firstargs: BTreeMap<usize, Vec<String>>,
    all_keys: bool,
    patterns: Vec<KeyPattern>,
    all_channels: bool,
    channels: Vec<Vec<u8>>,
}

impl Selector {
    fn new(all_channels: bool) -> Selector {
        Selector {
            bits: vec![false; universe().cmds.len()],
            future: false,
            all_commands: false,
            firstargs: BTreeMap::new(),
            all_keys: false,
            patterns: Vec::new(),
            all_channels,
            channels: Vec::new(),
        }
    }

    fn set_bit(&mut self, id: usize, v: bool) {
        self.bits[id] = v;
        if !v {
            self.all_commands = false;
        }
    }

    /// Allows or denies a command (a container with all its subcommands); its first arguments go.
    fn change_perm(&mut self, id: usize, v: bool) {
        self.set_bit(id, v);
        self.firstargs.remove(&id);
        for &s in &universe().cmds[id].subs {
            self.set_bit(s, v);
        }
    }

    fn set_category(&mut self, bit: u32, v: bool) {
        let u = universe();
        for &top in &u.tops {
            if u.cmds[top].cats & bit != 0 {
                self.change_perm(top, v);
            }
            for &s in &u.cmds[top].subs {
                if u.cmds[s].cats & bit != 0 {
                    self.change_perm(s, v);
                }
            }
        }
    }

    fn all(&mut self, v: bool) {
        self.bits.iter_mut().for_each(|b| *b = v);
        self.future = v;
        self.all_commands = v;
        self.firstargs.clear();
    }

    /// Applies one selector rule (Redis's `ACLSetSelector`).
    fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let u = universe();
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            b"allkeys" | b"~*" => {
                self.all_keys = true;
                self.patterns.clear();
                return Ok(());
            }
            b"resetkeys" => {
                self.all_keys = false;
                self.patterns.clear();
                return Ok(());
            }
            b"allchannels" | b"&*" => {
                self.all_channels = true;
                self.channels.clear();
                return Ok(());
            }
            b"resetchannels" => {
                self.all_channels = false;
                self.channels.clear();
                return Ok(());
            }
            b"allcommands" | b"+@all" => {
                self.all(true);
                return Ok(());
            }
            b"nocommands" | b"-@all" => {
                self.all(false);
                return Ok(());
            }
            _ => {}
        }
        match op.first() {
            Some(b'~') | Some(b'%') => {
                if self.all_keys {
                    return Err(RuleError::KeysAfterAll);
                }
                let (mut read, mut write) = (false, false);
                let mut at = 1;
                if op[0] == b'%' {
                    let mut closed = false;
                    while at < op.len() {
                        let c = op[at];
                        at += 1;
                        match c.to_ascii_uppercase() {
                            b'R' if !read => read = true,
                            b'W' if !write => write = true,
                            b'~' => {
                                closed = true;
                                break;
                            }
                            _ => return Err(RuleError::Syntax),
                        }
                    }
                    // `%R` without `~` is a pattern, empty, as Redis takes it.
                    let _ = closed;
                } else {
                    (read, write) = (true, true);
                }
                let pattern = &op[at..];
                if has_spaces(pattern) {
                    return Err(RuleError::Syntax);
                }
                match self.patterns.iter_mut().find(|p| p.pattern == pattern) {
                    Some(p) => {
                        p.read |= read;
                        p.write |= write;
                    }
                    None => self.patterns.push(KeyPattern { pattern: pattern.to_vec(), read, write }),
                }
                Ok(())
            }
            Some(b'&') => {
                if self.all_channels {
                    return Err(RuleError::ChannelsAfterAll);
                }
                let pattern = &op[1..];
                if has_spaces(pattern) {
                    return Err(RuleError::Syntax);
                }
                if !self.channels.iter().any(|c| c == pattern) {
                    self.channels.push(pattern.to_vec());
                }
                Ok(())
            }
            Some(&sign @ (b'+' | b'-')) if op.get(1) == Some(&b'@') => {
                let bit = category_bit(&op[2..]).ok_or(RuleError::Unknown)?;
                self.set_category(bit, sign == b'+');
                Ok(())
            }
            Some(b'+') => {
                let name = &op[1..];
                let Some(bar) = name.iter().rposition(|&c| c == b'|') else {
                    let id = u.find(name).ok_or(RuleError::Unknown)?;
                    self.change_perm(id, true);
                    return Ok(());
                };
                let (base, first) = (&name[..bar], &name[bar + 1..]);
                let id = lookup_rule_name(base).ok_or(RuleError::Unknown)?;
                if u.cmds[id].parent.is_some() {
                    return Err(RuleError::FirstArgOfSub);
                }
                if !u.cmds[id].subs.is_empty() {
                    let sub = lookup_rule_name(name).ok_or(RuleError::Unknown)?;
                    self.change_perm(sub, true);
                } else {
                    let first = String::from_utf8_lossy(first).into_owned();
                    let list = self.firstargs.entry(id).or_default();
                    if !list.iter().any(|f| f.eq_ignore_ascii_case(&first)) {
                        list.push(first);
                    }
                }
                Ok(())
            }
            Some(b'-') => {
                let id = lookup_rule_name(&op[1..]).ok_or(RuleError::Unknown)?;
                self.change_perm(id, false);
                self.all_commands = false;
                Ok(())
            }
            _ => Err(RuleError::Syntax),
        }
    }

    /// The command rules as Redis 7.0 rebuilds them from the bits.
    pub fn describe_commands(&self) -> String {
        let u = universe();
        let mut rules = String::new();
        let additive = !self.future;
        let mut fake = Selector::new(false);
        if additive {
            rules.push_str("-@all ");
            fake.all(false);
        } else {
            rules.push_str("+@all ");
            fake.all(true);
        }
        let mut temp = self.clone();
        let mut applied = [false; CATEGORIES.len()];
        loop {
            let mut best = None;
            let (mut mindiff, mut maxsame) = (usize::MAX, 0usize);
            for (j, done) in applied.iter().enumerate() {
                if *done {
                    continue;
                }
                let bit = 1u32 << j;
                let (mut on, mut off) = (0usize, 0usize);
                for (id, c) in u.cmds.iter().enumerate() {
                    if c.cats & bit != 0 {
                        if temp.bits[id] {
                            on += 1;
                        } else {
                            off += 1;
                        }
                    }
                }
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                    best = Some(j);
                    mindiff = diff;
                    maxsame = same;
                }
            }
            let Some(j) = best else { break };
            let bit = 1u32 << j;
            fake.set_category(bit, additive);
            temp.set_category(bit, !additive);
            rules.push_str(if additive { "+@" } else { "-@" });
            rules.push_str(CATEGORIES[j]);
            rules.push(' ');
            applied[j] = true;
        }
        for &top in &u.tops {
            self.describe_single(top, &mut fake, &mut rules);
            for &s in &u.cmds[top].subs {
                self.describe_single(s, &mut fake, &mut rules);
            }
        }
        rules.pop();
        rules
    }

    fn describe_single(&self, id: usize, fake: &mut Selector, rules: &mut String) {
        let c = &universe().cmds[id];
        let (mine, theirs) = (self.bits[id], fake.bits[id]);
        if mine != theirs {
            rules.push(if mine { '+' } else { '-' });
            rules.push_str(&c.full);
            rules.push(' ');
            fake.change_perm(id, mine);
        }
        if !mine {
            for f in self.firstargs.get(&id).map(Vec::as_slice).unwrap_or(&[]) {
                rules.push('+');
                rules.push_str(&c.full);
                rules.push('|');
                rules.push_str(f);
                rules.push(' ');
            }
        }
    }

    /// The key patterns (GETUSER's `keys`).
    fn describe_keys(&self) -> Vec<u8> {
        if self.all_keys {
            return b"~*".to_vec();
        }
        let mut out = Vec::new();
        for (i, p) in self.patterns.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            p.describe(&mut out);
        }
        out
    }

    /// The channel patterns (GETUSER's `channels`).
    fn describe_channels(&self) -> Vec<u8> {
        if self.all_channels {
            return b"&*".to_vec();
        }
        let mut out = Vec::new();
        for (i, c) in self.channels.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.push(b'&');
            out.extend_from_slice(c);
        }
        out
    }

    /// The selector as ACL LIST writes it.
    fn describe(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.all_keys {
            out.extend_from_slice(b"~* ");
        } else {
            for p in &self.patterns {
                p.describe(&mut out);
                out.push(b' ');
            }
        }
        if self.all_channels {
            out.extend_from_slice(b"&* ");
        } else {
            out.extend_from_slice(b"resetchannels ");
            for c in &self.channels {
                out.push(b'&');
                out.extend_from_slice(c);
                out.push(b' ');
            }
        }
        out.extend_from_slice(self.describe_commands().as_bytes());
        out
    }

    /// GETUSER's map of the selector.
    fn reply_fields(&self) -> Vec<(Reply, Reply)> {
        vec![
            (bulk("commands"), Reply::Bulk(self.describe_commands().into_bytes())),
            (bulk("keys"), Reply::Bulk(self.describe_keys())),
            (bulk("channels"), Reply::Bulk(self.describe_channels())),
        ]
    }

    /// Redis's `ACLSelectorCheckCmd`.
    fn check(&self, id: usize, call: &Call) -> Result<(), (Denied, usize)> {
        let u = universe();
        let c = &u.cmds[id];
        if !self.all_commands && !c.no_auth && !self.bits[id] {
            let idx = if c.parent.is_some() { 2 } else { 1 };
            let ok = call.args.len() >= 2
                && self.firstargs.get(&id).is_some_and(|list| {
                    call.args.get(idx).is_some_and(|a| list.iter().any(|f| a.eq_ignore_ascii_case(f.as_bytes())))
                });
            if !ok {
                return Err((Denied::Command, 0));
            }
        }
        if !self.all_keys {
            for (pos, read, write) in call.keys() {
                if !self.key_ok(call.args[*pos], *read, *write) {
                    return Err((Denied::Key, *pos));
                }
            }
        }
        if !self.all_channels {
            for (pos, pattern) in call.channels() {
                if !channel_ok(&self.channels, call.args[pos], pattern) {
                    return Err((Denied::Channel, pos));
                }
            }
        }
        Ok(())
    }

    fn key_ok(&self, key: &[u8], read: bool, write: bool) -> bool {
        self.all_keys
            || self
                .patterns
                .iter()
                .any(|p| (p.read || !read) && (p.write || !write) && glob_match(&p.pattern, key, false))
    }
}

/// Redis's `ACLCheckChannelAgainstList`: a pattern subscription must be one of the patterns
/// literally; a channel must match one.
fn channel_ok(list: &[Vec<u8>], channel: &[u8], is_pattern: bool) -> bool {
    list.iter().any(|p| if is_pattern { p == channel } else { glob_match(p, channel, false) })
}

fn has_spaces(s: &[u8]) -> bool {
    s.iter().any(|c| c.is_ascii_whitespace() || *c == 0)
}

/// Redis's `ACLLookupCommand`: `name` or `container|sub`.
fn lookup_rule_name(name: &[u8]) -> Option<usize> {
    let u = universe();
    let parts: Vec<&[u8]> = name.split(|&c| c == b'|').collect();
    match parts.as_slice() {
        [one] => u.find(one),
        [base, _] => {
            let top = u.find(base)?;
            if u.cmds[top].subs.is_empty() {
                return None;
            }
            u.find(name)
        }
        _ => None,
    }
}

fn bulk(s: &str) -> Reply {
    Reply::Bulk(s.as_bytes().to_vec())
}

/// What a check found wrong, in Redis's order of relevance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    Command = 1,
    Key = 2,
    Auth = 3,
    Channel = 4,
}

impl Denied {
    /// The ACL log's `reason`.
    pub fn reason(self) -> &'static str {
        match self {
            Denied::Command => "command",
            Denied::Key => "key",
            Denied::Auth => "auth",
            Denied::Channel => "channel",
        }
    }
}

/// A call being checked: its arguments, and its keys (found once, for every selector).
pub struct Call<'a> {
    pub args: &'a [&'a [u8]],
    keys: OnceLock<Vec<(usize, bool, bool)>>,
}

impl<'a> Call<'a> {
    pub fn new(args: &'a [&'a [u8]]) -> Call<'a> {
        Call { args, keys: OnceLock::new() }
    }

    fn keys(&self) -> &[(usize, bool, bool)] {
        self.keys.get_or_init(|| {
            crate::cmd::command::keys_and_flags(self.args)
                .into_iter()
                .map(|(pos, flags)| {
                    let has = |f: &str| flags.iter().any(|x| x == f);
                    (pos, has("access"), has("insert") || has("delete") || has("update"))
                })
                .collect()
        })
    }

    /// The channels a publish or subscribe names: `(position, is a pattern)`.
    fn channels(&self) -> Vec<(usize, bool)> {
        let name = self.args[0].to_ascii_lowercase();
        match name.as_slice() {
            b"publish" | b"spublish" if self.args.len() >= 2 => vec![(1, false)],
            b"subscribe" | b"ssubscribe" => (1..self.args.len()).map(|i| (i, false)).collect(),
            b"psubscribe" => (1..self.args.len()).map(|i| (i, true)).collect(),
            _ => Vec::new(),
        }
    }
}

/// A user.
#[derive(Clone, Debug)]
pub struct User {
    pub name: Vec<u8>,
    pub enabled: bool,
    pub nopass: bool,
    /// `Some(true)`: skip-sanitize-payload; `Some(false)`: sanitize-payload.
    sanitize_skip: Option<bool>,
    /// SHA-256 digests, in hex.
    passwords: Vec<String>,
    /// The root selector first.
    selectors: Vec<Selector>,
}

/// SHA-256 of a password, in lower-case hex (how Redis keeps passwords).
pub fn hash_password(pass: &[u8]) -> String {
    let d = sha2::Sha256::digest(pass);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

impl User {
    fn new(name: &[u8], all_channels: bool) -> User {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            sanitize_skip: None,
            passwords: Vec::new(),
            selectors: vec![Selector::new(all_channels)],
        }
    }

    /// Applies one ACL SETUSER modifier (Redis's `ACLSetUser`).
    pub fn apply(&mut self, op: &[u8], all_channels: bool) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            b"on" => self.enabled = true,
            b"off" => self.enabled = false,
            b"skip-sanitize-payload" => self.sanitize_skip = Some(true),
            b"sanitize-payload" => self.sanitize_skip = Some(false),
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            b"clearselectors" => self.selectors.truncate(1),
            b"reset" => {
                for r in ["resetpass", "resetkeys", "resetchannels"] {
                    self.apply(r.as_bytes(), all_channels)?;
                }
                if all_channels {
                    self.apply(b"allchannels", all_channels)?;
                }
                for r in ["off", "sanitize-payload", "clearselectors", "-@all"] {
                    self.apply(r.as_bytes(), all_channels)?;
                }
            }
            _ => match op.first() {
                Some(b'>') => {
                    let h = hash_password(&op[1..]);
                    if !self.passwords.contains(&h) {
                        self.passwords.push(h);
                    }
                    self.nopass = false;
                }
                Some(b'#') => {
                    if !valid_hash(&op[1..]) {
                        return Err(RuleError::BadHash);
                    }
                    let h = String::from_utf8_lossy(&op[1..]).into_owned();
                    if !self.passwords.contains(&h) {
                        self.passwords.push(h);
                    }
                    self.nopass = false;
                }
                Some(b'<') => {
                    let h = hash_password(&op[1..]);
                    let Some(i) = self.passwords.iter().position(|p| *p == h) else {
                        return Err(RuleError::NoSuchPassword);
                    };
                    self.passwords.remove(i);
                    self.nopass = false;
                }
                Some(b'!') => {
                    if !valid_hash(&op[1..]) {
                        return Err(RuleError::BadHash);
                    }
                    let Some(i) = self.passwords.iter().position(|p| p.as_bytes() == &op[1..]) else {
                        return Err(RuleError::NoSuchPassword);
                    };
                    self.passwords.remove(i);
                    self.nopass = false;
                }
                Some(b'(') if op.last() == Some(&b')') && op.len() >= 2 => {
                    let mut s = Selector::new(all_channels);
                    for part in op[1..op.len() - 1].split(|&c| c == b' ').filter(|p| !p.is_empty()) {
                        s.apply(part)?;
                    }
                    self.selectors.push(s);
                }
                _ => self.selectors[0].apply(op)?,
            },
        }
        Ok(())
    }

    /// ACL LIST's line for the user, without `user <name> `.
    fn describe(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for f in self.flags() {
            out.extend_from_slice(f.as_bytes());
            out.push(b' ');
        }
        for p in &self.passwords {
            out.push(b'#');
            out.extend_from_slice(p.as_bytes());
            out.push(b' ');
        }
        for (i, s) in self.selectors.iter().enumerate() {
            if i == 0 {
                out.extend_from_slice(&s.describe());
            } else {
                out.extend_from_slice(b" (");
                out.extend_from_slice(&s.describe());
                out.push(b')');
            }
        }
        out
    }

    fn flags(&self) -> Vec<&'static str> {
        let mut f = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            f.push("nopass");
        }
        match self.sanitize_skip {
            Some(true) => f.push("skip-sanitize-payload"),
            Some(false) => f.push("sanitize-payload"),
            None => {}
        }
        f
    }

    /// Whether the user may run anything on anything (the fast path of every check).
    pub fn unrestricted(&self) -> bool {
        let r = &self.selectors[0];
        r.all_commands && r.all_keys && r.all_channels
    }

    /// Redis's `ACLCheckAllUserCommandPerm`: Ok, or the most relevant denial and the position of
    /// the key or channel at fault.
    pub fn check(&self, args: &[&[u8]]) -> Result<(), (Denied, usize)> {
        if self.unrestricted() {
            return Ok(());
        }
        let Some(id) = universe().of_call(args) else { return Ok(()) };
        let call = Call::new(args);
        let mut worst = (Denied::Command, 0);
        for s in &self.selectors {
            match s.check(id, &call) {
                Ok(()) => return Ok(()),
                Err((d, pos)) => {
                    if d > worst.0 || (d == worst.0 && pos > worst.1) {
                        worst = (d, pos);
                    }
                }
            }
        }
        Err(worst)
    }

    /// Whether `pass` opens this user's door (it is on, and the password is one of its own).
    pub fn password_ok(&self, pass: &[u8]) -> bool {
        self.enabled && (self.nopass || self.passwords.contains(&hash_password(pass)))
    }

    /// Whether a client of this user subscribed to these may stay (Redis's
    /// `ACLKillPubsubClientsIfNeeded`, on the root selector).
    pub fn keeps_subscriptions(&self, channels: &[Vec<u8>], patterns: &[Vec<u8>], shard: &[Vec<u8>]) -> bool {
        let r = &self.selectors[0];
        if r.all_channels {
            return true;
        }
        channels.iter().chain(shard).all(|c| channel_ok(&r.channels, c, false))
            && patterns.iter().all(|p| channel_ok(&r.channels, p, true))
    }

    /// ACL GETUSER's reply.
    pub fn getuser(&self) -> Reply {
        let mut m = vec![
            (bulk("flags"), Reply::Set(self.flags().into_iter().map(bulk).collect())),
            (bulk("passwords"), Reply::Array(self.passwords.iter().map(|p| bulk(p)).collect())),
        ];
        m.extend(self.selectors[0].reply_fields());
        m.push((
            bulk("selectors"),
            Reply::Array(self.selectors[1..].iter().map(|s| Reply::Map(s.reply_fields())).collect()),
        ));
        Reply::Map(m)
    }
}

/// One entry of the ACL log.
#[derive(Clone, Debug)]
pub struct LogEntry {
    pub count: u64,
    pub reason: &'static str,
    pub context: &'static str,
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    /// When it last happened (ms, the server's clock).
    pub ctime_ms: i64,
    /// CLIENT LIST's line of the client, without the newline.
    pub client_info: String,
}

/// The users and the log.
#[derive(Clone, Debug)]
pub struct Acl {
    pub users: BTreeMap<Vec<u8>, User>,
    /// Newest first.
    pub log: Vec<LogEntry>,
}

impl Default for Acl {
    fn default() -> Self {
        let mut d = User::new(b"default", true);
        for op in ["on", "nopass", "~*", "&*", "+@all"] {
            d.apply(op.as_bytes(), true).expect("the default user's rules");
        }
        let mut users = BTreeMap::new();
        users.insert(b"default".to_vec(), d);
        Acl { users, log: Vec::new() }
    }
}

/// Entries of the same kind within this many ms are counted as one (Redis's grouping).
const LOG_GROUPING_MS: i64 = 60_000;

impl Acl {
    pub fn default_user(&self) -> &User {
        &self.users[b"default".as_slice()]
    }

    /// A user by name (None = the default user).
    pub fn user(&self, name: Option<&[u8]>) -> Option<&User> {
        self.users.get(name.unwrap_or(b"default"))
    }

    /// Adds an entry to the log (Redis's `addACLLogEntry`), grouping it with a recent one of the
    /// same kind; the log keeps `max_len` entries.
    #[allow(clippy::too_many_arguments)]
    pub fn log(
        &mut self,
        reason: &'static str,
        context: &'static str,
        object: &[u8],
        username: &[u8],
        now_ms: i64,
        client_info: String,
        max_len: usize,
    ) {
        let found = self.log.iter().position(|e| {
            e.reason == reason
                && e.context == context
                && now_ms - e.ctime_ms <= LOG_GROUPING_MS
                && e.object == object
                && e.username == username
        });
        match found {
            Some(i) => {
                let mut e = self.log.remove(i);
                e.count += 1;
                e.ctime_ms = now_ms;
                e.client_info = client_info;
                self.log.insert(0, e);
            }
            None => self.log.insert(
                0,
                LogEntry {
                    count: 1,
                    reason,
                    context,
                    object: object.to_vec(),
                    username: username.to_vec(),
                    ctime_ms: now_ms,
                    client_info,
                },
            ),
        }
        self.log.truncate(max_len);
    }

    /// `requirepass`: the default user's passwords become this one (none: `nopass`).
    pub fn set_requirepass(&mut self, pass: &[u8]) {
        let d = self.users.get_mut(b"default".as_slice()).expect("the default user exists");
        let _ = d.apply(b"resetpass", true);
        if pass.is_empty() {
            let _ = d.apply(b"nopass", true);
        } else {
            let mut op = b">".to_vec();
            op.extend_from_slice(pass);
            let _ = d.apply(&op, true);
        }
    }

    /// ACL SETUSER's modifiers, all or nothing: the user as it would be, or the reply to send.
    pub fn setuser(&self, name: &[u8], ops: &[&[u8]], all_channels: bool) -> Result<User, Reply> {
        if has_spaces_or_nul(name) {
            return Err(Reply::err("ERR Usernames can't contain spaces or null characters"));
        }
        let ops = merge_selectors(ops)?;
        let mut u = self.users.get(name).cloned().unwrap_or_else(|| User::new(name, all_channels));
        for op in &ops {
            if let Err(e) = u.apply(op, all_channels) {
                return Err(Reply::Error(format!(
                    "ERR Error in ACL SETUSER modifier '{}': {}",
                    String::from_utf8_lossy(op),
                    e.text()
                )));
            }
        }
        Ok(u)
    }

    /// ACL LIST.
    pub fn list(&self) -> Reply {
        Reply::Array(
            self.users
                .values()
                .map(|u| {
                    let mut line = b"user ".to_vec();
                    line.extend_from_slice(&u.name);
                    line.push(b' ');
                    line.extend_from_slice(&u.describe());
                    Reply::Bulk(line)
                })
                .collect(),
        )
    }
}

fn has_spaces_or_nul(s: &[u8]) -> bool {
    s.iter().any(|&c| c == b' ' || c == 0)
}

/// Redis's `ACLMergeSelectorArguments`: `(` ... `)` spread over several arguments become one.
fn merge_selectors(ops: &[&[u8]]) -> Result<Vec<Vec<u8>>, Reply> {
    let mut out = Vec::new();
    let mut open: Option<(Vec<u8>, &[u8])> = None;
    for op in ops {
        if let Some((acc, _)) = open.as_mut() {
            acc.push(b' ');
            acc.extend_from_slice(op);
            if op.last() == Some(&b')') {
                out.push(std::mem::take(acc));
                open = None;
            }
            continue;
        }
        if op.first() == Some(&b'(') && (op.len() == 1 || op.last() != Some(&b')')) {
            open = Some((op.to_vec(), op));
            continue;
        }
        out.push(op.to_vec());
    }
    if let Some((_, start)) = open {
        return Err(Reply::Error(format!(
            "ERR Unmatched parenthesis in acl selector starting at '{}'.",
            String::from_utf8_lossy(start)
        )));
    }
    Ok(out)
}

/// ACL GENPASS: `bits` random bits as hex (rounded up to whole hex digits).
pub fn genpass(bits: usize) -> Vec<u8> {
    let chars = bits.div_ceil(4);
    let mut bytes = vec![0u8; chars.div_ceil(2)];
    if getrandom::fill(&mut bytes).is_err() {
        // No system randomness: derive bytes from the time (never expected on a real system).
        // The machine's time through the clock module, the one place that reads it.
        let t = crate::clock::Clock::now_micros(&crate::clock::SystemClock).0;
        let h = sha2::Sha256::digest(t.to_le_bytes());
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = h[i % h.len()];
        }
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    hex.as_bytes()[..chars].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(ops: &[&str]) -> User {
        let acl = Acl::default();
        let ops: Vec<&[u8]> = ops.iter().map(|o| o.as_bytes()).collect();
        acl.setuser(b"u", &ops, false).expect("valid rules")
    }

    #[test]
    fn rules_are_described_as_redis_rebuilds_them() {
        let u = user(&["on", "nopass", "+get", "~a*"]);
        assert_eq!(String::from_utf8(u.describe()).unwrap(), "on nopass ~a* resetchannels -@all +get");
        let u = user(&["+@all", "-client|kill"]);
        assert_eq!(u.selectors[0].describe_commands(), "+@all -client|kill");
        let u = user(&["+@all", "-@dangerous"]);
        assert_eq!(u.selectors[0].describe_commands(), "+@all -@dangerous");
        let u = user(&["nocommands", "+acl", "allcommands", "-flushall"]);
        assert_eq!(u.selectors[0].describe_commands(), "+@all -flushall");
        let u = user(&["-@all", "+acl", "+select|0"]);
        assert!(u.selectors[0].describe_commands().contains("+select|0"));
        assert_eq!(Acl::default().default_user().describe(), b"on nopass ~* &* +@all");
    }

    #[test]
    fn checks_commands_keys_and_channels() {
        let u = user(&["on", "+get", "+set", "+publish", "~a*", "%R~r*", "&c*"]);
        let ok = |a: &[&str]| {
            let v: Vec<&[u8]> = a.iter().map(|s| s.as_bytes()).collect();
            u.check(&v).map_err(|e| e.0)
        };
        assert_eq!(ok(&["get", "a1"]), Ok(()));
        assert_eq!(ok(&["get", "r1"]), Ok(()));
        assert_eq!(ok(&["set", "r1", "v"]), Err(Denied::Key));
        assert_eq!(ok(&["del", "a1"]), Err(Denied::Command));
        assert_eq!(ok(&["publish", "c1", "m"]), Ok(()));
        assert_eq!(ok(&["publish", "d", "m"]), Err(Denied::Channel));
    }

    #[test]
    fn bad_modifiers_say_why() {
        let acl = Acl::default();
        let err = |ops: &[&str]| {
            let ops: Vec<&[u8]> = ops.iter().map(|o| o.as_bytes()).collect();
            match acl.setuser(b"u", &ops, false) {
                Err(Reply::Error(e)) => e,
                _ => panic!("accepted {ops:?}"),
            }
        };
        assert_eq!(
            err(&["+nosuch"]),
            "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"
        );
        assert!(err(&["+config|get|x"]).ends_with("Allowing first-arg of a subcommand is not supported"));
        assert!(err(&["allkeys", "~b*"]).contains("'~b*': Adding a pattern after the * pattern"));
        assert_eq!(err(&["(+get"]), "ERR Unmatched parenthesis in acl selector starting at '(+get'.");
        assert_eq!(genpass(5).len(), 2);
        assert_eq!(genpass(256).len(), 64);
    }
}
