//! The backends and formats an operator chooses by name: parsed once, when the config
//! is read, into enums the wiring matches on; a wrong value is refused with the values
//! that are allowed. Database URLs may carry a password, so they print with it redacted.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Where sales are recorded.
#[derive(Clone, PartialEq, Eq)]
pub enum LedgerChoice {
    /// A SQLite file in the data directory (`ledger.db`): one machine.
    Sqlite,
    /// A PostgreSQL database, by its `postgres://` (or `postgresql://`) URL.
    Postgres(String),
}

/// Where holds, the waiting room and the fast replays live.
#[derive(Clone, PartialEq, Eq)]
pub enum HotChoice {
    /// In this process: one node.
    Memory,
    /// One Redis, or the nodes of a Redis Cluster: `redis://` (`rediss://` for TLS)
    /// URLs separated by commas.
    Redis(String),
}

/// Which payment provider takes the money.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PaymentsChoice {
    /// The stand-in: approves payments without taking money, signs its webhooks
    /// with a published secret. For tests, rehearsals and the demo only.
    Fake,
    /// A Stripe-compatible provider.
    Stripe,
}

/// How log lines are written to stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One line of text per event, for people.
    #[default]
    Text,
    /// One JSON object per line, with the fields of the event and its spans, for a
    /// log pipeline.
    Json,
}

impl FromStr for LedgerChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "sqlite" {
            return Ok(LedgerChoice::Sqlite);
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(LedgerChoice::Postgres(s.to_owned()));
        }
        Err(format!(
            "ledger must be \"sqlite\" or a postgres:// URL, not {:?}",
            redact_urls(s)
        ))
    }
}

impl FromStr for HotChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "memory" {
            return Ok(HotChoice::Memory);
        }
        let redis = |u: &str| u.starts_with("redis://") || u.starts_with("rediss://");
        if s.split(',').map(str::trim).all(redis) {
            return Ok(HotChoice::Redis(s.to_owned()));
        }
        Err(format!(
            "hot must be \"memory\" or redis:// (rediss:// for TLS) URLs separated by \
             commas, not {:?}",
            redact_urls(s)
        ))
    }
}

impl FromStr for PaymentsChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fake" => Ok(PaymentsChoice::Fake),
            "stripe" => Ok(PaymentsChoice::Stripe),
            other => Err(format!(
                "payments must be \"stripe\" or \"fake\", not {other:?}"
            )),
        }
    }
}

impl LedgerChoice {
    fn as_str(&self) -> &str {
        match self {
            LedgerChoice::Sqlite => "sqlite",
            LedgerChoice::Postgres(url) => url,
        }
    }
}

impl HotChoice {
    fn as_str(&self) -> &str {
        match self {
            HotChoice::Memory => "memory",
            HotChoice::Redis(urls) => urls,
        }
    }
}

/// `Display` and `Debug` redact passwords; `Serialize` (flags layered over the file)
/// keeps the value whole, and `Deserialize` goes through `FromStr`.
macro_rules! named_choice {
    ($t:ty) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&redact_urls(self.as_str()))
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:?}", redact_urls(self.as_str()))
            }
        }

        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

named_choice!(LedgerChoice);
named_choice!(HotChoice);

/// `urls` (one, or several separated by commas) with any password replaced by
/// `[redacted]`: the one in `user:password@`, a name alone before `@` (the form of a
/// token, `nats://token@host`) and a `password=` query parameter.
pub fn redact_urls(urls: &str) -> String {
    urls.split(',')
        .map(redact_url)
        .collect::<Vec<_>>()
        .join(",")
}

fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:[redacted]@{host}"),
            // A name alone may be the credential itself (`nats://token@host`).
            None => format!("[redacted]@{host}"),
        },
        None => authority.to_owned(),
    };
    format!("{scheme}://{authority}{}", redact_query(tail))
}

fn redact_query(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else {
        return tail.to_owned();
    };
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=[redacted]"),
            _ => p.to_owned(),
        })
        .collect();
    format!("{path}?{}", params.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_prints_without_its_password() {
        let ledger: LedgerChoice =
            "postgres://app:hunter2@db:5432/boxoffice?password=x&sslmode=require"
                .parse()
                .unwrap();
        let shown = format!("{ledger} {ledger:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("=x"),
            "{shown}"
        );
        assert!(
            shown.contains("app:[redacted]@db:5432/boxoffice"),
            "{shown}"
        );
        let hot: HotChoice = "redis://:pw1@a:6379, rediss://u:pw2@b:6380"
            .parse()
            .unwrap();
        let shown = format!("{hot:?}");
        assert!(!shown.contains("pw1") && !shown.contains("pw2"), "{shown}");
        let token = redact_urls("nats://s3cr3t-token@events:4222");
        assert_eq!(token, "nats://[redacted]@events:4222");
    }

    #[test]
    fn a_wrong_backend_is_refused_naming_the_allowed_values() {
        let e = "mysql://root:secret@db/x"
            .parse::<LedgerChoice>()
            .unwrap_err();
        assert!(e.contains("\"sqlite\" or a postgres:// URL"), "{e}");
        assert!(!e.contains("secret"), "{e}");
        let e = "memcached".parse::<HotChoice>().unwrap_err();
        assert!(e.contains("\"memory\" or redis://"), "{e}");
        assert!("redis://a,http://b".parse::<HotChoice>().is_err());
        assert_eq!("sqlite".parse(), Ok(LedgerChoice::Sqlite));
        assert_eq!("memory".parse(), Ok(HotChoice::Memory));
    }
}
