"""Run many ``snakemake -n`` (or ``--rulegraph``) of one workflow in this one process, through Snakemake's
API, and print what each printed, as JSON.  A child process of the tests (:func:`conftest.run_many_dry_runs`):
Snakemake's start (about 1.3 CPU-s, its imports) is paid once instead of once a run, and the
workflow's logging and ``sys.path`` stay out of the pytest worker.

Reads from stdin ``{"snakefile": path, "workdir": path, "runs": {name: {"configs": [path, ...],
"rulegraph": bool, "quiet_rules": bool}}}``; writes to stdout ``{name: {"ok": bool, "output": str}}``,
``output`` being what ``snakemake --snakefile S --directory W --configfile C... -n`` (``--quiet rules``
when ``quiet_rules``; ``--rulegraph`` when ``rulegraph``) prints on stdout and stderr, or the error.
"""

import contextlib
import io
import json
import os
import sys
import traceback
from pathlib import Path

from snakemake.api import SnakemakeApi
from snakemake.settings.types import (
    ConfigSettings,
    DAGSettings,
    OutputSettings,
    Quietness,
    ResourceSettings,
    StorageSettings,
)


def run(snakefile: Path, workdir: Path, configs: list[str], rulegraph: bool, quiet_rules: bool) -> str:
    output = io.StringIO()
    quiet = {Quietness.RULES} if quiet_rules else set()
    with contextlib.chdir(os.getcwd()), contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        with SnakemakeApi(OutputSettings(enable_file_logging=False, quiet=quiet)) as api:
            # print_dag_as: the CLI's --rulegraph value, a string (DAG.rule_dot compares with str(PrintDag.DOT))
            dag = api.workflow(
                resource_settings=ResourceSettings(cores=1),
                config_settings=ConfigSettings(configfiles=[Path(c) for c in configs]),
                storage_settings=StorageSettings(),
                snakefile=snakefile,
                workdir=workdir,
            ).dag(DAGSettings(print_dag_as="dot"))
            if rulegraph:
                dag.printrulegraph()
            else:
                dag.execute_workflow(executor="dryrun")
    return output.getvalue()


def main() -> None:
    spec = json.load(sys.stdin)
    done = {}
    for name, one in spec["runs"].items():
        try:
            output = run(Path(spec["snakefile"]), Path(spec["workdir"]), one["configs"], one.get("rulegraph", False),
                         one.get("quiet_rules", False))  # fmt: skip
            done[name] = {"ok": True, "output": output}
        except Exception:  # reported to the test, which fails naming the run
            done[name] = {"ok": False, "output": traceback.format_exc()}
    sys.__stdout__.write(json.dumps(done))


if __name__ == "__main__":
    main()
