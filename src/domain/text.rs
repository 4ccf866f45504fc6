//! What a comment's text may hold: people's words, not instructions to the terminal or the
//! text renderer.
//!
//! Bodies and author names (typed, or taken from a token's name claim) are cleaned the same way
//! before anything is stored:
//!
//! * **bidirectional overrides and isolates** (U+202A–U+202E, U+2066–U+2069) are removed: they
//!   make a renderer show characters in another order than they are stored ("Trojan Source"),
//!   so a review could read as something else than what moderators search for, and a name could
//!   pose as another;
//! * **C0 control characters** other than line feed and tab, and DEL, are removed: they mean
//!   nothing in a comment and can rewrite a terminal or a log line that shows one (a carriage
//!   return is one of them: `\r\n` becomes `\n`);
//! * what is left is trimmed, and must hold at least one **visible** character: whitespace and
//!   invisible format characters (zero-width spaces and joiners, word joiners, soft hyphens,
//!   fillers, variation selectors, tags) alone would store a comment that shows as blank.
//!
//! Everything else is kept as written (emoji, every script, combining marks): the text is
//! escaped where it is rendered, never here.

/// Bidirectional embeddings, overrides and isolates: LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI,
/// PDI.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// C0 controls except `\n` and `\t`, and DEL.
fn is_stripped_control(c: char) -> bool {
    (c.is_ascii_control() && c != '\n' && c != '\t') || c == '\u{7F}'
}

/// Characters that draw nothing: whitespace, controls, and the invisible format characters
/// and fillers text uses to look blank.
fn is_invisible(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{2800}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E007F}'
                | '\u{E0100}'..='\u{E01EF}'
        )
}

/// `value` without bidirectional controls and stripped control characters, trimmed.
pub fn clean(value: &str) -> String {
    let kept: String = value
        .chars()
        .filter(|&c| !is_bidi_control(c) && !is_stripped_control(c))
        .collect();
    match kept.trim() {
        trimmed if trimmed.len() == kept.len() => kept,
        trimmed => trimmed.to_owned(),
    }
}

/// Whether `value` shows anything: at least one character that is not invisible.
pub fn has_visible(value: &str) -> bool {
    value.chars().any(|c| !is_invisible(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_controls_and_c0_controls_are_removed_newlines_and_tabs_kept() {
        assert_eq!(
            clean("\u{202E}gnp.exe\u{202C} ok\u{2066}x\u{2069}"),
            "gnp.exe okx"
        );
        assert_eq!(clean("a\r\nb\tc\u{0}d\u{1B}[2Je\u{7F}"), "a\nb\tcd[2Je");
        assert_eq!(clean("  Zoë 👍🏽 日本  "), "Zoë 👍🏽 日本");
    }

    #[test]
    fn text_of_only_invisible_characters_shows_nothing() {
        for blank in [
            "",
            " \n\t",
            "\u{200B}\u{200D}\u{FEFF}",
            "\u{3164}\u{2800}",
            "\u{2060}\u{00AD}\u{E0041}",
        ] {
            assert!(!has_visible(&clean(blank)), "{blank:?}");
        }
        for shown in ["a", "\u{200B}.", "👍", "\u{0301}e"] {
            assert!(has_visible(&clean(shown)), "{shown:?}");
        }
    }
}
