//! The Python extension the pytest suite drives (`tests/python/`): it
//! exports tensors (with drop counting) and imports them (`PyTensor`).
//!
//! Every value it exports carries a [`Tracked`] guard that counts creations
//! and drops, so tests can assert that each exported value is dropped exactly
//! once, whichever path its capsules take.

use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::PyClassInitializer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList, PyTuple};
use pyo3_dlpack::{
    AlignedBuffer, CapsuleFormat, DLPackError, DLPackTensor, DataType, Device, FromDLPack,
    ImportOptions, IntoDLPack, PyTensor, RawBuffer, TensorInfo,
};

mod adapters;
#[cfg(feature = "cudarc")]
mod cudarc;
mod derive;
mod derive_shapes;
mod exchange;
mod export;
mod import;
mod native;
mod process;
mod timing;
mod tracking;
mod travel;

use adapters::*;
#[cfg(feature = "cudarc")]
use cudarc::*;
use derive::*;
use derive_shapes::*;
use exchange::*;
use export::*;
use import::*;
use native::*;
use process::*;
use timing::*;
use tracking::*;
use travel::*;

#[pymodule]
fn dlpack_testext(m: &Bound<'_, PyModule>) -> PyResult<()> {
    DLPackTensor::add_to_module(m)?;
    m.add_function(wrap_pyfunction!(drop_counts, m)?)?;
    m.add_class::<SafetensorsHandle>()?;
    m.add_function(wrap_pyfunction!(safetensors_open, m)?)?;
    m.add_function(wrap_pyfunction!(nalgebra_matrix, m)?)?;
    m.add_function(wrap_pyfunction!(nalgebra_view, m)?)?;
    m.add_function(wrap_pyfunction!(nalgebra_scale, m)?)?;
    m.add_function(wrap_pyfunction!(image_rgb, m)?)?;
    m.add_function(wrap_pyfunction!(image_copy_rgb8, m)?)?;
    m.add_function(wrap_pyfunction!(image_view_luma16, m)?)?;
    m.add_function(wrap_pyfunction!(image_invert_f32, m)?)?;
    m.add_function(wrap_pyfunction!(native_arange, m)?)?;
    m.add_function(wrap_pyfunction!(usize_indices, m)?)?;
    m.add_function(wrap_pyfunction!(usize_sum, m)?)?;
    m.add_function(wrap_pyfunction!(native_like, m)?)?;
    m.add_function(wrap_pyfunction!(framework_of, m)?)?;
    m.add_function(wrap_pyfunction!(native_broken, m)?)?;
    m.add_function(wrap_pyfunction!(allocate_filled, m)?)?;
    m.add_function(wrap_pyfunction!(noop, m)?)?;
    m.add_function(wrap_pyfunction!(consume, m)?)?;
    m.add_function(wrap_pyfunction!(consume_list, m)?)?;
    m.add_function(wrap_pyfunction!(describe_borrowed, m)?)?;
    m.add_function(wrap_pyfunction!(sum_borrowed, m)?)?;
    m.add_function(wrap_pyfunction!(consume_borrowed, m)?)?;
    m.add_function(wrap_pyfunction!(consume_derived, m)?)?;
    m.add_function(wrap_pyfunction!(derived_image, m)?)?;
    m.add_function(wrap_pyfunction!(derived_raw, m)?)?;
    m.add_function(wrap_pyfunction!(derived_array, m)?)?;
    m.add_function(wrap_pyfunction!(derived_mask, m)?)?;
    m.add_function(wrap_pyfunction!(shared_samples, m)?)?;
    m.add_function(wrap_pyfunction!(hwc_image_fields, m)?)?;
    m.add_function(wrap_pyfunction!(hwc_frame_roundtrip, m)?)?;
    m.add_function(wrap_pyfunction!(labelled_image, m)?)?;
    m.add_function(wrap_pyfunction!(mapped_weights, m)?)?;
    m.add_function(wrap_pyfunction!(received_floats, m)?)?;
    m.add_function(wrap_pyfunction!(mask_bits_set_at_drop, m)?)?;
    m.add_function(wrap_pyfunction!(vouched_mask, m)?)?;
    m.add_function(wrap_pyfunction!(typed_axpy, m)?)?;
    m.add_function(wrap_pyfunction!(cast_f64, m)?)?;
    m.add_function(wrap_pyfunction!(cast_i8, m)?)?;
    m.add_function(wrap_pyfunction!(typed_trace, m)?)?;
    m.add_function(wrap_pyfunction!(typed_scale, m)?)?;
    m.add_function(wrap_pyfunction!(typed_enum_sum, m)?)?;
    m.add_function(wrap_pyfunction!(typed_cast, m)?)?;
    m.add_function(wrap_pyfunction!(typed_dmatrix, m)?)?;
    m.add_function(wrap_pyfunction!(derived_enum_sum, m)?)?;
    m.add_function(wrap_pyfunction!(typed_complex_sum, m)?)?;
    m.add_function(wrap_pyfunction!(typed_cuda_matrix, m)?)?;
    m.add_function(wrap_pyfunction!(typed_cuda_out, m)?)?;
    m.add_function(wrap_pyfunction!(typed_anywhere, m)?)?;
    m.add_function(wrap_pyfunction!(typed_scalar, m)?)?;
    m.add_function(wrap_pyfunction!(unvouched_mask, m)?)?;
    m.add_function(wrap_pyfunction!(plain_mask, m)?)?;
    m.add_function(wrap_pyfunction!(native_mask, m)?)?;
    m.add_function(wrap_pyfunction!(add_to_diagonal, m)?)?;
    m.add_function(wrap_pyfunction!(derived_describe, m)?)?;
    m.add_function(wrap_pyfunction!(hand_vector_head, m)?)?;
    m.add_class::<Spectrum>()?;
    m.add_function(wrap_pyfunction!(clobbering_capsule, m)?)?;
    m.add_function(wrap_pyfunction!(fails_to_synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(described_once, m)?)?;
    m.add_function(wrap_pyfunction!(hold_view, m)?)?;
    m.add_class::<HeldView>()?;
    m.add_class::<FailingExchange>()?;
    m.add_class::<ExchangeProducer>()?;
    m.add_class::<LegacyExchangeProducer>()?;
    m.add_function(wrap_pyfunction!(exchange_stream, m)?)?;
    m.add_function(wrap_pyfunction!(exchange_counts, m)?)?;
    m.add_function(wrap_pyfunction!(exchange_pool, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(on_device, m)?)?;
    m.add_function(wrap_pyfunction!(over_memory, m)?)?;
    m.add_function(wrap_pyfunction!(capsule, m)?)?;
    m.add_function(wrap_pyfunction!(capsule_of, m)?)?;
    m.add_function(wrap_pyfunction!(read_byte, m)?)?;
    m.add_function(wrap_pyfunction!(panicking_on_drop, m)?)?;
    m.add_function(wrap_pyfunction!(pyo3_dlpack::asdlpack, m)?)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    m.add_function(wrap_pyfunction!(reexport, m)?)?;
    m.add_function(wrap_pyfunction!(import_with, m)?)?;
    m.add_function(wrap_pyfunction!(locate, m)?)?;
    m.add_function(wrap_pyfunction!(to_list, m)?)?;
    m.add_function(wrap_pyfunction!(slice_values, m)?)?;
    m.add_function(wrap_pyfunction!(array_values, m)?)?;
    m.add_function(wrap_pyfunction!(fill, m)?)?;
    m.add_function(wrap_pyfunction!(unmeasured, m)?)?;
    m.add_function(wrap_pyfunction!(add_into, m)?)?;
    m.add_function(wrap_pyfunction!(drop_on_thread, m)?)?;
    m.add_function(wrap_pyfunction!(views_released, m)?)?;
    m.add_function(wrap_pyfunction!(hold_writer, m)?)?;
    m.add_class::<Tagged>()?;
    #[cfg(feature = "cudarc")]
    {
        m.add_function(wrap_pyfunction!(cudarc_context, m)?)?;
        m.add_function(wrap_pyfunction!(cudarc_arange, m)?)?;
        m.add_function(wrap_pyfunction!(cudarc_capsule, m)?)?;
        m.add_function(wrap_pyfunction!(cudarc_sum, m)?)?;
        m.add_function(wrap_pyfunction!(cudarc_fill, m)?)?;
        m.add_function(wrap_pyfunction!(cudarc_allocate_arange, m)?)?;
        m.add_function(wrap_pyfunction!(cudarc_view_said, m)?)?;
        m.add_function(wrap_pyfunction!(cudarc_view_error, m)?)?;
    }
    Ok(())
}
