//! `SELECT fields FROM stream [AS alias] [WHERE ..] [GROUP BY .., window [FILTER ..]
//! [OVER ..]] [HAVING ..] [ORDER BY ..] [LIMIT n]`, and the windows.
//!
//! Window rules enforced here (eKuiper's, plus what its docs state): the unit is one of DD
//! HH MI SS MS; every size is an integer literal above 0, except a sliding window's delay,
//! which may be 0; a hop is at most the window's length and at least a thousandth of it
//! (`window::MAX_HOPS`); a count window's interval is at
//! most its count; `OVER (WHEN ..)` only on a sliding window; one window per statement.

use super::Parser;
use crate::ast::{OrderBy, Select, SelectField, Window, WindowKind};
use crate::error::SqlError;
use crate::lex::{Tok, Token};

const WINDOWS: &[&str] = &[
    "TUMBLINGWINDOW",
    "HOPPINGWINDOW",
    "SLIDINGWINDOW",
    "SESSIONWINDOW",
    "COUNTWINDOW",
    "STATEWINDOW",
];

impl Parser {
    /// From `SELECT`.
    pub(super) fn select(&mut self) -> Result<Select, SqlError> {
        self.expect_kw("SELECT")?;
        let mut fields = vec![self.select_field()?];
        while self.eat_sym(",") {
            fields.push(self.select_field()?);
        }
        self.expect_kw("FROM")?;
        let from = self.ident("a stream name")?;
        let from_alias = if self.eat_kw("AS") {
            Some(self.ident("an alias")?)
        } else {
            None
        };
        if ["JOIN", "LEFT", "RIGHT", "FULL", "CROSS", "INNER"]
            .iter()
            .any(|kw| self.is_kw(kw))
        {
            return Err(self.error("joins are not supported: a rule reads one stream"));
        }
        let mut s = Select {
            fields,
            from,
            from_alias,
            filter: None,
            group_by: Vec::new(),
            window: None,
            having: None,
            order_by: Vec::new(),
            limit: None,
        };
        if self.eat_kw("WHERE") {
            s.filter = Some(self.expr()?);
        }
        if self.eat_kw("GROUP") {
            self.expect_kw("BY")?;
            self.group_by(&mut s)?;
        }
        if self.eat_kw("HAVING") {
            s.having = Some(self.expr()?);
        }
        if self.eat_kw("ORDER") {
            self.expect_kw("BY")?;
            loop {
                let expr = self.expr()?;
                let descending = self.eat_kw("DESC");
                if !descending {
                    self.eat_kw("ASC");
                }
                s.order_by.push(OrderBy { expr, descending });
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        if self.eat_kw("LIMIT") {
            let Tok::Int(n) = self.peek().tok else {
                return Err(self.expected("a row count after LIMIT"));
            };
            self.bump();
            s.limit = Some(n);
        }
        if !self.is_sym(";") && self.peek().tok != Tok::Eof {
            return Err(self.expected(next_clause(&s)));
        }
        Ok(s)
    }

    /// `*`, `stream.*`, or `expr [AS alias]`.
    fn select_field(&mut self) -> Result<SelectField, SqlError> {
        if let Some(expr) = self.wildcard() {
            if self.is_kw("EXCEPT") || self.is_kw("REPLACE") {
                return Err(self.error("SELECT * EXCEPT/REPLACE is not supported"));
            }
            return Ok(SelectField { expr, alias: None });
        }
        let expr = self.expr()?;
        let alias = if self.eat_kw("AS") {
            Some(self.ident("an alias")?)
        } else {
            None
        };
        if !self.is_sym(",") && !self.is_kw("FROM") {
            let what = if alias.is_some() {
                "',' or FROM"
            } else {
                "AS, ',' or FROM"
            };
            return Err(self.expected(what));
        }
        Ok(SelectField { expr, alias })
    }

    /// The keys of GROUP BY and its window, wherever the window stands in the list.
    fn group_by(&mut self, s: &mut Select) -> Result<(), SqlError> {
        loop {
            let window_name = match &self.peek().tok {
                Tok::Ident(w) if self.is_sym_at(1, "(") => {
                    WINDOWS.iter().find(|n| n.eq_ignore_ascii_case(w)).copied()
                }
                _ => None,
            };
            if let Some(name) = window_name {
                if s.window.is_some() {
                    return Err(self.error("only one window is allowed in GROUP BY"));
                }
                s.window = Some(self.window(name)?);
            } else {
                s.group_by.push(self.expr()?);
            }
            if !self.eat_sym(",") {
                return Ok(());
            }
        }
    }

    /// `NAMEWINDOW(args) [FILTER (WHERE ..)] [OVER (WHEN ..)]`.
    fn window(&mut self, name: &str) -> Result<Window, SqlError> {
        let at = self.bump();
        if name == "STATEWINDOW" {
            return Err(super::error_at(&at, "STATEWINDOW is not supported".into()));
        }
        self.expect_sym("(")?;
        let kind = if name == "COUNTWINDOW" {
            self.count_window(&at)?
        } else {
            self.time_window(name, &at)?
        };
        let filter = if self.is_kw("FILTER") {
            Some(self.filter_clause()?)
        } else {
            None
        };
        let mut trigger = None;
        if self.is_kw("OVER") {
            if name != "SLIDINGWINDOW" {
                return Err(self.error(format!(
                    "OVER (WHEN ..) applies to SLIDINGWINDOW only, not {name}"
                )));
            }
            self.bump();
            self.expect_sym("(")?;
            self.expect_kw("WHEN")?;
            trigger = Some(self.expr()?);
            self.expect_sym(")")?;
        }
        Ok(Window {
            kind,
            filter,
            trigger,
        })
    }

    /// After `COUNTWINDOW(`: `count[, interval])`.
    fn count_window(&mut self, at: &Token) -> Result<WindowKind, SqlError> {
        let count = self.window_size("the count", false)?;
        let interval = if self.eat_sym(",") {
            self.window_size("the interval", false)?
        } else {
            0
        };
        self.expect_sym(")")?;
        if interval > count {
            return Err(super::error_at(
                at,
                format!("COUNTWINDOW's interval ({interval}) must not exceed its count ({count})"),
            ));
        }
        Ok(WindowKind::Count { count, interval })
    }

    /// After `NAMEWINDOW(`: `unit, sizes...)`, sizes converted to milliseconds.
    fn time_window(&mut self, name: &str, at: &Token) -> Result<WindowKind, SqlError> {
        let unit_ms: u64 = match &self.peek().tok {
            Tok::Ident(u) => match u.to_ascii_uppercase().as_str() {
                "DD" => 86_400_000,
                "HH" => 3_600_000,
                "MI" => 60_000,
                "SS" => 1_000,
                "MS" => 1,
                _ => 0,
            },
            _ => 0,
        };
        if unit_ms == 0 {
            return Err(self.expected("a time unit (DD, HH, MI, SS or MS)"));
        }
        self.bump();
        let mut sizes = Vec::new();
        let arity = if matches!(name, "TUMBLINGWINDOW" | "SLIDINGWINDOW") {
            1
        } else {
            2
        };
        let optional = usize::from(name == "SLIDINGWINDOW");
        while sizes.len() < arity + optional && self.eat_sym(",") {
            let what = match (name, sizes.len()) {
                ("SESSIONWINDOW", 0) => "the maximum length",
                (_, 0) => "the length",
                ("HOPPINGWINDOW", _) => "the hop",
                ("SLIDINGWINDOW", _) => "the delay",
                _ => "the timeout",
            };
            let zero_ok = name == "SLIDINGWINDOW" && sizes.len() == 1;
            let at_size = self.peek().clone();
            let n = self.window_size(what, zero_ok)?;
            let ms = n
                .checked_mul(unit_ms)
                .ok_or_else(|| super::error_at(&at_size, format!("{what} ({n}) is too large")))?;
            sizes.push(ms);
        }
        if sizes.len() < arity {
            return Err(self.expected("','"));
        }
        self.expect_sym(")")?;
        let (length_ms, second) = (sizes[0], sizes.get(1).copied().unwrap_or(0));
        Ok(match name {
            "TUMBLINGWINDOW" => WindowKind::Tumbling { length_ms },
            "HOPPINGWINDOW" => {
                if second > length_ms {
                    return Err(super::error_at(
                        at,
                        "HOPPINGWINDOW's hop must not exceed its length".into(),
                    ));
                }
                if let Some(why) = crate::window::too_many_hops(length_ms, second) {
                    return Err(super::error_at(at, why));
                }
                WindowKind::Hopping {
                    length_ms,
                    hop_ms: second,
                }
            }
            "SLIDINGWINDOW" => WindowKind::Sliding {
                length_ms,
                delay_ms: second,
            },
            _ => WindowKind::Session {
                max_length_ms: length_ms,
                timeout_ms: second,
            },
        })
    }

    /// An integer literal above 0 (or at least 0 if `zero_ok`).
    fn window_size(&mut self, what: &str, zero_ok: bool) -> Result<u64, SqlError> {
        let Tok::Int(n) = self.peek().tok else {
            return Err(self.expected(&format!("an integer for {what}")));
        };
        if n == 0 && !zero_ok {
            return Err(self.error(format!("{what} must be above 0")));
        }
        self.bump();
        Ok(n)
    }
}

/// What may follow the clauses parsed so far, for the error after a statement.
fn next_clause(s: &Select) -> &'static str {
    if s.limit.is_some() {
        "end of input"
    } else if !s.order_by.is_empty() {
        "',', LIMIT or end of input"
    } else if s.having.is_some() {
        "ORDER BY, LIMIT or end of input"
    } else if !s.group_by.is_empty() || s.window.is_some() {
        "',', HAVING, ORDER BY, LIMIT or end of input"
    } else if s.filter.is_some() {
        "GROUP BY, HAVING, ORDER BY, LIMIT or end of input"
    } else {
        "WHERE, GROUP BY, HAVING, ORDER BY, LIMIT or end of input"
    }
}
