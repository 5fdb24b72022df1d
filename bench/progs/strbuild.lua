-- strbuild: join 50000 decimal strings, then concatenate "ab" 5000 times.
local parts = {}
for i = 0, 50000 - 1 do
  parts[#parts + 1] = tostring(i)
end
local s = table.concat(parts, ",")
local t = ""
for i = 0, 5000 - 1 do
  t = t .. "ab"
end
return #s + #t
