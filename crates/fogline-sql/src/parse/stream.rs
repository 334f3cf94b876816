//! `CREATE STREAM name (field TYPE, ...) WITH (OPTION = "value", ...)`.

use super::Parser;
use crate::ast::{FieldDef, FieldType, Format, StreamDef, StreamOptions};
use crate::error::SqlError;
use crate::lex::Tok;

impl Parser {
    /// From `CREATE`.
    pub(super) fn create_stream(&mut self) -> Result<StreamDef, SqlError> {
        self.expect_kw("CREATE")?;
        if self.is_kw("TABLE") {
            return Err(self.error("CREATE TABLE is not supported: only streams"));
        }
        self.expect_kw("STREAM")?;
        let name = self.ident("a stream name")?;
        self.expect_sym("(")?;
        let fields = self.field_defs()?;
        self.expect_kw("WITH")?;
        let options = self.options()?;
        Ok(StreamDef {
            name,
            fields,
            options,
        })
    }

    /// After `(`: `name TYPE, ...)`, possibly empty. A trailing comma is accepted, as in
    /// eKuiper's own examples.
    fn field_defs(&mut self) -> Result<Vec<FieldDef>, SqlError> {
        let mut fields: Vec<FieldDef> = Vec::new();
        while !self.eat_sym(")") {
            let at = self.peek().clone();
            let def = self.field_def()?;
            if fields.iter().any(|f| f.name == def.name) {
                return Err(super::error_at(
                    &at,
                    format!("field '{}' is declared twice", def.name),
                ));
            }
            fields.push(def);
            if self.is_kw("DEFAULT") {
                return Err(self.error("DEFAULT values are not supported"));
            }
            if !self.eat_sym(",") && !self.is_sym(")") {
                return Err(self.expected("',' or ')'"));
            }
        }
        Ok(fields)
    }

    fn field_def(&mut self) -> Result<FieldDef, SqlError> {
        let name = self.ident("a field name")?;
        let kind = self.field_type()?;
        Ok(FieldDef { name, kind })
    }

    fn field_type(&mut self) -> Result<FieldType, SqlError> {
        const TYPES: &str =
            "a type (BIGINT, FLOAT, STRING, DATETIME, BOOLEAN, BYTEA, ARRAY or STRUCT)";
        let Tok::Ident(word) = &self.peek().tok else {
            return Err(self.expected(TYPES));
        };
        let kind = match word.to_ascii_uppercase().as_str() {
            "BIGINT" => FieldType::Bigint,
            "FLOAT" => FieldType::Float,
            "STRING" => FieldType::String,
            "DATETIME" => FieldType::Datetime,
            "BOOLEAN" => FieldType::Boolean,
            "BYTEA" => FieldType::Bytea,
            "ARRAY" => {
                self.bump();
                self.expect_sym("(")?;
                let inner = self.field_type()?;
                self.expect_sym(")")?;
                return Ok(FieldType::Array(Box::new(inner)));
            }
            "STRUCT" => {
                self.bump();
                self.expect_sym("(")?;
                let mut fields = vec![self.field_def()?];
                while self.eat_sym(",") {
                    fields.push(self.field_def()?);
                }
                self.expect_sym(")")?;
                return Ok(FieldType::Struct(fields));
            }
            _ => return Err(self.expected(TYPES)),
        };
        self.bump();
        Ok(kind)
    }

    /// `(NAME = "value", ...)`: names in any case, values strings.
    fn options(&mut self) -> Result<StreamOptions, SqlError> {
        self.expect_sym("(")?;
        let mut o = StreamOptions::default();
        loop {
            let Tok::Ident(name) = &self.peek().tok else {
                return Err(self.expected("an option name"));
            };
            let name = name.to_ascii_uppercase();
            let name_at = self.bump();
            self.expect_sym("=")?;
            let value_at = self.peek().clone();
            let Tok::Str(value) = value_at.tok.clone() else {
                return Err(self.expected(&format!("a string value for {name}")));
            };
            self.bump();
            if o.raw.iter().any(|(n, _)| *n == name) {
                return Err(super::error_at(
                    &name_at,
                    format!("option {name} is given twice"),
                ));
            }
            let bad = |message: String| super::error_at(&value_at, message);
            match name.as_str() {
                "DATASOURCE" => o.datasource = Some(value.clone()),
                "FORMAT" => {
                    o.format = match value.to_ascii_lowercase().as_str() {
                        "json" => Format::Json,
                        "binary" => Format::Binary,
                        "delimited" => Format::Delimited,
                        _ => {
                            return Err(bad(format!(
                                "unsupported FORMAT \"{value}\": expected json, binary or delimited"
                            )))
                        }
                    }
                }
                "TIMESTAMP" => o.timestamp = Some(value.clone()),
                "TIMESTAMP_FORMAT" => o.timestamp_format = Some(value.clone()),
                "KEY" => o.key = Some(value.clone()),
                "TYPE" => o.kind = Some(value.clone()),
                "DELIMITER" => o.delimiter = Some(value.clone()),
                "SHARED" => o.shared = boolean(&name, &value).map_err(bad)?,
                "STRICT_VALIDATION" => o.strict_validation = boolean(&name, &value).map_err(bad)?,
                _ => {}
            }
            o.raw.push((name, value));
            if self.eat_sym(")") {
                return Ok(o);
            }
            if !self.eat_sym(",") {
                return Err(self.expected("',' or ')'"));
            }
        }
    }
}

fn boolean(name: &str, value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!(
            "{name} must be \"true\" or \"false\", not \"{value}\""
        )),
    }
}
