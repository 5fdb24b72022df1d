// builtins.go holds the names of the built-in functions; their order is part of Version.

package compile

// Builtins names the built-in functions in table order. The machine
// implements them at the same indices; appending one bumps Version.
var Builtins = []string{
	"len", "str", "int", "float", "bool", "type", "repr", "keys", "values",
	"append", "insert", "pop", "contains", "index_of", "get", "delete",
	"split", "join", "slice", "sort", "reverse", "starts_with", "ends_with",
	"trim", "upper", "lower", "replace", "json_encode", "json_decode",
	"min", "max", "abs", "range", "sqrt", "floor", "ceil", "round",
	"error", "emit", "log", "now", "random", "random_int",
}
