//! The table a group is: its tools, each a typed handler, with the catalog entry that says
//! where it runs.
//!
//! Invariants: a tool's schema and its parsing come from one argument type ([`Typed`]); a
//! handler only ever sees arguments that passed the schema; `runs`, `remote_host` and the
//! open-world hint are the catalog's, never restated here.

use serde_json::Value;

use crate::args::{Map, ToolArgs};
use crate::export::Ctx;
use crate::{Annotations, ToolError};

/// One group: the catalog entry it implements, its version and its tools in catalog order.
pub struct Group {
    pub catalog: &'static coremcp_catalog::Group,
    /// The plugin's own version.
    pub version: &'static str,
    pub tools: &'static [Tool],
    /// Entries the host calls on the group's behalf, never listed: not in the manifest, so no
    /// client sees them in `tools/list` (the Session group's recording write, which the host
    /// runs for Ops `session_record`). They are checked and run like tools.
    pub internal: &'static [Tool],
    /// Runs once when the host initialises the plugin (after the host callbacks are set); an
    /// error refuses the plugin with that message.
    pub init: Option<fn() -> Result<(), ToolError>>,
}

impl Group {
    pub const fn new(
        catalog: &'static coremcp_catalog::Group,
        version: &'static str,
        tools: &'static [Tool],
    ) -> Self {
        Self {
            catalog,
            version,
            tools,
            internal: &[],
            init: None,
        }
    }

    /// Adds the unlisted entries the host calls (see [`Group::internal`]).
    pub const fn internal(mut self, internal: &'static [Tool]) -> Self {
        self.internal = internal;
        self
    }

    /// Runs `init` when the host initialises the plugin.
    pub const fn init(mut self, init: fn() -> Result<(), ToolError>) -> Self {
        self.init = Some(init);
        self
    }

    pub fn id(&self) -> &'static str {
        self.catalog.id
    }

    /// The tool or internal entry called `name`.
    pub fn tool(&self, name: &str) -> Option<&'static Tool> {
        self.entries().find(|t| t.name == name)
    }

    /// The tools, then the internal entries: the order of [`crate::export`]'s schemas.
    pub fn entries(&self) -> impl Iterator<Item = &'static Tool> {
        let (tools, internal): (&'static [Tool], &'static [Tool]) = (self.tools, self.internal);
        tools.iter().chain(internal)
    }
}

/// Runs one tool: its schema, and the call that reads the arguments into the typed value.
pub trait Handler: Sync {
    /// The closed object schema of the arguments.
    fn schema(&self) -> Value;

    /// Reads `args` (already checked against [`Handler::schema`]) and runs the tool.
    fn call(&self, ctx: &Ctx<'_>, args: Map) -> Result<Value, ToolError>;
}

/// A handler function over one typed argument struct.
pub struct Typed<A>(fn(&Ctx<'_>, A) -> Result<Value, ToolError>);

/// Wraps a handler `fn(&Ctx, Args) -> Result<Value, ToolError>` for a [`Tool`].
pub const fn typed<A: ToolArgs>(run: fn(&Ctx<'_>, A) -> Result<Value, ToolError>) -> Typed<A> {
    Typed(run)
}

impl<A: ToolArgs> Handler for Typed<A> {
    fn schema(&self) -> Value {
        A::schema()
    }

    fn call(&self, ctx: &Ctx<'_>, args: Map) -> Result<Value, ToolError> {
        (self.0)(ctx, A::parse(args)?)
    }
}

/// The behaviour hints of a tool (docs/tools.md, "hints"); the open-world hint comes from the
/// catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
}

impl Hints {
    /// `no`: reads only.
    pub const READ: Self = Self::new(true, false, true);
    /// `yes`: an additive write.
    pub const ADD: Self = Self::new(false, false, false);
    /// `yes·idem`: repeating it changes nothing more.
    pub const IDEMPOTENT: Self = Self::new(false, false, true);
    /// `yes·destr`: may remove or overwrite data.
    pub const DESTRUCTIVE: Self = Self::new(false, true, false);
    /// Removes or overwrites data, and repeating it changes nothing more (a delete).
    pub const DESTRUCTIVE_IDEMPOTENT: Self = Self::new(false, true, true);

    const fn new(read_only: bool, destructive: bool, idempotent: bool) -> Self {
        Self {
            read_only,
            destructive,
            idempotent,
        }
    }

    /// The MCP annotations, with the catalog's open-world hint.
    pub fn annotations(self, open_world: bool) -> Annotations {
        Annotations {
            read_only_hint: Some(self.read_only),
            destructive_hint: Some(self.destructive),
            idempotent_hint: Some(self.idempotent),
            open_world_hint: Some(open_world),
        }
    }
}

/// One tool of a group (a few references and flags: copying one is cheap, and lets a table be
/// assembled in a `const fn`).
#[derive(Clone, Copy)]
pub struct Tool {
    pub name: &'static str,
    pub description: &'static str,
    pub hints: Hints,
    /// For a tool the catalog builds behind a cargo feature: whether this build has it
    /// (`cfg!(feature = "…")`).
    pub built: bool,
    pub handler: &'static dyn Handler,
}

impl Tool {
    /// A read-only tool; say otherwise with [`Tool::hints`].
    pub const fn new(
        name: &'static str,
        description: &'static str,
        handler: &'static dyn Handler,
    ) -> Self {
        Self {
            name,
            description,
            hints: Hints::READ,
            built: true,
            handler,
        }
    }

    /// A tool whose description is the doc comment of its argument struct, so the one type
    /// says what the tool does and what it takes.
    pub const fn typed<A: ToolArgs>(name: &'static str, handler: &'static Typed<A>) -> Self {
        Self::new(name, A::DESCRIPTION, handler)
    }

    pub const fn hints(mut self, hints: Hints) -> Self {
        self.hints = hints;
        self
    }

    /// Whether this build has the cargo feature the catalog puts the tool behind.
    pub const fn built(mut self, built: bool) -> Self {
        self.built = built;
        self
    }
}
