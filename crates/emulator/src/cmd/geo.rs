//! GEO commands (Redis 7.0 `geo.c`): GEOADD, GEOPOS, GEODIST, GEOHASH, GEOSEARCH, GEOSEARCHSTORE,
//! GEORADIUS, GEORADIUSBYMEMBER and their `_RO` forms. A geo set is a sorted set whose scores are
//! 52-bit geohashes ([`crate::geohash`]); GEOADD is ZADD with the positions turned into scores, as
//! Redis rewrites it. Arguments are checked in Redis's order, with its error texts.
use super::zsets::read;
use crate::command_spec::flags::*;
use crate::command_spec::{eq_ic, CommandSpec, KeySpec, NOT_INTEGER, SYNTAX};
use crate::core::Core;
use crate::geohash::{self, Shape, ShapeKind};
use crate::keyspace::{ScoreRange, Value, ZSet};
use crate::reply::Reply;
use crate::settings::notify;
use crate::tri;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec { name: "geoadd", arity: -5, flags: WRITE | DENYOOM, keys: KeySpec::ONE, handler: geoadd },
    CommandSpec { name: "geopos", arity: -2, flags: READONLY, keys: KeySpec::ONE, handler: geopos },
    CommandSpec { name: "geodist", arity: -4, flags: READONLY, keys: KeySpec::ONE, handler: geodist },
    CommandSpec { name: "geohash", arity: -2, flags: READONLY, keys: KeySpec::ONE, handler: geohash_cmd },
    CommandSpec {
        name: "georadius",
        arity: -6,
        flags: WRITE | DENYOOM | MOVABLE_KEYS,
        keys: KeySpec::movable(radius_keys),
        handler: georadius,
    },
    CommandSpec {
        name: "georadiusbymember",
        arity: -5,
        flags: WRITE | DENYOOM | MOVABLE_KEYS,
        keys: KeySpec::movable(radius_keys),
        handler: georadiusbymember,
    },
    CommandSpec { name: "georadius_ro", arity: -6, flags: READONLY, keys: KeySpec::ONE, handler: georadius_ro },
    CommandSpec {
        name: "georadiusbymember_ro",
        arity: -5,
        flags: READONLY,
        keys: KeySpec::ONE,
        handler: georadiusbymember_ro,
    },
    CommandSpec { name: "geosearch", arity: -7, flags: READONLY, keys: KeySpec::ONE, handler: geosearch },
    CommandSpec {
        name: "geosearchstore",
        arity: -8,
        flags: WRITE | DENYOOM,
        keys: KeySpec::TWO,
        handler: geosearchstore,
    },
];

const UNIT: &str = "ERR unsupported unit provided. please use M, KM, FT, MI";
const NOT_MEMBER: &str = "ERR could not decode requested zset member";

/// GEORADIUS's keys: the source, and the STORE/STOREDIST destination (`georadiusGetKeys`).
fn radius_keys<'a>(a: &[&'a [u8]]) -> Vec<&'a [u8]> {
    let mut out = vec![a[1]];
    let mut i = 5;
    while i < a.len() {
        if (eq_ic(a[i], "store") || eq_ic(a[i], "storedist")) && i + 1 < a.len() {
            // The last STORE or STOREDIST wins.
            out.truncate(1);
            out.push(a[i + 1]);
            i += 1;
        }
        i += 1;
    }
    out
}

/// A coordinate as `getDoubleFromObject` reads it.
fn parse_double(b: &[u8], msg: &str) -> Result<f64, Reply> {
    super::zsets::parse_score(b).ok_or_else(|| Reply::err(msg))
}

/// `extractLongLatOrReply`: a longitude and a latitude, inside Redis's limits.
fn parse_lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), Reply> {
    let x = parse_double(lon, crate::command_spec::NOT_FLOAT)?;
    let y = parse_double(lat, crate::command_spec::NOT_FLOAT)?;
    if !(geohash::LONG_MIN..=geohash::LONG_MAX).contains(&x) || !(geohash::LAT_MIN..=geohash::LAT_MAX).contains(&y) {
        return Err(Reply::err(format!("ERR invalid longitude,latitude pair {x:.6},{y:.6}")));
    }
    Ok((x, y))
}

/// `extractUnitOrReply`: meters per unit.
fn parse_unit(u: &[u8]) -> Result<f64, Reply> {
    Ok(if eq_ic(u, "m") {
        1.0
    } else if eq_ic(u, "km") {
        1000.0
    } else if eq_ic(u, "ft") {
        0.3048
    } else if eq_ic(u, "mi") {
        1609.34
    } else {
        return Err(Reply::err(UNIT));
    })
}

/// `extractDistanceOrReply`: a radius and its unit.
fn parse_distance(r: &[u8], unit: &[u8]) -> Result<(f64, f64), Reply> {
    let d = parse_double(r, "ERR need numeric radius")?;
    if d < 0.0 {
        return Err(Reply::err("ERR radius cannot be negative"));
    }
    Ok((d, parse_unit(unit)?))
}

/// `extractBoxOrReply`: a width, a height and their unit.
fn parse_box(w: &[u8], h: &[u8], unit: &[u8]) -> Result<(f64, f64, f64), Reply> {
    let w = parse_double(w, "ERR need numeric width")?;
    let h = parse_double(h, "ERR need numeric height")?;
    if h < 0.0 || w < 0.0 {
        return Err(Reply::err("ERR height or width cannot be negative"));
    }
    Ok((w, h, parse_unit(unit)?))
}

/// A distance as `addReplyDoubleDistance` sends it: four decimals.
fn distance_reply(d: f64) -> Reply {
    Reply::Bulk(format!("{d:.4}").into_bytes())
}

/// The position of a member (`longLatFromMember`).
fn member_position(z: &ZSet, m: &[u8]) -> Option<(f64, f64)> {
    geohash::position_of(z.score(m)?)
}

// ---- GEOADD, GEOPOS, GEODIST, GEOHASH ------------------------------------------------------------

/// GEOADD key [NX|XX] [CH] lon lat member ...: ZADD with each position's score.
fn geoadd(core: &mut Core, a: &[&[u8]]) -> Reply {
    let (mut nx, mut xx) = (false, false);
    let mut first = 2;
    while first < a.len() {
        let o = a[first];
        if eq_ic(o, "nx") {
            nx = true;
        } else if eq_ic(o, "xx") {
            xx = true;
        } else if !eq_ic(o, "ch") {
            break;
        }
        first += 1;
    }
    if (a.len() - first) % 3 != 0 || (nx && xx) {
        return Reply::err(SYNTAX);
    }
    let mut scores = Vec::with_capacity((a.len() - first) / 3);
    for t in a[first..].chunks_exact(3) {
        let (lon, lat) = tri!(parse_lon_lat(t[0], t[1]));
        let score = geohash::score_of(lon, lat).unwrap_or(0);
        scores.push(itoa::Buffer::new().format(score).as_bytes().to_vec());
    }
    let mut args: Vec<&[u8]> = Vec::with_capacity(first + scores.len() * 2);
    args.push(b"zadd");
    args.extend_from_slice(&a[1..first]);
    for (t, s) in a[first..].chunks_exact(3).zip(&scores) {
        args.push(s);
        args.push(t[2]);
    }
    super::zsets::zadd(core, &args)
}

/// GEOPOS key member ...: each member's position, or a nil array.
fn geopos(core: &mut Core, a: &[&[u8]]) -> Reply {
    let z = tri!(read(core, a[1]));
    Reply::Array(
        a[2..]
            .iter()
            .map(|m| match z.and_then(|z| member_position(z, m)) {
                Some((lon, lat)) => Reply::Array(vec![Reply::HumanDouble(lon), Reply::HumanDouble(lat)]),
                None => Reply::NilArray,
            })
            .collect(),
    )
}

/// GEODIST key member1 member2 [unit].
fn geodist(core: &mut Core, a: &[&[u8]]) -> Reply {
    let to_meters = match a.len() {
        5 => tri!(parse_unit(a[4])),
        4 => 1.0,
        _ => return Reply::err(SYNTAX),
    };
    let Some(z) = tri!(read(core, a[1])) else { return Reply::Nil };
    match (member_position(z, a[2]), member_position(z, a[3])) {
        (Some((x1, y1)), Some((x2, y2))) => distance_reply(geohash::distance(x1, y1, x2, y2) / to_meters),
        _ => Reply::Nil,
    }
}

/// GEOHASH key member ...: each member's 11-character geohash, or nil.
fn geohash_cmd(core: &mut Core, a: &[&[u8]]) -> Reply {
    let z = tri!(read(core, a[1]));
    Reply::Array(
        a[2..]
            .iter()
            .map(|m| match z.and_then(|z| z.score(m)).and_then(geohash::geohash_string) {
                Some(h) => Reply::Bulk(h.to_vec()),
                None => Reply::Nil,
            })
            .collect(),
    )
}

// ---- searches ------------------------------------------------------------------------------------

/// Which search command runs (`georadiusGeneric`'s flags).
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// GEORADIUS[_RO]: centre given as a position.
    Coords,
    /// GEORADIUSBYMEMBER[_RO]: centre given as a member.
    Member,
    /// GEOSEARCH.
    Search,
    /// GEOSEARCHSTORE.
    SearchStore,
}

fn georadius(core: &mut Core, a: &[&[u8]]) -> Reply {
    search(core, a, Kind::Coords, false)
}
fn georadiusbymember(core: &mut Core, a: &[&[u8]]) -> Reply {
    search(core, a, Kind::Member, false)
}
fn georadius_ro(core: &mut Core, a: &[&[u8]]) -> Reply {
    search(core, a, Kind::Coords, true)
}
fn georadiusbymember_ro(core: &mut Core, a: &[&[u8]]) -> Reply {
    search(core, a, Kind::Member, true)
}
fn geosearch(core: &mut Core, a: &[&[u8]]) -> Reply {
    search(core, a, Kind::Search, true)
}
fn geosearchstore(core: &mut Core, a: &[&[u8]]) -> Reply {
    search(core, a, Kind::SearchStore, false)
}

#[derive(Clone, Copy, PartialEq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// One member found inside the search area (`geoPoint`).
struct Point {
    member: Vec<u8>,
    score: f64,
    lon: f64,
    lat: f64,
    dist: f64,
}

/// `georadiusGeneric`: every search command, by `kind`; `nostore` refuses STORE and STOREDIST.
fn search(core: &mut Core, a: &[&[u8]], kind: Kind, nostore: bool) -> Reply {
    let src = if kind == Kind::SearchStore { a[2] } else { a[1] };
    let mut storekey: Option<&[u8]> = None;
    let mut storedist = false;
    let geosearch = matches!(kind, Kind::Search | Kind::SearchStore);
    // The set is looked up once; the search reads it after parsing (no write happens in between).
    let exists = tri!(read(core, src)).is_some();
    let mut center: Option<(f64, f64)> = None;
    let mut radius: Option<(f64, f64)> = None;
    let mut bbox: Option<(f64, f64, f64)> = None;
    let base = match kind {
        Kind::Coords => {
            center = Some(tri!(parse_lon_lat(a[2], a[3])));
            radius = Some(tri!(parse_distance(a[4], a[5])));
            6
        }
        Kind::Member if !exists => 5,
        Kind::Member => {
            let z = tri!(read(core, src)).expect("exists");
            let Some(p) = member_position(z, a[2]) else { return Reply::err(NOT_MEMBER) };
            center = Some(p);
            radius = Some(tri!(parse_distance(a[3], a[4])));
            5
        }
        Kind::Search => 2,
        Kind::SearchStore => {
            storekey = Some(a[1]);
            3
        }
    };
    let (mut withdist, mut withhash, mut withcoord) = (false, false, false);
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let mut sort = Sort::None;
    let mut any = false;
    let mut count: i64 = 0;
    let rest = &a[base..];
    let mut i = 0;
    while i < rest.len() {
        let arg = rest[i];
        let left = rest.len() - i - 1;
        if eq_ic(arg, "withdist") {
            withdist = true;
        } else if eq_ic(arg, "withhash") {
            withhash = true;
        } else if eq_ic(arg, "withcoord") {
            withcoord = true;
        } else if eq_ic(arg, "any") {
            any = true;
        } else if eq_ic(arg, "asc") {
            sort = Sort::Asc;
        } else if eq_ic(arg, "desc") {
            sort = Sort::Desc;
        } else if eq_ic(arg, "count") && left >= 1 {
            count = tri!(crate::command_spec::arg_i64(rest[i + 1]).map_err(|_| Reply::err(NOT_INTEGER)));
            if count <= 0 {
                return Reply::err("ERR COUNT must be > 0");
            }
            i += 1;
        } else if eq_ic(arg, "store") && left >= 1 && !nostore && !geosearch {
            storekey = Some(rest[i + 1]);
            storedist = false;
            i += 1;
        } else if eq_ic(arg, "storedist") && left >= 1 && !nostore && !geosearch {
            storekey = Some(rest[i + 1]);
            storedist = true;
            i += 1;
        } else if eq_ic(arg, "storedist") && kind == Kind::SearchStore {
            storedist = true;
        } else if eq_ic(arg, "frommember") && left >= 1 && geosearch && !fromloc {
            if exists {
                let z = tri!(read(core, src)).expect("exists");
                let Some(p) = member_position(z, rest[i + 1]) else { return Reply::err(NOT_MEMBER) };
                center = Some(p);
            }
            frommember = true;
            i += 1;
        } else if eq_ic(arg, "fromlonlat") && left >= 2 && geosearch && !frommember {
            center = Some(tri!(parse_lon_lat(rest[i + 1], rest[i + 2])));
            fromloc = true;
            i += 2;
        } else if eq_ic(arg, "byradius") && left >= 2 && geosearch && !bybox {
            radius = Some(tri!(parse_distance(rest[i + 1], rest[i + 2])));
            byradius = true;
            i += 2;
        } else if eq_ic(arg, "bybox") && left >= 3 && geosearch && !byradius {
            bbox = Some(tri!(parse_box(rest[i + 1], rest[i + 2], rest[i + 3])));
            bybox = true;
            i += 3;
        } else {
            return Reply::err(SYNTAX);
        }
        i += 1;
    }
    if storekey.is_some() && (withdist || withhash || withcoord) {
        let what = if kind == Kind::SearchStore { "GEOSEARCHSTORE" } else { "STORE option in GEORADIUS" };
        return Reply::err(format!("ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"));
    }
    let name = String::from_utf8_lossy(a[0]);
    if geosearch && !(frommember || fromloc) {
        return Reply::err(format!("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"));
    }
    if geosearch && !(byradius || bybox) {
        return Reply::err(format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"));
    }
    if any && count == 0 {
        return Reply::err("ERR the ANY argument requires COUNT argument");
    }
    if !exists {
        return match storekey {
            Some(dst) => {
                delete_stored(core, dst);
                Reply::Int(0)
            }
            None => Reply::Array(Vec::new()),
        };
    }
    if count != 0 && sort == Sort::None && !any {
        sort = Sort::Asc;
    }
    let (lon, lat) = center.unwrap_or((0.0, 0.0));
    let shape = match (radius, bbox) {
        (_, Some((width, height, conversion))) => {
            Shape { lon, lat, kind: ShapeKind::Box { width, height }, conversion }
        }
        (Some((r, conversion)), None) => Shape { lon, lat, kind: ShapeKind::Radius(r), conversion },
        (None, None) => return Reply::err(SYNTAX),
    };
    let limit = if any { count as usize } else { 0 };
    let z = tri!(read(core, src)).expect("exists");
    let mut found = points_in_shape(z, &shape, limit);
    if found.is_empty() && storekey.is_none() {
        return Reply::Array(Vec::new());
    }
    let returned = if count == 0 { found.len() } else { found.len().min(count as usize) };
    match sort {
        Sort::Asc => found.sort_by(|x, y| x.dist.partial_cmp(&y.dist).unwrap_or(std::cmp::Ordering::Equal)),
        Sort::Desc => found.sort_by(|x, y| y.dist.partial_cmp(&x.dist).unwrap_or(std::cmp::Ordering::Equal)),
        Sort::None => {}
    }
    found.truncate(returned);
    let with = With { dist: withdist, hash: withhash, coord: withcoord };
    found_reply(core, found, shape.conversion, storekey.map(|k| (k, storedist)), geosearch, with)
}

/// The WITH options of a search's reply.
#[derive(Clone, Copy)]
struct With {
    dist: bool,
    hash: bool,
    coord: bool,
}

/// A search's reply: the points `found` (their distances in the unit `conversion` gives), each with
/// what `with` asks; or, with a STORE key (and whether STOREDIST), the points stored there as a
/// sorted set by score or distance, and their count.
fn found_reply(
    core: &mut Core,
    found: Vec<Point>,
    conversion: f64,
    store: Option<(&[u8], bool)>,
    geosearch: bool,
    with: With,
) -> Reply {
    match store {
        None => {
            let options = usize::from(with.dist) + usize::from(with.hash) + usize::from(with.coord);
            let items = found
                .into_iter()
                .map(|p| {
                    let dist = p.dist / conversion;
                    if options == 0 {
                        return Reply::Bulk(p.member);
                    }
                    let mut v = Vec::with_capacity(options + 1);
                    v.push(Reply::Bulk(p.member));
                    if with.dist {
                        v.push(distance_reply(dist));
                    }
                    if with.hash {
                        v.push(Reply::Int(p.score as i64));
                    }
                    if with.coord {
                        v.push(Reply::Array(vec![Reply::HumanDouble(p.lon), Reply::HumanDouble(p.lat)]));
                    }
                    Reply::Array(v)
                })
                .collect();
            Reply::Array(items)
        }
        Some((dst, storedist)) => {
            let n = found.len();
            if n == 0 {
                delete_stored(core, dst);
                return Reply::Int(0);
            }
            let mut result = ZSet::new();
            for p in &found {
                let score = if storedist { p.dist / conversion } else { p.score };
                result.insert_new(&p.member, score);
            }
            core.db.set(dst, Value::ZSet(Box::new(result)), None);
            core.touch(dst);
            let event = if geosearch { "geosearchstore" } else { "georadiusstore" };
            core.notify(notify::ZSET, event, dst);
            Reply::Int(n as i64)
        }
    }
}

/// An empty result stored: the destination is deleted.
fn delete_stored(core: &mut Core, dst: &[u8]) {
    let now = core.now_ms();
    if core.db.remove(dst, now) {
        core.touch(dst);
        core.notify(notify::GENERIC, "del", dst);
    }
}

/// The members inside `shape`, in the order Redis finds them: cell by cell (the centre, then N, S,
/// E, W, NE, NW, SE, SW), by score within a cell; with `limit`, the search stops once that many
/// are found (`membersOfAllNeighbors`).
fn points_in_shape(z: &ZSet, shape: &Shape, limit: usize) -> Vec<Point> {
    let boxes = geohash::search_boxes(shape);
    let mut out = Vec::new();
    let mut last_processed = 0;
    for (i, b) in boxes.iter().enumerate() {
        if b.is_zero() {
            continue;
        }
        // Large searches can give the same cell twice in a row: it is read once. (Redis compares
        // with the last cell read, and never with the centre.)
        if last_processed != 0 && *b == boxes[last_processed] {
            continue;
        }
        if !out.is_empty() && limit != 0 && out.len() >= limit {
            break;
        }
        let (min, max) = geohash::box_scores(*b);
        let range = ScoreRange { min, max, min_ex: false, max_ex: true };
        let mut cur = z.first_in_range(&range);
        while let Some(r) = cur {
            let score = z.score_at(r);
            if !range.lte_max(score) {
                break;
            }
            if let Some((lon, lat)) = geohash::position_of(score) {
                if let Some(dist) = geohash::distance_if_inside(shape, lon, lat) {
                    out.push(Point { member: z.member_at(r).to_vec(), score, lon, lat, dist });
                }
            }
            if !out.is_empty() && limit != 0 && out.len() >= limit {
                break;
            }
            cur = z.next(r);
        }
        last_processed = i;
    }
    out
}
