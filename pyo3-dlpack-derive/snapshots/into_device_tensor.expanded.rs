#[doc(hidden)]
#[allow(non_upper_case_globals, unused_qualifications, clippy::needless_lifetimes)]
const _: () = {
    #[automatically_derived]
    impl crate::dl::IntoDLPack for DeviceTensor
    where
        for<'__dlpack> Self: crate::dl::__private::core::marker::Send
            + crate::dl::__private::core::marker::Sync,
    {
        fn tensor_info(
            &self,
        ) -> crate::dl::__private::core::result::Result<
            crate::dl::TensorInfo<'_>,
            crate::dl::DLPackError,
        > {
            crate::dl::__private::DataThreadSafety::<RawBuffer>::new().check();
            crate::dl::__private::assert_send_sync_field::<Vec<i64>, _>();
            crate::dl::__private::assert_send_sync_field::<Option<Vec<i64>>, _>();
            crate::dl::__private::assert_send_sync_field::<Device, _>();
            crate::dl::__private::assert_send_sync_field::<DataType, _>();
            crate::dl::__private::assert_send_sync_field::<bool, _>();
            let __dlpack_builder = crate::dl::__private::builder(&self.buffer);
            let __dlpack_builder = __dlpack_builder
                .shape(<Vec<i64> as crate::dl::__private::DimsField>::dims(&self.shape));
            let __dlpack_builder = __dlpack_builder
                .maybe_strides(
                    <Option<
                        Vec<i64>,
                    > as crate::dl::__private::StridesField>::strides(&self.strides),
                );
            let __dlpack_builder = __dlpack_builder
                .device(
                    <Device as crate::dl::__private::DeviceField>::device(&self.device),
                );
            const {
                crate::dl::__private::check_dtype_field(
                    <RawBuffer as crate::dl::TensorData>::STATIC_DTYPE,
                )
            };
            let __dlpack_builder = __dlpack_builder
                .dtype(
                    <DataType as crate::dl::__private::DtypeField>::dtype(&self.dtype),
                );
            let __dlpack_builder = __dlpack_builder
                .read_only(
                    <bool as crate::dl::__private::ReadOnlyField>::flag(&self.frozen),
                );
            __dlpack_builder
                .build()
                .map_err(|error| crate::dl::__private::name_field(
                    error,
                    &[
                        ("data", "buffer"),
                        ("shape", "shape"),
                        ("strides", "strides"),
                        ("device", "device"),
                        ("dtype", "dtype"),
                        ("read_only", "frozen"),
                    ],
                ))
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
        crate::dl::__output_type!();
        fn into_pyobject(
            self,
            __dlpack_python: crate::dl::__private::pyo3::Python<'__dlpack_py>,
        ) -> crate::dl::__private::core::result::Result<Self::Output, Self::Error> {
            crate::dl::__private::IntoPyObjectProbe::<Self>::new()
                .convert(self, __dlpack_python)
        }
    }
    crate::dl::__stub_type!(output[] DeviceTensor[]);
};
