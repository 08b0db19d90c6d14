//! A model of the few Redis keys one script touches: values with PEXPIRE deadlines that vanish
//! exactly when Redis 7.0 would drop them, so reference models forget state when Redis does.
use limitlab_emulator::keyspace::SmallBytes;
use rustc_hash::FxHashMap;

/// Keys of one reference model, each with an optional deadline in server milliseconds.
///
/// Redis 7.0 treats a key as gone once the server clock is strictly past its deadline
/// (`keyIsExpired`: `now > when`), and `PEXPIRE` with a TTL that is not positive deletes the key at
/// once; both rules are kept here.
#[derive(Clone, Debug)]
pub(crate) struct Store<V> {
    /// Keys kept inline (a limiter's keys are short): with a million subjects, a lookup compares the
    /// key inside the map's slot instead of following a pointer to a `String`'s bytes (a second
    /// cache miss per request in a long run).
    map: FxHashMap<SmallBytes, Slot<V>>,
    /// When the map reaches this size, expired keys are swept so a long simulation over many
    /// subjects does not keep every subject it ever saw (Redis's active expiry does the same).
    sweep_at: usize,
    /// Whether a trial is running (see [`KeyStore::trial`]): changes are then recorded in `undo`.
    in_trial: bool,
    /// During a trial, every key it touched with its slot from before the trial (`None`: absent).
    undo: Vec<(SmallBytes, Option<Slot<V>>)>,
}

#[derive(Clone, Debug)]
struct Slot<V> {
    value: V,
    deadline: Option<i64>,
}

const FIRST_SWEEP: usize = 1024;

/// The deadline of a key found expired when read. Redis deletes such a key there and then, so it
/// stays gone even if the server clock later goes back before its old deadline. Marking the slot
/// instead of removing it spares a second lookup on every read of a live key; a marked slot counts
/// as missing everywhere, is overwritten by the next write and goes at the next sweep.
const GONE: Option<i64> = Some(i64::MIN);

/// Whether a key with `deadline` still exists at `server` (Redis: expired once `now > when`).
fn alive(deadline: Option<i64>, server: i64) -> bool {
    deadline != GONE && deadline.is_none_or(|d| server <= d)
}

impl<V> Default for Store<V> {
    fn default() -> Self {
        Store { map: FxHashMap::default(), sweep_at: FIRST_SWEEP, in_trial: false, undo: Vec::new() }
    }
}

impl<V: Clone> Store<V> {
    /// Saves `key`'s slot before a change, once per trial (a call touches few keys: a scan is
    /// enough). Outside a trial it does nothing.
    fn save(&mut self, key: &str) {
        if self.in_trial && !self.undo.iter().any(|(k, _)| k.as_slice() == key.as_bytes()) {
            self.undo.push((SmallBytes::new(key.as_bytes()), self.map.get(key.as_bytes()).cloned()));
        }
    }

    /// The live value of `key` at server time `server`; an expired key is deleted (see [`GONE`]).
    /// The caller may change the value in place, so a trial saves the key here.
    pub fn get(&mut self, key: &str, server: i64) -> Option<&mut V> {
        self.save(key);
        let slot = self.map.get_mut(key.as_bytes())?;
        if alive(slot.deadline, server) {
            Some(&mut slot.value)
        } else {
            slot.deadline = GONE;
            None
        }
    }

    /// Writes `value` as HSET, INCR or ZADD do: a live key keeps its deadline, a new key has none.
    pub fn put(&mut self, key: &str, value: V, server: i64) {
        self.save(key);
        if let Some(slot) = self.map.get_mut(key.as_bytes()) {
            if alive(slot.deadline, server) {
                slot.value = value;
                return;
            }
        }
        self.insert(key, Slot { value, deadline: None }, server);
    }

    /// Writes `value` with a TTL, as `SET key value PX ttl` does.
    pub fn put_px(&mut self, key: &str, value: V, ttl: i64, server: i64) {
        self.save(key);
        if ttl <= 0 {
            self.map.remove(key.as_bytes());
            return;
        }
        self.insert(key, Slot { value, deadline: Some(server.saturating_add(ttl)) }, server);
    }

    /// `PEXPIRE key ttl` on a live key (a missing key is left missing).
    pub fn pexpire(&mut self, key: &str, ttl: i64, server: i64) {
        self.save(key);
        let Some(slot) = self.map.get_mut(key.as_bytes()) else { return };
        if !alive(slot.deadline, server) {
            slot.deadline = GONE;
            return;
        }
        if ttl <= 0 {
            self.map.remove(key.as_bytes());
        } else {
            slot.deadline = Some(server.saturating_add(ttl));
        }
    }

    /// Deletes `key` (a sorted set or hash whose last element went away).
    pub fn remove(&mut self, key: &str) {
        self.save(key);
        self.map.remove(key.as_bytes());
    }

    fn insert(&mut self, key: &str, slot: Slot<V>, server: i64) {
        if let Some(s) = self.map.get_mut(key.as_bytes()) {
            *s = slot;
            return;
        }
        // No sweep during a trial: dropping expired keys changes no answer, and the trial would
        // have to save every one of them.
        if !self.in_trial && self.map.len() >= self.sweep_at {
            self.map.retain(|_, s| alive(s.deadline, server));
            self.sweep_at = (self.map.len() * 2).max(FIRST_SWEEP);
        }
        self.map.insert(SmallBytes::new(key.as_bytes()), slot);
    }
}

/// What a model's store gives [`super::Reference`], whatever the model keeps under a key: the live
/// keys, and trials.
pub(crate) trait KeyStore {
    /// The live keys at `server`, sorted, with their deadlines.
    fn keys(&self, server: i64) -> Vec<(String, Option<i64>)>;

    /// `true` starts a trial, `false` ends it and undoes it (see [`Store`]'s impl).
    fn trial(&mut self, start: bool);
}

impl<V: Clone> KeyStore for Store<V> {
    /// `true` starts a trial: from now on every key a call touches is saved first. `false` ends it
    /// and puts every saved key back as it was, so the store is exactly as before the trial. This
    /// lets a model answer "what if" ([`super::Reference::probe`]) without copying all its keys:
    /// a call touches one or two.
    fn trial(&mut self, start: bool) {
        if start {
            self.undo.clear();
            self.in_trial = true;
            return;
        }
        self.in_trial = false;
        for (key, slot) in self.undo.drain(..) {
            match slot {
                Some(slot) => {
                    self.map.insert(key, slot);
                }
                None => {
                    self.map.remove(key.as_slice());
                }
            }
        }
    }

    /// The live keys at `server`, sorted, with their deadlines.
    fn keys(&self, server: i64) -> Vec<(String, Option<i64>)> {
        let mut v: Vec<(String, Option<i64>)> = self
            .map
            .iter()
            .filter(|(_, s)| alive(s.deadline, server))
            .map(|(k, s)| (String::from_utf8_lossy(k).into_owned(), s.deadline))
            .collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_lives_through_its_deadline_and_goes_after_it() {
        let mut s: Store<i64> = Store::default();
        s.put("k", 1, 0);
        s.pexpire("k", 10, 100);
        assert_eq!(s.get("k", 110).copied(), Some(1));
        assert_eq!(s.get("k", 111), None);
        assert!(s.keys(111).is_empty());
    }

    #[test]
    fn a_key_read_after_its_deadline_stays_gone_when_the_clock_goes_back() {
        let mut s: Store<i64> = Store::default();
        s.put_px("read", 1, 10, 0);
        s.put_px("expired", 2, 10, 0);
        s.put_px("untouched", 3, 10, 0);
        assert_eq!(s.get("read", 11), None);
        s.pexpire("expired", 100, 11);
        // Back before the deadlines: Redis deleted the two keys it found expired, not the third.
        assert_eq!(s.get("read", 5), None);
        assert_eq!(s.get("expired", 5), None);
        assert_eq!(s.get("untouched", 5).copied(), Some(3));
        assert_eq!(s.keys(5), vec![("untouched".to_string(), Some(10))]);
        s.put("read", 4, 5);
        assert_eq!(s.keys(5), vec![("read".to_string(), None), ("untouched".to_string(), Some(10))]);
    }

    #[test]
    fn put_keeps_the_deadline_and_pexpire_of_zero_deletes() {
        let mut s: Store<i64> = Store::default();
        s.put_px("k", 1, 5, 0);
        s.put("k", 2, 3);
        assert_eq!(s.keys(3), vec![("k".to_string(), Some(5))]);
        s.pexpire("k", 0, 3);
        assert_eq!(s.get("k", 3), None);
        s.pexpire("missing", 5, 3);
        assert!(s.keys(3).is_empty());
    }

    #[test]
    fn a_trial_puts_back_every_key_it_touched() {
        let mut s: Store<i64> = Store::default();
        s.put_px("old", 1, 5, 0);
        s.put("kept", 2, 0);
        s.trial(true);
        assert_eq!(s.get("old", 10), None, "expired at 10");
        s.put("old", 9, 10);
        *s.get("kept", 10).unwrap() += 40;
        s.put_px("new", 3, 5, 10);
        s.remove("kept");
        s.trial(false);
        assert_eq!(s.keys(0), vec![("kept".to_string(), None), ("old".to_string(), Some(5))]);
        assert_eq!(s.get("kept", 0).copied(), Some(2));
        // Outside a trial nothing is recorded.
        s.put("kept", 7, 0);
        s.trial(false);
        assert_eq!(s.get("kept", 0).copied(), Some(7));
    }

    #[test]
    fn sweeping_drops_only_expired_keys() {
        let mut s: Store<i64> = Store::default();
        for i in 0..FIRST_SWEEP - 1 {
            s.put_px(&format!("old{i}"), 0, 1, 0);
        }
        s.put("live", 7, 0);
        s.put("new", 1, 10);
        assert_eq!(s.map.len(), 2, "the old keys expired at 1 and were swept at 10");
        assert_eq!(s.get("live", 10).copied(), Some(7));
    }
}
