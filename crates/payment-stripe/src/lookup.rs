//! Reading PaymentIntents back: by id (exact), by our order id through the Search API
//! (eventually consistent), or, where search does not exist (localstripe), through the
//! list. Every read expands `latest_charge`, the only place a refund shows.

use boxoffice_domain::{Millis, OrderId};
use boxoffice_engine::ports::{Inquiry, PaymentError, ProviderPayment};

use crate::StripeGateway;
use crate::client::Failure;
use crate::intent::{Intent, IntentList, ORDER_KEY};

/// What a look-up by order id found.
pub(crate) enum Lookup {
    Found(Intent),
    /// Nothing. `lagging` when the answer came from the Search API, which may not list
    /// a PaymentIntent created moments ago; the list is exact.
    Missing {
        lagging: bool,
    },
}

impl StripeGateway {
    /// The PaymentIntent of one of our orders, if any. Tries the Search API first and,
    /// where it does not exist (localstripe), reads the list.
    pub(crate) async fn find(&self, order: OrderId) -> Result<Lookup, PaymentError> {
        let query = format!(
            "/v1/payment_intents/search?query=metadata['{ORDER_KEY}']:'{order}'&expand[]=data.latest_charge"
        );
        match self.client.get::<IntentList>(&query).await {
            Ok(list) => {
                let found = list.data.into_iter().find(|i| i.order() == Some(order));
                return Ok(found.map_or(Lookup::Missing { lagging: true }, Lookup::Found));
            }
            Err(Failure::NotFound | Failure::Refused(_)) => {}
            Err(e) => return Err(e.into()),
        }
        let found = self
            .list()
            .await?
            .into_iter()
            .find(|i| i.order() == Some(order));
        Ok(found.map_or(Lookup::Missing { lagging: false }, Lookup::Found))
    }

    /// Every PaymentIntent, page by page.
    pub(crate) async fn list(&self) -> Result<Vec<Intent>, PaymentError> {
        let mut all: Vec<Intent> = Vec::new();
        loop {
            let mut path = "/v1/payment_intents?limit=100&expand[]=data.latest_charge".to_owned();
            if let Some(last) = all.last() {
                path.push_str(&format!("&starting_after={}", last.id));
            }
            let page: IntentList = self.client.get(&path).await?;
            let more = page.has_more && !page.data.is_empty();
            all.extend(page.data);
            if !more {
                return Ok(all);
            }
        }
    }

    pub(crate) async fn retrieve(&self, reference: &str) -> Result<Option<Intent>, PaymentError> {
        let path = format!("/v1/payment_intents/{reference}?expand[]=latest_charge");
        match self.client.get(&path).await {
            Ok(i) => Ok(Some(i)),
            Err(Failure::NotFound) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// What Stripe did for an order: read by its reference when it has one, else
    /// searched. A search miss is final only once the order is older than
    /// `search_settle_s`; before that it is "not known yet", an error the engine retries.
    pub(crate) async fn inquire_order(
        &self,
        inquiry: &Inquiry,
    ) -> Result<Option<ProviderPayment>, PaymentError> {
        let order = inquiry.order;
        if let Some(reference) = &inquiry.reference {
            return match self.retrieve(reference).await? {
                Some(i) if i.order() == Some(order) => Ok(Some(i.to_port(order))),
                // A reference Stripe gave us that it no longer knows, or that names
                // another order: a key of another account. Deciding nothing is safe.
                _ => Err(PaymentError::Unavailable(format!(
                    "Stripe has no PaymentIntent {reference} for order {order}; is \
                     stripe.secret_key the key of the account that took the payment?"
                ))),
            };
        }
        match self.find(order).await? {
            Lookup::Found(i) => Ok(Some(i.to_port(order))),
            Lookup::Missing { lagging: true } if self.search_may_lag(inquiry.created_at) => {
                Err(PaymentError::Unavailable(format!(
                    "Stripe's search does not list order {order} yet; it may take up to \
                     stripe.search_settle_s ({} s) to, so it is asked again later",
                    self.config.search_settle_s
                )))
            }
            Lookup::Missing { .. } => Ok(None),
        }
    }

    /// Whether an order created at `created_at` is too recent for a search miss to
    /// mean that Stripe never saw it.
    fn search_may_lag(&self, created_at: Millis) -> bool {
        let settle_ms = i64::try_from(self.config.search_settle_s.saturating_mul(1000));
        self.clock.now().0.saturating_sub(created_at.0) < settle_ms.unwrap_or(i64::MAX)
    }
}
