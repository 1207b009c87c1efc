#![doc = links!()]
#![cfg_attr(feature = "candle", doc = candle_links!())]
#![cfg_attr(feature = "ndarray", doc = ndarray_links!())]
#![doc = include_str!("../guide/README.md")]
//! The chapters are the modules below; none of them holds an item.

// The guide: Markdown chapters in `pyo3-dlpack/guide/`, each the documentation of one
// empty module, so that docs.rs renders them and `cargo test --doc` runs their examples.
//
// A chapter links to another chapter or to the API with a reference link whose
// definition, at the chapter's end, is the chapter file (`[errors]: errors.md`) or a
// docs.rs address, which GitHub follows. `links!()` is put before every chapter and
// defines the same labels as intra-doc links; Markdown takes a label's first definition,
// so on docs.rs they lead to the modules and items of the same build, checked by
// `cargo doc` with `-D warnings`. `tests/docs/check_links.py` checks that every label a
// chapter defines is defined here too. Items behind a feature have their labels in a macro
// of their own, put only where the build has the feature; elsewhere the chapter's own
// definition (a docs.rs address) is followed.
macro_rules! links {
    () => {
        "
[derive]: crate::guide::derive
[arguments]: crate::guide::arguments
[returning]: crate::guide::returning
[devices]: crate::guide::devices
[frameworks]: crate::guide::frameworks
[crates]: crate::guide::crates
[beyond_dlpack]: crate::guide::beyond_dlpack
[travel]: crate::guide::travel
[safety]: crate::guide::safety
[errors]: crate::guide::errors
[performance]: crate::guide::performance
[testing]: crate::guide::testing
[migration]: crate::guide::migration
[`ALIGNMENT`]: crate::ALIGNMENT
[`AlignedBuffer`]: crate::AlignedBuffer
[`DLPackError`]: crate::DLPackError
[`DLPackTensor`]: crate::DLPackTensor
[`DLPackTensor::with_subclass`]: crate::DLPackTensor::with_subclass
[`DataType`]: crate::DataType
[`Device`]: crate::Device
[`Element`]: crate::Element
[`Framework::of`]: crate::Framework::of
[`FromDLPack`]: crate::FromDLPack
[`ImportOptions`]: crate::ImportOptions
[`ImportOptions::protocols`]: crate::ImportOptions::protocols
[`IntoDLPack`]: crate::IntoDLPack
[`Native`]: crate::Native
[`PlainElement`]: crate::PlainElement
[`PyTensor`]: crate::PyTensor
[`PyTensor::as_slice`]: crate::PyTensor::as_slice
[`PyTensor::from_numpy_time`]: crate::PyTensor::from_numpy_time
[`PyTensor::to_vec`]: crate::PyTensor::to_vec
[`RawBuffer`]: crate::RawBuffer
[`StreamMode`]: crate::StreamMode
[`TensorData`]: crate::TensorData
[`TensorInfo`]: crate::TensorInfo
[`TensorInfoBuilder`]: crate::TensorInfoBuilder
[`Writability::Unknown`]: crate::Writability::Unknown
[`allocate_like`]: crate::allocate_like
[`asdlpack`]: crate::asdlpack
[`error`]: crate::error
[`impl_from_pyobject!`]: crate::impl_from_pyobject
"
    };
}

/// The labels of feature `candle`'s items (see `links!`).
macro_rules! candle_links {
    () => {
        "
[`CandleTensor`]: crate::CandleTensor
"
    };
}

/// The labels of feature `ndarray`'s items (see `links!`).
macro_rules! ndarray_links {
    () => {
        "
[`Tensor::from_tensor`]: crate::Tensor::from_tensor
[`TensorMut`]: crate::TensorMut
[`memory`]: crate::memory
"
    };
}

/// Expands to a documentation-only module whose docs are `links!()` and a chapter.
macro_rules! chapter {
    ($name:ident, $file:literal) => {
        #[doc = links!()]
        #[cfg_attr(feature = "candle", doc = candle_links!())]
        #[cfg_attr(feature = "ndarray", doc = ndarray_links!())]
        #[doc = include_str!($file)]
        pub mod $name {}
    };
}

chapter!(derive, "../guide/derive.md");
chapter!(arguments, "../guide/arguments.md");
chapter!(returning, "../guide/returning.md");
chapter!(devices, "../guide/devices.md");
chapter!(frameworks, "../guide/frameworks.md");
chapter!(crates, "../guide/crates.md");
chapter!(beyond_dlpack, "../guide/beyond_dlpack.md");
chapter!(travel, "../guide/travel.md");
chapter!(safety, "../guide/safety.md");
chapter!(errors, "../guide/errors.md");
chapter!(performance, "../guide/performance.md");
chapter!(testing, "../guide/testing.md");
chapter!(migration, "../guide/migration.md");
