//! JavaScript's readings of numbers and white space, which the shared rows and labels follow so that every
//! implementation writes and reads the same bytes.

use serde::Serializer;

/// Writes a number as JavaScript would: whole numbers without a fraction (`2`, not `2.0`), so stored signals
/// read `900` and answers read `"confidence":1` whichever language wrote them.
pub(crate) fn js_f64<S: Serializer>(n: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        serializer.serialize_i64(*n as i64)
    } else {
        serializer.serialize_f64(*n)
    }
}

/// Formats a number as JavaScript's `String(n)` does for the values a payload can hold; used for probe keys.
pub(crate) fn js_number_string(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{}", n as i128)
    } else {
        serde_json::Number::from_f64(n).map_or_else(|| "NaN".to_owned(), |v| v.to_string())
    }
}

/// JavaScript's `String.prototype.trim` white space: WhiteSpace and LineTerminator of ECMA-262. Unlike
/// `char::is_whitespace` it includes U+FEFF and excludes U+0085.
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'
            | '\u{000A}'
            | '\u{000B}'
            | '\u{000C}'
            | '\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_number_strings() {
        assert_eq!(js_number_string(900.0), "900");
        assert_eq!(js_number_string(1.5), "1.5");
        assert_eq!(js_number_string(0.1 + 0.2), "0.30000000000000004");
    }
}
