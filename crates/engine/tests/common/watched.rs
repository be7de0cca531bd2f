//! `Watched`: the payment provider as a node calls it, counting the calls in flight
//! (and the most ever in flight), with gates a test can close in front of a call
//! (`authorize`, `capture`) or behind one (`inquire`: answered, then held) to act while
//! a driver waits for the provider.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use boxoffice_domain::{Millis, OrderId};
use boxoffice_engine::ports::{
    AuthorizeOutcome, AuthorizeRequest, Inquiry, PaymentError, PaymentGateway, ProviderPayment,
    WebhookError, WebhookEvent,
};
use boxoffice_payment_fake::Op;
use tokio::sync::Semaphore;

/// Where a gate holds its calls: before the provider hears of them, or after it
/// answered and before the caller learns the answer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Before,
    After,
}

/// A closed gate: the calls it let through are its permits.
struct Gate {
    side: Side,
    permits: Semaphore,
    /// Calls that reached it (so a test knows a driver is waiting there).
    reached: AtomicUsize,
}

impl Gate {
    async fn pass(&self) {
        self.reached.fetch_add(1, Ordering::SeqCst);
        self.permits
            .acquire()
            .await
            .expect("the gate stays open")
            .forget();
    }
}

pub struct Watched {
    inner: Arc<dyn PaymentGateway>,
    in_flight: AtomicUsize,
    most: AtomicUsize,
    calls: AtomicUsize,
    gates: Mutex<HashMap<Op, Arc<Gate>>>,
    /// While set, an inquiry without the provider's reference fails, as a search that
    /// does not list a payment yet does (Stripe's, for up to a minute or more).
    search_lags: AtomicBool,
}

impl Watched {
    pub fn new(inner: Arc<dyn PaymentGateway>) -> Watched {
        Watched {
            inner,
            in_flight: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            gates: Mutex::default(),
            search_lags: AtomicBool::new(false),
        }
    }

    /// From now on an inquiry by order id alone (a search) fails; one by the
    /// provider's reference is answered.
    pub fn lag_search(&self) {
        self.search_lags.store(true, Ordering::SeqCst);
    }

    /// The most calls that were ever in flight at once.
    pub fn most_in_flight(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// From now on every `authorize` waits at the gate until `open_gate`.
    pub fn close_gate(&self) {
        self.close_gate_at(Op::Authorize, Side::Before);
    }

    /// Lets `n` waiting (or future) authorizations through.
    pub fn open_gate(&self, n: usize) {
        self.open_gate_at(Op::Authorize, n);
    }

    /// Authorizations that reached the gate.
    pub fn waiting_at_gate(&self) -> usize {
        self.reached(Op::Authorize)
    }

    /// From now on every call of `op` (`authorize`, `capture` or `inquire`) waits at a
    /// gate on `side` of the provider until `open_gate_at`.
    pub fn close_gate_at(&self, op: Op, side: Side) {
        let gate = Gate {
            side,
            permits: Semaphore::new(0),
            reached: AtomicUsize::new(0),
        };
        self.gates.lock().unwrap().insert(op, Arc::new(gate));
    }

    /// Lets `n` waiting (or future) calls of `op` through its gate.
    pub fn open_gate_at(&self, op: Op, n: usize) {
        self.gate(op)
            .expect("a gate closed first")
            .permits
            .add_permits(n);
    }

    /// Calls of `op` that reached its gate.
    pub fn reached(&self, op: Op) -> usize {
        self.gate(op)
            .map_or(0, |g| g.reached.load(Ordering::SeqCst))
    }

    fn gate(&self, op: Op) -> Option<Arc<Gate>> {
        self.gates.lock().unwrap().get(&op).cloned()
    }

    /// `call`, watched, behind `op`'s gate when one is closed.
    async fn gated<T>(&self, op: Op, call: impl std::future::Future<Output = T>) -> T {
        let gate = self.gate(op);
        if let Some(g) = gate.as_ref().filter(|g| g.side == Side::Before) {
            g.pass().await;
        }
        let out = self.watch(call).await;
        if let Some(g) = gate.as_ref().filter(|g| g.side == Side::After) {
            g.pass().await;
        }
        out
    }

    async fn watch<T>(&self, call: impl std::future::Future<Output = T>) -> T {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        let out = call.await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        out
    }
}

#[async_trait]
impl PaymentGateway for Watched {
    async fn authorize(&self, req: &AuthorizeRequest) -> Result<AuthorizeOutcome, PaymentError> {
        self.gated(Op::Authorize, self.inner.authorize(req)).await
    }
    async fn capture(&self, order: OrderId, reference: &str) -> Result<(), PaymentError> {
        self.gated(Op::Capture, self.inner.capture(order, reference))
            .await
    }
    async fn void(&self, order: OrderId, reference: &str) -> Result<(), PaymentError> {
        self.watch(self.inner.void(order, reference)).await
    }
    async fn refund(&self, order: OrderId, reference: &str) -> Result<(), PaymentError> {
        self.watch(self.inner.refund(order, reference)).await
    }
    async fn inquire(&self, inquiry: &Inquiry) -> Result<Option<ProviderPayment>, PaymentError> {
        if inquiry.reference.is_none() && self.search_lags.load(Ordering::SeqCst) {
            return Err(PaymentError::Unavailable(
                "the search does not list it yet".into(),
            ));
        }
        self.gated(Op::Inquire, self.inner.inquire(inquiry)).await
    }
    async fn inquire_reference(
        &self,
        reference: &str,
    ) -> Result<Option<ProviderPayment>, PaymentError> {
        self.watch(self.inner.inquire_reference(reference)).await
    }
    async fn all_payments(&self) -> Result<Vec<ProviderPayment>, PaymentError> {
        self.watch(self.inner.all_payments()).await
    }
    fn verify_webhook(
        &self,
        payload: &[u8],
        signature: &str,
        now: Millis,
    ) -> Result<WebhookEvent, WebhookError> {
        self.inner.verify_webhook(payload, signature, now)
    }
}
