//! Client-side caching (CLIENT TRACKING) as Redis 7.0.15 does it: the keys a tracking client read
//! are remembered (the default mode), or the client subscribes to key prefixes (BCAST); when such
//! a key is modified (a write, an expiry, an eviction, a flush) the client gets an `invalidate`
//! push (RESP3), or the client it redirects to gets it: as a push under RESP3, as a message of the
//! `__redis__:invalidate` channel under RESP2 when subscribed. Messages are queued in
//! [`crate::Core::outbox`] like every other delivery; those for the client whose command caused
//! them come after its reply ([`Deliver::Late`]).
use rustc_hash::FxHashMap;

use crate::clients::ClientId;
use crate::core::Core;
use crate::deliver::Deliver;
use crate::reply::Reply;

/// A client's tracking mode (CLIENT TRACKING ON and its options).
#[derive(Clone, Debug, Default)]
pub struct ClientTracking {
    /// REDIRECT: the CLIENT ID invalidations go to (0: none).
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// CLIENT CACHING yes (OPTIN) or no (OPTOUT) was given for the next command.
    pub caching: bool,
    /// The client redirected to is gone.
    pub broken_redirect: bool,
    /// BCAST prefixes, in the order given.
    pub prefixes: Vec<Vec<u8>>,
}

/// A BCAST prefix: who listens, and the keys under it modified since the last broadcast (with the
/// client that modified each, for NOLOOP).
#[derive(Clone, Debug, Default)]
struct Prefix {
    prefix: Vec<u8>,
    clients: Vec<ClientId>,
    keys: Vec<(Vec<u8>, Option<ClientId>)>,
}

/// The server's tracking state.
#[derive(Clone, Debug, Default)]
pub struct Tracking {
    /// Keys read by clients in the default mode, and who read them.
    table: FxHashMap<Vec<u8>, Vec<ClientId>>,
    prefixes: Vec<Prefix>,
    /// How many clients have tracking on.
    pub clients: usize,
    /// The keys of the script running for a tracking client (EVAL's keys): a read-only command the
    /// script calls makes them tracked, as Redis tracks the caller's own command.
    pub script_keys: Option<Vec<Vec<u8>>>,
}

impl Tracking {
    /// Whether any client tracks anything (the write path's one test).
    #[inline]
    pub fn active(&self) -> bool {
        self.clients > 0 || !self.table.is_empty()
    }

    /// Whether broadcasts wait to be sent.
    pub fn has_pending(&self) -> bool {
        self.prefixes.iter().any(|p| !p.keys.is_empty())
    }

    /// INFO's `tracking_total_keys`, `tracking_total_items` (key and client pairs) and
    /// `tracking_total_prefixes`.
    pub fn totals(&self) -> (usize, usize, usize) {
        (self.table.len(), self.table.values().map(Vec::len).sum(), self.prefixes.len())
    }

    /// Whether a write of `key` may concern a tracking client.
    pub fn interested(&self, key: &[u8]) -> bool {
        self.table.contains_key(key) || self.prefixes.iter().any(|p| key.starts_with(&p.prefix))
    }
}

/// Who modified a key that expired or was evicted: no client.
const NO_CLIENT: ClientId = ClientId(u32::MAX);

fn overlap(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

impl Core {
    /// The slot of the open client whose CLIENT ID is `n`.
    pub fn client_by_number(&self, n: u64) -> Option<ClientId> {
        self.clients
            .iter()
            .enumerate()
            .find(|(_, c)| c.as_ref().is_some_and(|c| c.id == n))
            .map(|(i, _)| ClientId(i as u32))
    }

    /// CLIENT TRACKING sent by client `id` (arguments after the subcommand).
    pub fn client_tracking(&mut self, id: ClientId, a: &[&[u8]]) -> Reply {
        let mut redirect = 0u64;
        let (mut bcast, mut optin, mut optout, mut noloop) = (false, false, false, false);
        let mut prefixes: Vec<Vec<u8>> = Vec::new();
        let mut j = 1;
        while j < a.len() {
            let more = a.len() - 1 - j;
            let opt = a[j];
            if opt.eq_ignore_ascii_case(b"redirect") && more > 0 {
                j += 1;
                if redirect != 0 {
                    return Reply::err("ERR A client can only redirect to a single other client");
                }
                let n = match crate::command_spec::arg_i64(a[j]) {
                    Ok(n) => n,
                    Err(e) => return e,
                };
                if n <= 0 || self.client_by_number(n as u64).is_none() {
                    return Reply::err("ERR The client ID you want redirect to does not exist");
                }
                redirect = n as u64;
            } else if opt.eq_ignore_ascii_case(b"bcast") {
                bcast = true;
            } else if opt.eq_ignore_ascii_case(b"optin") {
                optin = true;
            } else if opt.eq_ignore_ascii_case(b"optout") {
                optout = true;
            } else if opt.eq_ignore_ascii_case(b"noloop") {
                noloop = true;
            } else if opt.eq_ignore_ascii_case(b"prefix") && more > 0 {
                j += 1;
                prefixes.push(a[j].to_vec());
            } else {
                return Reply::err(crate::command_spec::SYNTAX);
            }
            j += 1;
        }
        if a[0].eq_ignore_ascii_case(b"off") {
            self.disable_tracking(id);
            return Reply::ok();
        }
        if !a[0].eq_ignore_ascii_case(b"on") {
            return Reply::err(crate::command_spec::SYNTAX);
        }
        if !bcast && !prefixes.is_empty() {
            return Reply::err("ERR PREFIX option requires BCAST mode to be enabled");
        }
        let current = self.client(id).and_then(|c| c.tracking.clone());
        if let Some(t) = &current {
            if t.bcast != bcast {
                return Reply::err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.");
            }
        }
        if bcast && (optin || optout) {
            return Reply::err("ERR OPTIN and OPTOUT are not compatible with BCAST");
        }
        if optin && optout {
            return Reply::err("ERR You can't use both OPTIN and OPTOUT");
        }
        if let Some(t) = &current {
            if (optin && t.optout) || (optout && t.optin) {
                return Reply::err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.");
            }
        }
        if bcast {
            let existing = current.as_ref().map(|t| t.prefixes.clone()).unwrap_or_default();
            for (i, p) in prefixes.iter().enumerate() {
                if let Some(old) = existing.iter().find(|o| overlap(o, p)) {
                    return Reply::Error(format!(
                        "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                        String::from_utf8_lossy(p),
                        String::from_utf8_lossy(old)
                    ));
                }
                if let Some(other) = prefixes[i + 1..].iter().find(|o| overlap(p, o)) {
                    return Reply::Error(format!(
                        "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                        String::from_utf8_lossy(p),
                        String::from_utf8_lossy(other)
                    ));
                }
            }
        }
        if current.is_none() {
            self.tracking.clients += 1;
        }
        let mut t = current.unwrap_or_default();
        t.redirect = redirect;
        t.bcast = bcast;
        t.optin = optin;
        t.optout = optout;
        t.noloop = noloop;
        t.broken_redirect = false;
        if bcast {
            if prefixes.is_empty() {
                prefixes.push(Vec::new());
            }
            for p in prefixes {
                if t.prefixes.contains(&p) {
                    continue;
                }
                match self.tracking.prefixes.iter_mut().find(|x| x.prefix == p) {
                    Some(x) => x.clients.push(id),
                    None => {
                        self.tracking.prefixes.push(Prefix { prefix: p.clone(), clients: vec![id], keys: Vec::new() })
                    }
                }
                t.prefixes.push(p);
            }
        }
        if let Some(c) = self.client(id) {
            c.tracking = Some(t);
        }
        Reply::ok()
    }

    /// CLIENT TRACKING OFF (and what RESET and a closed connection do).
    pub fn disable_tracking(&mut self, id: ClientId) {
        let Some(t) = self.client(id).and_then(|c| c.tracking.take()) else { return };
        self.tracking.clients -= 1;
        for p in &t.prefixes {
            if let Some(i) = self.tracking.prefixes.iter().position(|x| &x.prefix == p) {
                self.tracking.prefixes[i].clients.retain(|c| *c != id);
                if self.tracking.prefixes[i].clients.is_empty() {
                    self.tracking.prefixes.remove(i);
                }
            }
        }
    }

    /// CLIENT CACHING yes|no.
    pub fn client_caching(&mut self, id: ClientId, opt: &[u8]) -> Reply {
        let Some(t) = self.client(id).and_then(|c| c.tracking.as_mut()) else {
            return Reply::err(
                "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
            );
        };
        if opt.eq_ignore_ascii_case(b"yes") {
            if !t.optin {
                return Reply::err("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
            }
        } else if opt.eq_ignore_ascii_case(b"no") {
            if !t.optout {
                return Reply::err("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
            }
        } else {
            return Reply::err(crate::command_spec::SYNTAX);
        }
        t.caching = true;
        Reply::ok()
    }

    /// CLIENT TRACKINGINFO.
    pub fn tracking_info(&mut self, id: ClientId) -> Reply {
        let t = self.client(id).and_then(|c| c.tracking.clone());
        let b = |s: &str| Reply::Bulk(s.as_bytes().to_vec());
        let mut flags = vec![b(if t.is_some() { "on" } else { "off" })];
        let (redirect, prefixes) = match &t {
            Some(t) => {
                if t.bcast {
                    flags.push(b("bcast"));
                }
                if t.optin {
                    flags.push(b("optin"));
                    if t.caching {
                        flags.push(b("caching-yes"));
                    }
                }
                if t.optout {
                    flags.push(b("optout"));
                    if t.caching {
                        flags.push(b("caching-no"));
                    }
                }
                if t.noloop {
                    flags.push(b("noloop"));
                }
                if t.broken_redirect {
                    flags.push(b("broken_redirect"));
                }
                let mut p = t.prefixes.clone();
                p.sort();
                (t.redirect as i64, p)
            }
            None => (-1, Vec::new()),
        };
        Reply::Map(vec![
            (b("flags"), Reply::Set(flags)),
            (b("redirect"), Reply::Int(redirect)),
            (b("prefixes"), Reply::Array(prefixes.into_iter().map(Reply::Bulk).collect())),
        ])
    }

    /// After a read-only command of client `id` (`args`, or for a script its caller's command):
    /// its keys are remembered for invalidation (Redis's `trackingRememberKeys`).
    pub fn track_read(&mut self, id: ClientId, args: &[&[u8]]) {
        let Some(t) = self.client(id).and_then(|c| c.tracking.as_ref()) else { return };
        if t.bcast || (t.optin && !t.caching) || (t.optout && t.caching) {
            return;
        }
        for (pos, _) in crate::cmd::command::keys_and_flags(args) {
            let ids = self.tracking.table.entry(args[pos].to_vec()).or_default();
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }

    /// A key was modified (Redis's `trackingInvalidateKey`): the clients that read it are told,
    /// and BCAST listeners of a prefix it falls under will be.
    pub fn tracking_invalidate(&mut self, key: &[u8]) {
        let me = self.caller;
        for p in self.tracking.prefixes.iter_mut() {
            // A set of keys, as Redis's radix tree: the first modifier stays.
            if key.starts_with(&p.prefix) && !p.keys.iter().any(|(k, _)| k == key) {
                p.keys.push((key.to_vec(), Some(me)));
            }
        }
        let Some(ids) = self.tracking.table.remove(key) else { return };
        for target in ids {
            let Some(t) = self.clients.get(target.index()).and_then(Option::as_ref).and_then(|c| c.tracking.as_ref())
            else {
                continue;
            };
            if t.bcast || (t.noloop && target == me) {
                continue;
            }
            self.send_invalidation(target, Reply::Array(vec![Reply::Bulk(key.to_vec())]));
        }
    }

    /// FLUSHDB/FLUSHALL: every tracking client gets a null invalidation, and the table goes.
    pub fn tracking_flush(&mut self) {
        self.tracking.table.clear();
        if self.tracking.clients == 0 {
            return;
        }
        let ids: Vec<ClientId> = self
            .clients
            .iter()
            .enumerate()
            .filter(|(_, c)| c.as_ref().is_some_and(|c| c.tracking.is_some()))
            .map(|(i, _)| ClientId(i as u32))
            .collect();
        for id in ids {
            self.send_invalidation(id, Reply::Nil);
        }
    }

    /// Sends the BCAST invalidations gathered since the last call (Redis does it before sleeping:
    /// once per prefix and client, the keys together).
    pub fn tracking_broadcast(&mut self) {
        if !self.tracking.has_pending() {
            return;
        }
        let mut sends = Vec::new();
        for p in self.tracking.prefixes.iter_mut() {
            if p.keys.is_empty() {
                continue;
            }
            let mut keys = std::mem::take(&mut p.keys);
            // In the radix tree's order.
            keys.sort();
            for &c in &p.clients {
                let noloop = self
                    .clients
                    .get(c.index())
                    .and_then(Option::as_ref)
                    .and_then(|x| x.tracking.as_ref())
                    .is_some_and(|t| t.noloop);
                let list: Vec<Reply> = keys
                    .iter()
                    .filter(|(_, by)| !(noloop && *by == Some(c)))
                    .map(|(k, _)| Reply::Bulk(k.clone()))
                    .collect();
                if !list.is_empty() {
                    sends.push((c, Reply::Array(list)));
                }
            }
        }
        for (c, r) in sends {
            self.send_invalidation(c, r);
        }
    }

    /// Redis's `sendTrackingMessage`: to the client, or to the one it redirects to.
    fn send_invalidation(&mut self, tracker: ClientId, payload: Reply) {
        let Some(c) = self.clients.get(tracker.index()).and_then(Option::as_ref) else { return };
        let Some(t) = c.tracking.as_ref() else { return };
        let tracker_resp3 = c.resp3;
        let mut target = tracker;
        let redirected = t.redirect != 0;
        if redirected {
            let redirect = t.redirect;
            match self.client_by_number(redirect) {
                Some(r) => target = r,
                None => {
                    if let Some(t) = self.client(tracker).and_then(|c| c.tracking.as_mut()) {
                        t.broken_redirect = true;
                    }
                    if tracker_resp3 {
                        let frame = vec![Reply::Bulk(b"tracking-redir-broken".to_vec()), Reply::Int(redirect as i64)];
                        self.deliver_tracking(tracker, frame);
                    }
                    return;
                }
            }
        }
        let target_resp3 = self.clients.get(target.index()).and_then(Option::as_ref).is_some_and(|c| c.resp3);
        let frame = if target_resp3 {
            vec![Reply::Bulk(b"invalidate".to_vec()), payload]
        } else if redirected && self.pubsub.subscribed(target) {
            vec![Reply::Bulk(b"message".to_vec()), Reply::Bulk(b"__redis__:invalidate".to_vec()), payload]
        } else {
            return;
        };
        self.deliver_tracking(target, frame);
    }

    fn deliver_tracking(&mut self, to: ClientId, frame: Vec<Reply>) {
        let d = if to == self.caller { Deliver::Late(frame) } else { Deliver::Push(frame) };
        self.outbox.push((to, d));
    }

    /// After a command of client `id`: CLIENT CACHING applies to one command only.
    pub fn tracking_after_command(&mut self, id: ClientId, was_caching: bool) {
        if was_caching {
            return;
        }
        if let Some(t) = self.client(id).and_then(|c| c.tracking.as_mut()) {
            if t.caching {
                t.caching = false;
            }
        }
    }

    /// The keys CLIENT TRACKING's table holds (with the databases' live keys of that name), for
    /// the active expire cycle: tracked keys past their deadline are removed and invalidated.
    pub fn tracking_expire(&mut self) {
        if !self.tracking.active() {
            return;
        }
        let now = self.now_ms();
        let selected = self.selected;
        for i in 0..crate::core::DATABASES {
            let db = self.db_at(i);
            if !db.expiry_enabled || db.is_empty() {
                continue;
            }
            let expired: Vec<Vec<u8>> = db
                .map
                .iter()
                .filter(|(_, e)| e.expire_at.is_some_and(|t| t < now))
                .map(|(k, _)| k.as_slice().to_vec())
                .collect();
            let gone: Vec<Vec<u8>> = expired.into_iter().filter(|k| self.tracking.interested(k)).collect();
            if gone.is_empty() {
                continue;
            }
            self.select(i);
            // No client modified these keys (NOLOOP keeps no one from hearing of them).
            let caller = std::mem::replace(&mut self.caller, NO_CLIENT);
            for k in gone {
                self.db.remove(&k, now);
                self.touch_in(i, &k);
            }
            self.caller = caller;
        }
        self.select(selected);
    }

    /// A closed client stops tracking (its keys stay in the table until invalidated, as in Redis).
    pub fn tracking_disconnect(&mut self, id: ClientId) {
        self.disable_tracking(id);
    }
}
