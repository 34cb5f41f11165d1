//! The bridge for tools not yet moved to typed arguments: a schema written as JSON text and a
//! handler that reads the arguments by name. Every tool is to move to `#[derive(Args)]`; this
//! module goes when the last one has (the groups that still use it are listed in
//! ARCHITECTURE.md). New tools never use it.

use serde_json::{Map, Value};

use crate::export::Ctx;
use crate::group::{Handler, Hints};
use crate::{codes, Annotations, ToolError};

/// A handler over untyped arguments.
pub type Run = fn(&Ctx<'_>, Args) -> Result<Value, ToolError>;

/// A tool whose schema is JSON text and whose handler reads [`Args`].
pub struct Untyped {
    schema: &'static str,
    run: Run,
}

impl Untyped {
    pub const fn new(schema: &'static str, run: Run) -> Self {
        Self { schema, run }
    }
}

impl Handler for Untyped {
    /// The parsed schema; text that is not JSON gives `null`, which the schema check refuses
    /// (so such a plugin never loads).
    fn schema(&self) -> Value {
        serde_json::from_str(self.schema).unwrap_or(Value::Null)
    }

    fn call(&self, ctx: &Ctx<'_>, args: Map<String, Value>) -> Result<Value, ToolError> {
        (self.run)(ctx, Args(args))
    }
}

impl Hints {
    /// The hints of a tool described by MCP annotations (an unset hint is `false`).
    pub const fn of(annotations: Annotations) -> Self {
        const fn set(hint: Option<bool>) -> bool {
            matches!(hint, Some(true))
        }
        Self {
            read_only: set(annotations.read_only_hint),
            destructive: set(annotations.destructive_hint),
            idempotent: set(annotations.idempotent_hint),
        }
    }
}

/// A tool's arguments, already checked against its schema, read by name.
#[derive(Debug, Clone, Default)]
pub struct Args(pub Map<String, Value>);

impl Args {
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    fn wrong(name: &str, expected: &str) -> ToolError {
        ToolError::new(
            codes::INVALID_ARGUMENTS,
            format!("argument \"{name}\" must be {expected}"),
        )
    }

    /// A required string argument.
    pub fn str(&self, name: &str) -> Result<&str, ToolError> {
        self.opt_str(name)?.ok_or_else(|| {
            ToolError::new(
                codes::INVALID_ARGUMENTS,
                format!("missing required argument \"{name}\""),
            )
        })
    }

    /// An optional string argument.
    pub fn opt_str(&self, name: &str) -> Result<Option<&str>, ToolError> {
        self.get(name)
            .map(|v| v.as_str().ok_or_else(|| Self::wrong(name, "a string")))
            .transpose()
    }

    /// A list of strings (a missing argument is an empty list).
    pub fn str_list(&self, name: &str) -> Result<Vec<&str>, ToolError> {
        let Some(value) = self.get(name) else {
            return Ok(Vec::new());
        };
        let items = value
            .as_array()
            .ok_or_else(|| Self::wrong(name, "an array of strings"))?;
        items
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| Self::wrong(name, "an array of strings"))
            })
            .collect()
    }

    /// An optional non-negative integer argument.
    pub fn opt_u64(&self, name: &str) -> Result<Option<u64>, ToolError> {
        self.get(name)
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| Self::wrong(name, "a non-negative integer"))
            })
            .transpose()
    }

    /// An optional boolean argument.
    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>, ToolError> {
        self.get(name)
            .map(|v| v.as_bool().ok_or_else(|| Self::wrong(name, "a boolean")))
            .transpose()
    }

    /// The arguments as one JSON object.
    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }
}
