//! Listing containers, and the summary of one that `docker_container_list`,
//! `stale_containers_find` and Compose's `ps` answer with: the same fields, in the same order,
//! from one function.
//!
//! A daemon's list is outside input of up to 8 MB (90 000 small containers fit in it), so it
//! is read as a stream: each container is read into the few fields a summary shows
//! ([`Container`]), judged by the caller's test, and kept only while fewer than the caller's
//! `keep` are; the rest are counted ([`Listing::matched`]). A list costs its answer's bytes and
//! the containers kept, never a model of every container.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use coremcp_plugin_sdk::{time, Ctx};
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::{exchange, DockerError, Endpoint};

/// The label Compose (v1 and v2) puts on a project's containers.
pub const COMPOSE_PROJECT: &str = "com.docker.compose.project";

/// One container of a daemon's list, as much of it as a summary shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Container {
    #[serde(rename = "Id", default)]
    pub id: String,
    #[serde(rename = "Names", default, deserialize_with = "nullable")]
    pub names: Vec<String>,
    #[serde(rename = "Image", default)]
    pub image: String,
    #[serde(rename = "State", default)]
    pub state: String,
    #[serde(rename = "Status", default)]
    pub status: String,
    /// Seconds since the epoch.
    #[serde(rename = "Created", default)]
    pub created: i64,
    #[serde(rename = "Ports", default, deserialize_with = "nullable")]
    pub ports: Vec<Port>,
    #[serde(rename = "Labels", default, deserialize_with = "nullable")]
    pub labels: BTreeMap<String, String>,
}

/// One published or exposed port.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Port {
    #[serde(rename = "PrivatePort", default)]
    pub private: u16,
    #[serde(rename = "PublicPort", default)]
    pub public: Option<u16>,
    #[serde(rename = "Type", default)]
    pub kind: Option<String>,
    #[serde(rename = "IP", default)]
    pub ip: Option<String>,
}

/// A value the daemon may send as `null`: its default then.
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The containers of a list that a caller keeps, and how many its test took in all.
#[derive(Debug, Default)]
pub struct Listing {
    /// The first `keep` containers the test took: in the daemon's order, or by name after the
    /// page's `after` ([`list_by_name`]).
    pub kept: Vec<Container>,
    /// Every container the test took, kept or not.
    pub matched: usize,
    /// Those of them past the page's `after` ([`list_by_name`]; all of them otherwise).
    pub remaining: usize,
}

/// The name a container is known by: its first, without the leading `/` (its id when it has
/// none).
pub fn name_of(c: &Container) -> &str {
    c.names
        .first()
        .map_or(c.id.as_str(), |n| n.trim_start_matches('/'))
}

/// The daemon's containers matching `filters` (Engine API filter names: `label`, `name`,
/// `status`, `id`, …), every state when `all`, that `select` takes: the first `keep` of them,
/// and how many there were.
pub fn list(
    ctx: &Ctx<'_>,
    endpoint: &Endpoint,
    all: bool,
    filters: HashMap<String, Vec<String>>,
    keep: usize,
    select: impl Fn(&Container) -> bool,
) -> Result<Listing, DockerError> {
    read_list(
        ctx,
        endpoint,
        all,
        filters,
        Keep {
            keep,
            select: &select,
            after: None,
        },
    )
}

/// [`list`] as a page in name order: of the containers `select` takes, the `keep` first by
/// name after `after` (every one when `None`), sorted; [`Listing::remaining`] counts those
/// after `after`. Names are unique on a daemon, so pages that go on from the last name shown
/// return each container once.
pub fn list_by_name(
    ctx: &Ctx<'_>,
    endpoint: &Endpoint,
    all: bool,
    filters: HashMap<String, Vec<String>>,
    (keep, after): (usize, Option<&str>),
    select: impl Fn(&Container) -> bool,
) -> Result<Listing, DockerError> {
    let keep = Keep {
        keep,
        select: &select,
        after: Some(after.unwrap_or_default()),
    };
    read_list(ctx, endpoint, all, filters, keep)
}

fn read_list(
    ctx: &Ctx<'_>,
    endpoint: &Endpoint,
    all: bool,
    filters: HashMap<String, Vec<String>>,
    keep: Keep<'_, '_>,
) -> Result<Listing, DockerError> {
    let docker = crate::daemon(ctx, endpoint)?;
    let mut path = format!("/containers/json?all={all}");
    if !filters.is_empty() {
        let filters = serde_json::to_string(&filters).unwrap_or_default();
        path.push_str("&filters=");
        path.push_str(&query_escaped(&filters));
    }
    let target = endpoint.clone();
    let body = exchange(ctx, endpoint, "", async move {
        crate::transport::get(&target, &docker, &path).await
    })?;
    let mut reader = serde_json::Deserializer::from_slice(&body);
    reader.deserialize_seq(keep).map_err(|e| DockerError::Api {
        endpoint: endpoint.to_string(),
        status: 200,
        message: format!("its list of containers does not parse: {e}"),
    })
}

/// Reads a list of containers one at a time: kept while fewer than `keep` are (in name order
/// past `after`, when it is given: the smallest names are kept, a bounded few at a time),
/// counted always.
struct Keep<'a, 'b> {
    keep: usize,
    select: &'a dyn Fn(&Container) -> bool,
    after: Option<&'b str>,
}

impl<'de> Visitor<'de> for Keep<'_, '_> {
    type Value = Listing;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of containers")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Listing, A::Error> {
        let mut listing = Listing::default();
        let by_name = |list: &mut Vec<Container>, keep: usize| {
            list.sort_by(|a, b| name_of(a).cmp(name_of(b)));
            list.truncate(keep);
        };
        while let Some(container) = seq.next_element::<Container>()? {
            if !(self.select)(&container) {
                continue;
            }
            listing.matched += 1;
            match self.after {
                None => {
                    listing.remaining += 1;
                    if listing.kept.len() < self.keep {
                        listing.kept.push(container);
                    }
                }
                Some(after) if name_of(&container) > after => {
                    listing.remaining += 1;
                    listing.kept.push(container);
                    // Sorted down to `keep` whenever twice as many wait: bounded memory.
                    if listing.kept.len() >= 2 * self.keep.max(1) {
                        by_name(&mut listing.kept, self.keep);
                    }
                }
                Some(_) => {}
            }
        }
        if self.after.is_some() {
            by_name(&mut listing.kept, self.keep);
        }
        Ok(listing)
    }
}

/// `text` as a query value: everything but unreserved characters percent-encoded.
fn query_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The short id the `docker` CLI shows.
pub fn short_id(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// One container as the tools show it. `created` is RFC 3339; labels are sorted by key.
pub fn summary(c: &Container) -> Value {
    let name = c.names.first().map(|n| n.trim_start_matches('/'));
    let ports: Vec<Value> = c
        .ports
        .iter()
        .map(|p| {
            let mut port = json!({
                "private": p.private,
                "type": p.kind.clone().unwrap_or_else(|| "tcp".into()),
            });
            if let Some(public) = p.public {
                port["public"] = json!(public);
            }
            if let Some(ip) = p.ip.as_deref().filter(|ip| !ip.is_empty()) {
                port["ip"] = json!(ip);
            }
            port
        })
        .collect();
    let mut out = json!({
        "id": short_id(&c.id),
        "name": name.unwrap_or_default(),
        "image": c.image,
        "state": c.state,
        "status": c.status,
        "created": time::rfc3339(c.created),
        "ports": ports,
        "labels": c.labels,
    });
    if let Some(project) = c.labels.get(COMPOSE_PROJECT) {
        out["compose_project"] = json!(project);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, keep: usize, select: &dyn Fn(&Container) -> bool) -> Listing {
        read_after(text, keep, None, select)
    }

    fn read_after(
        text: &str,
        keep: usize,
        after: Option<&str>,
        select: &dyn Fn(&Container) -> bool,
    ) -> Listing {
        serde_json::Deserializer::from_str(text)
            .deserialize_seq(Keep {
                keep,
                select,
                after,
            })
            .expect("parses")
    }

    #[test]
    fn a_page_by_name_keeps_the_first_names_after_the_cursor_in_bounded_memory() {
        // 1 000 containers in a scrambled order; pages of 7 walk them all by name.
        let entries: Vec<String> = (0..1_000)
            .map(|i| format!(r#"{{"Id":"{i}","Names":["/c{:04}"]}}"#, (i * 389) % 1_000))
            .collect();
        let text = format!("[{}]", entries.join(","));
        let mut after: Option<String> = None;
        let mut walked = Vec::new();
        loop {
            let page = read_after(&text, 7, Some(after.as_deref().unwrap_or("")), &|_| true);
            assert_eq!(page.matched, 1_000);
            assert_eq!(page.remaining, 1_000 - walked.len());
            let names: Vec<String> = page.kept.iter().map(|c| name_of(c).to_owned()).collect();
            if names.is_empty() {
                break;
            }
            after = names.last().cloned();
            walked.extend(names);
        }
        let expected: Vec<String> = (0..1_000).map(|i| format!("c{i:04}")).collect();
        assert_eq!(walked, expected);
        // Without a page: the daemon's order, the first `keep`.
        let first = read(&text, 3, &|_| true);
        assert_eq!(name_of(&first.kept[1]), "c0389");
    }

    #[test]
    fn a_list_keeps_what_it_shows_and_counts_the_rest() {
        let text = r#"[
            {"Id":"0123456789abcdef","Names":["/a"],"Image":"busybox","State":"running",
             "Status":"Up","Created":1700000000,"Ports":[{"PrivatePort":80,"Type":"tcp"}],
             "Labels":{"com.docker.compose.project":"p"},"HostConfig":{"NetworkMode":"none"},
             "Mounts":[],"NetworkSettings":{"Networks":{}}},
            {"Id":"b","Names":null,"Labels":null,"Ports":null,"State":"exited","Created":1},
            {"Id":"c","State":"exited"}
        ]"#;
        let all = read(text, 10, &|_| true);
        assert_eq!((all.kept.len(), all.matched), (3, 3));
        let shown = summary(&all.kept[0]);
        assert_eq!(shown["id"], "0123456789ab");
        assert_eq!(shown["name"], "a");
        assert_eq!(shown["compose_project"], "p");
        assert_eq!(shown["ports"][0]["type"], "tcp");
        assert_eq!(summary(&all.kept[1])["name"], "");
        let exited = read(text, 1, &|c| c.state == "exited");
        assert_eq!((exited.kept.len(), exited.matched), (1, 2));
        assert_eq!(exited.kept[0].id, "b");
    }

    #[test]
    fn filters_travel_escaped() {
        assert_eq!(
            query_escaped(r#"{"label":["a=b c"]}"#),
            "%7B%22label%22%3A%5B%22a%3Db%20c%22%5D%7D"
        );
    }
}
