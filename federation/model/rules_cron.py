"""The CronJob ``schedule`` grammar kube-apiserver accepts (robfig/cron's ``ParseStandard``).

Invariants:
- A schedule is a descriptor (``@hourly``, ``@daily``/``@midnight``, ``@weekly``, ``@monthly``,
  ``@yearly``/``@annually``, ``@every <duration>``) or exactly five fields: minute, hour, day of month, month,
  day of week. Each field is a comma list of ``*``, ``?``, a value or a ``low-high`` range, each optionally
  ``/step``; months and weekdays also take their three-letter names, case-insensitively.
- ``TZ=``/``CRON_TZ=`` prefixes are refused: kube-apiserver wants the ``timeZone`` field instead.
- ``cron_schedule`` returns messages (empty when valid), like the name checkers in ``labels``.
"""

from __future__ import annotations

import re
from typing import Final

_DESCRIPTORS: Final = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
_EVERY_RE: Final = re.compile(r"^@every\s+(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")
_MONTHS: Final = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS: Final = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# (name, lowest, highest, names for lowest..)
_FIELDS: Final = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS),
)
_PART_RE: Final = re.compile(r"^(?P<range>\*|\?|[0-9A-Za-z]+(?:-[0-9A-Za-z]+)?)(?:/(?P<step>[0-9]+))?$")


def cron_schedule(schedule: str) -> list[str]:
    """Why ``schedule`` is not a standard cron schedule (empty when it is)."""
    text = schedule.strip()
    if text.startswith(("TZ=", "CRON_TZ=")):
        return ["cannot use TZ or CRON_TZ in schedule, use timeZone field instead"]
    if text.startswith("@"):
        if text in _DESCRIPTORS or _EVERY_RE.match(text):
            return []
        return [f"unrecognized descriptor: {text}"]
    fields = text.split()
    if len(fields) != len(_FIELDS):
        return [f"expected exactly 5 fields, found {len(fields)}: {text}"]
    errors: list[str] = []
    for value, (name, low, high, names) in zip(fields, _FIELDS, strict=True):
        errors += [f"{m} in the {name} field" for m in _field(value, low, high, names)]
    return errors


def _field(value: str, low: int, high: int, names: tuple[str, ...]) -> list[str]:
    errors: list[str] = []
    for part in value.split(","):
        match = _PART_RE.match(part)
        if match is None:
            errors.append(f"{part!r} is not a value, range or step")
            continue
        if match["step"] is not None and int(match["step"]) == 0:
            errors.append(f"step of range should be a positive number: {part}")
        if match["range"] not in ("*", "?"):
            errors += _range(match["range"], low, high, names)
    return errors


def _range(text: str, low: int, high: int, names: tuple[str, ...]) -> list[str]:
    ends = text.split("-")
    values: list[int] = []
    for end in ends:
        if end.isdigit():
            values.append(int(end))
        elif end.lower() in names:
            values.append(low + names.index(end.lower()))
        else:
            return [f"failed to parse {end!r}"]
    if any(not low <= v <= high for v in values):
        return [f"{text} is out of range [{low}, {high}]"]
    if len(values) == 2 and values[0] > values[1]:
        return [f"beginning of range ({values[0]}) beyond end of range ({values[1]}): {text}"]
    return []
