//! Bindings of the float environment checks and of erf.

use super::*;

/// Put the calling thread into the standard floating-point environment and
/// return the state to restore; see `skipsearch._core.pyi`.
#[pyfunction]
pub(super) fn enter_float_env() -> PyResult<Option<u64>> {
    FloatEnv::enter()
        .map(FloatEnv::into_saved)
        .map_err(PyErr::from)
}

/// Restore a state returned by `enter_float_env`; see `skipsearch._core.pyi`.
#[pyfunction]
#[pyo3(signature = (saved))]
pub(super) fn restore_float_env(saved: Option<u64>) {
    float_env::restore(saved);
}

/// Elementwise error function (for GELU); see `skipsearch._core.pyi`.
///
/// From the `libm` crate (a port of musl's `erf`, under one ulp), so that the
/// package needs no scipy at run time.
#[pyfunction]
pub(super) fn erf<'py>(
    py: Python<'py>,
    x: PyReadonlyArrayDyn<'py, f64>,
) -> Bound<'py, PyArrayDyn<f64>> {
    let x = x.as_array();
    let y = if x.len() >= 1 << 16 {
        let owned = x.to_owned();
        py.detach(|| owned.mapv(libm::erf))
    } else {
        x.mapv(libm::erf)
    };
    y.into_pyarray(py)
}
