//! The rules across attributes and fields, per derive: which roles a derive
//! takes, which are unique or required, which keys contradict each other.
//!
//! Every rule is checked and every error recorded before giving up, so a
//! user sees all mistakes at once. What passes is a plan: the fields each
//! role names, from which the expanders generate code without failing.

use proc_macro2::Span;
use syn::spanned::Spanned as _;

use crate::ast::{Derive, Field, Input};
use crate::attr::Role;
use crate::ctxt::Ctxt;
use crate::symbol::DLPACK;

/// A validated input, ready to expand.
pub(crate) enum Plan<'i, 'a> {
    Into(IntoPlan<'i, 'a>),
    From(FromPlan<'i, 'a>),
}

/// The fields `#[derive(IntoDLPack)]` uses.
pub(crate) struct IntoPlan<'i, 'a> {
    pub(crate) input: &'i Input<'a>,
    pub(crate) fields: &'i [Field<'a>],
    pub(crate) data: &'i Field<'a>,
    pub(crate) shape: Option<&'i Field<'a>>,
    pub(crate) strides: Option<&'i Field<'a>>,
    pub(crate) device: Option<&'i Field<'a>>,
    pub(crate) dtype: Option<&'i Field<'a>>,
    pub(crate) read_only: Option<&'i Field<'a>>,
    pub(crate) byte_offset: Option<&'i Field<'a>>,
    /// The fields of `shape = [...]`, in order.
    pub(crate) extents: Option<Vec<&'i Field<'a>>>,
    /// Whether `data` is a `#[dlpack(inner)]` field (an `IntoDLPack` value
    /// whose description is the tensor's), and nothing else describes it.
    pub(crate) inner: bool,
}

/// The fields `#[derive(FromDLPack)]` fills.
pub(crate) struct FromPlan<'i, 'a> {
    pub(crate) input: &'i Input<'a>,
    pub(crate) fields: &'i [Field<'a>],
    pub(crate) tensor: &'i Field<'a>,
    pub(crate) shape: Option<&'i Field<'a>>,
    pub(crate) strides: Option<&'i Field<'a>>,
    pub(crate) device: Option<&'i Field<'a>>,
    pub(crate) dtype: Option<&'i Field<'a>>,
    pub(crate) read_only: Option<&'i Field<'a>>,
    pub(crate) data: Option<&'i Field<'a>>,
    /// The fields of `shape = [...]`, in order: each gets one extent.
    pub(crate) extents: Option<Vec<&'i Field<'a>>>,
}

/// Checks `input` for `derive`: a plan, or `None` with the reasons recorded
/// in `ctxt`.
pub(crate) fn validate<'i, 'a>(
    ctxt: &Ctxt,
    derive: Derive,
    input: &'i Input<'a>,
) -> Option<Plan<'i, 'a>> {
    let fields = input.fields.as_deref()?;
    check_slips(ctxt, derive, fields);
    match derive {
        Derive::IntoDLPack => into_dlpack(ctxt, input, fields).map(Plan::Into),
        Derive::FromDLPack => from_dlpack(ctxt, input, fields).map(Plan::From),
    }
}

fn into_dlpack<'i, 'a>(
    ctxt: &Ctxt,
    input: &'i Input<'a>,
    fields: &'i [Field<'a>],
) -> Option<IntoPlan<'i, 'a>> {
    let attrs = &input.attrs;
    let data = unique(ctxt, fields, Role::Data);
    let shape = unique(ctxt, fields, Role::Shape);
    let strides = unique(ctxt, fields, Role::Strides);
    let device = unique(ctxt, fields, Role::Device);
    let dtype = unique(ctxt, fields, Role::Dtype);
    let read_only = unique(ctxt, fields, Role::ReadOnly);
    let byte_offset = unique(ctxt, fields, Role::ByteOffset);
    let extents = extent_fields(ctxt, input, fields, shape);
    if let (Some(strides), None, None) = (strides, shape, &attrs.shape) {
        ctxt.syn_error(role_error(
            strides,
            "#[dlpack(strides)] needs a #[dlpack(shape)] field too: strides describe the dimensions of a shape",
        ));
    }
    check_strides_against_shape(ctxt, input, shape, strides);
    if let (Some(field), Some(ty)) = (dtype, &attrs.dtype) {
        ctxt.error_spanned_by(
            ty,
            format!(
                "the struct's `dtype = …` and the #[dlpack(dtype)] field `{}` both give the dtype; keep one",
                field.name()
            ),
        );
    }
    if let (Some(field), Some(span)) = (read_only, attrs.read_only) {
        ctxt.syn_error(syn::Error::new(
            span,
            format!(
                "the struct's `read_only` and the #[dlpack(read_only)] field `{}` both decide writability; keep one",
                field.name()
            ),
        ));
    }
    for (span, key, hint) in [
        (
            attrs.ndim.as_ref().map(|n| n.span),
            "ndim",
            "an exported tensor's rank comes from its #[dlpack(shape)] field",
        ),
        (
            attrs.device.as_ref().map(|d| d.span),
            "device",
            "to export on a device, use a #[dlpack(device)] field or the buffer's own device",
        ),
        (
            attrs.contiguous,
            "contiguous",
            "an export's layout comes from its shape and strides fields",
        ),
        (
            attrs.writable,
            "writable",
            "exports are writable unless marked `read_only`",
        ),
    ] {
        if let Some(span) = span {
            ctxt.syn_error(syn::Error::new(
                span,
                format!("`{key}` constrains imports (#[derive(FromDLPack)]), not #[derive(IntoDLPack)]: {hint}"),
            ));
        }
    }
    // A struct that derives both traits keeps its memory in the PyTensor
    // of its import: exported again, with the layout it came with.
    let tensor = unique(ctxt, fields, Role::Tensor);
    if let (Some(tensor), Some(data)) = (tensor, data) {
        ctxt.syn_error(role_error(
            data,
            &format!(
                "an export has one memory: this #[dlpack(data)] field or the #[dlpack(tensor)] field `{}` (a PyTensor, exported again); keep one (a struct that derives FromDLPack too keeps the tensor: an import's data pointer cannot be exported)",
                tensor.name()
            ),
        ));
    }
    let data = data.or(tensor);
    if let Some(lifetime) = input.original.generics.lifetimes().next() {
        ctxt.error_spanned_by(
            lifetime,
            "#[derive(IntoDLPack)] values outlive the call (consumers free them on any thread), so they must be 'static: own the data instead of borrowing it",
        );
    }
    if let Some(inner) = unique(ctxt, fields, Role::Inner) {
        check_inner_alone(ctxt, input, fields, inner);
        return Some(IntoPlan {
            input,
            fields,
            data: inner,
            shape: None,
            strides: None,
            device: None,
            dtype: None,
            read_only: None,
            byte_offset: None,
            extents: None,
            inner: true,
        });
    }
    let Some(data) = data else {
        ctxt.error_spanned_by(
            &input.original.ident,
            "#[derive(IntoDLPack)] needs a #[dlpack(data)] field: mark the field that holds the tensor's memory (a Vec<T>, AlignedBuffer<T>, RawBuffer, …), or a #[dlpack(inner)] field that is itself an IntoDLPack value (a struct deriving FromDLPack too exports its #[dlpack(tensor)] PyTensor)",
        );
        return None;
    };
    Some(IntoPlan {
        input,
        fields,
        data,
        shape,
        strides,
        device,
        dtype,
        read_only,
        byte_offset,
        extents,
        inner: false,
    })
}

/// A `#[dlpack(inner)]` field describes the whole tensor: no other part may
/// be given besides.
fn check_inner_alone(ctxt: &Ctxt, input: &Input<'_>, fields: &[Field<'_>], inner: &Field<'_>) {
    let message = |what: &str| {
        format!(
            "the #[dlpack(inner)] field `{}` describes the whole tensor; {what} cannot be given besides (put it on the inner type)",
            inner.name()
        )
    };
    for field in fields
        .iter()
        .filter(|f| f.takes_part() && !f.has_role(Role::Inner))
    {
        let key = field
            .role
            .as_ref()
            .map_or("", |r| r.value.symbol().as_str());
        ctxt.syn_error(role_error(field, &message(&format!("#[dlpack({key})]"))));
    }
    let attrs = &input.attrs;
    if let Some(ty) = &attrs.dtype {
        ctxt.error_spanned_by(ty, message("`dtype = …`"));
    }
    if let Some(shape) = &attrs.shape {
        ctxt.syn_error(syn::Error::new(shape.span, message("`shape = [...]`")));
    }
    if let Some(span) = attrs.read_only {
        ctxt.syn_error(syn::Error::new(span, message("`read_only`")));
    }
}

/// The fields `shape = [...]` names, each a field without a role; a
/// `#[dlpack(shape)]` field besides is an error.
fn extent_fields<'i, 'a>(
    ctxt: &Ctxt,
    input: &Input<'_>,
    fields: &'i [Field<'a>],
    shape_field: Option<&Field<'_>>,
) -> Option<Vec<&'i Field<'a>>> {
    let shape = input.attrs.shape.as_ref()?;
    if let Some(field) = shape_field {
        ctxt.syn_error(syn::Error::new(
            shape.span,
            format!(
                "the struct's `shape = [...]` and the #[dlpack(shape)] field `{}` both give the shape; keep one",
                field.name()
            ),
        ));
    }
    let mut found = Vec::new();
    for member in &shape.value {
        match fields.iter().find(|f| f.member == *member) {
            Some(field) if field.takes_part() => ctxt.error_spanned_by(
                member,
                format!(
                    "`{}` is the #[dlpack({})] field; `shape = [...]` lists fields that hold one extent each",
                    field.name(),
                    field.role.as_ref().map_or("", |r| r.value.symbol().as_str())
                ),
            ),
            Some(field) => found.push(field),
            None => ctxt.error_spanned_by(
                member,
                format!(
                    "`shape = [...]` names `{}`, which is no field of this struct",
                    quote::quote!(#member)
                ),
            ),
        }
    }
    (found.len() == shape.value.len()).then_some(found)
}

fn from_dlpack<'i, 'a>(
    ctxt: &Ctxt,
    input: &'i Input<'a>,
    fields: &'i [Field<'a>],
) -> Option<FromPlan<'i, 'a>> {
    if let Some(span) = input.attrs.read_only {
        ctxt.syn_error(syn::Error::new(
            span,
            "`read_only` marks exports (#[derive(IntoDLPack)]); to require a writable input, write `writable`",
        ));
    }
    let tensor = unique(ctxt, fields, Role::Tensor);
    let shape = unique(ctxt, fields, Role::Shape);
    let extents = extent_fields(ctxt, input, fields, shape);
    let strides = unique(ctxt, fields, Role::Strides);
    let device = unique(ctxt, fields, Role::Device);
    let dtype = unique(ctxt, fields, Role::Dtype);
    let read_only = unique(ctxt, fields, Role::ReadOnly);
    let data = unique(ctxt, fields, Role::Data);
    for field in fields.iter().filter(|f| f.has_role(Role::ByteOffset)) {
        ctxt.syn_error(role_error(
            field,
            "#[dlpack(byte_offset)] gives an export's offset into its #[dlpack(data)] memory; an import's #[dlpack(data)] pointer already points at its first element",
        ));
    }
    for field in fields.iter().filter(|f| f.has_role(Role::Inner)) {
        ctxt.syn_error(role_error(
            field,
            "#[dlpack(inner)] marks an export's inner IntoDLPack value; an import keeps its tensor in a #[dlpack(tensor)] field",
        ));
    }
    check_ndim_against_shape(ctxt, input, shape);
    check_ndim_against_extents(ctxt, input);
    check_strides_against_shape(ctxt, input, shape, strides);
    // Checked last, so a missing tensor field hides no other mistake.
    let Some(tensor) = tensor else {
        ctxt.error_spanned_by(
            &input.original.ident,
            "#[derive(FromDLPack)] needs a #[dlpack(tensor)] field of type PyTensor: it keeps the imported memory alive",
        );
        return None;
    };
    Some(FromPlan {
        input,
        fields,
        tensor,
        shape,
        strides,
        device,
        dtype,
        read_only,
        data,
        extents,
    })
}

/// Names of the tensor's parts: a field so named without an attribute would
/// silently be no part of the tensor (a `shape` field of an export that is
/// then 1-D), so it must say which it is.
const PART_NAMES: &[&str] = &[
    "shape",
    "strides",
    "device",
    "dtype",
    "byte_offset",
    "read_only",
];

/// A field named like one of the tensor's parts has an attribute: the part,
/// or `skip`.
fn check_slips(ctxt: &Ctxt, derive: Derive, fields: &[Field<'_>]) {
    // A field with a #[dlpack(...)] that failed to parse has its error already.
    let unmarked = |field: &&Field<'_>| {
        field.role.is_none() && !field.original.attrs.iter().any(|a| a.path() == DLPACK)
    };
    for field in fields.iter().filter(unmarked) {
        let syn::Member::Named(ident) = &field.member else {
            continue;
        };
        let name = ident.to_string();
        let Some(part) = PART_NAMES.iter().find(|part| **part == name) else {
            continue;
        };
        let derive = derive.name();
        ctxt.error_spanned_by(
            ident,
            format!(
                "the field `{name}` has no #[dlpack(...)] attribute, so #[derive({derive})] would not use it as the tensor's {part}: write #[dlpack({part})] above it, or #[dlpack(skip)] to keep it out of the tensor"
            ),
        );
    }
}

/// The one field of `role`; a second one is an error.
fn unique<'i, 'a>(ctxt: &Ctxt, fields: &'i [Field<'a>], role: Role) -> Option<&'i Field<'a>> {
    let mut found: Option<&'i Field<'a>> = None;
    for field in fields.iter().filter(|f| f.has_role(role)) {
        match found {
            None => found = Some(field),
            Some(first) => ctxt.syn_error(syn::Error::new(
                field.role.as_ref().map_or_else(Span::call_site, |r| r.span),
                format!(
                    "only one field can be #[dlpack({})]; `{}` already is",
                    role.symbol(),
                    first.name()
                ),
            )),
        }
    }
    found
}

/// `ndim = N` must agree with a `[_; M]` shape field.
fn check_ndim_against_shape(ctxt: &Ctxt, input: &Input<'_>, shape: Option<&Field<'_>>) {
    let (Some(ndim), Some(shape)) = (&input.attrs.ndim, shape) else {
        return;
    };
    if let Some(len) = fixed_array_len(shape.ty) {
        if len != ndim.value {
            ctxt.syn_error(syn::Error::new(
                ndim.span,
                format!(
                    "`ndim = {}` contradicts the #[dlpack(shape)] field `{}`, an array of {len}: make them agree",
                    ndim.value,
                    shape.name()
                ),
            ));
        }
    }
}

/// An import's `ndim = N` must count the fields of its `shape = [...]`,
/// which already fixes the rank: otherwise every import fails.
fn check_ndim_against_extents(ctxt: &Ctxt, input: &Input<'_>) {
    let (Some(ndim), Some(shape)) = (&input.attrs.ndim, &input.attrs.shape) else {
        return;
    };
    let len = shape.value.len();
    if len != ndim.value {
        ctxt.syn_error(syn::Error::new(
            ndim.span,
            format!(
                "`ndim = {}` contradicts `shape = [...]`, which names {len} fields: the shape's fields fix the rank, so leave `ndim` out",
                ndim.value
            ),
        ));
    }
}

/// A `[_; N]` strides field must have as many entries as a `[_; M]` shape
/// field, and as `ndim = K` says: otherwise every export or import fails.
fn check_strides_against_shape(
    ctxt: &Ctxt,
    input: &Input<'_>,
    shape: Option<&Field<'_>>,
    strides: Option<&Field<'_>>,
) {
    let Some(strides) = strides else {
        return;
    };
    let Some(len) = fixed_array_len(strides.ty) else {
        return;
    };
    let shape_len = shape.and_then(|shape| fixed_array_len(shape.ty).map(|n| (shape, n)));
    if let Some((shape, shape_len)) = shape_len.filter(|&(_, n)| n != len) {
        ctxt.syn_error(syn::Error::new(
            strides.ty.span(),
            format!(
                "the #[dlpack(strides)] field `{}`, an array of {len}, contradicts the #[dlpack(shape)] field `{}`, an array of {shape_len}: give one stride per dimension",
                strides.name(),
                shape.name()
            ),
        ));
    } else if let Some(ndim) = input.attrs.ndim.as_ref().filter(|n| n.value != len) {
        ctxt.syn_error(syn::Error::new(
            strides.ty.span(),
            format!(
                "the #[dlpack(strides)] field `{}`, an array of {len}, contradicts `ndim = {}`: give one stride per dimension",
                strides.name(),
                ndim.value
            ),
        ));
    }
}

fn role_error(field: &Field<'_>, message: &str) -> syn::Error {
    syn::Error::new(
        field
            .role
            .as_ref()
            .map_or_else(|| field.original.span(), |r| r.span),
        message,
    )
}

/// `N` for a `[T; N]` type whose length is an integer literal.
fn fixed_array_len(ty: &syn::Type) -> Option<usize> {
    let syn::Type::Array(array) = ty else {
        return None;
    };
    let syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Int(lit),
        ..
    }) = &array.len
    else {
        return None;
    };
    lit.base10_parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages `validate` records for `source`, in order.
    fn errors(derive: Derive, source: &str) -> Vec<String> {
        let input: syn::DeriveInput = syn::parse_str(source).expect("test input parses");
        let ctxt = Ctxt::new();
        let parsed = Input::from_syn(&ctxt, derive, &input);
        let plan = validate(&ctxt, derive, &parsed);
        let result = ctxt.check();
        assert_eq!(
            plan.is_some(),
            result.is_ok(),
            "a plan exactly when no error"
        );
        result
            .err()
            .map(|e| e.into_iter().map(|e| e.to_string()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn a_valid_input_gives_a_plan() {
        assert!(
            errors(
                Derive::IntoDLPack,
                "struct S { #[dlpack(data)] d: Vec<u8> }"
            )
            .is_empty()
        );
        assert!(
            errors(
                Derive::FromDLPack,
                "struct S { #[dlpack(tensor)] t: PyTensor }"
            )
            .is_empty()
        );
    }

    #[test]
    fn every_cross_field_error_is_reported() {
        let found = errors(
            Derive::IntoDLPack,
            r#"
            #[dlpack(dtype = f32, ndim = 2)]
            struct S<'a> {
                #[dlpack(strides)] s: Vec<i64>,
                #[dlpack(dtype)] d: DataType,
                x: &'a u8,
            }"#,
        );
        assert_eq!(found.len(), 5, "{found:#?}");
        assert!(found[0].starts_with("#[dlpack(strides)] needs a #[dlpack(shape)]"));
        assert!(
            found[1].starts_with("the struct's `dtype = …` and the #[dlpack(dtype)] field `d`")
        );
        assert!(found[2].starts_with("`ndim` constrains imports"));
        assert!(found[3].contains("must be 'static"));
        assert!(found[4].starts_with("#[derive(IntoDLPack)] needs a #[dlpack(data)] field"));
    }

    #[test]
    fn a_missing_tensor_field_hides_nothing() {
        let found = errors(
            Derive::FromDLPack,
            r#"
            #[dlpack(ndim = 3, read_only)]
            struct S { #[dlpack(shape)] a: [usize; 2], #[dlpack(shape)] b: Vec<usize> }"#,
        );
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(found[0].starts_with("`read_only` marks exports"));
        assert_eq!(
            found[1],
            "only one field can be #[dlpack(shape)]; `a` already is"
        );
        assert!(found[2].starts_with("`ndim = 3` contradicts the #[dlpack(shape)] field `a`"));
        assert!(found[3].starts_with("#[derive(FromDLPack)] needs a #[dlpack(tensor)] field"));
    }

    #[test]
    fn a_unit_struct_is_one_error() {
        assert_eq!(
            errors(Derive::IntoDLPack, "struct S;").len(),
            1,
            "no cross-field errors after a shape error"
        );
    }

    #[test]
    fn tuple_structs_have_roles_by_position() {
        assert!(
            errors(
                Derive::IntoDLPack,
                "struct S(#[dlpack(data)] Vec<u8>, String);"
            )
            .is_empty()
        );
        assert!(errors(Derive::FromDLPack, "struct S(#[dlpack(tensor)] PyTensor);").is_empty());
        let found = errors(
            Derive::FromDLPack,
            "struct S(#[dlpack(shape)] Vec<usize>, #[dlpack(shape)] Vec<usize>);",
        );
        assert_eq!(
            found[0],
            "only one field can be #[dlpack(shape)]; `0` already is"
        );
    }
}
