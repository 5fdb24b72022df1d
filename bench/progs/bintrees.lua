-- bintrees: binary-trees (the benchmark game) to depth 11; the sum of every node count checked.
-- A tree is a table {left, right}; a leaf is {nil, nil}, a table with no children.
local function make(d)
  if d == 0 then return {nil, nil} end
  return {make(d - 1), make(d - 1)}
end

local function check(t)
  if t[1] == nil then return 1 end
  return 1 + check(t[1]) + check(t[2])
end

local min_depth = 4
local max_depth = 11
local total = check(make(max_depth + 1)) -- the stretch tree
local long_lived = make(max_depth)
for d = min_depth, max_depth, 2 do
  local iters = 2 ^ (max_depth - d + min_depth)
  for i = 1, iters do total = total + check(make(d)) end
end
total = total + check(long_lived)
return total
