import pytest
from hypothesis import given
from hypothesis import strategies as st

from federation.model.labels import (
    LabelSelector,
    Requirement,
    Selector,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    parse_selector,
    validate_label_selector,
)

LABELS = {"app": "web", "tier": "front", "env": ""}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("app in (web,db)", True),
        ("app in (db)", False),
        ("app notin (db)", True),
        ("missing notin (db)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("env=", True),
        ("app=web,tier=front", True),
        ("app=web, tier = back", False),
        ("example.com/role in (a, b)", False),
    ],
)
def test_parse_selector_matches(text, matches):
    assert parse_selector(text).matches(LABELS) is matches


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a=b=c", "expected ','"),
        ("a in ()", "must not be empty"),
        ("a in (b", "expected ',' or ')'"),
        ("a in b", "expected '('"),
        ("a<3", "not supported"),
        ("!", "expected a label key"),
        ("a b", "expected an operator"),
        ("=b", "expected a label key"),
        ("a=b,", "expected a label key"),
        ("-bad=x", "invalid label key '-bad'"),
        ("a=-bad-", "invalid label value '-bad-'"),
    ],
)
def test_parse_selector_errors_name_the_selector(text, fragment):
    with pytest.raises(ValueError) as info:
        parse_selector(text)
    message = str(info.value)
    assert repr(text) in message
    assert fragment in message


def test_label_selector_model_matches_like_kubernetes():
    selector = LabelSelector.model_validate(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "back"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "NotIn", "values": ["z9"]},
            ],
        }
    )
    assert selector.matches({"app": "web", "tier": "front"})
    assert not selector.matches({"app": "web", "tier": "front", "canary": "1"})
    assert not selector.matches({"app": "web", "tier": "front", "zone": "z9"})
    assert not selector.matches({"tier": "front"})
    assert LabelSelector().matches({}) and LabelSelector().is_empty()


@pytest.mark.parametrize(
    ("expression", "field"),
    [
        ({"key": "a", "operator": "In"}, "sel.matchExpressions[0].values"),
        ({"key": "a", "operator": "Exists", "values": ["x"]}, "sel.matchExpressions[0].values"),
        ({"key": "bad key", "operator": "Exists"}, "sel.matchExpressions[0].key"),
    ],
)
def test_validate_label_selector(expression, field):
    errors = validate_label_selector(LabelSelector.model_validate({"matchExpressions": [expression]}), "sel")
    assert [e.field for e in errors] == [field]


def test_validate_label_selector_match_labels():
    errors = validate_label_selector(LabelSelector.model_validate({"matchLabels": {"ok": "-no-"}}), "sel")
    assert [e.field for e in errors] == ["sel.matchLabels[ok]"]


@pytest.mark.parametrize(
    ("check", "value", "ok"),
    [
        (is_qualified_name, "app", True),
        (is_qualified_name, "example.com/app", True),
        (is_qualified_name, "Example.com/app", False),
        (is_qualified_name, "/app", False),
        (is_qualified_name, "a/b/c", False),
        (is_qualified_name, "x" * 64, False),
        (is_valid_label_value, "", True),
        (is_valid_label_value, "v1.2_3-x", True),
        (is_valid_label_value, "-x", False),
        (is_dns1123_label, "member-1", True),
        (is_dns1123_label, "Member1", False),
        (is_dns1123_subdomain, "a.b-c.d", True),
        (is_dns1123_subdomain, "a..b", False),
    ],
)
def test_name_syntax(check, value, ok):
    assert (check(value) == []) is ok


# --- property: the two selector syntaxes agree --------------------------------------------------------

KEYS = st.sampled_from(["app", "tier", "example.com/zone", "x"])
VALUES = st.sampled_from(["a", "b", "c-1", "", "v.2"])


@st.composite
def requirements(draw):
    key = draw(KEYS)
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]))
    if operator in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": operator}
    return {"key": key, "operator": operator, "values": draw(st.lists(VALUES, min_size=1, max_size=3))}


@st.composite
def selectors(draw):
    return LabelSelector.model_validate(
        {
            "matchLabels": draw(st.dictionaries(KEYS, VALUES, max_size=2)),
            "matchExpressions": draw(st.lists(requirements(), max_size=3)),
        }
    )


def _reference(selector, labels):
    for key, value in (selector.match_labels or {}).items():
        if labels.get(key) != value:
            return False
    for e in selector.match_expressions or ():
        present, values = e.key in labels, set(e.values or ())
        ok = {
            "In": present and labels.get(e.key) in values,
            "NotIn": not present or labels.get(e.key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }[e.operator]
        if not ok:
            return False
    return True


@given(selectors(), st.dictionaries(KEYS, VALUES, max_size=4))
def test_selector_string_round_trip_matches_the_same_labels(selector, labels):
    parsed = parse_selector(str(selector.to_selector()))
    expected = _reference(selector, labels)
    assert selector.matches(labels) is expected
    assert parsed.matches(labels) is expected
    assert parse_selector(str(parsed)) == parsed


@given(st.lists(requirements(), max_size=4))
def test_selector_str_parse_is_identity(reqs):
    selector = LabelSelector.model_validate({"matchExpressions": reqs}).to_selector()
    assert parse_selector(str(selector)) == selector
    assert isinstance(selector, Selector)
    assert all(isinstance(r, Requirement) for r in selector.requirements)
