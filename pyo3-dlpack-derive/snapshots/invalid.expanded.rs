::core::compile_error! {
    "unknown dlpack attribute `pixels` on a field; expected one of: data, shape, strides, device, dtype, read_only, tensor, byte_offset, inner, skip"
}
::core::compile_error! {
    "#[derive(IntoDLPack)] needs a #[dlpack(data)] field: mark the field that holds the tensor's memory (a Vec<T>, AlignedBuffer<T>, RawBuffer, …), or a #[dlpack(inner)] field that is itself an IntoDLPack value (a struct deriving FromDLPack too exports its #[dlpack(tensor)] PyTensor)"
}
#[doc(hidden)]
#[allow(non_upper_case_globals, unused_qualifications, clippy::needless_lifetimes)]
const _: () = {
    impl ::pyo3_dlpack::IntoDLPack for Broken
    where
        for<'__dlpack> Self: ::pyo3_dlpack::__private::core::marker::Send
            + ::pyo3_dlpack::__private::core::marker::Sync,
    {
        fn tensor_info(
            &self,
        ) -> ::pyo3_dlpack::__private::core::result::Result<
            ::pyo3_dlpack::TensorInfo<'_>,
            ::pyo3_dlpack::DLPackError,
        > {
            ::pyo3_dlpack::__private::core::unimplemented!()
        }
    }
    impl<'__dlpack_py> ::pyo3_dlpack::__private::pyo3::IntoPyObject<'__dlpack_py>
    for Broken {
        type Target = ::pyo3_dlpack::DLPackTensor;
        type Output = ::pyo3_dlpack::__private::pyo3::Bound<
            '__dlpack_py,
            ::pyo3_dlpack::DLPackTensor,
        >;
        type Error = ::pyo3_dlpack::__private::pyo3::PyErr;
        fn into_pyobject(
            self,
            _: ::pyo3_dlpack::__private::pyo3::Python<'__dlpack_py>,
        ) -> ::pyo3_dlpack::__private::core::result::Result<Self::Output, Self::Error> {
            ::pyo3_dlpack::__private::core::unimplemented!()
        }
    }
};
