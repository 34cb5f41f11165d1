//! The result budget of a session: how many characters one tool result may hand the model.
//!
//! It follows the client: Codex keeps only the first and last part of an answer longer than
//! about 12 000 characters and drops the middle without a word, so a Codex session
//! (`clientInfo.name` `codex-mcp-client`) gets [`CODEX`]; every other client gets [`DEFAULT`].
//! An operator may set one budget for every session of a process (`--result-budget`), and a
//! call passed on by another Core MCP carries its session's budget, which only lowers this
//! one's.
//!
//! Invariants: a budget is always within [`MIN`]..=[`MAX`], so a tool's fixed parts (a page's
//! cursor, the counts beside a sample) always fit; the default is the largest, which every
//! built-in tool was sized for.

use crate::mcp::MAX_RESULT_CHARS;

/// The largest budget: what every session gets unless its client or the operator asks less.
pub const MAX: usize = MAX_RESULT_CHARS;
/// The budget of a client that keeps whole answers of [`MAX`] characters.
pub const DEFAULT: usize = MAX;
/// The smallest budget a session may be given.
pub const MIN: usize = 4_000;
/// Codex's budget: it drops the middle of a longer answer.
pub const CODEX: usize = 10_000;

/// The `clientInfo.name` of each client whose budget is not [`DEFAULT`], with its budget.
const BY_CLIENT: &[(&str, usize)] = &[("codex-mcp-client", CODEX)];
/// The tool `_meta` key in which Claude Code reads how long a tool's results may be before it
/// writes one to a file instead of showing it.
pub const RESULT_SIZE_KEY: &str = "anthropic/maxResultSizeChars";
/// The clients that read [`RESULT_SIZE_KEY`] (a key the others would only carry for nothing).
const READS_RESULT_SIZE: &[&str] = &["claude-code"];

/// Whether the tools listed to `client` declare their result size ([`RESULT_SIZE_KEY`]).
pub fn declares_result_size(client: Option<&str>) -> bool {
    client.is_some_and(|c| READS_RESULT_SIZE.contains(&crate::client_name::without_version(c)))
}

/// The budget of a session whose client introduced itself as `client` ("name version", as
/// [`crate::client_name::label`] keeps it), unless `configured` (the operator's) says one.
pub fn for_session(configured: Option<usize>, client: Option<&str>) -> usize {
    if let Some(budget) = configured {
        return budget.clamp(MIN, MAX);
    }
    let name = client.map(crate::client_name::without_version);
    BY_CLIENT
        .iter()
        .find(|(known, _)| Some(*known) == name)
        .map_or(DEFAULT, |(_, budget)| *budget)
}

/// Why a configured budget was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a result budget is a number of characters from {MIN} to {MAX}, got {given:?}")]
pub struct BudgetError {
    pub given: String,
}

/// A budget as an operator writes it (`--result-budget 12000`).
pub fn parse(text: &str) -> Result<usize, BudgetError> {
    text.trim()
        .replace('_', "")
        .parse::<usize>()
        .ok()
        .filter(|n| (MIN..=MAX).contains(n))
        .ok_or_else(|| BudgetError {
            given: text.to_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_follows_the_client_unless_the_operator_says() {
        assert_eq!(for_session(None, Some("codex-mcp-client 0.63.0")), CODEX);
        assert_eq!(for_session(None, Some("codex-mcp-client")), CODEX);
        assert_eq!(for_session(None, Some("claude-code 2.1.3")), DEFAULT);
        assert_eq!(for_session(None, None), DEFAULT);
        // A name that only starts like Codex's is another client.
        assert_eq!(for_session(None, Some("codex-mcp-client-fork 1")), DEFAULT);
        // The operator's budget wins for every client, within the bounds.
        assert_eq!(
            for_session(Some(12_000), Some("codex-mcp-client 1")),
            12_000
        );
        assert_eq!(for_session(Some(1), None), MIN);
        assert_eq!(for_session(Some(usize::MAX), None), MAX);
    }

    #[test]
    fn only_claude_code_is_told_the_result_size() {
        assert!(declares_result_size(Some("claude-code 2.1.337")));
        assert!(!declares_result_size(Some("codex-mcp-client 0.63.0")));
        assert!(!declares_result_size(None));
    }

    #[test]
    fn an_operator_writes_a_budget_in_characters() {
        assert_eq!(parse("12000"), Ok(12_000));
        assert_eq!(parse(" 10_000 "), Ok(10_000));
        assert_eq!(parse("4000"), Ok(MIN));
        assert_eq!(parse("20000"), Ok(MAX));
        for bad in ["3999", "20001", "", "ten", "-1", "1e4"] {
            let e = parse(bad).expect_err(bad);
            assert!(e.to_string().contains("from 4000 to 20000"), "{e}");
        }
    }
}
