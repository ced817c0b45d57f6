//! Redaction of credentials a provider echoes: an API (or a token endpoint) that repeats the
//! credential it was sent (`bad token Bearer …`, a form echoed back with its `client_secret`)
//! must not hand it to the model, the envelope or the log. The http tools' answers
//! (`rest.rs`) and the token endpoint's error bodies (`oauth2.rs`) pass through the one
//! function here, so both redact alike.

use hyper::body::Bytes;

/// What stands in the provider's answer where it echoed a credential.
pub const REDACTED: &str = "[redacted]";

/// `body` with every occurrence of each of `secrets` (as sent, and as a JSON string would
/// escape it) replaced by [`REDACTED`]: an API that echoes the credential it was sent (`bad
/// token Bearer …`) must not hand it to the model, the envelope or the log, which read the
/// answer's text (a refusal's message, a kept field, a malformed answer's detail). Replacing
/// text inside a JSON string keeps the JSON valid.
///
/// A secret shorter than [`WORD_ONLY_BELOW`] bytes is replaced only where it stands as a whole
/// word (no letter or digit joined to its ends): a short password can be any word of an
/// answer, and replacing it inside others (`b` in `flightNumber`) would rewrite the JSON's
/// keys and break every answer. A long one is replaced wherever it stands.
pub(crate) fn redacted<S: AsRef<str>>(body: Bytes, secrets: &[S]) -> Bytes {
    let mut out: Option<Vec<u8>> = None;
    for secret in secrets {
        let secret = secret.as_ref();
        let escaped = serde_json::to_string(secret).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        let whole_word = secret.len() < WORD_ONLY_BELOW;
        // A secret JSON escapes as it is (the usual token) is searched for once.
        let forms = if escaped == secret {
            &[secret][..]
        } else {
            &[secret, escaped][..]
        };
        for form in forms {
            let current = out.as_deref().unwrap_or(&body);
            let replaced = replace_all(current, form.as_bytes(), REDACTED.as_bytes(), whole_word);
            if let Some(replaced) = replaced {
                out = Some(replaced);
            }
        }
    }
    out.map_or(body, Bytes::from)
}

/// `text` with each of `secrets` replaced as [`redacted`] replaces it in a body (an error's
/// detail or message made from an answer before it was redacted).
pub(crate) fn redacted_text<S: AsRef<str>>(text: &str, secrets: &[S]) -> String {
    let body = redacted(Bytes::copy_from_slice(text.as_bytes()), secrets);
    String::from_utf8_lossy(&body).into_owned()
}

/// The length from which a secret is redacted wherever it stands, not only as a whole word.
const WORD_ONLY_BELOW: usize = 16;

/// `haystack` with every `needle` replaced by `with` (with `whole_word`, only where no letter
/// or digit joins one of its letter or digit ends), or `None` when it holds none.
///
/// Every provider answer passes through here (a healthy search's 62 KB included), so the search
/// is memchr's `memmem`, not a comparison at every byte (BENCHMARKS.md, session 58).
fn replace_all(haystack: &[u8], needle: &[u8], with: &[u8], whole_word: bool) -> Option<Vec<u8>> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    let word = |b: u8| b.is_ascii_alphanumeric();
    let stands_alone = |at: usize| {
        let end = at + needle.len();
        let joined_before = at > 0 && word(needle[0]) && word(haystack[at - 1]);
        let joined_after =
            end < haystack.len() && word(needle[needle.len() - 1]) && word(haystack[end]);
        !whole_word || !(joined_before || joined_after)
    };
    let finder = memchr::memmem::Finder::new(needle);
    let mut out: Option<Vec<u8>> = None;
    let (mut from, mut last) = (0, 0);
    while let Some(found) = haystack.get(from..).and_then(|rest| finder.find(rest)) {
        let at = from + found;
        if stands_alone(at) {
            let out = out.get_or_insert_with(|| Vec::with_capacity(haystack.len()));
            out.extend_from_slice(&haystack[last..at]);
            out.extend_from_slice(with);
            from = at + needle.len();
            last = from;
        } else {
            from = at + 1;
        }
    }
    out.map(|mut out| {
        out.extend_from_slice(&haystack[last..]);
        out
    })
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::prelude::BASE64_STANDARD;

    use super::*;

    #[test]
    fn a_credential_echoed_in_an_answer_is_redacted_in_every_form_it_is_sent() {
        let secrets = vec![
            "s3cr3t-token-XYZ".to_string(),
            "p\"w".to_string(),
            BASE64_STANDARD.encode(b"agent:s3cret"),
        ];
        assert_eq!(secrets[2], "YWdlbnQ6czNjcmV0", "as HTTP Basic sends it");
        let body = Bytes::from_static(
            br#"{"detail":"bad token Bearer s3cr3t-token-XYZ (s3cr3t-token-XYZ), password p\"w, Basic YWdlbnQ6czNjcmV0"}"#,
        );
        let text = String::from_utf8(redacted(body, &secrets).to_vec()).unwrap_or_default();
        assert_eq!(
            text,
            r#"{"detail":"bad token Bearer [redacted] ([redacted]), password [redacted], Basic [redacted]"}"#
        );
        let clean = Bytes::from_static(br#"{"detail":"no such member"}"#);
        assert_eq!(redacted(clean.clone(), &secrets), clean);
    }

    #[test]
    fn occurrences_that_do_not_stand_alone_are_passed_over_to_the_next() {
        let word_only = replace_all(b"aaa aa,aa", b"aa", b"[x]", true);
        assert_eq!(word_only.as_deref(), Some(&b"aaa [x],[x]"[..]));
        let anywhere = replace_all(b"aaaaa", b"aa", b"[x]", false);
        assert_eq!(
            anywhere.as_deref(),
            Some(&b"[x][x]a"[..]),
            "left to right, no overlap"
        );
        assert_eq!(replace_all(b"aaa", b"aa", b"[x]", true), None);
        assert_eq!(replace_all(b"a", b"aa", b"[x]", false), None);
    }

    #[test]
    fn a_short_secret_is_redacted_only_where_it_stands_as_a_word() {
        let secrets = vec!["b".to_string(), "s3cr3t-token-XYZ".to_string()];
        let body = Bytes::from_static(
            br#"{"flightNumber":"b","blacklisted":false,"detail":"key b refused; token s3cr3t-token-XYZ0"}"#,
        );
        let text = String::from_utf8(redacted(body, &secrets).to_vec()).unwrap_or_default();
        assert_eq!(
            text,
            r#"{"flightNumber":"[redacted]","blacklisted":false,"detail":"key [redacted] refused; token [redacted]0"}"#,
            "keys and words that hold it are kept; a long secret goes wherever it stands"
        );
    }
}
