"""Every exception banditkit raises for a problem the user causes or can fix.

All derive from :class:`BanditkitError`; catch it to handle them all::

    import banditkit as bk
    from banditkit.errors import BanditkitError, ConfigError

    try:
        bk.run_experiment("my.yaml", out="results/my")
    except ConfigError as exc:      # the config is invalid: nothing was written
        print(exc)
    except BanditkitError as exc:   # a missing dataset, failed runs, ...
        print(exc)

=======================  ==========================================================  =========
exception                raised when                                                 also a
=======================  ==========================================================  =========
``ConfigError``          an experiment config (file or mapping) is invalid           ValueError
``UnknownNameError``     a policy, environment or paper name is not registered       ValueError
``DatasetError``         base of the dataset errors below
``DatasetNotFoundError`` a dataset file is absent and cannot be downloaded           FileNotFoundError
``MissingDatasetsError`` the datasets an experiment needs are missing (all listed)   FileNotFoundError
``ChecksumError``        a dataset file does not match its checksum                  ValueError
``DamagedFileError``     a file cannot be read back (truncated, foreign, newer)      ValueError
``PolicyFileError``      a policy file is missing or cannot be loaded                ValueError
``CorruptFileError``     a stored run or summary file cannot be read back            ValueError
``OutputDirError``       an output directory is unwritable or in use                 OSError
``PluginError``          a ``--import`` plugin cannot be imported                    ValueError
``UnsavablePolicyError`` ``save_policy`` cannot save what the policy needs            ValueError
``RunsFailedError``      some runs of an experiment failed (the rest are kept)       RuntimeError
=======================  ==========================================================  =========

The command line prints such an error's message without a traceback and exits with its
``exit_code`` (2, or 1 for ``RunsFailedError``); ``--debug`` or ``BANDITKIT_DEBUG=1`` shows
the traceback. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from banditkit.core.errors import (
    BanditkitError,
    DamagedFileError,
    DatasetError,
    RunsFailedError,
    UnknownNameError,
)
from banditkit.core.serialization import PolicyFileError, UnsavablePolicyError
from banditkit.datasets.fetching import MissingDatasetsError
from banditkit.datasets.storage import ChecksumError, DatasetNotFoundError
from banditkit.experiments.schema import ConfigError
from banditkit.experiments.store import CorruptFileError, OutputDirError
from banditkit.plugins import PluginError

__all__ = [
    "BanditkitError",
    "ChecksumError",
    "ConfigError",
    "CorruptFileError",
    "DamagedFileError",
    "DatasetError",
    "DatasetNotFoundError",
    "MissingDatasetsError",
    "OutputDirError",
    "PluginError",
    "PolicyFileError",
    "RunsFailedError",
    "UnknownNameError",
    "UnsavablePolicyError",
]
