#[doc(hidden)]
#[allow(non_upper_case_globals, unused_qualifications, clippy::needless_lifetimes)]
const _: () = {
    #[automatically_derived]
    impl<S: TensorData + Send + Sync + 'static> ::pyo3_dlpack::IntoDLPack for Samples<S>
    where
        S: Clone,
        S: 'static,
        for<'__dlpack> Self: ::pyo3_dlpack::__private::core::marker::Send
            + ::pyo3_dlpack::__private::core::marker::Sync,
    {
        fn tensor_info(
            &self,
        ) -> ::pyo3_dlpack::__private::core::result::Result<
            ::pyo3_dlpack::TensorInfo<'_>,
            ::pyo3_dlpack::DLPackError,
        > {
            ::pyo3_dlpack::__private::DataThreadSafety::<S>::new().check();
            let __dlpack_builder = ::pyo3_dlpack::__private::builder(&self.storage);
            ::pyo3_dlpack::__private::DtypeProbe::<S, f32>::new().dtype_check().check();
            const {
                ::pyo3_dlpack::__private::check_static_dtype(
                    <S as ::pyo3_dlpack::TensorData>::STATIC_DTYPE,
                    <f32 as ::pyo3_dlpack::Element>::DTYPE,
                )
            };
            let __dlpack_builder = __dlpack_builder
                .dtype(<f32 as ::pyo3_dlpack::Element>::DTYPE);
            let __dlpack_builder = __dlpack_builder.read_only(true);
            __dlpack_builder
                .build()
                .map_err(|error| ::pyo3_dlpack::__private::name_field(
                    error,
                    &[("data", "storage")],
                ))
        }
    }
    #[automatically_derived]
    impl<
        '__dlpack_py,
        S: TensorData + Send + Sync + 'static,
    > ::pyo3_dlpack::__private::pyo3::IntoPyObject<'__dlpack_py> for Samples<S>
    where
        S: Clone,
    {
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
    ::pyo3_dlpack::__stub_type!(
        output[< S : TensorData + Send + Sync + 'static >] Samples < S > [where S :
        Clone]
    );
};
