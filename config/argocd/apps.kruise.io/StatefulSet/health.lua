-- Argo CD health of an OpenKruise Advanced StatefulSet (apps.kruise.io/v1beta1 and v1alpha1).
-- Healthy only when the controller has observed the current spec, the pods the partition does
-- not hold back run the update revision and are ready, and every replica is available.
local hs = {}
local function num(v) if type(v) == "number" then return v end return 0 end

local spec = obj.spec or {}
local status = obj.status
local generation = obj.metadata.generation
if status == nil or status.observedGeneration == nil or (generation ~= nil and status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the StatefulSet's spec to be observed"
  return hs
end
local desired = 1
if spec.replicas ~= nil then desired = spec.replicas end
local rolling = {}
if spec.updateStrategy ~= nil and spec.updateStrategy.rollingUpdate ~= nil then
  rolling = spec.updateStrategy.rollingUpdate
end
local onDelete = spec.updateStrategy ~= nil and spec.updateStrategy.type == "OnDelete"
if rolling.paused == true then
  hs.status = "Suspended"
  hs.message = "StatefulSet rollout is paused"
  return hs
end
local partition = math.min(num(rolling.partition), desired)
local expected = desired - partition
if num(status.replicas) > desired then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for %d pods to be deleted", num(status.replicas) - desired)
  return hs
end
if num(status.readyReplicas) < desired or (status.availableReplicas ~= nil and status.availableReplicas < desired) then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for pods: %d of %d ready", num(status.readyReplicas), desired)
  return hs
end
if not onDelete and status.updateRevision ~= nil and status.updateRevision ~= status.currentRevision and num(status.updatedReplicas) < expected then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for rollout: %d of %d pods updated", num(status.updatedReplicas), expected)
  return hs
end
if not onDelete and status.updatedReadyReplicas ~= nil and status.updatedReadyReplicas < expected and status.updateRevision ~= status.currentRevision then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for rollout: %d of %d updated pods ready", status.updatedReadyReplicas, expected)
  return hs
end
hs.status = "Healthy"
if partition > 0 and status.updateRevision ~= status.currentRevision then
  hs.message = string.format("Partitioned: %d of %d pods updated", expected, desired)
else
  hs.message = string.format("%d of %d pods ready", desired, desired)
end
return hs
