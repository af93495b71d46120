"""Shared base model and constrained string types for the spec."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from gpuplatform.versions import parse_release

__all__ = [
    "DNS_LABEL",
    "DNS_SUBDOMAIN",
    "SEMVER",
    "DnsLabel",
    "DnsSubdomain",
    "LabelKey",
    "LabelValue",
    "Quantity",
    "ReleaseNumber",
    "SemVer",
    "SpecModel",
]

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$")
_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-((0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(\+([0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*))?$"
)


class SpecModel(BaseModel):
    """Frozen, strict, camelCase-aliased base of every spec model.

    Field docstrings become the descriptions (and titles) of `gpuplatform schema`.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        validate_default=True,
        use_attribute_docstrings=True,
    )


def _dns_label(value: str) -> str:
    if not DNS_LABEL.match(value):
        raise ValueError(f"{value!r} is not a DNS label (lower case letters, digits and '-', at most 63)")
    return value


def _dns_subdomain(value: str) -> str:
    if len(value) > 253 or not DNS_SUBDOMAIN.match(value):
        raise ValueError(f"{value!r} is not a DNS subdomain (lower case, at most 253, dot-separated labels)")
    return value


def _label_key(value: str) -> str:
    prefix, _, name = value.rpartition("/")
    if (prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix))) or not _LABEL_NAME.match(name):
        raise ValueError(f"{value!r} is not a valid label key ([prefix/]name)")
    return value


def _label_value(value: str) -> str:
    if value and not _LABEL_NAME.match(value):
        raise ValueError(
            f"{value!r} is not a valid label value (at most 63 of [A-Za-z0-9_.-], alphanumeric ends)"
        )
    return value


def _quantity(value: str) -> str:
    if not _QUANTITY.match(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 40Gi, 80G, 1024Mi)")
    return value


def _semver(value: str) -> str:
    if not SEMVER.match(value):
        raise ValueError(f"{value!r} is not a semantic version (MAJOR.MINOR.PATCH, no 'v')")
    return value


def _release(value: str) -> str:
    parse_release(value)
    return value


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
DnsSubdomain = Annotated[str, AfterValidator(_dns_subdomain)]
LabelKey = Annotated[str, AfterValidator(_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
Quantity = Annotated[str, AfterValidator(_quantity)]
SemVer = Annotated[str, AfterValidator(_semver)]
ReleaseNumber = Annotated[str, AfterValidator(_release)]
