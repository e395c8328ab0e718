//! Eddy's S3 API. Until the S3 gateway issue lands, every request gets S3's
//! `NotImplemented` error as XML, so clients report a clear error.

/// The body of S3's `NotImplemented` error.
pub fn not_implemented_xml(resource: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NotImplemented</Code>\
         <Message>The S3 API is not implemented yet</Message><Resource>{}</Resource></Error>",
        resource
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    )
}
