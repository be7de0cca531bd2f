//! The routes the fuzz aims at: each with its method, path, body, who may call it and how
//! often it is drawn.

/// Whose token a coherent request carries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Auth {
    Nobody,
    Operator,
    Buyer,
    /// The queue ticket.
    Ticket,
    /// The admission to the event in the path.
    Admission,
    /// The buyer who owns the hold or order in the path.
    Owner,
}

/// What a route's valid body is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    Empty,
    Spec,
    Admission,
    Rules,
    Grant,
    Hold,
    Checkout,
    Webhook,
}

pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    pub shape: Shape,
    pub auth: Auth,
    /// Routes that change something are drawn more often than reads: that is where a
    /// refusal could still have acted.
    pub weight: usize,
}

const fn r(
    method: &'static str,
    path: &'static str,
    shape: Shape,
    auth: Auth,
    weight: usize,
) -> Route {
    Route {
        method,
        path,
        shape,
        auth,
        weight,
    }
}

/// Every route of the API (but the cancellation of the world's one event, which would
/// leave every later request nothing to act on), plus two that do not exist.
#[rustfmt::skip]
pub const ROUTES: &[Route] = &[
    r("POST", "/v1/buyers", Shape::Empty, Auth::Nobody, 2),
    r("POST", "/v1/events", Shape::Spec, Auth::Operator, 1),
    r("GET", "/v1/events/{event}", Shape::Empty, Auth::Nobody, 1),
    r("POST", "/v1/events/{event}/open", Shape::Empty, Auth::Operator, 1),
    r("POST", "/v1/events/{event}/close", Shape::Empty, Auth::Operator, 1),
    r("GET", "/v1/events/{event}/stats", Shape::Empty, Auth::Operator, 1),
    r("GET", "/v1/events/{event}/seatmap", Shape::Empty, Auth::Nobody, 1),
    r("GET", "/v1/events/{event}/availability", Shape::Empty, Auth::Nobody, 1),
    r("GET", "/v1/events/{event}/availability/stream", Shape::Empty, Auth::Nobody, 1),
    r("POST", "/v1/events/{event}/queue", Shape::Empty, Auth::Buyer, 3),
    r("GET", "/v1/events/{event}/queue", Shape::Empty, Auth::Nobody, 1),
    r("GET", "/v1/queue/status", Shape::Empty, Auth::Ticket, 1),
    r("GET", "/v1/events/{event}/queue/stream", Shape::Empty, Auth::Nobody, 1),
    r("GET", "/v1/events/{event}/queue/challenge", Shape::Empty, Auth::Buyer, 1),
    r("GET", "/v1/events/{event}/queue/fairness", Shape::Empty, Auth::Nobody, 1),
    r("PUT", "/v1/events/{event}/admission", Shape::Admission, Auth::Operator, 2),
    r("PUT", "/v1/events/{event}/waiting-room", Shape::Rules, Auth::Operator, 2),
    r("POST", "/v1/buyer-tokens", Shape::Grant, Auth::Operator, 2),
    r("POST", "/v1/events/{event}/holds", Shape::Hold, Auth::Admission, 8),
    r("GET", "/v1/holds/{hold}", Shape::Empty, Auth::Owner, 1),
    r("DELETE", "/v1/holds/{hold}", Shape::Empty, Auth::Owner, 2),
    r("POST", "/v1/holds/{hold}/checkout", Shape::Checkout, Auth::Owner, 5),
    r("POST", "/v1/payments/webhook", Shape::Webhook, Auth::Nobody, 2),
    r("GET", "/v1/orders/{order}", Shape::Empty, Auth::Owner, 1),
    r("GET", "/v1/me/orders", Shape::Empty, Auth::Buyer, 1),
    r("POST", "/v1/orders/{order}/cancel", Shape::Empty, Auth::Operator, 2),
    r("POST", "/v1/orders/{order}/refund", Shape::Empty, Auth::Owner, 2),
    r("GET", "/v1/events/{event}/cancellation", Shape::Empty, Auth::Operator, 1),
    r("GET", "/healthz", Shape::Empty, Auth::Nobody, 1),
    r("GET", "/metrics", Shape::Empty, Auth::Nobody, 1),
    r("GET", "/openapi.json", Shape::Empty, Auth::Nobody, 1),
    r("GET", "/docs", Shape::Empty, Auth::Nobody, 1),
    r("GET", "/docs/init.js", Shape::Empty, Auth::Nobody, 1),
    r("GET", "/.well-known/jwks.json", Shape::Empty, Auth::Nobody, 1),
    r("GET", "/v1/nothing/here", Shape::Empty, Auth::Nobody, 1),
    r("POST", "/v1/events/{event}/nothing", Shape::Hold, Auth::Admission, 1),
];

pub const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];

/// The sum of all routes' weights: a draw is a number below it.
pub fn total_weight() -> usize {
    ROUTES.iter().map(|r| r.weight).sum()
}

/// The route a draw below `total_weight()` falls on.
pub fn route_at(draw: usize) -> usize {
    let mut left = draw;
    for (i, r) in ROUTES.iter().enumerate() {
        if left < r.weight {
            return i;
        }
        left -= r.weight;
    }
    0
}
