//! The sorted-set value: a member index plus a skiplist with spans, as in Redis's `t_zset.c`, so score
//! ranges, ranks and rank ranges all cost O(log n) to find and O(m) to walk or remove.
//!
//! Layout: the skiplist nodes live in an arena (`Vec`) and link to each other by index, with a free
//! list for reuse. Each member's bytes are allocated once, as an `Rc<[u8]>` shared by its node and by the
//! member-to-node hash map. Level 0 of every node is stored inline; only the one node in four that has
//! higher levels carries a second allocation for them.
//!
//! The `skiplist` flag tracks the encoding Redis 7.0 would use (listpack or skiplist) because it is
//! observable: OBJECT ENCODING reports it, and a listpack stores scores as text, which turns -0 into 0.
use std::cell::Cell;
use std::cmp::Ordering;
use std::fmt;
use std::rc::Rc;

use rustc_hash::FxHashMap;

/// "No node" in a link.
const NIL: u32 = u32::MAX;
/// Index of the header node, which holds no member.
const HEAD: u32 = 0;
/// Redis's ZSKIPLIST_MAXLEVEL.
const MAX_LEVEL: usize = 32;

/// One level of a node: the next node at this level and how many level-0 steps it skips.
/// For a link to `NIL` the span counts the nodes after this one (Redis's invariant).
#[derive(Clone, Copy, Debug)]
struct Link {
    next: u32,
    span: u32,
}

const EMPTY_LINK: Link = Link { next: NIL, span: 0 };

#[derive(Clone, Debug)]
struct Node {
    member: Rc<[u8]>,
    score: f64,
    /// The previous node at level 0 (`NIL` for the first node).
    backward: u32,
    /// Level 0, kept inline: with p = 1/4, three nodes in four have no other level.
    l0: Link,
    /// Levels 1 and up.
    upper: Box<[Link]>,
}

impl Node {
    #[inline]
    fn levels(&self) -> usize {
        1 + self.upper.len()
    }
    #[inline]
    fn link(&self, level: usize) -> Link {
        if level == 0 {
            self.l0
        } else {
            self.upper[level - 1]
        }
    }
    #[inline]
    fn link_mut(&mut self, level: usize) -> &mut Link {
        if level == 0 {
            &mut self.l0
        } else {
            &mut self.upper[level - 1]
        }
    }
}

/// A handle to one member of a [`ZSet`], valid until the set is next modified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZRef(u32);

/// A score interval, as ZRANGEBYSCORE's `min`/`max` (with `(` making a bound exclusive).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub max: f64,
    pub min_ex: bool,
    pub max_ex: bool,
}

impl ScoreRange {
    #[inline]
    pub fn gte_min(&self, s: f64) -> bool {
        if self.min_ex {
            s > self.min
        } else {
            s >= self.min
        }
    }
    #[inline]
    pub fn lte_max(&self, s: f64) -> bool {
        if self.max_ex {
            s < self.max
        } else {
            s <= self.max
        }
    }
    /// True when no score can be inside (`zslIsInRange`'s first test).
    pub fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.min_ex || self.max_ex))
    }
}

/// One end of a lexicographic range (ZRANGEBYLEX): `-`, `+`, `[value` or `(value`.
#[derive(Clone, Debug, PartialEq)]
pub enum LexBound {
    /// `-`: below every string.
    Min,
    /// `+`: above every string.
    Max,
    /// `[value`.
    Incl(Vec<u8>),
    /// `(value`.
    Excl(Vec<u8>),
}

impl LexBound {
    /// `m` compared with this bound's value (`sdscmplex`).
    #[inline]
    fn cmp_member(&self, m: &[u8]) -> Ordering {
        match self {
            LexBound::Min => Ordering::Greater,
            LexBound::Max => Ordering::Less,
            LexBound::Incl(v) | LexBound::Excl(v) => m.cmp(v.as_slice()),
        }
    }
    #[inline]
    fn exclusive(&self) -> bool {
        !matches!(self, LexBound::Incl(_))
    }
}

/// A lexicographic interval.
#[derive(Clone, Debug, PartialEq)]
pub struct LexRange {
    pub min: LexBound,
    pub max: LexBound,
}

impl LexRange {
    #[inline]
    pub fn gte_min(&self, m: &[u8]) -> bool {
        let c = self.min.cmp_member(m);
        if self.min.exclusive() {
            c == Ordering::Greater
        } else {
            c != Ordering::Less
        }
    }
    #[inline]
    pub fn lte_max(&self, m: &[u8]) -> bool {
        let c = self.max.cmp_member(m);
        if self.max.exclusive() {
            c == Ordering::Less
        } else {
            c != Ordering::Greater
        }
    }
    /// True when no string can be inside (`zslIsInLexRange`'s first test).
    pub fn is_empty(&self) -> bool {
        use LexBound::*;
        let cmp = match (&self.min, &self.max) {
            (Min, Min) | (Max, Max) => Ordering::Equal,
            (Min, _) | (_, Max) => Ordering::Less,
            (Max, _) | (_, Min) => Ordering::Greater,
            (Incl(a) | Excl(a), Incl(b) | Excl(b)) => a.cmp(b),
        };
        cmp == Ordering::Greater || (cmp == Ordering::Equal && (self.min.exclusive() || self.max.exclusive()))
    }
}

/// A sorted set with Redis's ordering: by score, ties by member bytes.
#[derive(Clone)]
pub struct ZSet {
    dict: FxHashMap<Rc<[u8]>, u32>,
    nodes: Vec<Node>,
    free: Vec<u32>,
    /// Levels in use (at least 1).
    level: usize,
    /// Nodes linked into the skiplist.
    length: usize,
    tail: u32,
    rng: u64,
    /// A shared empty member for freed nodes (cloning it does not allocate).
    empty: Rc<[u8]>,
    /// Skiplist nodes visited by searches and walks: a diagnostic to check complexity in tests.
    steps: Cell<u64>,
    /// True once Redis 7.0 would have converted the set from listpack to skiplist encoding: when a
    /// member is added to a set that already has zset-max-listpack-entries (128) members, or a member
    /// longer than zset-max-listpack-value (64 bytes) is added. None of the commands here ever convert
    /// back (only loading an RDB, ZRANGESTORE and the Z*STORE family do), and an emptied set's key is
    /// deleted.
    pub skiplist: bool,
    /// Redis's dict table sizes while skiplist-encoded, for MEMORY USAGE: stepped by lookups, adds and
    /// deletes as Redis's incremental rehash is (see [`super::dict_table::DictTable`]).
    pub dict_table: super::dict_table::DictTable,
}

impl Default for ZSet {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ZSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.skiplist { "ZSet(skiplist) " } else { "ZSet(listpack) " })?;
        f.debug_list().entries(self.iter().map(|(m, s)| (String::from_utf8_lossy(m).into_owned(), s))).finish()
    }
}

impl ZSet {
    /// An empty set, listpack-encoded.
    pub fn new() -> Self {
        let empty: Rc<[u8]> = Rc::from(&[][..]);
        let head = Node {
            member: empty.clone(),
            score: 0.0,
            backward: NIL,
            l0: EMPTY_LINK,
            upper: vec![EMPTY_LINK; MAX_LEVEL - 1].into_boxed_slice(),
        };
        ZSet {
            dict: FxHashMap::default(),
            nodes: vec![head],
            free: Vec::new(),
            level: 1,
            length: 0,
            tail: NIL,
            rng: 0x9E37_79B9_7F4A_7C15,
            empty,
            steps: Cell::new(0),
            skiplist: false,
            dict_table: Default::default(),
        }
    }

    /// Number of members, O(1).
    #[inline]
    pub fn len(&self) -> usize {
        self.dict.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.dict.is_empty()
    }
    /// The encoding name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        if self.skiplist {
            "skiplist"
        } else {
            "listpack"
        }
    }
    /// Skiplist nodes visited so far by searches, walks and removals (for complexity tests).
    pub fn steps(&self) -> u64 {
        self.steps.get()
    }
    #[inline]
    fn tick(&self) {
        self.steps.set(self.steps.get() + 1);
    }

    // ---- lookups ---------------------------------------------------------------------------------

    /// The handle of a member, O(1).
    #[inline]
    pub fn find(&self, m: &[u8]) -> Option<ZRef> {
        if self.skiplist {
            self.dict_table.lookup();
        }
        self.dict.get(m).map(|&i| ZRef(i))
    }
    /// A member's score, O(1).
    #[inline]
    pub fn score(&self, m: &[u8]) -> Option<f64> {
        if self.skiplist {
            self.dict_table.lookup();
        }
        self.dict.get(m).map(|&i| self.nodes[i as usize].score)
    }
    #[inline]
    pub fn score_at(&self, r: ZRef) -> f64 {
        self.nodes[r.0 as usize].score
    }
    #[inline]
    pub fn member_at(&self, r: ZRef) -> &[u8] {
        &self.nodes[r.0 as usize].member
    }
    /// The lowest member.
    #[inline]
    pub fn first(&self) -> Option<ZRef> {
        Self::opt(self.nodes[HEAD as usize].l0.next)
    }
    /// The highest member.
    #[inline]
    pub fn last(&self) -> Option<ZRef> {
        Self::opt(self.tail)
    }
    /// The member after `r` in ascending order.
    #[inline]
    pub fn next(&self, r: ZRef) -> Option<ZRef> {
        self.tick();
        Self::opt(self.nodes[r.0 as usize].l0.next)
    }
    /// The member before `r`.
    #[inline]
    pub fn prev(&self, r: ZRef) -> Option<ZRef> {
        self.tick();
        Self::opt(self.nodes[r.0 as usize].backward)
    }
    #[inline]
    fn opt(i: u32) -> Option<ZRef> {
        if i == NIL {
            None
        } else {
            Some(ZRef(i))
        }
    }
    /// Every member with its score, ascending.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        let mut cur = self.nodes[HEAD as usize].l0.next;
        std::iter::from_fn(move || {
            if cur == NIL {
                return None;
            }
            let n = &self.nodes[cur as usize];
            cur = n.l0.next;
            Some((&n.member[..], n.score))
        })
    }

    /// True when node `i` sorts before (`score`, `m`).
    #[inline]
    fn before(&self, i: u32, score: f64, m: &[u8]) -> bool {
        let n = &self.nodes[i as usize];
        n.score < score || (n.score == score && &n.member[..] < m)
    }

    /// The 1-based rank of a member in ascending order (`zslGetRank`), O(log n).
    pub fn rank_at(&self, r: ZRef) -> usize {
        let (score, m) = {
            let n = &self.nodes[r.0 as usize];
            (n.score, n.member.clone())
        };
        let mut rank = 0usize;
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                self.tick();
                let l = self.nodes[x as usize].link(i);
                if l.next == NIL {
                    break;
                }
                let n = &self.nodes[l.next as usize];
                if n.score < score || (n.score == score && n.member[..] <= m[..]) {
                    rank += l.span as usize;
                    x = l.next;
                } else {
                    break;
                }
            }
            if x == r.0 {
                return rank;
            }
        }
        rank
    }
    /// The 0-based rank of a member in ascending order.
    pub fn rank(&self, m: &[u8]) -> Option<usize> {
        self.find(m).map(|r| self.rank_at(r) - 1)
    }
    /// The member at 1-based `rank` (`zslGetElementByRank`), O(log n).
    pub fn by_rank(&self, rank: usize) -> Option<ZRef> {
        if rank == 0 || rank > self.length {
            return None;
        }
        let mut traversed = 0usize;
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                self.tick();
                let l = self.nodes[x as usize].link(i);
                if l.next != NIL && traversed + l.span as usize <= rank {
                    traversed += l.span as usize;
                    x = l.next;
                } else {
                    break;
                }
            }
            if traversed == rank {
                return Some(ZRef(x));
            }
        }
        None
    }

    /// Walks down from the header to the last node at each level for which `go_on` holds, filling
    /// `update` with the node reached at every level; returns the node reached at level 0.
    #[inline]
    fn descend(&self, update: &mut [u32; MAX_LEVEL], mut go_on: impl FnMut(&Node) -> bool) -> u32 {
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                self.tick();
                let next = self.nodes[x as usize].link(i).next;
                if next != NIL && go_on(&self.nodes[next as usize]) {
                    x = next;
                } else {
                    break;
                }
            }
            update[i] = x;
        }
        x
    }

    /// The lowest member with a score inside `range` (`zslNthInRange(..., 0)` for offset 0).
    pub fn first_in_range(&self, range: &ScoreRange) -> Option<ZRef> {
        if range.is_empty() {
            return None;
        }
        let mut update = [HEAD; MAX_LEVEL];
        let x = self.descend(&mut update, |n| !range.gte_min(n.score));
        let x = self.nodes[x as usize].l0.next;
        (x != NIL && range.lte_max(self.nodes[x as usize].score)).then_some(ZRef(x))
    }
    /// The highest member with a score inside `range`.
    pub fn last_in_range(&self, range: &ScoreRange) -> Option<ZRef> {
        if range.is_empty() {
            return None;
        }
        let mut update = [HEAD; MAX_LEVEL];
        let x = self.descend(&mut update, |n| range.lte_max(n.score));
        (x != HEAD && range.gte_min(self.nodes[x as usize].score)).then_some(ZRef(x))
    }
    /// `zslIsInLexRange`: false when the range is empty, the last member is below `min` or the first
    /// is above `max`.
    fn lex_range_may_match(&self, range: &LexRange) -> bool {
        let (Some(first), Some(last)) = (self.first(), self.last()) else { return false };
        !range.is_empty() && range.gte_min(self.member_at(last)) && range.lte_max(self.member_at(first))
    }
    /// The lowest member inside a lexicographic range. Lex ranges assume equal scores; with mixed
    /// scores Redis's answer depends on the encoding, so this follows it: a listpack is scanned from
    /// the head (`zzlFirstInLexRange`), a skiplist is searched level by level (`zslFirstInLexRange`,
    /// whose answer then also depends on Redis's random levels).
    pub fn first_in_lex(&self, range: &LexRange) -> Option<ZRef> {
        if !self.lex_range_may_match(range) {
            return None;
        }
        let x = if self.skiplist {
            let mut update = [HEAD; MAX_LEVEL];
            let x = self.descend(&mut update, |n| !range.gte_min(&n.member));
            Self::opt(self.nodes[x as usize].l0.next)?
        } else {
            let mut x = self.first()?;
            while !range.gte_min(self.member_at(x)) {
                x = self.next(x)?;
            }
            x
        };
        range.lte_max(self.member_at(x)).then_some(x)
    }
    /// The highest member inside a lexicographic range (`zzlLastInLexRange`/`zslLastInLexRange`).
    pub fn last_in_lex(&self, range: &LexRange) -> Option<ZRef> {
        if !self.lex_range_may_match(range) {
            return None;
        }
        let x = if self.skiplist {
            let mut update = [HEAD; MAX_LEVEL];
            let x = self.descend(&mut update, |n| range.lte_max(&n.member));
            Self::opt(if x == HEAD { NIL } else { x })?
        } else {
            let mut x = self.last()?;
            while !range.lte_max(self.member_at(x)) {
                x = self.prev(x)?;
            }
            x
        };
        range.gte_min(self.member_at(x)).then_some(x)
    }
    /// Members with a score in `range`, O(log n).
    pub fn count_in_range(&self, range: &ScoreRange) -> usize {
        match (self.first_in_range(range), self.last_in_range(range)) {
            (Some(a), Some(b)) => self.rank_at(b) + 1 - self.rank_at(a),
            _ => 0,
        }
    }
    /// ZLEXCOUNT: a listpack counts forward from the first match while members stay below `max`; a
    /// skiplist subtracts ranks in O(log n) (which, with mixed scores, can even be negative in Redis).
    pub fn count_in_lex(&self, range: &LexRange) -> i64 {
        let Some(first) = self.first_in_lex(range) else { return 0 };
        if self.skiplist {
            let len = self.length as i64;
            let mut count = len - (self.rank_at(first) as i64 - 1);
            if let Some(last) = self.last_in_lex(range) {
                count -= len - self.rank_at(last) as i64;
            }
            count
        } else {
            let mut n = 0;
            let mut x = Some(first);
            while let Some(r) = x {
                if !range.lte_max(self.member_at(r)) {
                    break;
                }
                n += 1;
                x = self.next(r);
            }
            n
        }
    }

    // ---- writes ----------------------------------------------------------------------------------

    /// Redis's `zslRandomLevel` (p = 1/4), on a per-set xorshift generator so runs are reproducible.
    fn random_level(&mut self) -> usize {
        let mut level = 1;
        loop {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            // Two random bits per trial: continue with probability 1/4.
            let mut bits = self.rng;
            for _ in 0..16 {
                if bits & 3 != 0 || level >= MAX_LEVEL {
                    return level;
                }
                level += 1;
                bits >>= 2;
            }
        }
    }

    /// Converts a listpack-encoded set to a skiplist (`zsetConvert`, which SORT does to the set it
    /// sorts); a skiplist stays as it is.
    pub fn convert_to_skiplist(&mut self) {
        if !self.skiplist {
            self.skiplist = true;
            self.dict_table = super::dict_table::DictTable::grown(self.dict.len());
        }
    }

    /// A listpack stores scores as text, where -0 is written as the integer 0.
    #[inline]
    fn stored(&self, s: f64) -> f64 {
        if !self.skiplist && s == 0.0 {
            0.0
        } else {
            s
        }
    }

    /// Links an allocated, unlinked node into place by its score and member (`zslInsert`).
    fn link_node(&mut self, x: u32) {
        let (score, member) = {
            let n = &self.nodes[x as usize];
            (n.score, n.member.clone())
        };
        let mut update = [HEAD; MAX_LEVEL];
        let mut rank = [0usize; MAX_LEVEL];
        let mut p = HEAD;
        for i in (0..self.level).rev() {
            rank[i] = if i == self.level - 1 { 0 } else { rank[i + 1] };
            loop {
                self.tick();
                let l = self.nodes[p as usize].link(i);
                if l.next != NIL && self.before(l.next, score, &member) {
                    rank[i] += l.span as usize;
                    p = l.next;
                } else {
                    break;
                }
            }
            update[i] = p;
        }
        let lvl = self.nodes[x as usize].levels();
        if lvl > self.level {
            for i in self.level..lvl {
                rank[i] = 0;
                update[i] = HEAD;
                self.nodes[HEAD as usize].link_mut(i).span = self.length as u32;
            }
            self.level = lvl;
        }
        for i in 0..lvl {
            let u = self.nodes[update[i] as usize].link(i);
            let gap = (rank[0] - rank[i]) as u32;
            *self.nodes[x as usize].link_mut(i) = Link { next: u.next, span: u.span - gap };
            *self.nodes[update[i] as usize].link_mut(i) = Link { next: x, span: gap + 1 };
        }
        for (i, &u) in update.iter().enumerate().take(self.level).skip(lvl) {
            self.nodes[u as usize].link_mut(i).span += 1;
        }
        self.nodes[x as usize].backward = if update[0] == HEAD { NIL } else { update[0] };
        let next = self.nodes[x as usize].l0.next;
        if next != NIL {
            self.nodes[next as usize].backward = x;
        } else {
            self.tail = x;
        }
        self.length += 1;
    }

    /// Unlinks node `x`, whose predecessors at every level are in `update` (`zslDeleteNode`).
    fn unlink_node(&mut self, x: u32, update: &[u32; MAX_LEVEL]) {
        for (i, &u) in update.iter().enumerate().take(self.level) {
            let ul = self.nodes[u as usize].link(i);
            if ul.next == x {
                let xl = self.nodes[x as usize].link(i);
                *self.nodes[u as usize].link_mut(i) = Link { next: xl.next, span: ul.span + xl.span - 1 };
            } else {
                self.nodes[u as usize].link_mut(i).span -= 1;
            }
        }
        let (next, back) = {
            let n = &self.nodes[x as usize];
            (n.l0.next, n.backward)
        };
        if next != NIL {
            self.nodes[next as usize].backward = back;
        } else {
            self.tail = back;
        }
        while self.level > 1 && self.nodes[HEAD as usize].link(self.level - 1).next == NIL {
            self.level -= 1;
        }
        self.length -= 1;
    }

    /// The predecessors at every level of the node holding (`score`, `m`).
    fn predecessors(&self, score: f64, m: &[u8]) -> [u32; MAX_LEVEL] {
        let mut update = [HEAD; MAX_LEVEL];
        self.descend(&mut update, |n| n.score < score || (n.score == score && &n.member[..] < m));
        update
    }

    /// Unlinks node `x` and returns its slot to the free list; the caller removes it from `dict`.
    fn unlink_and_free(&mut self, x: u32) -> Rc<[u8]> {
        let (score, member) = {
            let n = &self.nodes[x as usize];
            (n.score, n.member.clone())
        };
        let update = self.predecessors(score, &member);
        self.unlink_node(x, &update);
        self.free_node(x);
        member
    }

    fn free_node(&mut self, x: u32) {
        let n = &mut self.nodes[x as usize];
        n.member = self.empty.clone();
        n.upper = Box::default();
        self.free.push(x);
    }

    /// Adds a member that is not in the set yet (the caller checked with [`ZSet::find`]), updating the
    /// encoding first exactly as `zsetAdd` does.
    pub fn insert_new(&mut self, m: &[u8], score: f64) {
        debug_assert!(!self.dict.contains_key(m));
        let limits = super::limits::current();
        if !self.skiplist && (self.dict.len() >= limits.zset_entries as usize || m.len() > limits.zset_value as usize) {
            self.skiplist = true;
            // zsetConvert adds the members one by one to a new dict, then zsetAdd looks the new one up.
            self.dict_table = super::dict_table::DictTable::grown(self.dict.len());
            self.dict_table.lookup();
        }
        if self.skiplist {
            self.dict_table.add(self.dict.len());
        }
        let score = self.stored(score);
        let member: Rc<[u8]> = Rc::from(m);
        let lvl = self.random_level();
        let upper = if lvl > 1 { vec![EMPTY_LINK; lvl - 1].into_boxed_slice() } else { Box::default() };
        let node = Node { member: member.clone(), score, backward: NIL, l0: EMPTY_LINK, upper };
        let x = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.link_node(x);
        self.dict.insert(member, x);
    }

    /// Changes the score of an existing member (`zslUpdateScore`): in place when its position does not
    /// change, otherwise by unlinking and relinking the same node.
    pub fn set_score(&mut self, r: ZRef, score: f64) {
        let score = self.stored(score);
        let x = r.0;
        let (cur, back, next) = {
            let n = &self.nodes[x as usize];
            (n.score, n.backward, n.l0.next)
        };
        if cur == score && cur.is_sign_negative() == score.is_sign_negative() {
            return;
        }
        if (back == NIL || self.nodes[back as usize].score < score)
            && (next == NIL || self.nodes[next as usize].score > score)
        {
            self.nodes[x as usize].score = score;
            return;
        }
        let member = self.nodes[x as usize].member.clone();
        let update = self.predecessors(cur, &member);
        self.unlink_node(x, &update);
        self.nodes[x as usize].score = score;
        self.link_node(x);
    }

    /// Sets a member's score, adding it if needed; returns the previous score.
    pub fn insert(&mut self, m: &[u8], score: f64) -> Option<f64> {
        match self.find(m) {
            Some(r) => {
                let prev = self.score_at(r);
                self.set_score(r, score);
                Some(prev)
            }
            None => {
                self.insert_new(m, score);
                None
            }
        }
    }

    /// Removes a member; returns true when it was there.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        if self.skiplist {
            self.dict_table.delete();
        }
        match self.dict.remove(m) {
            Some(x) => {
                self.unlink_and_free(x);
                self.shrink_if_empty();
                true
            }
            None => false,
        }
    }

    /// Removes the lowest (`max == false`) or highest member and returns it with its score.
    pub fn pop(&mut self, max: bool) -> Option<(Rc<[u8]>, f64)> {
        let x = if max { self.tail } else { self.nodes[HEAD as usize].l0.next };
        if x == NIL {
            return None;
        }
        let score = self.nodes[x as usize].score;
        let member = self.unlink_and_free(x);
        if self.skiplist {
            self.dict_table.delete();
        }
        self.dict.remove(&member);
        self.shrink_if_empty();
        Some((member, score))
    }

    /// Removes every member with a score in `range` (`zslDeleteRangeByScore`): O(log n + m).
    pub fn remove_range_by_score(&mut self, range: &ScoreRange) -> usize {
        if range.is_empty() {
            return 0;
        }
        let mut update = [HEAD; MAX_LEVEL];
        let x = self.descend(&mut update, |n| !range.gte_min(n.score));
        let mut x = self.nodes[x as usize].l0.next;
        let mut removed = 0;
        while x != NIL && range.lte_max(self.nodes[x as usize].score) {
            self.tick();
            let next = self.nodes[x as usize].l0.next;
            self.remove_linked(x, &update);
            removed += 1;
            x = next;
        }
        self.shrink_if_empty();
        removed
    }

    /// Removes every member in a lexicographic range: a listpack from its first match scanned from the
    /// head (`zzlDeleteRangeByLex`), a skiplist from its level-by-level search (`zslDeleteRangeByLex`),
    /// then in both cases onwards while members stay below `max`. O(log n + m) for a skiplist.
    pub fn remove_range_by_lex(&mut self, range: &LexRange) -> usize {
        let mut update = [HEAD; MAX_LEVEL];
        let mut x = if self.skiplist {
            let x = self.descend(&mut update, |n| !range.gte_min(&n.member));
            self.nodes[x as usize].l0.next
        } else {
            let Some(first) = self.first_in_lex(range) else { return 0 };
            let n = &self.nodes[first.0 as usize];
            update = self.predecessors(n.score, &n.member);
            first.0
        };
        let mut removed = 0;
        while x != NIL && range.lte_max(&self.nodes[x as usize].member) {
            self.tick();
            let next = self.nodes[x as usize].l0.next;
            self.remove_linked(x, &update);
            removed += 1;
            x = next;
        }
        self.shrink_if_empty();
        removed
    }

    /// Removes the members at 1-based ranks `start..=end` (`zslDeleteRangeByRank`): O(log n + m).
    pub fn remove_range_by_rank(&mut self, start: usize, end: usize) -> usize {
        if start == 0 || start > end || start > self.length {
            return 0;
        }
        let mut update = [HEAD; MAX_LEVEL];
        let mut traversed = 0usize;
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                self.tick();
                let l = self.nodes[x as usize].link(i);
                if l.next != NIL && traversed + (l.span as usize) < start {
                    traversed += l.span as usize;
                    x = l.next;
                } else {
                    break;
                }
            }
            update[i] = x;
        }
        traversed += 1;
        let mut x = self.nodes[x as usize].l0.next;
        let mut removed = 0;
        while x != NIL && traversed <= end {
            self.tick();
            let next = self.nodes[x as usize].l0.next;
            self.remove_linked(x, &update);
            removed += 1;
            traversed += 1;
            x = next;
        }
        self.shrink_if_empty();
        removed
    }

    /// Unlinks, frees and un-indexes node `x`, given its predecessors.
    #[inline]
    fn remove_linked(&mut self, x: u32, update: &[u32; MAX_LEVEL]) {
        self.unlink_node(x, update);
        let member = std::mem::replace(&mut self.nodes[x as usize].member, self.empty.clone());
        if self.skiplist {
            self.dict_table.delete();
        }
        self.dict.remove(&member);
        self.free_node(x);
    }

    /// Gives the arena back once the set is empty (its key is about to be deleted anyway).
    fn shrink_if_empty(&mut self) {
        if self.skiplist {
            // Redis checks `htNeedsResize` after every removal command.
            self.dict_table.resize_if_needed(self.dict.len());
        }
        if self.dict.is_empty() && self.nodes.len() > 1 {
            self.nodes.truncate(1);
            self.free.clear();
            self.level = 1;
            self.tail = NIL;
            self.length = 0;
            let head = &mut self.nodes[HEAD as usize];
            head.l0 = EMPTY_LINK;
            for l in head.upper.iter_mut() {
                *l = EMPTY_LINK;
            }
        }
    }

    /// Checks every skiplist invariant (order, spans, backward links, index); for tests.
    #[cfg(test)]
    fn check(&self) {
        assert_eq!(self.length, self.dict.len());
        // Level 0: order, backward links, index.
        let mut x = self.nodes[HEAD as usize].l0.next;
        let mut prev = NIL;
        let mut pos = 0usize;
        let mut rank_of = std::collections::HashMap::new();
        while x != NIL {
            pos += 1;
            let n = &self.nodes[x as usize];
            assert_eq!(n.backward, prev);
            assert_eq!(self.dict.get(&n.member[..]), Some(&x));
            if prev != NIL {
                let p = &self.nodes[prev as usize];
                assert!(p.score < n.score || (p.score == n.score && p.member < n.member));
            }
            assert!(n.levels() <= self.level);
            rank_of.insert(x, pos);
            prev = x;
            x = n.l0.next;
        }
        assert_eq!(self.tail, prev);
        assert_eq!(pos, self.length);
        // Spans at every level.
        for i in 0..self.level {
            let mut x = HEAD;
            let mut r = 0usize;
            loop {
                let l = self.nodes[x as usize].link(i);
                if l.next == NIL {
                    break;
                }
                let nr = rank_of[&l.next];
                assert_eq!(l.span as usize, nr - r, "span at level {i}");
                r = nr;
                x = l.next;
            }
        }
        if self.level > 1 {
            assert_ne!(self.nodes[HEAD as usize].link(self.level - 1).next, NIL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, HashMap};

    fn range(min: f64, max: f64) -> ScoreRange {
        ScoreRange { min, max, min_ex: false, max_ex: false }
    }

    /// A model ordered like Redis: (score bits made orderable, member).
    fn model_key(s: f64, m: &[u8]) -> (i64, Vec<u8>) {
        let b = s.to_bits() as i64;
        let k = if b < 0 { b ^ i64::MAX } else { b };
        let k = if s == 0.0 { 0 } else { k };
        (k, m.to_vec())
    }

    #[test]
    fn insert_rank_and_remove_keep_invariants() {
        let mut z = ZSet::new();
        let mut model = BTreeSet::new();
        let mut scores = HashMap::new();
        let mut seed = 12345u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for step in 0..4000 {
            let m = format!("m{}", rnd() % 300).into_bytes();
            let s = (rnd() % 50) as f64 - 25.0;
            match rnd() % 5 {
                0 => {
                    let had = scores.remove(&m);
                    if let Some(old) = had {
                        model.remove(&model_key(old, &m));
                    }
                    assert_eq!(z.remove(&m), had.is_some());
                }
                _ => {
                    if let Some(old) = scores.insert(m.clone(), s) {
                        model.remove(&model_key(old, &m));
                    }
                    model.insert(model_key(s, &m));
                    z.insert(&m, s);
                }
            }
            if step % 97 == 0 {
                z.check();
            }
        }
        z.check();
        let ordered: Vec<Vec<u8>> = model.iter().map(|(_, m)| m.clone()).collect();
        let got: Vec<Vec<u8>> = z.iter().map(|(m, _)| m.to_vec()).collect();
        assert_eq!(got, ordered);
        for (i, m) in ordered.iter().enumerate() {
            assert_eq!(z.rank(m), Some(i));
            assert_eq!(z.member_at(z.by_rank(i + 1).unwrap()), &m[..]);
        }
        assert_eq!(z.by_rank(ordered.len() + 1), None);
    }

    #[test]
    fn range_removals_match_a_model() {
        for (lo, hi, min_ex, max_ex) in [(3.0, 7.0, false, false), (3.0, 7.0, true, true), (-1.0, 0.0, false, true)] {
            let mut z = ZSet::new();
            for i in 0..200 {
                z.insert(format!("{i:03}").as_bytes(), (i % 10) as f64);
            }
            let r = ScoreRange { min: lo, max: hi, min_ex, max_ex };
            let expect = z.iter().filter(|(_, s)| r.gte_min(*s) && r.lte_max(*s)).count();
            assert_eq!(z.count_in_range(&r), expect);
            assert_eq!(z.remove_range_by_score(&r), expect);
            z.check();
            assert_eq!(z.len(), 200 - expect);
            assert_eq!(z.count_in_range(&r), 0);
        }
        let mut z = ZSet::new();
        for i in 0..300 {
            z.insert(format!("{i:03}").as_bytes(), 0.0);
        }
        assert_eq!(z.remove_range_by_rank(11, 20), 10);
        z.check();
        assert_eq!(z.member_at(z.by_rank(11).unwrap()), b"020");
        let lex = LexRange { min: LexBound::Excl(b"100".to_vec()), max: LexBound::Incl(b"150".to_vec()) };
        assert_eq!(z.count_in_lex(&lex), 50);
        assert_eq!(z.remove_range_by_lex(&lex), 50);
        z.check();
        assert_eq!(z.remove_range_by_rank(1, 1000), 240);
        assert!(z.is_empty());
        z.check();
    }

    #[test]
    fn encoding_follows_redis_thresholds() {
        let mut z = ZSet::new();
        for i in 0..128 {
            z.insert(format!("{i}").as_bytes(), i as f64);
        }
        assert_eq!(z.encoding(), "listpack");
        z.insert(b"0", 5.0); // an update never converts
        assert_eq!(z.encoding(), "listpack");
        z.insert(b"x", 1.0);
        assert_eq!(z.encoding(), "skiplist");
        z.remove(b"x");
        z.remove(b"1");
        assert_eq!(z.encoding(), "skiplist");
        let mut z = ZSet::new();
        z.insert(&[b'a'; 64], 1.0);
        assert_eq!(z.encoding(), "listpack");
        z.insert(&[b'a'; 65], 1.0);
        assert_eq!(z.encoding(), "skiplist");
    }

    #[test]
    fn listpack_turns_negative_zero_into_zero() {
        let mut z = ZSet::new();
        z.insert(b"a", -0.0);
        assert!(z.score(b"a").unwrap().is_sign_positive());
        z.skiplist = true;
        z.insert(b"b", -0.0);
        assert!(z.score(b"b").unwrap().is_sign_negative());
    }

    /// The sliding-log pattern at 100,000 members: each trim, count, add and peek must cost O(log n)
    /// node visits (plus the removed ones), never a walk over the set.
    #[test]
    fn big_set_range_operations_are_logarithmic() {
        let n = 100_000u32;
        let mut z = ZSet::new();
        for i in 0..n {
            z.insert(format!("req-{i}").as_bytes(), i as f64);
        }
        z.check();
        let mut worst = 0u64;
        for t in 0..2000u32 {
            let before = z.steps();
            // Trim the oldest 5, add 5 newer, peek at both ends.
            let cut = (t * 5 + 4) as f64;
            let removed =
                z.remove_range_by_score(&ScoreRange { min: f64::NEG_INFINITY, max: cut, min_ex: false, max_ex: false });
            assert_eq!(removed, 5);
            for k in 0..5 {
                z.insert_new(format!("new-{t}-{k}").as_bytes(), (n + t * 5 + k) as f64);
            }
            assert_eq!(z.len(), n as usize);
            let first = z.by_rank(1).unwrap();
            assert_eq!(z.score_at(first), cut + 1.0);
            assert!(z.by_rank(z.len()).is_some());
            assert_eq!(z.count_in_range(&range(cut + 1.0, cut + 10.0)), 10);
            worst = worst.max(z.steps() - before);
        }
        // log4(100000) is about 8.3; each search touches a few nodes per level.
        assert!(worst < 1500, "an operation visited {worst} nodes");
        z.check();
        // One removal of a large block costs the block plus a search.
        let before = z.steps();
        assert_eq!(z.remove_range_by_score(&range(50_000.0, 59_999.0)), 10_000);
        let cost = z.steps() - before;
        assert!((10_000..11_000).contains(&cost), "cost {cost}");
        z.check();
    }
}
