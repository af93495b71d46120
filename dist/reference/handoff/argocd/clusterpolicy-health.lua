local states = {
  ready = {status = "Healthy", message = "the GPU Operator reports every enabled operand ready"},
  notReady = {status = "Progressing", message = "the GPU Operator is rolling out its operands or waiting for them"},
  ignored = {status = "Degraded", message = "the GPU Operator ignores this ClusterPolicy: it reconciles only one"},
}
local reasons = {
  ReconcileFailed = "Degraded",
  NFDLabelsMissing = "Degraded",
  NoGPUNodes = "Progressing",
}
local hs = {}
local state = nil
if obj.status ~= nil then state = obj.status.state end
if state ~= "ignored" and obj.status ~= nil and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if (c.type == "Ready" or c.type == "Error") and c.status == "True" and reasons[c.reason] ~= nil then
      hs.status = reasons[c.reason]
      hs.message = c.reason .. ": " .. (c.message or "")
      return hs
    end
  end
end
if state ~= nil and states[state] ~= nil then
  hs.status = states[state].status
  hs.message = states[state].message
  return hs
end
hs.status = "Progressing"
hs.message = "waiting for the GPU Operator to report status.state"
return hs
