//! The syntax tree of eKuiper's SQL dialect: `CREATE STREAM` source definitions and
//! `SELECT` rules. `parse` builds it; `plan` runs it.
//!
//! Names are kept as written; the planner compares field names case-sensitively (as
//! eKuiper does for JSON keys) and function names case-insensitively (stored lowercase).

use crate::value::Value;

/// One statement.
// Parsed once per rule and rarely moved: boxing `Select` would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    /// `CREATE STREAM name (fields) WITH (options)`.
    CreateStream(StreamDef),
    /// `SELECT ...`.
    Select(Select),
}

/// A source definition. A SQL stream is a fogline stream: its `DATASOURCE` is the topic
/// filter the stream captures.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamDef {
    /// Its name.
    pub name: String,
    /// Declared fields; empty for a schemaless stream (`CREATE STREAM s () WITH (...)`).
    pub fields: Vec<FieldDef>,
    /// The `WITH (...)` options.
    pub options: StreamOptions,
}

/// A declared field.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldDef {
    /// Its name.
    pub name: String,
    /// Its type.
    pub kind: FieldType,
}

/// eKuiper's field types.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldType {
    /// `BIGINT`.
    Bigint,
    /// `FLOAT`.
    Float,
    /// `STRING`.
    String,
    /// `DATETIME`.
    Datetime,
    /// `BOOLEAN`.
    Boolean,
    /// `BYTEA`.
    Bytea,
    /// `ARRAY(type)`.
    Array(Box<FieldType>),
    /// `STRUCT(name type, ...)`.
    Struct(Vec<FieldDef>),
}

/// How payloads are decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// A JSON object (or an array of objects: one row each).
    #[default]
    Json,
    /// The whole payload as one `bytea` field named `self`.
    Binary,
    /// Delimited text (`DELIMITER`, default `,`) into the declared fields in order.
    Delimited,
}

/// The `WITH (...)` options of a stream.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamOptions {
    /// `DATASOURCE`: the topic filter.
    pub datasource: Option<String>,
    /// `FORMAT`.
    pub format: Format,
    /// `TIMESTAMP`: the field carrying event time (milliseconds since the epoch).
    pub timestamp: Option<String>,
    /// `TIMESTAMP_FORMAT`.
    pub timestamp_format: Option<String>,
    /// `KEY`.
    pub key: Option<String>,
    /// `TYPE` (only `mqtt` and `fogline` are sources here; both read the broker).
    pub kind: Option<String>,
    /// `SHARED`.
    pub shared: bool,
    /// `DELIMITER` for delimited text.
    pub delimiter: Option<String>,
    /// `STRICT_VALIDATION`: a record that does not fit the schema is an error, not coerced.
    pub strict_validation: bool,
    /// Every option as written (name upper-cased), including ones not interpreted.
    pub raw: Vec<(String, String)>,
}

/// A `SELECT` rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    /// The output fields, in order.
    pub fields: Vec<SelectField>,
    /// The source stream.
    pub from: String,
    /// `FROM s AS alias`.
    pub from_alias: Option<String>,
    /// `WHERE`.
    pub filter: Option<Expr>,
    /// `GROUP BY` keys (the window is kept apart).
    pub group_by: Vec<Expr>,
    /// The window of `GROUP BY`, if any.
    pub window: Option<Window>,
    /// `HAVING`.
    pub having: Option<Expr>,
    /// `ORDER BY` keys, applied to a window's results.
    pub order_by: Vec<OrderBy>,
    /// `LIMIT`.
    pub limit: Option<u64>,
}

/// One output field.
#[derive(Clone, Debug, PartialEq)]
pub struct SelectField {
    /// `*`, or an expression.
    pub expr: Expr,
    /// `AS alias`.
    pub alias: Option<String>,
}

/// One `ORDER BY` key.
#[derive(Clone, Debug, PartialEq)]
pub struct OrderBy {
    /// The key.
    pub expr: Expr,
    /// `DESC`.
    pub descending: bool,
}

/// A window: what it is and its optional clauses.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// Its kind and sizes.
    pub kind: WindowKind,
    /// `FILTER (WHERE cond)`: only records meeting it enter the window.
    pub filter: Option<Expr>,
    /// `OVER (WHEN cond)` of a sliding window: only records meeting it trigger one.
    pub trigger: Option<Expr>,
}

/// Window kinds, every duration in milliseconds (units DD HH MI SS MS converted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WindowKind {
    /// `TUMBLINGWINDOW(unit, length)`.
    Tumbling {
        /// Length.
        length_ms: u64,
    },
    /// `HOPPINGWINDOW(unit, length, hop)`.
    Hopping {
        /// Length.
        length_ms: u64,
        /// Hop.
        hop_ms: u64,
    },
    /// `SLIDINGWINDOW(unit, length[, delay])`: on each record, the records of the `length`
    /// before it (and, with a delay, those of the `delay` after it).
    Sliding {
        /// Length.
        length_ms: u64,
        /// Delay (0: none).
        delay_ms: u64,
    },
    /// `SESSIONWINDOW(unit, max_length, timeout)`.
    Session {
        /// Most a session spans.
        max_length_ms: u64,
        /// A gap this long ends it.
        timeout_ms: u64,
    },
    /// `COUNTWINDOW(count[, interval])`.
    Count {
        /// Records in a window.
        count: u64,
        /// Emit every `interval` records (0: every `count`, tumbling).
        interval: u64,
    },
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    /// `-x`.
    Neg,
    /// `NOT x`.
    Not,
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `%`.
    Mod,
    /// `&` (bitwise).
    BitAnd,
    /// `|` (bitwise).
    BitOr,
    /// `^` (bitwise).
    BitXor,
    /// `=`.
    Eq,
    /// `!=` or `<>`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `AND`.
    And,
    /// `OR`.
    Or,
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A literal.
    Literal(Value),
    /// A field, optionally qualified by its stream (`demo.temperature`).
    Field {
        /// `demo` in `demo.temperature`.
        stream: Option<String>,
        /// The field's name.
        name: String,
    },
    /// `*` (or `demo.*`).
    Wildcard {
        /// The stream qualifying it.
        stream: Option<String>,
    },
    /// `x->name`: a field of a struct.
    Arrow(Box<Expr>, String),
    /// `x[i]`: an element of an array (negative counts from the end).
    Index(Box<Expr>, Box<Expr>),
    /// `x[a:b]`: a slice of an array (either bound may be absent).
    Slice(Box<Expr>, Option<Box<Expr>>, Option<Box<Expr>>),
    /// `op x`.
    Unary(UnaryOp, Box<Expr>),
    /// `x op y`.
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `x [NOT] BETWEEN a AND b`.
    Between {
        /// The value tested.
        expr: Box<Expr>,
        /// Lower bound (inclusive).
        low: Box<Expr>,
        /// Upper bound (inclusive).
        high: Box<Expr>,
        /// `NOT BETWEEN`.
        negated: bool,
    },
    /// `x [NOT] IN (a, b, ...)`.
    In {
        /// The value tested.
        expr: Box<Expr>,
        /// The list.
        list: Vec<Expr>,
        /// `NOT IN`.
        negated: bool,
    },
    /// `x [NOT] LIKE 'pattern'` (`%` any run, `_` one character, `\` escapes).
    Like {
        /// The value tested.
        expr: Box<Expr>,
        /// The pattern.
        pattern: Box<Expr>,
        /// `NOT LIKE`.
        negated: bool,
    },
    /// `x IS [NOT] NULL`.
    IsNull {
        /// The value tested.
        expr: Box<Expr>,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `CASE [operand] WHEN .. THEN .. [ELSE ..] END`.
    Case {
        /// `CASE x WHEN v ...` compares `x` with each `v`; absent, each `WHEN` is a condition.
        operand: Option<Box<Expr>>,
        /// `(WHEN, THEN)` pairs.
        whens: Vec<(Expr, Expr)>,
        /// `ELSE`.
        otherwise: Option<Box<Expr>>,
    },
    /// A function call.
    Call(Call),
}

/// A function call: `name(args) [FILTER (WHERE cond)] [OVER (PARTITION BY keys [WHEN cond])]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The name, lowercase.
    pub name: String,
    /// The arguments (`count(*)` has one `Wildcard`).
    pub args: Vec<Expr>,
    /// `FILTER (WHERE cond)` of an aggregate: only rows meeting it are aggregated.
    pub filter: Option<Box<Expr>>,
    /// `OVER (PARTITION BY ...)`: keys of the state of an analytic or stateful function.
    pub partition_by: Vec<Expr>,
    /// `OVER (... WHEN cond)`: the state updates only for rows meeting it.
    pub when: Option<Box<Expr>>,
}
