//! Bursts placed around a window boundary: the pattern that lets a fixed window admit twice its limit.
use serde::{Deserialize, Serialize};

use super::{check_count, check_span_ms, check_span_us, defaults, invalid, sort_stable, Arrival};
use crate::Result;
use limitlab_emulator::clock::Micros;

const CONTEXT: &str = "traffic.boundary_burst";

/// The most bursts one pattern may list.
pub const MAX_BURSTS: usize = 10_000;

/// Bursts positioned relative to one window boundary.
///
/// Window boundaries are the multiples of `window_ms` since the Unix epoch, as fixed-window limiters
/// compute them (`floor(now_ms / window_ms)`). Boundary 0 is the first one at or after `start`;
/// `boundary` (default 1) picks the one that many windows later, so that with an aligned `start` the
/// default boundary is the end of the first whole window.
///
/// The seed is not used: the pattern is exact.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoundaryBurst {
    pub window_ms: u64,
    #[serde(default = "defaults::one")]
    pub boundary: u64,
    /// The key of every burst that does not name its own.
    #[serde(default = "defaults::key")]
    pub key: String,
    #[serde(default = "defaults::one")]
    pub cost: u64,
    pub bursts: Vec<Burst>,
}

/// `count` requests `spacing_us` apart, positioned by `offset_us` relative to the boundary (negative
/// is before it). `anchor` says which request sits at the offset: the first (default; the burst
/// extends after it) or the last (the burst ends there, extending before it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Burst {
    pub count: u64,
    /// Zero puts the whole burst at one instant (concurrent requests).
    #[serde(default)]
    pub spacing_us: u64,
    pub offset_us: i64,
    #[serde(default)]
    pub anchor: Anchor,
    #[serde(default)]
    pub phase: String,
    /// Overrides the pattern's `key` for this burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// Which request of a [`Burst`] sits at its offset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Anchor {
    #[default]
    First,
    Last,
}

impl Burst {
    /// The first request's offset from the boundary, in µs.
    fn first_offset(&self) -> i64 {
        match self.anchor {
            Anchor::First => self.offset_us,
            Anchor::Last => self.offset_us - self.span_us(),
        }
    }

    /// From the first request to the last, in µs.
    fn span_us(&self) -> i64 {
        self.count.saturating_sub(1).saturating_mul(self.spacing_us).min(i64::MAX as u64) as i64
    }
}

impl BoundaryBurst {
    /// The pattern measured in the project's anchors (`research/anchors-measured.md`): 200 requests
    /// 0.5 ms apart ending 50 ms before the boundary (phase `end of window`), and 200 more from 20 ms
    /// after it (phase `start of next window`).
    pub fn classic(window_ms: u64) -> BoundaryBurst {
        BoundaryBurst {
            window_ms,
            boundary: 1,
            key: defaults::key(),
            cost: 1,
            bursts: vec![
                Burst {
                    count: 200,
                    spacing_us: 500,
                    offset_us: -50_000,
                    anchor: Anchor::Last,
                    phase: "end of window".into(),
                    key: None,
                },
                Burst {
                    count: 200,
                    spacing_us: 500,
                    offset_us: 20_000,
                    anchor: Anchor::First,
                    phase: "start of next window".into(),
                    key: None,
                },
            ],
        }
    }

    pub fn validate(&self) -> Result<()> {
        check_span_ms(CONTEXT, "window_ms", self.window_ms)?;
        if self.boundary > 1_000_000 || self.boundary.saturating_mul(self.window_ms) > super::MAX_SPAN_MS {
            return Err(invalid(
                CONTEXT,
                "boundary",
                format!("{} windows of {} ms is too far from the start", self.boundary, self.window_ms),
            ));
        }
        if self.key.is_empty() {
            return Err(invalid(CONTEXT, "key", "must not be empty"));
        }
        if self.bursts.is_empty() {
            return Err(invalid(CONTEXT, "bursts", "needs at least one burst"));
        }
        if self.bursts.len() > MAX_BURSTS {
            return Err(invalid(
                CONTEXT,
                "bursts",
                format!("{} bursts, more than the maximum {MAX_BURSTS}", self.bursts.len()),
            ));
        }
        let total: u64 = self.bursts.iter().map(|b| b.count).fold(0, u64::saturating_add);
        check_count(CONTEXT, "bursts", total as f64)?;
        let before_start = (self.boundary * self.window_ms * 1000) as i64;
        for (i, b) in self.bursts.iter().enumerate() {
            let field = |f: &str| format!("bursts[{i}].{f}");
            if b.count == 0 {
                return Err(invalid(CONTEXT, &field("count"), "must be at least 1"));
            }
            check_span_us(CONTEXT, &field("spacing_us"), b.spacing_us.min(i64::MAX as u64) as i64)?;
            check_span_us(CONTEXT, &field("offset_us"), b.offset_us)?;
            check_span_us(CONTEXT, &field("spacing_us"), b.span_us())?;
            if b.key.as_deref() == Some("") {
                return Err(invalid(CONTEXT, &field("key"), "must not be empty"));
            }
            // Boundary `boundary` is at least `boundary` windows after the start.
            if b.first_offset() < -before_start {
                return Err(invalid(
                    CONTEXT,
                    &field("offset_us"),
                    format!(
                        "the burst would begin {} µs before boundary {}, which is before the start; raise `boundary`",
                        -b.first_offset(),
                        self.boundary
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The boundary's time for a run starting at `start`.
    pub fn boundary_at(&self, start: Micros) -> Micros {
        let w = self.window_ms.max(1) as i64 * 1000;
        let rem = start.0.rem_euclid(w);
        let first = if rem == 0 { start.0 } else { start.0.saturating_add(w - rem) };
        Micros(first.saturating_add((self.boundary.min(i64::MAX as u64) as i64).saturating_mul(w)))
    }

    /// The arrivals, sorted by time; at equal times an earlier-listed burst comes first. Invalid
    /// parameters give no arrivals (see [`BoundaryBurst::validate`]).
    pub fn arrivals(&self, start: Micros, _seed: u64) -> Vec<Arrival> {
        if self.validate().is_err() {
            return Vec::new();
        }
        let boundary = self.boundary_at(start).0;
        let total: u64 = self.bursts.iter().map(|b| b.count).sum();
        let mut out = Vec::with_capacity(total as usize);
        for b in &self.bursts {
            let first = boundary.saturating_add(b.first_offset());
            let key = b.key.as_deref().unwrap_or(&self.key);
            for i in 0..b.count {
                out.push(Arrival {
                    at: Micros(first.saturating_add((i * b.spacing_us) as i64)),
                    key: key.to_owned(),
                    cost: self.cost,
                    phase: b.phase.clone(),
                    op: crate::traffic::Op::Request,
                });
            }
        }
        sort_stable(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    const T0: Micros = Micros(1_704_067_200_000_000); // a multiple of every whole-second window

    #[test]
    fn classic_pattern() {
        let g = BoundaryBurst::classic(1000);
        g.validate().unwrap();
        let v = g.arrivals(T0, 0);
        assert_eq!(v.len(), 400);
        let b = T0.0 + 1_000_000;
        assert_eq!(g.boundary_at(T0), Micros(b));
        // Burst 1: last request 50 ms before the boundary, 0.5 ms apart.
        assert_eq!(v[199].at, Micros(b - 50_000));
        assert_eq!(v[0].at, Micros(b - 50_000 - 199 * 500));
        assert!(v[..200].iter().all(|a| a.phase == "end of window" && a.at.0 < b));
        // Burst 2: first request 20 ms after the boundary.
        assert_eq!(v[200].at, Micros(b + 20_000));
        assert_eq!(v[399].at, Micros(b + 20_000 + 199 * 500));
        assert!(v[200..].iter().all(|a| a.phase == "start of next window" && a.at.0 > b));
        assert!(v.iter().all(|a| a.key == "user" && a.cost == 1));
        assert!(v.windows(2).all(|w| w[0].at <= w[1].at));
        // Same output whatever the seed: the pattern is exact.
        assert_eq!(v, g.arrivals(T0, 99));
    }

    #[test]
    fn boundaries_are_epoch_aligned() {
        let g = BoundaryBurst::classic(1000);
        // Start 300 ms into a second: boundary 0 is the next whole second.
        assert_eq!(g.boundary_at(Micros(T0.0 + 300_000)), Micros(T0.0 + 2_000_000));
        let g = BoundaryBurst { boundary: 3, ..BoundaryBurst::classic(60_000) };
        assert_eq!(g.boundary_at(Micros(0)), Micros(180_000_000));
        assert_eq!(g.boundary_at(Micros(-1)), Micros(180_000_000));
        assert_eq!(g.boundary_at(Micros(-60_000_000)), Micros(120_000_000));
    }

    #[test]
    fn ties_keep_burst_order_and_keys_override() {
        let g = BoundaryBurst {
            window_ms: 100,
            boundary: 1,
            key: "k".into(),
            cost: 3,
            bursts: vec![
                Burst { count: 3, spacing_us: 0, offset_us: 0, anchor: Anchor::First, phase: "a".into(), key: None },
                Burst {
                    count: 2,
                    spacing_us: 10,
                    offset_us: -10,
                    anchor: Anchor::First,
                    phase: "b".into(),
                    key: Some("other".into()),
                },
            ],
        };
        let v = g.arrivals(Micros(0), 0);
        let got: Vec<_> = v.iter().map(|a| (a.at.0, a.phase.as_str(), a.key.as_str())).collect();
        assert_eq!(
            got,
            [
                (99_990, "b", "other"),
                (100_000, "a", "k"),
                (100_000, "a", "k"),
                (100_000, "a", "k"),
                (100_000, "b", "other")
            ]
        );
        assert!(v.iter().all(|a| a.cost == 3));
    }

    #[test]
    fn validation() {
        let field = |g: BoundaryBurst| match g.validate() {
            Err(Error::Invalid { context, field, .. }) => {
                assert_eq!(context, CONTEXT);
                field
            }
            other => panic!("{other:?}"),
        };
        let ok = BoundaryBurst::classic(1000);
        assert_eq!(field(BoundaryBurst { window_ms: 0, ..ok.clone() }), "window_ms");
        assert_eq!(field(BoundaryBurst { bursts: vec![], ..ok.clone() }), "bursts");
        // cost 0 is a read-only peek: valid
        assert!(BoundaryBurst { cost: 0, ..ok.clone() }.validate().is_ok());
        assert_eq!(field(BoundaryBurst { boundary: u64::MAX, ..ok.clone() }), "boundary");
        let mut g = ok.clone();
        g.bursts[1].count = 0;
        assert_eq!(field(g), "bursts[1].count");
        let mut g = ok.clone();
        g.bursts[0].count = u64::MAX;
        assert_eq!(field(g), "bursts");
        let mut g = ok.clone();
        g.bursts[0].spacing_us = u64::MAX;
        assert_eq!(field(g), "bursts[0].spacing_us");
        let mut g = ok.clone();
        g.bursts[0].offset_us = i64::MIN;
        assert_eq!(field(g), "bursts[0].offset_us");
        // Beginning before the start: the first burst spans 149.5 ms before the boundary.
        let g = BoundaryBurst { window_ms: 100, ..ok.clone() };
        assert_eq!(field(g.clone()), "bursts[0].offset_us");
        assert!(g.arrivals(T0, 0).is_empty());
        BoundaryBurst { window_ms: 100, boundary: 2, ..ok }.validate().unwrap();
    }

    /// `research/anchors-measured.md`: this pattern, limit 100 per 1000 ms, measured on a real Redis
    /// with the straightforward (seed) scripts: fixed 100 + 100, token bucket 109 + 17, sliding
    /// counter 100 + 12, sliding log 100 + 0. The limiter references decide as those scripts do.
    #[test]
    fn classic_reproduces_the_measured_anchor_figures() {
        use crate::limiter::{Limiter, Params, Variant};
        let v = BoundaryBurst::classic(1000).arrivals(T0, 0);
        for (variant, want) in [
            (Variant::SEED_FIXED_WINDOW, (100, 100)),
            (Variant::SEED_TOKEN_BUCKET, (109, 17)),
            (Variant::SEED_SLIDING_WINDOW, (100, 12)),
            (Variant::SEED_SLIDING_LOG, (100, 0)),
        ] {
            let mut m = Limiter::new(variant, Params::new(100, 1000)).unwrap().reference().unwrap();
            let (mut end, mut next) = (0, 0);
            for a in &v {
                if m.decide("rate:{user}", a.at.as_millis().0, a.cost).allowed {
                    match a.phase.as_str() {
                        "end of window" => end += 1,
                        _ => next += 1,
                    }
                }
            }
            assert_eq!((end, next), want, "{variant}");
        }
    }

    #[test]
    fn toml_form() {
        let text = r#"
            window_ms = 1000
            [[bursts]]
            count = 200
            spacing_us = 500
            offset_us = -50000
            anchor = "last"
            phase = "end of window"
            [[bursts]]
            count = 200
            spacing_us = 500
            offset_us = 20000
            phase = "start of next window"
        "#;
        let g: BoundaryBurst = toml::from_str(text).unwrap();
        assert_eq!(g, BoundaryBurst::classic(1000));
    }
}
