#[doc(hidden)]
#[allow(non_upper_case_globals, unused_qualifications, clippy::needless_lifetimes)]
const _: () = {
    #[automatically_derived]
    impl crate::dl::IntoDLPack for DeviceTensor {
        fn tensor_info(
            &self,
        ) -> crate::dl::__private::core::result::Result<
            crate::dl::TensorInfo<'_>,
            crate::dl::DLPackError,
        > {
            crate::dl::__private::assert_field_is_exportable::<RawBuffer>();
            crate::dl::__private::assert_field_is_exportable::<Vec<i64>>();
            crate::dl::__private::assert_field_is_exportable::<Option<Vec<i64>>>();
            crate::dl::__private::assert_field_is_exportable::<Device>();
            crate::dl::__private::assert_field_is_exportable::<DataType>();
            crate::dl::__private::assert_field_is_exportable::<bool>();
            let builder = crate::dl::__private::builder(&self.buffer);
            let builder = builder
                .shape(<Vec<i64> as crate::dl::__private::DimsField>::dims(&self.shape));
            let builder = builder
                .maybe_strides(
                    <Option<
                        Vec<i64>,
                    > as crate::dl::__private::StridesField>::strides(&self.strides),
                );
            let builder = builder
                .device(
                    <Device as crate::dl::__private::DeviceField>::device(&self.device),
                );
            let builder = builder
                .dtype(
                    <DataType as crate::dl::__private::DtypeField>::dtype(&self.dtype),
                );
            let builder = builder
                .read_only(
                    <bool as crate::dl::__private::ReadOnlyField>::flag(&self.frozen),
                );
            builder.build()
        }
    }
    #[automatically_derived]
    impl<'__dlpack_py> crate::dl::__private::pyo3::IntoPyObject<'__dlpack_py>
    for DeviceTensor {
        type Target = crate::dl::DLPackTensor;
        type Output = crate::dl::__private::pyo3::Bound<
            '__dlpack_py,
            crate::dl::DLPackTensor,
        >;
        type Error = crate::dl::__private::pyo3::PyErr;
        fn into_pyobject(
            self,
            py: crate::dl::__private::pyo3::Python<'__dlpack_py>,
        ) -> crate::dl::__private::core::result::Result<Self::Output, Self::Error> {
            crate::dl::__private::into_pyobject(self, py)
        }
    }
};
