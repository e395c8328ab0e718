//! Response bodies of the Iceberg REST catalog API (field names as in its OpenAPI spec).

use std::collections::HashMap;

use serde::Serialize;

/// `GET /v1/config`.
#[derive(Serialize)]
pub struct CatalogConfig {
    pub defaults: HashMap<String, String>,
    pub overrides: HashMap<String, String>,
    /// The routes served, so clients (Iceberg Java 1.7 on) use views and multi-table
    /// commits rather than assume a default set.
    pub endpoints: Vec<&'static str>,
}

/// `GET /v1/namespaces`.
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ListNamespaces {
    pub namespaces: Vec<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// `GET /v1/namespaces/{namespace}`.
#[derive(Serialize)]
pub struct GetNamespace {
    pub namespace: Vec<String>,
    pub properties: HashMap<String, String>,
}

/// A table's name.
#[derive(Serialize)]
pub struct TableIdentifier {
    pub namespace: Vec<String>,
    pub name: String,
}

/// `GET /v1/namespaces/{namespace}/tables` (and `.../views`).
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ListTables {
    pub identifiers: Vec<TableIdentifier>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

impl ListTables {
    /// One page of `names` in `namespace` (`query` holds `pageToken` and `pageSize`).
    pub fn page(
        namespace: &[String],
        names: Vec<String>,
        query: Option<&str>,
    ) -> crate::TableResult<Self> {
        let (names, next_page_token) = super::page(names, query)?;
        Ok(Self {
            identifiers: names
                .into_iter()
                .map(|name| TableIdentifier {
                    namespace: namespace.to_vec(),
                    name,
                })
                .collect(),
            next_page_token,
        })
    }
}

/// `GET /v1/namespaces/{namespace}/tables/{table}`.
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct LoadTable {
    pub metadata_location: String,
    pub metadata: serde_json::Value,
    pub config: HashMap<String, String>,
}

/// `POST /v1/oauth/tokens`.
#[derive(Serialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: u64,
    pub issued_token_type: &'static str,
}
