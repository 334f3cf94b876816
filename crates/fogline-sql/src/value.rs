//! Values a rule computes with, and rows (a record's fields by name).
//!
//! JSON payloads decode to these; results encode back to JSON. Integers and floats are
//! kept apart as eKuiper keeps `bigint` and `float` apart: `1 + 2` is `3`, `1 + 2.0` is
//! `3.0`, `7 / 2` is `3` (integer division, as in eKuiper).

use std::collections::BTreeMap;

use bytes::Bytes;

/// A row: field name to value, in name order (as eKuiper's JSON output orders keys).
pub type Row = BTreeMap<String, Value>;

/// One value.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Value {
    /// SQL NULL (and a missing field).
    #[default]
    Null,
    /// A boolean.
    Bool(bool),
    /// A `bigint`.
    Int(i64),
    /// A `float`.
    Float(f64),
    /// A `string`.
    Str(String),
    /// A `bytea` (a binary payload).
    Bytes(Bytes),
    /// An `array`.
    Array(Vec<Value>),
    /// A `struct`.
    Object(Row),
}

impl Value {
    /// The value as a float, when it is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// True for NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Decodes JSON text.
    ///
    /// # Errors
    /// The text is not JSON.
    pub fn from_json(text: &[u8]) -> Result<Value, serde_json::Error> {
        serde_json::from_slice::<serde_json::Value>(text).map(Value::from)
    }

    /// Encodes as JSON (bytes as base64, as eKuiper does; non-finite floats as null).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => (*b).into(),
            Value::Int(i) => (*i).into(),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Str(s) => s.clone().into(),
            Value::Bytes(b) => base64(b).into(),
            Value::Array(a) => a.iter().map(Value::to_json).collect(),
            Value::Object(o) => o
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect::<serde_json::Map<_, _>>()
                .into(),
        }
    }
}

impl From<serde_json::Value> for Value {
    fn from(v: serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::Str(s),
            serde_json::Value::Array(a) => Value::Array(a.into_iter().map(Value::from).collect()),
            serde_json::Value::Object(o) => {
                Value::Object(o.into_iter().map(|(k, v)| (k, Value::from(v))).collect())
            }
        }
    }
}

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, coded) in cases {
            assert_eq!(base64(plain.as_bytes()), coded);
        }
    }

    #[test]
    fn json_round_trips_and_keeps_int_and_float_apart() {
        let v = Value::from_json(br#"{"a":1,"b":2.5,"c":[true,null,"x"],"d":{"e":-3}}"#).unwrap();
        let Value::Object(row) = &v else {
            panic!("not an object")
        };
        assert_eq!(row["a"], Value::Int(1));
        assert_eq!(row["b"], Value::Float(2.5));
        assert_eq!(
            v.to_json().to_string(),
            r#"{"a":1,"b":2.5,"c":[true,null,"x"],"d":{"e":-3}}"#
        );
    }
}
