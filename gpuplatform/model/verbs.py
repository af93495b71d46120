"""The verbs of a Platform: `platform.plan()`, `.render()`, `.synth(out)`, `.check()`,
`.simulate()`, `.capacity()`, `.transition(a, b)`, `.rehearse(tree)`, each returning its command's
typed report (`text()`, `as_dict()`, `exit_code`).

The model sits below every layer that does the work, so each verb imports `commands/verbs.py`
when it is called, and the reports' types only for type checkers: the one place the model names
a layer above it (`tests/test_layers.py` allows exactly this module that).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from gpuplatform.commands.capacity import CapacityReport
    from gpuplatform.commands.check import CheckReport
    from gpuplatform.commands.plan import PlanReport, TransitionReport
    from gpuplatform.commands.render import RenderReport
    from gpuplatform.commands.synth import SynthReport
    from gpuplatform.model.platform import Platform
    from gpuplatform.rehearse.run import RehearsalOptions
    from gpuplatform.simulate.run import PlatformReport as SimulationReport

__all__ = ["PlatformVerbs"]


class PlatformVerbs:
    """What a Platform can be asked to do; `Platform` inherits it."""

    def plan(self, *, source: str | Path = "<python>") -> PlanReport:
        """Each wave's pools, classes, tenants and changes (`gpuplatform plan`)."""
        from gpuplatform.commands import verbs

        return verbs.plan(cast("Platform", self), source=source)

    def transition(
        self, from_wave: str, to_wave: str, *, source: str | Path = "<python>"
    ) -> TransitionReport:
        """One transition reviewed: steps, hand-offs, refusals, capacity (`plan --from --to`)."""
        from gpuplatform.commands import verbs

        return verbs.transition(cast("Platform", self), from_wave, to_wave, source=source)

    def render(self, *, source: str | Path = "<python>") -> RenderReport:
        """Every file `synth` would write, validated, in memory."""
        from gpuplatform.commands import verbs

        return verbs.render(cast("Platform", self), source=source)

    def synth(
        self,
        out: str | Path,
        *,
        source: str | Path = "<python>",
        allow: Sequence[str] = (),
        fork: bool | None = None,
        cache: Path | None = None,
        recover: bool = False,
    ) -> SynthReport:
        """Render, judge and write the tree into `out/<name>/` (`gpuplatform synth --out`); nothing
        else is written unless asked (`cache=`). `recover`: recover a killed run's folders from
        what they hold (`synth --recover`). Several platforms: `gpuplatform.synth(out, *platforms)`."""
        from gpuplatform.commands import verbs

        return verbs.synth(
            out, cast("Platform", self), source=source, allow=allow, fork=fork, cache=cache, recover=recover
        )

    def check(
        self,
        *,
        source: str | Path = "<python>",
        inventory: Sequence[str | Path] = (),
        snapshot: str | Path | None = None,
        allow: Sequence[str] = (),
        fork: bool | None = None,
        cache: Path | None = None,
    ) -> CheckReport:
        """Every selector, safety rule, capacity and simulation verdict (`gpuplatform check`)."""
        from gpuplatform.commands import verbs

        return verbs.check(
            cast("Platform", self),
            source=source,
            inventory=inventory,
            snapshot=snapshot,
            allow=allow,
            fork=fork,
            cache=cache,
        )

    def simulate(
        self,
        *,
        source: str | Path = "<python>",
        from_wave: str | None = None,
        to_wave: str | None = None,
        engines: Sequence[str] = ("argocd", "flux"),
        snapshot: str | Path | None = None,
        write_snapshots: str | Path | None = None,
        fork: bool | None = None,
    ) -> SimulationReport:
        """Replay every transition the plan accepts, or one, on the controller model (`simulate`)."""
        from gpuplatform.commands import verbs

        return verbs.simulate(
            cast("Platform", self),
            source=source,
            from_wave=from_wave,
            to_wave=to_wave,
            engines=engines,
            snapshot=snapshot,
            write_snapshots=write_snapshots,
            fork=fork,
        )

    def capacity(
        self,
        *,
        source: str | Path = "<python>",
        wave: str | None = None,
        all_waves: bool = False,
        snapshot: str | Path | None = None,
    ) -> CapacityReport:
        """Will the active wave (or `wave`, or every wave) fit (`gpuplatform capacity`)."""
        from gpuplatform.commands import verbs

        return verbs.capacity(
            cast("Platform", self), source=source, wave=wave, all_waves=all_waves, snapshot=snapshot
        )

    def rehearse(
        self,
        tree: str | Path,
        *,
        source: str | Path,
        from_wave: str | None = None,
        to_wave: str | None = None,
        engines: Sequence[str] = ("argocd", "flux"),
        options: RehearsalOptions | None = None,
    ) -> SimulationReport:
        """The rendered `tree` on a real control plane (`gpuplatform rehearse --tree`); `source`
        is the stack file that builds this platform (the runbook's commands run it)."""
        from gpuplatform.commands import verbs

        return verbs.rehearse(
            cast("Platform", self),
            tree=tree,
            source=source,
            from_wave=from_wave,
            to_wave=to_wave,
            engines=engines,
            options=options,
        )
