//! Typed tool arguments: the traits `#[derive(Args)]` implements, and the argument types a
//! field may have.
//!
//! A tool's argument struct is the only place its arguments are written. Its schema is built
//! from the fields ([`ToolArgs::schema`]); the host's arguments are first checked against that
//! schema (so a wrong argument is refused, named, before any tool code runs) and then read
//! into the struct ([`ToolArgs::parse`]).
//!
//! Invariants: a schema built here uses only the keywords [`crate::schema`] enforces; no
//! type is nullable (an optional argument is left out, never `null`); reading never panics.

use std::collections::BTreeMap;

pub use serde_json::{Map as JsonMap, Value};

/// The arguments object.
pub type Map = JsonMap<String, Value>;

/// An argument that cannot be read, named by its path (`entries[2].ttl_s`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    pub at: String,
    pub message: String,
}

impl ArgError {
    pub fn new(at: &str, message: impl Into<String>) -> Self {
        Self {
            at: at.to_owned(),
            message: message.into(),
        }
    }

    /// A rule's refusal of argument `at` ([`invalid`] names it already: the prefix is not
    /// repeated).
    pub fn refused(at: &str, e: coremcp_plugin_api::ToolError) -> Self {
        let prefix = format!("argument \"{at}\": ");
        let message = e.message.as_str();
        Self::new(at, message.strip_prefix(&prefix).unwrap_or(message))
    }
}

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "argument \"{}\": {}", self.at, self.message)
    }
}

impl From<ArgError> for coremcp_plugin_api::ToolError {
    fn from(e: ArgError) -> Self {
        Self::new(coremcp_plugin_api::codes::INVALID_ARGUMENTS, e.to_string())
    }
}

/// `invalid_arguments` naming the argument: for the rules a schema cannot say (a slug's
/// form, "exactly one of A and B").
pub fn invalid(name: &str, problem: impl std::fmt::Display) -> coremcp_plugin_api::ToolError {
    coremcp_plugin_api::ToolError::new(
        coremcp_plugin_api::codes::INVALID_ARGUMENTS,
        format!("argument \"{name}\": {problem}"),
    )
}

/// A tool's whole arguments object. Derive it: `#[derive(Args)]`.
pub trait ToolArgs: Sized {
    /// The struct's doc comment: the description of a tool that takes these arguments
    /// ([`Tool::typed`](crate::Tool::typed)); empty without one.
    const DESCRIPTION: &'static str = "";

    /// The closed object schema of the arguments.
    fn schema() -> Value;

    /// Reads the arguments (already checked against [`Self::schema`]) of the object at `at`
    /// (empty for the top level).
    fn parse_at(args: &mut Map, at: &str) -> Result<Self, ArgError>;

    /// Reads a top-level arguments object.
    fn parse(mut args: Map) -> Result<Self, ArgError> {
        Self::parse_at(&mut args, "")
    }
}

/// A type an argument may have: its schema, and how a JSON value becomes it.
pub trait ArgType: Sized {
    /// The property schema (without its description).
    fn schema() -> Value;

    /// Reads a present value.
    fn from_value(value: Value, at: &str) -> Result<Self, ArgError>;

    /// The value of an absent argument: an error for a required one.
    fn absent(at: &str) -> Result<Self, ArgError> {
        Err(ArgError {
            at: at.to_owned(),
            message: "is required".to_owned(),
        })
    }

    /// Whether an absent argument is allowed (it is listed in `required` otherwise).
    const OPTIONAL: bool = false;
}

/// A tool that takes no arguments.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoArgs;

impl ToolArgs for NoArgs {
    fn schema() -> Value {
        ObjectSchema::default().finish()
    }

    fn parse_at(_: &mut Map, _: &str) -> Result<Self, ArgError> {
        Ok(Self)
    }
}

/// Builds a closed object schema, one property at a time (what the derive emits).
#[derive(Debug, Default)]
pub struct ObjectSchema {
    properties: Map,
    required: Vec<Value>,
}

impl ObjectSchema {
    /// Adds the property `name` of type `T`, with its description and extra keywords.
    pub fn property<T: ArgType>(
        &mut self,
        name: &str,
        description: &str,
        keywords: &[(&str, Value)],
        required: Option<bool>,
    ) {
        let mut schema = match T::schema() {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        for (keyword, value) in keywords {
            schema.insert((*keyword).to_owned(), value.clone());
        }
        schema.insert("description".to_owned(), description.into());
        self.properties
            .insert(name.to_owned(), Value::Object(schema));
        if required.unwrap_or(!T::OPTIONAL) {
            self.required.push(name.into());
        }
    }

    /// Adds the properties of `T` (an `#[arg(flatten)]` field) to this object.
    pub fn flatten<T: ToolArgs>(&mut self) {
        let schema = T::schema();
        if let Some(properties) = schema["properties"].as_object() {
            self.properties
                .extend(properties.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        if let Some(required) = schema["required"].as_array() {
            self.required.extend(required.iter().cloned());
        }
    }

    pub fn finish(self) -> Value {
        let mut schema = Map::new();
        schema.insert("type".into(), "object".into());
        schema.insert("properties".into(), Value::Object(self.properties));
        if !self.required.is_empty() {
            schema.insert("required".into(), Value::Array(self.required));
        }
        schema.insert("additionalProperties".into(), false.into());
        Value::Object(schema)
    }
}

fn path(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_owned()
    } else {
        format!("{at}.{name}")
    }
}

/// Takes the argument `name` out of `args` (what the derive emits for a field).
pub fn take<T: ArgType>(args: &mut Map, name: &str, at: &str) -> Result<T, ArgError> {
    let at = path(at, name);
    match args.remove(name) {
        Some(value) => T::from_value(value, &at),
        None => T::absent(&at),
    }
}

/// Takes the argument `name`, refusing its absence even where its type has an empty value
/// (`#[arg(required)]` on a list).
pub fn take_required<T: ArgType>(args: &mut Map, name: &str, at: &str) -> Result<T, ArgError> {
    let at = path(at, name);
    match args.remove(name) {
        Some(value) => T::from_value(value, &at),
        None => Err(ArgError::new(&at, "is required")),
    }
}

/// Takes the argument `name`, or `default()` when it is absent.
pub fn take_or<T: ArgType>(
    args: &mut Map,
    name: &str,
    at: &str,
    default: impl FnOnce() -> T,
) -> Result<T, ArgError> {
    let at = path(at, name);
    match args.remove(name) {
        Some(value) => T::from_value(value, &at),
        None => Ok(default()),
    }
}

/// A keyword's value in a schema (what the derive emits for `#[arg(min = 1)]`).
pub fn json(value: impl Into<Value>) -> Value {
    value.into()
}

/// The schema of a string enum.
pub fn string_enum(values: &[&str]) -> Value {
    serde_json::json!({"type": "string", "enum": values})
}

/// The index of a string enum's value.
pub fn enum_index(value: &Value, values: &[&str], at: &str) -> Result<usize, ArgError> {
    value
        .as_str()
        .and_then(|s| values.iter().position(|v| *v == s))
        .ok_or_else(|| ArgError::new(at, format!("{value} is not one of {}", values.join(", "))))
}

/// Reads a nested arguments object (an item of `entries`, say).
pub fn object_from_value<T: ToolArgs>(value: Value, at: &str) -> Result<T, ArgError> {
    match value {
        Value::Object(mut map) => T::parse_at(&mut map, at),
        other => Err(ArgError::new(
            at,
            format!("expected an object, got {other}"),
        )),
    }
}

fn typed(kind: &str) -> Value {
    serde_json::json!({ "type": kind })
}

impl ArgType for String {
    fn schema() -> Value {
        typed("string")
    }

    fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
        match value {
            Value::String(s) => Ok(s),
            other => Err(ArgError::new(at, format!("expected a string, got {other}"))),
        }
    }
}

impl ArgType for bool {
    fn schema() -> Value {
        typed("boolean")
    }

    fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
        value
            .as_bool()
            .ok_or_else(|| ArgError::new(at, format!("expected a boolean, got {value}")))
    }
}

impl ArgType for f64 {
    fn schema() -> Value {
        typed("number")
    }

    fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
        value
            .as_f64()
            .ok_or_else(|| ArgError::new(at, format!("expected a number, got {value}")))
    }
}

macro_rules! integers {
    ($($ty:ty => $min:expr),*) => {$(
        impl ArgType for $ty {
            fn schema() -> Value {
                match $min {
                    Some(min) => serde_json::json!({"type": "integer", "minimum": min}),
                    None => typed("integer"),
                }
            }

            fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
                value
                    .as_i64()
                    .map(i128::from)
                    .or_else(|| value.as_u64().map(i128::from))
                    .and_then(|n| <$ty>::try_from(n).ok())
                    .ok_or_else(|| ArgError::new(
                        at,
                        format!("expected an integer within {}..={}, got {value}", <$ty>::MIN, <$ty>::MAX),
                    ))
            }
        }
    )*};
}

integers!(u64 => Some(0), u32 => Some(0), usize => Some(0), i64 => None::<i64>, i32 => None::<i64>);

impl<T: ArgType> ArgType for Option<T> {
    fn schema() -> Value {
        T::schema()
    }

    fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
        T::from_value(value, at).map(Some)
    }

    fn absent(_: &str) -> Result<Self, ArgError> {
        Ok(None)
    }

    const OPTIONAL: bool = true;
}

/// A list; an absent list is empty unless the field says `#[arg(required)]`.
impl<T: ArgType> ArgType for Vec<T> {
    fn schema() -> Value {
        serde_json::json!({"type": "array", "items": T::schema()})
    }

    fn absent(_: &str) -> Result<Self, ArgError> {
        Ok(Vec::new())
    }

    const OPTIONAL: bool = true;

    fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
        match value {
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| T::from_value(item, &format!("{at}[{i}]")))
                .collect(),
            other => Err(ArgError::new(at, format!("expected an array, got {other}"))),
        }
    }
}

/// A free-form object (`front_matter`, `metadata`): any keys, any values, order kept.
/// A patch field where `""` clears the value: `Option<Clearable<T>>` is "leave it", "clear
/// it" or "set it to a valid `T`". Its schema is a string's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clearable<T> {
    Clear,
    Set(T),
}

impl<T: ArgType> ArgType for Clearable<T> {
    fn schema() -> Value {
        String::schema()
    }

    fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
        match value {
            Value::String(s) if s.is_empty() => Ok(Self::Clear),
            other => T::from_value(other, at).map(Self::Set),
        }
    }
}

impl<T> Clearable<T> {
    /// The new value: `None` to clear it.
    pub fn value(&self) -> Option<&T> {
        match self {
            Self::Clear => None,
            Self::Set(v) => Some(v),
        }
    }
}

impl ArgType for Map {
    fn schema() -> Value {
        typed("object")
    }

    fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
        match value {
            Value::Object(map) => Ok(map),
            other => Err(ArgError::new(
                at,
                format!("expected an object, got {other}"),
            )),
        }
    }
}

/// An object of string values (`env`).
impl ArgType for BTreeMap<String, String> {
    fn schema() -> Value {
        serde_json::json!({"type": "object"})
    }

    fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
        Map::from_value(value, at)?
            .into_iter()
            .map(|(k, v)| {
                let at = format!("{at}.{k}");
                String::from_value(v, &at).map(|v| (k, v))
            })
            .collect()
    }
}

/// A scalar of any JSON type but null (an SQL parameter, a front-matter value).
#[derive(Debug, Clone, PartialEq)]
pub struct Scalar(pub Value);

impl ArgType for Scalar {
    fn schema() -> Value {
        serde_json::json!({"type": ["string", "number", "boolean"]})
    }

    fn from_value(value: Value, at: &str) -> Result<Self, ArgError> {
        match value {
            Value::String(_) | Value::Number(_) | Value::Bool(_) => Ok(Self(value)),
            other => Err(ArgError::new(
                at,
                format!("expected a string, number or boolean, got {other}"),
            )),
        }
    }
}

/// Defines string argument types checked by a rule while the arguments are parsed: each
/// `Name => check;` makes `pub struct Name(pub String)` whose value passed
/// `check(argument_name, value)` (a `fn(&str, &str) -> Result<(), ToolError>`, such as the
/// [`rules`](crate::rules)), so a handler only ever sees valid values and a wrong one is refused,
/// named, before it runs.
///
/// ```ignore
/// coremcp_plugin_sdk::checked_string! {
///     /// A display name: readable text of at most 200 characters.
///     Name => |at, v| coremcp_plugin_sdk::rules::text(at, v, 200);
/// }
/// ```
#[macro_export]
macro_rules! checked_string {
    ($($(#[$doc:meta])* $name:ident => $check:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name(pub String);

        impl $crate::args::ArgType for $name {
            fn schema() -> $crate::__private::serde_json::Value {
                <String as $crate::args::ArgType>::schema()
            }

            fn from_value(
                value: $crate::__private::serde_json::Value,
                at: &str,
            ) -> Result<Self, $crate::args::ArgError> {
                let text = <String as $crate::args::ArgType>::from_value(value, at)?;
                let check: fn(&str, &str) -> Result<(), $crate::ToolError> = $check;
                check(at, &text).map_err(|e| $crate::args::ArgError::refused(at, e))?;
                Ok(Self(text))
            }
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
    )*};
}
