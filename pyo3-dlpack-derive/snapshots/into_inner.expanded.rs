#[doc(hidden)]
#[allow(non_upper_case_globals, unused_qualifications, clippy::needless_lifetimes)]
const _: () = {
    #[automatically_derived]
    impl ::pyo3_dlpack::IntoDLPack for Labelled
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
            ::pyo3_dlpack::__private::assert_send_sync_field::<String, _>();
            let _ = &self.label;
            <Pixels as ::pyo3_dlpack::IntoDLPack>::tensor_info(&self.pixels)
        }
        fn synchronize(
            &self,
            __dlpack_stream: i64,
        ) -> ::pyo3_dlpack::__private::core::result::Result<
            (),
            ::pyo3_dlpack::DLPackError,
        > {
            <Pixels as ::pyo3_dlpack::IntoDLPack>::synchronize(
                &self.pixels,
                __dlpack_stream,
            )
        }
    }
    #[automatically_derived]
    impl<'__dlpack_py> ::pyo3_dlpack::__private::pyo3::IntoPyObject<'__dlpack_py>
    for Labelled {
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
    ::pyo3_dlpack::__stub_type!(output[] Labelled[]);
};
