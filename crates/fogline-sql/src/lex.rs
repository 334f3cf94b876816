//! The lexer: SQL text to tokens, each with its line and column.
//!
//! Keywords are not told apart here: a bare word is an [`Tok::Ident`] and the parser
//! compares it case-insensitively, so that a backquoted word is never a keyword.

use crate::error::SqlError;

/// One token's kind and content.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// A bare word: an identifier or a keyword, as written.
    Ident(String),
    /// A backquoted identifier, quotes removed.
    Quoted(String),
    /// A string literal (single or double quotes), escapes resolved.
    Str(String),
    /// An integer literal; the parser checks its range (`-9223372036854775808` needs the sign).
    Int(u64),
    /// A float literal.
    Float(f64),
    /// An operator or punctuation.
    Sym(&'static str),
    /// The end of the text.
    Eof,
}

/// A token and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    /// What it is.
    pub tok: Tok,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1, in characters.
    pub column: usize,
}

/// Longest first, so that `<=` is not read as `<` then `=`.
const SYMS: &[&str] = &[
    "->", "!=", "<>", "<=", ">=", "+", "-", "*", "/", "%", "&", "|", "^", "=", "<", ">", "[", "]",
    ":", "(", ")", ",", ".", ";",
];

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    line: usize,
    column: usize,
}

/// Splits `text` into tokens, ending with [`Tok::Eof`].
pub(crate) fn lex(text: &str) -> Result<Vec<Token>, SqlError> {
    let mut lx = Lexer {
        chars: text.chars().collect(),
        pos: 0,
        line: 1,
        column: 1,
    };
    let mut out = Vec::new();
    loop {
        lx.skip_blanks()?;
        let (line, column) = (lx.line, lx.column);
        let tok = lx.token()?;
        let end = tok == Tok::Eof;
        out.push(Token { tok, line, column });
        if end {
            return Ok(out);
        }
    }
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek(0)?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn error(line: usize, column: usize, message: impl Into<String>) -> SqlError {
        SqlError::Parse {
            line,
            column,
            message: message.into(),
        }
    }

    /// Skips white space and comments.
    fn skip_blanks(&mut self) -> Result<(), SqlError> {
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(c), _) if c.is_whitespace() => {
                    self.bump();
                }
                (Some('-'), Some('-')) => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                (Some('/'), Some('*')) => {
                    let (line, column) = (self.line, self.column);
                    self.bump();
                    self.bump();
                    loop {
                        match self.bump() {
                            Some('*') if self.peek(0) == Some('/') => {
                                self.bump();
                                break;
                            }
                            Some(_) => {}
                            None => return Err(Self::error(line, column, "unterminated comment")),
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn token(&mut self) -> Result<Tok, SqlError> {
        let (line, column) = (self.line, self.column);
        let Some(c) = self.peek(0) else {
            return Ok(Tok::Eof);
        };
        if c.is_alphabetic() || c == '_' {
            let mut word = String::new();
            while let Some(c) = self.peek(0).filter(|c| c.is_alphanumeric() || *c == '_') {
                word.push(c);
                self.bump();
            }
            return Ok(Tok::Ident(word));
        }
        if c.is_ascii_digit() {
            return self.number();
        }
        if c == '`' {
            self.bump();
            let mut word = String::new();
            loop {
                match self.bump() {
                    Some('`') => break,
                    Some(c) => word.push(c),
                    None => {
                        return Err(Self::error(line, column, "unterminated quoted identifier"))
                    }
                }
            }
            if word.is_empty() {
                return Err(Self::error(line, column, "empty quoted identifier"));
            }
            return Ok(Tok::Quoted(word));
        }
        if c == '"' || c == '\'' {
            return self.string(c);
        }
        for sym in SYMS {
            if sym
                .chars()
                .enumerate()
                .all(|(i, s)| self.peek(i) == Some(s))
            {
                for _ in 0..sym.len() {
                    self.bump();
                }
                return Ok(Tok::Sym(sym));
            }
        }
        Err(Self::error(
            line,
            column,
            format!("unexpected character '{c}'"),
        ))
    }

    /// `123`, `1.5`, `1e3`, `2.5E-3`.
    fn number(&mut self) -> Result<Tok, SqlError> {
        let (line, column) = (self.line, self.column);
        let mut text = String::new();
        let mut float = false;
        self.digits(&mut text);
        if self.peek(0) == Some('.') && self.peek(1).is_some_and(|c| c.is_ascii_digit()) {
            float = true;
            text.push('.');
            self.bump();
            self.digits(&mut text);
        }
        if matches!(self.peek(0), Some('e' | 'E')) {
            let sign = usize::from(matches!(self.peek(1), Some('+' | '-')));
            if self.peek(1 + sign).is_some_and(|c| c.is_ascii_digit()) {
                float = true;
                for _ in 0..=sign {
                    text.push(self.bump().unwrap_or('e'));
                }
                self.digits(&mut text);
            }
        }
        if self
            .peek(0)
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            return Err(Self::error(
                self.line,
                self.column,
                format!("invalid number: '{text}' followed by a letter"),
            ));
        }
        if float {
            match text.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(Tok::Float(f)),
                _ => Err(Self::error(
                    line,
                    column,
                    format!("float out of range: {text}"),
                )),
            }
        } else {
            text.parse::<u64>()
                .map(Tok::Int)
                .map_err(|_| Self::error(line, column, format!("integer out of range: {text}")))
        }
    }

    fn digits(&mut self, text: &mut String) {
        while let Some(c) = self.peek(0).filter(char::is_ascii_digit) {
            text.push(c);
            self.bump();
        }
    }

    /// A string in `quote`s. `\n`, `\t`, `\r`, `\\` and escaped quotes are resolved; any
    /// other escape is kept as written, so that `\%` reaches a LIKE pattern intact.
    fn string(&mut self, quote: char) -> Result<Tok, SqlError> {
        let (line, column) = (self.line, self.column);
        self.bump();
        let mut s = String::new();
        loop {
            match self.bump() {
                Some(c) if c == quote => return Ok(Tok::Str(s)),
                Some('\\') => match self.bump() {
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some('r') => s.push('\r'),
                    Some(c @ ('\\' | '"' | '\'')) => s.push(c),
                    Some(c) => {
                        s.push('\\');
                        s.push(c);
                    }
                    None => break,
                },
                Some(c) => s.push(c),
                None => break,
            }
        }
        Err(Self::error(line, column, "unterminated string"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<Tok> {
        lex(text).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn numbers_strings_and_symbols() {
        assert_eq!(
            toks("a1 `x y` 'it\\'s' \"q\\\"\" 12 1.5 2e3 1.5E-2 <= <> -> a.b"),
            vec![
                Tok::Ident("a1".into()),
                Tok::Quoted("x y".into()),
                Tok::Str("it's".into()),
                Tok::Str("q\"".into()),
                Tok::Int(12),
                Tok::Float(1.5),
                Tok::Float(2000.0),
                Tok::Float(0.015),
                Tok::Sym("<="),
                Tok::Sym("<>"),
                Tok::Sym("->"),
                Tok::Ident("a".into()),
                Tok::Sym("."),
                Tok::Ident("b".into()),
                Tok::Eof,
            ]
        );
    }

    #[test]
    fn comments_and_positions() {
        let t = lex("-- one\n  /* two\n */ x\n\t'\\%'").unwrap();
        assert_eq!((t[0].line, t[0].column), (3, 5));
        assert_eq!(t[1].tok, Tok::Str("\\%".into()));
        assert_eq!((t[1].line, t[1].column), (4, 2));
    }

    #[test]
    fn errors() {
        let err = |s| lex(s).unwrap_err().to_string();
        assert_eq!(err("a 'x"), "syntax error at 1:3: unterminated string");
        assert_eq!(err("a\n /*"), "syntax error at 2:2: unterminated comment");
        assert_eq!(
            err("a # b"),
            "syntax error at 1:3: unexpected character '#'"
        );
        assert_eq!(
            err("99999999999999999999"),
            "syntax error at 1:1: integer out of range: 99999999999999999999"
        );
        assert_eq!(
            err("12abc"),
            "syntax error at 1:3: invalid number: '12' followed by a letter"
        );
    }
}
