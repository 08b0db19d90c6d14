//! Independent runs across cores: a fixed set of jobs, a few threads taking the next job as they
//! finish one, results put back in job order so reports never depend on the number of threads.
//!
//! The emulator is not `Send` (its Lua VM and keyspace live behind `Rc`), so a job builds whatever
//! emulator it needs inside its own thread; only plain data (scenarios, arrivals, metrics) crosses
//! threads.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The default number of threads: the cores the process may use (`nproc`).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `f(0)`, ..., `f(n - 1)` on up to `jobs` threads (0 means [`default_jobs`]), in index order.
/// With one thread (or one job) everything runs on the caller's thread.
pub fn map_indexed<T: Send>(n: usize, jobs: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let jobs = if jobs == 0 { default_jobs() } else { jobs }.min(n);
    if jobs <= 1 {
        return (0..n).map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<T>>> = Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = f(i);
                if let Ok(mut s) = slots.lock() {
                    s[i] = Some(r);
                }
            });
        }
    });
    let slots = slots.into_inner().unwrap_or_else(|p| p.into_inner());
    slots.into_iter().map(|s| s.expect("every job ran: a job that panics propagates out of the scope")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_job_order_whatever_the_thread_count() {
        for jobs in [0, 1, 2, 3, 8, 100] {
            let out = map_indexed(37, jobs, |i| {
                // Uneven work so that threads finish out of order.
                let mut x = 0u64;
                for k in 0..(37 - i) * 1000 {
                    x = x.wrapping_add(k as u64);
                }
                std::hint::black_box(x);
                i * i
            });
            assert_eq!(out, (0..37).map(|i| i * i).collect::<Vec<_>>(), "jobs {jobs}");
        }
        assert!(map_indexed(0, 4, |i| i).is_empty());
    }

    #[test]
    fn each_job_can_own_an_emulator() {
        let out = map_indexed(4, 2, |i| {
            let mut e = limitlab_emulator::Emulator::new();
            e.execute(&[b"INCRBY", b"k", i.to_string().as_bytes()])
        });
        assert_eq!(out, (0..4).map(|i| limitlab_emulator::Reply::Int(i as i64)).collect::<Vec<_>>());
    }
}
