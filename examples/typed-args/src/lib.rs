//! rust-numpy's `simple`, `linalg` and `parallel` examples, ported to typed
//! tensor arguments with their Python API kept (rust-numpy's own example
//! tests pass against this module): array signatures become typed arguments
//! (`PyReadonlyArrayDyn<'py, f64>` → `TensorDyn<f64>`,
//! `PyReadwriteArrayDyn<'py, f64>` → `TensorMutDyn<f64>`,
//! `PyReadonlyArray2<'py, f64>` → `Tensor2<f64>`), and every function takes
//! NumPy, torch and JAX values alike. A wrong dtype or rank is a `TypeError`
//! naming the argument, raised while PyO3 converts it. What DLPack cannot
//! carry keeps rust-numpy's API another way: `head`'s object array stays a
//! Python object, `add_minutes_to_seconds`'s `timedelta64` arrays are read
//! as int64 counts of their checked unit (`PyTensor::from_numpy_time`).
//!
//! Results are NumPy arrays (`Native::numpy`, rust-numpy's `into_pyarray`)
//! over the Rust array's memory, with no copy.

mod linalg;
mod parallel;
mod simple;

use pyo3::prelude::*;

/// The Python module: every function of the three ports.
#[pymodule]
mod typed_args {
    #[pymodule_export]
    use super::linalg::inv;
    #[pymodule_export]
    use super::parallel::rows_dot;
    #[pymodule_export]
    use super::simple::{
        add_minutes_to_seconds, axpy, conj, extract, head, mult, polymorphic_add, shape_of, trace,
        zeros,
    };
    #[pymodule_export]
    use pyo3_dlpack::DLPackTensor;
}

/// A `PyResult` whose error PyO3 raises (for the modules' signatures).
type Result<T> = PyResult<T>;
