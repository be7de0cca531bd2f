//! The OpenAPI 3.1 document, assembled once from the route table: every route the
//! router serves is an operation, and each operation's error responses are generated
//! from the codes its handler declares next to itself (`Doc`), the codes of what it is
//! built from (the replay store, the buyer or operator check, a body) and, for every
//! route but a probe, the edge's overload answers. The prose (summaries, parameters,
//! success responses, the schemas of the bodies) is kept in `operations.json` and
//! `base.json` beside this file, by operation id.

mod docs;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use axum::body::Bytes;
use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use crate::code::ErrorCode;
use crate::routes::{RouteClass, RouteDef};

pub use docs::{docs_asset, docs_page};

const BASE: &str = include_str!("base.json");
const OPERATIONS: &str = include_str!("operations.json");
/// Operations, schemas, parameters, tags and security schemes kept apart from the
/// sale's: the after-sale's, and the operator console's.
const PIECES: [(&str, &str); 2] = [
    ("after_sale.json", include_str!("after_sale.json")),
    ("console.json", include_str!("console.json")),
];

/// How the document describes one route, declared beside its handler.
pub struct Doc {
    /// The operation's id; its prose is under this id in `operations.json`.
    pub op: &'static str,
    /// The refusals of the handler itself.
    pub refuses: &'static [ErrorCode],
    /// Refusals of the parts it is built from (replay store, authentication, body).
    pub shared: &'static [&'static [ErrorCode]],
}

impl Doc {
    /// Every error code the route answers with.
    pub fn codes(&self, class: RouteClass) -> BTreeSet<ErrorCode> {
        let edge = (class != RouteClass::Probe).then_some(crate::edge::REFUSES);
        let parts = self.shared.iter().copied().chain(edge);
        (self.refuses.iter().copied())
            .chain(parts.flatten().copied())
            .collect()
    }
}

/// The document as served at /openapi.json, built on first use.
pub fn document() -> Bytes {
    static DOC: OnceLock<Bytes> = OnceLock::new();
    DOC.get_or_init(|| match build(&crate::routes::table()) {
        Ok(doc) => Bytes::from(doc.to_string()),
        Err(e) => {
            tracing::error!(error = %e, "the API document could not be assembled");
            Bytes::from_static(b"{}")
        }
    })
    .clone()
}

/// The document for these routes.
pub fn build(routes: &[RouteDef]) -> Result<Value, String> {
    let mut doc: Value = serde_json::from_str(BASE).map_err(|e| format!("base.json: {e}"))?;
    let mut ops: Map<String, Value> =
        serde_json::from_str(OPERATIONS).map_err(|e| format!("operations.json: {e}"))?;
    for (name, piece) in PIECES {
        merge_piece(&mut doc, &mut ops, name, piece)?;
    }
    doc["components"]["schemas"]["ErrorCode"] = error_code_schema();
    let mut paths = Map::new();
    for r in routes {
        let op = ops
            .get(r.doc.op)
            .ok_or_else(|| format!("operations.json has no {}", r.doc.op))?;
        let item = paths.entry(r.path).or_insert_with(|| json!({}));
        item[r.method.as_str().to_ascii_lowercase()] = operation(r, op.clone());
    }
    doc["paths"] = Value::Object(paths);
    Ok(doc)
}

/// Adds one piece's operations, schemas and tags to the document and the operations.
fn merge_piece(
    doc: &mut Value,
    ops: &mut Map<String, Value>,
    name: &str,
    piece: &str,
) -> Result<(), String> {
    let mut extra: Value = serde_json::from_str(piece).map_err(|e| format!("{name}: {e}"))?;
    let mut take = |key: &str| match extra[key].take() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    ops.extend(take("operations"));
    for (piece, into) in [
        ("schemas", "schemas"),
        ("parameters", "parameters"),
        ("securitySchemes", "securitySchemes"),
    ] {
        let target = doc["components"][into]
            .as_object_mut()
            .ok_or_else(|| format!("base.json has no components.{into}"))?;
        target.extend(take(piece));
    }
    if let (Some(tags), Value::Array(more)) = (doc["tags"].as_array_mut(), extra["tags"].take()) {
        tags.extend(more);
    }
    Ok(())
}

/// The ids of every operation described (`operations.json` and the pieces).
pub fn described_operations() -> Vec<String> {
    let ops: Map<String, Value> = serde_json::from_str(OPERATIONS).unwrap_or_default();
    let mut ids: Vec<String> = ops.keys().cloned().collect();
    for (_, piece) in PIECES {
        let extra: Value = serde_json::from_str(piece).unwrap_or_default();
        if let Some(more) = extra["operations"].as_object() {
            ids.extend(more.keys().cloned());
        }
    }
    ids
}

fn operation(r: &RouteDef, mut op: Value) -> Value {
    let notes = op
        .as_object_mut()
        .and_then(|o| o.remove("errorNotes"))
        .unwrap_or_default();
    op["operationId"] = json!(r.doc.op);
    let codes = r.doc.codes(r.class);
    let replayed = codes.contains(&ErrorCode::IdempotencyKeyRequired);
    for (status, codes) in by_status(&codes) {
        let note = notes[status.as_str()].as_str();
        op["responses"][status.as_str()] = error_response(status, &codes, note, replayed);
    }
    op
}

fn by_status(codes: &BTreeSet<ErrorCode>) -> BTreeMap<StatusCode, Vec<ErrorCode>> {
    let mut out: BTreeMap<StatusCode, Vec<ErrorCode>> = BTreeMap::new();
    for &code in codes {
        for &status in code.statuses() {
            out.entry(status).or_default().push(code);
        }
    }
    out
}

fn error_response(
    status: StatusCode,
    codes: &[ErrorCode],
    note: Option<&str>,
    replayed: bool,
) -> Value {
    let list: Vec<String> = codes.iter().map(|c| format!("`{c}`")).collect();
    let reason = status.canonical_reason().unwrap_or("Error");
    let mut description = format!("{reason}: {}.", list.join(", "));
    if let Some(note) = note {
        description = format!("{description} {note}");
    }
    let schema = json!({"allOf": [
        {"$ref": "#/components/schemas/Error"},
        {"properties": {"error": {"enum": codes}}},
    ]});
    let mut res = json!({
        "description": description,
        "content": {"application/json": {"schema": schema}},
    });
    if matches!(
        status,
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS
    ) {
        res["headers"] = json!({"Retry-After": {"$ref": "#/components/headers/RetryAfter"}});
    } else if replayed && status.is_client_error() {
        let header = json!({"$ref": "#/components/headers/IdempotentReplayed"});
        res["headers"] = json!({ "Idempotent-Replayed": header });
    }
    res
}

/// Every code, and by status which ones a client may meet.
fn error_code_schema() -> Value {
    let all: BTreeSet<ErrorCode> = ErrorCode::ALL.iter().copied().collect();
    let groups: Vec<String> = by_status(&all)
        .into_iter()
        .map(|(status, codes)| {
            let list: Vec<&str> = codes.iter().map(|c| c.as_str()).collect();
            format!("{}: {}.", status.as_u16(), list.join(", "))
        })
        .collect();
    json!({
        "type": "string",
        "enum": ErrorCode::ALL,
        "description": format!(
            "Stable machine-readable code; branch on it, not on the message. By status: {} \
             503 and 429 come with Retry-After.",
            groups.join(" ")
        ),
    })
}
