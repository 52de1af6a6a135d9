# hardneg: corpus -> lexicon -> augmentation -> shards -> training -> STS and Cont./Oppn. evaluation.
# Run:   snakemake --cores all                                   (paper-scale config.yaml)
#        snakemake --configfile config.yaml experiments/quick.yaml --cores all   (quick, offline)
#        snakemake --profile profiles/slurm                        (cluster)
import os

from snakemake.utils import min_version

min_version("9.0")


# Paper-scale defaults; overlays come with --configfile (relative to the Snakefile, so
# `snakemake -s /path/to/Snakefile -d RUNDIR` works from anywhere).
configfile: os.path.join(workflow.basedir, "config.yaml")


wildcard_constraints:
    shard=r"\d{3}",
    seed=r"\d+",


include: "rules/common.smk"
include: "rules/functions/paths.smk"  # every stage's output paths, before any rule file
include: "rules/data.smk"
include: "rules/evaluate.smk"
include: "rules/probe.smk"
include: "rules/san.smk"
include: "rules/negation.smk"
include: "rules/backtranslation.smk"
include: "rules/mine.smk"
include: "rules/train.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),
