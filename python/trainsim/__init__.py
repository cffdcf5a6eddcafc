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
NumPy structured arrays otherwise (NumPy is Debian's python3-numpy, which
scripts/setup installs; without either, a table raises ImportError saying
so). Every mistake in what is passed in raises InputError or TypeError
naming the argument or the key, never a crash; outputs are written by the
trainsim binary itself, each file atomically, so a folder is either a
complete run (run.complete) or visibly unfinished.
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
           "calibrate", "diff", "executable"]


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
    except _trainsim._InternalError as e:
        raise SimulationError(f"trainsim's own error (please report it): {e}") from None


def _text(value, what):
    """`value` checked to be a str that UTF-8 can hold (a lone surrogate
    such as '\\ud800' cannot be written to a file or passed to trainsim)."""
    if not isinstance(value, str):
        raise TypeError(f"{what}: expected a str, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InputError([f"{what}: {value!r} is not valid Unicode (a lone surrogate at character {e.start}) "
                          "and cannot be written as UTF-8"]) from None
    return value


def _path(value, what):
    """A path (str, bytes or os.PathLike) as the bytes the OS takes: names
    read from the disk that are not UTF-8 come back as they were."""
    try:
        path = os.fspath(value)
    except TypeError:
        raise TypeError(f"{what}: expected a path (str or os.PathLike), not {type(value).__name__}") from None
    try:
        return os.fsencode(path)
    except UnicodeEncodeError as e:
        raise InputError([f"{what}: {path!r} is not a path the OS can take (character {e.start})"]) from None


def _argument(value, what):
    """One command-line argument for the trainsim binary, as bytes (a str
    holding bytes that are not UTF-8, as os.fsdecode gives them, passes
    them on: the binary refuses them in a value, with its message)."""
    if isinstance(value, (bytes, os.PathLike)):
        return _path(value, what)
    text = str(value)
    try:
        return os.fsencode(text)
    except UnicodeEncodeError as e:
        raise InputError([f"{what}: {text!r} is not valid Unicode (a lone surrogate at character {e.start}) "
                          "and cannot be passed to trainsim"]) from None


def _override(key, value, where):
    """KEY=VALUE as --set reads it: a str as it is, dicts and lists as YAML
    (cycles, depth, surrogates and NaN refused with the key's path)."""
    return _call(_trainsim.override_text, key, value, where)


def _temporary_folder(prefix):
    try:
        return tempfile.mkdtemp(prefix=prefix)
    except OSError as e:
        raise InputError([f"{tempfile.gettempdir()}: cannot create a temporary folder ({e.strerror})"]) from None


class Scenario:
    """A scenario: YAML text, the file it came from (relative paths in it are
    relative to that file's folder) and --set style overrides. Immutable:
    `with_` returns a new one. Every constructor checks it."""

    def __init__(self, text, file, overrides=(), *, check_memory=True):
        self._text = _text(text, "Scenario: text")
        self._file = os.fsdecode(_path(file, "Scenario: file"))
        if isinstance(overrides, (str, bytes)):
            raise TypeError("Scenario: overrides: expected a list of 'KEY=VALUE' str, not one str")
        self._overrides = tuple(_text(o, "Scenario: override") for o in overrides)
        self._check_memory = check_memory
        self._info = _call(_trainsim.check_scenario, text, os.fsencode(self._file), list(self._overrides),
                           check_memory)

    @classmethod
    def load(cls, path, *, allow_oom=False):
        """The scenario file at `path`, read with the CLI's checks (a regular
        file, not a directory, a device or a FIFO; at most 16 MiB; UTF-8)."""
        text = _call(_trainsim.read_scenario_file, _path(path, "Scenario.load"))
        return cls(text, path, check_memory=not allow_oom)

    @classmethod
    def from_dict(cls, document, *, name="from_dict", allow_oom=False):
        """A scenario from nested dicts and lists, as the YAML would read:
        {"cluster": {"preset": "dgx-a100-hdr", "nodes": 2}, "model": {...}, "plan": {...}}.
        Keys are str; values dicts, lists, tuples, str, int, float, bool or
        None, at most 64 levels deep and holding no container of their own
        path (InputError / TypeError naming the path of keys otherwise)."""
        where = f"<{_text(name, 'Scenario.from_dict: name')}>"
        text = _call(_trainsim.to_yaml, document, where)
        return cls(text, where, check_memory=not allow_oom)

    def with_(self, **overrides):
        """A copy with dotted keys set, exactly as `--set KEY=VALUE`:
        s.with_(**{"plan.tp": 4, "cluster.nic.bandwidth": "400Gbps"})."""
        more = tuple(_override(key, value, "Scenario.with_") for key, value in overrides.items())
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
        return _call(_trainsim.resolved_yaml, self._text, os.fsencode(self._file), list(self._overrides))

    def _command_file(self, directory):
        """A file `trainsim` can read: the original one (its relative paths
        keep their meaning), or the text written into `directory`."""
        if os.path.isfile(self._file):
            return os.path.abspath(self._file)
        path = os.path.join(directory, "scenario.yaml")
        _write_text(path, self._text)
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


def _write_text(path, text):
    """A scratch file for the child (UTF-8 whatever the locale)."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise InputError([f"{path}: cannot write ({e.strerror})"]) from None


def _run(argv, what):
    program = executable()
    try:
        status, out, err = _trainsim.run_program([_argument(program, "$TRAINSIM"),
                                                  *(_argument(a, what) for a in argv)])
    except OSError as e:
        raise SimulationError(f"{what}: cannot start {program} ({e})") from None
    out, err = out.decode(errors="replace"), err.decode(errors="replace")
    if status == 127:
        raise SimulationError(f"{what}: cannot run {program}: {err.strip()}")
    if status == 1:
        problems = [line[len("error: "):] for line in err.splitlines() if line.startswith("error: ")]
        raise InputError(problems or [err.strip() or f"{what}: bad input"])
    if status != 0:
        raise SimulationError(f"{what} failed (exit status {status}): {err.strip()}")
    return out, err


def _csv_reader(what):
    """What reads a CSV table: pandas.read_csv, else NumPy's genfromtxt (a
    structured array, one row per line). Asked before the work that makes
    the table, so that a sweep does not run only to fail at its end."""
    try:
        import pandas
        return pandas.read_csv
    except ImportError:
        pass
    try:
        import numpy
    except ImportError:
        raise ImportError(f"{what} returns a table, which needs NumPy (Debian's python3-numpy, which "
                          "./scripts/setup installs: apt-get install python3-numpy) or pandas "
                          "(python3-pandas)") from None
    return lambda source: numpy.atleast_1d(
        numpy.genfromtxt(source, delimiter=",", names=True, dtype=None, encoding="utf-8"))


def _table(path, what):
    """A CSV file as a pandas DataFrame, or a NumPy structured array."""
    read = _csv_reader(what)
    try:
        return read(path)
    except OSError as e:
        raise InputError([f"{path}: cannot read ({e.strerror})"]) from None


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
            path = self.directory / "summary.json"
            try:
                with open(path, encoding="utf-8") as f:
                    self._summary = json.load(f)
            except OSError as e:
                raise InputError([f"{path}: cannot read ({e.strerror})"]) from None
        return self._summary

    @property
    def timeline(self):
        """timeline.csv: one row per task execution and GPU."""
        return _table(self.directory / "timeline.csv", "result.timeline")

    @property
    def per_gpu(self):
        return _table(self.directory / "per_gpu.csv", "result.per_gpu")

    @property
    def per_stage(self):
        return _table(self.directory / "per_stage.csv", "result.per_stage")

    @property
    def links(self):
        return _table(self.directory / "links.csv", "result.links")

    @property
    def critical_path(self):
        return _table(self.directory / "critical_path.csv", "result.critical_path")

    @property
    def files(self):
        try:
            return sorted(p.name for p in self.directory.iterdir())
        except OSError as e:
            raise InputError([f"{self.directory}: cannot list ({e.strerror})"]) from None

    def write(self, out_dir, *, html=False):
        """Every output written again into `out_dir` by `trainsim report`
        (byte for byte the run's files; with html=True also report.html):
        the CLI's writer, each file atomic and run.complete last, so that an
        interrupted or failed write (a full disk: InputError) leaves a folder
        without run.complete, never a mix that looks complete. Returns the
        folder."""
        argv = ["report", self.directory, "--out", _path(out_dir, "Result.write"), "--quiet"]
        if html:
            argv.append("--html")
        _run(argv, "Result.write")
        return pathlib.Path(os.fsdecode(_path(out_dir, "Result.write")))

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
    # `out` is created by the child (RunFolder), which says why it cannot be.
    directory = _temporary_folder("trainsim-run-") if temporary else os.fsdecode(_path(out, "trainsim.run: out"))
    try:
        scratch = _temporary_folder("trainsim-scenario-")
    except BaseException:
        if temporary:
            shutil.rmtree(directory, ignore_errors=True)
        raise
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
    read = _csv_reader("trainsim.sweep")
    scratch = _temporary_folder("trainsim-sweep-")
    try:
        if isinstance(study, Scenario):
            if not (grid or zip or variants):
                raise InputError(["trainsim.sweep: a Scenario needs grid, zip or variants to sweep"])
            extra = {}
            if grid or zip:
                extra["sweep"] = {k: v for k, v in (("grid", grid), ("zip", zip)) if v}
            if variants:
                extra["variants"] = variants
            # The study's name is the file's (a label, not a path of ours).
            path = os.path.join(scratch, "study.yaml")
            _write_text(path, study.to_yaml() + _call(_trainsim.to_yaml, extra, "trainsim.sweep"))
            argv = ["sweep", path]
        else:
            argv = ["sweep", _path(study, "trainsim.sweep: study")]
        directory = os.fsdecode(_path(out, "trainsim.sweep: out")) if out is not None else os.path.join(
            scratch, "out")
        argv += ["--out", directory, "--keep", keep, "--quiet"]
        if jobs:
            argv += ["-j", str(jobs)]
        for key, value in (set or {}).items():
            argv += ["--set", _override(key, value, "trainsim.sweep: set")]
        for column, values in (only or {}).items():
            values = values if isinstance(values, (list, tuple)) else [values]
            texts = [_override(column, v, "trainsim.sweep: only")[len(column) + 1:] for v in values]
            argv += ["--only", f"{column}={','.join(texts)}"]
        if allow_oom:
            argv.append("--allow-oom")
        if html:
            argv.append("--html")
        _run(argv, "trainsim sweep")
        try:
            return read(os.path.join(directory, "results.csv"))
        except OSError as e:
            raise InputError([f"{directory}: no results.csv ({e.strerror})"]) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def collective(cluster="dgx-a100-hdr", op="all_reduce", ranks=8, min="1MiB", max="1GiB", factor=2,
               algorithm="auto", fidelity="detailed", **set):
    """`trainsim collective` (nccl-tests): one row per size with the
    algorithm, time and algorithm / bus bandwidth. `set`: cluster keys,
    {"cluster.nic.bandwidth": "400Gbps"} as keyword arguments with dots
    spelled as `__` (cluster__nic__bandwidth="400Gbps")."""
    read = _csv_reader("trainsim.collective")
    argv = ["collective", "--cluster", cluster, "--op", op, "--ranks", ranks, "--min", min, "--max", max,
            "-f", factor, "--algorithm", algorithm, "--fidelity", fidelity, "--format", "csv"]
    for key, value in set.items():
        argv += ["--set", _override(key.replace("__", "."), value, "trainsim.collective")]
    out, _ = _run(argv, "trainsim collective")
    return read(io.StringIO(out))


def _trace_arguments(traces, what):
    """TRACE... as arguments: one path, or a list of paths (files or folders)."""
    if isinstance(traces, (str, bytes, os.PathLike)):
        traces = [traces]
    try:
        traces = list(traces)
    except TypeError:
        raise TypeError(f"{what}: traces: expected a path or a list of paths, not {type(traces).__name__}") from None
    if not traces:
        raise InputError([f"{what}: traces: expected at least one PyTorch profiler trace (a file or a folder)"])
    return [_path(t, f"{what}: traces") for t in traces]


def _with_attrs(table, **attrs):
    """A pandas table carries where its files are in `attrs` (a NumPy array cannot)."""
    if hasattr(table, "attrs"):
        table.attrs.update({k: v for k, v in attrs.items() if v is not None})
    return table


def calibrate(traces, scenario, *, out=None, name=None, classes=None):
    """`trainsim calibrate`: fit the efficiency profile of the scenario's GPU
    and the collective constants to PyTorch profiler traces (`traces`: a
    path or a list; files, one per rank, or folders of them). Returns fit.csv
    as a table: one row per profile part (kind "part", its peak fraction
    before and after), per kernel class (the fit's error), for the host
    overhead and for each link's efficiency and hop latency. The fitted
    profile, the scenario naming it (scenario.yaml), fit.csv and fit.json
    stay in `out` (default runs/calibrate-<scenario name>/, as the CLI);
    with pandas, `table.attrs` holds "directory", "profile" and "scenario"
    (a Scenario of the calibrated scenario)."""
    read = _csv_reader("trainsim.calibrate")
    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario, allow_oom=True)
    scratch = _temporary_folder("trainsim-calibrate-")
    try:
        argv = ["calibrate", *_trace_arguments(traces, "trainsim.calibrate"), "--scenario",
                scenario._command_file(scratch), *scenario._set_arguments()]
        if out is not None:
            argv += ["--out", _path(out, "trainsim.calibrate: out")]
        if name is not None:
            argv += ["--name", _text(name, "trainsim.calibrate: name")]
        if classes is not None:
            argv += ["--classes", _path(classes, "trainsim.calibrate: classes")]
        stdout, _ = _run(argv, "trainsim calibrate")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    # "wrote DIR/NAME.yaml (the fitted profile), DIR/scenario.yaml (...), ..."
    line = next((l for l in stdout.splitlines() if l.startswith("wrote ")), "")
    profile = pathlib.Path(line[len("wrote "):].split(" (the fitted profile)")[0]) if line else None
    directory = profile.parent if profile else None
    table = _table(directory / "fit.csv", "trainsim.calibrate") if directory else None
    if table is None:
        raise SimulationError(f"trainsim calibrate did not say where it wrote its files: {stdout.strip()}")
    calibrated = Scenario.load(directory / "scenario.yaml", allow_oom=True)
    return _with_attrs(table, directory=str(directory), profile=str(profile), scenario=calibrated)


def diff(traces, scenario, *, out=None, classes=None, allow_oom=False):
    """`trainsim diff`: simulate `scenario` (a Scenario or a path; e.g. the
    one calibrate wrote) and set it beside the traces, rank by rank. Returns
    diff.csv as a table: metric (step_time_s, busy_s, idle_s, compute_s,
    communication_s, exposed_communication_s, streams.*, critical_path.*,
    class.<name>_s, flops.*), rank ("all": the mean over the ranks),
    measured, simulated, difference, relative. `out`: keep diff.csv,
    diff.json, report.html and trace.json there (default: a temporary
    folder, removed); with pandas, `table.attrs["directory"]` names it."""
    read = _csv_reader("trainsim.diff")
    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario, allow_oom=allow_oom)
    scratch = _temporary_folder("trainsim-diff-")
    try:
        directory = os.fsdecode(_path(out, "trainsim.diff: out")) if out is not None else os.path.join(scratch, "out")
        argv = ["diff", *_trace_arguments(traces, "trainsim.diff"), "--scenario", scenario._command_file(scratch),
                *scenario._set_arguments(), "--out", directory, "--quiet"]
        if classes is not None:
            argv += ["--classes", _path(classes, "trainsim.diff: classes")]
        if allow_oom:
            argv.append("--allow-oom")
        _run(argv, "trainsim diff")
        try:
            table = read(os.path.join(directory, "diff.csv"))
        except OSError as e:
            raise InputError([f"{directory}: no diff.csv ({e.strerror})"]) from None
        return _with_attrs(table, directory=directory if out is not None else None)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def presets():
    """What scenarios can name: {"gpus": [...], "clusters": [...], "models": [...]}."""
    return _trainsim.presets()
