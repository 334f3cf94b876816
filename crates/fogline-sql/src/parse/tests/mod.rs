//! The parser's tests: golden trees, errors, and eKuiper's documented examples.

mod docs;
mod errors;
mod golden;

use super::{parse, parse_expr};
use crate::ast::{BinaryOp, Call, Expr, Select, Statement};
use crate::error::SqlError;
use crate::value::Value;

pub(super) fn field(name: &str) -> Expr {
    Expr::Field {
        stream: None,
        name: name.into(),
    }
}

pub(super) fn int(i: i64) -> Expr {
    Expr::Literal(Value::Int(i))
}

pub(super) fn str_lit(s: &str) -> Expr {
    Expr::Literal(Value::Str(s.into()))
}

pub(super) fn bin(op: BinaryOp, l: Expr, r: Expr) -> Expr {
    Expr::Binary(op, Box::new(l), Box::new(r))
}

pub(super) fn call(name: &str, args: Vec<Expr>) -> Call {
    Call {
        name: name.into(),
        args,
        filter: None,
        partition_by: vec![],
        when: None,
    }
}

pub(super) fn select(sql: &str) -> Select {
    match parse(sql) {
        Ok(Statement::Select(s)) => s,
        other => panic!("{sql}: {other:?}"),
    }
}

pub(super) fn expr(text: &str) -> Expr {
    parse_expr(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The error's position and message.
pub(super) fn err(sql: &str) -> (usize, usize, String) {
    match parse(sql) {
        Err(SqlError::Parse {
            line,
            column,
            message,
        }) => (line, column, message),
        other => panic!("{sql}: expected a parse error, got {other:?}"),
    }
}
