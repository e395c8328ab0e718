//! Bucket notifications: configurations, filters, and the event records written as topic
//! rows in the same transaction as the object change. Filled in by its issue.
