//! `#[derive(FromDLPack)]`: `FromDLPack` and `FromPyObject` (any DLPack producer).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::Field;
use crate::tokens::{krate, local, respan};
use crate::validate::FromPlan;

pub(crate) fn expand(plan: &FromPlan<'_, '_>) -> TokenStream {
    let input = plan.input;
    let krate = krate(&input.attrs);
    let private = quote!(#krate::__private);
    let ident = &input.original.ident;
    let (impl_generics, ty_generics, where_clause) = input.original.generics.split_for_impl();
    let attrs = &input.attrs;
    let tensor = local("__dlpack_tensor");

    // Constraints, in the order their errors are most useful.
    let mut checks = Vec::new();
    if let Some(element) = &attrs.dtype {
        checks.push(quote_spanned!(element.span()=> #tensor.ensure_dtype(<#element as #krate::Element>::DTYPE)?;));
    }
    if let Some(ndim) = &attrs.ndim {
        let n = ndim.value;
        checks.push(quote!(#tensor.ensure_ndim(#n)?;));
    }
    if let Some(device) = &attrs.device {
        let code = device.value.code;
        let id = match device.value.id {
            Some(id) => quote!(#private::core::option::Option::Some(#id)),
            None => quote!(#private::core::option::Option::None),
        };
        checks.push(quote!(#private::check_device(&#tensor, #code, #id)?;));
    }
    if attrs.contiguous.is_some() {
        checks.push(quote!(#tensor.ensure_contiguous()?;));
    }
    if attrs.writable.is_some() {
        checks.push(quote!(#tensor.ensure_writable()?;));
    }

    // One local per field, computed before the tensor moves into its field.
    // Named by position: field names may be raw identifiers (`r#type`).
    let position = |field: &Field<'_>| {
        plan.fields
            .iter()
            .position(|f| f.member == field.member)
            .expect("a field of this input")
    };
    let field_local = |field: &Field<'_>| local(&format!("__dlpack_field{}", position(field)));
    let mut lets = Vec::new();
    let typed = |field: &Field<'_>, value: TokenStream| {
        let (name, ty) = (field_local(field), field.ty);
        quote_spanned!(ty.span()=> let #name: #ty = #value;)
    };
    if let Some(shape) = plan.shape {
        let ty = shape.ty;
        lets.push(typed(shape, quote_spanned!(ty.span()=> <#ty as #private::DimsField>::from_entries(#tensor.shape(), "shape")?)));
    }
    if let Some(extents) = &plan.extents {
        // The rank first, so a tensor of another rank is refused before an
        // extent is read; then each extent into its field, in order.
        let n = extents.len();
        lets.push(quote!(#tensor.ensure_ndim(#n)?;));
        for (dim, field) in extents.iter().enumerate() {
            let (ty, name) = (field.ty, field.name());
            lets.push(typed(
                field,
                quote_spanned!(ty.span()=>
                <#ty as #private::ExtentField>::from_extent(#tensor.shape()[#dim], #dim, #name)?),
            ));
        }
    }
    if let Some(strides) = plan.strides {
        let ty = strides.ty;
        lets.push(typed(strides, quote_spanned!(ty.span()=> <#ty as #private::StridesField>::from_entries(#tensor.strides())?)));
    }
    for (field, role_trait) in [
        (plan.device, quote!(DeviceField)),
        (plan.dtype, quote!(DtypeField)),
        (plan.read_only, quote!(ReadOnlyField)),
    ] {
        if let Some(field) = field {
            let ty = field.ty;
            lets.push(typed(
                field,
                quote_spanned!(ty.span()=> <#ty as #private::#role_trait>::from_tensor(&#tensor)),
            ));
        }
    }
    if let Some(data) = plan.data {
        let ty = data.ty;
        lets.push(typed(
            data,
            quote_spanned!(ty.span()=> <#ty as #private::DataField>::from_tensor(&#tensor)?),
        ));
        if let Some(element) = &attrs.dtype {
            // A type error on the data field for two built-in element types
            // (see `ElementProbe`), a compile-time dtype comparison for the
            // rest (a user's element type, a generic one).
            let private_at = respan(private.clone(), ty.span());
            lets.push(quote_spanned!(ty.span()=>
                #private_at::ElementProbe::<<#ty as #private::DataField>::Elem, #element>::new().dtype_check().check();
                const { #private::check_pointer_dtype(<<#ty as #private::DataField>::Elem as #private::PointeeDtype>::DTYPE, <#element as #krate::Element>::DTYPE) };
            ));
        }
    }
    let tensor_field = plan.tensor;
    let tensor_ty = tensor_field.ty;
    lets.push(typed(
        tensor_field,
        quote_spanned!(tensor_ty.span()=> <#tensor_ty as #private::TensorField>::from_tensor(#tensor)),
    ));
    let filled = |field: &Field<'_>| {
        field.takes_part()
            || plan
                .extents
                .iter()
                .flatten()
                .any(|extent| extent.member == field.member)
    };
    let assigned: Vec<_> = plan
        .fields
        .iter()
        .filter(|f| filled(f))
        .map(|field| {
            let (member, name) = (&field.member, field_local(field));
            quote!(#member: #name)
        })
        .collect();
    let defaults = plan.fields.iter().filter(|f| !filled(f)).map(|field| {
        let (member, ty) = (&field.member, field.ty);
        quote_spanned!(ty.span()=> #member: <#ty as #private::core::default::Default>::default())
    });

    // The tensor field keeps the imported memory alive, and may be read by
    // nothing else (a struct that only uses its data pointer): read here,
    // so rustc's dead-code lint does not call it never read.
    let value = local("__dlpack_value");
    let tensor_member = &plan.tensor.member;
    let keep_tensor = quote!(let _ = &#value.#tensor_member;);

    let mut py_generics = input.original.generics.clone();
    py_generics
        .params
        .insert(0, syn::parse_quote!('__dlpack_py));
    py_generics.params.insert(0, syn::parse_quote!('__dlpack_a));
    let (py_impl_generics, _, _) = py_generics.split_for_impl();
    let pyo3 = quote!(#private::pyo3);
    let obj = local("__dlpack_obj");
    // The stub's hint (feature `experimental-inspect`; nothing without it).
    let element = attrs.dtype.iter();
    let input_type = quote!(#krate::__input_type!(#(#element)*););
    // The stub's type (feature `stub-gen`; nothing without it).
    let element = attrs.dtype.iter();
    let stub_type = quote! {
        #krate::__stub_type!(derived_input [#impl_generics] #ident #ty_generics [#where_clause] #(#element)*);
    };

    quote! {
        #[automatically_derived]
        impl #impl_generics #krate::FromDLPack for #ident #ty_generics #where_clause {
            fn from_dlpack(#tensor: #krate::PyTensor) -> #private::core::result::Result<Self, #krate::DLPackError> {
                #(#checks)*
                #(#lets)*
                let #value = Self { #(#assigned,)* #(#defaults,)* };
                #keep_tensor
                #private::core::result::Result::Ok(#value)
            }
        }

        #[automatically_derived]
        impl #py_impl_generics #pyo3::FromPyObject<'__dlpack_a, '__dlpack_py> for #ident #ty_generics #where_clause {
            type Error = #pyo3::PyErr;
            #input_type

            fn extract(#obj: #pyo3::Borrowed<'__dlpack_a, '__dlpack_py, #pyo3::PyAny>) -> #private::core::result::Result<Self, Self::Error> {
                #private::extract(&#obj)
            }
        }

        #stub_type
    }
}
