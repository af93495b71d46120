"""Shared base model and the one validation layer for names and values of the spec.

Every name and value that reaches a rendered object is checked here with Kubernetes' own rules and
limits, so Python stacks and YAML specs are held to the same contract at the path of the field.
The name rules mirror kubernetes/kubernetes `staging/src/k8s.io/apimachinery/pkg/util/validation/
validation.go` (IsDNS1123Label, IsDNS1123Subdomain; label keys and values in `pkg/api/validate/
content`). Go's `regexp` anchors `^...$` at the ends of the text only; Python's `$` also matches
before a trailing newline, so every pattern here is a full match (`re.fullmatch` / `\\Z`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel

from gpuplatform.versions import parse_release

__all__ = [
    "DNS_LABEL",
    "DNS_LABEL_MAX",
    "DNS_SUBDOMAIN",
    "DNS_SUBDOMAIN_MAX",
    "INT32_MAX",
    "INT64_MAX",
    "JSON_MAX_DEPTH",
    "MAX_CLUSTER_NODES",
    "MAX_MINUTES",
    "SEMVER",
    "CleanString",
    "Description",
    "DnsLabel",
    "DnsSubdomain",
    "ExtendedResourceName",
    "FeatureGateName",
    "Int32",
    "Int64",
    "JsonObject",
    "LabelKey",
    "LabelValue",
    "Minutes",
    "NonNegativeInt32",
    "NonNegativeInt64",
    "Quantity",
    "RelativePath",
    "ReleaseNumber",
    "SemVer",
    "SpecModel",
    "Token",
    "is_dns_label",
    "is_dns_subdomain",
    "label_key_problem",
    "label_value_problem",
]

DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253
_QUALIFIED_NAME_MAX = 63
_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
#: Full-match patterns (`\A...\Z`): `.match()` on them is a full match too.
DNS_LABEL = re.compile(rf"\A{_LABEL}\Z", re.ASCII)
DNS_SUBDOMAIN = re.compile(rf"\A{_LABEL}(?:\.{_LABEL})*\Z", re.ASCII)
_QUALIFIED_NAME = re.compile(r"\A(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z", re.ASCII)
#: resource.Quantity's grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go, ParseQuantity).
_QUANTITY = re.compile(
    r"\A[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?\Z",
    re.ASCII,
)
_QUANTITY_MAX = 64
#: https://semver.org grammar, ASCII digits only.
SEMVER = re.compile(
    r"\A(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(-((0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(\+([0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*))?\Z",
    re.ASCII,
)
#: A release as charts, images and the API server print it: `1.36.1`, `v1.36`, `580.126.09`, `0.4.1-rc.1`.
_RELEASE = re.compile(
    r"\Av?[0-9]{1,9}(?:\.[0-9]{1,9}){1,3}(?:-[0-9A-Za-z.-]{1,64})?(?:\+[0-9A-Za-z.-]{1,64})?\Z"
)
#: Kubernetes and DRA driver feature gate names are CamelCase identifiers.
_FEATURE_GATE = re.compile(r"\A[A-Za-z][A-Za-z0-9]{0,127}\Z", re.ASCII)
#: One word (an image, a URL, a revision): no whitespace or control characters.
_TOKEN = re.compile(r"\A[^\s\x00-\x1f\x7f]{1,4096}\Z")
#: Free text that lands in a YAML scalar on one line: no control characters, no edge whitespace, no
#: NEL or Unicode line or paragraph separator (YAML 1.1 and Python break lines at them).
_CLEAN = re.compile(
    r"\A[^\s\x00-\x1f\x7f\x85\u2028\u2029](?:[^\x00-\x1f\x7f\x85\u2028\u2029]*[^\s\x00-\x1f\x7f\x85\u2028\u2029])?\Z"
)
#: A description for people: one line (no control character, no Unicode line or paragraph
#: separator, which Python and some editors break lines at), at most 1,024 characters, or empty.
_DESCRIPTION = re.compile(
    r"\A(?:[^\s\x00-\x1f\x7f\x85\u2028\u2029](?:[^\x00-\x1f\x7f\x85\u2028\u2029]{0,1022}"
    r"[^\s\x00-\x1f\x7f\x85\u2028\u2029])?)?\Z"
)


#: The largest cluster a platform may list. Upstream Kubernetes tests clusters of up to 5,000 nodes
#: (kubernetes.io/docs/setup/best-practices/cluster-large), but managed GPU clusters run larger: GKE
#: Standard clusters take up to 15,000 nodes (cloud.google.com/kubernetes-engine/docs/concepts/
#: planning-large-clusters), and the benchmark fleet is specified up to 8,000.
MAX_CLUSTER_NODES = 15_000
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
#: A duration in minutes that still fits Go's time.Duration (int64 nanoseconds): Flux and Argo CD
#: parse `timeout: <n>m` with time.ParseDuration, which refuses anything longer.
MAX_MINUTES = INT64_MAX // (60 * 10**9)
#: Deepest nesting of free-form values (Helm values, driver config) a spec may carry.
JSON_MAX_DEPTH = 64


class SpecModel(BaseModel):
    """Frozen, strict, camelCase-aliased base of every spec model.

    Field docstrings become the descriptions (and titles) of `gpuplatform schema`: read from the
    source by `load/schema.py` when a schema is asked for, not at import (where pydantic's
    `use_attribute_docstrings` costs every command ~0.1 s).
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        validate_default=True,
    )


def is_dns_label(value: str) -> bool:
    """RFC 1123 label: lower case alphanumerics and '-', alphanumeric ends, at most 63 characters."""
    return len(value) <= DNS_LABEL_MAX and DNS_LABEL.fullmatch(value) is not None


def is_dns_subdomain(value: str) -> bool:
    """RFC 1123 subdomain: dot-separated labels, at most 253 characters."""
    return len(value) <= DNS_SUBDOMAIN_MAX and DNS_SUBDOMAIN.fullmatch(value) is not None


def _qualified_name_problem(name: str) -> str | None:
    if not name:
        return "the name part must not be empty"
    if len(name) > _QUALIFIED_NAME_MAX:
        return f"the name part is {len(name)} characters, over {_QUALIFIED_NAME_MAX}"
    if _QUALIFIED_NAME.fullmatch(name) is None:
        return "the name part must be [A-Za-z0-9], '-', '_' or '.', with alphanumeric ends"
    return None


def label_key_problem(value: str) -> str | None:
    """Why `value` is not a label key (`[prefix/]name`), or None (content.IsLabelKey)."""
    prefix, slash, name = value.partition("/")
    if not slash:
        prefix, name = "", value
    elif not prefix:
        return "the prefix before '/' must not be empty"
    elif "/" in name:
        return "a label key has at most one '/'"
    elif len(prefix) > DNS_SUBDOMAIN_MAX:
        return f"the prefix is {len(prefix)} characters, over {DNS_SUBDOMAIN_MAX}"
    elif not is_dns_subdomain(prefix):
        return "the prefix must be a DNS subdomain (lower case, dot-separated labels)"
    return _qualified_name_problem(name)


def label_value_problem(value: str) -> str | None:
    """Why `value` is not a label value (empty, or a qualified name of at most 63), or None."""
    if not value:
        return None
    if len(value) > _QUALIFIED_NAME_MAX:
        return f"{len(value)} characters, over {_QUALIFIED_NAME_MAX}"
    if _QUALIFIED_NAME.fullmatch(value) is None:
        return "must be [A-Za-z0-9], '-', '_' or '.', with alphanumeric ends"
    return None


def _dns_label(value: str) -> str:
    if not is_dns_label(value):
        raise ValueError(f"{value!r} is not a DNS label (lower case letters, digits and '-', at most 63)")
    return value


def _dns_subdomain(value: str) -> str:
    if not is_dns_subdomain(value):
        raise ValueError(f"{value!r} is not a DNS subdomain (lower case, at most 253, dot-separated labels)")
    return value


def _label_key(value: str) -> str:
    problem = label_key_problem(value)
    if problem is not None:
        raise ValueError(f"{value!r} is not a valid label key ([prefix/]name): {problem}")
    return value


def _label_value(value: str) -> str:
    problem = label_value_problem(value)
    if problem is not None:
        raise ValueError(f"{value!r} is not a valid label value: {problem}")
    return value


def _extended_resource_name(value: str) -> str:
    """An extended resource name (k8s.io/apimachinery helper.IsExtendedResourceName): a domain-prefixed
    qualified name outside `kubernetes.io`, whose quota form `requests.<name>` is a qualified name too."""
    prefix, slash, _ = value.partition("/")
    problem = label_key_problem(value) or label_key_problem(f"requests.{value}")
    if problem is None and not slash:
        problem = "it needs a domain prefix (like nvidia.com/gpu)"
    if problem is None and (prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io")):
        problem = "the kubernetes.io domain is reserved for native resources"
    if problem is not None:
        raise ValueError(f"{value!r} is not an extended resource name: {problem}")
    return value


def _quantity(value: str) -> str:
    if len(value) > _QUANTITY_MAX or _QUANTITY.fullmatch(value) is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 40Gi, 80G, 1024Mi)")
    return value


def _release(value: str) -> str:
    if _RELEASE.fullmatch(value) is None:
        raise ValueError(f"{value!r} is not a release number like 1.36.1")
    parse_release(value)
    return value


def _full_match(pattern: re.Pattern[str], what: str) -> Callable[[str], str]:
    """A validator refusing a value that `pattern` does not match in full: `'<value>' <what>`."""

    def check(value: str) -> str:
        if pattern.fullmatch(value) is None:
            raise ValueError(f"{value!r} {what}")
        return value

    return check


def _relative_path(value: str) -> str:
    parts = value.split("/")
    if (
        _CLEAN.fullmatch(value) is None
        or len(value) > 4096
        or "\\" in value
        or value.startswith("/")
        or any(p in ("", ".", "..") for p in parts)
    ):
        raise ValueError(
            f"{value!r} must be a relative path inside the stack's folder (no leading '/', no '.' or '..' segments)"
        )
    return value


def _json_problem(value: Any, depth: int) -> str | None:
    if depth > JSON_MAX_DEPTH:
        return f"nested deeper than {JSON_MAX_DEPTH} levels"
    if value is None or isinstance(value, bool | str):
        return None
    if isinstance(value, int):
        return (
            None if -(2**63) <= value <= 2**64 - 1 else f"integer {value} is outside the int64/uint64 range"
        )
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value!r} is not a number JSON or Helm can carry"
    if isinstance(value, list | tuple):
        for item in value:
            problem = _json_problem(item, depth + 1)
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"mapping key {key!r} is not a string"
            problem = _json_problem(item, depth + 1)
            if problem is not None:
                return f"{key}: {problem}"
        return None
    return f"a {type(value).__name__} is not plain data (strings, numbers, booleans, null, lists, mappings)"


def _json_object(value: Any) -> Any:
    """Plain JSON data only: what Helm values and driver parameters can be (no dates, bytes, sets, NaN)."""
    if not isinstance(value, dict):
        return value  # the dict[str, Any] type reports the wrong shape
    problem = _json_problem(value, 0)
    if problem is not None:
        raise ValueError(problem)
    return value


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
DnsSubdomain = Annotated[str, AfterValidator(_dns_subdomain)]
LabelKey = Annotated[str, AfterValidator(_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
ExtendedResourceName = Annotated[str, AfterValidator(_extended_resource_name)]
Quantity = Annotated[str, AfterValidator(_quantity)]
SemVer = Annotated[
    str, AfterValidator(_full_match(SEMVER, "is not a semantic version (MAJOR.MINOR.PATCH, no 'v')"))
]
ReleaseNumber = Annotated[str, AfterValidator(_release)]
FeatureGateName = Annotated[
    str,
    AfterValidator(
        _full_match(_FEATURE_GATE, "is not a feature gate name (letters and digits, like DynamicMIG)")
    ),
]
CleanString = Annotated[
    str,
    AfterValidator(
        _full_match(_CLEAN, "must be non-empty, one line, without control characters or surrounding spaces")
    ),
]
Description = Annotated[
    str,
    AfterValidator(
        _full_match(
            _DESCRIPTION,
            "must be one line of at most 1024 characters, without control characters or surrounding spaces "
            "(it is written into runbooks and README.md as text)",
        )
    ),
]
RelativePath = Annotated[str, AfterValidator(_relative_path)]
Token = Annotated[
    str, AfterValidator(_full_match(_TOKEN, "must be one word: no spaces or control characters"))
]
JsonObject = Annotated[dict[str, Any], BeforeValidator(_json_object)]
Int32 = Annotated[int, Field(strict=True, ge=-(2**31), le=INT32_MAX)]
Int64 = Annotated[int, Field(strict=True, ge=-(2**63), le=INT64_MAX)]
NonNegativeInt32 = Annotated[int, Field(strict=True, ge=0, le=INT32_MAX)]
NonNegativeInt64 = Annotated[int, Field(strict=True, ge=0, le=INT64_MAX)]
Minutes = Annotated[int, Field(strict=True, ge=1, le=MAX_MINUTES)]
