//! Expressions, loosest first: OR, AND, NOT, comparisons and predicates (IN, LIKE,
//! BETWEEN, IS), then the binary operators by precedence climbing (`|` < `^` < `&` <
//! `+ -` < `* / %`), unary minus, and the postfix `->`, `.`, `[]`.

use super::Parser;
use crate::ast::{BinaryOp, Call, Expr, UnaryOp};
use crate::error::SqlError;
use crate::lex::Tok;
use crate::value::Value;

/// Bit, additive and multiplicative operators with their precedence (higher binds tighter).
fn binary_op(tok: &Tok) -> Option<(u8, BinaryOp)> {
    let Tok::Sym(s) = tok else { return None };
    Some(match *s {
        "|" => (1, BinaryOp::BitOr),
        "^" => (2, BinaryOp::BitXor),
        "&" => (3, BinaryOp::BitAnd),
        "+" => (4, BinaryOp::Add),
        "-" => (4, BinaryOp::Sub),
        "*" => (5, BinaryOp::Mul),
        "/" => (5, BinaryOp::Div),
        "%" => (5, BinaryOp::Mod),
        _ => return None,
    })
}

fn comparison_op(tok: &Tok) -> Option<BinaryOp> {
    let Tok::Sym(s) = tok else { return None };
    Some(match *s {
        "=" => BinaryOp::Eq,
        "!=" | "<>" => BinaryOp::Ne,
        "<" => BinaryOp::Lt,
        "<=" => BinaryOp::Le,
        ">" => BinaryOp::Gt,
        ">=" => BinaryOp::Ge,
        _ => return None,
    })
}

fn binary(op: BinaryOp, l: Expr, r: Expr) -> Expr {
    Expr::Binary(op, Box::new(l), Box::new(r))
}

impl Parser {
    /// One expression.
    pub(super) fn expr(&mut self) -> Result<Expr, SqlError> {
        let mut left = self.and()?;
        while self.eat_kw("OR") {
            left = binary(BinaryOp::Or, left, self.and()?);
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, SqlError> {
        let mut left = self.not()?;
        while self.eat_kw("AND") {
            left = binary(BinaryOp::And, left, self.not()?);
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Expr, SqlError> {
        if self.eat_kw("NOT") {
            return Ok(Expr::Unary(UnaryOp::Not, Box::new(self.not()?)));
        }
        self.comparison()
    }

    /// Comparisons and predicates, left to right: `a = b = c` is `(a = b) = c`.
    fn comparison(&mut self) -> Result<Expr, SqlError> {
        let mut left = self.binary(1)?;
        loop {
            if let Some(op) = comparison_op(&self.peek().tok) {
                self.bump();
                left = binary(op, left, self.binary(1)?);
                continue;
            }
            let negated = self.is_kw("NOT")
                && ["IN", "LIKE", "BETWEEN"]
                    .iter()
                    .any(|kw| self.is_kw_at(1, kw));
            if negated {
                self.bump();
            }
            let expr = Box::new(left);
            left = if self.eat_kw("IN") {
                Expr::In {
                    expr,
                    list: self.in_list()?,
                    negated,
                }
            } else if self.eat_kw("LIKE") {
                Expr::Like {
                    expr,
                    pattern: Box::new(self.binary(1)?),
                    negated,
                }
            } else if self.eat_kw("BETWEEN") {
                // The bounds stop before AND: `a BETWEEN 1 AND 2 AND b` is `(..) AND b`.
                let low = Box::new(self.binary(1)?);
                self.expect_kw("AND")?;
                let high = Box::new(self.binary(1)?);
                Expr::Between {
                    expr,
                    low,
                    high,
                    negated,
                }
            } else if self.eat_kw("IS") {
                let negated = self.eat_kw("NOT");
                self.expect_kw("NULL")?;
                Expr::IsNull { expr, negated }
            } else {
                return Ok(*expr);
            };
        }
    }

    /// `(a, b, ...)` after IN. eKuiper's `x IN array_expr` (no parentheses) has no place in
    /// the tree, so it is refused by name.
    fn in_list(&mut self) -> Result<Vec<Expr>, SqlError> {
        if !self.is_sym("(") {
            return Err(
                self.expected("'(' after IN (IN over an array expression is not supported)")
            );
        }
        self.bump();
        let mut list = vec![self.expr()?];
        while self.eat_sym(",") {
            list.push(self.expr()?);
        }
        self.expect_sym(")")?;
        Ok(list)
    }

    /// Binary operators binding at least as tight as `min`.
    fn binary(&mut self, min: u8) -> Result<Expr, SqlError> {
        let mut left = self.unary()?;
        while let Some((prec, op)) = binary_op(&self.peek().tok) {
            if prec < min {
                break;
            }
            self.bump();
            let right = self.binary(prec + 1)?;
            left = binary(op, left, right);
        }
        Ok(left)
    }

    /// Unary minus; on a number literal it folds into the literal (`-1` is the integer -1).
    fn unary(&mut self) -> Result<Expr, SqlError> {
        if !self.is_sym("-") {
            return self.postfix();
        }
        self.bump();
        if let Tok::Int(i) = self.peek().tok {
            if !self.is_postfix_at(1) {
                self.bump();
                let value = 0i64
                    .checked_sub_unsigned(i)
                    .ok_or_else(|| self.error_before(format!("integer out of range: -{i}")))?;
                return Ok(Expr::Literal(Value::Int(value)));
            }
        }
        if let Tok::Float(f) = self.peek().tok {
            if !self.is_postfix_at(1) {
                self.bump();
                return Ok(Expr::Literal(Value::Float(-f)));
            }
        }
        Ok(Expr::Unary(UnaryOp::Neg, Box::new(self.unary()?)))
    }

    fn is_postfix_at(&self, ahead: usize) -> bool {
        ["->", "[", "."].iter().any(|s| self.is_sym_at(ahead, s))
    }

    /// An error at the token just consumed.
    fn error_before(&self, message: String) -> SqlError {
        super::error_at(&self.toks[self.pos.saturating_sub(1)], message)
    }

    /// A primary followed by `->name`, `.name`, `[i]` or `[a:b]`.
    fn postfix(&mut self) -> Result<Expr, SqlError> {
        let mut e = self.primary()?;
        loop {
            if self.eat_sym("->") || self.eat_sym(".") {
                if self.is_sym("*") {
                    return Err(self.error("projections over '*' are not supported"));
                }
                e = Expr::Arrow(Box::new(e), self.ident("a field name")?);
            } else if self.eat_sym("[") {
                e = self.subscript(e)?;
            } else {
                return Ok(e);
            }
        }
    }

    /// After `[`: `i]`, `a:b]`, `:b]`, `a:]` or `:]`.
    fn subscript(&mut self, e: Expr) -> Result<Expr, SqlError> {
        if self.is_sym("*") {
            return Err(self.error("projections over '*' are not supported"));
        }
        let low = if self.is_sym(":") {
            None
        } else {
            Some(Box::new(self.expr()?))
        };
        if !self.eat_sym(":") {
            self.expect_sym("]")?;
            let index = low.expect("an index unless the subscript starts with ':'");
            return Ok(Expr::Index(Box::new(e), index));
        }
        let high = if self.is_sym("]") {
            None
        } else {
            Some(Box::new(self.expr()?))
        };
        self.expect_sym("]")?;
        Ok(Expr::Slice(Box::new(e), low, high))
    }

    fn primary(&mut self) -> Result<Expr, SqlError> {
        let t = self.peek().clone();
        match t.tok {
            Tok::Int(i) => {
                let i = i64::try_from(i)
                    .map_err(|_| self.error(format!("integer out of range: {i}")))?;
                self.bump();
                Ok(Expr::Literal(Value::Int(i)))
            }
            Tok::Float(f) => {
                self.bump();
                Ok(Expr::Literal(Value::Float(f)))
            }
            Tok::Str(s) => {
                self.bump();
                Ok(Expr::Literal(Value::Str(s)))
            }
            Tok::Sym("(") => {
                self.bump();
                let e = self.expr()?;
                self.expect_sym(")")?;
                Ok(e)
            }
            Tok::Ident(ref w) if w.eq_ignore_ascii_case("TRUE") => {
                self.bump();
                Ok(Expr::Literal(Value::Bool(true)))
            }
            Tok::Ident(ref w) if w.eq_ignore_ascii_case("FALSE") => {
                self.bump();
                Ok(Expr::Literal(Value::Bool(false)))
            }
            Tok::Ident(ref w) if w.eq_ignore_ascii_case("NULL") => {
                self.bump();
                Ok(Expr::Literal(Value::Null))
            }
            Tok::Ident(ref w) if w.eq_ignore_ascii_case("CASE") => {
                self.bump();
                self.case()
            }
            Tok::Ident(ref w) if self.is_ident_at(0) && self.is_sym_at(1, "(") => {
                let name = w.to_lowercase();
                self.bump();
                self.bump();
                Ok(Expr::Call(self.call(name)?))
            }
            _ if self.is_ident_at(0) => {
                let name = self.ident("a field")?;
                if self.is_sym("(") {
                    return Err(self.error("a function name cannot be backquoted"));
                }
                // `a.b`: `a` is a stream, or a struct field; the planner tells which.
                if self.is_sym(".") && self.is_ident_at(1) {
                    self.bump();
                    let field = self.ident("a field")?;
                    return Ok(Expr::Field {
                        stream: Some(name),
                        name: field,
                    });
                }
                Ok(Expr::Field { stream: None, name })
            }
            _ => Err(self.expected("an expression")),
        }
    }

    /// After `CASE`: `[operand] WHEN .. THEN .. [...] [ELSE ..] END`.
    fn case(&mut self) -> Result<Expr, SqlError> {
        let operand = if self.is_kw("WHEN") {
            None
        } else {
            Some(Box::new(self.expr()?))
        };
        let mut whens = Vec::new();
        while self.eat_kw("WHEN") {
            let cond = self.expr()?;
            self.expect_kw("THEN")?;
            whens.push((cond, self.expr()?));
        }
        if whens.is_empty() {
            return Err(self.expected("WHEN"));
        }
        let otherwise = if self.eat_kw("ELSE") {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        if !self.eat_kw("END") {
            let what = if otherwise.is_some() {
                "END"
            } else {
                "WHEN, ELSE or END"
            };
            return Err(self.expected(what));
        }
        Ok(Expr::Case {
            operand,
            whens,
            otherwise,
        })
    }

    /// After `name(`: arguments, `)`, then `FILTER (WHERE ..)` and `OVER (..)` if present.
    fn call(&mut self, name: String) -> Result<Call, SqlError> {
        let mut args = Vec::new();
        if !self.eat_sym(")") {
            loop {
                args.push(self.call_arg()?);
                if self.eat_sym(")") {
                    break;
                }
                if !self.eat_sym(",") {
                    return Err(self.expected("',' or ')'"));
                }
            }
        }
        let mut call = Call {
            name,
            args,
            filter: None,
            partition_by: Vec::new(),
            when: None,
        };
        // FILTER is not reserved: it is a clause only right after a call and before `(`.
        if self.is_kw("FILTER") && self.is_sym_at(1, "(") {
            call.filter = Some(Box::new(self.filter_clause()?));
        }
        if self.eat_kw("OVER") {
            self.expect_sym("(")?;
            if self.eat_kw("PARTITION") {
                self.expect_kw("BY")?;
                call.partition_by.push(self.expr()?);
                while self.eat_sym(",") {
                    call.partition_by.push(self.expr()?);
                }
            }
            if self.eat_kw("WHEN") {
                call.when = Some(Box::new(self.expr()?));
            }
            if call.partition_by.is_empty() && call.when.is_none() {
                return Err(self.expected("PARTITION BY or WHEN"));
            }
            self.expect_sym(")")?;
        }
        Ok(call)
    }

    /// `FILTER (WHERE cond)`, returning `cond`.
    pub(super) fn filter_clause(&mut self) -> Result<Expr, SqlError> {
        self.expect_kw("FILTER")?;
        self.expect_sym("(")?;
        self.expect_kw("WHERE")?;
        let cond = self.expr()?;
        self.expect_sym(")")?;
        Ok(cond)
    }

    /// A call argument: `*`, `stream.*` or an expression.
    fn call_arg(&mut self) -> Result<Expr, SqlError> {
        match self.wildcard() {
            Some(w) => Ok(w),
            None => self.expr(),
        }
    }

    /// `*` or `stream.*`, if that is what comes next.
    pub(super) fn wildcard(&mut self) -> Option<Expr> {
        if self.eat_sym("*") {
            return Some(Expr::Wildcard { stream: None });
        }
        if self.is_ident_at(0) && self.is_sym_at(1, ".") && self.is_sym_at(2, "*") {
            let (Tok::Ident(stream) | Tok::Quoted(stream)) = self.bump().tok else {
                unreachable!("checked by is_ident_at")
            };
            self.bump();
            self.bump();
            return Some(Expr::Wildcard {
                stream: Some(stream),
            });
        }
        None
    }
}
