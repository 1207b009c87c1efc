//! The derive input as a typed tree, and the cross-field rules of each derive.

use proc_macro2::Span;
use syn::spanned::Spanned as _;
use syn::{Data, DeriveInput, Fields, Member};

use crate::attr::{self, ContainerAttrs, Role, Spanned};
use crate::ctxt::Ctxt;

/// A struct with named fields and its dlpack attributes.
pub(crate) struct Input<'a> {
    pub(crate) original: &'a DeriveInput,
    pub(crate) attrs: ContainerAttrs,
    pub(crate) fields: Vec<Field<'a>>,
}

pub(crate) struct Field<'a> {
    pub(crate) member: Member,
    pub(crate) ty: &'a syn::Type,
    pub(crate) role: Option<Spanned<Role>>,
    pub(crate) original: &'a syn::Field,
}

/// Which derive is validating (for messages).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Derive {
    IntoDLPack,
    FromDLPack,
}

impl Derive {
    fn name(self) -> &'static str {
        match self {
            Self::IntoDLPack => "IntoDLPack",
            Self::FromDLPack => "FromDLPack",
        }
    }
}

impl<'a> Input<'a> {
    /// Parses the input; `None` (with errors recorded) unless it is a struct
    /// with named fields.
    pub(crate) fn from_syn(ctxt: &Ctxt, derive: Derive, input: &'a DeriveInput) -> Option<Self> {
        let attrs = attr::container(ctxt, &input.attrs);
        let named = match &input.data {
            Data::Struct(data) => match &data.fields {
                Fields::Named(named) => named,
                Fields::Unnamed(fields) => {
                    ctxt.error_spanned_by(
                        fields,
                        format!("#[derive({})] needs a struct with named fields, so each #[dlpack(...)] role has a name; tuple structs are not supported", derive.name()),
                    );
                    return None;
                }
                Fields::Unit => {
                    ctxt.error_spanned_by(
                        &input.ident,
                        format!("#[derive({})] needs a struct with named fields; a unit struct holds no tensor", derive.name()),
                    );
                    return None;
                }
            },
            Data::Enum(data) => {
                ctxt.error_spanned_by(
                    data.enum_token,
                    format!("#[derive({})] works on structs, not enums: wrap each variant's tensor in a struct", derive.name()),
                );
                return None;
            }
            Data::Union(data) => {
                ctxt.error_spanned_by(
                    data.union_token,
                    format!("#[derive({})] works on structs, not unions", derive.name()),
                );
                return None;
            }
        };
        let fields = named
            .named
            .iter()
            .map(|field| Field {
                member: Member::Named(field.ident.clone().expect("named field")),
                ty: &field.ty,
                role: attr::field(ctxt, &field.attrs),
                original: field,
            })
            .collect();
        Some(Self {
            original: input,
            attrs,
            fields,
        })
    }

    /// The one field of `role`; a second one is an error.
    pub(crate) fn unique(&self, ctxt: &Ctxt, role: Role) -> Option<&Field<'a>> {
        let mut found: Option<&Field<'a>> = None;
        for field in self
            .fields
            .iter()
            .filter(|f| f.role.as_ref().map(|r| r.value) == Some(role))
        {
            match found {
                None => found = Some(field),
                Some(first) => ctxt.syn_error(syn::Error::new(
                    field.role.as_ref().map_or_else(Span::call_site, |r| r.span),
                    format!(
                        "only one field can be #[dlpack({})]; `{}` already is",
                        role.symbol(),
                        member_name(&first.member)
                    ),
                )),
            }
        }
        found
    }

    /// Fields without a role.
    pub(crate) fn others(&self) -> impl Iterator<Item = &Field<'a>> {
        self.fields.iter().filter(|f| f.role.is_none())
    }
}

pub(crate) fn member_name(member: &Member) -> String {
    match member {
        Member::Named(ident) => ident.to_string(),
        Member::Unnamed(index) => index.index.to_string(),
    }
}

/// The fields IntoDLPack uses, validated.
pub(crate) struct IntoPlan<'i, 'a> {
    pub(crate) data: &'i Field<'a>,
    pub(crate) shape: Option<&'i Field<'a>>,
    pub(crate) strides: Option<&'i Field<'a>>,
    pub(crate) device: Option<&'i Field<'a>>,
    pub(crate) dtype: Option<&'i Field<'a>>,
    pub(crate) read_only: Option<&'i Field<'a>>,
}

impl<'a> Input<'a> {
    pub(crate) fn plan_into_dlpack(&self, ctxt: &Ctxt) -> Option<IntoPlan<'_, 'a>> {
        let data = self.unique(ctxt, Role::Data);
        let shape = self.unique(ctxt, Role::Shape);
        let strides = self.unique(ctxt, Role::Strides);
        let device = self.unique(ctxt, Role::Device);
        let dtype = self.unique(ctxt, Role::Dtype);
        let read_only = self.unique(ctxt, Role::ReadOnly);
        if let (Some(strides), None) = (strides, shape) {
            ctxt.syn_error(role_error(strides, "#[dlpack(strides)] needs a #[dlpack(shape)] field too: strides describe the dimensions of a shape"));
        }
        if let (Some(field), Some(ty)) = (dtype, &self.attrs.dtype) {
            ctxt.error_spanned_by(
                ty,
                format!(
                    "the struct's `dtype = …` and the #[dlpack(dtype)] field `{}` both give the dtype; keep one",
                    member_name(&field.member)
                ),
            );
        }
        if let (Some(field), Some(span)) = (read_only, self.attrs.read_only) {
            ctxt.syn_error(syn::Error::new(
                span,
                format!(
                    "the struct's `read_only` and the #[dlpack(read_only)] field `{}` both decide writability; keep one",
                    member_name(&field.member)
                ),
            ));
        }
        let attrs = &self.attrs;
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
        for field in self
            .fields
            .iter()
            .filter(|f| f.role.as_ref().map(|r| r.value) == Some(Role::Tensor))
        {
            ctxt.syn_error(role_error(
                field,
                "#[dlpack(tensor)] marks the PyTensor of a #[derive(FromDLPack)] struct; an export's memory is its #[dlpack(data)] field",
            ));
        }
        if let Some(lifetime) = self.original.generics.lifetimes().next() {
            ctxt.error_spanned_by(
                lifetime,
                "#[derive(IntoDLPack)] values outlive the call (consumers free them on any thread), so they must be 'static: own the data instead of borrowing it",
            );
        }
        let Some(data) = data else {
            ctxt.error_spanned_by(
                &self.original.ident,
                "#[derive(IntoDLPack)] needs a #[dlpack(data)] field: mark the field that holds the tensor's memory (a Vec<T>, AlignedBuffer<T>, RawBuffer, …)",
            );
            return None;
        };
        Some(IntoPlan {
            data,
            shape,
            strides,
            device,
            dtype,
            read_only,
        })
    }
}

/// The fields FromDLPack fills, validated.
pub(crate) struct FromPlan<'i, 'a> {
    pub(crate) tensor: &'i Field<'a>,
    pub(crate) shape: Option<&'i Field<'a>>,
    pub(crate) strides: Option<&'i Field<'a>>,
    pub(crate) device: Option<&'i Field<'a>>,
    pub(crate) dtype: Option<&'i Field<'a>>,
    pub(crate) read_only: Option<&'i Field<'a>>,
    pub(crate) data: Option<&'i Field<'a>>,
}

impl<'a> Input<'a> {
    pub(crate) fn plan_from_dlpack(&self, ctxt: &Ctxt) -> Option<FromPlan<'_, 'a>> {
        if let Some(span) = self.attrs.read_only {
            ctxt.syn_error(syn::Error::new(
                span,
                "`read_only` marks exports (#[derive(IntoDLPack)]); to require a writable input, write `writable`",
            ));
        }
        // Every rule is checked before giving up on a missing tensor field,
        // so all mistakes are reported together.
        let tensor = self.unique(ctxt, Role::Tensor);
        let shape = self.unique(ctxt, Role::Shape);
        let strides = self.unique(ctxt, Role::Strides);
        let device = self.unique(ctxt, Role::Device);
        let dtype = self.unique(ctxt, Role::Dtype);
        let read_only = self.unique(ctxt, Role::ReadOnly);
        let data = self.unique(ctxt, Role::Data);
        self.check_ndim_against_shape(ctxt, shape);
        let Some(tensor) = tensor else {
            ctxt.error_spanned_by(
                &self.original.ident,
                "#[derive(FromDLPack)] needs a #[dlpack(tensor)] field of type PyTensor: it keeps the imported memory alive",
            );
            return None;
        };
        Some(FromPlan {
            tensor,
            shape,
            strides,
            device,
            dtype,
            read_only,
            data,
        })
    }

    /// `ndim = N` must agree with a `[_; M]` shape field.
    fn check_ndim_against_shape(&self, ctxt: &Ctxt, shape: Option<&Field<'a>>) {
        if let (Some(ndim), Some(shape)) = (&self.attrs.ndim, shape) {
            if let Some(len) = fixed_array_len(shape.ty) {
                if len != ndim.value {
                    ctxt.syn_error(syn::Error::new(
                        ndim.span,
                        format!(
                            "`ndim = {}` contradicts the #[dlpack(shape)] field `{}`, an array of {len}: make them agree",
                            ndim.value,
                            member_name(&shape.member)
                        ),
                    ));
                }
            }
        }
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
pub(crate) fn fixed_array_len(ty: &syn::Type) -> Option<usize> {
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
