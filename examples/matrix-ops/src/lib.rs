//! Matrix functions whose arguments are `#[derive(FromDLPack)]` structs: any
//! DLPack producer (NumPy, PyTorch, JAX, CuPy on CPU, …) can call them, and
//! wrong inputs get a `TypeError` that names what was expected.

use pyo3::prelude::*;
use pyo3_dlpack::{AlignedBuffer, DLPackError, FromDLPack, IntoDLPack, PyTensor};

/// A read-only float32 matrix, contiguous, on the CPU.
#[derive(FromDLPack)]
#[dlpack(dtype = f32, ndim = 2, device = "cpu", contiguous)]
struct Matrix {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(shape)]
    shape: [usize; 2],
}

impl Matrix {
    fn cells(&self) -> Result<&[f32], DLPackError> {
        self.tensor.as_slice()
    }
}

/// A float32 vector of any stride (read through `to_vec`).
#[derive(FromDLPack)]
#[dlpack(dtype = f32, ndim = 1)]
struct Vector {
    #[dlpack(tensor)]
    tensor: PyTensor,
    #[dlpack(shape)]
    len: [usize; 1],
}

/// A matrix the function writes in place: `writable` refuses read-only input.
#[derive(FromDLPack)]
#[dlpack(dtype = f32, ndim = 2, device = "cpu", contiguous, writable)]
struct MatrixMut {
    #[dlpack(tensor)]
    tensor: PyTensor,
}

/// The result: a new float32 vector, handed back without a copy.
#[derive(IntoDLPack)]
struct Output {
    #[dlpack(data)]
    values: AlignedBuffer<f32>,
}

/// The sum of the diagonal.
#[pyfunction]
fn trace(m: Matrix) -> PyResult<f32> {
    let [rows, cols] = m.shape;
    let cells = m.cells()?;
    Ok((0..rows.min(cols)).map(|i| cells[i * cols + i]).sum())
}

/// `m @ v`, as a new vector.
#[pyfunction]
fn matvec(m: Matrix, v: Vector) -> PyResult<Output> {
    let [rows, cols] = m.shape;
    if v.len[0] != cols {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "matvec: the matrix has {cols} columns but the vector has {} entries",
            v.len[0]
        )));
    }
    let cells = m.cells()?;
    let x = v.tensor.to_vec::<f32>()?;
    let values = AlignedBuffer::from_fn(rows, |r| {
        (0..cols).map(|c| cells[r * cols + c] * x[c]).sum()
    });
    Ok(Output { values })
}

/// Multiplies every entry by `factor`, in place.
#[pyfunction]
fn scale_(mut m: MatrixMut, factor: f32) -> PyResult<()> {
    for x in m.tensor.as_slice_mut::<f32>()? {
        *x *= factor;
    }
    Ok(())
}

#[pymodule]
fn matrix_ops(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trace, m)?)?;
    m.add_function(wrap_pyfunction!(matvec, m)?)?;
    m.add_function(wrap_pyfunction!(scale_, m)?)?;
    Ok(())
}
