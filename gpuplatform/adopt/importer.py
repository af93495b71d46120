"""`gpuplatform import operator-values`: the running GPU Operator release's values into the spec.

The release the tool renders then upgrades the running one in place, with the team's values kept:
`gpuOperator.values` becomes the release's user-supplied values, `driver.version` moves to
`gpuOperator.driverVersion` (the one place the driver is pinned), and `releaseName` and `namespace`
are set. `managed` is the spec's own decision and stays as it is: an unmanaged operator's values
feed the migration's hand-off (`render/operator_handoff.py`), a managed one's the rendered release. A YAML spec is edited round-trip (comments and key order kept, like
`convert`) and re-validated before it replaces the file; a Python stack is code, so the values go
to a YAML file next to it and the lines to paste are printed. Nothing is written on any error.
"""

from __future__ import annotations

import copy
import io
import os
import stat
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import SingleQuotedScalarString

from gpuplatform.adopt.running import read_running_values
from gpuplatform.charts.facts import MISSING, chart_facts, leaf_paths, value_at
from gpuplatform.errors import GpuplatformError, InputError
from gpuplatform.load import helm_scalars
from gpuplatform.load.stacks import load_stack
from gpuplatform.load.yaml_input import read_text
from gpuplatform.model.base import DNS_LABEL
from gpuplatform.output.write import write_file
from gpuplatform.output.yaml import dump_yaml

__all__ = ["ALL_VALUES_THRESHOLD", "import_operator_values"]

#: More chart defaults than this among the imported leaves: the file is `helm get values --all`.
ALL_VALUES_THRESHOLD = 40


def _yaml() -> YAML:
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096
    return y


def _as_read(value: Any) -> Any:
    """`value` for ruamel to write so that the spec loader (Helm's rules) reads it back the same:
    a string Helm would read as something else (`yes`, `0o17`, `1e3`) is quoted, keys too."""
    if isinstance(value, str) and helm_scalars.plain_tag(value) != helm_scalars.STR:
        return SingleQuotedScalarString(value)
    if isinstance(value, dict):
        return {_as_read(k): _as_read(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_read(v) for v in value]
    return value


def _refuse_all_values(values: dict[str, Any], version: str, source: str) -> None:
    facts, _ = chart_facts("gpu-operator", version)
    defaults = sum(1 for path, value in leaf_paths(values) if facts.default(path) == value)
    if defaults > ALL_VALUES_THRESHOLD:
        raise InputError.single(
            source,
            "",
            f"{defaults} values equal the chart's defaults: this looks like `helm get values --all`; "
            "import the user-supplied values (`helm get values -n <ns> <release> -o yaml`)",
        )


def _split_driver_version(values: dict[str, Any], source: str) -> tuple[dict[str, Any], str | None]:
    """The values without `driver.version`, and that version (it becomes `driverVersion`)."""
    version = value_at(values, ("driver", "version"))
    if version is MISSING:
        return values, None
    if not isinstance(version, str | int | float):
        raise InputError.single(source, "driver.version", "expected a driver version like 580.126.09")
    rest = copy.deepcopy(values)
    del rest["driver"]["version"]
    if not rest["driver"]:
        del rest["driver"]
    return rest, str(version)


def _check_names(release: str | None, namespace: str | None) -> None:
    for option, value in (("--release-name", release), ("--namespace", namespace)):
        if value is not None and not DNS_LABEL.match(value):
            raise InputError.single(option, "", f"{value!r} is not a DNS label")


def _edit_spec(
    stack: Path, values: dict[str, Any], driver: str | None, release: str | None, namespace: str | None
) -> list[str]:
    if stack.is_symlink():
        raise InputError.single(
            str(stack), "", "is a symbolic link; import edits the spec in place: name the file itself"
        )
    y = _yaml()
    try:
        doc = y.load(read_text(stack))
    except YAMLError as exc:
        raise InputError.single(str(stack), "", f"YAML error: {exc}") from None
    spec = doc.get("spec") if isinstance(doc, dict) else None
    if not isinstance(spec, dict):
        raise InputError.single(str(stack), "spec", "expected a Platform spec with a `spec` mapping")
    operator = spec.setdefault("gpuOperator", {})
    if not isinstance(operator, dict):
        raise InputError.single(str(stack), "spec.gpuOperator", "expected a mapping")
    changed = [f"managed: {str(bool(operator.get('managed', False))).lower()} (as it was)"]
    if release is not None:
        operator["releaseName"] = release
        changed.append(f"releaseName: {release}")
    if namespace is not None:
        operator["namespace"] = namespace
        changed.append(f"namespace: {namespace}")
    if driver is not None:
        operator["driverVersion"] = driver
        changed.append(f"driverVersion: {driver}")
    operator["values"] = _as_read(values)
    changed.append(f"values: {sum(1 for _ in leaf_paths(values))} value(s)")
    buffer = io.StringIO()
    y.dump(doc, buffer)
    temporary = stack.with_name(f".{stack.name}.import")
    write_file(temporary, buffer.getvalue().encode())
    try:
        load_stack(temporary)
        _keep_mode_and_owner(stack, temporary)
    except GpuplatformError:
        temporary.unlink()
        raise
    os.replace(temporary, stack)
    return [f"updated {stack}: spec.gpuOperator " + ", ".join(changed)]


def _keep_mode_and_owner(stack: Path, temporary: Path) -> None:
    """Give the edited copy the spec's permission bits and owner before it replaces the spec;
    refuse (nothing replaced) when the owner cannot be kept, as only its owner or root may."""
    info = stack.stat()
    os.chmod(temporary, stat.S_IMODE(info.st_mode))
    current = temporary.stat()
    if (current.st_uid, current.st_gid) == (info.st_uid, info.st_gid):
        return
    try:
        os.chown(temporary, info.st_uid, info.st_gid)
    except PermissionError:
        raise InputError.single(
            str(stack),
            "",
            f"is owned by uid {info.st_uid} gid {info.st_gid}; import would leave it owned by this user: "
            "run it as the file's owner",
        ) from None


def _python_stack(
    stack: Path,
    values: dict[str, Any],
    driver: str | None,
    release: str | None,
    namespace: str | None,
    out: Path | None,
    source: Path,
) -> list[str]:
    name = release or "gpu-operator"
    target = out or stack.parent / "values" / f"{name}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    header = f"# The running release's user-supplied values, imported from {source.name} by gpuplatform.\n"
    write_file(target, (header + (dump_yaml(values) if values else "{}\n")).encode())
    relative = os.path.relpath(target, stack.parent)
    arguments = []
    if release is not None:
        arguments.append(f"release_name={release!r}")
    if namespace is not None:
        arguments.append(f"namespace={namespace!r}")
    if driver is not None:
        arguments.append(f"driver_version={driver!r}")
    arguments.append(f"values=yaml.safe_load((Path(__file__).parent / {relative!r}).read_text())")
    return [
        f"wrote {target}; in {stack} set (with `import yaml` and `from pathlib import Path`):",
        "    gpu_operator=GpuOperator(",
        *[f"        {a}," for a in arguments],
        "        # ...the other GpuOperator fields as before, `managed` included",
        "    ),",
    ]


def import_operator_values(
    values_file: Path,
    stack: Path,
    *,
    release: str | None = None,
    namespace: str | None = None,
    values_out: Path | None = None,
) -> list[str]:
    """Write the running values of `values_file` into `stack`; return what to print."""
    _check_names(release, namespace)
    values, running = read_running_values(values_file)
    if running is not None:
        release = release or running.name
        namespace = namespace or running.namespace
    [loaded, *_] = load_stack(stack)
    _refuse_all_values(values, loaded.platform.gpu_operator.version, str(values_file))
    values, driver = _split_driver_version(values, str(values_file))
    if stack.suffix in (".yaml", ".yml"):
        return _edit_spec(stack, values, driver, release, namespace)
    return _python_stack(stack, values, driver, release, namespace, values_out, values_file)
