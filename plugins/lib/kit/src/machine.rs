//! This machine's name as the Registry knows hosts: what `bootstrap` registers, and what
//! `repo_setup` and the docs tools look checkouts up by. One rule, so the two always agree.

/// This machine's name as a Registry host name (`^[a-z0-9][a-z0-9-]{0,62}$`).
pub fn machine_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .unwrap_or_default();
    host_name(&raw)
}

/// `raw` (a hostname) as a Registry host name: lowercase, the first label, other characters as
/// `-`, at most 63 characters; `localhost` when nothing is left.
pub fn host_name(raw: &str) -> String {
    let first = raw
        .trim()
        .split('.')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut name: String = first
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name = name.trim_matches('-').chars().take(63).collect();
    if name.is_empty() {
        "localhost".into()
    } else {
        name
    }
}
