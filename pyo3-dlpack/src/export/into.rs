//! `IntoDLPack`: a Rust value that can be exported as a DLPack tensor.

use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::sync::Arc;

use crate::export::info::TensorInfo;
use crate::export::plan::{CapsuleFormat, ExportRequest};
use crate::export::{AlignedBuffer, DLPackTensor, export_value};
use crate::{DLPackError, Element};

/// A Rust value that describes a tensor: implement it (or derive it) for
/// your tensor type, and the value can be returned to Python as a
/// [`DLPackTensor`] that every DLPack consumer imports without a copy.
///
/// # Deriving
///
/// `#[derive(IntoDLPack)]` implements this trait and `IntoPyObject` (the
/// value becomes a [`DLPackTensor`], so a `#[pyfunction]` returns it as is):
///
/// | field attribute | field type | meaning |
/// |---|---|---|
/// | `#[dlpack(data)]` | any [`TensorData`](crate::TensorData) | the memory; exactly one |
/// | `#[dlpack(shape)]` | `[usize; N]`, `[i64; N]`, `Vec<usize>`, `Vec<i64>`, `Box<[…]>` | optional for 1-D typed data and for data that knows its layout (an ndarray array), which it must equal |
/// | `#[dlpack(strides)]` | as shape, or an `Option` of it | in elements; `None`: row-major (or the data's own) |
/// | `#[dlpack(byte_offset)]` | `usize` | bytes to the first element, kept aligned |
/// | `#[dlpack(device)]` | [`Device`](crate::Device) | must be the memory's own |
/// | `#[dlpack(dtype)]` | [`DataType`](crate::DataType) | runtime dtype, for untyped memory only |
/// | `#[dlpack(read_only)]` | `bool` | export read-only when true |
/// | `#[dlpack(inner)]` | any `IntoDLPack` | the tensor is this value's (instead of a data field) |
/// | `#[dlpack(tensor)]` | [`PyTensor`](crate::PyTensor) | the memory of a struct that derives `FromDLPack` too, with its own layout (instead of a data field) |
/// | `#[dlpack(skip)]` | any | no part of the tensor (a field named like one) |
///
/// Struct attributes: `#[dlpack(dtype = T)]` (an [`Element`] type, checked at
/// compile time against typed data; only `u8` byte buffers may hold another
/// type), `#[dlpack(shape = [height, width, channels])]` (the extents from
/// unsigned scalar fields, in order), `#[dlpack(read_only)]`, `#[dlpack(crate = "path")]` (when the
/// runtime crate is renamed or re-exported). Other fields are kept alive
/// with the value and must, like every field, be `Send + Sync + 'static`;
/// one named `shape`, `strides`, `device`, `dtype`, `byte_offset` or
/// `read_only` needs its attribute or `#[dlpack(skip)]` (a compile error
/// otherwise). A value that contradicts the memory (a device, dtype or
/// layout other than its own) is an error naming the field ([`guide`](crate::guide::derive)).
/// A shape that does not fit the buffer is an error when the value is
/// returned (a `ValueError`), never an export of memory it does not own.
///
/// ```
/// use pyo3_dlpack::{DataType, IntoDLPack};
///
/// #[derive(IntoDLPack)]
/// #[dlpack(dtype = f32)]
/// struct Spectrogram {
///     #[dlpack(data)]
///     bytes: Vec<u8>, // f32 values stored as bytes
///     #[dlpack(shape)]
///     shape: [usize; 2],
///     frame_rate: f64, // kept with the value
/// }
///
/// let s = Spectrogram { bytes: vec![0; 24], shape: [2, 3], frame_rate: 100.0 };
/// assert_eq!(s.tensor_info().unwrap().dtype(), DataType::F32);
/// ```
///
/// # Implementing by hand
///
/// Implementing it is safe: the memory promise lives in the
/// [`TensorData`](crate::TensorData) the [`TensorInfo`] is built from, and
/// `TensorInfo`'s constructors check that the description fits the buffer.
/// The export is writable only when the buffer described lies inside the
/// value (a field, or the value itself); a buffer reached through the
/// contents of an `Arc` or of a `Box` the value holds, or a `Vec` of
/// buffers, is exported read-only (and refused by `Native::torch`) unless
/// the description vouches that nothing else reaches it
/// ([`TensorInfoBuilder::unshared`](crate::TensorInfoBuilder::unshared), see
/// the crate docs, "Safety model").
///
/// The exported value is kept alive, behind an `Arc`, until the Python
/// object and every consumer are done with it; it may then be dropped on any
/// thread (torch frees tensors without the GIL), hence `Send + Sync + 'static`.
///
/// ```
/// use pyo3::prelude::*;
/// use pyo3_dlpack::{AlignedBuffer, DLPackError, DLPackTensor, IntoDLPack, TensorInfo};
///
/// struct Image {
///     pixels: AlignedBuffer<u8>,
///     shape: [usize; 3], // height, width, channels
/// }
///
/// impl IntoDLPack for Image {
///     fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
///         TensorInfo::new(&self.pixels, &self.shape)
///     }
/// }
///
/// #[pyfunction]
/// fn load_image() -> PyResult<DLPackTensor> {
///     let image = Image { pixels: AlignedBuffer::zeroed(4 * 6 * 3), shape: [4, 6, 3] };
///     Ok(DLPackTensor::new(image)?) // Python: np.from_dlpack(load_image())
/// }
/// # Python::attach(|py| {
/// #     let t = load_image().unwrap();
/// #     assert_eq!(t.info().shape(), [4, 6, 3]);
/// # });
/// ```
pub trait IntoDLPack: Send + Sync + 'static {
    /// Describes the tensor: its memory, dtype, shape, strides, device, and
    /// whether consumers may write. Called once when the value is wrapped in
    /// a [`DLPackTensor`] (its exports use that checked description), and on
    /// each `into_capsule` or `copy=True` export: it must describe the same
    /// memory every time.
    fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError>;

    /// Called before a CUDA or ROCm export with the consumer's stream (per the
    /// DLPack specification: `1` is CUDA's legacy default stream, `0` ROCm's,
    /// larger values are stream pointers; never called for `stream=-1`).
    /// Make the data safe to use on that stream, for example by recording an
    /// event on your stream and making the consumer's stream wait for it.
    /// The default does nothing, which is right for memory no pending work writes.
    fn synchronize(&self, consumer_stream: i64) -> Result<(), DLPackError> {
        let _ = consumer_stream;
        Ok(())
    }

    /// Wraps the value in the Python exporter object, checking its description.
    fn into_dlpack_tensor(self) -> Result<DLPackTensor, DLPackError>
    where
        Self: Sized,
    {
        DLPackTensor::new(self)
    }

    /// Exports the value as a bare capsule, for consumers that take capsules
    /// (`torch.utils.dlpack.from_dlpack`, `tf.experimental.dlpack.from_dlpack`).
    /// NumPy and JAX need an object with `__dlpack__`: give them a
    /// [`DLPackTensor`] instead.
    ///
    /// The capsule owns the value; if nobody consumes it, dropping it drops the value.
    /// A description that fails is a `ValueError`, as from [`DLPackTensor::new`],
    /// and the value is dropped.
    fn into_capsule(self, py: Python<'_>, format: CapsuleFormat) -> PyResult<Bound<'_, PyCapsule>>
    where
        Self: Sized,
    {
        export_value(py, self, &ExportRequest::of_format(format))
    }
}

macro_rules! one_dimensional {
    ($($ty:ty),*) => {$(
        /// A 1-D tensor of the elements.
        impl<T: Element> IntoDLPack for $ty {
            fn tensor_info(&self) -> Result<TensorInfo<'_>, DLPackError> {
                Ok(TensorInfo::of_elements::<T, _>(self, self.len()))
            }
        }
    )*};
}
one_dimensional!(Vec<T>, Box<[T]>, Arc<[T]>, AlignedBuffer<T>);

#[cfg(test)]
mod tests {
    use super::*;

    /// The unchecked description of a whole buffer is the checked one.
    #[test]
    fn whole_buffers_are_described_as_the_builder_describes_them() {
        fn same<D: crate::TensorData + IntoDLPack>(data: &D) {
            let fast = data.tensor_info().unwrap();
            let checked = TensorInfo::builder(data).build().unwrap();
            assert_eq!(format!("{fast:?}"), format!("{checked:?}"));
        }
        for len in [0, 1, 7, 1000] {
            same(&vec![0.5f32; len]);
            same(&vec![1i16; len].into_boxed_slice());
            same(&Arc::<[u8]>::from(vec![2u8; len]));
            same(&AlignedBuffer::<bool>::zeroed(len));
        }
    }

    #[test]
    fn buffers_are_one_dimensional_tensors() {
        let info_of = |v: &dyn IntoDLPack| {
            let info = v.tensor_info().unwrap();
            (
                info.shape().to_vec(),
                info.dtype().to_string(),
                info.is_read_only(),
            )
        };
        assert_eq!(
            info_of(&vec![1.0f32; 3]),
            (vec![3], "float32".into(), false)
        );
        assert_eq!(
            info_of(&vec![1i8; 2].into_boxed_slice()),
            (vec![2], "int8".into(), false)
        );
        let shared: Arc<[u64]> = vec![1u64; 4].into();
        assert_eq!(info_of(&shared), (vec![4], "uint64".into(), true));
        assert_eq!(
            info_of(&Vec::<f64>::new()),
            (vec![0], "float64".into(), false)
        );
        // Rust bools are described read-only (a value holding them may read
        // them later), and exported writable when the value is the buffer.
        assert_eq!(
            info_of(&AlignedBuffer::<bool>::zeroed(5)),
            (vec![5], "bool".into(), true)
        );
        let whole = crate::DLPackTensor::new(AlignedBuffer::<bool>::zeroed(5)).unwrap();
        assert!(!whole.info().is_read_only());
    }
}
