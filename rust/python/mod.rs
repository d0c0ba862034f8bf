//! PyO3 bindings: module `skipsearch._core`, the only code that knows Python.
//! One file per concern: `absorption` (the decision and the bracket),
//! `subset_sum` (the exact engines), `environment` (the float environment and
//! erf); this file holds the module, the error mapping and the helpers they
//! share (array views, worker pools, Ctrl-C). No domain logic lives here.
//!
//! The Python layer validates and coerces arrays; this layer copies them
//! into the core's layout (stride-aware, so any numpy layout works), runs the
//! decision on a worker thread with the interpreter released, and checks for
//! Ctrl-C every 20 ms while it waits, setting the core's cancel flag when it
//! arrives. The worker wakes the caller as soon as it is done.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often a waiting call checks for Ctrl-C.
const POLL: Duration = Duration::from_millis(20);

use numpy::ndarray::ArrayView2;
use numpy::{
    IntoPyArray, PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyReadonlyArrayDyn,
};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::absorption::block::Block;
use crate::absorption::bracket;
use crate::absorption::genericity::{GenericityCheck, GenericityReport};
use crate::absorption::{check_genericity, decide, Distance, Evidence, Finding, Options};
use crate::error::Error;
use crate::limits::Limits;
use crate::linalg::matrix::Matrix;
use crate::rigor::float_env::{self, FloatEnv};
use crate::subset_sum::{lattice, reduction, subtrees};

mod absorption;
mod environment;
mod subset_sum;

impl From<Error> for PyErr {
    /// Input errors are ValueError, resource errors MemoryError or
    /// RuntimeError.
    fn from(e: Error) -> PyErr {
        match e {
            Error::ThreadPool(_) | Error::FloatEnvironment(_) => {
                PyRuntimeError::new_err(e.to_string())
            }
            Error::MemoryLimit { .. } | Error::OutOfMemory { .. } => {
                PyMemoryError::new_err(e.to_string())
            }
            _ => PyValueError::new_err(e.to_string()),
        }
    }
}

pub(super) fn to_matrix(
    argument: &'static str,
    a: ArrayView2<'_, f64>,
) -> PyResult<Matrix<'static>> {
    let (rows, cols) = a.dim();
    Matrix::from_vec(argument, rows, cols, a.iter().copied().collect()).map_err(PyErr::from)
}

/// The array in place when it is C-contiguous (the weights of real models
/// are the largest buffers here: never copied), else a row-major copy.
pub(super) fn borrowed<'a>(
    argument: &'static str,
    a: &'a PyReadonlyArray2<'_, f64>,
) -> PyResult<Matrix<'a>> {
    let (rows, cols) = a.as_array().dim();
    match a.as_slice() {
        Ok(data) => Matrix::from_slice(argument, rows, cols, data).map_err(PyErr::from),
        Err(_) => to_matrix(argument, a.as_array()),
    }
}

/// Run `work` on a scoped thread with the interpreter released; on Ctrl-C
/// set `cancel`, wait for the worker to notice, and raise KeyboardInterrupt.
pub(super) fn run_interruptible<T: Send>(
    py: Python<'_>,
    cancel: &AtomicBool,
    stop_event: Option<&Bound<'_, PyAny>>,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    let waiter = std::thread::current();
    // Set by the worker once `work` has returned. `is_finished` alone was
    // not enough: woken by the unpark, this thread could find the worker
    // still on its way out and park again for all of POLL (a 20 ms stall on
    // about 1 call in 100 with two threads, 1 in 250 with one).
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        // Builder::spawn_scoped reports a thread that cannot be started
        // (pids limit, address space) instead of panicking as scope.spawn does.
        let handle = std::thread::Builder::new()
            .spawn_scoped(scope, || {
                let out = work();
                done.store(true, Ordering::Release);
                waiter.unpark();
                out
            })
            .map_err(|e| PyErr::from(Error::ThreadPool(e.to_string())))?;
        loop {
            // Parked until the worker unparks us (an unpark that comes first
            // is not lost) or 20 ms pass, whichever is sooner.
            py.detach(|| std::thread::park_timeout(POLL));
            if done.load(Ordering::Acquire) || handle.is_finished() {
                break;
            }
            if let Err(err) = py.check_signals() {
                cancel.store(true, Ordering::Relaxed);
                let _ = py.detach(|| handle.join());
                return Err(err);
            }
            if let Some(event) = stop_event {
                // Another search found the answer: this one stops at its
                // next check and returns, stopped as interrupted.
                match event.call_method0("is_set").and_then(|v| v.is_truthy()) {
                    Ok(true) => cancel.store(true, Ordering::Relaxed),
                    Ok(false) => {}
                    Err(err) => {
                        cancel.store(true, Ordering::Relaxed);
                        let _ = py.detach(|| handle.join());
                        return Err(err);
                    }
                }
            }
        }
        // The worker is done with `work` (or panicked): this waits only for
        // it to exit.
        py.detach(|| handle.join())
            .map_err(|_| PyRuntimeError::new_err("skipsearch core failed unexpectedly (a bug)"))
    })
}

/// A time limit in seconds: `None` or a non-negative number (one too large
/// for a `Duration` is no limit).
pub(super) fn seconds(name: &str, t: Option<f64>) -> PyResult<Option<Duration>> {
    match t {
        Some(t) if !(t.is_finite() && t >= 0.0) => Err(PyValueError::new_err(format!(
            "{name} must be a non-negative number of seconds, got {t}"
        ))),
        _ => Ok(t.and_then(|t| Duration::try_from_secs_f64(t).ok())),
    }
}

/// Run `work(limits, cancel)` on a fresh rayon pool of `threads` workers
/// (all cores when None), interruptibly, as the exact-engine bindings do,
/// in the standard floating-point environment (`crate::rigor::float_env`).
pub(super) fn run_on_pool<T: Send>(
    py: Python<'_>,
    threads: Option<usize>,
    time_limit: Option<f64>,
    node_limit: Option<u64>,
    work: impl FnOnce(Limits, &AtomicBool) -> Result<T, Error> + Send,
) -> PyResult<T> {
    run_on_pool_until(py, threads, time_limit, node_limit, None, work)
}

use crate::limits::MAX_THREADS;

/// `run_on_pool`, also stopped (as interrupted) once `stop_event`, a
/// `threading.Event`, is set.
pub(super) fn run_on_pool_until<T: Send>(
    py: Python<'_>,
    threads: Option<usize>,
    time_limit: Option<f64>,
    node_limit: Option<u64>,
    stop_event: Option<&Bound<'_, PyAny>>,
    work: impl FnOnce(Limits, &AtomicBool) -> Result<T, Error> + Send,
) -> PyResult<T> {
    if let Some(n) = threads.filter(|n| !(1..=MAX_THREADS).contains(n)) {
        return Err(PyValueError::new_err(format!(
            "threads must be between 1 and {MAX_THREADS}, got {n}"
        )));
    }
    let limits = Limits {
        time_limit: seconds("time_limit", time_limit)?,
        node_limit,
    };
    let cancel = AtomicBool::new(false);
    run_interruptible(py, &cancel, stop_event, || {
        let pool = crate::limits::worker_pool(threads)?;
        pool.install(|| {
            // The workers start in the standard environment; this checks
            // the one that runs the top of `work`, and refuses if it is not.
            let _env = FloatEnv::enter()?;
            work(limits, &cancel)
        })
    })?
    .map_err(PyErr::from)
}

/// The interface revision of this module. `skipsearch/_core_abi.py` holds
/// the revision the Python files expect; the package refuses to import a core
/// built from other sources. Bump both whenever a binding's arguments or
/// returned fields change.
const CORE_ABI: u32 = 12;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("__abi__", CORE_ABI)?;
    m.add_class::<absorption::GramMatrix>()?;
    m.add_class::<subset_sum::KernelTree>()?;
    m.add_function(wrap_pyfunction!(absorption::search_flip_set, m)?)?;
    m.add_function(wrap_pyfunction!(absorption::genericity_checks, m)?)?;
    m.add_function(wrap_pyfunction!(subset_sum::enumerate_bounded, m)?)?;
    m.add_function(wrap_pyfunction!(subset_sum::root_prefixes, m)?)?;
    m.add_function(wrap_pyfunction!(subset_sum::search_subtrees, m)?)?;
    m.add_function(wrap_pyfunction!(subset_sum::estimate_nodes, m)?)?;
    m.add_function(wrap_pyfunction!(subset_sum::schroeppel_shamir, m)?)?;
    m.add_function(wrap_pyfunction!(subset_sum::meet_in_the_middle, m)?)?;
    m.add_function(wrap_pyfunction!(subset_sum::feasibility_jump, m)?)?;
    m.add_function(wrap_pyfunction!(subset_sum::lll_reduce, m)?)?;
    m.add_function(wrap_pyfunction!(absorption::flip_set_bracket, m)?)?;
    m.add_function(wrap_pyfunction!(environment::erf, m)?)?;
    m.add_function(wrap_pyfunction!(environment::enter_float_env, m)?)?;
    m.add_function(wrap_pyfunction!(environment::restore_float_env, m)?)?;
    Ok(())
}
