//! Topic templates: `alerts/{id}` or eKuiper's `alerts/{{.id}}`, filled from a result row.

use fogline_sql::{Row, Value};

/// A parsed template.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Text(String),
    Field(String),
}

impl Template {
    /// Parses a template.
    ///
    /// # Errors
    /// An unclosed `{` or an empty field name.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            let (inner, after) = if let Some(r) = rest[open..].strip_prefix("{{") {
                let close = r
                    .find("}}")
                    .ok_or_else(|| format!("template {text:?}: unclosed {{{{"))?;
                (r[..close].trim().trim_start_matches('.'), &r[close + 2..])
            } else {
                let r = &rest[open + 1..];
                let close = r
                    .find('}')
                    .ok_or_else(|| format!("template {text:?}: unclosed {{"))?;
                (r[..close].trim(), &r[close + 1..])
            };
            if inner.is_empty() {
                return Err(format!("template {text:?}: empty field name"));
            }
            parts.push(Part::Field(inner.to_string()));
            rest = after;
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Template { parts })
    }

    /// True when it uses no field.
    pub fn is_fixed(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Text(_)))
    }

    /// Fills it from `row`.
    ///
    /// # Errors
    /// A field the row lacks (or that is not a string, number or boolean).
    pub fn render(&self, row: Option<&Row>) -> Result<String, String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Field(f) => match row.and_then(|r| r.get(f)) {
                    Some(Value::Str(s)) => out.push_str(s),
                    Some(Value::Int(i)) => out.push_str(&i.to_string()),
                    Some(Value::Float(x)) => out.push_str(&x.to_string()),
                    Some(Value::Bool(b)) => out.push_str(&b.to_string()),
                    _ => {
                        return Err(format!(
                            "topic template: the result has no field {f:?} to fill it with"
                        ))
                    }
                },
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_syntaxes_fill_from_the_row() {
        let mut row = Row::new();
        row.insert("id".into(), Value::Str("r7".into()));
        row.insert("n".into(), Value::Int(3));
        let t = Template::parse("alerts/{id}/{{.n}}").unwrap();
        assert!(!t.is_fixed());
        assert_eq!(t.render(Some(&row)).unwrap(), "alerts/r7/3");
        assert!(Template::parse("a/b").unwrap().is_fixed());
        assert!(t.render(None).unwrap_err().contains("\"id\""));
        assert!(Template::parse("a/{id").is_err());
        assert!(Template::parse("a/{}").is_err());
    }
}
