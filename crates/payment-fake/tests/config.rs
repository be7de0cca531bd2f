//! The config the binary reads from its file: every field optional, unknown ones refused.

use boxoffice_payment_fake::FakeGatewayConfig;

#[test]
fn an_empty_config_means_a_fast_honest_provider() {
    let config: FakeGatewayConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(config, FakeGatewayConfig::default());
    assert_eq!(
        (config.latency_ms, config.decline_rate, config.timeout_rate),
        (0, 0.0, 0.0)
    );
}

#[test]
fn fields_given_override_the_defaults() {
    let config: FakeGatewayConfig =
        serde_json::from_str(r#"{"latency_ms": 120, "decline_rate": 0.05, "seed": 9}"#).unwrap();
    assert_eq!(config.latency_ms, 120);
    assert_eq!(config.decline_rate, 0.05);
    assert_eq!(config.timeout_rate, 0.0);
    assert_eq!(config.seed, 9);
}

#[test]
fn a_misspelt_field_is_refused_rather_than_ignored() {
    assert!(serde_json::from_str::<FakeGatewayConfig>(r#"{"latency": 120}"#).is_err());
}
