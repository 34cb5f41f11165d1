//! The last resort that keeps every answer a whole document: an object a tool answered that
//! still outgrows the call's budget after the tool fitted it yields its largest parts, each
//! saying so, until it fits — so no answer is ever withheld by the host's guard, whatever a
//! record holds at its limits and however small the session's budget.
//!
//! Invariants: only what is large yields — a text down to [`TEXT_FLOOR`] characters, a list
//! down to its first item, an object member by member — and every part that yielded says so
//! beside itself (`<field>_truncated` with `<field>_total_chars`, `<field>_omitted`,
//! `<field>_omitted_keys`); scalars, keys and small parts are never touched; the result is
//! the same JSON shape with the same field types.

use serde_json::{json, Map, Value};

use super::chars;

/// The characters a text keeps however far it yields.
pub const TEXT_FLOOR: usize = 200;
/// A part of fewer characters than this is never chosen to yield.
const SMALL: usize = 64;

/// Fits the object `value` to `budget` characters by its largest parts (see the module);
/// returns whether anything yielded. A value that is not an object is left alone.
pub fn fit_record(value: &mut Value, budget: usize) -> bool {
    let Some(map) = value.as_object_mut() else {
        return false;
    };
    fit_map(map, budget)
}

fn fit_map(map: &mut Map<String, Value>, budget: usize) -> bool {
    let mut yielded = false;
    let mut spent: Vec<String> = Vec::new();
    // Each member's cost, kept up to date: only the part that yielded and the notes added
    // beside it are measured again.
    let mut sizes: std::collections::HashMap<String, usize> =
        map.iter().map(|(k, v)| (k.clone(), member(k, v))).collect();
    // Each round makes one part yield; a part that can yield no further is spent.
    for _ in 0..4 * map.len() + 8 {
        let size = 1 + sizes.values().sum::<usize>() + map.len().max(1);
        if size <= budget {
            break;
        }
        let over = size - budget;
        let Some(field) = largest(map, &sizes, &spent) else {
            break;
        };
        let before = sizes[&field];
        let value = chars(&map[&field]);
        yield_part(map, &field, value.saturating_sub(over));
        for (k, v) in map.iter() {
            if k == &field || !sizes.contains_key(k) || k.starts_with(field.as_str()) {
                sizes.insert(k.clone(), member(k, v));
            }
        }
        if sizes[&field] >= before {
            spent.push(field);
        } else {
            yielded = true;
        }
    }
    yielded
}

/// What the member `key: value` costs in its object, its comma aside.
fn member(key: &str, value: &Value) -> usize {
    chars(&Value::String(key.to_owned())) + 1 + chars(value)
}

/// The largest member that may still yield: a text, a list or an object, not yet spent.
fn largest(
    map: &Map<String, Value>,
    sizes: &std::collections::HashMap<String, usize>,
    spent: &[String],
) -> Option<String> {
    map.iter()
        .filter(|(k, v)| {
            !spent.contains(k) && matches!(v, Value::String(_) | Value::Array(_) | Value::Object(_))
        })
        .map(|(k, _)| (k, sizes.get(k).copied().unwrap_or(0)))
        .filter(|(_, size)| *size >= SMALL)
        .max_by_key(|(_, size)| *size)
        .map(|(k, _)| k.clone())
}

/// Makes `map[field]` yield towards `target` characters, noting beside it what it gave up.
fn yield_part(map: &mut Map<String, Value>, field: &str, target: usize) {
    match map.get_mut(field) {
        Some(Value::String(text)) => {
            let total = text.chars().count();
            // Escapes make a text cost more than it counts: aim at its own cost per character.
            let cost = chars(&Value::String(text.clone())).max(1);
            let keep = (total as u128 * target as u128 / cost as u128) as usize;
            let keep = keep.max(TEXT_FLOOR).min(total);
            if keep >= total {
                return;
            }
            let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
            text.truncate(end);
            let total_key = format!("{field}_total_chars");
            if !map.contains_key(&total_key) {
                map.insert(total_key, json!(total));
            }
            map.insert(format!("{field}_truncated"), Value::Bool(true));
        }
        Some(Value::Array(items)) => {
            let costs: Vec<usize> = items.iter().map(chars).collect();
            let mut size = 1 + costs.iter().sum::<usize>() + costs.len().max(1);
            let mut dropped = 0;
            while size > target && items.len() > 1 {
                items.pop();
                size = size.saturating_sub(costs[items.len()] + 1);
                dropped += 1;
            }
            // One item left and still over: it yields itself (a text is cut, an object's
            // parts yield), and the list says it was cut.
            let mut cut = false;
            if size > target {
                if let Some(only) = items.first_mut() {
                    let mut holder = Map::new();
                    holder.insert("item".to_owned(), std::mem::take(only));
                    let before = chars(&holder["item"]);
                    yield_part(&mut holder, "item", target.saturating_sub(2));
                    cut = chars(&holder["item"]) < before;
                    *only = holder.remove("item").unwrap_or(Value::Null);
                }
            }
            if dropped > 0 {
                add_count(map, &format!("{field}_omitted"), dropped);
            }
            if cut {
                map.insert(format!("{field}_truncated"), Value::Bool(true));
            }
        }
        Some(Value::Object(inner)) => {
            // Its own large parts first, then its members from the largest.
            if fit_map(inner, target) {
                return;
            }
            let mut names: Vec<(String, usize)> = inner
                .iter()
                .map(|(k, v)| (k.clone(), member(k, v)))
                .collect();
            let mut size = 1 + names.iter().map(|(_, c)| c).sum::<usize>() + names.len().max(1);
            names.sort_by_key(|(_, cost)| std::cmp::Reverse(*cost));
            let mut omitted = Vec::new();
            for (name, cost) in names {
                if size <= target {
                    break;
                }
                inner.remove(&name);
                size = size.saturating_sub(cost + 1);
                omitted.push(Value::String(name));
            }
            if !omitted.is_empty() {
                let key = format!("{field}_omitted_keys");
                match map.get_mut(&key).and_then(Value::as_array_mut) {
                    Some(list) => list.extend(omitted),
                    None => {
                        map.insert(key, Value::Array(omitted));
                    }
                }
            }
        }
        _ => {}
    }
}

fn add_count(map: &mut Map<String, Value>, key: &str, n: usize) {
    let before = map.get(key).and_then(Value::as_u64).unwrap_or(0);
    map.insert(key.to_owned(), json!(before + n as u64));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn awkward(n: usize) -> String {
        "\"é\n🦀".chars().cycle().take(n).collect()
    }

    #[test]
    fn a_record_at_every_limit_fits_and_says_what_yielded() {
        let mut record = json!({
            "id": "S1", "version": 3,
            "summary": awkward(20_000),
            "metadata": (0..40).map(|i| (format!("k{i:02}"), json!(awkward(400))))
                .collect::<Map<String, Value>>(),
            "tags": (0..100).map(|i| json!(format!("tag-{i}-{}", "t".repeat(60)))).collect::<Vec<_>>(),
            "recording": {"title": "t", "transcript": awkward(30_000)},
        });
        for budget in [19_500, 9_500, 3_500] {
            let mut fitted = record.clone();
            assert!(fit_record(&mut fitted, budget));
            assert!(chars(&fitted) <= budget, "{budget}: {}", chars(&fitted));
            assert_eq!(fitted["id"], "S1");
            assert_eq!(fitted["version"], 3);
            // What yielded says so, beside itself.
            let texts_cut = fitted["summary_truncated"] == true
                || fitted["recording"]["transcript_truncated"] == true;
            assert!(texts_cut, "{budget}");
            if fitted["summary_truncated"] == true {
                assert_eq!(fitted["summary_total_chars"], 20_000);
            }
        }
        // What fits is left alone.
        let small = json!({"a": "b", "n": [1, 2, 3]});
        let mut same = small.clone();
        assert!(!fit_record(&mut same, 1_000));
        assert_eq!(same, small);
        // Scalars alone over the budget: nothing can yield, nothing is lost.
        let mut scalars = json!({"a": 1, "b": true});
        assert!(!fit_record(&mut scalars, 5));
        assert_eq!(scalars, json!({"a": 1, "b": true}));
        record["extra"] = json!("x");
        assert!(!fit_record(&mut json!("a string"), 1));
    }

    #[test]
    fn lists_keep_their_first_items_and_objects_their_smaller_members() {
        let mut list = json!({"items": (0..500).map(|i| json!({"k": i, "v": "v".repeat(100)})).collect::<Vec<_>>()});
        assert!(fit_record(&mut list, 5_000));
        let kept = list["items"].as_array().map_or(0, Vec::len);
        assert!(kept > 10 && kept < 500, "{kept}");
        assert_eq!(list["items_omitted"], 500 - kept);
        assert_eq!(list["items"][0]["k"], 0, "from the start");
        let mut object = json!({"front_matter": {"big": "b".repeat(9_000), "small": "s", "n": 1}});
        assert!(fit_record(&mut object, 2_000));
        assert!(chars(&object) <= 2_000);
        assert_eq!(object["front_matter"]["small"], "s");
        assert_eq!(object["front_matter"]["n"], 1);
        // A member that is one large text yields as a text rather than vanishing.
        assert_eq!(object["front_matter"]["big_truncated"], true);
    }

    /// A small deterministic generator: the same records every run.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, below: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % below.max(1)
        }
        fn value(&mut self, depth: u32) -> Value {
            match (self.next(6), depth) {
                (0, _) => json!(self.next(1_000_000)),
                (1, _) => json!(self.next(2) == 1),
                (2, d) if d < 2 => {
                    let n = self.next(8);
                    Value::Array((0..n).map(|_| self.value(d + 1)).collect())
                }
                (3, d) if d < 2 => {
                    let n = self.next(8);
                    Value::Object(
                        (0..n)
                            .map(|i| (format!("m{i}"), self.value(d + 1)))
                            .collect(),
                    )
                }
                // Mostly short texts, now and then one of tens of thousands of characters.
                (4, _) => json!(awkward(self.next(15_000) as usize)),
                _ => json!(awkward(self.next(1_500) as usize)),
            }
        }
    }

    /// Whatever a record holds, it comes out within the budget with its scalars untouched,
    /// unless its scalars and small parts alone outgrow it.
    #[test]
    fn any_record_fits_or_keeps_only_what_cannot_yield() {
        let mut rng = Lcg(7);
        for round in 0..90 {
            let fields = 1 + rng.next(10);
            let mut record: Map<String, Value> = Map::new();
            for i in 0..fields {
                record.insert(format!("f{i}"), rng.value(0));
            }
            let record = Value::Object(record);
            let budget = [3_500, 9_500, 19_500][round % 3];
            let mut fitted = record.clone();
            fit_record(&mut fitted, budget);
            let size = chars(&fitted);
            for (key, value) in record.as_object().into_iter().flatten() {
                if value.is_number() || value.is_boolean() {
                    assert_eq!(&fitted[key], value, "round {round}: scalar {key}");
                }
                assert!(fitted.get(key).is_some(), "round {round}: {key} kept");
            }
            if size > budget {
                // Only when what may not yield is itself over: each large part at its floor.
                let floor: usize = fitted
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| k.len() + 4 + chars(v).min(TEXT_FLOOR * 8 + SMALL))
                    .sum();
                assert!(floor + 200 >= budget, "round {round}: {size} over {budget}");
            }
        }
    }
}
