//! What the host crates' property tests share: the configuration every property runs under,
//! arbitrary JSON values, a byte stream cut into pieces, and the model of a bounded line
//! reader. Compiled for this crate's tests and, through the `testing` feature, for the other
//! host crates' (a dev-dependency only: no build of the binary has it).

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::Value;

pub fn config() -> ProptestConfig {
    ProptestConfig {
        // Failures print their shrunk input; nothing is written into the source tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Arbitrary JSON values, a few levels deep.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            vec((".{0,8}", inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// `bytes` cut into pieces at `cuts` (offsets modulo the length).
pub fn pieces(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|c| if bytes.is_empty() { 0 } else { c % bytes.len() })
        .collect();
    at.push(0);
    at.push(bytes.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| bytes[w[0]..w[1]].to_vec()).collect()
}

/// The model of a bounded line reader: lines split on `\n`, a trailing `\r` dropped, lines
/// longer than `max` replaced by their length.
pub fn model_lines(input: &[u8], max: usize) -> Vec<Result<Vec<u8>, u64>> {
    let mut out = Vec::new();
    let mut parts: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    if parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    for part in parts {
        if part.len() > max {
            out.push(Err(part.len() as u64));
        } else {
            out.push(Ok(part.to_vec()));
        }
    }
    out
}
