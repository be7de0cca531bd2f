//! Buyers and their session tokens. In the embedded mode and the demo anyone may create
//! a buyer; a deployment behind an identity provider issues the same tokens itself.

use boxoffice_domain::BuyerId;
use boxoffice_domain::token::{Claims, TokenKind};
use uuid::Uuid;

use crate::{Engine, EngineError};

/// Who is calling, from a verified buyer token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuyerSession {
    pub buyer: BuyerId,
    /// The session (device) the token was issued to.
    pub session: String,
}

impl Engine {
    pub async fn create_buyer(&self) -> Result<(BuyerId, String), EngineError> {
        let buyer = BuyerId::random();
        let now = self.now();
        self.ports.ledger.create_buyer(buyer, now).await?;
        let claims = Claims {
            account_created_at: Some(now),
            ..Claims::new(
                TokenKind::Buyer,
                buyer,
                Uuid::new_v4().simple().to_string(),
                now.plus_secs(self.config.buyer_token_ttl_s),
            )
        };
        Ok((buyer, self.keys.sign(claims)))
    }

    pub fn authenticate(&self, token: &str) -> Result<BuyerSession, EngineError> {
        let claims = self.keys.verify(token, TokenKind::Buyer, self.now())?;
        Ok(BuyerSession {
            buyer: claims.buyer,
            session: claims.sid,
        })
    }
}
