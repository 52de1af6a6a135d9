"""What Snakemake's re-run triggers compare for every job of a planned DAG, without running any:
the job's output paths and its non-derived params serialised as the params trigger records them
(``snakemake.persistence.Persistence._params``). Two configs that give equal keys re-run nothing.

Usage: python tests/rerun_keys.py SNAKEFILE WORKDIR TARGET CONFIGS_JSON, where CONFIGS_JSON is a list
of config-file lists; prints one keys object per list (JSON on stdout), all from one process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def rerun_keys(snakefile: Path, workdir: Path, target: str, configfiles: list[Path]) -> dict[str, list]:
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
    )

    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        wf = api.workflow(snakefile=snakefile, workdir=workdir, resource_settings=ResourceSettings(cores=1),
                          config_settings=ConfigSettings(configfiles=configfiles))
        dag_api = wf.dag(DAGSettings(targets={target}, forceall=True))
        workflow = dag_api.workflow_api._workflow
        workflow.dag_settings = dag_api.dag_settings
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True, nolock=True)
        workflow._build_dag()
        keys = {}
        for job in workflow.dag.jobs:
            name = f"{job.rule.name} {' '.join(sorted(map(str, job.output)))}"
            keys[name] = workflow.persistence._params(job)
        return keys


if __name__ == "__main__":
    snakefile, workdir, target, configs = sys.argv[1:]
    out = [rerun_keys(Path(snakefile), Path(workdir), target, [Path(c) for c in files]) for files in json.loads(configs)]
    print(json.dumps(out, sort_keys=True))
