//! ApiVersions: the APIs and versions this broker serves. A request newer than we know is
//! answered in v0 with UNSUPPORTED_VERSION and our ranges, so the client can retry lower.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};

use super::{SERVED, supported};
use crate::context::Ctx;

/// Answers ApiVersions.
pub fn handle(ctx: &Ctx, _req: ApiVersionsRequest) -> ApiVersionsResponse {
    let api_keys = SERVED
        .iter()
        .filter_map(|k| {
            supported(*k).map(|(min, max)| {
                ApiVersion::default()
                    .with_api_key(*k as i16)
                    .with_min_version(min)
                    .with_max_version(max)
            })
        })
        .collect();
    let too_new = supported(kafka_protocol::messages::ApiKey::ApiVersions)
        .is_some_and(|(_, max)| ctx.version > max);
    ApiVersionsResponse::default()
        .with_error_code(if too_new {
            ResponseError::UnsupportedVersion.code()
        } else {
            0
        })
        .with_api_keys(api_keys)
}
