// ptrids_test.go checks the table that numbers objects while a checkpoint is written.

package machine

import (
	"testing"
	"unsafe"
)

// TestPtrIDs: every object added is found with its number, others are
// not, through growth and a reset.
func TestPtrIDs(t *testing.T) {
	objs := make([]cellObj, 5000)
	var ids ptrIDs
	for round := 0; round < 2; round++ {
		for i := range objs {
			p := unsafe.Pointer(&objs[i])
			if _, ok := ids.get(p); ok {
				t.Fatalf("round %d: object %d found before it was added", round, i)
			}
			if i%2 == 0 {
				ids.put(p, uint64(i+round))
			} else if id, added := ids.add(p, uint64(i+round)); !added || id != uint64(i+round) {
				t.Fatalf("round %d: object %d added as %d, %v", round, i, id, added)
			}
		}
		for i := range objs {
			if id, added := ids.add(unsafe.Pointer(&objs[i]), 1<<40); added || id != uint64(i+round) {
				t.Fatalf("round %d: object %d added again as %d, %v", round, i, id, added)
			}
		}
		for i := range objs {
			if id, ok := ids.get(unsafe.Pointer(&objs[i])); !ok || id != uint64(i+round) {
				t.Fatalf("round %d: object %d has number %d, %v", round, i, id, ok)
			}
		}
		ids.reset()
	}
}
