"""Small models trained on tasks with a known answer, so that a student can watch what attention learns.

`dates` translates dates as people write them (English and Chinese) to ISO, with an encoder-decoder and additive
attention; `induction` copies a repeated random sequence with a two-layer attention-only transformer. `train`
trains either from a seed and records the attention on the way; the package ships one checkpoint of each.
"""
