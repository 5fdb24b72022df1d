// Package args reads act arguments: a map, its fields checked, and errors
// of kind "value" the prog can catch, saying what the act wanted.
package args

import (
	"fmt"

	"github.com/runehost/runehost/checkpoint"
)

// Errorf is an error of kind "value": the act's arguments are wrong.
func Errorf(format string, a ...any) error {
	return &checkpoint.Error{Kind: "value", Msg: fmt.Sprintf(format, a...)}
}

// Map decodes an act's arguments, which must be a map; want says what the
// act takes, for the error.
func Map(b []byte, tag, want string) (*checkpoint.Map, error) {
	d, err := checkpoint.DecodeData(b)
	if err != nil {
		return nil, Errorf("%s: arguments: %v", tag, err)
	}
	m, ok := d.(*checkpoint.Map)
	if !ok {
		return nil, Errorf("%s wants a map %s", tag, want)
	}
	return m, nil
}
