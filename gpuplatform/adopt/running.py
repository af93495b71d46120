"""Running Helm releases: read from Helm's storage Secrets (snapshot) or from `helm get values`.

Helm 3/4 stores each release revision in a Secret `sh.helm.release.v1.<name>.v<revision>` labelled
`owner=helm,name=<name>,status=<status>`; `data.release` is base64 (the Secret's) of base64 of the
gzipped release JSON, whose `config` is the user-supplied values (what `helm get values` prints)
and `chart.metadata` the chart's name and version (helm/helm 03f9f680 pkg/storage/driver/util.go
encodeRelease/decodeRelease: JSON, gzip, standard base64; uncompressed when the magic is absent).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuplatform.errors import InputError
from gpuplatform.load.yaml_input import parse_yaml, read_text
from gpuplatform.model.base import is_dns_label
from gpuplatform.output.write import write_file

__all__ = [
    "HELM_FOLDER",
    "RunningRelease",
    "capture_releases",
    "decode_release_secret",
    "load_running_releases",
    "read_running_values",
]

#: Snapshot sub-folder with one `<namespace>_<release>.json` per captured release.
HELM_FOLDER = "helm"
_MAX_RELEASE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class RunningRelease:
    """A deployed Helm release: identity, chart, and its user-supplied values."""

    name: str
    namespace: str
    chart: str
    chart_version: str
    revision: int
    status: str
    values: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """The snapshot file's form."""
        return {
            "name": self.name,
            "namespace": self.namespace,
            "chart": self.chart,
            "chartVersion": self.chart_version,
            "revision": self.revision,
            "status": self.status,
            "values": self.values,
        }


def _named(release: RunningRelease, source: str, where: Mapping[str, str]) -> RunningRelease:
    """`release` once its name, namespace and chart are DNS labels: they become file names
    (`helm/<namespace>_<name>.json`, `values/<name>.yaml`) and spec fields, and a captured file is
    data, never a path (`../../.github/workflows/ci` is refused, not written)."""
    for field, value in (("name", release.name), ("namespace", release.namespace), ("chart", release.chart)):
        if not is_dns_label(value):
            raise InputError.single(
                source,
                where[field],
                f"{value!r} is not a Helm release's {field} (a DNS label): refusing to use it",
            )
    return release


def decode_release_secret(secret: Mapping[str, Any], source: str) -> RunningRelease:
    """The release stored in one Helm storage Secret (`kubectl get secret -o json` item)."""
    try:
        blob = base64.b64decode(base64.b64decode(secret["data"]["release"]))
        if blob[:2] == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=io.BytesIO(blob)) as f:
                blob = f.read(_MAX_RELEASE_BYTES + 1)
        if len(blob) > _MAX_RELEASE_BYTES:
            raise ValueError("release larger than 16 MiB")
        doc = json.loads(blob)
        meta = doc["chart"]["metadata"]
        release = RunningRelease(
            name=str(doc["name"]),
            namespace=str(doc["namespace"]),
            chart=str(meta["name"]),
            chart_version=str(meta["version"]),
            revision=int(doc["version"]),
            status=str(doc.get("info", {}).get("status", "")),
            values=dict(doc.get("config") or {}),
        )
    except (KeyError, TypeError, ValueError, binascii.Error, OSError) as exc:
        raise InputError.single(source, "data.release", f"not a Helm release Secret: {exc}") from None
    where = {
        "name": "data.release.name",
        "namespace": "data.release.namespace",
        "chart": "data.release.chart",
    }
    return _named(release, source, where)


def _from_snapshot_file(doc: Any, source: str) -> RunningRelease:
    if not isinstance(doc, dict) or not isinstance(doc.get("values"), dict):
        raise InputError.single(source, "values", "expected a snapshot's captured Helm release")
    try:
        release = RunningRelease(
            str(doc["name"]),
            str(doc["namespace"]),
            str(doc["chart"]),
            str(doc["chartVersion"]),
            int(doc["revision"]),
            str(doc["status"]),
            doc["values"],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError.single(source, "", f"incomplete captured Helm release: {exc}") from None
    return _named(release, source, {"name": "name", "namespace": "namespace", "chart": "chart"})


def load_running_releases(snapshot: Path) -> dict[tuple[str, str], RunningRelease]:
    """The releases a snapshot captured, by (namespace, name); empty when it captured none."""
    folder = snapshot / HELM_FOLDER
    releases = {}
    if folder.is_symlink():
        raise InputError.single(
            str(folder), "", "is a symbolic link; gpuplatform does not follow links in a snapshot"
        )
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        release = _from_snapshot_file(parse_yaml(read_text(path, follow_links=False), str(path)), str(path))
        releases[(release.namespace, release.name)] = release
    return releases


def read_running_values(path: Path) -> tuple[dict[str, Any], RunningRelease | None]:
    """The user-supplied values in `path`: `helm get values -o yaml` output (the table form's
    `USER-SUPPLIED VALUES:` header, its first line, is accepted) or a snapshot's captured release JSON.
    Any other line that is not a value is refused: a header further down, or `helm get values --all`'s
    `COMPUTED VALUES:`, would otherwise become a value of the release."""
    text = read_text(path)
    first, _, rest = text.lstrip("\ufeff").partition("\n")
    if first.strip() == _HEADER:
        text = rest
    doc = parse_yaml(text, str(path)) if text.strip() else None
    if isinstance(doc, dict) and {"chart", "chartVersion", "values"} <= doc.keys():
        release = _from_snapshot_file(doc, str(path))
        return release.values, release
    if doc is None:
        return {}, None
    if not isinstance(doc, dict):
        raise InputError.single(str(path), "", "expected `helm get values -o yaml` output (a mapping)")
    for key in doc:
        if _NOT_A_VALUE.search(str(key)):
            raise InputError.single(
                str(path),
                str(key),
                f"{key!r} is not a value of the chart but a line `helm get values` prints around them; "
                f"import `helm get values <release> -n <namespace> -o yaml` (only its first line may be {_HEADER!r})",
            )
    return doc, None


#: The first line of `helm get values` without `-o yaml`.
_HEADER = "USER-SUPPLIED VALUES:"
#: A top-level key no chart value has: Helm's headers (`USER-SUPPLIED VALUES`, `COMPUTED VALUES`).
_NOT_A_VALUE = re.compile(r"\s|^[A-Z][A-Z-]*$")


def capture_releases(
    run: Callable[[list[str]], tuple[int, str, str]], out: Path, targets: Sequence[str]
) -> dict[str, str]:
    """Capture each `namespace/release` of `targets` from Helm's storage into `out/helm/`.

    `run` runs kubectl with the given arguments and returns (exit code, stdout, stderr). Returns a
    status per target: "ok", or "missing: <why>" (forbidden, absent, not deployed).
    """
    status: dict[str, str] = {}
    for target in targets:
        namespace, _, name = target.partition("/")
        code, stdout, stderr = run(
            ["get", "secrets", "-n", namespace, "-l", f"owner=helm,name={name},status=deployed", "-o", "json"]
        )
        if code != 0:
            status[target] = "missing: " + (stderr.strip().splitlines() or ["kubectl failed"])[-1]
            continue
        try:
            items = json.loads(stdout).get("items", [])
        except json.JSONDecodeError:
            status[target] = "missing: kubectl printed no JSON"
            continue
        if not items:
            status[target] = "missing: no deployed Helm release of that name"
            continue
        try:
            release = max((decode_release_secret(i, target) for i in items), key=lambda r: r.revision)
        except InputError as exc:
            status[target] = "missing: " + exc.problems[0].message
            continue
        folder = out / HELM_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        write_file(
            folder / f"{namespace}_{name}.json", (json.dumps(release.as_dict(), indent=2) + "\n").encode()
        )
        status[target] = "ok"
    return status
