//! Bindings of the exact subset-sum engines: the lattice enumeration and
//! its resumable tree, Schroeppel-Shamir, meeting in the middle and the
//! feasibility jump.

use super::*;

/// The rows of `basis`, the `bounds` and a checked `radius_sq`, for the
/// lattice functions.
pub(super) fn lattice_inputs(
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
pub(super) fn estimate_nodes<'py>(
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
        .map_err(PyErr::from)
}

/// Dives of one `estimate_nodes` call: about a tenth of a second at a
/// hundred dimensions.
const MAX_DIVES: usize = 1 << 20;

/// Enumerate the bounded vectors of a reduced kernel lattice; see
/// `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (basis, bounds, radius_sq, max_solutions=1, time_limit=None, node_limit=None, threads=None, lds_nodes=0, stop_event=None, lds_free_width=0))]
// Many parameters on purpose: a Python function's keyword arguments, one parameter each.
#[allow(clippy::too_many_arguments)]
pub(super) fn enumerate_bounded<'py>(
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
    lds_free_width: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let (rows, bounds) = lattice_inputs(&basis, &bounds, radius_sq)?;
    let dim = basis.as_array().ncols();
    check_max_solutions(max_solutions)?;
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
                lds_free_width,
                limits,
                cancel,
            )
        },
    )?;
    enumeration_dict(py, result, dim)
}

/// The cut of a kernel lattice's depth-first tree into subtrees, as
/// prefixes; see `skipsearch._core.pyi`.
#[pyfunction]
pub(super) fn root_prefixes<'py>(
    py: Python<'py>,
    basis: PyReadonlyArray2<'py, i64>,
    bounds: PyReadonlyArray1<'py, i64>,
    radius_sq: f64,
) -> PyResult<(Vec<Vec<i64>>, u64)> {
    let (rows, bounds) = lattice_inputs(&basis, &bounds, radius_sq)?;
    py.detach(|| subtrees::root_prefixes(&rows, &bounds, radius_sq))
        .map_err(PyErr::from)
}

/// Search the subtrees below a list of prefixes, handing back what a
/// limit left; see `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (basis, bounds, radius_sq, prefixes, max_solutions=1, time_limit=None, node_limit=None, threads=None, stop_event=None))]
// Many parameters on purpose: a Python function's keyword arguments, one parameter each.
#[allow(clippy::too_many_arguments)]
pub(super) fn search_subtrees<'py>(
    py: Python<'py>,
    basis: PyReadonlyArray2<'py, i64>,
    bounds: PyReadonlyArray1<'py, i64>,
    radius_sq: f64,
    prefixes: Vec<Vec<i64>>,
    max_solutions: usize,
    time_limit: Option<f64>,
    node_limit: Option<u64>,
    threads: Option<usize>,
    stop_event: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (rows, bounds) = lattice_inputs(&basis, &bounds, radius_sq)?;
    let dim = basis.as_array().ncols();
    check_max_solutions(max_solutions)?;
    check_stop_event(stop_event.as_ref())?;
    let out = run_on_pool_until(
        py,
        threads,
        time_limit,
        node_limit,
        stop_event.as_ref(),
        |limits, cancel| {
            subtrees::search_subtrees(
                &rows,
                &bounds,
                radius_sq,
                &prefixes,
                max_solutions,
                limits,
                cancel,
            )
        },
    )?;
    let d = PyDict::new(py);
    let flat: Vec<i64> = out.solutions.iter().flatten().copied().collect();
    d.set_item(
        "solutions",
        flat.into_pyarray(py).reshape([out.solutions.len(), dim])?,
    )?;
    d.set_item("pending", out.pending)?;
    d.set_item("finished", out.finished)?;
    d.set_item("listed", out.listed)?;
    d.set_item("stop", out.stopped.map(|s| s.as_str()))?;
    d.set_item("nodes", out.nodes)?;
    d.set_item("seconds", out.seconds)?;
    Ok(d)
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
            .map_err(PyErr::from)?;
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
        check_max_solutions(max_solutions)?;
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

/// Refuse a search asked for no solution (the core would read 0 as 1).
fn check_max_solutions(max_solutions: usize) -> PyResult<()> {
    if max_solutions == 0 {
        return Err(PyValueError::new_err("max_solutions must be at least 1"));
    }
    Ok(())
}

/// Refuse a `stop_event` that is not a `threading.Event`, before a search
/// starts rather than at its first poll.
pub(super) fn check_stop_event(event: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
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
pub(super) fn enumeration_dict(
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
pub(super) fn column_system<T: numpy::Element + Copy>(
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
pub(super) fn search_dict(
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
pub(super) fn schroeppel_shamir<'py>(
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
pub(super) fn meet_in_the_middle<'py>(
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
                    Matrix::from_vec("W_up", n, 1, vec![1.0; n]).map_err(PyErr::from)?,
                    to_matrix("A", a.as_array())?,
                    None,
                    Matrix::from_vec("b", k, 1, b_vec.iter().map(|x| -x).collect())
                        .map_err(PyErr::from)?,
                    1.0,
                )
                .map_err(PyErr::from)?,
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
pub(super) fn feasibility_jump<'py>(
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

/// The reduced rows, or None and why not (`lll_reduce`'s answer).
type LllAnswer = (Option<Vec<Vec<i128>>>, Option<&'static str>);

/// LLL-reduce the rows of an integer basis (the lattice extra's stand-in);
/// see `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (basis, delta=0.99, time_limit=None, certify=true, deep=0))]
pub(super) fn lll_reduce(
    py: Python<'_>,
    basis: Vec<Vec<i128>>,
    delta: f64,
    time_limit: Option<f64>,
    certify: bool,
    deep: i64,
) -> PyResult<LllAnswer> {
    // Taken signed so that a negative depth is a ValueError naming it, not
    // PyO3's bare OverflowError.
    let deep = usize::try_from(deep).map_err(|_| Error::InvalidOption {
        option: "deep",
        message: format!("must be a nonnegative integer, got {deep}"),
    })?;
    let reduction = run_on_pool(py, Some(1), time_limit, None, |limits, cancel| {
        reduction::lll(&basis, delta, deep, certify, limits, cancel)
    })?;
    Ok(match reduction {
        Ok(rows) => (Some(rows), None),
        Err(why) => (None, Some(why.as_str())),
    })
}
