"""`federation rebalance KIND/NAME... [-n NS] [--ttl S] [--name N] [--wait [--timeout T]]`: create a
WorkloadRebalancer (``apps.karmada.io/v1alpha1``, cluster-scoped) and optionally wait for its results.

Invariants:
- Every argument is checked before the first request: a bad ``KIND/NAME``, option or combination is one
  line on stderr and a non-zero exit, and nothing is created.
- ``KIND`` resolves as `federation get` resolves it (plural, singular, short name, Kind, ``plural.group``,
  plus kubectl's ``singular.group``); its apiVersion comes from the kind registry. Only resource templates
  can be rebalanced: Karmada's and Kosmos' own kinds are refused.
- Namespaced kinds take ``-n`` (default ``default``); cluster-scoped kinds carry no namespace (Karmada's
  ``omitempty``), so the controller looks for their ClusterResourceBinding.
- The generated name is ``rebalance-<first workload name>-<5 random characters>`` (kubectl's
  ``generateName`` length and alphabet), always a valid DNS-1123 name.
- With ``--wait``: "before" placements are read from the bindings just before the rebalancer is created;
  a workload's "after" placement is read once, at the first poll where its entry has a result. The wait
  ends at the deadline at the latest. The exit status is non-zero on a timeout, on any workload that did
  not succeed, and when the rebalancer is gone before every result was read (a TTL of 0 can do that).
- The progress bar goes to stderr and the table to stdout; rich redraws the bar only on a terminal, so a
  pipe gets one final line instead of a stream of frames.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from federation.cli.client import ApiError, FederationClient
from federation.cli.context import CliContext, pass_cli
from federation.cli.printers import observed_results, render_rows, target_clusters, workload_key
from federation.model import kinds
from federation.model.binding import binding_name
from federation.model.kinds import KindInfo
from federation.model.rebalancer import RESULT_SUCCESSFUL

REBALANCER = kinds.lookup("workloadrebalancer")
RESOURCE_BINDING = kinds.lookup("resourcebinding")
CLUSTER_RESOURCE_BINDING = kinds.lookup("clusterresourcebinding")
DEFAULT_NAMESPACE = "default"
DEFAULT_TIMEOUT = 300.0
POLL_SECONDS = 0.5
# kubectl's generateName: a prefix of at most 58 characters plus 5 from an alphabet without vowels
# (no accidental words) and without 0/1/3 (no look-alikes).
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SUFFIX_LENGTH = 5
MAX_PREFIX = 58
ARROW = "→"

Key = tuple[str, str, str, str]


class RebalanceError(click.ClickException):
    """An outcome the user must hear about (a failed workload, a timeout): one line on stderr,
    ``error: ...`` like the CLI's other errors, and exit status 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class RebalanceUsageError(RebalanceError):
    """A bad argument or option: the same one line, exit status 2 (click's status for usage errors)."""

    exit_code = 2


def usage_error(message: str) -> RebalanceError:
    return RebalanceUsageError(message)


# -- arguments -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Workload:
    """One workload to rebalance; ``namespace`` is "" for a cluster-scoped kind."""

    info: KindInfo
    name: str
    namespace: str

    def reference(self) -> dict[str, str]:
        """The ``spec.workloads`` entry, in Karmada's form (no namespace key when cluster-scoped)."""
        ref = {"apiVersion": self.info.api_version, "kind": self.info.kind, "name": self.name}
        return {**ref, "namespace": self.namespace} if self.namespace else ref

    def key(self) -> Key:
        return workload_key(self.reference())

    def label(self) -> str:
        return f"{self.info.singular}/{self.name}"

    def binding(self) -> tuple[KindInfo, str | None, str]:
        """Where its (Cluster)ResourceBinding lives: kind, namespace, name (Karmada's binding name)."""
        name = binding_name(self.name, self.info.kind)
        if self.namespace:
            return RESOURCE_BINDING, self.namespace, name
        return CLUSTER_RESOURCE_BINDING, None, name


def resolve_kind(cli: CliContext, text: str) -> KindInfo:
    """The kind `federation get` would resolve, or kubectl's ``singular.group`` (``deployment.apps``)."""
    try:
        return cli.kind(text)
    except click.UsageError as exc:
        info = _qualified_singular(text)
        if info is None:
            raise usage_error(exc.format_message()) from exc
        return info


def _qualified_singular(text: str) -> KindInfo | None:
    """``deployment.apps``: a singular (or Kind) plus its group, which the kind registry does not index."""
    head, dot, group = text.partition(".")
    try:
        info = kinds.lookup(head) if dot else None
    except KeyError:
        return None
    return info if info is not None and info.group == group.lower() else None


def parse_workload(cli: CliContext, text: str, namespace: str) -> Workload:
    kind, slash, name = text.partition("/")
    if not slash or not kind or not name or "/" in name:
        raise usage_error(f"{text!r} is not KIND/NAME (for example deployment/nginx)")
    info = resolve_kind(cli, kind)
    if kinds.is_federation_kind(info):
        raise usage_error(
            f"{text!r}: a {info.kind} is not a workload; rebalance the resource it propagates "
            "(for example deployment/nginx)"
        )
    return Workload(info, name, namespace if info.namespaced else "")


def parse_workloads(cli: CliContext, texts: Sequence[str], namespace: str) -> list[Workload]:
    """Each argument resolved, duplicates dropped (first one kept), order kept."""
    unique: dict[Key, Workload] = {}
    for text in texts:
        workload = parse_workload(cli, text, namespace)
        unique.setdefault(workload.key(), workload)
    return list(unique.values())


def generated_name(first: str, rng: random.Random | None = None) -> str:
    """``rebalance-<first>-xxxxx``: lower-cased, anything but ``[a-z0-9-]`` made ``-``, the prefix cut
    to 58 characters; it starts with a letter and ends with an alphanumeric, so it is always valid."""
    base = re.sub(r"[^a-z0-9-]+", "-", first.lower())
    prefix = f"rebalance-{base}"[: MAX_PREFIX - 1].rstrip("-") + "-"
    choose = (rng or random.SystemRandom()).choice
    return prefix + "".join(choose(SUFFIX_ALPHABET) for _ in range(SUFFIX_LENGTH))


def rebalancer_manifest(name: str, workloads: Sequence[Workload], ttl: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"workloads": [w.reference() for w in workloads]}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {
        "apiVersion": REBALANCER.api_version,
        "kind": REBALANCER.kind,
        "metadata": {"name": name},
        "spec": spec,
    }


DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


class Duration(click.ParamType):
    """Seconds as a number, or kubectl's ``30s``/``5m``/``1h``; more than zero."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            seconds = float(value)
        else:
            match = DURATION.match(str(value).strip())
            if match is None:
                self.fail(f"{value!r} is not a duration (seconds, or 30s, 5m, 1h)", param, ctx)
            seconds = float(match.group(1)) * UNIT_SECONDS[match.group(2) or "s"]
        if seconds <= 0:
            self.fail(f"{value!r} must be more than zero", param, ctx)
        return seconds


class OneLineErrors(click.Command):
    """Turns click's own argument errors (multi-line usage text) into the CLI's one-line errors."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise usage_error(exc.format_message()) from exc


# -- placements and results ----------------------------------------------------------------------------


def read_placement(client: FederationClient, workload: Workload) -> str:
    """The workload's binding's ``spec.clusters`` as ``member1:2,member2:2``; ``<none>`` without one."""
    info, namespace, name = workload.binding()
    return target_clusters(client.get(info, namespace, name))


@dataclass(slots=True)
class Progression:
    """What the wait has seen so far: each workload's status entry (once it has a result) and the
    placement read right after that, keyed by workload."""

    results: dict[Key, dict[str, Any]] = field(default_factory=dict)
    after: dict[Key, str] = field(default_factory=dict)
    finished: bool = False


def observe(client: FederationClient, name: str, workloads: Sequence[Workload], seen: Progression) -> None:
    """One poll: read the rebalancer, then the placement of each workload whose result is new."""
    obj = client.get(REBALANCER, None, name)
    if obj is None:
        raise RebalanceError(
            f"workloadrebalancer/{name} was deleted before every workload had a result "
            f"({len(seen.results)} of {len(workloads)} seen); a --ttl of 0 deletes it as soon as it finishes"
        )
    results = observed_results(obj)
    for workload in workloads:
        key = workload.key()
        if key in results and key not in seen.after:
            seen.after[key] = read_placement(client, workload)
        if key in results:
            seen.results[key] = results[key]
    finish_time = (obj.get("status") or {}).get("finishTime")
    seen.finished = bool(finish_time) or len(seen.results) == len(workloads)


def wait_for_results(
    poll: Callable[[Progression], None],
    deadline: float,
    *,
    on_progress: Callable[[int], None],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Progression:
    """Poll until the rebalancer finished or the clock passes ``deadline``; never sleeps past it."""
    seen = Progression()
    while True:
        poll(seen)
        on_progress(len(seen.results))
        remaining = deadline - clock()
        if seen.finished or remaining <= 0:
            return seen
        sleep(min(POLL_SECONDS, remaining))


def result_rows(workloads: Sequence[Workload], before: dict[Key, str], seen: Progression) -> list[list[str]]:
    rows = [["WORKLOAD", "RESULT", "REASON", "PLACEMENT"]]
    for workload in workloads:
        key = workload.key()
        entry = seen.results.get(key, {})
        after = seen.after.get(key, "<pending>")
        rows.append(
            [
                workload.label(),
                str(entry.get("result") or "Pending"),
                str(entry.get("reason") or ""),
                f"{before[key]} {ARROW} {after}",
            ]
        )
    return rows


def verdict(name: str, workloads: Sequence[Workload], seen: Progression, timeout: float) -> str | None:
    """The error line the wait ends with, or None when every workload succeeded."""
    if not seen.finished:
        return (
            f"timed out after {timeout:g}s waiting for workloadrebalancer/{name}: "
            f"{len(seen.results)} of {len(workloads)} workloads have a result"
        )
    failed = [w for w in workloads if seen.results.get(w.key(), {}).get("result") != RESULT_SUCCESSFUL]
    if failed:
        return f"{len(failed)} of {len(workloads)} workloads were not rebalanced: " + ", ".join(
            w.label() for w in failed
        )
    return None


def progress_bar(file: TextIO | None = None) -> Progress:
    """A bar of workloads with a result over all workloads, on stderr; static off a terminal."""
    console = Console(file=file, stderr=file is None, highlight=False)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


# -- the command ---------------------------------------------------------------------------------------


def create(client: FederationClient, manifest: dict[str, Any], generated: Callable[[], str] | None) -> str:
    """POST the rebalancer; a generated name that happens to exist is drawn again (up to 3 times)."""
    for _attempt in range(3):
        if generated is not None:
            manifest["metadata"]["name"] = generated()
        try:
            created = client.create(REBALANCER, manifest)
        except ApiError as exc:
            if generated is None or exc.reason != "AlreadyExists":
                raise
            continue
        return str(created["metadata"]["name"])
    raise RebalanceError("could not find a free generated name; pass --name")


@click.command("rebalance", cls=OneLineErrors)
@click.argument("workloads", nargs=-1, required=True, metavar="KIND/NAME...")
@click.option("-n", "--namespace", default=None, help="Namespace of namespaced workloads [default].")
@click.option(
    "--ttl",
    type=click.IntRange(0, 2**31 - 1),
    default=None,
    metavar="SECONDS",
    help="Delete the rebalancer this long after it finishes (spec.ttlSecondsAfterFinished).",
)
@click.option("--name", default=None, help="Rebalancer name [rebalance-<first workload>-<random>].")
@click.option("--wait", is_flag=True, help="Show progress, then each workload's result and placement.")
@click.option(
    "--timeout",
    type=Duration(),
    default=None,
    metavar="SECONDS",
    help=f"With --wait: give up after this long (seconds, or 30s, 5m) [{DEFAULT_TIMEOUT:g}].",
)
@pass_cli
def rebalance_command(
    cli: CliContext,
    workloads: tuple[str, ...],
    namespace: str | None,
    ttl: int | None,
    name: str | None,
    wait: bool,
    timeout: float | None,
) -> None:
    """Reschedule workloads afresh (Karmada's WorkloadRebalancer): forget their current placement.

    KIND/NAME is kubectl's form: deployment/nginx, deploy/nginx, statefulsets.apps/db.
    """
    if timeout is not None and not wait:
        raise usage_error("--timeout only applies with --wait")
    targets = parse_workloads(cli, workloads, namespace or DEFAULT_NAMESPACE)
    manifest = rebalancer_manifest(name or "", targets, ttl)
    generated = None if name else (lambda: generated_name(targets[0].name))
    with cli.client() as client:
        before = {w.key(): read_placement(client, w) for w in targets} if wait else {}
        created = create(client, manifest, generated)
        click.echo(f"{REBALANCER.singular}.{REBALANCER.group}/{created} created")
        if wait:
            wait_and_report(client, created, targets, before, timeout or DEFAULT_TIMEOUT)


def wait_and_report(
    client: FederationClient,
    name: str,
    workloads: Sequence[Workload],
    before: dict[Key, str],
    timeout: float,
) -> None:
    """Poll with a progress bar until finished or timed out, print the table, fail on any non-success."""
    deadline = time.monotonic() + timeout
    with progress_bar() as progress:
        task = progress.add_task(f"rebalancing {name}", total=len(workloads))
        seen = wait_for_results(
            lambda seen: observe(client, name, workloads, seen),
            deadline,
            on_progress=lambda done: progress.update(task, completed=done),
        )
    click.echo(render_rows(result_rows(workloads, before, seen)))
    problem = verdict(name, workloads, seen, timeout)
    if problem:
        raise RebalanceError(problem)
