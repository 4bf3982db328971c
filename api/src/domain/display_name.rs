//! Display names, as the leaderboard shows them to everyone.

/// Longest display name, in characters (once trimmed).
pub const MAX_CHARS: usize = 32;

/// Why a display name is refused.
pub const RULE: &str = "display_name must be 1 to 32 characters without control, formatting or invisible characters";

/// The trimmed name, if it is one: 1 to `MAX_CHARS` characters, none of them a control
/// character or one that changes how neighbouring text is shown (bidirectional overrides such
/// as U+202E turn "gro.elpmaxe" into a spoofed name) or is invisible (zero-width characters
/// make two names that look the same).
pub fn parse(name: &str) -> Option<&str> {
    let name = name.trim();
    let fits = (1..=MAX_CHARS).contains(&name.chars().count());
    (fits && !name.chars().any(|c| c.is_control() || is_format(c))).then_some(name)
}

/// Unicode's format characters (general category Cf) and the other invisible ones a name
/// could hide: bidirectional marks, embeddings, overrides and isolates; zero-width spaces and
/// joiners; word joiners and invisible operators; the byte-order mark; soft hyphen; tags.
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}' | '\u{0600}'..='\u{0605}' | '\u{06DD}' | '\u{070F}'
        | '\u{110BD}' | '\u{1D173}'..='\u{1D17A}' | '\u{E0001}' | '\u{E0020}'..='\u{E007F}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(parse("  Satoshi "), Some("Satoshi"));
        assert_eq!(parse("名前 ✓ émile"), Some("名前 ✓ émile"));
        assert_eq!(parse(&"é".repeat(32)), Some("é".repeat(32).as_str()));
        assert_eq!(parse(&"é".repeat(33)), None);
        assert_eq!(parse("   "), None);
        assert_eq!(parse("tab\there"), None);
    }

    #[test]
    fn bidi_and_invisible_characters_are_refused() {
        for spoof in ["admin\u{202E}nimda", "a\u{2066}b", "zero\u{200B}width", "join\u{200D}er", "bom\u{FEFF}", "soft\u{00AD}hyphen", "tag\u{E0041}"] {
            assert_eq!(parse(spoof), None, "{spoof:?}");
        }
    }
}
