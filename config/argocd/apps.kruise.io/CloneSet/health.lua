-- Argo CD health of an OpenKruise CloneSet (apps.kruise.io/v1alpha1), as kruise-rs and
-- OpenKruise v1.9 write its status. Healthy only when the controller has observed the current
-- spec and the pods it should have updated (all of them, or those the partition leaves) are
-- updated and ready, and every replica is available.
local hs = {}
local function num(v) if type(v) == "number" then return v end return 0 end
-- An IntOrString partition: a number, or a percentage of replicas rounded up (OpenKruise's
-- ParseReplicasFromIntOrPercent for CloneSet's partition).
local function scaled(v, total)
  if type(v) == "number" then return v end
  if type(v) == "string" then
    local p = tonumber(string.match(v, "^(%d+)%%$"))
    if p ~= nil then return math.ceil(p * total / 100) end
  end
  return 0
end
local function condition(status, t)
  if status == nil or status.conditions == nil then return nil end
  for _, c in ipairs(status.conditions) do
    if c.type == t then return c end
  end
  return nil
end

local spec = obj.spec or {}
local status = obj.status
local generation = obj.metadata.generation
if status == nil or status.observedGeneration == nil or (generation ~= nil and status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the CloneSet's spec to be observed"
  return hs
end
local progressing = condition(status, "Progressing")
if progressing ~= nil and progressing.status == "False" and progressing.reason == "ProgressDeadlineExceeded" then
  hs.status = "Degraded"
  hs.message = progressing.message or "Rollout exceeded its progress deadline"
  return hs
end
local desired = 1
if spec.replicas ~= nil then desired = spec.replicas end
local strategy = spec.updateStrategy or {}
if strategy.paused == true then
  hs.status = "Suspended"
  hs.message = "CloneSet is paused"
  return hs
end
local expected = status.expectedUpdatedReplicas
if expected == nil then
  expected = desired - math.min(scaled(strategy.partition, desired), desired)
end
if num(status.replicas) > desired then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for %d extra pods to be deleted", num(status.replicas) - desired)
  return hs
end
if num(status.updatedReplicas) < expected then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for rollout: %d of %d pods updated", num(status.updatedReplicas), expected)
  return hs
end
if num(status.updatedReadyReplicas) < expected then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for rollout: %d of %d updated pods ready", num(status.updatedReadyReplicas), expected)
  return hs
end
if num(status.readyReplicas) < desired or num(status.availableReplicas) < desired then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for pods: %d of %d available", num(status.availableReplicas), desired)
  return hs
end
hs.status = "Healthy"
if expected < desired then
  hs.message = string.format("Partitioned: %d of %d pods updated", expected, desired)
else
  hs.message = string.format("%d of %d pods updated and available", desired, desired)
end
return hs
