// export_test.go lets the external tests turn the fast path off.

package machine

// SetFast turns the fast path on or off and returns its previous setting.
// Not safe while a machine runs.
func SetFast(on bool) bool {
	was := fastOn
	fastOn = on
	return was
}

// Fast runs the fast path alone, up to end steps.
func (m *Machine) Fast(end uint64) { m.fast(end) }
