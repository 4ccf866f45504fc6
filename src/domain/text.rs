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
//! * **control characters**, C0 (other than line feed and tab), DEL and C1 (U+0080–U+009F),
//!   are removed: they mean nothing in a comment and can rewrite a terminal or a log line that
//!   shows one (a carriage return is one of them: `\r\n` becomes `\n`; U+009B is a one-byte
//!   CSI to a terminal that reads C1 controls, U+0085 a line break to some log readers);
//! * what is left is trimmed, and must hold at least one **visible** character: whitespace and
//!   invisible characters alone would store a comment that shows as blank. The invisible ones
//!   are [`INVISIBLE`]: every `Default_Ignorable_Code_Point` of Unicode 16.0 (what a renderer
//!   shows nothing for: zero-width spaces and joiners, invisible operators, soft hyphens,
//!   fillers, variation selectors, tags, shorthand format controls, and the reserved code
//!   points of those blocks, which a later Unicode may fill with more of them), the format
//!   characters (`Cf`) that draw nothing although they are not default-ignorable (interlinear
//!   annotation characters, Egyptian hieroglyph format controls), and the Braille pattern
//!   blank (a letter that fonts draw as nothing). The `Cf` characters left out
//!   draw a glyph (U+0600–U+0605, U+06DD, U+070F, U+0890–U+0891, U+08E2, U+110BD, U+110CD:
//!   the signs that span the digits after them).
//!
//! Everything else is kept as written (emoji, every script, combining marks): the text is
//! escaped where it is rendered, never here.

/// Bidirectional embeddings, overrides and isolates: LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI,
/// PDI.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// C0 controls except `\n` and `\t`, DEL, and the C1 controls (U+0080–U+009F).
fn is_stripped_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// The characters that draw nothing besides whitespace and controls, as inclusive ranges
/// (see the module's documentation for where the list comes from).
pub const INVISIBLE: &[(char, char)] = &[
    ('\u{00AD}', '\u{00AD}'),   // soft hyphen
    ('\u{034F}', '\u{034F}'),   // combining grapheme joiner
    ('\u{061C}', '\u{061C}'),   // Arabic letter mark
    ('\u{115F}', '\u{1160}'),   // Hangul choseong and jungseong fillers
    ('\u{17B4}', '\u{17B5}'),   // Khmer inherent vowels
    ('\u{180B}', '\u{180F}'),   // Mongolian variation selectors and vowel separator
    ('\u{200B}', '\u{200F}'),   // zero-width space, non-joiner, joiner; LRM, RLM
    ('\u{202A}', '\u{202E}'),   // bidirectional embeddings and overrides
    ('\u{2060}', '\u{206F}'),   // word joiner, invisible operators, isolates, deprecated
    ('\u{2800}', '\u{2800}'),   // Braille pattern blank
    ('\u{3164}', '\u{3164}'),   // Hangul filler
    ('\u{FE00}', '\u{FE0F}'),   // variation selectors
    ('\u{FEFF}', '\u{FEFF}'),   // zero-width no-break space (byte order mark)
    ('\u{FFA0}', '\u{FFA0}'),   // halfwidth Hangul filler
    ('\u{FFF0}', '\u{FFF8}'),   // reserved, default-ignorable
    ('\u{FFF9}', '\u{FFFB}'),   // interlinear annotation anchor, separator, terminator
    ('\u{13430}', '\u{1343F}'), // Egyptian hieroglyph format controls
    ('\u{1BCA0}', '\u{1BCA3}'), // shorthand format controls
    ('\u{1D173}', '\u{1D17A}'), // musical symbol beam and phrase controls
    ('\u{E0000}', '\u{E0FFF}'), // tags, variation selectors supplement, reserved
];

/// Characters that draw nothing: whitespace, controls, and [`INVISIBLE`].
fn is_invisible(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || INVISIBLE
            .iter()
            .any(|&(first, last)| (first..=last).contains(&c))
}

/// `value` without bidirectional controls and control characters (but `\n` and `\t`), trimmed.
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
    fn every_c1_control_is_removed_like_the_c0_ones() {
        for c in '\u{80}'..='\u{9F}' {
            assert_eq!(clean(&format!("a{c}b")), "ab", "U+{:04X}", u32::from(c));
        }
        // The one-byte CSI would clear a terminal that reads C1 controls; NEL breaks a log line.
        assert_eq!(clean("ok\u{9B}2J\u{85}done"), "ok2Jdone");
        assert_eq!(
            clean("\u{85}\u{A0}x\u{85}"),
            "x",
            "trimmed after the removal"
        );
    }

    #[test]
    fn text_of_only_invisible_characters_shows_nothing() {
        for blank in [
            "",
            " \n\t",
            "\u{200B}\u{200D}\u{FEFF}",
            "\u{3164}\u{2800}",
            "\u{2060}\u{00AD}\u{E0041}",
            "\u{2061}\u{2062}\u{2063}\u{2064}",
            "\u{180E}\u{FFF9}\u{FFFA}\u{FFFB}",
            "\u{1BCA0}\u{1BCA1}\u{1BCA2}\u{1BCA3}",
            "\u{FFF0}\u{FFF8}\u{13430}\u{1343F}\u{E0001}\u{E0100}\u{E0FFF}",
            "\u{85}\u{9B}\u{9F}",
        ] {
            assert!(!has_visible(&clean(blank)), "{blank:?}");
        }
        for shown in ["a", "\u{200B}.", "👍", "\u{0301}e", "\u{0600}1", "\u{FFFC}"] {
            assert!(has_visible(&clean(shown)), "{shown:?}");
        }
    }

    /// Every character of every range, alone and between spaces, is refused as blank; the
    /// characters just outside each range that are visible stay visible.
    #[test]
    fn each_listed_invisible_character_alone_shows_nothing() {
        for &(first, last) in INVISIBLE {
            assert!(first <= last, "{first:?}..{last:?}");
            for c in first..=last {
                let text = format!(" {c}{c} ");
                assert!(!has_visible(&clean(&text)), "U+{:04X}", u32::from(c));
            }
        }
        for neighbour in ['\u{00AC}', '\u{00AE}', '\u{FFFC}', '\u{1BC9F}', '\u{1D172}'] {
            assert!(has_visible(&neighbour.to_string()), "{neighbour:?}");
        }
    }

    /// `Default_Ignorable_Code_Point` and the format characters (`Cf`) of Unicode 16.0, as
    /// DerivedCoreProperties.txt and the general categories list them (copied from the
    /// tables `regex-syntax` generates from them): every one is invisible here, but the `Cf`
    /// signs that draw a glyph over the digits after them.
    #[test]
    fn every_default_ignorable_code_point_and_invisible_format_character_is_invisible() {
        const DEFAULT_IGNORABLE: &[(u32, u32)] = &[
            (0x00AD, 0x00AD),
            (0x034F, 0x034F),
            (0x061C, 0x061C),
            (0x115F, 0x1160),
            (0x17B4, 0x17B5),
            (0x180B, 0x180F),
            (0x200B, 0x200F),
            (0x202A, 0x202E),
            (0x2060, 0x206F),
            (0x3164, 0x3164),
            (0xFE00, 0xFE0F),
            (0xFEFF, 0xFEFF),
            (0xFFA0, 0xFFA0),
            (0xFFF0, 0xFFF8),
            (0x1BCA0, 0x1BCA3),
            (0x1D173, 0x1D17A),
            (0xE0000, 0xE0FFF),
        ];
        const FORMAT: &[(u32, u32)] = &[
            (0x00AD, 0x00AD),
            (0x0600, 0x0605),
            (0x061C, 0x061C),
            (0x06DD, 0x06DD),
            (0x070F, 0x070F),
            (0x0890, 0x0891),
            (0x08E2, 0x08E2),
            (0x180E, 0x180E),
            (0x200B, 0x200F),
            (0x202A, 0x202E),
            (0x2060, 0x2064),
            (0x2066, 0x206F),
            (0xFEFF, 0xFEFF),
            (0xFFF9, 0xFFFB),
            (0x110BD, 0x110BD),
            (0x110CD, 0x110CD),
            (0x13430, 0x1343F),
            (0x1BCA0, 0x1BCA3),
            (0x1D173, 0x1D17A),
            (0xE0001, 0xE0001),
            (0xE0020, 0xE007F),
        ];
        const DRAWN: &[u32] = &[
            0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605, 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2,
            0x110BD, 0x110CD,
        ];
        for &(first, last) in DEFAULT_IGNORABLE.iter().chain(FORMAT) {
            for c in (first..=last).filter(|c| !DRAWN.contains(c)) {
                let c = char::from_u32(c).expect("a scalar value");
                assert!(is_invisible(c), "U+{:04X}", u32::from(c));
            }
        }
        for &c in DRAWN {
            let c = char::from_u32(c).expect("a scalar value");
            assert!(has_visible(&c.to_string()), "U+{:04X}", u32::from(c));
        }
    }
}
