"""Shared fixtures: the repository paths, the reference platform, the hypothesis profiles."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from gpuplatform.load.stacks import LoadedPlatform, load_stack
from gpuplatform.model.platform import Platform

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

#: Hypothesis profiles, for the properties that do not pin their own number of examples (the
#: slow ones): `dev`, the default, bounds each to a few seconds; `ci` runs them deep. Chosen by
#: HYPOTHESIS_PROFILE (`.ci/run` sets `ci`), else `ci` when CI is set, else `dev`.
settings.register_profile("dev", max_examples=15)
settings.register_profile("ci", max_examples=250)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def sigint_default() -> None:
    """`preexec_fn` of a child that a test interrupts as an operator's Ctrl-C does: SIGINT at its
    default action, whatever the runner inherited (a shell starts a background job with SIGINT
    ignored, POSIX "Signals and Error Handling", and an ignored signal stays ignored across exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="session", autouse=True)
def state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`XDG_STATE_HOME` for the whole session, in os.environ so that every subprocess inherits it:
    tests never read or create the real `~/.local/state/gpuplatform/state-key`."""
    home = tmp_path_factory.mktemp("xdg-state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(home))
        yield home


@pytest.fixture(scope="session", autouse=True)
def verdict_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The simulation verdict cache of every test run, CLI subprocesses included: never the user's."""
    folder = tmp_path_factory.mktemp("cache")
    before = os.environ.get("GPUPLATFORM_CACHE_DIR")
    os.environ["GPUPLATFORM_CACHE_DIR"] = str(folder)
    yield folder
    if before is None:
        del os.environ["GPUPLATFORM_CACHE_DIR"]
    else:
        os.environ["GPUPLATFORM_CACHE_DIR"] = before


@pytest.fixture
def cli_runtime() -> Iterator[None]:
    """The CLI's runtime (forked children, the verdict cache of `verdict_cache`, the state key of
    `state_home`) for a test of the library that measures what the CLI gets from it."""
    from gpuplatform.cli import cli_runtime as runtime
    from gpuplatform.runtime import using

    with using(runtime()):
        yield


@pytest.fixture(scope="session")
def reference_loaded() -> list[LoadedPlatform]:
    return load_stack(REPO / "stacks" / "reference.py")


@pytest.fixture(scope="session")
def reference(reference_loaded: list[LoadedPlatform]) -> Platform:
    return reference_loaded[0].platform


@pytest.fixture(scope="session")
def reference_with_platform_bridge(reference: Platform) -> Platform:
    """The reference platform with its bridge rendered as a platform DeviceClass (`source: platform`)."""
    bridge = reference.bridges[0].model_copy(update={"source": "platform"})
    return reference.model_copy(update={"bridges": (bridge,)})
