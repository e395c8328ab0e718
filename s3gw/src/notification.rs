//! Put/GetBucketNotificationConfiguration: which object changes of a bucket append
//! event records to which Eddy topic. `TopicConfiguration`s (and, for MinIO-style
//! tools, `QueueConfiguration`s) name a topic by ARN or plain name; the configuration
//! is validated by the `notify` crate and kept in the bucket record's settings.

use notify::config::{Destination, NotificationConfig, RuleSpec};
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result};

use crate::Gateway;
use crate::authz::OpAction;
use crate::bucket_settings::update_bucket;
use crate::error::notify_config_error;

/// The IAM action each S3 operation of this module needs ([`crate::authz`]).
pub(crate) const ACTIONS: &[OpAction] = &[
    OpAction::new(
        "PutBucketNotificationConfiguration",
        "s3:PutBucketNotification",
    ),
    OpAction::new(
        "GetBucketNotificationConfiguration",
        "s3:GetBucketNotification",
    ),
];

fn filter_rules(f: Option<&NotificationConfigurationFilter>) -> Vec<(String, String)> {
    f.and_then(|f| f.key.as_ref())
        .and_then(|k| k.filter_rules.as_ref())
        .map(|rules| {
            rules
                .iter()
                .map(|r| {
                    (
                        r.name
                            .as_ref()
                            .map(|n| n.as_str().to_owned())
                            .unwrap_or_default(),
                        r.value.clone().unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn events(list: &[Event]) -> Vec<String> {
    list.iter().map(|e| e.as_ref().to_owned()).collect()
}

/// PutBucketNotificationConfiguration: replaces the bucket's configuration (an empty
/// one turns notifications off). Every destination topic must exist.
pub async fn put_bucket_notification_configuration(
    gw: &Gateway,
    mut req: S3Request<PutBucketNotificationConfigurationInput>,
) -> S3Result<S3Response<PutBucketNotificationConfigurationOutput>> {
    // Access first, so a caller without it learns nothing about the topics from the
    // validation errors below.
    gw.bucket_for(&req, &req.input.bucket).await?;
    let c = std::mem::take(&mut req.input.notification_configuration);
    if c.lambda_function_configurations
        .as_ref()
        .is_some_and(|l| !l.is_empty())
    {
        return Err(notify_config_error(
            notify::ConfigError::UnsupportedDestination("Lambda"),
        ));
    }
    if c.event_bridge_configuration.is_some() {
        return Err(notify_config_error(
            notify::ConfigError::UnsupportedDestination("EventBridge"),
        ));
    }
    let mut specs = Vec::new();
    for t in c.topic_configurations.unwrap_or_default() {
        specs.push(RuleSpec {
            id: t.id,
            destination: Some(Destination::Topic),
            arn: t.topic_arn,
            events: events(&t.events),
            filter_rules: filter_rules(t.filter.as_ref()),
        });
    }
    for q in c.queue_configurations.unwrap_or_default() {
        specs.push(RuleSpec {
            id: q.id,
            destination: Some(Destination::Queue),
            arn: q.queue_arn,
            events: events(&q.events),
            filter_rules: filter_rules(q.filter.as_ref()),
        });
    }
    // The validator's check is synchronous: the topics it may name are read first.
    let topics: std::collections::HashSet<String> = gw
        .catalog()
        .kafka()
        .topics()
        .await
        .map_err(crate::error::catalog_error)?
        .into_iter()
        .map(|t| t.name)
        .collect();
    let config = NotificationConfig::validate(specs, |topic| topics.contains(topic))
        .map_err(notify_config_error)?;
    update_bucket(gw, &req, &req.input.bucket, |b| {
        config.store(&mut b.settings);
        Ok(())
    })
    .await?;
    Ok(S3Response::new(PutBucketNotificationConfigurationOutput {}))
}

fn filter(rule: &notify::Rule) -> Option<NotificationConfigurationFilter> {
    let mut rules = Vec::new();
    if let Some(p) = &rule.prefix {
        rules.push(FilterRule {
            name: Some(FilterRuleName::from_static(FilterRuleName::PREFIX)),
            value: Some(p.clone()),
        });
    }
    if let Some(s) = &rule.suffix {
        rules.push(FilterRule {
            name: Some(FilterRuleName::from_static(FilterRuleName::SUFFIX)),
            value: Some(s.clone()),
        });
    }
    if rules.is_empty() {
        return None;
    }
    Some(NotificationConfigurationFilter {
        key: Some(S3KeyFilter {
            filter_rules: Some(rules),
        }),
    })
}

/// GetBucketNotificationConfiguration: the configurations as stored, each in the list
/// it was given in (an empty configuration when there is none).
pub async fn get_bucket_notification_configuration(
    gw: &Gateway,
    req: S3Request<GetBucketNotificationConfigurationInput>,
) -> S3Result<S3Response<GetBucketNotificationConfigurationOutput>> {
    let b = gw.bucket_for(&req, &req.input.bucket).await?;
    let config = b
        .notifications()
        .clone()
        .map_err(notify_config_error)?
        .unwrap_or_default();
    let mut topics = Vec::new();
    let mut queues = Vec::new();
    for r in &config.rules {
        let events: Vec<Event> = r.events.iter().cloned().map(Event::from).collect();
        match r.destination {
            Destination::Topic => topics.push(TopicConfiguration {
                events,
                filter: filter(r),
                id: Some(r.id.clone()),
                topic_arn: r.arn.clone(),
            }),
            Destination::Queue => queues.push(QueueConfiguration {
                events,
                filter: filter(r),
                id: Some(r.id.clone()),
                queue_arn: r.arn.clone(),
            }),
        }
    }
    Ok(S3Response::new(GetBucketNotificationConfigurationOutput {
        topic_configurations: (!topics.is_empty()).then_some(topics),
        queue_configurations: (!queues.is_empty()).then_some(queues),
        ..Default::default()
    }))
}
