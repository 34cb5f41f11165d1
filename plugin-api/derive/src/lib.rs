//! `#[derive(Args)]` and `#[derive(ArgEnum)]`: a tool's arguments declared once, as a Rust type.
//!
//! The derive writes the two things that used to be written by hand and drift apart: the
//! tool's JSON input schema and the code that reads the arguments into the type. Both come
//! from the same field list, so they cannot disagree.
//!
//! Why our own derive rather than `schemars`: the catalog's schemas are deliberately flat
//! (ARCHITECTURE.md, "Tool schemas": no `$ref`, no `oneOf`, no `null` types, every property
//! described), and the validator enforces exactly the keywords it knows. A derive of our own emits only those
//! keywords, refuses an undocumented field at compile time, and costs no new crate (`syn` and
//! `quote` are already built for `serde_derive`); schemars would need settings and a pass over
//! its output to undo `$ref`s, `format`s and nullable options.
//!
//! Field attributes (`#[arg(...)]`): `min`, `max` (integers and numbers), `min_len`,
//! `max_len` (characters), `min_items`, `max_items`, `default` (the type's default) or
//! `default = EXPR`, `rename = "name"`, and `flatten` (the field is an `Args` struct whose
//! arguments join this one's, such as the shared paging arguments). An `Option<T>` field is optional; a field with a
//! default is optional and takes the default when absent; a `Vec<T>` is optional and empty
//! when absent unless marked `required`; every other field is required.
//! A `timeout_s` field's default is written into its schema as `default`: the host sets the
//! call's deadline from it when the call gives none.
//! The doc comment is the property's description and may not be left out. The struct's own doc
//! comment is `ToolArgs::DESCRIPTION`, the description of a tool built with `Tool::typed`.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{quote, ToTokens};
use syn::{parse_macro_input, Data, DeriveInput, Expr, Fields, Lit, LitStr};

/// Derives `ToolArgs` (schema and parser) for a struct with named fields.
#[proc_macro_derive(Args, attributes(arg))]
pub fn derive_args(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    args(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `ArgType` for an enum of unit variants: a string enum whose values are the variant
/// names in snake_case (or `#[arg(rename = "…")]`).
#[proc_macro_derive(ArgEnum, attributes(arg))]
pub fn derive_arg_enum(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    arg_enum(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

#[derive(Default)]
struct FieldAttrs {
    keywords: Vec<(&'static str, Expr)>,
    default: Option<Tokens>,
    rename: Option<String>,
    flatten: bool,
    required: bool,
}

fn doc_of(attrs: &[syn::Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if let Expr::Lit(syn::ExprLit {
                lit: Lit::Str(s), ..
            }) = &nv.value
            {
                lines.push(s.value().trim().to_owned());
            }
        }
    }
    lines
        .into_iter()
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn field_attrs(attrs: &[syn::Attribute]) -> syn::Result<FieldAttrs> {
    let mut out = FieldAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("arg")) {
        attr.parse_nested_meta(|meta| {
            let keyword = [
                ("min", "minimum"),
                ("max", "maximum"),
                ("min_len", "minLength"),
                ("max_len", "maxLength"),
                ("min_items", "minItems"),
                ("max_items", "maxItems"),
            ]
            .into_iter()
            .find(|(name, _)| meta.path.is_ident(name));
            if let Some((_, keyword)) = keyword {
                out.keywords.push((keyword, meta.value()?.parse()?));
            } else if meta.path.is_ident("default") {
                out.default = Some(if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<Expr>()?.into_token_stream()
                } else {
                    quote!(::core::default::Default::default())
                });
            } else if meta.path.is_ident("required") {
                out.required = true;
            } else if meta.path.is_ident("flatten") {
                out.flatten = true;
            } else if meta.path.is_ident("rename") {
                out.rename = Some(meta.value()?.parse::<LitStr>()?.value());
            } else {
                return Err(meta.error(
                    "unknown arg attribute (min, max, min_len, max_len, min_items, max_items, default, rename, flatten, required)",
                ));
            }
            Ok(())
        })?;
    }
    Ok(out)
}

fn args(input: &DeriveInput) -> syn::Result<Tokens> {
    let name = &input.ident;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            name,
            "Args derives only for structs",
        ));
    };
    let Fields::Named(fields) = &data.fields else {
        return Err(syn::Error::new_spanned(
            name,
            "Args needs a struct with named fields (a tool without arguments uses `NoArgs`)",
        ));
    };
    let sdk = quote!(::coremcp_plugin_sdk::args);
    let mut schema = Vec::new();
    let mut parse = Vec::new();
    for field in &fields.named {
        let ident = field.ident.as_ref().expect("named fields have names");
        let ty = &field.ty;
        let attrs = field_attrs(&field.attrs)?;
        if attrs.flatten {
            schema.push(quote! { object.flatten::<#ty>(); });
            parse.push(quote! { #ident: <#ty as #sdk::ToolArgs>::parse_at(args, at)? });
            continue;
        }
        let key = attrs
            .rename
            .clone()
            .unwrap_or_else(|| ident.to_string().trim_start_matches("r#").to_owned());
        let description = doc_of(&field.attrs);
        if description.is_empty() {
            return Err(syn::Error::new_spanned(
                ident,
                "every argument needs a doc comment: it is the property's description",
            ));
        }
        let mut keywords = attrs.keywords.clone();
        // A tool's own time limit is the one default the host reads (DESIGN: a tool's
        // `timeout_s` sets its call's deadline), so the schema carries it.
        if let (Some(default), "timeout_s") = (&attrs.default, key.as_str()) {
            keywords.push(("default", syn::parse2::<Expr>(default.clone())?));
        }
        let keywords = keywords.iter().map(|(k, v)| quote!((#k, #sdk::json(#v))));
        let required = if attrs.required {
            quote!(::core::option::Option::Some(true))
        } else if attrs.default.is_some() {
            quote!(::core::option::Option::Some(false))
        } else {
            quote!(::core::option::Option::None)
        };
        schema.push(quote! {
            object.property::<#ty>(#key, #description, &[#(#keywords),*], #required);
        });
        parse.push(match (&attrs.default, attrs.required) {
            (Some(default), _) => quote! {
                #ident: #sdk::take_or::<#ty>(args, #key, at, || #default)?
            },
            (None, true) => quote! { #ident: #sdk::take_required::<#ty>(args, #key, at)? },
            (None, false) => quote! { #ident: #sdk::take::<#ty>(args, #key, at)? },
        });
    }
    let (imp, generics, where_clause) = input.generics.split_for_impl();
    let description = doc_of(&input.attrs);
    Ok(quote! {
        impl #imp #sdk::ToolArgs for #name #generics #where_clause {
            const DESCRIPTION: &'static str = #description;

            fn schema() -> #sdk::Value {
                let mut object = #sdk::ObjectSchema::default();
                #(#schema)*
                object.finish()
            }

            fn parse_at(
                args: &mut #sdk::Map,
                at: &str,
            ) -> ::core::result::Result<Self, #sdk::ArgError> {
                ::core::result::Result::Ok(Self { #(#parse),* })
            }
        }

        impl #imp #sdk::ArgType for #name #generics #where_clause {
            fn schema() -> #sdk::Value {
                <Self as #sdk::ToolArgs>::schema()
            }

            fn from_value(value: #sdk::Value, at: &str) -> ::core::result::Result<Self, #sdk::ArgError> {
                #sdk::object_from_value::<Self>(value, at)
            }
        }
    })
}

fn snake_case(ident: &str) -> String {
    let mut out = String::new();
    for (i, c) in ident.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn arg_enum(input: &DeriveInput) -> syn::Result<Tokens> {
    let name = &input.ident;
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            name,
            "ArgEnum derives only for enums",
        ));
    };
    let mut idents = Vec::new();
    let mut values = Vec::new();
    for variant in &data.variants {
        if !matches!(variant.fields, Fields::Unit) {
            return Err(syn::Error::new_spanned(
                variant,
                "ArgEnum variants carry no data: the argument is a string enum",
            ));
        }
        let attrs = field_attrs(&variant.attrs)?;
        idents.push(&variant.ident);
        values.push(
            attrs
                .rename
                .unwrap_or_else(|| snake_case(&variant.ident.to_string())),
        );
    }
    let indices = 0..idents.len();
    let sdk = quote!(::coremcp_plugin_sdk::args);
    Ok(quote! {
        impl #name {
            /// Every value, in declaration order.
            pub const VALUES: &'static [&'static str] = &[#(#values),*];

            /// The value as it appears in arguments and results.
            pub fn as_str(self) -> &'static str {
                match self { #(Self::#idents => #values),* }
            }
        }

        impl #sdk::ArgType for #name {
            fn schema() -> #sdk::Value {
                #sdk::string_enum(Self::VALUES)
            }

            fn from_value(value: #sdk::Value, at: &str) -> ::core::result::Result<Self, #sdk::ArgError> {
                let index = #sdk::enum_index(&value, Self::VALUES, at)?;
                #(if index == #indices { return ::core::result::Result::Ok(Self::#idents); })*
                ::core::result::Result::Err(#sdk::ArgError::new(at, "is not a known value"))
            }
        }
    })
}
