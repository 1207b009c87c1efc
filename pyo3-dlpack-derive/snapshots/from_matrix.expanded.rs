#[doc(hidden)]
#[allow(non_upper_case_globals, unused_qualifications, clippy::needless_lifetimes)]
const _: () = {
    #[automatically_derived]
    impl ::pyo3_dlpack::FromDLPack for Matrix {
        fn from_dlpack(
            __dlpack_tensor: ::pyo3_dlpack::PyTensor,
        ) -> ::pyo3_dlpack::__private::core::result::Result<
            Self,
            ::pyo3_dlpack::DLPackError,
        > {
            __dlpack_tensor.ensure_dtype(<f32 as ::pyo3_dlpack::Element>::DTYPE)?;
            __dlpack_tensor.ensure_ndim(2usize)?;
            ::pyo3_dlpack::__private::check_device(
                &__dlpack_tensor,
                2i32,
                ::pyo3_dlpack::__private::core::option::Option::Some(1i32),
            )?;
            __dlpack_tensor.ensure_contiguous()?;
            __dlpack_tensor.ensure_writable()?;
            let __dlpack_field1: [usize; 2] = <[usize; 2] as ::pyo3_dlpack::__private::DimsField>::from_entries(
                __dlpack_tensor.shape(),
                "shape",
            )?;
            let __dlpack_field2: Vec<i64> = <Vec<
                i64,
            > as ::pyo3_dlpack::__private::StridesField>::from_entries(
                __dlpack_tensor.strides(),
            )?;
            let __dlpack_field4: Device = <Device as ::pyo3_dlpack::__private::DeviceField>::from_tensor(
                &__dlpack_tensor,
            );
            let __dlpack_field5: DataType = <DataType as ::pyo3_dlpack::__private::DtypeField>::from_tensor(
                &__dlpack_tensor,
            );
            let __dlpack_field6: bool = <bool as ::pyo3_dlpack::__private::ReadOnlyField>::from_tensor(
                &__dlpack_tensor,
            );
            let __dlpack_field3: *mut f32 = <*mut f32 as ::pyo3_dlpack::__private::DataField>::from_tensor(
                &__dlpack_tensor,
            )?;
            ::pyo3_dlpack::__private::ElementProbe::<
                <*mut f32 as ::pyo3_dlpack::__private::DataField>::Elem,
                f32,
            >::new()
                .dtype_check()
                .check();
            const {
                ::pyo3_dlpack::__private::check_pointer_dtype(
                    <<*mut f32 as ::pyo3_dlpack::__private::DataField>::Elem as ::pyo3_dlpack::__private::PointeeDtype>::DTYPE,
                    <f32 as ::pyo3_dlpack::Element>::DTYPE,
                )
            };
            let __dlpack_field0: PyTensor = <PyTensor as ::pyo3_dlpack::__private::TensorField>::from_tensor(
                __dlpack_tensor,
            );
            let __dlpack_value = Self {
                tensor: __dlpack_field0,
                shape: __dlpack_field1,
                strides: __dlpack_field2,
                data: __dlpack_field3,
                device: __dlpack_field4,
                dtype: __dlpack_field5,
                read_only: __dlpack_field6,
                note: <Option<
                    String,
                > as ::pyo3_dlpack::__private::core::default::Default>::default(),
            };
            let _ = &__dlpack_value.tensor;
            ::pyo3_dlpack::__private::core::result::Result::Ok(__dlpack_value)
        }
    }
    #[automatically_derived]
    impl<
        '__dlpack_a,
        '__dlpack_py,
    > ::pyo3_dlpack::__private::pyo3::FromPyObject<'__dlpack_a, '__dlpack_py>
    for Matrix {
        type Error = ::pyo3_dlpack::__private::pyo3::PyErr;
        ::pyo3_dlpack::__input_type!(f32);
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
    ::pyo3_dlpack::__stub_type!(derived_input[] Matrix[] f32);
};
