//! `AlignedBuffer`: owned, 64-byte-aligned memory for zero-copy exports.

use std::alloc::{self, Layout};
use std::ffi::c_void;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::export::data::TensorData;
use crate::{DLPackError, DataType, Element};

/// Alignment of every [`AlignedBuffer`], in bytes.
///
/// JAX (XLA) imports CPU memory without a copy only when it is 64-byte
/// aligned; anything less is silently copied. A plain `Vec<f32>` is only
/// 4-byte aligned, so JAX may copy it.
pub const ALIGNMENT: usize = 64;

/// An owned, fixed-length array of `T` whose first element is 64-byte aligned.
///
/// Use it instead of `Vec<T>` when consumers care about alignment (JAX copies
/// CPU buffers that are not 64-byte aligned). It derefs to `[T]`.
///
/// ```
/// use pyo3_dlpack::AlignedBuffer;
///
/// let mut pixels = AlignedBuffer::<u8>::zeroed(640 * 480);
/// pixels[0] = 255;
/// assert_eq!(pixels.as_ptr() as usize % 64, 0);
/// let ramp = AlignedBuffer::from_fn(4, |i| i as f32 * 0.5);
/// assert_eq!(&ramp[..], &[0.0, 0.5, 1.0, 1.5]);
/// ```
pub struct AlignedBuffer<T: Element> {
    ptr: NonNull<T>,
    len: usize,
    /// Bytes from the start of the allocation to `ptr` (see `try_layout`).
    offset: usize,
}

// SAFETY: the buffer owns its elements like a `Vec<T>`; `Element` types are Send.
unsafe impl<T: Element> Send for AlignedBuffer<T> {}
// SAFETY: shared access only reads; `Element` types are Sync.
unsafe impl<T: Element> Sync for AlignedBuffer<T> {}

impl<T: Element> AlignedBuffer<T> {
    fn layout(len: usize) -> (Layout, usize) {
        Self::try_layout(len).expect("AlignedBuffer: length overflows isize")
    }

    /// The allocation of `len` elements and the alignment of their start:
    /// 64 bytes, and a page from 64 KiB (a copy into memory at another offset
    /// in its page than its source runs at a third of the speed: stores alias
    /// later loads with the same low address bits; huge pages, see
    /// `gather::advise_huge_pages`, start at a page boundary too). `None`
    /// when the size overflows.
    ///
    /// The allocation asks only `T`'s alignment, with room to align the start
    /// inside it: a plain `malloc` for glibc. An over-aligned request
    /// (`posix_memalign`) at glibc's dynamic mmap threshold is mapped afresh
    /// and page-faulted on every call: the freed chunk, trimmed at its front
    /// for the alignment, is smaller than the request, so the threshold never
    /// rises above it (257 minor faults per 1 MiB `copy=True`, 0 with this).
    fn try_layout(len: usize) -> Option<(Layout, usize)> {
        const LARGE: usize = 64 << 10;
        const PAGE: usize = 4096;
        let size = len.checked_mul(size_of::<T>())?;
        let align = ALIGNMENT.max(align_of::<T>());
        let align = if size >= LARGE {
            align.max(PAGE)
        } else {
            align
        };
        // The allocator's start is `T`-aligned: at most this far from `align`.
        let padded = size.checked_add(align - align_of::<T>())?;
        Some((
            Layout::from_size_align(padded, align_of::<T>()).ok()?,
            align,
        ))
    }

    /// A 64-byte-aligned, never-dereferenced pointer for empty buffers.
    fn dangling() -> NonNull<T> {
        let align = ALIGNMENT.max(align_of::<T>());
        NonNull::new(std::ptr::without_provenance_mut(align)).expect("alignment is non-zero")
    }

    /// `len` elements whose bytes are all zero (0, 0.0 or `false`).
    ///
    /// # Panics
    ///
    /// If `len * size_of::<T>()` overflows `isize`, like `Vec::with_capacity`.
    pub fn zeroed(len: usize) -> Self {
        let (layout, align) = Self::layout(len);
        Self::allocate(layout, align, len, true)
            .unwrap_or_else(|| alloc::handle_alloc_error(layout))
    }

    /// `len` elements whose bytes `write` writes, all of them, given the
    /// start of the new (uninitialised, 64-byte-aligned) memory: a copy
    /// without zero-filling the buffer first. When `write` fails, the memory
    /// is freed unread and its error returned.
    ///
    /// # Safety
    ///
    /// `write` writes nothing outside the `len * size_of::<T>()` bytes from
    /// the pointer it is given, and when it returns `Ok`, it wrote every one
    /// of them, with values valid for `T`.
    pub(crate) unsafe fn from_writer<E: From<DLPackError>>(
        len: usize,
        write: impl FnOnce(*mut u8) -> Result<(), E>,
    ) -> Result<Self, E> {
        let out_of_memory = || DLPackError::OutOfMemory {
            bytes: len.saturating_mul(size_of::<T>()),
        };
        let (layout, align) = Self::try_layout(len).ok_or_else(out_of_memory)?;
        let buffer = Self::allocate(layout, align, len, false).ok_or_else(out_of_memory)?;
        // Every byte is written here (the caller's promise) before the
        // buffer is read; dropping it (on an error) reads nothing
        // (`Element`s have no drop).
        write(buffer.ptr.as_ptr().cast())?;
        Ok(buffer)
    }

    /// Like [`zeroed`](Self::zeroed), but `None` instead of a panic or an
    /// abort when the size overflows or the memory cannot be allocated.
    #[cfg(feature = "exchange-api")]
    pub(crate) fn try_zeroed(len: usize) -> Option<Self> {
        let (layout, align) = Self::try_layout(len)?;
        Self::allocate(layout, align, len, true)
    }

    /// `len` elements at an `align`-aligned start in fresh memory of
    /// `layout` (theirs, from `try_layout`), zero-filled or not; `None` when
    /// the allocation fails. Large buffers are advised to use huge pages
    /// before they are first written.
    fn allocate(layout: Layout, align: usize, len: usize, zeroed: bool) -> Option<Self> {
        let size = len * size_of::<T>();
        if size == 0 {
            return Some(Self {
                ptr: Self::dangling(),
                len,
                offset: 0,
            });
        }
        let raw = if zeroed {
            // SAFETY: the layout has a non-zero size (it holds `size`).
            unsafe { alloc::alloc_zeroed(layout) }
        } else {
            // SAFETY: as above; the caller initialises the memory.
            unsafe { alloc::alloc(layout) }
        };
        if raw.is_null() {
            return None;
        }
        // `raw` is `T`-aligned, so the aligned start is at most
        // `align - align_of::<T>()` bytes in: `size` bytes fit after it.
        let offset = raw.addr().next_multiple_of(align) - raw.addr();
        let start = raw.wrapping_add(offset);
        crate::gather::advise_huge_pages(start, size);
        Some(Self {
            ptr: NonNull::new(start.cast::<T>())?,
            len,
            offset,
        })
    }

    /// `len` elements, element `i` being `f(i)`.
    pub fn from_fn(len: usize, mut f: impl FnMut(usize) -> T) -> Self {
        let mut buffer = Self::zeroed(len);
        for (i, slot) in buffer.iter_mut().enumerate() {
            *slot = f(i);
        }
        buffer
    }

    /// A copy of `values`.
    pub fn from_slice(values: &[T]) -> Self {
        let mut buffer = Self::zeroed(values.len());
        buffer.copy_from_slice(values);
        buffer
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `ptr` is valid for `len` initialized, aligned `T`s (allocated
        // zeroed, and every `Element` accepts all-zero bytes, or written whole
        // by `from_writer`'s caller) or dangling with
        // `len * size_of::<T>() == 0`; `&self` forbids concurrent mutation.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The elements, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Element> Drop for AlignedBuffer<T> {
    /// Out of line: one copy of the layout's arithmetic and the free for
    /// every value that holds a buffer (its drop glue calls this).
    #[inline(never)]
    fn drop(&mut self) {
        if self.len * size_of::<T>() != 0 {
            let (layout, _) = Self::layout(self.len);
            let raw = self.ptr.as_ptr().cast::<u8>().wrapping_sub(self.offset);
            // SAFETY: `raw` is the start `alloc_zeroed` or `alloc` returned
            // (`offset` bytes before `ptr`, as `allocate` placed it), with this
            // same layout (a pure function of `len`, which never changes).
            unsafe { alloc::dealloc(raw, layout) };
        }
    }
}

impl<T: Element> Deref for AlignedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Element> DerefMut for AlignedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T: Element> Clone for AlignedBuffer<T> {
    fn clone(&self) -> Self {
        Self::from_slice(self)
    }
}

impl<T: Element> From<&[T]> for AlignedBuffer<T> {
    fn from(values: &[T]) -> Self {
        Self::from_slice(values)
    }
}

impl<T: Element> FromIterator<T> for AlignedBuffer<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let values: Vec<T> = iter.into_iter().collect();
        Self::from_slice(&values)
    }
}

impl<T: Element + fmt::Debug> fmt::Debug for AlignedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

// SAFETY: the allocation never moves and lives until drop; it holds `len`
// initialized `T`s. The pointer is the buffer's own raw pointer (no reference
// to the elements is involved), so consumers may write through it.
unsafe impl<T: Element> TensorData for AlignedBuffer<T> {
    const STATIC_DTYPE: Option<DataType> = Some(T::DTYPE);
    fn data_ptr(&self) -> *mut c_void {
        self.ptr.as_ptr().cast()
    }
    fn byte_len(&self) -> Option<usize> {
        Some(self.len * size_of::<T>())
    }
    fn dtype(&self) -> Option<DataType> {
        Some(T::DTYPE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_buffer_is_64_byte_aligned() {
        for len in [0, 1, 3, 1000] {
            let b = AlignedBuffer::<u8>::zeroed(len);
            assert_eq!(b.data_ptr() as usize % ALIGNMENT, 0, "len {len}");
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == 0));
        }
        // From 64 KiB, a page; every element zeroed and writable to the end
        // (the start is placed inside a larger allocation).
        for len in [(64 << 10) / 8, (1 << 20) / 8 + 3] {
            let mut b = AlignedBuffer::<f64>::zeroed(len);
            assert_eq!(b.data_ptr() as usize % 4096, 0, "len {len}");
            assert!(b.iter().all(|&x| x == 0.0));
            b[len - 1] = 1.0;
            assert_eq!(b.as_slice()[len - 1], 1.0);
        }
        let q = AlignedBuffer::<u16>::from_fn(7, |i| i as u16);
        assert_eq!(q.data_ptr() as usize % ALIGNMENT, 0);
        assert_eq!(q[6], 6);
        let empty = AlignedBuffer::<f64>::zeroed(0);
        assert!(empty.is_empty());
        assert_eq!(empty.byte_len(), Some(0));
    }

    #[test]
    fn constructors_and_clone() {
        let b = AlignedBuffer::from_fn(5, |i| i as i32 * 2);
        assert_eq!(&b[..], &[0, 2, 4, 6, 8]);
        let c = b.clone();
        assert_ne!(c.data_ptr(), b.data_ptr());
        assert_eq!(&c[..], &b[..]);
        let d: AlignedBuffer<u16> = (0..3).collect();
        assert_eq!(&d[..], &[0, 1, 2]);
        assert_eq!(format!("{d:?}"), "[0, 1, 2]");
        assert_eq!(TensorData::dtype(&d), Some(DataType::U16));
        assert_eq!(d.byte_len(), Some(6));
    }
}
