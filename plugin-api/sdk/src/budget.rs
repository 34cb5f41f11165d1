//! Keeping results whole: the host withholds a built-in tool's answer over the session's
//! budget (20 000 characters by default, 10 000 for Codex), so every group fits its answers
//! under [`result_budget`] with these.
//!
//! Invariants: a cut never splits a character; a cut text ends with a visible marker naming
//! how much was shown of how much and how to get the rest; optional fields are left out,
//! never sent as `null`; sizes are counted in characters, as the host counts them; what fits
//! one call's budget is decided by that call's budget, asked of the host once per call.

use std::cell::Cell;

use serde_json::{json, Map, Value};

mod yielding;
pub use yielding::{fit_record, TEXT_FLOOR};

/// What a whole result may serialise to in the largest budget (a session of any client but
/// Codex), in characters, leaving room under the host's 20 000. The running call's own is
/// [`result_budget`].
pub const RESULT_BUDGET: usize = 19_500;
/// The room a result keeps under the session's budget for the host's wrapper.
const WRAPPER: usize = 500;
/// The smallest budget: the host never gives a session less than 4 000 characters.
pub(crate) const MIN_BUDGET: usize = 4_000 - WRAPPER;

thread_local! {
    /// The running call's budget, once asked; a new call forgets it.
    static CALL_BUDGET: Cell<Option<usize>> = const { Cell::new(None) };
    /// A budget a test runs under ([`with_budget`]).
    static TEST_BUDGET: Cell<Option<usize>> = const { Cell::new(None) };
}

/// What the answer of the running call may serialise to, in characters: its session's budget
/// (the host's `caller` operation says it) less the room of the host's wrapper;
/// [`RESULT_BUDGET`] outside a host, or from a host that does not say.
pub fn result_budget() -> usize {
    if let Some(budget) = TEST_BUDGET.with(Cell::get) {
        return budget;
    }
    if let Some(budget) = CALL_BUDGET.with(Cell::get) {
        return budget;
    }
    let budget = crate::host_call("caller", &json!({}))
        .ok()
        .and_then(|answer| answer["result_chars"].as_u64())
        .map_or(RESULT_BUDGET, |chars| {
            usize::try_from(chars)
                .unwrap_or(usize::MAX)
                .saturating_sub(WRAPPER)
                .clamp(MIN_BUDGET, RESULT_BUDGET)
        });
    CALL_BUDGET.with(|slot| slot.set(Some(budget)));
    budget
}

/// Forgets the budget of the call before: the next [`result_budget`] asks the host again.
pub(crate) fn new_call() {
    CALL_BUDGET.with(|slot| slot.set(None));
}

/// Runs `f` as a call whose session's budget is `chars` characters (what the host gives a
/// Codex session is 10 000): a group's tests prove its answers fit a smaller budget.
pub fn with_budget<T>(chars: usize, f: impl FnOnce() -> T) -> T {
    struct Reset(Option<usize>);
    impl Drop for Reset {
        fn drop(&mut self) {
            TEST_BUDGET.with(|slot| slot.set(self.0));
        }
    }
    let before = TEST_BUDGET.with(|slot| slot.replace(Some(chars.saturating_sub(WRAPPER))));
    let _reset = Reset(before);
    f()
}
/// The most items a cleanup-style result lists; the rest are counted in `more`.
pub const MAX_LISTED: usize = 200;

/// The characters `value` serialises to (what the host counts).
pub fn chars(value: &Value) -> usize {
    serde_json::to_string(value).map_or(usize::MAX, |s| s.chars().count())
}

/// Inserts `value` under `key` when there is one: absent stays absent, never `null`.
pub fn put_opt(map: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(value) = value {
        map.insert(key.to_owned(), value.into());
    }
}

/// At most [`MAX_LISTED`] items, and how many more there were (`more`, only when some).
pub fn capped(mut items: Vec<Value>) -> (Vec<Value>, Option<usize>) {
    let more = items.len().saturating_sub(MAX_LISTED);
    items.truncate(MAX_LISTED);
    (items, (more > 0).then_some(more))
}

/// The answer of a tool that removes or closes many records at once (a clean-up):
/// `{<count_field>: count, dry_run, items, more?}`, where `items` (what was, or with `dry_run`
/// would be, touched) is a sample in the order given: at most [`MAX_LISTED`], and only as many
/// as fit [`result_budget`] beside the counts ([`fitting`]); `more` counts the rest of
/// `count`. So the answer fits however many records were touched and however long their names
/// are: a change that was made is never reported as an error.
pub fn sweep(count_field: &str, count: usize, dry_run: bool, items: Vec<Value>) -> Value {
    let (mut items, _) = capped(items);
    // Room for every field, `more` at its largest, before the items are counted in.
    let base = json!({count_field: count, "dry_run": dry_run, "items": [], "more": count});
    items.truncate(fitting(&items, &base));
    let more = (count > items.len()).then(|| count - items.len());
    let mut map = Map::new();
    map.insert(count_field.to_owned(), count.into());
    map.insert("dry_run".to_owned(), dry_run.into());
    map.insert("items".to_owned(), items.into());
    put_opt(&mut map, "more", more);
    Value::Object(map)
}

/// How much of a long text field a listed record shows (an item's description in a list, a
/// comment's body); the tool that reads one record reads the whole of it.
pub const LISTED_TEXT: usize = 1_000;

/// Cuts the text `record[field]` to its first `max_chars` characters when it is longer,
/// adding `<field>_truncated: true` and `<field>_total_chars` beside it. Returns whether it
/// cut. A field that is absent or not text is left alone.
pub fn cut_field(record: &mut Value, field: &str, max_chars: usize) -> bool {
    let Some(text) = record.get(field).and_then(Value::as_str) else {
        return false;
    };
    let Some((end, _)) = text.char_indices().nth(max_chars) else {
        return false;
    };
    let total = text.chars().count();
    let kept = text[..end].to_owned();
    record[field] = Value::String(kept);
    record[format!("{field}_truncated")] = Value::Bool(true);
    record[format!("{field}_total_chars")] = json!(total);
    true
}

/// Fits one record to `budget` characters by its long text `fields`, each shown from the
/// character offset given with it: a field that does not fit whole is cut (the last listed
/// first: list the field a caller reads on first) and says so with `<field>_truncated: true`,
/// `<field>_total_chars` and `<field>_next_offset` (pass it back as the offset to read on).
/// A field read from a non-zero offset also says `<field>_offset`. Every other field is kept
/// as it is; a record whose other fields alone outgrow the budget keeps empty texts.
pub fn fit_fields(record: &mut Value, fields: &[(&str, usize)], budget: usize) {
    let windows: Vec<(&str, usize, usize)> = fields
        .iter()
        .map(|&(f, offset)| (f, offset, usize::MAX))
        .collect();
    fit_windows(record, &windows, budget);
}

/// [`fit_fields`] where each field also shows at most the `max_chars` given with it (a
/// tool's own `max_chars` argument): `(field, offset, max_chars)`.
pub fn fit_windows(record: &mut Value, fields: &[(&str, usize, usize)], budget: usize) {
    make_room_for_windows(record, fields, budget);
    // (field, whole text, start, shown)
    let mut texts: Vec<(&str, String, usize, usize)> = Vec::new();
    for &(field, offset, max_chars) in fields {
        let Some(text) = record.get(field).and_then(Value::as_str) else {
            continue;
        };
        let total = text.chars().count();
        let start = offset.min(total);
        texts.push((
            field,
            text.to_owned(),
            start,
            (total - start).min(max_chars),
        ));
    }
    let place = |record: &mut Value, texts: &[(&str, String, usize, usize)]| {
        for (field, text, start, shown) in texts {
            let total = text.chars().count();
            let piece: String = text.chars().skip(*start).take(*shown).collect();
            record[*field] = Value::String(piece);
            annotate_window(record, field, *start, *shown, total);
        }
    };
    // The fields yield in reverse order of listing: the first is the one the caller reads
    // (its offset moves on), so it keeps what the others can give up. The others first give
    // up what they have past a short start, then the first field yields, then the rest.
    const FLOOR: usize = 500;
    let passes: [(bool, usize); 3] = [(false, FLOOR), (true, 0), (false, 0)];
    for (first_only, floor) in passes {
        for at in (0..texts.len()).rev() {
            if (at == 0) != first_only && texts.len() > 1 {
                continue;
            }
            for _ in 0..24 {
                place(record, &texts);
                let size = chars(record);
                let field = &mut texts[at];
                if size <= budget || field.3 <= floor {
                    break;
                }
                // Escapes make a character cost more than one: cut by the excess in
                // characters at the piece's own cost per character, and a small margin.
                let piece: String = field.1.chars().skip(field.2).take(field.3).collect();
                let cost = chars(&Value::String(piece)).max(1);
                let excess = ((size - budget) as u128 * field.3 as u128).div_ceil(cost as u128);
                field.3 = field.3.saturating_sub(excess as usize + 16).max(floor);
            }
        }
    }
    place(record, &texts);
}

/// What the windowed texts of a record keep for themselves, however large its other parts:
/// a read by `offset` always moves on.
const WINDOW_ROOM: usize = 1_200;

/// When a record's parts other than the windowed `fields` outgrow `budget` less
/// [`WINDOW_ROOM`] — or, on a read that goes on (an offset past 0), less half the budget, as
/// the caller saw those parts on its first read — they yield first ([`fit_record`]), each
/// saying so.
fn make_room_for_windows(record: &mut Value, fields: &[(&str, usize, usize)], budget: usize) {
    let Some(map) = record.as_object() else {
        return;
    };
    let windowed = |key: &str| {
        fields
            .iter()
            .any(|(f, _, _)| key == *f || key.strip_prefix(f).is_some_and(|r| r.starts_with('_')))
    };
    let reading_on = fields.first().is_some_and(|(_, offset, _)| *offset > 0);
    let room = budget.saturating_sub(match reading_on {
        true => WINDOW_ROOM.max(budget / 2),
        false => WINDOW_ROOM,
    });
    // What the other parts cost, measured in place: most records are nowhere near the room,
    // and are neither copied nor changed.
    let cost: usize = map
        .iter()
        .filter(|(k, _)| !windowed(k))
        .map(|(k, v)| k.chars().count() + 4 + chars(v))
        .sum();
    if cost + 2 <= room {
        return;
    }
    let mut rest = Value::Object(
        map.iter()
            .filter(|(k, _)| !windowed(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    );
    if chars(&rest) <= room || !fit_record(&mut rest, room) {
        return;
    }
    if let (Some(target), Value::Object(rest)) = (record.as_object_mut(), rest) {
        for (key, value) in rest {
            target.insert(key, value);
        }
    }
}

/// Sets (or removes) the fields that say `record[field]` shows `shown` characters from `start`
/// of a text of `total`: `_truncated`, `_total_chars`, `_offset`, `_next_offset`.
fn annotate_window(record: &mut Value, field: &str, start: usize, shown: usize, total: usize) {
    let end = start + shown;
    let cut = end < total;
    let annotate = cut || start > 0;
    for (suffix, value) in [
        ("_truncated", annotate.then(|| Value::Bool(cut))),
        ("_total_chars", annotate.then(|| json!(total))),
        ("_offset", (start > 0).then(|| json!(start))),
        ("_next_offset", cut.then(|| json!(end))),
    ] {
        let key = format!("{field}{suffix}");
        match value {
            Some(value) => record[key] = value,
            None => {
                if let Some(map) = record.as_object_mut() {
                    map.remove(&key);
                }
            }
        }
    }
}

/// [`fit_windows`] for one field of which only a piece was read: `record[field]` holds the
/// text from character `start` of a text of `total` characters (a file read in a window). At
/// most `max_chars` of it are shown, fewer if the record would outgrow `budget`, annotated as
/// [`fit_fields`] annotates a cut text.
pub fn fit_piece(
    record: &mut Value,
    field: &str,
    (start, total): (usize, usize),
    max_chars: usize,
    budget: usize,
) {
    let piece: String = record
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let len = piece.chars().count();
    let mut shown = len.min(max_chars);
    for _ in 0..24 {
        let text: String = piece.chars().take(shown).collect();
        let cost = chars(&Value::String(text.clone())).max(1);
        record[field] = Value::String(text);
        annotate_window(record, field, start, shown, total);
        let size = chars(record);
        if size <= budget || shown == 0 {
            return;
        }
        let excess = ((size - budget) as u128 * shown as u128).div_ceil(cost as u128);
        shown = shown.saturating_sub(excess as usize + 16);
    }
}

/// The answer of a change that touched many records at once (a cascading close or delete, an
/// import): `{<field>_count: N, <field>: [at most MAX_LISTED keys], more?}`, set into `out`.
pub fn bulk(out: &mut Value, field: &str, keys: Vec<String>) {
    let count = keys.len();
    let (mut sample, _) = capped(keys.into_iter().map(Value::String).collect());
    out[format!("{field}_count")] = json!(count);
    // Room for the list and `more` at its largest before the keys are counted in.
    out[field] = json!([]);
    out["more"] = json!(count);
    sample.truncate(fitting(&sample, out));
    let more = count - sample.len();
    out[field] = Value::Array(sample);
    if let Some(map) = out.as_object_mut() {
        map.remove("more");
        if more > 0 {
            map.insert("more".to_owned(), json!(more));
        }
    }
}

/// How many of `items`, from the first, fit one answer beside `base` (the answer without
/// them, with room already in it for whatever is added after): never 0 while there are items,
/// so a page is never empty while rows remain.
pub fn fitting<T: serde::Serialize>(items: &[T], base: &Value) -> usize {
    let mut size = chars(base);
    let mut fits = 0;
    for item in items {
        // One separator comma per item besides its own text.
        let cost = serde_json::to_string(item).map_or(usize::MAX, |t| t.chars().count()) + 1;
        if fits > 0 && size.saturating_add(cost) > result_budget() {
            break;
        }
        size = size.saturating_add(cost);
        fits += 1;
    }
    fits
}

/// The members of the object `map` from the `from`th, whole values, while they fit `room`
/// characters (at least one, which yields its own largest parts if it must), and the index of
/// the first member left out when any was: how a record pages an object too large for its
/// answer (a front matter), by the index as its tool's offset.
pub fn object_page(
    map: Map<String, Value>,
    from: usize,
    room: usize,
) -> (Map<String, Value>, Option<usize>) {
    let total = map.len();
    let mut kept = Map::new();
    let mut size = 2;
    let mut next = None;
    for (at, (key, value)) in map.into_iter().enumerate().skip(from) {
        let cost = chars(&Value::String(key.clone())) + chars(&value) + 2;
        if !kept.is_empty() && size + cost > room {
            next = Some(at);
            break;
        }
        size += cost;
        kept.insert(key, value);
    }
    (kept, next.filter(|n| *n < total))
}

/// The default `max_chars` for patch and file text.
pub const DEFAULT_MAX_CHARS: usize = 12_000;

/// Text, possibly cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub text: String,
    pub truncated: bool,
    /// Characters of the whole text (a lower bound when git's output was already bounded).
    pub total_chars: usize,
}

/// Cuts `text` to at most `max_chars` characters (at a line end when one is near), adding
/// `…[truncated at N of M characters; HINT]`. `dropped` counts bytes git produced beyond what
/// was captured.
pub fn cut(text: &str, max_chars: usize, dropped: u64, hint: &str) -> Cut {
    let total = text.chars().count();
    if total <= max_chars && dropped == 0 {
        return Cut {
            text: text.to_owned(),
            truncated: false,
            total_chars: total,
        };
    }
    let end = text
        .char_indices()
        .nth(max_chars)
        .map_or(text.len(), |(i, _)| i);
    let mut kept = &text[..end];
    if end < text.len() {
        // Prefer a whole line when the last line break is close to the cut.
        if let Some(nl) = kept.rfind('\n') {
            if kept.len() - nl <= 400 {
                kept = &kept[..=nl];
            }
        }
    }
    let shown = kept.chars().count();
    let of = if dropped > 0 {
        format!("more than {}", total as u64 + dropped)
    } else {
        total.to_string()
    };
    let sep = if kept.ends_with('\n') || kept.is_empty() {
        ""
    } else {
        "\n"
    };
    Cut {
        text: format!("{kept}{sep}…[truncated at {shown} of {of} characters; {hint}]"),
        truncated: true,
        total_chars: total,
    }
}

/// The last `max` characters of `text` (from a line start when one is near), and how many
/// characters were left out before them.
pub fn tail(text: &str, max: usize) -> (&str, usize) {
    let count = text.chars().count();
    if count <= max {
        return (text, 0);
    }
    let start = text.char_indices().nth(count - max).map_or(0, |(i, _)| i);
    let mut kept = &text[start..];
    if let Some(nl) = kept.find('\n') {
        if nl <= 400 && nl + 1 < kept.len() {
            kept = &kept[nl + 1..];
        }
    }
    (kept, count - kept.chars().count())
}

/// Drops items from the end of the array `value[field]` until the whole value fits in
/// `budget`; returns how many were dropped.
pub fn fit_array(value: &mut Value, field: &str, budget: usize) -> usize {
    let total = chars(value);
    if total <= budget {
        return 0;
    }
    let Some(items) = value.get_mut(field).and_then(Value::as_array_mut) else {
        return 0;
    };
    let mut over = total - budget;
    let mut dropped = 0;
    while over > 0 {
        let Some(item) = items.pop() else { break };
        // The item plus its comma.
        over = over.saturating_sub(chars(&item) + 1);
        dropped += 1;
    }
    dropped
}

/// Fits a result holding patch or file text in `field`: drops `list` items (the per-file
/// stats) beyond `max_items` and then cuts the text further until the result fits
/// [`result_budget`]. Sets `truncated` when anything was cut.
pub fn fit(value: &mut Value, field: &str, list: Option<&str>, hint: &str) {
    const MAX_ITEMS: usize = 200;
    if let Some(list) = list {
        if let Some(items) = value.get_mut(list).and_then(Value::as_array_mut) {
            if items.len() > MAX_ITEMS {
                items.truncate(MAX_ITEMS);
                value["files_truncated"] = Value::Bool(true);
            }
        }
        if chars(value) > result_budget() + 4000 {
            // Leave at least some room for the text.
            if fit_array(value, list, result_budget() - 4000) > 0 {
                value["files_truncated"] = Value::Bool(true);
            }
        }
    }
    for _ in 0..8 {
        let total = chars(value);
        if total <= result_budget() {
            return;
        }
        let Some(text) = value.get(field).and_then(Value::as_str) else {
            return;
        };
        // JSON escaping can grow text: aim at the room left for it, at its own cost per
        // character, with a margin.
        let chars = text.chars().count();
        let cost = self::chars(&Value::String(text.to_owned())).max(1);
        let room = (result_budget() + cost).saturating_sub(total + 300);
        let target = (chars as u128 * room as u128 / cost as u128) as usize;
        let base = text
            .rsplit_once("\n…[truncated at ")
            .map_or(text, |(kept, _)| kept);
        let cut = cut(
            base,
            target.min(base.chars().count().saturating_sub(1)),
            0,
            hint,
        );
        value[field] = Value::String(cut.text);
        value["truncated"] = Value::Bool(true);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn an_object_pages_by_member_and_every_member_is_reached_once() {
        let map: Map<String, Value> = (0..300)
            .map(|i| (format!("k{i:03}"), json!("v".repeat(i % 50 + 10))))
            .collect();
        let mut seen = Vec::new();
        let mut next = Some(0);
        while let Some(from) = next {
            let (page, after) = object_page(map.clone(), from, 1_000);
            assert!(chars(&Value::Object(page.clone())) <= 1_000);
            assert!(!page.is_empty(), "a page moves on");
            seen.extend(page.keys().cloned());
            next = after;
        }
        assert_eq!(seen, map.keys().cloned().collect::<Vec<_>>());
        // One member larger than the room still comes, alone.
        let big: Map<String, Value> = [("a".to_owned(), json!("x".repeat(5_000)))]
            .into_iter()
            .collect();
        let (page, next) = object_page(big, 0, 100);
        assert_eq!((page.len(), next), (1, None));
    }

    #[test]
    fn a_read_by_offset_moves_on_beside_parts_larger_than_the_budget() {
        let summary: String = "\"é\n".chars().cycle().take(20_000).collect();
        let metadata: Map<String, Value> = (0..40)
            .map(|i| (format!("k{i:02}"), json!("m".repeat(400))))
            .collect();
        let record = json!({"id": "S", "summary": summary, "metadata": metadata});
        let mut read = String::new();
        let mut offset = 0;
        for _ in 0..200 {
            let mut piece = record.clone();
            fit_fields(&mut piece, &[("summary", offset)], 9_500);
            assert!(chars(&piece) <= 9_500, "{}", chars(&piece));
            read.push_str(piece["summary"].as_str().expect("summary"));
            assert!(
                piece["metadata_omitted_keys"].is_array(),
                "the metadata yields"
            );
            match piece.get("summary_next_offset").and_then(Value::as_u64) {
                Some(next) => {
                    assert!(next as usize > offset, "a read moves on");
                    offset = next as usize;
                }
                None => break,
            }
        }
        assert_eq!(read, summary);
    }

    #[test]
    fn a_call_fits_its_sessions_budget() {
        // Outside a host: the largest.
        assert_eq!(result_budget(), RESULT_BUDGET);
        with_budget(10_000, || {
            assert_eq!(result_budget(), 9_500);
            // What a page, a sample and a cut text hold follows it.
            let items = rows(100, 300);
            let fits = fitting(&items, &json!({"items": []}));
            assert!(fits > 0 && fits < 32, "{fits}");
            let answer = sweep("deleted_count", 5_000, false, rows(300, 200));
            assert!(chars(&answer) <= 9_500, "{}", chars(&answer));
            let mut record = json!({"description": "d".repeat(30_000)});
            fit_fields(&mut record, &[("description", 0)], result_budget());
            assert!(chars(&record) <= 9_500, "{}", chars(&record));
            with_budget(4_000, || assert_eq!(result_budget(), 3_500));
            assert_eq!(
                result_budget(),
                9_500,
                "an inner budget ends with its closure"
            );
        });
        assert_eq!(result_budget(), RESULT_BUDGET);
    }

    /// `n` items of `width` characters each, keyed `k0`, `k1`, … (the paging tests use them too).
    pub(crate) fn rows(n: usize, width: usize) -> Vec<Value> {
        (0..n)
            .map(|i| json!({"key": format!("k{i}"), "value": "v".repeat(width)}))
            .collect()
    }

    #[test]
    fn optional_fields_are_left_out() {
        let mut map = Map::new();
        put_opt(&mut map, "a", None::<String>);
        put_opt(&mut map, "b", Some(1));
        assert_eq!(Value::Object(map), json!({"b": 1}));
    }

    #[test]
    fn capped_counts_the_rest() {
        let (items, more) = capped(rows(MAX_LISTED + 5, 1));
        assert_eq!((items.len(), more), (MAX_LISTED, Some(5)));
        assert_eq!(capped(rows(2, 1)).1, None);
    }

    #[test]
    fn a_window_is_cut_at_max_chars_and_to_the_budget() {
        let mut recording = json!({"transcript": "abcdef"});
        fit_windows(&mut recording, &[("transcript", 0, 4)], result_budget());
        assert_eq!(recording["transcript"], "abcd");
        assert_eq!(recording["transcript_truncated"], true);
        assert_eq!(recording["transcript_total_chars"], 6);
        assert_eq!(recording["transcript_next_offset"], 4);
        // Quotes double in JSON: the cut goes below max_chars to stay in the budget.
        let mut quotes = json!({"transcript": "\"".repeat(30_000)});
        fit_windows(&mut quotes, &[("transcript", 0, 30_000)], result_budget());
        assert!(chars(&quotes) <= result_budget(), "{}", chars(&quotes));
        assert!(chars(&quotes) > result_budget() - 500, "{}", chars(&quotes));
    }

    fn check(input: &str, max: usize, dropped: u64, expected: &str, truncated: bool) {
        let got = cut(input, max, dropped, "ask less");
        assert_eq!(got.text, expected, "{input:?} at {max}");
        assert_eq!(got.truncated, truncated);
    }

    #[test]
    fn cuts() {
        check("short", 10, 0, "short", false);
        check("exactly10!", 10, 0, "exactly10!", false);
        check(
            "abcdefghijkl",
            5,
            0,
            "abcde\n…[truncated at 5 of 12 characters; ask less]",
            true,
        );
        check(
            "line one\nline two\n",
            12,
            0,
            "line one\n…[truncated at 9 of 18 characters; ask less]",
            true,
        );
        check(
            "ééééé",
            2,
            0,
            "éé\n…[truncated at 2 of 5 characters; ask less]",
            true,
        );
        check(
            "abc",
            10,
            100,
            "abc\n…[truncated at 3 of more than 103 characters; ask less]",
            true,
        );
    }

    #[test]
    fn fits_the_result_budget() {
        let mut value = json!({"text": "x\"y\n".repeat(20_000), "files": [], "truncated": false});
        fit(&mut value, "text", Some("files"), "narrow it");
        assert!(chars(&value) <= result_budget(), "{}", chars(&value));
        assert_eq!(value["truncated"], true);
        let text = value["text"].as_str().expect("text");
        assert!(
            text.ends_with("; narrow it]"),
            "{}",
            &text[text.len() - 80..]
        );

        let files: Vec<Value> = (0..1000)
            .map(|i| json!({"path": format!("dir/file{i}.rs")}))
            .collect();
        let mut value = json!({"text": "small", "files": files});
        fit(&mut value, "text", Some("files"), "narrow it");
        assert!(chars(&value) <= result_budget());
        assert_eq!(value["files_truncated"], true);
        assert_eq!(value["text"], "small");

        let mut value = json!({"commits": (0..500).map(|i| json!({"n": i, "pad": "p".repeat(100)})).collect::<Vec<_>>()});
        let dropped = fit_array(&mut value, "commits", result_budget());
        assert!(dropped > 0 && chars(&value) <= result_budget());
    }

    #[test]
    fn a_field_is_cut_with_its_total() {
        let mut record = json!({"key": "A-1", "description": "é".repeat(30)});
        assert!(!cut_field(&mut record, "description", 30));
        assert!(cut_field(&mut record, "description", 10));
        assert_eq!(record["description"], "é".repeat(10));
        assert_eq!(record["description_truncated"], true);
        assert_eq!(record["description_total_chars"], 30);
        assert!(!cut_field(&mut record, "missing", 1));
    }

    #[test]
    fn a_record_fits_by_its_longest_field_and_reads_on_from_an_offset() {
        let body: String = (0..40_000)
            .map(|i| if i % 7 == 0 { '"' } else { 'a' })
            .collect();
        let mut record = json!({"key": "A-1", "title": "t", "description": body.clone(),
            "acceptance": "short"});
        fit_fields(
            &mut record,
            &[("description", 0), ("acceptance", 0)],
            result_budget(),
        );
        assert!(chars(&record) <= result_budget(), "{}", chars(&record));
        assert!(
            chars(&record) > result_budget() - 2_000,
            "{}",
            chars(&record)
        );
        assert_eq!(record["description_truncated"], true);
        assert_eq!(record["acceptance"], "short");
        assert!(record.get("acceptance_truncated").is_none());
        // Following next_offset reads every character exactly once.
        let mut read = String::new();
        let mut offset = 0;
        loop {
            let mut piece = json!({"key": "A-1", "description": body.clone()});
            fit_fields(&mut piece, &[("description", offset)], result_budget());
            read.push_str(piece["description"].as_str().expect("text"));
            match piece["description_next_offset"].as_u64() {
                Some(next) => offset = next as usize,
                None => break,
            }
            assert_eq!(piece["description_total_chars"], 40_000);
        }
        assert_eq!(read, body);
        let mut small = json!({"description": "abc"});
        fit_fields(&mut small, &[("description", 0)], result_budget());
        assert_eq!(small, json!({"description": "abc"}));
        fit_fields(&mut small, &[("description", 1)], result_budget());
        assert_eq!(
            small,
            json!({"description": "bc", "description_truncated": false,
                "description_total_chars": 3, "description_offset": 1})
        );
    }

    #[test]
    fn the_field_read_on_keeps_what_the_others_give_up() {
        let mut record = json!({"meta": "m".repeat(17_000), "summary": "s".repeat(20_000),
            "cwd": "c".repeat(4_096), "repo": "short"});
        fit_fields(
            &mut record,
            &[("summary", 0), ("cwd", 0), ("repo", 0)],
            result_budget(),
        );
        assert!(chars(&record) <= result_budget(), "{}", chars(&record));
        assert_eq!(
            record["cwd"].as_str().map(str::len),
            Some(500),
            "cut to its start"
        );
        assert_eq!(record["repo"], "short", "a short field is left whole");
        let shown = record["summary"].as_str().map_or(0, str::len);
        assert!(shown > 1_000, "the field read on still moves on: {shown}");
        assert_eq!(record["summary_next_offset"], shown);
    }

    #[test]
    fn a_bulk_change_answers_a_count_and_a_sample() {
        let mut out = json!({});
        bulk(
            &mut out,
            "closed",
            (0..2501).map(|i| format!("E-{i}")).collect(),
        );
        assert_eq!(out["closed_count"], 2501);
        assert_eq!(out["closed"].as_array().map(Vec::len), Some(MAX_LISTED));
        assert_eq!(out["more"], 2501 - MAX_LISTED);
        let mut few = json!({});
        bulk(&mut few, "deleted", vec!["A".into()]);
        assert_eq!(few, json!({"deleted_count": 1, "deleted": ["A"]}));
    }

    #[test]
    fn a_sweep_or_bulk_answer_fits_whatever_was_touched() {
        let long = |i: usize| json!({"scope": format!("session:{i:04}"), "key": "k".repeat(300)});
        let answer = sweep("deleted", 5_000, false, (0..5_000).map(long).collect());
        assert!(chars(&answer) <= result_budget(), "{}", chars(&answer));
        let shown = answer["items"].as_array().expect("items").len();
        assert!(shown > 10 && shown < MAX_LISTED, "{shown}");
        assert_eq!(answer["more"], 5_000 - shown, "the rest are counted");
        assert_eq!(
            answer["items"][0]["scope"], "session:0000",
            "a sample in the order given"
        );
        let mut out = json!({"project": "CORE"});
        bulk(
            &mut out,
            "closed",
            (0..3_000)
                .map(|i| format!("{i}-{}", "x".repeat(200)))
                .collect(),
        );
        assert!(chars(&out) <= result_budget(), "{}", chars(&out));
        let shown = out["closed"].as_array().expect("closed").len();
        assert!(shown > 10 && shown < MAX_LISTED, "{shown}");
        assert_eq!(out["more"], 3_000 - shown);
        assert_eq!(out["closed_count"], 3_000);
    }

    #[test]
    fn a_sweep_lists_up_to_the_cap_and_counts_the_rest() {
        let out = sweep("deleted", 250, false, rows(250, 1));
        assert_eq!(out["deleted"], 250);
        assert_eq!(out["items"].as_array().map(Vec::len), Some(MAX_LISTED));
        assert_eq!(out["more"], 250 - MAX_LISTED);
        // A dry run lists what a capped query found and counts the whole of it.
        let dry = sweep("closed", 5000, true, rows(3, 1));
        assert_eq!(
            (dry["dry_run"].clone(), dry["more"].clone()),
            (json!(true), json!(4997))
        );
        assert!(sweep("deleted", 0, false, vec![]).get("more").is_none());
    }
}
