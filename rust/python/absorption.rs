//! Bindings of the absorption engine: the decision (`search_flip_set`) and
//! the bracket (`flip_set_bracket`).

use super::*;

pub(super) fn make_block<'a>(
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
    .map_err(PyErr::from)
}

pub(super) fn parse_check(check: &str) -> PyResult<GenericityCheck> {
    match check {
        "none" => Ok(GenericityCheck::None),
        "non_proportional" => Ok(GenericityCheck::Proportional),
        "distinct_up_to_sign" => Ok(GenericityCheck::SignedDistinct),
        other => Err(PyValueError::new_err(format!(
            "check must be 'none', 'non_proportional' or 'distinct_up_to_sign', got {other:?}"
        ))),
    }
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

/// The genericity record (`_Genericity`) of a report.
fn genericity_dict<'py>(py: Python<'py>, g: &GenericityReport) -> PyResult<Bound<'py, PyDict>> {
    let gd = PyDict::new(py);
    gd.set_item("check", g.check.as_str())?;
    gd.set_item(
        "dead",
        PyArray1::from_vec(py, g.dead.iter().map(|&i| i as i64).collect()),
    )?;
    let flat: Vec<i64> = g
        .pairs
        .iter()
        .flat_map(|&(i, j)| [i as i64, j as i64])
        .collect();
    gd.set_item("pairs", flat.into_pyarray(py).reshape([g.pairs.len(), 2])?)?;
    gd.set_item("pair_count", g.pair_count)?;
    Ok(gd)
}

/// The genericity check alone; see `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (w_up, w_down, b_up, check, tol, threads=None))]
pub(super) fn genericity_checks<'py>(
    py: Python<'py>,
    w_up: PyReadonlyArray2<'py, f64>,
    w_down: PyReadonlyArray2<'py, f64>,
    b_up: Option<PyReadonlyArray1<'py, f64>>,
    check: &str,
    tol: f64,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let check = parse_check(check)?;
    let (d_out, d_in) = (w_down.as_array().nrows(), w_up.as_array().ncols());
    let skip = Matrix::zeros(d_out, d_in);
    let b_up = b_up.map(|b| b.as_array().iter().copied().collect());
    let block = Block::new(
        borrowed("W_up", &w_up)?,
        borrowed("W_down", &w_down)?,
        b_up,
        skip,
        1.0,
    )
    .map_err(PyErr::from)?;
    let report = py
        .detach(|| check_genericity(&block, check, tol, threads))
        .map_err(PyErr::from)?;
    genericity_dict(py, &report)
}

/// Search for a flip set; see `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (w_up, w_down, skip, b_up, flip_constant, tol, check, time_limit=None, node_limit=None, threads=None, flip_constant_lo=0.0, distance=None, memory_limit=None, keep_gram=false, exact_seconds=None, keep_certificate=true))]
// Many parameters on purpose: a Python function's keyword arguments, one parameter each.
#[allow(clippy::too_many_arguments)]
// Long on purpose: the binding converts the arguments and the outcome's fields one by one; no logic.
#[allow(clippy::too_many_lines)]
pub(super) fn search_flip_set<'py>(
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
        .map_err(PyErr::from)?;
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
        .map_err(PyErr::from)?;
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
                Evidence::Listed => d.set_item("evidence", "meet_in_the_middle")?,
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
        Some(g) => d.set_item("genericity", genericity_dict(py, g)?)?,
        None => d.set_item("genericity", py.None())?,
    }
    d.set_item("rank", outcome.rank)?;
    d.set_item("components", outcome.components)?;
    d.set_item("nodes", outcome.nodes)?;
    d.set_item(
        "method",
        outcome
            .method
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>(),
    )?;
    d.set_item("timings", outcome.timings.clone())?;
    d.set_item("relaxation_precision", outcome.relaxation_precision)?;
    d.set_item("exact_estimate", outcome.exact_estimate)?;
    match &outcome.exclusion {
        Some(e) => {
            d.set_item("excluded", subset_array(&e.neurons()))?;
            d.set_item("exclusion_bound", e.bound)?;
        }
        None => {
            d.set_item("excluded", py.None())?;
            d.set_item("exclusion_bound", py.None())?;
        }
    }
    d.set_item("kernel", crate::linalg::kernels::gemm_kernel())?;
    match gram {
        Some(g) => d.set_item("gram", Py::new(py, g)?)?,
        None => d.set_item("gram", py.None())?,
    }
    d.set_item("seconds", outcome.seconds)?;
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
pub(super) fn flip_set_bracket<'py>(
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
        .map_err(PyErr::from)?;
    let request = bracket::Request {
        known_lower,
        start: start.unwrap_or_default(),
        start_residual,
        search,
    };
    let gram = gram.and_then(|g| {
        let taken = g.lower.lock().ok().and_then(|mut v| v.take());
        taken.map(|lower| (lower, g.fingerprint))
    });
    let started = std::time::Instant::now();
    // Only Ctrl-C stops it, and the waiting call raises KeyboardInterrupt.
    let b = run_on_pool(py, threads, time_limit, None, |limits, cancel| {
        bracket::bracket_of_block(&block, request, gram, limits, cancel)
    })?;
    let d = PyDict::new(py);
    d.set_item(
        "best_subset",
        PyArray1::from_vec(py, b.best_subset.iter().map(|&i| i as i64).collect()),
    )?;
    d.set_item("lower", b.lower)?;
    d.set_item("upper", b.upper)?;
    d.set_item("optimal", b.optimal)?;
    d.set_item("nodes", b.nodes)?;
    d.set_item("seconds", started.elapsed().as_secs_f64())?;
    Ok(d)
}
