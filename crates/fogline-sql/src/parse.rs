//! The parser: text to [`Statement`] or [`Expr`], by recursive descent.
//!
//! Split by stage: `stream` for `CREATE STREAM`, `select` for `SELECT` and its window,
//! `expr` for expressions (precedence climbing). This file holds the token cursor they
//! share and the two entry points.

mod expr;
mod select;
mod stream;
#[cfg(test)]
mod tests;

use crate::ast::{Expr, Statement};
use crate::error::SqlError;
use crate::lex::{lex, Tok, Token};

/// Parses one statement, `CREATE STREAM ...` or `SELECT ...`, with an optional trailing `;`.
///
/// # Errors
/// [`SqlError::Parse`] with the line and column of the first token that does not fit and
/// what was expected there.
pub fn parse(sql: &str) -> Result<Statement, SqlError> {
    let mut p = Parser::new(sql)?;
    let statement = if p.is_kw("SELECT") {
        Statement::Select(p.select()?)
    } else if p.is_kw("CREATE") {
        Statement::CreateStream(p.create_stream()?)
    } else {
        return Err(p.expected("SELECT or CREATE STREAM"));
    };
    p.eat_sym(";");
    p.end()?;
    Ok(statement)
}

/// Parses one expression, such as a trigger condition (`temperature > 30 AND humidity < 20`).
///
/// # Errors
/// [`SqlError::Parse`], as [`parse`].
pub fn parse_expr(text: &str) -> Result<Expr, SqlError> {
    let mut p = Parser::new(text)?;
    let e = p.expr()?;
    p.end()?;
    Ok(e)
}

/// Words that cannot name a field or a stream unless backquoted (eKuiper's reserved list,
/// plus the literals and the words that would make a clause ambiguous).
const RESERVED: &[&str] = &[
    "SELECT",
    "FROM",
    "JOIN",
    "LEFT",
    "INNER",
    "ON",
    "WHERE",
    "GROUP",
    "ORDER",
    "HAVING",
    "BY",
    "ASC",
    "DESC",
    "AND",
    "OR",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "IN",
    "NOT",
    "BETWEEN",
    "LIKE",
    "OVER",
    "PARTITION",
    "IS",
    "NULL",
    "TRUE",
    "FALSE",
    "AS",
    "LIMIT",
];

/// A cursor over the tokens. The last token is always `Eof`, so `peek` never runs out.
pub(crate) struct Parser {
    toks: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn new(text: &str) -> Result<Self, SqlError> {
        Ok(Parser {
            toks: lex(text)?,
            pos: 0,
        })
    }

    fn peek(&self) -> &Token {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> &Token {
        let last = self.toks.len() - 1;
        &self.toks[(self.pos + ahead).min(last)]
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    /// The token `ahead` is the bare word `kw` (any case).
    fn is_kw_at(&self, ahead: usize, kw: &str) -> bool {
        matches!(&self.peek_at(ahead).tok, Tok::Ident(w) if w.eq_ignore_ascii_case(kw))
    }

    fn is_kw(&self, kw: &str) -> bool {
        self.is_kw_at(0, kw)
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        let found = self.is_kw(kw);
        if found {
            self.bump();
        }
        found
    }

    fn expect_kw(&mut self, kw: &str) -> Result<(), SqlError> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.expected(kw))
        }
    }

    fn is_sym_at(&self, ahead: usize, sym: &str) -> bool {
        matches!(&self.peek_at(ahead).tok, Tok::Sym(s) if *s == sym)
    }

    fn is_sym(&self, sym: &str) -> bool {
        self.is_sym_at(0, sym)
    }

    fn eat_sym(&mut self, sym: &str) -> bool {
        let found = self.is_sym(sym);
        if found {
            self.bump();
        }
        found
    }

    fn expect_sym(&mut self, sym: &str) -> Result<(), SqlError> {
        if self.eat_sym(sym) {
            Ok(())
        } else {
            Err(self.expected(&format!("'{sym}'")))
        }
    }

    /// The token `ahead` can name a field or stream: a backquoted word or an unreserved one.
    fn is_ident_at(&self, ahead: usize) -> bool {
        match &self.peek_at(ahead).tok {
            Tok::Quoted(_) => true,
            Tok::Ident(w) => !is_reserved(w),
            _ => false,
        }
    }

    /// A field, stream or alias name; `what` names it in the error.
    fn ident(&mut self, what: &str) -> Result<String, SqlError> {
        if !self.is_ident_at(0) {
            return Err(self.expected(what));
        }
        match self.bump().tok {
            Tok::Ident(w) | Tok::Quoted(w) => Ok(w),
            _ => unreachable!("checked by is_ident_at"),
        }
    }

    fn end(&self) -> Result<(), SqlError> {
        if self.peek().tok == Tok::Eof {
            Ok(())
        } else {
            Err(self.expected("end of input"))
        }
    }

    /// `expected <what>, found <the current token>`, at the current token.
    fn expected(&self, what: &str) -> SqlError {
        let t = self.peek();
        error_at(t, format!("expected {what}, found {}", describe(&t.tok)))
    }

    /// An error at the current token.
    fn error(&self, message: impl Into<String>) -> SqlError {
        error_at(self.peek(), message.into())
    }
}

fn error_at(t: &Token, message: String) -> SqlError {
    SqlError::Parse {
        line: t.line,
        column: t.column,
        message,
    }
}

fn is_reserved(word: &str) -> bool {
    RESERVED.iter().any(|r| r.eq_ignore_ascii_case(word))
}

/// A token as an error message shows it.
fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Ident(w) => format!("'{w}'"),
        Tok::Quoted(w) => format!("`{w}`"),
        Tok::Str(s) => format!("string {s:?}"),
        Tok::Int(i) => format!("'{i}'"),
        Tok::Float(f) => format!("'{f}'"),
        Tok::Sym(s) => format!("'{s}'"),
        Tok::Eof => "end of input".to_string(),
    }
}
