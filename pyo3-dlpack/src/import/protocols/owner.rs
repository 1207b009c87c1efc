//! A tensor described by a protocol other than DLPack, made into a managed
//! DLPack tensor by the crate's own export path, so that the import that
//! follows (validation, the aliasing registry, views, re-export) is the
//! same as for any DLPack producer.

use pyo3::prelude::*;

use crate::error::{Interface, InterfaceError, SizeOverflow};
use crate::export::{IntoDLPack, RawBuffer, TensorInfo};
use crate::import::tensor::PyTensor;
use crate::layout;
use crate::{DLPackError, DataType, Device};

/// What keeps the memory alive: held, never read, dropped with the imported tensor.
#[allow(dead_code)] // the view is only held
pub(crate) enum Keeper {
    /// A buffer-protocol view, released exactly once when dropped.
    #[cfg(any(not(Py_LIMITED_API), Py_3_11))]
    View(super::view::BufferView),
    /// The producer object (its interface promises the memory lives as long);
    /// `None` once released.
    Object(Option<Py<PyAny>>),
}

impl Drop for Keeper {
    #[allow(irrefutable_let_patterns)] // one variant in limited-API builds before 3.11
    fn drop(&mut self) {
        // Release the producer now, attached (see `release_now`).
        if let Self::Object(object) = self {
            if let Some(object) = object.take() {
                crate::import::consume::release_now(object);
            }
        }
    }
}

/// Where the elements are.
pub(crate) enum Memory {
    /// Only the first element's address is known: the memory is taken to be
    /// exactly what shape and strides reach (the producer's promise).
    FirstElement(usize),
    /// A region of known length, the first element `offset` bytes into it:
    /// shape and strides are checked to stay inside.
    #[cfg_attr(all(Py_LIMITED_API, not(Py_3_11)), allow(dead_code))]
    // used by the buffer protocol
    Region {
        start: usize,
        len: usize,
        offset: usize,
    },
}

/// A layout as a protocol gave it: extents, and strides in bytes (`None`: row-major).
pub(crate) struct Layout {
    pub(crate) shape: Vec<i64>,
    pub(crate) byte_strides: Option<Vec<i64>>,
    pub(crate) dtype: DataType,
    pub(crate) read_only: bool,
}

/// The tensor, ready to be exported into a managed struct.
struct Foreign {
    memory: RawBuffer,
    shape: Vec<i64>,
    strides: Vec<i64>,
    byte_offset: usize,
    dtype: DataType,
    _keeper: Keeper,
}

impl IntoDLPack for Foreign {
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
        TensorInfo::builder(&self.memory)
            .shape(&self.shape)
            .strides(&self.strides)
            .dtype(self.dtype)
            .byte_offset(self.byte_offset)
            .build()
    }
}

/// Imports the elements `layout` describes at `memory` on `device`, kept
/// alive by `keeper` until the returned tensor drops.
///
/// # Safety
///
/// `memory` and `layout` describe memory that stays allocated on `device`
/// while `keeper` lives, writable unless `layout.read_only`.
pub(crate) unsafe fn import(
    memory: Memory,
    layout: Layout,
    device: Device,
    interface: Interface,
    keeper: Keeper,
) -> PyResult<PyTensor> {
    // SAFETY: the caller's contract. Every error is converted here, once.
    Ok(unsafe { describe(memory, layout, device, interface, keeper) }?)
}

/// [`import`], its errors not yet Python's.
///
/// # Safety
///
/// As for [`import`].
#[inline(always)]
unsafe fn describe(
    memory: Memory,
    layout: Layout,
    device: Device,
    interface: Interface,
    keeper: Keeper,
) -> Result<PyTensor, DLPackError> {
    // Before any arithmetic with its size (a dtype of 0 bits has none).
    crate::protocol::check_dtype(layout.dtype)?;
    let itemsize = layout.dtype.itemsize();
    let strides = element_strides(&layout, interface)?;
    let numel = layout::numel(&layout.shape)?;
    let (start, len, byte_offset) = match memory {
        // A region past the end of the address space is a lie.
        Memory::Region { start, len, offset } if start.checked_add(len).is_none() => {
            return Err(outside(layout.shape, strides, offset));
        }
        Memory::Region { start, len, offset } => (start, len, offset),
        Memory::FirstElement(first) if numel == 0 => (first, 0, 0),
        Memory::FirstElement(first) => {
            // `usize` fits `i128`; the lowest address must not be negative.
            let reached =
                layout::reach(&layout.shape, &strides, itemsize).and_then(|(low, high)| {
                    let start = usize::try_from(first as i128 + low).ok()?;
                    Some((start, (high - low) as usize, (-low) as usize))
                });
            match reached {
                Some(reached) => reached,
                None => return Err(outside(layout.shape, strides, 0)),
            }
        }
    };
    // SAFETY: the caller's promise: the region stays allocated on `device`
    // while `keeper`, stored next to it, lives; writable unless read-only,
    // which the description below says.
    let mut memory = unsafe { RawBuffer::new(start as *mut _, len, device) };
    if layout.read_only {
        memory = memory.read_only();
    }
    let foreign = Foreign {
        memory,
        shape: layout.shape,
        strides,
        byte_offset,
        dtype: layout.dtype,
        _keeper: keeper,
    };
    let managed = crate::export::managed_value(std::sync::Arc::new(foreign))?;
    // SAFETY: a block `write_block` just made, ours alone, alive until its
    // deleter runs; its dims are the description's, valid.
    let managed = unsafe { crate::import::consume::Owned::adopt(managed) };
    PyTensor::from_versioned(managed)
}

/// The error for a layout that reaches outside the address space.
#[cold]
#[inline(never)]
fn outside(shape: Vec<i64>, strides: Vec<i64>, byte_offset: usize) -> DLPackError {
    DLPackError::SizeOverflow(SizeOverflow::AddressSpace {
        shape,
        strides,
        byte_offset: byte_offset as u64,
    })
}

/// Strides in elements (row-major when the protocol gave none); a byte
/// stride that is not a multiple of the element size is refused.
fn element_strides(layout: &Layout, interface: Interface) -> Result<Vec<i64>, InterfaceError> {
    let itemsize = layout.dtype.itemsize();
    let Some(bytes) = &layout.byte_strides else {
        let mut strides = vec![0; layout.shape.len()];
        layout::row_major(&layout.shape, &mut strides);
        return Ok(strides);
    };
    // A plain loop, not a collect into a `Result` (its adapters are compiled
    // for this one use).
    let mut strides = Vec::with_capacity(bytes.len());
    for &stride in bytes {
        if stride % itemsize as i64 != 0 {
            return Err(InterfaceError::Stride {
                interface,
                stride,
                itemsize,
            });
        }
        strides.push(stride / itemsize as i64);
    }
    Ok(strides)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DataTypeCode;

    /// Found by the `interface_layout` fuzz target: a region that wraps
    /// around the address space was accepted.
    #[test]
    fn a_region_past_the_end_of_the_address_space_is_refused() {
        Python::attach(|_| {
            let layout = Layout {
                shape: vec![1],
                byte_strides: None,
                dtype: DataType::U8,
                read_only: true,
            };
            let memory = Memory::Region {
                start: usize::MAX - 7,
                len: 16,
                offset: 0,
            };
            // SAFETY: nothing reads the memory: the import is refused.
            let result = unsafe {
                import(
                    memory,
                    layout,
                    Device::cpu(),
                    Interface::Buffer,
                    Keeper::Object(None),
                )
            };
            assert!(result.is_err());
        });
    }

    /// Found by the `interface_layout` fuzz target: byte strides were divided
    /// by the item size before the dtype was checked (a panic for 0 bits).
    #[test]
    fn a_dtype_of_no_bits_is_refused_before_any_division_by_its_size() {
        Python::attach(|py| {
            let layout = Layout {
                shape: vec![2],
                byte_strides: Some(vec![4]),
                dtype: DataType::new(DataTypeCode::FLOAT, 0, 1),
                read_only: false,
            };
            // SAFETY: nothing reads the memory: the import is refused.
            let result = unsafe {
                import(
                    Memory::FirstElement(0x1000),
                    layout,
                    Device::cpu(),
                    Interface::ArrayInterface,
                    Keeper::Object(None),
                )
            };
            let err = result.expect_err("refused");
            assert!(err.is_instance_of::<pyo3::exceptions::PyValueError>(py));
        });
    }
}
