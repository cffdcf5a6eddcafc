"""The Python boundary (issue 31, class 5): whatever a caller passes in, the
module raises trainsim.InputError or TypeError naming the argument or the
path of keys, never a crash or a bare RuntimeError; Result.write is the
CLI's atomic writer; without NumPy a table says what to install.

The reproducers that crashed the interpreter run in a child interpreter,
so that a regression fails its test instead of killing pytest. The fuzz
target tests/fuzz/python_dict_fuzz.cpp replays the same inputs
(tests/fuzz/crashers/python_dict/).

Run by ctest (label `python`), or by hand after the build:
    PYTHONPATH=build/python python3 -m pytest tests/python/test_boundary.py
"""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import trainsim

ROOT = pathlib.Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"
DOCUMENT = {"cluster": {"preset": "dgx-a100-hdr", "nodes": 1}, "model": {"preset": "gpt3-125m"},
            "plan": {"tp": 2, "global_batch_size": 16}}


def isolated(code, *args):
    """Runs `code` in a child interpreter that imports this trainsim; returns
    the completed process (a crash shows as a negative status)."""
    package_dir = os.path.dirname(os.path.dirname(trainsim.__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package_dir, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)


def raised(code):
    """What `code` (run in a child interpreter, with `trainsim` imported)
    raises: [type name, message]."""
    program = ("import json, sys, trainsim\ntry:\n" + textwrap.indent(textwrap.dedent(code).strip("\n"), "    ")
               + "\nexcept Exception as e:\n"
               "    print(json.dumps([type(e).__module__ + '.' + type(e).__name__, str(e)]))\n"
               "else:\n    print(json.dumps(None))\n")
    result = isolated(program)
    assert result.returncode == 0, f"the interpreter died (status {result.returncode}): {result.stderr}"
    return json.loads(result.stdout.splitlines()[-1])


def problem(excinfo):
    return "\n".join(excinfo.value.problems) if isinstance(excinfo.value, trainsim.InputError) else str(
        excinfo.value)


# The reproducers: each segfaulted the interpreter.

def test_a_self_referencing_dict_is_an_input_error_naming_its_key():
    assert raised("""
        d = {}
        d["plan"] = {"x": d}
        trainsim.Scenario.from_dict(d)
        """) == ["trainsim.InputError",
                 "<from_dict>: plan.x: refers to itself (it is the dict at the top level, which holds it)"]


def test_a_self_referencing_list_is_an_input_error_naming_its_key():
    assert raised("""
        l = []
        l.append(l)
        trainsim.Scenario.from_dict({"plan": {"x": l}})
        """) == ["trainsim.InputError",
                 "<from_dict>: plan.x[0]: refers to itself (it is the list at plan.x, which holds it)"]


def test_a_list_nested_100000_deep_is_refused_at_64_levels():
    kind, message = raised("""
        x = []
        for i in range(100000):
            x = [x]
        trainsim.Scenario.from_dict({"model": {"moe": x}})
        """)
    assert kind == "trainsim.InputError"
    assert message.startswith("<from_dict>: model.moe[0]...[0][0][0]: nested more than 64 levels")


def test_a_lone_surrogate_is_an_input_error_naming_its_key():
    assert raised('trainsim.Scenario.from_dict({"name": "\\ud800"})') == [
        "trainsim.InputError",
        "<from_dict>: name: '\\ud800' is not valid Unicode (a lone surrogate) and cannot be written as UTF-8"]


def test_a_shared_list_doubled_60_times_is_refused_by_its_size_not_expanded():
    # No cycle and only 61 levels, but 2^60 values once written out.
    kind, message = raised("""
        x = [1]
        for i in range(60):
            x = [x, x]
        trainsim.Scenario.from_dict({"plan": {"x": x}})
        """)
    assert kind == "trainsim.InputError"
    assert message.startswith("<from_dict>: plan.x[0]")
    assert message.endswith("more than 16 MiB as YAML (the most a scenario file may hold; a list or dict "
                            "reached several times counts each time)")


def test_more_than_a_million_values_are_refused():
    with pytest.raises(trainsim.InputError) as e:
        trainsim.Scenario.from_dict({"plan": {"x": [None] * 1_000_001}})
    # The top-level dict, plan and the list count too: the value past the cap is x[999997].
    assert problem(e).startswith("<from_dict>: plan.x[999997]: more than 1,000,000 values")


# The depth and cycle guards' edges.

def nested(levels):
    x = "leaf"
    for _ in range(levels):
        x = [x]
    return x


def test_64_levels_are_written_and_65_refused():
    assert trainsim._trainsim.to_yaml(nested(64), "<t>").count("-") == 64
    with pytest.raises(trainsim._trainsim._InputError):
        trainsim._trainsim.to_yaml(nested(65), "<t>")


def test_a_list_reached_twice_without_a_cycle_is_written_twice():
    shared = [1, 2]
    text = trainsim._trainsim.to_yaml({"a": shared, "b": {"c": shared}}, "<t>")
    assert text == "a:\n  - 1\n  - 2\nb:\n  c:\n    - 1\n    - 2\n"


def test_a_cycle_through_several_containers_names_the_container_it_returns_to():
    with pytest.raises(trainsim.InputError) as e:
        d = {"plan": {"stages": [{}]}}
        d["plan"]["stages"][0]["back"] = d["plan"]
        trainsim.Scenario.from_dict(d)
    assert problem(e) == ("<from_dict>: plan.stages[0].back: refers to itself "
                          "(it is the dict at plan, which holds it)")


# Values that YAML cannot hold, or a scenario does not.

@pytest.mark.parametrize("value, kind", [({1, 2}, "set"), (b"x", "bytes"), (object(), "object"),
                                         (1j, "complex"), (range(2), "range"), (len, "builtin_function_or_method")])
def test_unsupported_values_are_type_errors_naming_the_key(value, kind):
    with pytest.raises(TypeError) as e:
        trainsim.Scenario.from_dict({"plan": {"tp": value}})
    assert str(e.value).startswith(f"<from_dict>: plan.tp: a {kind} cannot be written in a scenario")


@pytest.mark.parametrize("key, shown", [(1, "the key 1 is an int"), ((1, 2), "a key of type tuple"),
                                        (None, "a key of type NoneType")])
def test_keys_that_are_not_str_are_type_errors(key, shown):
    with pytest.raises(TypeError) as e:
        trainsim.Scenario.from_dict({"plan": {key: 1}})
    assert str(e.value).startswith(f"<from_dict>: plan: {shown}")


def test_a_key_with_a_lone_surrogate_is_an_input_error_showing_it_escaped():
    with pytest.raises(trainsim.InputError) as e:
        trainsim.Scenario.from_dict({"plan": {"t\udcffp": 1}})
    assert "plan: the key 't\\udcffp' is not valid Unicode" in problem(e)


@pytest.mark.parametrize("value, shown", [(float("nan"), "nan"), (float("inf"), "inf"), (-float("inf"), "-inf")])
def test_nan_and_inf_are_input_errors(value, shown):
    with pytest.raises(trainsim.InputError) as e:
        trainsim.Scenario.from_dict({"plan": {"tp": value}})
    assert problem(e) == f"<from_dict>: plan.tp: {shown} is not a finite number (a scenario's numbers are finite)"


def test_an_int_too_long_for_python_to_print_is_an_input_error():
    with pytest.raises(trainsim.InputError) as e:
        trainsim.Scenario.from_dict({"plan": {"tp": 10 ** 5000}})
    assert problem(e).startswith("<from_dict>: plan.tp: an integer that cannot be written (Exceeds the limit")


@pytest.mark.parametrize("text, code", [("\uffff", "U+FFFF"), ("a\ufdd0", "U+FDD0"), ("\U0010fffe", "U+10FFFE")])
def test_a_unicode_noncharacter_is_an_input_error(text, code):
    # Found by the fuzz target (tests/fuzz/crashers/python_dict/noncharacter_u_ffff.bin):
    # yaml-cpp's emitter writes each as U+FFFD, so the scenario read back differed.
    with pytest.raises(trainsim.InputError) as e:
        trainsim.Scenario.from_dict({"name": text})
    assert problem(e) == (f"<from_dict>: name: {text!r} holds {code}, a Unicode noncharacter, "
                          "which YAML cannot hold")
    with pytest.raises(trainsim.InputError, match="the key .* holds U+"):
        trainsim.Scenario.from_dict({text: 1})


def test_strs_that_start_like_a_document_marker_are_quoted():
    # Found by the fuzz target (crashers/python_dict/document_end_marker_str.bin):
    # yaml-cpp wrote them plain, and a top-level key "... x" ended the
    # document there, so the whole dict read back as null.
    text = trainsim._trainsim.to_yaml({"... x": 1, "--- y": "... z", "name": "..."}, "<t>")
    assert text == '"... x": 1\n"--- y": "... z"\nname: "..."\n'
    with pytest.raises(trainsim.InputError) as e:
        trainsim.Scenario.from_dict({**DOCUMENT, "... x": 1})
    assert "... x: unknown key" in problem(e)


@pytest.mark.parametrize("text", [";\r\r\r", "a\rb", "x\x7f", "tab\there", "é\x85"])
def test_strs_with_control_characters_are_written_escaped_and_read_back(text):
    # Found by the fuzz target (crashers/python_dict/lone_carriage_returns_str.bin):
    # yaml-cpp wrote ";\r\r..." plain, and read it back as ";".
    written = trainsim._trainsim.to_yaml({"k": text}, "<t>")
    assert written.startswith('k: "') and "\r" not in written and "\x7f" not in written
    yaml = pytest.importorskip("yaml")
    assert yaml.safe_load(written) == {"k": text}


def test_a_key_longer_than_yamls_implicit_key_limit_reads_back():
    # YAML limits a plain key to 1,024 characters; yaml-cpp writes a longer
    # one as an explicit key ("? k...").
    key = "k" * 2000
    text = trainsim._trainsim.to_yaml({key: 1, "b": [key]}, "<t>")
    assert text.startswith("? kkk")
    yaml = pytest.importorskip("yaml")
    assert yaml.safe_load(text) == {key: 1, "b": [key]}


def test_control_characters_in_a_key_are_shown_escaped():
    with pytest.raises(trainsim.InputError) as e:
        trainsim.Scenario.from_dict({"plan": {"t\x1bp": float("nan")}})
    assert problem(e).startswith("<from_dict>: plan.'t\\x1bp': nan")


def test_subclasses_are_written_by_value_without_running_their_methods():
    class Loud(float):
        def __repr__(self):
            raise RuntimeError("called")

    class Count(int):
        def __str__(self):
            raise RuntimeError("called")
        __repr__ = __str__

    class Items(dict):
        def items(self):
            raise RuntimeError("called")

    class Elements(list):
        def __iter__(self):
            raise RuntimeError("called")

    text = trainsim._trainsim.to_yaml(Items(a=Loud(1.5), b=Elements([Count(3)])), "<t>")
    assert text == "a: 1.5\nb:\n  - 3\n"


def test_an_index_object_is_written_as_its_integer_and_a_failing_one_is_a_type_error():
    class Index:
        def __index__(self):
            return 4

    class Broken:
        def __index__(self):
            raise ValueError("no")

    assert trainsim._trainsim.to_yaml({"tp": Index()}, "<t>") == "tp: 4\n"
    with pytest.raises(TypeError) as e:
        trainsim._trainsim.to_yaml({"tp": Broken()}, "<t>")
    assert str(e.value) == "<t>: tp: a Broken whose __index__ failed (no)"


def test_numpy_scalars_are_written_as_numbers():
    numpy = pytest.importorskip("numpy")
    assert trainsim._trainsim.to_yaml({"tp": numpy.int64(2), "x": numpy.float64(0.5)}, "<t>") == "tp: 2\nx: 0.5\n"


def test_floats_keep_pythons_spelling():
    assert trainsim._trainsim.to_yaml([1.0, 1e20, 0.1, -0.0, 5e-324], "<t>") == (
        "- 1.0\n- 1e+20\n- 0.1\n- -0.0\n- 5e-324\n")


def test_strings_that_read_as_other_yaml_are_quoted():
    words = ["~", "null", "", "- a", "a: b", "#", "&a", "*a", "!!python/object:os.system", "---", "'", "a\x00b",
             "\u2028", "\ufeff"]
    text = trainsim._trainsim.to_yaml({"names": words}, "<t>")
    yaml = pytest.importorskip("yaml")
    assert yaml.safe_load(text) == {"names": words}


# with_ and the other entry points.

@pytest.fixture(scope="module")
def quickstart():
    return trainsim.Scenario.load(QUICKSTART)


def test_with_refuses_the_same_values_naming_the_key(quickstart):
    cycle = []
    cycle.append(cycle)
    with pytest.raises(trainsim.InputError) as e:
        quickstart.with_(**{"plan.x": cycle})
    assert problem(e) == "Scenario.with_: plan.x[0]: refers to itself (it is the list at plan.x, which holds it)"
    with pytest.raises(trainsim.InputError) as e:
        quickstart.with_(**{"name": "\ud800"})
    assert problem(e).startswith("Scenario.with_: name: '\\ud800' is not valid Unicode")
    with pytest.raises(TypeError) as e:
        quickstart.with_(**{"plan.tp": {2}})
    assert str(e.value).startswith("Scenario.with_: plan.tp: a set cannot be written")
    with pytest.raises(trainsim.InputError):
        quickstart.with_(**{"\ud800": 1})


def test_with_writes_a_dict_as_a_yaml_flow_map(quickstart):
    s = quickstart.with_(**{"cluster.nic": {"bandwidth": "400Gbps", "latency": "5us"}, "plan.tp": 2})
    assert s.overrides == ["cluster.nic={bandwidth: 400Gbps, latency: 5us}", "plan.tp=2"]


def test_the_constructor_checks_its_arguments():
    with pytest.raises(TypeError, match="Scenario: text: expected a str, not bytes"):
        trainsim.Scenario(b"name: x", "x.yaml")
    with pytest.raises(TypeError, match="not one str"):
        trainsim.Scenario("name: x", "x.yaml", "plan.tp=2")
    with pytest.raises(trainsim.InputError, match="lone surrogate"):
        trainsim.Scenario("name: \ud800", "x.yaml")
    with pytest.raises(TypeError, match="Scenario.from_dict: name: expected a str"):
        trainsim.Scenario.from_dict(DOCUMENT, name=3)


def test_load_reads_through_the_clis_input_checks(tmp_path):
    with pytest.raises(trainsim.InputError) as e:
        trainsim.Scenario.load("/dev/zero")
    assert problem(e) == "/dev/zero: is not a regular file but a character device (expected the scenario file, a file)"
    with pytest.raises(trainsim.InputError, match="is a directory"):
        trainsim.Scenario.load(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"name: \xff\n")
    with pytest.raises(trainsim.InputError, match=r"bad.yaml:1:7: not valid UTF-8"):
        trainsim.Scenario.load(bad)
    with pytest.raises(TypeError, match="Scenario.load: expected a path"):
        trainsim.Scenario.load(3)


def test_load_takes_a_path_that_is_not_utf8(tmp_path):
    path = os.fsencode(tmp_path) + b"/odd-\xff.yaml"
    with open(path, "wb") as f:
        f.write(QUICKSTART.read_bytes())
    s = trainsim.Scenario.load(path)
    assert s.name == "quickstart" and os.fsencode(s.file) == path
    assert s.with_(**{"plan.tp": 4, "plan.dp": 1}).to_yaml().startswith("name: quickstart\n")
    with pytest.raises(trainsim.InputError) as e:
        trainsim.Scenario.load(os.fsencode(tmp_path) + b"/missing-\xff.yaml")
    assert "missing-\\xff.yaml: cannot open the scenario file" in problem(e)


def test_sweep_and_collective_check_their_values_before_starting_anything(quickstart):
    with pytest.raises(TypeError, match=r"trainsim.sweep: set: plan.tp: a set"):
        trainsim.sweep(quickstart, grid={"plan.micro_batch_size": [1]}, set={"plan.tp": {1}})
    with pytest.raises(trainsim.InputError, match=r"trainsim.sweep: only: plan.tp: '\\ud800'"):
        trainsim.sweep(quickstart, grid={"plan.micro_batch_size": [1]}, only={"plan.tp": ["\ud800"]})
    cycle = {}
    cycle["c"] = cycle
    with pytest.raises(trainsim.InputError, match=r"trainsim.sweep: sweep.grid.plan.tp.c: refers to itself"):
        trainsim.sweep(quickstart, grid={"plan.tp": cycle})
    with pytest.raises(trainsim.InputError, match=r"trainsim.collective: cluster.nic.bandwidth: nan"):
        trainsim.collective(cluster__nic__bandwidth=float("nan"))
    with pytest.raises(trainsim.InputError, match=r"trainsim collective: '\\ud800'"):
        trainsim.collective(op="\ud800")


def test_a_missing_binary_is_a_simulation_error_naming_it(quickstart, monkeypatch):
    monkeypatch.setenv("TRAINSIM", "/nonexistent/trainsim")
    with pytest.raises(trainsim.SimulationError, match="cannot run /nonexistent/trainsim: No such file"):
        trainsim.run(quickstart)


def test_an_out_folder_that_is_a_file_is_an_input_error(quickstart, tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(trainsim.InputError):
        trainsim.run(quickstart, out=target)


def test_accessors_of_a_removed_result_folder_are_input_errors(tmp_path):
    r = trainsim.Result(tmp_path / "gone", temporary=False)
    with pytest.raises(trainsim.InputError, match="summary.json: cannot read"):
        r.summary
    with pytest.raises(trainsim.InputError, match="cannot list"):
        r.files


# Result.write is the CLI's writer: a full disk leaves the old complete
# folder or an unfinished one, never a mix.

WRITE_UNDER_A_FILE_SIZE_LIMIT = """
import resource, signal, sys, trainsim
source, out, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
# Past the limit write(2) fails with EFBIG, as it fails with ENOSPC on a
# full disk; ignored, SIGXFSZ stays ignored in the trainsim child.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    trainsim.Result(source, temporary=False).write(out)
except trainsim.InputError as e:
    print("InputError:", e)
else:
    print("written")
"""


def folder_state(out):
    """'complete' (run.complete and every file it lists, at its size) or
    'unfinished' (no run.complete); anything else fails."""
    complete = out / "run.complete"
    if not complete.exists():
        return "unfinished"
    listed = json.loads(complete.read_text())["files"]
    for name, size in listed.items():
        assert (out / name).stat().st_size == size, f"{name} is not the size run.complete lists"
    return "complete"


def test_write_on_a_full_disk_leaves_the_old_complete_folder_or_an_unfinished_one(quickstart, tmp_path):
    old = trainsim.run(quickstart)
    new = trainsim.run(quickstart.with_(**{"plan.pp": 2, "plan.dp": 4}))
    out = tmp_path / "out"
    old.write(out)
    assert folder_state(out) == "complete"
    old_summary = (out / "summary.json").read_bytes()
    # A limit just under each file's size fails the write at that file.
    sizes = sorted({p.stat().st_size for p in new.directory.iterdir() if p.is_file()})
    limits = sorted({max(s - 1, 1) for s in sizes if s > 1})
    assert len(limits) >= 5
    failures = 0
    for limit in limits:
        result = isolated(WRITE_UNDER_A_FILE_SIZE_LIMIT, new.directory, out, limit)
        assert result.returncode == 0, f"limit {limit}: status {result.returncode}: {result.stderr}"
        state = folder_state(out)
        if result.stdout.startswith("InputError:"):
            failures += 1
            assert "File too large" in result.stdout, result.stdout
            # Once refused, the folder is marked unfinished before anything is replaced.
            assert state == "unfinished", f"limit {limit}: {state} after {result.stdout}"
        else:
            assert state == "complete"
        if state == "complete":
            assert (out / "summary.json").read_bytes() in (old_summary, (new.directory / "summary.json").read_bytes())
        # Start each limit from the old complete folder again.
        old.write(out)
    assert failures >= 4
    # Without a limit the new run replaces the old one whole.
    new.write(out)
    assert folder_state(out) == "complete"
    for name in ("summary.json", "timeline.csv", "per_gpu.csv"):
        assert (out / name).read_bytes() == (new.directory / name).read_bytes()


def test_write_gives_the_runs_files_byte_for_byte(quickstart, tmp_path):
    r = trainsim.run(quickstart)
    out = r.write(tmp_path / "copy")
    for p in r.directory.iterdir():
        if p.is_file():
            assert (out / p.name).read_bytes() == p.read_bytes(), p.name
    assert folder_state(out) == "complete"


# Without NumPy (nor pandas) the tables say what to install.

HIDE_NUMPY = """
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numpy", "pandas"):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden by the test)")
sys.meta_path.insert(0, Refuse())
"""


def test_without_numpy_tables_raise_import_error_naming_the_debian_package(tmp_path):
    result = isolated(HIDE_NUMPY + """
import trainsim
quickstart = sys.argv[1]
r = trainsim.run(quickstart)
assert r.summary["iteration_time_s"] > 0      # the summary needs nothing
for what, call in [("result.timeline", lambda: r.timeline),
                   ("result.per_gpu", lambda: r.per_gpu),
                   ("trainsim.sweep", lambda: trainsim.sweep(trainsim.Scenario.load(quickstart),
                                                             grid={"plan.micro_batch_size": [1, 2]})),
                   ("trainsim.collective", lambda: trainsim.collective(max="2MiB"))]:
    try:
        call()
    except ImportError as e:
        print(what, "|", e)
    else:
        print(what, "| no error")
""", QUICKSTART)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 4
    for line in lines:
        what, message = line.split(" | ")
        assert message.startswith(f"{what} returns a table, which needs NumPy (Debian's python3-numpy"), line
        assert "apt-get install python3-numpy" in message
