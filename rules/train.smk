# Training: one job per method x seed from the corpus + augmentation shards it needs;
# the best STS-B dev checkpoint is exported as a sentence-transformers folder, then `evaluate`.


include: "functions/train.smk"


rule train:
    """Contrastive training of one method x seed; resumes from its checkpoint if killed."""
    input:
        unpack(_train_inputs),
    output:
        model=directory(f"{TRAIN_DIR}/model"),
        metrics=f"{TRAIN_DIR}/metrics.jsonl",
        curve=f"{TRAIN_DIR}/curve.png",
        summary=f"{TRAIN_DIR}/summary.json",
    log:
        f"{LOGS}/train/{{experiment}}/{{method}}/seed{{seed}}.log",
    benchmark:
        f"{BENCH}/train/{{experiment}}/{{method}}/seed{{seed}}.tsv"
    wildcard_constraints:
        method="|".join(TRAIN_METHODS),
    conda:
        CONDA_ENV
    threads: _TRAIN_CFG["threads"]
    resources:
        gpu=_TRAIN_CFG["gpus"],
        runtime=_TRAIN_CFG["runtime"],
        mem_mb=_TRAIN_CFG["mem_mb"],
    params:
        settings=lambda wc: train_settings(wc.method, wc.seed, wc.experiment).to_dict(),
        nproc_per_node=_TRAIN_CFG["nproc_per_node"],
        # derived (a function of output): changing it re-runs nothing, as it changes no output
        keep_checkpoints=train_keep_checkpoints,
        report_to=train_report_to,
        augmenters=train_augmenters,
        # the augmenter units' modules: their hooks decide the values of failed rows
        code=code_version(
            "hardneg.train",
            "hardneg.encoders",
            "hardneg.models",
            "hardneg.plotting",
            "hardneg.evaluate.sts",
            "hardneg.augment.units",
            *(unit.module for unit in augmenter_units()),
        ),
    script:
        "../workflow/scripts/train.py"


rule model_card:
    """The hub model card of one trained model with its STS test figures (`hardneg push --card`)."""
    input:
        model=f"{TRAIN_DIR}/model",
        summary=f"{TRAIN_DIR}/summary.json",
        sts=f"{EVAL_DIR}/sts.json",
    output:
        card=f"{EVAL_DIR}/model_card.md",
    log:
        f"{LOGS}/model_card/{{experiment}}/{{method}}/seed{{seed}}.log",
    wildcard_constraints:
        method="|".join(TRAIN_METHODS),
    conda:
        CONDA_ENV
    params:
        datasets=lambda wc: hub_datasets(config["data"]["base_url"]),
        code=code_version("hardneg.train.model_card", "hardneg.encoders.st_folder"),
    script:
        "../workflow/scripts/model_card.py"
