"""Secret data is encrypted at rest, transparently: the raw columns hold no plaintext (both backends), every
read gives the plaintext back, and comparisons see content (a no-op replace writes nothing)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from sqlalchemy import Engine, Text, cast, select, update
from sqlalchemy.orm import Session

from federation.store import objects
from federation.store.crypto import SecretBox, generate_key
from federation.store.db import session_factory
from federation.store.errors import DecryptionError
from federation.store.sealing import SEALED_FIELD, SealingError
from federation.store.tables import ResourceTemplateRow, WorkRow, table_of
from federation.store.works import WorkRepository

from .factories import make_configmap, make_work

PASSWORD = "hunter2-correct-horse"
ENCODED = base64.b64encode(PASSWORD.encode()).decode()
TOKEN = "plain-string-data-token"


def make_secret(name: str = "db", password: str = ENCODED, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "db"}},
        "type": "Opaque",
        "data": {"password": password},
        "stringData": {"token": TOKEN},
        **extra,
    }


def raw_text(engine: Engine, column: Any, table: Any) -> list[str]:
    """The stored JSON as the database holds it (Core: no ORM hooks run)."""
    with engine.connect() as connection:
        return [str(value) for value in connection.scalars(select(cast(column, Text)).select_from(table))]


def assert_no_plaintext(texts: list[str]) -> None:
    assert texts
    for text in texts:
        for secret in (PASSWORD, ENCODED, TOKEN):
            assert secret not in text, text


def test_secret_data_is_ciphertext_in_the_row_and_plaintext_on_read(engine: Engine, session: Session) -> None:
    secrets = objects(session, "v1", "Secret")
    created = secrets.create(make_secret())
    assert created["data"] == {"password": ENCODED} and created["stringData"] == {"token": TOKEN}
    session.commit()
    templates = table_of(ResourceTemplateRow)
    assert_no_plaintext(raw_text(engine, templates.c.extra, templates))
    with engine.connect() as connection:
        stored = connection.scalars(select(templates.c.extra)).one()
    assert set(stored) == {"type", SEALED_FIELD}  # `type` stays queryable
    assert stored["type"] == "Opaque"
    session.expunge_all()  # read back from the database, not the identity map
    got = secrets.get("default", "db")
    assert got is not None
    assert got["data"] == {"password": ENCODED} and got["stringData"] == {"token": TOKEN}
    assert secrets.list("default")[0][0]["data"] == {"password": ENCODED}


def test_a_no_op_replace_is_a_no_op_and_a_change_is_written(engine: Engine, session: Session) -> None:
    secrets = objects(session, "v1", "Secret")
    first = secrets.create(make_secret())
    session.commit()
    session.expunge_all()
    templates = table_of(ResourceTemplateRow)
    before = raw_text(engine, templates.c.extra, templates)
    same = secrets.replace(make_secret())
    session.commit()
    assert same["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert raw_text(engine, templates.c.extra, templates) == before  # not even re-encrypted
    relabelled = secrets.replace({**make_secret(), "metadata": {**make_secret()["metadata"], "labels": {}}})
    session.commit()
    assert int(relabelled["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    assert raw_text(engine, templates.c.extra, templates) == before  # labels only: the data untouched
    changed = secrets.replace(make_secret(password=base64.b64encode(b"new-password-9").decode()))
    session.commit()
    assert int(changed["metadata"]["resourceVersion"]) > int(relabelled["metadata"]["resourceVersion"])
    assert changed["metadata"]["generation"] == first["metadata"]["generation"] + 1
    session.expunge_all()
    got = secrets.get("default", "db")
    assert got is not None and got["data"]["password"] == base64.b64encode(b"new-password-9").decode()
    assert "new-password-9" not in "".join(raw_text(engine, templates.c.extra, templates))


def test_other_kinds_and_secret_fields_beyond_data_are_not_sealed(engine: Engine, session: Session) -> None:
    objects(session, "v1", "ConfigMap").create(make_configmap("cfg", data={"password": PASSWORD}))
    objects(session, "v1", "Secret").create(
        {**make_secret("empty"), "data": None, "stringData": None} | {"immutable": True}
    )
    session.commit()
    templates = table_of(ResourceTemplateRow)
    with engine.connect() as connection:
        rows = {
            name: extra for name, extra in connection.execute(select(templates.c.name, templates.c.extra))
        }
    assert rows["cfg"]["data"]["password"] == PASSWORD
    assert rows["empty"][SEALED_FIELD]  # null data is still data the user wrote: sealed, not dropped
    assert rows["empty"]["immutable"] is True


def test_a_sealed_field_sent_by_a_caller_is_dropped(session: Session) -> None:
    secrets = objects(session, "v1", "Secret")
    bare = {k: v for k, v in make_secret("forged").items() if k not in ("data", "stringData")}
    created = secrets.create({**bare, SEALED_FIELD: "not-a-fernet-token"})
    assert SEALED_FIELD not in created
    session.commit()
    session.expunge_all()
    got = secrets.get("default", "forged")
    assert got is not None and SEALED_FIELD not in got and "data" not in got


def test_secrets_inside_a_work_are_sealed_too(engine: Engine, session: Session) -> None:
    deployment = make_work()["spec"]["workload"]["manifests"][0]
    work = make_work(spec={"workload": {"manifests": [deployment, make_secret()]}})
    works = WorkRepository(session).objects
    created = works.create(work)
    assert created["spec"]["workload"]["manifests"][1]["data"] == {"password": ENCODED}
    session.commit()
    table = table_of(WorkRow)
    assert_no_plaintext(raw_text(engine, table.c.spec, table))
    with engine.connect() as connection:
        stored = connection.scalars(select(table.c.spec)).one()
    assert stored["workload"]["manifests"][0] == deployment  # the Deployment is stored as it is
    session.expunge_all()
    got = works.get(created["metadata"]["namespace"], created["metadata"]["name"])
    assert got is not None and got["spec"] == work["spec"]
    again = works.replace(work)
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_without_the_key_nothing_is_written_or_read(engine: Engine, session: Session) -> None:
    objects(session, "v1", "Secret").create(make_secret())
    session.commit()
    keyless = session_factory(engine)()
    try:
        with pytest.raises(SealingError, match="no encryption key"):
            objects(keyless, "v1", "Secret").get("default", "db")
        keyless.rollback()
        with pytest.raises(SealingError, match="no encryption key"):
            objects(keyless, "v1", "Secret").create(make_secret("other"))
        keyless.rollback()
        other_key = session_factory(engine, SecretBox(generate_key()))()
        with pytest.raises(DecryptionError):
            objects(other_key, "v1", "Secret").get("default", "db")
        other_key.close()
    finally:
        keyless.close()


def test_rows_written_before_sealing_load_and_are_sealed_by_their_next_write(
    engine: Engine, session: Session
) -> None:
    secrets = objects(session, "v1", "Secret")
    secrets.create(make_secret())
    session.commit()
    templates = table_of(ResourceTemplateRow)
    plaintext = {"type": "Opaque", "data": {"password": ENCODED}, "stringData": {"token": TOKEN}}
    with engine.begin() as connection:  # what an older version stored
        connection.execute(update(templates).values(extra=plaintext))
    session.expunge_all()
    got = secrets.get("default", "db")
    assert got is not None and got["data"] == {"password": ENCODED}
    secrets.replace(make_secret(password=base64.b64encode(b"rotated-42").decode()))
    session.commit()
    assert_no_plaintext(raw_text(engine, templates.c.extra, templates))
    assert "rotated-42" not in json.dumps(raw_text(engine, templates.c.extra, templates))
