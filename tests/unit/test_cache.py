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


def test_a_key_file_of_the_wrong_shape_is_a_corrupt_entry_and_is_recomputed(tmp_path):
    c = Cache(tmp_path, "t")
    c.store({"k": 1}, [1])
    next(c.dir.glob("*.json")).write_text("[1, 2]")
    with pytest.raises(CorruptCacheEntry, match="wrong shape"):
        c.load({"k": 1})
    with pytest.warns(RuntimeWarning, match="wrong shape"):
        assert c.get_or_compute({"k": 1}, lambda: [2]) == ([2], False)
    assert c.load({"k": 1}) == [2]


def test_an_entry_holding_another_keys_result_is_never_served(tmp_path):
    # the files of the n = 5 entry copied over the n = 10 entry's names: valid hash, wrong key
    c = Cache(tmp_path, "t")
    five, ten = {"n": 5, "tuple": (1, 2)}, {"n": 10, "tuple": (1, 2)}
    c.store(five, [5])
    c.store(ten, [10])
    assert c.load(ten) == [10]  # a key with a tuple reads back equal to itself
    for suffix in (".pt", ".json"):
        src, dst = (c.dir / f"{digest_of(k)}{suffix}" for k in (five, ten))
        dst.write_bytes(src.read_bytes())
    with pytest.raises(CorruptCacheEntry, match="another key"):
        c.load(ten)
    with pytest.warns(RuntimeWarning, match="another key"):
        assert c.get_or_compute(ten, lambda: [10]) == ([10], False)


# ---------------------------------------------------------------------------------------------
# cache_key: every input that changes a result


def _key(**opts):
    from sinkframes.cache import cache_key
    from sinkframes.types import RunOptions

    return digest_of(cache_key({"kind": "summary"}, "org/model", ["a text"], RunOptions.build(**opts)))


def test_two_revisions_of_one_model_get_different_keys():
    assert _key(revision="step1000") != _key(revision="step2000")
    assert _key(revision="step1000") == _key(revision="step1000")


@pytest.mark.parametrize(
    "change",
    [
        {"dtype": "float16"},
        {"quantization": "4bit"},
        {"max_length": 128},
        {"bos_policy": "force"},
        {"truncation": True},
    ],
)
def test_every_result_option_is_in_the_key(change):
    assert _key(**change) != _key()


def test_options_that_do_not_change_results_share_the_key():
    assert _key(batch_size=1, progress=False) == _key(batch_size=64)


@pytest.mark.parametrize("package", ["torch", "transformers", "sinkframes"])
def test_a_software_version_change_gives_a_new_key(monkeypatch, package):
    from sinkframes import cache

    before = _key()
    real = cache.software_versions()
    monkeypatch.setattr(cache, "software_versions", lambda: {**real, package: real[package] + ".post99"})
    assert _key() != before


def test_the_device_type_is_in_the_key(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU's key, made without one
    assert _key(device="cpu") != _key(device="cuda")
