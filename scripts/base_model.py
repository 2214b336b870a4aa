"""Materialise the base model (packaged GGUF -> safetensors, tiny random model, or Hub id)."""

from knowlab.core.io import read_jsonl
from knowlab.core.models import BaseModelSettings, prepare_base_model
from knowlab.core.provenance import rule_step

with rule_step(snakemake):
    texts = []
    if "fictions" in snakemake.input.keys():  # tiny_random: tokenizer trained on the run's text
        texts = [r["fiction"] for r in read_jsonl(snakemake.input.fictions)]
        texts += [r["text"] for r in read_jsonl(snakemake.input.webtext)]
    settings = BaseModelSettings.from_param(snakemake.params.settings)
    prepare_base_model(settings, snakemake.output.model, snakemake.params.seed, texts)
