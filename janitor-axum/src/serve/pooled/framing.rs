//! The framing of a request body (a `Content-Length` or chunked), decoded step by step from whatever bytes
//! have arrived, so a body is read only as fast as the application asks for it.

/// Longest chunk-size line or trailer line, in bytes; a longer one is refused (hyper's bound is of the same
/// order). It also bounds how much of a buffer a line may need at once.
pub(crate) const MAX_LINE_BYTES: usize = 1_024;
/// Most trailer bytes a chunked body may end with; trailers are read and dropped.
pub(crate) const MAX_TRAILER_BYTES: usize = 8_192;

/// Where a body's decoding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decoder {
    /// This many bytes of a `Content-Length` body are still to come.
    Length(u64),
    /// A chunked body, waiting for a chunk-size line.
    ChunkSize,
    /// A chunked body, inside a chunk with this many bytes left.
    ChunkData(u64),
    /// A chunked body, waiting for the CRLF that ends a chunk.
    ChunkEnd,
    /// A chunked body past its last chunk, reading trailers (this many bytes so far).
    Trailers(usize),
    /// The body has been read in full.
    Done,
    /// The body's framing was broken: the connection cannot carry another request.
    Failed,
}

/// What one step of decoding found at the start of the bytes it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The first `n` bytes (never 0) are body data.
    Data(usize),
    /// The first `n` bytes (never 0) were framing, to be dropped.
    Skip(usize),
    /// Nothing can be decided before more bytes arrive.
    NeedMore,
    /// The body has ended; no bytes of the input belong to it.
    End,
    /// The framing is broken.
    Invalid,
}

impl Decoder {
    /// A body of `length` bytes.
    pub(crate) fn length(length: u64) -> Decoder {
        if length == 0 {
            Decoder::Done
        } else {
            Decoder::Length(length)
        }
    }

    /// A chunked body.
    pub(crate) fn chunked() -> Decoder {
        Decoder::ChunkSize
    }

    /// Whether the body has been read in full.
    pub(crate) fn is_done(&self) -> bool {
        *self == Decoder::Done
    }

    /// The exact bytes still to come, when the framing says so.
    pub(crate) fn exact_remaining(&self) -> Option<u64> {
        match self {
            Decoder::Length(left) => Some(*left),
            Decoder::Done => Some(0),
            _ => None,
        }
    }

    /// Decodes what it can from the start of `input`, and moves on.
    pub(crate) fn step(&mut self, input: &[u8]) -> Step {
        let step = match *self {
            Decoder::Done => return Step::End,
            Decoder::Failed => return Step::Invalid,
            Decoder::Length(left) => self.data(left, input, Decoder::Done, Decoder::Length),
            Decoder::ChunkData(left) => {
                self.data(left, input, Decoder::ChunkEnd, Decoder::ChunkData)
            }
            Decoder::ChunkSize => self.chunk_size(input),
            Decoder::ChunkEnd => self.chunk_end(input),
            Decoder::Trailers(seen) => self.trailer(seen, input),
        };
        if step == Step::Invalid {
            *self = Decoder::Failed;
        }
        step
    }

    fn data(
        &mut self,
        left: u64,
        input: &[u8],
        after: Decoder,
        within: fn(u64) -> Decoder,
    ) -> Step {
        if input.is_empty() {
            return Step::NeedMore;
        }
        let taken = usize::try_from(left).map_or(input.len(), |left| left.min(input.len()));
        let rest = left - taken as u64;
        *self = if rest == 0 { after } else { within(rest) };
        Step::Data(taken)
    }

    fn chunk_size(&mut self, input: &[u8]) -> Step {
        let Some(line) = line(input) else {
            return Self::more_or_too_long(input);
        };
        let text = &input[..line];
        let digits = text.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if digits == 0 || digits > 16 {
            return Step::Invalid;
        }
        let Some(size) = std::str::from_utf8(&text[..digits])
            .ok()
            .and_then(|d| u64::from_str_radix(d, 16).ok())
        else {
            return Step::Invalid;
        };
        if !valid_extension(&text[digits..]) {
            return Step::Invalid;
        }
        *self = if size == 0 {
            Decoder::Trailers(0)
        } else {
            Decoder::ChunkData(size)
        };
        Step::Skip(line + 2)
    }

    fn chunk_end(&mut self, input: &[u8]) -> Step {
        match input {
            [] | [b'\r'] => Step::NeedMore,
            [b'\r', b'\n', ..] => {
                *self = Decoder::ChunkSize;
                Step::Skip(2)
            }
            _ => Step::Invalid,
        }
    }

    fn trailer(&mut self, seen: usize, input: &[u8]) -> Step {
        let Some(line) = line(input) else {
            return Self::more_or_too_long(input);
        };
        if line == 0 {
            *self = Decoder::Done;
            return Step::Skip(2);
        }
        let seen = seen + line + 2;
        if seen > MAX_TRAILER_BYTES
            || input[..line]
                .iter()
                .any(|b| b.is_ascii_control() && *b != b'\t')
        {
            return Step::Invalid;
        }
        *self = Decoder::Trailers(seen);
        Step::Skip(line + 2)
    }

    fn more_or_too_long(input: &[u8]) -> Step {
        // A bare LF ends no line here: it can only make the line invalid.
        if input.len() >= MAX_LINE_BYTES + 2 || input.contains(&b'\n') {
            Step::Invalid
        } else {
            Step::NeedMore
        }
    }
}

/// Length of the line at the start of `input` when its CRLF has arrived within the line limit.
fn line(input: &[u8]) -> Option<usize> {
    let window = &input[..input.len().min(MAX_LINE_BYTES + 2)];
    let end = window.iter().position(|b| *b == b'\n')?;
    // A line that is a bare LF has no byte before it.
    let before = end.checked_sub(1)?;
    (window[before] == b'\r').then_some(before)
}

/// Whatever follows a chunk size: nothing, or `;` extensions (and the whitespace before them) of visible text.
fn valid_extension(rest: &[u8]) -> bool {
    let trimmed = rest
        .iter()
        .position(|b| *b != b' ' && *b != b'\t')
        .map_or(&[][..], |i| &rest[i..]);
    match trimmed.first() {
        None => true,
        Some(b';') => trimmed.iter().all(|b| !b.is_ascii_control() || *b == b'\t'),
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` fed `split` bytes at a time: (body, ended, invalid).
    fn decode(mut decoder: Decoder, input: &[u8], split: usize) -> (Vec<u8>, bool, bool) {
        let (mut body, mut buffered, mut fed) = (Vec::new(), Vec::new(), 0);
        loop {
            match decoder.step(&buffered) {
                Step::Data(n) => {
                    body.extend_from_slice(&buffered[..n]);
                    buffered.drain(..n);
                }
                Step::Skip(n) => drop(buffered.drain(..n)),
                Step::End => return (body, true, false),
                Step::Invalid => return (body, false, true),
                Step::NeedMore if fed == input.len() => return (body, false, false),
                Step::NeedMore => {
                    let next = (fed + split).min(input.len());
                    buffered.extend_from_slice(&input[fed..next]);
                    fed = next;
                }
            }
        }
    }

    #[test]
    fn a_chunked_body_decodes_whatever_the_split() {
        let wire = b"5\r\nhello\r\n6;name=value\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n";
        for split in 1..wire.len() {
            assert_eq!(
                decode(Decoder::chunked(), wire, split),
                (b"hello world".to_vec(), true, false),
                "split {split}"
            );
        }
    }

    #[test]
    fn broken_chunk_framing_is_invalid() {
        for wire in [
            &b"z\r\n"[..],
            b"5\nhello\r\n0\r\n\r\n",
            b"5\r\nhelloXX0\r\n\r\n",
            b"11111111111111111\r\n",
            b"5 x\r\nhello\r\n",
            b"5;\x01\r\nhello\r\n",
            b"0\r\nbad\x00trailer\r\n\r\n",
            b"\n",
            b"5\r\nhello\r\n0\r\n\n",
        ] {
            let (_, ended, invalid) = decode(Decoder::chunked(), wire, 64);
            assert!(invalid && !ended, "{:?}", String::from_utf8_lossy(wire));
        }
        let long = format!("{}\r\n", "0".repeat(MAX_LINE_BYTES + 8));
        assert!(decode(Decoder::chunked(), long.as_bytes(), 4096).2);
    }

    #[test]
    fn a_length_body_stops_at_its_length_and_trailers_are_bounded() {
        assert_eq!(
            decode(Decoder::length(3), b"abcdef", 2),
            (b"abc".to_vec(), true, false)
        );
        assert_eq!(
            decode(Decoder::length(0), b"abc", 2),
            (Vec::new(), true, false)
        );
        assert_eq!(
            decode(Decoder::length(5), b"abc", 2),
            (b"abc".to_vec(), false, false)
        );
        let line = format!("X: {}\r\n", "t".repeat(1_000));
        let at = format!("0\r\n{}\r\n", line.repeat(MAX_TRAILER_BYTES / line.len()));
        assert!(decode(Decoder::chunked(), at.as_bytes(), 512).1);
        let past = format!(
            "0\r\n{}\r\n",
            line.repeat(MAX_TRAILER_BYTES / line.len() + 1)
        );
        assert!(decode(Decoder::chunked(), past.as_bytes(), 512).2);
    }
}
