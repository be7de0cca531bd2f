//! The experiment's own database: created with a random name on the server the given
//! URL points at, dropped (with its connections) when the run is over.

use sqlx::{Connection, PgConnection};

pub struct ThrowAway {
    admin_url: String,
    name: String,
    pub url: String,
}

impl ThrowAway {
    pub async fn create(admin_url: &str) -> anyhow::Result<ThrowAway> {
        let name = format!("boxoffice_experiment_{}", uuid::Uuid::new_v4().simple());
        admin(admin_url, &format!("CREATE DATABASE {name}")).await?;
        Ok(ThrowAway {
            admin_url: admin_url.to_owned(),
            url: with_database(admin_url, &name),
            name,
        })
    }

    pub async fn drop_it(self) -> anyhow::Result<()> {
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        admin(&self.admin_url, &sql).await
    }
}

async fn admin(url: &str, sql: &str) -> anyhow::Result<()> {
    let mut conn = PgConnection::connect(url).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut conn)
        .await?;
    conn.close().await?;
    Ok(())
}

/// `url` with its database replaced by `name` (query parameters kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let authority = base.find("://").map_or(0, |i| i + 3);
    let end = base[authority..]
        .find('/')
        .map_or(base.len(), |i| authority + i);
    format!("{}/{name}{query}", &base[..end])
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn the_database_is_replaced_and_the_rest_kept() {
        assert_eq!(
            with_database("postgres://u:p@h:5/postgres?sslmode=require", "x"),
            "postgres://u:p@h:5/x?sslmode=require"
        );
        assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
    }
}
