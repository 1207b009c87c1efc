#[doc(hidden)]
#[allow(non_upper_case_globals, unused_qualifications, clippy::needless_lifetimes)]
const _: () = {
    #[automatically_derived]
    impl ::pyo3_dlpack::FromDLPack for Matrix {
        fn from_dlpack(
            tensor: ::pyo3_dlpack::PyTensor,
        ) -> ::pyo3_dlpack::__private::core::result::Result<
            Self,
            ::pyo3_dlpack::DLPackError,
        > {
            tensor.ensure_dtype(<f32 as ::pyo3_dlpack::Element>::DTYPE)?;
            tensor.ensure_ndim(2usize)?;
            ::pyo3_dlpack::__private::check_device(
                &tensor,
                2i32,
                ::pyo3_dlpack::__private::core::option::Option::Some(1i32),
            )?;
            tensor.ensure_contiguous()?;
            tensor.ensure_writable()?;
            let __field1: [usize; 2] = <[usize; 2] as ::pyo3_dlpack::__private::DimsField>::from_entries(
                tensor.shape(),
                "shape",
            )?;
            let __field2: Vec<i64> = <Vec<
                i64,
            > as ::pyo3_dlpack::__private::StridesField>::from_entries(
                tensor.strides(),
            )?;
            let __field4: Device = <Device as ::pyo3_dlpack::__private::DeviceField>::from_tensor(
                &tensor,
            );
            let __field5: DataType = <DataType as ::pyo3_dlpack::__private::DtypeField>::from_tensor(
                &tensor,
            );
            let __field6: bool = <bool as ::pyo3_dlpack::__private::ReadOnlyField>::from_tensor(
                &tensor,
            );
            let __field3: *mut f32 = <*mut f32 as ::pyo3_dlpack::__private::DataField>::from_tensor(
                &tensor,
            )?;
            ::pyo3_dlpack::__private::assert_same_element::<
                <*mut f32 as ::pyo3_dlpack::__private::DataField>::Elem,
                f32,
            >();
            let __field0: PyTensor = <PyTensor as ::pyo3_dlpack::__private::TensorField>::from_tensor(
                tensor,
            );
            ::pyo3_dlpack::__private::core::result::Result::Ok(Self {
                tensor: __field0,
                shape: __field1,
                strides: __field2,
                data: __field3,
                device: __field4,
                dtype: __field5,
                read_only: __field6,
                note: <Option<
                    String,
                > as ::pyo3_dlpack::__private::core::default::Default>::default(),
            })
        }
    }
    #[automatically_derived]
    impl<
        '__dlpack_a,
        '__dlpack_py,
    > ::pyo3_dlpack::__private::pyo3::FromPyObject<'__dlpack_a, '__dlpack_py>
    for Matrix {
        type Error = ::pyo3_dlpack::__private::pyo3::PyErr;
        fn extract(
            obj: ::pyo3_dlpack::__private::pyo3::Borrowed<
                '__dlpack_a,
                '__dlpack_py,
                ::pyo3_dlpack::__private::pyo3::PyAny,
            >,
        ) -> ::pyo3_dlpack::__private::core::result::Result<Self, Self::Error> {
            ::pyo3_dlpack::__private::extract(&obj)
        }
    }
};
