//! The machine-readable codes of error responses: one table, naming each code's text on
//! the wire and the statuses it is sent with. Clients branch on these texts, so a text
//! never changes once published.

use axum::http::StatusCode;
use serde::{Serialize, Serializer};

macro_rules! error_codes {
    ($($variant:ident = $text:literal => $($status:ident)|+;)*) => {
        /// A stable error code; serialized as its snake_case text.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ErrorCode {
            $($variant,)*
        }

        impl ErrorCode {
            /// Every code, in the table's order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The code as clients see it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $text,)*
                }
            }

            /// The statuses this code is sent with; the first is its usual one.
            pub fn statuses(self) -> &'static [StatusCode] {
                match self {
                    $(ErrorCode::$variant => &[$(StatusCode::$status),+],)*
                }
            }
        }
    };
}

error_codes! {
    NotFound = "not_found" => NOT_FOUND;
    EventNotFound = "event_not_found" => NOT_FOUND;
    SeatNotFound = "seat_not_found" => NOT_FOUND;
    SectionNotFound = "section_not_found" => NOT_FOUND;
    HoldNotFound = "hold_not_found" => NOT_FOUND;
    OrderNotFound = "order_not_found" => NOT_FOUND;
    WebhookEndpointNotFound = "webhook_endpoint_not_found" => NOT_FOUND;
    SinkInUse = "sink_in_use" => CONFLICT;
    MethodNotAllowed = "method_not_allowed" => METHOD_NOT_ALLOWED;
    PayloadTooLarge = "payload_too_large" => PAYLOAD_TOO_LARGE;
    MalformedJson = "malformed_json" => BAD_REQUEST;
    InvalidQuery = "invalid_query" => BAD_REQUEST;
    InvalidBody = "invalid_body" => UNPROCESSABLE_ENTITY;
    InvalidRequest = "invalid_request" => UNPROCESSABLE_ENTITY;
    IdempotencyKeyRequired = "idempotency_key_required" => BAD_REQUEST;
    IdempotencyKeyWeak = "idempotency_key_weak" => BAD_REQUEST;
    IdempotencyKeyReused = "idempotency_key_reused" => UNPROCESSABLE_ENTITY;
    RequestInProgress = "request_in_progress" => CONFLICT;
    IdempotencyStoreFull = "idempotency_store_full" => SERVICE_UNAVAILABLE;
    MissingToken = "missing_token" => UNAUTHORIZED;
    InvalidToken = "invalid_token" => UNAUTHORIZED;
    TokenExpired = "token_expired" => UNAUTHORIZED;
    TokenNotYetValid = "token_not_yet_valid" => UNAUTHORIZED;
    TokenUnknownKey = "token_unknown_key" => UNAUTHORIZED;
    TokenWrongIssuer = "token_wrong_issuer" => UNAUTHORIZED;
    TokenWrongAudience = "token_wrong_audience" => UNAUTHORIZED;
    TokenWrongEvent = "token_wrong_event" => FORBIDDEN;
    TokenNotRenewable = "token_not_renewable" => FORBIDDEN;
    SessionMismatch = "session_mismatch" => FORBIDDEN;
    ProofRequired = "proof_required" => UNAUTHORIZED;
    ProofInvalid = "proof_invalid" => UNAUTHORIZED;
    ProofStale = "proof_stale" => UNAUTHORIZED;
    ProofReplayed = "proof_replayed" => UNAUTHORIZED;
    ProofKeyMismatch = "proof_key_mismatch" => UNAUTHORIZED;
    Forbidden = "forbidden" => FORBIDDEN;
    NotAdmitted = "not_admitted" => FORBIDDEN;
    AdmissionExpired = "admission_expired" => GONE;
    BuyerNotVerified = "buyer_not_verified" => FORBIDDEN;
    AccountTooNew = "account_too_new" => FORBIDDEN;
    PowRequired = "pow_required" => FORBIDDEN;
    PowInvalid = "pow_invalid" => FORBIDDEN;
    HumanCheckRequired = "human_check_required" => FORBIDDEN;
    HumanCheckFailed = "human_check_failed" => FORBIDDEN;
    HumanCheckReused = "human_check_reused" => FORBIDDEN;
    HumanCheckUnavailable = "human_check_unavailable" => SERVICE_UNAVAILABLE;
    SelfSignupDisabled = "self_signup_disabled" => FORBIDDEN;
    RateLimited = "rate_limited" => TOO_MANY_REQUESTS;
    SaleNotOpen = "sale_not_open" => CONFLICT;
    SaleClosed = "sale_closed" => CONFLICT;
    SeatUnavailable = "seat_unavailable" => CONFLICT;
    SoldOut = "sold_out" => CONFLICT;
    LimitExceeded = "limit_exceeded" => UNPROCESSABLE_ENTITY;
    HoldExpired = "hold_expired" => GONE;
    HoldNotActive = "hold_not_active" => CONFLICT;
    CheckoutInProgress = "checkout_in_progress" => CONFLICT;
    PaymentDeclined = "payment_declined" => PAYMENT_REQUIRED;
    SeatSold = "seat_sold" => CONFLICT;
    OrderNotCancellable = "order_not_cancellable" => CONFLICT;
    RefundWindowClosed = "refund_window_closed" => FORBIDDEN;
    OrderUsed = "order_used" => CONFLICT;
    OrderGivenAway = "order_given_away" => CONFLICT;
    EventCancelled = "event_cancelled" => CONFLICT;
    EventNotCancelled = "event_not_cancelled" => NOT_FOUND;
    MissingSignature = "missing_signature" => BAD_REQUEST;
    InvalidSignature = "invalid_signature" => BAD_REQUEST;
    StaleWebhook = "stale_webhook" => BAD_REQUEST;
    MalformedWebhook = "malformed_webhook" => BAD_REQUEST;
    TooManyStreams = "too_many_streams" => TOO_MANY_REQUESTS | SERVICE_UNAVAILABLE;
    ShuttingDown = "shutting_down" => SERVICE_UNAVAILABLE;
    Overloaded = "overloaded" => SERVICE_UNAVAILABLE | TOO_MANY_REQUESTS;
    RequestTimeout = "request_timeout" => SERVICE_UNAVAILABLE;
    Starting = "starting" => SERVICE_UNAVAILABLE;
    TicketNotFound = "ticket_not_found" => NOT_FOUND;
    TicketRevoked = "ticket_revoked" => CONFLICT;
    GateNotFound = "gate_not_found" => NOT_FOUND;
    GateCredentialUnknown = "gate_credential_unknown" => UNAUTHORIZED;
    GateRevoked = "gate_revoked" => FORBIDDEN;
    GateWrongEvent = "gate_wrong_event" => FORBIDDEN;
    BarcodeMalformed = "barcode_malformed" => UNPROCESSABLE_ENTITY;
    BarcodeWrongEvent = "barcode_wrong_event" => UNPROCESSABLE_ENTITY;
    BarcodeUnknownKey = "barcode_unknown_key" => UNPROCESSABLE_ENTITY;
    BarcodeBadSignature = "barcode_bad_signature" => UNPROCESSABLE_ENTITY;
    BarcodeRevoked = "barcode_revoked" => CONFLICT;
    BarcodeCodeMissing = "barcode_code_missing" => UNPROCESSABLE_ENTITY;
    BarcodeCodeUncheckable = "barcode_code_uncheckable" => UNPROCESSABLE_ENTITY;
    BarcodeCodeNotYetValid = "barcode_code_not_yet_valid" => UNPROCESSABLE_ENTITY;
    BarcodeCodeExpired = "barcode_code_expired" => UNPROCESSABLE_ENTITY;
    AlreadyScanned = "already_scanned" => CONFLICT;
    KeyNotFound = "key_not_found" => NOT_FOUND;
    KeyCurrent = "key_current" => CONFLICT;
    TooManyKeys = "too_many_keys" => CONFLICT;
    TransferNotFound = "transfer_not_found" => NOT_FOUND;
    TransfersNotAllowed = "transfers_not_allowed" => FORBIDDEN;
    TransferWindowClosed = "transfer_window_closed" => FORBIDDEN;
    TicketNotTransferable = "ticket_not_transferable" => CONFLICT;
    TransferPending = "transfer_pending" => CONFLICT;
    TransferNotOpen = "transfer_not_open" => CONFLICT;
    TransferToSelf = "transfer_to_self" => UNPROCESSABLE_ENTITY;
    TransfersExchangeOnly = "transfers_exchange_only" => FORBIDDEN;
    AttendeeNamesRequired = "attendee_names_required" => UNPROCESSABLE_ENTITY;
    AttendeeNamesInvalid = "attendee_names_invalid" => UNPROCESSABLE_ENTITY;
    AttendeeNamesNotTaken = "attendee_names_not_taken" => CONFLICT;
    BarcodeNameMissing = "barcode_name_missing" => CONFLICT;
    NameChangesNotAllowed = "name_changes_not_allowed" => FORBIDDEN;
    NameChangesClosed = "name_changes_closed" => FORBIDDEN;
    NameChangeLimitReached = "name_change_limit_reached" => CONFLICT;
    TicketNotRenamable = "ticket_not_renamable" => CONFLICT;
    TicketChanged = "ticket_changed" => CONFLICT;
    ListingNotFound = "listing_not_found" => NOT_FOUND;
    ExchangeNotAvailable = "exchange_not_available" => FORBIDDEN;
    ExchangeClosed = "exchange_closed" => FORBIDDEN;
    ListingAboveFaceValue = "listing_above_face_value" => UNPROCESSABLE_ENTITY;
    TicketNotListable = "ticket_not_listable" => CONFLICT;
    TicketAlreadyListed = "ticket_already_listed" => CONFLICT;
    TicketAlreadyCancelled = "ticket_already_cancelled" => CONFLICT;
    TicketNotCancellable = "ticket_not_cancellable" => CONFLICT;
    LastTicketOfOrder = "last_ticket_of_order" => CONFLICT;
    TicketListed = "ticket_listed" => CONFLICT;
    ListingNotOpen = "listing_not_open" => CONFLICT;
    OwnListing = "own_listing" => UNPROCESSABLE_ENTITY;
    PaymentVelocity = "payment_velocity" => TOO_MANY_REQUESTS;
    BuyerLocked = "buyer_locked" => FORBIDDEN;
    TooManyBuyers = "too_many_buyers" => FORBIDDEN;
    Unavailable = "unavailable" => SERVICE_UNAVAILABLE;
    Internal = "internal" => INTERNAL_SERVER_ERROR;
}

impl ErrorCode {
    /// The usual status of this code.
    pub fn status(self) -> StatusCode {
        self.statuses()[0]
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_code_has_its_own_snake_case_text() {
        let texts: BTreeSet<_> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(texts.len(), ErrorCode::ALL.len());
        for code in ErrorCode::ALL {
            let text = code.as_str();
            assert!(text.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
            assert_eq!(serde_json::to_string(code).unwrap(), format!("\"{text}\""));
            let camel: String = text
                .split('_')
                .map(|w| w[..1].to_uppercase() + &w[1..])
                .collect();
            assert_eq!(format!("{code:?}"), camel);
        }
    }

    #[test]
    fn every_error_code_is_sent_with_an_error_status() {
        for code in ErrorCode::ALL {
            assert!(
                code.statuses()
                    .iter()
                    .all(|s| s.is_client_error() || s.is_server_error())
            );
        }
    }
}
