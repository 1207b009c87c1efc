//! Tokens both expansions emit: the runtime crate's path, the where clause
//! of an exportable type, and spans moved onto the user's tokens.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::quote;

use crate::attr::ContainerAttrs;

/// A name the generated code introduces (a local, a parameter): `__dlpack_`
/// names, as a `let` or a parameter named like a constant, unit struct or
/// const generic in the user's scope (`const builder`, `struct py;`) is a
/// pattern matching it; at the mixed site, so that no user local is seen.
pub(crate) fn local(name: &str) -> proc_macro2::Ident {
    proc_macro2::Ident::new(name, Span::mixed_site())
}

/// The path generated code uses for the runtime crate.
pub(crate) fn krate(attrs: &ContainerAttrs) -> TokenStream {
    match &attrs.krate {
        Some(path) => quote!(#path),
        None => quote!(::pyo3_dlpack),
    }
}

/// The input's where clause plus `P: 'static` for each type parameter and
/// `for<'__dlpack> Self: Send + Sync`, for the `IntoDLPack` impl (and its stub).
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
    // Each type parameter `'static`, which `IntoDLPack: 'static` needs: the
    // impl then applies to exportable parameters only, and a parameter the
    // user left unbounded gets the error that names the bound it lacks
    // (`P: Element`, on the field), not two "may not live long enough"
    // on the derive.
    let params: Vec<_> = generics.type_params().map(|p| p.ident.clone()).collect();
    let clause = generics.make_where_clause();
    for param in params {
        clause.predicates.push(syn::parse_quote!(#param: 'static));
    }
    clause
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
