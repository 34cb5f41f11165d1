//! Names on the wire that more than one part of the host checks: an upstream server's id,
//! which is a grant's target (the policy) and the middle of `mcp__<id>__<tool>` (the upstream
//! servers). Pure functions, no I/O.

/// The id rule, with the reason for the one surprise.
pub fn check_id(id: &str) -> Result<(), String> {
    let mut chars = id.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    if first_ok && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Ok(());
    }
    if id.contains('_') {
        return Err(format!(
            "server id \"{id}\" contains \"_\", which is not allowed: \"__\" separates the \
             server id from the tool name in mcp__<id>__<tool>; use \"-\" instead \
             (^[A-Za-z0-9][A-Za-z0-9-]*$)"
        ));
    }
    Err(format!(
        "server id \"{id}\" is not valid: use letters, digits and \"-\", starting with a \
         letter or digit (^[A-Za-z0-9][A-Za-z0-9-]*$)"
    ))
}

#[cfg(test)]
mod tests {
    use super::check_id;

    #[test]
    fn an_id_is_letters_digits_and_dashes_and_an_underscore_is_explained() {
        assert!(check_id("github").is_ok());
        assert!(check_id("my-server-2").is_ok());
        assert!(check_id("-lead").is_err());
        assert!(check_id("").is_err());
        let underscore = check_id("my_server").expect_err("an underscore");
        assert!(underscore.contains("\"__\" separates"), "{underscore}");
        let other = check_id("a.b").expect_err("a dot");
        assert!(other.contains("is not valid"), "{other}");
    }
}
