//! Text from a scenario file stays text on the terminal: the one escaping function every
//! output that shows a value from a file (a name, an id, a key, a snippet of the source) goes
//! through.
//!
//! A control character (Unicode category Cc: C0, DEL and C1, so ESC, BEL, CR and newline too)
//! and the invisible characters that reorder or break a line (bidirectional overrides and
//! isolates, U+2028 and U+2029) or hide in one (the byte-order mark U+FEFF) are shown as a
//! Rust-style escape, `\u{1b}`: visible, and never something a terminal acts on. Everything
//! else, backslashes included, is shown as written.

use std::borrow::Cow;

/// Whether `c` is shown escaped (see the module docs).
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
                | '\u{2028}' | '\u{2029}' | '\u{feff}'
        )
}

/// Appends `c` to `out`, escaped as `\u{1b}` if [`needs_escape`] says so.
pub fn push_escaped(out: &mut String, c: char) {
    if needs_escape(c) {
        out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
    } else {
        out.push(c);
    }
}

/// `text` with every character [`needs_escape`] names escaped; borrowed when there is none.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

/// [`escape`] for each line of a text meant to keep its line breaks (a summary paragraph):
/// `\n` and `\r\n` stay line breaks, every other control character is escaped.
pub fn escape_lines(text: &str) -> String {
    text.lines().map(escape).collect::<Vec<_>>().join("\n")
}

/// Text from a file as a Markdown code span: its fence has more backticks than any run inside
/// (and spaces inside it, as CommonMark asks), so a backtick in a name cannot end the span early
/// and let the rest be read as Markdown or HTML.
pub fn md_code(text: &str) -> String {
    let text = escape(text);
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    if longest == 0 {
        return format!("`{text}`");
    }
    let fence = "`".repeat(longest + 1);
    format!("{fence} {text} {fence}")
}

/// Text from a file as a Markdown paragraph, one line per line: the characters Markdown or HTML
/// would act on are backslash-escaped (CommonMark escapes any ASCII punctuation), so a summary
/// shows as written and can neither open an HTML comment nor start a heading, list or table.
pub fn md_text(text: &str) -> String {
    text.lines()
        .map(|line| {
            let line = escape(line);
            let mut out = String::with_capacity(line.len() + 8);
            for (i, c) in line.chars().enumerate() {
                let at_start = i == 0 || out.trim().is_empty();
                if matches!(
                    c,
                    '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '#' | '|' | '~' | '!'
                ) || (at_start && matches!(c, '-' | '+' | '='))
                {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` as one word a POSIX shell reads back as it is: as it is when every character is
/// plain, else in single quotes (a quote inside as `'\''`), so a hint's command can be pasted.
pub fn shell_word(text: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./=:,@%+".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("'{}'", text.replace('\'', "'\\''")))
    }
}

/// `n` and an English noun, plural unless `n` is 1: "1 seed", "3 seeds", "2 entries".
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        return format!("1 {noun}");
    }
    match noun.strip_suffix('y') {
        Some(stem) if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) => format!("{n} {stem}ies"),
        _ => format!("{n} {noun}s"),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn shell_words_read_back_as_they_are() {
        assert_eq!(shell_word("w/x-1.toml"), "w/x-1.toml");
        assert_eq!(
            shell_word("new dir/my world.toml"),
            "'new dir/my world.toml'"
        );
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
    }
    use super::*;

    #[test]
    fn markdown_shows_text_as_written() {
        assert_eq!(md_code("bursty"), "`bursty`");
        assert_eq!(md_code("md`<img>`x"), "`` md`<img>`x ``");
        assert_eq!(md_code("a``b"), "``` a``b ```");
        assert_eq!(
            md_text("<!-- hide\n# head *x* a_b\n- item"),
            "\\<\\!-- hide\n\\# head \\*x\\* a\\_b\n\\- item"
        );
        assert_eq!(
            md_text("Plain text, (with) dots."),
            "Plain text, (with) dots."
        );
    }

    #[test]
    fn plurals() {
        assert_eq!(plural(1, "entry"), "1 entry");
        assert_eq!(plural(2, "entry"), "2 entries");
        assert_eq!(plural(0, "key"), "0 keys");
        assert_eq!(plural(3, "seed"), "3 seeds");
    }

    #[test]
    fn control_characters_become_visible_escapes() {
        assert_eq!(escape("a\u{1b}[31mb\u{7}"), "a\\u{1b}[31mb\\u{7}");
        assert_eq!(escape("x\ny\tz\r"), "x\\u{a}y\\u{9}z\\u{d}");
        assert_eq!(escape("\u{9b}\u{7f}"), "\\u{9b}\\u{7f}");
        assert_eq!(escape("evil\u{202e}txt"), "evil\\u{202e}txt");
    }

    #[test]
    fn escape_lines_keeps_line_breaks_only() {
        assert_eq!(escape_lines("a\nb\u{1b}\r\nc"), "a\nb\\u{1b}\nc");
    }

    #[test]
    fn ordinary_text_is_untouched_and_borrowed() {
        for text in ["bursty_provider", "é ü ✓ 東京", "C:\\path", ""] {
            assert!(matches!(escape(text), Cow::Borrowed(t) if t == text));
        }
    }
}
