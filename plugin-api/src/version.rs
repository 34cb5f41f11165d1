//! The ABI version and the compatibility rule the host applies before it runs plugin code.

use std::fmt;

/// The plugin ABI version: this crate's version.
pub const API_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A parsed `major.minor.patch` ABI version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ApiVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl ApiVersion {
    /// Parses `major.minor.patch` (a pre-release or build suffix on the patch is ignored).
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.trim().splitn(3, '.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch_text = parts.next()?;
        let digits = patch_text
            .find(|c: char| !c.is_ascii_digit())
            .map_or(patch_text, |end| &patch_text[..end]);
        let patch = digits.parse().ok()?;
        Some(Self {
            major,
            minor,
            patch,
        })
    }

    /// This crate's version, parsed.
    pub fn current() -> Self {
        Self::parse(API_VERSION).unwrap_or(Self {
            major: 0,
            minor: 0,
            patch: 0,
        })
    }

    /// Whether a host speaking `self` can load a plugin built against `plugin`.
    ///
    /// Same major version; in `0.x`, the same minor too (semver's rule for unstable versions).
    /// A plugin built against an older or newer minor loads: minors only append prefix fields,
    /// which both sides read as optional.
    pub fn accepts(self, plugin: Self) -> bool {
        self.major == plugin.major && (self.major != 0 || self.minor == plugin.minor)
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> ApiVersion {
        ApiVersion::parse(text).expect("test version parses")
    }

    #[test]
    fn parses_versions() {
        assert_eq!(
            v("1.2.3"),
            ApiVersion {
                major: 1,
                minor: 2,
                patch: 3
            }
        );
        assert_eq!(
            v("1.0.0-rc.1"),
            ApiVersion {
                major: 1,
                minor: 0,
                patch: 0
            }
        );
        assert_eq!(ApiVersion::parse("1.0"), None);
        assert_eq!(ApiVersion::parse("x.1.0"), None);
    }

    #[test]
    fn compatibility_rule() {
        let cases = [
            ("1.0.0", "1.0.0", true),
            ("1.0.0", "1.3.0", true),
            ("1.3.0", "1.0.2", true),
            ("1.0.0", "2.0.0", false),
            ("2.0.0", "1.9.9", false),
            ("0.3.0", "0.3.9", true),
            ("0.3.0", "0.4.0", false),
        ];
        for (host, plugin, expected) in cases {
            assert_eq!(
                v(host).accepts(v(plugin)),
                expected,
                "host {host} plugin {plugin}"
            );
        }
    }

    #[test]
    fn current_is_the_crate_version() {
        assert_eq!(ApiVersion::current().to_string(), API_VERSION);
    }
}
