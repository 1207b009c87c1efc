//! The derive input as a typed tree: the struct, its fields and their parsed
//! attributes. Building it records errors and never stops early; the rules
//! across fields are checked afterwards, in `validate.rs`.

use syn::{Data, DeriveInput, Fields, Index, Member};

use crate::attr::{self, ContainerAttrs, Role, Spanned};
use crate::ctxt::Ctxt;

/// A struct and its dlpack attributes.
pub(crate) struct Input<'a> {
    pub(crate) original: &'a DeriveInput,
    pub(crate) attrs: ContainerAttrs,
    /// The fields, named or by position; `None` (with an error recorded)
    /// for anything but a struct with fields.
    pub(crate) fields: Option<Vec<Field<'a>>>,
}

pub(crate) struct Field<'a> {
    pub(crate) member: Member,
    pub(crate) ty: &'a syn::Type,
    pub(crate) role: Option<Spanned<Role>>,
    pub(crate) original: &'a syn::Field,
}

/// Which derive is running.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Derive {
    IntoDLPack,
    FromDLPack,
}

impl Derive {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::IntoDLPack => "IntoDLPack",
            Self::FromDLPack => "FromDLPack",
        }
    }
}

impl<'a> Input<'a> {
    /// Parses the container's and every field's attributes, whatever errors
    /// there are (all are recorded in `ctxt`).
    pub(crate) fn from_syn(ctxt: &Ctxt, derive: Derive, input: &'a DeriveInput) -> Self {
        let attrs = attr::container(ctxt, &input.attrs);
        let fields = struct_fields(ctxt, derive, input).map(|fields| {
            fields
                .iter()
                .enumerate()
                .map(|(i, field)| Field {
                    member: match &field.ident {
                        Some(ident) => Member::Named(ident.clone()),
                        None => Member::Unnamed(Index::from(i)),
                    },
                    ty: &field.ty,
                    role: attr::field(ctxt, &field.attrs),
                    original: field,
                })
                .collect()
        });
        Self {
            original: input,
            attrs,
            fields,
        }
    }
}

/// The fields of a struct (named, or a tuple struct's), or an error saying
/// why the derive needs some.
fn struct_fields<'a>(ctxt: &Ctxt, derive: Derive, input: &'a DeriveInput) -> Option<&'a Fields> {
    let name = derive.name();
    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(_) | Fields::Unnamed(_) => Some(&data.fields),
            Fields::Unit => {
                ctxt.error_spanned_by(
                    &input.ident,
                    format!("#[derive({name})] needs a struct with fields; a unit struct holds no tensor"),
                );
                None
            }
        },
        Data::Enum(data) => {
            ctxt.error_spanned_by(
                data.enum_token,
                format!("#[derive({name})] works on structs, not enums: wrap each variant's tensor in a struct"),
            );
            None
        }
        Data::Union(data) => {
            ctxt.error_spanned_by(
                data.union_token,
                format!("#[derive({name})] works on structs, not unions"),
            );
            None
        }
    }
}

impl Field<'_> {
    /// The field's name, for messages.
    pub(crate) fn name(&self) -> String {
        match &self.member {
            Member::Named(ident) => ident.to_string(),
            Member::Unnamed(index) => index.index.to_string(),
        }
    }

    /// Whether the field is one of the tensor's parts (a role other than `skip`).
    pub(crate) fn takes_part(&self) -> bool {
        self.role.as_ref().is_some_and(|r| r.value != Role::Skip)
    }

    /// Whether the field has `role`.
    pub(crate) fn has_role(&self, role: Role) -> bool {
        self.role.as_ref().map(|r| r.value) == Some(role)
    }
}
