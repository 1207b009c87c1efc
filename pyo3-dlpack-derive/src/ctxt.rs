//! Error collection: every problem in the input is reported at once.
//!
//! Parsing and validation record errors here and go on, returning what they
//! could make of the input; [`Ctxt::check`] then merges everything recorded.
//! As in serde_derive, a `Ctxt` dropped without being checked panics, so an
//! error cannot be recorded and then lost.

use std::cell::RefCell;
use std::fmt::Display;
use std::thread;

use quote::ToTokens;

/// Collects errors while parsing and validating; [`Ctxt::check`] merges them.
pub(crate) struct Ctxt {
    /// `None` once checked.
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    /// A context with no errors; it must be [`check`](Self::check)ed before it drops.
    pub(crate) fn new() -> Self {
        Self {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// Records an error spanned on `tokens`.
    pub(crate) fn error_spanned_by(&self, tokens: impl ToTokens, message: impl Display) {
        self.syn_error(syn::Error::new_spanned(tokens, message));
    }

    /// Records an error that already carries its span.
    pub(crate) fn syn_error(&self, error: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("an error recorded in a checked Ctxt")
            .push(error);
    }

    /// All recorded errors combined into one, or `Ok` when there were none.
    pub(crate) fn check(self) -> syn::Result<()> {
        let errors = self
            .errors
            .borrow_mut()
            .take()
            .expect("a Ctxt is checked once");
        let mut errors = errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for error in errors {
            combined.combine(error);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !thread::panicking() && self.errors.borrow().is_some() {
            panic!("a Ctxt was dropped without being checked: its errors would be lost");
        }
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::Span;

    use super::*;

    #[test]
    fn check_merges_every_error_in_order() {
        let ctxt = Ctxt::new();
        ctxt.syn_error(syn::Error::new(Span::call_site(), "first"));
        ctxt.error_spanned_by(quote::quote!(x), "second");
        let messages: Vec<String> = ctxt
            .check()
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(messages, ["first", "second"]);
        assert!(Ctxt::new().check().is_ok());
    }

    #[test]
    #[should_panic(expected = "dropped without being checked")]
    fn dropping_an_unchecked_ctxt_panics() {
        let ctxt = Ctxt::new();
        ctxt.error_spanned_by(quote::quote!(x), "lost");
        drop(ctxt);
    }

    #[test]
    #[should_panic(expected = "dropped without being checked")]
    fn even_without_errors() {
        drop(Ctxt::new());
    }
}
