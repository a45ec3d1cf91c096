"""The config stage: a config read, checked and resolved (``prepare_experiment``).

yaml_io    strict, bounded YAML (duplicate keys are errors, ``1e5`` is a number)
errors     ConfigError; pydantic's errors in words, one line per field
schema     the config's shape and types (claims: ``claims``, layouts: ``layout``)
load       load_config, apply_overrides (--quick, --seeds, --horizon)
limits     the memory an experiment needs, refused above the limit
metrics    the figure metrics a config may name (register_metric)
tuned      tuned values read from ``tuned:`` files
overrides  ``env_overrides`` scoped to the policies they name
checks     every check against the environments and policies of the config
resolve    resolve, prepare_experiment -> ResolvedExperiment (``resolved``)
papers     the paper folders of ``banditkit reproduce``, and their cross-checks
"""
