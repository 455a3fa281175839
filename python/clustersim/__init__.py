"""clustersim from Python: the CLI's subcommands as functions that return the JSON report as a dict.

Each function takes what the command line takes: a config (a file path, or the text of one),
``preset=``, ``set={"parallel.pp": 8}`` (or a list of ``"path=value"``), ``hf_config=``, and any
other option of the subcommand by its name with ``_`` for ``-`` (``timeline="t.json"``,
``gpus=8``, ``messages=True``). It runs the same code as ``clustersim NAME --json ...`` in this
process, without the GIL, so threads can simulate several points at once, and returns the dict
that the ``--json`` file would hold. A failure raises ``Error`` (``UsageError`` for what the CLI
ends with exit code 2) carrying the line the CLI prints; where the CLI fails with a report (a sweep
whose every point was skipped, a plan with no layout to rank) the error's ``report`` holds it. The
non-zero exits that are results return the report: ``memory``'s layout that does not fit
(``fits`` False) and ``plan(min_gpus=True)``'s none up to ``max_gpus`` (``gpus`` 0).

    >>> import clustersim
    >>> r = clustersim.run(preset="llama3-8b", set={"model.num_layers": 2, "parallel.dp": 4,
    ...                                              "parallel.global_batch_size": 8})
    >>> r["gpus"], r["layout"]
    (8, 'TP 2 x CP 1 x PP 1 x DP 4, SP, ZeRO-1')
"""

import itertools
import json
import os
import tempfile

from . import _core

__all__ = ["Error", "UsageError", "run", "sweep", "memory", "plan", "collective", "replay",
           "help"]

# The --json path handed to every command; the command fills it in memory (CommandIo.captured).
_REPORT = "<clustersim report>"
# How a config given as text is named in reports and error messages.
_CONFIG_TEXT = "<config text>"


class Error(RuntimeError):
    """A clustersim command failed; str(error) is the line the CLI prints on stderr. ``report`` is
    the JSON report the command wrote before failing (a sweep's skipped points, a plan's
    ``refused``), or None."""

    def __init__(self, message, exit_code=1, report=None):
        super().__init__(message)
        self.exit_code = exit_code
        self.report = report


class UsageError(Error, ValueError):
    """A bad option or an impossible request: the CLI's exit code 2."""

    def __init__(self, message):
        super().__init__(message, 2)


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    # Python arithmetic turns 16 into 16.0 (2 ** 4.0, n / 2); an integer field takes it as 16.
    # 16.5 stays "16.5", which the CLI refuses naming the field.
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def _assignments(name, value):
    """``set=``/``vary=`` as repeated ``--name path=value``. A dict's list value joins with ','
    (a repeated field for ``set``, the values for ``vary``; ``vary`` separates values that hold
    a comma with ';', as the CLI does)."""
    if isinstance(value, dict):
        items = []
        for path, v in value.items():
            if isinstance(v, (list, tuple)):
                texts = [_text(x) for x in v]
                v = (";" if name == "vary" and any("," in t for t in texts) else ",").join(texts)
            items.append(f"{path}={_text(v)}")
        value = items
    if isinstance(value, str):
        value = [value]
    return [a for item in value for a in (_flag(name), _text(item))]


def _flag(name):
    return "--" + name.replace("_", "-")


def _options(options):
    """Keyword arguments as command-line options: True is a bare flag, False and None are left
    out, a list or tuple repeats the option."""
    args = []
    for name, value in options.items():
        if name in ("json", "help"):
            raise TypeError(f"{name}= is not an option here: the report is the return value "
                            "(see clustersim.help)")
        if name in ("set", "vary"):
            args += _assignments(name, value)
        elif value is None or value is False:
            continue
        elif value is True:
            args.append(_flag(name))
        elif isinstance(value, (list, tuple)):
            for v in value:
                args += [_flag(name), _text(v)]
        else:
            args += [_flag(name), _text(value)]
    return args


def _config_type_error(value):
    return ("config must be a path, config text (protobuf text format) or a list of them, not "
            f"{type(value).__name__} {value!r}; a preset goes by name: preset=\"llama3-8b\"")


class _Configs:
    """Config arguments as paths: a string that names no file but reads as text format (it has a
    ':' or '{', as every config field does) is written to a temporary file for the command."""

    def __init__(self, configs, config_text=True):
        if configs is None:
            configs = []
        elif isinstance(configs, (str, os.PathLike)):
            configs = [configs]
        elif not isinstance(configs, (list, tuple)):
            raise TypeError(_config_type_error(configs))
        self.paths, self.temp_paths, self._dir = [], [], None
        for c in configs:
            # Anything else would reach the C++ core as a bare pybind11 signature mismatch.
            if not isinstance(c, (str, os.PathLike)):
                raise TypeError(_config_type_error(c))
            if (config_text and isinstance(c, str) and not os.path.exists(c)
                    and (":" in c or "{" in c)):
                self.paths.append(self._write(c))
            else:
                self.paths.append(_text(c))

    def _write(self, text):
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="clustersim-")
        path = os.path.join(self._dir.name, f"config{len(self.temp_paths)}.textproto")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        self.temp_paths.append(path)
        return path

    def named(self, text):
        """`text` with the temporary files named as the config text they hold."""
        for path in self.temp_paths:
            text = text.replace(path, _CONFIG_TEXT)
        return text

    def close(self):
        if self._dir is not None:
            self._dir.cleanup()


def _is_result(command, code, options):
    """Whether exit `code` gives a result: 0, or the 3 that the docstrings promise as one
    (``memory``: the layout does not fit; ``plan(min_gpus=True)``: none up to ``max_gpus``). The
    CLI's other non-zero exits without an exception fail: a sweep whose every point was skipped
    (1), a plan with no layout to rank (3)."""
    if code == 0:
        return True
    if code != 3:
        return False
    return command == "memory" or (command == "plan" and bool(options.get("min_gpus")))


def _why_lines(out):
    """The lines of a command's table that say why it has no result: an empty plan's ``why:``
    block, or a sweep's ``skipped FIELD=V: reason`` lines."""
    lines = out.splitlines()
    if "why:" in lines:
        block = lines[lines.index("why:") + 1:]
        return [line.strip() for line in itertools.takewhile(str.strip, block)]
    return [line for line in lines if line.startswith("skipped ")]


# What a failing exit means where the CLI prints no error line of its own (its table says why).
_SILENT_FAILURES = {("plan", 3): "no layout to rank"}


def _failure_message(command, code, out, err):
    """What the CLI says when it fails without an exception: its error line on stderr (or what
    the exit code means), then the lines of its output that say why."""
    prefix = f"clustersim {command}: "
    lines = [line for line in err.splitlines() if line.startswith(prefix)]
    meaning = _SILENT_FAILURES.get((command, code), "failed")
    head = lines[-1] if lines else f"{prefix}error: {meaning} (exit code {code})"
    return "\n".join([head] + _why_lines(out))


def _call(command, positional, options, config_text=True):
    """Runs `command` and returns its JSON report as a dict."""
    configs = _Configs(positional, config_text)
    try:
        args = configs.paths + _options(options) + ["--json", _REPORT]
        code, out, err, captured, error, usage = _core.call(command, args, [_REPORT])
        if error:
            message = configs.named(error)
            raise UsageError(message) if usage else Error(message)
        text = captured.get(_REPORT, "")
        report = json.loads(configs.named(text)) if text else None
        if not _is_result(command, code, options):
            raise Error(configs.named(_failure_message(command, code, out, err)), code, report)
        if report is None:
            detail = (err or out).strip()
            raise Error(f"clustersim {command}: wrote no JSON report"
                        + (f" ({detail})" if detail else ""), code)
        return report
    finally:
        configs.close()


def _with(options, **named):
    """`options` plus the named arguments that were given."""
    return {**{k: v for k, v in named.items() if v is not None}, **options}


def run(config=None, *, preset=None, set=None, hf_config=None, **options):
    """One training step (``clustersim run``): the report's dict. Several configs or presets
    (lists) run together as jobs on the first one's cluster: then the jobs report."""
    return _call("run", config, _with(options, preset=preset, set=set, hf_config=hf_config))


def sweep(config=None, *, preset=None, vary=None, set=None, hf_config=None, **options):
    """The cartesian product of ``vary={"field": [values]}`` (``clustersim sweep``): the JSON
    report (``source``, ``axes``, ``points``, ``skipped``) plus ``rows``, one flat dict per
    point that fits ``pandas.DataFrame(result["rows"])``: each varied field by its dotted name,
    then the point's numbers, named as the ``--csv`` file's columns (``exposed_DIM_s`` for the
    nested seconds), plus the point's ``index``. When every point is skipped it raises ``Error``
    with each point's reason, the report in ``error.report``."""
    result = _call("sweep", config,
                   _with(options, preset=preset, vary=vary, set=set, hf_config=hf_config))
    result["rows"] = [_flat_row(p) for p in result["points"]]
    return result


def _number(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _flat_row(point):
    row = {field: _number(v) for field, v in point["fields"].items()}
    for key, value in point.items():
        if key == "fields":
            continue
        if key == "exposed_comm_s":
            # The CSV's column names, so that a frame read from --csv has the same columns.
            row.update({f"exposed_{k}_s": v for k, v in value.items()})
        elif isinstance(value, dict):
            row.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            row[key] = value
    return row


def memory(config=None, *, preset=None, set=None, hf_config=None, **options):
    """The per-GPU memory breakdown (``clustersim memory``); ``fits`` says whether it fits."""
    return _call("memory", config, _with(options, preset=preset, set=set, hf_config=hf_config))


def plan(config=None, *, preset=None, set=None, hf_config=None, **options):
    """The ranked layouts (``clustersim plan``, e.g. ``gpus=64``; without it, on the GPUs of the
    config's own layout), or with ``min_gpus=True`` the fewest GPUs that hold the model
    (``gpus`` 0 when none up to ``max_gpus`` does). With ``simulate=0`` the ranking is the
    pre-estimate's alone (each entry ``simulated`` False, with ``estimate_s``). A plan with no
    layout to rank raises ``Error`` with the CLI's why, the report in ``error.report``."""
    return _call("plan", config, _with(options, preset=preset, set=set, hf_config=hf_config))


def collective(**options):
    """One collective over a topology per size (``clustersim collective``, e.g. ``gpus=8``,
    ``op="all_reduce"``, ``sizes=["1M", "1G"]``)."""
    if isinstance(options.get("sizes"), (list, tuple)):
        options["sizes"] = ",".join(_text(s) for s in options["sizes"])
    return _call("collective", None, options)


def replay(trace=None, **options):
    """A workload trace (``clustersim replay``): ours by path, or ``chakra="prefix"``."""
    return _call("replay", trace, options, config_text=False)


def help(command):
    """The ``clustersim COMMAND --help`` text."""
    _, out, _, _, error, usage = _core.call(command, ["--help"], [])
    if error:
        raise UsageError(error) if usage else Error(error)
    return out
