"""`gpuplatform explain CODE`: the long form of a rule or selector-check code."""

from __future__ import annotations

from gpuplatform.capacity.codes import CAPACITY_CODES
from gpuplatform.errors import InputError
from gpuplatform.policy.rules import RULES

__all__ = ["CHECK_CODES", "RETIRED_CODES", "explain_rule"]

#: Codes of the selector checks and pool modelling (`gpuplatform check`), which are not rules.
CHECK_CODES: dict[str, tuple[str, str]] = {
    "GP301": (
        "a node pool the catalog cannot model",
        "The pool's product, MIG layout or the DRA driver release is unknown to the GPU catalog, so its devices cannot be modelled; name a catalog product (`gpuplatform check` lists them) or check against a real inventory.",
    ),
    "GP310": (
        "a selector that does not compile",
        "The API server would reject the DeviceClass or claim: syntax errors, undeclared names, type errors, a result that is not bool, over 10,240 bytes or over the cost limit of 1,000,000 (see docs/cel-fidelity.md).",
    ),
    "GP311": (
        "a selector that matches no device",
        "No modelled or inventoried device passes every selector: claims for it would stay pending forever. With `--inventory`, matching no device of the inventory is enough: the cluster is what the scheduler allocates from (a tier asking for `80Gi` matches no H100 80GB, which publishes 81559Mi).",
    ),
    "GP312": (
        "a claim no single node can satisfy",
        "All devices of one claim come from one node (and at most 32); a template asking for more than the best node has never allocates.",
    ),
    "GP313": (
        "an attribute the driver release does not publish",
        "Attribute names changed across NVIDIA DRA driver releases (index/minor removed in 25.8, pcieBusID renamed in 25.12); reading one the release does not publish is a runtime error on every device.",
    ),
    "GP314": (
        "a selector that raises on some devices",
        "A missing attribute is an error, not a mismatch: the scheduler gives up on the claim. Guard the read with `'name' in device.attributes['gpu.nvidia.com'] && ...`.",
    ),
}


#: Codes no rule uses any more, kept reserved (never reused) with the reason.
RETIRED_CODES: dict[str, tuple[str, str]] = {
    "GP134": (
        "final cutover while a legacy pool or an unconverted workload remains",
        "Retired: the final-cutover wave must be the last wave (stage order, checked when the spec is loaded), so no pool, workload or NIM service can move after it any more.",
    ),
}


def explain_rule(code: str) -> str:
    """Title, severity and explanation of `code`; InputError for a code nobody defined."""
    if code in RULES:
        r = RULES[code]
        return f"{r.code} ({r.severity}): {r.title}\n\n{r.explanation}"
    if code in CHECK_CODES:
        title, text = CHECK_CODES[code]
        return f"{code} (error): {title}\n\n{text}"
    if code in CAPACITY_CODES:
        severity, title, text = CAPACITY_CODES[code]
        return f"{code} ({severity}): {title}\n\n{text}"
    if code in RETIRED_CODES:
        title, text = RETIRED_CODES[code]
        return f"{code} (retired): {title}\n\n{text}"
    known = ", ".join(sorted([*RULES, *CHECK_CODES, *CAPACITY_CODES]))
    raise InputError.single("CODE", "", f"no rule {code!r}; known codes: {known}")
