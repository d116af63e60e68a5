//! The forms a secret's value takes in text that carries it, which the scanner looks
//! for beside the value.

/// Shortest encoded form of a value that is scanned for (see [`disguises`]): shorter
/// fragments would mask ordinary text by chance.
const MIN_DISGUISE: usize = 8;

/// The forms a value takes in text that carries it, beside the value itself: its base64
/// and base64url encodings at each of the three alignments it can have inside a longer
/// encoded text (only the characters that depend on the value alone), its hex in either
/// case, and its percent-encoding in either case, with `-._~` kept or encoded. A server that echoes a request back
/// in one of these (a header dump, an encoded debug field) would hand a skill the value
/// a placeholder stood for; each is masked as the value is. What no scanner can know —
/// a value reversed, split, or encrypted by the server — stays possible (see
/// docs/network.md).
pub(super) fn disguises(value: &str) -> Vec<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let bytes = value.as_bytes();
    let mut forms = Vec::new();
    for offset in 0..3usize {
        let mut padded = vec![0u8; offset];
        padded.extend_from_slice(bytes);
        // Characters whose 6 bits all come from the value.
        let start = (8 * offset).div_ceil(6);
        let end = 8 * (offset + bytes.len()) / 6;
        for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&padded);
            if let Some(stable) = encoded.get(start..end.min(encoded.len())) {
                forms.push(stable.to_owned());
            }
        }
    }
    forms.push(hex::encode(bytes));
    forms.push(hex::encode_upper(bytes));
    // Encoders differ on `-._~`: RFC 3986 leaves them, others encode every byte that is
    // not a letter or digit.
    for keeps in [&b"-._~"[..], &b""[..]] {
        let (mut upper, mut lower) = (String::new(), String::new());
        for &b in bytes {
            if b.is_ascii_alphanumeric() || keeps.contains(&b) {
                upper.push(char::from(b));
                lower.push(char::from(b));
            } else {
                upper.push_str(&format!("%{b:02X}"));
                lower.push_str(&format!("%{b:02x}"));
            }
        }
        forms.push(upper);
        forms.push(lower);
    }
    forms.retain(|form| form.len() >= MIN_DISGUISE && form != value);
    forms.sort();
    forms.dedup();
    forms
}
