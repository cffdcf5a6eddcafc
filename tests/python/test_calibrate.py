"""trainsim.calibrate and trainsim.diff: the CLI's commands from Python,
their tables as DataFrames. A simulated iteration exported as PyTorch
profiler traces (`trainsim export --kineto`) under a profile of its own
calibrates back to it and diffs to its own step time.

Run by ctest (label `python`), or by hand after the build:
    PYTHONPATH=build/python python3 -m pytest tests/python/test_calibrate.py
"""
import pathlib
import subprocess

import pytest

import trainsim

pandas = pytest.importorskip("pandas")

ROOT = pathlib.Path(__file__).resolve().parents[2]
H100 = (ROOT / "platforms" / "efficiency" / "h100.yaml").read_text()


def scenario(name, gpu):
    return (f"name: {name}\ncluster:\n  gpu: {gpu}\n  nodes: 1\n  gpus_per_node: 4\n"
            "model: {preset: llama3-8b, layers: 2, seq_len: 2048}\n"
            "plan: {dp: 1, tp: 2, pp: 2, micro_batch_size: 1, global_batch_size: 4, schedule: 1f1b}\n")


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Traces of an H100 whose large GEMMs reach 0.61 of peak (0.748 in h100.yaml)."""
    d = tmp_path_factory.mktemp("calibrate")
    (d / "producer.yaml").write_text(
        H100.replace("name: h100", "name: producer").replace("  peak_fraction: 0.748", "  peak_fraction: 0.61"))
    (d / "produced.yaml").write_text(
        scenario("produced", "{base: H100-SXM, name: H100-SXM, efficiency_profile: producer.yaml}"))
    (d / "base.yaml").write_text(scenario("base", "H100-SXM"))
    done = subprocess.run([trainsim.executable(), "export", str(d / "produced.yaml"), "--kineto", str(d / "traces")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return d


def test_calibrate_returns_the_fit_as_a_dataframe_and_keeps_its_files(traces):
    fit = trainsim.calibrate(traces / "traces", traces / "base.yaml", out=traces / "fit", name="mine")
    assert isinstance(fit, pandas.DataFrame)
    matmul = fit[(fit.kind == "part") & (fit.name == "matmul")].iloc[0]
    assert matmul.method == "shapes"
    assert matmul.value_before == pytest.approx(0.748)
    assert matmul.value_after == pytest.approx(0.61, rel=0.01)
    assert set(fit.kind) == {"part", "class", "host_overhead", "collective"}
    assert (traces / "fit" / "mine.yaml").exists()
    assert fit.attrs["profile"] == str(traces / "fit" / "mine.yaml")
    calibrated = fit.attrs["scenario"]
    assert isinstance(calibrated, trainsim.Scenario)
    assert "efficiency_profile: mine.yaml" in calibrated.to_yaml()


def test_diff_of_the_calibrated_scenario_gives_the_step_time_back(traces):
    fit = trainsim.calibrate([traces / "traces"], traces / "base.yaml", out=traces / "fit2")
    table = trainsim.diff(traces / "traces", fit.attrs["scenario"])
    assert isinstance(table, pandas.DataFrame)
    assert list(table.columns) == ["metric", "rank", "measured", "simulated", "difference", "relative"]
    step = table[(table.metric == "step_time_s") & (table["rank"] == "all")].iloc[0]
    assert abs(step.relative) < 0.01
    assert set(table[table.metric == "step_time_s"]["rank"]) == {"all", "0", "1", "2", "3"}
    # The base profile's GEMMs are faster than the traces': a shorter step.
    before = trainsim.diff(traces / "traces", traces / "base.yaml", out=traces / "diff-base")
    assert before[(before.metric == "class.gemm_s") & (before["rank"] == "all")].iloc[0].relative < -0.1
    assert (traces / "diff-base" / "report.html").exists()
    assert before.attrs["directory"] == str(traces / "diff-base")


def test_mistakes_raise_input_error_or_type_error(traces, tmp_path):
    with pytest.raises(trainsim.InputError) as e:
        trainsim.diff(tmp_path / "missing.json", traces / "base.yaml")
    assert "missing.json: no such file or folder" in str(e.value)
    (tmp_path / "cpu.json").write_text('{"traceEvents": []}')
    with pytest.raises(trainsim.InputError) as e:
        trainsim.calibrate(tmp_path / "cpu.json", traces / "base.yaml", out=tmp_path / "o")
    assert "cpu.json: no GPU kernels" in str(e.value)
    with pytest.raises(TypeError):
        trainsim.calibrate(7, traces / "base.yaml")
    with pytest.raises(trainsim.InputError):
        trainsim.diff([], traces / "base.yaml")
