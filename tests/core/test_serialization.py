"""Policy files: round trip, umask mode, and clear errors for damaged, foreign or edited files."""

from __future__ import annotations

import io
import json
import os
import zipfile

import numpy as np
import pytest

import banditkit as bk
from banditkit.core.serialization import PolicyFileError


def _saved(tmp_path, name="linucb"):
    policy = bk.make_policy(name, seed=1)
    rng = np.random.default_rng(0)
    for _ in range(5):
        ctx = bk.Context(arms=rng.standard_normal((4, 3)))
        policy.update(ctx, policy.act(ctx), 1.0)
    path = tmp_path / "p.bk"
    bk.save_policy(policy, path)
    return policy, path


def _rewrite_member(path, member, edit):
    """Rewrite one .npz member of ``path`` through ``edit(array) -> array``."""
    with zipfile.ZipFile(path) as z:
        contents = {n: z.read(n) for n in z.namelist()}
    key = f"{member}.npy"
    new = edit(np.load(io.BytesIO(contents[key])))
    buf = io.BytesIO()
    np.save(buf, new)
    contents[key] = buf.getvalue()
    with zipfile.ZipFile(path, "w") as z:
        for n, data in contents.items():
            z.writestr(n, data)


def test_round_trip_keeps_the_state(tmp_path):
    policy, path = _saved(tmp_path)
    clone = bk.load_policy(path)
    assert type(clone) is type(policy) and clone.t == policy.t == 5


def test_policy_files_get_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        _, path = _saved(tmp_path)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o640
    assert list(tmp_path.glob(".*.tmp")) == []


def test_truncated_file_names_the_file(tmp_path):
    _, path = _saved(tmp_path)
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(PolicyFileError, match=r"p\.bk'.*truncated or damaged"):
        bk.load_policy(path)


@pytest.mark.parametrize(
    "content",
    [b"not a policy at all\n", None],
    ids=["text", "foreign-npz"],
)
def test_foreign_file_is_refused(tmp_path, content):
    path = tmp_path / "p.bk"
    if content is None:
        with open(path, "wb") as fh:
            np.savez(fh, weights=np.ones(3))
        match = "not a banditkit policy file"
    else:
        path.write_bytes(content)
        match = "truncated or damaged"
    with pytest.raises(PolicyFileError, match=match) as info:
        bk.load_policy(path)
    assert info.value.path == path


def test_relabelled_file_is_refused(tmp_path):
    _, path = _saved(tmp_path)

    def relabel(skeleton):
        state = json.loads(str(skeleton))
        assert state["policy"] == "linucb"
        state["policy"] = "lints"
        return np.array(json.dumps(state))

    _rewrite_member(path, "__skeleton__", relabel)
    with pytest.raises(PolicyFileError, match="does not match its digest"):
        bk.load_policy(path)


def test_newer_format_is_refused(tmp_path):
    _, path = _saved(tmp_path)

    def bump(header):
        return np.array(json.dumps({**json.loads(str(header)), "version": 99}))

    _rewrite_member(path, "__banditkit__", bump)
    with pytest.raises(PolicyFileError, match="format version 99 is newer"):
        bk.load_policy(path)


def test_missing_file_is_a_policy_file_error(tmp_path):
    with pytest.raises(PolicyFileError, match=r"nope\.bk'.*no such file"):
        bk.load_policy(tmp_path / "nope.bk")
    with pytest.raises(PolicyFileError, match="is a directory"):
        bk.load_policy(tmp_path)


def test_policy_bytes_are_the_saved_file_and_load_with_its_checks(tmp_path):
    from banditkit.core.serialization import policy_from_bytes, policy_to_bytes
    from banditkit.testing import assert_same_state

    rng = np.random.default_rng(3)
    policy = bk.make_policy("linucb", nu=0.5, seed=4)
    for _ in range(20):
        ctx = bk.Context(arms=rng.normal(size=(5, 3)))
        policy.update(ctx, policy.act(ctx), float(rng.random() < 0.5))
    data = policy_to_bytes(policy)
    bk.save_policy(policy, tmp_path / "p.bk")
    assert data == (tmp_path / "p.bk").read_bytes()
    restored = policy_from_bytes(data, expect="linucb")
    assert_same_state(restored, policy)
    with pytest.raises(PolicyFileError, match=r"snapshot 7.*not the expected 'lints'"):
        policy_from_bytes(data, expect="lints", name="snapshot 7")
    with pytest.raises(PolicyFileError, match="<policy bytes>"):
        policy_from_bytes(data[: len(data) // 2])
