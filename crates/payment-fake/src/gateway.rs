//! `FakeGateway`: the payment provider port backed by the fake's own SQLite book, with
//! latency, scripted test cards, soak rates and programmable faults in front of it.

use std::path::Path;

use async_trait::async_trait;
use boxoffice_domain::{Millis, Money, OrderId};
use boxoffice_engine::ports::{
    AuthorizeOutcome, AuthorizeRequest, Inquiry, PaymentError, PaymentGateway, ProviderPayment,
    ProviderState, WebhookError, WebhookEvent,
};
use parking_lot::Mutex;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rusqlite::Connection;

use crate::book::Book;
use crate::config::{ConfigError, FakeGatewayConfig};
use crate::faults::{Faults, Op};
use crate::ops::{self, storage};
use crate::records::{self, Record};
use crate::script::Script;
use crate::transitions::Move;
use crate::webhooks::{self, FakeWebhook};
use crate::{signature, webhooks as outbox};

/// Why the fake could not start.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("invalid fake payment config: {0}")]
    Config(#[from] ConfigError),
    #[error("cannot open the fake provider's database: {0}")]
    Storage(#[from] rusqlite::Error),
}

/// A stand-in payment provider with a durable memory of its own.
pub struct FakeGateway {
    // One connection, one call at a time (see `book`): serialising the calls makes
    // "authorize at most once" trivially true.
    book: Book,
    config: FakeGatewayConfig,
    rng: Mutex<StdRng>,
    faults: Faults,
}

impl FakeGateway {
    /// Opens (or creates) the provider's book at `path`. Reopening the same file after a
    /// crash finds every payment the provider acknowledged.
    pub fn open(path: impl AsRef<Path>, config: FakeGatewayConfig) -> Result<Self, OpenError> {
        config.validate()?;
        let conn = records::open_file(path.as_ref())?;
        Ok(Self::with_connection(conn, config))
    }

    /// A provider that forgets everything when dropped, for unit tests.
    pub fn in_memory(config: FakeGatewayConfig) -> Result<Self, OpenError> {
        config.validate()?;
        Ok(Self::with_connection(records::open_in_memory()?, config))
    }

    fn with_connection(conn: Connection, config: FakeGatewayConfig) -> Self {
        let rng = Mutex::new(StdRng::seed_from_u64(config.seed));
        let faults = Faults::default();
        faults.set_unavailable(Op::Capture, config.capture_failures);
        FakeGateway {
            book: Book::new(conn),
            config,
            rng,
            faults,
        }
    }

    pub fn config(&self) -> &FakeGatewayConfig {
        &self.config
    }

    /// The next `n` calls of `op` fail with `Unavailable` without doing anything.
    pub fn fail_next(&self, op: Op, n: u32) {
        self.faults.set_unavailable(op, n);
    }

    /// The next `n` calls of `op` do their work and then answer `Timeout`, as when the
    /// provider acted but the response was lost.
    pub fn time_out_next(&self, op: Op, n: u32) {
        self.faults.set_timeout_after(op, n);
    }

    /// The next `n` captures fail with `Unavailable` (the capture retry sweep's case).
    pub fn fail_next_capture(&self, n: u32) {
        self.fail_next(Op::Capture, n);
    }

    /// Everything the provider knows about one order, beyond what the port exposes.
    /// For tests' inspection: no latency, no injected faults.
    pub async fn record(&self, order: OrderId) -> Result<Option<Record>, PaymentError> {
        self.blocking(move |c| records::get(c, order).map_err(storage))
            .await
    }

    /// The buyer finishes the bank's step (3-D Secure, a bank redirect) of a payment
    /// waiting for them: approved or not. Writes the webhook that reports it. For tests
    /// and rehearsals: no latency, no injected faults.
    pub async fn complete_action(
        &self,
        order: OrderId,
        approve: bool,
    ) -> Result<ProviderState, PaymentError> {
        let copies = self.copies();
        self.blocking(move |c| ops::complete_action(c, order, approve, copies))
            .await
    }

    /// The payment with this reference, if the provider has one. No latency, no faults.
    /// Every refund of part of a payment on the book, oldest first.
    pub async fn partial_refunds(&self) -> Result<Vec<records::PartialRefund>, PaymentError> {
        self.blocking(|c| records::partial_refunds(c).map_err(storage))
            .await
    }

    pub async fn record_by_reference(
        &self,
        reference: String,
    ) -> Result<Option<Record>, PaymentError> {
        self.blocking(move |c| records::by_reference(c, &reference).map_err(storage))
            .await
    }

    /// The provider lets an uncaptured authorization lapse, as Stripe cancels one after
    /// seven days: it becomes voided, with the webhook that says so. For tests and
    /// rehearsals: no latency, no injected faults.
    pub async fn expire_authorization(&self, order: OrderId) -> Result<(), PaymentError> {
        let copies = self.copies();
        self.blocking(move |c| {
            let record = records::get(c, order)
                .map_err(storage)?
                .ok_or_else(|| PaymentError::Rejected(format!("no payment for order {order}")))?;
            ops::apply(c, order, &record.reference, Move::Void, copies)
        })
        .await
    }

    /// Up to `limit` webhooks not yet delivered, oldest first.
    pub async fn undelivered_webhooks(
        &self,
        limit: usize,
    ) -> Result<Vec<FakeWebhook>, PaymentError> {
        self.blocking(move |c| outbox::undelivered(c, limit).map_err(storage))
            .await
    }

    /// Up to `limit` webhooks not yet delivered with `seq` above `after`, oldest first.
    pub async fn undelivered_webhooks_after(
        &self,
        after: i64,
        limit: usize,
    ) -> Result<Vec<FakeWebhook>, PaymentError> {
        self.blocking(move |c| outbox::undelivered_after(c, after, limit).map_err(storage))
            .await
    }

    /// Marks a webhook delivered (the receiver answered 2xx).
    pub async fn mark_delivered(&self, seq: i64) -> Result<(), PaymentError> {
        self.blocking(move |c| outbox::mark_delivered(c, seq).map_err(storage))
            .await
    }

    /// The `Stripe-Signature` header for `payload` signed at `at`.
    pub fn sign(&self, payload: &[u8], at: Millis) -> String {
        signature::sign(self.config.webhook_secret.expose(), payload, at.0 / 1000)
    }

    /// How many copies of the next webhook go to the outbox.
    fn copies(&self) -> u32 {
        let rate = self.config.duplicate_webhook_rate;
        if rate > 0.0 && rand::Rng::random::<f64>(&mut *self.rng.lock()) < rate {
            2
        } else {
            1
        }
    }

    /// Runs one provider call: latency first (a slow provider is slow even when it
    /// fails), then an injected outage, then the work, then an injected lost answer.
    async fn call<T, F>(&self, op: Op, work: F) -> Result<T, PaymentError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, PaymentError> + Send + 'static,
    {
        if self.config.latency_ms > 0 {
            tokio::time::sleep(self.config.latency()).await;
        }
        if self.faults.take_unavailable(op) {
            return Err(PaymentError::Unavailable(format!(
                "injected fault on {op:?}"
            )));
        }
        let answer = self.blocking(work).await;
        if self.faults.take_timeout_after(op) {
            return Err(PaymentError::Timeout);
        }
        answer
    }

    /// SQLite blocks, so the work runs on a blocking task, off the async workers, in
    /// the book's line (see `book`).
    async fn blocking<T, F>(&self, work: F) -> Result<T, PaymentError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, PaymentError> + Send + 'static,
    {
        self.book.run(work).await
    }

    fn script_for(&self, method: &str) -> Script {
        let script = Script::for_method(method);
        let (decline, timeout) = (self.config.decline_rate, self.config.timeout_rate);
        script.with_rates(decline, timeout, &mut *self.rng.lock())
    }

    async fn apply(
        &self,
        op: Op,
        order: OrderId,
        reference: &str,
        mv: Move,
    ) -> Result<(), PaymentError> {
        let reference = reference.to_owned();
        let copies = self.copies();
        self.call(op, move |c| ops::apply(c, order, &reference, mv, copies))
            .await
    }
}

#[async_trait]
impl PaymentGateway for FakeGateway {
    async fn authorize(&self, req: &AuthorizeRequest) -> Result<AuthorizeOutcome, PaymentError> {
        let script = self.script_for(&req.payment_method);
        let req = req.clone();
        let copies = self.copies();
        self.call(Op::Authorize, move |c| {
            ops::authorize(c, &req, script, copies)
        })
        .await
    }

    async fn capture(&self, order: OrderId, reference: &str) -> Result<(), PaymentError> {
        self.apply(Op::Capture, order, reference, Move::Capture)
            .await
    }

    async fn void(&self, order: OrderId, reference: &str) -> Result<(), PaymentError> {
        self.apply(Op::Void, order, reference, Move::Void).await
    }

    async fn refund(&self, order: OrderId, reference: &str) -> Result<(), PaymentError> {
        self.apply(Op::Refund, order, reference, Move::Refund).await
    }

    async fn refund_part(
        &self,
        order: OrderId,
        reference: &str,
        amount: Money,
        key: &str,
    ) -> Result<(), PaymentError> {
        let (reference, key) = (reference.to_owned(), key.to_owned());
        self.call(Op::RefundPart, move |c| {
            ops::refund_part(c, order, &reference, amount, &key)
        })
        .await
    }

    /// The book is exact, so a miss is final at once; a reference, when given, must
    /// belong to the order asked about.
    async fn inquire(&self, inquiry: &Inquiry) -> Result<Option<ProviderPayment>, PaymentError> {
        let order = inquiry.order;
        let Some(reference) = inquiry.reference.clone() else {
            let found = move |c: &mut Connection| records::get(c, order).map_err(storage);
            return Ok(self.call(Op::Inquire, found).await?.map(|r| r.to_port()));
        };
        let found = move |c: &mut Connection| records::by_reference(c, &reference).map_err(storage);
        let record = self.call(Op::Inquire, found).await?;
        Ok(record.filter(|r| r.order == order).map(|r| r.to_port()))
    }

    async fn inquire_reference(
        &self,
        reference: &str,
    ) -> Result<Option<ProviderPayment>, PaymentError> {
        let reference = reference.to_owned();
        let found = move |c: &mut Connection| records::by_reference(c, &reference).map_err(storage);
        Ok(self.call(Op::Inquire, found).await?.map(|r| r.to_port()))
    }

    fn verify_webhook(
        &self,
        payload: &[u8],
        header: &str,
        now: Millis,
    ) -> Result<WebhookEvent, WebhookError> {
        let secret = self.config.webhook_secret.expose();
        signature::verify(
            secret,
            payload,
            header,
            now,
            self.config.webhook_tolerance_s,
        )?;
        webhooks::parse(payload)
    }

    async fn all_payments(&self) -> Result<Vec<ProviderPayment>, PaymentError> {
        let all = self
            .call(Op::AllPayments, |c| records::all(c).map_err(storage))
            .await?;
        Ok(all.iter().map(Record::to_port).collect())
    }
}
