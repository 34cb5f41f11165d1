//! The repository keeps itself readable: every path ARCHITECTURE.md names exists, no comment
//! cites a document outside the repository (the design notes it was built from are not
//! shipped), and every Rust module opens with a doc comment saying what it is for.

use std::path::{Path, PathBuf};

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_owned()
}

/// The repository's files git knows, relative (no build output, no scratch).
fn tracked() -> Vec<String> {
    #[allow(clippy::disallowed_methods)] // Reads the index only; runs no repository code.
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(repository())
        .output()
        .expect("git ls-files");
    assert!(out.status.success(), "git ls-files failed");
    String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The folders at the top of the repository that ARCHITECTURE.md's paths start from.
const TOP: [&str; 8] = [
    "host/",
    "plugins/",
    "plugin-api/",
    "spawn/",
    "tests/",
    "scripts/",
    "docs/",
    "deploy/",
];

#[test]
fn every_path_architecture_names_exists() {
    let root = repository();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut missing = Vec::new();
    for quoted in text.split('`').skip(1).step_by(2) {
        let path = quoted.trim_end_matches('/');
        let is_path = TOP.iter().any(|top| quoted.starts_with(top))
            && !quoted.contains(['<', '>', '*', ' ', '…']);
        if is_path && !root.join(path).exists() {
            missing.push(quoted.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn no_comment_cites_a_document_outside_the_repository() {
    let root = repository();
    // The design notes the product was built from live beside the repository, not in it.
    let outside = ["DESIGN.md", "TOOLS.md", "STYLE.md", "../shared/"];
    let mut cited = Vec::new();
    for file in tracked().iter().filter(|f| f.ends_with(".rs")) {
        let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let comment = line
                .find("//")
                .map(|at| &line[at..])
                .filter(|c| !c.starts_with("//\"") && !c.starts_with("///\""));
            if let Some(comment) = comment {
                if outside.iter().any(|doc| comment.contains(doc)) {
                    cited.push(format!("{file}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        cited.is_empty(),
        "comments cite documents outside the repository:\n{}",
        cited.join("\n")
    );
}

#[test]
fn every_rust_module_opens_with_a_doc_comment() {
    let root = repository();
    let files: Vec<String> = tracked()
        .into_iter()
        .filter(|f| f.ends_with(".rs"))
        .collect();
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(root.join(f)).unwrap_or_default())
        .collect();
    // Files brought into a module with include! cannot hold an inner doc comment.
    let included: Vec<&str> = texts
        .iter()
        .flat_map(|t| t.split("include!(\"").skip(1))
        .filter_map(|rest| rest.split('"').next())
        .filter_map(|target| target.rsplit('/').next())
        .collect();
    let undocumented: Vec<&String> = files
        .iter()
        .zip(&texts)
        .filter(|(f, _)| {
            let name = Path::new(f.as_str()).file_name().and_then(|n| n.to_str());
            !name.is_some_and(|n| included.contains(&n))
        })
        .filter(|(_, text)| !text.trim_start().starts_with("//!"))
        .map(|(f, _)| f)
        .collect();
    assert!(
        undocumented.is_empty(),
        "modules without an opening doc comment (//! what it is for): {undocumented:?}"
    );
}

/// The performance page `scripts/bench --goals --write docs/performance.md` writes is well
/// formed and linked from the README: what it measured on, when and at which commit, and one
/// row per figure with its median, its goal and whether it holds. (Not whether the machine
/// was fast: the page records what a run found.)
#[test]
fn the_performance_page_is_well_formed_and_linked() {
    let root = repository();
    let page =
        std::fs::read_to_string(root.join("docs/performance.md")).expect("docs/performance.md");
    for field in ["- Machine: ", "- Date: ", "- Commit: ", "- Method: "] {
        let line = page
            .lines()
            .find(|l| l.starts_with(field))
            .unwrap_or_else(|| panic!("no {field:?} line"));
        assert!(line.len() > field.len() + 3, "{line}");
        assert!(!line.contains("unknown"), "{line}");
    }
    let header =
        "| Figure | Median | Goal | Holds | Rounds | Baseline and figures of the last round |";
    let rows: Vec<&str> = page
        .lines()
        .skip_while(|l| *l != header)
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(rows.len() >= 10, "a row per figure: {rows:?}");
    for row in &rows {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 6, "{row}");
        let median = cells[1];
        assert!(
            median == "not run"
                || median
                    .trim_end_matches(|c: char| c.is_alphabetic() || c == ' ')
                    .parse::<f64>()
                    .is_ok(),
            "{row}"
        );
        assert!(
            cells[2].starts_with("<= ") || cells[2].starts_with(">= "),
            "{row}"
        );
        assert!(["yes", "NO", "-"].contains(&cells[3]), "{row}");
    }
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README");
    assert!(
        readme.contains("(docs/performance.md)"),
        "the README links the page"
    );
}
