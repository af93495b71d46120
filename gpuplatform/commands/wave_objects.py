"""One wave's objects as a flat list, exactly as `synth` renders them, for consumers that apply them
without our file tree (the cdk8s construct).

The platform goes the way of a Python stack through synth: the spec document is loaded again (so
reference, stage-order and every other load check applies), every rule runs (an error refuses,
unless allowed), the tree is rendered and each object validated strictly. What one engine applies
for a wave is the gate identity of `delivery/gates/` (both entry points include it, and a PreSync
hook runs before the wave's own objects exist) and the wave's folder with that engine's subfolders.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuplatform.capacity.verdicts import capacity_problems
from gpuplatform.commands.synth import policy_findings
from gpuplatform.errors import InputError, Problem
from gpuplatform.load.documents import platform_document, platform_from_document
from gpuplatform.load.stacks import LoadedPlatform
from gpuplatform.model.platform import Platform
from gpuplatform.output.serialize import Serializer
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.meta import Obj
from gpuplatform.render.tree import ENGINE_GROUPS, Tree, render_tree, shared_files
from gpuplatform.versions import parse_release

__all__ = ["synth_wave_objects"]


def _engine(platform: Platform, engine: str | None, source: str) -> str:
    """The engine whose objects to include: `engine`, or the spec's only one."""
    engines = list(platform.delivery.engines)
    if engine is None and len(engines) == 1:
        return engines[0]
    if engine is None:
        message = (
            f"platform {platform.name!r} delivers with {' and '.join(engines)}: pass engine= one of them "
            "(synth renders each engine's releases in its own folder, applied only by that engine)"
        )
        raise InputError.single(source, "engine", message)
    if engine not in engines:
        message = f"engine {engine!r} is not one of the platform's delivery.engines ({', '.join(engines)})"
        raise InputError.single(source, "engine", message)
    return engine


def synth_wave_objects(
    platform: Platform,
    wave: str,
    *,
    engine: str | None = None,
    allow: Sequence[str] = (),
    source: str = "<python>",
) -> list[Obj]:
    """The objects engine `engine` applies for `wave` of `platform`, in apply order, as synth renders them.

    Raises what synth raises: InputError (bad spec, unknown wave or engine; the problems name the
    valid ones), PolicyRefusal (an error-level rule not in `allow`; `.problems` carries every finding),
    RenderedOutputInvalid (a rendered object fails strict validation).
    """
    document = platform_document(platform)
    platform = platform_from_document(document, source)
    chosen = _engine(platform, engine, source)
    plan = plan_platform(platform)
    if wave not in [w.name for w in plan.waves]:
        raise InputError([Problem(source, "wave", "", plan.no_wave(wave))])
    tree = render_tree(plan)
    loaded = LoadedPlatform(platform, source, (), document)
    policy_findings([loaded], allow, {platform.name: tree}, capacity=capacity_problems(loaded))
    root = f"waves/{plan.wave(wave).dir_name}/"
    others = set(ENGINE_GROUPS.values()) - {chosen}
    picked: dict[str, list[Obj]] = {}
    for path in tree.files:
        if not path.startswith((root, "delivery/gates/")):
            continue
        for listed in [path, *shared_files(tree.files, path)]:  # with the Nodes `10-nodes` names
            content = tree.files[listed]
            if listed.endswith("/kustomization.yaml") or not isinstance(content, list):
                continue
            if not others & set(listed.split("/")[:-1]):
                picked[listed] = content
    Serializer(parse_release(platform.kubernetes.version).minor).files(Tree(platform.name, dict(picked)))
    gates_first = sorted(picked, key=lambda p: not p.startswith("delivery/"))
    return [obj for path in gates_first for obj in picked[path]]
