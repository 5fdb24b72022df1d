module github.com/runehost/runehost/bench

go 1.26.0

require (
	github.com/runehost/runehost v0.0.0
	github.com/yuin/gopher-lua v1.1.2
	go.starlark.net v0.0.0-20260908191801-89a6a09411d5
)

require (
	github.com/fxamacker/cbor/v2 v2.10.0 // indirect
	github.com/tetratelabs/wazero v1.12.0 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/runehost/runehost => ../
