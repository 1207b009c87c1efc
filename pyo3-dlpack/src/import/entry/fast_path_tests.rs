//! Which path NumPy and JAX arrays take: read in place and through jaxlib's
//! own functions with feature `fast-paths`, through their `__dlpack__` and
//! `jax.dlpack.from_dlpack` without it (`make rust-test` runs these in both
//! builds). Both paths give the same tensor, so the tests tell them apart
//! by how the tensor is held and by counting the Python calls made.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::{Native, PyTensor};

const FAST: bool = cfg!(feature = "fast-paths");

/// Runs `code` with `globals`, then returns `result` from them.
fn run<'py>(globals: &Bound<'py, PyDict>, code: &str) -> Bound<'py, PyAny> {
    let py = globals.py();
    let code = std::ffi::CString::new(code).unwrap();
    py.run(&code, Some(globals), None).unwrap();
    globals.get_item("result").unwrap().unwrap()
}

#[test]
fn numpy_arrays_are_read_in_place_with_fast_paths_only() {
    super::attach_with_frameworks(|py| {
        let globals = PyDict::new(py);
        let array = run(
            &globals,
            "import numpy as np\nresult = np.arange(6.0).reshape(2, 3)",
        );
        let tensor = PyTensor::from_pyany(&array).unwrap();
        assert_eq!(tensor.is_array_read(), FAST);
        let address: usize = run(&globals, "result = result.ctypes.data")
            .extract()
            .unwrap();
        assert_eq!(tensor.data_ptr() as usize, address, "zero-copy either way");
        assert_eq!(
            tensor.to_vec::<f64>().unwrap(),
            [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        );
    });
}

/// One test for both JAX paths: two threads importing JAX at once in one
/// interpreter fail (a partially initialised module).
#[test]
fn jax_arrays_and_values_skip_dlpack_and_from_dlpack_with_fast_paths_only() {
    super::attach_with_frameworks(|py| {
        jax_arrays_skip_their_dlpack(py);
        values_reach_jax_without_from_dlpack(py);
    });
}

fn jax_arrays_skip_their_dlpack(py: Python<'_>) {
    let globals = PyDict::new(py);
    // Counts calls of the array type's `__dlpack__` (jaxlib's type takes
    // JAX's Python methods as attributes), put back afterwards.
    let array = run(
        &globals,
        "import jax.numpy as jnp\n\
         result = jnp.arange(4, dtype=jnp.float32)\n\
         kind = type(result)\n\
         original = kind.__dlpack__\n\
         calls = []\n\
         def counted(self, *args, **kwargs):\n    \
             calls.append(1)\n    \
             return original(self, *args, **kwargs)\n\
         kind.__dlpack__ = counted",
    );
    let imported = PyTensor::from_pyany(&array);
    run(&globals, "kind.__dlpack__ = original\nresult = len(calls)");
    let calls: usize = globals.get_item("calls").unwrap().unwrap().len().unwrap();
    assert_eq!(calls, if FAST { 0 } else { 1 });
    assert_eq!(
        imported.unwrap().to_vec::<f32>().unwrap(),
        [0.0, 1.0, 2.0, 3.0]
    );
}

fn values_reach_jax_without_from_dlpack(py: Python<'_>) {
    let globals = PyDict::new(py);
    run(
        &globals,
        "import jax.dlpack\n\
         original = jax.dlpack.from_dlpack\n\
         calls = []\n\
         def counted(*args, **kwargs):\n    \
             calls.append(1)\n    \
             return original(*args, **kwargs)\n\
         jax.dlpack.from_dlpack = counted\n\
         result = None",
    );
    let array = Native::jax(vec![1.0f32, 2.0, 3.0]).into_pyobject(py);
    run(&globals, "jax.dlpack.from_dlpack = original\nresult = None");
    let calls: usize = globals.get_item("calls").unwrap().unwrap().len().unwrap();
    assert_eq!(calls, if FAST { 0 } else { 1 });
    globals.set_item("array", array.unwrap()).unwrap();
    let values: Vec<f32> = run(&globals, "result = [float(v) for v in array]")
        .extract()
        .unwrap();
    assert_eq!(values, [1.0, 2.0, 3.0]);
}
