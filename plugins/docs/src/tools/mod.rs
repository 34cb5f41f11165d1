//! One module per tool of the group, each exporting its table entry as `TOOL`.

pub mod docs_read;
pub mod docs_write;

#[cfg(any(feature = "docs-read", feature = "docs-write"))]
pub(crate) use shared::*;

/// What both tools need: recognising Markdown paths and reading documents.
#[cfg(any(feature = "docs-read", feature = "docs-write"))]
mod shared {
    use std::fs;
    use std::io;
    use std::path::Path;

    use coremcp_plugin_sdk::codes;
    use coremcp_plugin_sdk::ToolError;

    /// Whether a path names a Markdown document (`.md`, any case).
    pub fn is_markdown(path: &Path) -> bool {
        path.extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md"))
    }

    /// A document's text; `shown` names it in errors.
    pub fn read_text(path: &Path, shown: &str) -> Result<String, ToolError> {
        let bytes = fs::read(path).map_err(|e| io_error(shown, &e))?;
        String::from_utf8(bytes).map_err(|_| {
            ToolError::new(
                codes::FAILED,
                format!("{shown}: the document is not UTF-8 text"),
            )
        })
    }

    /// An I/O error on `shown`: `not_found` when it does not exist, else `failed`.
    pub fn io_error(shown: &str, err: &io::Error) -> ToolError {
        let code = if err.kind() == io::ErrorKind::NotFound {
            codes::NOT_FOUND
        } else {
            codes::FAILED
        };
        ToolError::new(code, format!("{shown}: {err}"))
    }
}

/// The arguments that choose a repository, shared by the docs tools (`#[arg(flatten)]`).
#[derive(Debug, Clone, coremcp_plugin_sdk::Args)]
#[cfg_attr(
    not(any(feature = "docs-read", feature = "docs-write")),
    allow(dead_code)
)]
pub struct Choice {
    /// name, or docs source PROJECT/name (default first)
    pub repo: Option<String>,
    /// Registry project key (its docs source)
    pub project: Option<String>,
}
