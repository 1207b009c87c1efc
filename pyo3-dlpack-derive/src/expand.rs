//! The pipeline of both derives (parse → validate → expand), the `const _`
//! wrapper, and the fallback emitted when the input is invalid.

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

use crate::ast::{Derive, Input};
use crate::attr::ContainerAttrs;
use crate::ctxt::Ctxt;
use crate::tokens::{exportable_where_clause, krate};
use crate::validate::{self, Plan};
use crate::{expand_from, expand_into};

/// Expands `#[derive(…)]`: the impls, or every error found plus stub impls
/// (so that one mistake does not cascade into errors at every use site).
pub(crate) fn derive(derive: Derive, input: &DeriveInput) -> TokenStream {
    let ctxt = Ctxt::new();
    let parsed = Input::from_syn(&ctxt, derive, input);
    let plan = validate::validate(&ctxt, derive, &parsed);
    match (ctxt.check(), plan) {
        (Ok(()), Some(Plan::Into(plan))) => wrap(expand_into::expand(&plan)),
        (Ok(()), Some(Plan::From(plan))) => wrap(expand_from::expand(&plan)),
        (Err(errors), _) => {
            let errors = errors.into_compile_error();
            let stub = wrap(fallback(derive, input, &parsed.attrs));
            quote!(#errors #stub)
        }
        (Ok(()), None) => unreachable!("validation that gives no plan records an error"),
    }
}

fn wrap(tokens: TokenStream) -> TokenStream {
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_qualifications, clippy::needless_lifetimes)]
        const _: () = {
            #tokens
        };
    }
}

/// Impls that compile whatever the input, so only the real errors show:
/// the trait, and the PyO3 conversion a `#[pyfunction]` argument or result
/// needs (without it, every function that takes or returns the type adds
/// an error of its own).
fn fallback(derive: Derive, input: &DeriveInput, attrs: &ContainerAttrs) -> TokenStream {
    let krate = krate(attrs);
    let private = quote!(#krate::__private);
    let pyo3 = quote!(#private::pyo3);
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut py_generics = input.generics.clone();
    py_generics
        .params
        .insert(0, syn::parse_quote!('__dlpack_py));
    if derive == Derive::FromDLPack {
        py_generics.params.insert(0, syn::parse_quote!('__dlpack_a));
    }
    let (py_impl_generics, _, _) = py_generics.split_for_impl();
    match derive {
        // An export must be 'static: a stub for a borrowing struct would only
        // add errors to the one that explains this.
        Derive::IntoDLPack if input.generics.lifetimes().next().is_some() => TokenStream::new(),
        Derive::IntoDLPack => {
            let exportable = exportable_where_clause(&input.generics, &krate);
            quote! {
                impl #impl_generics #krate::IntoDLPack for #ident #ty_generics #exportable {
                    fn tensor_info(&self) -> #private::core::result::Result<#krate::TensorInfo<'_>, #krate::DLPackError> {
                        #private::core::unimplemented!()
                    }
                }
                impl #py_impl_generics #pyo3::IntoPyObject<'__dlpack_py> for #ident #ty_generics #where_clause {
                    type Target = #krate::DLPackTensor;
                    type Output = #pyo3::Bound<'__dlpack_py, #krate::DLPackTensor>;
                    type Error = #pyo3::PyErr;
                    fn into_pyobject(self, _: #pyo3::Python<'__dlpack_py>) -> #private::core::result::Result<Self::Output, Self::Error> {
                        #private::core::unimplemented!()
                    }
                }
            }
        }
        Derive::FromDLPack => quote! {
            impl #impl_generics #krate::FromDLPack for #ident #ty_generics #where_clause {
                fn from_dlpack(_: #krate::PyTensor) -> #private::core::result::Result<Self, #krate::DLPackError> {
                    #private::core::unimplemented!()
                }
            }
            impl #py_impl_generics #pyo3::FromPyObject<'__dlpack_a, '__dlpack_py> for #ident #ty_generics #where_clause {
                type Error = #pyo3::PyErr;
                fn extract(_: #pyo3::Borrowed<'__dlpack_a, '__dlpack_py, #pyo3::PyAny>) -> #private::core::result::Result<Self, Self::Error> {
                    #private::core::unimplemented!()
                }
            }
        },
    }
}
