//! How an upstream answer's `result` becomes a [`Value`] when all of it need not: a page of a
//! list (`tools/list`, `prompts/list`, …) is read as a stream, its items kept only while the
//! caller has room for them and the rest counted ([`list_page`]), so a server that lists
//! 100 000 tools on one page costs the page's text, never a model of every tool.
//!
//! Invariant: a shaped result holds every member of the result but the list, whose items past
//! `keep` are only counted (in [`UNREAD`]).

use std::fmt;
use std::sync::Arc;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Turns a result, as the server wrote it, into the value a request answers with.
pub(crate) type Shape = Arc<dyn Fn(&RawValue) -> Result<Value, String> + Send + Sync>;

/// The member of a shaped page that counts the items read but not kept.
pub(crate) const UNREAD: &str = "dev.coremcp/unread";

/// A page of the list under `key` with at most `keep` of its items kept, the rest counted in
/// [`UNREAD`].
pub(crate) fn list_page(key: &str, keep: usize) -> Shape {
    let key = key.to_owned();
    Arc::new(move |raw: &RawValue| {
        let mut reader = serde_json::Deserializer::from_str(raw.get());
        reader
            .deserialize_map(Page { key: &key, keep })
            .map_err(|e| format!("the {key} page does not parse: {e}"))
    })
}

/// Reads a page object: every member as it is, but `key`'s list cut to `keep` items.
struct Page<'a> {
    key: &'a str,
    keep: usize,
}

impl<'de> Visitor<'de> for Page<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object with a {} list", self.key)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            if name == self.key {
                let (items, unread) = map.next_value_seed(Items { keep: self.keep })?;
                out.insert(name, Value::Array(items));
                out.insert(UNREAD.to_owned(), unread.into());
            } else {
                out.insert(name, map.next_value::<Value>()?);
            }
        }
        Ok(Value::Object(out))
    }
}

/// The items of a list: the first `keep` as values, the rest counted.
struct Items {
    keep: usize,
}

impl<'de> DeserializeSeed<'de> for Items {
    type Value = (Vec<Value>, usize);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Items {
    type Value = (Vec<Value>, usize);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut kept = Vec::new();
        let mut unread = 0usize;
        while kept.len() < self.keep {
            match seq.next_element::<Value>()? {
                Some(item) => kept.push(item),
                None => return Ok((kept, unread)),
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {
            unread += 1;
        }
        Ok((kept, unread))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shaped(text: &str, keep: usize) -> Value {
        let raw = RawValue::from_string(text.to_owned()).expect("json");
        list_page("tools", keep)(&raw).expect("shaped")
    }

    #[test]
    fn a_page_keeps_what_there_is_room_for_and_counts_the_rest() {
        let page = shaped(
            r#"{"tools":[{"name":"a"},{"name":"b"},{"name":"c"}],"nextCursor":"x","_meta":{"k":1}}"#,
            2,
        );
        assert_eq!(
            page["tools"],
            serde_json::json!([{"name": "a"}, {"name": "b"}])
        );
        assert_eq!(page[UNREAD], 1);
        assert_eq!(page["nextCursor"], "x");
        assert_eq!(page["_meta"]["k"], 1);
        let all = shaped(r#"{"tools":[{"name":"a"}]}"#, 10);
        assert_eq!(all[UNREAD], 0);
        let none = shaped(r#"{"tools":[{"name":"a"}]}"#, 0);
        assert_eq!(
            (none["tools"].clone(), none[UNREAD].clone()),
            (serde_json::json!([]), 1.into())
        );
        let raw = RawValue::from_string(r#"{"tools":"x"}"#.to_owned()).expect("json");
        assert!(list_page("tools", 1)(&raw).is_err());
    }
}
