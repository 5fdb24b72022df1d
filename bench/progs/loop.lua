-- loop: while loop summing i % 7 for i in [0, 1000000).
local s = 0
local i = 0
while i < 1000000 do
  s = s + i % 7
  i = i + 1
end
return s
