//! Newline-delimited reading with a bound on the line length, so a child that never
//! writes a newline cannot make the node buffer without limit.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// What [`LineReader::next`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// A line, without its newline, in [`LineReader::line`]. A last line without a
    /// newline counts too.
    Line,
    /// A line longer than the bound; it was skipped.
    TooLong,
    /// The end of the stream.
    Eof,
}

/// Reads lines of at most `max` bytes.
pub(crate) struct LineReader<R> {
    inner: BufReader<R>,
    max: usize,
    line: Vec<u8>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub(crate) fn new(inner: BufReader<R>, max: usize) -> LineReader<R> {
        LineReader {
            inner,
            max,
            line: Vec::new(),
        }
    }

    /// The line [`LineReader::next`] last returned.
    pub(crate) fn line(&self) -> &[u8] {
        &self.line
    }

    /// Reads the next line.
    pub(crate) async fn next(&mut self) -> io::Result<Next> {
        self.line.clear();
        let mut too_long = false;
        loop {
            let chunk = self.inner.fill_buf().await?;
            if chunk.is_empty() {
                return Ok(match (too_long, self.line.is_empty()) {
                    (true, _) => Next::TooLong,
                    (false, true) => Next::Eof,
                    (false, false) => Next::Line,
                });
            }
            let newline = chunk.iter().position(|b| *b == b'\n');
            let part = &chunk[..newline.unwrap_or(chunk.len())];
            if !too_long {
                if self.line.len() + part.len() > self.max {
                    too_long = true;
                    self.line.clear();
                } else {
                    self.line.extend_from_slice(part);
                }
            }
            let used = newline.map_or(chunk.len(), |i| i + 1);
            self.inner.consume(used);
            if newline.is_some() {
                return Ok(if too_long { Next::TooLong } else { Next::Line });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bounded_lines_across_small_reads() {
        let input: &[u8] = b"ab\n\nabcdefgh\nxyz\nlast";
        let mut r = LineReader::new(BufReader::with_capacity(3, input), 4);
        let mut got = Vec::new();
        loop {
            match r.next().await.unwrap() {
                Next::Line => got.push(String::from_utf8(r.line().to_vec()).unwrap()),
                Next::TooLong => got.push("<too long>".into()),
                Next::Eof => break,
            }
        }
        assert_eq!(got, ["ab", "", "<too long>", "xyz", "last"]);
    }
}
