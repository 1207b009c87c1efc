//! `#[derive(IntoDLPack)]`: `IntoDLPack` and `IntoPyObject` (as a `DLPackTensor`).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::attr::Role;
use crate::tokens::{exportable_where_clause, krate, local, respan};
use crate::validate::IntoPlan;

pub(crate) fn expand(plan: &IntoPlan<'_, '_>) -> TokenStream {
    let input = plan.input;
    let krate = krate(&input.attrs);
    let private = quote!(#krate::__private);

    // Every field travels with the value to whichever thread drops it: one
    // error per field that cannot, on the field. The data field is checked
    // only once it is memory (`DataThreadSafety`), and an inner tensor not
    // at all (`IntoDLPack` is `Send + Sync`): a type that is neither gets
    // the one error that says what to write instead (`Arc` for `Rc`).
    let thread_safe = plan.fields.iter().filter_map(|field| {
        let ty = field.ty;
        let private_at = respan(private.clone(), ty.span());
        if !std::ptr::eq(field, plan.data) {
            Some(quote_spanned!(ty.span()=> #private_at::assert_send_sync_field::<#ty, _>();))
        } else if plan.inner {
            None
        } else {
            Some(quote_spanned!(ty.span()=> #private_at::DataThreadSafety::<#ty>::new().check();))
        }
    });

    if plan.inner {
        return expand_inner(plan, &thread_safe.collect::<Vec<_>>());
    }
    let builder = local("__dlpack_builder");
    let data = &plan.data.member;
    let data_ty = plan.data.ty;
    let mut steps = Vec::new();
    if plan.data.has_role(Role::Tensor) {
        // The memory of a struct that derives both traits: its import's PyTensor.
        let private_at = respan(private.clone(), data_ty.span());
        steps
            .push(quote_spanned!(data_ty.span()=> #private_at::assert_tensor_field::<#data_ty>();));
    }
    steps.push(quote_spanned!(data_ty.span()=> let #builder = #private::builder(&self.#data);));
    if let Some(shape) = plan.shape {
        let (member, ty) = (&shape.member, shape.ty);
        steps.push(quote_spanned!(ty.span()=>
            let #builder = #builder.shape(<#ty as #private::DimsField>::dims(&self.#member));));
    }
    if let Some(extents) = &plan.extents {
        let extents = extents.iter().map(|field| {
            let (member, ty) = (&field.member, field.ty);
            quote_spanned!(ty.span()=> <#ty as #private::ExtentField>::extent(&self.#member))
        });
        steps.push(quote!(let #builder = #builder.shape([#(#extents),*]);));
    }
    if let Some(strides) = plan.strides {
        let (member, ty) = (&strides.member, strides.ty);
        steps.push(quote_spanned!(ty.span()=>
            let #builder = #builder.maybe_strides(<#ty as #private::StridesField>::strides(&self.#member));));
    }
    if let Some(device) = plan.device {
        let (member, ty) = (&device.member, device.ty);
        steps.push(quote_spanned!(ty.span()=>
            let #builder = #builder.device(<#ty as #private::DeviceField>::device(&self.#member));));
    }
    if let Some(dtype) = plan.dtype {
        let (member, ty) = (&dtype.member, dtype.ty);
        // Over typed data the data's type fixes the dtype: an error where
        // the data's type is known (see `check_dtype_field`), spanned on
        // the dtype field.
        let private_at = respan(private.clone(), ty.span());
        steps.push(quote_spanned!(ty.span()=>
            const { #private_at::check_dtype_field(<#data_ty as #krate::TensorData>::STATIC_DTYPE) };
            let #builder = #builder.dtype(<#ty as #private::DtypeField>::dtype(&self.#member));));
    }
    if let Some(offset) = plan.byte_offset {
        let (member, ty) = (&offset.member, offset.ty);
        steps.push(quote_spanned!(ty.span()=>
            let #builder = #builder.byte_offset(<#ty as #private::ByteOffsetField>::byte_offset(&self.#member));));
    }
    if let Some(element) = &input.attrs.dtype {
        // A type error on the data field when its type names a different
        // element type (`Vec<i64>` with `dtype = f32`), so `cargo check`
        // reports it (see `DtypeProbe`; the whole call is spanned on the
        // field's type, or rustc points at the derive). `check_static_dtype`
        // covers, at code generation, the data and element types the type
        // checker cannot compare (generic or user-defined ones), and the
        // builder checks raw memory when the value is exported.
        let private_at = respan(private.clone(), data_ty.span());
        steps.push(quote_spanned!(data_ty.span()=>
            #private_at::DtypeProbe::<#data_ty, #element>::new().dtype_check().check();));
        steps.push(quote_spanned!(element.span()=>
            const { #private::check_static_dtype(<#data_ty as #krate::TensorData>::STATIC_DTYPE, <#element as #krate::Element>::DTYPE) };
            let #builder = #builder.dtype(<#element as #krate::Element>::DTYPE);
        ));
    }
    if let Some(read_only) = plan.read_only {
        let (member, ty) = (&read_only.member, read_only.ty);
        steps.push(quote_spanned!(ty.span()=>
            let #builder = #builder.read_only(<#ty as #private::ReadOnlyField>::flag(&self.#member));));
    }
    if input.attrs.read_only.is_some() {
        steps.push(quote!(let #builder = #builder.read_only(true);));
    }
    let kept = kept_fields(plan);
    // Each part a field gives, and the field's name, for an error that
    // names the field whose value contradicts the memory.
    let named_roles = plan
        .fields
        .iter()
        .filter(|f| f.takes_part())
        .filter_map(|field| {
            let role = field.role.as_ref()?.value.symbol().to_string();
            let name = field.name();
            Some(quote!((#role, #name)))
        });

    let body = quote! {
        #(#thread_safe)*
        #(#kept)*
        #(#steps)*
        #builder.build().map_err(|error| #private::name_field(error, &[#(#named_roles),*]))
    };
    impls(plan, &body, &TokenStream::new())
}

/// The impls for a struct whose `#[dlpack(inner)]` field is the tensor: its
/// description and its synchronization are the inner value's.
fn expand_inner(plan: &IntoPlan<'_, '_>, thread_safe: &[TokenStream]) -> TokenStream {
    let krate = krate(&plan.input.attrs);
    let private = quote!(#krate::__private);
    let (member, ty) = (&plan.data.member, plan.data.ty);
    let kept = kept_fields(plan);
    let inner_trait = respan(quote!(#krate::IntoDLPack), ty.span());
    let stream = local("__dlpack_stream");
    let body = quote! {
        #(#thread_safe)*
        #(#kept)*
        <#ty as #inner_trait>::tensor_info(&self.#member)
    };
    let synchronize = quote! {
        fn synchronize(&self, #stream: i64) -> #private::core::result::Result<(), #krate::DLPackError> {
            <#ty as #inner_trait>::synchronize(&self.#member, #stream)
        }
    };
    impls(plan, &body, &synchronize)
}

/// The fields the value only keeps alive, read here (for nothing), so
/// rustc's dead-code lint does not call them never read: the export holds
/// them until a consumer frees it.
fn kept_fields(plan: &IntoPlan<'_, '_>) -> Vec<TokenStream> {
    plan.fields
        .iter()
        .filter(|f| !f.takes_part())
        .map(|field| {
            let member = &field.member;
            quote!(let _ = &self.#member;)
        })
        .collect()
}

/// The `IntoDLPack` impl whose `tensor_info` is `body` (and whose other
/// methods are `methods`), the `IntoPyObject` impl and the stub's type.
fn impls(plan: &IntoPlan<'_, '_>, body: &TokenStream, methods: &TokenStream) -> TokenStream {
    let input = plan.input;
    let krate = krate(&input.attrs);
    let private = quote!(#krate::__private);
    let ident = &input.original.ident;
    let generics = &input.original.generics;
    let (impl_generics, ty_generics, user_where_clause) = generics.split_for_impl();
    let where_clause = exportable_where_clause(generics, &krate);
    let mut py_generics = generics.clone();
    py_generics
        .params
        .insert(0, syn::parse_quote!('__dlpack_py));
    let (py_impl_generics, _, _) = py_generics.split_for_impl();
    let pyo3 = quote!(#private::pyo3);
    let py = local("__dlpack_python");

    // The stub's type (feature `stub-gen`; nothing without it). A struct
    // whose memory is its `#[dlpack(tensor)]` field derives `FromDLPack` too,
    // whose one `PyStubType` impl gives both directions' types.
    let stub_type = if plan.data.has_role(Role::Tensor) {
        TokenStream::new()
    } else {
        quote!(#krate::__stub_type!(output [#impl_generics] #ident #ty_generics [#user_where_clause]);)
    };

    // `IntoPyObject` holds even when `IntoDLPack` does not (a field that is
    // not `Send + Sync`): see `IntoPyObjectProbe`.
    quote! {
        #[automatically_derived]
        impl #impl_generics #krate::IntoDLPack for #ident #ty_generics #where_clause {
            fn tensor_info(&self) -> #private::core::result::Result<#krate::TensorInfo<'_>, #krate::DLPackError> {
                #body
            }

            #methods
        }

        #[automatically_derived]
        impl #py_impl_generics #pyo3::IntoPyObject<'__dlpack_py> for #ident #ty_generics #user_where_clause {
            type Target = #krate::DLPackTensor;
            type Output = #pyo3::Bound<'__dlpack_py, #krate::DLPackTensor>;
            type Error = #pyo3::PyErr;
            // The stub's hint (feature `experimental-inspect`; nothing without it).
            #krate::__output_type!();

            fn into_pyobject(self, #py: #pyo3::Python<'__dlpack_py>) -> #private::core::result::Result<Self::Output, Self::Error> {
                #private::IntoPyObjectProbe::<Self>::new().convert(self, #py)
            }
        }

        #stub_type
    }
}
