//! The OpenAPI 3.1 document, assembled once from the route table: every route the
//! router serves is an operation, and each operation is generated from what its handler
//! declares next to itself (`Doc`):
//!
//! - the types of its JSON body and of its JSON answers ([`Schema`]): their schemas are
//!   derived from the Rust types (`utoipa::ToSchema`, descriptions from their `///`
//!   comments) and are `components.schemas`, with every type they are built from;
//! - its error responses, from the codes its handler declares, the codes of what it is
//!   built from (the replay store, the buyer or operator check, a body) and, for every
//!   route but a probe, the edge's overload answers.
//!
//! The prose (summaries, descriptions, parameters, headers) is kept in
//! `operations.json` by operation id; `base.json` holds the document's frame (info,
//! tags, security schemes, shared parameters and headers). A few schemas are still
//! hand-written there (`after_sale.json`, `base.json`) until their types derive theirs:
//! [`hand_written_schemas`] names them, and a test keeps that list from growing.

mod docs;
mod schemas;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use axum::body::Bytes;
use axum::http::StatusCode;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;
use utoipa::openapi::RefOr;

use crate::code::ErrorCode;
use crate::routes::{RouteClass, RouteDef};

pub use docs::{docs_asset, docs_page};

const BASE: &str = include_str!("base.json");
const OPERATIONS: &str = include_str!("operations.json");
/// Operations, parameters, tags, security schemes (and schemas still written by hand)
/// kept apart from the sale's: the after-sale's, and the operator console's.
const PIECES: [(&str, &str); 2] = [
    ("after_sale.json", include_str!("after_sale.json")),
    ("console.json", include_str!("console.json")),
];

/// How the document describes one route, declared beside its handler.
pub struct Doc {
    /// The operation's id; its prose is under this id in `operations.json`.
    pub op: &'static str,
    /// The type of the JSON body the handler reads, if it reads one.
    pub body: Option<Schema>,
    /// The handler's JSON answers: each status with the type it serializes.
    pub ok: &'static [(StatusCode, Schema)],
    /// The refusals of the handler itself.
    pub refuses: &'static [ErrorCode],
    /// Refusals of the parts it is built from (replay store, authentication, body).
    pub shared: &'static [&'static [ErrorCode]],
}

/// A Rust type the document names: its schema's name, and how to collect its schema
/// and those of the types it is built from.
#[derive(Clone, Copy)]
pub struct Schema {
    /// The name under `components.schemas`.
    pub name: fn() -> Cow<'static, str>,
    collect: fn(&mut Vec<(String, RefOr<utoipa::openapi::schema::Schema>)>),
}

impl Schema {
    /// The schema of `T`, derived from the type (`#[derive(ToSchema)]`).
    pub const fn of<T: ToSchema>() -> Schema {
        Schema {
            name: T::name,
            collect: collect::<T>,
        }
    }

    /// `{"$ref": "#/components/schemas/<name>"}`.
    fn reference(&self) -> Value {
        json!({ "$ref": format!("#/components/schemas/{}", (self.name)()) })
    }
}

fn collect<T: ToSchema>(out: &mut Vec<(String, RefOr<utoipa::openapi::schema::Schema>)>) {
    out.push((T::name().into_owned(), T::schema()));
    T::schemas(out);
}

impl Doc {
    /// Every error code the route answers with.
    pub fn codes(&self, class: RouteClass) -> BTreeSet<ErrorCode> {
        let edge = (!class.never_shed()).then_some(crate::edge::REFUSES);
        let parts = self.shared.iter().copied().chain(edge);
        (self.refuses.iter().copied())
            .chain(parts.flatten().copied())
            .collect()
    }

    /// The types the route names: its body's and its answers'.
    fn schemas(&self) -> impl Iterator<Item = &Schema> {
        self.body.iter().chain(self.ok.iter().map(|(_, s)| s))
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
    let derived = derived_schemas(routes)?;
    let target = (doc["components"]["schemas"].as_object_mut())
        .ok_or("base.json has no components.schemas")?;
    for (name, schema) in derived {
        if target.insert(name.clone(), schema).is_some() {
            return Err(format!(
                "{name} is derived from its type: delete its hand-written schema"
            ));
        }
    }
    let mut paths = Map::new();
    for r in routes {
        let op = ops
            .get(r.doc.op)
            .ok_or_else(|| format!("operations.json has no {}", r.doc.op))?;
        let item = paths.entry(r.path).or_insert_with(|| json!({}));
        item[r.method.as_str().to_ascii_lowercase()] = operation(r, op.clone())?;
    }
    doc["paths"] = Value::Object(paths);
    Ok(doc)
}

/// The schemas of every type the routes name and of the types listed in `schemas.rs`,
/// with the types they are built from, by name. Two types with one name are an error.
fn derived_schemas(routes: &[RouteDef]) -> Result<BTreeMap<String, Value>, String> {
    let mut found = Vec::new();
    let named = routes.iter().flat_map(|r| r.doc.schemas());
    for s in schemas::LISTED.iter().chain(named) {
        (s.collect)(&mut found);
    }
    let mut out = BTreeMap::new();
    for (name, schema) in found {
        let schema = serde_json::to_value(schema).map_err(|e| format!("{name}: {e}"))?;
        if let Some(other) = out.insert(name.clone(), schema.clone())
            && other != schema
        {
            return Err(format!("two types derive a schema named {name}"));
        }
    }
    Ok(out)
}

/// The names of the schemas still written by hand in `base.json` and the pieces.
pub fn hand_written_schemas() -> BTreeSet<String> {
    let base: Value = serde_json::from_str(BASE).unwrap_or_default();
    let names = |v: &Value| -> Vec<String> {
        v.as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let mut all: BTreeSet<String> = names(&base["components"]["schemas"]).into_iter().collect();
    for (_, piece) in PIECES {
        let extra: Value = serde_json::from_str(piece).unwrap_or_default();
        all.extend(names(&extra["schemas"]));
    }
    all
}

/// Adds one piece's operations, schemas, parameters, tags and security schemes to the
/// document and the operations.
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
    let mut all: Vec<String> = ops.keys().cloned().collect();
    for (_, piece) in PIECES {
        let extra: Value = serde_json::from_str(piece).unwrap_or_default();
        all.extend(
            extra["operations"]
                .as_object()
                .into_iter()
                .flat_map(|m| m.keys().cloned()),
        );
    }
    all
}

fn operation(r: &RouteDef, mut op: Value) -> Result<Value, String> {
    let notes = op
        .as_object_mut()
        .and_then(|o| o.remove("errorNotes"))
        .unwrap_or_default();
    op["operationId"] = json!(r.doc.op);
    typed(r.doc, &mut op)?;
    let codes = r.doc.codes(r.class);
    let replayed = codes.contains(&ErrorCode::IdempotencyKeyRequired);
    for (status, codes) in by_status(&codes) {
        let note = notes[status.as_str()].as_str();
        let mut res = error_response(status, &codes, note, replayed);
        if r.class == RouteClass::Page && codes.contains(&ErrorCode::Overloaded) {
            shed_page(&mut res);
        }
        op["responses"][status.as_str()] = res;
    }
    Ok(op)
}

/// The body and the JSON answers from the handler's types; their descriptions and
/// headers from the prose. A type given in both places is an error: one home.
fn typed(doc: &Doc, op: &mut Value) -> Result<(), String> {
    let json_content = |s: &Schema| json!({"application/json": {"schema": s.reference()}});
    if let Some(body) = &doc.body {
        if op["requestBody"].get("content").is_some() {
            return Err(format!("{}: its body's type is the handler's", doc.op));
        }
        let body_doc = &mut op["requestBody"];
        if body_doc.get("required").is_none() {
            body_doc["required"] = json!(true);
        }
        body_doc["content"] = json_content(body);
    }
    for (status, schema) in doc.ok {
        let res = &mut op["responses"][status.as_str()];
        if res.get("content").is_some() {
            return Err(format!("{} {status}: its type is the handler's", doc.op));
        }
        if res.get("description").is_none() {
            res["description"] = json!(status.canonical_reason().unwrap_or("Done"));
        }
        res["content"] = json_content(schema);
    }
    Ok(())
}

/// A page's answer when shed is a page (`Edge::shed`), beside the JSON of its other
/// refusals with the same status.
fn shed_page(res: &mut Value) {
    res["content"]["text/html"] = json!({"schema": {"type": "string"}});
    let said = res["description"].as_str().unwrap_or_default().to_owned();
    res["description"] = json!(format!(
        "{said} Shed (`overloaded`), the page is answered with a page (`text/html`) that \
         says so and loads itself again after `Retry-After` (3 to 8 seconds)."
    ));
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
