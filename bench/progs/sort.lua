-- sort: sort 50000 LCG values and add the minimum, median and maximum.
-- Every intermediate stays below 2^53 (x*1103+12345 < 2.4e12), so float64 is exact.
local l = {}
local x = 12345
for i = 0, 50000 - 1 do
  x = (x * 1103 + 12345) % 2147483648
  l[#l + 1] = x
end
table.sort(l)
return l[1] + l[25001] + l[50000]
