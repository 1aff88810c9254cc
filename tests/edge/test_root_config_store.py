"""The root config row, written by several nodes at once: each write lays the values pushed
over the row as it is, locked while it is read and written, so none loses another's keys."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest
from django.db import connections

from hosts.models import RootConfig
from hosts.store.engine_store import _load_root_config, _save_root_config


@pytest.mark.django_db(transaction=True)
def test_nodes_writing_at_once_each_keep_what_they_moved():
    _save_root_config({"x-before": 0}, False)
    writers = 4
    barrier = Barrier(writers)

    def write(n: int) -> None:
        try:
            barrier.wait()
            _save_root_config({f"x-node-{n}": n, "x-shared": n}, False)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(write, range(writers)))
    kept = _load_root_config()
    assert {k: v for k, v in kept.items() if k.startswith("x-node-")} == {
        f"x-node-{n}": n for n in range(writers)
    }
    assert kept["x-before"] == 0 and kept["x-shared"] in range(writers)


@pytest.mark.django_db
def test_a_replace_keeps_only_what_it_names():
    _save_root_config({"x-old": 1}, False)
    _save_root_config({"x-new": 2}, True)
    assert RootConfig.objects.get(key="root").values == {"x-new": 2}
