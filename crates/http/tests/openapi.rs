//! The OpenAPI document is the client's contract: it must be a valid OpenAPI 3.1
//! document, describe exactly the routes the router serves, and name every status and
//! error code each route can answer.

use std::collections::BTreeSet;

use serde_json::Value;

/// The official JSON Schema of OpenAPI 3.1 documents (spec.openapis.org/oas/3.1/schema).
const OAS_SCHEMA: &str = include_str!("data/oas-3.1-schema.json");
const METHODS: &[&str] = &[
    "get", "post", "put", "patch", "delete", "head", "options", "trace",
];

fn doc() -> Value {
    boxoffice_http::openapi::build(&boxoffice_http::routes()).expect("the document assembles")
}

/// (method, path) of every route the router serves: its table.
fn router_routes() -> BTreeSet<(String, String)> {
    (boxoffice_http::routes().iter())
        .map(|r| (r.method.to_string(), r.path.to_string()))
        .collect()
}

fn document_routes(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths is an object") {
        for (key, _) in item.as_object().expect("a path item is an object") {
            if METHODS.contains(&key.as_str()) {
                out.insert((key.to_uppercase(), path.clone()));
            }
        }
    }
    out
}

fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if METHODS.contains(&method.as_str()) {
                out.push((method.to_uppercase(), path.clone(), op));
            }
        }
    }
    out
}

/// Follows a `$ref` if `v` is one.
fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => doc
            .pointer(r.strip_prefix('#').unwrap())
            .expect("reference resolves"),
        None => v,
    }
}

fn collect_refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => collect_refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Every error code a response can carry.
fn source_error_codes() -> BTreeSet<String> {
    (boxoffice_http::ErrorCode::ALL.iter())
        .map(|c| c.as_str().to_string())
        .collect()
}

#[test]
fn the_document_is_json_and_declares_openapi_3_1() {
    let doc = doc();
    let version = doc["openapi"].as_str().expect("an openapi version string");
    assert!(
        version.starts_with("3.1."),
        "OpenAPI version is {version}, want 3.1.x"
    );
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());
}

#[test]
fn every_reference_resolves_inside_the_document() {
    let doc = doc();
    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for r in refs {
        let pointer = r
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("{r} points outside the document"));
        assert!(doc.pointer(pointer).is_some(), "{r} does not resolve");
    }
}

#[test]
fn the_route_table_has_the_known_routes() {
    let routes = router_routes();
    assert!(routes.contains(&("POST".into(), "/v1/events".into())));
    assert!(routes.contains(&("GET".into(), "/v1/holds/{id}".into())));
    assert!(routes.contains(&("DELETE".into(), "/v1/holds/{id}".into())));
    assert!(routes.contains(&("GET".into(), "/v1/events/{id}/queue".into())));
    assert!(routes.contains(&("POST".into(), "/v1/events/{id}/queue".into())));
}

#[test]
fn the_document_describes_exactly_the_routes_of_the_router() {
    let router = router_routes();
    let documented = document_routes(&doc());
    let undocumented: Vec<_> = router.difference(&documented).collect();
    let phantom: Vec<_> = documented.difference(&router).collect();
    assert!(
        undocumented.is_empty() && phantom.is_empty(),
        "routed but not documented: {undocumented:?}; documented but not routed: {phantom:?}"
    );
}

#[test]
fn every_operation_has_a_unique_id_a_summary_and_responses() {
    let doc = doc();
    let mut ids = BTreeSet::new();
    for (method, path, op) in operations(&doc) {
        let id = op["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
        assert!(ids.insert(id.to_string()), "operationId {id} is used twice");
        assert!(op["summary"].is_string(), "{method} {path} has no summary");
        assert!(
            op["responses"].as_object().is_some_and(|r| !r.is_empty()),
            "{method} {path} has no responses"
        );
    }
}

#[test]
fn every_write_requires_an_idempotency_key_and_may_be_replayed() {
    let doc = doc();
    for (method, path, op) in operations(&doc)
        .into_iter()
        .filter(|(m, _, _)| m == "POST" || m == "DELETE")
        // Providers send no Idempotency-Key; the webhook is signed and idempotent by
        // settling from the provider's state (see routes/payments.rs).
        .filter(|(_, p, _)| p != "/v1/payments/webhook")
    {
        let params = op["parameters"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let key = params
            .iter()
            .map(|p| resolve(&doc, p))
            .find(|p| p["name"] == "Idempotency-Key" && p["in"] == "header");
        let key = key.unwrap_or_else(|| panic!("{method} {path} does not take Idempotency-Key"));
        assert_eq!(
            key["required"], true,
            "{method} {path}: Idempotency-Key must be required"
        );
        let replayed = op["responses"]
            .as_object()
            .unwrap()
            .iter()
            .any(|(status, r)| {
                status.starts_with('2')
                    && resolve(&doc, r)["headers"]
                        .get("Idempotent-Replayed")
                        .is_some()
            });
        assert!(
            replayed,
            "{method} {path}: its success response does not mention Idempotent-Replayed"
        );
        let errors = &op["responses"]["400"]["content"]["application/json"]["schema"];
        assert!(
            errors.to_string().contains("idempotency_key_required"),
            "{method} {path}: no 400 idempotency_key_required"
        );
    }
}

#[test]
fn the_error_schema_lists_every_code_the_server_sends() {
    let doc = doc();
    let listed: BTreeSet<String> = doc["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    let sent = source_error_codes();
    assert!(sent.len() > 20, "the code scanner found only {sent:?}");
    let missing: Vec<_> = sent.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "error codes sent but not in ErrorCode: {missing:?}"
    );
}

#[test]
fn every_error_code_an_operation_names_is_a_known_code() {
    let doc = doc();
    let listed: BTreeSet<&str> = doc["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for (method, path, op) in operations(&doc) {
        for (status, r) in op["responses"].as_object().unwrap() {
            let schema = &resolve(&doc, r)["content"]["application/json"]["schema"];
            for part in schema["allOf"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                for code in part["properties"]["error"]["enum"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                {
                    let code = code.as_str().unwrap();
                    assert!(
                        listed.contains(code),
                        "{method} {path} {status} names unknown code {code}"
                    );
                }
            }
        }
    }
}

#[test]
fn availability_documents_not_modified_and_its_cache_headers() {
    let doc = doc();
    let op = &doc["paths"]["/v1/events/{id}/availability"]["get"];
    assert!(op["responses"]["304"].is_object());
    assert!(op["responses"]["200"]["headers"]["ETag"].is_object());
    assert!(op["responses"]["200"]["headers"]["Cache-Control"].is_object());
    let params = op["parameters"].as_array().unwrap();
    assert!(
        params
            .iter()
            .any(|p| resolve(&doc, p)["name"] == "If-None-Match")
    );
}

#[test]
fn the_document_validates_against_the_openapi_3_1_schema() {
    let schema: Value = serde_json::from_str(OAS_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the OpenAPI schema compiles");
    let doc = doc();
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    // The validator does look: a document with a malformed operation fails.
    let mut broken = doc.clone();
    broken["paths"]["/healthz"]["get"]["responses"]["200"] = serde_json::json!({"content": 1});
    assert!(!validator.is_valid(&broken));
}

#[test]
fn every_code_a_route_can_answer_is_documented_under_each_of_its_statuses() {
    let doc = doc();
    for r in boxoffice_http::routes() {
        let method = r.method.as_str().to_ascii_lowercase();
        let op = &doc["paths"][r.path][&method];
        for code in r.doc.codes(r.class) {
            for status in code.statuses() {
                let res = resolve(&doc, &op["responses"][status.as_str()]);
                let listed = &res["content"]["application/json"]["schema"]["allOf"][1]["properties"]
                    ["error"]["enum"];
                let listed = listed.as_array().map(Vec::as_slice).unwrap_or_default();
                assert!(
                    listed.iter().any(|c| c == code.as_str()),
                    "{method} {}: {code} is not documented under {status}",
                    r.path
                );
            }
        }
    }
}

#[test]
fn routes_that_take_part_in_the_edge_document_its_overload_answers() {
    let doc = doc();
    for r in boxoffice_http::routes() {
        let op = &doc["paths"][r.path][r.method.as_str().to_ascii_lowercase()];
        let text = op["responses"]["503"].to_string();
        let uncounted = r.class.never_shed();
        for code in ["overloaded", "request_timeout"] {
            assert_eq!(
                text.contains(code),
                !uncounted,
                "{} {}: {code}",
                r.method,
                r.path
            );
        }
    }
}

#[test]
fn a_page_documents_that_it_is_shed_with_a_page_and_an_api_route_with_json() {
    let doc = doc();
    for r in boxoffice_http::routes() {
        let op = &doc["paths"][r.path][r.method.as_str().to_ascii_lowercase()];
        let page = r.class == boxoffice_http::RouteClass::Page;
        for status in ["503", "429"] {
            let content = &op["responses"][status]["content"];
            if content.is_null() {
                continue;
            }
            assert_eq!(
                content.get("text/html").is_some(),
                page,
                "{} {} {status}",
                r.method,
                r.path
            );
            assert!(
                content.get("application/json").is_some(),
                "{} {}",
                r.method,
                r.path
            );
        }
    }
    let pages = boxoffice_http::routes().into_iter();
    let paths: Vec<_> = pages
        .filter(|r| r.class == boxoffice_http::RouteClass::Page)
        .map(|r| r.path)
        .collect();
    assert_eq!(paths, ["/", "/console"]);
}

#[test]
fn every_write_documents_the_answers_of_the_replay_store() {
    let doc = doc();
    for (method, path, op) in operations(&doc)
        .into_iter()
        .filter(|(m, _, _)| m == "POST" || m == "DELETE")
        .filter(|(_, p, _)| p != "/v1/payments/webhook")
    {
        let text = op["responses"].to_string();
        for code in [
            "idempotency_key_required",
            "idempotency_key_reused",
            "request_in_progress",
            "idempotency_store_full",
        ] {
            assert!(
                text.contains(code),
                "{method} {path} does not document {code}"
            );
        }
    }
}

#[test]
fn swagger_ui_and_the_document_are_routes_of_their_own() {
    let routes = router_routes();
    for path in ["/openapi.json", "/docs", "/docs/{file}"] {
        assert!(routes.contains(&("GET".into(), path.into())), "{path}");
    }
}

#[test]
fn every_operation_described_belongs_to_one_route() {
    let used: BTreeSet<&str> = boxoffice_http::routes().iter().map(|r| r.doc.op).collect();
    assert_eq!(
        used.len(),
        boxoffice_http::routes().len(),
        "an operation id is used twice"
    );
    let described = boxoffice_http::openapi::described_operations();
    let described: BTreeSet<&str> = described.iter().map(String::as_str).collect();
    assert_eq!(
        used, described,
        "operations.json and the route table disagree"
    );
}

/// The schemas still written by hand (`base.json`, `after_sale.json`) until their types
/// derive them. This list only shrinks: a type whose schema is derived leaves it, and a
/// new type derives its schema (`#[derive(utoipa::ToSchema)]`, named in its route's Doc).
const HAND_WRITTEN_SCHEMAS: &[&str] = &["EventKeySet", "GateBundle", "JwkSet"];

/// Operations whose JSON body or JSON answer of success is still described by hand
/// (`operations.json`, `after_sale.json`) rather than named by type in their Doc. This
/// list only shrinks. `openapi` answers the document itself, and the payment webhook
/// reads the provider's event, not a type of ours.
const HAND_WRITTEN_OPERATIONS: &[&str] = &[
    "getEventKeys",
    "getGateBundle",
    "jwks",
    "openapi",
    "paymentWebhook",
];

#[test]
fn only_the_listed_schemas_are_still_written_by_hand() {
    let hand: Vec<String> = boxoffice_http::openapi::hand_written_schemas()
        .into_iter()
        .collect();
    assert_eq!(
        hand, HAND_WRITTEN_SCHEMAS,
        "a schema left the hand-written JSON (take it off the list) or joined it (derive it)"
    );
}

#[test]
fn every_json_body_and_answer_of_success_is_the_type_its_handler_names() {
    let doc = doc();
    let mut hand = BTreeSet::new();
    for r in boxoffice_http::routes() {
        let op = &doc["paths"][r.path][r.method.as_str().to_ascii_lowercase()];
        let typed: BTreeSet<String> = r.doc.ok.iter().map(|(s, _)| s.as_str().into()).collect();
        for (status, res) in op["responses"].as_object().unwrap() {
            let json = &resolve(&doc, res)["content"]["application/json"];
            if status.starts_with('2') && json.is_object() && !typed.contains(status) {
                hand.insert(r.doc.op);
            }
        }
        let body = &op["requestBody"]["content"]["application/json"];
        if body.is_object() && r.doc.body.is_none() {
            hand.insert(r.doc.op);
        }
        // What a Doc names is what the document says.
        for (status, schema) in r.doc.ok {
            let at = &op["responses"][status.as_str()]["content"]["application/json"];
            let want = format!("#/components/schemas/{}", (schema.name)());
            assert_eq!(at["schema"]["$ref"], want.as_str(), "{} {status}", r.doc.op);
        }
    }
    let hand: Vec<&str> = hand.into_iter().collect();
    assert_eq!(
        hand, HAND_WRITTEN_OPERATIONS,
        "an operation's JSON left the prose (take it off the list) or joined it (name \
         its type in its Doc)"
    );
}

#[test]
fn every_schema_is_named_after_a_type() {
    let doc = doc();
    for name in doc["components"]["schemas"].as_object().unwrap().keys() {
        // A field typed by an alias of a primitive (`SeatIndex = u32`) would be named
        // `u32`: it wants `#[schema(value_type = u32)]`.
        assert!(
            name.starts_with(|c: char| c.is_ascii_uppercase()),
            "a schema named {name}"
        );
    }
}
