"""kube-apiserver's validation for the built-in resource-template kinds: names, and every field the control
plane reads (replica counts, selectors, pod templates and their resource requests) or a member would refuse.

Sources: kubernetes ``pkg/apis/apps/validation`` (ValidateDeploymentSpec, ValidateReplicaSetSpec,
ValidateStatefulSetSpec, ValidateDaemonSetSpec, ValidatePodTemplateSpecForReplicaSet), ``pkg/apis/batch/
validation`` (validateJobSpec, ValidateCronJobSpec, the 52-character CronJob name), ``pkg/apis/core/
validation`` (ValidateServiceName, ValidateNamespaceName), ``pkg/apis/rbac/validation`` (ValidateRBACName).

Invariants:
- Only registered built-in kinds (``kinds.builtin_kinds``) get these rules; any other template (a CRD's kind)
  gets metadata checks only, because its schema lives in the member cluster.
- Rules read the raw manifest, report every problem at the offending field, and never raise: after they pass,
  ``federation.model.workload`` can read replicas and requests without a type check.
- ``null`` is an unset field, as Go's decoder treats it: ``replicas: null`` defaults to 1 like an omitted one.
- Values are checked as kube-apiserver sees them after defaulting: an absent Deployment ``strategy`` is
  RollingUpdate 25%/25%, an absent restartPolicy is Always (so a Job must say OnFailure or Never).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from federation.model.kinds import KindInfo
from federation.model.labels import (
    LabelSelector,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_path_segment_name,
    validate_label_selector,
)
from federation.model.meta import FieldError, forbidden, invalid, join_path, not_supported, required
from federation.model.rules_core import config_map, secret, service
from federation.model.rules_cron import cron_schedule
from federation.model.rules_fields import (
    bool_field,
    enum_field,
    int_field,
    int_or_percent,
    is_int,
    is_zero_int_or_percent,
    object_field,
    string_field,
    type_error,
)
from federation.model.rules_pod import RESTART_POLICIES, pod_spec, pod_template
from federation.model.shape import pydantic_errors

ManifestRule = Callable[[Mapping[str, Any]], list[FieldError]]
NameRule = Callable[[str], list[str]]

CRONJOB_NAME_MAX_LENGTH: Final = 52  # the CronJob controller appends "-<11 digits>" to name each Job
JOB_NAME_MAX_LENGTH: Final = 63  # the name becomes the pods' batch.kubernetes.io/job-name label value
_RBAC_KINDS: Final = ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
_JOB_RESTART: Final = ("OnFailure", "Never")
_ALWAYS: Final = ("Always",)


# ---------------------------------------------------------------------------------------------------------
# entry points


def name_rule(info: KindInfo) -> NameRule | None:
    """kube-apiserver's name rule for a built-in kind, or None when it is the usual DNS-1123 subdomain."""
    if info.group == "" and info.kind == "Service":
        return is_dns1035_label
    if info.group == "" and info.kind == "Namespace":
        return is_dns1123_label
    if info.group == "rbac.authorization.k8s.io" and info.kind in _RBAC_KINDS:
        return is_path_segment_name
    if info.group == "batch" and info.kind == "CronJob":
        return _limited(CRONJOB_NAME_MAX_LENGTH)
    if info.group == "batch" and info.kind == "Job":
        return _limited(JOB_NAME_MAX_LENGTH)
    return None


def _limited(limit: int) -> NameRule:
    def rule(name: str) -> list[str]:
        too_long = [f"must be no more than {limit} characters"] if len(name) > limit else []
        return too_long + is_dns1123_subdomain(name)

    return rule


def validate_builtin(manifest: Mapping[str, Any], info: KindInfo) -> list[FieldError]:
    """Every problem with a built-in kind's fields (not its metadata); [] for kinds without rules."""
    rule = _RULES.get((info.group, info.kind))
    return rule(manifest) if rule is not None else []


def _spec(manifest: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[FieldError]]:
    return object_field(manifest, "spec", "")


# ---------------------------------------------------------------------------------------------------------
# apps/v1


def deployment(manifest: Mapping[str, Any]) -> list[FieldError]:
    spec, errors = _spec(manifest)
    if errors:
        return errors
    for key in ("replicas", "minReadySeconds", "revisionHistoryLimit"):
        errors += int_field(spec, key, "spec")
    errors += _progress_deadline(spec)
    errors += _deployment_strategy(spec)
    return errors + _selected_template(spec, "deployment")


def replica_set(manifest: Mapping[str, Any]) -> list[FieldError]:
    spec, errors = _spec(manifest)
    if errors:
        return errors
    for key in ("replicas", "minReadySeconds"):
        errors += int_field(spec, key, "spec")
    return errors + _selected_template(spec, "replicaset")


def stateful_set(manifest: Mapping[str, Any]) -> list[FieldError]:
    spec, errors = _spec(manifest)
    if errors:
        return errors
    for key in ("replicas", "minReadySeconds", "revisionHistoryLimit"):
        errors += int_field(spec, key, "spec")
    errors += string_field(spec, "serviceName", "spec")[1]
    errors += enum_field(spec, "podManagementPolicy", "spec", ("OrderedReady", "Parallel"))[1]
    errors += _update_strategy(spec, ("RollingUpdate", "OnDelete"), partition=True)
    return errors + _selected_template(spec, "statefulset")


def daemon_set(manifest: Mapping[str, Any]) -> list[FieldError]:
    spec, errors = _spec(manifest)
    if errors:
        return errors
    if spec.get("replicas") is not None:
        errors.append(
            forbidden("spec.replicas", 'unknown field "spec.replicas": a DaemonSet runs one pod per node')
        )
    for key in ("minReadySeconds", "revisionHistoryLimit"):
        errors += int_field(spec, key, "spec")
    errors += _update_strategy(spec, ("RollingUpdate", "OnDelete"), partition=False)
    return errors + _selected_template(spec, "daemonset")


def _progress_deadline(spec: Mapping[str, Any]) -> list[FieldError]:
    errors = int_field(spec, "progressDeadlineSeconds", "spec", minimum=1)
    deadline, ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds") or 0
    if not errors and deadline is not None and is_int(ready) and deadline <= ready:
        errors.append(
            invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds")
        )
    return errors


def _deployment_strategy(spec: Mapping[str, Any]) -> list[FieldError]:
    strategy, errors = object_field(spec, "strategy", "spec")
    kind, kind_errors = enum_field(strategy, "type", "spec.strategy", ("Recreate", "RollingUpdate"))
    rolling, rolling_errors = object_field(strategy, "rollingUpdate", "spec.strategy")
    errors += kind_errors + rolling_errors
    if kind == "Recreate" and strategy.get("rollingUpdate") is not None:
        detail = "may not be specified when strategy `type` is 'Recreate'"
        return [*errors, forbidden("spec.strategy.rollingUpdate", detail)]
    return errors + _rolling_update(rolling, "spec.strategy.rollingUpdate")


def _update_strategy(spec: Mapping[str, Any], types: tuple[str, ...], *, partition: bool) -> list[FieldError]:
    """StatefulSet/DaemonSet ``updateStrategy``: the type, and rollingUpdate only for RollingUpdate."""
    strategy, errors = object_field(spec, "updateStrategy", "spec")
    kind, kind_errors = enum_field(strategy, "type", "spec.updateStrategy", types)
    rolling, rolling_errors = object_field(strategy, "rollingUpdate", "spec.updateStrategy")
    errors += kind_errors + rolling_errors
    here = "spec.updateStrategy.rollingUpdate"
    if kind == "OnDelete" and strategy.get("rollingUpdate") is not None:
        return [*errors, invalid(here, "object", "only allowed for updateStrategy 'RollingUpdate'")]
    if partition:
        return (
            errors + int_field(rolling, "partition", here) + int_or_percent(rolling, "maxUnavailable", here)
        )
    return errors + _rolling_update(rolling, here)


def _rolling_update(rolling: Mapping[str, Any], path: str) -> list[FieldError]:
    """maxUnavailable/maxSurge (each an int or a percentage, defaulting to 25%), not both zero; at most 100%
    unavailable."""
    errors = int_or_percent(rolling, "maxUnavailable", path, at_most_100=True)
    errors += int_or_percent(rolling, "maxSurge", path)
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    if not errors and is_zero_int_or_percent(unavailable) and is_zero_int_or_percent(surge):
        errors.append(
            invalid(join_path(path, "maxUnavailable"), unavailable, "may not be 0 when `maxSurge` is 0")
        )
    return errors


def _selected_template(spec: Mapping[str, Any], word: str) -> list[FieldError]:
    """apps/v1: a required, non-empty selector matching the pod template's labels; restartPolicy Always."""
    selector, errors = _selector(spec, "spec.selector", word, needed=True)
    labels, template_errors = pod_template(spec, "spec", _ALWAYS)
    return errors + template_errors + _matches(selector, labels, "spec.template.metadata.labels")


def _selector(
    raw_parent: Mapping[str, Any], path: str, word: str, *, needed: bool
) -> tuple[LabelSelector | None, list[FieldError]]:
    """The selector when it is well-formed (else None), and its errors."""
    raw = raw_parent.get("selector")
    if raw is None:
        return None, [required(path)] if needed else []
    if not isinstance(raw, Mapping):
        return None, [type_error(path, raw, "object")]
    errors = pydantic_errors(LabelSelector, raw, prefix=path)
    if errors:
        return None, errors
    selector = LabelSelector.model_validate(raw)
    errors = validate_label_selector(selector, path)
    if selector.is_empty():
        errors.append(invalid(path, dict(raw), f"empty selector is invalid for {word}"))
    return (None if errors else selector), errors


def _matches(selector: LabelSelector | None, labels: Mapping[str, str] | None, path: str) -> list[FieldError]:
    if selector is None or labels is None or selector.matches(labels):
        return []
    return [invalid(path, dict(labels), "`selector` does not match template `labels`")]


# ---------------------------------------------------------------------------------------------------------
# batch/v1 and v1 Pod


def job(manifest: Mapping[str, Any]) -> list[FieldError]:
    spec, errors = _spec(manifest)
    if errors:
        return errors
    labels, errors = job_spec(spec, "spec")
    # Without manualSelector kube-apiserver generates the selector; a given one must still select the pods.
    selector, selector_errors = _selector(spec, "spec.selector", "job", needed=False)
    return errors + selector_errors + _matches(selector, labels, "spec.template.metadata.labels")


def job_spec(spec: Mapping[str, Any], path: str) -> tuple[Mapping[str, str] | None, list[FieldError]]:
    """``validateJobSpec``: counts, completion mode, and a pod template that restarts OnFailure or Never.

    Returns the template's labels (None when they are not a string map) and every error.
    """
    errors: list[FieldError] = []
    for key in ("parallelism", "completions", "backoffLimit", "ttlSecondsAfterFinished"):
        errors += int_field(spec, key, path)
    for key in ("backoffLimitPerIndex", "maxFailedIndexes"):
        errors += int_field(spec, key, path)
    errors += int_field(spec, "activeDeadlineSeconds", path, bits=64)
    errors += bool_field(spec, "suspend", path) + bool_field(spec, "manualSelector", path)
    mode, mode_errors = enum_field(spec, "completionMode", path, ("NonIndexed", "Indexed"))
    errors += mode_errors
    if mode == "Indexed" and spec.get("completions") is None:
        errors.append(required(join_path(path, "completions"), "when completion mode is Indexed"))
    labels, template_errors = pod_template(spec, path, _JOB_RESTART, controller=False)
    return labels, errors + template_errors


def cron_job(manifest: Mapping[str, Any]) -> list[FieldError]:
    spec, errors = _spec(manifest)
    if errors:
        return errors
    schedule, schedule_errors = string_field(spec, "schedule", "spec")
    errors += schedule_errors
    if not schedule and not schedule_errors:
        errors.append(required("spec.schedule"))
    elif schedule:
        errors += [invalid("spec.schedule", schedule, m) for m in cron_schedule(schedule)]
    errors += enum_field(spec, "concurrencyPolicy", "spec", ("Allow", "Forbid", "Replace"))[1]
    errors += string_field(spec, "timeZone", "spec")[1] + bool_field(spec, "suspend", "spec")
    errors += int_field(spec, "startingDeadlineSeconds", "spec", bits=64)
    for key in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        errors += int_field(spec, key, "spec")
    return errors + _job_template(spec)


def _job_template(spec: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateJobTemplateSpec``: a Job spec whose selector the CronJob controller generates."""
    template, errors = object_field(spec, "jobTemplate", "spec")
    job_spec_raw, spec_errors = object_field(template, "spec", "spec.jobTemplate")
    errors += spec_errors
    path = "spec.jobTemplate.spec"
    if spec_errors:
        return errors
    errors += job_spec(job_spec_raw, path)[1]
    if job_spec_raw.get("selector") is not None:
        errors.append(invalid(join_path(path, "selector"), "object", "`selector` will be auto-generated"))
    if job_spec_raw.get("manualSelector") is True:
        errors.append(not_supported(join_path(path, "manualSelector"), True, ("nil", "false")))
    return errors


def pod(manifest: Mapping[str, Any]) -> list[FieldError]:
    return pod_spec(manifest.get("spec"), "spec", RESTART_POLICIES)


_RULES: dict[tuple[str, str], ManifestRule] = {
    ("apps", "Deployment"): deployment,
    ("apps", "ReplicaSet"): replica_set,
    ("apps", "StatefulSet"): stateful_set,
    ("apps", "DaemonSet"): daemon_set,
    ("batch", "Job"): job,
    ("batch", "CronJob"): cron_job,
    ("", "Pod"): pod,
    ("", "ConfigMap"): config_map,
    ("", "Secret"): secret,
    ("", "Service"): service,
}
