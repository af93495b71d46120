"""One verdict: a transition `plan` accepts that `simulate` proves unsafe is a policy error."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplatform.policy.registry import Finding, RuleContext, rule

__all__: list[str] = []


@rule(
    "GP290",
    "error",
    "a transition plan accepts breaks an invariant when simulated",
    """
`check` and `synth` replay every transition `plan --from/--to` accepts, under every engine the
spec renders, on the same controller model as `gpuplatform simulate --all --engine both` (docs/simulate.md).
A transition whose replay breaks an invariant (two allocators on a GPU, a claim stranded, a driver
that cannot be unloaded, a sync that never completes...) is an error located at its target wave:
no command calls clean what `simulate` proves unsafe. The hint is the `simulate` command that
shows the steps before the violation. Fix the spec; `--allow GP290` overrides it (recorded in the
lock file). The verdict is reused while the spec and the SDK are unchanged (docs/policy.md, "The
verdict cache").
""",
)
def simulated_transitions(ctx: RuleContext) -> Iterator[Finding]:
    for refusal in ctx.simulation:
        yield Finding(refusal.loc, refusal.message, refusal.hint)
