"""A user's script with a misspelt export: `mypy --strict` must refuse it."""

import gpuplatform as gp

plan = gp.plan_platfrom(gp.Platform.model_validate({}))
