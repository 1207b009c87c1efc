//! Property tests of the two layout validators: the import side's
//! [`foreign::check`] of a producer's `DLTensor`, and the export side's
//! [`TensorInfoBuilder::build`]. Over arbitrary shapes, strides, offsets and
//! dtypes neither panics, neither accepts a layout that reaches outside its
//! memory (checked element by element against a brute-force walk), and what
//! the exporter accepts the importer accepts, with the same element and byte
//! counts.

use std::ffi::c_void;

use proptest::prelude::*;

use crate::ffi::DLTensor;
use crate::{DataType, DataTypeCode, Device, RawBuffer, TensorInfo, foreign};

/// Dtypes, valid and not: every code this crate knows and some it does not,
/// with widths and lanes around the legal ones.
fn dtype() -> impl Strategy<Value = DataType> {
    (
        0u8..20,
        prop::sample::select(vec![0u8, 1, 4, 6, 8, 16, 32, 64, 128]),
        0u16..3,
    )
        .prop_map(|(code, bits, lanes)| DataType {
            code: DataTypeCode::from_code(code),
            bits,
            lanes,
        })
}

/// Up to 4 dimensions of small extents (negative ones too) and strides.
fn layout() -> impl Strategy<Value = (Vec<i64>, Vec<i64>)> {
    (0usize..5).prop_flat_map(|ndim| {
        (
            prop::collection::vec(-1i64..5, ndim),
            prop::collection::vec(-12i64..12, ndim),
        )
    })
}

/// The byte range `[start, end)` of every element, relative to the first
/// element, by walking every index: the reference the validators must agree
/// with. `None` when there are no elements.
fn brute_force_span(shape: &[i64], strides: &[i64], itemsize: i64) -> Option<(i64, i64)> {
    if shape.iter().any(|&d| d <= 0) {
        return None;
    }
    let mut index = vec![0i64; shape.len()];
    let (mut low, mut high) = (i64::MAX, i64::MIN);
    loop {
        let offset: i64 = index.iter().zip(strides).map(|(i, s)| i * s).sum::<i64>() * itemsize;
        low = low.min(offset);
        high = high.max(offset + itemsize);
        // Odometer over the index.
        let mut axis = shape.len();
        loop {
            if axis == 0 {
                return Some((low, high));
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Import: never a panic; an accepted tensor's span holds every element.
    #[test]
    fn import_validation_never_accepts_a_layout_outside_its_span(
        (shape, strides) in layout(),
        null_strides in any::<bool>(),
        dtype in dtype(),
        byte_offset in 0u64..64,
        padded in any::<bool>(),
    ) {
        let mut shape = shape;
        let mut strides = strides;
        let data = 0x1000_0000usize as *mut c_void;
        let tensor = DLTensor {
            data,
            device: Device::cpu(),
            ndim: shape.len() as i32,
            dtype,
            shape: shape.as_mut_ptr(),
            strides: if null_strides { std::ptr::null_mut() } else { strides.as_mut_ptr() },
            byte_offset,
        };
        // SAFETY: shape and strides point to `ndim` i64s each (or strides is
        // NULL), alive through the call; the data pointer is never read.
        let checked = unsafe { foreign::check(&tensor, padded) };
        if let Ok(checked) = checked {
            if dtype.is_byte_sized() && checked.numel > 0 {
                let strides = checked.synthesized_strides.as_deref().unwrap_or(&strides);
                let itemsize = dtype.itemsize() as i64;
                let (low, high) = brute_force_span(&shape, strides, itemsize).unwrap();
                let first = data as i64 + byte_offset as i64;
                prop_assert!(checked.span.0 as i64 <= first + low);
                prop_assert!(first + high <= checked.span.1 as i64);
            }
        }
    }

    /// Export: never a panic; an accepted description stays inside the
    /// buffer, and the importer accepts it with the same counts.
    #[test]
    fn export_validation_stays_in_the_buffer_and_import_agrees(
        (shape, strides) in layout(),
        with_strides in any::<bool>(),
        dtype in dtype(),
        byte_offset in 0usize..64,
        byte_len in 0usize..256,
    ) {
        let buffer = vec![0u8; byte_len.max(1)];
        // SAFETY: `byte_len` bytes of `buffer` (which outlives the
        // description), readable and writable host memory.
        let raw = unsafe { RawBuffer::new(buffer.as_ptr().cast_mut().cast(), byte_len, Device::cpu()) };
        let builder = TensorInfo::builder(&raw)
            .dtype(dtype)
            .shape(shape.clone())
            .byte_offset(byte_offset);
        let builder = if with_strides { builder.strides(strides.clone()) } else { builder };
        let Ok(info) = builder.build() else { return Ok(()) };
        let (info_shape, info_strides) = info.dims_slices();
        if dtype.is_byte_sized() && info.numel() > 0 {
            let itemsize = dtype.itemsize() as i64;
            let (low, high) = brute_force_span(info_shape, info_strides, itemsize).unwrap();
            prop_assert!(byte_offset as i64 + low >= 0);
            prop_assert!(byte_offset as i64 + high <= byte_len as i64);
        }
        // The same description, as a producer's DLTensor.
        let mut shape = info_shape.to_vec();
        let mut strides = info_strides.to_vec();
        let tensor = DLTensor {
            data: info.data_ptr(),
            device: info.device(),
            ndim: shape.len() as i32,
            dtype: info.dtype(),
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut_ptr(),
            byte_offset: 0,
        };
        // SAFETY: shape and strides point to `ndim` i64s each, alive through
        // the call.
        let checked = unsafe { foreign::check(&tensor, false) };
        prop_assert!(checked.is_ok(), "export accepted, import refused: {:?}", checked.err());
        let checked = checked.unwrap();
        prop_assert_eq!(checked.numel, info.numel());
    }
}

/// A row-major tensor of packed elements whose width is not a whole number
/// of bytes spans its storage (an int12 scalar needs 2 bytes, not 1).
#[test]
fn packed_wide_elements_span_their_storage() {
    for (code, bits, mut shape, nbytes) in [
        (DataTypeCode::INT, 12u8, vec![1i64, 1], 2usize),
        (DataTypeCode::INT, 12, vec![3], 5),
        (DataTypeCode::COMPLEX, 186, vec![1, 1], 24),
        (DataTypeCode::INT, 105, vec![1, 1, 1], 14),
    ] {
        let dtype = DataType {
            code,
            bits,
            lanes: 1,
        };
        let tensor = DLTensor {
            data: 0x1000usize as *mut c_void,
            device: Device::cpu(),
            ndim: shape.len() as i32,
            dtype,
            shape: shape.as_mut_ptr(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        };
        // SAFETY: `shape` holds `ndim` entries and outlives the call; strides
        // are NULL (row-major); the data pointer is not read.
        let checked = unsafe { foreign::check(&tensor, false) }.unwrap();
        assert_eq!(checked.nbytes, nbytes, "{dtype}");
        assert_eq!(checked.span, (0x1000, 0x1000 + nbytes), "{dtype}");
    }
}
