# Data stage: downloads (local jobs, never sent to a cluster) and corpus sharding.


localrules:
    download,
    extract_senteval,


rule download:
    """Stream one upstream file (mirror-aware), resumable, verified, with a sha256 manifest."""
    output:
        file="data/downloads/{filename}",
        manifest="data/downloads/{filename}.manifest.json",
    log:
        f"{LOGS}/download/{{filename}}.log",
    wildcard_constraints:
        filename=r"[^/]+(?<!\.manifest\.json)",
    conda:
        CONDA_ENV
    params:
        url=lambda wc: config["data"]["base_url"] + wc.filename,
        mirror=config["mirror"],
        sha256=lambda wc: config["data"]["sha256"].get(wc.filename),  # no sum given: None
        retries=config["data"]["retries"],
        backoff_s=config["data"]["backoff_s"],
        timeout_s=config["data"]["timeout_s"],
        code=code_version("hardneg.data.download", "hardneg.data.run"),
    script:
        "../workflow/scripts/download.py"


rule extract_senteval:
    """Unpack senteval.tar (SentEval layout: STS/, SICK/, transfer tasks) under data/."""
    input:
        f"data/downloads/{config['data']['senteval_file']}",
    output:
        directory(SENTEVAL_DIR),
    log:
        f"{LOGS}/extract_senteval.log",
    conda:
        CONDA_ENV
    params:
        code=code_version("hardneg.data.archive"),
    script:
        "../workflow/scripts/extract_senteval.py"


rule prepare_corpus:
    """Normalise, de-duplicate, cap and shard the training corpus; count every dropped line."""
    input:
        corpus=f"data/downloads/{config['data']['corpus_file']}",
        senteval=SENTEVAL_DIR,
    output:
        shards=corpus_shards(),
        rejects=f"{CORPUS_DIR}/rejects.parquet",
        manifest=f"{CORPUS_DIR}/manifest.json",
    log:
        f"{LOGS}/prepare_corpus/{corpus_tag()}.log",
    benchmark:
        f"{BENCH}/prepare_corpus/{corpus_tag()}.tsv"
    conda:
        CONDA_ENV
    params:
        corpus=config["corpus"],
        code=code_version(
            "hardneg.data.corpus", "hardneg.data.leakage", "hardneg.data.run", "hardneg.shards"
        ),
    script:
        "../workflow/scripts/prepare_corpus.py"


register_targets(lambda: [f"{CORPUS_DIR}/manifest.json", SENTEVAL_DIR])
