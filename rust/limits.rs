//! Time and node limits and the cancel flag, checked by every long loop,
//! and the worker pools the long loops run on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Why a search stopped before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    TimeLimit,
    NodeLimit,
    Interrupted,
    /// The exact path would exceed the memory limit, and no cheap
    /// certificate decided.
    MemoryLimit,
}

impl Stop {
    pub fn as_str(self) -> &'static str {
        match self {
            Stop::TimeLimit => "time_limit",
            Stop::NodeLimit => "node_limit",
            Stop::Interrupted => "interrupted",
            Stop::MemoryLimit => "memory_limit",
        }
    }
}

/// The limits a caller sets.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    pub time_limit: Option<Duration>,
    pub node_limit: Option<u64>,
}

impl Limits {
    /// Why a search started at `start` must stop after `total` nodes: the
    /// cancel flag, the node limit, then the time limit.
    pub fn reached(&self, start: Instant, cancel: &AtomicBool, total: u64) -> Option<Stop> {
        if cancel.load(Ordering::Relaxed) {
            Some(Stop::Interrupted)
        } else if self.node_limit.is_some_and(|l| total >= l) {
            Some(Stop::NodeLimit)
        } else if self.time_limit.is_some_and(|t| start.elapsed() >= t) {
            Some(Stop::TimeLimit)
        } else {
            None
        }
    }
}

/// Running account of the limits. Node counting is sequential, so a node
/// limit stops at the same node whatever the thread count.
pub struct Budget<'a> {
    start: Instant,
    deadline: Option<Instant>,
    node_limit: Option<u64>,
    nodes: u64,
    cancel: &'a AtomicBool,
    /// Tests only: the checks left before the budget reports a time limit,
    /// so a test can stop a stage at every point it polls.
    #[cfg(test)]
    checks_left: Option<std::sync::atomic::AtomicI64>,
}

impl<'a> Budget<'a> {
    pub fn new(limits: Limits, cancel: &'a AtomicBool) -> Self {
        let start = Instant::now();
        Budget {
            start,
            // A deadline past what Instant can hold is no deadline.
            deadline: limits.time_limit.and_then(|t| start.checked_add(t)),
            node_limit: limits.node_limit,
            nodes: 0,
            cancel,
            #[cfg(test)]
            checks_left: None,
        }
    }

    /// Tests only: a budget without limits whose `n + 1`-th check (and
    /// every later one) reports [`Stop::TimeLimit`], as if the deadline
    /// fell just after the `n`-th.
    #[cfg(test)]
    pub fn expiring_after_checks(n: i64, cancel: &'a AtomicBool) -> Self {
        let mut budget = Budget::new(Limits::default(), cancel);
        budget.checks_left = Some(std::sync::atomic::AtomicI64::new(n));
        budget
    }

    /// Tests only: the checks made so far by a budget from
    /// [`Budget::expiring_after_checks`] with `n` checks.
    #[cfg(test)]
    pub fn checks_made(&self, n: i64) -> i64 {
        self.checks_left
            .as_ref()
            .map_or(0, |c| n - c.load(Ordering::Relaxed))
    }

    /// A budget without limits whose cancel flag is never set, for callers
    /// of the polled kernels that have no limits to keep (their results are
    /// the same bits either way: polling only decides whether to go on).
    pub fn unlimited() -> Budget<'static> {
        static NEVER: AtomicBool = AtomicBool::new(false);
        Budget::new(Limits::default(), &NEVER)
    }

    /// Stop if the caller cancelled or the deadline passed. Cheap enough to
    /// call once per row or pivot (an atomic load and, with a deadline, one
    /// read of the monotonic clock, some 20 ns); shared by parallel loops.
    /// The long kernels call it between tiles of their GEMMs, so a limit or
    /// a cancel takes effect within one tile's work (see
    /// [`crate::linalg::matrix::gemm_polled`]).
    pub fn check(&self) -> Result<(), Stop> {
        #[cfg(test)]
        if let Some(left) = &self.checks_left {
            if left.fetch_sub(1, Ordering::Relaxed) <= 0 {
                return Err(Stop::TimeLimit);
            }
        }
        if self.cancel.load(Ordering::Relaxed) {
            return Err(Stop::Interrupted);
        }
        if let Some(deadline) = self.deadline {
            if Instant::now() >= deadline {
                return Err(Stop::TimeLimit);
            }
        }
        Ok(())
    }

    /// Count one search node.
    #[inline]
    pub fn tick(&mut self) -> Result<(), Stop> {
        if let Some(limit) = self.node_limit {
            if self.nodes >= limit {
                return Err(Stop::NodeLimit);
            }
        }
        self.nodes += 1;
        if self.nodes.is_multiple_of(1024) {
            self.check()?;
        }
        Ok(())
    }

    pub fn nodes(&self) -> u64 {
        self.nodes
    }

    /// What is left of the limits, for a search that keeps its own count.
    pub fn remaining(&self) -> Limits {
        Limits {
            time_limit: self
                .deadline
                .map(|d| d.saturating_duration_since(Instant::now())),
            node_limit: self.node_limit.map(|l| l.saturating_sub(self.nodes)),
        }
    }

    /// Count `n` nodes spent by such a search.
    pub fn add_nodes(&mut self, n: u64) {
        self.nodes = self.nodes.saturating_add(n);
    }

    pub fn cancel_flag(&self) -> &'a AtomicBool {
        self.cancel
    }

    pub fn seconds(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}

/// The worker pool for `threads` workers (`None`: one per core), built once
/// per size and shared by every later call: a scan of many blocks reuses
/// its threads, and with them their allocator arenas and GEMM buffers,
/// instead of starting fresh ones each time.
///
/// The pools belong to the process that built them. A child made by
/// `fork` inherits the table but none of the threads, and a call waiting
/// on threads that do not exist would hang for ever; so the table records
/// the process id, and a child finds it foreign and builds pools of its
/// own (the parent's are forgotten, never dropped: their threads are not
/// there to join).
///
/// Calls that run at the same time (from several Python threads, or the
/// two searches `subset_sum` races) each get a pool of their own: a pool
/// in use elsewhere is skipped and another of the same size is built, up
/// to [`POOLS_PER_SIZE`] kept; beyond that a call gets a pool of its own
/// that is dropped when it returns.
///
/// Every worker starts in the standard floating-point environment
/// ([`crate::rigor::float_env`]), whatever the thread that built the pool had.
pub fn worker_pool(
    threads: Option<usize>,
) -> Result<std::sync::Arc<rayon::ThreadPool>, crate::error::Error> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    struct Pools {
        pid: u32,
        by_size: HashMap<usize, Vec<Arc<rayon::ThreadPool>>>,
    }
    static POOLS: Mutex<Option<Pools>> = Mutex::new(None);
    let n = threads.unwrap_or_else(|| default_threads(std::env::var("RAYON_NUM_THREADS").ok()));
    let pid = std::process::id();
    let mut guard = POOLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let pools = match guard.take() {
        Some(pools) if pools.pid == pid => guard.insert(pools),
        inherited => {
            if let Some(foreign) = inherited {
                std::mem::forget(foreign);
            }
            guard.insert(Pools {
                pid,
                by_size: HashMap::new(),
            })
        }
    };
    let same_size = pools.by_size.entry(n).or_default();
    // The table holds one reference; a pool with more is in use.
    if let Some(pool) = same_size.iter().find(|p| Arc::strong_count(p) == 1) {
        return Ok(pool.clone());
    }
    // Beyond POOLS_PER_SIZE the pool is built for this call only and
    // dropped after it, so that no call waits behind another's search (its
    // time limit would not run meanwhile) and the table stays small.
    let keep = same_size.len() < POOLS_PER_SIZE;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .stack_size(16 << 20)
        .start_handler(|_| crate::rigor::float_env::set_standard())
        .build()
        .map_err(|e| crate::error::Error::ThreadPool(e.to_string()))?;
    let pool = Arc::new(pool);
    if keep {
        same_size.push(pool.clone());
    }
    Ok(pool)
}

/// Pools of one size kept for calls that run at the same time.
pub const POOLS_PER_SIZE: usize = 4;

/// Most worker threads a call may ask for: a pool of thousands of threads
/// takes tens of seconds to start.
pub const MAX_THREADS: usize = 1024;

/// The pool size when the caller names none: 0 (rayon's own default, one
/// per core or `RAYON_NUM_THREADS`), except that `RAYON_NUM_THREADS` above
/// [`MAX_THREADS`] is not obeyed (5000 threads spun for a minute on two
/// cores): one per available core then.
fn default_threads(rayon_num_threads: Option<String>) -> usize {
    match rayon_num_threads.and_then(|v| v.trim().parse::<usize>().ok()) {
        Some(asked) if asked > MAX_THREADS => std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .min(MAX_THREADS),
        _ => 0,
    }
}

/// Bytes of working space the dense kernels of one thread may hold at once:
/// faer's blocked triangular solves keep two copies of the L3 cache in a
/// per-thread buffer, the gemm crate packs up to about one more per product,
/// plus its L2 slab. All of it is allocated infallibly inside those crates
/// (an allocation failure there aborts the process), so [`reserve`] checks
/// for it up front.
pub fn kernel_scratch_bytes() -> u128 {
    static L3: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
    let l3 = *L3.get_or_init(|| {
        // The largest data or unified cache sysfs lists, at least 32 MiB
        // (what the kernels assume when they cannot tell).
        let mut best: u128 = 32 << 20;
        for i in 0..8 {
            let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
            let Ok(size) = std::fs::read_to_string(format!("{dir}/size")) else {
                continue;
            };
            let size = size.trim();
            let (digits, unit) = size.split_at(size.trim_end_matches(char::is_alphabetic).len());
            let Ok(n) = digits.parse::<u128>() else {
                continue;
            };
            let factor = match unit {
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                _ => 1,
            };
            best = best.max(n.saturating_mul(factor));
        }
        best
    });
    3 * l3 + (4 << 20)
}

/// Check that `bytes` of memory can still be allocated, by reserving them
/// (fallibly) and releasing them at once: under an address-space limit
/// (`ulimit -v`) or with overcommit off, a call that would run out of
/// memory inside a dependency's infallible allocation (which aborts the
/// process) gets [`crate::Error::OutOfMemory`] (Python's `MemoryError`) instead,
/// before it starts. The pages are never touched, so this costs no memory.
///
/// Only where an allocation can fail at all: on Linux under an
/// address-space limit or with overcommit off ([`allocation_can_fail`]).
/// Elsewhere memory is overcommitted and a large reservation would only
/// refuse calls that fit (a many-core node reserving scratch for every
/// thread), so nothing is reserved.
pub fn reserve(bytes: u128) -> Result<(), crate::error::Error> {
    if !allocation_can_fail() {
        return Ok(());
    }
    let err = || crate::error::Error::OutOfMemory { needed: bytes };
    let n = usize::try_from(bytes).map_err(|_| err())?;
    let mut v: Vec<u8> = Vec::new();
    v.try_reserve_exact(n).map_err(|_| err())?;
    drop(v);
    Ok(())
}

/// Whether an allocation may be refused rather than overcommitted: a finite
/// `RLIMIT_AS` (`ulimit -v`), or `vm.overcommit_memory = 2`. Read at every
/// call (a limit can be set while the process runs); Linux only.
pub fn allocation_can_fail() -> bool {
    if !cfg!(target_os = "linux") {
        return false;
    }
    let limited = std::fs::read_to_string("/proc/self/limits").is_ok_and(|limits| {
        limits
            .lines()
            .find(|line| line.starts_with("Max address space"))
            .is_some_and(|line| !line.contains("unlimited"))
    });
    limited
        || std::fs::read_to_string("/proc/sys/vm/overcommit_memory")
            .is_ok_and(|mode| mode.trim() == "2")
}

/// [`reserve`] for a call on `threads` workers whose own arrays take about
/// `problem` bytes; `dense` when it runs products large enough for the
/// dense kernels' buffers ([`kernel_scratch_bytes`] per thread).
pub fn reserve_for(threads: usize, problem: u128, dense: bool) -> Result<(), crate::error::Error> {
    let scratch = if dense {
        (threads as u128 + 1) * kernel_scratch_bytes()
    } else {
        0
    };
    reserve(problem.saturating_add(scratch))
}

/// Run `f` on a fresh pool of `threads` workers (tests of thread-count
/// independence).
#[cfg(test)]
pub fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a test pool")
        .install(f)
}

#[cfg(test)]
mod tests {
    #[test]
    fn rayon_num_threads_beyond_the_cap_is_not_obeyed() {
        assert_eq!(super::default_threads(None), 0);
        assert_eq!(super::default_threads(Some("3".into())), 0);
        assert_eq!(super::default_threads(Some("1024".into())), 0);
        assert_eq!(super::default_threads(Some("junk".into())), 0);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(
            super::default_threads(Some(" 5000".into())),
            cores.min(1024)
        );
    }
}
