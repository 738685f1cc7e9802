from __future__ import annotations

import pytest
import torch

from sinkframes.cache import Cache, CorruptCacheEntry, digest_of


def test_round_trip_and_keys(tmp_path):
    c = Cache(tmp_path, "t")
    key = {"a": 1, "b": [1, 2]}
    assert not c.contains(key)
    value = {"x": torch.arange(4), "s": "text", "l": [1.5, None]}
    c.store(key, value)
    got = c.load(key)
    assert torch.equal(got["x"], value["x"]) and got["s"] == "text" and got["l"] == [1.5, None]
    assert digest_of({"b": [1, 2], "a": 1}) == digest_of(key)
    assert digest_of({"a": 2, "b": [1, 2]}) != digest_of(key)
    with pytest.raises(KeyError):
        c.load({"a": 3})


def test_corruption_detected_and_recomputed(tmp_path):
    c = Cache(tmp_path, "t")
    key = {"k": "v"}
    c.store(key, {"x": torch.ones(3)})
    payload = next(c.dir.glob("*.pt"))
    raw = bytearray(payload.read_bytes())
    raw[-5] ^= 0xFF
    payload.write_bytes(bytes(raw))
    with pytest.raises(CorruptCacheEntry):
        c.load(key)
    calls = []
    with pytest.warns(RuntimeWarning):
        value, hit = c.get_or_compute(key, lambda: calls.append(1) or {"x": torch.zeros(3)})
    assert not hit and calls == [1] and torch.equal(value["x"], torch.zeros(3))
    assert c.get_or_compute(key, lambda: pytest.fail("must not recompute"))[1] is True


def test_meta_without_payload_is_a_miss(tmp_path):
    c = Cache(tmp_path, "t")
    c.store({"k": 1}, [1])
    next(c.dir.glob("*.pt")).unlink()
    assert not c.contains({"k": 1})
    assert c.get_or_compute({"k": 1}, lambda: [2]) == ([2], False)
