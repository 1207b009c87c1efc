//! The one copy routine: a tensor's elements, any strides, into a row-major
//! host buffer. `PyTensor::to_vec`, `copy=True` exports and the exchange
//! API's host copies all call [`to_row_major`].
//!
//! How it copies, fastest first:
//! - contiguous memory: one `memcpy`;
//! - rows that are contiguous (the innermost dimension has stride 1): one
//!   `memcpy` per row;
//! - anything else: the two innermost dimensions in tiles, so that the rows
//!   read and the rows written stay in the cache, the inner loop writing one
//!   destination row's part of the tile in order.
//!
//! Dimensions of extent 1 are dropped and neighbours that are contiguous with
//! each other merged first, so a slice of a contiguous array copies as rows.
//!
//! Only the strided copy (tiles and lines) is instantiated per element size
//! (1, 2, 4, 8 and 16 bytes); the row copy is shared by every size.
//!
//! Destinations of 4 MiB and more are advised to use huge pages before they
//! are first written ([`advise_huge_pages`]), as NumPy does for its arrays:
//! the page faults of a large fresh buffer otherwise cost more than the copy.

use std::ptr;

use crate::layout::DimsBuf;

/// Tile rows and columns, in elements, of the blocked copy. The inner loop
/// writes `TILE_COLS` consecutive destination elements (one 64-byte line of
/// float32) while it reads down `TILE_COLS` source rows; `TILE_ROWS` rows of
/// the tile are written before the next tile. Writing in order matters more
/// than reading in order: the former 32 × 32 tiles read in order and wrote
/// 32 destination rows a row's length apart, which for a 512 × 512 float32
/// transpose (2 KiB rows) fall in two of L1's sets and evict each other
/// (callgrind's cache simulation: 0.26 M write misses per copy). Measured on
/// float32 transposes of 512² and 4096² in one process: 32 × 16 written in
/// order took 0.4–0.6× the time of 32 × 32 read in order.
const TILE_ROWS: usize = 32;
const TILE_COLS: usize = 16;

/// Copies the `shape`/`strides` tensor at `src` (strides in elements of
/// `itemsize` bytes) into `dst` in row-major order.
///
/// # Safety
///
/// Every element the layout reaches from `src` is readable (host memory,
/// any alignment), `dst` is writable for `numel * itemsize` bytes (any
/// alignment) and overlaps none of them; `shape` and `strides` have the same
/// length, every extent is non-negative, and `itemsize` is not zero.
pub(crate) unsafe fn to_row_major(
    src: *const u8,
    shape: &[i64],
    strides: &[i64],
    itemsize: usize,
    dst: *mut u8,
) {
    if shape.contains(&0) {
        return;
    }
    let dims = coalesce(shape, strides);
    let (shape, strides) = dims.split();
    if strides.last() == Some(&1) {
        // SAFETY: the contract; the innermost dimension is contiguous.
        unsafe { copy_rows(src, shape, strides, itemsize, dst) };
        return;
    }
    // SAFETY (every arm): the caller's contract, each element moved as a `T`
    // of `itemsize` bytes; coalescing keeps the same elements in the same
    // row-major order.
    match itemsize {
        // SAFETY: as above.
        1 => unsafe { copy_typed::<u8>(src, shape, strides, dst) },
        // SAFETY: as above.
        2 => unsafe { copy_typed::<u16>(src, shape, strides, dst) },
        // SAFETY: as above.
        4 => unsafe { copy_typed::<u32>(src, shape, strides, dst) },
        // SAFETY: as above.
        8 => unsafe { copy_typed::<u64>(src, shape, strides, dst) },
        // SAFETY: as above.
        16 => unsafe { copy_typed::<u128>(src, shape, strides, dst) },
        // SAFETY: as above, byte by byte.
        _ => unsafe { copy_bytes(src, shape, strides, itemsize, dst) },
    }
}

/// The same elements, in the same row-major order, in fewer dimensions:
/// extent-1 dimensions dropped, and each dimension merged into the one
/// outside it when the outer stride is the inner one times the inner extent.
/// Never more than the input's dimensions (so inline up to 4).
fn coalesce(shape: &[i64], strides: &[i64]) -> DimsBuf {
    let mut out = DimsBuf::pair(shape.len());
    let (out_shape, out_strides) = out.split_mut();
    let mut n = 0;
    for (&extent, &stride) in shape.iter().zip(strides) {
        if extent == 1 {
            continue;
        }
        if n > 0 && out_strides[n - 1] == stride.wrapping_mul(extent) {
            out_shape[n - 1] *= extent;
            out_strides[n - 1] = stride;
        } else {
            out_shape[n] = extent;
            out_strides[n] = stride;
            n += 1;
        }
    }
    let mut trimmed = DimsBuf::pair(n);
    let (shape, strides) = trimmed.split_mut();
    shape.copy_from_slice(&out_shape[..n]);
    strides.copy_from_slice(&out_strides[..n]);
    trimmed
}

/// [`to_row_major`] when the innermost dimension is contiguous: one `memcpy`
/// per row, whatever the element's size (so one instance, not one per size).
///
/// # Safety
///
/// As [`to_row_major`], with at least one dimension, the innermost of
/// stride 1.
unsafe fn copy_rows(src: *const u8, shape: &[i64], strides: &[i64], itemsize: usize, dst: *mut u8) {
    let n = shape.len();
    let row = shape[n - 1] as usize * itemsize;
    for_each_outer(
        &shape[..n - 1],
        &strides[..n - 1],
        itemsize,
        |from, index| {
            let to = dst.wrapping_add(index * row);
            // SAFETY: each row is `row` contiguous readable bytes from `from`;
            // the rows of `dst` follow each other, `numel * itemsize` bytes in
            // all (the contract).
            unsafe { ptr::copy_nonoverlapping(src.wrapping_offset(from), to, row) };
        },
    );
}

/// [`to_row_major`] for elements moved as one `T` each (unaligned reads and
/// writes: `T` only gives the size), when no dimension is contiguous: the
/// only code instantiated per element size.
///
/// # Safety
///
/// As [`to_row_major`], with `itemsize == size_of::<T>()`, every extent
/// above 1 (after [`coalesce`]), and the innermost stride not 1.
unsafe fn copy_typed<T: Copy>(src: *const u8, shape: &[i64], strides: &[i64], dst: *mut u8) {
    let size = size_of::<T>();
    let n = shape.len();
    if n == 0 {
        // SAFETY: one element, readable and writable (the contract).
        unsafe { ptr::copy_nonoverlapping(src, dst, size) };
        return;
    }
    if n == 1 {
        let step = strides[0] as isize * size as isize;
        // SAFETY: as the contract: every offset is an element's.
        unsafe { line::<T>(src, step, dst.cast(), 1, shape[0] as usize) };
        return;
    }
    let (rows, cols) = (shape[n - 2] as usize, shape[n - 1] as usize);
    let (row_stride, col_stride) = (strides[n - 2], strides[n - 1]);
    let plane = rows * cols * size;
    for_each_outer(&shape[..n - 2], &strides[..n - 2], size, |from, index| {
        let to = dst.wrapping_add(index * plane).cast();
        let plane_src = src.wrapping_offset(from);
        // SAFETY: the plane at `from` is part of the layout (readable), and
        // its `rows * cols` elements go to the plane's own part of `dst`
        // (the contract).
        unsafe { tiles::<T>(plane_src, (rows, cols), (row_stride, col_stride), to) };
    });
}

/// Calls `f(byte offset of the block's first element, block index)` for
/// every index of the outer dimensions, in row-major order (once, with
/// `(0, 0)`, when there are none): the offsets the layout describes, with
/// `size` bytes per element.
fn for_each_outer(shape: &[i64], strides: &[i64], size: usize, mut f: impl FnMut(isize, usize)) {
    let total: usize = shape.iter().map(|&e| e as usize).product();
    let mut index = DimsBuf::zeros(shape.len());
    let index = index.as_mut_slice();
    let mut offset: isize = 0;
    for block in 0..total {
        f(offset * size as isize, block);
        // Odometer: advance the innermost outer index, carrying outwards.
        for d in (0..shape.len()).rev() {
            index[d] += 1;
            offset += strides[d] as isize;
            if index[d] < shape[d] {
                break;
            }
            offset -= strides[d] as isize * shape[d] as isize;
            index[d] = 0;
        }
    }
}

/// A `rows × cols` plane (source strides in elements) into row-major `dst`,
/// tile by tile; inside a tile each destination row's part is written in
/// order (see [`TILE_ROWS`]).
///
/// # Safety
///
/// Every element of the plane is readable; `dst` is writable for
/// `rows * cols` elements.
unsafe fn tiles<T: Copy>(
    src: *const u8,
    (rows, cols): (usize, usize),
    (row_stride, col_stride): (i64, i64),
    dst: *mut T,
) {
    let size = size_of::<T>() as isize;
    let (row_step, col_step) = (row_stride as isize * size, col_stride as isize * size);
    let at =
        |r: usize, c: usize| src.wrapping_offset(r as isize * row_step + c as isize * col_step);
    for r0 in (0..rows).step_by(TILE_ROWS) {
        let r1 = (r0 + TILE_ROWS).min(rows);
        for c0 in (0..cols).step_by(TILE_COLS) {
            let c1 = (c0 + TILE_COLS).min(cols);
            for r in r0..r1 {
                let to = dst.wrapping_add(r * cols + c0);
                // SAFETY: elements (r, c0..c1) of the plane and of `dst`
                // (r < rows, c1 <= cols: the contract).
                unsafe { line::<T>(at(r, c0), col_step, to, 1, c1 - c0) };
            }
        }
    }
}

/// `len` elements `from_step` bytes apart from `from`, to `to`, `to_step`
/// elements apart (both any alignment).
///
/// # Safety
///
/// The `len` source elements are readable and the `len` destination
/// elements writable.
#[inline(always)]
unsafe fn line<T: Copy>(from: *const u8, from_step: isize, to: *mut T, to_step: usize, len: usize) {
    for k in 0..len {
        let element = from.wrapping_offset(k as isize * from_step).cast::<T>();
        // SAFETY: source element `k` (the contract).
        let value = unsafe { element.read_unaligned() };
        // SAFETY: destination element `k` (the contract).
        unsafe { to.wrapping_add(k * to_step).write_unaligned(value) };
    }
}

/// [`to_row_major`] for element sizes without a `T` (3, 5, 6, … bytes).
///
/// # Safety
///
/// As [`to_row_major`].
unsafe fn copy_bytes(
    src: *const u8,
    shape: &[i64],
    strides: &[i64],
    itemsize: usize,
    dst: *mut u8,
) {
    let mut out = dst;
    for offset in crate::layout::offsets(shape, strides) {
        let from = src.wrapping_offset(offset * itemsize as isize);
        // SAFETY: `offset` is one of the layout's elements (readable), `out`
        // the next of the `numel` elements of `dst`.
        unsafe { ptr::copy_nonoverlapping(from, out, itemsize) };
        out = out.wrapping_add(itemsize);
    }
}

/// Advises the kernel to back `len` bytes from `start` with huge pages when
/// they are many (4 MiB or more, NumPy's threshold), before they are first
/// written: a fresh buffer's page faults otherwise cost more than the copy
/// into it. Advice only: the memory's contents and validity do not change,
/// and a refusal (no transparent huge pages) is ignored.
pub(crate) fn advise_huge_pages(start: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const THRESHOLD: usize = 4 << 20;
        const PAGE: usize = 4096;
        const MADV_HUGEPAGE: std::ffi::c_int = 14;
        unsafe extern "C" {
            fn madvise(
                addr: *mut std::ffi::c_void,
                len: usize,
                advice: std::ffi::c_int,
            ) -> std::ffi::c_int;
        }
        if len < THRESHOLD {
            return;
        }
        // Whole pages inside the buffer only.
        let first = (start as usize).next_multiple_of(PAGE);
        let end = (start as usize + len) & !(PAGE - 1);
        if end > first {
            // SAFETY: madvise with MADV_HUGEPAGE changes no byte of memory and
            // no mapping's validity; the range is whole pages of the caller's
            // own allocation. Its result is advice, ignored either way.
            unsafe {
                madvise(
                    start.wrapping_add(first - start as usize).cast(),
                    end - first,
                    MADV_HUGEPAGE,
                )
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copy of `values` laid out as `shape`/`strides` from `start`,
    /// against an element-by-element walk.
    fn check<T: Copy + PartialEq + std::fmt::Debug>(
        values: &[T],
        start: usize,
        shape: &[i64],
        strides: &[i64],
    ) {
        let numel: usize = shape.iter().map(|&e| e as usize).product();
        let base = values[start..].as_ptr();
        let expected: Vec<T> = crate::layout::offsets(shape, strides)
            .map(|o| values[(start as isize + o) as usize])
            .collect();
        let mut out = Vec::<T>::with_capacity(numel);
        let dst = out.as_mut_ptr().cast();
        // SAFETY: every offset stays inside `values` (the cases below), and
        // `out` has room for `numel` elements.
        unsafe { to_row_major(base.cast(), shape, strides, size_of::<T>(), dst) };
        // SAFETY: all `numel` elements were written.
        unsafe { out.set_len(numel) };
        assert_eq!(out, expected, "shape {shape:?} strides {strides:?}");
    }

    #[test]
    fn every_layout_copies_as_the_element_walk_does() {
        let v: Vec<u32> = (0..10_000).collect();
        check(&v, 0, &[100, 100], &[100, 1]); // contiguous
        check(&v, 0, &[100, 100], &[1, 100]); // transposed: tiles
        check(&v, 0, &[70, 130], &[1, 70]); // ragged tiles
        check(&v, 0, &[45, 37], &[1, 45]); // ragged tiles, both edges
        check(&v, 0, &[37, 45], &[90, 2]); // strided rows and columns
        check(&v, 0, &[10, 20, 30], &[1, 10, 200]); // column-major 3-D
        check(&v, 0, &[5, 1, 7], &[7, 99, 1]); // extent 1 dropped, merged
        check(&v, 0, &[4, 6], &[12, 2]); // strided rows
        check(&v, 7, &[100], &[3]); // a strided line, longer than a tile
        check(&v, 9_000, &[70], &[-13]); // a line backwards
        check(&v, 9_999, &[100, 50], &[-100, -2]); // negative strides
        check(&v, 5, &[3, 4], &[0, 1]); // broadcast rows
        check(&v, 0, &[], &[]); // 0-d
        check(&v, 0, &[0, 5], &[5, 1]); // empty
        check(&v, 0, &[2, 3, 4, 5], &[60, 1, 3, 12]); // permuted 4-D
        let b: Vec<u8> = (0..=255).cycle().take(5000).collect();
        check(&b, 1, &[50, 60], &[1, 50]); // bytes, odd start
        let w: Vec<[u8; 3]> = (0..1000u32).map(|i| [i as u8, (i >> 8) as u8, 7]).collect();
        check(&w, 0, &[20, 30], &[1, 20]); // 3-byte elements
        let q: Vec<u128> = (0..900).collect();
        check(&q, 0, &[30, 30], &[1, 30]);
    }

    #[test]
    fn coalescing_merges_contiguous_neighbours_and_drops_ones() {
        let c = coalesce(&[2, 1, 3, 4], &[12, 99, 4, 1]);
        assert_eq!(c.split(), (&[24i64][..], &[1i64][..]));
        let c = coalesce(&[3, 4], &[1, 3]);
        assert_eq!(c.split(), (&[3i64, 4][..], &[1i64, 3][..]));
        let c = coalesce(&[1, 1], &[5, 7]);
        assert_eq!(c.split(), (&[][..], &[][..]));
    }
}
