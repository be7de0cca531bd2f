//! The recovery sweep's door to the payment provider: at most `in_flight` calls at once
//! and calls started at most `per_s` a second, evenly spaced. After a crash the sweep
//! may find thousands of orders to settle; it settles them concurrently, and this keeps
//! that from flooding the provider or using up its rate limit, which live checkouts
//! share. Live checkouts and webhooks call the provider directly.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use boxoffice_domain::{Millis, OrderId};
use parking_lot::Mutex;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::ports::{
    AuthorizeOutcome, AuthorizeRequest, Inquiry, PaymentError, PaymentGateway, ProviderPayment,
    WebhookError, WebhookEvent,
};

pub(crate) struct Paced {
    inner: Arc<dyn PaymentGateway>,
    slots: Semaphore,
    /// Time between two call starts; zero for no rate limit.
    spacing: Duration,
    /// When the next call may start.
    next: Mutex<Option<Instant>>,
}

impl Paced {
    /// `in_flight` at least 1; `per_s` 0 means no rate limit.
    pub fn new(inner: Arc<dyn PaymentGateway>, in_flight: usize, per_s: u32) -> Paced {
        let spacing = match per_s {
            0 => Duration::ZERO,
            n => Duration::from_secs(1) / n,
        };
        Paced {
            inner,
            slots: Semaphore::new(in_flight.max(1)),
            spacing,
            next: Mutex::new(None),
        }
    }

    async fn call<T>(&self, call: impl Future<Output = T>) -> T {
        // The semaphore is never closed, so a permit always comes.
        let _slot = self.slots.acquire().await.ok();
        self.wait_turn().await;
        call.await
    }

    /// Takes the next start time and waits for it.
    async fn wait_turn(&self) {
        if self.spacing.is_zero() {
            return;
        }
        let at = {
            let mut next = self.next.lock();
            let now = Instant::now();
            let at = next.map_or(now, |n| n.max(now));
            *next = Some(at + self.spacing);
            at
        };
        tokio::time::sleep_until(at).await;
    }
}

#[async_trait]
impl PaymentGateway for Paced {
    async fn authorize(&self, req: &AuthorizeRequest) -> Result<AuthorizeOutcome, PaymentError> {
        self.call(self.inner.authorize(req)).await
    }
    async fn capture(&self, order: OrderId, reference: &str) -> Result<(), PaymentError> {
        self.call(self.inner.capture(order, reference)).await
    }
    async fn void(&self, order: OrderId, reference: &str) -> Result<(), PaymentError> {
        self.call(self.inner.void(order, reference)).await
    }
    async fn refund(&self, order: OrderId, reference: &str) -> Result<(), PaymentError> {
        self.call(self.inner.refund(order, reference)).await
    }
    async fn refund_part(
        &self,
        order: OrderId,
        reference: &str,
        amount: boxoffice_domain::Money,
        key: &str,
    ) -> Result<(), PaymentError> {
        let call = self.inner.refund_part(order, reference, amount, key);
        self.call(call).await
    }
    async fn inquire(&self, inquiry: &Inquiry) -> Result<Option<ProviderPayment>, PaymentError> {
        self.call(self.inner.inquire(inquiry)).await
    }
    async fn inquire_reference(
        &self,
        reference: &str,
    ) -> Result<Option<ProviderPayment>, PaymentError> {
        self.call(self.inner.inquire_reference(reference)).await
    }
    async fn all_payments(&self) -> Result<Vec<ProviderPayment>, PaymentError> {
        self.call(self.inner.all_payments()).await
    }
    fn rate_limit_per_s(&self) -> Option<u32> {
        self.inner.rate_limit_per_s()
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

/// The sweep's rate when none is configured: four fifths of the provider's own limit,
/// leaving the rest to live checkouts, or 200 a second for a provider without one.
pub(crate) fn default_rate(provider: &dyn PaymentGateway) -> u32 {
    provider
        .rate_limit_per_s()
        .map_or(200, |limit| (limit.saturating_mul(4) / 5).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_spaces_call_starts_evenly() {
        struct Never;
        #[async_trait]
        impl PaymentGateway for Never {
            async fn authorize(
                &self,
                _: &AuthorizeRequest,
            ) -> Result<AuthorizeOutcome, PaymentError> {
                Err(PaymentError::Timeout)
            }
            async fn capture(&self, _: OrderId, _: &str) -> Result<(), PaymentError> {
                Ok(())
            }
            async fn void(&self, _: OrderId, _: &str) -> Result<(), PaymentError> {
                Ok(())
            }
            async fn refund(&self, _: OrderId, _: &str) -> Result<(), PaymentError> {
                Ok(())
            }
            async fn inquire(&self, _: &Inquiry) -> Result<Option<ProviderPayment>, PaymentError> {
                Ok(None)
            }
            async fn inquire_reference(
                &self,
                _: &str,
            ) -> Result<Option<ProviderPayment>, PaymentError> {
                Ok(None)
            }
            async fn all_payments(&self) -> Result<Vec<ProviderPayment>, PaymentError> {
                Ok(vec![])
            }
            fn verify_webhook(
                &self,
                _: &[u8],
                _: &str,
                _: Millis,
            ) -> Result<WebhookEvent, WebhookError> {
                Err(WebhookError::BadSignature)
            }
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
        rt.block_on(async {
            let paced = Paced::new(Arc::new(Never), 8, 10);
            let started = Instant::now();
            for _ in 0..21 {
                let asked = Inquiry::by_order(OrderId::random());
                paced.inquire(&asked).await.expect("answers");
            }
            // 21 starts at 10 a second: the first at once, the last two seconds later.
            assert_eq!(started.elapsed(), Duration::from_secs(2));
        });
    }
}
