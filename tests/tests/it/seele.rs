//! The Seele group through the real `coremcp` binary, on both stores (a fresh SQLite and a
//! fresh PostgreSQL database), with the same assertions: a write, an update and a revision
//! read back; one search corpus ranked the same on both; an import of 200 nodes twice, whose
//! second run changes nothing; and a process killed in the middle of an import, which leaves
//! all of it or none.

use coremcp_tests::plugins;
use coremcp_tests::stores::on_both;
use serde_json::{json, Value};

fn paths(v: &Value) -> Vec<String> {
    let items = v["items"].as_array().expect("items");
    items
        .iter()
        .map(|i| i["path"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// 200 nodes of about 2 KB under `root`, each with `word` in it.
fn nodes(word: &str) -> Vec<Value> {
    (0..200)
        .map(|i| {
            let body = format!("# Page {i}\n{word} {}", "lorem ipsum dolor sit amet ".repeat(70));
            json!({"path": format!("section-{}/page-{i}.md", i % 10), "body": body, "tags": ["imported"]})
        })
        .collect()
}

#[test]
fn write_read_search_and_import_on_both_stores() {
    let dir = plugins(&["seele"]);
    on_both("seele-walk", |env| {
        let mut s = env.start(dir.path(), &[]);
        let node = s.ok(
            "seele_write",
            json!({"path": "core/relays", "title": "Relays", "body": "Relays fail over.", "project": "CORE"}),
        );
        let id = node["id"].as_str().expect("id").to_owned();
        s.ok(
            "seele_write",
            json!({"id": id, "body": "Relays fail over twice.", "expected_version": 1}),
        );
        let old = s.ok("seele_read", json!({"id": id, "version": 1}));
        assert_eq!(old["body"], "Relays fail over.");

        // The same corpus ranks the same on both stores (bm25 and ts_rank agree where the word
        // is more frequent in the shorter text).
        let filler = "plain words about nothing in particular ".repeat(30);
        for (path, body) in [
            (
                "rank/often",
                format!("quorum quorum quorum quorum. {filler}"),
            ),
            (
                "rank/twice",
                format!("quorum and quorum. {filler} {filler}"),
            ),
            ("rank/once", format!("{filler} quorum {filler} {filler}")),
            ("rank/never", filler.clone()),
        ] {
            s.ok(
                "seele_write",
                json!({"path": path, "title": path, "body": body}),
            );
        }
        let found = s.ok("seele_search", json!({"query": "quorum"}));
        assert_eq!(paths(&found), ["rank/often", "rank/twice", "rank/once"]);

        let first = s.ok("seele_import", json!({"nodes": nodes("needle"), "root_path": "handbook", "source_ref": "CORE/handbook@1a2b3c"}));
        assert_eq!(
            (first["created"].clone(), first["unchanged"].clone()),
            (json!(200), json!(0))
        );
        let revisions = || env.query("seele", "SELECT COUNT(*) FROM seele_revision")[0][0].clone();
        let before = revisions();
        let second = s.ok("seele_import", json!({"nodes": nodes("needle"), "root_path": "handbook", "source_ref": "CORE/handbook@1a2b3c"}));
        assert_eq!(
            (
                second["created"].clone(),
                second["updated"].clone(),
                second["unchanged"].clone()
            ),
            (json!(0), json!(0), json!(200))
        );
        assert_eq!(
            revisions(),
            before,
            "an unchanged import writes no revision"
        );
        let hits = s.ok(
            "seele_search",
            json!({"query": "needle", "path_prefix": "handbook/section-3", "limit": 50}),
        );
        assert_eq!(hits["items"].as_array().map(Vec::len), Some(20));
    });
}

/// A process killed while it imports 200 nodes leaves the store with all of them or none:
/// kills land at spread fractions of the time a whole import took.
#[test]
fn a_kill_during_an_import_leaves_all_or_none() {
    use std::time::Instant;
    const RUNS: usize = 5;
    let dir = plugins(&["seele"]);
    on_both("seele-kill", |env| {
        let mut setup = env.start(dir.path(), &[]);
        let started = Instant::now();
        let done = setup.ok(
            "seele_import",
            json!({"nodes": nodes("timed"), "root_path": "timed"}),
        );
        let whole = started.elapsed();
        assert_eq!(done["created"], 200);
        drop(setup);
        let mut whole_runs = 0;
        for run in 1..RUNS {
            let mut victim = env.start(dir.path(), &[]);
            // Warm: the plugin loaded and the store open, so the import starts at once.
            victim.ok("seele_search", json!({"query": "timed", "limit": 1}));
            let root = format!("run-{run}");
            victim.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "seele_import",
                           "arguments": {"nodes": nodes("killed"), "root_path": root}}}));
            std::thread::sleep(whole.mul_f64(run as f64 / RUNS as f64));
            victim.signal(libc::SIGKILL);
            drop(victim);
            let count = env.query(
                "seele",
                &format!("SELECT COUNT(*) FROM seele_node WHERE path LIKE '{root}/%/%'"),
            );
            let count = count[0][0].as_deref().unwrap_or("");
            assert!(
                count == "0" || count == "200",
                "{root}: {count} of 200 nodes after the kill"
            );
            whole_runs += usize::from(count == "200");
        }
        eprintln!(
            "seele-kill: {whole_runs} of {} imports landed whole (one took {whole:?})",
            RUNS - 1
        );
        let mut after = env.start(dir.path(), &[]);
        let again = after.ok(
            "seele_import",
            json!({"nodes": nodes("timed"), "root_path": "timed"}),
        );
        assert_eq!(again["unchanged"], 200);
    });
}

#[test]
fn search_finds_word_forms_and_the_last_word_as_a_prefix_on_both_stores() {
    let dir = plugins(&["seele"]);
    on_both("seele-forms", |env| {
        let mut s = env.start(dir.path(), &[]);
        for (path, title, body) in [
            ("ops/relays", "Relays", "How the relays fail over."),
            ("ops/handbook", "Handbook", "Start here."),
            ("ops/relay-drill", "Relay drill", "Practise it."),
        ] {
            s.ok(
                "seele_write",
                json!({"path": path, "title": title, "body": body}),
            );
        }
        let found = |s: &mut coremcp_tests::Server, query: &str| {
            paths(&s.ok("seele_search", json!({"query": query})))
        };
        // "relay" as typed ranks first; "Relays" matches through its form.
        assert_eq!(found(&mut s, "relay"), ["ops/relay-drill", "ops/relays"]);
        assert_eq!(found(&mut s, "relays"), ["ops/relays", "ops/relay-drill"]);
        assert_eq!(found(&mut s, "hand"), ["ops/handbook"]);
        assert_eq!(found(&mut s, "relay fail"), ["ops/relays"]);
        assert!(found(&mut s, "handbooks drill").is_empty());
    });
}

#[test]
fn partial_edits_keep_what_they_leave_out_and_links_follow_moves_on_both_stores() {
    let dir = plugins(&["seele"]);
    on_both("seele-partial", |env| {
        let mut s = env.start(dir.path(), &[]);
        let target = s.ok(
            "seele_write",
            json!({"path": "ops/relays", "title": "Relays", "body": "How relays work."}),
        );
        s.ok(
            "seele_write",
            json!({"path": "ops/relays/failover", "title": "Failover", "body": "Steps."}),
        );
        let linking = s.ok(
            "seele_write",
            json!({"path": "guide", "title": "Guide",
                   "body": "See [relays](ops/relays) and [failover](ops/relays/failover)."}),
        );
        // A title-only change keeps the body; a move by path needs no body either.
        s.ok(
            "seele_write",
            json!({"id": target["id"], "title": "Relays, renamed"}),
        );
        s.ok(
            "seele_write",
            json!({"id": target["id"], "path": "platform/relays"}),
        );
        let read = s.ok("seele_read", json!({"id": target["id"]}));
        assert_eq!(read["title"], "Relays, renamed");
        assert_eq!(read["body"], "How relays work.");
        assert_eq!(read["path"], "platform/relays");
        // An empty body empties a node only when asked to.
        let refused = s.refused("seele_write", json!({"id": target["id"], "body": ""}));
        assert!(
            refused.contains("\"body\"") && refused.contains("clear_body"),
            "{refused}"
        );
        s.ok(
            "seele_write",
            json!({"id": target["id"], "body": "", "clear_body": true}),
        );
        assert_eq!(s.ok("seele_read", json!({"id": target["id"]}))["body"], "");
        // The guide's links moved with the subtree and still resolve to the nodes.
        let guide = s.ok("seele_read", json!({"id": linking["id"]}));
        let links: Vec<(String, bool)> = guide["links"]
            .as_array()
            .expect("links")
            .iter()
            .map(|l| {
                (
                    l["path"].as_str().unwrap_or("").to_owned(),
                    l.get("id").is_some(),
                )
            })
            .collect();
        assert_eq!(
            links,
            [
                ("platform/relays".to_owned(), true),
                ("platform/relays/failover".to_owned(), true)
            ]
        );
        // The guide is edited later: its links are read again from its body, which still
        // names the old paths, and still lead to the moved nodes.
        s.ok(
            "seele_write",
            json!({"id": linking["id"], "title": "Guide, edited"}),
        );
        let guide = s.ok("seele_read", json!({"id": linking["id"]}));
        let resolved: Vec<(String, String)> = guide["links"]
            .as_array()
            .expect("links")
            .iter()
            .map(|l| {
                (
                    l["path"].as_str().unwrap_or("").to_owned(),
                    l["id"].as_str().unwrap_or("-").to_owned(),
                )
            })
            .collect();
        assert_eq!(resolved.len(), 2, "{guide}");
        assert_eq!(
            resolved[0],
            (
                "platform/relays".to_owned(),
                target["id"].as_str().unwrap_or("").to_owned()
            )
        );
        assert_eq!(resolved[1].0, "platform/relays/failover");
        assert_ne!(resolved[1].1, "-");
        let two_lines = s.refused(
            "seele_write",
            json!({"id": target["id"], "title": "Relays\nand more"}),
        );
        assert!(
            two_lines.contains("\"title\"") && two_lines.contains("one line"),
            "{two_lines}"
        );
        // An import needs its nodes.
        for args in [json!({}), json!({"nodes": []})] {
            let err = s.refused("seele_import", args);
            assert!(err.contains("\"nodes\""), "{err}");
        }
    });
}

/// `seele_import`'s documented limits fit inside the transport's: an import at its limit (4 MB
/// of bodies) is one request under the 8 MB line limit and is taken; one over it is refused
/// naming the limit and what to do, before the store is touched.
#[test]
fn an_import_at_its_limit_fits_one_line_and_one_over_it_is_refused_on_both_stores() {
    let dir = plugins(&["seele"]);
    on_both("seele-import-limit", |env| {
        let mut s = env.start(dir.path(), &[]);
        let doc = |i: usize, chars: usize| json!({"path": format!("d{i:03}"), "body": format!("# Doc {i}\n{}", "w".repeat(chars))});
        // 20 documents of about 199 990 bytes each: just under 4 MB in all.
        let at_limit: Vec<Value> = (0..20).map(|i| doc(i, 199_980)).collect();
        let request = json!({"nodes": at_limit, "root_path": "big", "dry_run": true}).to_string();
        assert!(request.len() < 8 * 1024 * 1024, "{}", request.len());
        let taken = s.ok(
            "seele_import",
            json!({"nodes": at_limit, "root_path": "big"}),
        );
        assert_eq!(taken["created"], 20, "{taken}");
        let over: Vec<Value> = (0..21).map(|i| doc(i, 199_980)).collect();
        let refused = s.refused(
            "seele_import",
            json!({"nodes": over, "root_path": "bigger"}),
        );
        assert!(
            refused.contains("at most 4000000 (4 MB)") && refused.contains("several calls"),
            "{refused}"
        );
        let none = s.refused("seele_read", json!({"path": "bigger/d000"}));
        assert!(
            none.contains("not_found") || none.contains("no node"),
            "nothing was written: {none}"
        );
        let read = s.ok("seele_read", json!({"path": "big/d019", "max_chars": 100}));
        assert_eq!(read["title"], "Doc 19");
    });
}

/// An index page — 400 links, a 100 000-character body, 300 nodes below — is read: the links
/// whole in half the answer (the rest counted, and read on by `links_offset`), the body read
/// on by offset, and the outline's
/// count of what it left out right (it said 18 when 118 were).
#[test]
fn an_index_page_with_hundreds_of_links_and_children_is_read_on_both_stores() {
    let dir = plugins(&["seele"]);
    on_both("seele-index", |env| {
        let mut s = env.start(dir.path(), &[]);
        let links: String = (0..400)
            .map(|i| format!("- [page {i:03}](idx/page-{i:03})\n"))
            .collect();
        let body = format!("# Index\n{links}{}", "b".repeat(100_000));
        s.ok(
            "seele_write",
            json!({"path": "idx", "title": "Index", "body": body}),
        );
        for start in [0, 150] {
            let nodes: Vec<Value> = (start..start + 150)
                .map(|i| json!({"path": format!("page-{i:03}"), "body": format!("# Page {i}")}))
                .collect();
            s.ok("seele_import", json!({"nodes": nodes, "root_path": "idx"}));
        }
        let read = s.ok(
            "seele_read",
            json!({"path": "idx", "include_children": true}),
        );
        let links_shown = read["links"].as_array().expect("links").len();
        assert!(links_shown > 50, "{links_shown}");
        assert_eq!(read["links_total"], 400);
        assert_eq!(read["links_omitted"], 400 - links_shown);
        // Every link is reached by links_offset, in order, each once.
        let mut paths: Vec<String> = Vec::new();
        let mut next = json!(0);
        while next.is_u64() {
            let page = s.ok("seele_read", json!({"path": "idx", "links_offset": next}));
            paths.extend(
                page["links"]
                    .as_array()
                    .expect("links")
                    .iter()
                    .map(|l| l["path"].as_str().expect("path").to_owned()),
            );
            next = page["links_next_offset"].clone();
        }
        let expected: Vec<String> = (0..400).map(|i| format!("idx/page-{i:03}")).collect();
        assert_eq!(paths, expected, "every link once, by path");
        // Every node below is reached by children_offset (the body kept short meanwhile).
        let mut below: Vec<String> = Vec::new();
        let mut next = json!(0);
        while next.is_u64() {
            let page = s.ok(
                "seele_read",
                json!({"path": "idx", "include_children": true, "children_offset": next,
                       "max_chars": 100}),
            );
            below.extend(
                page["children"]
                    .as_array()
                    .expect("children")
                    .iter()
                    .map(|c| c["path"].as_str().expect("path").to_owned()),
            );
            next = page["children_next_offset"].clone();
        }
        let expected: Vec<String> = (0..300).map(|i| format!("idx/page-{i:03}")).collect();
        assert_eq!(below, expected, "every node below once, by path");
        let children = read["children"].as_array().expect("children").len();
        assert_eq!(
            read["children_omitted"],
            300 - children,
            "the count of what was left out"
        );
        assert!(
            read["body_next_offset"].is_u64(),
            "{}",
            read["body_next_offset"]
        );
    });
}

/// A node whose front matter is three answers long reads whole: a quarter of the answer shows
/// its first keys beside the body, and `keys_offset` reads on through the rest, each key once.
#[test]
fn a_node_with_a_front_matter_larger_than_an_answer_reads_whole_by_key() {
    let dir = plugins(&["seele"]);
    on_both("seele-front", |env| {
        let mut s = env.start(dir.path(), &[]);
        let front: serde_json::Map<String, Value> = (0..400)
            .map(|i| {
                (
                    format!("k{i:03}"),
                    json!(format!("{i} \"{}\"", "v".repeat(140))),
                )
            })
            .collect();
        s.ok(
            "seele_write",
            json!({"path": "meta", "title": "Meta", "body": "short body", "front_matter": front}),
        );
        let first = s.ok("seele_read", json!({"path": "meta"}));
        assert_eq!(
            first["body"], "short body",
            "the body beside the first keys"
        );
        assert_eq!(first["front_matter_keys"], 400);
        let mut keys: Vec<String> = Vec::new();
        let mut next = json!(0);
        while next.is_u64() {
            let page = s.ok("seele_read", json!({"path": "meta", "keys_offset": next}));
            for (key, value) in page["front_matter"].as_object().expect("front matter") {
                assert_eq!(value, &front[key], "{key} whole");
                keys.push(key.clone());
            }
            next = page["front_matter_next_offset"].clone();
        }
        assert_eq!(
            keys,
            front.keys().cloned().collect::<Vec<_>>(),
            "each key once"
        );
    });
}
