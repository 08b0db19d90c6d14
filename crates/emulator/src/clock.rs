//! Time for everything in limitlab: a shared virtual clock for simulations, and the system clock for
//! real runs. This is the only module that reads the system clock.
use std::cell::Cell;
use std::fmt;
use std::rc::Rc;

/// Milliseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Millis(pub i64);

/// Microseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Micros(pub i64);

impl Millis {
    pub fn as_micros(self) -> Micros {
        Micros(self.0.saturating_mul(1000))
    }
}

impl Micros {
    pub fn as_millis(self) -> Millis {
        Millis(self.0.div_euclid(1000))
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

/// The default start of every virtual clock: 2024-01-01T00:00:00Z. Fixed so runs are reproducible.
pub const DEFAULT_START: Millis = Millis(1_704_067_200_000);

/// A source of the current time.
pub trait Clock {
    /// The current time in microseconds since the epoch.
    fn now_micros(&self) -> Micros;
    /// The current time in milliseconds since the epoch.
    fn now_millis(&self) -> Millis {
        self.now_micros().as_millis()
    }
}

/// A deterministic clock that only moves when told. Clones share the same time.
#[derive(Clone, Debug)]
pub struct VirtualClock {
    now: Rc<Cell<i64>>,
}

impl Default for VirtualClock {
    fn default() -> Self {
        Self::starting_at(DEFAULT_START)
    }
}

impl VirtualClock {
    /// A clock reading `start`.
    pub fn starting_at(start: Millis) -> Self {
        Self { now: Rc::new(Cell::new(start.as_micros().0)) }
    }
    /// Moves the clock forward (or backward, with a negative amount) by `ms` milliseconds.
    pub fn advance_millis(&self, ms: i64) {
        self.now.set(self.now.get().saturating_add(ms.saturating_mul(1000)));
    }
    /// Moves the clock by `us` microseconds.
    pub fn advance_micros(&self, us: i64) {
        self.now.set(self.now.get().saturating_add(us));
    }
    /// Sets the clock to `t`.
    pub fn set_millis(&self, t: Millis) {
        self.now.set(t.as_micros().0);
    }
    /// Sets the clock to `t`.
    pub fn set_micros(&self, t: Micros) {
        self.now.set(t.0);
    }
}

impl Clock for VirtualClock {
    fn now_micros(&self) -> Micros {
        Micros(self.now.get())
    }
}

/// The machine's wall clock, for runs against a real Redis.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_micros(&self) -> Micros {
        let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Micros(d.as_micros() as i64)
    }
}

/// A monotonic stopwatch for measuring how long work takes (benchmarks, progress), never for decisions.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch(std::time::Instant);

impl Stopwatch {
    pub fn start() -> Self {
        Stopwatch(std::time::Instant::now())
    }
    pub fn elapsed_secs(&self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }

    /// The time since [`Stopwatch::start`].
    pub fn elapsed(&self) -> std::time::Duration {
        self.0.elapsed()
    }
}

/// A point on the machine's monotonic clock after which waiting stops (a server's start-up, a
/// process's exit): for managing processes, never for a limiter's decisions.
#[derive(Clone, Copy, Debug)]
pub struct Deadline(std::time::Instant);

impl Deadline {
    /// `within` from now.
    pub fn after(within: std::time::Duration) -> Self {
        Deadline(std::time::Instant::now() + within)
    }

    /// `within` from now, or `None` when that is past what the machine's clock can represent.
    pub fn try_after(within: std::time::Duration) -> Option<Self> {
        std::time::Instant::now().checked_add(within).map(Deadline)
    }

    /// Whether the deadline has passed.
    pub fn passed(&self) -> bool {
        std::time::Instant::now() > self.0
    }

    /// The time left until the deadline (zero once it has passed).
    pub fn left(&self) -> std::time::Duration {
        self.0.saturating_duration_since(std::time::Instant::now())
    }
}

/// Waits `d` on the machine's clock: for a client's pauses between commands (`limitlab cli -i`),
/// never for a limiter's decisions, which follow the virtual clock.
pub fn pause(d: std::time::Duration) {
    std::thread::sleep(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn clones_share_time() {
        let a = VirtualClock::default();
        let b = a.clone();
        a.advance_millis(1500);
        assert_eq!(b.now_millis(), Millis(DEFAULT_START.0 + 1500));
        b.advance_micros(250);
        assert_eq!(a.now_micros(), Micros((DEFAULT_START.0 + 1500) * 1000 + 250));
        assert_eq!(a.now_millis(), Millis(DEFAULT_START.0 + 1500));
    }
}
