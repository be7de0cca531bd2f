//! The API document against what the handlers serialize. Its schemas are derived from
//! the Rust types the routes name (docs/ARCHITECTURE.md §6); this is where a derived
//! schema that says one thing while the handler sends another is caught. Every JSON
//! answer of success the in-process router gives here (the fuzz world's set-up, the
//! reads below, and every request of the fuzz) is validated against the schema the
//! document gives for its route and status.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::fuzz::world::World;

/// The document, and a validator per (method, path template, status), compiled once.
pub struct Contract {
    doc: Value,
    validators: Mutex<HashMap<(String, String, u16), Option<Answer>>>,
}

/// The schema a route's answer must match.
#[derive(Clone)]
struct Answer {
    /// The schema's name (its `$ref`), or the inline schema's text.
    name: String,
    validator: Arc<jsonschema::Validator>,
}

impl Contract {
    /// The contract of the router the server serves.
    pub fn get() -> &'static Contract {
        static CONTRACT: OnceLock<Contract> = OnceLock::new();
        CONTRACT.get_or_init(|| Contract {
            doc: boxoffice_http::openapi::build(&boxoffice_http::routes())
                .expect("the API document assembles"),
            validators: Mutex::default(),
        })
    }

    /// Checks a JSON answer of `method path` with `status`: the name of the schema it
    /// matched, `None` when the document gives that answer no JSON schema, or why it
    /// does not match.
    pub fn check(
        &self,
        method: &str,
        path: &str,
        status: u16,
        body: &Value,
    ) -> Result<Option<String>, String> {
        let Some(template) = self.template(path) else {
            return Ok(None);
        };
        let key = (method.to_ascii_lowercase(), template, status);
        let answer = self
            .validators
            .lock()
            .entry(key.clone())
            .or_insert_with(|| self.answer(&key.0, &key.1, status))
            .clone();
        let Some(answer) = answer else {
            return Ok(None);
        };
        let errors: Vec<String> = (answer.validator.iter_errors(body))
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        match errors.is_empty() {
            true => Ok(Some(answer.name)),
            false => Err(format!(
                "{method} {path} answered {status} with what its schema {} does not \
                 allow:\n  {}\n  body: {body}",
                answer.name,
                errors.join("\n  ")
            )),
        }
    }

    /// The document's path that `path` is an instance of; literal segments win over
    /// parameters (`/docs/{file}` against `/docs`).
    fn template(&self, path: &str) -> Option<String> {
        let path = path.split('?').next().unwrap_or(path);
        let segments: Vec<&str> = path.split('/').collect();
        let paths = self.doc["paths"].as_object()?;
        let fits = |t: &str| {
            let ts: Vec<&str> = t.split('/').collect();
            let literal = ts.iter().filter(|s| !s.starts_with('{')).count();
            let same = ts.len() == segments.len()
                && (ts.iter().zip(&segments)).all(|(t, s)| t.starts_with('{') || t == s);
            same.then_some(literal)
        };
        (paths.keys())
            .filter_map(|t| fits(t).map(|literal| (literal, t)))
            .max()
            .map(|(_, t)| t.clone())
    }

    fn answer(&self, method: &str, template: &str, status: u16) -> Option<Answer> {
        let response = &self.doc["paths"][template][method]["responses"][status.to_string()];
        let schema = response["content"]["application/json"].get("schema")?;
        let name = match schema["$ref"].as_str() {
            Some(r) => r.rsplit('/').next().unwrap_or(r).to_string(),
            None => schema.to_string(),
        };
        // The schema with the document's components beside it, so its references resolve.
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "components": self.doc["components"],
            "allOf": [schema],
        });
        let validator = jsonschema::validator_for(&root)
            .unwrap_or_else(|e| panic!("the schema of {method} {template} {status}: {e}"));
        Some(Answer {
            name,
            validator: Arc::new(validator),
        })
    }
}

/// The answers of the world's set-up (events, buyers, joins, holds, a purchase) and of a
/// read of every main resource match their schemas, and a wrong answer does not.
#[test]
fn every_main_resource_matches_the_schema_the_document_gives_it() {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(boxoffice_testkit::within(
        std::time::Duration::from_secs(60),
        "the main resources to be read and checked",
        main_resources(),
    ));
}

async fn main_resources() {
    // Building the world checks every answer of its set-up (`World::call`).
    let mut w = World::build().await;
    let event = w.events[0];
    let (hold, _) = w.known.lock().holds[0];
    let (order, _) = w.known.lock().orders[0];
    let (buyer, ticket) = (w.token("buyer").to_string(), w.token("queue ticket"));
    let (ticket, op) = (ticket.to_string(), w.operator.clone());
    let reads = [
        ("GET", format!("/v1/events/{event}"), ""),
        ("GET", format!("/v1/events/{event}/stats"), op.as_str()),
        ("GET", format!("/v1/events/{event}/seatmap"), ""),
        ("GET", format!("/v1/events/{event}/availability"), ""),
        ("GET", format!("/v1/events/{event}/queue"), ""),
        ("GET", format!("/v1/events/{event}/queue/fairness"), ""),
        ("GET", format!("/v1/events/{event}/queue/challenge"), &buyer),
        ("GET", "/v1/queue/status".to_string(), &ticket),
        ("GET", format!("/v1/holds/{hold}"), &buyer),
        ("GET", format!("/v1/orders/{order}"), &buyer),
        ("GET", "/v1/me/orders".to_string(), &buyer),
        ("GET", format!("/v1/orders/{order}/history"), &buyer),
        ("PUT", format!("/v1/events/{event}/admission"), &op),
        ("PUT", format!("/v1/events/{event}/waiting-room"), &op),
        ("GET", "/v1/me/tickets".to_string(), &buyer),
        ("GET", format!("/v1/events/{event}/listings"), ""),
        ("POST", format!("/v1/events/{event}/keys/rotate"), &op),
        ("POST", format!("/v1/events/{event}/gates"), &op),
        ("POST", format!("/v1/orders/{order}/cancel"), &op),
    ];
    for (method, path, token) in &reads {
        let body = match path.ends_with("/gates") {
            true => json!({"name": "north door"}),
            false => json!({}),
        };
        let (status, body) = w.call(method, path, token, body).await;
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {body}"
        );
    }
    let main = [
        "Event",
        "Buyer",
        "JoinOutcome",
        "QueueStatus",
        "Hold",
        "Order",
        "EventStats",
        "SeatMap",
        "Availability",
        "PublicQueue",
        "Fairness",
        "Challenge",
        "OrderList",
        "OrderHistory",
        "Admission",
        "Rules",
        "ListingPage",
    ];
    for name in main {
        assert!(
            w.matched.contains(name),
            "no answer was checked against {name}"
        );
    }
    // The check can fail: a hold whose state is no state, and one without its id.
    let (_, good) = w
        .call("GET", &format!("/v1/holds/{hold}"), &buyer, Value::Null)
        .await;
    let path = format!("/v1/holds/{hold}");
    let contract = Contract::get();
    assert_eq!(
        contract.check("GET", &path, 200, &good),
        Ok(Some("Hold".into()))
    );
    let mut bad = good.clone();
    bad["status"] = json!("on_hold");
    assert!(contract.check("GET", &path, 200, &bad).is_err());
    let mut bad = good;
    bad.as_object_mut().expect("a hold").remove("hold_id");
    assert!(contract.check("GET", &path, 200, &bad).is_err());
}
