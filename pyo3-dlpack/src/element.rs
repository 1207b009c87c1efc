//! Rust scalar types that map to a DLPack [`DataType`].

use crate::DataType;

/// A Rust scalar that is stored exactly as DLPack's `dtype` describes it.
///
/// Implemented for `bool`, the signed and unsigned integers, `f32`, `f64`,
/// and behind features for `half::f16`/`half::bf16` (`half`) and
/// `num_complex::Complex<f32>`/`Complex<f64>` (`num-complex`).
///
/// `usize` and `isize` are the integers of the target's pointer width:
/// `uint64`/`int64` on 64-bit targets (`uint32`/`int32` on 32-bit ones),
/// as NumPy's `uintp`/`intp`, so `Vec<usize>` indices export as they are
/// and a `uint64` tensor reads as `&[usize]`. The width is the target's, so
/// the mapping is fixed at compile time.
///
/// ```
/// use pyo3_dlpack::{DataType, Element};
/// assert_eq!(<f32 as Element>::DTYPE, DataType::F32);
/// assert_eq!(<u8 as Element>::DTYPE, DataType::U8);
/// # #[cfg(target_pointer_width = "64")]
/// assert_eq!(<usize as Element>::DTYPE, DataType::U64);
/// ```
///
/// # Safety
///
/// `size_of::<Self>()` must equal `DTYPE.itemsize()`, `align_of::<Self>()`
/// must divide it, and a value of `Self` must have exactly the in-memory
/// representation that DLPack gives `DTYPE` (native endianness), and the
/// all-zero bit pattern must be a valid value. The crate exports `&[Self]`
/// memory as `DTYPE` on the strength of this promise.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a DLPack element type",
    label = "expected a scalar such as f32, i64, u8 or bool",
    note = "Element is implemented for bool, i8-i64, u8-u64, isize, usize, f32, f64, half::f16/bf16 (feature `half`) and num_complex::Complex<f32/f64> (feature `num-complex`)",
    note = "if `{Self}` is a type parameter of your struct, bound it: `{Self}: pyo3_dlpack::Element` (which also makes it `Send + Sync`)"
)]
pub unsafe trait Element: Copy + Send + Sync + 'static {
    /// The DLPack type of this scalar.
    const DTYPE: DataType;

    /// The name in `numpy` of the scalar type a generated stub names for
    /// arrays of this element (`float64`); `generic` where NumPy has none.
    /// Features `experimental-inspect` and `stub-gen`.
    #[cfg(any(feature = "experimental-inspect", feature = "stub-gen"))]
    #[doc(hidden)]
    const NUMPY_NAME: &'static str = "generic";

    /// [`NUMPY_NAME`](Self::NUMPY_NAME) as PyO3's hint (`numpy.float64`).
    /// Feature `experimental-inspect`.
    #[cfg(feature = "experimental-inspect")]
    #[doc(hidden)]
    const NUMPY_SCALAR: pyo3::inspect::PyStaticExpr =
        crate::inspect::numpy_scalar(Self::NUMPY_NAME);
}

macro_rules! impl_element {
    ($($ty:ty => $dtype:ident, $numpy:literal),* $(,)?) => {$(
        // SAFETY: a primitive of exactly `$dtype`'s size, alignment and
        // native-endian IEEE/two's-complement layout; `bool` is one byte that
        // DLPack's kDLBool (bits 8) also stores as 0 or 1.
        unsafe impl Element for $ty {
            const DTYPE: DataType = DataType::$dtype;
            #[cfg(any(feature = "experimental-inspect", feature = "stub-gen"))]
            const NUMPY_NAME: &'static str = $numpy;
        }
    )*};
}

impl_element! {
    bool => BOOL, "bool",
    i8 => I8, "int8", i16 => I16, "int16", i32 => I32, "int32", i64 => I64, "int64",
    u8 => U8, "uint8", u16 => U16, "uint16", u32 => U32, "uint32", u64 => U64, "uint64",
    f32 => F32, "float32", f64 => F64, "float64",
}

// The integers of the pointer width: DLPack has no such dtype, so they are
// the fixed-width integers of the target's width (checked at compile time:
// no other width has an impl, and the assertion below states the sizes).
#[cfg(target_pointer_width = "64")]
impl_element! { usize => U64, "uint64", isize => I64, "int64" }
#[cfg(target_pointer_width = "32")]
impl_element! { usize => U32, "uint32", isize => I32, "int32" }
const _: () = assert!(
    size_of::<usize>() == <usize as Element>::DTYPE.itemsize()
        && size_of::<isize>() == <isize as Element>::DTYPE.itemsize()
);

// NumPy has no bfloat16: its arrays are hinted `numpy.generic`.
#[cfg(feature = "half")]
impl_element! { half::f16 => F16, "float16", half::bf16 => BF16, "generic" }

#[cfg(feature = "num-complex")]
impl_element! {
    num_complex::Complex<f32> => C64, "complex64",
    num_complex::Complex<f64> => C128, "complex128",
}

/// An [`Element`] for which every bit pattern is a valid value: the types
/// imported memory can be viewed as (`&[T]`, `ndarray` views).
///
/// `bool` is deliberately not one: a foreign producer's bool tensor may hold
/// bytes other than 0 and 1, and a `&[bool]` over them would be undefined
/// behaviour. View bool tensors as `u8` instead.
///
/// # Safety
///
/// Every bit pattern of `size_of::<Self>()` bytes must be a valid `Self`.
pub unsafe trait PlainElement: Element {}

macro_rules! impl_plain {
    ($($ty:ty),*) => {$(
        // SAFETY: integers and IEEE floats accept every bit pattern.
        unsafe impl PlainElement for $ty {}
    )*};
}
impl_plain!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64);
#[cfg(feature = "half")]
impl_plain!(half::f16, half::bf16);
#[cfg(feature = "num-complex")]
impl_plain!(num_complex::Complex<f32>, num_complex::Complex<f64>);

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, size_of};

    fn check<T: Element>() {
        assert_eq!(size_of::<T>(), T::DTYPE.itemsize(), "{}", T::DTYPE);
        assert_eq!(T::DTYPE.itemsize() % align_of::<T>(), 0, "{}", T::DTYPE);
    }

    #[test]
    fn sizes_match_the_dtypes() {
        check::<bool>();
        check::<i8>();
        check::<i16>();
        check::<i32>();
        check::<i64>();
        check::<u8>();
        check::<u16>();
        check::<u32>();
        check::<u64>();
        check::<usize>();
        check::<isize>();
        check::<f32>();
        check::<f64>();
        #[cfg(feature = "half")]
        {
            check::<half::f16>();
            check::<half::bf16>();
        }
        #[cfg(feature = "num-complex")]
        {
            check::<num_complex::Complex<f32>>();
            check::<num_complex::Complex<f64>>();
        }
    }
}
