//! SORT and SORT_RO (`sortCommandGeneric` of Redis 7.0): numeric or ALPHA, ASC/DESC, LIMIT, BY a
//! pattern (`*` replaced by the element, `->field` reading a hash; a pattern without `*` means no
//! sorting), GET patterns (`#` is the element itself) and STORE into a list.
//!
//! As in Redis: the options are parsed first (BY with a real pattern and any GET are refused on a
//! cluster), then the key's type; a set is sorted ALPHA even under `BY nosort` when the result is
//! stored or a script asks (so that the answer does not depend on the set's internal order);
//! numeric sorting breaks ties by comparing the elements, and a value that is not a number fails
//! the whole command ("One or more scores can't be converted into double").
use std::cmp::Ordering;

use crate::command_spec::flags::*;
use crate::command_spec::{eq_ic, CommandSpec, KeySpec, SYNTAX};
use crate::core::Core;
use crate::keyspace::{Value, WRONGTYPE};
use crate::reply::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "sort", arity: -2, flags: WRITE | DENYOOM, keys: KeySpec::movable(sort_keys), handler: sort },
    CommandSpec { name: "sort_ro", arity: -2, flags: READONLY, keys: KeySpec::ONE, handler: sort_ro },
];

/// The key sorted, and STORE's destination when given.
fn sort_keys<'a>(a: &[&'a [u8]]) -> Vec<&'a [u8]> {
    let mut out = vec![a[1]];
    let mut j = 2;
    while j < a.len() {
        if eq_ic(a[j], "limit") {
            j += 3;
            continue;
        }
        if eq_ic(a[j], "store") && j + 1 < a.len() {
            out.push(a[j + 1]);
        }
        if eq_ic(a[j], "store") || eq_ic(a[j], "by") || eq_ic(a[j], "get") {
            j += 1;
        }
        j += 1;
    }
    out
}

fn sort(core: &mut Core, a: &[&[u8]]) -> Reply {
    sort_generic(core, a, false)
}

fn sort_ro(core: &mut Core, a: &[&[u8]]) -> Reply {
    sort_generic(core, a, true)
}

/// One element being sorted: the element, and what it sorts by.
struct Item {
    elem: Vec<u8>,
    score: f64,
    /// ALPHA with BY: the value looked up (None when missing).
    cmp: Option<Vec<u8>>,
}

/// Bytes up to the first NUL (what C string functions see).
fn cstr(b: &[u8]) -> &[u8] {
    b.iter().position(|&c| c == 0).map_or(b, |i| &b[..i])
}

/// `strtod` over a whole C string, as SORT reads a value: leading spaces pass, an empty string is 0,
/// NaN and out-of-range values fail.
fn sort_score(b: &[u8]) -> Option<f64> {
    let b = cstr(b);
    if b.is_empty() {
        return Some(0.0);
    }
    let start = b.iter().position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))?;
    super::zsets::parse_score(&b[start..])
}

/// `lookupKeyByPattern`: `#` is the element; otherwise the first `*` is replaced by the element and
/// the key read as a string, or with `->field` after the `*`, as a hash's field. None when the pattern
/// has no `*`, the key is missing or of another type, or the field is missing.
fn by_pattern(core: &mut Core, pattern: &[u8], elem: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" || (pattern.len() > 1 && pattern[0] == b'#' && pattern[1] == 0) {
        return Some(elem.to_vec());
    }
    let spat = pattern;
    let star = cstr(spat).iter().position(|&c| c == b'*')?;
    let after = &spat[star + 1..];
    let arrow = cstr(after).windows(2).position(|w| w == b"->").filter(|&i| cstr(after).len() > i + 2);
    let (post, field) = match arrow {
        Some(i) => (&after[..i], Some(&after[i + 2..])),
        None => (after, None),
    };
    let mut key = spat[..star].to_vec();
    key.extend_from_slice(elem);
    key.extend_from_slice(post);
    let now = core.now_ms();
    let e = core.db.get(&key, now)?;
    match (&e.value, field) {
        (Value::Hash(h), Some(f)) => h.get(f).map(<[u8]>::to_vec),
        (Value::Str(s), None) => Some(s.to_bytes()),
        _ => None,
    }
}

fn sort_generic(core: &mut Core, a: &[&[u8]], readonly: bool) -> Reply {
    let (mut desc, mut alpha) = (false, false);
    let (mut limit_start, mut limit_count) = (0i64, -1i64);
    let mut dontsort = false;
    let mut sortby: Option<&[u8]> = None;
    let mut store: Option<&[u8]> = None;
    let mut gets: Vec<&[u8]> = Vec::new();
    let mut j = 2;
    while j < a.len() {
        let left = a.len() - j - 1;
        let o = a[j];
        if eq_ic(o, "asc") {
            desc = false;
        } else if eq_ic(o, "desc") {
            desc = true;
        } else if eq_ic(o, "alpha") {
            alpha = true;
        } else if eq_ic(o, "limit") && left >= 2 {
            limit_start = crate::tri!(crate::command_spec::arg_i64(a[j + 1]));
            limit_count = crate::tri!(crate::command_spec::arg_i64(a[j + 2]));
            j += 2;
        } else if !readonly && eq_ic(o, "store") && left >= 1 {
            store = Some(a[j + 1]);
            j += 1;
        } else if eq_ic(o, "by") && left >= 1 {
            sortby = Some(a[j + 1]);
            if !cstr(a[j + 1]).contains(&b'*') {
                dontsort = true;
            } else if core.cluster {
                return Reply::err("ERR BY option of SORT denied in Cluster mode.");
            }
            j += 1;
        } else if eq_ic(o, "get") && left >= 1 {
            if core.cluster {
                return Reply::err("ERR GET option of SORT denied in Cluster mode.");
            }
            gets.push(a[j + 1]);
            j += 1;
        } else {
            return Reply::err(SYNTAX);
        }
        j += 1;
    }

    // The elements, in the order Redis loads them.
    let now = core.now_ms();
    enum Kind {
        List,
        Set,
        ZSet,
    }
    let (kind, elems): (Kind, Vec<Vec<u8>>) = match core.db.get_mut(a[1], now) {
        None => (Kind::List, Vec::new()),
        Some(e) => match &mut e.value {
            Value::List(l) => (Kind::List, l.iter().cloned().collect()),
            Value::Set(s) => (Kind::Set, s.ordered().into_iter().map(<[u8]>::to_vec).collect()),
            // Redis converts a listpack-encoded sorted set to a skiplist to sort it, and keeps it so.
            Value::ZSet(z) => {
                z.convert_to_skiplist();
                (Kind::ZSet, z.iter().map(|(m, _)| m.to_vec()).collect())
            }
            _ => return Reply::err(WRONGTYPE),
        },
    };
    if dontsort && matches!(kind, Kind::Set) && (store.is_some() || core.in_script()) {
        dontsort = false;
        alpha = true;
        sortby = None;
    }
    let vectorlen = elems.len() as i64;
    let mut start = limit_start.max(0);
    let mut end = if limit_count < 0 { vectorlen - 1 } else { start.wrapping_add(limit_count).wrapping_sub(1) };
    if start >= vectorlen {
        start = vectorlen - 1;
        end = vectorlen - 2;
    }
    if end >= vectorlen {
        end = vectorlen - 1;
    }

    let mut items: Vec<Item>;
    if dontsort && !matches!(kind, Kind::Set) {
        // Lists and sorted sets keep their own order (reversed by DESC); LIMIT picks the range.
        items = Vec::new();
        if end >= start {
            let n = (end - start + 1) as usize;
            let it: Box<dyn Iterator<Item = Vec<u8>>> =
                if desc { Box::new(elems.into_iter().rev()) } else { Box::new(elems.into_iter()) };
            items = it.skip(start as usize).take(n).map(|elem| Item { elem, score: 0.0, cmp: None }).collect();
            end -= start;
            start = 0;
        }
    } else {
        items = elems.into_iter().map(|elem| Item { elem, score: 0.0, cmp: None }).collect();
    }

    let conversion_error =
        !dontsort && sort_items(core, &mut items, Order { sortby, alpha, desc, stored: store.is_some() });
    if conversion_error {
        return Reply::err("ERR One or more scores can't be converted into double");
    }
    let range: &[Item] = if end >= start && start >= 0 { &items[start as usize..=end as usize] } else { &[] };
    sorted_reply(core, range, &gets, store)
}

/// How SORT orders: by a pattern's values or the elements, as strings (ALPHA) or numbers, and
/// which way; a STORE compares bytes, a reply C strings (as Redis's `strcoll` in the C locale
/// stops at a NUL).
struct Order<'a> {
    sortby: Option<&'a [u8]>,
    alpha: bool,
    desc: bool,
    stored: bool,
}

/// Sorts `items` as `o` says; true when a score could not be read as a number (SORT then fails).
fn sort_items(core: &mut Core, items: &mut [Item], o: Order<'_>) -> bool {
    let Order { sortby, alpha, desc, stored } = o;
    let mut conversion_error = false;
    for item in items.iter_mut() {
        let byval = match sortby {
            Some(p) => match by_pattern(core, p, &item.elem) {
                Some(v) => v,
                None => continue,
            },
            None => item.elem.clone(),
        };
        if alpha {
            if sortby.is_some() {
                item.cmp = Some(byval);
            }
        } else {
            match sort_score(&byval) {
                Some(s) => item.score = s,
                None => conversion_error = true,
            }
        }
    }
    let bypattern = sortby.is_some();
    let cmp = |x: &Item, y: &Item| -> Ordering {
        let c = if !alpha {
            x.score.partial_cmp(&y.score).unwrap_or(Ordering::Equal).then_with(|| x.elem.cmp(&y.elem))
        } else if bypattern {
            match (&x.cmp, &y.cmp) {
                (None, None) => Ordering::Equal,
                (None, _) => Ordering::Less,
                (_, None) => Ordering::Greater,
                (Some(p), Some(q)) => {
                    if stored {
                        p.cmp(q)
                    } else {
                        cstr(p).cmp(cstr(q))
                    }
                }
            }
        } else if stored {
            x.elem.cmp(&y.elem)
        } else {
            cstr(&x.elem).cmp(cstr(&y.elem))
        };
        if desc {
            c.reverse()
        } else {
            c
        }
    };
    items.sort_by(cmp);
    conversion_error
}

/// SORT's reply for the sorted `range`: the elements (or what each GET pattern names), or, with
/// STORE, the list written to `store` (the key removed when the list is empty) and its length.
fn sorted_reply(core: &mut Core, range: &[Item], gets: &[&[u8]], store: Option<&[u8]>) -> Reply {
    match store {
        None => {
            let mut out = Vec::new();
            for it in range {
                if gets.is_empty() {
                    out.push(Reply::Bulk(it.elem.clone()));
                }
                for g in gets {
                    out.push(by_pattern(core, g, &it.elem).map_or(Reply::Nil, Reply::Bulk));
                }
            }
            Reply::Array(out)
        }
        Some(dst) => {
            let mut list = std::collections::VecDeque::new();
            for it in range {
                if gets.is_empty() {
                    list.push_back(it.elem.clone());
                }
                for g in gets {
                    list.push_back(by_pattern(core, g, &it.elem).unwrap_or_default());
                }
            }
            let n = list.len() as i64;
            if n > 0 {
                core.db.set(dst, Value::List(list), None);
                core.touch(dst);
            } else {
                let now = core.now_ms();
                if core.db.remove(dst, now) {
                    core.touch(dst);
                }
            }
            Reply::Int(n)
        }
    }
}
