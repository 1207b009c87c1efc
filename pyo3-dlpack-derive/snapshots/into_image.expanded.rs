#[doc(hidden)]
#[allow(non_upper_case_globals, unused_qualifications, clippy::needless_lifetimes)]
const _: () = {
    #[automatically_derived]
    impl ::pyo3_dlpack::IntoDLPack for Image
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
            ::pyo3_dlpack::__private::DataThreadSafety::<AlignedBuffer<u8>>::new()
                .check();
            ::pyo3_dlpack::__private::assert_send_sync_field::<[usize; 3], _>();
            ::pyo3_dlpack::__private::assert_send_sync_field::<String, _>();
            let _ = &self.name;
            let __dlpack_builder = ::pyo3_dlpack::__private::builder(&self.pixels);
            let __dlpack_builder = __dlpack_builder
                .shape(
                    <[usize; 3] as ::pyo3_dlpack::__private::DimsField>::dims(
                        &self.shape,
                    ),
                );
            __dlpack_builder
                .build()
                .map_err(|error| ::pyo3_dlpack::__private::name_field(
                    error,
                    &[("data", "pixels"), ("shape", "shape")],
                ))
        }
    }
    #[automatically_derived]
    impl<'__dlpack_py> ::pyo3_dlpack::__private::pyo3::IntoPyObject<'__dlpack_py>
    for Image {
        type Target = ::pyo3_dlpack::DLPackTensor;
        type Output = ::pyo3_dlpack::__private::pyo3::Bound<
            '__dlpack_py,
            ::pyo3_dlpack::DLPackTensor,
        >;
        type Error = ::pyo3_dlpack::__private::pyo3::PyErr;
        ::pyo3_dlpack::__output_type!();
        fn into_pyobject(
            self,
            __dlpack_python: ::pyo3_dlpack::__private::pyo3::Python<'__dlpack_py>,
        ) -> ::pyo3_dlpack::__private::core::result::Result<Self::Output, Self::Error> {
            ::pyo3_dlpack::__private::IntoPyObjectProbe::<Self>::new()
                .convert(self, __dlpack_python)
        }
    }
    ::pyo3_dlpack::__stub_type!(output[] Image[]);
};
