"""Statistics for regression gates that do not flap.

A raw delta between two runs over a golden set of a few dozen queries moves by several points from
noise alone, so baseline comparisons are judged with statistics rather than by eye:

* :func:`bootstrap_ci` gives a percentile bootstrap confidence interval for a mean of per-query
  values (every mean the plugin reports).
* :func:`paired_comparison` compares per-query values of a current run against a baseline: the
  per-query deltas (current - baseline), a paired randomization (sign-flip) test, and a bootstrap
  confidence interval of the mean delta.
* :func:`minimum_detectable_drop` says how small a drop the golden set can detect at a given
  significance level and power; :func:`conservative_delta_sd` estimates the spread it needs when
  only one run exists.

Conventions shared by every function here:

* Inputs are per-query values that are defined (finite floats). NaN, None and infinities are
  rejected with :class:`ValueError`, as are empty inputs and paired inputs of unequal length.
* Randomness comes only from :func:`numpy.random.default_rng` seeded with ``seed``: the same inputs
  and seed give bit-identical results, so a rerun prints the same numbers.
* Resampling is done in chunks of at most :data:`CHUNK_ELEMENTS` matrix cells, so 7,000 queries x
  10,000 resamples never needs the whole 70-million-cell matrix in memory.

Where each lives: :mod:`.bootstrap` (the intervals of a mean), :mod:`.signflip` (the paired
test, its inversion :func:`delta_interval` and the :func:`budget_test`), :mod:`.power` (the
detectable drop), :mod:`.conventions` (the checks of inputs and options they share). Every name
is importable from ``pytest_retrieval.scoring.stats`` as before.

Each of those modules imports numpy at its top, and this package imports them all; nothing else
in the package imports it at import time.

Modules:

* ``bootstrap``: percentile bootstrap intervals of a mean.
* ``signflip``: the paired sign-flip test, its inversion into bounds on the mean delta, the
  budget test.
* ``power``: the detectable drop.
* ``multiplicity``: family-wise control: ``adjust_family`` turns the checks' p-values into
  adjusted ones (maxT, minP, Holm, none).
* ``conventions``: the input and option checks they share.
"""

from .bootstrap import ConfidenceInterval as ConfidenceInterval
from .bootstrap import bootstrap_ci as bootstrap_ci
from .conventions import CHUNK_ELEMENTS as CHUNK_ELEMENTS
from .conventions import Alternative as Alternative
from .conventions import FloatArray as FloatArray
from .power import DetectableDrop as DetectableDrop
from .power import conservative_delta_sd as conservative_delta_sd
from .power import detectable_drop as detectable_drop
from .power import minimum_detectable_drop as minimum_detectable_drop
from .signflip import EXACT_CUTOFF as EXACT_CUTOFF
from .signflip import MAX_EXACT_CUTOFF as MAX_EXACT_CUTOFF
from .signflip import DeltaInterval as DeltaInterval
from .signflip import PairedComparison as PairedComparison
from .signflip import budget_test as budget_test
from .signflip import delta_interval as delta_interval

# benchmarks/bench_gate_calibration.py times the Monte Carlo test on its own.
from .signflip import monte_carlo_sign_flip_p_value as monte_carlo_sign_flip_p_value
from .signflip import paired_comparison as paired_comparison
