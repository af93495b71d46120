"""Semantic versions as CEL values, parsed like blang/semver (strict, or tolerant of `v1.0`)."""

from __future__ import annotations

import functools
import re

__all__ = ["Semver", "SemverError", "parse_semver"]

#: Whole-string, ASCII-only classes, as blang/semver v4's `containsOnly(s, numbers|alphanum)`
#: (vendor/github.com/blang/semver/v4/semver.go in kubernetes-sigs/dra-driver-nvidia-gpu v25.12.0):
#: "1.2.3-rc\n" and "1.2.3+b\n" are refused.
_DIGITS = re.compile(r"[0-9]+")
_NUMERIC = re.compile(r"0|[1-9][0-9]*")
_IDENT = re.compile(r"[0-9A-Za-z-]+")


class SemverError(ValueError):
    """The text is not a semantic version."""


@functools.total_ordering
class Semver:
    """A version; equality and order follow SemVer 2.0.0 precedence (build metadata ignored)."""

    __slots__ = ("build", "major", "minor", "patch", "pre")

    def __init__(
        self, major: int, minor: int, patch: int, pre: tuple[str, ...] = (), build: str = ""
    ) -> None:
        self.major, self.minor, self.patch, self.pre, self.build = major, minor, patch, pre, build

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self._key() == other._key()

    def __lt__(self, other: Semver) -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(self.pre)
        return text + (f"+{self.build}" if self.build else "")

    def __repr__(self) -> str:
        return f"Semver({str(self)!r})"


def parse_semver(text: str, tolerant: bool = False) -> Semver:
    """Parse strictly (`semver.Parse`) or tolerantly (`semver.ParseTolerant`: `v` prefix, missing parts)."""
    if tolerant:
        text = text.strip().removeprefix("v")
        core = re.split(r"[-+]", text, maxsplit=1)[0]
        parts = core.split(".")
        if 0 < len(parts) < 3 and all(_DIGITS.fullmatch(p) for p in parts):
            rest = text[len(core) :]
            parts = [str(int(p)) for p in parts] + ["0"] * (3 - len(parts))
            text = ".".join(parts) + rest
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major, minor, tail = parts
    build = ""
    if "+" in tail:
        tail, build = tail.split("+", 1)
        if not all(_IDENT.fullmatch(b) for b in build.split(".")):
            raise SemverError(f"Invalid character(s) found in build meta {build!r}")
    pre: tuple[str, ...] = ()
    if "-" in tail:
        tail, pre_text = tail.split("-", 1)
        pre = tuple(pre_text.split("."))
        for item in pre:
            if not _IDENT.fullmatch(item) or (_DIGITS.fullmatch(item) and not _NUMERIC.fullmatch(item)):
                raise SemverError(f"Invalid character(s) found in prerelease {item!r}")
    numbers = []
    for label, value in (("major", major), ("minor", minor), ("patch", tail)):
        if not _DIGITS.fullmatch(value):
            raise SemverError(f"Invalid character(s) found in {label} number {value!r}")
        if len(value) > 1 and value.startswith("0"):
            raise SemverError(f"{label.capitalize()} number must not contain leading zeroes {value!r}")
        numbers.append(int(value))
    return Semver(numbers[0], numbers[1], numbers[2], pre, build)
