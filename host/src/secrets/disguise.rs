//! The forms a secret's value takes in text that carries it, which the scanner looks
//! for beside the value.

/// Shortest encoded form of a value that is scanned for (see [`disguises`]): shorter
/// fragments would mask ordinary text by chance.
const MIN_DISGUISE: usize = 8;

/// The forms a value takes in text that carries it, beside the value itself: its base64
/// and base64url encodings at each of the three alignments it can have inside a longer
/// encoded text (only the characters that depend on the value alone), its base32 in
/// both alphabets (RFC 4648's and base32hex) and both cases at each of the five
/// alignments, its hex in either case, and its percent-encoding in either case, with
/// `-._~` kept or encoded. Escapes that may encode any byte or none (every byte
/// percent-encoded or only some, JSON's `\u00XX`, quoted-printable) are not forms but
/// undone before a second scan (see [`unescape`]). A server that echoes a request back
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
    for offset in 0..5usize {
        let mut padded = vec![0u8; offset];
        padded.extend_from_slice(bytes);
        // Characters whose 5 bits all come from the value.
        let start = (8 * offset).div_ceil(5);
        let end = 8 * (offset + bytes.len()) / 5;
        for encoding in [
            &data_encoding::BASE32_NOPAD,
            &data_encoding::BASE32HEX_NOPAD,
        ] {
            let encoded = encoding.encode(&padded);
            if let Some(stable) = encoded.get(start..end.min(encoded.len())) {
                forms.push(stable.to_ascii_lowercase());
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

/// Text with its escapes undone, and the range of the text each byte came from.
#[derive(Debug)]
pub(super) struct Unescaped {
    pub(super) bytes: Vec<u8>,
    pub(super) from: Vec<(usize, usize)>,
}

/// `text` with its escapes undone, in either case and mixed with literal bytes:
/// percent-encoding (`%42`), JSON's escapes (`\u0042`, a surrogate pair, `\"`, `\n`…),
/// and quoted-printable (`=42`, and a soft line break, `=` at the end of a line, taken
/// out). `None` when it has none of them. A value written with any of these, one byte or
/// every byte at a time, reads as itself here.
pub(super) fn unescape(text: &[u8]) -> Option<Unescaped> {
    if !text.iter().any(|b| matches!(b, b'%' | b'\\' | b'=')) {
        return None;
    }
    let mut out = Unescaped {
        bytes: Vec::with_capacity(text.len()),
        from: Vec::with_capacity(text.len()),
    };
    let mut changed = false;
    let mut i = 0;
    while i < text.len() {
        let (decoded, used) = escape_at(&text[i..]).unwrap_or_else(|| {
            let mut one = [0u8; 4];
            one[0] = text[i];
            ((one, 1), 1)
        });
        changed |= used > 1;
        let (bytes, count) = decoded;
        for &b in &bytes[..count] {
            out.bytes.push(b);
            out.from.push((i, i + used));
        }
        i += used;
    }
    changed.then_some(out)
}

/// The escape `text` starts with: the bytes it stands for (up to 4, and how many) and
/// its length.
fn escape_at(text: &[u8]) -> Option<(([u8; 4], usize), usize)> {
    let hex = |at: usize| -> Option<u8> {
        let pair = text.get(at..at + 2)?;
        let digit = |d: u8| char::from(d).to_digit(16);
        Some((digit(pair[0])? * 16 + digit(pair[1])?) as u8)
    };
    let byte = |b: u8| ([b, 0, 0, 0], 1);
    match text[0] {
        b'%' => Some((byte(hex(1)?), 3)),
        b'=' => match text.get(1..) {
            Some([b'\r', b'\n', ..]) => Some((([0; 4], 0), 3)),
            Some([b'\n', ..]) => Some((([0; 4], 0), 2)),
            _ => Some((byte(hex(1)?), 3)),
        },
        b'\\' => match *text.get(1)? {
            b'u' => {
                let unit = |at: usize| -> Option<u32> {
                    let digits = std::str::from_utf8(text.get(at..at + 4)?).ok()?;
                    u32::from_str_radix(digits, 16).ok()
                };
                let first = unit(2)?;
                let (code, used) = if (0xD800..0xDC00).contains(&first) {
                    let low = match text.get(6..8) {
                        Some(b"\\u") => unit(8)?,
                        _ => return None,
                    };
                    if !(0xDC00..0xE000).contains(&low) {
                        return None;
                    }
                    (0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00), 12)
                } else {
                    (first, 6)
                };
                let c = char::from_u32(code)?;
                let mut bytes = [0u8; 4];
                let count = c.encode_utf8(&mut bytes).len();
                Some(((bytes, count), used))
            }
            b'"' => Some((byte(b'"'), 2)),
            b'\\' => Some((byte(b'\\'), 2)),
            b'/' => Some((byte(b'/'), 2)),
            b'b' => Some((byte(0x08), 2)),
            b'f' => Some((byte(0x0c), 2)),
            b'n' => Some((byte(b'\n'), 2)),
            b'r' => Some((byte(b'\r'), 2)),
            b't' => Some((byte(b'\t'), 2)),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(text: &str) -> String {
        String::from_utf8(unescape(text.as_bytes()).unwrap().bytes).unwrap()
    }

    #[test]
    fn every_escape_reads_as_the_byte_it_stands_for() {
        // Every byte percent-encoded, in either case, mixed with literal bytes.
        assert_eq!(decoded("%42%65%61%72er tok%65n"), "Bearer token");
        assert_eq!(decoded("%4a%4A"), "JJ");
        // JSON's escapes, a surrogate pair included.
        assert_eq!(
            decoded(r#"\u0042e\u0061rer \"x\" \ud83d\ude00"#),
            "Bearer \"x\" 😀"
        );
        // Quoted-printable, with a soft line break inside the value.
        assert_eq!(decoded("Bea=72=\r\ner=3D"), "Bearer=");
        assert!(unescape(b"nothing escaped").is_none());
        // What is not an escape stays as it was.
        assert!(unescape(b"100% = %zz \\q").is_none());
        assert_eq!(decoded("100% of %41 \\q"), "100% of A \\q");
    }

    #[test]
    fn each_decoded_byte_knows_where_it_came_from() {
        let unescaped = unescape("a%42\\u0043".as_bytes()).unwrap();
        assert_eq!(unescaped.bytes, b"aBC");
        assert_eq!(unescaped.from, [(0, 1), (1, 4), (4, 10)]);
    }

    #[test]
    fn base32_forms_are_found_at_every_alignment() {
        let forms = disguises("sk-live-0123456789");
        for prefix in ["", "a", "ab", "abc", "abcd"] {
            let text = format!("{prefix}sk-live-0123456789xyz");
            for encoding in [&data_encoding::BASE32, &data_encoding::BASE32HEX] {
                let encoded = encoding.encode(text.as_bytes());
                assert!(
                    forms.iter().any(|f| encoded.contains(f.as_str())),
                    "{prefix:?}: {encoded}"
                );
                let lower = encoded.to_ascii_lowercase();
                assert!(forms.iter().any(|f| lower.contains(f.as_str())), "{lower}");
            }
        }
    }
}
