#[doc(hidden)]
#[allow(non_upper_case_globals, unused_qualifications, clippy::needless_lifetimes)]
const _: () = {
    #[automatically_derived]
    impl ::pyo3_dlpack::IntoDLPack for Image {
        fn tensor_info(
            &self,
        ) -> ::pyo3_dlpack::__private::core::result::Result<
            ::pyo3_dlpack::TensorInfo<'_>,
            ::pyo3_dlpack::DLPackError,
        > {
            ::pyo3_dlpack::__private::assert_field_is_exportable::<AlignedBuffer<u8>>();
            ::pyo3_dlpack::__private::assert_field_is_exportable::<[usize; 3]>();
            ::pyo3_dlpack::__private::assert_field_is_exportable::<String>();
            let builder = ::pyo3_dlpack::__private::builder(&self.pixels);
            let builder = builder
                .shape(
                    <[usize; 3] as ::pyo3_dlpack::__private::DimsField>::dims(
                        &self.shape,
                    ),
                );
            builder.build()
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
        fn into_pyobject(
            self,
            py: ::pyo3_dlpack::__private::pyo3::Python<'__dlpack_py>,
        ) -> ::pyo3_dlpack::__private::core::result::Result<Self::Output, Self::Error> {
            ::pyo3_dlpack::__private::into_pyobject(self, py)
        }
    }
};
