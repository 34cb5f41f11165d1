//! Property tests over what the wire parses from outside: JSON-RPC lines (and batches) and
//! the JSON strings it writes. Each property runs `PROPTEST_CASES` cases (256 by default;
//! `scripts/fuzz` runs many more): nothing panics on arbitrary input, and generated messages
//! are classified as a model says.

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::rpc::{self, Incoming};
use crate::testing::{config, json_value};

proptest! {
    #![proptest_config(config())]

    #[test]
    fn json_strings_are_escaped_as_serde_json_escapes_them(text in "(.|[\\x00-\\x1f\"\\\\\\x7f\u{2028}])*") {
        prop_assert_eq!(rpc::json_string(&text), serde_json::Value::from(text.as_str()).to_string());
    }

    #[test]
    fn rpc_parse_never_panics(bytes in vec(any::<u8>(), 0..512)) {
        let _ = rpc::parse(&bytes);
    }

    #[test]
    fn rpc_parse_classifies_generated_messages(
        id in prop_oneof![any::<i64>().prop_map(Value::from), "[a-z0-9-]{1,12}".prop_map(Value::from)],
        method in "[a-z/_]{1,20}",
        params in json_value(),
        notification in any::<bool>(),
    ) {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if !notification {
            message["id"] = id.clone();
        }
        // `"params": null` is read as no params (clients send it).
        let params_ok = params.is_object() || params.is_array() || params.is_null();
        message["params"] = params;
        let text = message.to_string();
        match (rpc::parse(text.as_bytes()), notification, params_ok) {
            (Incoming::Request { id: got, method: m, .. }, false, true) => {
                prop_assert_eq!(got.get(), id.to_string());
                prop_assert_eq!(m.as_ref(), method.as_str());
            }
            (Incoming::Notification { method: m, .. }, true, true) => {
                prop_assert_eq!(m.as_ref(), method.as_str());
            }
            (Incoming::Invalid { code, .. }, _, false) => prop_assert_eq!(code, rpc::INVALID_REQUEST),
            (other, n, p) => prop_assert!(false, "{text}: {other:?} (notification {n}, params ok {p})"),
        }
    }

    #[test]
    fn rpc_batches_are_refused_whatever_they_hold(items in vec(json_value(), 0..5)) {
        let text = Value::Array(items).to_string();
        match rpc::parse(text.as_bytes()) {
            Incoming::Invalid { code, message, .. } => {
                prop_assert_eq!(code, rpc::INVALID_REQUEST);
                prop_assert!(message.contains("batch"), "{message}");
            }
            other => prop_assert!(false, "{text}: {other:?}"),
        }
    }
}
