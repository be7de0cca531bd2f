//! Opening the payment provider the operator chose. There is no default: the stand-in
//! approves payments without taking money and signs its webhooks with a published
//! secret, so it runs only when named (or under `serve --demo`) and says so loudly. A
//! Stripe provider must prove its credentials with one call before the node starts
//! taking orders.

use std::sync::Arc;

use anyhow::Context;
use boxoffice_engine::ports::{Clock, PaymentGateway};
use boxoffice_payment_fake::FakeGateway;
use boxoffice_payment_stripe::StripeGateway;

use crate::config::{Config, PaymentsChoice};

/// The file of the stand-in's book inside the data directory.
pub const PROVIDER_FILE: &str = "fake-provider.db";

/// The gateway, and the stand-in itself when it is the one in use (the wiring starts
/// its webhook delivery).
pub type Payments = (Arc<dyn PaymentGateway>, Option<Arc<FakeGateway>>);

pub const NO_CHOICE: &str = "no payment provider chosen: set payments = \"stripe\" (with \
    stripe.secret_key and stripe.webhook_secret) to take real payments, or payments = \
    \"fake\" for the stand-in that approves payments without taking any money \
    (tests and rehearsals only); in the config file, as BOXOFFICE_PAYMENTS, or with \
    --payments. `serve --demo` picks the stand-in by itself";

pub const FAKE_WARNING: &str = "WARNING: payments = \"fake\": the stand-in provider \
    approves payments without taking any money, and its webhook secret is public. \
    Never run a real sale on it.";

pub async fn open(config: &Config, clock: Arc<dyn Clock>) -> anyhow::Result<Payments> {
    match config.payments {
        None => anyhow::bail!(NO_CHOICE),
        Some(PaymentsChoice::Fake) => open_fake(config),
        Some(PaymentsChoice::Stripe) => Ok((open_stripe(config, clock).await?, None)),
    }
}

fn open_fake(config: &Config) -> anyhow::Result<Payments> {
    tracing::warn!("{FAKE_WARNING}");
    eprintln!("{FAKE_WARNING}");
    let fake = FakeGateway::open(
        config.data_dir.join(PROVIDER_FILE),
        config.fake_payments.clone(),
    )
    .context("opening the fake provider's book")?;
    let fake = Arc::new(fake);
    Ok((fake.clone(), Some(fake)))
}

async fn open_stripe(
    config: &Config,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<Arc<dyn PaymentGateway>> {
    let stripe = &config.stripe;
    anyhow::ensure!(
        !stripe.secret_key.is_empty(),
        "payments = \"stripe\" needs stripe.secret_key (the account's secret key, sk_…)"
    );
    anyhow::ensure!(
        !stripe.webhook_secret.is_empty(),
        "payments = \"stripe\" needs stripe.webhook_secret (the webhook endpoint's signing \
         secret, whsec_…): without it no webhook can be verified"
    );
    let gateway =
        StripeGateway::with_clock(stripe.clone(), clock).context("building the Stripe client")?;
    gateway.check_credentials().await?;
    tracing::info!(base_url = %stripe.base_url, "Stripe credentials accepted");
    Ok(Arc::new(gateway))
}
