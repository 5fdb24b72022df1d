-- spectral: the spectral norm of the infinite matrix A (the benchmark game), n = 100, 10 power iterations; times 1e9, truncated.
-- A is indexed from 0 as in the other versions; the vectors from 1.
local n = 100

local function a(i, j)
  local ij = i + j
  return 1.0 / (ij * (ij + 1) / 2 + i + 1)
end

local function mul_av(v, av)
  for i = 0, n - 1 do
    local s = 0.0
    for j = 0, n - 1 do s = s + a(i, j) * v[j + 1] end
    av[i + 1] = s
  end
end

local function mul_atv(v, atv)
  for i = 0, n - 1 do
    local s = 0.0
    for j = 0, n - 1 do s = s + a(j, i) * v[j + 1] end
    atv[i + 1] = s
  end
end

local function mul_atav(v, out, tmp)
  mul_av(v, tmp)
  mul_atv(tmp, out)
end

local u, v, tmp = {}, {}, {}
for i = 1, n do u[i] = 1.0; v[i] = 0.0; tmp[i] = 0.0 end
for k = 1, 10 do
  mul_atav(u, v, tmp)
  mul_atav(v, u, tmp)
end
local vbv, vv = 0.0, 0.0
for i = 1, n do
  vbv = vbv + u[i] * v[i]
  vv = vv + v[i] * v[i]
end
return math.floor(math.sqrt(vbv / vv) * 1e9) -- positive, so floor truncates
