//! `DLPackTensor.__cuda_array_interface__` (version 3) for consumers that
//! read only that (Numba): CUDA tensors only; elsewhere the attribute does
//! not exist (`hasattr` is false).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::error::PythonKind;
use crate::export::Described;
use crate::export::into::IntoDLPack;
use crate::{DataType, DataTypeCode, DeviceType, Writability, layout};

/// CUDA's legacy default stream, as the interface numbers it.
const LEGACY_DEFAULT_STREAM: i64 = 1;

/// The typestr of a dtype, if the interface has one.
fn typestr(dtype: DataType) -> Option<String> {
    if dtype.lanes != 1 || dtype.bits % 8 != 0 {
        return None;
    }
    let kind = match dtype.code {
        DataTypeCode::BOOL => 'b',
        DataTypeCode::INT => 'i',
        DataTypeCode::UINT => 'u',
        DataTypeCode::FLOAT => 'f',
        DataTypeCode::COMPLEX => 'c',
        _ => return None,
    };
    let size = dtype.bits / 8;
    let order = if size == 1 {
        '|'
    } else if cfg!(target_endian = "little") {
        '<'
    } else {
        '>'
    };
    Some(format!("{order}{kind}{size}"))
}

/// The interface dict of a CUDA tensor: its memory made safe to use on
/// CUDA's legacy default stream first (as an export to that stream is:
/// `export::synchronize`), which the dict names as its `stream`, so
/// consumers synchronise on it.
pub(crate) fn describe<'py>(
    py: Python<'py>,
    described: &Described<Arc<dyn IntoDLPack>>,
) -> PyResult<Bound<'py, PyDict>> {
    let info = described.info();
    let device = info.device();
    if !matches!(
        device.device_type,
        DeviceType::CUDA | DeviceType::CUDA_MANAGED
    ) {
        return Err(PythonKind::Attribute.new_err(format!(
            "a DLPackTensor on {device} has no __cuda_array_interface__: it describes CUDA \
             device memory"
        )));
    }
    let dtype = info.dtype();
    let Some(typestr) = typestr(dtype) else {
        return Err(PythonKind::Attribute.new_err(format!(
            "{} tensor has no __cuda_array_interface__ typestr: expected bool, an \
             integer, float or complex type",
            crate::error::WithArticle(&dtype)
        )));
    };
    crate::export::synchronize(described.owner().as_ref(), info, LEGACY_DEFAULT_STREAM)?;
    let (shape, strides) = info.dims_slices();
    let itemsize = dtype.itemsize();
    let read_only = info.writability() != Writability::Writable;
    let strides = if info.is_contiguous() {
        py.None().into_bound(py)
    } else {
        // Collected first: a tuple of a slice, as `shape`'s (one instance of
        // PyO3's generic tuple builder).
        let bytes: Vec<i64> = strides
            .iter()
            .map(|&s| layout::byte_stride(s, itemsize) as i64)
            .collect();
        PyTuple::new(py, bytes.as_slice())?.into_any()
    };
    // Each value made as a Python object first, so that every key is stored
    // by one instance of PyO3's generic `set_item` (not one per value type),
    // in the interface's order.
    let dict = PyDict::new(py);
    dict.set_item("shape", PyTuple::new(py, shape)?.into_any())?;
    dict.set_item("typestr", PyString::new(py, &typestr).into_any())?;
    let data = (info.data_ptr() as usize, read_only).into_pyobject(py)?;
    dict.set_item("data", data.into_any())?;
    dict.set_item("version", 3i32.into_pyobject(py)?.into_any())?;
    dict.set_item("strides", strides)?;
    let descr = PyList::new(py, [("", typestr.as_str())])?;
    dict.set_item("descr", descr.into_any())?;
    let stream = LEGACY_DEFAULT_STREAM.into_pyobject(py)?;
    dict.set_item("stream", stream.into_any())?;
    Ok(dict)
}
