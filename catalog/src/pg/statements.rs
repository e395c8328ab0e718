//! The committer connection's prepared statements, made on first use: a statement
//! prepared once saves a round trip on every later use.

use std::collections::HashMap;
use std::ops::Bound;

use tokio_postgres::{GenericClient, Statement};

use crate::error::CatalogResult;
use crate::kv::Range;

/// Prepared statements of one connection.
#[derive(Default)]
pub struct Statements {
    get: Option<Statement>,
    ranges: HashMap<String, Statement>,
}

/// The SQL of a range read: `$1` the table, then the bounds it has, then the limit.
pub fn range_sql(range: &Range<'_>) -> String {
    let mut sql = String::from("SELECT k, v FROM eddy_kv WHERE t = $1");
    let mut n = 1;
    let mut bound = |b: &Bound<&[u8]>, incl: &str, excl: &str, sql: &mut String| match b {
        Bound::Included(_) => {
            n += 1;
            sql.push_str(&format!(" AND k {incl} ${n}"));
        }
        Bound::Excluded(_) => {
            n += 1;
            sql.push_str(&format!(" AND k {excl} ${n}"));
        }
        Bound::Unbounded => {}
    };
    bound(&range.from, ">=", ">", &mut sql);
    bound(&range.to, "<=", "<", &mut sql);
    let order = if range.reverse { "DESC" } else { "ASC" };
    sql.push_str(&format!(" ORDER BY k {order} LIMIT ${}", n + 1));
    sql
}

impl Statements {
    /// `SELECT v ... WHERE t = $1 AND k = $2`.
    pub async fn get(&mut self, client: &impl GenericClient) -> CatalogResult<Statement> {
        if let Some(s) = &self.get {
            return Ok(s.clone());
        }
        let s = client
            .prepare("SELECT v FROM eddy_kv WHERE t = $1 AND k = $2")
            .await?;
        self.get = Some(s.clone());
        Ok(s)
    }

    /// The range read of [`range_sql`].
    pub async fn range(
        &mut self,
        client: &impl GenericClient,
        range: &Range<'_>,
    ) -> CatalogResult<Statement> {
        let sql = range_sql(range);
        if let Some(s) = self.ranges.get(&sql) {
            return Ok(s.clone());
        }
        let s = client.prepare(&sql).await?;
        self.ranges.insert(sql, s.clone());
        Ok(s)
    }
}
