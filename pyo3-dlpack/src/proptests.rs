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

/// Layouts around the row-major one: extents from 1 to past the limits
/// (and 0 and -1), the row-major strides (wrapping, as a producer past the
/// limits might send them), then maybe one stride changed.
fn near_row_major_layout() -> impl Strategy<Value = (Vec<i64>, Vec<i64>)> {
    let extent = prop::sample::select(vec![
        -1i64,
        0,
        1,
        2,
        3,
        7,
        1 << 20,
        1 << 31,
        1 << 40,
        1 << 62,
        i64::MAX,
    ]);
    (
        prop::collection::vec(extent, 0..5),
        any::<prop::sample::Index>(),
        prop::option::of(-3i64..1 << 21),
    )
        .prop_map(|(shape, which, changed)| {
            let mut strides = vec![0i64; shape.len()];
            let mut step = 1i64;
            for (stride, &extent) in strides.iter_mut().zip(&shape).rev() {
                *stride = step;
                step = step.wrapping_mul(extent);
            }
            if let (Some(stride), false) = (changed, strides.is_empty()) {
                let at = which.index(strides.len());
                strides[at] = stride;
            }
            (shape, strides)
        })
}

/// Addresses and offsets, ordinary ones and ones near the end of the
/// address space.
fn address() -> impl Strategy<Value = (usize, u64)> {
    (
        prop::sample::select(vec![
            0usize,
            0x1000,
            1 << 47,
            usize::MAX / 2,
            usize::MAX - 64,
        ]),
        prop::sample::select(vec![0u64, 8, 1 << 40, 1 << 62, u64::MAX - 4]),
    )
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

    /// Where the one-pass row-major check answers, the general checks
    /// accept the tensor with the same counts, span and contiguity.
    #[test]
    fn the_row_major_shortcut_answers_as_the_general_checks(
        (shape, strides) in near_row_major_layout(),
        dtype in prop::sample::select(vec![
            DataType::BOOL, DataType::I8, DataType::I32, DataType::U64, DataType::F16,
            DataType::F32, DataType::F64, DataType::BF16, DataType::C64, DataType::C128,
            DataType::F8_E4M3FN, DataType::F4_E2M1FN,
        ]),
        (data, byte_offset) in address(),
        padded in any::<bool>(),
    ) {
        let tensor = DLTensor {
            data: data as *mut c_void,
            device: Device::cpu(),
            ndim: shape.len() as i32,
            dtype,
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            byte_offset,
        };
        let mut general = foreign::Checked::EMPTY;
        let result = foreign::check_any_layout_into(&tensor, &shape, Some(&strides), padded, &mut general);
        if let Some(row_major) = foreign::check_row_major(&tensor, &shape, &strides) {
            prop_assert!(result.is_ok(), "shortcut accepted, general refused: {:?}", result.err());
            let mut short = foreign::Checked::EMPTY;
            row_major.write(shape.len(), &mut short);
            prop_assert_eq!(
                (short.ndim, short.numel, short.nbytes, short.span, short.contiguous),
                (general.ndim, general.numel, general.nbytes, general.span, general.contiguous)
            );
            prop_assert!(general.synthesized_strides.is_none());
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

/// The one-pass check takes the common tensors and leaves the rest to the
/// general checks (whose errors they are).
#[test]
fn the_row_major_shortcut_takes_only_the_common_case() {
    let tensor = |dtype, data: usize| DLTensor {
        data: data as *mut c_void,
        device: Device::cpu(),
        ndim: 0,
        dtype,
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let f32_at = tensor(DataType::F32, 0x1000);
    let taken =
        |t: &DLTensor, shape: &[i64], strides: &[i64]| foreign::check_row_major(t, shape, strides);
    let row_major = taken(&f32_at, &[3, 4], &[4, 1]).expect("a row-major tensor");
    let mut checked = foreign::Checked::EMPTY;
    row_major.write(2, &mut checked);
    assert_eq!(
        (checked.numel, checked.nbytes, checked.span),
        (12, 48, (0x1000, 0x1030))
    );
    // Extents of 1 take any stride; a scalar is row-major.
    assert!(taken(&f32_at, &[3, 1], &[1, 99]).is_some());
    assert!(taken(&f32_at, &[], &[]).is_some());
    // Left to the general checks:
    assert!(taken(&f32_at, &[3, 4], &[1, 3]).is_none(), "column-major");
    assert!(taken(&f32_at, &[0, 4], &[4, 1]).is_none(), "no elements");
    assert!(
        taken(&f32_at, &[-1, 4], &[4, 1]).is_none(),
        "a negative extent"
    );
    assert!(
        taken(&tensor(DataType::F32, 0), &[3, 4], &[4, 1]).is_none(),
        "NULL data"
    );
    assert!(
        taken(&tensor(DataType::F4_E2M1FN, 0x1000), &[3, 4], &[4, 1]).is_none(),
        "packed"
    );
    assert!(
        taken(&f32_at, &[1 << 62, 1], &[1, 1]).is_none(),
        "past isize::MAX bytes"
    );
    let at_the_end = tensor(DataType::F32, usize::MAX - 8);
    assert!(
        taken(&at_the_end, &[3], &[1]).is_none(),
        "past the address space"
    );
}
