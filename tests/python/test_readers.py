"""Scenario.load reads through the CLI's input reader (issue 31, class 3):
a device, a folder, a FIFO, an oversized file or invalid UTF-8 is a
trainsim.InputError naming the path, as for `trainsim run`; a second YAML
document or a tag is refused as the CLI refuses it (class 4).

Run by ctest (label `python`), or by hand after the build:
    PYTHONPATH=build/python python3 -m pytest tests/python/test_readers.py
"""
import os
import pathlib

import pytest

import trainsim

ROOT = pathlib.Path(__file__).resolve().parents[2]


def problems_of(call):
    with pytest.raises(trainsim.InputError) as e:
        call()
    return "\n".join(e.value.problems)


def test_dev_zero_is_refused_without_reading_it():
    assert "/dev/zero: is not a regular file but a character device" in problems_of(
        lambda: trainsim.Scenario.load("/dev/zero"))


def test_a_folder_and_a_fifo_are_refused(tmp_path):
    assert "is a directory" in problems_of(lambda: trainsim.Scenario.load(tmp_path))
    fifo = tmp_path / "s.yaml"
    os.mkfifo(fifo)
    assert "pipe" in problems_of(lambda: trainsim.Scenario.load(fifo))


def test_a_file_larger_than_the_cap_and_invalid_utf8_are_refused(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (17 << 20))
    assert "larger than trainsim reads" in problems_of(lambda: trainsim.Scenario.load(big))
    bad = tmp_path / "bad.yaml"
    bad.write_bytes((ROOT / "scenarios" / "quickstart.yaml").read_bytes() + b"# caf\xe9\n")
    assert "not valid UTF-8" in problems_of(lambda: trainsim.Scenario.load(bad))


def test_a_missing_file_names_it(tmp_path):
    assert "missing.yaml: cannot open the scenario file" in problems_of(
        lambda: trainsim.Scenario.load(tmp_path / "missing.yaml"))


def test_a_second_document_or_a_tag_is_refused_like_the_cli(tmp_path):
    two = tmp_path / "two.yaml"
    two.write_text((ROOT / "scenarios" / "quickstart.yaml").read_text() + "---\nplan: {tp: 8}\n")
    assert "a second YAML document" in problems_of(lambda: trainsim.Scenario.load(two))
    tagged = tmp_path / "tagged.yaml"
    tagged.write_text("name: !!python/object:os.system x\n")
    assert "YAML tag '!!python/object:os.system' refused" in problems_of(lambda: trainsim.Scenario.load(tagged))
