//! Defaults of NodeImage (`apps.kruise.io/v1alpha1` and `v1beta1`), as set by OpenKruise
//! v1.9.0's mutating webhook on every admission:
//!
//! - every spec tag without `createdAt` gets the admission time (whole seconds, as stored),
//! - every spec tag gets a `pullPolicy` (created if absent) with `timeoutSeconds` 600 and
//!   `backoffLimit` 3 when unset (TTL and deadline are left alone),
//! - the tags of every spec image and of every status image are sorted by `tag` (a stable sort
//!   here; OpenKruise's sort does not promise an order between equal tags).
//!
//! [`set_defaults_nodeimage`] reads the clock; [`set_defaults_nodeimage_at`] takes the time.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;
use crate::defaults::imagepulljob::{DEFAULT_PULL_BACKOFF_LIMIT, DEFAULT_PULL_TIMEOUT_SECONDS};

use crate::time::now;

/// Applies the admission defaults to a v1alpha1 NodeImage, stamping `createdAt` with the
/// current time.
pub fn set_defaults_nodeimage(obj: &mut a1::NodeImage) {
    set_defaults_nodeimage_at(obj, &now());
}

/// Applies the admission defaults to a v1alpha1 NodeImage, stamping `createdAt` with `now`.
pub fn set_defaults_nodeimage_at(obj: &mut a1::NodeImage, now: &Time) {
    for image in obj.spec.images.iter_mut().flat_map(|m| m.values_mut()) {
        for tag in &mut image.tags {
            tag.created_at.get_or_insert_with(|| now.clone());
            let p = tag.pull_policy.get_or_insert_with(Default::default);
            p.timeout_seconds
                .get_or_insert(DEFAULT_PULL_TIMEOUT_SECONDS);
            p.backoff_limit.get_or_insert(DEFAULT_PULL_BACKOFF_LIMIT);
        }
        image.tags.sort_by(|x, y| x.tag.cmp(&y.tag));
    }
    let statuses = obj
        .status
        .iter_mut()
        .flat_map(|s| s.image_statuses.iter_mut());
    for status in statuses.flat_map(|m| m.values_mut()) {
        status.tags.sort_by(|x, y| x.tag.cmp(&y.tag));
    }
}

/// Applies the admission defaults to a v1beta1 NodeImage, stamping `createdAt` with the
/// current time.
pub fn set_defaults_nodeimage_v1beta1(obj: &mut b1::NodeImage) {
    set_defaults_nodeimage_v1beta1_at(obj, &now());
}

/// Applies the admission defaults to a v1beta1 NodeImage, stamping `createdAt` with `now`.
pub fn set_defaults_nodeimage_v1beta1_at(obj: &mut b1::NodeImage, now: &Time) {
    for image in obj.spec.images.iter_mut().flat_map(|m| m.values_mut()) {
        for tag in &mut image.tags {
            tag.created_at.get_or_insert_with(|| now.clone());
            let p = tag.pull_policy.get_or_insert_with(Default::default);
            p.timeout_seconds
                .get_or_insert(DEFAULT_PULL_TIMEOUT_SECONDS);
            p.backoff_limit.get_or_insert(DEFAULT_PULL_BACKOFF_LIMIT);
        }
        image.tags.sort_by(|x, y| x.tag.cmp(&y.tag));
    }
    let statuses = obj
        .status
        .iter_mut()
        .flat_map(|s| s.image_statuses.iter_mut());
    for status in statuses.flat_map(|m| m.values_mut()) {
        status.tags.sort_by(|x, y| x.tag.cmp(&y.tag));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn t(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    fn object(
        version: &str,
        spec: serde_json::Value,
        status: serde_json::Value,
    ) -> serde_json::Value {
        json!({"apiVersion": format!("apps.kruise.io/{version}"), "kind": "NodeImage",
               "metadata": {"name": "node-1"}, "spec": spec, "status": status})
    }

    #[test]
    fn nodeimage_empty_object_gets_no_defaults() {
        let mut a = a1::NodeImage::new("node-1", Default::default());
        let before = a.clone();
        set_defaults_nodeimage(&mut a);
        assert_eq!(a, before);
        let mut b = b1::NodeImage::new("node-1", Default::default());
        let before = b.clone();
        set_defaults_nodeimage_v1beta1(&mut b);
        assert_eq!(b, before);
    }

    #[test]
    fn nodeimage_bare_tags_get_openkruise_defaults_and_are_sorted() {
        let spec = json!({"images": {"nginx": {"tags": [{"tag": "b"}, {"tag": "a"}]}}});
        let status = json!({"desired": 2, "imageStatuses": {"nginx": {"tags": [
            {"tag": "z", "phase": "Pulling"}, {"tag": "y", "phase": "Waiting"}]}}});
        let now = t("2026-03-04T05:06:07Z");
        let tag = |name: &str| {
            json!({"tag": name, "createdAt": "2026-03-04T05:06:07Z",
                                      "pullPolicy": {"timeoutSeconds": 600, "backoffLimit": 3}})
        };
        let expected_spec = json!({"images": {"nginx": {"tags": [tag("a"), tag("b")]}}});
        let expected_status = json!({"desired": 2, "succeeded": 0, "failed": 0, "pulling": 0,
            "waiting": 0, "imageStatuses": {"nginx": {"tags": [
            {"tag": "y", "phase": "Waiting"}, {"tag": "z", "phase": "Pulling"}]}}});

        let mut a: a1::NodeImage =
            serde_json::from_value(object("v1alpha1", spec.clone(), status.clone())).unwrap();
        set_defaults_nodeimage_at(&mut a, &now);
        assert_eq!(serde_json::to_value(&a.spec).unwrap(), expected_spec);
        assert_eq!(serde_json::to_value(&a.status).unwrap(), expected_status);

        let mut b: b1::NodeImage = serde_json::from_value(object("v1beta1", spec, status)).unwrap();
        set_defaults_nodeimage_v1beta1_at(&mut b, &now);
        assert_eq!(serde_json::to_value(&b.spec).unwrap(), expected_spec);
        assert_eq!(serde_json::to_value(&b.status).unwrap(), expected_status);
    }

    #[test]
    fn nodeimage_explicit_values_kept_and_idempotent() {
        let spec = json!({"images": {"nginx": {"tags": [
            {"tag": "a", "createdAt": "2020-01-01T00:00:00Z",
             "pullPolicy": {"timeoutSeconds": 5, "backoffLimit": 0, "ttlSecondsAfterFinished": 9}}]}}});
        let mut a: a1::NodeImage =
            serde_json::from_value(object("v1alpha1", spec.clone(), json!({"desired": 1})))
                .unwrap();
        set_defaults_nodeimage(&mut a);
        assert_eq!(serde_json::to_value(&a.spec).unwrap(), spec);
        let mut b: b1::NodeImage =
            serde_json::from_value(object("v1beta1", spec.clone(), json!({"desired": 1}))).unwrap();
        set_defaults_nodeimage_v1beta1(&mut b);
        assert_eq!(serde_json::to_value(&b.spec).unwrap(), spec);

        let bare = json!({"images": {"x": {"tags": [{"tag": "2"}, {"tag": "1"}]}}});
        let mut once: a1::NodeImage =
            serde_json::from_value(object("v1alpha1", bare.clone(), json!({"desired": 0})))
                .unwrap();
        set_defaults_nodeimage(&mut once);
        let mut twice = once.clone();
        set_defaults_nodeimage(&mut twice);
        assert_eq!(once, twice);
        let mut once: b1::NodeImage =
            serde_json::from_value(object("v1beta1", bare, json!({"desired": 0}))).unwrap();
        set_defaults_nodeimage_v1beta1(&mut once);
        let mut twice = once.clone();
        set_defaults_nodeimage_v1beta1(&mut twice);
        assert_eq!(once, twice);
    }

    #[test]
    fn nodeimage_now_has_whole_seconds() {
        assert_eq!(now().0.subsec_nanosecond(), 0);
    }
}
