//! Redis 7.0's geohash, as its GEO commands use it: 26 steps of longitude and latitude interleaved
//! into a 52-bit integer (the member's sorted-set score), the nine boxes that cover a search area,
//! and the haversine distance on Redis's earth radius.
//!
//! Written to give Redis's numbers bit for bit (a score, a decoded position, a distance, which boxes a
//! search reads and in which order decide replies), so it follows Redis's arithmetic step by step
//! rather than using a geohash crate: the latitude range is Web Mercator's ±85.05112878, not ±90,
//! and decoding returns the centre of the cell.
use std::f64::consts::PI;

/// The longitude range (`GEO_LONG_MIN`, `GEO_LONG_MAX`).
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
/// The latitude range (`GEO_LAT_MIN`, `GEO_LAT_MAX`): Web Mercator's limits.
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
/// Steps of a member's hash (`GEO_STEP_MAX`): 26 bits each of longitude and latitude.
pub const STEP_MAX: u8 = 26;
/// Redis's earth radius in meters (`EARTH_RADIUS_IN_METERS`).
const EARTH_RADIUS_M: f64 = 6372797.560856;
/// Half the equator in Web Mercator meters (`MERCATOR_MAX`).
const MERCATOR_MAX: f64 = 20037726.37;
const D_R: f64 = PI / 180.0;

fn deg_rad(a: f64) -> f64 {
    a * D_R
}
fn rad_deg(a: f64) -> f64 {
    a / D_R
}

/// A hash of `step` bits of each coordinate (`GeoHashBits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Hash {
    pub bits: u64,
    pub step: u8,
}

impl Hash {
    /// A box removed from a search (`HASHISZERO`).
    pub fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }
    /// The hash shifted to 52 bits (`geohashAlign52Bits`): a member's score, or a box's first one.
    pub fn align52(&self) -> u64 {
        self.bits << (52 - u32::from(self.step) * 2)
    }
}

/// A closed interval of one coordinate.
#[derive(Clone, Copy, Debug, Default)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// The cell of a hash.
#[derive(Clone, Copy, Debug, Default)]
pub struct Area {
    pub longitude: Range,
    pub latitude: Range,
}

const WGS84_LONG: Range = Range { min: LONG_MIN, max: LONG_MAX };
const WGS84_LAT: Range = Range { min: LAT_MIN, max: LAT_MAX };

/// Spreads the low 32 bits of `x` over the even bits and those of `y` over the odd bits.
fn interleave(x: u32, y: u32) -> u64 {
    const B: [u64; 5] =
        [0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let (mut x, mut y) = (u64::from(x), u64::from(y));
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

/// [`interleave`] undone: the even bits in the low half, the odd bits in the high half.
fn deinterleave(v: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let (mut x, mut y) = (v, v >> 1);
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// `geohashEncode`: the cell of `step` bits holding a position, in the given ranges. None outside
/// them (or outside Redis's own limits).
pub fn encode(lon_range: Range, lat_range: Range, lon: f64, lat: f64, step: u8) -> Option<Hash> {
    if step > 32 || step == 0 {
        return None;
    }
    if !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_range.min || lat > lat_range.max || lon < lon_range.min || lon > lon_range.max {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (lat - lat_range.min) / (lat_range.max - lat_range.min) * scale;
    let lon_offset = (lon - lon_range.min) / (lon_range.max - lon_range.min) * scale;
    // C converts the doubles to uint32_t by truncation.
    Some(Hash { bits: interleave(lat_offset as u32, lon_offset as u32), step })
}

/// [`encode`] on Redis's ranges (`geohashEncodeWGS84`).
pub fn encode_wgs84(lon: f64, lat: f64, step: u8) -> Option<Hash> {
    encode(WGS84_LONG, WGS84_LAT, lon, lat, step)
}

/// A member's score for a position (GEOADD).
pub fn score_of(lon: f64, lat: f64) -> Option<u64> {
    encode_wgs84(lon, lat, STEP_MAX).map(|h| h.align52())
}

/// `geohashDecode`: the cell of a hash.
pub fn decode(lon_range: Range, lat_range: Range, hash: Hash) -> Option<Area> {
    if hash.is_zero() {
        return None;
    }
    let sep = deinterleave(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let lon_scale = lon_range.max - lon_range.min;
    let ilat = sep as u32;
    let ilon = (sep >> 32) as u32;
    let div = (1u64 << hash.step) as f64;
    Some(Area {
        latitude: Range {
            min: lat_range.min + (f64::from(ilat) * 1.0 / div) * lat_scale,
            max: lat_range.min + ((f64::from(ilat) + 1.0) * 1.0 / div) * lat_scale,
        },
        longitude: Range {
            min: lon_range.min + (f64::from(ilon) * 1.0 / div) * lon_scale,
            max: lon_range.min + ((f64::from(ilon) + 1.0) * 1.0 / div) * lon_scale,
        },
    })
}

fn decode_wgs84(hash: Hash) -> Option<Area> {
    decode(WGS84_LONG, WGS84_LAT, hash)
}

/// The position a member's score stands for (`decodeGeohash`): the centre of its cell, clamped to
/// the ranges. None for a score that is not a cell (a zero hash).
pub fn position_of(score: f64) -> Option<(f64, f64)> {
    // C converts the double to uint64_t (saturating here where C's is undefined).
    let area = decode_wgs84(Hash { bits: score as u64, step: STEP_MAX })?;
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    Some((lon, lat))
}

/// GEOHASH's 11-character string of a member's score: the position re-encoded on the standard
/// ±90 latitude range, five bits per character, the last character always `0`.
pub fn geohash_string(score: f64) -> Option<[u8; 11]> {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = position_of(score)?;
    let hash = encode(Range { min: -180.0, max: 180.0 }, Range { min: -90.0, max: 90.0 }, lon, lat, 26)
        .unwrap_or(Hash { bits: 0, step: 26 });
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let idx = (hash.bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    Some(out)
}

fn move_x(hash: &mut Hash, d: i8) {
    if d == 0 {
        return;
    }
    let mut x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let y = hash.bits & 0x5555555555555555;
    let shift = 64 - u32::from(hash.step) * 2;
    let zz = 0x5555555555555555u64 >> shift;
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaaaaaaaaaaaaaau64 >> shift;
    hash.bits = x | y;
}

fn move_y(hash: &mut Hash, d: i8) {
    if d == 0 {
        return;
    }
    let x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let mut y = hash.bits & 0x5555555555555555;
    let shift = 64 - u32::from(hash.step) * 2;
    let zz = 0xaaaaaaaaaaaaaaaau64 >> shift;
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555555555555555u64 >> shift;
    hash.bits = x | y;
}

/// The eight cells around a cell, in Redis's search order after the cell itself: north, south,
/// east, west, north-east, north-west, south-east, south-west.
#[derive(Clone, Copy, Debug, Default)]
pub struct Neighbors {
    pub north: Hash,
    pub south: Hash,
    pub east: Hash,
    pub west: Hash,
    pub north_east: Hash,
    pub north_west: Hash,
    pub south_east: Hash,
    pub south_west: Hash,
}

fn moved(hash: Hash, dx: i8, dy: i8) -> Hash {
    let mut h = hash;
    move_x(&mut h, dx);
    move_y(&mut h, dy);
    h
}

fn neighbors(hash: Hash) -> Neighbors {
    Neighbors {
        east: moved(hash, 1, 0),
        west: moved(hash, -1, 0),
        south: moved(hash, 0, -1),
        north: moved(hash, 0, 1),
        north_west: moved(hash, -1, 1),
        north_east: moved(hash, 1, 1),
        south_east: moved(hash, 1, -1),
        south_west: moved(hash, -1, -1),
    }
}

/// A search area (`GeoShape`): its centre, a radius or a box, in a unit of `conversion` meters.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub lon: f64,
    pub lat: f64,
    pub kind: ShapeKind,
    /// Meters per unit (1, 1000, 0.3048, 1609.34).
    pub conversion: f64,
}

#[derive(Clone, Copy, Debug)]
pub enum ShapeKind {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// `geohashEstimateStepsByRadius`: the steps whose cells are about the size of the search.
fn estimate_steps(range_m: f64, lat: f64) -> u8 {
    if range_m == 0.0 {
        return 26;
    }
    let mut range = range_m;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// `geohashBoundingBox`: min longitude, min latitude, max longitude, max latitude of the search.
fn bounding_box(shape: &Shape) -> [f64; 4] {
    let (h, w) = match shape.kind {
        ShapeKind::Radius(r) => (r, r),
        ShapeKind::Box { width, height } => (height / 2.0, width / 2.0),
    };
    let height = shape.conversion * h;
    let width = shape.conversion * w;
    let lat_delta = rad_deg(height / EARTH_RADIUS_M);
    let long_delta_top = rad_deg(width / EARTH_RADIUS_M / deg_rad(shape.lat + lat_delta).cos());
    let long_delta_bottom = rad_deg(width / EARTH_RADIUS_M / deg_rad(shape.lat - lat_delta).cos());
    let southern = shape.lat < 0.0;
    let long_delta = if southern { long_delta_bottom } else { long_delta_top };
    [shape.lon - long_delta, shape.lat - lat_delta, shape.lon + long_delta, shape.lat + lat_delta]
}

/// The cells a search reads, in order (`geohashCalculateAreasByShapeWGS84` then
/// `membersOfAllNeighbors`' order: the centre, N, S, E, W, NE, NW, SE, SW), removed ones zero.
pub fn search_boxes(shape: &Shape) -> [Hash; 9] {
    let [min_lon, min_lat, max_lon, max_lat] = bounding_box(shape);
    let radius_m = match shape.kind {
        ShapeKind::Radius(r) => r,
        ShapeKind::Box { width, height } => ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt(),
    } * shape.conversion;
    let mut steps = estimate_steps(radius_m, shape.lat);
    let cell = |steps: u8| encode_wgs84(shape.lon, shape.lat, steps).unwrap_or(Hash { bits: 0, step: steps });
    let mut hash = cell(steps);
    let mut n = neighbors(hash);
    let mut area = decode_wgs84(hash).unwrap_or_default();
    // When the search reaches past the neighbors, use one step less (cells twice as large).
    let decrease = {
        let d = |h: Hash| decode_wgs84(h).unwrap_or_default();
        d(n.north).latitude.max < max_lat
            || d(n.south).latitude.min > min_lat
            || d(n.east).longitude.max < max_lon
            || d(n.west).longitude.min > min_lon
    };
    if steps > 1 && decrease {
        steps -= 1;
        hash = cell(steps);
        n = neighbors(hash);
        area = decode_wgs84(hash).unwrap_or_default();
    }
    // Leave out the neighbors the search cannot reach.
    if steps >= 2 {
        let zero = Hash::default();
        if area.latitude.min < min_lat {
            n.south = zero;
            n.south_west = zero;
            n.south_east = zero;
        }
        if area.latitude.max > max_lat {
            n.north = zero;
            n.north_east = zero;
            n.north_west = zero;
        }
        if area.longitude.min < min_lon {
            n.west = zero;
            n.south_west = zero;
            n.north_west = zero;
        }
        if area.longitude.max > max_lon {
            n.east = zero;
            n.south_east = zero;
            n.north_east = zero;
        }
    }
    [hash, n.north, n.south, n.east, n.west, n.north_east, n.north_west, n.south_east, n.south_west]
}

/// The scores of the members in a cell: `[min, max)` (`scoresOfGeoHashBox`).
pub fn box_scores(hash: Hash) -> (f64, f64) {
    let min = hash.align52();
    let max = Hash { bits: hash.bits + 1, step: hash.step }.align52();
    (min as f64, max as f64)
}

/// The haversine distance in meters between two positions (`geohashGetDistance`).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lat1r = deg_rad(lat1);
    let lon1r = deg_rad(lon1);
    let lat2r = deg_rad(lat2);
    let lon2r = deg_rad(lon2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let v = ((lon2r - lon1r) / 2.0).sin();
    2.0 * EARTH_RADIUS_M * (u * u + lat1r.cos() * lat2r.cos() * v * v).sqrt().asin()
}

/// The distance from the centre of `shape` to a position when the position is inside the shape
/// (`geohashGetDistanceIfInRadiusWGS84`, `geohashGetDistanceIfInRectangle`).
pub fn distance_if_inside(shape: &Shape, lon: f64, lat: f64) -> Option<f64> {
    match shape.kind {
        ShapeKind::Radius(r) => {
            let d = distance(shape.lon, shape.lat, lon, lat);
            (d <= r * shape.conversion).then_some(d)
        }
        ShapeKind::Box { width, height } => {
            let (w, h) = (width * shape.conversion, height * shape.conversion);
            let lon_distance = distance(lon, lat, shape.lon, lat);
            let lat_distance = distance(lon, lat, lon, shape.lat);
            if lon_distance > w / 2.0 || lat_distance > h / 2.0 {
                return None;
            }
            Some(distance(shape.lon, shape.lat, lon, lat))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scores, positions and hashes as Redis 7.0.15 gives them for its documentation's example.
    #[test]
    fn palermo_and_catania_as_redis_has_them() {
        assert_eq!(score_of(13.361389, 38.115556), Some(3479099956230698));
        assert_eq!(score_of(15.087269, 37.502669), Some(3479447370796909));
        let (lon, lat) = position_of(3479099956230698.0).unwrap();
        assert_eq!(crate::reply::format_human_double(lon), "13.36138933897018433");
        assert_eq!(crate::reply::format_human_double(lat), "38.11555639549629859");
        assert_eq!(&geohash_string(3479099956230698.0).unwrap(), b"sqc8b49rny0");
        assert_eq!(&geohash_string(3479447370796909.0).unwrap(), b"sqdtr74hyu0");
        let (lon2, lat2) = position_of(3479447370796909.0).unwrap();
        assert_eq!(format!("{:.4}", distance(lon, lat, lon2, lat2) / 1000.0), "166.2742");
    }

    #[test]
    fn interleave_round_trips() {
        for (x, y) in [(0u32, 0u32), (1, 0), (0, 1), (0x3ffffff, 0x1234567), (u32::MAX, 7)] {
            let v = deinterleave(interleave(x, y));
            assert_eq!((v as u32, (v >> 32) as u32), (x, y));
        }
    }

    #[test]
    fn out_of_range_positions_do_not_encode() {
        assert_eq!(score_of(180.1, 0.0), None);
        assert_eq!(score_of(0.0, 85.06), None);
        assert!(score_of(-180.0, -85.05112878).is_some());
    }
}
