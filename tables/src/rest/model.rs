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
pub struct ListNamespaces {
    pub namespaces: Vec<Vec<String>>,
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

/// `GET /v1/namespaces/{namespace}/tables`.
#[derive(Serialize)]
pub struct ListTables {
    pub identifiers: Vec<TableIdentifier>,
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
