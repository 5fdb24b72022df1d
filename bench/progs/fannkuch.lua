-- fannkuch: fannkuch-redux (the benchmark game) of n = 8; checksum * 100 + the most flips.
-- The permutations hold 0..n-1, as in the other versions; the arrays are indexed from 1.
local function fannkuch(n)
  local perm1, perm, count = {}, {}, {}
  for i = 1, n do perm1[i] = i - 1; perm[i] = 0; count[i] = 0 end
  local max_flips, checksum, perm_count = 0, 0, 0
  local r = n
  while true do
    while r ~= 1 do count[r] = r; r = r - 1 end
    for i = 1, n do perm[i] = perm1[i] end
    local flips = 0
    local k = perm[1]
    while k ~= 0 do
      local i, j = 1, k + 1
      while i < j do
        local t = perm[i]
        perm[i] = perm[j]
        perm[j] = t
        i = i + 1
        j = j - 1
      end
      flips = flips + 1
      k = perm[1]
    end
    if flips > max_flips then max_flips = flips end
    if perm_count % 2 == 0 then checksum = checksum + flips else checksum = checksum - flips end
    -- the next permutation: rotate the first r + 1 elements left by one
    while true do
      if r == n then return checksum * 100 + max_flips end
      local p0 = perm1[1]
      for i = 1, r do perm1[i] = perm1[i + 1] end
      perm1[r + 1] = p0
      count[r + 1] = count[r + 1] - 1
      if count[r + 1] > 0 then break end
      r = r + 1
    end
    perm_count = perm_count + 1
  end
end

return fannkuch(8)
