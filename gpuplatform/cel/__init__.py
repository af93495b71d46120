"""Kubernetes-flavoured CEL for DRA device selectors.

`DeviceSelector(expression, kubernetes="1.36", new_expression=True, features=None)` parses with
cel-go's grammar and limits (`syntax`, `lexer`, `literals`), type-checks and estimates the
worst-case cost the way cel-go and the Kubernetes cost estimator do (strings 64 bytes, 32
attributes per domain, 32 domains), and evaluates against ResourceSlice v1 devices with
Kubernetes' libraries (quantity, semver, strings ext v2, regex, lists, sets, `cel.bind`,
`includes`). `reads` lists the (kind, domain, name) values a selector looks at, so
`match_many`/`count_matches` evaluate each distinct combination once. See docs/cel-fidelity.md.
"""

from __future__ import annotations

from gpuplatform.cel.device import DeviceSet
from gpuplatform.cel.environment import DEFAULT_GATES, SUPPORTED_RELEASES
from gpuplatform.cel.errors import CelCompileError, CelError, CelEvaluationError
from gpuplatform.cel.quantity import Quantity, parse_quantity
from gpuplatform.cel.selector import MAX_COST, MAX_LENGTH, DeviceSelector
from gpuplatform.cel.semver import Semver, parse_semver

__all__ = [
    "DEFAULT_GATES",
    "MAX_COST",
    "MAX_LENGTH",
    "SUPPORTED_RELEASES",
    "CelCompileError",
    "CelError",
    "CelEvaluationError",
    "DeviceSelector",
    "DeviceSet",
    "Quantity",
    "Semver",
    "parse_quantity",
    "parse_semver",
]
