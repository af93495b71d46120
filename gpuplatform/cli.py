"""The `gpuplatform` command: parse, call one library function, print, pick the exit code.

Exit codes: 0 success; 1 the job ran and found problems; 2 the input could not be used (a located
`error: <file>:<field>: ...`); 74 the machine refused (disk full, permission denied, read-only
file system, stdout closed); 130 interrupted (SIGINT); 70 an internal error (a bug: one
`error: internal:` line, the traceback with `--debug`).
"""

from __future__ import annotations

import contextlib
import errno
import gc
import json
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from gpuplatform._stdout import whole_writes
from gpuplatform.commands.report import Report, exit_code
from gpuplatform.errors import (
    EnvironmentFailure,
    GpuplatformError,
    InputError,
    Problem,
    RenderedOutputInvalid,
    format_problems,
)
from gpuplatform.runtime import Runtime, user_cache_folder, using

__all__ = ["main"]

EXIT_FINDINGS = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 70
EXIT_ENVIRONMENT = 74
EXIT_INTERRUPTED = 130
DIST_DIR = Path("dist")

F = TypeVar("F", bound=Callable[..., Any])


def _fail(lines: str, code: int) -> None:
    click.echo(lines, err=True)
    sys.exit(code)


def guarded(func: F) -> F:
    """Map library errors to exit codes; an unexpected exception is a bug (exit 70)."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            if sys.stdout is None:
                raise _stdout_closed()
            return func(*args, **kwargs)
        except InputError as exc:
            _fail(format_problems(exc.problems), EXIT_INPUT)
        except RenderedOutputInvalid as exc:
            _fail(
                "\n".join(f"error: internal: rendered object is invalid: {line}" for line in exc.lines),
                EXIT_INTERNAL,
            )
        except EnvironmentFailure as exc:
            _fail(f"error: {exc}", EXIT_ENVIRONMENT)
        except GpuplatformError as exc:
            _fail(f"error: {exc}", EXIT_INPUT)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            _fail("error: interrupted", EXIT_INTERRUPTED)
        except BrokenPipeError:
            _output_cut(sys.stdout)
        except MemoryError:
            _fail("error: out of memory", EXIT_ENVIRONMENT)
        except OSError as exc:
            where = exc.filename if exc.filename is not None else "the system"
            _fail(f"error: {where}: {exc.strerror or type(exc).__name__}", EXIT_ENVIRONMENT)
        except Exception as exc:
            if click.get_current_context().find_root().params.get("debug"):
                traceback.print_exc()
            _fail(f"error: internal: {type(exc).__name__}: {exc}", EXIT_INTERNAL)

    return wrapper  # type: ignore[return-value]


def _stdout_closed() -> EnvironmentFailure:
    return EnvironmentFailure("stdout", "cannot print the result", "it is closed")


def _output_cut(stdout: Any, exc: OSError | None = None) -> None:
    """Exit 74: stdout did not take the whole output (its reader went away: EPIPE, or `exc`)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
    what = "the reader closed the pipe before the output was complete"
    if exc is not None and exc.errno != errno.EPIPE:
        what = f"cannot print the result: {exc.strerror}"
    _fail(f"error: stdout: {what}", EXIT_ENVIRONMENT)


def overlay_option(func: F) -> F:
    """`--overlay FILE`, repeatable: merged onto the stack."""
    option = click.option(
        "--overlay", "overlays", multiple=True, help="Overlay merged onto the stack (repeatable)."
    )
    return option(func)


def platform_option(help: str = "Platform of the stack (default: every one).") -> Callable[[F], F]:
    """`--platform NAME`: read only that platform of the stack (an overlay adds a second one)."""
    return click.option("--platform", "platform", default=None, help=help)


def format_option(*choices: str, help: str | None = None) -> Callable[[F], F]:
    """`--format`, one of `choices` (the first is the default)."""
    return click.option("--format", "fmt", type=click.Choice(choices), default=choices[0], help=help)


def allow_option(help: str) -> Callable[[F], F]:
    """`--allow CODE`, repeatable: an error-level rule overridden."""
    return click.option("--allow", "allow", multiple=True, metavar="CODE", help=help)


def transition_options(verb: str, to: str = "WAVE", every: str | None = None) -> Callable[[F], F]:
    """`--from WAVE --to WAVE`: one transition to `verb`; with `every`, `--all` too (its help)."""
    options = [
        click.option(
            "--from", "source", default=None, metavar="WAVE", help=f"{verb} one transition: from WAVE..."
        ),
        click.option("--to", "target", default=None, metavar="WAVE", help=f"...to {to} (forward or back)."),
    ]
    if every is not None:
        options.append(click.option("--all", "every", is_flag=True, help=every))

    def decorate(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def engine_option(func: F) -> F:
    """`--engine`: the delivery engines to replay (default both)."""
    option = click.option("--engine", type=click.Choice(["argocd", "flux", "both"]), default="both")
    return option(func)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Print the traceback of internal errors.")
@click.version_option(package_name="gpuplatform")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Declare a GPU platform once; render every migration wave from device plugin to DRA."""
    _pause_cycle_collector(ctx)
    ctx.with_resource(using(cli_runtime()))


def cli_runtime() -> Runtime:
    """What the CLI's commands may do beyond their result, which a library call does only when
    asked: fork children onto the second core, keep the user's verdict cache, seal the output
    folder's state with the user's key."""
    from gpuplatform.output.state_key import state_key

    return Runtime(fork=True, cache=user_cache_folder(), state_key=state_key)


def _pause_cycle_collector(ctx: click.Context) -> None:
    """Turn Python's cycle collector off while a command runs, back on when it ends.

    A command builds hundreds of thousands of containers (a snapshot's parsed JSON, a rendered
    tree) and holds them until it exits; the collector's passes over them cost 15-40% of a run (a
    2,000-node snapshot parses in 0.8 s instead of 1.4 s) and find nothing to free: at the exit of
    `check`, `synth`, `evidence`, `plan`, `capacity` and `simulate` on the 2,000-node benchmark
    fleet, about 550 objects are cyclic garbage, all from imports. mypy raises its thresholds for
    the same reason (`gc.set_threshold` in mypy/main.py).
    """
    if gc.isenabled():
        gc.disable()
        ctx.call_on_close(gc.enable)


@main.command()
@click.argument("stack", required=False)
@overlay_option
@click.option("--out", "out", default=None, help="Folder to write instead of dist/ (DIR/<platform>/...).")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 and name the files that differ.")
@allow_option("Override an error-level rule (recorded).")
@click.option(
    "--recover",
    is_flag=True,
    help="Recover a killed run from the folders it left, without trusting its record (a lost key).",
)
@guarded
def synth(
    stack: str | None,
    overlays: tuple[str, ...],
    out: str | None,
    check: bool,
    allow: tuple[str, ...],
    recover: bool,
) -> None:
    """Render STACK (default: every stack in stacks/) into dist/<platform>/.

    Inside a Git work tree the output folder must be the spec's `delivery.path`, the folder the
    entry points name; elsewhere (a preview) the tree is written as declared, with a note.
    """
    from gpuplatform.commands.synth import DriftReport, synth_stack

    target = Path(out) if out else DIST_DIR
    report = synth_stack(stack, overlays, target, check=check, overrides=allow, recover=recover)
    if isinstance(report, DriftReport):
        if report.exit_code:
            *lines, summary = report.text().splitlines()
            click.echo("\n".join(lines), err=True)
            _fail(f"error: {summary}", EXIT_FINDINGS)
        click.echo(report.text())
        _notes(report.notes)
        return
    _notes(report.findings)
    if report.refused:
        _fail(f"error: {report.summary()}", EXIT_FINDINGS)
    click.echo(report.summary())
    _notes(report.notes)


@main.command("flux-entry")
@click.argument("stack")
@overlay_option
@platform_option()
@guarded
def flux_entry(stack: str, overlays: tuple[str, ...], platform: str | None) -> None:
    """Print the Flux Kustomization to add next to `flux bootstrap`'s files, as
    `clusters/<name>/<platform>.yaml`: it applies the platform's `delivery/flux/` (from the
    platform's own GitRepository, printed first, when `delivery.fluxGitRepository` names one)."""
    from gpuplatform.commands.flux_entry import flux_cluster_entries

    click.echo(flux_cluster_entries(stack, overlays, platform), nl=False)


@main.command("argocd-entry")
@click.argument("stack")
@overlay_option
@platform_option()
@click.option(
    "--applicationset",
    is_flag=True,
    help="One root on the stack's ApplicationSets (delivery/argocd-applicationset) instead.",
)
@guarded
def argocd_entry(stack: str, overlays: tuple[str, ...], platform: str | None, applicationset: bool) -> None:
    """Print the root Application to apply once where Argo CD runs (or commit to your app of apps):
    it syncs the platform's `delivery/argocd/`, so a merged wave is all a wave takes."""
    from gpuplatform.commands.argocd_entry import argocd_root_entries

    click.echo(argocd_root_entries(stack, overlays, platform, applicationset), nl=False)


def _notes(problems: list[Problem]) -> None:
    if problems:
        click.echo(format_problems(problems), err=True)


def _emit(reports: Sequence[Report], fmt: str, separator: str = "\n\n") -> None:
    """Print the reports (`--format json`: a list of their `as_dict()`), then exit with their code."""
    if fmt == "json":
        click.echo(json.dumps([r.as_dict() for r in reports], indent=2))
    else:
        click.echo(separator.join(r.text() for r in reports))
    _exit_with(reports)


def _exit_with(reports: Sequence[Report]) -> None:
    code = exit_code(reports)
    if code:
        sys.exit(code)


@main.command()
@click.option(
    "--kind",
    type=click.Choice(["Platform", "PlatformOverlay"]),
    default="Platform",
    help="The spec (default) or an overlay.",
)
@guarded
def schema(kind: str) -> None:
    """Print the JSON Schema of a spec (`kind: Platform`) or an overlay (`kind: PlatformOverlay`)."""
    from gpuplatform.commands.schema import schema_text

    click.echo(schema_text(kind))


@main.command()
@click.argument("stack")
@overlay_option
@format_option(
    "text", "json", "mermaid", help="mermaid: the pools x waves diagram of dist/<platform>/README.md."
)
@transition_options("Show")
@platform_option()
@guarded
def plan(
    stack: str,
    overlays: tuple[str, ...],
    fmt: str,
    source: str | None,
    target: str | None,
    platform: str | None,
) -> None:
    """Print, per wave, which pools are legacy or DRA, what exists, and what changed."""
    from gpuplatform.commands.plan import plan_command, plan_mermaid

    if fmt == "mermaid":
        click.echo(plan_mermaid(stack, overlays, platform, source, target), nl=False)
        return
    _emit(plan_command(stack, overlays, platform, source, target), fmt)


@main.command()
@click.argument("stack")
@overlay_option
@transition_options("Replay", every="Replay every transition plan accepts (the default).")
@engine_option
@click.option(
    "--snapshot", default=None, help="Snapshot folder (or pods JSON): its GPU pods are the workload mix."
)
@click.option(
    "--write-snapshots",
    "write_snapshots",
    default=None,
    metavar="DIR",
    help="Write the model's cluster at every checkpoint as a snapshot folder under DIR (new or empty).",
)
@format_option("text", "json")
@platform_option()
@guarded
def simulate(
    stack: str,
    overlays: tuple[str, ...],
    source: str | None,
    target: str | None,
    every: bool,
    engine: str,
    snapshot: str | None,
    write_snapshots: str | None,
    fmt: str,
    platform: str | None,
) -> None:
    """Replay transitions on a model of the cluster's controllers; exit 1 at the first violation."""
    from gpuplatform.commands.simulate import simulate_command

    _emit(
        simulate_command(stack, overlays, platform, source, target, every, engine, snapshot, write_snapshots),
        fmt,
    )


@main.command()
@click.argument("stack")
@overlay_option
@transition_options(
    "Rehearse", to="the adjacent WAVE", every="Every adjacent transition, forward then back (the default)."
)
@engine_option
@click.option(
    "--tree", default=None, metavar="DIR", help="The platform's rendered folder (default dist/<platform>)."
)
@click.option(
    "--assets", default=None, metavar="DIR", help="Control plane binaries (else $GPUPLATFORM_KUBE_ASSETS)."
)
@click.option(
    "--crds",
    default=None,
    metavar="DIR",
    help="Upstream CRD files to install (else the cached CRDs of the releases the spec targets).",
)
@click.option("--keep", is_flag=True, help="Keep the rehearsal's folder (logs, etcd) and print where it is.")
@click.option("--no-late", "no_late", is_flag=True, help="Leave out the replays with the operator late.")
@click.option(
    "--write-snapshots",
    "write_snapshots",
    default=None,
    metavar="DIR",
    help="Run `gpuplatform snapshot` of the cluster into DIR (new or empty) once each transition settles.",
)
@format_option("text", "json")
@platform_option()
@guarded
def rehearse(
    stack: str,
    overlays: tuple[str, ...],
    source: str | None,
    target: str | None,
    every: bool,
    engine: str,
    tree: str | None,
    assets: str | None,
    crds: str | None,
    keep: bool,
    no_late: bool,
    write_snapshots: str | None,
    fmt: str,
    platform: str | None,
) -> None:
    """Rehearse the waves on a real control plane: the tree applied, the runbook run; exit 1 at a violation."""
    from gpuplatform.commands.rehearse import rehearse_command

    reports = rehearse_command(
        stack,
        overlays,
        platform,
        source,
        target,
        every,
        engine,
        tree=tree,
        assets=assets,
        crds=crds,
        keep=keep,
        late=not no_late,
        write_snapshots=write_snapshots,
        progress=lambda line: click.echo(line, err=True),
    )
    _emit(reports, fmt)


@main.command()
@click.argument("stack", required=False)
@overlay_option
@click.option("--out", "out", default=None, help="Folder to compare with instead of dist/.")
@click.option("--waves", nargs=2, default=None, metavar="FROM TO", help="Diff two waves instead.")
@platform_option()
@guarded
def diff(
    stack: str | None,
    overlays: tuple[str, ...],
    out: str | None,
    waves: tuple[str, str] | None,
    platform: str | None,
) -> None:
    """Show, as a unified diff, what synth would change, or what really changes between two waves.

    Exit 0 when there is no difference, 1 when there are differences (like `git diff --exit-code`).
    """
    from gpuplatform.commands.diff import diff_command

    report = diff_command(stack, overlays, platform, Path(out) if out else DIST_DIR, waves)
    click.echo(report.unified, nl=False)
    if report.exit_code:
        sys.exit(report.exit_code)


@main.command()
@click.argument("stack")
@overlay_option
@click.option(
    "--inventory", "inventory", multiple=True, help="ResourceSlices (kubectl -o json|yaml file or folder)."
)
@click.option(
    "--snapshot", "snapshot", default=None, help="Cluster snapshot folder (its nodes.json is read)."
)
@format_option("text", "json")
@allow_option("Override an error-level rule (as synth records it).")
@platform_option()
@guarded
def check(
    stack: str,
    overlays: tuple[str, ...],
    inventory: tuple[str, ...],
    snapshot: str | None,
    fmt: str,
    allow: tuple[str, ...],
    platform: str | None,
) -> None:
    """Check selectors against modelled pools and inventory, run every safety rule and include the
    simulation of every transition plan accepts (GP290) and the capacity verdicts."""
    from gpuplatform.commands.check import check_command, check_findings, check_table

    reports = check_command(stack, overlays, platform, inventory, snapshot, allow)
    if fmt == "json":
        _emit(reports, fmt)
        return
    click.echo("\n\n".join(check_table(r) for r in reports))
    click.echo(check_findings(reports), err=True)
    _exit_with(reports)


@main.command()
@click.argument("stack")
@overlay_option
@click.option(
    "--snapshot",
    "snapshot",
    default=None,
    help="Snapshot folder: capacity of its nodes, slices and claims, with its GPU workloads placed too.",
)
@platform_option("Platform of the stack (needed with --snapshot).")
@click.option("--wave", "wave", default=None, help="The wave to check (default: the active wave).")
@click.option("--all", "all_waves", is_flag=True, help="Check every wave.")
@format_option("text", "json")
@guarded
def capacity(
    stack: str,
    overlays: tuple[str, ...],
    snapshot: str | None,
    platform: str | None,
    wave: str | None,
    all_waves: bool,
    fmt: str,
) -> None:
    """Will it fit? Place each wave's workloads (and each drain moment) on the fleet."""
    from gpuplatform.commands.capacity import capacity_command

    reports = capacity_command(stack, overlays, platform, snapshot, wave, all_waves)
    if fmt == "json":  # one list of every platform's waves
        click.echo(json.dumps([w.as_dict() for r in reports for w in r.waves], indent=2))
        _exit_with(reports)
        return
    _emit(reports, fmt, separator="\n")


@main.command()
@click.argument("code")
@guarded
def explain(code: str) -> None:
    """Print what rule CODE checks, why, and how to fix it."""
    from gpuplatform.policy.explain import explain_rule

    click.echo(explain_rule(code.upper()))


@main.command()
@click.option("--out", "out", required=True, help="Folder to write the snapshot into.")
@click.option("--context", "context", default=None, help="kubectl context (default: the current one).")
@click.option("--namespace", "namespaces", multiple=True, help="Limit namespaced kinds (repeatable).")
@click.option(
    "--nvidia-smi", "smi", multiple=True, metavar="NS/POD", help="Run nvidia-smi in this pod (repeatable)."
)
@click.option(
    "--logs",
    "logs",
    multiple=True,
    metavar="NS/POD",
    help="Keep this pod's log too (the gate and validation pods' are always kept; repeatable).",
)
@click.option(
    "--helm-release",
    "helm_releases",
    multiple=True,
    metavar="NS/NAME",
    help="Capture this Helm release's chart and values (repeatable; default gpu-operator/gpu-operator).",
)
@guarded
def snapshot(
    out: str,
    context: str | None,
    namespaces: tuple[str, ...],
    smi: tuple[str, ...],
    logs: tuple[str, ...],
    helm_releases: tuple[str, ...],
) -> None:
    """Read the cluster with kubectl into a snapshot folder (JSON per kind, pod logs, Helm releases, manifest)."""
    from gpuplatform.commands.snapshot import snapshot_command

    report = snapshot_command(
        out,
        context=context,
        namespaces=namespaces,
        nvidia_smi_pods=smi,
        log_pods=logs,
        helm_releases=helm_releases,
    )
    if report.text():
        click.echo(report.text())
    if report.exit_code:
        _fail(f"error: {report.refusal()}", report.exit_code)


@main.group()
def inventory() -> None:
    """The migration register and the GPU nodes of a snapshot."""


@inventory.command("register")
@click.argument("source")
@format_option("table", "csv", "yaml")
@guarded
def inventory_register(source: str, fmt: str) -> None:
    """One row per GPU workload of SOURCE (a snapshot folder or a pods.json)."""
    from gpuplatform.commands.inventory import register_table

    click.echo(register_table(source, fmt), nl=False)


@inventory.command("nodes")
@click.argument("source")
@format_option("table", "csv", "yaml")
@click.option("--dra-namespace", default="nvidia-dra-driver-gpu", help="Namespace of the DRA driver.")
@guarded
def inventory_nodes(source: str, fmt: str, dra_namespace: str) -> None:
    """Per GPU node: allocatable GPUs, product, which plugins run there, published devices."""
    from gpuplatform.commands.inventory import nodes_table

    click.echo(nodes_table(source, fmt, dra_namespace), nl=False)


@main.command()
@click.argument("stack")
@click.option("--wave", "wave", required=True, help="The wave whose gates to evaluate.")
@click.option("--snapshot", "snapshot_dir", required=True, help="Snapshot folder (gpuplatform snapshot).")
@overlay_option
@platform_option("Platform of the stack (when it has several).")
@format_option("markdown", "json")
@click.option(
    "--max-age", "max_age", default="24h", show_default=True, help="Refuse an older snapshot (30m, 24h, 7d)."
)
@click.option("--allow-stale", is_flag=True, help="Judge a snapshot older than --max-age, or undated.")
@guarded
def evidence(
    stack: str,
    wave: str,
    snapshot_dir: str,
    overlays: tuple[str, ...],
    platform: str | None,
    fmt: str,
    max_age: str,
    allow_stale: bool,
) -> None:
    """Evaluate a wave's gates against a snapshot; exit 0 only when every gate holds."""
    from gpuplatform.commands.evidence import evidence_command

    reports = evidence_command(stack, overlays, platform, wave, snapshot_dir, max_age, allow_stale)
    for report in reports:
        if fmt == "json":
            click.echo(json.dumps(report.as_dict(), indent=2))
        else:
            click.echo(report.text(), nl=False)
    _exit_with(reports)


@main.command()
@click.option("--snapshot", "snapshot_dir", required=True, help="Snapshot folder of the running cluster.")
@click.option("--name", default="cluster", help="Platform name (a DNS label).")
@click.option("--domain", default="platform.example.com", help="Domain of the DeviceClass names.")
@click.option("--out", "out", default=None, help="File to write (default: stdout).")
@guarded
def init(snapshot_dir: str, name: str, domain: str, out: str | None) -> None:
    """Write a starting spec from a running cluster: every GPU node legacy, decisions marked TODO."""
    from gpuplatform.commands.init import init_command

    click.echo(init_command(snapshot_dir, name, domain, out), nl=False)


@main.command()
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--tier",
    "tier",
    required=True,
    help="Tier of --spec, or a DeviceClass the spec or the DRA chart renders.",
)
@click.option(
    "--spec", "spec", default=None, help="Stack whose tiers, pools and tenants the conversion uses."
)
@platform_option("Platform of --spec (when it has several).")
@click.option(
    "--map", "maps", multiple=True, metavar="RESOURCE=TIER", help="Where another nvidia.com/ resource goes."
)
@click.option(
    "--share", is_flag=True, help="Containers share one request (see the same GPUs); default: each its own."
)
@click.option("--out", "out", default=None, help="Folder for the converted files (default: stdout).")
@click.option("--kubernetes", "kubernetes", default="1.36", help="Kubernetes release to validate against.")
@guarded
def convert(
    files: tuple[str, ...],
    tier: str,
    spec: str | None,
    platform: str | None,
    maps: tuple[str, ...],
    share: bool,
    out: str | None,
    kubernetes: str,
) -> None:
    """Rewrite device-plugin GPU workloads into ResourceClaimTemplates and pod resourceClaims."""
    from gpuplatform.commands.convert import convert_command

    result = convert_command(files, tier, spec, platform, maps, share=share, out=out, kubernetes=kubernetes)
    _notes(result.notes)
    for line in result.lines:
        click.echo(line, nl=not line.endswith("\n"))


@main.group("import")
def import_group() -> None:
    """Bring what a running cluster already has into a spec (brownfield adoption)."""


@import_group.command("operator-values")
@click.argument("file")
@click.option("--stack", "stack", required=True, help="The YAML spec to edit, or the Python stack to update.")
@click.option("--release-name", "release", default=None, help="The running release's name (helm list).")
@click.option("--namespace", "namespace", default=None, help="The running release's namespace.")
@click.option(
    "--values-out", "values_out", default=None, help="Python stacks: where to write the values YAML."
)
@guarded
def import_operator_values(
    file: str, stack: str, release: str | None, namespace: str | None, values_out: str | None
) -> None:
    """Write a running GPU Operator release's values (FILE: `helm get values -n NS RELEASE -o yaml`,
    or a snapshot's helm/NS_RELEASE.json) into STACK, so its release upgrades the running one in place."""
    from gpuplatform.adopt.importer import import_operator_values as run

    lines = run(
        Path(file),
        Path(stack),
        release=release,
        namespace=namespace,
        values_out=Path(values_out) if values_out else None,
    )
    for line in lines:
        click.echo(line)


def run() -> None:
    """The `gpuplatform` console script: `main`, then the exit without freeing what it built.

    A command holds up to hundreds of megabytes of objects (a 2,000-node snapshot parses into
    ~300 MB) until it ends; freeing them one by one at exit costs 0.1-0.3 s and returns nothing
    the operating system does not take back in one piece. So, as mypy does (`hard_exit` in
    mypy/util.py, its default `fast_exit`), the streams are flushed and the process ends with
    `os._exit`. Nothing of the command's is lost: files are written and closed before `main`
    returns, and no command registers an exit handler.

    Output that cannot be delivered is never a success, whatever printed it (`--help` and
    `--version` too, which click prints before any command runs): stdout writes every byte or
    fails (`_stdout.whole_writes`), and a closed stdout, a reader gone while click printed (click
    then swaps in a stdout that ignores the error) or at the last flush, or a full device exit 74,
    as `guarded` commands do.
    """
    if sys.stdout is None:
        _fail(f"error: {_stdout_closed()}", EXIT_ENVIRONMENT)
    stdout = sys.stdout = whole_writes(sys.stdout)
    code: str | int | None = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    except OSError as exc:  # click printing help or the version
        _output_cut(stdout, exc)
    if isinstance(code, str):
        sys.exit(code)
    try:
        if sys.stdout is not stdout:
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))
        stdout.flush()
    except OSError as exc:
        _output_cut(stdout, exc)
    except ValueError:
        _output_cut(stdout)
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code or 0)


if __name__ == "__main__":
    run()
