// rune_test.go adds the Rune engine: compiled once, run natively per iteration.

package bench

import (
	"fmt"

	"github.com/runehost/runehost/checkpoint"
	"github.com/runehost/runehost/guest/compile"
	"github.com/runehost/runehost/guest/machine"
)

func init() { engines = append(engines, runeEngine) }

// runeEngine runs the machine to its end in one slice; a fresh machine per
// run, as the other engines get a fresh interpreter state.
var runeEngine = &engine{
	name: "rune",
	prepare: func(src []byte) (runner, error) {
		prog, err := compile.Compile(src)
		if err != nil {
			return nil, err
		}
		return func() (int64, error) {
			m, err := machine.New(prog, machine.Config{Limit: 1 << 62})
			if err != nil {
				return 0, err
			}
			m.Run(1 << 62)
			if m.Status() != checkpoint.Done {
				return 0, fmt.Errorf("rune: %s: %v", m.Status(), m.Failure())
			}
			r, err := m.Result()
			if err != nil {
				return 0, err
			}
			i, ok := r.(int64)
			if !ok {
				return 0, fmt.Errorf("rune: result %v is not an int", r)
			}
			return i, nil
		}, nil
	},
}
