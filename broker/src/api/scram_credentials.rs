//! DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554): the SCRAM
//! credentials of Eddy's users, as Kafka admin clients manage them. Describing shows
//! mechanisms and iterations, never keys; altering takes the salted password the client
//! computed (the password never reaches the server) and stores the derived stored and
//! server keys in the catalog through the directory, taking effect at once. Checks as
//! Kafka makes them: a user named twice in one request, an unknown mechanism, iterations
//! outside 4096..=16384, an empty salt or password, or deleting a credential that does
//! not exist fail that user only. A config file's users are changed in the config file.

use crate::authz::*;
use kafka_protocol::messages::alter_user_scram_credentials_response;
use std::collections::BTreeMap;

use iam::scram::{Credential, ScramHash};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, ResponseKind,
};

use crate::context::{Ctx, Reply, sb};

/// Kafka's most PBKDF2 iterations for a SCRAM credential.
const MAX_ITERATIONS: i32 = 16384;

/// Kafka's mechanism ids.
fn hash_of(mechanism: i8) -> Option<ScramHash> {
    match mechanism {
        1 => Some(ScramHash::Sha256),
        2 => Some(ScramHash::Sha512),
        _ => None,
    }
}

fn id_of(m: catalog::ScramMechanism) -> i8 {
    match m {
        catalog::ScramMechanism::Sha256 => 1,
        catalog::ScramMechanism::Sha512 => 2,
    }
}

/// DescribeUserScramCredentials: every user with credentials, or the ones named.
pub fn describe(
    ctx: &Ctx,
    req: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    let dir = &ctx.broker.directory;
    let result = |u: &catalog::UserRecord| {
        DescribeUserScramCredentialsResult::default()
            .with_user(sb(&u.name))
            .with_credential_infos(
                u.scram
                    .iter()
                    .map(|c| {
                        CredentialInfo::default()
                            .with_mechanism(id_of(c.mechanism))
                            .with_iterations(c.iterations as i32)
                    })
                    .collect(),
            )
    };
    let results = match req.users {
        None => dir
            .users()
            .iter()
            .filter(|u| !u.scram.is_empty())
            .map(result)
            .collect(),
        Some(names) => {
            let mut seen = BTreeMap::new();
            for n in &names {
                *seen.entry(n.name.to_string()).or_insert(0) += 1;
            }
            seen.into_iter()
                .map(|(name, count)| {
                    let failed = |e: ResponseError, m: &str| {
                        DescribeUserScramCredentialsResult::default()
                            .with_user(sb(&name))
                            .with_error_code(e.code())
                            .with_error_message(Some(sb(m)))
                    };
                    if count > 1 {
                        return failed(
                            ResponseError::DuplicateResource,
                            "the user is named more than once",
                        );
                    }
                    match dir.user(&name).filter(|u| !u.scram.is_empty()) {
                        Some(u) => result(&u),
                        None => failed(
                            ResponseError::ResourceNotFound,
                            "attempt to describe a user credential that does not exist",
                        ),
                    }
                })
                .collect()
        }
    };
    DescribeUserScramCredentialsResponse::default().with_results(results)
}

/// AlterUserScramCredentials: deletions and upsertions, each user's changes applied in
/// request order.
pub fn alter(ctx: Ctx, req: AlterUserScramCredentialsRequest) -> Reply {
    Box::pin(async move {
        // A user named more than once (in either list) fails as a whole, as in Kafka.
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for n in req
            .deletions
            .iter()
            .map(|d| &d.name)
            .chain(req.upsertions.iter().map(|u| &u.name))
        {
            *count.entry(n.to_string()).or_insert(0) += 1;
        }
        let mut outcome: BTreeMap<String, Result<(), (ResponseError, String)>> = BTreeMap::new();
        for (name, n) in &count {
            if *n > 1 {
                outcome.insert(
                    name.clone(),
                    Err((
                        ResponseError::DuplicateResource,
                        "a user may be altered once per request".into(),
                    )),
                );
            }
        }
        let dir = ctx.broker.directory.clone();
        for d in &req.deletions {
            let name = d.name.to_string();
            if outcome.contains_key(&name) {
                continue;
            }
            let r = match hash_of(d.mechanism) {
                None => Err((
                    ResponseError::UnsupportedSaslMechanism,
                    format!("unknown SCRAM mechanism {}", d.mechanism),
                )),
                Some(h) => dir
                    .set_scram(&name, h, None)
                    .await
                    .map_err(|e| iam_error(e, true)),
            };
            outcome.insert(name, r);
        }
        for u in &req.upsertions {
            let name = u.name.to_string();
            if outcome.contains_key(&name) {
                continue;
            }
            let r = match hash_of(u.mechanism) {
                None => Err((
                    ResponseError::UnsupportedSaslMechanism,
                    format!("unknown SCRAM mechanism {}", u.mechanism),
                )),
                Some(_)
                    if !(iam::scram::MIN_ITERATIONS as i32..=MAX_ITERATIONS)
                        .contains(&u.iterations) =>
                {
                    Err((
                        ResponseError::UnacceptableCredential,
                        format!(
                            "iterations must be {} to {MAX_ITERATIONS}",
                            iam::scram::MIN_ITERATIONS
                        ),
                    ))
                }
                Some(_) if u.salt.is_empty() || u.salted_password.is_empty() || name.is_empty() => {
                    Err((
                        ResponseError::UnacceptableCredential,
                        "user name, salt and salted password must not be empty".into(),
                    ))
                }
                Some(h) => {
                    let c = Credential::from_salted(
                        h,
                        &u.salted_password,
                        u.salt.to_vec(),
                        u.iterations as u32,
                    );
                    dir.set_scram(&name, h, Some(c))
                        .await
                        .map_err(|e| iam_error(e, false))
                }
            };
            outcome.insert(name, r);
        }
        let results = outcome
            .into_iter()
            .map(|(user, r)| {
                let result = AlterUserScramCredentialsResult::default().with_user(sb(&user));
                match r {
                    Ok(()) => result,
                    Err((e, message)) => result
                        .with_error_code(e.code())
                        .with_error_message(Some(sb(&message))),
                }
            })
            .collect();
        Some(ResponseKind::AlterUserScramCredentials(
            AlterUserScramCredentialsResponse::default().with_results(results),
        ))
    })
}

/// A refused change as Kafka's error: a missing credential (`deleting`) or user is
/// RESOURCE_NOT_FOUND, a config file's user or a bad name UNACCEPTABLE_CREDENTIAL, a
/// catalog failure the storage error.
fn iam_error(e: iam::IamError, deleting: bool) -> (ResponseError, String) {
    let message = e.to_string();
    let code = match e {
        iam::IamError::NoSuchUser(_) | iam::IamError::NoSuchPolicy(_) => {
            if deleting {
                return (
                    ResponseError::ResourceNotFound,
                    "attempt to delete a user credential that does not exist".into(),
                );
            }
            ResponseError::ResourceNotFound
        }
        iam::IamError::FromConfig(_)
        | iam::IamError::Invalid(_)
        | iam::IamError::MalformedPolicy(_) => ResponseError::UnacceptableCredential,
        iam::IamError::Catalog(c) => crate::error::from_catalog(&c),
    };
    (code, message)
}

/// AlterUserScramCredentials changes who may connect: only the administrator, or a
/// principal a statement allows KafkaAlter on the cluster.
pub(crate) fn authorize_alter_user_scram_credentials(
    ctx: &Ctx,
    r: AlterUserScramCredentialsRequest,
) -> Authorized<AlterUserScramCredentialsRequest> {
    if !ctx.may_manage_principals() {
        let mut users: Vec<String> = r
            .deletions
            .iter()
            .map(|d| d.name.to_string())
            .chain(r.upsertions.iter().map(|u| u.name.to_string()))
            .collect();
        users.sort();
        users.dedup();
        let results = users
                .iter()
                .map(|u| {
                    alter_user_scram_credentials_response::AlterUserScramCredentialsResult::default()
                        .with_user(sb(u))
                        .with_error_code(CLUSTER_DENIED)
                        .with_error_message(Some(sb(
                            "only the administrator, or a principal a policy allows KafkaAlter on the cluster, changes credentials",
                        )))
                })
                .collect();
        return refuse_whole(ResponseKind::AlterUserScramCredentials(
            AlterUserScramCredentialsResponse::default().with_results(results),
        ));
    }
    Ok(r)
}

authorize_whole! {
    /// DescribeUserScramCredentials needs KafkaDescribe on the cluster.
    fn authorize_describe_user_scram_credentials(ctx, r: DescribeUserScramCredentialsRequest)
        if ctx.may_cluster(DESCRIBE);
    else ResponseKind::DescribeUserScramCredentials(DescribeUserScramCredentialsResponse::default()
        .with_error_code(CLUSTER_DENIED))
}
