#[doc(hidden)]
#[allow(non_upper_case_globals, unused_qualifications, clippy::needless_lifetimes)]
const _: () = {
    #[automatically_derived]
    impl ::pyo3_dlpack::FromDLPack for Picture {
        fn from_dlpack(
            __dlpack_tensor: ::pyo3_dlpack::PyTensor,
        ) -> ::pyo3_dlpack::__private::core::result::Result<
            Self,
            ::pyo3_dlpack::DLPackError,
        > {
            __dlpack_tensor.ensure_dtype(<u8 as ::pyo3_dlpack::Element>::DTYPE)?;
            __dlpack_tensor.ensure_ndim(3usize)?;
            let __dlpack_field1: usize = <usize as ::pyo3_dlpack::__private::ExtentField>::from_extent(
                __dlpack_tensor.shape()[0usize],
                0usize,
                "height",
            )?;
            let __dlpack_field2: u32 = <u32 as ::pyo3_dlpack::__private::ExtentField>::from_extent(
                __dlpack_tensor.shape()[1usize],
                1usize,
                "width",
            )?;
            let __dlpack_field3: u8 = <u8 as ::pyo3_dlpack::__private::ExtentField>::from_extent(
                __dlpack_tensor.shape()[2usize],
                2usize,
                "channels",
            )?;
            let __dlpack_field0: PyTensor = <PyTensor as ::pyo3_dlpack::__private::TensorField>::from_tensor(
                __dlpack_tensor,
            );
            let __dlpack_value = Self {
                pixels: __dlpack_field0,
                height: __dlpack_field1,
                width: __dlpack_field2,
                channels: __dlpack_field3,
                label: <String as ::pyo3_dlpack::__private::core::default::Default>::default(),
            };
            let _ = &__dlpack_value.pixels;
            ::pyo3_dlpack::__private::core::result::Result::Ok(__dlpack_value)
        }
    }
    #[automatically_derived]
    impl<
        '__dlpack_a,
        '__dlpack_py,
    > ::pyo3_dlpack::__private::pyo3::FromPyObject<'__dlpack_a, '__dlpack_py>
    for Picture {
        type Error = ::pyo3_dlpack::__private::pyo3::PyErr;
        ::pyo3_dlpack::__input_type!(u8);
        fn extract(
            __dlpack_obj: ::pyo3_dlpack::__private::pyo3::Borrowed<
                '__dlpack_a,
                '__dlpack_py,
                ::pyo3_dlpack::__private::pyo3::PyAny,
            >,
        ) -> ::pyo3_dlpack::__private::core::result::Result<Self, Self::Error> {
            ::pyo3_dlpack::__private::extract(&__dlpack_obj)
        }
    }
    ::pyo3_dlpack::__stub_type!(derived_input[] Picture[] u8);
};
