"""One `clustersim run` of a preset with --set overrides, as its --json report: what the results
tables (effects_table.py, stacks_table.py, blackwell_table.py) are made of."""
import json
import subprocess
import tempfile


def run_report(binary, preset, overrides):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [binary, "run", "--preset", preset, "--json", out.name]
        for o in overrides:
            cmd += ["--set", o]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(out.name) as f:
            return json.load(f)
