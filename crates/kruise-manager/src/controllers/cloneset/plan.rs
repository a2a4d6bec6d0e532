//! Pure CloneSet decisions: how many pods to create, delete and update in one reconcile, and
//! which ones. No I/O; everything is derived from the CloneSet spec and per-pod facts.
//!
//! The central function is [`calculate_diffs`], which reproduces OpenKruise's
//! `calculateDiffsWithExpectation`: from `replicas`, `partition`, `maxSurge`, `maxUnavailable`,
//! `scaleStrategy.maxUnavailable` and the pods' revision / availability / deletion state it
//! derives the scale-up, scale-down and update numbers. Scaling and updating are never done in
//! the same reconcile; the caller does scale first and update only when scaling had nothing to do.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_engines::intstr;

/// A spec value that cannot be resolved (e.g. `partition: "abc"`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// An IntOrString string that is not a percentage such as `"20%"`.
    #[error("{field}: invalid value {value:?}: a string must be a percentage such as \"20%\"")]
    NotAPercentage {
        /// The spec field, e.g. `spec.updateStrategy.partition`.
        field: &'static str,
        /// The offending value.
        value: String,
    },
}

/// Resolves an IntOrString against `total`: an integer is taken as is; `"N%"` is `N% of total`,
/// rounded up when `round_up` (else down). Mirrors apimachinery's `GetScaledValueFromIntOrPercent`.
pub fn scaled_value(
    field: &'static str,
    value: &IntOrString,
    total: i32,
    round_up: bool,
) -> Result<i32, PlanError> {
    intstr::scaled_value(value, i64::from(total), round_up)
        .map(|v| v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32)
        .map_err(|_| PlanError::NotAPercentage {
            field,
            value: intstr::text(value),
        })
}

/// The number of pods that stay on the current revision for `partition`
/// ([`intstr::partition_replicas`], OpenKruise's `CalculatePartitionReplicas`), with the
/// CloneSet's error naming the field.
pub fn partition_replicas(
    partition: Option<&IntOrString>,
    replicas: i32,
) -> Result<i32, PlanError> {
    intstr::partition_replicas(partition, replicas).map_err(|_| PlanError::NotAPercentage {
        field: "spec.updateStrategy.partition",
        value: partition.map(intstr::text).unwrap_or_default(),
    })
}

/// The resolved numeric knobs of one CloneSet for one reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Knobs {
    /// `spec.replicas`.
    pub replicas: i32,
    /// Pods to keep on the current revision ([`partition_replicas`]).
    pub partition: i32,
    /// `maxSurge` resolved (rounded up); forced to 0 while paused.
    pub max_surge: i32,
    /// `updateStrategy.maxUnavailable` resolved (default `20%`; rounded up, or down when
    /// `max_surge > 0`).
    pub max_unavailable: i32,
    /// `scaleStrategy.maxUnavailable` resolved (rounded up; unlimited when unset).
    pub scale_max_unavailable: i32,
    /// Pods in `PreparingDelete` do not count towards the total when scaling (label
    /// `apps.kruise.io/cloneset-scaling-exclude-preparing-delete=true` or the manager flag).
    pub exclude_preparing_delete: bool,
    /// Pods may be moved back to the current revision (gate `CloneSetPartitionRollback`, and
    /// only while current and update revisions differ).
    pub allow_rollback: bool,
}

/// Inputs of [`resolve_knobs`], taken from the CloneSet spec.
#[derive(Debug, Clone, Default)]
pub struct KnobInputs<'a> {
    /// `spec.replicas` (defaulted to 1 by the caller when absent).
    pub replicas: i32,
    /// `updateStrategy.partition`.
    pub partition: Option<&'a IntOrString>,
    /// `updateStrategy.maxSurge`.
    pub max_surge: Option<&'a IntOrString>,
    /// `updateStrategy.maxUnavailable`.
    pub max_unavailable: Option<&'a IntOrString>,
    /// `scaleStrategy.maxUnavailable`.
    pub scale_max_unavailable: Option<&'a IntOrString>,
    /// `updateStrategy.paused`.
    pub paused: bool,
    /// See [`Knobs::exclude_preparing_delete`].
    pub exclude_preparing_delete: bool,
    /// See [`Knobs::allow_rollback`].
    pub allow_rollback: bool,
}

/// Resolves the IntOrString knobs exactly as OpenKruise does.
pub fn resolve_knobs(inp: &KnobInputs<'_>) -> Result<Knobs, PlanError> {
    let replicas = inp.replicas;
    let partition = partition_replicas(inp.partition, replicas)?;
    let mut max_surge = match inp.max_surge {
        Some(v) => scaled_value("spec.updateStrategy.maxSurge", v, replicas, true)?,
        None => 0,
    };
    if inp.paused {
        max_surge = 0;
    }
    let default_unavailable = IntOrString::String("20%".into());
    let max_unavailable = scaled_value(
        "spec.updateStrategy.maxUnavailable",
        inp.max_unavailable.unwrap_or(&default_unavailable),
        replicas,
        max_surge == 0,
    )?;
    let scale_max_unavailable = match inp.scale_max_unavailable {
        Some(v) => scaled_value("spec.scaleStrategy.maxUnavailable", v, replicas, true)?,
        None => i32::MAX,
    };
    Ok(Knobs {
        replicas,
        partition,
        max_surge,
        max_unavailable,
        scale_max_unavailable,
        exclude_preparing_delete: inp.exclude_preparing_delete,
        allow_rollback: inp.allow_rollback,
    })
}

/// What the planner needs to know about one owned, active pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PodFacts {
    /// The pod is at the update revision.
    pub updated: bool,
    /// Lifecycle state is `PreparingDelete`.
    pub preparing_delete: bool,
    /// Marked for deletion (`apps.kruise.io/specified-delete` label or `podsToDelete`).
    pub specified_delete: bool,
    /// Available: lifecycle `""`/`Normal`, Running and Ready for `minReadySeconds`, and
    /// `InPlaceUpdateReady` absent or True.
    pub available: bool,
}

/// The result of [`calculate_diffs`] (OpenKruise's `expectationDiffs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Diffs {
    /// Pods to create (before `scale_up_limit`).
    pub scale_up_num: i32,
    /// Of the pods to create, how many should be at the current revision (may exceed
    /// `scale_up_num`; the caller creates at most `scale_up_num`).
    pub scale_up_num_old_revision: i32,
    /// Pods to delete, not counting pods already marked for deletion.
    pub scale_down_num: i32,
    /// Of those, old-revision pods to delete first.
    pub scale_down_num_old_revision: i32,
    /// Most pods that may be created now (`scaleStrategy.maxUnavailable`).
    pub scale_up_limit: i32,
    /// Most ready pods that may be deleted now (`maxUnavailable`).
    pub delete_ready_limit: i32,
    /// Pods temporarily above `replicas` (surge in use).
    pub use_surge: i32,
    /// Part of `use_surge` at the current revision.
    pub use_surge_old_revision: i32,
    /// Pods to update: positive → towards the update revision, negative → back to the
    /// current revision (rollback), 0 → nothing.
    pub update_num: i32,
    /// Most pods that may be unavailable while updating.
    pub update_max_unavailable: i32,
}

/// OpenKruise's `calculateDiffsWithExpectation` over pod facts. `pods` are the owned active
/// pods; `revisions_equal` tells whether current and update revisions are the same.
pub fn calculate_diffs(k: &Knobs, pods: &[PodFacts], revisions_equal: bool) -> Diffs {
    let replicas = k.replicas;
    let (mut new_count, mut new_active, mut old_count, mut old_active) = (0, 0, 0, 0);
    let (mut unavailable_new, mut unavailable_old) = (0, 0);
    let (mut to_delete_new, mut to_delete_old) = (0, 0);
    let (mut pre_deleting_new, mut pre_deleting_old) = (0, 0);
    for p in pods {
        let (count, active, unavailable, to_delete, pre_deleting) = if p.updated {
            (
                &mut new_count,
                &mut new_active,
                &mut unavailable_new,
                &mut to_delete_new,
                &mut pre_deleting_new,
            )
        } else {
            (
                &mut old_count,
                &mut old_active,
                &mut unavailable_old,
                &mut to_delete_old,
                &mut pre_deleting_old,
            )
        };
        *count += 1;
        if p.preparing_delete {
            *pre_deleting += 1;
        } else {
            *active += 1;
            if p.specified_delete {
                *to_delete += 1;
            } else if !p.available {
                *unavailable += 1;
            }
        }
    }

    let mut update_old_diff = old_active - k.partition;
    let mut update_new_diff = new_active - (replicas - k.partition);
    let total_unavailable = pre_deleting_new + pre_deleting_old + unavailable_new + unavailable_old;
    if revisions_equal || !k.allow_rollback {
        update_old_diff = update_old_diff.max(0);
        update_new_diff = update_new_diff.min(0);
    }

    let mut res = Diffs::default();
    if k.max_surge > 0 {
        // Surge to keep availability while specified-delete pods are replaced.
        let (mut scale_surge, mut scale_old_surge) = (0, 0);
        let to_delete = to_delete_new + to_delete_old;
        if to_delete > 0 {
            scale_surge = ((total_unavailable + to_delete) - k.max_unavailable)
                .max(0)
                .min(to_delete);
            if scale_surge > to_delete_new {
                scale_old_surge = scale_surge - to_delete_new;
            }
        }
        // Surge for the rolling update itself.
        let (mut update_surge, mut update_old_surge) = (0, 0);
        if (update_old_diff > 0 && update_new_diff < 0)
            || (update_old_diff < 0 && update_new_diff > 0)
        {
            if update_old_diff.abs() <= update_new_diff.abs() {
                update_surge = update_old_diff.abs();
                if update_old_diff < 0 {
                    update_old_surge = update_surge;
                }
            } else {
                update_surge = update_new_diff.abs();
                if update_new_diff > 0 {
                    update_old_surge = update_surge;
                }
            }
        }
        if scale_surge >= update_surge {
            res.use_surge = k.max_surge.min(scale_surge);
            res.use_surge_old_revision = res.use_surge.min(scale_old_surge);
        } else {
            res.use_surge = k.max_surge.min(update_surge);
            res.use_surge_old_revision = res.use_surge.min(update_old_surge);
        }
    }

    let total = pods.len() as i32;
    let (mut current_total, mut current_total_old) = (total, old_count);
    if k.exclude_preparing_delete {
        current_total -= pre_deleting_old + pre_deleting_new;
        current_total_old -= pre_deleting_old;
    }
    let expected_total = replicas + res.use_surge;
    let expected_total_old = k.partition + res.use_surge_old_revision;

    let up = expected_total - current_total;
    if up > 0 {
        res.scale_up_num = up;
        res.scale_up_num_old_revision = (expected_total_old - current_total_old).max(0);
        res.scale_up_limit =
            up.min((k.scale_max_unavailable.saturating_sub(total_unavailable)).max(0));
    }
    let down = current_total - to_delete_old - to_delete_new - expected_total;
    if down > 0 {
        res.scale_down_num = down;
        res.scale_down_num_old_revision =
            (current_total_old - to_delete_old - expected_total_old).max(0);
    }
    if to_delete_new > 0 || to_delete_old > 0 || res.scale_down_num > 0 {
        res.delete_ready_limit =
            (k.max_unavailable + (total - replicas) - total_unavailable).max(0);
    }
    res.update_num = if update_old_diff.abs() <= update_new_diff.abs() {
        update_old_diff
    } else {
        -update_new_diff
    };
    if res.update_num != 0 {
        res.update_max_unavailable = k.max_unavailable + total - replicas;
    }
    res
}

/// Facts about one pod for [`limit_update_indexes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UpdateFacts {
    /// Available (see [`PodFacts::available`]).
    pub available: bool,
    /// At the revision the update moves pods to.
    pub at_target: bool,
}

/// Trims the ordered candidate list `wait` (indexes into `pods`) to what may be updated now:
/// at most `|update_num|` pods, without the number of unavailable pods (overall, and at the
/// target revision) exceeding `update_max_unavailable`. Updating a pod that is already
/// unavailable does not add to the count. OpenKruise's `limitUpdateIndexes`.
pub fn limit_update_indexes(
    diffs: &Diffs,
    mut wait: Vec<usize>,
    pods: &[UpdateFacts],
) -> Vec<usize> {
    let want = diffs.update_num.unsigned_abs() as usize;
    wait.truncate(want);
    let mut unavailable = pods.iter().filter(|p| !p.available).count() as i32;
    let target_unavailable = pods.iter().filter(|p| !p.available && p.at_target).count() as i32;
    let mut can = 0i32;
    for &i in &wait {
        if target_unavailable + can >= diffs.update_max_unavailable {
            break;
        }
        if pods[i].available {
            if unavailable >= diffs.update_max_unavailable {
                break;
            }
            unavailable += 1;
        }
        can += 1;
    }
    wait.truncate(can as usize);
    wait
}

/// Splits a scale-in of `total` pods between old-revision pods (up to `old_first`, taken first)
/// and updated pods. Returns `(from_old, from_updated)`; callers pick the pods within each
/// group by the deletion order. OpenKruise's `choosePodsToDelete` split.
pub fn split_scale_down(
    total: i32,
    old_first: i32,
    old_available: usize,
    new_available: usize,
) -> (usize, usize) {
    let total = total.max(0) as usize;
    let old_first = old_first.max(0) as usize;
    if old_first >= total {
        (total.min(old_available), 0)
    } else if old_first > 0 {
        let from_old = old_first.min(old_available);
        (from_old, (total - old_first).min(new_available))
    } else {
        (0, total.min(new_available))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(i: i32) -> IntOrString {
        IntOrString::Int(i)
    }
    fn pct(s: &str) -> IntOrString {
        IntOrString::String(s.into())
    }

    #[test]
    fn scaled_values_round_as_apimachinery() {
        assert_eq!(scaled_value("f", &pct("20%"), 5, true), Ok(1));
        assert_eq!(scaled_value("f", &pct("20%"), 6, true), Ok(2));
        assert_eq!(scaled_value("f", &pct("20%"), 6, false), Ok(1));
        assert_eq!(scaled_value("f", &pct("0%"), 6, true), Ok(0));
        assert_eq!(scaled_value("f", &int(7), 6, true), Ok(7));
        assert!(matches!(
            scaled_value("spec.x", &pct("5"), 6, true),
            Err(PlanError::NotAPercentage {
                field: "spec.x",
                ..
            })
        ));
        assert!(scaled_value("f", &pct("abc%"), 6, true).is_err());
    }

    #[test]
    fn partition_follows_openkruise_rounding_rules() {
        assert_eq!(partition_replicas(None, 5), Ok(0));
        assert_eq!(partition_replicas(Some(&pct("60%")), 5), Ok(3));
        assert_eq!(partition_replicas(Some(&pct("50%")), 5), Ok(3)); // rounds up
        assert_eq!(partition_replicas(Some(&pct("99%")), 5), Ok(4)); // < 100% → one updates
        assert_eq!(partition_replicas(Some(&pct("100%")), 5), Ok(5));
        assert_eq!(partition_replicas(Some(&pct("99%")), 1), Ok(1));
        assert_eq!(partition_replicas(Some(&int(9)), 5), Ok(5)); // clamped
        assert_eq!(partition_replicas(Some(&int(-2)), 5), Ok(0));
        assert_eq!(partition_replicas(Some(&pct("150%")), 4), Ok(4)); // clamped, as in Go
        assert_eq!(partition_replicas(Some(&pct("12.5%")), 10), Ok(2)); // float percentages
        assert!(partition_replicas(Some(&pct("x%")), 10).is_err());
    }

    #[test]
    fn knobs_default_max_unavailable_and_paused_disables_surge() {
        let k = resolve_knobs(&KnobInputs {
            replicas: 10,
            max_surge: Some(&pct("25%")),
            ..Default::default()
        })
        .unwrap();
        assert_eq!((k.max_surge, k.max_unavailable), (3, 2)); // 20% of 10, rounded down with surge
        assert_eq!(k.scale_max_unavailable, i32::MAX);
        let k = resolve_knobs(&KnobInputs {
            replicas: 7,
            max_surge: Some(&int(2)),
            paused: true,
            ..Default::default()
        })
        .unwrap();
        assert_eq!((k.max_surge, k.max_unavailable), (0, 2)); // 20% of 7 rounded up
    }

    fn pods(n_old: usize, n_new: usize) -> Vec<PodFacts> {
        let mut v = vec![
            PodFacts {
                available: true,
                ..Default::default()
            };
            n_old
        ];
        v.extend(vec![
            PodFacts {
                updated: true,
                available: true,
                ..Default::default()
            };
            n_new
        ]);
        v
    }

    fn knobs(replicas: i32) -> Knobs {
        Knobs {
            replicas,
            max_unavailable: 1,
            scale_max_unavailable: i32::MAX,
            ..Default::default()
        }
    }

    #[test]
    fn scale_up_from_zero() {
        let d = calculate_diffs(&knobs(5), &[], true);
        assert_eq!(d.scale_up_num, 5);
        assert_eq!(d.scale_up_limit, 5);
        assert_eq!(d.scale_up_num_old_revision, 0);
        assert_eq!(d.update_num, 0);
    }

    #[test]
    fn scale_up_limited_by_scale_max_unavailable() {
        let mut k = knobs(5);
        k.scale_max_unavailable = 2;
        let mut p = pods(0, 2);
        p[0].available = false;
        let d = calculate_diffs(&k, &p, true);
        assert_eq!(d.scale_up_num, 3);
        assert_eq!(d.scale_up_limit, 1);
    }

    #[test]
    fn scale_down_excludes_specified_delete_and_prefers_old() {
        let mut p = pods(3, 2);
        p[4].specified_delete = true;
        let mut k = knobs(2);
        k.partition = 1;
        let d = calculate_diffs(&k, &p, false);
        assert_eq!(d.scale_down_num, 2); // 5 - 1 marked - 2
        assert_eq!(d.scale_down_num_old_revision, 2); // 3 old - 0 - 1 kept
        assert_eq!(d.delete_ready_limit, 1 + 3); // maxUnavailable + surplus
    }

    #[test]
    fn rolling_update_respects_partition() {
        let mut k = knobs(5);
        k.partition = 3;
        let d = calculate_diffs(&k, &pods(5, 0), false);
        assert_eq!(d.update_num, 2);
        assert_eq!(d.update_max_unavailable, 1);
        // Already at the partition: nothing to do.
        let d = calculate_diffs(&k, &pods(3, 2), false);
        assert_eq!(d, Diffs::default());
    }

    #[test]
    fn max_surge_creates_extra_old_or_new_pods() {
        let mut k = knobs(4);
        k.max_surge = 1;
        k.max_unavailable = 0;
        let d = calculate_diffs(&k, &pods(4, 0), false);
        assert_eq!(d.use_surge, 1);
        assert_eq!(d.use_surge_old_revision, 0);
        assert_eq!(d.scale_up_num, 1);
        assert_eq!(d.scale_up_num_old_revision, 0); // the surge pod is new
        // Once the surge pod exists: scale-down of an old pod, since 5 > 4 + ... update done?
        let d = calculate_diffs(&k, &pods(4, 1), false);
        assert_eq!(d.use_surge, 1);
        assert_eq!(d.update_num, 3);
        assert_eq!(d.scale_down_num, 0);
        // Converged: all new, surge no longer needed → scale down the extra pod.
        let d = calculate_diffs(&k, &pods(0, 5), false);
        assert_eq!(d.use_surge, 0);
        assert_eq!(d.scale_down_num, 1);
    }

    #[test]
    fn rollback_only_with_the_gate() {
        let mut k = knobs(4);
        k.partition = 3;
        // 3 updated pods but only 1 should be: without the gate nothing moves back.
        let d = calculate_diffs(&k, &pods(1, 3), false);
        assert_eq!(d.update_num, 0);
        k.allow_rollback = true;
        let d = calculate_diffs(&k, &pods(1, 3), false);
        assert_eq!(d.update_num, -2);
    }

    #[test]
    fn preparing_delete_pods_are_unavailable_and_optionally_excluded() {
        let mut p = pods(0, 3);
        p[0].preparing_delete = true;
        let d = calculate_diffs(&knobs(3), &p, true);
        assert_eq!(d.scale_up_num, 0);
        let mut k = knobs(3);
        k.exclude_preparing_delete = true;
        let d = calculate_diffs(&k, &p, true);
        assert_eq!(d.scale_up_num, 1);
    }

    #[test]
    fn update_limit_never_exceeds_max_unavailable() {
        let d = Diffs {
            update_num: 5,
            update_max_unavailable: 2,
            ..Default::default()
        };
        let facts = vec![
            UpdateFacts {
                available: true,
                at_target: false
            };
            5
        ];
        assert_eq!(
            limit_update_indexes(&d, vec![0, 1, 2, 3, 4], &facts),
            vec![0, 1]
        );
        // One pod already unavailable (old revision): updating it is free, then one more.
        let mut facts2 = facts.clone();
        facts2[3].available = false;
        assert_eq!(limit_update_indexes(&d, vec![3, 0, 1], &facts2), vec![3, 0]);
        // An unavailable pod at the target revision uses up budget.
        let mut facts3 = facts.clone();
        facts3.push(UpdateFacts {
            available: false,
            at_target: true,
        });
        assert_eq!(limit_update_indexes(&d, vec![0, 1, 2], &facts3), vec![0]);
    }

    #[test]
    fn scale_down_split() {
        assert_eq!(split_scale_down(3, 5, 4, 4), (3, 0));
        assert_eq!(split_scale_down(3, 1, 4, 4), (1, 2));
        assert_eq!(split_scale_down(3, 0, 4, 4), (0, 3));
        assert_eq!(split_scale_down(3, 0, 4, 1), (0, 1));
    }

    proptest::proptest! {
        /// Whatever the pod states, the plan never asks for both scaling directions at once,
        /// never creates beyond the limit, and never updates more than the gap to the target.
        #[test]
        fn diffs_are_consistent(
            replicas in 0i32..20,
            partition in 0i32..20,
            max_surge in 0i32..4,
            max_unavailable in 0i32..5,
            facts in proptest::collection::vec((proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY), 0..25),
        ) {
            let k = Knobs {
                replicas,
                partition: partition.min(replicas),
                max_surge,
                max_unavailable,
                scale_max_unavailable: i32::MAX,
                ..Default::default()
            };
            let pods: Vec<PodFacts> = facts.iter().map(|&(u, pd, sd, a)| PodFacts {
                updated: u, preparing_delete: pd, specified_delete: sd, available: a,
            }).collect();
            let d = calculate_diffs(&k, &pods, false);
            proptest::prop_assert!(!(d.scale_up_num > 0 && d.scale_down_num > 0));
            proptest::prop_assert!(d.scale_up_limit <= d.scale_up_num);
            proptest::prop_assert!(d.use_surge <= max_surge);
            proptest::prop_assert!(d.update_num >= 0, "no rollback without the gate");
            let old_active = pods.iter().filter(|p| !p.updated && !p.preparing_delete).count() as i32;
            proptest::prop_assert!(d.update_num <= old_active);
        }
    }
}
