"""The scenario and study JSON Schemas (docs/schema/), checked with a real
validator (Debian's python3-jsonschema): they are what `trainsim schema`
generates from the loader's key tables, every shipped scenario and study
passes them, and on a set of bad files (tests/fixtures/schema/bad/) the
schema and the loader (`trainsim schema --check`) both refuse, naming the
same key; on good ones both accept.

Run by ctest (label `schema`), or by hand:
    TRAINSIM=build/trainsim python3 -m pytest tests/python/test_schema.py
"""
import json
import os
import pathlib
import re
import subprocess

import pytest
import yaml
from jsonschema import Draft202012Validator

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRAINSIM = os.environ.get("TRAINSIM", str(ROOT / "build" / "trainsim"))
SCHEMAS = {
    "scenario": ROOT / "docs" / "schema" / "scenario.schema.json",
    "study": ROOT / "docs" / "schema" / "study.schema.json",
}


def trainsim(*args):
    return subprocess.run([TRAINSIM, *args], cwd=ROOT, capture_output=True, text=True)


def load_yaml(path):
    with open(path) as f:
        return yaml.safe_load(f)


def kind_of(document):
    return "study" if isinstance(document, dict) and ("sweep" in document or "variants" in document) else "scenario"


def validator(kind):
    with open(SCHEMAS[kind]) as f:
        return Draft202012Validator(json.load(f))


def dotted(error):
    """The failing value's dotted key, as the loader names it ("plan.tp")."""
    path = [str(p) for p in error.absolute_path]
    # For an unknown key, jsonschema reports the map: name the key itself.
    if error.validator == "additionalProperties":
        extra = re.findall(r"'([^']+)' was unexpected", error.message)
        path += extra[:1]
    if error.validator == "required":
        path += re.findall(r"'([^']+)' is a required property", error.message)[:1]
    # A map key that is not one of the format's dotted keys (a study axis):
    # the key itself, as the loader names it.
    if "propertyNames" in error.absolute_schema_path and isinstance(error.instance, str):
        return error.instance
    # A key excluded by another (workload beside model and plan): name the
    # first excluded key present.
    if error.validator == "not" and isinstance(error.instance, dict):
        excluded = [k for rule in error.validator_value.get("anyOf", []) for k in rule.get("required", [])]
        path += [k for k in excluded if k in error.instance][:1]
    return ".".join(path)


@pytest.mark.parametrize("kind", ["scenario", "study"])
def test_shipped_schema_is_what_trainsim_generates(kind):
    result = trainsim("schema", *(["--study"] if kind == "study" else []))
    assert result.returncode == 0, result.stderr
    shipped = SCHEMAS[kind].read_text()
    assert json.loads(result.stdout) == json.loads(shipped), (
        f"{SCHEMAS[kind]} is stale: regenerate it with "
        f"build/trainsim schema {'--study ' if kind == 'study' else ''}> {SCHEMAS[kind].relative_to(ROOT)}")


@pytest.mark.parametrize("kind", ["scenario", "study"])
def test_schema_is_valid_draft_2020_12(kind):
    with open(SCHEMAS[kind]) as f:
        Draft202012Validator.check_schema(json.load(f))


SHIPPED = sorted(p for p in (ROOT / "scenarios").rglob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_scenario_and_study_passes_its_schema(path):
    document = load_yaml(path)
    errors = [f"{dotted(e)}: {e.message}" for e in validator(kind_of(document)).iter_errors(document)]
    assert not errors, errors


BAD = sorted((ROOT / "tests" / "fixtures" / "schema" / "bad").glob("*.yaml"))
GOOD = sorted((ROOT / "tests" / "fixtures" / "schema" / "good").glob("*.yaml"))


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_schema_and_loader_both_refuse_a_bad_file_naming_the_same_key(path):
    document = load_yaml(path)
    schema_errors = list(validator(kind_of(document)).iter_errors(document))
    assert schema_errors, f"the schema accepts {path.name}, which the loader should refuse"
    result = trainsim("schema", "--check", str(path))
    assert result.returncode == 1, f"the loader accepts {path.name}: {result.stdout}{result.stderr}"
    keys = {dotted(e) for e in schema_errors}
    # The loader writes list items as plots[0], the schema's path as plots.0.
    loader = re.sub(r"\[(\d+)\]", r".\1", result.stderr)
    # The loader's message names the key (or its section, for what is
    # missing from it) where the schema found the problem.
    assert any(key and (key in loader or key.rsplit(".", 1)[0] in loader) for key in keys), (
        f"schema: {keys}; loader: {result.stderr}")


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.stem)
def test_schema_and_loader_both_accept_a_good_file(path):
    document = load_yaml(path)
    errors = [f"{dotted(e)}: {e.message}" for e in validator(kind_of(document)).iter_errors(document)]
    assert not errors, errors
    result = trainsim("schema", "--check", str(path))
    assert result.returncode == 0, result.stderr


def test_editors_complete_dotted_keys_in_study_axes():
    with open(SCHEMAS["study"]) as f:
        schema = json.load(f)
    plain = schema["$defs"]["dotted_key"]["anyOf"][0]["enum"]
    for key in ["plan.tp", "cluster.nic.bandwidth", "model.moe.experts", "perturbations.failures.gpu_mtbf"]:
        assert key in plain
    v = Draft202012Validator(schema)
    ok = {"cluster": {"preset": "dgx-a100-hdr"}, "model": {"preset": "gpt3-1.3b"},
          "plan": {"global_batch_size": 64}, "sweep": {"grid": {"cluster.groups.1.nodes": [1, 2]}}}
    assert not list(v.iter_errors(ok))
