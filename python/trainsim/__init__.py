"""trainsim from Python: load a scenario, change it, simulate, read the results.

    import trainsim
    s = trainsim.Scenario.load("scenarios/quickstart.yaml")
    r = trainsim.run(s.with_(**{"plan.tp": 4, "plan.pp": 2}))
    r.summary["mfu"], r.timeline.head()

Scenarios are checked by trainsim's own loader (the rules and messages of
`trainsim run --set`): a mistake raises trainsim.InputError naming the file
and line, or the override, the key, the bad value and what was expected.
Each simulation runs in a child process (SimGrid runs one engine per
process) executing the trainsim binary this module was built with (or the
TRAINSIM environment variable), with the GIL released: threads may run
several at once. Tables are pandas DataFrames when pandas is installed,
NumPy structured arrays otherwise.
"""
import io
import json
import os
import pathlib
import shutil
import tempfile
import weakref

from . import _trainsim
from ._build import TRAINSIM_BUILT

__all__ = ["InputError", "SimulationError", "Scenario", "Result", "run", "sweep", "collective", "presets",
           "executable"]


class InputError(ValueError):
    """Bad input: `problems` lists every problem, each naming where it is
    (file:line:column, or the --set override) and the key."""

    def __init__(self, problems):
        self.problems = [str(p) for p in problems]
        super().__init__("\n".join(self.problems))


class SimulationError(RuntimeError):
    """The simulation failed for another reason than its input (exit status 2)."""


def executable():
    """The trainsim binary that simulations run: $TRAINSIM, else the one built
    with this module."""
    return os.environ.get("TRAINSIM") or TRAINSIM_BUILT


def _call(function, *args, **kwargs):
    try:
        return function(*args, **kwargs)
    except _trainsim._InputError as e:
        raise InputError(e.args[0] if e.args and isinstance(e.args[0], list) else [str(e)]) from None


def _yaml_value(value):
    """A Python value as the YAML text of a --set override."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


class Scenario:
    """A scenario: YAML text, the file it came from (relative paths in it are
    relative to that file's folder) and --set style overrides. Immutable:
    `with_` returns a new one. Every constructor checks it."""

    def __init__(self, text, file, overrides=(), *, check_memory=True):
        self._text = text
        self._file = str(file)
        self._overrides = tuple(overrides)
        self._check_memory = check_memory
        self._info = _call(_trainsim.check_scenario, text, self._file, list(self._overrides), check_memory)

    @classmethod
    def load(cls, path, *, allow_oom=False):
        """The scenario file at `path`."""
        path = pathlib.Path(path)
        # The CLI's reader: a folder, a device such as /dev/zero, a FIFO, an
        # oversized file or invalid UTF-8 is an InputError, as for `trainsim run`.
        text = _call(_trainsim.read_input_file, str(path))
        return cls(text, path, check_memory=not allow_oom)

    @classmethod
    def from_dict(cls, document, *, name="from_dict", allow_oom=False):
        """A scenario from nested dicts and lists, as the YAML would read:
        {"cluster": {"preset": "dgx-a100-hdr", "nodes": 2}, "model": {...}, "plan": {...}}."""
        text = _call(_trainsim.to_yaml, document)
        return cls(text, f"<{name}>", check_memory=not allow_oom)

    def with_(self, **overrides):
        """A copy with dotted keys set, exactly as `--set KEY=VALUE`:
        s.with_(**{"plan.tp": 4, "cluster.nic.bandwidth": "400Gbps"})."""
        more = tuple(f"{key}={_yaml_value(value)}" for key, value in overrides.items())
        return Scenario(self._text, self._file, self._overrides + more, check_memory=self._check_memory)

    @property
    def name(self):
        return self._info["name"]

    @property
    def gpus(self):
        return self._info["gpus"]

    @property
    def info(self):
        """Name, GPUs, nodes, GPU type, model, parameters and the resolved plan."""
        return dict(self._info)

    @property
    def overrides(self):
        return list(self._overrides)

    @property
    def file(self):
        return self._file

    def to_yaml(self):
        """The scenario with its overrides applied, as YAML."""
        return _call(_trainsim.resolved_yaml, self._text, self._file, list(self._overrides))

    def _command_file(self, directory):
        """A file `trainsim` can read: the original one (its relative paths
        keep their meaning), or the text written into `directory`."""
        if os.path.isfile(self._file):
            return os.path.abspath(self._file)
        path = os.path.join(directory, "scenario.yaml")
        with open(path, "w") as f:
            f.write(self._text)
        return path

    def _set_arguments(self):
        out = []
        for o in self._overrides:
            out += ["--set", o]
        return out

    def __repr__(self):
        i = self._info
        plan = i["plan"]
        return (f"<trainsim.Scenario {i['name']}: {i['model']} on {i['gpus']} x {i['gpu']}, "
                f"dp {plan['dp']} tp {plan['tp']} pp {plan['pp']}"
                + (f", {len(self._overrides)} overrides" if self._overrides else "") + ">")


def _run(argv, what):
    status, out, err = _trainsim.run_program([executable(), *argv])
    out, err = out.decode(errors="replace"), err.decode(errors="replace")
    if status == 1:
        problems = [line[len("error: "):] for line in err.splitlines() if line.startswith("error: ")]
        raise InputError(problems or [err.strip() or f"{what}: bad input"])
    if status != 0:
        raise SimulationError(f"{what} failed (exit status {status}): {err.strip()}")
    return out, err


def _table(path):
    """A CSV file as a pandas DataFrame, or a NumPy structured array."""
    try:
        import pandas
        return pandas.read_csv(path)
    except ImportError:
        import numpy
        return numpy.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding="utf-8")


def _csv_text_table(text):
    try:
        import pandas
        return pandas.read_csv(io.StringIO(text))
    except ImportError:
        import numpy
        return numpy.genfromtxt(io.StringIO(text), delimiter=",", names=True, dtype=None, encoding="utf-8")


class Result:
    """The outputs of one `trainsim run`, in a temporary folder removed with
    the Result (or `directory`, when run was given `out`)."""

    def __init__(self, directory, temporary):
        self.directory = pathlib.Path(directory)
        if temporary:
            self._cleanup = weakref.finalize(self, shutil.rmtree, str(directory), True)
        self._summary = None

    @property
    def summary(self):
        """summary.json, as a dict (equal to the file)."""
        if self._summary is None:
            with open(self.directory / "summary.json") as f:
                self._summary = json.load(f)
        return self._summary

    @property
    def timeline(self):
        """timeline.csv: one row per task execution and GPU."""
        return _table(self.directory / "timeline.csv")

    @property
    def per_gpu(self):
        return _table(self.directory / "per_gpu.csv")

    @property
    def per_stage(self):
        return _table(self.directory / "per_stage.csv")

    @property
    def links(self):
        return _table(self.directory / "links.csv")

    @property
    def critical_path(self):
        return _table(self.directory / "critical_path.csv")

    @property
    def files(self):
        return sorted(p.name for p in self.directory.iterdir())

    def write(self, out_dir, *, html=False):
        """Copy every output into `out_dir`; with html=True also report.html
        (written by `trainsim report`). Returns the folder."""
        out = pathlib.Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for p in self.directory.iterdir():
            if p.is_file():
                shutil.copy2(p, out / p.name)
        if html:
            _run(["report", str(out), "--html", "--quiet"], "trainsim report")
        return out

    def __repr__(self):
        s = self.summary
        return (f"<trainsim.Result {s.get('scenario', '')}: iteration {s['iteration_time_s']:.4g} s, "
                f"MFU {100 * s.get('mfu', 0):.1f}%>")


def run(scenario, iterations=1, seeds=1, *, out=None, html=False, allow_oom=False, balance=None):
    """Simulate `scenario` (a Scenario, or a path) in a child process; the
    GIL is released meanwhile. `out`: keep the outputs there (default: a
    temporary folder owned by the Result)."""
    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario, allow_oom=allow_oom)
    temporary = out is None
    directory = tempfile.mkdtemp(prefix="trainsim-run-") if temporary else str(out)
    os.makedirs(directory, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="trainsim-scenario-")
    try:
        argv = ["run", scenario._command_file(scratch), "--out", directory, "--quiet",
                "--iterations", str(iterations), "--seeds", str(seeds), *scenario._set_arguments()]
        if html:
            argv.append("--html")
        if allow_oom:
            argv.append("--allow-oom")
        if balance:
            argv += ["--balance", balance]
        _run(argv, f"trainsim run {scenario.name}")
    except BaseException:
        if temporary:
            shutil.rmtree(directory, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Result(directory, temporary)


def sweep(study, *, grid=None, zip=None, variants=None, jobs=None, only=None, set=None, keep="summary",
          allow_oom=False, out=None, html=False):
    """Run a study and return results.csv as a table (one row per point).

    `study`: a study file's path (its sweep and variants), or a Scenario to
    sweep with `grid` ({"plan.tp": [1, 2, 4]}), `zip` and / or `variants`
    ({"name": {"plan.tp": 2}}). `only`: {"cluster.nodes": [1, 8]} runs a
    subset (`--only`). `set`: {"plan.global_batch_size": 256} for every
    point (`--set`). `jobs`: parallel simulations (default: one per
    processor). `out`: keep every point's outputs there."""
    scratch = tempfile.mkdtemp(prefix="trainsim-sweep-")
    try:
        if isinstance(study, Scenario):
            if not (grid or zip or variants):
                raise InputError(["trainsim.sweep: a Scenario needs grid, zip or variants to sweep"])
            extra = {}
            if grid or zip:
                extra["sweep"] = {k: v for k, v in (("grid", grid), ("zip", zip)) if v}
            if variants:
                extra["variants"] = variants
            path = os.path.join(scratch, f"{study.name}.yaml")
            with open(path, "w") as f:
                f.write(study.to_yaml() + _trainsim.to_yaml(extra))
            argv = ["sweep", path]
        else:
            argv = ["sweep", str(study)]
        directory = str(out) if out is not None else os.path.join(scratch, "out")
        argv += ["--out", directory, "--keep", keep, "--quiet"]
        if jobs:
            argv += ["-j", str(jobs)]
        for key, value in (set or {}).items():
            argv += ["--set", f"{key}={_yaml_value(value)}"]
        for column, values in (only or {}).items():
            values = values if isinstance(values, (list, tuple)) else [values]
            argv += ["--only", f"{column}={','.join(str(v) for v in values)}"]
        if allow_oom:
            argv.append("--allow-oom")
        if html:
            argv.append("--html")
        _run(argv, "trainsim sweep")
        return _table(os.path.join(directory, "results.csv"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def collective(cluster="dgx-a100-hdr", op="all_reduce", ranks=8, min="1MiB", max="1GiB", factor=2,
               algorithm="auto", fidelity="detailed", **set):
    """`trainsim collective` (nccl-tests): one row per size with the
    algorithm, time and algorithm / bus bandwidth. `set`: cluster keys,
    {"cluster.nic.bandwidth": "400Gbps"} as keyword arguments with dots
    spelled as `__` (cluster__nic__bandwidth="400Gbps")."""
    argv = ["collective", "--cluster", str(cluster), "--op", op, "--ranks", str(ranks), "--min", str(min),
            "--max", str(max), "-f", str(factor), "--algorithm", algorithm, "--fidelity", fidelity,
            "--format", "csv"]
    for key, value in set.items():
        argv += ["--set", f"{key.replace('__', '.')}={_yaml_value(value)}"]
    out, _ = _run(argv, "trainsim collective")
    return _csv_text_table(out)


def presets():
    """What scenarios can name: {"gpus": [...], "clusters": [...], "models": [...]}."""
    return _trainsim.presets()
