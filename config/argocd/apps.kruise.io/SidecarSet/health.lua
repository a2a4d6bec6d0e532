-- Argo CD health of an OpenKruise SidecarSet (apps.kruise.io/v1beta1 and v1alpha1; cluster
-- scoped). Healthy only when the controller has observed the current spec and the pods it
-- matches that the update strategy lets it upgrade run the current sidecars and are ready.
-- kruise-rs also reports pods the SidecarSet selects that run without its sidecars
-- (status.uninjectedPods): Degraded.
local hs = {}
local function num(v) if type(v) == "number" then return v end return 0 end
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
  hs.message = "Waiting for the SidecarSet's spec to be observed"
  return hs
end
if num(status.uninjectedPods) > 0 then
  hs.status = "Degraded"
  hs.message = string.format("%d selected pods run without the sidecars", num(status.uninjectedPods))
  return hs
end
local strategy = spec.updateStrategy or {}
local matched = num(status.matchedPods)
if strategy.type == "NotUpdate" then
  hs.status = "Healthy"
  hs.message = string.format("%d pods matched (injection only)", matched)
  return hs
end
if strategy.paused == true then
  hs.status = "Suspended"
  hs.message = "SidecarSet upgrade is paused"
  return hs
end
local expected = matched - math.min(scaled(strategy.partition, matched), matched)
if strategy.selector ~= nil then
  -- The upgrade is limited to the pods the selector picks: which they are is not in the status.
  expected = math.min(expected, num(status.updatedPods))
end
if num(status.updatedPods) < expected then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for sidecar upgrade: %d of %d pods updated", num(status.updatedPods), expected)
  return hs
end
if num(status.updatedReadyPods) < expected then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for sidecar upgrade: %d of %d updated pods ready", num(status.updatedReadyPods), expected)
  return hs
end
hs.status = "Healthy"
if expected < matched then
  hs.message = string.format("Partitioned: %d of %d pods updated", expected, matched)
else
  hs.message = string.format("%d of %d pods updated and ready", matched, matched)
end
return hs
