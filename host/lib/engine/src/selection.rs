//! Which groups a session sees (`--groups`): all, a fixed few, or all reachable at run time
//! with a few to start with (`dynamic`, `search`). Parsing only; no I/O.

/// Which groups a session sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupSelection {
    /// Every installed group.
    All,
    /// Only these (their libraries are the only ones ever loaded).
    Only(Vec<String>),
    /// Every installed group may be enabled at run time (`dynamic`); a session starts with the
    /// meta tools and these.
    Dynamic(Vec<String>),
    /// Every installed group is reached through `tools_search` and `tools_call` (`search`); a
    /// session lists those two and these groups' tools.
    Search(Vec<String>),
}

impl GroupSelection {
    /// Parses `all`, a comma-separated list of group ids, or `dynamic` or `search` followed
    /// by the groups a session starts with (`dynamic,git,files`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() || text == "all" {
            return Ok(Self::All);
        }
        let mut mode = None;
        let mut rest = text;
        for word in ["dynamic", "search"] {
            match text.strip_prefix(word) {
                Some("") => {
                    mode = Some(word);
                    rest = "";
                }
                Some(after) if after.starts_with(',') => {
                    mode = Some(word);
                    rest = &after[1..];
                }
                _ => {}
            }
        }
        let mut ids = Vec::new();
        for id in rest.split(',').map(str::trim).filter(|_| !rest.is_empty()) {
            if matches!(id, "dynamic" | "search" | "all") {
                return Err(format!(
                    "--groups: \"{id}\" must come alone or first (dynamic,git,files)"
                ));
            }
            let valid = !id.is_empty()
                && id
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !valid {
                return Err(format!(
                    "--groups: \"{id}\" is not a group id (lowercase letters, digits and _)"
                ));
            }
            if !ids.iter().any(|known: &String| known == id) {
                ids.push(id.to_owned());
            }
        }
        Ok(match mode {
            Some("dynamic") => Self::Dynamic(ids),
            Some(_) => Self::Search(ids),
            None => Self::Only(ids),
        })
    }

    /// Whether the group's library may be discovered (and so loaded) at all.
    pub(crate) fn includes(&self, id: &str) -> bool {
        match self {
            Self::All | Self::Dynamic(_) | Self::Search(_) => true,
            Self::Only(ids) => ids.iter().any(|g| g == id),
        }
    }

    /// The groups named on the command line (`None` for all).
    pub fn named(&self) -> Option<&[String]> {
        match self {
            Self::All => None,
            Self::Only(ids) | Self::Dynamic(ids) | Self::Search(ids) => Some(ids),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GroupSelection;

    #[test]
    fn group_selection() {
        assert_eq!(GroupSelection::parse("all"), Ok(GroupSelection::All));
        assert_eq!(GroupSelection::parse(""), Ok(GroupSelection::All));
        assert_eq!(
            GroupSelection::parse("git, publishing,git"),
            Ok(GroupSelection::Only(vec![
                "git".into(),
                "publishing".into()
            ]))
        );
        assert!(GroupSelection::parse("Git")
            .expect_err("uppercase")
            .contains("\"Git\" is not a group id"));
        assert!(GroupSelection::parse("a,,b").is_err());
        assert_eq!(
            GroupSelection::parse("dynamic"),
            Ok(GroupSelection::Dynamic(Vec::new()))
        );
        assert_eq!(
            GroupSelection::parse("dynamic,git,files"),
            Ok(GroupSelection::Dynamic(vec!["git".into(), "files".into()]))
        );
        assert!(GroupSelection::parse("git,dynamic")
            .expect_err("dynamic comes first")
            .contains("alone or first"));
        assert!(GroupSelection::parse("dynamicx")
            .is_ok_and(|g| g == GroupSelection::Only(vec!["dynamicx".into()])));
        assert_eq!(
            GroupSelection::parse("search"),
            Ok(GroupSelection::Search(Vec::new()))
        );
        assert_eq!(
            GroupSelection::parse("search,git"),
            Ok(GroupSelection::Search(vec!["git".into()]))
        );
        assert!(GroupSelection::parse("dynamic,search")
            .expect_err("one mode")
            .contains("alone or first"));
    }
}
