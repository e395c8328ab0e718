//! The server-side assignors of the consumer group protocol (KIP-848), chosen by a
//! member's `group.remote.assignor`: `uniform` (Kafka's default) spreads every
//! subscribed partition evenly and keeps partitions where they are when it can; `range`
//! gives each member a contiguous range of every topic it subscribes to, so members
//! line up on co-partitioned topics.

use std::collections::{BTreeMap, BTreeSet};

/// Partitions by topic id.
pub type Partitions = BTreeMap<u128, BTreeSet<u32>>;

/// An assignor a member can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignor {
    /// Kafka's `uniform`.
    Uniform,
    /// Kafka's `range`.
    Range,
}

impl Assignor {
    /// The assignors served, the default first (as Kafka's `group.consumer.assignors`).
    pub const ALL: [Assignor; 2] = [Assignor::Uniform, Assignor::Range];

    /// The assignor of a name; `None` for one not served.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Uniform => "uniform",
            Assignor::Range => "range",
        }
    }
}

/// What an assignor knows of a member.
#[derive(Debug, Clone)]
pub struct MemberSpec {
    /// Member id.
    pub id: String,
    /// `group.instance.id`: range orders static members by it, so a restarted member
    /// gets its old ranges back.
    pub instance_id: Option<String>,
    /// Subscribed topics (ids) that exist.
    pub topics: BTreeSet<u128>,
}

/// Assigns `partitions` (partition count by topic id) to `members`, starting from
/// `previous` (the last target assignment) where the assignor keeps stickiness.
pub fn assign(
    assignor: Assignor,
    members: &[MemberSpec],
    partitions: &BTreeMap<u128, u32>,
    previous: &BTreeMap<String, Partitions>,
) -> BTreeMap<String, Partitions> {
    let mut out: BTreeMap<String, Partitions> = members
        .iter()
        .map(|m| (m.id.clone(), Partitions::new()))
        .collect();
    match assignor {
        Assignor::Uniform => uniform(members, partitions, previous, &mut out),
        Assignor::Range => range(members, partitions, &mut out),
    }
    out
}

fn count(p: &Partitions) -> usize {
    p.values().map(BTreeSet::len).sum()
}

/// Sticky and balanced: each member keeps what it had while that stays within its
/// share, the rest goes to the least loaded member that subscribes, and then partitions
/// move from the most to the least loaded member that can take them until no two
/// members that could trade differ by more than one.
fn uniform(
    members: &[MemberSpec],
    partitions: &BTreeMap<u128, u32>,
    previous: &BTreeMap<String, Partitions>,
    out: &mut BTreeMap<String, Partitions>,
) {
    let eligible = |topic: u128| members.iter().filter(move |m| m.topics.contains(&topic));
    let total: usize = partitions
        .iter()
        .filter(|(t, _)| eligible(**t).next().is_some())
        .map(|(_, n)| *n as usize)
        .sum();
    if members.is_empty() || total == 0 {
        return;
    }
    // Nobody keeps more than the even share rounded up; the rest is handed out below.
    let cap = total.div_ceil(members.len());
    let mut taken: BTreeSet<(u128, u32)> = BTreeSet::new();
    for m in members {
        let Some(prev) = previous.get(&m.id) else {
            continue;
        };
        let mine = out.entry(m.id.clone()).or_default();
        for (topic, ps) in prev {
            let Some(&n) = partitions.get(topic) else {
                continue;
            };
            if !m.topics.contains(topic) {
                continue;
            }
            for &p in ps {
                if p < n && count(mine) < cap && taken.insert((*topic, p)) {
                    mine.entry(*topic).or_default().insert(p);
                }
            }
        }
    }
    for (&topic, &n) in partitions {
        for p in 0..n {
            if taken.contains(&(topic, p)) {
                continue;
            }
            let Some(least) = eligible(topic).min_by_key(|m| (count(&out[&m.id]), m.id.clone()))
            else {
                continue;
            };
            out.entry(least.id.clone())
                .or_default()
                .entry(topic)
                .or_default()
                .insert(p);
            taken.insert((topic, p));
        }
    }
    // Each move lowers the spread between two members, so this ends; the bound is a
    // guard, not a tuning knob.
    for _ in 0..total {
        let mut moved = false;
        let mut order: Vec<&MemberSpec> = members.iter().collect();
        order.sort_by_key(|m| std::cmp::Reverse(count(&out[&m.id])));
        'find: for heavy in &order {
            let heavy_n = count(&out[&heavy.id]);
            for light in order.iter().rev() {
                if count(&out[&light.id]) + 1 >= heavy_n {
                    break;
                }
                let candidate = out[&heavy.id]
                    .iter()
                    .filter(|(t, _)| light.topics.contains(t))
                    .find_map(|(t, ps)| ps.iter().next_back().map(|p| (*t, *p)));
                if let Some((t, p)) = candidate {
                    let from = out.entry(heavy.id.clone()).or_default();
                    if let Some(set) = from.get_mut(&t) {
                        set.remove(&p);
                        if set.is_empty() {
                            from.remove(&t);
                        }
                    }
                    out.entry(light.id.clone())
                        .or_default()
                        .entry(t)
                        .or_default()
                        .insert(p);
                    moved = true;
                    break 'find;
                }
            }
        }
        if !moved {
            break;
        }
    }
}

/// Per topic, the subscribed members in order (instance id, else member id) each take
/// a contiguous range; the first `n % members` take one more.
fn range(
    members: &[MemberSpec],
    partitions: &BTreeMap<u128, u32>,
    out: &mut BTreeMap<String, Partitions>,
) {
    for (&topic, &n) in partitions {
        let mut subscribed: Vec<&MemberSpec> = members
            .iter()
            .filter(|m| m.topics.contains(&topic))
            .collect();
        if subscribed.is_empty() {
            continue;
        }
        subscribed.sort_by(|a, b| {
            let key = |m: &MemberSpec| m.instance_id.clone().unwrap_or_else(|| m.id.clone());
            key(a).cmp(&key(b))
        });
        let k = subscribed.len() as u32;
        let (each, extra) = (n / k, n % k);
        let mut next = 0;
        for (i, m) in subscribed.iter().enumerate() {
            let take = each + u32::from((i as u32) < extra);
            if take > 0 {
                out.entry(m.id.clone())
                    .or_default()
                    .insert(topic, (next..next + take).collect());
            }
            next += take;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, topics: &[u128]) -> MemberSpec {
        MemberSpec {
            id: id.into(),
            instance_id: None,
            topics: topics.iter().copied().collect(),
        }
    }

    fn owners(a: &BTreeMap<String, Partitions>) -> BTreeMap<(u128, u32), Vec<String>> {
        let mut out: BTreeMap<(u128, u32), Vec<String>> = BTreeMap::new();
        for (m, ps) in a {
            for (t, set) in ps {
                for p in set {
                    out.entry((*t, *p)).or_default().push(m.clone());
                }
            }
        }
        out
    }

    #[test]
    fn uniform_spreads_evenly_and_owns_every_partition_once() {
        let members: Vec<_> = (0..3).map(|i| member(&format!("m{i}"), &[1, 2])).collect();
        let parts = BTreeMap::from([(1, 4), (2, 3)]);
        let a = assign(Assignor::Uniform, &members, &parts, &BTreeMap::new());
        let counts: Vec<usize> = a.values().map(count).collect();
        assert!(counts.iter().all(|&c| c == 2 || c == 3), "{counts:?}");
        assert_eq!(counts.iter().sum::<usize>(), 7);
        assert!(owners(&a).values().all(|o| o.len() == 1));
        assert_eq!(owners(&a).len(), 7);
    }

    #[test]
    fn uniform_keeps_partitions_where_they_were() {
        let parts = BTreeMap::from([(1, 6)]);
        let two: Vec<_> = (0..2).map(|i| member(&format!("m{i}"), &[1])).collect();
        let first = assign(Assignor::Uniform, &two, &parts, &BTreeMap::new());
        let three: Vec<_> = (0..3).map(|i| member(&format!("m{i}"), &[1])).collect();
        let second = assign(Assignor::Uniform, &three, &parts, &first);
        for m in ["m0", "m1"] {
            let kept = second[m][&1].intersection(&first[m][&1]).count();
            assert_eq!(kept, 2, "{m} keeps two of its three");
        }
        assert_eq!(count(&second["m2"]), 2);
    }

    #[test]
    fn uniform_respects_subscriptions() {
        let members = vec![member("a", &[1]), member("b", &[1, 2])];
        let parts = BTreeMap::from([(1, 2), (2, 4)]);
        let a = assign(Assignor::Uniform, &members, &parts, &BTreeMap::new());
        assert!(!a["a"].contains_key(&2));
        assert_eq!(owners(&a).len(), 6);
        assert_eq!(count(&a["a"]), 2);
    }

    #[test]
    fn range_gives_contiguous_ranges_per_topic() {
        let members = vec![member("b", &[1, 2]), member("a", &[1, 2])];
        let parts = BTreeMap::from([(1, 5), (2, 2)]);
        let a = assign(Assignor::Range, &members, &parts, &BTreeMap::new());
        assert_eq!(a["a"][&1], BTreeSet::from([0, 1, 2]));
        assert_eq!(a["b"][&1], BTreeSet::from([3, 4]));
        assert_eq!(a["a"][&2], BTreeSet::from([0]));
        assert_eq!(a["b"][&2], BTreeSet::from([1]));
    }

    #[test]
    fn no_members_or_no_partitions_assign_nothing() {
        let a = assign(
            Assignor::Uniform,
            &[],
            &BTreeMap::from([(1, 3)]),
            &BTreeMap::new(),
        );
        assert!(a.is_empty());
        let a = assign(
            Assignor::Uniform,
            &[member("a", &[9])],
            &BTreeMap::from([(1, 3)]),
            &BTreeMap::new(),
        );
        assert_eq!(count(&a["a"]), 0);
    }
}
