//! Code generation shared by both derives: the pipeline (parse → validate →
//! expand), the runtime crate's path, the `const _` wrapper, and the
//! fallback emitted when the input is invalid.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::quote;
use syn::DeriveInput;

use crate::ast::{Derive, Input};
use crate::attr::ContainerAttrs;
use crate::ctxt::Ctxt;
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

/// The path generated code uses for the runtime crate.
pub(crate) fn krate(attrs: &ContainerAttrs) -> TokenStream {
    match &attrs.krate {
        Some(path) => quote!(#path),
        None => quote!(::pyo3_dlpack),
    }
}

/// The input's where clause plus `for<'__dlpack> Self: Send + Sync`, for the
/// `IntoDLPack` impl (and its stub).
///
/// `IntoDLPack: Send + Sync + 'static`. Without this bound, a field that is
/// not `Send` or `Sync` fails that supertrait where the impl is written, with
/// errors on the struct's name that never name the field. With it, the impl
/// only applies to values that are `Send + Sync`, and the assertion the
/// derive makes for each field (`SendSyncField`) reports one error, on the
/// field; the `IntoPyObject` impl does not depend on it (see
/// `IntoPyObjectProbe`), so returning the type from a `#[pyfunction]` adds
/// no error. The binder keeps rustc from checking the bound where it is
/// written (a bound without generic parameters would be checked there, as a
/// "trivial bound"). `'static` stays a supertrait obligation of the impl.
pub(crate) fn exportable_where_clause(
    generics: &syn::Generics,
    krate: &TokenStream,
) -> syn::WhereClause {
    let mut generics = generics.clone();
    let marker = quote!(#krate::__private::core::marker);
    generics
        .make_where_clause()
        .predicates
        .push(syn::parse_quote!(for<'__dlpack> Self: #marker::Send + #marker::Sync));
    generics.where_clause.expect("made above")
}

/// `tokens` with every span set to `span`, so that an error about the code
/// they are part of points at the user's token and not at the derive.
pub(crate) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(group) = &tree {
                let mut respanned = Group::new(group.delimiter(), respan(group.stream(), span));
                respanned.set_span(span);
                tree = TokenTree::Group(respanned);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
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

/// Impls that compile whatever the input, so only the real errors show.
fn fallback(derive: Derive, input: &DeriveInput, attrs: &ContainerAttrs) -> TokenStream {
    let krate = krate(attrs);
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    match derive {
        // An export must be 'static: a stub for a borrowing struct would only
        // add errors to the one that explains this.
        Derive::IntoDLPack if input.generics.lifetimes().next().is_some() => TokenStream::new(),
        Derive::IntoDLPack => {
            let where_clause = exportable_where_clause(&input.generics, &krate);
            quote! {
                impl #impl_generics #krate::IntoDLPack for #ident #ty_generics #where_clause {
                    fn tensor_info(&self) -> #krate::__private::core::result::Result<#krate::TensorInfo<'_>, #krate::DLPackError> {
                        #krate::__private::core::unimplemented!()
                    }
                }
            }
        }
        Derive::FromDLPack => quote! {
            impl #impl_generics #krate::FromDLPack for #ident #ty_generics #where_clause {
                fn from_dlpack(_: #krate::PyTensor) -> #krate::__private::core::result::Result<Self, #krate::DLPackError> {
                    #krate::__private::core::unimplemented!()
                }
            }
        },
    }
}
