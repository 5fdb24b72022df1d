-- maps: insert 100000 string keys into a table, then sum their values back.
local m = {}
for i = 0, 100000 - 1 do
  m[tostring(i)] = i
end
local t = 0
for i = 0, 100000 - 1 do
  t = t + m[tostring(i)]
end
return t
