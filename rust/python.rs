//! PyO3 bindings: module `skipsearch._core`. The only file that knows Python.
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
use crate::absorption::genericity::GenericityCheck;
use crate::absorption::{decide, Distance, Evidence, Finding, Options};
use crate::error::Error;
use crate::float_env::{self, FloatEnv};
use crate::limits::Limits;
use crate::matrix::Matrix;
use crate::subset_sum::lattice;

fn to_py_err(e: Error) -> PyErr {
    match e {
        Error::ThreadPool(_) | Error::FloatEnvironment(_) => PyRuntimeError::new_err(e.to_string()),
        Error::MemoryLimit { .. } | Error::OutOfMemory { .. } => {
            PyMemoryError::new_err(e.to_string())
        }
        _ => PyValueError::new_err(e.to_string()),
    }
}

fn to_matrix(argument: &'static str, a: ArrayView2<'_, f64>) -> PyResult<Matrix<'static>> {
    let (rows, cols) = a.dim();
    Matrix::from_vec(argument, rows, cols, a.iter().copied().collect()).map_err(to_py_err)
}

/// The array in place when it is C-contiguous (the weights of real models
/// are the largest buffers here: never copied), else a row-major copy.
fn borrowed<'a>(argument: &'static str, a: &'a PyReadonlyArray2<'_, f64>) -> PyResult<Matrix<'a>> {
    let (rows, cols) = a.as_array().dim();
    match a.as_slice() {
        Ok(data) => Matrix::from_slice(argument, rows, cols, data).map_err(to_py_err),
        Err(_) => to_matrix(argument, a.as_array()),
    }
}

fn make_block<'a>(
    w_up: &'a PyReadonlyArray2<'_, f64>,
    w_down: &'a PyReadonlyArray2<'_, f64>,
    skip: &'a PyReadonlyArray2<'_, f64>,
    b_up: Option<&PyReadonlyArray1<'_, f64>>,
    flip_constant: f64,
) -> PyResult<Block<'a>> {
    let b_up = b_up.map(|b| b.as_array().iter().copied().collect());
    Block::new(
        borrowed("W_up", w_up)?,
        borrowed("W_down", w_down)?,
        b_up,
        borrowed("skip", skip)?,
        flip_constant,
    )
    .map_err(to_py_err)
}

fn parse_check(check: &str) -> PyResult<GenericityCheck> {
    match check {
        "none" => Ok(GenericityCheck::None),
        "non_proportional" => Ok(GenericityCheck::Proportional),
        "distinct_up_to_sign" => Ok(GenericityCheck::SignedDistinct),
        other => Err(PyValueError::new_err(format!(
            "check must be 'none', 'non_proportional' or 'distinct_up_to_sign', got {other:?}"
        ))),
    }
}

/// Run `work` on a scoped thread with the interpreter released; on Ctrl-C
/// set `cancel`, wait for the worker to notice, and raise KeyboardInterrupt.
fn run_interruptible<T: Send>(
    py: Python<'_>,
    cancel: &AtomicBool,
    stop_event: Option<&Bound<'_, PyAny>>,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    let waiter = std::thread::current();
    std::thread::scope(|scope| {
        // Builder::spawn_scoped reports a thread that cannot be started
        // (pids limit, address space) instead of panicking as scope.spawn does.
        let handle = std::thread::Builder::new()
            .spawn_scoped(scope, move || {
                let out = work();
                waiter.unpark();
                out
            })
            .map_err(|e| to_py_err(Error::ThreadPool(e.to_string())))?;
        loop {
            // Parked until the worker unparks us (an unpark that comes first
            // is not lost) or 20 ms pass, whichever is sooner.
            py.detach(|| std::thread::park_timeout(POLL));
            if handle.is_finished() {
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
        handle
            .join()
            .map_err(|_| PyRuntimeError::new_err("skipsearch core failed unexpectedly (a bug)"))
    })
}

/// A time limit in seconds: `None` or a non-negative number (one too large
/// for a `Duration` is no limit).
fn seconds(name: &str, t: Option<f64>) -> PyResult<Option<Duration>> {
    match t {
        Some(t) if !(t.is_finite() && t >= 0.0) => Err(PyValueError::new_err(format!(
            "{name} must be a non-negative number of seconds, got {t}"
        ))),
        _ => Ok(t.and_then(|t| Duration::try_from_secs_f64(t).ok())),
    }
}

/// Run `work(limits, cancel)` on a fresh rayon pool of `threads` workers
/// (all cores when None), interruptibly, as the exact-engine bindings do,
/// in the standard floating-point environment (`crate::float_env`).
fn run_on_pool<T: Send>(
    py: Python<'_>,
    threads: Option<usize>,
    time_limit: Option<f64>,
    node_limit: Option<u64>,
    work: impl FnOnce(Limits, &AtomicBool) -> Result<T, Error> + Send,
) -> PyResult<T> {
    run_on_pool_until(py, threads, time_limit, node_limit, None, work)
}

/// `run_on_pool`, also stopped (as interrupted) once `stop_event`, a
/// `threading.Event`, is set.
fn run_on_pool_until<T: Send>(
    py: Python<'_>,
    threads: Option<usize>,
    time_limit: Option<f64>,
    node_limit: Option<u64>,
    stop_event: Option<&Bound<'_, PyAny>>,
    work: impl FnOnce(Limits, &AtomicBool) -> Result<T, Error> + Send,
) -> PyResult<T> {
    if threads == Some(0) {
        return Err(PyValueError::new_err("threads must be at least 1"));
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
    .map_err(to_py_err)
}

/// The Gram matrix a decision kept for the bracket of the same block (see
/// `skipsearch._core.pyi`): opaque to Python, taken (not copied) by the
/// one `flip_set_bracket` call it is passed to.
#[pyclass(frozen, module = "skipsearch._core")]
pub struct GramMatrix {
    lower: std::sync::Mutex<Option<Vec<f64>>>,
    fingerprint: u64,
}

#[pymethods]
impl GramMatrix {
    /// Bytes held (0 once taken).
    #[getter]
    fn nbytes(&self) -> usize {
        self.lower
            .lock()
            .map_or(0, |g| g.as_ref().map_or(0, |v| 8 * v.len()))
    }
}

/// Search for a flip set; see `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (w_up, w_down, skip, b_up, flip_constant, tol, check, time_limit=None, node_limit=None, threads=None, flip_constant_lo=0.0, distance=None, memory_limit=None, keep_gram=false, exact_seconds=None, keep_certificate=true))]
// Many parameters on purpose: a Python function's keyword arguments, one parameter each.
#[allow(clippy::too_many_arguments)]
// Long on purpose: the binding converts the arguments and the outcome's fields one by one; no logic.
#[allow(clippy::too_many_lines)]
fn search_flip_set<'py>(
    py: Python<'py>,
    w_up: PyReadonlyArray2<'py, f64>,
    w_down: PyReadonlyArray2<'py, f64>,
    skip: PyReadonlyArray2<'py, f64>,
    b_up: Option<PyReadonlyArray1<'py, f64>>,
    flip_constant: f64,
    tol: f64,
    check: &str,
    time_limit: Option<f64>,
    node_limit: Option<u64>,
    threads: Option<usize>,
    flip_constant_lo: f64,
    distance: Option<bool>,
    memory_limit: Option<u128>,
    keep_gram: bool,
    exact_seconds: Option<f64>,
    keep_certificate: bool,
) -> PyResult<Bound<'py, PyDict>> {
    if let Some(t) = exact_seconds {
        if t.is_nan() || t < 0.0 {
            return Err(PyValueError::new_err(format!(
                "exact_seconds must be a non-negative number of seconds or None, got {t}"
            )));
        }
    }
    let block = make_block(&w_up, &w_down, &skip, b_up.as_ref(), flip_constant)?
        .with_flip_constant_lo(flip_constant_lo)
        .map_err(to_py_err)?;
    let mut options = Options::new(tol, parse_check(check)?);
    if let Some(t) = time_limit {
        seconds("time_limit", Some(t))?;
        options = options.with_time_limit(t);
    }
    if let Some(n) = node_limit {
        options = options.with_node_limit(n);
    }
    if let Some(t) = threads {
        options = options.with_threads(t);
    }
    options = options.with_distance(match distance {
        None => Distance::Auto,
        Some(true) => Distance::Exact,
        Some(false) => Distance::Bound,
    });
    if let Some(bytes) = memory_limit {
        options = options.with_memory_limit(bytes);
    }
    options.keep_gram = keep_gram;
    options.exact_seconds = exact_seconds;
    options.keep_certificate = keep_certificate;
    let cancel = AtomicBool::new(false);
    let mut outcome = run_interruptible(py, &cancel, None, || decide(&block, &options, &cancel))?
        .map_err(to_py_err)?;
    let gram = outcome.gram.take().map(|(lower, fingerprint)| GramMatrix {
        lower: std::sync::Mutex::new(Some(lower)),
        fingerprint,
    });

    let d = PyDict::new(py);
    let subset_array = |s: &[usize]| PyArray1::from_vec(py, s.iter().map(|&i| i as i64).collect());
    match &outcome.finding {
        Finding::Subset(s) => {
            d.set_item("finding", "subset")?;
            d.set_item("subset", subset_array(s))?;
        }
        Finding::NoSubset(evidence) => {
            d.set_item("finding", "no_subset")?;
            d.set_item("subset", py.None())?;
            match evidence {
                Evidence::Certificate => d.set_item("evidence", "certificate")?,
                Evidence::FixedNeuron { neuron, value } => {
                    d.set_item("evidence", "relaxation")?;
                    d.set_item("conflict", (*neuron, *value))?;
                }
                Evidence::Exhausted { component } => {
                    d.set_item("evidence", "branch_and_bound")?;
                    d.set_item("conflict", *component)?;
                }
            }
        }
        Finding::Inconclusive(why) => {
            d.set_item("finding", "inconclusive")?;
            d.set_item("subset", py.None())?;
            d.set_item("numerics", why.as_str())?;
        }
        Finding::Stopped(stop) => {
            d.set_item("finding", "stopped")?;
            d.set_item("subset", py.None())?;
            d.set_item("stop", stop.as_str())?;
        }
    }
    d.set_item("residual", outcome.residual)?;
    d.set_item("residual_lower", outcome.residual_lower)?;
    d.set_item("residual_exact", outcome.residual_exact)?;
    d.set_item("relaxation_distance", outcome.relaxation_distance)?;
    d.set_item("distance_bound", outcome.distance_bound)?;
    d.set_item("rounding_bound", outcome.rounding_bound)?;
    d.set_item("candidates", outcome.candidates)?;
    d.set_item("krylov_steps", outcome.krylov_steps)?;
    d.set_item("gram_cg_steps", outcome.gram_cg_steps)?;
    match outcome.rank_decision {
        Some(r) => {
            let rd = PyDict::new(py);
            rd.set_item("last_pivot", r.last_pivot)?;
            rd.set_item("next_pivot", r.next_pivot)?;
            rd.set_item("cutoff", r.cutoff)?;
            d.set_item("rank_decision", rd)?;
        }
        None => d.set_item("rank_decision", py.None())?,
    }
    match outcome.certificate {
        Some(y) => {
            let (rows, cols) = y.shape();
            let arr = y.into_vec().into_pyarray(py).reshape([rows, cols])?;
            d.set_item("certificate", arr)?;
        }
        None => d.set_item("certificate", py.None())?,
    }
    match &outcome.genericity {
        Some(g) => {
            let gd = PyDict::new(py);
            gd.set_item("check", g.check.as_str())?;
            gd.set_item("dead", subset_array(&g.dead))?;
            let flat: Vec<i64> = g
                .pairs
                .iter()
                .flat_map(|&(i, j)| [i as i64, j as i64])
                .collect();
            let pairs = flat.into_pyarray(py).reshape([g.pairs.len(), 2])?;
            gd.set_item("pairs", pairs)?;
            gd.set_item("pair_count", g.pair_count)?;
            d.set_item("genericity", gd)?;
        }
        None => d.set_item("genericity", py.None())?,
    }
    d.set_item("rank", outcome.rank)?;
    d.set_item("components", outcome.components)?;
    d.set_item("nodes", outcome.nodes)?;
    d.set_item("method", outcome.method)?;
    d.set_item("timings", outcome.timings.clone())?;
    d.set_item("relaxation_precision", outcome.relaxation_precision)?;
    d.set_item("exact_estimate", outcome.exact_estimate)?;
    d.set_item("kernel", crate::kernels::gemm_kernel())?;
    match gram {
        Some(g) => d.set_item("gram", Py::new(py, g)?)?,
        None => d.set_item("gram", py.None())?,
    }
    d.set_item("seconds", outcome.seconds)?;
    Ok(d)
}

/// The rows of `basis`, the `bounds` and a checked `radius_sq`, for the
/// lattice functions.
fn lattice_inputs(
    basis: &PyReadonlyArray2<'_, i64>,
    bounds: &PyReadonlyArray1<'_, i64>,
    radius_sq: f64,
) -> PyResult<(Vec<Vec<i64>>, Vec<i64>)> {
    let rows: Vec<Vec<i64>> = basis
        .as_array()
        .outer_iter()
        .map(|r| r.iter().copied().collect())
        .collect();
    let bounds: Vec<i64> = bounds.as_array().iter().copied().collect();
    if !(radius_sq.is_finite() && radius_sq >= 0.0) {
        return Err(PyValueError::new_err(format!(
            "radius_sq must be a finite non-negative number, got {radius_sq}"
        )));
    }
    Ok((rows, bounds))
}

/// Knuth's estimate of the enumeration's node count; see
/// `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (basis, bounds, radius_sq, dives=4096))]
fn estimate_nodes<'py>(
    py: Python<'py>,
    basis: PyReadonlyArray2<'py, i64>,
    bounds: PyReadonlyArray1<'py, i64>,
    radius_sq: f64,
    dives: usize,
) -> PyResult<f64> {
    let (rows, bounds) = lattice_inputs(&basis, &bounds, radius_sq)?;
    if dives > MAX_DIVES {
        return Err(PyValueError::new_err(format!(
            "dives must be at most {MAX_DIVES}, got {dives}"
        )));
    }
    py.detach(|| lattice::estimate_nodes(&rows, &bounds, radius_sq, dives))
        .map_err(to_py_err)
}

/// Dives of one `estimate_nodes` call: about a tenth of a second at a
/// hundred dimensions.
const MAX_DIVES: usize = 1 << 20;

/// Enumerate the bounded vectors of a reduced kernel lattice; see
/// `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (basis, bounds, radius_sq, max_solutions=1, time_limit=None, node_limit=None, threads=None, lds_nodes=0, stop_event=None))]
// Many parameters on purpose: a Python function's keyword arguments, one parameter each.
#[allow(clippy::too_many_arguments)]
fn enumerate_bounded<'py>(
    py: Python<'py>,
    basis: PyReadonlyArray2<'py, i64>,
    bounds: PyReadonlyArray1<'py, i64>,
    radius_sq: f64,
    max_solutions: usize,
    time_limit: Option<f64>,
    node_limit: Option<u64>,
    threads: Option<usize>,
    lds_nodes: u64,
    stop_event: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (rows, bounds) = lattice_inputs(&basis, &bounds, radius_sq)?;
    check_stop_event(stop_event.as_ref())?;
    let result = run_on_pool_until(
        py,
        threads,
        time_limit,
        node_limit,
        stop_event.as_ref(),
        |limits, cancel| {
            lattice::enumerate_bounded(
                &rows,
                &bounds,
                radius_sq,
                max_solutions,
                lds_nodes,
                limits,
                cancel,
            )
        },
    )?;
    enumeration_dict(py, result, rows.first().map_or(0, |r| r.len()))
}

/// The enumeration tree of one reduced kernel basis, whose depth-first
/// search runs in pieces; see `skipsearch._core.pyi`.
#[pyclass(module = "skipsearch._core")]
pub struct KernelTree {
    tree: lattice::Tree,
}

#[pymethods]
impl KernelTree {
    #[new]
    fn new(
        py: Python<'_>,
        basis: PyReadonlyArray2<'_, i64>,
        bounds: PyReadonlyArray1<'_, i64>,
        radius_sq: f64,
    ) -> PyResult<Self> {
        let (rows, bounds) = lattice_inputs(&basis, &bounds, radius_sq)?;
        let tree = py
            .detach(|| lattice::Tree::new(&rows, &bounds, radius_sq))
            .map_err(to_py_err)?;
        Ok(KernelTree { tree })
    }

    /// Share of the prefixes searched to their end.
    #[getter]
    fn searched_fraction(&self) -> f64 {
        self.tree.searched_fraction()
    }

    /// Go on with the depth-first search; see `skipsearch._core.pyi`.
    #[pyo3(signature = (max_solutions=1, time_limit=None, node_limit=None, threads=None, stop_event=None))]
    fn depth_first<'py>(
        &mut self,
        py: Python<'py>,
        max_solutions: usize,
        time_limit: Option<f64>,
        node_limit: Option<u64>,
        threads: Option<usize>,
        stop_event: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        check_stop_event(stop_event.as_ref())?;
        let dim = self.tree.dim();
        let tree = &mut self.tree;
        let result = run_on_pool_until(
            py,
            threads,
            time_limit,
            node_limit,
            stop_event.as_ref(),
            |limits, cancel| Ok(tree.depth_first(max_solutions, limits, cancel)),
        )?;
        enumeration_dict(py, result, dim)
    }
}

/// Refuse a `stop_event` that is not a `threading.Event`, before a search
/// starts rather than at its first poll.
fn check_stop_event(event: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    if let Some(event) = event {
        event
            .call_method0("is_set")
            .and_then(|v| v.is_truthy())
            .map_err(|_| {
                PyTypeError::new_err(
                    "stop_event must be a threading.Event (an object with is_set())",
                )
            })?;
    }
    Ok(())
}

/// An enumeration's result as the dict the Python layer reads.
fn enumeration_dict(
    py: Python<'_>,
    result: lattice::Enumeration,
    dim: usize,
) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    let flat: Vec<i64> = result.solutions.iter().flatten().copied().collect();
    d.set_item(
        "solutions",
        flat.into_pyarray(py)
            .reshape([result.solutions.len(), dim])?,
    )?;
    d.set_item("stop", result.stopped.map(|s| s.as_str()))?;
    d.set_item("nodes", result.nodes)?;
    d.set_item("seconds", result.seconds)?;
    Ok(d)
}

/// The columns of `A` and the entries of `b`, checked to agree.
fn column_system<T: numpy::Element + Copy>(
    a: &PyReadonlyArray2<'_, T>,
    b: &PyReadonlyArray1<'_, T>,
) -> PyResult<(Vec<Vec<T>>, Vec<T>)> {
    let a = a.as_array();
    let b: Vec<T> = b.as_array().iter().copied().collect();
    if a.nrows() != b.len() {
        return Err(PyValueError::new_err(format!(
            "A has {} rows but b has {} entries",
            a.nrows(),
            b.len()
        )));
    }
    Ok((a.columns().into_iter().map(|c| c.to_vec()).collect(), b))
}

/// The result of an exact list search as the dict the Python layer reads.
fn search_dict(
    py: Python<'_>,
    result: crate::subset_sum::schroeppel_shamir::SearchResult,
) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("solution", result.solution.map(|x| x.into_pyarray(py)))?;
    d.set_item("stop", result.stopped.map(|s| s.as_str()))?;
    d.set_item("nodes", result.nodes)?;
    d.set_item("memory_bytes", result.memory_bytes)?;
    d.set_item("seconds", result.seconds)?;
    Ok(d)
}

/// Solve `A x = b` over `{0,1}^n` by Schroeppel-Shamir (integer `A`,
/// `n <= 52`); see `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (a, b, time_limit=None, node_limit=None, threads=None))]
fn schroeppel_shamir<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, i64>,
    b: PyReadonlyArray1<'py, i64>,
    time_limit: Option<f64>,
    node_limit: Option<u64>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let (columns, b) = column_system(&a, &b)?;
    let result = run_on_pool(py, threads, time_limit, node_limit, |limits, cancel| {
        crate::subset_sum::schroeppel_shamir::schroeppel_shamir(&columns, &b, limits, cancel)
    })?;
    search_dict(py, result)
}

/// Search `||A x - b|| <= radius` over `{0,1}^n` by meeting in the middle
/// on a projection (float `A`, `n <= 44`); with `tol`, every subset in the
/// window is verified rigorously against `||A x - b|| <= tol ||b||`; see
/// `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (a, b, radius, time_limit=None, node_limit=None, threads=None, tol=None))]
// Many parameters on purpose: a Python function's keyword arguments, one parameter each.
#[allow(clippy::too_many_arguments)]
fn meet_in_the_middle<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, f64>,
    b: PyReadonlyArray1<'py, f64>,
    radius: f64,
    time_limit: Option<f64>,
    node_limit: Option<u64>,
    threads: Option<usize>,
    tol: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    let (columns, b_vec) = column_system(&a, &b)?;
    // ||A x - b|| is the flip residual of the block with u_i = 1, v_i = a_i
    // and skip -b.
    let block = match tol {
        Some(_) => {
            let n = columns.len();
            let k = b_vec.len();
            Some(
                Block::new(
                    Matrix::from_vec("W_up", n, 1, vec![1.0; n]).map_err(to_py_err)?,
                    to_matrix("A", a.as_array())?,
                    None,
                    Matrix::from_vec("b", k, 1, b_vec.iter().map(|x| -x).collect())
                        .map_err(to_py_err)?,
                    1.0,
                )
                .map_err(to_py_err)?,
            )
        }
        None => None,
    };
    let (result, unresolved) =
        run_on_pool(py, threads, time_limit, node_limit, |limits, cancel| {
            let accept = |x: &[u8]| -> Option<bool> {
                let (Some(block), Some(tol)) = (&block, tol) else {
                    return Some(true);
                };
                let subset: Vec<usize> = (0..x.len()).filter(|&i| x[i] == 1).collect();
                crate::absorption::verification::residual_bounds(block, &subset, tol)
                    .within_tolerance(tol)
            };
            crate::subset_sum::meet_in_the_middle::meet_in_the_middle_verified(
                &columns, &b_vec, radius, limits, cancel, &accept,
            )
        })?;
    let d = search_dict(py, result)?;
    d.set_item("unresolved", unresolved)?;
    Ok(d)
}

/// Feasibility jump on an integer system; see `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (a, b, max_moves, time_limit=None))]
fn feasibility_jump<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, i64>,
    b: PyReadonlyArray1<'py, i64>,
    max_moves: u64,
    time_limit: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    let (columns, b) = column_system(&a, &b)?;
    let limits = Limits {
        time_limit: time_limit.and_then(|t| Duration::try_from_secs_f64(t).ok()),
        node_limit: None,
    };
    // Bounded by `max_moves` (milliseconds), so no cancel flag is needed.
    let result = py.detach(|| {
        crate::subset_sum::feasibility_jump::feasibility_jump(&columns, &b, max_moves, limits)
    });
    let d = PyDict::new(py);
    d.set_item("solution", result.solution.map(|x| x.into_pyarray(py)))?;
    d.set_item("moves", result.moves)?;
    Ok(d)
}

/// Bracket the least relative residual over all flip sets; see
/// `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (w_up, w_down, skip, flip_constant, known_lower=0.0, start=None, time_limit=None, node_limit=None, threads=None, flip_constant_lo=0.0, search_time_limit=None, start_residual=None, gram=None))]
// Many parameters on purpose: a Python function's keyword arguments, one parameter each.
#[allow(clippy::too_many_arguments)]
// Long on purpose: the binding converts the arguments and the result's fields one by one; no logic.
#[allow(clippy::too_many_lines)]
fn flip_set_bracket<'py>(
    py: Python<'py>,
    w_up: PyReadonlyArray2<'py, f64>,
    w_down: PyReadonlyArray2<'py, f64>,
    skip: PyReadonlyArray2<'py, f64>,
    flip_constant: f64,
    known_lower: f64,
    start: Option<Vec<usize>>,
    time_limit: Option<f64>,
    node_limit: Option<u64>,
    threads: Option<usize>,
    flip_constant_lo: f64,
    search_time_limit: Option<f64>,
    start_residual: Option<f64>,
    gram: Option<PyRef<'py, GramMatrix>>,
) -> PyResult<Bound<'py, PyDict>> {
    if !(known_lower.is_finite() && known_lower >= 0.0) {
        return Err(PyValueError::new_err(format!(
            "known_lower must be a finite non-negative number, got {known_lower}"
        )));
    }
    if let Some(r) = start_residual {
        if r.is_nan() || r < 0.0 {
            return Err(PyValueError::new_err(format!(
                "start_residual must be a non-negative number, got {r}"
            )));
        }
        if start.as_ref().is_none_or(|s| s.is_empty()) {
            return Err(PyValueError::new_err(
                "start_residual bounds the residual of start: pass a non-empty start with it",
            ));
        }
    }
    let search = Limits {
        time_limit: seconds("search_time_limit", search_time_limit)?,
        node_limit,
    };
    let block = make_block(&w_up, &w_down, &skip, None, flip_constant)?
        .with_flip_constant_lo(flip_constant_lo)
        .map_err(to_py_err)?;
    let mut start = start.unwrap_or_default();
    let m = block.width();
    if let Some(&i) = start.iter().find(|&&i| i >= m) {
        return Err(PyValueError::new_err(format!(
            "start holds neuron {i}, but the block has {m} neurons (W_up has {m} rows)"
        )));
    }
    start.sort_unstable();
    start.dedup();
    let (balanced, _, exact) = block.balanced();
    // A decision's Gram matrix serves only the block it was built from.
    let gram = gram.and_then(|g| {
        let taken = g.lower.lock().ok().and_then(|mut v| v.take());
        taken
            .filter(|_| g.fingerprint == crate::absorption::relaxation::gram_fingerprint(&balanced))
    });
    let started = std::time::Instant::now();
    let gram_bytes = if gram.is_some() {
        0
    } else {
        8 * (block.width() as u128).pow(2)
    };
    let bracket = run_on_pool(py, threads, time_limit, None, |limits, cancel| {
        // The Gram matrix (8 m^2 bytes, unless the decision's is reused)
        // besides the block's arrays. Without room for them the bracket
        // stays trivial (the decision is kept).
        let room = crate::limits::reserve_for(
            rayon::current_num_threads(),
            crate::absorption::working_bytes(&block, false) + gram_bytes,
            crate::absorption::dense_products(&block),
        );
        if room.is_err() {
            return Ok(None);
        }
        if !exact {
            // Rescaling under- or overflowed: no bracket beyond the trivial one.
            return Ok(None);
        }
        // Only Ctrl-C stops it, and the waiting call raises KeyboardInterrupt.
        Ok(bracket::flip_set_bracket(
            &balanced,
            known_lower,
            &start,
            start_residual,
            limits,
            search,
            gram,
            cancel,
        )
        .ok())
    })?;
    let d = PyDict::new(py);
    let (subset, lower, upper, optimal, nodes) = match bracket {
        Some(b) => (b.best_subset, b.lower, b.upper, b.optimal, b.nodes),
        // The trivial bracket, or the caller's own verified flip set.
        None => match start_residual.filter(|r| *r < 1.0) {
            Some(r) => (start.clone(), known_lower.min(r), r, false, 0),
            None => (Vec::new(), known_lower.min(1.0), 1.0, false, 0),
        },
    };
    d.set_item(
        "best_subset",
        PyArray1::from_vec(py, subset.iter().map(|&i| i as i64).collect()),
    )?;
    d.set_item("lower", lower)?;
    d.set_item("upper", upper)?;
    d.set_item("optimal", optimal)?;
    d.set_item("nodes", nodes)?;
    d.set_item("seconds", started.elapsed().as_secs_f64())?;
    Ok(d)
}

/// Put the calling thread into the standard floating-point environment and
/// return the state to restore; see `skipsearch._core.pyi`.
#[pyfunction]
fn enter_float_env() -> PyResult<Option<u64>> {
    FloatEnv::enter()
        .map(FloatEnv::into_saved)
        .map_err(to_py_err)
}

/// Restore a state returned by `enter_float_env`; see `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (saved))]
fn restore_float_env(saved: Option<u64>) {
    float_env::restore(saved);
}

/// Elementwise error function (for GELU); see `skipsearch._core.pyi`.
///
/// From the `libm` crate (a port of musl's `erf`, under one ulp), so that the
/// package needs no scipy at run time.
#[pyfunction]
fn erf<'py>(py: Python<'py>, x: PyReadonlyArrayDyn<'py, f64>) -> Bound<'py, PyArrayDyn<f64>> {
    let x = x.as_array();
    let y = if x.len() >= 1 << 16 {
        let owned = x.to_owned();
        py.detach(|| owned.mapv(libm::erf))
    } else {
        x.mapv(libm::erf)
    };
    y.into_pyarray(py)
}

/// The interface revision of this module. `skipsearch/_core_abi.py` holds
/// the revision the Python files expect; the package refuses to import a core
/// built from other sources. Bump both whenever a binding's arguments or
/// returned fields change.
const CORE_ABI: u32 = 9;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("__abi__", CORE_ABI)?;
    m.add_class::<GramMatrix>()?;
    m.add_class::<KernelTree>()?;
    m.add_function(wrap_pyfunction!(search_flip_set, m)?)?;
    m.add_function(wrap_pyfunction!(enumerate_bounded, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_nodes, m)?)?;
    m.add_function(wrap_pyfunction!(schroeppel_shamir, m)?)?;
    m.add_function(wrap_pyfunction!(meet_in_the_middle, m)?)?;
    m.add_function(wrap_pyfunction!(feasibility_jump, m)?)?;
    m.add_function(wrap_pyfunction!(flip_set_bracket, m)?)?;
    m.add_function(wrap_pyfunction!(erf, m)?)?;
    m.add_function(wrap_pyfunction!(enter_float_env, m)?)?;
    m.add_function(wrap_pyfunction!(restore_float_env, m)?)?;
    Ok(())
}
