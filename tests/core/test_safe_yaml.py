"""Bounded YAML: numbers bounded before conversion, nesting, alias bombs, size, encoding."""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from banditkit.core.safe_yaml import (
    MAX_YAML_BYTES,
    MAX_YAML_DEPTH,
    MAX_YAML_INT,
    MAX_YAML_NODES,
    YamlFileError,
    load_yaml,
    read_yaml_file,
    yaml_value,
)


def _count(value: Any) -> int:
    """Values in constructed data, every shared list counted where it appears."""
    if isinstance(value, list):
        return 1 + sum(_count(v) for v in value)
    if isinstance(value, dict):
        return 1 + sum(_count(k) + _count(v) for k, v in value.items())
    return 1


def _refused(text: str, problem: str, line: int | None = None) -> None:
    started = time.perf_counter()
    with pytest.raises(yaml.YAMLError) as info:
        load_yaml(text)
    assert time.perf_counter() - started < 2.0
    assert problem in str(info.value)
    if line is not None:
        assert info.value.problem_mark.line + 1 == line  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "literal",
    [
        "1e5000",  # was a ValueError of Python's integer-string limit
        "1e999999",  # was 51 s, then that ValueError
        "1e99999999",  # was a hang (Decimal to int of 10**99999999)
        "1e" + "9" * 50,
        "9" * 5000,
        "-" + "9" * 30,
        "9223372036854775808",  # 2**63
        "0x" + "f" * 17,
        "0b" + "1" * 64,
    ],
)
def test_integers_out_of_range_are_refused_before_conversion(literal):
    _refused(f"name: x\nhorizon: {literal}\n", "out of range", line=2)


@pytest.mark.parametrize("literal", ["1.0e400", "-1.5e999", ".inf", "-.inf", ".nan"])
def test_floats_must_be_finite(literal):
    _refused(f"lam: {literal}\n", "must be finite", line=1)


def test_numbers_in_range_read_as_before():
    data = load_yaml(
        "a: 1e5\nb: 2.5e-3\nc: -3E2\nd: 1.0e3\ne: '1e5'\nf: 1e-2\ng: 0e100\n"
        f"h: {MAX_YAML_INT}\ni: -{MAX_YAML_INT}\nj: 9.2e18\nk: 0x1F\nl: 1_000\n"
    )
    assert data == {
        "a": 100000,
        "b": 0.0025,
        "c": -300,
        "d": 1000.0,
        "e": "1e5",
        "f": 0.01,
        "g": 0,
        "h": MAX_YAML_INT,
        "i": -MAX_YAML_INT,
        "j": 9_200_000_000_000_000_000,
        "k": 31,
        "l": 1000,
    }


@given(
    mantissa=st.integers(-(10**25), 10**25),
    exponent=st.integers(0, 10**9),
)
def test_exponent_integers_are_exact_or_refused(mantissa, exponent):
    text = f"n: {mantissa}e{exponent}"
    try:
        value = load_yaml(text)["n"]
    except yaml.YAMLError as exc:
        assert "out of range" in str(exc)
        assert mantissa != 0 and len(str(abs(mantissa))) + exponent > 19
    else:
        assert value == mantissa * 10**exponent and abs(value) <= MAX_YAML_INT


@given(st.integers(-(2**80), 2**80))
def test_integers_read_exactly_within_64_bits(n):
    try:
        value = load_yaml(f"n: {n}")["n"]
    except yaml.YAMLError as exc:
        assert abs(n) > MAX_YAML_INT and "out of range" in str(exc)
    else:
        assert value == n and abs(n) <= MAX_YAML_INT


def test_nesting_is_bounded():
    _refused("a: " + "[" * 5000 + "]" * 5000, "nested more than 64 levels", line=1)
    _refused("a:\n  " + "- " * 200 + "x\n", "nested more than", line=2)  # block style
    deep = "a: " + "[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1)
    assert load_yaml(deep)["a"] is not None


def _bomb(levels: int, width: int = 9) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + f"\npolicies: [{{name: random, p: *a{levels - 1}}}]\n"


def test_alias_bombs_are_refused_by_their_expanded_size():
    _refused(_bomb(9), "once its aliases are expanded")  # 9**9 values in 700 bytes
    small = load_yaml(_bomb(3))  # 4 small levels: allowed, and counted the same way
    assert _count(small) < MAX_YAML_NODES


def test_the_expanded_size_is_counted_exactly():
    """n aliases of a 9-value list: the mapping, 2 keys, a (1 + 9), b (1 + 10 n) values."""
    for n in (9_998, 9_999):
        text = "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: [" + ", ".join(["*a"] * n) + "]\n"
        expected = 1 + 2 + 10 + 1 + 10 * n
        assert _count(yaml.safe_load(text)) == expected  # an independent walk
        if expected <= MAX_YAML_NODES:
            assert _count(load_yaml(text)) == expected
        else:
            _refused(text, "once its aliases are expanded")


def test_recursive_aliases_are_refused():
    _refused("a: &a [1, *a]\n", "an alias refers to a value that contains it")


def test_duplicate_keys_name_both_lines():
    _refused("a: 1\nb: 2\na: 3\n", "duplicate key 'a' (first given on line 1)", line=3)
    assert load_yaml("base: &b {d: 3}\nenv: {<<: *b, d: 5}\n")["env"] == {"d": 5}


def test_files_are_bounded_and_utf8(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" + b"#" * MAX_YAML_BYTES)
    with pytest.raises(YamlFileError, match="larger than 1,048,576 bytes"):
        read_yaml_file(big)
    with pytest.raises(YamlFileError, match="larger than"):
        read_yaml_file("/dev/zero")  # a device is read no further than the bound
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(YamlFileError, match=r"not UTF-8 text: byte 0xe9 at offset 9"):
        read_yaml_file(latin)
    with pytest.raises(YamlFileError, match="file not found"):
        read_yaml_file(tmp_path / "missing.yaml")
    with pytest.raises(YamlFileError, match="cannot read: Is a directory"):
        read_yaml_file(tmp_path)


def test_command_line_values_are_read_the_same_way():
    assert yaml_value("1e-3", "--x") == 0.001
    with pytest.raises(ValueError, match=r"--x: cannot read '1e5000'.*out of range"):
        yaml_value("1e5000", "--x")
    with pytest.raises(ValueError, match=r"--x: cannot read '\['"):
        yaml_value("[", "--x")


_trees = st.recursive(
    st.integers(-MAX_YAML_INT, MAX_YAML_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.booleans()
    | st.none(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(_trees)
def test_plain_data_round_trips(tree):
    assert load_yaml(yaml.safe_dump({"v": tree})) == {"v": tree}
