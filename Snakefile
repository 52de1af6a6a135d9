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


# every augmenter unit's rule file (hardneg.augment.units): the packaged ones (rules/san.smk,
# rules/negation.smk, rules/backtranslation.smk), then those of the config's `augmenters`
for _augmenter in augmenter_units():

    include: _augmenter.rule_file


include: "rules/train.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),
