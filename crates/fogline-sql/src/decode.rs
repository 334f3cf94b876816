//! Payloads to rows by a stream's format, coerced to its schema when it has one.
//!
//! With a schema, only declared fields are kept and values are converted to the declared
//! types as eKuiper does when validation is not strict (numbers between `bigint` and
//! `float`, numeric strings to numbers); `STRICT_VALIDATION` makes a mismatch or a missing
//! field an error. Schemaless streams keep what comes.

use std::fmt;

use bytes::Bytes;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::ast::{FieldDef, FieldType, Format, StreamDef};
use crate::error::SqlError;
use crate::value::{Row, Value};

/// Decodes the payloads of one stream.
#[derive(Debug, Clone)]
pub(crate) struct Decoder {
    format: Format,
    fields: Vec<FieldDef>,
    delimiter: String,
    strict: bool,
}

fn derr(m: impl Into<String>) -> SqlError {
    SqlError::Decode(m.into())
}

impl Decoder {
    pub(crate) fn new(stream: &StreamDef) -> Decoder {
        Decoder {
            format: stream.options.format,
            fields: stream.fields.clone(),
            delimiter: stream
                .options
                .delimiter
                .clone()
                .unwrap_or_else(|| ",".into()),
            strict: stream.options.strict_validation,
        }
    }

    /// One payload to its rows.
    pub(crate) fn decode(&self, payload: &[u8]) -> Result<Vec<Row>, SqlError> {
        match self.format {
            Format::Json => {
                let v: JsonRows =
                    serde_json::from_slice(payload).map_err(|e| derr(e.to_string()))?;
                v.0.into_iter().map(|r| self.conform(r)).collect()
            }
            Format::Binary => Ok(vec![Row::from([(
                "self".to_owned(),
                Value::Bytes(Bytes::copy_from_slice(payload)),
            )])]),
            Format::Delimited => {
                let text = std::str::from_utf8(payload).map_err(|e| derr(e.to_string()))?;
                let text = text.trim_end_matches(['\r', '\n']);
                let mut row = Row::new();
                for (i, part) in text.split(self.delimiter.as_str()).enumerate() {
                    match self.fields.get(i) {
                        Some(f) => {
                            let v = coerce(Value::Str(part.to_owned()), &f.kind, false)
                                .map_err(|m| derr(format!("field {}: {m}", f.name)))?;
                            row.insert(f.name.clone(), v);
                        }
                        None if self.fields.is_empty() => {
                            row.insert(format!("col{i}"), Value::Str(part.to_owned()));
                        }
                        None if self.strict => {
                            return Err(derr(format!("more than {} columns", self.fields.len())))
                        }
                        None => {}
                    }
                }
                if self.strict && row.len() < self.fields.len() {
                    return Err(derr(format!("fewer than {} columns", self.fields.len())));
                }
                Ok(vec![row])
            }
        }
    }

    /// Keeps the declared fields, converted to their types.
    fn conform(&self, mut row: Row) -> Result<Row, SqlError> {
        if self.fields.is_empty() {
            return Ok(row);
        }
        let mut out = Row::new();
        for f in &self.fields {
            match row.remove(&f.name) {
                Some(v) => {
                    let v = coerce(v, &f.kind, self.strict)
                        .map_err(|m| derr(format!("field {}: {m}", f.name)))?;
                    out.insert(f.name.clone(), v);
                }
                None if self.strict => return Err(derr(format!("field {} is missing", f.name))),
                None => {}
            }
        }
        Ok(out)
    }
}

/// A value converted to a declared type; strict accepts only the type itself (and
/// `bigint` for `float`).
fn coerce(v: Value, t: &FieldType, strict: bool) -> Result<Value, String> {
    let bad = |v: &Value| Err(format!("{v:?} is not {t:?}"));
    Ok(match (t, v) {
        (_, Value::Null) => Value::Null,
        (FieldType::Bigint, Value::Int(i)) => Value::Int(i),
        (FieldType::Bigint, Value::Float(f)) if !strict || f.fract() == 0.0 => Value::Int(f as i64),
        (FieldType::Bigint, Value::Str(s)) if !strict => match s.trim().parse::<i64>() {
            Ok(i) => Value::Int(i),
            Err(_) => match s.trim().parse::<f64>() {
                Ok(f) => Value::Int(f as i64),
                Err(_) => return bad(&Value::Str(s)),
            },
        },
        (FieldType::Float, Value::Float(f)) => Value::Float(f),
        (FieldType::Float, Value::Int(i)) => Value::Float(i as f64),
        (FieldType::Float, Value::Str(s)) if !strict => match s.trim().parse::<f64>() {
            Ok(f) => Value::Float(f),
            Err(_) => return bad(&Value::Str(s)),
        },
        (FieldType::String, Value::Str(s)) => Value::Str(s),
        (FieldType::String, v @ (Value::Int(_) | Value::Float(_) | Value::Bool(_))) if !strict => {
            Value::Str(v.to_json().to_string())
        }
        (FieldType::Boolean, Value::Bool(b)) => Value::Bool(b),
        (FieldType::Boolean, Value::Str(s)) if !strict => match s.trim() {
            "true" | "TRUE" | "True" | "1" | "t" | "T" => Value::Bool(true),
            "false" | "FALSE" | "False" | "0" | "f" | "F" => Value::Bool(false),
            _ => return bad(&Value::Str(s)),
        },
        (FieldType::Boolean, Value::Int(i)) if !strict && (i == 0 || i == 1) => Value::Bool(i == 1),
        (FieldType::Datetime, v @ (Value::Int(_) | Value::Str(_))) => v,
        (FieldType::Datetime, Value::Float(f)) => Value::Int(f as i64),
        (FieldType::Bytea, Value::Bytes(b)) => Value::Bytes(b),
        (FieldType::Bytea, Value::Str(s)) => Value::Bytes(Bytes::from(s.into_bytes())),
        (FieldType::Array(t), Value::Array(a)) => Value::Array(
            a.into_iter()
                .map(|x| coerce(x, t, strict))
                .collect::<Result<_, _>>()?,
        ),
        (FieldType::Struct(fields), Value::Object(mut o)) => {
            let mut out = Row::new();
            for f in fields {
                match o.remove(&f.name) {
                    Some(v) => {
                        out.insert(f.name.clone(), coerce(v, &f.kind, strict)?);
                    }
                    None if strict => return Err(format!("field {} is missing", f.name)),
                    None => {}
                }
            }
            Value::Object(out)
        }
        (_, v) => return bad(&v),
    })
}

/// JSON straight to [`Value`]s, without serde_json's own tree in between.
struct JsonValue(Value);

impl<'de> Deserialize<'de> for JsonValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor).map(JsonValue)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Int(i))
    }
    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        Ok(i64::try_from(u).map_or(Value::Float(u as f64), Value::Int))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Float(f))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::Str(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::Str(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(a.size_hint().unwrap_or(0));
        while let Some(JsonValue(v)) = a.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let mut out = Row::new();
        while let Some((k, JsonValue(v))) = a.next_entry::<String, JsonValue>()? {
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

/// A payload's rows: an object, or an array of objects.
struct JsonRows(Vec<Row>);

impl<'de> Deserialize<'de> for JsonRows {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match d.deserialize_any(ValueVisitor)? {
            Value::Object(o) => Ok(JsonRows(vec![o])),
            Value::Array(a) => a
                .into_iter()
                .map(|v| match v {
                    Value::Object(o) => Ok(o),
                    v => Err(de::Error::custom(format!(
                        "array element {v:?} is not an object"
                    ))),
                })
                .collect::<Result<_, _>>()
                .map(JsonRows),
            v => Err(de::Error::custom(format!("{v:?} is not an object"))),
        }
    }
}
