//! The framing of a request body (a `Content-Length` or chunked), decoded step by step from whatever bytes
//! have arrived, so a body is read only as fast as the application asks for it.

/// Most trailer bytes a chunked body may end with (hyper's bound at the default `max_header_bytes`); trailers
/// are read and dropped. A trailer line is decoded once it is whole, so a buffer may need this much room.
pub(crate) const MAX_TRAILER_BYTES: usize = 16_384;
/// Most trailer lines (hyper's default bound on header fields).
const MAX_TRAILER_LINES: usize = 100;
/// Most chunk-extension bytes in one body (hyper's bound).
const MAX_EXTENSION_BYTES: u32 = 16_384;

/// Where a body's decoding is. The chunked states follow hyper's decoder byte for byte, so that both drivers
/// take and refuse the same bodies at the same point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decoder {
    /// This many bytes of a `Content-Length` body are still to come.
    Length(u64),
    /// A chunked body, in a chunk-size line: where in it, the size so far, the extension bytes of the body so
    /// far.
    ChunkSize {
        at: SizeAt,
        size: u64,
        extensions: u32,
    },
    /// A chunked body, inside a chunk with `left` bytes to come.
    ChunkData { left: u64, extensions: u32 },
    /// A chunked body, waiting for the CRLF that ends a chunk.
    ChunkEnd { extensions: u32 },
    /// A chunked body past its last chunk, reading trailer lines: bytes and lines so far, and the fields in
    /// them. Hyper reads the section at its end with one field per line at most.
    Trailers {
        bytes: usize,
        lines: usize,
        fields: usize,
    },
    /// The body has been read in full.
    Done,
    /// The body's framing was broken: the connection cannot carry another request.
    Failed,
}

/// Where a chunk-size line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SizeAt {
    /// Before its first hex digit.
    Start,
    /// After a hex digit.
    Digits,
    /// In spaces or tabs after the digits.
    Space,
    /// In an extension (after `;`), whose bytes are dropped.
    Extension,
    /// After its CR, waiting for the LF.
    Lf,
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
        Decoder::ChunkSize {
            at: SizeAt::Start,
            size: 0,
            extensions: 0,
        }
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
            Decoder::ChunkData { left, extensions } => {
                self.data(left, input, Decoder::ChunkEnd { extensions }, |left| {
                    Decoder::ChunkData { left, extensions }
                })
            }
            Decoder::ChunkSize {
                at,
                size,
                extensions,
            } => self.chunk_size(at, size, extensions, input),
            Decoder::ChunkEnd { extensions } => self.chunk_end(extensions, input),
            Decoder::Trailers {
                bytes,
                lines,
                fields,
            } => self.trailer((bytes, lines, fields), input),
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
        within: impl Fn(u64) -> Decoder,
    ) -> Step {
        if input.is_empty() {
            return Step::NeedMore;
        }
        let taken = usize::try_from(left).map_or(input.len(), |left| left.min(input.len()));
        let rest = left - taken as u64;
        *self = if rest == 0 { after } else { within(rest) };
        Step::Data(taken)
    }

    fn chunk_size(
        &mut self,
        mut at: SizeAt,
        mut size: u64,
        mut extensions: u32,
        input: &[u8],
    ) -> Step {
        for (i, &byte) in input.iter().enumerate() {
            at = match (at, byte) {
                (SizeAt::Start | SizeAt::Digits, b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F') => {
                    let digit = (byte as char).to_digit(16).map_or(0, u64::from);
                    match size.checked_mul(16).and_then(|s| s.checked_add(digit)) {
                        Some(more) => size = more,
                        None => return Step::Invalid,
                    }
                    SizeAt::Digits
                }
                (SizeAt::Digits | SizeAt::Space, b' ' | b'\t') => SizeAt::Space,
                (SizeAt::Digits | SizeAt::Space, b';') => SizeAt::Extension,
                (SizeAt::Digits | SizeAt::Space | SizeAt::Extension, b'\r') => SizeAt::Lf,
                (SizeAt::Extension, b'\n') => return Step::Invalid,
                (SizeAt::Extension, _) => {
                    extensions += 1;
                    if extensions >= MAX_EXTENSION_BYTES {
                        return Step::Invalid;
                    }
                    SizeAt::Extension
                }
                (SizeAt::Lf, b'\n') => {
                    *self = if size == 0 {
                        Decoder::Trailers {
                            bytes: 0,
                            lines: 0,
                            fields: 0,
                        }
                    } else {
                        Decoder::ChunkData {
                            left: size,
                            extensions,
                        }
                    };
                    return Step::Skip(i + 1);
                }
                _ => return Step::Invalid,
            };
        }
        if input.is_empty() {
            return Step::NeedMore;
        }
        *self = Decoder::ChunkSize {
            at,
            size,
            extensions,
        };
        Step::Skip(input.len())
    }

    fn chunk_end(&mut self, extensions: u32, input: &[u8]) -> Step {
        match input {
            [] | [b'\r'] => Step::NeedMore,
            [b'\r', b'\n', ..] => {
                *self = Decoder::ChunkSize {
                    at: SizeAt::Start,
                    size: 0,
                    extensions,
                };
                Step::Skip(2)
            }
            _ => Step::Invalid,
        }
    }

    /// One trailer line, once it is whole: it ends with CR LF, and its fields must be what hyper takes. A bare
    /// LF is refused here, where hyper reads it as a line end (and two as the end of the body): a proxy in
    /// front that does not would see the next pipelined request inside this one's trailers, or the reverse.
    fn trailer(&mut self, seen: (usize, usize, usize), input: &[u8]) -> Step {
        let (bytes, lines, fields) = seen;
        let line_end = input.iter().position(|b| *b == b'\r' || *b == b'\n');
        let Some(cr) = line_end.filter(|at| input[*at] == b'\r') else {
            if line_end.is_some() {
                return Step::Invalid;
            }
            return if bytes + input.len() >= MAX_TRAILER_BYTES {
                Step::Invalid
            } else {
                Step::NeedMore
            };
        };
        match input.get(cr + 1) {
            None => return Step::NeedMore,
            Some(b'\n') => {}
            Some(_) => return Step::Invalid,
        }
        if cr == 0 {
            if lines > 0 && bytes + 2 >= MAX_TRAILER_BYTES || fields > lines {
                return Step::Invalid;
            }
            *self = Decoder::Done;
            return Step::Skip(2);
        }
        let bytes = bytes + cr + 2;
        if bytes >= MAX_TRAILER_BYTES || lines >= MAX_TRAILER_LINES {
            return Step::Invalid;
        }
        let Some(more) = read_fields(&input[..cr]) else {
            return Step::Invalid;
        };
        *self = Decoder::Trailers {
            bytes,
            lines: lines + 1,
            fields: fields + more,
        };
        Step::Skip(cr + 2)
    }
}

/// Reads one trailer line (no CR or LF in it) as hyper reads the trailer section (httparse, names and values
/// `http` takes): `None` when hyper would refuse it, else the fields in it.
fn read_fields(line: &[u8]) -> Option<usize> {
    let mut section = Vec::with_capacity(line.len() + 4);
    section.extend_from_slice(line);
    section.extend_from_slice(b"\r\n\r\n");
    // More fields than lines is refused at the end anyway.
    let mut fields = [httparse::EMPTY_HEADER; MAX_TRAILER_LINES + 1];
    let httparse::Status::Complete((_, fields)) =
        httparse::parse_headers(&section, &mut fields).ok()?
    else {
        return None;
    };
    for field in fields.iter() {
        http::HeaderName::from_bytes(field.name.as_bytes()).ok()?;
        http::HeaderValue::from_bytes(field.value).ok()?;
    }
    Some(fields.len())
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
            b"0\r\nbad\x00trailer\r\n\r\n",
            b"0\r\nno colon\r\n\r\n",
            b"0\r\n\rX",
            b"5\rX",
            b"0\r\n: no name\r\n\r\n",
            b"\n",
            b"5\r\nhello\r\n0\r\na: b\nc: d\r\n\r\n",
            b"0\r\na: b\r\nc: d\ne: f\r\n\r\n",
            // A bare LF anywhere in the trailers, hyper's line end, is refused here (docs/http.md).
            b"5\r\nhello\r\n0\r\nX: y\n\nanything\r\n\r\n",
            b"5\r\nhello\r\n0\r\na: b\nc: d\r\n\nx\r\n\r\n",
            b"5\r\nhello\r\n0\r\n\n",
            b"5\r\nhello\r\n0\r\nX: y\r\n\n",
        ] {
            let (_, ended, invalid) = decode(Decoder::chunked(), wire, 64);
            assert!(invalid && !ended, "{:?}", String::from_utf8_lossy(wire));
        }
        // As hyper reads them: any byte but LF in an extension.
        for wire in [
            &b"5;\x01\xff\r\nhello\r\n0\r\n\r\n"[..],
            b"5\r\nhello\r\n0\r\nX: y\r\n\r\n",
        ] {
            let (body, ended, invalid) = decode(Decoder::chunked(), wire, 3);
            assert!(
                ended && !invalid && body == b"hello",
                "{:?}",
                String::from_utf8_lossy(wire)
            );
        }
        // Leading zeros are no limit; a size past 64 bits is, and so are 16 KiB of extensions.
        let zeros = format!("{}5\r\nhello\r\n0\r\n\r\n", "0".repeat(40));
        assert_eq!(
            decode(Decoder::chunked(), zeros.as_bytes(), 7),
            (b"hello".to_vec(), true, false)
        );
        assert!(decode(Decoder::chunked(), b"10000000000000000\r\n", 4096).2);
        let extended = format!("1;{}\r\na\r\n0\r\n\r\n", "e".repeat(16_000));
        assert!(decode(Decoder::chunked(), extended.as_bytes(), 4096).1);
        let over = format!("1;{}\r\na\r\n0\r\n\r\n", "e".repeat(16_384));
        assert!(decode(Decoder::chunked(), over.as_bytes(), 4096).2);
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
