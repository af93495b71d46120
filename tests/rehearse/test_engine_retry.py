"""An engine applies a refused unit again after the wait the rendered entry gives it: Flux the
Kustomization's `retryInterval` (else `interval`), Argo CD the Application's first retry backoff."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from gpuplatform.model.platform import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.rehearse.cluster import ApplyFailed
from gpuplatform.rehearse.engines import Engine, SyncFailed
from gpuplatform.render.tree import render_tree
from gpuplatform.simulate.rendered import EngineWave, Unit, engine_wave


@dataclass
class _Clock:
    now: float = 0.0


@dataclass
class _Launcher:
    programs: set[tuple[str, str]] = field(default_factory=set)


@dataclass
class _Cluster:
    """What `Engine._apply_unit` uses of a rehearsal: the apiserver refuses the first `refusals`
    applies; virtual time passes while the engine waits."""

    refusals: int
    clock: _Clock = field(default_factory=_Clock)
    launcher: _Launcher = field(default_factory=_Launcher)
    applied_at: list[float] = field(default_factory=list)

    def apply(self, objects: Iterable[dict[str, Any]], manager: str) -> str:
        self.applied_at.append(self.clock.now)
        if len(self.applied_at) <= self.refusals:
            raise ApplyFailed("the admission policy's binding is not in the cache yet")
        return ""

    def wait(self, holds: Callable[[], Any], seconds: float, what: str) -> Any:
        while not holds():
            self.clock.now += 1.0
        return True


def _apply(cluster: _Cluster, engine: str, unit: Unit, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpuplatform.rehearse.engines.time.sleep", lambda _: None)
    wave = EngineWave(engine, "w", [unit], -1, True, False, {}, [])
    Engine(cluster, engine, "p")._apply_unit(unit, wave)  # type: ignore[arg-type]


@pytest.mark.parametrize(("engine", "after"), [("flux", 60.0), ("argocd", 30.0)])
def test_a_refused_unit_is_applied_again_after_the_rendered_wait(
    reference: Platform, engine: str, after: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the reference's first unit as the engine reads it from the rendered entry (Flux
    # `retryInterval: 1m`; Argo CD `syncPolicy.retry.backoff.duration: 30s`)
    plan = plan_platform(reference)
    [unit, *_] = engine_wave(render_tree(plan), plan, "pilot-pool", engine).units
    assert unit.retry_after == after
    # WHEN the apiserver refuses its first apply
    cluster = _Cluster(refusals=1)
    _apply(cluster, engine, unit, monkeypatch)
    # THEN the engine applies it again once the wait passed, not before
    assert cluster.applied_at == [0.0, after]


def test_a_unit_refused_on_every_attempt_fails_the_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _Cluster(refusals=99)
    with pytest.raises(SyncFailed, match="refused the apply"):
        _apply(cluster, "flux", Unit("u", [], retry_after=60.0), monkeypatch)
    assert cluster.applied_at == [0.0, 60.0, 120.0]
