//! Support for the code `#[derive(IntoDLPack, FromDLPack)]` generates.
//!
//! Not public API: no semver guarantee. The derive crate is pinned to this
//! crate's exact version, so both always agree on what is here. Everything is
//! safe code; the traits exist so that a misused field type fails to compile
//! with a message about that field.

use std::ptr::NonNull;

use crate::error::{DimsKind, LayoutError};

pub use ::core;
pub use ::pyo3;
#[cfg(feature = "stub-gen")]
pub use ::pyo3_stub_gen;

pub use crate::export::OwnLayout;
pub use crate::{
    DLPackError, DLPackTensor, DataType, Device, DeviceType, Dims, Element, FromDLPack, IntoDLPack,
    PyTensor, TensorData, TensorInfo, TensorInfoBuilder,
};

use pyo3::prelude::*;
use pyo3::types::PyCapsule;

// ------------------------------------------------------------------ export

/// Starts the description of a `#[dlpack(data)]` field.
pub fn builder<D: TensorData + ?Sized>(data: &D) -> TensorInfoBuilder<'_> {
    TensorInfo::builder(data)
}

/// A type a `#[dlpack(shape)]` or `#[dlpack(strides)]` field may have.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold a tensor's shape or strides",
    label = "unsupported type for #[dlpack(shape)] / #[dlpack(strides)]",
    note = "use [usize; N], [i64; N], Vec<usize>, Vec<i64>, Box<[usize]> or Box<[i64]> (strides may also be an Option of one)"
)]
pub trait DimsField {
    /// The entries, borrowed.
    fn dims(&self) -> Dims<'_>;
    /// Built from an imported tensor's entries (FromDLPack), or why not.
    fn from_entries(entries: &[i64], what: &str) -> Result<Self, DLPackError>
    where
        Self: Sized;
}

/// A type a `#[dlpack(strides)]` field may have: a [`DimsField`] or an `Option` of one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold a tensor's strides",
    label = "unsupported type for #[dlpack(strides)]",
    note = "use [i64; N], Vec<i64>, Box<[i64]> (or the usize forms), or an Option of one"
)]
pub trait StridesField {
    /// The strides, or `None` for row-major.
    fn strides(&self) -> Option<Dims<'_>>;
    /// Built from an imported tensor's strides.
    fn from_entries(entries: &[i64]) -> Result<Self, DLPackError>
    where
        Self: Sized;
}

/// `what` is `"shape"` or `"strides"`, as the derive names the field's role.
fn negative(what: &str, entries: &[i64]) -> DLPackError {
    let kind = if what == "strides" {
        DimsKind::Strides
    } else {
        DimsKind::Shape
    };
    DLPackError::Layout(LayoutError::NegativeEntries {
        kind,
        entries: entries.to_vec(),
    })
}

macro_rules! dims_fields {
    ($($elem:ty),*) => {$(
        impl<const N: usize> DimsField for [$elem; N] {
            fn dims(&self) -> Dims<'_> { Dims::from(self) }
            fn from_entries(entries: &[i64], what: &str) -> Result<Self, DLPackError> {
                if entries.len() != N {
                    return Err(DLPackError::Ndim { expected: N, found: entries.len() });
                }
                let converted = entries.iter().map(|&e| <$elem>::try_from(e).ok()).collect::<Option<Vec<$elem>>>();
                let converted = converted.ok_or_else(|| negative(what, entries))?;
                Ok(converted.try_into().unwrap_or_else(|_| unreachable!("length checked above")))
            }
        }
        impl DimsField for Vec<$elem> {
            fn dims(&self) -> Dims<'_> { Dims::from(self) }
            fn from_entries(entries: &[i64], what: &str) -> Result<Self, DLPackError> {
                entries.iter().map(|&e| <$elem>::try_from(e).ok()).collect::<Option<Vec<$elem>>>()
                    .ok_or_else(|| negative(what, entries))
            }
        }
        impl DimsField for Box<[$elem]> {
            fn dims(&self) -> Dims<'_> { Dims::from(self) }
            fn from_entries(entries: &[i64], what: &str) -> Result<Self, DLPackError> {
                <Vec<$elem> as DimsField>::from_entries(entries, what).map(Vec::into_boxed_slice)
            }
        }
        impl<const N: usize> StridesField for [$elem; N] {
            fn strides(&self) -> Option<Dims<'_>> { Some(self.dims()) }
            fn from_entries(entries: &[i64]) -> Result<Self, DLPackError> { DimsField::from_entries(entries, "strides") }
        }
        impl StridesField for Vec<$elem> {
            fn strides(&self) -> Option<Dims<'_>> { Some(self.dims()) }
            fn from_entries(entries: &[i64]) -> Result<Self, DLPackError> { DimsField::from_entries(entries, "strides") }
        }
        impl StridesField for Box<[$elem]> {
            fn strides(&self) -> Option<Dims<'_>> { Some(self.dims()) }
            fn from_entries(entries: &[i64]) -> Result<Self, DLPackError> { DimsField::from_entries(entries, "strides") }
        }
    )*};
}
dims_fields!(usize, i64);

impl<T: DimsField> StridesField for Option<T> {
    fn strides(&self) -> Option<Dims<'_>> {
        self.as_ref().map(DimsField::dims)
    }
    fn from_entries(entries: &[i64]) -> Result<Self, DLPackError> {
        T::from_entries(entries, "strides").map(Some)
    }
}

/// The type of a `#[dlpack(read_only)]` field.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a #[dlpack(read_only)] field",
    label = "expected `bool`"
)]
pub trait ReadOnlyField {
    /// The flag to export.
    fn flag(&self) -> bool;
    /// The imported tensor's flag.
    fn from_tensor(tensor: &PyTensor) -> Self;
}

impl ReadOnlyField for bool {
    fn flag(&self) -> bool {
        *self
    }
    fn from_tensor(tensor: &PyTensor) -> Self {
        tensor.is_read_only()
    }
}

/// The type of a `#[dlpack(device)]` field.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a #[dlpack(device)] field",
    label = "expected `pyo3_dlpack::Device`"
)]
pub trait DeviceField {
    /// The device to export.
    fn device(&self) -> Device;
    /// The imported tensor's device.
    fn from_tensor(tensor: &PyTensor) -> Self;
}

impl DeviceField for Device {
    fn device(&self) -> Device {
        *self
    }
    fn from_tensor(tensor: &PyTensor) -> Self {
        tensor.device()
    }
}

/// The type of a `#[dlpack(dtype)]` field.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a #[dlpack(dtype)] field",
    label = "expected `pyo3_dlpack::DataType` (a struct-level `#[dlpack(dtype = f32)]` takes a Rust type)"
)]
pub trait DtypeField {
    /// The dtype to export.
    fn dtype(&self) -> DataType;
    /// The imported tensor's dtype.
    fn from_tensor(tensor: &PyTensor) -> Self;
}

impl DtypeField for DataType {
    fn dtype(&self) -> DataType {
        *self
    }
    fn from_tensor(tensor: &PyTensor) -> Self {
        tensor.dtype()
    }
}

/// The type of a `#[dlpack(tensor)]` field.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a #[dlpack(tensor)] field",
    label = "expected `pyo3_dlpack::PyTensor`, which owns the imported memory"
)]
pub trait TensorField {
    /// Takes the imported tensor.
    fn from_tensor(tensor: PyTensor) -> Self;
}

impl TensorField for PyTensor {
    fn from_tensor(tensor: PyTensor) -> Self {
        tensor
    }
}

/// Compile-time check that an export's `#[dlpack(tensor)]` field, its memory
/// (a struct deriving both traits), is a [`TensorField`].
pub fn assert_tensor_field<T: TensorField>() {}

/// A type an exported value's fields may have: every field travels with the
/// value to whichever thread frees it.
///
/// The derive asserts it once per field, spanned on the field's type. The
/// second impl (which never applies) makes selection weigh both impls: when
/// neither holds, rustc reports one error with this message at the field,
/// instead of one error per missing auto trait.
#[diagnostic::on_unimplemented(
    message = "field type `{Self}` must be `Send + Sync` to be exported",
    label = "not `Send + Sync`: an exported value is dropped on whichever thread lets go of it last",
    note = "use a thread-safe type instead (`Arc` for `Rc`, `Arc<Mutex<…>>` or an atomic for `Cell`/`RefCell`), or, if you know the type is thread-safe, write `unsafe impl Send for …` and `unsafe impl Sync for …`"
)]
pub trait SendSyncField<Why> {}

/// Why a field is [`SendSyncField`]: it is `Send + Sync`.
#[derive(Debug)]
pub enum ThreadSafe {}

/// The reason no field has: see [`SendSyncField`].
#[derive(Debug)]
pub enum Unreachable {}

mod sealed {
    /// Implemented by no type (and only this module could implement it).
    pub trait Impossible {}
}

#[diagnostic::do_not_recommend]
impl<T: ?Sized + Send + Sync> SendSyncField<ThreadSafe> for T {}
#[diagnostic::do_not_recommend]
impl<T: ?Sized + sealed::Impossible> SendSyncField<Unreachable> for T {}

/// Compile-time check that a field of an exported value is [`SendSyncField`].
pub fn assert_send_sync_field<T: ?Sized + SendSyncField<Why>, Why>() {}

/// The [`SendSyncField`] check of a `#[dlpack(data)]` field, made only when
/// the field's type is [`TensorData`]:
/// `DataThreadSafety::<T>::new().check()`.
///
/// A data field that is not memory already fails with `TensorData`'s error,
/// which says what to write instead (`Arc<Vec<T>>` for `Rc<Vec<T>>`); a
/// second error saying the same `Rc` is not `Send + Sync` would only repeat
/// it. So `check` is the inherent method below, which asserts
/// [`SendSyncField`], when `T: TensorData`, and otherwise, through `Deref`,
/// [`NotData::check`], which asserts nothing.
pub struct DataThreadSafety<T: ?Sized> {
    data: std::marker::PhantomData<fn(*const T)>,
    not_data: NotData,
}

impl<T: ?Sized> DataThreadSafety<T> {
    /// A probe for a data field of type `T`.
    pub const fn new() -> Self {
        Self {
            data: std::marker::PhantomData,
            not_data: NotData,
        }
    }
}

impl<T: ?Sized> Default for DataThreadSafety<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: ?Sized> std::fmt::Debug for DataThreadSafety<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataThreadSafety")
    }
}

impl<T: ?Sized + TensorData> DataThreadSafety<T> {
    /// Requires the memory to be [`SendSyncField`] (an error on the field).
    pub fn check<Why>(&self)
    where
        T: SendSyncField<Why>,
    {
    }
}

impl<T: ?Sized> std::ops::Deref for DataThreadSafety<T> {
    type Target = NotData;
    fn deref(&self) -> &NotData {
        &self.not_data
    }
}

/// See [`DataThreadSafety`]: a data field that is not [`TensorData`].
#[derive(Debug)]
pub struct NotData;

impl NotData {
    /// Checks nothing: `TensorData`'s error on the field says what to write.
    pub fn check(&self) {}
}

/// The `IntoPyObject` of a derived type, which compiles whether or not the
/// type is [`IntoDLPack`]: `IntoPyObjectProbe::<T>::new().convert(value, py)`.
///
/// A derived type whose fields are not all [`SendSyncField`] is not
/// `IntoDLPack` (its impl requires `Send + Sync`), and already fails to
/// compile with one error per such field. Were its `IntoPyObject` to require
/// `IntoDLPack` too, every `#[pyfunction]` returning it would add errors of
/// its own. So `convert` is the inherent method below when `T: IntoDLPack`,
/// and otherwise, through `Deref`, [`NotExportable::convert`], which a
/// program that compiles never calls.
pub struct IntoPyObjectProbe<T> {
    value: std::marker::PhantomData<fn(T)>,
    not_exportable: NotExportable,
}

impl<T> IntoPyObjectProbe<T> {
    /// A probe for values of type `T`.
    pub const fn new() -> Self {
        Self {
            value: std::marker::PhantomData,
            not_exportable: NotExportable,
        }
    }
}

impl<T> Default for IntoPyObjectProbe<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> std::fmt::Debug for IntoPyObjectProbe<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IntoPyObjectProbe")
    }
}

impl<T: IntoDLPack> IntoPyObjectProbe<T> {
    /// The value as a checked `DLPackTensor`.
    pub fn convert<'py>(&self, value: T, py: Python<'py>) -> PyResult<Bound<'py, DLPackTensor>> {
        into_pyobject(value, py)
    }
}

impl<T> std::ops::Deref for IntoPyObjectProbe<T> {
    type Target = NotExportable;
    fn deref(&self) -> &NotExportable {
        &self.not_exportable
    }
}

/// See [`IntoPyObjectProbe`]: a type that is not `IntoDLPack`.
#[derive(Debug)]
pub struct NotExportable;

impl NotExportable {
    /// Never called: a derived type that is not `IntoDLPack` has fields that
    /// are not [`SendSyncField`], and does not compile.
    pub fn convert<'py, T>(
        &self,
        _value: T,
        _py: Python<'py>,
    ) -> PyResult<Bound<'py, DLPackTensor>> {
        unreachable!(
            "a #[derive(IntoDLPack)] type whose fields are not Send + Sync does not compile"
        )
    }
}

/// A [`TensorData`] whose Rust type names its element type, so that
/// `#[dlpack(dtype = T)]` is checked by the type checker (`cargo check`).
pub trait TypedData {
    /// The element type every value holds.
    type Element;
}

impl<T: Element> TypedData for Vec<T> {
    type Element = T;
}
impl<T: Element> TypedData for Box<[T]> {
    type Element = T;
}
impl<T: Element> TypedData for std::sync::Arc<[T]> {
    type Element = T;
}
impl<T: Element> TypedData for crate::AlignedBuffer<T> {
    type Element = T;
}
#[cfg(feature = "ndarray")]
impl<T: Element, D: ndarray::Dimension> TypedData for ndarray::Array<T, D> {
    type Element = T;
}

/// The element types of this crate, whose Rust types are their dtypes: two
/// of them are the same dtype exactly when they are the same type.
pub trait BuiltinElement: Element + sealed_builtin::Sealed {}

mod sealed_builtin {
    pub trait Sealed {}
}

macro_rules! builtin_elements {
    ($($ty:ty),*) => {$(
        impl sealed_builtin::Sealed for $ty {}
        impl BuiltinElement for $ty {}
    )*};
}
builtin_elements!(bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
#[cfg(feature = "half")]
builtin_elements!(half::f16, half::bf16);
#[cfg(feature = "num-complex")]
builtin_elements!(num_complex::Complex<f32>, num_complex::Complex<f64>);

/// `#[dlpack(dtype = Declared)]` over data holding `Self` elements: the same
/// type, or bytes (`u8`) holding any dtype but `bool`.
#[diagnostic::on_unimplemented(
    message = "the #[dlpack(data)] field holds `{Self}` elements, but `#[dlpack(dtype = {Declared})]` declares `{Declared}`",
    label = "holds `{Self}` elements, not `{Declared}`",
    note = "store `{Declared}` elements, or declare the dtype the data holds; only a byte buffer (`u8` elements) may hold another dtype, and never `bool`"
)]
pub trait HoldsDtype<Declared> {}

impl<T: Element> HoldsDtype<T> for T {}

macro_rules! bytes_hold {
    ($($ty:ty),*) => {$(
        #[diagnostic::do_not_recommend]
        impl HoldsDtype<$ty> for u8 {}
    )*};
}
bytes_hold!(i8, i16, i32, i64, u16, u32, u64, f32, f64);
#[cfg(feature = "half")]
bytes_hold!(half::f16, half::bf16);
#[cfg(feature = "num-complex")]
bytes_hold!(num_complex::Complex<f32>, num_complex::Complex<f64>);

/// `#[dlpack(dtype = E)]` over a data field of type `D`, checked by the
/// type checker where the types say enough:
/// `DtypeProbe::<D, E>::new().dtype_check().check()`.
///
/// When `D` is [`TypedData`] and both element types are [`BuiltinElement`]s,
/// `dtype_check` is the inherent method below and `check` requires
/// [`HoldsDtype`]: a mismatch is a type error on the data field. Otherwise
/// (raw memory, a generic or user-defined buffer or element type) method
/// lookup goes on through `Deref` to [`UncheckedDtype`], which checks
/// nothing; [`check_static_dtype`] and the runtime check remain.
pub struct DtypeProbe<D: ?Sized, E> {
    types: std::marker::PhantomData<fn(*const D) -> E>,
    unchecked: UncheckedDtype,
}

impl<D: ?Sized, E> DtypeProbe<D, E> {
    /// A probe for data of type `D` declared as `E`.
    pub const fn new() -> Self {
        Self {
            types: std::marker::PhantomData,
            unchecked: UncheckedDtype,
        }
    }
}

impl<D, E> DtypeProbe<D, E>
where
    D: ?Sized + TypedData,
    D::Element: BuiltinElement,
    E: BuiltinElement,
{
    /// Both element types are known: compare them.
    pub fn dtype_check(&self) -> TypedDtype<D, E> {
        TypedDtype(std::marker::PhantomData)
    }
}

impl<D: ?Sized, E> Default for DtypeProbe<D, E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D: ?Sized, E> std::fmt::Debug for DtypeProbe<D, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DtypeProbe")
    }
}

impl<D: ?Sized, E> std::ops::Deref for DtypeProbe<D, E> {
    type Target = UncheckedDtype;
    fn deref(&self) -> &UncheckedDtype {
        &self.unchecked
    }
}

/// See [`DtypeProbe`]: typed data and a declared dtype, both built in.
pub struct TypedDtype<D: ?Sized, E>(std::marker::PhantomData<fn(*const D) -> E>);

impl<D: ?Sized, E> std::fmt::Debug for TypedDtype<D, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TypedDtype")
    }
}

impl<D: ?Sized + TypedData, E> TypedDtype<D, E> {
    /// Compiles only if the data's elements may be exported as `E`.
    pub fn check(self)
    where
        D::Element: HoldsDtype<E>,
    {
    }
}

/// See [`DtypeProbe`]: nothing the type checker can compare.
#[derive(Debug)]
pub struct UncheckedDtype;

impl UncheckedDtype {
    /// Nothing to compare at the type level.
    pub fn dtype_check(&self) -> Self {
        Self
    }
    /// Nothing to check at the type level.
    pub fn check(self) {}
}

/// `#[dlpack(dtype = T)]` against a typed data field, at compile time (at
/// code generation, for what [`DtypeProbe`] cannot compare).
pub const fn check_static_dtype(data: Option<DataType>, declared: DataType) {
    if let Some(data) = data {
        assert!(
            crate::protocol::storage_holds(data, declared),
            "#[dlpack(dtype = …)] differs from the element type of the #[dlpack(data)] field: \
             use data of that element type (only u8 byte buffers may hold another dtype, and not bool)"
        );
    }
}

/// A type a field named in `#[dlpack(shape = [...])]` may have: one extent.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold one extent of a shape",
    label = "a field named in `shape = [...]`",
    note = "use an unsigned integer: usize, u64, u32, u16 or u8"
)]
pub trait ExtentField {
    /// The extent (`usize::MAX` for one past it, which the description refuses).
    fn extent(&self) -> usize;
    /// The field for extent `dim` of an imported shape (FromDLPack), or an
    /// `OverflowError` naming the field when the extent does not fit it.
    fn from_extent(extent: i64, dim: usize, field: &'static str) -> Result<Self, DLPackError>
    where
        Self: Sized;
}

macro_rules! extent_field {
    ($($t:ty),*) => {$(
        impl ExtentField for $t {
            fn extent(&self) -> usize {
                usize::try_from(*self).unwrap_or(usize::MAX)
            }
            fn from_extent(extent: i64, dim: usize, field: &'static str) -> Result<Self, DLPackError> {
                <$t>::try_from(extent).map_err(|_| extent_out_of_range(extent, dim, field, i64::try_from(<$t>::MAX).unwrap_or(i64::MAX)))
            }
        }
    )*};
}

#[cold]
fn extent_out_of_range(extent: i64, dim: usize, field: &'static str, max: i64) -> DLPackError {
    DLPackError::InvalidArgument(crate::error::ArgumentError::OutOfRange {
        what: format!("extent {dim} of the imported shape, for the field `{field}`,"),
        min: 0,
        max,
        found: extent.to_string(),
    })
}
extent_field!(usize, u64, u32, u16, u8);

/// A type a `#[dlpack(byte_offset)]` field may have.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold a byte offset",
    label = "unsupported type for #[dlpack(byte_offset)]",
    note = "use usize: bytes from the start of the #[dlpack(data)] memory to the first element"
)]
pub trait ByteOffsetField {
    /// The offset in bytes.
    fn byte_offset(&self) -> usize;
}

impl ByteOffsetField for usize {
    fn byte_offset(&self) -> usize {
        *self
    }
}

/// A `#[dlpack(dtype)]` field is for memory of no element type of its own
/// (`Vec<u8>`, `RawBuffer`): over typed data the type fixes the dtype, and
/// a field could only repeat it or contradict it.
pub const fn check_dtype_field(data: Option<DataType>) {
    if let Some(data) = data {
        assert!(
            // Only byte storage (`u8`) holds both.
            crate::protocol::storage_holds(data, DataType::F64)
                && crate::protocol::storage_holds(data, DataType::I8),
            "a #[dlpack(dtype)] field is for untyped memory (Vec<u8>, RawBuffer): the #[dlpack(data)] \
             field's element type already fixes the dtype; remove the dtype field"
        );
    }
}

/// Names the derived struct's field whose value contradicts the memory
/// (`roles`: each role the struct gives by a field, and the field's name).
#[cold]
pub fn name_field(err: DLPackError, roles: &[(&'static str, &'static str)]) -> DLPackError {
    match err {
        DLPackError::Contradicts { field: None, what } => {
            let field = roles
                .iter()
                .find(|(role, _)| *role == what.role())
                .map(|(_, name)| *name);
            DLPackError::Contradicts { field, what }
        }
        other => other,
    }
}

/// The `IntoPyObject` of a derived type: a checked `DLPackTensor`.
pub fn into_pyobject<T: IntoDLPack>(value: T, py: Python<'_>) -> PyResult<Bound<'_, DLPackTensor>> {
    Bound::new(py, DLPackTensor::new(value)?)
}

// ------------------------------------------------------------------ import

/// Without feature `experimental-inspect`, generated code's hint items are
/// nothing (see `inspect::__input_type`).
#[cfg(not(feature = "experimental-inspect"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __input_type {
    ($($element:ty)?) => {};
}

/// As [`__input_type`]: nothing without feature `experimental-inspect`.
#[cfg(not(feature = "experimental-inspect"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __output_type {
    () => {};
}

/// Without feature `stub-gen`, generated code's `PyStubType` impls are
/// nothing (see `stub_gen::__stub_type`).
#[cfg(not(feature = "stub-gen"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __stub_type {
    ($($anything:tt)*) => {};
}

/// The `FromPyObject` of a derived type.
///
/// A raw capsule's tensor is lent to `from_dlpack`: refused (dropped there),
/// it is given back to the capsule, so the next variant of an enum of
/// derived types can take it.
pub fn extract<T: FromDLPack>(obj: &Bound<'_, PyAny>) -> PyResult<T> {
    if let Ok(capsule) = obj.cast_exact::<PyCapsule>() {
        return extract_lent(capsule);
    }
    let tensor = PyTensor::from_argument(obj)?;
    Ok(T::from_dlpack(tensor)?)
}

/// [`extract`] of a raw capsule, its tensor on lease while `from_dlpack` runs.
#[cold]
#[inline(never)]
fn extract_lent<T: FromDLPack>(capsule: &Bound<'_, PyCapsule>) -> PyResult<T> {
    let mut tensor = PyTensor::from_argument(capsule.as_any())?;
    let lease = tensor.lend_to(capsule);
    let result = T::from_dlpack(tensor);
    if let Some(lease) = lease {
        lease.close();
    }
    Ok(result?)
}

/// `#[dlpack(device = "…")]`: the type, and the index when one was given.
pub fn check_device(
    tensor: &PyTensor,
    device_type: i32,
    device_id: Option<i32>,
) -> Result<(), DLPackError> {
    let found = tensor.device();
    let expected_type = DeviceType::from_code(device_type);
    match device_id {
        None if found.device_type != expected_type => Err(DLPackError::DeviceType {
            expected: expected_type,
            found,
        }),
        Some(id) if found.device_type != expected_type || found.device_id != id => {
            Err(DLPackError::Device {
                expected: Device::new(expected_type, id),
                found,
            })
        }
        _ => Ok(()),
    }
}

/// A type a FromDLPack `#[dlpack(data)]` field may have: a pointer to the
/// first element (its element type checked against the dtype), or an address.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold an imported tensor's data",
    label = "unsupported type for a FromDLPack #[dlpack(data)] field",
    note = "use *const T, *mut T or NonNull<T> (T an Element matching the dtype), or a u64/usize address"
)]
pub trait DataField: Sized {
    /// The element type the pointer claims ([`Untyped`] for addresses).
    type Elem;
    /// The field's value for `tensor`, or why the tensor does not fit it.
    fn from_tensor(tensor: &PyTensor) -> Result<Self, DLPackError>;
}

fn typed_pointer<T: Element>(tensor: &PyTensor) -> Result<*mut T, DLPackError> {
    tensor.ensure_dtype(T::DTYPE)?;
    Ok(tensor.data_ptr().cast())
}

impl<T: Element> DataField for *const T {
    type Elem = T;
    fn from_tensor(tensor: &PyTensor) -> Result<Self, DLPackError> {
        typed_pointer::<T>(tensor).map(<*mut T>::cast_const)
    }
}

impl<T: Element> DataField for *mut T {
    type Elem = T;
    fn from_tensor(tensor: &PyTensor) -> Result<Self, DLPackError> {
        tensor.ensure_writable()?;
        typed_pointer::<T>(tensor)
    }
}

impl<T: Element> DataField for NonNull<T> {
    type Elem = T;
    /// Empty tensors (whose data may be NULL) get a dangling pointer, as slices do.
    fn from_tensor(tensor: &PyTensor) -> Result<Self, DLPackError> {
        let ptr = typed_pointer::<T>(tensor)?;
        Ok(NonNull::new(ptr).unwrap_or(NonNull::dangling()))
    }
}

/// The element type of an address field: it claims no type, so any dtype fits.
#[derive(Debug)]
pub enum Untyped {}

impl DataField for u64 {
    type Elem = Untyped;
    fn from_tensor(tensor: &PyTensor) -> Result<Self, DLPackError> {
        Ok(tensor.data_ptr() as usize as u64)
    }
}

impl DataField for usize {
    type Elem = Untyped;
    fn from_tensor(tensor: &PyTensor) -> Result<Self, DLPackError> {
        Ok(tensor.data_ptr() as usize)
    }
}

/// `#[dlpack(dtype = T)]` against a data pointer to `U`, both built-in
/// element types: `T` and `U` must be one type.
#[diagnostic::on_unimplemented(
    message = "the #[dlpack(data)] pointer's element type `{Self}` differs from #[dlpack(dtype = {T})]",
    label = "expected a pointer to `{T}`"
)]
pub trait SameElement<T> {}
impl<T: Element> SameElement<T> for T {}

/// `#[dlpack(dtype = D)]` against a FromDLPack data pointer to `P`, checked
/// by the type checker where the types say enough:
/// `ElementProbe::<P, D>::new().dtype_check().check()`.
///
/// When both are [`BuiltinElement`]s, `dtype_check` is the inherent method
/// below and `check` requires [`SameElement`]: a mismatch is a type error on
/// the data field. Otherwise (an address field, a user's own element type,
/// a generic one) method lookup goes on through `Deref` to
/// [`UncheckedDtype`], and [`check_pointer_dtype`] compares the dtypes.
pub struct ElementProbe<P, D> {
    types: std::marker::PhantomData<fn(P) -> D>,
    unchecked: UncheckedDtype,
}

impl<P, D> ElementProbe<P, D> {
    /// A probe for a pointer to `P` declared as `D`.
    pub const fn new() -> Self {
        Self {
            types: std::marker::PhantomData,
            unchecked: UncheckedDtype,
        }
    }
}

impl<P: BuiltinElement, D: BuiltinElement> ElementProbe<P, D> {
    /// Both element types are built in: compare them.
    pub fn dtype_check(&self) -> TypedElement<P, D> {
        TypedElement(std::marker::PhantomData)
    }
}

impl<P, D> Default for ElementProbe<P, D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P, D> std::fmt::Debug for ElementProbe<P, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ElementProbe")
    }
}

impl<P, D> std::ops::Deref for ElementProbe<P, D> {
    type Target = UncheckedDtype;
    fn deref(&self) -> &UncheckedDtype {
        &self.unchecked
    }
}

/// See [`ElementProbe`]: a pointer and a declared dtype, both built in.
pub struct TypedElement<P, D>(std::marker::PhantomData<fn(P) -> D>);

impl<P, D> std::fmt::Debug for TypedElement<P, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TypedElement")
    }
}

impl<P, D> TypedElement<P, D> {
    /// Compiles only if the pointer's element type is the declared one.
    pub fn check(self)
    where
        P: SameElement<D>,
    {
    }
}

/// The dtype a FromDLPack data field's pointer claims: its element's, or
/// none for an address ([`Untyped`]).
pub trait PointeeDtype {
    /// The claimed dtype.
    const DTYPE: Option<DataType>;
}

impl<T: Element> PointeeDtype for T {
    const DTYPE: Option<DataType> = Some(T::DTYPE);
}

impl PointeeDtype for Untyped {
    const DTYPE: Option<DataType> = None;
}

/// `#[dlpack(dtype = D)]` against a FromDLPack data pointer, at compile
/// time (at code generation, for what [`ElementProbe`] cannot compare: a
/// user's element type of the declared dtype is accepted).
pub const fn check_pointer_dtype(pointee: Option<DataType>, declared: DataType) {
    if let Some(pointee) = pointee {
        assert!(
            pointee.code.code() == declared.code.code()
                && pointee.bits == declared.bits
                && pointee.lanes == declared.lanes,
            "the #[dlpack(data)] pointer's element type has another dtype than #[dlpack(dtype = …)]: \
             point to elements of the declared dtype"
        );
    }
}
