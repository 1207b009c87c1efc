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
//!   destination row's part of the tile in order (a single strided
//!   dimension: as rows of one tile's width).
//!
//! Dimensions of extent 1 are dropped and neighbours that are contiguous with
//! each other merged first, so a slice of a contiguous array copies as rows.
//! The two innermost dimensions are a plane, copied by one function chosen
//! once per copy ([`Plane`]); the outer dimensions are walked around it.
//!
//! Only the tiled plane copy ([`tiles`]) is instantiated per element size
//! (1, 2, 4, 8 and 16 bytes), and it is short: its rows are moved by
//! fixed-length, unrolled lines, so the compiler has no loop of a variable
//! count to vectorize and unroll again for every size (it did: 17.5 KB of
//! machine code for the five sizes, now about 5.7 KB). The walk, the row
//! copy and the copy of other element sizes are shared.
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
    let (dims, n) = coalesce(shape, strides);
    let (shape, strides) = dims.split();
    let (shape, strides) = (&shape[..n], &strides[..n]);
    let plane: Plane = match (strides, itemsize) {
        // One element (a 0-d tensor, or every extent 1), or contiguous.
        ([] | [1], _) => {
            let bytes = shape.first().map_or(1, |&e| e as usize) * itemsize;
            // SAFETY: the contract: `numel` readable elements from `src`, in
            // order, and as many writable from `dst`.
            return unsafe { ptr::copy_nonoverlapping(src, dst, bytes) };
        }
        ([.., 1], _) => rows,
        (_, 4) => tiles::<u32>,
        (_, 8) => tiles::<u64>,
        (_, 1) => tiles::<u8>,
        (_, 2) => tiles::<u16>,
        (_, 16) => tiles::<u128>,
        _ => tiles_bytes,
    };
    // SAFETY: the contract, with at least one dimension and `plane` one that
    // moves elements of `itemsize` bytes (`rows` only when the innermost
    // dimension is contiguous); coalescing keeps the same elements in the
    // same row-major order.
    unsafe { copy_planes(src, shape, strides, itemsize, dst, plane) };
}

/// The same elements, in the same row-major order, in fewer dimensions:
/// extent-1 dimensions dropped, and each dimension merged into the one
/// outside it when the outer stride is the inner one times the inner extent.
/// The first `n` of each half of the buffer (`n` returned) are the result,
/// never more than the input's dimensions (so inline up to 4).
fn coalesce(shape: &[i64], strides: &[i64]) -> (DimsBuf, usize) {
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
    (out, n)
}

/// A plane copy: `(rows, cols)` elements of `size` bytes, the source's steps
/// between rows and between columns in bytes, into row-major `dst`:
/// [`rows`] when the rows are contiguous, else [`tiles`] for one element
/// size, or [`tiles_bytes`].
type Plane = unsafe fn(*const u8, (usize, usize), (isize, isize), *mut u8, usize);

/// [`to_row_major`] past its one-`memcpy` case: the two innermost
/// dimensions are planes copied by `plane`, the outer ones walked in
/// row-major order. A single (strided) dimension is a plane of rows of
/// [`TILE_COLS`] elements and a last, shorter row (a contiguous one is
/// `to_row_major`'s one `memcpy`, never [`rows`] of 16 elements).
///
/// # Safety
///
/// As [`to_row_major`], with at least one dimension (after [`coalesce`]),
/// and `plane` one that moves elements of `itemsize` bytes ([`rows`] only
/// when the innermost dimension is contiguous).
unsafe fn copy_planes(
    src: *const u8,
    shape: &[i64],
    strides: &[i64],
    itemsize: usize,
    dst: *mut u8,
    plane: Plane,
) {
    let n = shape.len();
    let size = itemsize as isize;
    let (cols, col_step) = (shape[n - 1] as usize, strides[n - 1] as isize * size);
    if n == 1 {
        let (rows, tail) = (cols / TILE_COLS, cols % TILE_COLS);
        let done = rows * TILE_COLS;
        let steps = (TILE_COLS as isize * col_step, col_step);
        let from = src.wrapping_offset(done as isize * col_step);
        let to = dst.wrapping_add(done * itemsize);
        // SAFETY: the line's first `done` elements as rows of `TILE_COLS`
        // to the first `done` of `dst` (the contract).
        unsafe { plane(src, (rows, TILE_COLS), steps, dst, itemsize) };
        // SAFETY: its last `tail` elements, to the rest of `dst`.
        unsafe { plane(from, (1, tail), steps, to, itemsize) };
        return;
    }
    let (rows, row_step) = (shape[n - 2] as usize, strides[n - 2] as isize * size);
    let bytes = rows * cols * itemsize;
    let outer = n - 2;
    for_each_outer(
        &shape[..outer],
        &strides[..outer],
        itemsize,
        |from, index| {
            let (from, to) = (src.wrapping_offset(from), dst.wrapping_add(index * bytes));
            // SAFETY: the plane at `from` is part of the layout (readable), and
            // its `rows * cols` elements go to the plane's own part of `dst`
            // (the contract).
            unsafe { plane(from, (rows, cols), (row_step, col_step), to, itemsize) };
        },
    );
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

/// [`Plane`] for contiguous rows: one `memcpy` per row, whatever the
/// element's size (so one instance, not one per size).
///
/// # Safety
///
/// As [`tiles`], with elements of `size` bytes and each row's `cols`
/// elements contiguous (`col_step == size`).
unsafe fn rows(
    src: *const u8,
    (rows, cols): (usize, usize),
    (row_step, _): (isize, isize),
    dst: *mut u8,
    size: usize,
) {
    let row = cols * size;
    for r in 0..rows {
        let from = src.wrapping_offset(r as isize * row_step);
        // SAFETY: row `r`'s `row` contiguous readable bytes, to its own
        // part of `dst` (the contract).
        unsafe { ptr::copy_nonoverlapping(from, dst.wrapping_add(r * row), row) };
    }
}

/// A `rows × cols` plane (source steps in bytes) into row-major `dst`, tile
/// by tile, each element moved as one `T` (unaligned reads and writes: `T`
/// only gives the size); inside a tile each destination row's part is
/// written in order (see [`TILE_ROWS`]). The only code instantiated per
/// element size: every row's part is moved by fixed-length, unrolled lines
/// ([`TILE_COLS`] in a whole tile, at most one each of 8, 4, 2 and 1 at the
/// ragged right edge), no loop of a variable count that the compiler would
/// unroll and vectorize again per size.
///
/// # Safety
///
/// Every element of the plane is readable; `dst` is writable for
/// `rows * cols` elements of `size_of::<T>()` bytes.
unsafe fn tiles<T: Copy>(
    src: *const u8,
    (rows, cols): (usize, usize),
    (row_step, col_step): (isize, isize),
    dst: *mut u8,
    _size: usize,
) {
    let dst = dst.cast::<T>();
    let whole = cols - cols % TILE_COLS;
    for r0 in (0..rows).step_by(TILE_ROWS) {
        let r1 = (r0 + TILE_ROWS).min(rows);
        let mut c0 = 0;
        while c0 < cols {
            let width = if c0 < whole { TILE_COLS } else { cols - whole };
            for r in r0..r1 {
                let from = src.wrapping_offset(r as isize * row_step + c0 as isize * col_step);
                let to = dst.wrapping_add(r * cols + c0);
                // SAFETY: elements (r, c0..c0 + width) of the plane and of
                // `dst` (r < rows, c0 + width <= cols: the contract).
                unsafe { row_part::<T>(from, col_step, to, width) };
            }
            c0 += width;
        }
    }
}

/// `width` (at most [`TILE_COLS`]) elements `step` bytes apart from `from`
/// to consecutive elements from `to`, as fixed-length lines.
///
/// # Safety
///
/// As [`line`], for `width` elements.
#[inline(always)]
unsafe fn row_part<T: Copy>(from: *const u8, step: isize, to: *mut T, width: usize) {
    if width == TILE_COLS {
        // SAFETY: the caller's `width` elements.
        return unsafe { line::<T, TILE_COLS>(from, step, to) };
    }
    let (mut from, mut to) = (from, to);
    for chunk in [8, 4, 2, 1] {
        if width & chunk != 0 {
            // SAFETY (every arm): the next `chunk` of the caller's `width`
            // elements.
            match chunk {
                // SAFETY: as above.
                8 => unsafe { line::<T, 8>(from, step, to) },
                // SAFETY: as above.
                4 => unsafe { line::<T, 4>(from, step, to) },
                // SAFETY: as above.
                2 => unsafe { line::<T, 2>(from, step, to) },
                // SAFETY: as above.
                _ => unsafe { line::<T, 1>(from, step, to) },
            }
            from = from.wrapping_offset(chunk as isize * step);
            to = to.wrapping_add(chunk);
        }
    }
}

/// `LEN` elements `from_step` bytes apart from `from`, to consecutive
/// elements from `to` (both any alignment); unrolled.
///
/// # Safety
///
/// The `LEN` source elements are readable and the `LEN` destination
/// elements writable.
#[inline(always)]
unsafe fn line<T: Copy, const LEN: usize>(from: *const u8, from_step: isize, to: *mut T) {
    for k in 0..LEN {
        let element = from.wrapping_offset(k as isize * from_step).cast::<T>();
        // SAFETY: source element `k` (the contract).
        let value = unsafe { element.read_unaligned() };
        // SAFETY: destination element `k` (the contract).
        unsafe { to.wrapping_add(k).write_unaligned(value) };
    }
}

/// [`Plane`] for element sizes without a `T` (3, 5, 6, … bytes): each
/// element copied as `size` bytes, row by row.
///
/// # Safety
///
/// As [`tiles`], with elements of `size` bytes.
unsafe fn tiles_bytes(
    src: *const u8,
    (rows, cols): (usize, usize),
    (row_step, col_step): (isize, isize),
    dst: *mut u8,
    size: usize,
) {
    let mut to = dst;
    for r in 0..rows {
        let mut from = src.wrapping_offset(r as isize * row_step);
        for _ in 0..cols {
            // SAFETY: element (r, c) of the plane (readable) and the next of
            // `dst`'s `rows * cols` elements (writable): the contract.
            unsafe { ptr::copy_nonoverlapping(from, to, size) };
            from = from.wrapping_offset(col_step);
            to = to.wrapping_add(size);
        }
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

    /// Layouts over 10,000 elements: (start, shape, strides), each reaching
    /// only elements inside them.
    const LAYOUTS: &[(usize, &[i64], &[i64])] = &[
        (0, &[100, 100], &[100, 1]),                        // contiguous
        (0, &[100, 100], &[1, 100]),                        // transposed: whole tiles
        (0, &[70, 130], &[1, 70]),                          // ragged tiles
        (0, &[45, 37], &[1, 45]),                           // ragged tiles, both edges
        (0, &[37, 45], &[90, 2]),                           // strided rows and columns
        (0, &[10, 20, 30], &[1, 10, 200]),                  // column-major 3-D
        (0, &[5, 1, 7], &[7, 99, 1]),                       // extent 1 dropped, merged
        (0, &[4, 6], &[12, 2]),                             // strided rows
        (7, &[100], &[3]),      // a strided line: rows of a tile and a tail
        (7, &[16], &[3]),       // a line of one tile row, no tail
        (7, &[15], &[5]),       // a line shorter than a tile row
        (9_000, &[70], &[-13]), // a line backwards
        (9_999, &[100, 50], &[-100, -2]), // negative strides
        (5, &[3, 4], &[0, 1]),  // broadcast rows (row copies)
        (5, &[40, 3], &[1, 0]), // broadcast columns (tiles)
        (5, &[33], &[0]),       // one element broadcast
        (0, &[], &[]),          // 0-d
        (0, &[1, 1], &[5, 7]),  // one element, every extent 1
        (0, &[0, 5], &[5, 1]),  // empty
        (0, &[5, 0], &[1, 5]),  // empty, strided
        (0, &[2, 3, 4, 5], &[60, 1, 3, 12]), // permuted 4-D
        (0, &[2, 2, 3, 2, 2, 3], &[1, 2, 4, 12, 24, 48]), // 6-D, column-major
        (0, &[2, 2, 3, 2, 2, 3], &[144, 72, 24, 12, 6, 2]), // 6-D, strided
    ];

    /// Every layout of [`LAYOUTS`], and planes of every width and height
    /// around the tile's (every ragged edge), for elements of one type.
    fn every_layout<T: Copy + PartialEq + std::fmt::Debug>(element: impl Fn(usize) -> T) {
        let values: Vec<T> = (0..10_000).map(element).collect();
        for &(start, shape, strides) in LAYOUTS {
            check(&values, start, shape, strides);
        }
        for rows in [1, 2, 31, 32, 33, 70] {
            for cols in (1..=34).chain([47, 48, 49]) {
                check(&values, 3, &[rows, cols], &[1, rows]); // transposed
                check(&values, 3, &[rows, cols], &[2 * cols, 2]); // strided
            }
        }
    }

    #[test]
    fn every_layout_copies_as_the_element_walk_does_for_every_element_size() {
        every_layout(|i| i as u8); // bool, int8
        every_layout(|i| i as u16); // float16
        every_layout(|i| i as u32); // float32
        every_layout(|i| i as u64); // float64
        every_layout(|i| i as u128 * 0x1_0000_0001_0000_0001); // complex128
        every_layout(|i| [i as u8, (i >> 8) as u8, 7]); // no `T`: bytes
        every_layout(|i| [i as u16, (i >> 3) as u16, 9]); // 6 bytes
        every_layout(|i| [i as u64, 1, 2, 3, 4]); // 40 bytes
    }

    #[test]
    fn unaligned_elements_copy_as_the_element_walk_does() {
        // Bytes from an odd start read as `u32`s and `u64`s: any alignment.
        let bytes: Vec<u8> = (0..=255).cycle().take(50_000).collect();
        for size in [2usize, 4, 8, 16] {
            let (shape, strides) = ([37i64, 41], [1i64, 37]);
            let numel = 37 * 41;
            let src = bytes[1..].as_ptr();
            let mut out = vec![0u8; numel * size + 1];
            // SAFETY: elements of `size` bytes at offsets below 37 * 41 from
            // `src`, inside `bytes`; `out[1..]` holds `numel` of them.
            unsafe { to_row_major(src, &shape, &strides, size, out[1..].as_mut_ptr()) };
            let expected: Vec<u8> = crate::layout::offsets(&shape, &strides)
                .flat_map(|o| &bytes[1 + o as usize * size..][..size])
                .copied()
                .collect();
            assert_eq!(out[1..], expected[..], "size {size}");
        }
    }

    proptest::proptest! {
        /// Any layout of up to 4 dimensions (zero, negative and broadcast
        /// strides; the two inner extents 0 to 40, past a tile's width and
        /// height; outer ones 0 to 3) and any element size copies as the
        /// element-by-element walk does.
        #[test]
        fn any_layout_and_element_size_copies_as_the_element_walk_does(
            size in proptest::sample::select(vec![1usize, 2, 3, 4, 8, 12, 16]),
            outer in proptest::collection::vec((0i64..4, -50i64..50), 0..3),
            inner in proptest::collection::vec((0i64..41, -50i64..50), 0..3),
        ) {
            let dims: Vec<(i64, i64)> = outer.into_iter().chain(inner).collect();
            let shape: Vec<i64> = dims.iter().map(|d| d.0).collect();
            let strides: Vec<i64> = dims.iter().map(|d| d.1).collect();
            let reach = |sign: i64| -> i64 {
                dims.iter().filter(|d| d.0 > 0 && d.1.signum() == sign).map(|d| (d.0 - 1) * d.1).sum()
            };
            let (low, high) = (reach(-1), reach(1));
            let bytes: Vec<u8> = (0..(high - low + 1) as usize * size).map(|i| (i * 7 + i / 251) as u8).collect();
            let start = (-low) as usize * size;
            let numel: usize = shape.iter().map(|&e| e as usize).product();
            let mut out = vec![0u8; numel * size];
            // SAFETY: every offset lies between `low` and `high` elements
            // from `start`, inside `bytes`; `out` holds `numel` elements.
            unsafe { to_row_major(bytes[start..].as_ptr(), &shape, &strides, size, out.as_mut_ptr()) };
            let expected: Vec<u8> = crate::layout::offsets(&shape, &strides)
                .flat_map(|o| &bytes[(start as isize + o * size as isize) as usize..][..size])
                .copied()
                .collect();
            proptest::prop_assert_eq!(out, expected);
        }
    }

    #[test]
    fn coalescing_merges_contiguous_neighbours_and_drops_ones() {
        let merged = |shape: &[i64], strides: &[i64]| {
            let (dims, n) = coalesce(shape, strides);
            let (shape, strides) = dims.split();
            (shape[..n].to_vec(), strides[..n].to_vec())
        };
        assert_eq!(merged(&[2, 1, 3, 4], &[12, 99, 4, 1]), (vec![24], vec![1]));
        assert_eq!(merged(&[3, 4], &[1, 3]), (vec![3, 4], vec![1, 3]));
        assert_eq!(merged(&[1, 1], &[5, 7]), (vec![], vec![]));
    }
}
