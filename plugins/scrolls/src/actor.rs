//! Who did what: the actor every activity row records.
//!
//! Invariants: an actor is never taken from an argument that does not name one. It is the
//! agent the call names (`agent`, `author`, the claimer); else the caller's registered agent
//! (an agent named as the caller's principal, or as its client); else the caller as the host
//! knows it (a token's principal, or the client's name — for a call a peer passed on for its
//! machine's own user, the client's name it carried). The host's answer comes from the
//! call's own context (`host_call("caller")`), which carries a principal through relays and
//! routes only from configured peers.

use coremcp_store::plugin::TxError;
use coremcp_store::Tx;

/// The actor of a call that names `agent` (or none).
pub fn of(tx: &mut Tx<'_>, agent: Option<&str>) -> Result<Option<String>, TxError> {
    if let Some(agent) = agent {
        return Ok(Some(agent.to_owned()));
    }
    let Some(caller) = coremcp_plugin_sdk::caller::Caller::of_call() else {
        // Outside a host (a test of the plugin itself): nobody is known.
        return Ok(None);
    };
    // A configured peer's own token stands for the other machine's user: its client's name
    // says more (the SDK's caller drops such a principal). An actor is the client's name.
    let principal = caller.principal.as_deref();
    let client = caller.client_name();
    // The registered agent decides only between a principal and a client: the principal,
    // unless only the client names a registered agent. Otherwise no lookup is needed.
    let (Some(principal), Some(client)) = (principal, client) else {
        return Ok(principal.or(client).map(str::to_owned));
    };
    let registered = tx.query(
        "SELECT name FROM scrolls_agent WHERE name IN ($1, $2)",
        &[principal.into(), client.into()],
    )?;
    let named = |who: &str| {
        registered
            .iter()
            .any(|r| r.get_text("name").is_ok_and(|n| n == who))
    };
    let actor = match named(principal) || !named(client) {
        true => principal,
        false => client,
    };
    Ok(Some(actor.to_owned()))
}
