"""The Python module `trainsim` (python/trainsim): scenarios checked with the
CLI's rules and messages, runs whose results equal the CLI's, tables,
sweeps, collectives, presets, and the GIL released while simulating.

Run by ctest (label `python`), or by hand after the build:
    PYTHONPATH=build/python python3 -m pytest tests/python/test_module.py
"""
import json
import os
import pathlib
import subprocess
import sys
import threading
import time

import pytest

import trainsim

ROOT = pathlib.Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"


def cli(*args, cwd=ROOT):
    return subprocess.run([trainsim.executable(), *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def quickstart():
    return trainsim.Scenario.load(QUICKSTART)


def test_a_what_if_in_three_lines(quickstart):
    r = trainsim.run(quickstart.with_(**{"plan.tp": 4, "plan.pp": 2}))
    assert r.summary["plan"]["tp"] == 4 and r.summary["plan"]["pp"] == 2
    assert 0 < r.summary["mfu"] < 1


def test_load_reads_the_scenario(quickstart):
    assert quickstart.name == "quickstart"
    assert quickstart.gpus == 16
    assert quickstart.info["plan"] == {"dp": 2, "tp": 2, "pp": 4, "cp": 1, "micro_batch_size": 2,
                                       "global_batch_size": 64, "micro_batches": 16}
    assert "quickstart" in repr(quickstart)


def test_with_gives_the_same_message_as_set(quickstart):
    with pytest.raises(trainsim.InputError) as e:
        quickstart.with_(**{"plan.tp": 3})
    result = cli("run", str(QUICKSTART), "--set", "plan.tp=3", "--quiet", "--out", "/nonexistent/never")
    assert result.returncode == 1
    expected = [line[len("error: "):] for line in result.stderr.splitlines() if line.startswith("error: ")]
    # The CLI names the file as given; the problems are otherwise the same.
    assert [p.replace(str(QUICKSTART), "scenarios/quickstart.yaml") for p in e.value.problems] == [
        p.replace(str(QUICKSTART), "scenarios/quickstart.yaml") for p in expected]
    # The override's own problem names it; a rule across keys names the
    # file's line of the key it checks (plan.dp here), as the CLI does.
    assert any(p.startswith("--set plan.tp=3: plan.tp: ") for p in e.value.problems)
    assert any("plan.dp: dp x tp x pp" in p for p in e.value.problems)


def test_an_unknown_key_names_the_key_and_the_override(quickstart):
    with pytest.raises(trainsim.InputError) as e:
        quickstart.with_(**{"plan.tpp": 2})
    assert "--set plan.tpp=2: plan.tpp: unknown key" in str(e.value)


def test_from_dict_errors_name_the_line_of_the_dict():
    document = {"cluster": {"preset": "dgx-a100-hdr", "nodes": 1},
                "model": {"preset": "gpt3-125m"},
                "plan": {"tp": 2, "global_batch_size": 16, "schedule": "1f2b"}}
    with pytest.raises(trainsim.InputError) as e:
        trainsim.Scenario.from_dict(document)
    assert len(e.value.problems) == 1
    assert e.value.problems[0].startswith("<from_dict>:")
    assert "plan.schedule: '1f2b' is not a known value" in e.value.problems[0]
    ok = trainsim.Scenario.from_dict({**document, "plan": {"tp": 2, "global_batch_size": 16}})
    assert ok.info["plan"]["dp"] == 4


def test_a_name_that_is_a_path_raises_input_error(quickstart):
    # The loader's name policy (platforms/names.hpp), as for the CLI: a name
    # is the run's folder, and "../x" would be outside runs/.
    document = {"name": "../x", "cluster": {"preset": "dgx-a100-hdr", "nodes": 1},
                "model": {"preset": "gpt3-125m"}, "plan": {"tp": 2, "global_batch_size": 16}}
    with pytest.raises(trainsim.InputError) as e:
        trainsim.Scenario.from_dict(document)
    assert "name: '../x' is not a valid name: it holds '/'" in e.value.problems[0]
    with pytest.raises(trainsim.InputError) as e:
        quickstart.with_(**{"name": '"q\\0z"'})
    assert "'q\\0z' is not a valid name" in e.value.problems[0]
    assert trainsim.Scenario.from_dict({**document, "name": "ok-1.x"}).name == "ok-1.x"
    del document["name"]
    assert trainsim.Scenario.from_dict(document).name == "from_dict"


def test_run_summary_equals_the_clis_summary_json(quickstart, tmp_path):
    s = quickstart.with_(**{"plan.pp": 2, "plan.dp": 4})
    r = trainsim.run(s)
    result = cli("run", str(QUICKSTART), "--set", "plan.pp=2", "--set", "plan.dp=4", "--quiet",
                 "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "summary.json") as f:
        cli_summary = json.load(f)
    assert r.summary == cli_summary
    assert (tmp_path / "timeline.csv").read_text() == (r.directory / "timeline.csv").read_text()


def test_tables_are_dataframes_with_every_row(quickstart):
    pandas = pytest.importorskip("pandas")
    r = trainsim.run(quickstart)
    timeline = r.timeline
    assert isinstance(timeline, pandas.DataFrame)
    rows = (r.directory / "timeline.csv").read_text().count("\n") - 1
    assert len(timeline) == rows
    assert list(timeline.columns[:4]) == ["gpu", "stream", "kind", "name"]
    assert len(r.per_gpu) == 16
    assert len(r.per_stage) == 4
    assert len(r.links) > 0 and len(r.critical_path) > 0


def test_without_pandas_tables_are_numpy_structured_arrays(quickstart, monkeypatch):
    numpy = pytest.importorskip("numpy")
    r = trainsim.run(quickstart)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas fails
    per_gpu = r.per_gpu
    assert isinstance(per_gpu, numpy.ndarray)
    assert "gpu" in per_gpu.dtype.names and len(per_gpu) == 16


def test_write_writes_every_output_again_and_adds_the_html_report(quickstart, tmp_path):
    r = trainsim.run(quickstart)
    out = r.write(tmp_path / "out", html=True)
    assert (out / "summary.json").read_text() == (r.directory / "summary.json").read_text()
    assert (out / "report.html").exists()
    assert set(r.files) <= {p.name for p in out.iterdir()}


def test_the_temporary_outputs_go_with_the_result(quickstart):
    r = trainsim.run(quickstart)
    directory = r.directory
    assert directory.exists()
    del r
    import gc
    gc.collect()
    assert not directory.exists()


def test_bad_input_found_by_the_child_raises_input_error(quickstart):
    # The scenario is fine; the run's options are checked by the binary.
    with pytest.raises(trainsim.InputError) as e:
        trainsim.run(quickstart, iterations=0)
    assert "--iterations" in e.value.problems[0]


def test_sweep_returns_one_row_per_point(quickstart):
    table = trainsim.sweep(quickstart, grid={"plan.micro_batch_size": [1, 2]}, jobs=2)
    assert len(table) == 2
    assert list(table["status"]) == ["ok", "ok"]
    assert list(table["plan.micro_batch_size"]) == [1, 2]
    assert all(table["iteration_time_s"] > 0)


def test_sweep_of_a_study_file_with_only(tmp_path):
    table = trainsim.sweep(ROOT / "scenarios" / "study-tp-pp.yaml", only={"plan.tp": [1, 8], "plan.pp": [1]},
                           jobs=2)
    assert len(table) == 2


def test_collective_is_nccl_tests_as_a_table():
    table = trainsim.collective(cluster="dgx-a100-hdr", op="all_reduce", ranks=8, min="1MiB", max="4MiB")
    assert list(table["size_bytes"]) == [1 << 20, 2 << 20, 4 << 20]
    assert list(table.columns) == ["size_bytes", "count", "algorithm", "channels", "time_us", "algbw_GBps",
                                   "busbw_GBps"]
    # A ring all-reduce moves 2 (n - 1) / n of the data per GPU.
    assert all(abs(table["busbw_GBps"] / table["algbw_GBps"] - 2 * 7 / 8) < 1e-2)


def test_presets_list_gpus_clusters_and_models():
    p = trainsim.presets()
    assert "A100-SXM-80GB" in p["gpus"]
    assert "dgx-h100-ndr" in p["clusters"]
    assert "llama2-7b" in p["models"]


def test_simulations_release_the_gil():
    # While one thread waits in run_program for a 1 s child, the main thread
    # keeps running Python code: it could not if the GIL were held. Checked
    # by times seen from both threads, not by a total duration, so a loaded
    # machine does not matter.
    window = {}

    def child():
        window["start"] = time.monotonic()
        trainsim._trainsim.run_program(["/bin/sleep", "1"])
        window["end"] = time.monotonic()

    thread = threading.Thread(target=child)
    thread.start()
    ticks = []
    while thread.is_alive():
        ticks.append(time.monotonic())
        time.sleep(0.01)
    thread.join()
    inside = [t for t in ticks if window["start"] + 0.2 < t < window["end"] - 0.2]
    assert window["end"] - window["start"] >= 1.0
    assert len(inside) >= 10, f"the main thread ran {len(inside)} times during the child's second"
