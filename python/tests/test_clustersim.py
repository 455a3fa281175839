"""The clustersim package against the CLI it wraps: same inputs, same reports, same errors, and
threads that simulate at once without changing a result."""

import json
import os
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pandas
import pytest

import clustersim

CLI = os.environ.get("CLUSTERSIM_BIN", "build/clustersim")
SOURCE = os.environ.get("CLUSTERSIM_SOURCE_DIR", ".")

# Llama 3 8B cut to a few layers on 8 GPUs: a full step in a few milliseconds.
SMALL = {"model.num_layers": 2, "parallel.dp": 4, "parallel.global_batch_size": 8}
SMALL_ARGS = [a for k, v in SMALL.items() for a in ("--set", f"{k}={v}")]
# What differs between two runs of one input: the wall clock and the process's memory.
UNSTABLE = {"wall_time_s", "peak_rss_mb"}


def stable(report):
    return {k: v for k, v in report.items() if k not in UNSTABLE}


def cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, check=False)


def cli_json(tmp_path, *args):
    path = tmp_path / "report.json"
    r = cli(*args, "--json", str(path))
    assert r.returncode in (0, 3), r.stderr
    return json.loads(path.read_text())


def test_run_returns_the_cli_json_report(tmp_path):
    ours = clustersim.run(preset="llama3-8b", set=SMALL)
    theirs = cli_json(tmp_path, "run", "--preset", "llama3-8b", *SMALL_ARGS)
    assert stable(ours) == stable(theirs)
    assert ours["gpus"] == 8 and ours["iteration_time_s"] > 0


def test_a_config_as_a_path_or_as_text_gives_one_report(tmp_path):
    text = open(os.path.join(SOURCE, "workloads", "llama3-8b.textproto")).read()
    path = tmp_path / "mine.textproto"
    path.write_text(text)
    from_path = clustersim.run(str(path), set=SMALL)
    from_text = clustersim.run(text, set=SMALL)
    from_preset = clustersim.run(preset="llama3-8b", set=SMALL)
    assert stable(from_path) == stable(from_text) == stable(from_preset)


def test_several_presets_run_as_jobs_on_one_cluster(tmp_path):
    ours = clustersim.run(preset=["llama3-8b", "llama3-8b"], set=SMALL)
    theirs = cli_json(tmp_path, "run", "--preset", "llama3-8b", "--preset", "llama3-8b",
                      *SMALL_ARGS)
    assert stable(ours) == stable(theirs)
    assert len(ours["jobs"]) == 2 and ours["cluster"]["gpus"] == 16


def test_set_takes_a_list_of_assignments_and_python_values():
    as_list = clustersim.run(preset="llama3-8b", set=[f"{k}={v}" for k, v in SMALL.items()])
    as_dict = clustersim.run(preset="llama3-8b",
                             set={**SMALL, "parallel.sequence_parallel": True})
    assert stable(as_list) == stable(as_dict)
    no_sp = clustersim.run(preset="llama3-8b", set={**SMALL, "parallel.sequence_parallel": False})
    assert "SP" not in no_sp["layout"].split(", ")[1:] and "SP" in as_dict["layout"]


def test_a_sweep_goes_straight_into_a_dataframe(tmp_path):
    vary = {"parallel.global_batch_size": [4, 8, 16]}
    result = clustersim.sweep(preset="llama3-8b", set=SMALL, vary=vary, jobs=1)
    theirs = cli_json(tmp_path, "sweep", "--preset", "llama3-8b", *SMALL_ARGS,
                      "--vary", "parallel.global_batch_size=4,8,16", "--jobs", "1")
    assert {k: result[k] for k in theirs} == theirs
    frame = pandas.DataFrame(result["rows"])
    assert list(frame["parallel.global_batch_size"]) == [4, 8, 16]
    assert frame["iteration_time_s"].is_monotonic_increasing
    assert "exposed_dp_s" in frame.columns and frame["fits"].all()
    # One name per figure: the rows' keys are the CSV's columns (plus the point's index).
    csv_path = tmp_path / "sweep.csv"
    clustersim.sweep(preset="llama3-8b", set=SMALL, vary=vary, jobs=1, csv=str(csv_path))
    header = csv_path.read_text().splitlines()[0].split(",")
    assert [k for k in frame.columns if k != "index"] == header
    ran = clustersim.run(preset="llama3-8b", set={**SMALL, "parallel.global_batch_size": 4})
    assert frame["iteration_time_s"][0] == ran["iteration_time_s"]


def test_a_sweep_point_that_fails_validation_is_skipped_with_its_reason():
    result = clustersim.sweep(preset="llama3-8b", set=SMALL,
                              vary={"parallel.etp": [-1, 0, 2147483647]}, jobs=1)
    assert [r["parallel.etp"] for r in result["rows"]] == [0]
    reasons = [s["error"] for s in result["skipped"]]
    assert len(reasons) == 2 and all("parallel.etp = " in r for r in reasons)


def test_a_sweep_whose_every_point_is_skipped_raises_as_the_cli_fails():
    # It returned [] silently while the CLI said "every point was skipped" and exited 1.
    with pytest.raises(clustersim.Error) as raised:
        clustersim.sweep(preset="llama3-8b", vary={"parallel.tp": [3, 5]}, jobs=1)
    r = cli("sweep", "--preset", "llama3-8b", "--vary", "parallel.tp=3,5", "--jobs", "1")
    error = r.stderr.strip().splitlines()[-1]
    assert error.startswith("clustersim sweep: error: every point was skipped")
    skipped = [line for line in r.stdout.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 2 and "must be divisible by parallel.tp = 3" in skipped[0]
    assert str(raised.value) == "\n".join([error] + skipped)
    assert raised.value.exit_code == r.returncode == 1
    assert not isinstance(raised.value, ValueError)
    assert len(raised.value.report["skipped"]) == 2 and raised.value.report["points"] == []


def test_a_plan_with_no_layout_to_rank_raises_with_the_why_and_the_report():
    # The CLI exits 3 after its why; plan(min_gpus=True) finding none is a result, not this.
    with pytest.raises(clustersim.Error) as raised:
        clustersim.plan(preset="llama3-405b", gpus=8, jobs=1)
    r = cli("plan", "--preset", "llama3-405b", "--gpus", "8", "--jobs", "1")
    assert raised.value.exit_code == r.returncode == 3
    lines = str(raised.value).splitlines()
    assert lines[0] == "clustersim plan: error: no layout to rank (exit code 3)"
    assert lines[1].startswith("none fits: ") and lines[1] in r.stdout
    assert raised.value.report["ranked"] == [] and raised.value.report["refused"]["over_hbm"] > 0


def test_memory_reports_a_layout_that_does_not_fit_without_raising():
    fits = clustersim.memory(preset="llama3-8b")
    too_big = clustersim.memory(preset="llama3-8b",
                                set={"parallel.tp": 1, "parallel.zero_stage": 0,
                                     "parallel.sequence_parallel": False})
    assert fits["fits"] and not too_big["fits"]
    assert too_big["peak_gb"] > too_big["capacity_gb"]


def test_hf_config_takes_the_model_of_a_hugging_face_file(tmp_path):
    hf = os.path.join(SOURCE, "tests", "config", "hf", "mixtral-8x7b", "config.json")
    ours = clustersim.memory(preset="llama3-70b", hf_config=hf)
    assert ours == cli_json(tmp_path, "memory", "--preset", "llama3-70b", "--hf-config", hf)
    assert ours["peak_gb"] != clustersim.memory(preset="llama3-70b")["peak_gb"]


def test_plan_ranks_layouts(tmp_path):
    options = ["--gpus", "8", "--simulate", "2", "--refine", "0", "--jobs", "1"]
    ours = clustersim.plan(preset="llama3-8b", set=SMALL, gpus=8, simulate=2, refine=0, jobs=1)
    theirs = cli_json(tmp_path, "plan", "--preset", "llama3-8b", *SMALL_ARGS, *options)
    assert ours == theirs
    times = [c["iteration_time_s"] for c in ours["ranked"]]
    assert times and times == sorted(times)


def test_plan_with_simulate_zero_ranks_by_the_estimate_alone(tmp_path):
    ours = clustersim.plan(preset="llama3-405b", gpus=16384, simulate=0, top=3)
    theirs = cli_json(tmp_path, "plan", "--preset", "llama3-405b", "--gpus", "16384",
                      "--simulate", "0", "--top", "3")
    assert ours == theirs and ours["simulated"] == 0
    estimates = [c["estimate_s"] for c in ours["ranked"]]
    assert len(estimates) == 3 and estimates == sorted(estimates)
    assert not any(c["simulated"] or "iteration_time_s" in c for c in ours["ranked"])


def test_software_stack_is_a_set_field_and_the_report_names_it(tmp_path):
    fsdp = {**SMALL, "parallel.tp": 1, "parallel.dp": 8, "parallel.zero_stage": 3,
            "parallel.sequence_parallel": False, "parallel.global_batch_size": 8}
    ours = clustersim.run(preset="llama3-8b", set={**fsdp, "software_stack": "PYTORCH_FSDP"})
    args = [a for k, v in fsdp.items() for a in ("--set", f"{k}={str(v).lower()}")]
    theirs = cli_json(tmp_path, "run", "--preset", "llama3-8b", *args,
                      "--set", "software_stack=PYTORCH_FSDP")
    assert stable(ours) == stable(theirs)
    assert ours["software_stack"] == "PYTORCH_FSDP (pytorch_fsdp2)"
    megatron = clustersim.run(preset="llama3-8b", set=fsdp)
    assert megatron["software_stack"] == "MEGATRON_TE"
    assert ours["iteration_time_s"] > megatron["iteration_time_s"]
    with pytest.raises(clustersim.Error, match=r"cannot run parallel.tp = 2 \(allowed: 1\)"):
        clustersim.run(preset="llama3-8b", set={**fsdp, "parallel.tp": 2,
                                                "software_stack": "PYTORCH_FSDP"})


def test_plan_finds_the_fewest_gpus_or_says_none_fit(tmp_path):
    ours = clustersim.plan(preset="llama3-8b", min_gpus=True)
    assert ours == cli_json(tmp_path, "plan", "--preset", "llama3-8b", "--min-gpus")
    assert ours["gpus"] >= 1 and ours["peak_memory_gb"] <= ours["capacity_gb"]
    none = clustersim.plan(preset="llama3-70b", min_gpus=True, max_gpus=1)
    assert none["gpus"] == 0 and "layout" not in none


def test_collective_bus_bandwidth_follows_the_all_reduce_factor():
    r = clustersim.collective(op="all_reduce", algo="ring", gpus=8, sizes=["1M", "64M"])
    assert [x["size_bytes"] for x in r["results"]] == [1 << 20, 64 << 20]
    for x in r["results"]:
        assert x["busbw_gbytes_per_s"] == pytest.approx(x["algbw_gbytes_per_s"] * 2 * 7 / 8)


def test_collective_gives_nccls_cost_model_when_asked():
    # Four H100 servers: NCCL's model ranks its tree (LL128) first at 2 MiB, NVLS-tree at 16 MiB.
    r = clustersim.collective(gpus=32, sizes=["2M", "16M"], nccl_costs=True)
    first = [s["candidates"][0] for s in r["nccl_model"]["sizes"]]
    assert [(c["algo"], c["protocol"]) for c in first] == [("tree", "ll128"),
                                                           ("nvls_tree", "simple")]
    assert [x["algo"] for x in r["results"]] == ["chain_tree", "nvls_tree"]
    assert "nccl_model" not in clustersim.collective(gpus=32, sizes=["2M"])


def test_replay_of_a_generated_trace_gives_the_run(tmp_path):
    trace = tmp_path / "small.pb"
    r = cli("generate", "--preset", "llama3-8b", *SMALL_ARGS, "-o", str(trace))
    assert r.returncode == 0, r.stderr
    replayed = clustersim.replay(str(trace))
    ran = clustersim.run(preset="llama3-8b", set=SMALL)
    assert replayed["iteration_time_s"] == ran["iteration_time_s"]
    # The effects that act on the cluster switch for a replay as for a run.
    quiet = clustersim.replay(str(trace), set={"effects.comm_compute_interference": False})
    off = clustersim.run(preset="llama3-8b",
                         set={**SMALL, "effects.comm_compute_interference": False})
    assert quiet["interference_s"] == 0 < replayed["interference_s"]
    assert quiet["iteration_time_s"] == off["iteration_time_s"]


@pytest.mark.parametrize("call, args", [
    (lambda: clustersim.run(preset="nope"), ["run", "--preset", "nope"]),
    (lambda: clustersim.run(preset="llama3-8b", bogus=1), ["run", "--preset", "llama3-8b",
                                                           "--bogus", "1"]),
    (lambda: clustersim.run(preset="llama3-8b", set={"parallel.pp": 3}),
     ["run", "--preset", "llama3-8b", "--set", "parallel.pp=3"]),
    (lambda: clustersim.collective(gpus=6, group_size=4), ["collective", "--gpus", "6",
                                                           "--group-size", "4"]),
    (lambda: clustersim.replay("missing.pb"), ["replay", "missing.pb"]),
    # A bad expert TP on a dense model once killed the interpreter with SIGFPE.
    (lambda: clustersim.run(preset="llama3-8b", set={"parallel.etp": -1}),
     ["run", "--preset", "llama3-8b", "--set", "parallel.etp=-1"]),
    (lambda: clustersim.replay("/dev/zero"), ["replay", "/dev/zero"]),
])
def test_errors_carry_the_cli_message(call, args):
    with pytest.raises(clustersim.Error) as raised:
        call()
    r = cli(*args, "--json", "unused.json")
    assert str(raised.value) == r.stderr.strip()
    assert raised.value.exit_code == r.returncode
    assert isinstance(raised.value, ValueError) == (r.returncode == 2)
    assert isinstance(raised.value, RuntimeError)


def test_an_error_in_config_text_names_the_text_not_a_temporary_file():
    with pytest.raises(clustersim.Error, match=r"^clustersim run: error: <config text>:"):
        clustersim.run("model { num_layers: oops }")


def test_help_is_the_cli_help():
    assert clustersim.help("sweep") == cli("sweep", "--help").stdout


# Points that differ in layout and size, so that a result crossed between threads would show.
POINTS = [{**SMALL, "parallel.global_batch_size": b, "model.num_layers": n}
          for b, n in ((8, 2), (16, 4), (32, 2), (8, 4))]


def test_threads_simulating_at_once_give_the_serial_results():
    serial = [stable(clustersim.run(preset="llama3-8b", set=p)) for p in POINTS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(lambda p: stable(clustersim.run(preset="llama3-8b", set=p)),
                                 POINTS * 2))
    assert threaded == serial * 2


def test_a_simulation_lets_other_python_threads_run():
    # A 64-GPU ring message by message, four times (about 0.1 s of one core inside C++), and
    # twice as many times until a call lasts long enough to tell, however fast the machine.
    stamps, done = [], threading.Event()

    def tick():
        while not done.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    sizes = ["64M"] * 4
    try:
        while True:
            start = time.perf_counter()
            clustersim.collective(op="all_reduce", algo="ring", gpus=64, sizes=sizes)
            end = time.perf_counter()
            if end - start > 0.2 or len(sizes) >= 64:
                break
            sizes = sizes * 2
    finally:
        done.set()
        ticker.join()
    # With the GIL held the ticker could not append during the call; let it slip at the edges.
    inside = [t for t in stamps if start + 0.02 < t < end - 0.02]
    assert end - start > 0.1, "the collective got too quick to tell"
    assert len(inside) >= 3


def test_the_package_docstring_example_holds():
    import doctest
    assert doctest.testmod(clustersim).failed == 0


@pytest.mark.parametrize("config", [12345, [12345], 1.5, {"model": 1}])
def test_a_config_of_the_wrong_type_says_what_a_config_is(config):
    # Not pybind11's signature dump: the argument, its type and what is accepted.
    with pytest.raises(TypeError, match=r"config must be a path, config text .* not (int|float|dict)"):
        clustersim.run(config)


def test_integral_floats_are_integers_and_fractions_are_refused_naming_the_field():
    as_int = clustersim.run(preset="llama3-8b", set=SMALL)
    as_float = clustersim.run(preset="llama3-8b",
                              set={k: float(v) for k, v in SMALL.items()})
    assert as_float["iteration_time_s"] == as_int["iteration_time_s"]
    assert as_float["gpus"] == 8
    with pytest.raises(clustersim.Error, match="parallel.dp") as e:
        clustersim.run(preset="llama3-8b", set={**SMALL, "parallel.dp": 4.5})
    assert "4.5" in str(e.value)


def test_gpu_names_are_case_insensitive():
    upper = clustersim.run(preset="llama3-8b", set={**SMALL, "cluster.gpu": "H100"})
    assert upper["gpu"] == "h100"
    assert upper["iteration_time_s"] == clustersim.run(preset="llama3-8b", set=SMALL)[
        "iteration_time_s"]
