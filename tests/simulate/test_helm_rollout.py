"""helm-controller's bound on a DRA driver upgrade: a rollout longer than `spec.timeout` fails, and
the upgrade policy decides whether the driver is rolled back."""

from __future__ import annotations

from gpuplatform.model import Platform
from gpuplatform.plan.waves import plan_platform
from gpuplatform.render.operators import render_operators
from gpuplatform.simulate.helm_rollout import UpgradeOutcome, driver_upgrade, duration_minutes

ONE_AT_A_TIME = {"kubeletPlugin": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 1}}}}


def _driver_spec(platform: Platform) -> dict:  # type: ignore[type-arg]
    plan = plan_platform(platform)
    objects = render_operators(plan, plan.wave("pilot-pool"))
    return next(
        o for o in objects if o["kind"] == "HelmRelease" and o["metadata"]["name"] == "dra-driver-nvidia-gpu"
    )["spec"]


def test_go_durations() -> None:
    assert [duration_minutes(t) for t in ("25m", "1h30m", "90s", "0.5h")] == [25, 90, 1.5, 30]


def test_the_rendered_timeout_holds_the_rollout_of_the_wave_s_pool(reference: Platform) -> None:
    spec = _driver_spec(reference)
    assert driver_upgrade(spec, spec["values"], nodes=1) == UpgradeOutcome()


def test_the_default_timeout_and_remediation_roll_a_long_rollout_back() -> None:
    # GIVEN the release as it was rendered before: no timeout (5m), upgrade retries 3 (rollback)
    spec = {"upgrade": {"remediation": {"retries": 3}}}
    outcome = driver_upgrade(spec, ONE_AT_A_TIME, nodes=8)
    assert outcome.rolled_back
    assert outcome.error.startswith(
        "upgrade timed out after 5m: the kubelet plugin's rollout on 8 node(s) may take 80m"
    )


def test_a_rollout_past_the_timeout_is_retried_or_left_never_rolled_back(reference: Platform) -> None:
    # GIVEN the rendered policy on Flux 2.7+ and before it, and a pool larger than the timeout allows
    spec = _driver_spec(reference)
    older = _driver_spec(
        reference.model_copy(
            update={"delivery": reference.delivery.model_copy(update={"flux_version": "2.6.0"})}
        )
    )
    # THEN neither rolls the driver back
    retried = driver_upgrade(spec, spec["values"], nodes=30)
    left = driver_upgrade(older, older["values"], nodes=30)
    assert not retried.rolled_back and retried.error.endswith("retried without remediation")
    assert not left.rolled_back and left.error.endswith("left failed for the operator (no rollback)")
