//! What an export needs to know about a tensor, and a cached copy of it.
//!
//! A [`DLPackTensor`](crate::DLPackTensor) describes its value once, when it
//! is wrapped (the value is behind an `Arc` and cannot change), and exports
//! every capsule from that checked [`Template`] without describing or
//! validating again.

use std::ffi::c_void;

use crate::export::info::TensorInfo;
use crate::{DataType, Device};

/// A checked description of a tensor, as the export path reads it.
pub(crate) trait Description {
    /// Address of the first element.
    fn data_ptr(&self) -> *mut c_void;
    fn device(&self) -> Device;
    fn dtype(&self) -> DataType;
    fn is_read_only(&self) -> bool;
    /// Whether every element was checked to lie inside a buffer of known length.
    fn is_bounds_checked(&self) -> bool;
    fn ndim(&self) -> usize;
    fn shape_iter(&self) -> impl Iterator<Item = i64> + '_;
    /// Strides in elements (row-major ones when none were given).
    fn strides_iter(&self) -> impl Iterator<Item = i64> + '_;
}

impl Description for TensorInfo<'_> {
    fn data_ptr(&self) -> *mut c_void {
        TensorInfo::data_ptr(self)
    }
    fn device(&self) -> Device {
        TensorInfo::device(self)
    }
    fn dtype(&self) -> DataType {
        TensorInfo::dtype(self)
    }
    fn is_read_only(&self) -> bool {
        TensorInfo::is_read_only(self)
    }
    fn is_bounds_checked(&self) -> bool {
        TensorInfo::is_bounds_checked(self)
    }
    fn ndim(&self) -> usize {
        TensorInfo::ndim(self)
    }
    fn shape_iter(&self) -> impl Iterator<Item = i64> + '_ {
        TensorInfo::shape_iter(self)
    }
    fn strides_iter(&self) -> impl Iterator<Item = i64> + '_ {
        TensorInfo::strides_iter(self)
    }
}

/// An owned copy of a checked [`TensorInfo`].
#[derive(Debug, Clone)]
pub(crate) struct Template {
    data: *mut c_void,
    device: Device,
    dtype: DataType,
    read_only: bool,
    bounds_checked: bool,
    /// `ndim` extents, then `ndim` strides.
    dims: Box<[i64]>,
}

// SAFETY: `data` is an address copied from a checked description; the
// template never dereferences it, and the value that owns the memory (an
// `IntoDLPack`, so `Send + Sync`) is kept next to it.
unsafe impl Send for Template {}
// SAFETY: as above; `&Template` only reads plain fields.
unsafe impl Sync for Template {}

impl Template {
    /// Copies a checked description.
    pub(crate) fn of(info: &TensorInfo<'_>) -> Self {
        Self {
            data: info.data_ptr(),
            device: info.device(),
            dtype: info.dtype(),
            read_only: info.is_read_only(),
            bounds_checked: info.is_bounds_checked(),
            dims: info.shape_iter().chain(info.strides_iter()).collect(),
        }
    }

    /// Exports read-only from now on.
    pub(crate) fn force_read_only(&mut self) {
        self.read_only = true;
    }

    /// Extents.
    pub(crate) fn shape(&self) -> &[i64] {
        &self.dims[..self.dims.len() / 2]
    }

    /// Strides in elements.
    pub(crate) fn strides(&self) -> &[i64] {
        &self.dims[self.dims.len() / 2..]
    }
}

impl Description for Template {
    fn data_ptr(&self) -> *mut c_void {
        self.data
    }
    fn device(&self) -> Device {
        self.device
    }
    fn dtype(&self) -> DataType {
        self.dtype
    }
    fn is_read_only(&self) -> bool {
        self.read_only
    }
    fn is_bounds_checked(&self) -> bool {
        self.bounds_checked
    }
    fn ndim(&self) -> usize {
        self.dims.len() / 2
    }
    fn shape_iter(&self) -> impl Iterator<Item = i64> + '_ {
        self.shape().iter().copied()
    }
    fn strides_iter(&self) -> impl Iterator<Item = i64> + '_ {
        self.strides().iter().copied()
    }
}
