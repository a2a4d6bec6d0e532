-- Argo CD health of an OpenKruise Advanced DaemonSet (apps.kruise.io/v1beta1 and v1alpha1).
-- Healthy only when the controller has observed the current spec, every eligible node runs a
-- daemon pod, the nodes the partition does not hold back run the update revision, and every
-- daemon pod is available.
local hs = {}
local function num(v) if type(v) == "number" then return v end return 0 end
-- An IntOrString partition: a number, or a percentage of the desired pods (rounded up).
local function scaled(v, total)
  if type(v) == "number" then return v end
  if type(v) == "string" then
    local p = tonumber(string.match(v, "^(%d+)%%$"))
    if p ~= nil then return math.ceil(p * total / 100) end
  end
  return 0
end

local spec = obj.spec or {}
local status = obj.status
local generation = obj.metadata.generation
if status == nil or status.observedGeneration == nil or (generation ~= nil and status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the DaemonSet's spec to be observed"
  return hs
end
local rolling = {}
if spec.updateStrategy ~= nil and spec.updateStrategy.rollingUpdate ~= nil then
  rolling = spec.updateStrategy.rollingUpdate
end
local onDelete = spec.updateStrategy ~= nil and spec.updateStrategy.type == "OnDelete"
if rolling.paused == true then
  hs.status = "Suspended"
  hs.message = "DaemonSet rollout is paused"
  return hs
end
local desired = num(status.desiredNumberScheduled)
local expected = desired - math.min(scaled(rolling.partition, desired), desired)
if num(status.currentNumberScheduled) < desired then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for daemon pods: %d of %d nodes scheduled", num(status.currentNumberScheduled), desired)
  return hs
end
if num(status.numberMisscheduled) > 0 then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for %d misscheduled daemon pods to be deleted", num(status.numberMisscheduled))
  return hs
end
if not onDelete and num(status.updatedNumberScheduled) < expected then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for rollout: %d of %d daemon pods updated", num(status.updatedNumberScheduled), expected)
  return hs
end
if num(status.numberAvailable) < desired or num(status.numberReady) < desired then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for daemon pods: %d of %d available", num(status.numberAvailable), desired)
  return hs
end
hs.status = "Healthy"
if expected < desired then
  hs.message = string.format("Partitioned: %d of %d daemon pods updated", expected, desired)
else
  hs.message = string.format("%d of %d daemon pods updated and available", desired, desired)
end
return hs
