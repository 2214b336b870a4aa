"""knowlab: a reproducible lab for how language models acquire, memorize and ground knowledge.

All logic of the Snakemake workflow lives here; ``scripts/`` only unpack the
``snakemake`` object and call into this package.  Subpackages follow the data
flow: ``resources`` -> ``corpus`` -> ``splits`` -> ``finetune`` -> ``evaluate``
-> ``stats`` -> ``figures``, with ``provenance`` and ``io`` shared by all.
"""

__version__ = "0.1.0"
