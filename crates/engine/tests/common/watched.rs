//! `Watched`: the payment provider as a node calls it, counting the calls in flight
//! (and the most ever in flight), with a gate a test can close in front of
//! `authorize` to act while a checkout waits for the provider.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use boxoffice_domain::{Millis, OrderId};
use boxoffice_engine::ports::{
    AuthorizeOutcome, AuthorizeRequest, Inquiry, PaymentError, PaymentGateway, ProviderPayment,
    WebhookError, WebhookEvent,
};
use tokio::sync::Semaphore;

pub struct Watched {
    inner: Arc<dyn PaymentGateway>,
    in_flight: AtomicUsize,
    most: AtomicUsize,
    calls: AtomicUsize,
    gated: AtomicBool,
    gate: Semaphore,
    /// Authorizations that reached the gate (so a test knows a checkout is waiting).
    waiting: AtomicUsize,
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
            gated: AtomicBool::new(false),
            gate: Semaphore::new(0),
            waiting: AtomicUsize::new(0),
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
        self.gated.store(true, Ordering::SeqCst);
    }

    /// Lets `n` waiting (or future) authorizations through.
    pub fn open_gate(&self, n: usize) {
        self.gate.add_permits(n);
    }

    pub fn waiting_at_gate(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
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
        if self.gated.load(Ordering::SeqCst) {
            self.waiting.fetch_add(1, Ordering::SeqCst);
            self.gate
                .acquire()
                .await
                .expect("the gate stays open")
                .forget();
        }
        self.watch(self.inner.authorize(req)).await
    }
    async fn capture(&self, order: OrderId, reference: &str) -> Result<(), PaymentError> {
        self.watch(self.inner.capture(order, reference)).await
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
        self.watch(self.inner.inquire(inquiry)).await
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
