"""Resource limits (Tool Form section 8.1). A hostile template fails fast with LimitError."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on one compilation and on each evaluation.

    - ``max_depth``: nesting depth of the template, checked at compile time.
    - ``max_nodes``: values in the template, checked at compile time (a Python
      template that reuses one sub-template counts it at every use, as its JSON
      text would).
    - ``max_data_depth``: nesting depth of values that are serialised, compared or copied.
    - ``max_evaluations``: directive evaluations per ``evaluate`` call.
    - ``max_expansion``: nodes produced by ``$spread``, ``$each`` and non-singular
      queries per ``evaluate`` call.
    - ``max_output``: characters produced by string templates, ``$join`` and
      encodings per ``evaluate`` call.
    - ``max_query_length``: characters in one JSONPath expression.
    - ``max_include_bytes``: size of one ``$include``d resource.
    """

    max_depth: int = 64
    max_nodes: int = 100_000
    max_data_depth: int = 256
    max_evaluations: int = 100_000
    max_expansion: int = 100_000
    max_output: int = 16 * 1024 * 1024
    max_query_length: int = 4096
    max_include_bytes: int = 1024 * 1024
