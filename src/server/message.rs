//! Bounded error texts.
//!
//! Host error texts echo what the caller sent (paths, ids, names). A status
//! text travels as the `grpc-message` header, and clients cap headers at a
//! few KiB (grpc-go and grpcio 8 KiB, tonic 16 KiB): an unbounded echo
//! turns the real error into RESOURCE_EXHAUSTED or a protocol error on the
//! client. [`bounded`] keeps texts of normal length as they are and cuts
//! long ones, keeping a prefix and saying how long the value was.

/// A run of text without white space (a path, an id) longer than this is cut.
const MAX_WORD: usize = 512;
/// What is kept of such a run.
const WORD_PREFIX: usize = 256;
/// The whole text, after cutting its runs, is cut beyond this.
const MAX_TEXT: usize = 2048;

/// `text` with every run without white space longer than 512 bytes cut to
/// its first 256 bytes plus `... (N bytes)`, and the result cut the same way
/// beyond 2048 bytes. Texts within the bounds are returned unchanged.
pub(crate) fn bounded(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_TEXT + 64));
    let mut rest = text;
    while !rest.is_empty() {
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (word, tail) = rest.split_at(word_end);
        out.push_str(&cut(word, MAX_WORD, WORD_PREFIX));
        let space_end = tail
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(tail.len());
        out.push_str(&tail[..space_end]);
        rest = &tail[space_end..];
    }
    cut(&out, MAX_TEXT, MAX_TEXT - 64).into_owned()
}

/// `text` itself if at most `max` bytes long, else its first `keep` bytes
/// (at a character boundary) and its length.
fn cut(text: &str, max: usize, keep: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return text.into();
    }
    let mut end = keep;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &text[..end], text.len()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_texts_are_unchanged() {
        let text = r"path C:\var\lib\kubelet\pods\x is not within a working directory";
        assert_eq!(bounded(text), text);
        let long_path = format!(r"Lstat C:\{}: not found", "a".repeat(500));
        assert_eq!(bounded(&long_path), long_path);
    }

    #[test]
    fn a_long_value_keeps_its_prefix_its_length_and_the_rest_of_the_text() {
        let path = format!(r"C:\{}", "é".repeat(1_000_000));
        let text = bounded(&format!("IsSymlink {path}: The filename is too long."));
        assert!(text.starts_with(r"IsSymlink C:\éé"), "{text}");
        assert!(
            // The run cut is the path with its colon.
            text.ends_with(&format!(
                "... ({} bytes) The filename is too long.",
                path.len() + 1
            )),
            "{text}"
        );
        assert!(text.len() < 400, "{}", text.len());
    }

    #[test]
    fn many_short_words_are_cut_as_a_whole() {
        let text = "ab ".repeat(10_000);
        let cut = bounded(&text);
        assert!(cut.len() <= MAX_TEXT + 32, "{}", cut.len());
        assert!(cut.ends_with("... (30000 bytes)"), "{cut}");
    }
}
